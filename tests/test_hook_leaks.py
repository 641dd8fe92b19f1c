"""The no-hook-left-behind guard of conftest.py really fails a test that leaks, and only then."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import torch.nn.modules.module as module_hooks
import torch.optim.optimizer as optimizer_hooks
from hook_leaks import HookLeakGuard
from torch import nn

TESTS = Path(__file__).resolve().parent
KEPT = nn.Linear(2, 2)  # a model that outlives every test, like a module-level model in a test file


def noop(*args, **kwargs):
    return None


def _leaks_of(register) -> list[str]:
    """What the guard reports for hooks made by ``register()``; the guard removes them afterwards."""
    guard = HookLeakGuard().start()
    try:
        register()
    finally:
        guard.stop()
    try:
        return guard.leaks()
    finally:
        guard.cleanup()
        assert guard.leaks() == [], "cleanup() must remove what leaks() reported"


def test_reports_a_module_hook_on_a_live_model_and_names_the_line():
    (line,) = _leaks_of(lambda: KEPT.register_forward_hook(noop))
    assert "noop" in line and "test_hook_leaks.py" in line
    assert not KEPT._forward_hooks, "cleanup removed it"


@pytest.mark.parametrize(
    "register",
    [
        pytest.param(lambda: KEPT.weight.register_hook(noop), id="tensor"),
        pytest.param(lambda: KEPT.bias.register_post_accumulate_grad_hook(noop), id="post_accumulate_grad"),
        pytest.param(lambda: KEPT.register_full_backward_pre_hook(noop), id="module backward_pre"),
        pytest.param(lambda: KEPT.register_state_dict_post_hook(noop), id="state_dict_post"),
        pytest.param(lambda: module_hooks.register_module_forward_hook(noop), id="global module"),
        pytest.param(lambda: optimizer_hooks.register_optimizer_step_post_hook(noop), id="global optimizer"),
    ],
)
def test_reports_every_kind_of_hook_left_on_something_alive(register):
    assert len(_leaks_of(register)) == 1


def test_reports_optimizer_and_autograd_node_hooks_on_live_objects():
    optimizer = torch.optim.SGD(KEPT.parameters(), lr=0.1)
    output = KEPT(torch.ones(1, 2))  # the graph stays alive while `output` does
    leaks = _leaks_of(lambda: (optimizer.register_step_pre_hook(noop), output.grad_fn.register_hook(noop)))
    assert len(leaks) == 2


def test_reports_a_global_hook_written_without_a_handle_and_pushed_saved_tensors_hooks():
    def write_directly():
        module_hooks._global_forward_pre_hooks[10**9] = noop
        torch._C._autograd._push_saved_tensors_default_hooks(noop, noop)

    leaks = _leaks_of(write_directly)
    assert any("without a handle" in line for line in leaks)
    assert any("saved_tensors_hooks" in line for line in leaks)
    assert 10**9 not in module_hooks._global_forward_pre_hooks
    assert torch._C._autograd._top_saved_tensors_default_hooks(False) is None


def test_removed_hooks_and_hooks_on_objects_that_died_are_not_leaks():
    def tidy():
        KEPT.register_forward_hook(noop).remove()
        with module_hooks.register_module_forward_hook(noop):
            pass
        local = nn.Linear(2, 2)  # dies when this function returns: its hook dies with it
        local.register_forward_hook(noop)
        local.weight.register_hook(noop)

    assert _leaks_of(tidy) == []


def test_the_autouse_fixture_fails_a_leaking_test(tmp_path):
    """Run a small test file under a copy of this conftest: leaking tests fail, the others pass."""
    for name in ("conftest.py", "hook_leaks.py"):
        shutil.copy(TESTS / name, tmp_path / name)
    (tmp_path / "test_leaky.py").write_text(
        textwrap.dedent(
            """
            import torch.nn.modules.module as module_hooks
            from torch import nn

            MODEL = nn.Linear(2, 2)

            def forgotten(*args):
                return None

            def test_leaks_a_module_hook():
                MODEL.register_forward_hook(forgotten)

            def test_leaks_a_global_hook():
                module_hooks.register_module_forward_hook(forgotten)

            def test_next_test_starts_clean():
                assert not MODEL._forward_hooks and not module_hooks._global_forward_hooks

            def test_hook_on_a_local_model_is_fine():
                nn.Linear(2, 2).register_forward_hook(forgotten)
            """
        )
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    out = result.stdout
    assert result.returncode == 1, out
    assert "4 passed, 2 errors" in out, out  # a leak is reported as an error at teardown of that test
    assert "ERROR test_leaky.py::test_leaks_a_module_hook" in out, out
    assert "ERROR test_leaky.py::test_leaks_a_global_hook" in out, out
    assert "hook forgotten registered at test_leaky.py:" in out, out
