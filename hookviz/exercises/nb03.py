"""Checkers for notebook 03 (forward pre-hooks).

Each checker registers the learner's hook on a fresh module, runs a few small cases, removes the hook
again and prints ``✓ ...`` - or raises :class:`~hookviz.exercises.ExerciseNotSolved` with a hint.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from hookviz.exercises import (
    ExerciseNotSolved,
    ReturnRecorder,
    call_learner_code,
    checker,
    describe_learner_error,
    expect,
    passed,
    raised_in_learner_code,
)
from hookviz.i18n import N_
from hookviz.models import DigitsCNN

__all__ = ["check_clamp_input", "check_digit_shape_guard", "check_cap_factor"]


class _Scale(nn.Module):
    """``x * factor`` with ``factor`` a keyword-only argument (the notebook's ``Scale``)."""

    def forward(self, x: Tensor, *, factor: float = 1.0) -> Tensor:
        return x * factor


@checker
def check_clamp_input(hook: Callable[..., Any]) -> None:
    """Exercise 1: a forward pre-hook that clamps a module's input into ``[0, 1]``.

    The hook must change what the module receives, leave the caller's tensor untouched and work
    for any input shape.
    """
    torch.manual_seed(0)
    layer = nn.Linear(4, 3)
    for shape in [(5, 4), (2, 3, 4)]:
        x = torch.randn(*shape) * 3
        original = x.clone()
        recorder = ReturnRecorder(hook)
        handle = layer.register_forward_pre_hook(recorder)
        try:
            out = call_learner_code(layer, x)
        finally:
            handle.remove()
        expect(isinstance(out, Tensor), "the module did not return a tensor: does your hook return the input?")
        expect(
            torch.equal(x, original),
            "your hook changed the caller's tensor in place (clamp_ / x[...] = ...). "
            "Build a new tensor with torch.clamp(...) and return it instead.",
        )
        wanted = layer(original.clamp(0, 1))
        if torch.allclose(out, layer(original)):
            recorder.expect_returned(N_("a pre-hook changes the module's input only through the value it returns"))
            raise ExerciseNotSolved(
                "the module still received the raw input: a pre-hook changes the input only through its return value"
            )
        expect(
            out.shape == wanted.shape and torch.allclose(out, wanted),
            "the module did not receive the input clamped into [0, 1]; check the bounds and what you return",
        )
    passed("the module now always sees its input clamped into [0, 1], and the caller's tensor is untouched")


@checker
def check_digit_shape_guard(hook: Callable[..., Any]) -> None:
    """Exercise 2: a forward pre-hook that refuses inputs that are not ``(N, 1, 8, 8)`` digits.

    Good batches must pass through unchanged (the hook returns ``None``); anything else must raise a
    ``ValueError`` whose message shows the shape that was received.
    """
    torch.manual_seed(0)
    model = DigitsCNN().eval()
    good_batches = [torch.rand(n, 1, 8, 8) for n in (1, 3)]
    references = [model(good) for good in good_batches]
    handle = model.register_forward_pre_hook(hook)
    try:
        for good, reference in zip(good_batches, references, strict=True):
            out = call_learner_code(model, good)
            expect(
                isinstance(out, Tensor) and out.shape == reference.shape,
                f"a correct batch of shape {tuple(good.shape)} should pass; the model did not return its logits",
            )
            expect(torch.equal(out, reference), "a correct batch must reach the model unchanged")
        for bad_shape in [(3, 8, 8), (3, 1, 64), (3, 3, 8, 8), (1, 8, 8)]:
            bad = torch.rand(*bad_shape)
            try:
                call_learner_code(model, bad)
            except ValueError as exc:
                message = str(exc)
                shown = str(tuple(bad_shape))[1:-1].replace(" ", "")
                expect(
                    shown in message.replace(" ", ""),
                    f"the ValueError for an input of shape {bad_shape} should say which shape it got; "
                    f"your message was: {message!r}",
                )
            except ExerciseNotSolved:
                raise
            except Exception as exc:  # any other error: tell the learner which
                if not raised_in_learner_code(exc):
                    raise ExerciseNotSolved(
                        f"an input of shape {bad_shape} got past your hook and failed later, inside the model "
                        f"({type(exc).__name__}): it was accepted, but the hook must raise ValueError for it"
                    ) from exc
                raise ExerciseNotSolved(
                    f"an input of shape {bad_shape} raised {type(exc).__name__} instead of ValueError: "
                    f"your hook must raise before the model runs.\n{describe_learner_error(exc)}"
                ) from exc
            else:
                raise ExerciseNotSolved(f"an input of shape {bad_shape} was accepted; it must raise ValueError")
    finally:
        handle.remove()
    passed("good digit batches pass untouched, wrong shapes stop with a clear ValueError")


@checker
def check_cap_factor(hook: Callable[..., Any]) -> None:
    """Exercise 3: a ``with_kwargs=True`` pre-hook that caps the keyword argument ``factor`` at 1.0."""
    module = _Scale()
    x = torch.tensor([1.0, -2.0, 3.0])
    recorder = ReturnRecorder(hook)
    handle = module.register_forward_pre_hook(recorder, with_kwargs=True)
    try:
        cases = [({"factor": 5.0}, 1.0), ({"factor": 0.5}, 0.5), ({"factor": 1.0}, 1.0), ({}, 1.0)]
        for kwargs, effective in cases:
            try:
                out = call_learner_code(module, x, **kwargs)
            except ExerciseNotSolved:
                raise
            except KeyError as exc:
                raise ExerciseNotSolved(
                    "your hook failed when the call passed no `factor` at all: use kwargs.get(...)"
                ) from exc
            except RuntimeError as exc:
                raise ExerciseNotSolved(
                    f"PyTorch rejected what your hook returned ({exc}). Return None or (args, kwargs)."
                ) from exc
            if not torch.allclose(out, x * effective):
                recorder.expect_returned(
                    N_("a pre-hook registered with with_kwargs=True changes the call only by returning (args, kwargs)")
                )
            expect(
                torch.allclose(out, x * effective),
                f"called with {kwargs or 'no factor'}, the module should compute x * {effective}, "
                f"but returned {[round(v, 3) for v in out.tolist()]}",
            )
    finally:
        handle.remove()
    passed("factor is capped at 1.0, smaller factors and calls without factor are left alone")
