"""Write student (or presenter) copies of the course notebooks, without ever overwriting a learner's work.

Usage (``make student`` runs the first form as ``scripts/make_student.py notebooks student``; the
``--reset`` form is the one to give learners: it works wherever Python and the course are, with or
without ``make`` and ``.venv`` — Binder, JupyterHub, conda, a laptop)::

    python scripts/make_student.py SRC DST                  # student copies of every notebook in SRC
    python scripts/make_student.py SRC DST --reset 00 03    # fresh copies of 00 and 03 (yours backed up)
    python scripts/make_student.py SRC DST --presenter      # presenter copies (solutions kept)
    python scripts/make_student.py SRC DST --keep-outputs   # keep the lesson outputs (reading, not predicting)
    python scripts/make_student.py SRC DST --pin-ref TAG    # the Colab guard installs hookviz@TAG (a release)

SRC is a folder of teacher notebooks (or one notebook); DST is the folder the copies go to (created if
needed; ``student/`` is git-ignored). The teacher notebooks in ``notebooks/`` are the single source of
truth. A **student copy**:

* drops every cell tagged ``solution``;
* clears the outputs and execution counts of every code cell (predict mode: the learner commits to an
  answer before the cell shows it). ``--keep-outputs`` keeps them, except under ``exercise`` and
  ``check`` cells, which are always cleared (no teacher "✓" under a check nobody has solved);
* hides the verdict of every claim heading (``— **TRUE**`` becomes ``— **?**``; in the Chinese edition
  ``——**正确**（TRUE）`` becomes ``——**？**``, with the hint in Chinese) and folds the verdict and its
  explanation into a ``<details>`` block to open after running the cells below;
* drops the widget state the teacher run saved (``metadata.widgets``) and widget views from any output
  kept: a learner's kernel draws its own widgets, and the saved state only made the file large;
* leaves out ``%xmode Minimal`` (the teacher notebooks keep stored errors to one line): a student copy
  shows short tracebacks instead (the lines of the learner's cells, library frames folded), turned on by
  the cell below, and would only print an unexplained ``Exception reporting mode`` line;
* gets one extra code cell right after the Colab guard that turns on soft checks
  (:func:`hookviz.exercises.soft_checks`): an unsolved check prints ``✗ <hint>`` instead of stopping
  "Run All", so a learner can replay the notebook past exercises they skipped;
* is validated with :func:`nbformat.validate` before it is written.

A **presenter copy** (``--presenter``) keeps the solutions and strict checks but clears every output and
hides the verdicts, for a teacher who runs the notebook live on a projector.

**Nothing a learner did is overwritten.** DST keeps a manifest (``.hookviz-copies.json``) with the
fingerprint of every copy the script wrote. A copy whose file still matches its fingerprint (nobody
edited, ran or saved it) is replaced by the new one; a copy that differs is kept as it is, and the
script says so and names the reset command. ``--reset`` moves the learner's file to ``DST/backups/``
(time-stamped) before writing the fresh copy, so even a reset loses nothing.

Other files in SRC (pictures a notebook shows, small data files) are copied too, so relative paths keep
working; they are copied only when missing or unchanged since the last run, like the notebooks. In
predict mode the verdict table of ``article_verdicts.md`` is copied with its verdicts and explanations
blanked (the learner opens the linked cell, predicts, runs). The
structure rules (each exercise is an ``exercise`` / ``solution`` / ``check`` triple, in that order) are
checked first: a malformed notebook stops the script with a message.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

__all__ = [
    "EXERCISE_TAGS",
    "MANIFEST",
    "SOFT_CHECKS_SOURCE",
    "SOFT_CHECKS_SOURCE_ZH",
    "SOFT_CHECKS_NOTE",
    "STUDENT_KERNELSPEC",
    "wrap_comments",
    "CopyReport",
    "Exercise",
    "copy_extra_files",
    "exercises",
    "hide_verdict_table",
    "hide_verdicts",
    "learner_code",
    "learner_markdown",
    "reset_command",
    "strip_widget_state",
    "make_presenter_notebook",
    "make_student_notebook",
    "notebook_language",
    "pin_install",
    "reset_copies",
    "write_student_copies",
]

#: The tags that make up one exercise, in the order the cells must appear.
EXERCISE_TAGS = ("exercise", "solution", "check")
#: Files and folders never copied from SRC.
SKIP_NAMES = {".ipynb_checkpoints", "__pycache__", ".DS_Store"}
#: The file in DST that remembers what the script wrote (name -> sha256 of the bytes).
MANIFEST = ".hookviz-copies.json"
#: Where ``--reset`` keeps the learner's own version.
BACKUPS = "backups"
#: The verdict words of the course's claim headings.
VERDICTS = ("TRUE", "FALSE", "PARTLY", "OUTDATED")
#: The same verdicts in the Chinese edition (正确 = TRUE, 错误 = FALSE, 部分正确 = PARTLY, 已过时 = OUTDATED).
ZH_VERDICTS = ("正确", "错误", "部分正确", "已过时")
#: The MIME type of a saved widget view (the picture next to it is kept when an output is kept).
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: The code cell a student copy gets right after the Colab guard.
SOFT_CHECKS_SOURCE = """\
import hookviz.exercises

