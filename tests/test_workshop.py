"""The workshop kit (``workshop/``): what a teacher prints, projects and follows on the day.

* The agenda's minutes add up: the minute-by-minute table fills the slot exactly, content stays at or below
  150 of 180 minutes, there are two breaks (each shorter than Binder's idle cull), some slack, and every
  change of notebook has a budgeted switch that shuts the previous kernel down.
* The exit ticket the room gets carries no answers; the key has the same questions and options, and its
  correct letters vary.
* The cheat sheet stays one printed page (a line and character budget, and a real render where Chromium
  is installed).
* The reset advice works where there is no ``make`` or ``.venv`` (Binder, JupyterHub, conda).
* The Chinese kit (``workshop/zh/``) exists and covers the same sections, rows and questions.

Every rule holds for both kits: the taster (``workshop/``) and hooks for practitioners
(``workshop/practitioners/``, Chinese in ``workshop/zh/practitioners/``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest
from notebook_tools import REPO

KIT = REPO / "workshop"
ZH = KIT / "zh"
#: The kits, as folders under ``workshop/`` (and ``workshop/zh/``): the taster and hooks for practitioners.
KITS = ("", "practitioners")
LANGUAGES = ("en", "zh")
#: mybinder.org culls a session after this many idle minutes: a break must be shorter.
BINDER_IDLE_CULL_MINUTES = 10
#: At most this share of the slot is content (150 of 180 minutes).
CONTENT_SHARE = 150 / 180
#: The form of the reset command that works without make and without .venv.
RESET = "python scripts/make_student.py notebooks student --reset"
KINDS = {
    "content": "content",
    "switch": "switch",
    "break": "break",
    "slack": "slack",
    "内容": "content",
    "切换": "switch",
    "休息": "break",
    "缓冲": "slack",
}
SLOT = re.compile(r"\*\*(?:Slot|时段)[:：]\s*(\d+)\s*(?:minutes|分钟)")
SHUT_DOWN = re.compile(r"shut down|Shut Down|关闭")
NOTEBOOK_LINK = re.compile(r"notebooks/(\d\d)_")
CJK = re.compile(r"[\u4e00-\u9fff]")


def kit_file(language: str, name: str, kit: str = "") -> Path:
    return (KIT if language == "en" else ZH) / kit / name


@dataclass(frozen=True)
class Row:
    """One row of the minute-by-minute table."""

    clock: int  # minutes since the start
    minutes: int
    kind: str  # content, switch, break or slack
    what: str
    where: str


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table row; ``|`` inside inline code does not split."""
    cells, current, in_code = [], "", False
    for char in line.strip().removeprefix("|").removesuffix("|"):
        if char == "`":
            in_code = not in_code
        if char == "|" and not in_code:
            cells.append(current.strip())
            current = ""
        else:
            current += char
    cells.append(current.strip())
    return cells


def agenda(language: str, kit: str = "") -> tuple[int, list[Row], str]:
    """(slot in minutes, the rows of the minute-by-minute table, the whole text)."""
    path = kit_file(language, "agenda.md", kit)
    if not path.exists():
        pytest.fail(f"{path.relative_to(REPO)} is missing")
    text = path.read_text(encoding="utf-8")
    slot = SLOT.search(text)
    assert slot, f"{path.name}: no '**Slot: N minutes**' line"
    rows: list[Row] = []
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"^\|\s*(clock|时刻)\s*\|", line))
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        clock, minutes, kind, what, where, *_ = _cells(line)
        hours, mins = clock.split(":")
        assert kind in KINDS, f"{path.name}: unknown kind {kind!r} in {line[:60]!r}"
        rows.append(Row(int(hours) * 60 + int(mins), int(minutes), KINDS[kind], what, where))
    return int(slot.group(1)), rows, text


def minutes_by_kind(rows: list[Row]) -> dict[str, int]:
    totals = dict.fromkeys(("content", "switch", "break", "slack"), 0)
    for row in rows:
        totals[row.kind] += row.minutes
    return totals


