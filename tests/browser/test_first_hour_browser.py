"""A learner's first hour in JupyterLab + Chromium, as the README and the notebooks tell it.

* ``make lab``: the URL JupyterLab prints (the one a learner copies from a remote machine, a container or WSL)
  opens ``00_start_here.ipynb`` itself, not the Launcher; the file browser shows every notebook's whole name.
* Every notebook with a widget, used as its text invites: on the student copy, run the cells one by one
  with Shift+Enter; at each widget do what the text around it suggests (pick another layer or head, press
  Train, filter the timeline, type a search), then go on with Shift+Enter to the end. No cell may fail but
  the ones tagged to fail (the pitfalls), and every code cell must have run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from lab_page import save_screenshot  # noqa: E402
from notebook_tools import make_student  # noqa: E402

#: How long one cell may take (HOOKVIZ_CELL_TIMEOUT seconds): the slowest cell of these notebooks takes under 30 s.
CELL_TIMEOUT_MS = int(float(os.environ.get("HOOKVIZ_CELL_TIMEOUT", "240")) * 1000)
#: The file name JupyterLab gives its default workspace (``make lab`` installs binder/workspace.json there).
WORKSPACE_FILE = "default-37a8.jupyterlab-workspace"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _lab_command(target: str) -> list[str]:
    """The ``jupyter lab ...`` command of a make target (dry run), split into arguments."""
    proc = subprocess.run(
        ["make", "-n", "-o", ".venv/.hookviz-installed", target], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    line = next(line for line in proc.stdout.splitlines() if "jupyter lab" in line)
    return line.split()


@pytest.fixture(scope="module", params=["lab", "teacher-lab"])
def make_lab_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``make lab``'s (or ``make teacher-lab``'s) own JupyterLab command, run in a folder laid out like the course
    (fresh student copies, and the teacher notebooks); yields the target and the URL it printed."""
    folder = tmp_path_factory.mktemp("course")
    make_student.write_student_copies(REPO / "notebooks", folder / "student")
    if request.param == "teacher-lab":
        shutil.copytree(REPO / "notebooks", folder / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    home = tmp_path_factory.mktemp("labhome")
    settings = home / "app-settings"
    settings.mkdir()
    (settings / "overrides.json").write_text((REPO / "binder" / "overrides.json").read_text())
    (home / "ws").mkdir()
    (home / "ws" / WORKSPACE_FILE).write_text((REPO / "binder" / "workspace.json").read_text())
    args = _lab_command(request.param)
    args = [sys.executable, "-m", "jupyterlab", *args[args.index("lab") + 1 :]]
    # The course's own flags, but where this test keeps its folders (each option may be given only once).
    args = [a for a in args if a != "--allow-root" and not a.startswith("--LabApp.workspaces_dir=")]
    args += ["--allow-root"] if os.geteuid() == 0 else []
    args += [
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={_free_port()}",
        "--ServerApp.port_retries=0",
        f"--LabApp.app_settings_dir={settings}",
        f"--LabApp.user_settings_dir={home / 'settings'}",
        f"--LabApp.workspaces_dir={home / 'ws'}",
    ]
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(home / "cfg"),
        JUPYTER_RUNTIME_DIR=str(home / "run"),
        JUPYTER_DATA_DIR=str(home / "data"),
    )
    log_path = home / "server.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(args, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline, url = time.time() + 90, None
            while url is None:
                found = re.search(r"http://127\.0\.0\.1:\d+/\S+", log_path.read_text())
                if found:
                    url = found.group(0)
                elif time.time() > deadline or proc.poll() is not None:
                    raise RuntimeError("JupyterLab did not start:\n" + log_path.read_text()[-3000:])
                else:
                    time.sleep(0.25)
            yield request.param, url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def test_the_url_make_lab_prints_opens_00_with_whole_names_in_the_sidebar(
    make_lab_server: tuple[str, str], page: Any, tmp_path: Path
) -> None:
    target, url = make_lab_server
    print(f"make {target} printed:", re.sub(r"token=\w+", "token=…", url))
    folder = "notebooks/" if target == "teacher-lab" else ""
    assert f"/lab/tree/{folder}00_start_here.ipynb?token=" in url, url
    page.goto(url)
    page.locator("#jp-main-statusbar").get_by_text("Idle").wait_for()
    current = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current").inner_text()
    assert "00_start_here.ipynb" in current, current
    heading = page.locator(".jp-Notebook .jp-MarkdownCell h1").first.inner_text()
    assert heading.startswith("00"), heading
    assert page.locator(".jp-Launcher").count() == 0 or not page.locator(".jp-Launcher").first.is_visible()
    names = page.locator("#filebrowser .jp-DirListing-itemText")
    names.first.wait_for()
    clipped = page.evaluate(
        "() => [...document.querySelectorAll('#filebrowser .jp-DirListing-itemText')]"
        ".filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)"
    )
    listed = names.all_inner_texts()
    save_screenshot(page, tmp_path, f"make_{target}_first_screen.png")
    print(f"{len(listed)} names in the file browser, {len(clipped)} cut off")
    assert "00_start_here.ipynb" in listed and "16_hook_atlas.ipynb" in listed, listed
    assert not clipped, f"names cut off in the file browser: {clipped}"


