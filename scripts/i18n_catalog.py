"""Keep hookviz's gettext catalogues in step with the code: extract, update, check, and move the old Python catalogue.

The catalogue of a language is ``hookviz/locale/<language>/LC_MESSAGES/hookviz.po`` (see :mod:`hookviz.i18n`). Its
messages are what :mod:`hookviz.i18n_extract` finds in the sources: ``hookviz/**.py``, ``scripts/make_zh.py`` and the
code cells of the English notebooks (their printed labels). Usage::

    python scripts/i18n_catalog.py check     # untranslated, fuzzy and stale entries, and the files still pending
    python scripts/i18n_catalog.py update    # merge the messages found into the .po (Babel): new ones empty, changed
                                             # ones fuzzy with the old translation, vanished ones obsolete (#~)
    python scripts/i18n_catalog.py convert   # move the entries of the old hookviz/i18n_zh.py into the .po
                                             # (--clear-legacy then empties i18n_zh.py)

``update`` and ``convert`` need Babel (a development dependency: ``pip install Babel``); the package itself reads the
``.po`` file without it. The same steps with Babel's own command line (``babel.cfg`` names the extractor)::

    pybabel extract -F babel.cfg -o /tmp/hookviz.pot .
    pybabel update -i /tmp/hookviz.pot -d hookviz/locale -D hookviz -l zh --width 116
    pybabel compile -d hookviz/locale -D hookviz -l zh --statistics -o /tmp/hookviz.mo   # counts; the .mo is not used

``pybabel update`` alone would make obsolete the entries only the files of :data:`PENDING` still use; ``update``
here keeps them. ``tests/test_i18n_catalogue.py`` runs :func:`status` and fails on anything ``check`` reports.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from hookviz import i18n  # noqa: E402  (the package of this checkout)
from hookviz.i18n_extract import CONTEXT_NAME, extract_file, extract_notebook, literal_templates  # noqa: E402

LANGUAGE = "zh"
PO = ROOT / "hookviz" / i18n.catalogue_file(LANGUAGE)
LEGACY = ROOT / "hookviz" / f"i18n_{LANGUAGE}.py"
#: Where messages are looked for, besides the English notebooks.
SCRIPTS = ("scripts/make_zh.py",)
#: Files that are not sources of messages: the old catalogue (its keys are not messages) and the extractor.
NOT_SOURCES = ("hookviz/i18n_zh.py", "hookviz/i18n_extract.py")

#: Files whose messages do not all reach a call the extractor finds yet (a message built in a variable, a table of
#: messages, ``tr(f"...")`` around a value made elsewhere): their catalogue entries count as used when the file holds
#: the key's text anywhere. Each is to be refactored (``N_("...")`` where the message is made, ``tr`` where it is
#: shown) and then removed from here; ``tests/test_i18n_catalogue.py`` says which still rely on this.
PENDING: dict[str, str] = {
    # being rewritten or changed by others; scheduled after their work
    "hookviz/doctor.py": "the setup check (issue 48's files)",
    "hookviz/releases.py": "release differences (issue 48's files)",
    "hookviz/atlas.py": "the hook atlas (issue 48's files)",
    "hookviz/search.py": "hookviz.ask (issue 48's files)",
    "hookviz/widgets/ask.py": "the question box (issue 48's files)",
    "hookviz/widgets/monitor.py": "the training monitor (issue 48's files)",
    "hookviz/widgets/common.py": "the widgets' shared parts (issue 48's files)",
    "hookviz/llama.py": "the tiny Llama (issue 48's files)",
    "hookviz/guards.py": "argument checks (issue 48's files)",
    "hookviz/exercises/nb17.py": "notebook 17's checkers (being written)",
    # notes and captions still built in pieces (a prefix, a suffix added later) or kept in variables
    "hookviz/widgets/explorer.py": "the layer explorer's notes and captions (built in pieces)",
    "hookviz/widgets/attention.py": "the attention explorer's captions (built in pieces)",
    "hookviz/widgets/decoder_attention.py": "the decoder patterns' check notes ('<layer>: <note>')",
    "hookviz/render.py": "the pictures' captions (built in pieces)",
}
#: A ``.po`` entry whose English the extractor cannot find yet, because a file of :data:`PENDING` builds it in pieces,
#: carries a translator comment ``pending: <that file>``: kept (reported as pending, not stale) while the file is
#: listed there; ``check`` then fails on it, so the mark goes when the file's refactor is done.
PENDING_MARK = "pending: "


def _relative(path: Path) -> str:
    return path.resolve().relative_to(ROOT).as_posix()


def source_files() -> list[Path]:
    """Every file messages are extracted from: hookviz's modules, :data:`SCRIPTS`, the English notebooks."""
    modules = [p for p in sorted((ROOT / "hookviz").rglob("*.py")) if _relative(p) not in NOT_SOURCES]
    notebooks = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    return [*modules, *(ROOT / name for name in SCRIPTS), *notebooks]


