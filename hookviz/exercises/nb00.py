"""Checkers for notebook 00 (start here): a shape-recording forward hook and a post-accumulate-grad hook.

Each checker runs the learner's code on a small case of its own, prints ``✓ ...`` when it behaves
as asked, and otherwise raises :class:`~hookviz.exercises.ExerciseNotSolved` with a hint.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from hookviz.exercises import (
    ExerciseNotSolved,
    call_learner_code,
    checker,
    describe_learner_error,
    expect,
    missing_return,
    passed,
)
from hookviz.hooks_table import list_hooks
from hookviz.i18n import N_

__all__ = ["check_record_output_shapes", "check_attach_grad_norm_logger"]


class _ForwardFailed(RuntimeError):
    """The error raised by :class:`_Fails`, so that the checker can tell it from the learner's own errors."""


class _Fails(nn.Module):
    """A leaf module whose forward always raises, to test that hooks are removed on the error path."""

    def forward(self, x: Tensor) -> Tensor:
        raise _ForwardFailed("this layer fails on purpose")


def _leaf_names(model: nn.Module) -> list[str]:
    return [name for name, mod in model.named_modules() if name and not list(mod.children())]


def _forward_hook_count(model: nn.Module) -> int:
    """Forward and forward-pre hooks still attached to ``model`` or its submodules (read by the inspector)."""
    kinds = list_hooks(model, include_global=False).kinds()
    return kinds.get("forward", 0) + kinds.get("forward_pre", 0)


def _expected_shapes(model: nn.Module, x: Tensor) -> dict[str, tuple[int, ...]]:
    """Output shape of every leaf module, found by running the leaves one by one (no hooks)."""
    shapes: dict[str, tuple[int, ...]] = {}
    out = x
    for name, mod in model.named_modules():
        if name and not list(mod.children()):
            out = mod(out)
            shapes[name] = tuple(out.shape)
    return shapes


@checker
def check_record_output_shapes(fn: Callable[[nn.Module, Tensor], dict[str, Any]]) -> None:
    """Check ``fn(model, x)``: run ``model(x)`` once and return ``{leaf name: output shape}``.

    The hooks it registers must all be removed before it returns.
    """
    torch.manual_seed(0)
    cases = [
        (nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2)), torch.zeros(4, 3)),
        # nested like the course CNN (features.0, ..., classifier.1): the leaves sit inside containers
        (
            nn.Sequential(
                nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)),
                nn.Sequential(nn.Flatten(), nn.Linear(36, 3)),
            ),
            torch.zeros(2, 1, 6, 6),
        ),
    ]
    for model, x in cases:
        model.eval()
        with torch.no_grad():
            expected = _expected_shapes(model, x)
            result = call_learner_code(fn, model, x)
        missing_return(fn, result, N_("return the dict {layer name: output shape} that your hooks filled"))
        expect(
            isinstance(result, dict),
            f"return a dict {{layer name: output shape}}, not {type(result).__name__}",
        )
        leaves = list(expected)
        if len(leaves) > 1 and list(result) == [leaves[-1]]:
            raise ExerciseNotSolved(
                f"every hook wrote under the same name, {leaves[-1]!r}: the last name of your loop. A lambda (or "
                "def) made inside a for loop looks the loop variable up when the hook runs - after the loop has "
                "ended - not when you register it. Bind the name when you register the hook: "
                "`lambda module, args, output, name=name: ...`, or build each hook in a small function "
                "`make_hook(name)` that returns it."
            )
        children = [name for name, _ in model.named_children()]
        if sorted(result) != sorted(expected) and sorted(result) == sorted(children):
            raise ExerciseNotSolved(
                f"your keys are the model's direct children {sorted(children)}, but these are containers "
                f"here: the leaves inside them ({sorted(expected)}) are missing. named_children() gives only "
                "the first level; named_modules() walks the whole tree (the course CNN's leaves are "
                "features.0, ..., classifier.1). Keep the modules without children."
            )
        expect(
            sorted(result) == sorted(expected),
            f"the keys should be the leaf modules' names from named_modules() ({sorted(expected)}), "
            f"got {sorted(result)}. Hint: a leaf module has no children.",
        )
        for name, shape in expected.items():
            got = result[name]
            expect(
                isinstance(got, tuple) and tuple(got) == shape,
                f"layer {name!r}: expected the output shape as a tuple of ints, got {got!r}. "
                "Hint: tuple(output.shape).",
            )
        left = _forward_hook_count(model)
        expect(
            left == 0,
            f"{left} hook(s) are still attached after your function returned. Keep the handles that "
            "register_forward_hook returns and call .remove() on each (a try/finally makes it safe).",
        )
    # A forward pass that fails half-way: the hooks must still be removed.
    failing = nn.Sequential(nn.Linear(3, 5), _Fails())
    try:
        call_learner_code(fn, failing, torch.zeros(4, 3))
    except _ForwardFailed:
        pass
    left = _forward_hook_count(failing)
    expect(
        left == 0,
        f"when the forward pass raised an error, {left} hook(s) stayed attached. Remove the hooks in a "
        "`finally:` block so that they go even when model(x) fails.",
    )
    passed("record_output_shapes returns every leaf's output shape and leaves no hook behind")


@checker
def check_attach_grad_norm_logger(fn: Callable[[Tensor, list[float]], Any]) -> None:
    """Check ``attach_grad_norm_logger(param, log)``: a hook appending ``param.grad.norm()`` after each write.

    It must return the hook's handle. (Notebook 01's ``check_grad_norm_logger_class`` checks a
    logger *class* instead.)
    """
    w = torch.tensor([1.0, 1.0], requires_grad=True)
    log: list[float] = []
    handle = call_learner_code(fn, w, log)
    missing_return(
        fn, handle, "return the handle that the registration call gives you, so that the hook can be removed"
    )
    expect(
        hasattr(handle, "remove"),
        "return the handle that the registration call gives you, so that the hook can be removed",
    )
    try:
        coeff = torch.tensor([3.0, 4.0])  # d/dw (coeff * w).sum() = coeff, whose norm is 5
        try:
            for _ in range(2):  # two backward passes: .grad accumulates to 2 * coeff
                (coeff * w).sum().backward()
        except (AttributeError, TypeError) as exc:
            if "NoneType" not in str(exc):
                raise
            raise ExerciseNotSolved(
                f"{describe_learner_error(exc)}\nWhen your hook ran, param.grad was not "
                "written yet: choose the hook kind that fires after .grad is updated."
            ) from None
        expect(len(log) == 2, f"two backward passes should log two values, got {len(log)}: {log}")
        values = [float(v) for v in log]
        if all(math.isclose(v, 5.0, rel_tol=1e-5) for v in values):
            raise ExerciseNotSolved(
                "your log shows the incoming gradient (5.0 both times), not the accumulated .grad "
                "(5.0 then 10.0). Use the hook kind that fires after .grad is written and read param.grad."
            )
        expect(
            all(math.isclose(v, e, rel_tol=1e-5) for v, e in zip(values, [5.0, 10.0], strict=True)),
            f"expected the norms of the accumulated .grad, [5.0, 10.0], got {values}",
        )
    finally:
        handle.remove()
    (coeff * w).sum().backward()
    expect(len(log) == 2, "after handle.remove() the hook still fired: return the hook's own handle")
    passed("the logger sees .grad after it is written: norms [5.0, 10.0]")


#: The name this checker had before; notebooks written against it keep working.
check_grad_norm_logger = check_attach_grad_norm_logger
