"""Notebook 06 in a real JupyterLab + Chromium: the explorer renders and redraws when a layer is picked."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = "06_hookviz_explorer.ipynb"

# The explorer is the notebook's first widget: its first Output holds the feature-map picture.
MAPS_IMG = "(document.querySelector('.jp-Notebook .widget-vbox .widget-output img') || {}).src || null"
LAYER_SELECT = ".jp-Notebook .widget-vbox .widget-dropdown:has(label:text-is('layer')) select"


def _run_all(page: Any) -> None:
    # Clear the stored outputs first: their prompt numbers would satisfy the wait below at once.
    page.get_by_role("menuitem", name="Edit", exact=True).click()
    page.locator('.lm-Menu-item[data-command="editmenu:clear-all"]').click()
    page.wait_for_function(
        "() => ![...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')]"
        ".some(e => /\\[\\d+\\]/.test(e.textContent))"
    )
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.locator('.lm-Menu-item[data-command="runmenu:run-all"]').click()
    page.wait_for_function(
        """() => { const p = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')];
                   return p.length > 0 && p.every(e => /\\[\\d+\\]/.test(e.textContent)); }""",
        timeout=240_000,
    )
    page.locator("#jp-main-statusbar").get_by_text("Idle").wait_for()


def _save(page: Any, tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    page.screenshot(path=str(path))
    results = REPO / "bench" / "results"  # git ignores it; handy to look at after `make test-browser`
    try:
        results.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, results / name)
    except OSError:
        pass
    return path


def test_explorer_renders_and_layer_pick_redraws(lab: dict[str, Any], page: Any, tmp_path: Path) -> None:
    page.goto(f"{lab['url']}/lab/tree/{NOTEBOOK}?reset&token={lab['token']}")
    page.locator("#jp-main-statusbar").get_by_text("Idle").wait_for()
    _run_all(page)

    # every code cell ran; the only error shown is the KeyError of the raises-exception pitfall cell
    errors = page.locator(".jp-Notebook .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    texts = [errors.nth(i).text_content() or "" for i in range(errors.count())]
    assert len(texts) == 1 and "KeyError" in texts[0], texts
    outputs = page.locator(".jp-Notebook .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stdout']")
    ticks = [t for t in (outputs.nth(i).text_content() or "" for i in range(outputs.count())) if "✓" in t]
    assert len(ticks) == 3, ticks  # the three exercise checks passed in the browser too

    # the explorer rendered as a live widget: controls and a feature-map picture
    select = page.locator(LAYER_SELECT).first
    select.wait_for()
    page.wait_for_function(f"() => ({MAPS_IMG}) !== null")
    select.scroll_into_view_if_needed()
    assert select.input_value() is not None
    before = page.evaluate(f"() => {MAPS_IMG}")
    assert before.startswith("data:image/png;base64,")
    _save(page, tmp_path, "explorer_before.png")

    # pick another layer through the UI: the kernel redraws, the picture changes
    # ipywidgets writes option labels with non-breaking spaces
    options = [(o.text_content() or "").replace("\xa0", " ") for o in select.locator("option").all()]
    index = next((i for i, o in enumerate(options) if o.startswith("features.0 ")), None)
    assert index is not None, options
    select.select_option(index=index)
    page.wait_for_function(f"() => ({MAPS_IMG}) !== {before!r}", timeout=60_000)
    page.locator("#jp-main-statusbar").get_by_text("Idle").wait_for()
    after = page.evaluate(f"() => {MAPS_IMG}")
    assert after != before and after.startswith("data:image/png;base64,")
    caption = (page.locator(".jp-Notebook .widget-vbox .widget-html").first.text_content() or "").replace("\xa0", " ")
    assert caption.startswith("features.0 · Conv2d · (8, 8, 8)")
    shot = _save(page, tmp_path, "explorer_after.png")
    assert shot.stat().st_size > 10_000
    assert not (REPO / "notebooks" / ".ipynb_checkpoints").exists()  # Lab worked on the copy only
