"""How `pytest --nbval` checks the course, in one place, whichever way it is started.

Plain `pytest --nbval` at the repository root (the command the README gives learners, teachers and
maintainers) collects the unit tests and every notebook (`testpaths` in pyproject.toml). This file adds
what nbval would otherwise need flags for, so that the bare command, `pytest --nbval notebooks/NN.ipynb`,
`pytest --nbval-lax`, the Makefile targets and `!pytest --nbval` on Colab all check notebooks the same way:

- outputs are compared after `tests/nbval_sanitize.cfg` normalises what truly varies (memory addresses
  and printed durations), unless `--nbval-sanitize-with` names another file;
- notebooks run on a kernel of the Python that runs pytest (`--nbval-current-env`), so a virtual
  environment checks itself, unless `--nbval-kernel-name` asks for a named kernel;
- the run guard (`tests/run_guard.py`) fails a run that skipped tests for a reason not on its short
  allow-list, or that collected a notebook and ran none of its cells, and prints what did not run.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SANITIZE_FILE = Path(__file__).resolve().parent / "tests" / "nbval_sanitize.cfg"
RUN_GUARD_FILE = Path(__file__).resolve().parent / "tests" / "run_guard.py"


def _run_guard():
    """The run guard module, loaded from tests/ by path (tests/ is not a package)."""
    if "hookviz_run_guard" not in sys.modules:
        spec = importlib.util.spec_from_file_location("hookviz_run_guard", RUN_GUARD_FILE)
        module = importlib.util.module_from_spec(spec)
        sys.modules["hookviz_run_guard"] = module
        spec.loader.exec_module(module)
    return sys.modules["hookviz_run_guard"]


def pytest_configure(config: pytest.Config) -> None:
    """Install the run guard; default nbval's sanitizer and kernel choice (when nbval is installed)."""
    _run_guard().register(config)
    option = config.option
    if not hasattr(option, "nbval_sanitize_with"):
        return
    if option.nbval_sanitize_with is None and not getattr(option, "sanitize_with", None):
        option.nbval_sanitize_with = str(SANITIZE_FILE)
    if not option.nbval_kernel_name:
        option.nbval_current_env = True