hookviz.exercises.soft_checks()
hookviz.exercises.short_tracebacks()"""
#: The same cell in the Chinese edition (code only: what it does is said by the markdown cell above it).
SOFT_CHECKS_SOURCE_ZH = SOFT_CHECKS_SOURCE
#: The markdown cell a student copy shows above that cell: the instructions live in prose, never in code
#: comments (which a narrow window clips behind a horizontal scrollbar).
SOFT_CHECKS_NOTE = {
    "en": (
        "**Student copy.** Run the cells in order: click a cell and press **Shift+Enter** (or **Run ▸ Run All "
        "Cells**). The cell below makes two things friendlier:\n\n"
        "- a check cell whose exercise you have not solved yet prints `✗ <hint>` instead of stopping "
        "**Run All**, so you can replay the notebook past exercises you skipped;\n"
        "- an error shows the lines of *your* cells that led to it, with the frames inside PyTorch folded into "
        "one line.\n\n"
        "To get full tracebacks and failing checks as errors back, run `hookviz.exercises.strict_checks()` "
        "(it applies from the next cell on)."
    ),
    "zh": (
        "**学生副本。** 按顺序运行单元格：点击一个单元格，按 **Shift+Enter**（或 **Run ▸ Run All Cells**）。"
        "下面的单元格让两件事更友好：\n\n"
        "- 还没有完成的练习，其检查单元格会打印 `✗ <提示>`，而不会让 **Run All** 停下，"
        "所以你可以跳过练习、继续重放整个笔记本；\n"
        "- 出错时只显示**你自己的**单元格中导致错误的那几行，PyTorch 内部的调用帧折叠成一行。\n\n"
        "想恢复完整的回溯、让未通过的检查重新作为错误显示，运行 `hookviz.exercises.strict_checks()`"
        "（从下一个单元格起生效）。"
    ),
}
#: The kernel a student copy names: JupyterLab writes the running kernel's display name into a notebook it
#: opens, so a copy that names another ("Python 3") shows as modified before the learner typed anything.
STUDENT_KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
#: The first file a learner sees in JupyterLab's file browser next to the student copies.
STUDENT_README = """\
# Start here

1. Open **`00_start_here.ipynb`** (double-click it in the file browser on the left).
2. Run a cell: click it and press **Shift+Enter**; it runs and the next cell is selected.
   **Run ▸ Run All Cells** runs the whole notebook from the top.
3. Go through the notebooks in order: 00, 01, 02, ... Each one ends with exercises: write your code in
   the cell under "Exercise", then run the check cell below it (`✓` means solved, `✗` gives a hint).

These are your own copies: edit them freely. Your edits are never overwritten; to start one notebook
again from scratch, run `make reset NB=03` in the course folder (your version is kept in `backups/`).
After a kernel restart, run the cells again from the top (or **Run ▸ Run All Cells**).

Done with a notebook? Save it, then **File ▸ Close and Shut Down Notebook** (or close its tab): its
kernel, the Python that ran it, ends with it and frees its memory. **Kernel ▸ Shut Down Kernel** alone
leaves the tab open: a page reload starts a new kernel for it, and in a notebook whose status bar says
*No Kernel*, **Run ▸ Run All Cells** runs only the first cell: use **Kernel ▸ Restart Kernel and Run
All Cells** there.

中文版在 `zh/` 文件夹中：先打开 `zh/README.md`（中文说明）或 `zh/00_start_here.ipynb`，用 **Shift+Enter** 运行单元格。
"""
#: The same first page for the Chinese copies, written next to them (``zh/README.md``).
STUDENT_README_ZH = """\
# 从这里开始

