"""House rules every committed notebook follows (CONTRIBUTING.md), checked from the file alone.

Executed top to bottom, small, free of machine paths, Colab guard first, kernel ``python3``, tags
instead of ``# NBVAL_*`` comments, claim anchors with one of the four verdicts, title and recap.
No kernel is started; nbval (``make test-notebooks``) re-runs the cells.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
from notebook_tools import NOTEBOOKS, REPO, make_student, nb_id, tags

MAX_BYTES = 1_000_000
VERDICTS = ("TRUE", "FALSE", "PARTLY", "OUTDATED")
# Absolute paths of the machine that ran the notebook: the folder holding the checkout, home folders,
# temp dirs, interpreters.
MACHINE_PATH = re.compile(
    "(" + re.escape(str(REPO.parent) + "/") + "|"
    r"/home/|/root/|/tmp/|/Users/|/private/var/|site-packages|dist-packages|/usr/lib/python"
    r"|/usr/local/lib/python|[A-Za-z]:\\\\Users\\\\|\.venv/)"
)


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def colab_guard() -> str:
    """The guard cell's code, as CONTRIBUTING.md spells it (the single source of truth)."""
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    start = text.index("Colab guard")
    block = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert block, "CONTRIBUTING.md lost its Colab guard snippet"
    return "\n".join(line[3:] if line.startswith("   ") else line for line in block.group(1).splitlines())


def normalise(code: str) -> str:
    return "\n".join(line.rstrip() for line in code.strip().splitlines() if line.strip())


@pytest.mark.parametrize("path", NOTEBOOKS, ids=nb_id)
def test_is_small(path):
    size = path.stat().st_size
    assert size < MAX_BYTES, f"{path.name} is {size / 1e6:.2f} MB; shrink figures (figsize ~(6, 2.5), dpi 72-80)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=nb_id)
def test_kernel_is_python3(path):
    assert read(path).metadata.get("kernelspec", {}).get("name") == "python3"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=nb_id)
def test_executed_top_to_bottom_once(path):
    """Execution counts go 1, 2, 3... in cell order: the stored outputs come from one clean run."""
    code = [c for c in read(path).cells if c.cell_type == "code" and c.source.strip()]
    counts = [c.execution_count for c in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{path.name}: execution counts {counts[:12]}... - re-run it with `make execute NB={path.as_posix()}`"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=nb_id)
def test_no_unexpected_errors_in_stored_outputs(path):
    for index, cell in enumerate(read(path).cells):
        if cell.cell_type != "code" or "raises-exception" in tags(cell):
            continue
        errs = [o for o in cell.outputs if o.get("output_type") == "error"]
        assert not errs, f"{path.name} cell {index} raised {errs[0]['ename']} but is not tagged raises-exception"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=nb_id)
def test_no_machine_paths(path):
    """Outputs and metadata must not show where the notebook ran (warnings print site-packages paths)."""
    nb = read(path)
    places = [("notebook metadata", nb.metadata)]
    for index, cell in enumerate(nb.cells):
        places.append((f"cell {index} metadata", cell.get("metadata", {})))
        places.append((f"cell {index} outputs", cell.get("outputs", [])))
    for where, value in places:
        text = json.dumps(value, ensure_ascii=False)
        match = MACHINE_PATH.search(text)
        context = text[max(0, match.start() - 60) : match.end() + 40] if match else ""
        assert not match, f"{path.name} {where} contains a machine path: ...{context}..."


@pytest.mark.parametrize("path", NOTEBOOKS, ids=nb_id)
def test_first_code_cell_is_the_colab_guard(path):
    code = [c for c in read(path).cells if c.cell_type == "code"]
    assert code and normalise(code[0].source) == normalise(colab_guard()), (
        f"{path.name}: the first code cell must be the Colab guard from CONTRIBUTING.md, verbatim"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=nb_id)
def test_title_first_and_recap_last(path):
    cells = read(path).cells
    assert cells[0].cell_type == "markdown" and cells[0].source.lstrip().startswith("# "), "title first"
    assert "you will learn" in cells[0].source.lower(), f"{path.name}: the first cell lists what you will learn"
    last = cells[-1]
    assert last.cell_type == "markdown", f"{path.name}: end with a Recap / Next markdown cell"
    assert "recap" in last.source.lower() and "next" in last.source.lower(), f"{path.name}: Recap and Next"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=nb_id)
def test_last_cell_says_to_shut_the_kernel_down(path):
    """A workshop room runs out of memory when every finished notebook keeps its kernel (hundreds of MiB each)."""
    last = read(path).cells[-1].source
    assert "Close and Shut Down Notebook" in last and "Disconnect and delete runtime" in last, (
        f"{path.name}: end the last cell with the 'Done with this notebook?' step (save, close it with its kernel:"
        " Kernel > Shut Down Kernel alone comes back after a page reload)"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=nb_id)
def test_kernelspec_is_what_jupyterlab_writes(path):
    """JupyterLab writes the running kernel's display name into an opened notebook: a notebook that names another
    one ("Python 3") shows as modified, and asks to be saved when closed, before anyone typed anything."""
    assert read(path).metadata["kernelspec"] == make_student.STUDENT_KERNELSPEC, path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=nb_id)
def test_tags_not_comment_markers(path):
    """nbclient ignores ``# NBVAL_*`` comments, so ``nbconvert --execute`` would stop there; use tags."""
    for index, cell in enumerate(read(path).cells):
        if cell.cell_type != "code":
            continue
        assert not re.search(r"^\s*#\s*NBVAL_", cell.source, re.M), f"{path.name} cell {index}: use a tag"
        if "nbval-ignore-output" in tags(cell):
            assert cell.source.lstrip().startswith("# nbval-ignore-output:"), (
                f"{path.name} cell {index}: start with a comment `# nbval-ignore-output: why`"
            )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=nb_id)
