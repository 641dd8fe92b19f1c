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

_chosen: str | None = None
_listeners: list[Callable[[str], None]] = []


def N_(text: str) -> str:  # noqa: N802 - gettext's name for "mark, translate later"
    """Mark ``text`` (a string or f-string) as a message shown later through :func:`tr`; return it unchanged.

    For a message built in one place and shown in another (a note a state object keeps in English, an entry of a
    table of messages): the extractor finds it here, :func:`tr` translates it where it is shown.
    """
    return text


def N_name(text: str) -> str:  # noqa: N802
    """Mark ``text`` as a computed part that is English prose (a checker's model name); return it unchanged.

    When a message's ``{}`` field holds exactly this text, :func:`translate` puts in its translation from the
    catalogue's ``name`` context.
    """
    return text


def _normalise(language: str) -> str:
    """``"zh"``, ``"zh-CN"``, ``"zh_CN.UTF-8"``, ``"ZH"`` → ``"zh"``; raise ``ValueError`` for an unknown one."""
    code = re.split(r"[-_.@]", language.strip().lower(), maxsplit=1)[0]
    if code not in LANGUAGES:
        raise ValueError(f"unknown language {language!r}; hookviz speaks {', '.join(LANGUAGES)}")
    return code


def on_language_change(listener: Callable[[str], None]) -> None:
    """Call ``listener(language)`` after every :func:`set_language` (once per listener, however often registered)."""
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
    try:
        return _normalise(os.environ.get("HOOKVIZ_LANG", "") or "en")
    except ValueError:
        return "en"


# --------------------------------------------------------------------------- the gettext catalogue


@dataclass
class PoEntry:
    """One entry of a ``.po`` file: context, English, translation, flags (``fuzzy``, ``stored-output``...)."""

    msgid: str
    msgstr: str
    msgctxt: str | None = None
    flags: frozenset[str] = frozenset()


def _po_string(line: str, where: str) -> str:
    """The text of one quoted PO string (C escapes, as gettext writes them)."""
    line = line.strip()
    if len(line) < 2 or line[0] != '"' or line[-1] != '"':
        raise ValueError(f"{where}: expected a quoted string, got {line!r}")
    return ast.literal_eval(line)


def read_po(text: str, name: str = "<po>") -> list[PoEntry]:
    """The entries of a gettext ``.po`` file's text (header and obsolete ``#~`` entries left out).

    Reads what gettext and Babel write: ``#,`` flags, ``msgctxt``, ``msgid`` / ``msgstr`` over several quoted lines.
    Plural forms are refused (hookviz's messages have none). ``tests/test_i18n_catalogue.py`` checks it reads the
    shipped catalogue exactly as Babel does.
    """
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
            raise ValueError(f"{where}: plural forms are not used in hookviz's catalogues")
        elif line.startswith('"') and current is not None:
            fields[current] += _po_string(line, where)
        else:
            raise ValueError(f"{where}: cannot read {raw!r}")
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


@cache
def catalogue(language: str) -> Catalogue:
    """``language``'s translations: its ``.po`` file's entries (translated and not fuzzy), and, during the move
    from the old Python catalogue, the entries still listed in ``hookviz/i18n_<language>.py`` (they win).

    English has none: the code's own text is English.
    """
    language = _normalise(language)
    found = Catalogue()
    if language == "en":
        return found
    path = resources.files("hookviz").joinpath(catalogue_file(language))
    stored: list[str] = []
    if path.is_file():
        for entry in read_po(path.read_text(encoding="utf-8"), catalogue_file(language)):
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


@cache
def _compiled(language: str) -> tuple[dict[str, str], tuple[tuple[re.Pattern[str], str], ...]]:
    """The catalogue split once: keys without fields (braces unescaped) and keys with ``{}`` fields as
    regular expressions, each with its translation, the most specific (most fixed text) first."""
    exact: dict[str, str] = {}
    patterns = []
    for key, value in catalogue(language).messages.items():
        parts = list(string.Formatter().parse(key))
        if all(field is None for _, field, _, _ in parts):
            exact["".join(literal for literal, _, _, _ in parts)] = value.format()
            continue
        pattern = "".join(re.escape(literal) + (_FIELD if field is not None else "") for literal, field, _, _ in parts)
        specificity = sum(len(literal) for literal, _, _, _ in parts)
        patterns.append((specificity, re.compile(pattern, re.DOTALL), value))
    # The most specific key wins: "in `{}`, line {} of its cell" before "in `{}`, line {} of {}".
    patterns.sort(key=lambda entry: -entry[0])
    return exact, tuple((pattern, value) for _, pattern, value in patterns)