@pytest.mark.parametrize("kit", KITS)
@pytest.mark.parametrize("language", LANGUAGES)
def test_agenda_minutes_add_up(language, kit):
    slot, rows, text = agenda(language, kit)
    clock = 0
    for row in rows:
        assert row.clock == clock, f"a row starts at {row.clock} min, the previous one ends at {clock} min"
        clock += row.minutes
    assert clock == slot, f"the rows fill {clock} of {slot} minutes"
    totals = minutes_by_kind(rows)
    assert totals["content"] <= CONTENT_SHARE * slot, f"{totals['content']} minutes of content in a {slot}-minute slot"
    breaks = [row for row in rows if row.kind == "break"]
    assert len(breaks) >= (2 if slot >= 120 else 1 if slot >= 90 else 0), f"{len(breaks)} breaks in {slot} minutes"
    assert all(row.minutes < BINDER_IDLE_CULL_MINUTES for row in breaks), "a break as long as Binder's idle cull"
    assert totals["slack"] >= 5, "no slack: the first late launch pushes every row"
    # the summary table at the top says the same
    for kind, minutes in totals.items():
        labels = {"content": "content|内容", "switch": "switch|切换", "break": "breaks?|休息", "slack": "slack|缓冲"}
        label = labels[kind]
        assert re.search(rf"^\|\s*(?:{label})\b[^|]*\|\s*{minutes}\s*\|", text, re.MULTILINE), (
            f"the summary table does not give {minutes} minutes of {kind}"
        )
    assert re.search(rf"^\|\s*\*\*(?:slot|时段)\*\*\s*\|\s*\*\*{slot}\*\*\s*\|", text, re.MULTILINE)


@pytest.mark.parametrize("kit", KITS)
@pytest.mark.parametrize("language", LANGUAGES)
def test_every_notebook_change_is_a_budgeted_switch_that_shuts_a_kernel_down(language, kit):
    _, rows, _ = agenda(language, kit)
    current, switched = None, False
    for row in rows:
        if row.kind == "switch":
            assert row.minutes >= 2, f"a switch in {row.minutes} minute: saving, shutting down, opening takes longer"
            switched = True
            continue
        if row.kind != "content":
            continue
        found = NOTEBOOK_LINK.search(row.where) or re.match(r"^(\d\d)\b", row.where)
        if not found:
            continue
        notebook = found.group(1)
        if current is not None and notebook != current:
            assert switched, f"from {current} to {notebook} without a switch row ({row.what[:50]!r})"
        current, switched = notebook, False
    for row in rows:
        if row.kind == "switch":
            assert SHUT_DOWN.search(row.what), f"a switch that does not shut the kernel down: {row.what[:60]!r}"
    assert SHUT_DOWN.search(rows[-1].what), "the last row ends with shutting the last kernel down"


@pytest.mark.parametrize("language", LANGUAGES)
def test_agenda_bridge_and_kit(language):
    _, rows, text = agenda(language)
    bridge = next(
        i
        for i, row in enumerate(rows)
        if row.kind == "content" and "04_backward_hooks.ipynb#full-backward" in row.where
    )
    before = rows[bridge - 1]
    assert before.kind == "switch" and "Run All Above Selected Cell" in before.what, (
        "04 §3's first cell needs the cells above it: the switch into 04 runs them"
    )
    assert "11_mistakes_clinic.ipynb" in text, "the mistakes clinic is part of the kit"
    core = {}
    for row in rows:
        found = re.search(r"\*\*(?:Core|核心)[^*]*?(\d\d)", row.what)
        if found:
            core[found.group(1)] = row.minutes
    assert set(core) == {"00", "01", "02"}, core
    assert core["00"] < core["01"] and core["00"] < core["02"], f"00's warm-up gets less time than 01 and 02: {core}"
    assert RESET in text


# ---------------------------------------------------------------- exit ticket: the room's copy and the key


OPTION = re.compile(r"^- ([a-d])\) (.*)$")
QUESTION = re.compile(r"^\*\*(\d+)\.\*\*")