def test_claims_have_anchor_and_verdict(path):
    """``<a id="claim-B1"></a>`` + ``### Claim B1: ... — **VERDICT**``, right before the proving code cell."""
    cells = read(path).cells
    for index, cell in enumerate(cells):
        if cell.cell_type != "markdown" or 'id="claim-' not in cell.source:
            continue
        anchor = re.search(r'<a id="claim-([AB]\d+)"></a>', cell.source)
        assert anchor, f'{path.name} cell {index}: claim anchors look like <a id="claim-A1"></a>'
        claim = anchor.group(1)
        heading = re.search(rf"^#+ Claim {claim}\b.*\*\*(\w+)\*\*", cell.source, re.M)
        assert heading, f"{path.name} cell {index}: add a heading `### Claim {claim}: ... — **VERDICT**`"
        assert heading.group(1) in VERDICTS, f"{path.name} claim {claim}: verdict must be one of {VERDICTS}"
        following = cells[index + 1] if index + 1 < len(cells) else None
        assert following is not None and following.cell_type == "code", (
            f"{path.name} claim {claim}: the cell right after the claim should be the code that proves it"
        )


# A measured ratio that varies between runs is quoted as the range re-runs gave ("×1.5 to ×2.6", zh "×1.5 到
# ×2.6"); the stored figure must lie inside it.
RATIO_RANGE = re.compile(r"×(\d+\.\d+) (?:to|到) ×(\d+\.\d+)")
HEAVY_RATIO = re.compile(r"heavy hook on every module\s+[\d.]+ ms/step\s+x(\d+\.\d+)")


def overhead_bullets(text: str) -> str:
    """The paragraph of 09's measured-overhead bullets."""
    return text[text.index('<a id="overhead-figures"></a>') :].split("\n\n")[1]


def overhead_figures(text: str) -> list[str]:
    """The decimal figures of 09's measured-overhead bullets, in order, without the stated range."""
    return re.findall(r"\d+\.\d+", RATIO_RANGE.sub("", overhead_bullets(text)))


def stated_range(text: str) -> tuple[float, float]:
    """The one ratio range ("×low to ×high") a text states."""
    ranges = RATIO_RANGE.findall(text)
    assert len(ranges) == 1, f"expected one range like '×1.5 to ×2.6', found {ranges}"
    low, high = (float(bound) for bound in ranges[0])
    assert low < high
    return low, high


def stored_heavy_ratio(stored: str) -> float:
    """The heavy-hook step ratio in 09's stored timing output."""
    found = HEAVY_RATIO.findall(stored)
    assert len(found) == 1, "09's step timing no longer prints the heavy hook's ratio"
    return float(found[0])


def test_measured_overhead_figures_are_the_stored_ones():
    """09 quotes its timing cells' stored outputs; a re-run that changes them must update the prose (and zh)."""
    english = read(REPO / "notebooks" / "09_hooks_in_production.ipynb")
    stored = "".join(
        output.get("text", "")
        for cell in english.cells
        if cell.cell_type == "code" and "timer=time.process_time" in cell.source
        for output in cell.get("outputs", [])
    )
    assert "us per call bare" in stored and "ms/step" in stored
    prose = next(cell.source for cell in english.cells if 'id="overhead-figures"' in cell.source)
    figures = overhead_figures(prose)
    assert len(figures) >= 10
    missing = [figure for figure in figures if figure not in stored]
    assert not missing, f"09 quotes figures that no stored output shows: {missing}"
    low, high = stated_range(overhead_bullets(prose))
    heavy = stored_heavy_ratio(stored)
    assert low <= heavy <= high, f"the stored heavy-hook ratio x{heavy} lies outside the stated ×{low} to ×{high}"
    chinese = read(REPO / "notebooks" / "zh" / "09_hooks_in_production.ipynb")
    zh_prose = next(cell.source for cell in chinese.cells if 'id="overhead-figures"' in cell.source)
    assert overhead_figures(zh_prose) == figures, "the Chinese edition quotes other figures"
    assert stated_range(overhead_bullets(zh_prose)) == (low, high), "the Chinese edition states another range"


def test_verdict_table_a7_ratios_round_the_stored_ones():
    """The verdict table's A7 row quotes 09's step ratios rounded; each must round a stored ratio."""
    notebook = read(REPO / "notebooks" / "09_hooks_in_production.ipynb")
    stored = [
        float(ratio)
        for cell in notebook.cells
        if cell.cell_type == "code" and "ms/step" in cell.source
        for output in cell.get("outputs", [])
        for ratio in re.findall(r"ms/step\s+x(\d+\.\d+)", output.get("text", ""))
    ]
    assert len(stored) == 4
    table = (REPO / "notebooks" / "article_verdicts.md").read_text(encoding="utf-8")
    row = next(line for line in table.splitlines() if line.startswith("| A7 |"))
    quoted = re.findall(r"×(\d+\.(\d+))", RATIO_RANGE.sub("", row))
    assert len(quoted) >= 3
    unmatched = [f"×{q}" for q, decimals in quoted if not any(f"{s:.{len(decimals)}f}" == q for s in stored)]
    assert not unmatched, f"A7 quotes ratios that no stored output of 09 rounds to: {unmatched} (stored: {stored})"
    prose = next(cell.source for cell in notebook.cells if 'id="overhead-figures"' in cell.source)
    assert stated_range(row) == stated_range(overhead_bullets(prose)), "A7 states another range than 09"
