"""How much English a Chinese learner still reads: in the zh notebooks' stored outputs, and in the catalogue.

A line of a stored output counts as English when, once what may stay English is taken out, it still holds a run of
three or more English words (``hooks after: 0`` → ``hooks after`` is two words plus a number, ``one forward call,
hook calls: 2`` is five). What may stay English, as the issue says (PyTorch's own messages, API names, tensor
shapes):

- code: inline code spans, quoted strings (a Python repr: ``['a', 'b']``), identifiers with ``.``, ``_`` or ``()``;
- Python's and PyTorch's own messages: an error cell that is not hookviz's, and in a printed line what follows an
  exception or warning class name (``RuntimeError: ...``, ``UserWarning - ...``) up to the end of the line or the
  next `` | ``;
- text that PyTorch, transformers, IPython or JupyterLab wrote (a docstring a cell prints, a menu's name): the phrases
  listed in ``i18n/zh/english_allowed.txt``, one per line (``re:`` starts a regular expression); the file also lists,
  under "Pending", hookviz output whose translation waits for another change.

A translation of the catalogue counts as English when it holds such a run outside code spans.

Usage::

    python scripts/zh_english_scan.py            # per notebook: English lines in the zh outputs; the catalogue
    python scripts/zh_english_scan.py --lines 06 # the lines themselves, for notebooks whose name starts with 06

``tests/test_zh_english.py`` runs :func:`scan`: no English line in the notebooks of :data:`CONVERTED`, no more than
:data:`CEILINGS` in the others (their label tables in ``i18n/zh/NN_name.md`` still carry them), no English in the
catalogue's translations, and the catalogue complete (``scripts/i18n_catalog.py check``).
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ZH = ROOT / "notebooks" / "zh"
ALLOWED_FILE = ROOT / "i18n" / "zh" / "english_allowed.txt"

#: The zh notebooks whose printed labels all go through hookviz.tr: no English line may be left in their outputs.
CONVERTED = ("00", "01", "02", "03", "04", "05", "06", "07", "08", "16")
#: For the other notebooks: at most this many English lines (lower it when a notebook's labels are converted; a
#: notebook that reaches 0 moves to CONVERTED and its label table goes).
CEILINGS: dict[str, int] = {'09': 51, '10': 39, '11': 60, '12': 54, '13': 58, '14': 39, '15': 51, '17': 61}

#: Three or more English words in a row (the same rule as tests/test_i18n.py's english_left).
ENGLISH_RUN = re.compile(r"[A-Za-z][A-Za-z'’]+(?:[ ,;:]+[A-Za-z][A-Za-z'’]+){2,}")
_CODE_SPAN = re.compile(r"(`+).+?\1", re.DOTALL)
_QUOTED = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"|“[^”\n]*”")
_IDENTIFIER = re.compile(r"[A-Za-z_][\w]*(?:[._][\w]+|::\w+|\(\))+|\b\w+_\w+\b")
#: A signature or a call written out: ``(module, args, output)``, ``Sequential(Linear, ReLU)``.
_CALL = re.compile(r"\w*\((?:[^()]|\([^()]*\))*\)")
#: An exception or warning class name, then its message: Python's or PyTorch's own words.
_LIBRARY_MESSAGE = re.compile(r"\b[A-Z]\w*(?:Error|Warning|Exception|Interrupt)\b\s*[:\-–]?.*?(?= \| |$)")
#: hookviz's own exceptions: their messages are translated (hookviz.i18n), so an error cell of these counts.
HOOKVIZ_ERRORS = ("ExerciseNotSolved", "DiagnosisError", "AtlasError")


def allowed_phrases() -> list[str]:
    """The phrases of PyTorch's or transformers' own text that zh outputs may quote (``english_allowed.txt``)."""
    if not ALLOWED_FILE.exists():
        return []
    lines = ALLOWED_FILE.read_text(encoding="utf-8").splitlines()
    return sorted((line for line in lines if line.strip() and not line.startswith("#")), key=len, reverse=True)


def pending_lines() -> set[str]:
    """Whole lines of hookviz output whose translation waits for another change, and which the scan leaves out:
    the release tables ``hookviz.releases.show`` prints (``releases.py`` is being changed for issue 48)."""
    sys.path.insert(0, str(ROOT))
    from hookviz import releases

    return {line.strip() for difference in releases.DIFFERENCES.values() for line in difference.table().splitlines()}


def english_left(text: str, phrases: list[str] | None = None) -> list[str]:
    """The runs of English words in ``text`` once code, quoted values, library messages and allowed phrases are out."""
    for phrase in phrases if phrases is not None else allowed_phrases():
        text = re.sub(phrase[3:], "§", text) if phrase.startswith("re:") else text.replace(phrase, "§")
    text = _CODE_SPAN.sub("§", text)
    text = _LIBRARY_MESSAGE.sub("§", text)
    text = _QUOTED.sub("§", text)
    text = _IDENTIFIER.sub("§", text)
    text = re.sub(r"\b(?:True|False|None)\b", "§", text)  # Python's values
    text = _CALL.sub(lambda m: m[0] if re.search(r"\w+ \w+ \w+", m[0]) else "§", text)
    return ENGLISH_RUN.findall(text)


def _html_text(markup: str) -> str:
    markup = re.sub(r"<code>.*?</code>", "§", markup, flags=re.DOTALL)
    markup = re.sub(r"<(script|style)\b.*?</\1>", " ", markup, flags=re.DOTALL)
    markup = re.sub(r"<br\s*/?>|</(?:p|div|tr|li|h\d)>", "\n", markup)
    markup = re.sub(r"<[^>]+>", " ", markup)
    return html.unescape(markup)


def output_lines(output: dict) -> list[str]:
    """The lines of one stored output a learner reads (an error that is not hookviz's: none, it is PyTorch's)."""
    kind = output.get("output_type")
    if kind == "stream":
        return "".join(output.get("text", "")).splitlines()
    if kind == "error":
        if output.get("ename") not in HOOKVIZ_ERRORS:
            return []
        return [f"{output['ename']}: {output.get('evalue', '')}"]
    data = output.get("data", {})
    if "text/html" in data:
        return [line for line in _html_text("".join(data["text/html"])).splitlines() if line.strip()]
    if "application/vnd.jupyter.widget-view+json" in data:
        return []  # a widget's repr is what shows where no front end is: its own test covers it
    return "".join(data.get("text/plain", "")).splitlines()


@dataclass
class NotebookScan:
    """The English lines of one zh notebook: ``(cell number, line, English runs)``."""

    name: str
    lines: list[tuple[int, str, list[str]]] = field(default_factory=list)


def scan_notebook(path: Path, phrases: list[str], pending: set[str] | frozenset[str] = frozenset()) -> NotebookScan:
    result = NotebookScan(path.name)
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    for number, cell in enumerate(cells):
        for output in cell.get("outputs", []):
            for line in output_lines(output):
                if line.strip() in pending:
                    continue
                runs = english_left(line, phrases)
                if runs:
                    result.lines.append((number, line, runs))
    return result


def scan_notebooks(folder: Path = ZH) -> list[NotebookScan]:
    """Every zh notebook's English lines."""
    phrases, pending = allowed_phrases(), pending_lines()
    return [scan_notebook(path, phrases, pending) for path in sorted(folder.glob("[0-9][0-9]_*.ipynb"))]