1. 打开 **`00_start_here.ipynb`**（在左侧的文件浏览器中双击它）。
2. 运行一个单元格：点击它，按 **Shift+Enter**；单元格运行后会选中下一个单元格。
   **Run ▸ Run All Cells**（运行 ▸ 运行全部单元格）从头运行整个笔记本。
3. 按顺序学习各个笔记本：00、01、02…… 每个笔记本最后都有练习：把代码写在“练习”下面的单元格里，
   然后运行它下面的检查单元格（`✓` 表示完成，`✗` 会给出提示）。

这些是你自己的副本，可以随意修改。你的修改永远不会被覆盖；想让某个笔记本从头开始，在课程文件夹中运行
`make reset NB=zh/03`（原来的版本会保存在 `backups/` 中，文件名以 `zh-` 开头）。注意要写 `zh/`：
`make reset NB=03` 重置的是英文副本。内核重启之后，请从头重新运行单元格（或者 **Run ▸ Run All Cells**）。

学完一个笔记本了？先保存，再用 **File ▸ Close and Shut Down Notebook**（文件 ▸ 关闭并关停笔记本）关闭它
（或者关闭它的标签页）：它的内核，也就是运行它的那个 Python 进程，随之结束并释放内存。只用
**Kernel ▸ Shut Down Kernel**（内核 ▸ 关停内核）会让标签页留着：刷新页面会为它启动一个新内核；状态栏显示
*No Kernel* 的笔记本里，**Run ▸ Run All Cells** 只运行第一个单元格，这时请用
**Kernel ▸ Restart Kernel and Run All Cells**（内核 ▸ 重启内核并运行全部单元格）。

英文版在上一级文件夹中（`../00_start_here.ipynb`）。
"""
#: Full-line code comments longer than this are wrapped in student copies (no horizontal scrollbar at 1280 px).
COMMENT_WIDTH = 88
#: Metadata that marks the cell above (make_student adds it; tests find it by this mark).
SOFT_CHECKS_MARK = {"hookviz": {"generated": "soft-checks"}}
#: Metadata that marks the markdown cell above it.
SOFT_CHECKS_NOTE_MARK = {"hookviz": {"generated": "soft-checks-note"}}

_HEADING_VERDICT = re.compile(
    r"^(?P<heading>#{1,6}\s.*?)\s*(?P<dash>——|—)\s*(?P<verdict>\*\*(?:"
    + "|".join(sorted(VERDICTS + ZH_VERDICTS, key=len, reverse=True))
    + r")\*\*.*)$"
)
_ZH_CHARS = re.compile(r"[\u4e00-\u9fff]")
#: The course's install URL in the Colab guard, with the git ref it may already name.
_INSTALL_URL = re.compile(r"git\+https://github\.com/hookviz/hookviz(?:@[A-Za-z0-9._/-]+)?")
_BLOCK_START = re.compile(r"^(#{1,6}\s|<a id=)")
HIDDEN_VERDICT = "**?** *(predict, then run the cells below)*"
#: What a student copy shows instead of the verdict, and the label of the box that holds it, per language.
_HIDDEN = {
    "en": (" — " + HIDDEN_VERDICT, "Verdict (open it after running the cells below)"),
    "zh": ("——**？**（先预测，再运行下面的单元格）", "判定（运行下面的单元格之后再展开）"),
}
#: The note at the top of a student copy of ``article_verdicts.md``, and what replaces a hidden table cell.
_TABLE_NOTE = {
    "en": (
        "> **Student copy: the verdicts are hidden.** Open the cell each row links to, predict the verdict, "
        "then run it; the cell's output and the verdict box under its heading give the answer.",
        "**?**",
        "run the linked cell",
    ),
    "zh": (
        "> **学生副本：判定已隐藏。** 打开每一行链接的单元格，先预测判定，再运行它；"
        "单元格的输出和标题下的判定框会给出答案。",
        "**？**",
        "运行所链接的单元格",
    ),
}
#: Headers of the verdict column in the article_verdicts tables (English, Chinese).
_VERDICT_HEADERS = ("verdict", "判定")


@dataclass(frozen=True)
class Exercise:
    """Cell indices (in the teacher notebook) of one exercise's three cells."""

    number: int
    exercise: int
    solution: int
    check: int


