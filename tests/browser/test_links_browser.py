"""Links to a section of another notebook, in a real JupyterLab (issue 48's browser session).

An answer of ``hookviz.AskBox`` that points to another notebook loaded the whole of JupyterLab again (the browser asked
"Leave site?", every open notebook came back without its outputs) and opened the target at its top; a Markdown link to
a section of another notebook opened at the top too. Here, with the learners' settings (``binder/overrides.json``,
JupyterLab's default windowing) and hookviz's JupyterLab helper (``labextension/``, linked by ``make lab``):

* clicking an answer opens the notebook inside the running JupyterLab (the page is not loaded again: a value put on
  ``window`` survives, and the box and its answers are still there), scrolled to the answer's section;
* clicking a Markdown link to ``04_backward_hooks.ipynb#claim-A11`` opens 04 at that claim.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path
from typing import Any

import nbformat
import pytest

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from lab_page import save_screenshot  # noqa: E402

TRACKER = "@jupyterlab/notebook-extension:tracker"


def _settings(lab: dict[str, Any], raw: dict[str, Any]) -> None:
    request = urllib.request.Request(
        f"{lab['url']}/lab/api/settings/{TRACKER}", method="PUT",
        data=json.dumps({"raw": json.dumps(raw)}).encode(),
        headers={"Authorization": f"token {lab['token']}", "Content-Type": "application/json"},
    )
    urllib.request.urlopen(request, timeout=10).read()


@pytest.fixture
def learners_windowing(lab: dict[str, Any]) -> Any:
    """JupyterLab's default windowing, as learners have it (the other browser tests render every cell)."""
    _settings(lab, {"windowingMode": "contentVisibility"})
    try:
        yield
    finally:
        _settings(lab, {"windowingMode": "none"})


def _in_view(page: Any, anchor: str) -> bool:
    """Whether the anchor ``anchor`` of the notebook in front is drawn inside its visible scroll area."""
    return page.evaluate(
        """(anchor) => {
            const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
            const element = panel && panel.querySelector(`[data-jupyter-id="${anchor}"], [id="${anchor}"]`);
            if (!element) return false;
            const area = panel.querySelector('.jp-WindowedPanel-outer').getBoundingClientRect();
            const box = element.getBoundingClientRect();
            return box.top >= area.top - 2 && box.top < area.bottom - 20;
        }""",
        anchor,
    )


def _wait_in_view(page: Any, anchor: str, seconds: float = 15) -> bool:
    """Whether the anchor comes into view within ``seconds`` (and stays there half a second later)."""
    for _ in range(int(seconds * 4)):
        if _in_view(page, anchor):
            page.wait_for_timeout(500)
            return _in_view(page, anchor)
        page.wait_for_timeout(250)
    return False


def _front(page: Any) -> str:
    return page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel").inner_text()


def test_answers_and_markdown_links_open_inside_jupyterlab_at_their_section(
    lab: dict[str, Any], page: Any, tmp_path: Path, learners_windowing: Any
) -> None:
    probe = nbformat.v4.new_notebook()
    probe.cells = [
        nbformat.v4.new_markdown_cell("Probe: [to claim A11 of 04](04_backward_hooks.ipynb#claim-A11)."),
        nbformat.v4.new_code_cell('import hookviz\nhookviz.AskBox("why does my hook fire twice?")'),
    ]
    probe.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(probe, Path(lab["root"]) / "links_probe.ipynb")
    page.goto(f"{lab['url']}/lab/tree/links_probe.ipynb?reset&token={lab['token']}")
    page.locator("#jp-main-statusbar").get_by_text("Idle").wait_for()
    page.locator(".jp-CodeCell .jp-InputArea-editor").first.click()
    page.keyboard.press("Shift+Enter")
    answer = page.locator(".hookviz-answers a").first
    answer.wait_for()
    href = answer.get_attribute("href")  # resolved by JupyterLab's renderer, which also gives it its link handler
    assert "10_faq.ipynb" in href and href.endswith("#faq-twice"), href
    page.evaluate("() => { window.hookvizProbe = 'still here'; }")  # gone if the page is loaded again

    answer.click()
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current", has_text="10_faq.ipynb").wait_for()
    reached = _wait_in_view(page, "faq-twice")
    save_screenshot(page, tmp_path, "links_answer_opens_faq_twice.png")
    assert reached, "the answer's notebook did not open at its section"
    assert page.evaluate("() => window.hookvizProbe") == "still here", "JupyterLab was loaded again"

    page.locator(".lm-TabBar-tab", has_text="links_probe.ipynb").click()  # the box kept its answers
    assert page.locator(".hookviz-answers a").count() >= 3

    page.locator(".jp-MarkdownCell a", has_text="to claim A11 of 04").click()
    page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current", has_text="04_backward_hooks.ipynb").wait_for()
    reached = _wait_in_view(page, "claim-A11")
    save_screenshot(page, tmp_path, "links_markdown_opens_04_claim_A11.png")
    assert reached, "the Markdown link did not open 04 at claim A11"
    assert page.evaluate("() => window.hookvizProbe") == "still here"
    # hookviz's font, for its widgets' Chinese where the computer has none, is declared and served
    font = page.evaluate(
        """async () => { const rule = document.querySelector('style[data-hookviz-font]');
                         const url = rule && rule.textContent.match(/url\\('([^']+)'\\)/)[1];
                         return url ? (await fetch(url)).status : 0; }"""
    )
    assert font == 200


def test_a_notebook_reopened_right_after_closing_gets_a_live_kernel(lab: dict[str, Any], page: Any) -> None:
    """Browser session: reopened seconds after its tab was closed (which shuts its kernel down, the course's setting),
    a notebook once stayed on "No Kernel" with its widgets "Loading widget..." for good."""
    probe = nbformat.v4.new_notebook()
    probe.cells = [nbformat.v4.new_code_cell("print(6 * 7)")]
    probe.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(probe, Path(lab["root"]) / "reopen_probe.ipynb")
    page.goto(f"{lab['url']}/lab/tree/reopen_probe.ipynb?reset&token={lab['token']}")
    status = page.locator("#jp-main-statusbar")
    for _ in range(3):
        status.get_by_text("Idle").wait_for(timeout=60_000)
        page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabCloseIcon").click()
        page.wait_for_timeout(200)
        if page.locator(".jp-Dialog").count():  # "Save your work?": the kernel's info was written into the notebook
            page.locator(".jp-Dialog button", has_text="Discard").click()
        page.locator(".jp-DirListing-item", has_text="reopen_probe.ipynb").dblclick()  # at once: its kernel is ending
        page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current", has_text="reopen_probe.ipynb").wait_for()
    status.get_by_text("Idle").wait_for(timeout=60_000)
    toolbar = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-NotebookPanel-toolbar")
    assert "No Kernel" not in toolbar.inner_text()
    page.locator(".jp-CodeCell .jp-InputArea-editor").first.click()
    page.keyboard.press("Control+Enter")
    page.locator(".jp-OutputArea-output", has_text="42").wait_for(timeout=60_000)
