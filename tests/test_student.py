"""Student copies: ``make student`` removes the solutions, keeps the surprise, and never loses a learner's work.

Without a kernel: the script itself (solutions dropped, predict mode clears outputs and hides claim
verdicts, presenter copies, an edited copy is never overwritten, ``--reset`` backs the learner's version
up, ``make lab`` / ``make student-lab`` / ``make clean`` do what they say), then for each teacher notebook
in ``notebooks/`` its student copy (valid nbformat, no solution left, nothing but the student changes).

Then each student copy is executed ONCE with nbclient (``allow_errors=True``, kernel ``python3``, cwd =
the student folder; nbclient's CLI in a subprocess, ``HOOKVIZ_TEST_JOBS`` notebooks at a time, default
2). Student copies run with soft checks on (the cell ``make student`` adds), which proves at the same
time that

* the copy runs up to its first exercise (no cell errors there, except ``raises-exception`` ones);
* every ``check`` cell reports its exercise as not solved (a ``✗`` line with the checker's hint, from
  ``ExerciseNotSolved``) when its solution is missing, and no check cell stops the run, so "Run All"
  replays the notebook past every skipped exercise;
* the cells between and after the exercises still run (exercises are independent of the lesson).

In strict mode (the teacher notebooks) the same checks raise ``ExerciseNotSolved``: the per-exercise
pass below runs the teacher notebook with one solution removed and proves it.

One execution proves all exercises of a notebook because exercises must be independent
(CONTRIBUTING.md). The stronger pass, one execution per exercise with only that solution removed,
runs only with ``HOOKVIZ_PER_EXERCISE=1`` (it costs one kernel run per exercise).

``HOOKVIZ_NOTEBOOK_DIR`` points the tests at another folder of notebooks (used to develop them).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from notebook_tools import NB_DIR, NOTEBOOKS, REPO, make_student, nb_id, tags

CELL_TIMEOUT = 120  # seconds per cell; a whole notebook takes 10-30 s
NOTEBOOK_TIMEOUT = 600
NOT_SOLVED = "ExerciseNotSolved"
NOT_SOLVED_MARK = "✗"
VERDICT_IN_HEADING = re.compile(
    r"^#{1,6}\s.*—\s*\*\*(TRUE|FALSE|PARTLY|OUTDATED|正确|错误|部分正确|已过时)\*\*", re.MULTILINE
)
#: A verdict stated in words, English or Chinese (the Chinese edition writes **正确**（TRUE）).
VERDICT_WORD = re.compile(
    r"\b(?:TRUE|FALSE|PARTLY|OUTDATED)\b|\*\*(?:正确|错误|部分正确|已过时)\*\*|判定为(?:正确|错误|部分正确|已过时)"
)
#: A reference to one article claim: an anchor link, "Claim B2", "说法 B2", or a table row's first cell.
CLAIM_REFERENCE = re.compile(
    r"claim-(?P<a>[AB]\d+)\b|[Cc]laim (?P<b>[AB]\d+)\b|说法 ?(?P<c>[AB]\d+)|^\|\s*(?P<d>[AB]\d+)\s*\|"
)


def errors(cell) -> list[dict]:
    return [out for out in cell.get("outputs", []) if out.get("output_type") == "error"]


def stdout_text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def is_soft_checks_cell(cell) -> bool:
    return cell.get("metadata", {}).get("hookviz", {}).get("generated") == "soft-checks"


def is_generated_cell(cell) -> bool:
    """The soft-checks cell or the markdown note above it (both added by make_student)."""
    return cell.get("metadata", {}).get("hookviz", {}).get("generated") in ("soft-checks", "soft-checks-note")


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


def _tiny_teacher_notebook(answer: str = "answer = 2") -> nbformat.NotebookNode:
    code, md = nbformat.v4.new_code_cell, nbformat.v4.new_markdown_cell
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    out = nbformat.v4.new_output("stream", name="stdout", text="✓ done\n")
    cells = [
        md("# Title"),
        code("# the Colab guard", execution_count=1),
        code("x = 1", execution_count=2),
        md('<a id="claim-Z1"></a>\n### Claim Z1: "x is one" — **TRUE**\nThe cell below prints it.\n'),
        code("answer = None", execution_count=3, metadata={"tags": ["exercise"]}),
        code(answer, execution_count=4, metadata={"tags": ["solution"]}),
        md("Check it:"),
        code("check(answer)", execution_count=5, outputs=[out], metadata={"tags": ["check"]}),
        code("print(x)", execution_count=6, outputs=[nbformat.v4.new_output("stream", name="stdout", text="1\n")]),
    ]
    nb.cells = cells
    return nb


def _teacher_folder(tmp_path: Path, answer: str = "answer = 2") -> Path:
    src = tmp_path / "notebooks"
    src.mkdir(exist_ok=True)
    nbformat.write(_tiny_teacher_notebook(answer), src / "01_tiny.ipynb")
    return src


def test_student_copy_drops_solutions_and_clears_every_output(tmp_path):
    src, dst = _teacher_folder(tmp_path), tmp_path / "student"
    (src / "picture.png").write_bytes(b"png")
    assert make_student.main([str(src), str(dst)]) == 0
    student = nbformat.read(dst / "01_tiny.ipynb", as_version=4)
    nbformat.validate(student)
    assert [tags(c) for c in student.cells] == [[], [], [], [], [], [], ["exercise"], [], ["check"], []]
    assert is_soft_checks_cell(student.cells[3]), "soft checks are turned on right after the Colab guard"
    assert "hookviz.exercises.soft_checks()" in student.cells[3].source
    assert "hookviz.exercises.short_tracebacks()" in student.cells[3].source
    note = student.cells[2]
    assert note.cell_type == "markdown" and note.source == make_student.SOFT_CHECKS_NOTE["en"]
    assert "Shift+Enter" in note.source and "strict_checks()" in note.source, "the instructions are prose"
    assert not any(line.lstrip().startswith("#") for line in student.cells[3].source.splitlines()), (
        "no instruction hides in a code comment"
    )
    code_cells = [c for c in student.cells if c.cell_type == "code"]
    assert all(c.outputs == [] and c.execution_count is None for c in code_cells), "predict mode: no outputs"
    assert (dst / "picture.png").read_bytes() == b"png"
    teacher = nbformat.read(src / "01_tiny.ipynb", as_version=4)
    assert len(teacher.cells) == 9, "the teacher notebook must not change"


def test_keep_outputs_keeps_lesson_outputs_but_never_a_check_result(tmp_path):
    src, dst = _teacher_folder(tmp_path), tmp_path / "student"
    assert make_student.main([str(src), str(dst), "--keep-outputs"]) == 0
    student = nbformat.read(dst / "01_tiny.ipynb", as_version=4)
    check, lesson = student.cells[8], student.cells[9]
    assert check.outputs == [] and check.execution_count is None
    assert lesson.outputs[0]["text"] == "1\n" and lesson.execution_count == 6


def test_claim_verdicts_are_hidden_until_opened():
    source = (
        '<a id="claim-B2"></a>\n### Claim B2: "rebinding does nothing" — **TRUE**\nBecause Python.\n\n'
        '<a id="claim-B1"></a>\n### Claim B1: "in place doubles" — **PARTLY** (API **OUTDATED**)\nBy luck.\n'
        "\n## 4. Next section\nPlain text that says TRUE.\n"
    )
    hidden = make_student.hide_verdicts(source)
    assert not VERDICT_IN_HEADING.search(hidden), hidden
    assert '### Claim B2: "rebinding does nothing" — **?**' in hidden
    visible = re.sub(r"<details>.*?</details>", "", hidden, flags=re.DOTALL)
    assert "Because Python" not in visible and "By luck" not in visible, "the explanation gives the verdict away"
    assert '<a id="claim-B2"></a>' in visible and '<a id="claim-B1"></a>' in visible, "anchors stay linkable"
    assert "## 4. Next section\nPlain text that says TRUE." in visible, "only claim headings change"
    details = re.findall(r"<details>.*?</details>", hidden, flags=re.DOTALL)
    assert len(details) == 2 and "**TRUE**\n\nBecause Python." in details[0]
    assert "**PARTLY** (API **OUTDATED**)\n\nBy luck." in details[1]
    assert make_student.hide_verdicts("no claims here") == "no claims here"


def test_presenter_copy_keeps_solutions_and_strict_checks(tmp_path):
    src, dst = _teacher_folder(tmp_path), tmp_path / "presenter"
    assert make_student.main([str(src), str(dst), "--presenter"]) == 0
    presenter = nbformat.read(dst / "01_tiny.ipynb", as_version=4)
    assert [c.source for c in presenter.cells if "solution" in tags(c)] == ["answer = 2"]
    assert not any(is_soft_checks_cell(c) for c in presenter.cells)
    assert all(c.outputs == [] for c in presenter.cells if c.cell_type == "code")
    assert "— **?**" in presenter.cells[3].source and "**TRUE**" in presenter.cells[3].source


def test_regenerating_never_overwrites_an_edited_copy(tmp_path, capsys):
    """`make student` twice with a learner's edit in between: the edit survives, untouched copies update."""
    src, dst = _teacher_folder(tmp_path), tmp_path / "student"
    nbformat.write(_tiny_teacher_notebook(), src / "02_other.ipynb")
    (src / "notes.md").write_text("course notes\n")
    assert make_student.main([str(src), str(dst)]) == 0
    mine = nbformat.read(dst / "01_tiny.ipynb", as_version=4)
    mine.cells[5].source = "answer = 2  # my work"
    nbformat.write(mine, dst / "01_tiny.ipynb")
    (dst / "notes.md").write_text("my own notes\n")
    edited = (dst / "01_tiny.ipynb").read_bytes()
    capsys.readouterr()

    # the course changes, then the copies are regenerated
    teacher = _tiny_teacher_notebook()
    teacher.cells[0].source = "# Title, revised"
    nbformat.write(teacher, src / "01_tiny.ipynb")
    nbformat.write(teacher, src / "02_other.ipynb")
    (src / "notes.md").write_text("course notes, revised\n")
    assert make_student.main([str(src), str(dst)]) == 0
    out = capsys.readouterr().out

    assert (dst / "01_tiny.ipynb").read_bytes() == edited, "the learner's edited notebook was overwritten"
    assert (dst / "notes.md").read_text() == "my own notes\n"
    assert nbformat.read(dst / "02_other.ipynb", as_version=4).cells[0].source == "# Title, revised"
    assert "kept" in out and "01_tiny.ipynb" in out
    # the reset advice works without make and without .venv (Binder, JupyterHub, conda)
    assert f"python scripts/make_student.py {src.as_posix()} {dst.as_posix()} --reset 01" in out
    assert "make reset" not in out
    assert "course's version has changed" in out
    assert "1 notebook written, 2 files you changed kept as they are" in out

    # a third run changes nothing, says so, and still keeps the edit
    assert make_student.main([str(src), str(dst)]) == 0
    out = capsys.readouterr().out
    assert "1 notebook already up to date, 2 files you changed kept as they are" in out
    assert "0 notebooks" not in out
    assert (dst / "01_tiny.ipynb").read_bytes() == edited