def is_pending(relative: str) -> bool:
    """Whether a file (a path relative to the repository) is listed, or lies in a folder listed, in :data:`PENDING`."""
    return any(relative == name or relative.startswith(name.rstrip("/") + "/") for name in PENDING)


Key = tuple[str | None, str]  # (context, msgid)


def extracted() -> dict[Key, list[tuple[str, int]]]:
    """Every message the extractor finds: ``(context, key)`` → its ``(file, line)`` places (a notebook: cell)."""
    found: dict[Key, list[tuple[str, int]]] = defaultdict(list)
    for path in source_files():
        messages = extract_notebook(path) if path.suffix == ".ipynb" else extract_file(path)
        for message in messages:
            found[(message.context, message.key)].append((_relative(path), message.line))
    return dict(found)


class PendingStrings:
    """The strings of one file of :data:`PENDING`, as keys: a catalogue key is in use there when one of them is the
    key itself, or a more general form of it (``f"the {kind} hook {name} ..."`` makes ``"the tensor hook {} ..."``
    when ``kind`` is a word the code fills in from a table)."""

    def __init__(self, source: str) -> None:
        self.exact = literal_templates(source)
        self.patterns = []
        for key in self.exact:
            parts = key.replace("{{", "\0").replace("}}", "\1").split("{}")
            if len(parts) > 1 and sum(len(part) for part in parts) >= 12:
                literal = [re.escape(part.replace("\0", "{{").replace("\1", "}}")) for part in parts]
                self.patterns.append(re.compile("(?:.+?)".join(literal), re.DOTALL))

    def __contains__(self, key: str) -> bool:
        return key in self.exact or any(pattern.fullmatch(key) for pattern in self.patterns)


def pending_texts() -> dict[str, PendingStrings]:
    """For each file of :data:`PENDING`: its strings (see :class:`PendingStrings`)."""
    return {
        _relative(path): PendingStrings(path.read_text(encoding="utf-8"))
        for path in source_files()
        if path.suffix == ".py" and is_pending(_relative(path))
    }


@dataclass
class Entry:
    """One translation the package uses: where it comes from (``po`` or ``legacy``), its flags."""

    key: Key
    msgstr: str
    origin: str
    flags: frozenset[str] = frozenset()
    pending: str | None = None  # the file named by a "pending: <file>" translator comment


