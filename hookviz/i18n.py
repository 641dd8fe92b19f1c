"""The learner-facing messages of hookviz in the learner's language: one switch, one catalogue.

Everything a learner reads from hookviz while working through a notebook (the checkers' ``✓`` lines and
hints, widget captions, the timeline's labels) is written in English in the code and passed through
:func:`tr` where it is shown. :func:`tr` returns the text in the current language:

- :func:`set_language` chooses it (``"en"`` or ``"zh"``); the Chinese notebooks call
  ``hookviz.set_language("zh")`` in their imports cell;
- otherwise the ``HOOKVIZ_LANG`` environment variable chooses it (``zh``, ``zh_CN.UTF-8``, ``en``...);
- otherwise it is English.

A catalogue (:data:`hookviz.i18n_zh.MESSAGES`) maps each English message to its translation. A key may
hold ``{}`` fields for the parts of a message that are computed (a number, a layer name, an error):
``"ran {} times"`` translates ``"ran 3 times"``, and the translation puts the same values back in
(``{0}``, ``{1}``... when it needs them in another order). A computed part that is itself English prose (a
checker's model name such as ``"the tiny transformer"``, a case label) is translated when it is listed, whole, in
the catalogue's :data:`~hookviz.i18n_zh.NAMES`. A message without an entry stays English,
so a new or changed message is never lost, only untranslated; ``tests/test_i18n.py`` lists the
coverage.

This module is a bottom layer: it imports nothing from hookviz but its catalogue.
"""

from __future__ import annotations

import os
import re
import string
from functools import cache

__all__ = [
    "LANGUAGES", "get_language", "join_notes", "note_separator", "set_language", "tr", "tr_caption", "tr_joined",
    "translate",
]

#: The languages hookviz speaks; English is the language of the code and the fallback.
LANGUAGES = ("en", "zh")

_chosen: str | None = None


def _normalise(language: str) -> str:
    """``"zh"``, ``"zh-CN"``, ``"zh_CN.UTF-8"``, ``"ZH"`` → ``"zh"``; raise ``ValueError`` for an unknown one."""
    code = re.split(r"[-_.@]", language.strip().lower(), maxsplit=1)[0]
    if code not in LANGUAGES:
        raise ValueError(f"unknown language {language!r}; hookviz speaks {', '.join(LANGUAGES)}")
    return code


def set_language(language: str | None) -> None:
    """Show hookviz's messages in ``language`` (``"en"`` or ``"zh"``) from now on in this process.

    ``None`` forgets the choice: the ``HOOKVIZ_LANG`` environment variable (or English) decides again.
    """
    global _chosen
    _chosen = None if language is None else _normalise(language)
    if get_language() != "en":  # charts made from now on can draw Chinese (hookviz's own font, as a fallback)
        from hookviz.render import use_cjk_font

        use_cjk_font()


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


def _catalogue(language: str) -> dict[str, str]:
    """The messages of ``language`` (English text → translation); empty for English."""
    if language == "zh":
        from hookviz.i18n_zh import MESSAGES

        return MESSAGES
    return {}


def _names(language: str) -> dict[str, str]:
    """The computed parts of ``language`` (a checker's model names, case labels) → translation; empty for English."""
    if language == "zh":
        from hookviz.i18n_zh import NAMES

        return NAMES
    return {}


_FIELD = "(.+?)"


@cache
def _compiled(language: str) -> tuple[dict[str, str], tuple[tuple[re.Pattern[str], str], ...]]:
    """The catalogue split once: keys without fields (braces unescaped) and keys with ``{}`` fields as
    regular expressions, each with its translation, the most specific (most fixed text) first."""
    exact: dict[str, str] = {}
    patterns = []
    for key, value in _catalogue(language).items():
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
    translation, with the matched values put back in (a value listed whole in the names table translated;
    when several keys match, the one with the most fixed text, the most specific, wins). Without an entry
    the text comes back as is.
    """
    language = _normalise(language)
    if language == "en" or not text:
        return text
    exact, patterns = _compiled(language)
    if text in exact:
        return exact[text]
    for pattern, value in patterns:
        match = pattern.fullmatch(text)
        if match:
            names = _names(language)
            return value.format(*(names.get(part, part) for part in match.groups()))
    return text


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