@dataclass
class CopyReport:
    """What one run did, file by file (paths in DST)."""

    written: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)  # the learner changed it: left untouched
    outdated: list[Path] = field(default_factory=list)  # kept, and the course's copy has changed since
    backups: list[Path] = field(default_factory=list)  # written by --reset
    unchanged: list[Path] = field(default_factory=list)  # already the fresh copy: nothing to do


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def copy_summary(report: CopyReport, dst: Path) -> str:
    """One line saying what happened to the notebooks in ``dst``, e.g. ``student/: 34 notebooks up to date``."""
    def notebooks(paths: list[Path]) -> int:
        return sum(1 for p in paths if p.suffix == ".ipynb")

    parts = []
    if notebooks(report.written):
        parts.append(f"{_count(notebooks(report.written), 'notebook')} written")
    if notebooks(report.unchanged):
        parts.append(f"{_count(notebooks(report.unchanged), 'notebook')} already up to date")
    if report.kept:
        parts.append(f"{_count(len(report.kept), 'file')} you changed kept as they are")
    return f"{dst}/: " + (", ".join(parts) if parts else "no notebooks")


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


def _language(text: str) -> str:
    return "zh" if _ZH_CHARS.search(text) else "en"


def notebook_language(nb: nbformat.NotebookNode) -> str:
    """``"zh"`` for a notebook of the Chinese edition (mostly Chinese prose), else ``"en"``."""
    prose = "".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    letters = sum(char.isalpha() for char in prose) or 1
    return "zh" if len(_ZH_CHARS.findall(prose)) / letters > 0.2 else "en"


def hide_verdicts(markdown: str) -> str:
    """Hide the verdict of every claim heading in ``markdown`` until the learner chooses to look.

    ``### Claim B2: "..." — **TRUE**`` becomes ``### Claim B2: "..." — **?** ...``, and the verdict with
    the explanation under the heading (up to the next heading, anchor or the end of the cell) moves into
    a ``<details>`` block. Anchors and every other line stay where they are.
    """
    lines = markdown.splitlines()
    out: list[str] = []
    index = 0
    while index < len(lines):
        match = _HEADING_VERDICT.match(lines[index])
        if not match:
            out.append(lines[index])
            index += 1
            continue
        end = index + 1
        while end < len(lines) and not _BLOCK_START.match(lines[end]):
            end += 1
        body = "\n".join(lines[index + 1 : end]).strip("\n")
        shown, summary = _HIDDEN["zh" if match["dash"] == "——" or _language(match["heading"]) == "zh" else "en"]
        out += [
            f"{match['heading']}{shown}",
            "",
            f"<details><summary>{summary}</summary>",
            "",
            match["verdict"] + ("\n\n" + body if body.strip() else ""),
            "",
            "</details>",
            "",
        ]
        index = end
    return "\n".join(out).rstrip("\n") + ("\n" if markdown.endswith("\n") else "")


def _table_cells(row: str) -> list[str]:
    """The cells of a Markdown table row (``|`` inside inline code does not split)."""
    cells, current, in_code = [], "", False
    for char in row.strip().removeprefix("|").removesuffix("|"):
        if char == "`":
            in_code = not in_code
        if char == "|" and not in_code and not current.endswith("\\"):
            cells.append(current)
            current = ""
        else:
            current += char
    cells.append(current)
    return cells


def hide_verdict_table(markdown: str) -> str:
    """Blank the verdicts of every Markdown table with a verdict column (``article_verdicts.md``).

    In such a table the verdict column and every column after it except the last (the link to the
    proving cell) are replaced: the verdict by ``**?**``, the explanation by "run the linked cell".
    A note at the top says so. Text outside the tables (the verdict rules) stays as it is.
    """
    lines = markdown.splitlines()
    language = _language(markdown)
    note, hidden_verdict, hidden_text = _TABLE_NOTE[language]
    out: list[str] = []
    hide: range | None = None
    changed = False
    for index, line in enumerate(lines):
        is_row = line.lstrip().startswith("|")
        if not is_row:
            hide = None
            out.append(line)
            continue
        cells = _table_cells(line)
        if hide is None:
            next_line = lines[index + 1] if index + 1 < len(lines) else ""
            names = [cell.strip().strip("*").strip().lower() for cell in cells]
            verdict = next((i for i, name in enumerate(names) if name in _VERDICT_HEADERS), None)
            if verdict is not None and re.match(r"^\s*\|?\s*:?-{3,}", next_line):
                hide = range(verdict, len(cells) - 1)
            else:
                hide = range(0)
            out.append(line)
            continue
        if not hide or set(line.replace("|", "").strip()) <= set("-: "):
            out.append(line)
            continue
        for column in hide:
            if column < len(cells):
                cells[column] = f" {hidden_verdict if column == hide.start else hidden_text} "
        out.append("|" + "|".join(cells) + "|")
        changed = True
    if changed:
        title = next((i for i, line in enumerate(out) if line.startswith("# ")), -1)
        out[title + 1 : title + 1] = ["", note] if title >= 0 else [note, ""]
    return "\n".join(out) + ("\n" if markdown.endswith("\n") else "")


