"""Shared test setup: a non-interactive matplotlib backend, a fixed seed and no hook left behind.

Every test runs under a :class:`hook_leaks.HookLeakGuard`: a hook that the test (or code it calls)
registered and that is still attached to a live object when the test ends - a module, a tensor, an
optimizer, a global dict - fails the test at teardown with the hook's name and the line that
registered it. The leaked hooks are then removed, so the next test starts clean.
"""

from collections.abc import Iterator

import matplotlib
import pytest
import torch
from hook_leaks import HookLeakGuard

matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


@pytest.fixture(autouse=True)
def _no_hook_left_behind() -> Iterator[HookLeakGuard]:
    """Fail the test if it leaves a hook attached to anything that outlives it."""
    guard = HookLeakGuard().start()
    try:
        yield guard
    finally:
        guard.stop()
    leaks = guard.leaks()
    guard.cleanup()
    if leaks:
        pytest.fail(f"{len(leaks)} hook(s) left behind:\n  " + "\n  ".join(leaks), pytrace=False)


@pytest.fixture
def shell() -> Iterator:
    """A real IPython shell (no kernel), run as the notebooks run: cells, magics, AST transformers."""
    from IPython.core.interactiveshell import InteractiveShell

    ipython = InteractiveShell.instance()
    saved = list(ipython.ast_transformers)
    yield ipython
    ipython.ast_transformers[:] = saved
    ipython.run_line_magic("xmode", "Context")
    InteractiveShell.clear_instance()
