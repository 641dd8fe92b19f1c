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

from hookviz.exercises import (
    ExerciseNotSolved,
    call_learner_code,
    checker,
    describe_learner_error,
    expect,
    learner_result,
    missing_return,
    passed,
)
from hookviz.i18n import N_

__all__ = ["check_clip_hook", "check_register_once", "check_grad_norm_logger_class"]


@checker
def check_clip_hook(clip_hook: Callable[[Tensor], Tensor | None]) -> None:
    """Exercise 1: ``clip_hook(grad)`` rescales the gradient to an L2 norm of at most 1, never touching ``grad``.

    A gradient whose norm is already at most 1 passes unchanged (the hook may return it or ``None``); a
    larger one keeps its direction and gets norm 1. The hook must not write into ``grad``: the check
    also runs it inside a real backward pass behind ``.sum()``, where the gradient is a broadcast view.
    """
    cases = [
        ([3.0, 4.0], [0.6, 0.8]),  # norm 5: scaled down to norm 1
        ([0.3, -0.4], [0.3, -0.4]),  # norm 0.5: unchanged
        ([0.0, 0.0, 0.0], [0.0, 0.0, 0.0]),  # norm 0: unchanged (no division by zero)
        ([-6.0, 0.0, 8.0, 0.0], [-0.6, 0.0, 0.8, 0.0]),
    ]
    for values, wanted in cases:
        incoming = torch.tensor(values)
        before = incoming.clone()
        result = call_learner_code(clip_hook, incoming)
        expect(
            torch.equal(incoming, before),
            "your hook changed the gradient it received (an in-place operation such as `/=` or `mul_`); "
            "build a new tensor and return it",
        )
        got = before if result is None else result
        expect(isinstance(got, Tensor), f"the hook must return a tensor (or None), not {type(got).__name__}")
        expect(
            got.shape == before.shape, f"the returned gradient has shape {tuple(got.shape)}, not {tuple(before.shape)}"
        )
        if bool(torch.isnan(got).any()):
            raise ExerciseNotSolved(
                f"for the gradient {values} your hook returned NaN: a gradient of norm 0 (or any norm of at "
                "most 1) must pass unchanged - do not divide by its norm"
            )
        if torch.allclose(got, before.clamp(-1.0, 1.0)) and not torch.allclose(got, torch.tensor(wanted)):
            raise ExerciseNotSolved(
                f"for the gradient {values} you returned {[round(v, 3) for v in got.tolist()]}: each entry was "
                "clamped on its own, which turns the gradient's direction. Rescale the whole gradient by one "
                "factor, so that its L2 norm (grad.norm()) becomes 1."
            )
        norm = before.norm().item()
        if result is None and norm > 1:
            missing_return(
                clip_hook,
                result,
                N_("a tensor hook changes the gradient only through the value it returns (None keeps the gradient "
                "as it was, so autograd never saw your rescaled tensor)"),
            )
        expect(
            torch.allclose(got, torch.tensor(wanted), atol=1e-6),
            f"for the gradient {values} (L2 norm {norm:g}) expected {wanted}, got {[round(v, 4) for v in got.tolist()]}"
            + (
                ": a gradient whose norm is at most 1 must pass unchanged"
                if norm <= 1
                else ": divide by the norm, so that the result has norm 1 and the same direction"
            ),
        )
        if result is not None and norm > 1:
            expect(result is not incoming, "return a new tensor, not the one you received")
    # Inside a real backward pass the incoming gradient of `.sum()` is an expanded tensor.
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    y.register_hook(clip_hook)
    try:
        call_learner_code(lambda: (5 * y).sum().backward())
    except RuntimeError as exc:
        raise ExerciseNotSolved(
            f"backward failed inside your hook; do not write into the incoming gradient.\n{describe_learner_error(exc)}"
        ) from exc
    want = torch.full((3,), 5.0) / torch.full((3,), 5.0).norm()
    expect(
        torch.allclose(x.grad, want),
        f"after backward x.grad should be {[round(v, 4) for v in want.tolist()]}, got {x.grad.tolist()}",
    )
    passed("clip_hook rescales the gradient to norm 1 with a new tensor and leaves autograd's gradient alone")


@checker
def check_register_once(register_once: Callable[[Tensor, Callable[[Tensor], Any]], RemovableHandle]) -> None:
    """Exercise 2: ``register_once(tensor, fn)`` registers ``fn`` so that it runs in one backward pass only."""
    calls: list[float] = []
    x = torch.tensor([1.0], requires_grad=True)
    y = x * 2
    handle = call_learner_code(register_once, y, lambda g: calls.append(g.item()))
    missing_return(
        register_once,
        handle,
        "return the handle that register_hook gave you, so that the caller can still remove the hook",
    )
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


@checker
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
    handles = learner_result(logger.attach, N_("attach(model) should return the list of handles it registered"), model)
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
