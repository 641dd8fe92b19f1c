"""What the browser tests do in a JupyterLab page: run a whole notebook, use the menus, ask the server which
notebooks have a kernel, and keep screenshots (in ``bench/results``, which git ignores, or
``$HOOKVIZ_SCREENSHOTS``)."""

from __future__ import annotations

import json
import os
import shutil
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("HOOKVIZ_SCREENSHOTS", REPO / "bench" / "results"))
#: JavaScript: how many code cells of the open notebook show an execution count ("[3]").
NUMBERED_CELLS = (
    "[...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')]"
    ".filter(e => /\\[\\d+\\]/.test(e.textContent)).length"
)
CODE_CELLS = "document.querySelectorAll('.jp-Notebook .jp-CodeCell').length"


def save_screenshot(page: Any, tmp_path: Path, name: str) -> Path:
    """Screenshot the page into ``tmp_path`` and, where it can, into SHOTS (handy to look at after the run)."""
    path = tmp_path / name
    page.screenshot(path=str(path))
    try:
        SHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, SHOTS / name)
    except OSError:
        pass
    return path


def run_all(page: Any) -> None:
    """Clear the outputs, Run > Run All Cells, and wait until every code cell ran and the kernel is idle."""
    # Clear first: stored prompt numbers would satisfy the wait below at once.
    page.get_by_role("menuitem", name="Edit", exact=True).click()
    page.locator('.lm-Menu-item[data-command="editmenu:clear-all"]').click()
    page.wait_for_function(f"() => ({NUMBERED_CELLS}) === 0")
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()
    page.wait_for_function(f"() => {CODE_CELLS} > 0 && ({NUMBERED_CELLS}) === {CODE_CELLS}", timeout=240_000)
    page.locator("#jp-main-statusbar").get_by_text("Idle").wait_for()


def menu(page: Any, name: str, item: str) -> None:
    """Click ``name`` in the menu bar, then the item whose label starts with ``item``; accept its dialog if any."""
    page.get_by_role("menuitem", name=name, exact=True).click()
    page.locator(".lm-Menu-item .lm-Menu-itemLabel").filter(has_text=item).first.click()
    page.wait_for_timeout(500)
    if page.locator(".jp-Dialog").count():
        page.locator(".jp-Dialog button.jp-mod-accept").click()


def kernel_sessions(lab: dict[str, Any], path: str) -> list[dict[str, Any]]:
    """The server's sessions (a notebook with a running kernel) for ``path``."""
    with urllib.request.urlopen(f"{lab['url']}/api/sessions?token={lab['token']}", timeout=10) as reply:
        return [s for s in json.load(reply) if s["path"] == path]
