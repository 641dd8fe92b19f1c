"""Checkers for notebook 16, the hook atlas.

Exercise 1 asks for a set of situations read from the atlas; the checker measures the truth by running
the atlas's probes for that kind. Exercise 2 asks for ``one_shot``, a function that makes any hook run
once; the checker tries it on a forward hook, a tensor hook and two forward pre-hooks of one module, on
objects it builds itself, and counts what is left attached.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from hookviz.atlas import run_atlas
from hookviz.catalogue import hook_kind
from hookviz.exercises import ExerciseNotSolved, call_learner_code, checker, expect, passed

__all__ = ["check_backward_silent", "check_one_shot"]


def _silent_situations(kind: str) -> set[str]:
    """The situations in which a hook of ``kind`` does not fire, measured now."""
    return {entry.situation for entry in run_atlas([kind]) if not entry.fires}


@checker
def check_backward_silent(answer: Any) -> None:
    """Exercise 1: the set of situation names in which a full backward hook (kind ``backward``) does not fire."""
    expect(answer is not None, "not answered yet: set `answer` to a set of situation names")
    if not isinstance(answer, (set, frozenset, list, tuple)) or not all(isinstance(a, str) for a in answer):
        raise ExerciseNotSolved("the answer is a set of strings: names from the table's situation column")
    truth = _silent_situations("backward")
    known = {entry.situation for entry in run_atlas(["backward"])}
    unknown = sorted(set(answer) - known)
    expect(not unknown, f"not a situation of the atlas: {unknown}; the names are in the table's situation column")
    missing, extra = len(truth - set(answer)), len(set(answer) - truth)
    expect(
        missing == 0 and extra == 0,
        f"{missing} situation(s) missing and {extra} too many. Hint: filter the table with kind 'backward' and "
        "read the fires column",
    )
    passed(f"right: {len(truth)} situations in which a full backward hook stays silent")


def _count_left(kind: str, obj: Any) -> int:
    """How many hooks of ``kind`` are still attached to ``obj`` (read through the catalogue)."""
    return len(hook_kind(kind).hooks_of(obj))


@checker
def check_one_shot(one_shot: Callable[..., Any]) -> None:
    """Exercise 2: ``one_shot(register, fn)`` registers a hook that runs ``fn`` once, then removes itself."""
    expect(callable(one_shot), "one_shot should be a function")
    # 1. a forward hook: fn runs on the first forward only, and its return value replaces the output
    with torch.random.fork_rng():
        torch.manual_seed(0)
        layer = nn.Linear(3, 2)
    calls: list[str] = []

    def zero_output(module: nn.Module, args: tuple[Any, ...], output: torch.Tensor) -> torch.Tensor:
        calls.append("forward")
        return torch.zeros_like(output)

    handle = call_learner_code(one_shot, layer.register_forward_hook, zero_output)
    expect(handle is not None and hasattr(handle, "remove"), "one_shot should return the handle it registered")
    x = torch.ones(1, 3)
    first, second = layer(x), layer(x)
    expect(calls == ["forward"], f"fn ran {len(calls)} times over two forward passes; it should run once")
    expect(torch.equal(first, torch.zeros(1, 2)), "the first output should be fn's return value: pass it on")
    expect(not torch.equal(second, torch.zeros(1, 2)), "the second output should be the layer's own output")
    expect(_count_left("forward", layer) == 0, "a hook is still attached to the layer after it ran")
    # 2. a tensor hook: the returned gradient is used once
    w = torch.ones(3, requires_grad=True)
    call_learner_code(one_shot, w.register_hook, lambda grad: grad * 10)
    (w * 2).sum().backward()
    grad_first = w.grad.clone()
    w.grad = None
    (w * 2).sum().backward()
    expect(torch.equal(grad_first, torch.full((3,), 20.0)) and torch.equal(w.grad, torch.full((3,), 2.0)),
           "the tensor hook should change the first gradient only")
    expect(_count_left("tensor", w) == 0, "a hook is still attached to the tensor after it ran")
    # 3. two one-shot hooks on one module: each runs once, on the first forward
    order: list[str] = []
    call_learner_code(one_shot, layer.register_forward_pre_hook, lambda module, args: order.append("a"))
    call_learner_code(one_shot, layer.register_forward_pre_hook, lambda module, args: order.append("b"))
    layer(x)
    layer(x)
    expect(order == ["a", "b"], f"two one-shot pre-hooks ran {order}; each should run once, on the first forward")
    expect(_count_left("forward_pre", layer) == 0, "a pre-hook is still attached to the layer after it ran")
    passed("one_shot works for forward, pre- and tensor hooks, and leaves nothing attached")
