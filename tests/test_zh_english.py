"""No learner-facing English in the Chinese edition, except PyTorch's own messages, API names and tensor shapes.

``scripts/zh_english_scan.py`` reads every zh notebook's stored outputs (what nbval proves the code prints) and the
catalogue's translations. The notebooks whose printed labels all go through ``hookviz.tr`` (its ``CONVERTED``:
the taster's 00-08 and the atlas 16) must show no English line; the others may not show more than their recorded
ceiling, and their label tables (``i18n/zh/NN_name.md``) still carry what they print.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("zh_english_scan", ROOT / "scripts" / "zh_english_scan.py")
scan = importlib.util.module_from_spec(spec)
sys.modules["zh_english_scan"] = scan  # dataclasses look their module up there
spec.loader.exec_module(scan)

SCANS = {result.name[:2]: result for result in scan.scan_notebooks()}


@pytest.mark.parametrize("number", scan.CONVERTED)
def test_converted_notebooks_show_no_english(number: str) -> None:
    lines = SCANS[number].lines
    assert not lines, "\n".join(f"cell {cell}: {line} -> {runs}" for cell, line, runs in lines)


@pytest.mark.parametrize("number", sorted(set(SCANS) - set(scan.CONVERTED)))
def test_other_notebooks_do_not_gain_english(number: str) -> None:
    ceiling = scan.CEILINGS.get(number)
    assert ceiling is not None, f"notebook {number}: give it a ceiling in scripts/zh_english_scan.py (or convert it)"
    assert len(SCANS[number].lines) <= ceiling, (
        f"notebook {number}: {len(SCANS[number].lines)} English lines, the ceiling is {ceiling}; translate the new "
        "ones through hookviz.tr, or lower the ceiling when there are fewer"
    )


def test_the_catalogue_translations_hold_no_english() -> None:
    found = scan.catalogue_english()
    assert not found, "\n".join(f"{english!r} -> {chinese!r}: {runs}" for english, chinese, runs in found)


def test_the_scan_keeps_code_library_messages_and_shapes() -> None:
    assert scan.english_left("features.0 Conv2d (8, 8, 8) shape torch.Size([2, 3])", []) == []
    assert scan.english_left("警告： UserWarning: Full backward hook is firing when gradients are computed", []) == []
    assert scan.english_left("`hook(module, args, output)` 必须返回 None", []) == []
    assert scan.english_left("hooks still attached after handle.remove(): 1", []) == ["hooks still attached after"]


def test_zh_00_check_setup_output_is_chinese() -> None:
    """The review found zh 00's stored check_setup() output in English (the cell's output is not compared)."""
    cells = json.loads((ROOT / "notebooks" / "zh" / "00_start_here.ipynb").read_text(encoding="utf-8"))["cells"]
    setup = next(c for c in cells if c["cell_type"] == "code" and "hookviz.check_setup()" in "".join(c["source"]))
    text = "".join("".join(o.get("text", "")) for o in setup["outputs"])
    assert "就绪（READY）" in text and "READY: everything" not in text


def test_no_literal_emphasis_markers_in_the_zh_notebooks() -> None:
    """``**解决办法：**只…`` renders its stars in CommonMark (zh 11 cell 52 in the review)."""
    markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py renders the notebooks' markdown")
    render = markdown_it.MarkdownIt("commonmark").render
    found = []
    for path in sorted((ROOT / "notebooks" / "zh").glob("*.ipynb")):
        for index, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            if cell["cell_type"] != "markdown":
                continue
            html = re.sub(r"<code>.*?</code>|<pre>.*?</pre>", "", render("".join(cell["source"])), flags=re.DOTALL)
            found += [f"{path.name} cell {index}: {m}" for m in re.findall(r".{0,20}\*\*.{0,20}", html)]
    assert not found, found
