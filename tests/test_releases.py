"""The declared range of PyTorch releases (hookviz.releases): where it is stated, the tables of behaviours that
differ between releases, ``expect_error``, and the Colab-true pins (scripts/colab_pins.py)."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

import pytest

from hookviz import atlas, releases

ROOT = Path(__file__).resolve().parents[1]
PINS = importlib.util.spec_from_file_location("colab_pins", ROOT / "scripts" / "colab_pins.py")
colab_pins = importlib.util.module_from_spec(PINS)
PINS.loader.exec_module(colab_pins)


def test_the_range_is_the_same_in_pyproject_the_module_the_makefile_and_ci():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    declared = project["tool"]["hookviz"]
    assert declared["supported-torch"] == f">={releases.OLDEST},<2.{releases.minor(releases.NEWEST)[1] + 1}"
    assert declared["tested-torch"] == list(releases.TESTED)
    assert f"torch=={releases.PINNED}" in project["project"]["dependencies"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    tested = list(releases.TESTED)
    assert f"OLDEST_TORCH := {tested[0]}" in makefile and f"NEWEST_TORCH := {tested[-1]}" in makefile
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "make test-colab" in ci and "make test-releases" in ci
    assert colab_pins.read_pins()["torch"] in releases.TESTED  # Colab's torch is one of the tested releases


def test_every_minor_release_of_the_range_has_a_stored_atlas():
    assert atlas.stored_versions() == list(releases.SNAPSHOT_RELEASES)
    minors = [releases.minor(v) for v in releases.SNAPSHOT_RELEASES]
    assert minors == [(2, m) for m in range(releases.minor(releases.OLDEST)[1], releases.minor(releases.NEWEST)[1] + 1)]
    assert set(releases.TESTED) <= set(releases.SNAPSHOT_RELEASES)


def test_minor_and_range():
    assert releases.minor("2.11.0+cu130") == (2, 11) and releases.minor("2.8") == (2, 8)
    assert releases.in_range("2.8.0") and releases.in_range("2.14.1")
    assert not releases.in_range("2.7.1") and not releases.in_range("2.15.0")
    with pytest.raises(ValueError, match="not a torch release"):
        releases.minor("nightly")


def test_a_difference_gives_each_release_its_row_and_prints_the_same_table_everywhere():
    difference = releases.Difference(
        "demo", "04_backward_hooks#pitfall-bare-tensor", "What happens?",
        (("2.8", "old", 1), ("2.11", "middle", 2), ("2.14", "new", 3)),
    )
    assert [difference.value(v) for v in ("2.8.0", "2.10.0", "2.11.0", "2.13.0", "2.14.1")] == [1, 1, 2, 2, 3]
    assert difference.table() == (
        "What happens?\n  torch 2.8-2.10  old\n  torch 2.11-2.13 middle\n  torch 2.14      new"
    )


def test_differences_are_checked_when_recorded():
    with pytest.raises(ValueError, match="oldest supported release"):
        releases.differ("late-start", "x#y", "?", ("2.9", "a", 1))
    key = next(iter(releases.DIFFERENCES))
    with pytest.raises(ValueError, match="recorded twice"):
        releases.differ(key, "x#y", "?", ("2.8", "a", 1))
    with pytest.raises(KeyError, match="no release difference 'nope'"):
        releases.expected("nope")


def test_show_prints_the_table_and_returns_the_running_row(capsys):
    key = "backward-pre-hook-doc-bare-tensor"
    value = releases.show(key)
    assert capsys.readouterr().out == releases.DIFFERENCES[key].table() + "\n"
    assert value == releases.DIFFERENCES[key].value()


@pytest.mark.parametrize("difference", list(releases.DIFFERENCES.values()), ids=lambda d: d.key)
def test_every_difference_links_to_a_section_that_exists_and_uses_it(difference):
    name, anchor = difference.section.split("#")
    text = (ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8")
    assert f'<a id=\\"{anchor}\\"></a>' in text, f"{difference.section}: no such anchor"
    assert f'\\"{difference.key}\\"' in text, f"{name} never shows the table {difference.key!r}"
    assert [row[0] for row in difference.rows] == sorted((row[0] for row in difference.rows), key=releases.minor)


def test_expect_error_shows_only_the_fragment(capsys):
    with releases.expect_error(RuntimeError, "is a view"):
        raise RuntimeError("Output 0 of SomeNodeName is a view and is being modified inplace")
    assert capsys.readouterr().out == "RuntimeError: ...is a view...\n"


def test_expect_error_fails_clearly_when_the_block_does_not_raise_as_expected():
    with pytest.raises(AssertionError, match="raised nothing"):
        with releases.expect_error(RuntimeError, "is a view"):
            pass
    with pytest.raises(AssertionError, match="lacks 'is a view'"):
        with releases.expect_error(RuntimeError, "is a view"):
            raise RuntimeError("something else")
    with pytest.raises(TypeError):
        with releases.expect_error(RuntimeError, "is a view"):
            raise TypeError("another kind")


# --------------------------------------------------------------------------------------------- Colab pins
FREEZE = """\
# a comment
anywidget==0.9.21
ipykernel==6.17.1
ipython==7.34.0
ipywidgets==7.7.1
matplotlib==3.10.1
notebook==6.5.7
numpy==2.1.3
torch @ https://download.pytorch.org/whl/cpu/torch-2.12.0%2Bcpu-cp313-cp313-linux_x86_64.whl#sha256=ab
transformers==5.15.0
"""


def test_the_pins_file_names_its_source_and_date():
    text = colab_pins.PINS_FILE.read_text(encoding="utf-8")
    assert "googlecolab/backend-info" in text and "pip-freeze.txt" in text
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", colab_pins.pins_date())
    assert colab_pins.read_pins()["torch"] == "2.11.0"


def test_a_freeze_list_is_read_in_both_of_its_forms():
    found = colab_pins.parse_freeze(FREEZE + "torchvision==0.26.0+cpu\nJinja2==3.1.2\n")
    assert found["torch"] == "2.12.0" and found["torchvision"] == "0.26.0" and found["jinja2"] == "3.1.2"


def test_refresh_rewrites_versions_and_date_only(tmp_path):
    pins = tmp_path / "pins.txt"
    pins.write_text(colab_pins.PINS_FILE.read_text(encoding="utf-8"), encoding="utf-8")
    changes = colab_pins.refresh(FREEZE, "2026-10-01", pins)
    assert changes == ["torch 2.11.0 -> 2.12.0", "matplotlib 3.10.0 -> 3.10.1"]
    assert colab_pins.read_pins(pins)["torch"] == "2.12.0" and colab_pins.pins_date(pins) == "2026-10-01"
    with pytest.raises(ValueError, match="the list has no numpy"):
        colab_pins.refresh(FREEZE.replace("numpy==2.1.3\n", ""), "2026-10-02", pins)
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        colab_pins.refresh(FREEZE, "yesterday", pins)


def test_check_env_names_each_drifted_package():
    found = colab_pins.problems({"torch": "0.0.1", "surely-not-installed-package": "1.0"})
    assert any(line.startswith("torch ") and "Colab has 0.0.1" in line for line in found)
    assert "surely-not-installed-package none is installed, Colab has 1.0" in found


def test_both_readmes_show_the_current_release_table():
    spec = importlib.util.spec_from_file_location("release_table", ROOT / "scripts" / "release_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0, "run: python scripts/release_table.py"
    for difference in releases.DIFFERENCES.values():
        name, anchor = difference.section.split("#")
        assert f"(notebooks/{name}.ipynb#{anchor})" in (ROOT / "README.md").read_text(encoding="utf-8")
        assert f"(notebooks/zh/{name}.ipynb#{anchor})" in (ROOT / "README.zh.md").read_text(encoding="utf-8")


def test_the_atlas_table_shows_a_run_of_consecutive_releases_as_a_span():
    stored = atlas.stored_versions()
    assert atlas.version_span(stored) == f"{stored[0]}–{stored[-1]}"
    assert atlas.version_span([stored[0], stored[2], stored[3]]) == ", ".join([stored[0], stored[2], stored[3]])
    assert atlas.version_span(["1.0", "9.9.9"]) == "1.0, 9.9.9"


# --------------------------------------------------------------------------------------------- issue 48: bad input
@pytest.mark.parametrize("call", [lambda: releases.minor(2.10), lambda: releases.in_range(2.10),
                                  lambda: releases.expected("backward-pre-hook-doc-bare-tensor", 2.10)])
def test_a_version_given_as_a_number_is_refused_not_misread(call):
    """Defect 8: the float 2.10 is 2.1; it was read as release 2.1 (and 2.13 as 2.13): a number is refused."""
    with pytest.raises(TypeError, match=r"version must be a string such as '2\.10'.*not 2\.1\b"):
        call()


@pytest.mark.parametrize("text", ["2.-1", "2.x", "-2.10", "2", ""])
def test_a_version_whose_parts_are_not_numbers_is_refused(text):
    with pytest.raises(ValueError, match="not a torch release"):
        releases.minor(text)


def test_expected_refuses_a_release_outside_the_range_instead_of_answering_the_oldest_row():
    key = "backward-pre-hook-doc-bare-tensor"
    with pytest.raises(ValueError, match=r"torch 1\.0 is outside the releases the course measured \(2\.8 to 2\.14\)"):
        releases.expected(key, "1.0")
    assert releases.expected(key, "2.10") == releases.DIFFERENCES[key].value("2.10.0")


@pytest.mark.parametrize(
    ("kind", "fragment", "words"),
    [
        ("ValueError", "bad", ["kind must be an exception class", "'ValueError'", "expect_error(ValueError, 'bad')"]),
        (ValueError, None, ["fragment must be a string", "None"]),
        (3, "bad", ["kind must be an exception class", "3"]),
        (int, "bad", ["kind must be an exception class", "int"]),
    ],
)
def test_expect_error_refuses_a_misused_call_before_the_block_runs(kind, fragment, words):
    """Defect 17: a string kind or a missing fragment is said at once, and the block does not run."""
    ran = []
    with pytest.raises(TypeError) as info:
        with releases.expect_error(kind, fragment):
            ran.append(True)
    assert not ran
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_expect_error_takes_a_tuple_of_kinds(capsys):
    with releases.expect_error((ValueError, TypeError), "bad"):
        raise TypeError("bad thing")
    assert capsys.readouterr().out == "TypeError: ...bad...\n"
