"""`pytest --nbval`, typed exactly as users type it at the repository root, checks every notebook.

The command collects the unit tests and every notebook of every edition, with the project's sanitizer
and the current Python's kernel, and no other flag. (That the notebooks then pass is what `make test`
checks: it runs this same bare command.)
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from notebook_tools import REPO

PROBE = textwrap.dedent(
    """
    import sys
    import pytest

    class Probe:
        def pytest_collection_finish(self, session):
            option = session.config.option
            print("SANITIZE", option.nbval_sanitize_with)
            print("CURRENT_ENV", option.nbval_current_env)

    sys.exit(pytest.main(sys.argv[1:], plugins=[Probe()]))
    """
)


def collect(*args: str) -> str:
    """Run pytest's collection from the repository root, as a user would, and return what it printed."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args, "--collect-only", "-q"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def test_bare_command_collects_every_notebook_and_the_unit_tests():
    out = collect("--nbval")
    notebooks = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "notebooks").rglob("*.ipynb"))
    notebooks = [n for n in notebooks if ".ipynb_checkpoints" not in n]
    assert notebooks, "no notebooks found"
    missing = [n for n in notebooks if f"{n}::Cell 0" not in out]
    assert not missing, f"plain `pytest --nbval` does not collect {missing}"
    assert "tests/test_capture.py::" in out, "plain `pytest --nbval` no longer collects the unit tests"
    assert "tests/browser/" not in out, "the browser test must stay opt-in (-m browser)"


def test_sanitizer_and_current_kernel_apply_without_flags():
    out = collect("--nbval", "notebooks/00_start_here.ipynb")
    sanitize = next(line for line in out.splitlines() if line.startswith("SANITIZE "))
    assert sanitize.endswith("tests/nbval_sanitize.cfg"), sanitize
    assert "CURRENT_ENV True" in out


def test_an_explicit_sanitizer_wins():
    out = collect("--nbval", "--nbval-sanitize-with", "tests/nbval_sanitize.cfg", "notebooks/00_start_here.ipynb")
    assert "SANITIZE tests/nbval_sanitize.cfg" in out


def test_nbval_lax_is_configured_the_same_way():
    out = collect("--nbval-lax", "notebooks/00_start_here.ipynb")
    assert "notebooks/00_start_here.ipynb::Cell 0" in out
    assert "CURRENT_ENV True" in out
