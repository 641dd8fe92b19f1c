"""A `pytest` run that checked nothing must not look green: the run guard.

Every run of the course's tests (plain ``pytest --nbval``, the Makefile targets, CI) goes through this
plugin, which the root ``conftest.py`` registers. At the end of the run it

- groups every skipped test by its reason and looks the reason up in :data:`ALLOWED_SKIPS`, the short
  list of parts that may be missing on a learner's machine (no Chromium for the browser tests, no
  JupyterHub venvs, an opt-in slow run, ...), each with the command that enables it;
- fails the run (exit status 1) when a test was skipped for a reason that is not on that list, when a
  group that the environment variable ``HOOKVIZ_REQUIRE`` names was skipped (CI requires them all), or
  when the run collected notebook cells and a notebook had none of its cells executed;
- prints a short summary of what ran and what did not, and, when ``HOOKVIZ_RUN_REPORT`` names a file,
  writes the same facts there as JSON (``scripts/test_summary.py`` prints them for every stage of
  ``make test``).

Under ``pytest-xdist`` only the controller judges: it receives every worker's reports.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class SkipGroup:
    """A part of the test suite that may be missing on a user's machine, and how to enable it."""

    name: str
    pattern: str  # a regular expression searched in the skip reason
    what: str
    enable: str
    opt_in: bool = False  # skipped unless asked for, on every machine (CI too)


#: The only reasons for which a test may be skipped without failing the run.
ALLOWED_SKIPS: tuple[SkipGroup, ...] = (
    SkipGroup(
        "browser",
        r"Chromium not found at|playwright package is missing|needs Chromium to print",
        "browser tests (JupyterLab in headless Chromium) and the printout checks",
        "apt-get install chromium (Debian/Ubuntu), then `make test-browser`",
    ),
    SkipGroup(
        "hub",
        r"hub packages missing",
        "the JupyterHub rehearsal",
        "`make hub-env`, then `make test-hub`",
    ),
    SkipGroup(
        "repo2docker",
        r"repo2docker not installed",
        "the check that Binder's repo2docker detects binder/",
        "`make test-course` (installs repo2docker in .venv/repo2docker), or set REPO2DOCKER=/path/to/repo2docker",
    ),
    SkipGroup(
        "rattler",
        r"py-rattler not installed",
        "conda's own parse of environment.yml and binder/environment.yml",
        "pip install py-rattler (part of `pip install -e '.[test]'`)",
    ),
    SkipGroup(
        "articles",
        r"the two articles are not in shared/articles/",
        "the check that no translation quotes the two reviewed articles",
        "put hooks_article_A_*.txt and _B_ in shared/articles/ or set HOOKVIZ_ARTICLES_DIR",
    ),
    SkipGroup(
        "tools",
        r"needs git and make|make is not installed|^no git$|^no bash$",
        "tests that drive git, make or bash",
        "install git, make and bash",
    ),
    SkipGroup(
        "per-exercise",
        r"set HOOKVIZ_PER_EXERCISE=1",
        "the slow run of each student notebook with one exercise left unsolved",
        "HOOKVIZ_PER_EXERCISE=1 pytest tests/test_student.py",
        opt_in=True,
    ),
)

NOTEBOOK_ITEM = re.compile(r"^(?P<notebook>.+?\.ipynb)::")


