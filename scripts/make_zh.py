"""Generate the Chinese (zh-Hans) edition of the course from the English notebooks plus translations.

The English notebooks are the one source of code: every code cell, output, tag, execution count and
all metadata of ``notebooks/zh/NN_name.ipynb`` are copied from ``notebooks/NN_name.ipynb``, with three
generated differences that make it a Chinese notebook:

- the imports cell gets one more line, ``hookviz.set_language("zh")``, so that what hookviz prints for
  the learner (the checkers' ``✓``/``✗`` lines and hints) is Chinese (:mod:`hookviz.i18n`);
- the stored ``✓``/``✗`` lines (and the hook doctor's reports, the atlas's HTML tables, and hookviz's
  exceptions and static pictures' text flagged ``stored-output`` in the catalogue) are translated
  with the same catalogue, so that they are exactly what the code prints now (nbval over ``notebooks/zh/``
  proves it); so are the labels each cell prints through ``hookviz.tr`` (the messages the cell's own code
  sends to ``tr`` or marks with ``N_`` / ``N_name``, :func:`localise_labels`), hookviz's translated text
  tables (:data:`TRANSLATED_TABLES`) and the setup check's table and verdict;
- the notebook metadata says ``"language": "zh-CN"``.

The markdown text comes from ``i18n/zh/NN_name.md``, which holds one entry per markdown cell::

    %% <cell id> <first 12 hex digits of the sha256 of the English cell source>
    译文……

The hash records which English text the translation was made from. When an English cell changes, its
hash no longer matches and the cell is *stale*; a cell with no entry is *missing*. Neither is silently
emitted as English: the generated cell shows the English text under a visible marker (待翻译 /
译文未更新), the generator prints a warning, ``--strict`` turns it into a failure, and
``tests/test_zh.py`` fails naming the notebook and cell id.

``notebooks/article_verdicts.md`` is translated the same way, unit by unit (a paragraph, a heading or
one table row; claim rows are keyed by their claim id, other units by position), from
``i18n/zh/article_verdicts.md``.

For each current translation the English text it was made from is kept in ``i18n/zh/en/<name>.json``,
so that ``--stale`` can show what changed in the English since (a diff) next to the old translation.

Usage::

    python scripts/make_zh.py            # regenerate notebooks/zh/ (what `make zh` runs)
    python scripts/make_zh.py --stale    # list stale and missing cells with their English text
    python scripts/make_zh.py --check    # exit 1 when notebooks/zh/ is not what the generator makes
    python scripts/make_zh.py --strict   # regenerate, exit 1 when any cell is stale or missing
"""

from __future__ import annotations

import argparse
import ast
import copy
import difflib
import hashlib
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from hookviz.atlas import localise_html as localise_atlas_html  # noqa: E402
from hookviz.diagnose.report import localise as localise_report  # noqa: E402
from hookviz.diagnose.report import localise_html  # noqa: E402
from hookviz.i18n import stored_outputs, tr_caption, translate  # noqa: E402  (this checkout's package, not another)
from hookviz.i18n_extract import extract_source  # noqa: E402

EN_DIR = ROOT / "notebooks"
OUT_DIR = EN_DIR / "zh"
I18N_DIR = ROOT / "i18n" / "zh"
SNAPSHOT_DIR = I18N_DIR / "en"
VERDICTS = "article_verdicts.md"

HEADER = re.compile(r"^%% (?P<key>\S+) (?P<sha>[0-9a-f]{12})[ \t]*$", re.MULTILINE)
MISSING_MARK = "> ⚠️ **待翻译**：此处还没有中文译文，下面暂时显示英文原文（`{key}`）。\n\n"
STALE_MARK = "> ⚠️ **译文未更新**：英文原文已修改，中文译文尚待更新，下面暂时显示英文原文（`{key}`）。\n\n"
# A table separator row such as |---|---| has nothing to translate.
SEPARATOR_ROW = re.compile(r"^\|[\s:|-]+\|\s*$")
CLAIM_ROW = re.compile(r"^\|\s*([AB]\d+)\s*\|")
# Markdown link targets ](target) and HTML href/src attributes.
LINK_TARGET = re.compile(r"(\]\(|href=\"|src=\")([^)\"\s]+)")


