"""Small text helpers shared by hookviz: one plain-text table formatter and one "closest names" hint.

Every text table hookviz prints (the hook table, the catalogue of hook kinds, the widgets' tables) and
every "no such name; closest: ..." error goes through these two functions, so they look the same
everywhere.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterable, Sequence

from hookviz.guards import check_int, check_number, check_str, check_strings, shown
from hookviz.i18n import tr

__all__ = ["closest_names", "closest_hint", "display_width", "text_table"]


def display_width(text: str) -> int:
    """How many columns ``text`` takes in a terminal or a notebook's monospace output: a Chinese (wide or
    full-width) character takes two, a combining mark none, every other character one.

    >>> display_width("where"), display_width("位置"), display_width("（1）")
    (5, 4, 5)
    """
    check_str(text, "text")
    return sum(
        0 if unicodedata.combining(char) else 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
        for char in text
    )


def _pad(cell: str, width: int) -> str:
    return cell + " " * (width - display_width(cell))


def text_table(
    headers: Sequence[str], rows: Iterable[Sequence[object]], *, rule: bool = True, empty: str | None = None
) -> str:
    """Format ``rows`` under ``headers`` as a plain-text table with left-aligned columns.

    Columns are separated by two spaces and trailing spaces are stripped; widths are display widths
    (:func:`display_width`), so Chinese cells line up too. With ``rule=True`` a line
    of dashes separates the header from the rows. Cells are turned into text with ``str()``. When
    there are no rows and ``empty`` is given, ``empty`` is returned instead of a header-only table.

    >>> print(text_table(("name", "calls"), [("conv", 2), ("fc", 10)]))
    name  calls
    ----  -----
    conv  2
    fc    10
    """
    header = tuple(str(h) for h in _cells(headers, "headers"))
    if not header:
        raise ValueError(tr("headers is empty: give the name of each column"))
    body = [tuple(str(cell) for cell in _cells(row, "rows")) for row in _cells(rows, "rows")]
    if not body and empty is not None:
        return empty
    for row in body:
        if len(row) != len(header):
            raise ValueError(tr(f"rows: a row has {len(row)} cells, the header has {len(header)}: {row!r}"))
    table = [header, *body]
    widths = [max(display_width(row[i]) for row in table) for i in range(len(header))]
    lines = ["  ".join(_pad(cell, w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in table]
    if rule:
        lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cells(value: object, name: str) -> list[object]:
    """``value`` as a list of cells: a list, tuple or other collection (a string alone would be read letter by
    letter, and is refused)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(tr(f"{name} must be a list (of cells), not {shown(value)}"))
    return list(value)


def closest_names(name: str, candidates: Iterable[str], *, n: int = 3, cutoff: float = 0.5) -> list[str]:
    """Up to ``n`` of ``candidates`` that look most like ``name`` (empty names are skipped)."""
    check_str(name, "name")
    candidates = check_strings(candidates, "candidates")
    n = check_int(n, "n", minimum=1)
    cutoff = check_number(cutoff, "cutoff", minimum=0.0, maximum=1.0)
    return difflib.get_close_matches(name, [c for c in candidates if c], n=n, cutoff=cutoff)


def closest_hint(name: str, candidates: Iterable[str], *, n: int = 3, cutoff: float = 0.5) -> str:
    """``"; closest: 'a', 'b'"`` to append to an error message, or ``""`` when nothing is close.

    >>> closest_hint("feature.0", ["features.0", "features.4", "classifier.1"])
    "; closest: 'features.0', 'features.4'"
    """
    close = closest_names(name, candidates, n=n, cutoff=cutoff)
    return f"; closest: {', '.join(map(repr, close))}" if close else ""
