"""The gettext catalogue cannot drift from the code: every message has a current translation, every translation an
English source that still exists, and the package reads the ``.po`` file exactly as Babel (translators' tools) does.

The messages are what :mod:`hookviz.i18n_extract` finds (``scripts/i18n_catalog.py`` runs it over ``hookviz/``,
``scripts/make_zh.py`` and the English notebooks' code cells). Files listed in ``i18n_catalog.PENDING`` still build
some messages in pieces; their entries are kept and listed (``python scripts/i18n_catalog.py check``), never
silently: a file leaves the list when its refactor is done, and the test then holds it to the same rule.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import re
import string
import sys
from pathlib import Path

import pytest

from hookviz import i18n
from hookviz.i18n_extract import extract, extract_file, template

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("i18n_catalog", ROOT / "scripts" / "i18n_catalog.py")
i18n_catalog = importlib.util.module_from_spec(spec)
sys.modules["i18n_catalog"] = i18n_catalog  # dataclasses look their module up there
spec.loader.exec_module(i18n_catalog)

babel = pytest.importorskip("babel", reason="Babel is a development dependency (pip install Babel)")


@pytest.fixture(scope="module")
def status() -> i18n_catalog.Status:
    return i18n_catalog.status()


def _where(places: list[tuple[str, int]]) -> str:
    return ", ".join(f"{name}:{line}" for name, line in places[:3])


def test_every_message_has_a_current_translation(status: i18n_catalog.Status) -> None:
    """A message the code shows (a checker's verdict, a widget's label, a label a notebook prints) without a Chinese
    entry, or whose entry is marked fuzzy (its English changed since it was translated), fails here with its place.
    The files still being changed by others (PENDING) are listed, not failed."""
    problems = [
        f"{kind}: {_where(places)}: {key[1]!r}"
        for kind, table in (("untranslated", status.untranslated), ("fuzzy", status.fuzzy))
        for key, places in table.items()
        if not all(i18n_catalog.is_pending(name) for name, _ in places)
    ]
    assert not problems, "messages without a current translation (python scripts/i18n_catalog.py update):\n" + (
        "\n".join(problems)
    )


def test_no_translation_outlives_its_english(status: i18n_catalog.Status) -> None:
    """An entry whose English the code no longer says (the message was reworded or removed) fails here: reworded, it
    would silently fall back to English. Entries still in the old hookviz/i18n_zh.py are someone's work in progress
    and are listed instead, until ``i18n_catalog.py convert --clear-legacy`` moves them."""
    legacy = set(status.legacy)
    stale = [key for key in status.stale if key not in legacy]
    assert not stale, "translations of English the code no longer has:\n" + "\n".join(repr(k[1]) for k in stale)


def test_pending_files_still_need_the_allowance(status: i18n_catalog.Status) -> None:
    """A file listed in PENDING whose entries the extractor now all finds leaves the list (then the two tests above
    hold it to the full rule); every pending mark in the .po names a listed file."""
    listed = set(i18n_catalog.PENDING)
    used = {name for name in status.pending}
    unused = [name for name in listed if not any(u == name or u.startswith(name.rstrip("/") + "/") for u in used)]
    assert not unused, f"remove from i18n_catalog.PENDING, nothing there needs it any more: {unused}"
    marks = [e.pending for e in i18n_catalog.entries().values() if e.pending]
    assert all(i18n_catalog.is_pending(mark) for mark in marks), [m for m in marks if not i18n_catalog.is_pending(m)]


def test_the_files_still_pending_are_reported(status: i18n_catalog.Status, capsys: pytest.CaptureFixture) -> None:
    with capsys.disabled():
        print("\nfiles pending the f-string refactor:", ", ".join(sorted(status.pending)) or "none")
    assert status.translated > 1000


def test_the_package_reads_the_po_file_as_babel_does() -> None:
    from babel.messages.pofile import read_po

    path = ROOT / "hookviz" / i18n.catalogue_file("zh")
    formats = {"python-format", "python-brace-format"}  # Babel sets these itself from the msgid

    with path.open("rb") as file:
        ours = {(m.context, m.id): (m.string, frozenset(m.flags) - formats) for m in read_po(file) if m.id}
    mine = {
        (e.msgctxt, e.msgid): (e.msgstr, e.flags - formats) for e in i18n.read_po(path.read_text(encoding="utf-8"))
    }
    assert mine == ours


def test_the_catalogue_ships_with_the_package() -> None:
    """A pip install (Colab) gets the .po file as package data; nothing needs compiling."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"locale/*/LC_MESSAGES/*.po"' in text
    assert i18n.catalogue("zh").messages["Train"] == "训练"


def test_each_placeholder_survives_translation() -> None:
    table = i18n.catalogue("zh").messages
    for key, value in table.items():
        fields = [f for _, f, _, _ in string.Formatter().parse(key) if f is not None]
        got = [f for _, f, _, _ in string.Formatter().parse(value) if f is not None]
        if all(f == "" for f in got):
            assert len(got) == len(fields), key
        else:
            assert sorted(int(f) for f in got) == list(range(len(fields))), key


def test_the_extractor_reads_f_strings_and_babel_uses_it() -> None:
    code = (
        'tr(f"ran {n} times")\n'
        'passed("done")\n'
        'expect(ok, "x " + f"{y} left")\n'
        'N_("`{}` returned None")\n'
        'N_name("the tiny transformer")\n'
        'tr("alpha" if c else "beta")\n'
        'print("not a message")\n'
    )
    found = [(line, call, messages) for line, call, messages, _ in extract(io.BytesIO(code.encode()), {}, [], {})]
    assert found == [
        (1, None, "ran {} times"),
        (2, None, "done"),
        (3, None, "x {} left"),
        (4, None, "`{}` returned None"),
        (5, "pgettext", ("name", "the tiny transformer")),
        (6, None, "alpha"),
        (6, None, "beta"),
    ]
    assert template(ast.parse('"{literal} {}"', mode="eval").body) == ["{{literal}} {}"]


def test_babel_cfg_names_the_extractor() -> None:
    text = (ROOT / "babel.cfg").read_text(encoding="utf-8")
    assert "hookviz.i18n_extract:extract" in text and "notebooks/" in text


def test_no_import_circle_between_the_language_layer_and_the_pictures() -> None:
    """hookviz.i18n imports nothing from hookviz; the pictures follow the language through on_language_change."""
    tree = ast.parse((ROOT / "hookviz" / "i18n.py").read_text(encoding="utf-8"))
    imported = [
        node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
    ] + [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    assert not [name for name in imported if name.startswith("hookviz")], imported
    assert not re.search(r"import_module\(\s*\"hookviz\.render", (ROOT / "hookviz" / "i18n.py").read_text())


def test_checker_messages_of_notebook_14_are_chinese() -> None:
    """The review's first finding: notebook 14's verdicts were reworded in English and fell back to English."""
    found = {f.key for f in extract_file(ROOT / "hookviz" / "exercises" / "nb14.py")}
    table = i18n.catalogue("zh").messages
    missing = sorted(key for key in found if key not in table)
    assert not missing, missing
