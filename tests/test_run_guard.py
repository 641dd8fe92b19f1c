"""The run guard (tests/run_guard.py): a run that checked nothing fails, and says why.

Each test starts a real pytest run from the repository root in a subprocess, as a user would type it,
on a small part of the suite (one unit-test file and one notebook), with a tiny plugin that injects the
situation under test: a session-wide skip, an allowed skip, a missing Chromium.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from notebook_tools import REPO

SMALL_RUN = ["--nbval", "tests/test_catalogue.py", "notebooks/00_start_here.ipynb"]


def run_pytest(tmp_path: Path, *args: str, plugin: str | None = None, **env: str) -> subprocess.CompletedProcess:
    """Run pytest from the repository root with an optional injected plugin; return the finished process."""
    extra = []
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("HOOKVIZ_REQUIRE", "PYTEST_XDIST"))}
    environ.pop("HOOKVIZ_RUN_REPORT", None)
    if plugin is not None:
        (tmp_path / "injected_plugin.py").write_text(textwrap.dedent(plugin))
        environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), environ.get("PYTHONPATH")]))
        extra = ["-p", "injected_plugin"]
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *extra, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env=environ,
    )


SKIP_EVERYTHING = """
    import pytest

    def pytest_collection_modifyitems(config, items):
        for item in items:
            item.add_marker(pytest.mark.skip(reason="{reason}"))
"""


def test_an_injected_session_wide_skip_fails_the_run_and_names_the_reason(tmp_path):
    done = run_pytest(tmp_path, *SMALL_RUN, plugin=SKIP_EVERYTHING.format(reason="database is down"))
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-3000:]
    assert "run guard: this run does not count" in out
    assert "skipped for a reason that is not allowed: 'database is down'" in out
    assert "none of their cells ran: notebooks/00_start_here.ipynb" in out


def test_an_allowed_reason_does_not_excuse_a_notebook_that_never_ran(tmp_path):
    reason = "Chromium not found at /usr/bin/chromium (install Debian's chromium: apt-get install chromium)"
    done = run_pytest(tmp_path, *SMALL_RUN, plugin=SKIP_EVERYTHING.format(reason=reason))
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-3000:]
    assert "not allowed" not in out.split("run guard:")[-1]
    assert "1 notebook(s) collected but none of their cells ran: notebooks/00_start_here.ipynb" in out


SKIP_ONE_UNIT_TEST = """
    import pytest

    def pytest_collection_modifyitems(config, items):
        for item in items:
            if item.nodeid.startswith("tests/test_catalogue.py"):
                item.add_marker(pytest.mark.skip(reason="{reason}"))
"""


def test_an_allowed_skip_passes_prints_how_to_enable_it_and_is_reported(tmp_path):
    report = tmp_path / "report.json"
    plugin = SKIP_ONE_UNIT_TEST.format(reason="hub packages missing: jupyterhub")
    done = run_pytest(
        tmp_path, *SMALL_RUN, plugin=plugin, HOOKVIZ_RUN_REPORT=str(report), HOOKVIZ_STAGE="probe"
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    assert "what did not run" in out and "to enable: `make hub-env`" in out
    summary = json.loads(report.read_text())
    assert summary["stage"] == "probe"
    assert summary["counts"]["skipped"] > 0 and summary["counts"]["passed"] > 0
    assert summary["notebooks_collected"] == summary["notebooks_executed"] == 1
    assert list(summary["skipped_groups"]) == ["hub"] and summary["problems"] == []


def test_hookviz_require_turns_an_allowed_skip_into_a_failure(tmp_path):
    plugin = SKIP_ONE_UNIT_TEST.format(reason="hub packages missing: jupyterhub")
    done = run_pytest(tmp_path, "tests/test_catalogue.py", plugin=plugin, HOOKVIZ_REQUIRE="hub")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-3000:]
    assert "of the required group 'hub' skipped" in out and "make hub-env" in out


def test_hookviz_require_rejects_an_unknown_group(tmp_path):
    done = run_pytest(tmp_path, "tests/test_catalogue.py", "--collect-only", HOOKVIZ_REQUIRE="brwoser")
    assert done.returncode != 0
    assert "HOOKVIZ_REQUIRE names unknown groups ['brwoser']" in done.stdout + done.stderr


def test_a_missing_chromium_skips_the_browser_tests_only(tmp_path):
    """The bug this guard was written for: the browser folder's skip used to reach every collected test."""
    done = run_pytest(
        tmp_path,
        "-m",
        "browser or not browser",
        "-rs",
        "tests/browser",
        "tests/test_catalogue.py",
        HOOKVIZ_CHROMIUM=str(tmp_path / "no-chromium-here"),
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    browser_skips = [line for line in out.splitlines() if line.startswith("SKIPPED") and "Chromium not found" in line]
    assert browser_skips, out[-3000:]
    assert all("tests/browser/" in line for line in browser_skips)
    assert " passed" in out and "test_catalogue" not in "\n".join(browser_skips)


@pytest.mark.parametrize(
    ("reason", "group"),
    [
        ("Chromium not found at /usr/bin/chromium (install Debian's chromium: apt-get install chromium)", "browser"),
        ("needs Chromium to print", "browser"),
        ("hub packages missing: jupyterhub", "hub"),
        ("repo2docker not installed (optional; set REPO2DOCKER)", "repo2docker"),
        ("set HOOKVIZ_PER_EXERCISE=1 (slow)", "per-exercise"),
        ("the two articles are not in shared/articles/, in or next to this checkout", "articles"),
        ("no exercises", None),
        ("Chromium could not print", None),
        ("", None),
    ],
)
def test_the_allow_list(reason, group):
    run_guard = sys.modules["hookviz_run_guard"]  # loaded once, by the root conftest.py
    found = run_guard.group_of(reason)
    assert (found.name if found else None) == group


def test_require_all_but_one_group():
    run_guard = sys.modules["hookviz_run_guard"]
    everything = {g.name for g in run_guard.ALLOWED_SKIPS if not g.opt_in}
    assert run_guard.required_groups("all") == everything
    assert run_guard.required_groups("all,-browser") == everything - {"browser"}
    assert run_guard.required_groups("") == set()
    assert "per-exercise" not in everything  # opt-in runs stay opt-in, in CI too