def wrap_comments(source: str, width: int = COMMENT_WIDTH) -> str:
    """Wrap every full-line ``#`` comment of ``source`` longer than ``width`` characters at word breaks.

    Each piece keeps the comment's indentation and ``# ``; code lines and end-of-line comments stay as
    they are (a code line is never changed).
    """
    out: list[str] = []
    for line in source.split("\n"):
        stripped = line.lstrip()
        if len(line) <= width or not stripped.startswith("# "):
            out.append(line)
            continue
        prefix = line[: len(line) - len(stripped)] + "# "
        current = ""
        for word in stripped[2:].split(" "):
            if current and len(prefix) + len(current) + 1 + len(word) > width:
                out.append(prefix + current)
                current = word
            else:
                current = f"{current} {word}" if current else word
        out.append(prefix + current)
    return "\n".join(out)


def learner_code(source: str) -> str:
    """A code cell as the student copy has it: the teacher's ``%xmode Minimal`` line left out.

    The teacher notebooks store one-line errors (no traceback holding file paths); a student copy shows
    a learner's mistake as a short traceback with the line where it failed (the soft-checks cell turns
    that on and its note says so). A comment about errors right above the ``%xmode`` line goes with it.
    (The copy also wraps long comments: :func:`wrap_comments`.)
    """
    lines = source.split("\n")
    kept: list[str] = []
    for line in lines:
        if _XMODE_MINIMAL.match(line):
            if kept and kept[-1].lstrip().startswith("#") and _ABOUT_ERRORS.search(kept[-1]):
                kept.pop()
            continue
        kept.append(line)
    return "\n".join(kept).strip("\n") if len(kept) != len(lines) else source


#: The teacher notebooks' ``%xmode Minimal`` line, and what a comment right above it says when it is about it.
_XMODE_MINIMAL = re.compile(r"^\s*%xmode\s+Minimal\s*$")
_ABOUT_ERRORS = re.compile(r"error|traceback|fail|报错|错误", re.IGNORECASE)


#: What a student copy adds under prose that explains ``%xmode Minimal`` (the code below no longer sets it).
XMODE_NOTE = {
    "en": (
        "**In this student copy** the cell below does not set `%xmode`: errors show as the note at the top of "
        "this notebook says, with the lines of your cells that led to them and the frames inside PyTorch "
        "folded into one line."
    ),
    "zh": (
        "**在这份学生副本中**，下面的单元格不设置 `%xmode`：报错按本笔记本开头的说明显示——"
        "列出导致错误的你自己单元格中的行，PyTorch 内部的调用帧折叠成一行。"
    ),
}


#: The teacher notebooks' pointer to the student copy ("Doing the exercises? Open your own copy, **`student/…`**
#: (…).") and what the student copy, which *is* that copy, says instead.
_OPEN_YOUR_COPY = (
    re.compile(r"Doing the exercises\? Open your own copy,\s*(?:>\s*)?\*\*`student/[^`]*`\*\*\s*\([^()]*\)\."),
    re.compile(r"要做练习？请打开你自己的副本\s*(?:>\s*)?\*\*`student/[^`]*`\*\*\s*（[^（）]*）。"),
)
THIS_IS_YOUR_COPY = {
    "en": "This is your own copy: no solutions in it, and nothing you write here is ever overwritten.",
    "zh": "这是你自己的副本：其中没有答案，你写在这里的内容永远不会被覆盖。",
}


def learner_markdown(markdown: str) -> str:
    """A markdown cell as the student copy has it: prose about ``%xmode Minimal`` says what the copy does
    instead, and a pointer to "your own copy" says that this is it."""
    markdown = _OPEN_YOUR_COPY[0].sub(THIS_IS_YOUR_COPY["en"], markdown)
    markdown = _OPEN_YOUR_COPY[1].sub(THIS_IS_YOUR_COPY["zh"], markdown)
    if "%xmode Minimal" not in markdown:
        return markdown
    return markdown.rstrip("\n") + "\n\n" + XMODE_NOTE[_language(markdown)]