def entries(language: str = LANGUAGE) -> dict[Key, Entry]:
    """The catalogue as the package loads it: the ``.po`` file's entries (fuzzy and empty ones too, to report them),
    and those still in the old Python catalogue (they win)."""
    found: dict[Key, Entry] = {}
    po = ROOT / "hookviz" / i18n.catalogue_file(language)
    if po.exists():
        from babel.messages.pofile import read_po

        with po.open("rb") as file:
            comments = {
                (m.context, m.id): next((c[len(PENDING_MARK):].strip() for c in m.user_comments
                                         if c.startswith(PENDING_MARK)), None)
                for m in read_po(file) if m.id
            }
        for entry in i18n.read_po(po.read_text(encoding="utf-8"), str(po)):
            context = CONTEXT_NAME if entry.msgctxt == CONTEXT_NAME else entry.msgctxt
            key = (context, entry.msgid)
            found[key] = Entry(key, entry.msgstr, "po", entry.flags, comments.get(key))
    try:
        legacy = importlib.import_module(f"hookviz.i18n_{language}")
    except ModuleNotFoundError:
        legacy = None
    if legacy is not None:  # as hookviz.i18n loads it: entries still there win
        stored = set(getattr(legacy, "STORED_OUTPUTS", {}))
        for key, value in getattr(legacy, "MESSAGES", {}).items():
            flags = frozenset({i18n.STORED_OUTPUT_FLAG}) if key in stored else frozenset()
            found[(None, key)] = Entry((None, key), value, "legacy", flags)
        for key, value in getattr(legacy, "NAMES", {}).items():
            found[(CONTEXT_NAME, key)] = Entry((CONTEXT_NAME, key), value, "legacy")
    return found


@dataclass
class Status:
    """What ``check`` reports."""

    untranslated: dict[Key, list[tuple[str, int]]] = field(default_factory=dict)
    fuzzy: dict[Key, list[tuple[str, int]]] = field(default_factory=dict)
    stale: list[Key] = field(default_factory=list)
    #: file of PENDING → the catalogue entries only its loose strings keep in use
    pending: dict[str, list[Key]] = field(default_factory=dict)
    legacy: list[Key] = field(default_factory=list)
    translated: int = 0

    @property
    def ok(self) -> bool:
        return not (self.untranslated or self.fuzzy or self.stale)


def status(language: str = LANGUAGE) -> Status:
    """Compare what the code says with what the catalogue translates."""
    found = extracted()
    catalogue = entries(language)
    texts = pending_texts()
    result = Status()
    for key, places in found.items():
        entry = catalogue.get(key)
        if entry is None or not entry.msgstr:
            result.untranslated[key] = places
        elif "fuzzy" in entry.flags:
            result.fuzzy[key] = places
        else:
            result.translated += 1
    for key, entry in catalogue.items():
        if entry.origin == "legacy":
            result.legacy.append(key)
        if key in found or not entry.msgstr:
            continue
        users = [name for name, strings in texts.items() if key[1] in strings]
        if not users and entry.pending and is_pending(entry.pending):
            users = [entry.pending]
        if not users:
            result.stale.append(key)
        for name in users:
            result.pending.setdefault(name, []).append(key)
    return result


def report(result: Status, out=None) -> None:
    """Print :class:`Status` for people: counts, then each problem with its places."""
    out = out or sys.stdout

    def shown(key: Key) -> str:
        return (f"[{key[0]}] " if key[0] else "") + repr(key[1])

    print(
        f"{LANGUAGE} catalogue: {result.translated} messages translated, {len(result.untranslated)} untranslated, "
        f"{len(result.fuzzy)} fuzzy (English changed since the translation), {len(result.stale)} stale (the English "
        f"is gone from the code), {len(result.legacy)} still in hookviz/i18n_{LANGUAGE}.py",
        file=out,
    )
    for title, problems in (("untranslated", result.untranslated), ("fuzzy", result.fuzzy)):
        for key, places in sorted(problems.items(), key=lambda item: item[1][0]):
            where = ", ".join(f"{name}:{line}" for name, line in places[:3])
            print(f"  {title}: {where}: {shown(key)}", file=out)
    for key in sorted(result.stale, key=lambda k: k[1]):
        print(f"  stale: {shown(key)}", file=out)
    if result.pending:
        print("files still pending the f-string refactor (messages the extractor does not find):", file=out)
        for name, keys in sorted(result.pending.items()):
            print(f"  {name}: {len(keys)} catalogue entries found only as plain strings", file=out)