def questions(path: Path) -> dict[int, list[tuple[str, str]]]:
    """Question number -> its options as (letter, text), in order."""
    result: dict[int, list[tuple[str, str]]] = {}
    number = None
    for line in path.read_text(encoding="utf-8").splitlines():
        found = QUESTION.match(line)
        if found:
            number = int(found.group(1))
            result[number] = []
            continue
        option = OPTION.match(line)
        if option and number is not None:
            result[number].append((option.group(1), option.group(2)))
    return result


def option_stem(text: str) -> str:
    """An option of the key without its verdict: the ✓, the bold, the explanation and the proof links."""
    text = re.sub(r"\s+—\s+.*$", "", text)  # " — *misconception*" or " — why"
    text = re.sub(r"\s*✓.*$", "", text)
    text = re.sub(r"\s*\(\[.*$", "", text)  # ([proof](link))
    return text.replace("**", "").strip().rstrip(".。")


@pytest.mark.parametrize("kit", KITS)
@pytest.mark.parametrize("language", LANGUAGES)
def test_the_rooms_exit_ticket_carries_no_answers(language, kit):
    path = kit_file(language, "exit_ticket.md", kit)
    text = path.read_text(encoding="utf-8")
    assert "✓" not in text and not re.search(r"Answers|答案[:：]", text)
    assert "notebooks/" not in text, "a link to the proving cell gives the answer away"
    asked = questions(path)
    assert sorted(asked) == list(range(1, 9))
    for number, options in asked.items():
        assert [letter for letter, _ in options] == list("abcd"[: len(options)]), number
        for _, option in options:
            assert "**" not in option and " — " not in option and not re.search(r"(?<!\w)\*\w", option), (
                f"question {number}: an option carries a mark or an explanation: {option!r}"
            )


@pytest.mark.parametrize("kit", KITS)
@pytest.mark.parametrize("language", LANGUAGES)
def test_the_key_has_the_same_questions_and_varied_answers(language, kit):
    room = questions(kit_file(language, "exit_ticket.md", kit))
    key = questions(kit_file(language, "exit_ticket_key.md", kit))
    assert sorted(room) == sorted(key)
    answers = {}
    for number, options in key.items():
        assert [(letter, option_stem(text)) for letter, text in options] == room[number], (
            f"question {number}: the key's options differ from the room's copy"
        )
        correct = [letter for letter, text in options if "✓" in text]
        assert len(correct) == 1, f"question {number}: {len(correct)} answers marked ✓"
        answers[number] = correct[0]
        for letter, text in options:
            if letter != correct[0]:
                assert re.search(r" — (\*|误解：)", text), f"question {number} {letter}): no misconception named"
    key_text = kit_file(language, "exit_ticket_key.md", kit).read_text(encoding="utf-8")
    summary = re.search(r"\*\*(?:Answers|答案)[:：]\*\*\s*(.+)", key_text)
    assert summary, "the key starts with a one-line summary of the answers"
    assert dict(re.findall(r"(\d+) ([a-d])", summary.group(1))) == {str(n): a for n, a in answers.items()}
    letters = list(answers.values())
    assert len(set(letters)) >= 3 and max(letters.count(x) for x in letters) <= len(letters) // 2, letters


# ---------------------------------------------------------------- the cheat sheet stays one page

#: Fitted by rendering (Markdown -> HTML at GitHub's 16 px in its 980 px column, scaled to the printable width
#: of A4 and Letter with 1.5 cm margins, Chromium's print to PDF): the sheet at these sizes prints on one page.
#: A CJK character counts twice (it is about twice as wide).
CHEATSHEET_BUDGET = {"lines": 52, "width_units": 4_100, "table_rows": 14, "sections": 3}


def width_units(text: str) -> int:
    return len(text) + len(CJK.findall(text))


