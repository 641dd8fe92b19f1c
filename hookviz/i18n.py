"""The learner-facing messages of hookviz in the learner's language: one switch, one catalogue per language.

Everything a learner reads from hookviz while working through a notebook (the checkers' ``✓`` lines and
hints, widget captions, the timeline's labels, the labels the notebooks print) is written in English in the
code and passed through :func:`tr` where it is shown. :func:`tr` returns the text in the current language:

- :func:`set_language` chooses it (``"en"`` or ``"zh"``); the Chinese notebooks call
  ``hookviz.set_language("zh")`` in their imports cell;
- otherwise the ``HOOKVIZ_LANG`` environment variable chooses it (``zh``, ``zh_CN.UTF-8``, ``en``...);
- otherwise it is English.

**The catalogue** of a language is a gettext file shipped inside the package,
``hookviz/locale/<language>/LC_MESSAGES/hookviz.po`` (the format translators' tools read: Poedit, Weblate,
``msgfmt``, Babel). Its ``msgid`` is the English message exactly as the code writes it; a ``{}`` field stands for
a computed part (a number, a layer name, an error): ``"ran {} times"`` translates ``"ran 3 times"``, and the
``msgstr`` puts the same values back in (``{0}``, ``{1}``... when it needs them in another order). A computed part
that is itself English prose (a checker's model name such as ``"the tiny transformer"``) is translated when it is
an entry of the message context ``name`` (marked in the code with :func:`N_name`). An entry marked ``fuzzy`` or left
empty is not used: the message stays English, so a new or changed message is never lost, only untranslated.

**No message can drift.** Every message reaches this module through a call :mod:`hookviz.i18n_extract` can find
(``tr("...")``, ``N_("...")`` for a message shown later, the checkers' ``passed`` / ``expect`` /
``ExerciseNotSolved``, f-strings included); ``scripts/i18n_catalog.py update`` merges what it finds into the ``.po``
file (Babel), and ``tests/test_i18n_catalogue.py`` fails on a message without a current translation and on a
translation whose English no longer exists in the code.

The ``.po`` file is read here by a small parser (no Babel at run time, nothing to compile, so a plain ``pip install``
and Colab get the catalogue as package data). During the move from the old Python catalogue, entries still listed
in ``hookviz/i18n_zh.py`` are merged in (and win over the ``.po`` file's, so that work in progress there is not lost).

This module is a bottom layer: it imports nothing from hookviz. Other layers that follow the language (the charts'
Chinese font) register with :func:`on_language_change`.
"""

from __future__ import annotations

import ast
import importlib
import operator
import os
import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

__all__ = [
    "CONTEXT_NAME", "LANGUAGES", "Catalogue", "N_", "N_name", "catalogue", "display_width", "get_language",
    "join_notes", "ljust", "note_separator", "on_language_change", "read_po", "set_language", "stored_outputs", "tr",
    "tr_caption", "tr_joined", "translate",
]

#: The languages hookviz speaks; English is the language of the code and the fallback.
LANGUAGES = ("en", "zh")
#: The gettext domain: the catalogue of language ``xx`` is ``hookviz/locale/xx/LC_MESSAGES/hookviz.po``.
DOMAIN = "hookviz"
#: The message context of a computed part that is English prose (a checker's model name, a case label).
CONTEXT_NAME = "name"
#: The flag of an entry that ``scripts/make_zh.py`` also looks for in the English notebooks' stored outputs (an
#: exception a notebook prints after its own words, a static picture's text).
STORED_OUTPUT_FLAG = "stored-output"

#: The longest text :func:`translate`, :func:`tr_joined` and :func:`tr_caption` (so :func:`tr`) look up: a longer
#: one (a pasted log, a whole file) is no message of the catalogue and comes back as it is, at once. The longest
#: English message is under 500 characters; this leaves room for long computed parts (a layer's name, a value).
MAX_TRANSLATED = 10_000
_chosen: str | None = None
_listeners: list[Callable[[str], None]] = []


def N_(text: str) -> str:  # noqa: N802 - gettext's name for "mark, translate later"
    """Mark ``text`` (a string or f-string) as a message shown later through :func:`tr`; return it unchanged.

    For a message built in one place and shown in another (a note a state object keeps in English, an entry of a
    table of messages): the extractor finds it here, :func:`tr` translates it where it is shown.
    """
    return text if isinstance(text, str) else _check_text(text)


