"""Find hookviz's learner-facing messages in Python source: the extractor behind the gettext catalogue.

A message reaches :mod:`hookviz.i18n` through a call this module can see: ``tr("...")``, ``N_("...")`` (marked
here, translated where it is shown), a checker's ``passed("...")`` / ``expect(ok, "...")`` /
``ExerciseNotSolved("...")`` and the other names of :data:`KEYWORDS`. The message may be a string, an f-string,
strings joined with ``+``, a ``"...".format(...)`` call or ``a if c else b`` (both branches): each becomes a
catalogue key with ``{}`` for every computed part (``f"ran {n} times"`` → ``"ran {} times"``), which is how
:func:`hookviz.i18n.translate` matches the text the code makes at run time.

The notebooks' printed labels are found the same way in their code cells (:func:`extract_notebook`). Babel's
``pybabel extract`` calls :func:`extract` (``babel.cfg`` names it); ``scripts/i18n_catalog.py`` and
``tests/test_i18n_catalogue.py`` call :func:`extract_file` directly. Of the rest of hookviz, it imports only the shared
argument checks (:mod:`hookviz.guards`) and :func:`~hookviz.i18n.tr`.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hookviz.guards import check_path, check_str, shown
from hookviz.i18n import tr

__all__ = [
    "CONTEXT_NAME", "KEYWORDS", "Found", "extract", "extract_file", "extract_notebook", "extract_source",
    "literal_templates", "template",
]

#: The message context of a computed part that is English prose itself (a checker's model name): ``N_name("...")``.
CONTEXT_NAME = "name"

#: Call name → the 1-based position of its message argument (the spec Babel's ``-k name:N`` uses); a ``c`` suffix
#: gives the message context instead.
KEYWORDS: dict[str, tuple[int | str, ...]] = {
    # hookviz.i18n
    "tr": (1,),
    "translate": (1,),
    "N_": (1,),
    "N_name": (1,),
    # hookviz.render: the words drawn in a picture or chart
    "figure_text": (1,),
    # hookviz.exercises: a checker's verdicts, and what a learner's function was to return
    "passed": (1,),
    "expect": (2,),
    "ExerciseNotSolved": (1,),
    "missing_return": (3,),
    "missing_return_message": (2,),
    "learner_result": (2,),
    "expect_returned": (1,),
}


@dataclass(frozen=True)
class Found:
    """One message in a source file: its catalogue key, context (``None`` or :data:`CONTEXT_NAME`), line, call."""

    key: str
    context: str | None
    line: int
    call: str


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def _constant(text: str) -> str:
    """A plain string as a key: its braces are literal, except ``{}``, a field that ``.format()`` fills later
    (``N_("`{}` returned None")``)."""
    return "{}".join(_escape(part) for part in text.split("{}"))


def template(node: ast.expr) -> list[str] | None:
    """The catalogue keys a message expression stands for (``None``: not a message the extractor can read).

    >>> template(ast.parse('f"ran {n} times"', mode="eval").body)
    ['ran {} times']
    """
    if not isinstance(node, ast.AST):
        raise TypeError(tr(f"node must be a syntax tree node (an ast.expr, e.g. ast.parse(text).body[0].value), "
                           f"not {shown(node)}"))
    if isinstance(node, ast.Constant):
        return [_constant(node.value)] if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(_escape(str(value.value)))
            else:
                parts.append("{}")
        return ["".join(parts)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = template(node.left), template(node.right)
        if left is None and right is None:
            return None
        return [a + b for a in (left or ["{}"]) for b in (right or ["{}"])]
    if isinstance(node, ast.IfExp):
        body, orelse = template(node.body), template(node.orelse)
        found = (body or []) + (orelse or [])
        return found or None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
        and isinstance(node.func.value, ast.Constant)
        and isinstance(node.func.value.value, str)
    ):
        return [node.func.value.value]  # "ran {} times".format(n): the string is the key already
    return None


def _call_name(node: ast.Call) -> str:
    return getattr(node.func, "id", getattr(node.func, "attr", ""))


def _messages(tree: ast.AST, keywords: Mapping[str, tuple[int | str, ...]]) -> Iterator[Found]:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node)
        spec = keywords.get(name)
        if not spec:
            continue
        position = next((p for p in spec if isinstance(p, int)), None)
        if position is None or len(node.args) < position or isinstance(node.args[position - 1], ast.Starred):
            continue
        context = CONTEXT_NAME if name == "N_name" else None
        for key in template(node.args[position - 1]) or []:
            if re.search(r"[A-Za-z]{2,}", key.replace("{}", "")):  # a message has words, not only computed parts
                yield Found(key, context, node.lineno, name)


def _parse(source: str, name: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source)``; source that is not Python (a syntax error, a NUL byte, a lone surrogate, nesting too
    deep for the parser) is refused naming the argument ``name`` it came from."""
    try:
        return ast.parse(source, filename)
    except (SyntaxError, ValueError, UnicodeError, MemoryError, RecursionError) as error:
        reason = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        raise ValueError(tr(f"{name} is not Python source the extractor can read ({reason})")) from None