# --------------------------------------------------------------------------- writing the .po file (Babel)


def _babel_catalog(language: str):  # noqa: ANN202 - babel is imported here only (a development dependency)
    from babel.messages.catalog import Catalog

    return Catalog(
        locale="zh_Hans_CN" if language == "zh" else language,
        domain=i18n.DOMAIN,
        project="hookviz",
        version="",
        copyright_holder="the hookviz authors",
        msgid_bugs_address="https://github.com/hookviz/hookviz/issues",
        header_comment=(
            "# The Chinese (zh-Hans) catalogue of hookviz's learner-facing messages (hookviz.i18n).\n"
            "# Each msgid is an English message as the code writes it; {} stands for a computed part, and the\n"
            "# msgstr puts the values back in ({0}, {1}... to reorder them). Terms follow i18n/zh/glossary.md;\n"
            "# code (API names, expressions) stays as written. Update with `python scripts/i18n_catalog.py update`."
        ),
    )


def _flags(key: str, stored: bool) -> set[str]:
    flags = {"python-brace-format"} if "{}" in key or "{0}" in key else set()
    return flags | ({i18n.STORED_OUTPUT_FLAG} if stored else set())


def write(catalog, path: Path = PO) -> None:  # noqa: ANN001
    """Write a Babel catalogue as the ``.po`` file, wrapped at 116 columns, obsolete entries kept (``#~``); the header
    keeps the file's creation date (no change from one update to the next unless a message changed)."""
    from io import BytesIO

    from babel.messages.pofile import read_po, write_po

    if path.exists():
        with path.open("rb") as file:
            catalog.creation_date = read_po(file).creation_date
    catalog.revision_date = catalog.creation_date
    catalog.fuzzy = False
    catalog.last_translator = "the hookviz authors"
    catalog.language_team = "zh-Hans <https://github.com/hookviz/hookviz/issues>"

    buffer = BytesIO()
    write_po(buffer, catalog, width=116, sort_output=False, include_previous=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buffer.getvalue())


def template(language: str = LANGUAGE):  # noqa: ANN201
    """The messages of the code as a Babel catalogue (a ``.pot``): what the extractor finds, in source order, plus the
    entries only the files of :data:`PENDING` use (so that an update keeps them)."""
    catalog = _babel_catalog(language)
    found = extracted()
    known = entries(language)
    for (context, key), places in sorted(found.items(), key=lambda item: item[1][0]):
        stored = i18n.STORED_OUTPUT_FLAG in known.get((context, key), Entry((context, key), "", "")).flags
        catalog.add(key, locations=places, flags=_flags(key, stored), context=context)
    texts = pending_texts()
    for (context, key), entry in known.items():
        if (context, key) in found:
            continue
        users = sorted(name for name, strings in texts.items() if key in strings)
        if not users and entry.pending and is_pending(entry.pending):
            users = [entry.pending]
        if users:
            stored = i18n.STORED_OUTPUT_FLAG in entry.flags
            catalog.add(key, locations=[(name, 0) for name in users], flags=_flags(key, stored), context=context)
    return catalog


def update(language: str = LANGUAGE) -> None:
    """Merge the code's messages into the ``.po`` file (Babel's ``Catalog.update``): translations kept, new
    messages added empty, a changed message fuzzy with its old translation, a vanished one obsolete."""
    from babel.messages.pofile import read_po

    path = ROOT / "hookviz" / i18n.catalogue_file(language)
    with path.open("rb") as file:
        catalog = read_po(file, locale="zh_Hans_CN" if language == "zh" else language)
    catalog.update(template(language), update_header_comment=False)
    write(catalog, path)