def test_an_existing_copy_without_a_manifest_is_kept(tmp_path):
    """Copies made before the manifest existed (or by hand) count as the learner's work."""
    src, dst = _teacher_folder(tmp_path), tmp_path / "student"
    dst.mkdir()
    (dst / "01_tiny.ipynb").write_text("{}")
    assert make_student.main([str(src), str(dst)]) == 0
    assert (dst / "01_tiny.ipynb").read_text() == "{}"


def test_reset_backs_up_the_learners_version_and_writes_a_fresh_copy(tmp_path, capsys):
    src, dst = _teacher_folder(tmp_path), tmp_path / "student"
    assert make_student.main([str(src), str(dst)]) == 0
    fresh = (dst / "01_tiny.ipynb").read_bytes()
    mine = nbformat.read(dst / "01_tiny.ipynb", as_version=4)
    mine.cells[5].source = "answer = 3  # my attempt"
    nbformat.write(mine, dst / "01_tiny.ipynb")
    edited = (dst / "01_tiny.ipynb").read_bytes()

    assert make_student.main([str(src), str(dst), "--reset", "01"]) == 0
    assert (dst / "01_tiny.ipynb").read_bytes() == fresh
    backups = list((dst / "backups").glob("01_tiny.*.ipynb"))
    assert [b.read_bytes() for b in backups] == [edited]
    assert str(backups[0]) in capsys.readouterr().out
    # resetting an untouched copy makes no backup; an unknown name is refused
    assert make_student.main([str(src), str(dst), "--reset", "01_tiny.ipynb"]) == 0
    assert len(list((dst / "backups").iterdir())) == 1
    assert make_student.main([str(src), str(dst), "--reset", "07"]) == 1
    # after a reset, the copy is the script's again: the next regeneration may update it
    assert json.loads((dst / make_student.MANIFEST).read_text())["01_tiny.ipynb"]


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


