"""Every recap bullet cites its proof: a link to an anchor that exists.

A notebook's "## Recap" cell sums up what the notebook proved. Each top-level bullet there must link to
the section or cell that proves it, as `[text](#anchor)` in the same notebook or
`[text](NN_name.ipynb#anchor)` in another one, and the anchor must exist as an explicit
`<a id="anchor"></a>` in a markdown cell of that notebook. No kernel is started.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from notebook_tools import NB_DIR, NOTEBOOKS, nb_id

ANCHOR = re.compile(r"""<a\s+(?:id|name)\s*=\s*["']([^"']+)["']""")
LINK = re.compile(r"\]\(([^)\s]*)#([^)\s]+)\)")
RECAP_HEADING = re.compile(r"^#{1,3}\s*Recap\b.*$", re.M)
NEXT_HEADING = re.compile(r"^#{1,3}\s|^\*\*Next", re.M)


def anchors(path: Path) -> set[str]:
    """The explicit anchor ids of a notebook's markdown cells."""
    nb = nbformat.read(path, as_version=4)
    return {a for cell in nb.cells if cell.cell_type == "markdown" for a in ANCHOR.findall(cell.source)}


def recap_bullets(path: Path) -> list[str]:
    """The top-level bullets of the notebook's Recap section (continuation lines joined)."""
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        match = RECAP_HEADING.search(cell.source) if cell.cell_type == "markdown" else None
        if not match:
            continue
        body = cell.source[match.end() :]
        end = NEXT_HEADING.search(body)
        body = body[: end.start()] if end else body
        bullets: list[str] = []
        for line in body.splitlines():
            if re.match(r"^[-*]\s", line):
                bullets.append(line)
            elif bullets and line.strip():
                bullets[-1] += " " + line.strip()
        return bullets
    return []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=nb_id)
def test_recap_bullets_link_to_existing_anchors(path):
    bullets = recap_bullets(path)
    assert bullets, f"{path.name}: no '## Recap' section with bullets"
    own = anchors(path)
    problems = []
    for bullet in bullets:
        links = LINK.findall(bullet)
        if not links:
            problems.append(f"no link to a proving anchor: {bullet[:90]}...")
        for target, anchor in links:
            target_path = path if not target else (path.parent / target)
            if not target_path.exists():
                problems.append(f"links to a missing notebook {target!r}")
            elif anchor not in (own if not target else anchors(target_path)):
                problems.append(f"links to #{anchor}, which {target or path.name} does not define")
    assert not problems, f"{path.name} recap:\n  " + "\n  ".join(problems)


def test_the_checker_sees_a_missing_anchor(tmp_path):
    """The rule bites: a bullet without a link and a link to a missing anchor are both reported."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell('<a id="proof"></a>\n## A proof'),
        nbformat.v4.new_markdown_cell(
            "## Recap\n\n- proven [here](#proof)\n- unproven\n- [broken](#nowhere)\n\n## Next"
        ),
    ]
    path = tmp_path / "99_probe.ipynb"
    nbformat.write(nb, path)
    assert [bool(LINK.findall(b)) for b in recap_bullets(path)] == [True, False, True]
    with pytest.raises(AssertionError, match="no link.*\n.*nowhere"):
        test_recap_bullets_link_to_existing_anchors(path)


def test_notebook_folder_is_found():
    assert NB_DIR.is_dir() and NOTEBOOKS
