"""Write student copies of the course notebooks: solutions removed, exercise outputs cleared.

Usage: ``python scripts/make_student.py SRC DST`` (``make student`` runs it as
``scripts/make_student.py notebooks student``). SRC is a folder of teacher notebooks (or one
notebook); DST is the folder the student copies go to (created if needed; ``student/`` is git-ignored).

The teacher notebooks in ``notebooks/`` are the single source of truth. For every notebook the copy:

* drops every cell tagged ``solution``;
* clears the outputs and execution count of the cells tagged ``exercise`` and ``check`` (a student
  must not see the teacher's "✓" under a check they have not solved yet);
* keeps every other cell as it is, outputs included, so the lesson still reads well before it is run;
* is validated with :func:`nbformat.validate` before it is written.

Other files in SRC (pictures a notebook shows, small data files) are copied too, so relative paths
keep working. The structure rules (each exercise is an ``exercise`` / ``solution`` / ``check`` triple,
in that order) are checked first: a malformed notebook stops the script with a message.
"""

from __future__ import annotations

import argparse
import copy
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

__all__ = [
    "EXERCISE_TAGS",
    "Exercise",
    "copy_extra_files",
    "exercises",
    "make_student_notebook",
    "write_student_copies",
]

#: The tags that make up one exercise, in the order the cells must appear.
EXERCISE_TAGS = ("exercise", "solution", "check")
#: Files and folders never copied from SRC.
SKIP_NAMES = {".ipynb_checkpoints", "__pycache__", ".DS_Store"}


@dataclass(frozen=True)
class Exercise:
    """Cell indices (in the teacher notebook) of one exercise's three cells."""

    number: int
    exercise: int
    solution: int
    check: int


def _tags(cell: nbformat.NotebookNode) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def exercises(nb: nbformat.NotebookNode) -> list[Exercise]:
    """Return the notebook's exercises; raise ``ValueError`` if the triples are malformed.

    Every cell carrying one of :data:`EXERCISE_TAGS` must be a code cell with exactly one of
    them, and the tagged cells must read ``exercise, solution, check`` again and again (other cells,
    such as a markdown hint, may sit between them).
    """
    tagged: list[tuple[int, str]] = []
    for index, cell in enumerate(nb.cells):
        found = [tag for tag in _tags(cell) if tag in EXERCISE_TAGS]
        if not found:
            continue
        if len(found) > 1:
            raise ValueError(f"cell {index} has more than one of the tags {EXERCISE_TAGS}: {found}")
        if cell.cell_type != "code":
            raise ValueError(f"cell {index} is tagged {found[0]!r} but is a {cell.cell_type} cell, not code")
        tagged.append((index, found[0]))
    result: list[Exercise] = []
    for start in range(0, len(tagged), 3):
        group = tagged[start : start + 3]
        kinds = tuple(kind for _, kind in group)
        if kinds != EXERCISE_TAGS:
            where = ", ".join(f"cell {i}: {k}" for i, k in group)
            raise ValueError(
                f"exercise {start // 3 + 1} must be one exercise, one solution and one check cell, "
                f"in that order; found {where}"
            )
        result.append(Exercise(start // 3 + 1, *(index for index, _ in group)))
    return result


def make_student_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Return a student copy of the teacher notebook ``nb`` (``nb`` itself is not changed)."""
    exercises(nb)  # refuse malformed notebooks before writing anything
    student = copy.deepcopy(nb)
    cells = []
    for cell in student.cells:
        tags = _tags(cell)
        if "solution" in tags:
            continue
        if cell.cell_type == "code" and ("exercise" in tags or "check" in tags):
            cell.outputs = []
            cell.execution_count = None
        cells.append(cell)
    student.cells = cells
    student.metadata.setdefault("hookviz", {})["student_copy"] = True
    nbformat.validate(student)
    return student


def copy_extra_files(src: Path, dst: Path) -> list[Path]:
    """Copy what a notebook may refer to by a relative path (everything but notebooks and caches)."""
    copied = []
    for path in sorted(src.iterdir()):
        if path.name in SKIP_NAMES or path.suffix == ".ipynb":
            continue
        target = dst / path.name
        if path.is_dir():
            shutil.copytree(path, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*SKIP_NAMES))
        else:
            shutil.copy2(path, target)
        copied.append(target)
    return copied


def write_student_copies(src: Path, dst: Path) -> list[Path]:
    """Write the student copy of every notebook in ``src`` (a folder or one ``.ipynb``) into ``dst``."""
    src, dst = Path(src), Path(dst)
    if src.is_dir():
        notebooks = sorted(src.glob("*.ipynb"))
        folder = src
    else:
        notebooks, folder = [src], src.parent
    if src.resolve() == dst.resolve() or folder.resolve() == dst.resolve():
        raise ValueError("DST must differ from the teacher notebooks' folder")
    students = []
    for path in notebooks:  # all or nothing: check every notebook before writing any copy
        try:
            students.append((path.name, make_student_notebook(nbformat.read(path, as_version=4))))
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from exc
    dst.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        copy_extra_files(folder, dst)
    written = []
    for name, student in students:
        nbformat.write(student, dst / name)
        written.append(dst / name)
    return written


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: ``make_student.py SRC DST``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", type=Path, help="folder of teacher notebooks, or one notebook")
    parser.add_argument("dst", type=Path, help="folder for the student copies")
    args = parser.parse_args(argv)
    try:
        written = write_student_copies(args.src, args.dst)
    except ValueError as exc:
        print(f"make_student: {exc}", file=sys.stderr)
        return 1
    for path in written:
        nb = nbformat.read(path, as_version=4)
        count = sum(1 for cell in nb.cells if "exercise" in _tags(cell))
        print(f"{path}  ({count} exercise{'s' if count != 1 else ''})")
    print(f"{len(written)} student notebook{'s' if len(written) != 1 else ''} in {args.dst}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