def translate(text: str, language: str) -> str:
    """``text`` (an English message, with its computed parts filled in) in ``language``.

    An exact entry wins; otherwise the key with ``{}`` fields that matches the whole text gives the
    translation, with the matched values put back in (a value that is an entry of the ``name`` context
    translated; when several keys match, the one with the most fixed text, the most specific, wins). A text that is
    an entry of the ``name`` context itself (a row label printed on its own) is translated too. Without an entry the
    text comes back as is.
    """
    language = _normalise(language)
    if language == "en" or not text:
        return text
    exact, patterns = _compiled(language)
    if text in exact:
        return exact[text]
    names = catalogue(language).names
    for pattern, value in patterns:
        match = pattern.fullmatch(text)
        if match:
            return value.format(*(_name(part, names) for part in match.groups()))
    return names.get(text, text)  # a computed part shown on its own (a table's row label)


#: Code point ranges a terminal or a notebook's output shows two columns wide (CJK, Hangul, full-width forms).
_WIDE = ((0x2E80, 0xA4CF), (0xAC00, 0xD7A3), (0xF900, 0xFAFF), (0xFE30, 0xFE4F), (0xFF00, 0xFF60), (0xFFE0, 0xFFE6))


def display_width(text: str) -> int:
    """Columns ``text`` takes on screen: a Chinese character or a full-width sign takes two."""
    return sum(2 if any(lo <= ord(char) <= hi for lo, hi in _WIDE) else 1 for char in text)


def ljust(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` columns on screen (a Chinese character takes two): the column of a
    table a notebook prints stays aligned in every language (``print(ljust(tr(label), 24), value)``)."""
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


#: How notes are joined in one line, by language: ``"a; b"`` in English, ``"甲；乙"`` in Chinese.
_NOTE_SEPARATORS = {"en": "; ", "zh": "；"}


def note_separator(language: str | None = None) -> str:
    """The separator of notes joined in one line in ``language`` (default: the current one)."""
    return _NOTE_SEPARATORS[_normalise(language or get_language())]


def join_notes(notes: list[str] | tuple[str, ...], language: str | None = None) -> str:
    """``notes`` (English) in ``language`` (default: the current one), each translated on its own, then joined
    with that language's separator (:func:`note_separator`)."""
    language = _normalise(language or get_language())
    return note_separator(language).join(translate(note, language) for note in notes)


def tr_joined(text: str, language: str | None = None, separator: str = "; ") -> str:
    """English notes already joined with ``separator`` (``"a; b"``) in ``language`` (default: the current one).

    The whole text is translated when the catalogue has it; otherwise it is cut at the separators into the notes
    the catalogue knows (a note may hold the separator itself: ``"called 3 times; showing the last call"``),
    each translated on its own and joined with the language's separator. Where the cut is ambiguous the one that
    leaves the least English wins; a part without an entry stays as it is.
    """
    language = _normalise(language or get_language())
    if language == "en" or not text:
        return text

    def shown(part: str) -> str | None:
        """The translation of one note, or None (no entry, or a field that swallowed a separator)."""
        translated = translate(part, language)
        return translated if translated != part and separator not in translated else None

    whole = shown(text)
    if whole is not None:
        return whole
    pieces = text.split(separator)
    # best[i]: (English characters left, number of notes, notes) for the first i pieces
    best: list[tuple[int, int, list[str]]] = [(0, 0, [])]
    for end in range(1, len(pieces) + 1):
        options = []
        for start in range(end):
            part = separator.join(pieces[start:end])
            translated = shown(part)
            left, count, notes = best[start]
            options.append((left + (len(part) if translated is None else 0), count + 1, [*notes, translated or part]))
        best.append(min(options, key=lambda option: (option[0], option[1])))
    return note_separator(language).join(best[-1][2])


#: How the parts of a widget's one-line caption are separated (``layer · head 0 · sample 3``), in every language.
CAPTION_SEPARATOR = " · "


def tr_caption(text: str, language: str | None = None) -> str:
    """A widget's English caption (``"a · b · c"``) in ``language`` (default: the current one), part by part.

    Each part is translated on its own (:func:`tr_joined`: a part may hold notes joined with ``"; "``); a part
    without an entry (a layer name, a type, a shape) stays as it is. The same function turns a caption a notebook
    stored in English into what the widget shows under that language, so the two always agree.
    """
    return CAPTION_SEPARATOR.join(tr_joined(part, language) for part in text.split(CAPTION_SEPARATOR))
