"""Checkers for ``notebooks/01_tensor_hooks.ipynb`` (``Tensor.register_hook`` and friends).

Each ``check_*`` function runs the learner's code on a small case, prints ``✓ ...`` when it behaves
as asked and raises :class:`~hookviz.exercises.ExerciseNotSolved` with a hint otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

from hookviz.exercises import ExerciseNotSolved, call_learner_code, expect, passed

__all__ = ["check_clip_hook", "check_register_once", "check_grad_norm_logger_class"]


def check_clip_hook(clip_hook: Callable[[Tensor], Tensor | None]) -> None:
    """Exercise 1: ``clip_hook(grad)`` returns the gradient clamped to ``[-1, 1]`` without touching ``grad``."""
    incoming = torch.tensor([-3.0, -0.5, 0.5, 3.0])
    before = incoming.clone()
    result = call_learner_code(clip_hook, incoming)
    expect(
        torch.equal(incoming, before),
        "your hook changed the gradient it received (an in-place operation); build a new tensor and return it",
    )
    expect(result is not None, "your hook returned None, so autograd keeps the original gradient: return the new one")
    expect(isinstance(result, Tensor), f"the hook must return a tensor, not {type(result).__name__}")
    expect(
        result.shape == incoming.shape and torch.allclose(result, before.clamp(-1.0, 1.0)),
        "values inside [-1, 1] must stay as they are and values outside must become -1 or 1",
    )
    # Inside a real backward pass the incoming gradient of `.sum()` is an expanded tensor.
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    y.register_hook(clip_hook)
    try:
        call_learner_code(lambda: (5 * y).sum().backward())
    except RuntimeError as exc:
        raise ExerciseNotSolved(
            f"backward failed inside your hook ({exc}); do not write into the incoming gradient"
        ) from exc
    expect(torch.equal(x.grad, torch.ones(3)), f"after backward x.grad should be all ones, got {x.grad.tolist()}")
    passed("clip_hook returns a clamped copy and leaves autograd's gradient alone")


def check_register_once(register_once: Callable[[Tensor, Callable[[Tensor], Any]], RemovableHandle]) -> None:
    """Exercise 2: ``register_once(tensor, fn)`` registers ``fn`` so that it runs in one backward pass only."""
    calls: list[float] = []
    x = torch.tensor([1.0], requires_grad=True)
    y = x * 2
    handle = call_learner_code(register_once, y, lambda g: calls.append(g.item()))
    expect(
        isinstance(handle, RemovableHandle),
        "return the handle that register_hook gave you, so that the caller can still remove the hook",
    )
    y.sum().backward(retain_graph=True)
    expect(len(calls) == 1, f"after the first backward fn should have run once, it ran {len(calls)} times")
    y.sum().backward()
    expect(
        len(calls) == 1,
        f"after a second backward fn should still have run once, it ran {len(calls)} times: "
        "the hook has to remove itself the first time it runs",
    )
    # A value returned by fn must reach autograd.
    x = torch.tensor([1.0], requires_grad=True)
    y = x * 2
    call_learner_code(register_once, y, lambda g: g * 10)
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    expect(
        math.isclose(x.grad.item(), 22.0),
        f"x.grad should be 20 (first pass, fn multiplies by 10) + 2 (second pass, no hook) = 22, got {x.grad.item()}"
        " - does your hook return what fn returns?",
    )
    # The handle still works before any backward.
    calls.clear()
    x = torch.tensor([1.0], requires_grad=True)
    y = x * 2
    call_learner_code(register_once, y, lambda g: calls.append(g.item())).remove()
    y.sum().backward()
    expect(not calls, "after handle.remove() (before backward) fn must not run")
    passed("register_once runs fn in the first backward only, passes its result on, and can be removed early")


def check_grad_norm_logger_class(logger_cls: type) -> None:
    """Exercise 3: a class whose bound method is a post-accumulate-grad hook that logs ``param.grad`` norms.

    ``logger_cls()`` has a list ``norms`` and ``attach(model)`` returning one handle per parameter.
    (Notebook 00's ``check_attach_grad_norm_logger`` checks a function that registers one hook.)
    """
    model = nn.Linear(2, 1)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, -1.0]]))
        model.bias.zero_()
    logger = call_learner_code(logger_cls)
    expect(isinstance(getattr(logger, "norms", None), list), "the logger needs a list attribute `norms` (start empty)")
    handles = call_learner_code(logger.attach, model)
    expect(
        isinstance(handles, list) and len(handles) == 2 and all(isinstance(h, RemovableHandle) for h in handles),
        "attach(model) should register one hook per parameter (nn.Linear has 2) and return the list of handles",
    )
    x = torch.tensor([[3.0, 4.0]])

    def step() -> None:
        call_learner_code(lambda: model(x).sum().backward())

    def expected() -> list[float]:
        return sorted(round(p.grad.norm().item(), 4) for p in model.parameters())

    step()
    got = sorted(round(float(v), 4) for v in logger.norms)
    expect(len(logger.norms) == 2, f"one backward should log 2 norms (one per parameter), got {len(logger.norms)}")
    expect(got == expected(), f"logged norms {got} differ from the norms of p.grad {expected()}")
    step()
    expect(len(logger.norms) == 4, f"two backward passes should log 4 norms, got {len(logger.norms)}")
    got = sorted(round(float(v), 4) for v in logger.norms[2:])
    expect(
        got == expected(),
        "the second pass should log the norm of the accumulated p.grad (gradients add up until zero_grad): "
        f"expected {expected()}, got {got}",
    )
    for h in handles:
        h.remove()
    step()
    expect(len(logger.norms) == 4, "after removing the handles nothing more should be logged")
    passed("GradNormLogger reads the accumulated p.grad from a bound-method post-accumulate hook")


#: The name this checker had before; notebooks written against it keep working.
check_grad_norm_logger = check_grad_norm_logger_class