def strip_widget_state(nb: nbformat.NotebookNode) -> None:
    """Drop the saved widget state and every widget view from ``nb``'s outputs, in place.

    A widget view without a live kernel is only a reference into that state; an output keeps its other
    forms (the static picture, the text).
    """
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for output in cell.get("outputs", []):
            data = output.get("data")
            if data is not None and WIDGET_VIEW in data:
                del data[WIDGET_VIEW]
                if not data:
                    continue
            kept.append(output)
        cell.outputs = kept


def _clear(cell: nbformat.NotebookNode) -> None:
    cell.outputs = []
    cell.execution_count = None


def _predict_mode(cells: list[nbformat.NotebookNode]) -> None:
    """Clear every code output and hide every claim verdict, in place."""
    for cell in cells:
        if cell.cell_type == "code":
            _clear(cell)
        elif cell.cell_type == "markdown":
            cell.source = hide_verdicts(cell.source)


def pin_install(source: str, ref: str) -> str:
    """Make every ``git+https://github.com/hookviz/hookviz`` install in ``source`` use the git ``ref`` (a tag)."""
    return _INSTALL_URL.sub(f"git+https://github.com/hookviz/hookviz@{ref}", source)


def make_student_notebook(
    nb: nbformat.NotebookNode, *, predict: bool = True, soft_checks: bool = True, pin_ref: str | None = None
) -> nbformat.NotebookNode:
    """Return a student copy of the teacher notebook ``nb`` (``nb`` itself is not changed).

    ``predict`` clears every output and hides the verdicts; ``soft_checks`` adds the cell that turns on
    :func:`hookviz.exercises.soft_checks` right after the first code cell (the Colab guard); ``pin_ref``
    makes the Colab guard install hookviz at that git tag (a workshop release).
    """
    exercises(nb)  # refuse malformed notebooks before writing anything
    student = copy.deepcopy(nb)
    for cell in student.cells:
        if cell.cell_type == "code":
            cell.source = wrap_comments(learner_code(pin_install(cell.source, pin_ref) if pin_ref else cell.source))
        elif cell.cell_type == "markdown":
            cell.source = learner_markdown(cell.source)
    strip_widget_state(student)
    cells = []
    for cell in student.cells:
        tags = _tags(cell)
        if "solution" in tags:
            continue
        if cell.cell_type == "code" and ("exercise" in tags or "check" in tags):
            _clear(cell)
        cells.append(cell)
    if predict:
        _predict_mode(cells)
    if soft_checks and any("check" in _tags(cell) for cell in cells):
        first_code = next((i for i, cell in enumerate(cells) if cell.cell_type == "code"), -1)
        source = SOFT_CHECKS_SOURCE_ZH if notebook_language(nb) == "zh" else SOFT_CHECKS_SOURCE
        soft = nbformat.v4.new_code_cell(source, metadata=copy.deepcopy(SOFT_CHECKS_MARK))
        note = nbformat.v4.new_markdown_cell(
            SOFT_CHECKS_NOTE[notebook_language(nb)], metadata=copy.deepcopy(SOFT_CHECKS_NOTE_MARK)
        )
        for cell, cell_id in ((soft, "hookviz-soft-checks"), (note, "hookviz-soft-checks-note")):
            cell.pop("id", None)
            if (student.nbformat, student.nbformat_minor) >= (4, 5):  # a fixed id: the same bytes on every run
                cell["id"] = cell_id
        cells[first_code + 1 : first_code + 1] = [note, soft]
    student.cells = cells
    student.metadata.setdefault("hookviz", {})["student_copy"] = True
    if student.metadata.get("kernelspec", {}).get("name") == STUDENT_KERNELSPEC["name"]:
        student.metadata["kernelspec"] = dict(STUDENT_KERNELSPEC)
    nbformat.validate(student)
    return student


def make_presenter_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Return a presenter copy of ``nb``: solutions and strict checks kept, every output cleared, verdicts hidden."""
    exercises(nb)
    presenter = copy.deepcopy(nb)
    _predict_mode(presenter.cells)
    strip_widget_state(presenter)
    presenter.metadata.setdefault("hookviz", {})["presenter_copy"] = True
    nbformat.validate(presenter)
    return presenter


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_manifest(dst: Path) -> dict[str, str]:
    try:
        return dict(json.loads((dst / MANIFEST).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return {}


def _write_manifest(dst: Path, manifest: dict[str, str]) -> None:
    (dst / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def _place(target: Path, key: str, data: bytes, manifest: dict[str, str], report: CopyReport) -> None:
    """Write ``data`` to ``target`` unless the file there is someone's work; update ``manifest[key]``."""
    new = _digest(data)
    if target.exists():
        current = _digest(target.read_bytes())
        if current == new:  # already the fresh copy
            manifest[key] = new
            report.unchanged.append(target)
            return
        if manifest.get(key) != current:  # not what we wrote last time: the learner's work
            report.kept.append(target)
            if manifest.get(key) not in (None, new):
                report.outdated.append(target)
            return
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    manifest[key] = new
    report.written.append(target)