def N_name(text: str) -> str:  # noqa: N802
    """Mark ``text`` as a computed part that is English prose (a checker's model name); return it unchanged.

    When a message's ``{}`` field holds exactly this text, :func:`translate` puts in its translation from the
    catalogue's ``name`` context.
    """
    return text if isinstance(text, str) else _check_text(text)


# This module's own arguments are checked here, with the messages of hookviz.guards (check_str, check_int,
# check_strings: the same catalogue entries); hookviz.guards imports this module, which imports nothing from hookviz.


def _shown(value: object, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters, for a message (as :func:`hookviz.guards.shown`)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_text(value: object, name: str = "text", fix: str = "") -> str:
    """``value`` when it is a string, else the ``TypeError`` of :func:`hookviz.guards.check_str`, naming ``name``."""
    if isinstance(value, str):
        return value
    raise TypeError(join_notes([N_(f"{name} must be a string, not {_shown(value)}"), *([fix] if fix else [])]))


def _normalise(language: str) -> str:
    """``"zh"``, ``"zh-CN"``, ``"zh_CN.UTF-8"``, ``"ZH"`` → ``"zh"``; raise ``ValueError`` for an unknown one
    (``TypeError`` for one that is not a string)."""
    if type(language) is str and language in LANGUAGES:  # the common case, kept short: every translation asks
        return language
    _check_text(language, "language", N_("the language is 'en' or 'zh'"))
    code = _code(language)
    if code is None:
        shown = repr(language) if len(language) <= 40 else repr(language[:37] + "...")
        raise ValueError(tr(f"unknown language {shown}; hookviz speaks {', '.join(LANGUAGES)}"))
    return code


def _code(language: str) -> str | None:
    """The language code of a locale name (``"zh_CN.UTF-8"`` → ``"zh"``), or ``None`` when hookviz does not speak it."""
    code = re.split(r"[-_.@]", language.strip().lower(), maxsplit=1)[0]
    return code if code in LANGUAGES else None


def on_language_change(listener: Callable[[str], None]) -> None:
    """Call ``listener(language)`` after every :func:`set_language` (once per listener, however often registered)."""
    if not callable(listener):
        raise TypeError(tr(f"listener must be a function that takes the language (e.g. lambda language: ...), "
                           f"not {type(listener).__name__}"))
    if listener not in _listeners:
        _listeners.append(listener)


def set_language(language: str | None) -> None:
    """Show hookviz's messages in ``language`` (``"en"`` or ``"zh"``) from now on in this process.

    ``None`` forgets the choice: the ``HOOKVIZ_LANG`` environment variable (or English) decides again. The
    listeners of :func:`on_language_change` (the charts' Chinese font) are told the language now in force.
    """
    global _chosen
    _chosen = None if language is None else _normalise(language)
    current = get_language()
    for listener in list(_listeners):
        listener(current)


def get_language() -> str:
    """The language messages are shown in: the one set, else ``HOOKVIZ_LANG``'s, else ``"en"``.

    An unknown ``HOOKVIZ_LANG`` is ignored (English), so a stray setting never breaks a notebook.
    """
    if _chosen is not None:
        return _chosen
    return _code(os.environ.get("HOOKVIZ_LANG", "")) or "en"


# --------------------------------------------------------------------------- the gettext catalogue


@dataclass
class PoEntry:
    """One entry of a ``.po`` file: context, English, translation, flags (``fuzzy``, ``stored-output``...)."""

    msgid: str
    msgstr: str
    msgctxt: str | None = None
    flags: frozenset[str] = frozenset()


class _PoError(ValueError):
    """A line :func:`read_po` cannot read: its place and what is wrong (English; :func:`read_po` adds the fix)."""


def _po_string(line: str, where: str) -> str:
    """The text of one quoted PO string (C escapes, as gettext writes them)."""
    line = line.strip()
    if len(line) < 2 or line[0] != '"' or line[-1] != '"':
        raise _PoError(N_(f"{where}: expected a quoted string, got {_shown(line)}"))
    try:
        return ast.literal_eval(line)
    except (SyntaxError, ValueError):  # "a\" ends in an escaped quote: the string is not closed
        raise _PoError(N_(f"{where}: expected a quoted string, got {_shown(line)}")) from None


def read_po(text: str, name: str = "<po>") -> list[PoEntry]:
    """The entries of a gettext ``.po`` file's text (header and obsolete ``#~`` entries left out).

    Reads what gettext and Babel write: ``#,`` flags, ``msgctxt``, ``msgid`` / ``msgstr`` over several quoted lines.
    Plural forms are refused (hookviz's messages have none). ``tests/test_i18n_catalogue.py`` checks it reads the
    shipped catalogue exactly as Babel does. A line it cannot read is refused (``ValueError``) with its place
    (``name:line``).
    """
    _check_text(text, "text", N_("the text of a .po file, e.g. Path('hookviz.po').read_text(encoding='utf-8')"))
    _check_text(name, "name")
    try:
        return _read_po(text, name)
    except _PoError as error:
        raise ValueError(join_notes([str(error), N_(
            "text must be a gettext .po file: msgid and msgstr lines, each with a quoted string"
        )])) from None


def _read_po(text: str, name: str) -> list[PoEntry]:
    """:func:`read_po` without the checks; its refusals in English (:func:`catalogue` reads the shipped file with it:
    translating a refusal there would read the catalogue again)."""
    entries: list[PoEntry] = []
    fields: dict[str, str] = {}
    flags: set[str] = set()
    current: str | None = None

    def flush() -> None:
        nonlocal current
        if "msgid" in fields and fields["msgid"]:
            entries.append(PoEntry(fields["msgid"], fields.get("msgstr", ""), fields.get("msgctxt"), frozenset(flags)))
        fields.clear()
        flags.clear()
        current = None

    for number, raw in enumerate(text.splitlines(), start=1):
        where = f"{name}:{number}"
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            if current is not None and current != "msgctxt":
                flush()
            if line.startswith("#,"):
                flags.update(flag.strip() for flag in line[2:].split(",") if flag.strip())
            continue
        keyword, _, rest = line.partition(" ")
        if keyword in ("msgctxt", "msgid", "msgstr"):
            if keyword in ("msgctxt", "msgid") and current == "msgstr":  # a new entry with no comment before it
                flush()
            current = keyword
            fields[keyword] = _po_string(rest, where)
        elif keyword.startswith(("msgid_plural", "msgstr[")):
            raise _PoError(N_(f"{where}: plural forms are not used in hookviz's catalogues"))
        elif line.startswith('"') and current is not None:
            fields[current] += _po_string(line, where)
        else:
            raise _PoError(N_(f"{where}: cannot read {_shown(raw)}"))
    flush()
    return entries


@dataclass
class Catalogue:
    """The translations of one language: messages, the ``name`` context, and the stored-output messages."""

    messages: dict[str, str] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    stored: tuple[str, ...] = ()


def catalogue_file(language: str) -> str:
    """The path, inside the package, of ``language``'s catalogue: ``locale/<language>/LC_MESSAGES/hookviz.po``."""
    return f"locale/{language}/LC_MESSAGES/{DOMAIN}.po"


def catalogue(language: str) -> Catalogue:
    """``language``'s translations: its ``.po`` file's entries (translated and not fuzzy), and, during the move
    from the old Python catalogue, the entries still listed in ``hookviz/i18n_<language>.py`` (they win).

    English has none: the code's own text is English. Read once per language, then kept.
    """
    return _catalogue(_normalise(language))


@cache
def _catalogue(language: str) -> Catalogue:
    found = Catalogue()
    if language == "en":
        return found
    path = resources.files("hookviz").joinpath(catalogue_file(language))
    stored: list[str] = []
    if path.is_file():
        for entry in _read_po(path.read_text(encoding="utf-8"), catalogue_file(language)):
            if not entry.msgstr or "fuzzy" in entry.flags:
                continue
            table = found.names if entry.msgctxt == CONTEXT_NAME else found.messages
            table[entry.msgid] = entry.msgstr
            if STORED_OUTPUT_FLAG in entry.flags:
                stored.append(entry.msgid)
    try:  # the old catalogue, while entries are still being moved out of it
        legacy = importlib.import_module(f"hookviz.i18n_{language}")
    except ModuleNotFoundError:
        legacy = None
    if legacy is not None:  # work in progress there wins: an entry being written or corrected is not lost
        found.messages.update(getattr(legacy, "MESSAGES", {}))
        found.names.update(getattr(legacy, "NAMES", {}))
        stored += [key for key in getattr(legacy, "STORED_OUTPUTS", {}) if key not in stored]
    found.stored = tuple(stored)
    return found


def stored_outputs(language: str = "zh") -> tuple[str, ...]:
    """The messages ``scripts/make_zh.py`` translates where the English notebooks stored them (``stored-output``)."""
    return catalogue(language).stored


_FIELD = "(.+?)"


#: A catalogue key with ``{}`` fields: its regular expression, its translation, and its fixed text: a text it matches
#: starts with ``head``, ends with ``tail`` and holds each of ``middle`` (checked first, without the expression).
_Pattern = tuple[re.Pattern[str], str, str, str, tuple[str, ...]]


@dataclass
class _Compiled:
    """One language's catalogue split for :func:`translate`: keys without fields (braces unescaped), and keys with
    ``{}`` fields, the most specific (most fixed text) first, found by the first and last character of the text."""

    exact: dict[str, str]
    patterns: tuple[_Pattern, ...]
    heads: frozenset[str]  # the first characters of the keys that start with fixed text
    tails: frozenset[str]  # the last characters of the keys that end with fixed text
    by_ends: dict[tuple[str, str], tuple[_Pattern, ...]] = field(default_factory=dict)
    by_separator: dict[str, tuple[int, tuple[_Pattern, ...]]] = field(default_factory=dict)

    def candidates(self, text: str) -> tuple[_Pattern, ...]:
        """The keys a text could match (at most one list per pair of first and last characters the keys have)."""
        ends = (text[0] if text[0] in self.heads else "", text[-1] if text[-1] in self.tails else "")
        found = self.by_ends.get(ends)
        if found is None:
            first, last = ends
            found = tuple(p for p in self.patterns if (not p[2] or p[2][0] == first) and (not p[3] or p[3][-1] == last))
            self.by_ends[ends] = found
        return found

    def holding(self, separator: str) -> tuple[int, tuple[_Pattern, ...]]:
        """How many pieces one note cut at ``separator`` can span (1 + the most separators a key's fixed text holds:
        a field that swallowed one is no note), and the keys with fields whose fixed text holds it."""
        found = self.by_separator.get(separator)
        if found is None:
            patterns = tuple(p for p in self.patterns if any(separator in part for part in (p[2], p[3], *p[4])))
            most = max([key.count(separator) for key in self.exact]
                       + [max(part.count(separator) for part in (p[2], p[3], *p[4])) for p in patterns], default=0)
            found = self.by_separator.setdefault(separator, (1 + most, patterns))
        return found


def _match(text: str, patterns: tuple[_Pattern, ...], names: dict[str, str]) -> str | None:
    """The translation of ``text`` by the first of ``patterns`` that matches it whole, or ``None``."""
    for regex, value, head, tail, middle in patterns:
        if text.startswith(head) and text.endswith(tail) and all(part in text for part in middle):
            match = regex.fullmatch(text)
            if match:
                return value.format(*(_name(part, names) for part in match.groups()))
    return None


@cache
def _compiled(language: str) -> _Compiled:
    """The catalogue split once (see :class:`_Compiled`)."""
    exact: dict[str, str] = {}
    patterns = []
    for key, value in _catalogue(language).messages.items():
        parts = list(string.Formatter().parse(key))
        if all(field is None for _, field, _, _ in parts):
            exact["".join(literal for literal, _, _, _ in parts)] = value.format()
            continue
        pattern = "".join(re.escape(literal) + (_FIELD if field is not None else "") for literal, field, _, _ in parts)
        specificity = sum(len(literal) for literal, _, _, _ in parts)
        literals = [literal for literal, _, _, _ in parts]
        tail = literals.pop() if parts[-1][1] is None else ""
        head = literals.pop(0) if literals else ""
        middle = tuple(part for part in literals if part)
        patterns.append((specificity, (re.compile(pattern, re.DOTALL), value, head, tail, middle)))
    # The most specific key wins: "in `{}`, line {} of its cell" before "in `{}`, line {} of {}".
    patterns.sort(key=lambda entry: -entry[0])
    ordered = tuple(fixed for _, fixed in patterns)
    return _Compiled(exact, ordered, frozenset(p[2][0] for p in ordered if p[2]),
                     frozenset(p[3][-1] for p in ordered if p[3]))


def translate(text: str, language: str) -> str:
    """``text`` (an English message, with its computed parts filled in) in ``language``.

    An exact entry wins; otherwise the key with ``{}`` fields that matches the whole text gives the
    translation, with the matched values put back in (a value that is an entry of the ``name`` context
    translated; when several keys match, the one with the most fixed text, the most specific, wins). A text that is
    an entry of the ``name`` context itself (a row label printed on its own) is translated too. Without an entry the
    text comes back as is, and so does a text longer than :data:`MAX_TRANSLATED` characters (no message is).
    """
    language = _normalise(language)
    if type(text) is not str:
        _check_text(text)
    if language == "en" or not text or len(text) > MAX_TRANSLATED:
        return text
    compiled = _compiled(language)
    found = compiled.exact.get(text)
    if found is not None:
        return found
    names = _catalogue(language).names
    found = _match(text, compiled.candidates(text), names)
    return found if found is not None else names.get(text, text)  # a name shown on its own (a table's row label)


#: Code point ranges a terminal or a notebook's output shows two columns wide (CJK, Hangul, full-width forms).
_WIDE = ((0x2E80, 0xA4CF), (0xAC00, 0xD7A3), (0xF900, 0xFAFF), (0xFE30, 0xFE4F), (0xFF00, 0xFF60), (0xFFE0, 0xFFE6))


def display_width(text: str) -> int:
    """Columns ``text`` takes on screen: a Chinese character or a full-width sign takes two."""
    _check_text(text)
    return sum(2 if any(lo <= ord(char) <= hi for lo, hi in _WIDE) else 1 for char in text)


def ljust(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` columns on screen (a Chinese character takes two): the column of a
    table a notebook prints stays aligned in every language (``print(ljust(tr(label), 24), value)``)."""
    _check_text(text)
    name, fix = "width", N_("the columns the text is padded to, e.g. ljust(label, 24)")
    try:  # a whole number, as hookviz.guards.check_int takes it: an int, a numpy or torch integer; not True, not 8.0
        if type(width).__name__ in ("bool", "bool_") or isinstance(width, float):
            raise TypeError
        width = operator.index(width)
    except TypeError:
        raise TypeError(join_notes([N_(f"{name} must be a whole number (an int), not {_shown(width)}"), fix])) from None
    if width < 0:
        raise ValueError(join_notes([N_(f"{name} must be at least {0}, not {width}"), fix]))
    return text + " " * max(0, width - display_width(text))


def _name(part: str, names: dict[str, str]) -> str:
    """A computed part of a message: its translation when it is an entry of the ``name`` context. A part padded
    with spaces to a column's width (``f"{label:24}"``) keeps that width on screen (a Chinese character takes two
    columns), so that a table of labels stays aligned in every language."""
    body = part.strip(" ")
    if body not in names:
        return part
    shown = names[body]
    pad = " " * max(0, len(part) - display_width(shown))
    if part == body:
        return shown
    return pad + shown if part.startswith(" ") and not part.endswith(" ") else shown + pad


def tr(text: str) -> str:
    """``text`` in the current language (:func:`get_language`); English when no translation exists."""
    return translate(text, get_language())


def _language(language: str | None) -> str:
    """``language`` checked (see :func:`_normalise`), ``None`` meaning the current one."""
    return get_language() if language is None else _normalise(language)


#: How notes are joined in one line, by language: ``"a; b"`` in English, ``"甲；乙"`` in Chinese.
_NOTE_SEPARATORS = {"en": "; ", "zh": "；"}


def note_separator(language: str | None = None) -> str:
    """The separator of notes joined in one line in ``language`` (default: the current one)."""
    return _NOTE_SEPARATORS[_language(language)]


def join_notes(notes: list[str] | tuple[str, ...], language: str | None = None) -> str:
    """``notes`` (English) in ``language`` (default: the current one), each translated on its own, then joined
    with that language's separator (:func:`note_separator`)."""
    language = _language(language)
    if not isinstance(notes, (list, tuple)) or not all(isinstance(note, str) for note in notes):
        name, fix = "notes", N_("e.g. join_notes(['first note', 'second note'])")
        if isinstance(notes, (list, tuple)):
            wrong = next(note for note in notes if not isinstance(note, str))
            raise TypeError(join_notes([N_(f"{name} must be a list of strings; it holds {_shown(wrong)}"), fix]))
        raise TypeError(join_notes([N_(f"{name} must be a list of strings, not {_shown(notes)}"), fix]))
    return _NOTE_SEPARATORS[language].join(translate(note, language) for note in notes)


def tr_joined(text: str, language: str | None = None, separator: str = "; ") -> str:
    """English notes already joined with ``separator`` (``"a; b"``) in ``language`` (default: the current one).

    The whole text is translated when the catalogue has it; otherwise it is cut at the separators into the notes
    the catalogue knows (a note may hold the separator itself: ``"called 3 times; showing the last call"``),
    each translated on its own and joined with the language's separator. Where the cut is ambiguous the one that
    leaves the least English wins; a part without an entry stays as it is. A note spans no more pieces than the
    catalogue's keys hold separators (plus one), and a text longer than :data:`MAX_TRANSLATED` characters comes back
    as it is: the work grows with the number of notes, not with its square.
    """
    language = _language(language)
    _check_text(text)
    _check_text(separator, "separator")
    if not separator:
        raise ValueError(tr("separator is empty: give the text that joins the notes, e.g. '; '"))
    if language == "en" or not text or len(text) > MAX_TRANSLATED:
        return text

    compiled, names = _compiled(language), _catalogue(language).names
    most, joined = compiled.holding(separator)

    def shown(part: str, pieces: int) -> str | None:
        """The translation of one note of ``pieces`` pieces, or None (no entry, or a field that swallowed a
        separator). A note of several pieces can only be a key whose fixed text holds the separator."""
        if pieces == 1:
            translated = translate(part, language)
        else:
            translated = compiled.exact.get(part) or _match(part, joined, names) or part
        return translated if translated != part and separator not in translated else None

    whole = translate(text, language)
    if whole != text and separator not in whole:
        return whole
    pieces = text.split(separator)
    # best[i]: (English characters left, number of notes, where the last note starts, that note) for the first i
    # pieces; a note spans at most `most` pieces, so the work grows with the number of pieces only
    best: list[tuple[int, int, int, str]] = [(0, 0, 0, "")]
    for end in range(1, len(pieces) + 1):
        options = []
        for start in range(max(0, end - most), end):
            part = separator.join(pieces[start:end])
            translated = shown(part, end - start)
            left, count = best[start][:2]
            options.append((left + (len(part) if translated is None else 0), count + 1, start, translated or part))
        best.append(min(options, key=lambda option: (option[0], option[1])))
    notes, end = [], len(pieces)
    while end:
        notes.append(best[end][3])
        end = best[end][2]
    return _NOTE_SEPARATORS[language].join(reversed(notes))


#: How the parts of a widget's one-line caption are separated (``layer · head 0 · sample 3``), in every language.
CAPTION_SEPARATOR = " · "


def tr_caption(text: str, language: str | None = None) -> str:
    """A widget's English caption (``"a · b · c"``) in ``language`` (default: the current one), part by part.

    Each part is translated on its own (:func:`tr_joined`: a part may hold notes joined with ``"; "``); a part
    without an entry (a layer name, a type, a shape) stays as it is. The same function turns a caption a notebook
    stored in English into what the widget shows under that language, so the two always agree. A caption longer than
    :data:`MAX_TRANSLATED` characters comes back as it is.
    """
    language = _language(language)
    _check_text(text)
    if language == "en" or len(text) > MAX_TRANSLATED:
        return text
    return CAPTION_SEPARATOR.join(tr_joined(part, language) for part in text.split(CAPTION_SEPARATOR))