def _block_keys(marker: str) -> tuple[str, set[tuple[str | None, str]]]:
    """The text of the old catalogue from the line starting with ``marker`` on, and the keys that text defines."""
    text = LEGACY.read_text(encoding="utf-8")
    start = next((i for i, line in enumerate(text.splitlines(keepends=True)) if line.startswith(marker)), None)
    if start is None:
        return "", set()
    block = "".join(text.splitlines(keepends=True)[start:])
    space: dict[str, dict[str, str]] = {"MESSAGES": {}, "NAMES": {}, "STORED_OUTPUTS": {}}
    exec(compile("from __future__ import annotations\n" + block, str(LEGACY), "exec"), space)  # noqa: S102 - our file
    keys = {(None, key) for key in [*space["MESSAGES"], *space["STORED_OUTPUTS"]]}
    return block, keys | {(CONTEXT_NAME, key) for key in space["NAMES"]}


def convert(language: str = LANGUAGE, clear_legacy: bool = False, keep_from: str | None = None) -> int:
    """Write every entry of the old Python catalogue into the ``.po`` file (in the order of the code), and return how
    many were moved. The old catalogue wins where both have an entry (it is where work was in progress). With
    ``clear_legacy``, ``hookviz/i18n_zh.py`` is emptied; with ``keep_from``, the block that starts at the line
    beginning with that text is neither moved nor removed (someone is still writing it)."""
    from babel.messages.pofile import read_po

    path = ROOT / "hookviz" / i18n.catalogue_file(language)
    block, kept = _block_keys(keep_from) if keep_from else ("", set())
    catalog = template(language)
    known = entries(language)
    existing = {}
    if path.exists():
        with path.open("rb") as file:
            existing = {(m.context, m.id): m for m in read_po(file) if m.id}
    moved = 0
    for key, entry in known.items():
        old = existing.get(key)
        if key in kept and old is None:
            if catalog.get(key[1], context=key[0]) is not None:
                catalog.delete(key[1], context=key[0])  # left to the block, which the loader merges
            continue
        message = catalog.get(key[1], context=key[0])
        if message is None:  # not in use: kept, without a place, so that `check` reports it as stale
            message = catalog.add(key[1], flags=_flags(key[1], i18n.STORED_OUTPUT_FLAG in entry.flags), context=key[0])
        if old is not None:
            message.flags |= old.flags
            message.user_comments = old.user_comments
        message.string = entry.msgstr if entry.origin == "legacy" or old is None else old.string
        if entry.origin == "legacy" and key not in kept:
            moved += 1
            message.flags.discard("fuzzy")
    write(catalog, path)
    if clear_legacy:
        LEGACY.write_text(LEGACY_STUB + ("\n" + block if block else ""), encoding="utf-8")
    return moved


LEGACY_STUB = '''# ruff: noqa: E501 (a message and its translation stay on one line where they fit)
"""The old Python catalogue of hookviz's Chinese messages: empty, kept for a while so that work in progress that adds
entries here is not lost. :mod:`hookviz.i18n` merges whatever is listed here into the gettext catalogue
(``hookviz/locale/zh/LC_MESSAGES/hookviz.po``; an entry here wins); ``python scripts/i18n_catalog.py convert
--clear-legacy`` moves it into the ``.po`` file. New translations go into the ``.po`` file directly.
"""

from __future__ import annotations

MESSAGES: dict[str, str] = {}
NAMES: dict[str, str] = {}
STORED_OUTPUTS: dict[str, str] = {}
'''


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("check", "update", "convert"))
    parser.add_argument("--clear-legacy", action="store_true", help="with convert: empty hookviz/i18n_zh.py after")
    parser.add_argument("--keep-from", help="with convert: leave the block starting at this line in i18n_zh.py")
    args = parser.parse_args(argv)
    if args.command == "update":
        update()
    elif args.command == "convert":
        moved = convert(clear_legacy=args.clear_legacy, keep_from=args.keep_from)
        print(f"moved {moved} entries from hookviz/i18n_{LANGUAGE}.py into {PO.relative_to(ROOT)}")
    result = status()
    report(result)
    return 0 if result.ok or args.command != "check" else 1


if __name__ == "__main__":
    sys.exit(main())