def test_pin_ref_pins_the_colab_install_to_a_tag(tmp_path):
    guard = (
        'subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", '
        '"git+https://github.com/hookviz/hookviz"], check=True)'
    )
    assert make_student.pin_install(guard, "workshop-2026-05").count('hookviz/hookviz@workshop-2026-05"') == 1
    pinned = guard.replace("hookviz/hookviz", "hookviz/hookviz@v0.1.0")
    assert 'hookviz@workshop-2026-05"' in make_student.pin_install(pinned, "workshop-2026-05")
    nb = _tiny_teacher_notebook()
    nb.cells[1].source = guard
    student = make_student.make_student_notebook(nb, pin_ref="v0.1.0")
    assert "git+https://github.com/hookviz/hookviz@v0.1.0" in student.cells[1].source
    assert nb.cells[1].source == guard, "the teacher notebook is not changed"


def test_chinese_claim_verdicts_are_hidden_in_chinese():
    source = (
        '<a id="claim-B2"></a>\n### 说法 B2：“重新绑定不起作用”——**正确**（TRUE）\n因为 Python。\n\n'
        '<a id="claim-B9"></a>\n### 说法 B9：“三项”——**部分正确**（PARTLY）（API 已过时，OUTDATED）\n见下。\n'
    )
    hidden = make_student.hide_verdicts(source)
    visible = re.sub(r"<details>.*?</details>", "", hidden, flags=re.DOTALL)
    assert not VERDICT_WORD.search(visible), visible
    assert "### 说法 B2：“重新绑定不起作用”——**？**（先预测，再运行下面的单元格）" in visible
    assert "Verdict" not in hidden and "predict" not in hidden, "the hidden text of a Chinese copy is Chinese"
    assert hidden.count("<details><summary>判定（运行下面的单元格之后再展开）</summary>") == 2
    assert "**正确**（TRUE）\n\n因为 Python。" in hidden


