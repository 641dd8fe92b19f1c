"""Checkers for notebook 05: hook lifetime, global hooks, re-run safety and safe activation storage."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from hookviz.exercises import (
    ExerciseNotSolved,
    call_learner_code,
    checker,
    expect,
    learner_result,
    missing_return,
    passed,
)
from hookviz.hooks_table import GLOBAL_CALL_KINDS, HookTable, list_global_hooks, list_hooks
from hookviz.i18n import N_

__all__ = ["check_count_calls", "check_attach_once", "check_safe_hook"]


def _global_hooks() -> HookTable:
    """The global module hooks (forward and backward) registered in this process now, read by the inspector."""
    return HookTable(row for row in list_global_hooks(optimizer=False) if row.kind in GLOBAL_CALL_KINDS)


def _global_hook_count() -> int:
    """How many global module hooks (forward and backward) are registered in this process."""
    return len(_global_hooks())


def _global_hook_ids() -> set[tuple[str, int]]:
    """The (kind, id) of every global module hook registered now."""
    return {(row.kind, row.hook_id) for row in _global_hooks()}


def _remove_new_global_hooks(before: set[tuple[str, int]]) -> None:
    """Remove global hooks registered since ``before`` (a leaked hook would slow every later cell)."""
    HookTable(row for row in _global_hooks() if (row.kind, row.hook_id) not in before).remove()


class _Boom(nn.Module):
    """A module whose forward always raises, to see whether a global hook is cleaned up."""

    def forward(self, x: Tensor) -> Tensor:
        raise RuntimeError("boom: this forward always fails")


class _MakesItsOwnLayer(nn.Module):
    """Calls a Tanh it creates inside ``forward``: not a submodule, so only a global hook sees that call."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: Tensor) -> Tensor:
        return nn.Tanh()(self.lin(x))


@checker
def check_count_calls(count_calls: Callable[[nn.Module, Tensor], dict[str, int]]) -> None:
    """Check ``count_calls(model, x)``: module calls per class name, seen by a global hook, removed after.

    The exception of a failing forward must reach the caller, and no global hook may outlive the call
    (the check removes any it finds, so that a wrong answer does not slow every later cell).
    """
    before, before_ids = _global_hook_count(), _global_hook_ids()
    try:
        _check_count_calls(count_calls, before)
    finally:
        _remove_new_global_hooks(before_ids)


def _check_count_calls(count_calls: Callable[[nn.Module, Tensor], dict[str, int]], before: int) -> None:
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Sequential(nn.Linear(3, 2), nn.ReLU()))
    got = call_learner_code(count_calls, model, torch.randn(2, 4))
    expect(
        _global_hook_count() == before,
        "a global hook is still registered after count_calls returned: every model in the process now runs "
        "it. Remove it before returning (a `with` block around the forward does that for you).",
    )
    missing_return(count_calls, got, N_("count_calls should return the dict {class name: calls}"))
    expect(isinstance(got, dict), f"count_calls should return a dict {{class name: calls}}, got {type(got).__name__}")
    expected = {"Sequential": 2, "Linear": 2, "ReLU": 2}
    expect(
        got == expected,
        f"for a Sequential(Linear, ReLU, Sequential(Linear, ReLU)) expected {expected}, got {got}. Hint: a global "
        "forward hook runs for every module call, containers included; count type(module).__name__.",
    )
    own = _MakesItsOwnLayer()
    got = call_learner_code(count_calls, own, torch.randn(2, 4))
    expected = {"_MakesItsOwnLayer": 1, "Linear": 1, "Tanh": 1}
    if isinstance(got, dict) and got == {"_MakesItsOwnLayer": 1, "Linear": 1}:
        raise ExerciseNotSolved(
            "you counted only the modules registered in the model: a model whose forward creates and calls a "
            "Tanh of its own was counted without that Tanh. Hooks put on model.modules() one by one are local "
            "hooks; the task asks for one global forward hook, which sees every module call in the process "
            "(torch.nn.modules.module.register_module_forward_hook)."
        )
    expect(got == expected, f"for a model that calls a Tanh it creates in forward, expected {expected}, got {got}")
    try:
        count_calls(_Boom(), torch.randn(2, 4))
    except RuntimeError:
        reached = True
    else:
        reached = False
    expect(
        _global_hook_count() == before,
        "when the model's forward raises, your global hook stays registered. Use `with handle:` (or "
        "try/finally) so that it is removed on every exit path.",
    )
    expect(
        reached,
        "when the model's forward raised, count_calls returned normally: the error must reach the caller. "
        "A try/except that swallows it hides the failure; `with handle:` or try/finally removes the hook and "
        "lets the error go on.",
    )
    passed("count_calls counts every module call with a global hook and removes it, even when forward raises")


@checker
def check_attach_once(attach_once: Callable[[nn.Module, Callable[..., Any]], Any]) -> None:
    """Check ``attach_once(module, hook)``: calling it again replaces the module's hook instead of stacking."""
    calls: list[str] = []

    def first(module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        calls.append("first")

    def second(module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
        calls.append("second")

    a, b = nn.Linear(2, 2), nn.Linear(2, 2)
    x = torch.randn(1, 2)
    call_learner_code(attach_once, a, first)
    a(x)
    expect(calls == ["first"], f"after one attach_once and one forward the hook should run once, ran {calls}")
    calls.clear()
    attach_once(a, first)
    a(x)
    expect(
        calls == ["first"],
        f"after calling attach_once twice the hook ran {len(calls)} times per forward: it stacked. Keep the handle "
        "you got the first time (in a dict keyed by module) and remove it before registering again.",
    )
    calls.clear()
    attach_once(a, second)
    a(x)
    expect(calls == ["second"], f"attaching a new hook should replace the old one; ran {calls}")
    calls.clear()
    attach_once(b, first)
    a(x)
    b(x)
    expect(
        calls == ["second", "first"],
        f"attaching to another module must not remove the first module's hook; ran {calls}. Key the handles by module.",
    )
    per_module = [list_hooks(m, include_global=False).kinds().get("forward", 0) for m in (a, b)]
    expect(per_module == [1, 1], f"each module should hold exactly one forward hook; they hold {per_module}")
    passed("attach_once replaces instead of stacking, one hook per module")


@checker
def check_safe_hook(make_safe_hook: Callable[[list[Tensor]], Callable[..., Any]]) -> None:
    """Check ``make_safe_hook(store)``: a forward hook that appends a detached copy of the output to ``store``."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(inplace=True))
    x = torch.randn(5, 3)
    with torch.no_grad():
        expected = model[0](x).clone()
    store: list[Tensor] = []
    hook = learner_result(make_safe_hook, N_("make_safe_hook(store) should return the hook function it builds"), store)
    expect(callable(hook), "make_safe_hook(store) should return a hook function (module, args, output)")
    handle = model[0].register_forward_hook(hook)
    try:
        model(x)
    finally:
        handle.remove()
    expect(len(store) == 1, f"after one forward the store should hold 1 tensor, holds {len(store)}")
    kept = store[0]
    expect(isinstance(kept, Tensor), f"store a tensor, not {type(kept).__name__}")
    expect(
        kept.grad_fn is None and not kept.requires_grad,
        "the stored tensor is still part of the autograd graph (it has a grad_fn): detach it, or it keeps the "
        "whole graph of that forward alive",
    )
    if not torch.equal(kept, expected):
        raise ExerciseNotSolved(
            "the stored values are not the layer's output: the ReLU(inplace=True) after the layer overwrote them "
            "(negative values became 0). Store a copy, not a view of the live tensor."
        )
    passed("the hook stores a detached copy that the in-place ReLU cannot change")