def skip_reason(report: pytest.TestReport) -> str:
    """The reason text of a skipped report, without pytest's ``Skipped: `` prefix."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        text = str(longrepr[2])
    else:
        text = str(longrepr)
    return text.removeprefix("Skipped: ").strip()


def group_of(reason: str) -> SkipGroup | None:
    """The allowed group a skip reason belongs to, or None when it is not allowed."""
    return next((g for g in ALLOWED_SKIPS if re.search(g.pattern, reason)), None)


def required_groups(value: str | None) -> set[str]:
    """The group names ``HOOKVIZ_REQUIRE`` makes mandatory.

    A comma-separated list of group names; ``all`` stands for every group that is not opt-in, and
    ``-name`` takes a group out again (``all,-browser``: everything but the browser tests).
    """
    parts = [part.strip() for part in (value or "").split(",") if part.strip()]
    dropped = {part[1:] for part in parts if part.startswith("-")}
    names = {part for part in parts if not part.startswith("-")}
    if "all" in names:
        names = (names - {"all"}) | {g.name for g in ALLOWED_SKIPS if not g.opt_in}
    unknown = (names | dropped) - {g.name for g in ALLOWED_SKIPS}
    if unknown:
        raise pytest.UsageError(
            f"HOOKVIZ_REQUIRE names unknown groups {sorted(unknown)}; known: {[g.name for g in ALLOWED_SKIPS]}"
        )
    return names - dropped


class RunGuard:
    """Collects every test report of a run and fails the run when it checked less than it claims."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.outcomes: Counter[str] = Counter()
        self.skips: dict[str, list[str]] = {}  # reason -> node ids
        self.notebooks: set[str] = set()
        self.executed_notebooks: set[str] = set()
        self.required = required_groups(os.environ.get("HOOKVIZ_REQUIRE"))
        self.problems: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Count the outcome of each test once (its call, or the setup/teardown that decided it)."""
        match = NOTEBOOK_ITEM.match(report.nodeid)
        if match:
            self.notebooks.add(match["notebook"])
        if report.skipped and not hasattr(report, "wasxfail"):
            self.skips.setdefault(skip_reason(report), []).append(report.nodeid)
            self.outcomes["skipped"] += 1
        elif report.when == "call":
            self.outcomes["passed" if report.passed else "failed"] += 1
            if match:
                self.executed_notebooks.add(match["notebook"])
        elif report.failed:
            self.outcomes["error"] += 1

    def judge(self) -> list[str]:
        """What is wrong with this run: one line each (empty when nothing is)."""
        problems = []
        for reason, nodes in sorted(self.skips.items()):
            group = group_of(reason)
            if group is None:
                problems.append(
                    f"{len(nodes)} test(s) skipped for a reason that is not allowed: {reason!r} "
                    f"(e.g. {nodes[0]}). Allowed skips are listed in tests/run_guard.py (ALLOWED_SKIPS)."
                )
            elif group.name in self.required:
                problems.append(
                    f"{len(nodes)} test(s) of the required group {group.name!r} skipped: {reason!r} "
                    f"(HOOKVIZ_REQUIRE asks for it). To enable it: {group.enable}"
                )
        hollow = sorted(self.notebooks - self.executed_notebooks)
        if hollow:
            problems.append(
                f"{len(hollow)} notebook(s) collected but none of their cells ran: {', '.join(hollow)}"
            )
        return problems

    def summary(self) -> dict:
        """The run's counts, skipped groups (with the command that enables each) and problems."""
        groups: dict[str, dict] = {}
        for reason, nodes in self.skips.items():
            group = group_of(reason)
            key = group.name if group else "not allowed"
            entry = groups.setdefault(
                key,
                {"what": group.what if group else "", "enable": group.enable if group else "", "count": 0,
                 "reasons": []},
            )
            entry["count"] += len(nodes)
            entry["reasons"].append(reason)
        return {
            "stage": os.environ.get("HOOKVIZ_STAGE", ""),
            "counts": dict(self.outcomes),
            "notebooks_collected": len(self.notebooks),
            "notebooks_executed": len(self.executed_notebooks),
            "skipped_groups": groups,
            "problems": self.problems,
        }

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Judge the run; a hollow or wrongly skipped run exits 1 even when every test that ran passed."""
        if hasattr(self.config, "workerinput"):  # an xdist worker: the controller judges
            return
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            return
        self.problems = self.judge()
        if self.problems and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        path = os.environ.get("HOOKVIZ_RUN_REPORT")
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(json.dumps(self.summary(), indent=1), encoding="utf-8")

    def pytest_terminal_summary(self, terminalreporter, exitstatus: int, config: pytest.Config) -> None:
        """Print which parts were skipped and why, and the guard's verdict."""
        if hasattr(self.config, "workerinput"):
            return
        write = terminalreporter.write_line
        if self.skips:
            terminalreporter.section("what did not run")
            for name, entry in sorted(self.summary()["skipped_groups"].items()):
                reasons = "; ".join(sorted(set(entry["reasons"])))
                if name == "not allowed":
                    write(f"NOT ALLOWED: {entry['count']} skipped: {reasons}")
                else:
                    write(f"{entry['what']}: {entry['count']} skipped ({reasons}) - to enable: {entry['enable']}")
        if self.problems:
            terminalreporter.section("run guard: this run does not count", red=True, bold=True)
            for line in self.problems:
                write("FAILED " + line, red=True)


def register(config: pytest.Config) -> None:
    """Install the guard on this run (called from the root conftest.py)."""
    if not config.pluginmanager.has_plugin("hookviz-run-guard"):
        config.pluginmanager.register(RunGuard(config), "hookviz-run-guard")