def test_the_verdict_table_is_blanked_in_every_language():
    english = (
        "# Verdicts\n\n- **TRUE**: holds as stated.\n\n"
        "| # | claim | verdict | what the proving cell shows | where |\n|---|---|---|---|---|\n"
        "| A1 | `a | b` works | **FALSE** | it raises | [04](04.ipynb#claim-A1) |\n\nAfter the table.\n"
    )
    hidden = make_student.hide_verdict_table(english)
    assert "| A1 | `a | b` works | **?** | run the linked cell | [04](04.ipynb#claim-A1) |" in hidden
    assert "Student copy: the verdicts are hidden" in hidden
    assert "- **TRUE**: holds as stated." in hidden and "After the table." in hidden, "only the table changes"
    chinese = (
        "# 判定\n\n| # | 文章原话 | 判定 | 证明单元显示的内容 | 位置 |\n|---|---|---|---|---|\n"
        "| B1 | “原话” | **部分正确**（PARTLY） | 说明 | [01](01.ipynb#claim-B1) |\n"
    )
    hidden = make_student.hide_verdict_table(chinese)
    assert "| B1 | “原话” | **？** | 运行所链接的单元格 | [01](01.ipynb#claim-B1) |" in hidden
    assert "学生副本：判定已隐藏" in hidden
    assert (
        make_student.hide_verdict_table("| a | b |\n|---|---|\n| 1 | TRUE |\n")
        == "| a | b |\n|---|---|\n| 1 | TRUE |\n"
    )


def test_widget_state_and_views_are_dropped(tmp_path):
    """The teacher run's saved widget state (hundreds of KB) never reaches a student or presenter copy."""
    nb = _tiny_teacher_notebook()
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {"x": "y" * 1000}}}
    view = nbformat.v4.new_output(
        "display_data",
        data={make_student.WIDGET_VIEW: {"model_id": "abc"}, "image/png": "iVBORw0KGgo=", "text/plain": "Explorer"},
    )
    bare_view = nbformat.v4.new_output("display_data", data={make_student.WIDGET_VIEW: {"model_id": "def"}})
    nb.cells[8].outputs = [view, bare_view]
    for student in (
        make_student.make_student_notebook(nb, predict=False),
        make_student.make_student_notebook(nb),
        make_student.make_presenter_notebook(nb),
    ):
        assert "widgets" not in student.metadata
        text = nbformat.writes(student)
        assert make_student.WIDGET_VIEW not in text and "model_id" not in text
    kept = make_student.make_student_notebook(nb, predict=False).cells[-1].outputs
    assert [sorted(o["data"]) for o in kept] == [["image/png", "text/plain"]], "the static picture stays"
    assert "widgets" in nb.metadata, "the teacher notebook is not changed"


def test_learners_errors_show_where_they_failed():
    """Student copies show short tracebacks (their top cell) instead of the teacher notebooks' one-line errors,
    and print no unexplained ``Exception reporting mode`` line."""
    assert make_student.learner_code("import torch\n%xmode Minimal") == "import torch"
    assert make_student.learner_code("%xmode Minimal\nx = 1") == "x = 1"
    assert make_student.learner_code("print('%xmode Minimal is set')") == "print('%xmode Minimal is set')"
    nb = _tiny_teacher_notebook()
    nb.cells[2].source = "x = 1\n%xmode Minimal"
    nb.cells[0].source = "# Title\n\n`%xmode Minimal` keeps errors to one line."
    student = make_student.make_student_notebook(nb)
    assert student.cells[4].source == "x = 1"
    assert "hookviz.exercises.short_tracebacks()" in student.cells[3].source
    assert student.cells[0].source.endswith(make_student.XMODE_NOTE["en"]), "the prose says what the copy does"
    zh = make_student.learner_markdown("导入模块。`%xmode Minimal` 让失败的单元只显示错误。")
    assert zh.endswith(make_student.XMODE_NOTE["zh"])
    assert make_student.make_presenter_notebook(nb).cells[2].source == "x = 1\n%xmode Minimal", "presenter as taught"
    for path in sorted((REPO / "notebooks").glob("**/[0-9][0-9]_*.ipynb")):
        copy_ = make_student.make_student_notebook(nbformat.read(path, as_version=4))
        assert not any("%xmode" in c.source for c in copy_.cells if c.cell_type == "code"), path.name