def _source_files(src: Path) -> list[tuple[Path, str]]:
    """Every file under ``src`` (or ``src`` itself) with its path relative to the copy's root, caches left out."""
    if src.is_file():
        return [(src, src.name)]
    files = []
    for path in sorted(src.rglob("*")):
        relative = path.relative_to(src)
        if path.is_file() and not SKIP_NAMES & set(relative.parts):
            files.append((path, relative.as_posix()))
    return files


def copy_extra_files(
    src: Path,
    dst: Path,
    manifest: dict[str, str] | None = None,
    report: CopyReport | None = None,
    *,
    predict: bool = True,
) -> list[Path]:
    """Copy what a notebook may refer to by a relative path (every file under ``src`` but notebooks and caches).

    With ``predict`` the verdict tables of Markdown files are blanked (:func:`hide_verdict_table`). With
    a ``manifest`` (see :func:`write_student_copies`), files changed in ``dst`` since they were copied
    are left alone (and listed in ``report.kept``).
    """
    manifest = {} if manifest is None else manifest
    report = CopyReport() if report is None else report
    before = len(report.written)
    for path, key in _source_files(src):
        if path.suffix == ".ipynb":
            continue
        data = path.read_bytes()
        if predict and path.suffix == ".md":
            data = hide_verdict_table(data.decode("utf-8")).encode("utf-8")
        _place(dst / key, key, data, manifest, report)
    return report.written[before:]


def _render(path: Path, presenter: bool, predict: bool, pin_ref: str | None = None) -> bytes:
    try:
        nb = nbformat.read(path, as_version=4)
        if presenter:
            copy_ = make_presenter_notebook(nb)
        else:
            copy_ = make_student_notebook(nb, predict=predict, pin_ref=pin_ref)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from exc
    return (nbformat.writes(copy_) + "\n").encode("utf-8")


def _rendered_notebooks(
    src: Path, presenter: bool, predict: bool, pin_ref: str | None = None
) -> list[tuple[str, bytes]]:
    """(relative path, bytes of the copy) for every notebook under ``src``, all checked before any is written."""
    files = _source_files(src)
    return [(key, _render(path, presenter, predict, pin_ref)) for path, key in files if path.suffix == ".ipynb"]


def _check_folders(src: Path, dst: Path) -> None:
    folder = src if src.is_dir() else src.parent
    if dst.resolve() in (src.resolve(), folder.resolve()):
        raise ValueError("DST must differ from the teacher notebooks' folder")


def write_student_copies(
    src: Path, dst: Path, *, presenter: bool = False, predict: bool = True, pin_ref: str | None = None
) -> CopyReport:
    """Write the copy of every notebook under ``src`` (a folder, editions in subfolders, or one ``.ipynb``) to ``dst``.

    A file in ``dst`` that differs from what this script last wrote there is the learner's work: it is
    kept (see :class:`CopyReport`), never overwritten.
    """
    src, dst = Path(src), Path(dst)
    _check_folders(src, dst)
    rendered = _rendered_notebooks(src, presenter, predict, pin_ref)  # all or nothing: a malformed notebook stops here
    dst.mkdir(parents=True, exist_ok=True)
    manifest = _read_manifest(dst)
    report = CopyReport()
    if src.is_dir():
        copy_extra_files(src, dst, manifest, report, predict=predict or presenter)
    for key, data in rendered:
        _place(dst / key, key, data, manifest, report)
    if src.is_dir() and not presenter:
        _place(dst / "README.md", "README.md", STUDENT_README.encode(), manifest, report)
        if any(key.startswith("zh/") for key, _ in rendered):
            _place(dst / "zh" / "README.md", "zh/README.md", STUDENT_README_ZH.encode(), manifest, report)
    _write_manifest(dst, manifest)
    return report