@pytest.mark.parametrize("kit", KITS)
@pytest.mark.parametrize("language", LANGUAGES)
def test_the_cheat_sheet_stays_within_one_page_budget(language, kit):
    text = kit_file(language, "cheatsheet.md", kit).read_text(encoding="utf-8")
    lines = text.splitlines()
    rows = [line for line in lines if line.startswith("|") and not set(line) <= set("|-: ")]
    measured = {
        "lines": len(lines),
        "width_units": width_units(text),
        "table_rows": len(rows) - 1,  # the header
        "sections": len(re.findall(r"^## ", text, re.MULTILINE)),
    }
    over = {key: value for key, value in measured.items() if value > CHEATSHEET_BUDGET[key]}
    assert not over, f"the cheat sheet grew past one printed page: {over} (budget {CHEATSHEET_BUDGET})"


def _pdf_pages(markdown: str, size: str, printable_mm: float, out: Path) -> int:
    """Pages of ``markdown`` printed by headless Chromium, laid out like GitHub's view of the file."""
    import mistune

    html = mistune.create_markdown(plugins=["table"])(markdown)
    zoom = printable_mm / 25.4 * 96 / 980
    css = (
        "body{font-family:Helvetica,Arial,'Noto Sans CJK SC',sans-serif;font-size:16px;line-height:1.5;margin:0;"
        f"width:980px;zoom:{zoom:.3f}}}code{{font-family:monospace;font-size:85%}}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:6px 13px}"
        "p,ul,ol,table{margin:0 0 16px}h1{font-size:2em}h2{font-size:1.5em}"
        f"@page{{size:{size};margin:1.5cm}}"
    )
    page = out / f"sheet-{size}.html"
    page.write_text(f"<!doctype html><meta charset=utf-8><style>{css}</style>{html}", encoding="utf-8")
    pdf = page.with_suffix(".pdf")
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-pdf-header-footer",
            f"--print-to-pdf={pdf}",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    if not pdf.exists():
        pytest.skip("Chromium could not print")
    return len(re.findall(rb"/Type\s*/Page(?!s)", pdf.read_bytes()))


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.mark.slow
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Chromium to print")
@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("name", ["cheatsheet.md", "exit_ticket.md"])
def test_the_printouts_print_on_one_page(language, name, tmp_path):
    """The cheat sheet and the room's exit ticket each print on one A4 or Letter page."""
    pytest.importorskip("mistune")
    markdown = kit_file(language, name).read_text(encoding="utf-8")
    for size, printable_mm in (("A4", 180.0), ("letter", 185.9)):
        assert _pdf_pages(markdown, size, printable_mm, tmp_path) == 1, f"{name}, {size}: more than one page"


# ---------------------------------------------------------------- advice that works everywhere


def test_reset_advice_works_without_make():
    """Wherever the kit says ``make reset``, it also gives the command that needs no make and no .venv."""
    docs = [*sorted(KIT.glob("*.md")), *sorted(ZH.glob("*.md")), REPO / "TEACHING.md"]
    for doc in docs:
        text = doc.read_text(encoding="utf-8")
        if "make reset" in text:
            assert RESET in text, f"{doc.relative_to(REPO)}: `make reset` without `{RESET} NN`"
    for name in ("slides.md", "helper_sheet.md", "README.md"):
        assert RESET in (KIT / name).read_text(encoding="utf-8"), name


# ---------------------------------------------------------------- the Chinese kit


def sections(text: str) -> list[str]:
    return re.findall(r"^(#{1,3}) ", text, re.MULTILINE)