# ---------------------------------------------------------------- the make targets (dry runs, no server started)


def _make_dry_run(target: str) -> str:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    # -o: treat the venv stamp as up to date, so the dry run shows only the target's own commands
    proc = subprocess.run(
        ["make", "-n", "-o", ".venv/.hookviz-installed", target], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_make_lab_opens_the_student_copies_and_teacher_lab_the_whole_course():
    """A learner's `make lab` opens their own copies (no solutions a click away); teachers have teacher-lab."""
    lines = _make_dry_run("lab").splitlines()
    assert any("scripts/make_student.py notebooks student" in line for line in lines), "copies are made first"
    command = next(line for line in lines if "jupyter lab" in line)
    assert "--ServerApp.root_dir=student" in command
    # the URL JupyterLab prints opens 00 (tests/browser/test_first_hour_browser.py opens it in Chromium)
    assert "--LabApp.default_url=/lab/tree/00_start_here.ipynb" in command
    command = next(line for line in _make_dry_run("teacher-lab").splitlines() if "jupyter lab" in line)
    root = re.search(r"--ServerApp\.root_dir=(\S+)", command)
    root_dir = (REPO / (root.group(1) if root else ".")).resolve()
    assert (REPO / "student").resolve().is_relative_to(root_dir), command
    assert (REPO / "notebooks").resolve().is_relative_to(root_dir), command
    assert "--LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb" in command


def test_the_student_copy_of_00_says_it_is_the_learners_own_copy():
    """The teacher's 00 points to "your own copy, student/00_start_here.ipynb"; the student copy *is* that copy."""
    for path, language in (("notebooks/00_start_here.ipynb", "en"), ("notebooks/zh/00_start_here.ipynb", "zh")):
        teacher = nbformat.read(REPO / path, as_version=4)
        assert "`student/00_start_here.ipynb`" in teacher.cells[0].source, "the teacher copy points to it"
        box = make_student.make_student_notebook(teacher).cells[0].source
        assert "student/" not in box and make_student.THIS_IS_YOUR_COPY[language] in box, box


def test_the_student_folder_opens_on_a_readme_that_says_where_to_start(tmp_path):
    src, dst = _teacher_folder(tmp_path), tmp_path / "student"
    assert make_student.main([str(src), str(dst)]) == 0
    readme = (dst / "README.md").read_text()
    assert "00_start_here.ipynb" in readme and "Shift+Enter" in readme and "Run All Cells" in readme
    (dst / "README.md").write_text(readme + "\nmy notes\n")  # the learner's notes are kept, like a notebook
    assert make_student.main([str(src), str(dst)]) == 0
    assert (dst / "README.md").read_text().endswith("my notes\n")
    assert make_student.main([str(src), str(tmp_path / "presenter"), "--presenter"]) == 0
    assert not (tmp_path / "presenter" / "README.md").exists()


def test_student_copy_is_not_modified_by_opening_it():
    """JupyterLab writes the running kernel's display name into an opened notebook: the copy names it already."""
    nb = _tiny_teacher_notebook()
    assert nb.metadata["kernelspec"]["display_name"] == "Python 3"
    student = make_student.make_student_notebook(nb)
    assert student.metadata["kernelspec"] == make_student.STUDENT_KERNELSPEC
    assert student.metadata["kernelspec"]["display_name"] == "Python 3 (ipykernel)"


def test_long_comment_lines_are_wrapped_in_student_copies():
    long = "    # " + " ".join(["word"] * 40)
    wrapped = make_student.wrap_comments(f"x = 1\n{long}\ny = 2  # {'z' * 100}")
    lines = wrapped.splitlines()
    assert lines[0] == "x = 1" and lines[-1].startswith("y = 2  # "), "code lines are never changed"
    middle = lines[1:-1]
    assert len(middle) > 1 and all(len(line) <= make_student.COMMENT_WIDTH for line in middle)
    assert all(line.startswith("    # ") for line in middle)
    assert " ".join(line[6:] for line in middle) == long[6:], "no word lost"


def test_make_student_lab_opens_the_student_copies_without_losing_work():
    lines = _make_dry_run("student-lab").splitlines()
    assert any("scripts/make_student.py notebooks student" in line for line in lines), "copies are made first"
    command = next(line for line in lines if "jupyter lab" in line)
    assert "--ServerApp.root_dir=student" in command
    if os.geteuid() == 0:
        assert "--allow-root" in command


def test_make_reset_resets_one_notebook():
    lines = _make_dry_run("reset").splitlines()
    assert any("scripts/make_student.py notebooks student --reset" in line for line in lines), lines


def test_make_clean_keeps_the_learners_work():
    for line in _make_dry_run("clean").splitlines():
        assert not re.search(r"\brm\b.*\bstudent\b", line), f"make clean deletes student copies: {line}"


# ---------------------------------------------------------------- soft checks in a real kernel


def test_soft_checks_print_a_cross_and_let_run_all_go_on():
    """A student copy runs top to bottom: an unsolved check prints ✗ and its hint; other errors still stop."""
    code = nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        code("# the Colab guard"),
        code("def my_hook(grad):\n    raise NotImplementedError", metadata={"tags": ["exercise"]}),
        code("pass", metadata={"tags": ["solution"]}),
        code(
            "from hookviz.exercises.nb01 import check_clip_hook\n\ncheck_clip_hook(my_hook)",
            metadata={"tags": ["check"]},
        ),
        code("print('after the check')"),
        code("def check_other():\n    raise ValueError('a real bug')\n\ncheck_other()"),
        code("import hookviz.exercises\nprint(hookviz.exercises.soft_checks_enabled())"),
    ]
    student = make_student.make_student_notebook(nb)
    executed = run_notebook(student, REPO)
    by_source = {c.source.splitlines()[-1]: c for c in executed.cells if c.cell_type == "code"}
    check = by_source["check_clip_hook(my_hook)"]
    assert not errors(check), "a soft check must not stop Run All"
    assert stdout_text(check).startswith(f"{NOT_SOLVED_MARK} not solved yet"), stdout_text(check)
    assert stdout_text(by_source["print('after the check')"]) == "after the check\n"
    assert errors(by_source["check_other()"])[0]["ename"] == "ValueError", "only ExerciseNotSolved is softened"
    traceback = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in errors(by_source["check_other()"])[0]["traceback"]]
    assert traceback[0].startswith("Traceback (your code"), traceback
    assert any("in check_other" in line for line in traceback) and traceback[-1] == "ValueError: a real bug"
    assert len(traceback) <= 8, traceback
    assert stdout_text(by_source["print(hookviz.exercises.soft_checks_enabled())"]) == "True\n"


