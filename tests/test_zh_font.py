"""hookviz's own Chinese font: every Chinese string hookviz can draw has its glyphs, in matplotlib and Pillow.

Most machines, Colab and Binder included, have no font with Chinese glyphs; hookviz ships a subset of Noto Sans
CJK SC (``hookviz/assets/fonts``, SIL Open Font License) with the characters of the Chinese catalogue
(``hookviz/locale/zh/LC_MESSAGES/hookviz.po``).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from fontTools.ttLib import TTFont

from hookviz import i18n, render

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("make_cjk_font", ROOT / "scripts" / "make_cjk_font.py")
make_cjk_font = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make_cjk_font)


@pytest.fixture
def chinese() -> Iterator[None]:
    i18n.set_language("zh")
    yield
    i18n.set_language(None)


def test_the_font_has_every_character_of_the_chinese_strings() -> None:
    family, path = render.cjk_font()
    assert family == "hookviz CJK SC"
    cmap = TTFont(path).getBestCmap()
    catalogue = make_cjk_font.catalogue_text()
    missing = sorted(ch for ch in make_cjk_font.needed_characters(catalogue) if ord(ch) not in cmap)
    assert not missing, f"characters without a glyph: {''.join(missing)!r}: run scripts/make_cjk_font.py"


def test_the_font_is_small_and_licensed() -> None:
    _, path = render.cjk_font()
    assert Path(path).stat().st_size < 600 * 1024
    licence = (Path(path).parent / "OFL.txt").read_text(encoding="utf-8")
    assert "SIL OPEN FONT LICENSE Version 1.1" in licence and "Noto Sans CJK SC" in licence


def test_matplotlib_draws_chinese_labels_with_no_missing_glyph(chinese: None) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3, 2))
    ax = fig.add_subplot()
    ax.set_title(render.figure_text("firing order"))
    ax.set_xlabel(render.figure_text("key position"))
    assert ax.get_title() == "触发顺序"
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="Glyph .* missing from font")
        FigureCanvasAgg(fig).draw()


def test_pillow_pictures_draw_chinese_glyphs_not_boxes(chinese: None) -> None:
    font = render.panel_font()
    drawn = bytes(font.getmask("钩子"))
    box = bytes(font.getmask("\u9fa5\u9fa4"))  # two characters hookviz never uses: the font's empty box twice
    assert drawn != box
    assert bytes(font.getmask("layer 1")) != bytes(font.getmask("\u9fa5" * 7))  # Latin letters are in it too


def test_hookviz_lang_zh_lets_charts_draw_chinese_from_the_import() -> None:

    code = "import hookviz, matplotlib; print(matplotlib.rcParams['font.family'])"
    env = {**os.environ, "HOOKVIZ_LANG": "zh"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert "hookviz CJK SC" in out
    env["HOOKVIZ_LANG"] = "en"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert "hookviz CJK SC" not in out  # an English learner's matplotlib settings are left alone
