"""Build hookviz's Chinese font: the glyphs of every Chinese string hookviz draws, cut from Noto Sans CJK SC.

Chinese learners' pictures and charts (`hookviz.set_language("zh")`) need a font with Chinese glyphs, and
most machines, Colab and Binder included, have none: matplotlib and Pillow would draw empty boxes. So the
package carries its own small font (`hookviz/assets/fonts/hookviz-cjk-sc.otf`, SIL Open Font License 1.1,
`OFL.txt` beside it): printable ASCII plus every Chinese character and full-width sign that appears in
the Chinese catalogue (`hookviz/locale/zh/LC_MESSAGES/hookviz.po`), taken from Noto Sans CJK SC and renamed (a
modified font keeps no original name).

Rebuild it after adding translations with new characters (`tests/test_zh_font.py` says when):

    apt-get install fonts-noto-cjk        # Debian/Ubuntu: the source font, once
    python scripts/make_cjk_font.py       # or --source PATH to another copy of NotoSansCJK-Regular.ttc
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTCollection

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "hookviz" / "assets" / "fonts" / "hookviz-cjk-sc.otf"
#: The copy hookviz's JupyterLab helper serves to the browser (hookviz's widgets fall back to it; labextension/).
LAB_COPY = ROOT / "hookviz" / "labextension" / "static" / "hookviz-cjk-sc.otf"
#: The Chinese strings hookviz draws: the gettext catalogue, and the old Python one while entries are moved out of it.
CATALOGUES = (ROOT / "hookviz" / "locale" / "zh" / "LC_MESSAGES" / "hookviz.po", ROOT / "hookviz" / "i18n_zh.py")


def catalogue_text() -> str:
    """The text of every Chinese catalogue (the characters the font must have)."""
    return "".join(path.read_text(encoding="utf-8") for path in CATALOGUES if path.exists())


SOURCE = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
FAMILY = "hookviz CJK SC"


#: Chinese characters, CJK signs and full-width forms: what matplotlib's DejaVu Sans and Pillow's own font lack.
CJK_RANGES = ((0x2E80, 0x2FDF), (0x3000, 0x303F), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xFF00, 0xFFEF))


def is_cjk(ch: str) -> bool:
    """True for a character in :data:`CJK_RANGES`."""
    return any(lo <= ord(ch) <= hi for lo, hi in CJK_RANGES)


def needed_characters(text: str) -> set[str]:
    """What the font must draw: printable ASCII (Pillow draws a zh picture in this one font) and the CJK
    characters of ``text``; other signs (``·``, ``…``, ``→``) are taken too when the source font has them."""
    ascii_ = {chr(c) for c in range(0x20, 0x7F)}
    return ascii_ | {ch for ch in text if is_cjk(ch)}


def wanted_characters(text: str) -> set[str]:
    """:func:`needed_characters` plus every other printable non-ASCII character of ``text``."""
    return needed_characters(text) | {ch for ch in text if ord(ch) > 0x7F and ch.isprintable()}


def build(source: Path, out: Path) -> int:
    """Write the subset font; returns its number of characters."""
    collection = TTCollection(str(source))
    font = next(f for f in collection.fonts if f["name"].getDebugName(1) == "Noto Sans CJK SC")
    chars = {ch for ch in wanted_characters(catalogue_text()) if ord(ch) in font.getBestCmap()}
    options = subset.Options()
    options.layout_features = ["*"]
    options.name_IDs = ["*"]
    options.notdef_outline = True
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=[ord(ch) for ch in chars])
    subsetter.subset(font)
    names = font["name"]
    for record in names.names:
        if record.nameID in (1, 16):
            record.string = FAMILY
        elif record.nameID in (3, 4):
            record.string = f"{FAMILY} Regular"
        elif record.nameID == 6:
            record.string = FAMILY.replace(" ", "") + "-Regular"
    font["CFF "].cff.fontNames = [FAMILY.replace(" ", "") + "-Regular"]
    out.parent.mkdir(parents=True, exist_ok=True)
    font.save(str(out))
    return len(chars)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=SOURCE, help="NotoSansCJK-Regular.ttc (fonts-noto-cjk)")
    args = parser.parse_args()
    if not args.source.exists():
        parser.error(f"{args.source} not found: install it with `apt-get install fonts-noto-cjk`, or pass --source")
    n = build(args.source, OUT)
    print(f"{OUT.relative_to(ROOT)}: {n} characters, {OUT.stat().st_size / 1024:.0f} KiB")
    copy_to_lab()


def copy_to_lab() -> None:
    """Put the font where hookviz's JupyterLab helper serves it from (:data:`LAB_COPY`)."""
    LAB_COPY.parent.mkdir(parents=True, exist_ok=True)
    LAB_COPY.write_bytes(OUT.read_bytes())


if __name__ == "__main__":
    main()