# ---------------------------------------------------------------- every course notebook (no kernel)


@pytest.fixture(scope="session")
def student_dir(tmp_path_factory) -> Path:
    """All student copies, generated once per session with the same code as ``make student``."""
    dst = tmp_path_factory.mktemp("student")
    if NB_DIR.is_dir():
        make_student.copy_extra_files(NB_DIR, dst)  # files the notebooks open by a relative path
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
    soft = [i for i, c in enumerate(student.cells) if is_soft_checks_cell(c)]
    if make_student.exercises(teacher):
        first_code = next(i for i, c in enumerate(student.cells) if c.cell_type == "code")
        assert soft == [first_code + 2], "one soft-checks cell, after the Colab guard and the note that explains it"
        note = student.cells[first_code + 1]
        assert is_generated_cell(note) and note.cell_type == "markdown" and "Shift+Enter" in note.source
    lesson = [c for c in student.cells if not is_generated_cell(c)]
    kept = [c for c in teacher.cells if "solution" not in tags(c)]
    assert [c.source for c in lesson if c.cell_type == "code"] == [
        make_student.wrap_comments(make_student.learner_code(c.source)) for c in kept if c.cell_type == "code"
    ], "code changes only where %xmode Minimal becomes %xmode Context"
    assert [
        make_student.hide_verdicts(make_student.learner_markdown(c.source)) for c in kept if c.cell_type == "markdown"
    ] == [c.source for c in lesson if c.cell_type == "markdown"], (
        "markdown changes only where a claim's verdict is hidden or the prose explains %xmode Minimal"
    )
    for cell in student.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"predict mode: {describe(cell)}"
        else:
            assert not VERDICT_IN_HEADING.search(cell.source), f"a verdict shows in a heading: {describe(cell)}"
    teacher_claims = re.findall(r"<a id=\"(claim-[^\"]+)\"></a>", "".join(c.source for c in teacher.cells))
    student_claims = re.findall(r"<a id=\"(claim-[^\"]+)\"></a>", "".join(c.source for c in student.cells))
    assert student_claims == teacher_claims, "every claim anchor stays (recaps link to them)"


@pytest.fixture(scope="module")
def course_copies(tmp_path_factory) -> Path:
    """``make student`` on the course folder (every edition, article_verdicts.md included), as learners get it."""
    if not NB_DIR.is_dir():
        pytest.skip("no notebooks")
    dst = tmp_path_factory.mktemp("course-student")
    make_student.write_student_copies(NB_DIR, dst)
    return dst


def _visible_markdown(path: Path) -> list[str]:
    """The Markdown a learner sees without opening a verdict box, cell by cell (one block for a .md file)."""
    if path.suffix == ".md":
        texts = [path.read_text(encoding="utf-8")]
    else:
        texts = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"]
    return [re.sub(r"<details>.*?</details>", "", text, flags=re.DOTALL) for text in texts]


