"""Student copies: ``make student`` removes the solutions, and then every check really fails.

For each teacher notebook in ``notebooks/`` the student copy is generated with
``scripts/make_student.py`` and checked without a kernel (valid nbformat, no solution left, no
teacher "✓" left under a check). Then it is executed ONCE with nbclient (``allow_errors=True``,
kernel ``python3``, cwd = the student folder; nbclient's CLI in a subprocess, ``HOOKVIZ_TEST_JOBS``
notebooks at a time, default 2), which proves at the same time that

* the copy runs up to its first exercise (no cell errors there, except ``raises-exception`` ones);
* every ``check`` cell fails with ``ExerciseNotSolved`` when its solution is missing;
* the cells between and after the exercises still run (exercises are independent of the lesson).

One execution proves all exercises of a notebook because exercises must be independent
(CONTRIBUTING.md). The stronger pass, one execution per exercise with only that solution removed,
runs only with ``HOOKVIZ_PER_EXERCISE=1`` (it costs one kernel run per exercise).

``HOOKVIZ_NOTEBOOK_DIR`` points the tests at another folder of notebooks (used to develop them).
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from notebook_tools import NB_DIR, NOTEBOOKS, make_student, nb_id, tags

CELL_TIMEOUT = 120  # seconds per cell; a whole notebook takes 10-30 s
NOTEBOOK_TIMEOUT = 600
NOT_SOLVED = "ExerciseNotSolved"


def errors(cell) -> list[dict]:
    return [out for out in cell.get("outputs", []) if out.get("output_type") == "error"]


def describe(cell) -> str:
    first = cell.source.strip().splitlines()[:1] or [""]
    return first[0][:70]


def kernel_env() -> dict[str, str]:
    """The environment of a test kernel: one torch thread, fixed hash seed, Jupyter's own plot backend."""
    env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), PYTHONHASHSEED="0")
    env.pop("MPLBACKEND", None)
    return env


def run_notebook(nb: nbformat.NotebookNode, cwd: Path) -> nbformat.NotebookNode:
    """Execute ``nb`` in this process with nbclient, in a fresh ``python3`` kernel, keeping going after errors."""
    from nbclient import NotebookClient

    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(cwd)}},
    )
    return client.execute(env=kernel_env(), cwd=str(cwd))


# ---------------------------------------------------------------- the script itself (no kernel)


def _tiny_teacher_notebook() -> nbformat.NotebookNode:
    code, md = nbformat.v4.new_code_cell, nbformat.v4.new_markdown_cell
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    out = nbformat.v4.new_output("stream", name="stdout", text="✓ done\n")
    cells = [
        md("# Title"),
        code("x = 1", execution_count=1),
        code("answer = None", execution_count=2, metadata={"tags": ["exercise"]}),
        code("answer = 2", execution_count=3, metadata={"tags": ["solution"]}),
        md("Check it:"),
        code("check(answer)", execution_count=4, outputs=[out], metadata={"tags": ["check"]}),
        code("print(x)", execution_count=5, outputs=[nbformat.v4.new_output("stream", name="stdout", text="1\n")]),
    ]
    nb.cells = cells
    return nb


def test_student_copy_drops_solutions_and_clears_exercise_outputs(tmp_path):
    src, dst = tmp_path / "notebooks", tmp_path / "student"
    src.mkdir()
    nbformat.write(_tiny_teacher_notebook(), src / "01_tiny.ipynb")
    (src / "picture.png").write_bytes(b"png")
    assert make_student.main([str(src), str(dst)]) == 0
    student = nbformat.read(dst / "01_tiny.ipynb", as_version=4)
    nbformat.validate(student)
    assert [tags(c) for c in student.cells] == [[], [], ["exercise"], [], ["check"], []]
    check = student.cells[4]
    assert check.outputs == [] and check.execution_count is None
    assert student.cells[2].execution_count is None
    assert student.cells[5].outputs[0]["text"] == "1\n" and student.cells[5].execution_count == 5
    assert (dst / "picture.png").read_bytes() == b"png"
    teacher = nbformat.read(src / "01_tiny.ipynb", as_version=4)
    assert len(teacher.cells) == 7, "the teacher notebook must not change"