# ------------------------------------------------------------------ widgets used as their notebook invites


def _pick(select: Any, prefer: str | None = None) -> str:
    """Choose ``prefer`` in a <select> if it offers it, else the option after the current one; return the choice."""
    options = select.locator("option").all_inner_texts()
    current = select.evaluate("e => e.options[e.selectedIndex] ? e.options[e.selectedIndex].text : ''")
    preferred = [o for o in options if prefer and o.split(" ")[0] == prefer]  # labels may add type and shape
    choice = preferred[0] if preferred else options[(options.index(current) + 1) % len(options)]
    select.select_option(label=choice)
    return choice


def use_explorer(out: Any, page: Any) -> str:
    """06: "Pick a layer ..." — another layer in the explorer."""
    layer = out.locator(".widget-dropdown select").filter(has=out.page.locator("option", has_text="features.4"))
    return "layer " + _pick(layer.first, "features.4")


def use_timeline(out: Any, page: Any) -> str:
    """06: the timeline's filters — show only the backward phase."""
    button = out.locator(".widget-toggle-button").filter(has_text=re.compile("backward|反向"))
    button.first.click()
    return "phase backward"


def use_monitor(out: Any, page: Any) -> str:
    """06: "Pick another layer at any time, even while it trains" and **Train** — both."""
    chosen = _pick(out.locator(".widget-dropdown select").first, "classifier.1")
    out.locator("button").filter(has_text=re.compile(r"^\s*(Train|训练)\s*$")).first.click()
    page.wait_for_timeout(1500)  # it trains in the background while the learner goes on
    return f"layer {chosen}, Train pressed"


def use_attention(out: Any, page: Any) -> str:
    """12, 14: another layer and another head."""
    selects = out.locator(".widget-dropdown select")
    layer = _pick(selects.nth(0))
    page.wait_for_timeout(500)
    head = _pick(selects.nth(1))
    return f"layer {layer}, head {head}"


def use_atlas(out: Any, page: Any) -> str:
    """16: "Type in the search box ... try `deepcopy`"."""
    box = out.locator(".widget-text input").first
    box.fill("deepcopy")
    box.press("Enter")
    page.wait_for_timeout(500)
    # The table scrolls sideways in its box (its last column, "taught in", is never cut off) and its links
    # look like links.
    overflow, wide, shown = out.locator("table").first.evaluate(
        "t => [getComputedStyle(t.parentElement).overflowX, t.parentElement.scrollWidth, t.parentElement.clientWidth]"
    )
    assert overflow == "auto", overflow
    colour = out.locator("table a").first.evaluate("a => getComputedStyle(a).color")
    assert colour not in ("rgb(0, 0, 0)", "rgba(0, 0, 0, 0.87)"), colour
    return f"search deepcopy (table {wide} px in a {shown} px box that scrolls, links {colour})"


#: Notebook (student copy) -> [(text that identifies the widget's code cell, what the learner does)].
WIDGETS: dict[str, list[tuple[str, Callable[[Any, Any], str]]]] = {
    "06_hookviz_explorer.ipynb": [
        ("explorer = LayerExplorer(", use_explorer),
        ("timeline = HookTimeline()", use_timeline),
        ("monitor = TrainingMonitor(fresh)", use_monitor),
    ],
    "12_transformer_hooks.ipynb": [("explorer = hookviz.AttentionExplorer(", use_attention)],
    "14_decoder_hooks.ipynb": [("explorer = hookviz.AttentionExplorer(", use_attention)],
    "16_hook_atlas.ipynb": [("atlas.atlas_widget(table)", use_atlas)],
    "zh/06_hookviz_explorer.ipynb": [
        ("explorer = LayerExplorer(", use_explorer),
        ("timeline = HookTimeline()", use_timeline),
        ("monitor = TrainingMonitor(fresh)", use_monitor),
    ],
}