def source_sha(text: str) -> str:
    """Return the short hash (12 hex digits of sha256) that a translation entry records for ``text``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def english_notebooks() -> list[Path]:
    """Return the English notebooks of the course (``notebooks/NN_name.ipynb``), in order."""
    return sorted(EN_DIR.glob("[0-9][0-9]_*.ipynb"))


CJK = "\u3000-\u303f\u3400-\u9fff\uff00-\uffef\u2014\u2026\u201c\u201d"
FULL_WIDTH_PUNCT = "\u3000-\u303f\uff00-\uffef"
# A list item needs a space after its marker: "*你的*" starts emphasis, not a list.
BLOCK_START = re.compile(r"^(\s*([-*+]\s|[-*_]{3,}\s*$|[>#|<]|\d+\.\s|```)|\s*$)")
# Emphasis markers around a Chinese character at a line break do not separate it from the break.
SOFT_BREAK = re.compile(f"[{CJK}](\\*{{1,2}}|_{{1,2}})?$")
CJK_START = re.compile(f"^\\s*(\\*{{1,2}}|_{{1,2}})?[{CJK}]")
PUNCT_END = re.compile(f"[{FULL_WIDTH_PUNCT}]$")
PUNCT_START = re.compile(f"^\\s*[{FULL_WIDTH_PUNCT}]")


def join_cjk_lines(markdown: str) -> str:
    """Join soft-wrapped lines of Chinese prose where the line break would show as a stray space.

    A break is joined between two Chinese characters, after full-width punctuation (，。：；）…) and
    before it, whatever stands on the other side (a code span, a link, bold text). Code blocks, table
    rows, headings and lines that start a block element stay as they are.
    """
    out: list[str] = []
    in_fence = False
    for line in markdown.split("\n"):
        prev = out[-1] if out else ""
        in_prose = (
            not in_fence
            and prev.strip()
            and not prev.lstrip().startswith(("|", "#", "```"))
            and not BLOCK_START.match(line)
        )
        joinable = in_prose and (
            (SOFT_BREAK.search(prev) and CJK_START.match(line)) or PUNCT_END.search(prev) or PUNCT_START.match(line)
        )
        if joinable:
            out[-1] += line.lstrip()
        else:
            out.append(line)
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
    return "\n".join(out)


def fix_links(markdown: str) -> str:
    """Rewrite relative links for a file one folder deeper (``notebooks/zh/`` instead of ``notebooks/``).

    Links between notebooks and to ``article_verdicts.md`` keep their target: the zh edition has the
    same file names. Links that leave ``notebooks/`` (``../...``) get one more ``../``.
    """

    def rewrite(match: re.Match[str]) -> str:
        opening, target = match.groups()
        if target.startswith("../"):
            target = "../" + target
        return opening + target

    return LINK_TARGET.sub(rewrite, markdown)


@dataclass
class Entry:
    """One translation: the hash of the English text it was made from, and the Chinese text."""

    sha: str
    text: str


def parse_translations(path: Path) -> dict[str, Entry]:
    """Read a translation file into ``{key: Entry}``; a missing file means no translations yet.

    Raises ``ValueError`` when a key appears twice, naming the file and the key.
    """
    if not path.exists():
        return {}
    content = path.read_text(encoding="utf-8")
    headers = list(HEADER.finditer(content))
    entries: dict[str, Entry] = {}
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(content)
        key = header["key"]
        if key in entries:
            raise ValueError(f"{path.name}: key {key} appears twice")
        entries[key] = Entry(header["sha"], content[header.end() : end].strip("\n"))
    return entries


@dataclass
class Unit:
    """One piece of English text to translate: a markdown cell, or one unit of a markdown file."""

    key: str
    english: str


@dataclass
class Problem:
    """A unit whose translation is missing or was made from an older English text."""

    document: str
    key: str
    kind: str  # "missing" or "stale"
    english: str
    old_translation: str = ""
    old_english: str | None = None

    def describe(self) -> str:
        """One line naming the document, the cell id and what is wrong."""
        if self.kind == "missing":
            return f"{self.document}: cell {self.key} has no translation"
        return f"{self.document}: cell {self.key} changed in English after it was translated (hash mismatch)"


@dataclass
class Result:
    """What one generation produced: file name → text, and the problems found."""

    files: dict[Path, str] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def load_snapshot(name: str) -> dict[str, str]:
    """Return the English texts the current translations of document ``name`` were made from."""
    path = SNAPSHOT_DIR / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def translate_units(
    document: str, units: list[Unit], entries: dict[str, Entry], old_snapshot: dict[str, str]
) -> tuple[dict[str, str], list[Problem], dict[str, str]]:
    """Translate each unit, or mark it; return ``(key → text, problems, new snapshot)``."""
    texts: dict[str, str] = {}
    problems: list[Problem] = []
    snapshot: dict[str, str] = {}
    for unit in units:
        entry = entries.get(unit.key)
        if entry is not None and entry.sha == source_sha(unit.english):
            texts[unit.key] = join_cjk_lines(entry.text)
            snapshot[unit.key] = unit.english
            continue
        if entry is None:
            problems.append(Problem(document, unit.key, "missing", unit.english))
            texts[unit.key] = MISSING_MARK.format(key=unit.key) + unit.english
        else:
            problems.append(
                Problem(document, unit.key, "stale", unit.english, entry.text, old_snapshot.get(unit.key))
            )
            texts[unit.key] = STALE_MARK.format(key=unit.key) + unit.english
            if unit.key in old_snapshot:
                snapshot[unit.key] = old_snapshot[unit.key]
    return texts, problems, snapshot


def notebook_units(notebook: nbformat.NotebookNode, name: str) -> list[Unit]:
    """Return the markdown cells of an English notebook as units keyed by cell id.

    Raises ``ValueError`` when a cell has no id (nbformat < 4.5): ids are what translations are keyed by.
    """
    units = []
    for index, cell in enumerate(notebook.cells):
        if "id" not in cell:
            raise ValueError(f"{name}: cell {index} has no id; upgrade the notebook to nbformat 4.5")
        if cell.cell_type == "markdown":
            units.append(Unit(cell.id, cell.source))
    return units


#: The language of the generated notebooks, in their metadata (``metadata["language"]``).
LANGUAGE_TAG = "zh-CN"
#: The line the generator adds to the imports cell of every zh notebook.
SET_LANGUAGE = 'hookviz.set_language("zh")  # 中文版：hookviz 的检查结果和提示用中文显示'
IMPORT_LINE = re.compile(r"^(import \S|from \S+ import )")
HOOKVIZ_IMPORT = re.compile(r"^(import hookviz\b|from hookviz[\w.]* import )")
#: Stream lines that hookviz's checkers print: the mark, a space, the message.
CHECK_LINE = re.compile(r"^(?P<mark>[✓✗] )(?P<message>.*?)(?P<end>\n?)$", re.DOTALL)


def imports_cell(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode | None:
    """The first code cell that imports hookviz (the notebook's imports cell), or None."""
    for cell in notebook.cells:
        if cell.cell_type == "code" and any(HOOKVIZ_IMPORT.match(line) for line in cell.source.splitlines()):
            return cell
    return None


def with_language_line(source: str) -> str:
    """The imports cell's source with :data:`SET_LANGUAGE` after its last import (and ``import hookviz``
    added before the first ``from hookviz ...`` import when the cell lacks it)."""
    lines = source.split("\n")
    if not any(re.match(r"^import hookviz\s*$", line) for line in lines):
        first = next(index for index, line in enumerate(lines) if HOOKVIZ_IMPORT.match(line))
        lines.insert(first, "import hookviz")
    last = max(index for index, line in enumerate(lines) if IMPORT_LINE.match(line))
    lines[last + 1 : last + 1] = ["", SET_LANGUAGE]
    return "\n".join(lines)


#: A widget's refusal of a typed value (hookviz.widgets.common.refusal), as a notebook prints it
REFUSAL = re.compile(r"refused: (?P<why>.+?)(?= \| |\n|$)")


def _localise_refusal(match: re.Match[str]) -> str:
    """``refused: <why>`` in Chinese when hookviz has a translation of ``why``, as the widget shows it under zh
    (other ``refused:`` text, which notebooks print themselves, stays as it is)."""
    why = translate(match["why"], "zh")
    return match[0] if why == match["why"] else translate(f"refused: {why}", "zh")


def _stored_pattern(key: str) -> re.Pattern[str]:
    """A stored-output message of the catalogue as a regular expression (a ``{}`` field matches any text)."""
    return re.compile(".+?".join(re.escape(part.replace("{{", "{").replace("}}", "}")) for part in key.split("{}")))


#: hookviz's exceptions and picture texts, as a notebook prints or shows them (flag ``stored-output`` in the catalogue)
STORED = tuple(_stored_pattern(key) for key in stored_outputs("zh"))


def localise_stored(line: str) -> str:
    """``line`` (without its newline) with the hookviz message that ends it in Chinese: an exception a notebook
    prints after its own words (``page 3 -> page 3 does not exist: ...``), or a static picture's text. The message
    is the shortest end of the line, starting after a space, that a stored-output message matches whole."""
    starts = [0, *(m.end() for m in re.finditer(" ", line))]
    for start in reversed(starts):
        rest = line[start:]
        if any(pattern.fullmatch(rest) for pattern in STORED):
            return line[:start] + translate(rest, "zh")
    return line


#: An AttentionExplorer's repr: its caption, which the widget shows in the learner's language (tr_caption)
EXPLORER_REPR = re.compile(r"AttentionExplorer\((?P<caption>.+ · .+)\)")


def localise_explorer_repr(line: str) -> str:
    """``line`` with an ``AttentionExplorer(<caption>)`` in it as the widget prints it under zh."""
    return EXPLORER_REPR.sub(lambda m: f"AttentionExplorer({tr_caption(m['caption'], 'zh')})", line)


def localise_text(text: str) -> str:
    """Stream text with every ``✓ ...`` / ``✗ ...`` line of a checker, each widget refusal and each hookviz
    exception a notebook prints, in Chinese, as the code prints them after ``set_language("zh")``; other lines
    stay as they are."""
    lines = []
    for line in text.splitlines(keepends=True):
        match = CHECK_LINE.match(line)
        if match:
            line = match["mark"] + translate(match["message"], "zh") + match["end"]
        line = REFUSAL.sub(_localise_refusal, line)
        body = line.rstrip("\n")
        lines.append(localise_explorer_repr(localise_stored(body)) + line[len(body) :])
    return "".join(lines)


#: The English verdict line that ends a stored ``hookviz.check_setup()`` (hookviz.doctor) on a ready machine
SETUP_READY = "READY: everything the course needs is installed."


def localise_setup_check(text: str) -> str:
    """A stored ``hookviz.check_setup()`` table (row names, then READY) as the function prints it under zh: the row
    names translated and aligned by display width, the verdict in Chinese. Other text stays as it is."""
    import contextlib
    import importlib
    import io

    from hookviz.i18n import get_language, set_language

    doctor = importlib.import_module("hookviz.doctor")  # the module (hookviz.doctor is also the function's name)

    lines = text.rstrip("\n").split("\n")
    if not lines or lines[-1] != SETUP_READY:
        return text
    names = list(doctor.environment_report())
    rows = [re.match(r"^(?P<name>.+?)\s{2,}(?P<value>\S.*)$", line) for line in lines[:-2]]
    if lines[-2] != "" or not all(row and row["name"] in names for row in rows):
        return text
    shown = {row["name"]: translate(row["name"], "zh") for row in rows}
    width = max(doctor._width(name) for name in shown.values())
    table = [f"{shown[row['name']]}{' ' * (width - doctor._width(shown[row['name']]))}  {row['value']}" for row in rows]
    previous = get_language()
    set_language("zh")
    try:
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            doctor._print_verdict(doctor.Verdict())
    finally:
        set_language(None if previous == "en" else previous)
    zh = "\n".join(table) + "\n" + printed.getvalue()  # the verdict: a blank line, the line, a newline
    return zh if text.endswith("\n") else zh.rstrip("\n")


def localise_error(output: dict) -> None:
    """A hookviz exception raised in a cell (its message matches a stored-output message whole), in Chinese as
    hookviz raises it under ``set_language("zh")`` (a ``KeyError`` shows its message quoted, as Python does)."""
    english = output["evalue"]
    quoted = output.get("ename") == "KeyError" and english[:1] in "'\"" and english[:1] == english[-1:]
    message = ast.literal_eval(english) if quoted else english
    if not any(pattern.fullmatch(message) for pattern in STORED):
        return
    translated = translate(message, "zh")
    output["evalue"] = repr(translated) if quoted else translated
    output["traceback"] = [line.replace(english, output["evalue"]) for line in output["traceback"]]


@dataclass
class CellLabels:
    """The messages a code cell's own code sends through ``hookviz.tr`` or marks with ``N_`` (its printed labels), and
    those of functions defined in earlier cells (a later cell calls them): what :func:`localise_labels` may translate
    in that cell's outputs."""

    patterns: list[tuple[re.Pattern[str], str]] = field(default_factory=list)  # (regex of a key with fields, key)
    literal: re.Pattern[str] | None = None  # every key without fields, longest first
    names: re.Pattern[str] | None = None  # the N_name labels, each with the spaces after it (a padded column)


#: An exception or warning class name and its message, as a cell prints it (``FutureWarning: Using a non-full ...``)
LIBRARY_MESSAGE = re.compile(r"\b[A-Z]\w*(?:Error|Warning|Exception)\b\s*[:\-–]")


def _key_text(key: str) -> str:
    return key.replace("{{", "{").replace("}}", "}")


def _word_bounded(text: str) -> str:
    """A label as a regular expression that never matches inside a longer name (``args:`` in ``with_kwargs:``)."""
    before = r"(?<![\w.])" if re.match(r"\w", text) else ""
    after = r"(?![\w])" if re.search(r"\w$", text) else ""
    return before + re.escape(text) + after


def cell_labels(notebook: nbformat.NotebookNode) -> dict[int, CellLabels]:
    """For each code cell (by index): the labels :func:`localise_labels` translates in its outputs."""
    found: dict[int, CellLabels] = {}
    defined: set[str] = set()  # the labels of functions defined in earlier cells, which later cells call
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        try:
            messages = extract_source(cell.source)
            bodies = [
                (node.lineno, node.end_lineno)
                for node in ast.walk(ast.parse(re.sub(r"(?m)^(\s*)[%!].*$", r"\1pass", cell.source)))
                if isinstance(node, (ast.FunctionDef, ast.Lambda))
            ]
        except SyntaxError:
            continue
        own = {m.key for m in messages if m.context is None}
        keys = own | defined
        defined |= {m.key for m in messages if m.context is None and any(a <= m.line <= b for a, b in bodies)}
        named = sorted({_key_text(m.key) for m in messages if m.context is not None}, key=len, reverse=True)
        labels = CellLabels()
        literals = []
        for key in keys:
            if "{}" in key.replace("{{", "").replace("}}", ""):
                parts = [re.escape(_key_text(part)) for part in key.strip("\n").split("{}")]
                labels.patterns.append((re.compile("(.+?)".join(parts), re.DOTALL), key))
            elif translate(_key_text(key), "zh") != _key_text(key):
                literals.append(_key_text(key).strip("\n"))
        literals = sorted({text for text in literals if text.strip()}, key=len, reverse=True)
        labels.patterns.sort(key=lambda item: -len(item[1]))
        labels.literal = re.compile("|".join(_word_bounded(text) for text in literals)) if literals else None
        if named:
            labels.names = re.compile(
                "(?<![\\w.'\"])(" + "|".join(re.escape(text) for text in named) + ")(?![\\w'\"])( *)"
            )
        found[index] = labels
    return found


def localise_labels(text: str, labels: CellLabels | None) -> str:
    """Stream text a cell printed, each label as ``hookviz.tr`` prints it under zh: a line that is one whole message
    of the cell's code (``print(tr(f"hooks after: {n}"))``) is translated as a whole; otherwise each label of the
    cell's code found in the line (``print(tr("hooks after:"), n)``) is replaced by its translation."""
    if labels is None or (not labels.patterns and labels.literal is None):
        return text
    lines = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\n")
        whole = _whole_message(body, labels)
        if whole is not None:
            body = whole
        else:  # messages joined on one line (" -> ".join(map(tr, log))), then the labels around them
            pieces = SEPARATOR.split(body)
            body = "".join(
                piece if i % 2 else (_whole_message(piece, labels) or piece) for i, piece in enumerate(pieces)
            )
            if labels.literal is not None:  # never inside Python's or PyTorch's own message at the end of the line
                library = LIBRARY_MESSAGE.search(body)
                cut = library.start() if library else len(body)
                body = labels.literal.sub(lambda m, cut=cut: _literal_translation(m[0]) if m.start() < cut else m[0],
                                          body)
            if labels.names is not None:  # a row label printed on its own, in a column padded by ljust
                body = labels.names.sub(_padded_name, body)
        lines.append(body + line[len(line.rstrip("\n")) :])
    return "".join(lines)


#: How a cell joins several messages on one line: `` -> ``, `` | ``, `` → `` (kept as they are).
SEPARATOR = re.compile(r"( -> | \| | → )")


def _whole_message(text: str, labels: CellLabels, depth: int = 0) -> str | None:
    """``text`` translated when it is one whole message of the cell (a key with fields matching it all, none of its
    computed parts holding the key's own words again, as a line of several joined messages would), else None.

    Its computed parts are put back as ``hookviz.tr`` does (a ``name`` entry translated, keeping its column's width),
    and a part that the cell's code translated itself first (``tr(f"... {tr(result)}")``) is translated here too."""
    from hookviz.i18n import _compiled, _name, catalogue

    table = catalogue("zh")
    if text in _compiled("zh").exact and labels.literal is not None and labels.literal.fullmatch(text):
        return translate(text, "zh")  # a whole label of the cell without fields: hookviz.tr prefers it too
    for pattern, key in labels.patterns:
        match = pattern.fullmatch(text)
        if not match:
            continue
        words = max(key.strip("\n").split("{}"), key=len).strip()
        if words and any(words in group for group in match.groups()):
            continue
        value = table.messages.get(key)
        if value is None:
            return text
        lead, tail = key[: len(key) - len(key.lstrip("\n"))], key[len(key.rstrip("\n")) :]
        parts = []
        for group in match.groups():
            named = _name(group, table.names)
            if named == group and depth < 2:
                inner = _whole_message(group, labels, depth + 1)
                if inner is not None:
                    named = inner
                elif labels.literal is not None:
                    named = labels.literal.sub(lambda m: _literal_translation(m[0]), group)
            parts.append(named)
        shown = value.format(*parts)
        return shown[len(lead) : len(shown) - len(tail)] if shown.startswith(lead) and shown.endswith(tail) else shown
    return None


def _padded_name(match: re.Match[str]) -> str:
    """A ``name`` label and the spaces after it, as ``ljust(tr(label), width)`` prints it under zh: the translation,
    then spaces up to the same width on screen."""
    from hookviz.i18n import display_width

    shown = translate(match[1], "zh")
    return shown + " " * max(0, display_width(match[1]) + len(match[2]) - display_width(shown))


def _literal_translation(text: str) -> str:
    """A label without fields in Chinese (the catalogue's entry may carry the newlines around it)."""
    for lead in ("", "\n"):
        for tail in ("", "\n"):
            shown = translate(lead + text + tail, "zh")
            if shown != lead + text + tail:
                return shown[len(lead) : len(shown) - len(tail)]
    return text


#: The text tables hookviz prints with their headers (and some columns) in the learner's language: English headers →
#: the columns whose cells it translates too (hookviz.catalogue.catalogue_table, the timeline's and the layer
#: explorer's tables). A stored English table of one of these is rendered again, translated, with hookviz.text's
#: text_table, which aligns by display width, exactly as the code prints it under zh.
TRANSLATED_TABLES: dict[tuple[str, ...], tuple[str, ...]] = {
    ("name", "register", "phase"): ("phase",),
    ("#", "phase", "kind", "where"): ("phase", "where"),
    ("layer", "type", "output shape", "note"): ("note",),
}


def _table_columns(header: str) -> tuple[list[str], list[int]] | None:
    """The header cells of a text table's header line and where each column starts (cells are 2+ spaces apart)."""
    cells = [(m.start(), m.group()) for m in re.finditer(r"\S+(?: \S+)*", header)]
    return [c for _, c in cells], [start for start, _ in cells]


def _fits(line: str, starts: list[int]) -> bool:
    """Whether ``line`` is a row of the table whose columns start at ``starts`` (two spaces before each column)."""
    return all(len(line) <= start or line[start - 2 : start] == "  " for start in starts[1:])


def localise_tables(text: str) -> str:
    """Every text table of :data:`TRANSLATED_TABLES` in ``text``, rendered again as the code prints it under zh."""
    from hookviz.i18n import tr_joined
    from hookviz.text import text_table

    lines = text.split("\n")
    out: list[str] = []
    index = 0
    while index < len(lines):
        headers, starts = _table_columns(lines[index]) or ([], [])
        translated = TRANSLATED_TABLES.get(tuple(headers))
        if translated is None:
            out.append(lines[index])
            index += 1
            continue
        rule = index + 1 < len(lines) and re.fullmatch(r"-+(?:  -+)*", lines[index + 1]) is not None
        end = index + 1 + rule
        rows = []
        while end < len(lines) and lines[end].strip() and _fits(lines[end], starts):
            line = lines[end]
            bounds = [*starts[1:], None]
            rows.append([line[start:stop].rstrip() if stop else line[start:].rstrip() for start, stop in
                         zip(starts, bounds, strict=True)])
            end += 1
        shown_rows = [
            [tr_joined(cell, "zh") if headers[i] in translated and cell else cell for i, cell in enumerate(row)]
            for row in rows
        ]
        shown_headers = [translate(header, "zh") for header in headers]
        out.extend(text_table(shown_headers, shown_rows, rule=rule).split("\n"))
        index = end
    return "\n".join(out)


def localise_outputs(outputs: list, labels: CellLabels | None = None) -> None:
    """Translate, in place, what hookviz's checkers printed or raised in a code cell's outputs, the hook
    doctor's reports (``hookviz.diagnose``), printed or shown, and the hook atlas's tables shown as HTML."""
    for output in outputs:
        if output.get("output_type") == "stream":
            text = localise_tables(localise_labels(output["text"], labels))
            output["text"] = localise_setup_check(localise_report(localise_text(text), "zh"))
        elif output.get("output_type") == "execute_result":
            data = output.get("data", {})
            if "text/plain" in data:
                data["text/plain"] = localise_explorer_repr(localise_stored(localise_report(data["text/plain"], "zh")))
            if "text/html" in data:
                data["text/html"] = localise_atlas_html(localise_html(data["text/html"], "zh"), "zh")
        elif output.get("output_type") == "display_data":
            data = output.get("data", {})
            if "text/html" in data:
                data["text/html"] = localise_atlas_html(data["text/html"], "zh")
            if "text/plain" in data:  # a widget's repr, shown where no widget front end is
                data["text/plain"] = localise_explorer_repr(data["text/plain"])
        elif output.get("output_type") == "error" and output.get("ename") == "ExerciseNotSolved":
            english = output["evalue"]
            output["evalue"] = translate(english, "zh")
            output["traceback"] = [line.replace(english, output["evalue"]) for line in output["traceback"]]
        elif output.get("output_type") == "error":
            localise_error(output)


def generate_notebook(path: Path, result: Result) -> None:
    """Build the zh copy of one English notebook into ``result``."""
    notebook = nbformat.read(path, as_version=nbformat.NO_CONVERT)
    units = notebook_units(notebook, path.name)
    entries = parse_translations(I18N_DIR / f"{path.stem}.md")
    texts, problems, snapshot = translate_units(path.name, units, entries, load_snapshot(path.stem))
    translated = copy.deepcopy(notebook)
    labels = cell_labels(notebook)
    for index, cell in enumerate(translated.cells):
        if cell.cell_type == "markdown":
            cell.source = fix_links(texts[cell.id])
        elif cell.cell_type == "code":
            localise_outputs(cell.outputs, labels.get(index))
    imports = imports_cell(translated)
    if imports is not None:
        imports.source = with_language_line(imports.source)
    translated.metadata["language"] = LANGUAGE_TAG
    result.files[OUT_DIR / path.name] = nbformat.writes(translated)
    result.files[SNAPSHOT_DIR / f"{path.stem}.json"] = snapshot_text(snapshot)
    result.problems.extend(problems)


def markdown_units(text: str) -> list[tuple[str, Unit | None]]:
    """Split a markdown file into translatable units and the text between them.

    Returns a list of ``(raw, unit)`` pairs in file order: ``unit`` is None for text copied as is
    (blank lines, table separator rows). Each table row is one unit (claim rows keyed by the claim id,
    e.g. ``A3``); each other paragraph or heading is one unit keyed by its position (``p01``, ``p02``...).
    """
    pieces: list[tuple[str, Unit | None]] = []
    paragraph: list[str] = []
    counters = {"p": 0, "row": 0}

    def flush() -> None:
        if paragraph:
            counters["p"] += 1
            block = "".join(paragraph)
            pieces.append((block, Unit(f"p{counters['p']:02d}", block.rstrip("\n"))))
            paragraph.clear()

    for line in text.splitlines(keepends=True):
        if not line.strip():
            flush()
            pieces.append((line, None))
        elif line.startswith("|"):
            flush()
            if SEPARATOR_ROW.match(line):
                pieces.append((line, None))
                continue
            claim = CLAIM_ROW.match(line)
            if claim:
                key = claim.group(1)
            else:
                counters["row"] += 1
                key = f"row{counters['row']:02d}"
            pieces.append((line, Unit(key, line.rstrip("\n"))))
        elif line.startswith("#"):
            flush()
            paragraph.append(line)
            flush()
        else:
            paragraph.append(line)
    flush()
    return pieces


def generate_verdicts(result: Result) -> None:
    """Build ``notebooks/zh/article_verdicts.md`` into ``result``."""
    english = (EN_DIR / VERDICTS).read_text(encoding="utf-8")
    pieces = markdown_units(english)
    units = [unit for _, unit in pieces if unit is not None]
    entries = parse_translations(I18N_DIR / VERDICTS)
    stem = Path(VERDICTS).stem
    texts, problems, snapshot = translate_units(VERDICTS, units, entries, load_snapshot(stem))
    problem_keys = {problem.key for problem in problems}
    out = []
    for raw, unit in pieces:
        if unit is None:
            out.append(raw)
            continue
        text = texts[unit.key]
        if unit.key in problem_keys and raw.startswith("|"):
            # A block-quote marker would break the table: mark the English row inside its first cell.
            text = "| ⚠️ 待翻译/译文未更新" + unit.english[1:]
        out.append(fix_links(text) + raw[len(unit.english) :])
    result.files[OUT_DIR / VERDICTS] = "".join(out)
    result.files[SNAPSHOT_DIR / f"{stem}.json"] = snapshot_text(snapshot)
    result.problems.extend(problems)


def snapshot_text(snapshot: dict[str, str]) -> str:
    """Serialise a snapshot (key → English text) deterministically."""
    return json.dumps(snapshot, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def generate() -> Result:
    """Build every file of the zh edition in memory (nothing is written)."""
    result = Result()
    for path in english_notebooks():
        generate_notebook(path, result)
    generate_verdicts(result)
    return result


def orphans() -> list[str]:
    """Translation keys whose English cell no longer exists (informational: they do no harm)."""
    found = []
    for path in english_notebooks():
        notebook = nbformat.read(path, as_version=nbformat.NO_CONVERT)
        ids = {cell.get("id") for cell in notebook.cells}
        found += [f"{path.name}: {key}" for key in parse_translations(I18N_DIR / f"{path.stem}.md") if key not in ids]
    units = [u for _, u in markdown_units((EN_DIR / VERDICTS).read_text(encoding="utf-8")) if u]
    keys = {u.key for u in units}
    found += [f"{VERDICTS}: {key}" for key in parse_translations(I18N_DIR / VERDICTS) if key not in keys]
    return found


def report_stale(problems: list[Problem], out=None) -> None:
    """Print each stale or missing unit ready to re-translate: the header line to use, the English text,
    and for a stale cell the diff of the English since the translation and the old translation."""
    out = out or sys.stdout
    if not problems:
        print("All translations are current.", file=out)
    for problem in problems:
        file = "i18n/zh/" + problem.document.replace(".ipynb", ".md")
        print(f"==== {problem.kind.upper()}: {problem.describe()}", file=out)
        print(f"---- entry to write in {file} (replace the old entry if any):", file=out)
        print(f"%% {problem.key} {source_sha(problem.english)}", file=out)
        print("---- English text now:", file=out)
        print(problem.english, file=out)
        if problem.kind == "stale":
            if problem.old_english is not None:
                print("---- what changed in the English since the translation:", file=out)
                diff = difflib.unified_diff(
                    problem.old_english.splitlines(), problem.english.splitlines(), "before", "now", lineterm=""
                )
                print("\n".join(diff), file=out)
            print("---- old translation:", file=out)
            print(problem.old_translation, file=out)
        print(file=out)
    for orphan in orphans():
        print(f"(unused translation, its English cell is gone: {orphan})", file=out)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--stale", action="store_true", help="list stale and missing cells with their English text")
    mode.add_argument("--check", action="store_true", help="exit 1 when the generated files are out of date")
    parser.add_argument("--strict", action="store_true", help="exit 1 when any translation is stale or missing")
    parser.add_argument("only", nargs="*", help="with --stale: only these documents (e.g. 04 or article_verdicts)")
    args = parser.parse_args(argv)

    result = generate()
    if args.stale:
        chosen = [p for p in result.problems if not args.only or p.document.startswith(tuple(args.only))]
        report_stale(chosen)
        return 1 if result.problems else 0
    if args.check:
        outdated = [p for p, text in result.files.items() if not p.exists() or p.read_text(encoding="utf-8") != text]
        for path in outdated:
            print(f"out of date: {path.name} (run `make zh`)", file=sys.stderr)
        return 1 if outdated else 0

    OUT_DIR.mkdir(exist_ok=True)
    SNAPSHOT_DIR.mkdir(parents=True, exist_ok=True)
    for path, text in result.files.items():
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    expected = set(result.files)
    for stray in [*OUT_DIR.glob("*.ipynb"), *SNAPSHOT_DIR.glob("*.json")]:
        if stray not in expected:
            stray.unlink()
    print(f"wrote {len(result.files)} files to notebooks/zh/ and i18n/zh/en/")
    # hookviz.ask's copy of the course's sections, in both languages, for where the notebooks are not around (Colab)
    from hookviz.search import write_packaged_documents

    write_packaged_documents(ROOT)
    if result.problems:
        missing = sum(p.kind == "missing" for p in result.problems)
        print(
            f"warning: {missing} untranslated and {len(result.problems) - missing} outdated cells are shown in"
            " English under a 待翻译/译文未更新 marker; list them with `python scripts/make_zh.py --stale`",
            file=sys.stderr,
        )
        return 1 if args.strict else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