@pytest.mark.parametrize(
    "order",
    [("exercise", "check", "solution"), ("exercise", "solution"), ("solution", "exercise", "check")],
)
def test_malformed_exercise_is_refused(tmp_path, order):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("pass", metadata={"tags": [t]}) for t in order]
    nbformat.write(nb, tmp_path / "01_bad.ipynb")
    assert make_student.main([str(tmp_path / "01_bad.ipynb"), str(tmp_path / "student")]) == 1
    assert not (tmp_path / "student" / "01_bad.ipynb").exists()


def test_refuses_to_overwrite_the_teacher_notebooks(tmp_path):
    nbformat.write(_tiny_teacher_notebook(), tmp_path / "01_tiny.ipynb")
    assert make_student.main([str(tmp_path), str(tmp_path)]) == 1


# ---------------------------------------------------------------- every course notebook (no kernel)


@pytest.fixture(scope="session")
def student_dir(tmp_path_factory) -> Path:
    """All student copies, generated once per session with the same code as ``make student``."""
    dst = tmp_path_factory.mktemp("student")
    if NB_DIR.is_dir():
        make_student.copy_extra_files(NB_DIR, dst)
    for path in NOTEBOOKS:  # one by one: a malformed notebook fails only its own tests
        try:
            nbformat.write(make_student.make_student_notebook(nbformat.read(path, as_version=4)), dst / path.name)
        except ValueError:
            pass
    return dst


@pytest.mark.parametrize("teacher_path", NOTEBOOKS, ids=nb_id)
def test_student_copy_is_valid_and_has_no_solution(student_dir, teacher_path):
    teacher = nbformat.read(teacher_path, as_version=4)
    make_student.exercises(teacher)  # a malformed notebook fails here, with the offending cells
    student = nbformat.read(student_dir / teacher_path.name, as_version=4)
    nbformat.validate(student)
    assert not [c for c in student.cells if "solution" in tags(c)]
    kept = [c for c in teacher.cells if "solution" not in tags(c)]
    assert [c.source for c in student.cells] == [c.source for c in kept], "only solution cells may be removed"
    for t_cell, s_cell in zip(kept, student.cells, strict=True):
        if {"exercise", "check"} & set(tags(s_cell)):
            assert s_cell.outputs == [] and s_cell.execution_count is None, describe(s_cell)
        elif s_cell.cell_type == "code":
            assert s_cell.outputs == t_cell.outputs, f"outputs of other cells are kept: {describe(s_cell)}"


# ---------------------------------------------------------------- executed student copies (one kernel each)


def _execute_file(path: Path) -> nbformat.NotebookNode | Exception:
    """Run one student copy with nbclient's CLI in a subprocess; return the executed notebook."""
    if not path.exists():
        return RuntimeError(f"no student copy of {path.name}: see test_student_copy_is_valid_and_has_no_solution")
    out = path.with_name(f"{path.stem}_executed.ipynb")
    cmd = [
        sys.executable,
        "-c",
        "from nbclient.cli import main; main()",
        "--allow-errors",
        "--kernel_name=python3",
        f"--timeout={CELL_TIMEOUT}",
        f"--output={out.stem}",
        str(path),
    ]
    try:
        proc = subprocess.run(cmd, env=kernel_env(), capture_output=True, text=True, timeout=NOTEBOOK_TIMEOUT)
    except subprocess.TimeoutExpired:
        return RuntimeError(f"{path.name} did not finish in {NOTEBOOK_TIMEOUT} s")
    if proc.returncode != 0 or not out.exists():
        return RuntimeError(f"{path.name} could not be executed (rc {proc.returncode}):\n{proc.stderr[-3000:]}")
    return nbformat.read(out, as_version=4)


@pytest.fixture(scope="session")
def executed_notebooks(request, student_dir) -> dict[str, nbformat.NotebookNode | Exception]:
    """Every selected student copy, executed ONCE, ``HOOKVIZ_TEST_JOBS`` (default 2) kernels at a time."""
    wanted = sorted(
        {
            item.callspec.params["teacher_path"]
            for item in request.session.items
            if "executed_notebooks" in getattr(item, "fixturenames", ()) and hasattr(item, "callspec")
        }
    )
    jobs = max(1, int(os.environ.get("HOOKVIZ_TEST_JOBS", "2")))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = pool.map(_execute_file, [student_dir / path.name for path in wanted])
        return {path.name: result for path, result in zip(wanted, results, strict=True)}