@pytest.fixture(scope="module")
def student_root(lab: dict[str, Any]) -> Path:
    dst = Path(lab["root"]) / "student"
    make_student.write_student_copies(REPO / "notebooks", dst)
    return dst


def _shift_enter(page: Any, cells: list[dict[str, Any]], index: int) -> None:
    """Select cell ``index`` (command mode), press Shift+Enter, and wait until it has run."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    cell.scroll_into_view_if_needed()
    cell.locator(".jp-InputPrompt").first.click()
    page.keyboard.press("Shift+Enter")
    if os.environ.get("HOOKVIZ_DEBUG_CELLS"):
        print("cell", index, cells[index]["cell_type"], cells[index]["source"][:40].replace("\n", " "), flush=True)
    if cells[index]["cell_type"] == "code":
        page.wait_for_function(
            "(i) => /\\[\\d+\\]/.test((document.querySelectorAll('.jp-Notebook .jp-Cell')[i]"
            ".querySelector('.jp-InputPrompt') || {}).textContent || '')",
            arg=index,
            timeout=CELL_TIMEOUT_MS,
        )


@pytest.mark.parametrize("notebook", sorted(WIDGETS))
def test_widgets_used_as_invited_then_shift_enter_to_the_end(
    lab: dict[str, Any], student_root: Path, page: Any, tmp_path: Path, notebook: str
) -> None:
    path = student_root / notebook
    nb = nbformat.read(path, as_version=4)
    cells = [dict(cell_type=c.cell_type, source=c.source, tags=c.metadata.get("tags", [])) for c in nb.cells]
    stops = []
    for marker, action in WIDGETS[notebook]:
        index = next(i for i, c in enumerate(cells) if c["cell_type"] == "code" and marker in c["source"])
        stops.append((index, action))
    page.goto(f"{lab['url']}/lab/tree/student/{notebook}?reset&token={lab['token']}")
    page.locator("#jp-main-statusbar").get_by_text("Idle").wait_for()
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()
    assert page.locator(".jp-Notebook .jp-Cell").count() == len(cells)

    done, log = 0, []
    t0 = time.perf_counter()
    for widget_index, action in stops:
        for i in range(done, widget_index + 1):
            _shift_enter(page, cells, i)
        done = widget_index + 1
        out = page.locator(".jp-Notebook .jp-Cell").nth(widget_index).locator(".jp-OutputArea")
        out.locator(".widget-vbox, .widget-box").first.wait_for(timeout=120_000)
        page.locator("#jp-main-statusbar").get_by_text("Idle").wait_for()
        log.append(action(out, page))
    for i in range(done, len(cells)):
        _shift_enter(page, cells, i)
    page.locator("#jp-main-statusbar").get_by_text("Idle").wait_for(timeout=300_000)
    seconds = time.perf_counter() - t0
    save_screenshot(page, tmp_path, f"as_invited_{notebook.replace('/', '_')}.png")
    page.keyboard.press("Control+s")
    page.wait_for_timeout(1500)

    saved = json.loads(path.read_text(encoding="utf-8"))
    failed, not_run = [], []
    for i, cell in enumerate(saved["cells"]):
        if cell["cell_type"] != "code":
            continue
        if cell.get("execution_count") is None and "".join(cell["source"]).strip():  # not the new last cell
            not_run.append(i)
        for output in cell.get("outputs", []):
            if output["output_type"] == "error" and "raises-exception" not in cell["metadata"].get("tags", []):
                failed.append((i, cell["source"][:120], output["ename"], output["evalue"][:300]))
    print(f"{notebook}: {'; '.join(log)}; then Shift+Enter to the end: {seconds:.0f} s, "
          f"{len(failed)} unexpected errors, {len(not_run)} cells not run")
    assert not failed, failed
    assert not not_run, [(i, saved["cells"][i]["source"][:120]) for i in not_run]