def _claim_cells(copies: Path) -> dict[tuple[str, str], tuple[str, int]]:
    """(edition folder, claim id) -> (notebook name, index of the markdown block holding its anchor)."""
    where = {}
    for path in sorted(copies.rglob("[0-9][0-9]_*.ipynb")):
        for index, text in enumerate(_visible_markdown(path)):
            for claim in re.findall(r'<a id="claim-([AB]\d+)"></a>', text):
                where[(path.parent.name, claim)] = (path.name, index)
    return where


def test_no_verdict_survives_in_any_student_copy(course_copies):
    """No claim's verdict (English or Chinese word) shows before the learner reaches the cells that prove it.

    A verdict word next to a claim reference leaks when it comes before that claim's proof: in the same
    notebook above the claim's heading, in an earlier notebook, or anywhere in article_verdicts.md (a
    summary). Claim headings never show one; the verdict rules themselves ("**TRUE**: holds as stated")
    name no claim and stay.
    """
    proofs = _claim_cells(course_copies)
    assert proofs, "no claim anchors found in the student copies"
    leaks = []
    for path in sorted(course_copies.rglob("*.ipynb")) + sorted(course_copies.rglob("article_verdicts.md")):
        if path.parent.name == make_student.BACKUPS:
            continue
        for index, text in enumerate(_visible_markdown(path)):
            heading = VERDICT_IN_HEADING.search(text)
            if heading:
                leaks.append(f"{path.relative_to(course_copies)}: heading {heading.group(0)!r}")
            for line in text.splitlines():
                for ref in CLAIM_REFERENCE.finditer(line):
                    claim = next(group for group in ref.groups() if group)
                    after = line[ref.end() : ref.end() + 120]
                    if not VERDICT_WORD.search(after):
                        continue
                    proof = proofs.get((path.parent.name, claim))
                    before_proof = path.suffix == ".md" or (proof is not None and (path.name, index) < proof)
                    if before_proof:
                        shown = line[ref.start() : ref.end() + 120]
                        leaks.append(f"{path.relative_to(course_copies)}: {claim}: {shown!r}")
    assert not leaks, "verdicts visible in student copies:\n" + "\n".join(leaks)


def _visible_verdicts(path: Path) -> list[str]:
    """The claims whose verdict a learner can read in ``path`` without opening a verdict box, in order."""
    shown = []
    for text in _visible_markdown(path):
        for line in text.splitlines():
            for ref in CLAIM_REFERENCE.finditer(line):
                if VERDICT_WORD.search(line[ref.end() : ref.end() + 120]):
                    shown.append(next(group for group in ref.groups() if group))
    return shown


def test_chinese_copies_show_the_verdicts_the_english_copies_show_and_no_more(course_copies):
    """Notebook by notebook, a Chinese student copy reveals no claim's verdict that its English twin hides.

    (Notebook 10's answers name the verdicts of A7 and A10, proven earlier in 09, in both editions: the
    English as "verdict TRUE", the Chinese as 判定为**正确**（TRUE）.)
    """
    zh = sorted((course_copies / "zh").glob("[0-9][0-9]_*.ipynb"))
    if not zh:
        pytest.skip("no Chinese edition")
    extra = {}
    for path in zh:
        english, chinese = _visible_verdicts(course_copies / path.name), _visible_verdicts(path)
        if sorted(set(chinese) - set(english)):
            extra[path.name] = sorted(set(chinese) - set(english))
    assert not extra, f"verdicts the English student copies hide show in the Chinese ones: {extra}"