@pytest.fixture
def executed(executed_notebooks, teacher_path) -> tuple[str, nbformat.NotebookNode]:
    """(teacher notebook name, its executed student copy)."""
    result = executed_notebooks[teacher_path.name]
    if isinstance(result, Exception):
        raise result
    return teacher_path.name, result


@pytest.mark.slow
@pytest.mark.parametrize("teacher_path", NOTEBOOKS, ids=nb_id)
def test_student_copy_runs_up_to_its_first_exercise(executed):
    name, nb = executed
    for index, cell in enumerate(nb.cells):
        if "exercise" in tags(cell):
            break
        errs = errors(cell)
        if cell.cell_type == "code" and "raises-exception" not in tags(cell):
            assert not errs, (
                f"{name} cell {index} ({describe(cell)!r}) failed before the first exercise: "
                f"{errs[0]['ename']}: {errs[0]['evalue']}"
            )


@pytest.mark.slow
@pytest.mark.parametrize("teacher_path", NOTEBOOKS, ids=nb_id)
def test_every_check_fails_without_its_solution(executed):
    name, nb = executed
    checks = [(i, c) for i, c in enumerate(nb.cells) if "check" in tags(c)]
    for index, cell in checks:
        errs = errors(cell)
        assert errs, f"{name} cell {index} ({describe(cell)!r}): the check passed without its solution"
        assert errs[0]["ename"] == NOT_SOLVED, (
            f"{name} cell {index} ({describe(cell)!r}) failed with {errs[0]['ename']}: {errs[0]['evalue']}, "
            f"expected {NOT_SOLVED} (a check must fail with a hint, not crash)"
        )
        assert "✓" not in "".join(o.get("text", "") for o in cell.outputs if o["output_type"] == "stream")
    teacher = nbformat.read(NB_DIR / name, as_version=4)
    solutions = [teacher.cells[ex.solution].source for ex in make_student.exercises(teacher)]
    for (index, cell), solution in zip(checks, solutions, strict=True):
        hint = errors(cell)[0]["evalue"]
        for line in solution.splitlines():
            line = line.strip()
            if len(line) >= 20 and not line.startswith(("#", "def ", "class ", "import ", "from ")):
                assert line not in hint, f"{name} cell {index}: the hint gives the solution away ({line!r})"


@pytest.mark.slow
@pytest.mark.parametrize("teacher_path", NOTEBOOKS, ids=nb_id)
def test_lesson_cells_run_without_the_solutions(executed):
    """Cells that are not part of an exercise must not depend on a solution (exercises are independent)."""
    name, nb = executed
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or {"exercise", "check", "raises-exception"} & set(tags(cell)):
            continue
        errs = errors(cell)
        assert not errs, (
            f"{name} cell {index} ({describe(cell)!r}) fails in the student copy: "
            f"{errs[0]['ename']}: {errs[0]['evalue']} (does it use a solution's result?)"
        )


def _per_exercise_cases():
    if os.environ.get("HOOKVIZ_PER_EXERCISE") != "1":
        return []
    cases = []
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for ex in make_student.exercises(nb):
            cases.append(pytest.param(path, ex.number, id=f"{path.stem}-ex{ex.number}"))
    return cases


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("HOOKVIZ_PER_EXERCISE") != "1", reason="set HOOKVIZ_PER_EXERCISE=1 (slow)")
@pytest.mark.parametrize("path, number", _per_exercise_cases())
def test_only_this_solution_removed(path, number):
    """Remove ONE solution: its check fails with ExerciseNotSolved, every other check still passes."""
    nb = nbformat.read(path, as_version=4)
    target = next(ex for ex in make_student.exercises(nb) if ex.number == number)
    del nb.cells[target.solution]
    nb = run_notebook(nb, path.parent)
    checks = [cell for cell in nb.cells if "check" in tags(cell)]  # in exercise order
    for other, cell in enumerate(checks, start=1):
        errs = errors(cell)
        if other == number:
            assert errs and errs[0]["ename"] == NOT_SOLVED, f"exercise {number}: the check passed without its solution"
        else:
            assert not errs, f"exercise {other} depends on exercise {number}: {errs[0]['ename']}"
