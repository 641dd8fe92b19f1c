"""A learner's first minutes in JupyterLab + Chromium, on the student copies that ``make lab`` opens.

* The first screen: the file browser holds a README that says what to open and how to run it; the
  first screen of 00 says Shift+Enter and Run All without scrolling; the tab is not marked as modified
  right after opening (the copy names the kernel JupyterLab starts).
* Run All on the student copy of 01: the cells meant to fail show short tracebacks (the learner's cell
  lines, PyTorch's frames folded), not fifty lines through torch's internals.
* A right computation with a forgotten ``return`` typed into exercise 1 gets feedback that names the
  missing ``return``, not "divide by the norm".
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

import os  # noqa: E402
import shutil  # noqa: E402

from notebook_tools import make_student  # noqa: E402

SHOTS = Path(os.environ.get("HOOKVIZ_SCREENSHOTS", REPO / "bench" / "results"))  # git ignores bench/results


def _save(page: Any, tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    page.screenshot(path=str(path))
    try:  # handy to look at after the run
        SHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, SHOTS / name)
    except OSError:
        pass
    return path


FORGOT_RETURN = """def clip_hook(grad):
    norm = grad.norm()
    if norm > 1:
        grad = grad / norm
"""


@pytest.fixture(scope="module")
def student_root(lab: dict[str, Any]) -> Path:
    """Student copies in the served folder, as `make student` writes them."""
    dst = Path(lab["root"]) / "student"
    make_student.write_student_copies(REPO / "notebooks", dst)
    return dst


def _open(page: Any, lab: dict[str, Any], path: str) -> None:
    page.goto(f"{lab['url']}/lab/tree/{path}?reset&token={lab['token']}")
    page.locator("#jp-main-statusbar").get_by_text("Idle").wait_for()
    page.wait_for_timeout(1500)  # kernel info arrives: JupyterLab writes it into the model (the "modified" case)


def _dirty_tabs(page: Any) -> int:
    return page.locator(".lm-TabBar-tab.jp-mod-dirty").count()


def test_first_screen_says_what_to_open_and_how_to_run(
    lab: dict[str, Any], student_root: Path, page: Any, tmp_path: Path
) -> None:
    readme = (student_root / "README.md").read_text()
    assert "00_start_here.ipynb" in readme and "Shift+Enter" in readme and "Run All" in readme
    _open(page, lab, "student/00_start_here.ipynb")
    listing = page.locator("#filebrowser .jp-DirListing-content").inner_text()
    assert "README.md" in listing and "00_start_here.ipynb" in listing, listing
    rendered = page.locator(".jp-Notebook .jp-MarkdownCell .jp-RenderedMarkdown").first
    rendered.locator("blockquote").get_by_text("How to use this notebook").wait_for()
    box = rendered.locator("blockquote").first.bounding_box()
    viewport = page.viewport_size
    assert box is not None and box["y"] + box["height"] <= viewport["height"], (box, viewport)
    first_screen = rendered.inner_text()
    assert "Shift+Enter" in first_screen and "Run All Cells" in first_screen
    _save(page, tmp_path, "first_screen_student_00.png")
    assert _dirty_tabs(page) == 0, "the student copy shows as modified right after opening"


def _run_all(page: Any) -> None:
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()
    page.wait_for_function(
        """() => { const p = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')];
                   return p.length > 0 && p.every(e => /\\[\\d+\\]/.test(e.textContent)); }""",
        timeout=240_000,
    )
    page.locator("#jp-main-statusbar").get_by_text("Idle").wait_for()


def test_student_copy_short_tracebacks_and_missing_return_feedback(
    lab: dict[str, Any], student_root: Path, page: Any, tmp_path: Path
) -> None:
    _open(page, lab, "student/01_tensor_hooks.ipynb")
    assert _dirty_tabs(page) == 0, "the student copy shows as modified right after opening"
    _run_all(page)
    errors = page.locator(".jp-Notebook .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    texts = [errors.nth(i).inner_text() for i in range(errors.count())]
    tracebacks = [t for t in texts if "Traceback" in t]
    assert tracebacks, texts  # the pitfall cells meant to fail did fail
    longest = max(len(t.strip().splitlines()) for t in tracebacks)
    print(f"student copy of 01: {len(tracebacks)} tracebacks, the longest {longest} lines")
    assert longest <= 12, tracebacks
    assert all("frames inside torch" in t or "Cell In[" in t for t in tracebacks), tracebacks
    # the unsolved checks printed a hint and Run All went on
    outputs = page.locator(".jp-Notebook .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stdout']")
    hints = [t for t in (outputs.nth(i).inner_text() for i in range(outputs.count())) if t.startswith("✗")]
    assert len(hints) == 3, hints

    # exercise 1, solved but for the `return`
    cell = page.locator(".jp-Notebook .jp-CodeCell").filter(has_text="def clip_hook(grad):").first
    cell.scroll_into_view_if_needed()
    cell.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(FORGOT_RETURN)
    page.keyboard.press("Shift+Enter")  # runs the exercise, selects the check cell
    page.keyboard.press("Shift+Enter")  # runs the check
    check = page.locator(".jp-Notebook .jp-CodeCell").filter(has_text="check_clip_hook(clip_hook)").first
    feedback = check.locator(".jp-OutputArea-output")
    feedback.filter(has_text="✗").first.wait_for(timeout=60_000)
    text = feedback.first.inner_text()
    flat = " ".join(text.split())
    print("missing-return feedback:", flat[:200])
    assert "`clip_hook` has no `return` statement" in flat, text
    assert "only the `return` is missing" in flat and "divide by the norm" not in flat, text
    assert all(len(line) <= 100 for line in text.splitlines()), "feedback wrapped at spaces, never mid-word"
    check.scroll_into_view_if_needed()
    _save(page, tmp_path, "missing_return_feedback.png")