@pytest.mark.parametrize("kit", KITS)
@pytest.mark.parametrize("name", ["agenda.md", "cheatsheet.md", "exit_ticket.md", "exit_ticket_key.md"])
def test_the_chinese_kit_covers_the_english(name, kit):
    english, chinese = KIT / kit / name, ZH / kit / name
    assert chinese.exists(), f"{chinese.relative_to(REPO)} is missing"
    en, zh = english.read_text(encoding="utf-8"), chinese.read_text(encoding="utf-8")
    assert sections(zh) == sections(en), f"{name}: the headings differ"
    assert len(re.findall(r"^\|", zh, re.MULTILINE)) == len(re.findall(r"^\|", en, re.MULTILINE)), (
        f"{name}: the tables have other rows"
    )
    up = "../" * (1 + len(Path(kit).parts))  # from the English kit's folder to the repository root
    assert re.findall(rf"\({re.escape('../' + up)}notebooks/[^)]+\)", zh) == [
        link.replace(f"({up}notebooks/", f"(../{up}notebooks/zh/")
        for link in re.findall(rf"\({re.escape(up)}notebooks/[^)]+\)", en)
    ], f"{name}: the zh version links other cells (or in another order) than the English, in notebooks/zh/"
    if name == "agenda.md":
        assert [(r.clock, r.minutes, r.kind) for r in agenda("zh", kit)[1]] == [
            (r.clock, r.minutes, r.kind) for r in agenda("en", kit)[1]
        ]
    if name.startswith("exit_ticket"):
        assert {n: len(o) for n, o in questions(chinese).items()} == {n: len(o) for n, o in questions(english).items()}
        if name == "exit_ticket_key.md":
            assert [[t for t in o if "✓" in t[1]][0][0] for o in questions(chinese).values()] == [
                [t for t in o if "✓" in t[1]][0][0] for o in questions(english).values()
            ], "the zh key gives other answers"


def _anchors(path: Path) -> set[str]:
    """The anchors a link may name in a notebook or Markdown file (``<a id>`` and GitHub's heading slugs)."""
    import nbformat

    if path.suffix == ".ipynb":
        text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
    else:
        text = path.read_text(encoding="utf-8")
    slugs = {
        re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        for heading in re.findall(r"^#{1,6}\s+(.*)$", text, flags=re.MULTILINE)
    }
    return set(re.findall(r'<a id="([^"]+)"></a>', text)) | slugs


@pytest.mark.parametrize("kit", KITS)
@pytest.mark.parametrize("name", ["agenda.md", "cheatsheet.md", "exit_ticket.md", "exit_ticket_key.md"])
def test_the_chinese_kit_links_reach_their_anchors(name, kit):
    path = ZH / kit / name
    if not path.exists():
        pytest.fail(f"{path.relative_to(REPO)} is missing")
    for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text(encoding="utf-8")):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        assert linked.exists(), f"{name}: link to a missing file {target}"
        if anchor:
            assert anchor in _anchors(linked), f"{name}: no anchor #{anchor} in {linked.name}"


@pytest.mark.parametrize("kit", KITS)
@pytest.mark.parametrize("name", ["agenda.md", "cheatsheet.md", "exit_ticket.md", "exit_ticket_key.md"])
def test_the_chinese_kit_follows_the_house_typography(name, kit):
    path = ZH / kit / name
    if not path.exists():
        pytest.fail(f"{path.relative_to(REPO)} is missing")
    text = path.read_text(encoding="utf-8")
    for code in re.finditer(r"`[^`\n]+`", text):
        before, after = text[code.start() - 1 : code.start()], text[code.end() : code.end() + 1]
        assert not CJK.match(before) and not CJK.match(after), (
            f"{name}: no space between inline code and Chinese: {text[code.start() - 5 : code.end() + 5]!r}"
        )
    prose = re.sub(r"`[^`\n]+`", "", text).replace("**", "")
    italic = re.search(
        r"(?<![*\w])\*[^*\n]*[\u4e00-\u9fff][^*\n]*\*(?![*\w])|(?<!\w)_[^_\n]*[\u4e00-\u9fff][^_\n]*_", prose
    )
    assert not italic, f"{name}: italics on Chinese text: {italic.group(0)[:40]!r}"
    joined = re.search(
        r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef“”]\n(?![|#>`-]|\d+\. )[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef“”]",
        text,
    )
    assert not joined, f"{name}: a line break between Chinese characters renders as a stray space: {joined.group(0)!r}"
    assert "浏览器" not in text.replace("浏览器测试", ""), f"{name}: explorer is 探查器, not 浏览器"
    assert not re.search(r"(?<!错误)门诊", text), f"{name}: the clinic is 错误门诊"


# ---------------------------------------------------------------- Colab badges say what they open

COLAB = re.compile(r"colab\.research\.google\.com/github/hookviz/hookviz/blob/([^/\s)]+)/([^\s)]+)")


def _blocks(text: str) -> list[list[str]]:
    """Paragraphs, lists and tables: runs of non-blank lines."""
    blocks, current = [], []
    for line in text.splitlines():
        if line.strip():
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    return blocks + ([current] if current else [])


@pytest.mark.parametrize("doc", ["README.md", "TEACHING.md", "workshop/README.md"])
def test_colab_badges_say_what_they_open(doc):
    """A Colab link to a teacher notebook says so (solutions included); student copies come from a release tag."""
    blocks = _blocks((REPO / doc).read_text(encoding="utf-8"))
    for index, block in enumerate(blocks):
        context = " ".join(block + (blocks[index - 1] if index else [])).lower()
        for line in block:
            for ref, path in COLAB.findall(line):
                if path.startswith("notebooks/"):
                    assert "teacher cop" in context and "solution" in context, (
                        f"{doc}: a Colab link to a teacher notebook not labelled as one: {line[:90]!r}"
                    )
                else:
                    assert path.startswith("student/") and ref.endswith("-student"), (
                        f"{doc}: a Colab link to student copies must name a release tag (`make release-student`): "
                        f"{ref}/{path}"
                    )


# --------------------------------------------------------------------------- bold that GitHub really renders

_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"(`+).+?\1", re.DOTALL)