def catalogue_english() -> list[tuple[str, str, list[str]]]:
    """Translations of the zh catalogue that hold English runs: ``(msgid, msgstr, runs)``."""
    sys.path.insert(0, str(ROOT))
    from hookviz.i18n import catalogue

    found = []
    table = catalogue("zh")
    phrases = allowed_phrases()
    for english, chinese in [*table.messages.items(), *table.names.items()]:
        runs = english_left(chinese, phrases)
        if runs:
            found.append((english, chinese, runs))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", nargs="*", help="print the English lines of these notebooks (prefixes: 06 16)")
    args = parser.parse_args(argv)
    scans = scan_notebooks()
    total = 0
    for scan in scans:
        total += len(scan.lines)
        mark = "converted" if scan.name[:2] in CONVERTED else f"ceiling {CEILINGS.get(scan.name[:2], '-')}"
        print(f"{scan.name:42} {len(scan.lines):5} English lines  ({mark})")
        if args.lines is not None and scan.name.startswith(tuple(args.lines) or ("",)):
            for number, line, _ in scan.lines:
                print(f"    cell {number}: {line[:150]}")
    print(f"{'all zh notebooks':42} {total:5} English lines")
    english = catalogue_english()
    print(f"zh catalogue: {len(english)} translations with English runs")
    for key, chinese, runs in english:
        print(f"    {key[:60]!r} -> {chinese[:80]!r}: {runs}")
    sys.path.insert(0, str(ROOT / "scripts"))
    import i18n_catalog

    result = i18n_catalog.status()
    print(
        f"zh catalogue: {len(result.untranslated)} untranslated, {len(result.fuzzy)} fuzzy, {len(result.stale)} stale "
        f"messages; files pending the f-string refactor: {', '.join(sorted(result.pending)) or 'none'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