def _match_names(keys: list[str], wanted: list[str]) -> list[str]:
    """The notebooks named by ``wanted``: ``00``, ``00_start_here(.ipynb)``, ``zh/00`` ... or ``all``."""
    if "all" in wanted:
        return keys
    chosen: list[str] = []
    for name in wanted:
        folder, _, stem = name.removesuffix(".ipynb").rpartition("/")
        hits = [
            key
            for key in keys
            if key.rpartition("/")[0] == folder and stem in (Path(key).stem, Path(key).stem.split("_", 1)[0])
        ]
        if not hits:
            raise ValueError(f"no notebook matches {name!r} (try 00, 00_start_here or all)")
        chosen += [key for key in hits if key not in chosen]
    return chosen


def reset_copies(
    src: Path, dst: Path, names: list[str], *, presenter: bool = False, predict: bool = True
) -> CopyReport:
    """Replace the copies named in ``names`` by fresh ones; the learner's versions go to ``dst/backups/``."""
    src, dst = Path(src), Path(dst)
    _check_folders(src, dst)
    rendered = dict(_rendered_notebooks(src, presenter, predict))
    chosen = _match_names(list(rendered), names)
    dst.mkdir(parents=True, exist_ok=True)
    manifest = _read_manifest(dst)
    report = CopyReport()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for key in chosen:
        target, data = dst / key, rendered[key]
        if target.exists() and _digest(target.read_bytes()) not in (manifest.get(key), _digest(data)):
            backup = dst / BACKUPS / f"{key.removesuffix('.ipynb').replace('/', '-')}.{stamp}.ipynb"
            number = 1
            while backup.exists():
                number += 1
                backup = backup.with_name(f"{key.removesuffix('.ipynb').replace('/', '-')}.{stamp}-{number}.ipynb")
            backup.parent.mkdir(exist_ok=True)
            shutil.move(target, backup)
            report.backups.append(backup)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        manifest[key] = _digest(data)
        report.written.append(target)
    _write_manifest(dst, manifest)
    return report


def reset_command(src: Path | str, dst: Path | str, name: str) -> str:
    """The command that resets one copy, in the form that works everywhere (no ``make``, no ``.venv`` needed)."""
    return f"python scripts/make_student.py {Path(src).as_posix()} {Path(dst).as_posix()} --reset {name}"


def _count_exercises(path: Path) -> int:
    return sum(1 for cell in nbformat.read(path, as_version=4).cells if "exercise" in _tags(cell))


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: ``make_student.py SRC DST [--reset NB ...] [--presenter] [--keep-outputs]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", type=Path, help="folder of teacher notebooks, or one notebook")
    parser.add_argument("dst", type=Path, help="folder for the copies")
    parser.add_argument(
        "--reset", nargs="+", metavar="NB", help="replace these copies by fresh ones (00, 00_start_here or all)"
    )
    parser.add_argument("--presenter", action="store_true", help="presenter copies: solutions kept")
    parser.add_argument("--keep-outputs", action="store_true", help="keep lesson outputs (no predict mode)")
    parser.add_argument("--pin-ref", metavar="TAG", help="the Colab guard installs hookviz at this git tag")
    args = parser.parse_args(argv)
    predict = not args.keep_outputs
    try:
        if args.reset:
            report = reset_copies(args.src, args.dst, args.reset, presenter=args.presenter, predict=predict)
        else:
            report = write_student_copies(
                args.src, args.dst, presenter=args.presenter, predict=predict, pin_ref=args.pin_ref
            )
    except ValueError as exc:
        print(f"make_student: {exc}", file=sys.stderr)
        return 1
    for path in report.written:
        if path.suffix == ".ipynb":
            count = _count_exercises(path)
            print(f"wrote {path}  ({count} exercise{'s' if count != 1 else ''})")
    for path in report.backups:
        print(f"your previous version is kept in {path}")
    for path in report.kept:
        if path.suffix != ".ipynb":
            print(f"kept  {path}  (you changed it, so it is not overwritten)")
            continue
        why = "the course's version has changed since" if path in report.outdated else "nothing new in the course"
        key = path.relative_to(args.dst).as_posix().removesuffix(".ipynb")
        folder, _, stem = key.rpartition("/")
        short = f"{folder}/{stem.split('_', 1)[0]}" if folder else stem.split("_", 1)[0]
        print(
            f"kept  {path}  (you changed it, so it is not overwritten; {why}. For a fresh copy, from the "
            f"course folder: {reset_command(args.src, args.dst, short)} - your version then moves to "
            f"{args.dst}/{BACKUPS}/)"
        )
    print(copy_summary(report, args.dst))
    return 0


if __name__ == "__main__":
    sys.exit(main())
