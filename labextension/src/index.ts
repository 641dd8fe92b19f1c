/**
 * hookviz-lab: two small fixes to the course's JupyterLab.
 *
 * 1. A link to a section of *another* notebook (`04_backward_hooks.ipynb#claim-A11`, in a Markdown cell or in the
 *    answers of `hookviz.AskBox`) opens that notebook inside the running JupyterLab and scrolls to the section.
 *    JupyterLab opens the notebook (command `rendermime:handle-local-link`) and looks for the fragment at once,
 *    before the new notebook's Markdown is rendered, so it stays at the top. This plugin waits for the
 *    command, finds the cell whose source holds the anchor (`<a id="claim-A11">`, from the notebook's model: no
 *    rendering needed), scrolls to it, then to the anchor itself once it is drawn.
 * 2. hookviz's widgets draw Chinese with hookviz's own font (a subset of Noto Sans CJK SC, the one its pictures use)
 *    when the computer has no Chinese font: `style/index.css`.
 * 3. A notebook reopened seconds after its tab was closed gets a live kernel. With the course's setting "closing a
 *    tab shuts its kernel down", JupyterLab may reconnect the new tab to the session it is still shutting down: the
 *    tab then says "No Kernel" and its widgets "Loading widget..." for good. This plugin waits until that session
 *    is gone and, if the new tab was left without a live kernel, starts one.
 *
 * Nothing else changes; without this plugin, such links open at the top of the notebook.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { PageConfig, URLExt } from '@jupyterlab/coreutils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

const HANDLE_LINK = 'rendermime:handle-local-link';

/** The index of the first cell whose source defines `id` (`<a id="id">`, `name="id"`, a heading's `id`). */
export function anchorCell(sources: string[], id: string): number {
  const escaped = id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const pattern = new RegExp(`\\s(?:id|name)\\s*=\\s*["']${escaped}["']`);
  return sources.findIndex(source => pattern.test(source));
}

function sleep(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}

/** Scroll `panel` to the section that `fragment` (`#claim-A11`) names; nothing when no cell defines it. */
export async function scrollToAnchor(panel: NotebookPanel, fragment: string): Promise<boolean> {
  await panel.context.ready;
  await panel.revealed;
  const id = decodeURIComponent(fragment.replace(/^#/, ''));
  const notebook = panel.content;
  const model = notebook.model;
  if (!id || !model) {
    return false;
  }
  const sources: string[] = [];
  for (let i = 0; i < model.cells.length; i++) {
    sources.push(model.cells.get(i).sharedModel.getSource());
  }
  const index = anchorCell(sources, id);
  if (index < 0) {
    return false;
  }
  notebook.activeCellIndex = index;
  await notebook.scrollToItem(index, 'start');
  // The anchor itself, once its Markdown is drawn (the sanitizer renames `id` to `data-jupyter-id`).
  const selector = `[data-jupyter-id="${CSS.escape(id)}"], [id="${CSS.escape(id)}"]`;
  for (let tries = 0; tries < 40; tries++) {
    const element = notebook.widgets[index]?.node.querySelector(selector);
    if (element) {
      element.scrollIntoView({ block: 'start' });
      break;
    }
    await sleep(50);
  }
  panel.node.dataset.hookvizScrolledTo = id; // for the course's browser test
  return true;
}

/** Resolves when the server has no session for `path` any more (or after `timeout` ms). */
async function sessionGone(app: JupyterFrontEnd, path: string, timeout = 15000): Promise<void> {
  const until = Date.now() + timeout;
  while (Date.now() < until) {
    try {
      if (!(await app.serviceManager.sessions.findByPath(path))) {
        return;
      }
    } catch {
      return;
    }
    await sleep(200);
  }
}

/** Give `panel` a live kernel once the session of the tab closed before it is gone, if it was left without one. */
async function reviveKernel(panel: NotebookPanel, closing: Promise<void>): Promise<void> {
  await closing;
  await sleep(500); // let the new tab's own session settle first
  const context = panel.sessionContext;
  if (panel.isDisposed || context.isDisposed) {
    return;
  }
  const kernel = context.session?.kernel;
  const alive = kernel && !kernel.isDisposed && kernel.status !== 'dead' && kernel.connectionStatus !== 'disconnected';
  if (!alive) {
    const name = context.kernelPreference.name || undefined;
    await context.changeKernel(name ? { name } : {});
    panel.node.dataset.hookvizRevivedKernel = 'yes'; // for the course's browser test
  }
}

const links: JupyterFrontEndPlugin<void> = {
  id: 'hookviz-lab:links',
  description: 'Links to a section of another notebook open at that section.',
  autoStart: true,
  requires: [IDocumentManager],
  activate: (app: JupyterFrontEnd, docManager: IDocumentManager) => {
    app.commands.commandExecuted.connect((_, executed) => {
      if (executed.id !== HANDLE_LINK) {
        return;
      }
      const { path, id } = executed.args as { path?: string; id?: string };
      if (!path || !id || !path.endsWith('.ipynb')) {
        return;
      }
      void Promise.resolve(executed.result)
        .then(() => {
          const widget = docManager.findWidget(path);
          if (widget instanceof NotebookPanel) {
            return scrollToAnchor(widget, id);
          }
          return false;
        })
        .catch(reason => console.warn('hookviz-lab: could not scroll to', path, id, reason));
    });
  }
};

const reopen: JupyterFrontEndPlugin<void> = {
  id: 'hookviz-lab:reopen',
  description: 'A notebook reopened right after its tab was closed gets a live kernel.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => {
    const closing = new Map<string, Promise<void>>();
    tracker.widgetAdded.connect((_, panel) => {
      void panel.context.ready.then(() => {
        const path = panel.context.path;
        const pending = closing.get(path);
        if (pending) {
          void reviveKernel(panel, pending).catch(reason => console.warn('hookviz-lab: no kernel for', path, reason));
        }
      });
      panel.disposed.connect(() => {
        const path = panel.context.path;
        const gone = sessionGone(app, path);
        closing.set(path, gone);
        void gone.then(() => {
          if (closing.get(path) === gone) {
            closing.delete(path);
          }
        });
      });
    });
  }
};

/** The font file this extension serves (scripts/make_cjk_font.py copies hookviz's font there). */
export const FONT_FILE = 'hookviz-cjk-sc.otf';

const font: JupyterFrontEndPlugin<void> = {
  id: 'hookviz-lab:font',
  description: "hookviz's widgets draw Chinese with hookviz's own font when the computer has none.",
  autoStart: true,
  activate: () => {
    const url = URLExt.join(PageConfig.getOption('fullLabextensionsUrl'), 'hookviz-lab', 'static', FONT_FILE);
    const style = document.createElement('style');
    style.dataset.hookvizFont = 'yes';
    style.textContent =
      `@font-face { font-family: 'hookviz CJK SC'; src: url('${url}') format('opentype'); font-display: swap; }`;
    document.head.appendChild(style);
  }
};

export default [links, reopen, font];