def test_student_copies_are_small_and_carry_no_widget_state(course_copies):
    for path in sorted(course_copies.rglob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        assert "widgets" not in nb.metadata, f"{path.name}: saved widget state"
        assert path.stat().st_size < 250_000, f"{path.name}: {path.stat().st_size} bytes"
        sources = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        assert "%xmode Minimal" not in sources, f"{path.name}: learners' errors must show where they failed"


def test_chinese_student_copies_hide_verdicts_in_chinese(course_copies):
    zh = sorted((course_copies / "zh").glob("[0-9][0-9]_*.ipynb"))
    if not zh:
        pytest.skip("no Chinese edition")
    for path in zh:
        soft = [c for c in nbformat.read(path, as_version=4).cells if is_soft_checks_cell(c)]
        assert all(c.source == make_student.SOFT_CHECKS_SOURCE_ZH for c in soft), f"{path.name}: soft checks in English"
        cells = nbformat.read(path, as_version=4).cells
        notes = [c for c in cells if is_generated_cell(c) and c.cell_type == "markdown"]
        assert all(c.source == make_student.SOFT_CHECKS_NOTE["zh"] for c in notes), f"{path.name}: note in English"
    english = sorted(course_copies.glob("[0-9][0-9]_*.ipynb"))
    for path in english:
        soft = [c for c in nbformat.read(path, as_version=4).cells if is_soft_checks_cell(c)]
        assert all(c.source == make_student.SOFT_CHECKS_SOURCE for c in soft), path.name
    text = "\n".join("\n".join(_visible_markdown(path)) for path in zh)
    assert "——**？**（先预测，再运行下面的单元格）" in text
    assert "predict, then run" not in text and "Verdict (open it" not in text
    assert "学生副本：判定已隐藏" in (course_copies / "zh" / "article_verdicts.md").read_text(encoding="utf-8")


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
    """Soft mode: each check prints ``✗ <hint>`` (ExerciseNotSolved caught) and lets the run go on."""
    name, nb = executed
    checks = [(i, c) for i, c in enumerate(nb.cells) if "check" in tags(c)]
    for index, cell in checks:
        errs = errors(cell)
        assert not errs, (
            f"{name} cell {index} ({describe(cell)!r}) stopped the run with {errs[0]['ename']}: {errs[0]['evalue']} "
            f"(unsolved checks must fail with ExerciseNotSolved, which soft mode prints as {NOT_SOLVED_MARK})"
        )
        text = stdout_text(cell)
        assert text.startswith(f"{NOT_SOLVED_MARK} "), (
            f"{name} cell {index} ({describe(cell)!r}): the check passed without its solution: {text!r}"
        )
        assert "✓" not in text
    teacher = nbformat.read(NB_DIR / name, as_version=4)
    solutions = [teacher.cells[ex.solution].source for ex in make_student.exercises(teacher)]
    for (index, cell), solution in zip(checks, solutions, strict=True):
        hint = stdout_text(cell)
        for line in solution.splitlines():
            line = line.strip()
            if len(line) >= 20 and not line.startswith(("#", "def ", "class ", "import ", "from ")):
                assert line not in hint, f"{name} cell {index}: the hint gives the solution away ({line!r})"


@pytest.mark.slow
@pytest.mark.parametrize("teacher_path", NOTEBOOKS, ids=nb_id)
def test_run_all_replays_past_every_skipped_exercise(executed):
    """No cell of the student copy stops "Run All" (JupyterLab keeps going only after ``raises-exception`` cells)."""
    name, nb = executed
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and "raises-exception" not in tags(cell):
            errs = errors(cell)
            assert not errs, f"{name} cell {index} ({describe(cell)!r}) stops Run All: {errs[0]['ename']}"
            assert cell.execution_count is not None, f"{name} cell {index} never ran"


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


# ---------------------------------------------------------------- the facilitator kit cites what the notebooks prove

KIT = sorted((REPO / "workshop").glob("*.md")) + [REPO / "SETUP.md", REPO / "TEACHING.md"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    if path.suffix == ".ipynb":
        nb = nbformat.read(path, as_version=4)
        text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    else:
        text = path.read_text(encoding="utf-8")
    headings = {_slug(h) for h in re.findall(r"^#{1,6}\s+(.*)$", text, flags=re.MULTILINE)}
    return set(re.findall(r'<a id="([^"]+)"></a>', text)) | headings


@pytest.mark.parametrize("doc", KIT, ids=lambda p: p.relative_to(REPO).as_posix())
def test_kit_links_point_at_existing_anchors(doc):
    """Every relative link of the kit (cheat sheet, agenda, exit ticket...) reaches a file and an anchor that exist."""
    if not doc.exists():
        pytest.fail(f"{doc.name} is missing")
    for target in LINK.findall(doc.read_text(encoding="utf-8")):
        if target.startswith(("http://", "https://", "mailto:")) or target.startswith("<"):
            continue
        file_part, _, anchor = target.partition("#")
        path = (doc.parent / file_part).resolve() if file_part else doc
        assert path.exists(), f"{doc.name}: link to a missing file {target}"
        if anchor:
            assert anchor in _anchors(path), f"{doc.name}: no anchor #{anchor} in {path.name}"


def test_make_lab_installs_a_workspace_under_the_name_jupyterlab_reads():
    """binder/workspace.json (a file browser wide enough for whole names) is the *default* workspace only under
    the file name JupyterLab derives from "default"; make lab keeps it in the venv, never in ~/.jupyter."""
    from jupyterlab_server.workspaces_handler import slugify

    dry_run = _make_dry_run("lab")
    assert f"{slugify('default')}.jupyterlab-workspace" in dry_run
    assert "--LabApp.workspaces_dir=.venv/share/jupyter/lab/workspaces" in dry_run
    workspace = json.loads((REPO / "binder" / "workspace.json").read_text())
    assert workspace["metadata"]["id"] == "default"
    assert workspace["data"]["layout-restorer:data"]["relativeSizes"][0] >= 0.25
    assert json.loads((REPO / "binder" / "overrides.json").read_text())[
        "@jupyterlab/filebrowser-extension:browser"
    ] == {"showLastModifiedColumn": False}