def _read_text(path: Path, name: str) -> str:
    """The UTF-8 text of the file ``path`` (the argument ``name``), refused clearly when it is not UTF-8 text."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(tr(f"{name} {shown(str(path))} is not UTF-8 text ({error.reason})")) from None


def extract_file(path: str | Path, keywords: Mapping[str, tuple[int | str, ...]] = KEYWORDS) -> list[Found]:
    """Every message of one Python file, in the order of the source."""
    path = check_path(path, "path", kind="file")
    tree = _parse(_read_text(path, "path"), "path", str(path))
    return sorted(_messages(tree, keywords), key=lambda found: (found.line, found.key))


_MAGIC = re.compile(r"^\s*[%!]")


def notebook_code(text: str) -> list[tuple[int, str]]:
    """``(cell number, source)`` of each code cell of a notebook's JSON text (1-based, counting every cell), with
    IPython's ``%magic`` and ``!shell`` lines blanked so that the source parses as Python."""
    check_str(text, "text")
    try:
        cells = json.loads(text)["cells"]
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(tr(f"text is not a notebook's JSON (a dict with 'cells'): {type(error).__name__}")) from None
    found = []
    for number, cell in enumerate(cells, start=1):
        if cell.get("cell_type") != "code":
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        found.append((number, "\n".join("" if _MAGIC.match(line) else line for line in source.split("\n"))))
    return found


def extract_source(source: str, keywords: Mapping[str, tuple[int | str, ...]] = KEYWORDS) -> list[Found]:
    """Every message of one piece of Python source (a notebook cell: ``%magic`` and ``!shell`` lines are ignored)."""
    check_str(source, "source")
    source = "\n".join("" if _MAGIC.match(line) else line for line in source.split("\n"))
    return sorted(_messages(_parse(source, "source"), keywords), key=lambda found: (found.line, found.key))


def extract_notebook(path: str | Path, keywords: Mapping[str, tuple[int | str, ...]] = KEYWORDS) -> list[Found]:
    """Every message of a notebook's code cells; :attr:`Found.line` is the cell's number (1-based)."""
    path = check_path(path, "path", kind="file")
    try:
        cells = notebook_code(_read_text(path, "path"))
    except ValueError:
        raise ValueError(tr(f"path {shown(str(path))} is not a notebook (.ipynb JSON with cells)")) from None
    found = []
    for number, source in cells:
        tree = _parse(source, "path", f"{path}, cell {number}")
        found += [Found(f.key, f.context, number, f.call) for f in _messages(tree, keywords)]
    return found


def literal_templates(source: str) -> set[str]:
    """Every string and f-string of a Python source as a catalogue key, wherever it stands (for a file whose messages
    do not all reach a call :data:`KEYWORDS` names yet: its catalogue entries count as used)."""
    check_str(source, "source")
    found: set[str] = set()
    for node in ast.walk(_parse(source, "source")):
        if isinstance(node, (ast.Constant, ast.JoinedStr)):
            found.update(template(node) or [])
    return found


def extract(
    fileobj: Any, keywords: Any, comment_tags: Any, options: Mapping[str, Any]
) -> Iterator[tuple[int, str | None, str | tuple[str, str], list[str]]]:
    """Babel's extraction method (``[extractors] hookviz = hookviz.i18n_extract:extract`` in ``babel.cfg``).

    Babel's own ``python`` method skips f-strings and cannot say what a computed part is; this one reads the
    file's syntax tree and yields each message as its ``{}`` key, for the calls of :data:`KEYWORDS` (Babel's
    ``-k`` options are not needed).
    """
    source = fileobj.read()
    if isinstance(source, bytes):
        encoding = options.get("encoding", "utf-8")
        try:
            source = source.decode(encoding)
        except UnicodeDecodeError as error:
            raise ValueError(tr(f"fileobj is not {encoding} text ({error.reason}); set the encoding option to the "
                                f"file's encoding")) from None
    if source.lstrip().startswith("{"):  # a notebook: its code cells, each message at its cell's number
        messages = [
            Found(f.key, f.context, number, f.call)
            for number, code in notebook_code(source)
            for f in _messages(_parse(code, "fileobj", f"cell {number}"), KEYWORDS)
        ]
    else:
        messages = list(_messages(_parse(source, "fileobj"), KEYWORDS))
    for found in sorted(messages, key=lambda f: f.line):
        if found.context is None:
            yield found.line, None, found.key, []  # no call name: Babel takes the one message as it is
        else:  # pgettext's shape, (context, message): Babel's default keywords give it the spec "1c,2"
            yield found.line, "pgettext", (found.context, found.key), []