def _is_punctuation(char: str) -> bool:
    return bool(char) and unicodedata.category(char)[0] in "PS"


def _is_space(char: str) -> bool:
    return not char or char.isspace()


def literal_bold_markers(paragraph: str) -> list[str]:
    """The ``**...**`` pairs of a paragraph that CommonMark (GitHub) shows as literal asterisks.

    A ``**`` opens bold only when left-flanking and closes only when right-flanking: a closing ``**`` right
    after punctuation must be followed by a space or punctuation. So ``**要点：**正文`` (full-width colon,
    then a Chinese character) stays literal; ``**要点**：正文`` is bold. Code spans do not count.
    """
    text = _CODE_SPAN.sub(lambda m: m.group(1) + "x" * (len(m.group(0)) - 2 * len(m.group(1))) + m.group(1), paragraph)
    runs = [m.start() for m in re.finditer(r"(?<!\*)\*\*(?!\*)", text)]
    broken = []
    for start, end in zip(runs[::2], runs[1::2], strict=False):
        before, after = (text[start - 1] if start else ""), text[start + 2]
        opens = not _is_space(after) and (not _is_punctuation(after) or _is_space(before) or _is_punctuation(before))
        before, after = text[end - 1], (text[end + 2] if end + 2 < len(text) else "")
        closes = not _is_space(before) and (not _is_punctuation(before) or _is_space(after) or _is_punctuation(after))
        if not (opens and closes):
            broken.append(text[start : end + 3])
    return broken


def test_the_bold_check_knows_the_flanking_rule():
    assert literal_bold_markers("1. **保留句柄：**钩子") == ["**保留句柄：**钩"]
    assert literal_bold_markers("**反向传播：**节点钩子 → **注册**：张量") == ["**反向传播：**节"]
    assert literal_bold_markers("1. **保留句柄**：钩子；**Keep handles:** then") == []
    assert literal_bold_markers("**保留句柄：**`handle.remove()`") == []  # a backtick is punctuation


@pytest.mark.parametrize(
    "doc", sorted(str(p.relative_to(REPO)) for p in KIT.rglob("*.md")) + ["README.md", "README.zh.md", "TEACHING.md"]
)
def test_bold_renders_as_bold_on_github(doc):
    """No ``**`` of the kit or the READMEs shows as literal asterisks on GitHub (the Chinese cheat sheet once
    had three: ``**…：**`` followed by a Chinese character)."""
    text = _FENCE.sub("", (REPO / doc).read_text(encoding="utf-8"))
    broken = [span for paragraph in re.split(r"\n\s*\n", text) for span in literal_bold_markers(paragraph)]
    assert not broken, f"{doc}: bold shown as literal ** on GitHub (put the colon after the closing **): {broken}"
