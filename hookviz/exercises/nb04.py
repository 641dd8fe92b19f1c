"""Checkers for notebook 04 (module backward hooks and gradient clipping).

Each checker builds its own small model, compares what the learner's code does with gradients
computed by plain autograd, cleans up every hook it or the learner added, and prints ``✓ ...`` - or
raises :class:`~hookviz.exercises.ExerciseNotSolved` with a hint.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

from hookviz.exercises import (
    ExerciseNotSolved,
    ReturnRecorder,
    call_learner_code,
    checker,
    describe_learner_error,
    expect,
    learner_result,
    passed,
)
from hookviz.hooks_table import list_hooks
from hookviz.i18n import N_
from hookviz.models import DigitsCNN

__all__ = ["check_halve_input_grads", "check_clip_hooks", "check_output_grad_norms"]


class _AddScaled(nn.Module):
    """``a + 3 * b``: two tensor inputs, so ``grad_input`` has two entries."""

    def forward(self, a: Tensor, b: Tensor) -> Tensor:
        return a + 3 * b


def _backward_with(hook: Callable[..., Any], module: nn.Module, *inputs: Tensor) -> ReturnRecorder:
    """Run ``module(*inputs)`` with ``hook`` as a full backward hook, and backward through it.

    Returns the recorder of what the hook returned.
    """
    recorder = ReturnRecorder(hook)
    handle = module.register_full_backward_hook(recorder)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "no inputs require gradients" is expected in one case
            try:
                out = call_learner_code(module, *inputs)
                call_learner_code(out.pow(2).sum().backward)
            except ExerciseNotSolved:
                raise
            except (RuntimeError, TypeError, AttributeError) as exc:
                raise ExerciseNotSolved(
                    f"backward failed: {describe_learner_error(exc)}\nReturn a tuple with one entry per "
                    "grad_input entry, and keep None entries as None."
                ) from exc
    finally:
        handle.remove()
    return recorder


@checker
def check_halve_input_grads(hook: Callable[..., Any]) -> None:
    """Exercise 1: a full backward hook that halves every gradient flowing back to a module's inputs.

    It must leave the module's parameter gradients alone, cope with ``None`` entries (inputs that need
    no gradient) and never change tensors in place.
    """
    torch.manual_seed(0)
    layer = nn.Linear(3, 2)
    x = torch.randn(4, 3, requires_grad=True)
    layer(x).pow(2).sum().backward()
    true_x, true_w = x.grad.clone(), layer.weight.grad.clone()
    x.grad = None
    layer.zero_grad()
    recorder = _backward_with(hook, layer, x)
    if x.grad is not None and torch.allclose(x.grad, true_x):
        recorder.expect_returned(N_("a full backward hook changes grad_input only through the tuple it returns"))
    expect(x.grad is not None, "the input got no gradient at all: return the halved gradients, not zeros or None")
    expect(
        not torch.allclose(x.grad, true_x),
        "the input gradient is unchanged: return the new gradients from the hook (a new tuple)",
    )
    expect(torch.allclose(x.grad, true_x / 2), "the input gradient should be exactly half of the true one")
    expect(
        torch.allclose(layer.weight.grad, true_w),
        "the weight gradient changed: this hook should only touch what flows back to the inputs",
    )

    add = _AddScaled()
    a = torch.randn(3, requires_grad=True)
    b = torch.randn(3)  # needs no gradient: its grad_input entry is None
    _backward_with(hook, add, a, b)
    expect(torch.allclose(a.grad, (a + 3 * b).detach()), "with two inputs, the first one's gradient was not halved")

    first = nn.Linear(3, 2)  # an input that needs no gradient: grad_input is (None,)
    _backward_with(hook, first, torch.randn(4, 3))
    expect(first.weight.grad is not None, "the first-layer case did not produce parameter gradients")
    passed("input gradients are halved, None entries survive, parameter gradients are untouched")


def _clip_model() -> tuple[nn.Module, Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    x = torch.randn(16, 4) * 5
    return model, x


def _true_grads(model: nn.Module, x: Tensor) -> dict[str, Tensor]:
    model.zero_grad()
    (model(x) * 10).sum().backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters()}
    model.zero_grad()
    return grads


@checker
def check_clip_hooks(add_clip_hooks: Callable[[nn.Module, float], Any]) -> None:
    """Exercise 2: per-parameter tensor hooks that clamp every parameter gradient into ``[-limit, limit]``.

    ``add_clip_hooks(model, limit)`` must return the list of handles, one per parameter, so that the
    caller can remove them again.
    """
    limit = 0.5
    model, x = _clip_model()
    true = _true_grads(model, x)
    expect(any(g.abs().max() > limit for g in true.values()), "internal: the test case has no large gradient")
    handles = learner_result(
        add_clip_hooks, "add_clip_hooks should return a list of the handles that register_hook gave you", model, limit
    )
    try:
        expect(
            isinstance(handles, (list, tuple)) and all(isinstance(h, RemovableHandle) for h in handles),
            "add_clip_hooks should return a list of the handles that register_hook gave you",
        )
        module_hooks = [row for row in list_hooks(model, include_global=False) if not row.where.startswith("param:")]
        if module_hooks:
            kinds = ", ".join(sorted({row.kind for row in module_hooks}))
            places = len({row.where for row in module_hooks})
            raise ExerciseNotSolved(
                f"you registered module hooks ({kinds} on {places} module(s)), not tensor hooks on the parameters. "
                "A module backward hook sees the gradients with respect to the module's inputs and outputs, "
                "never the gradients of its weights. Register a tensor hook on every parameter: "
                "`p.register_hook(...)` for p in model.parameters()."
            )
        n_params = len(list(model.parameters()))
        expect(
            len(handles) == n_params,
            f"expected one hook per parameter ({n_params}), got {len(handles)} handles",
        )
        with warnings.catch_warnings():
            # a module hook left by the learner would warn about the first layer's input needing no gradient
            warnings.filterwarnings("ignore", message="Full backward hook is firing", category=UserWarning)
            (model(x) * 10).sum().backward()
        for name, p in model.named_parameters():
            expect(p.grad is not None, f"{name} got no gradient: does your hook return the clipped tensor?")
            expect(
                torch.allclose(p.grad, true[name].clamp(-limit, limit)),
                f"the gradient of {name} is not the true gradient clamped into [-{limit}, {limit}]",
            )
    finally:
        for handle in handles if isinstance(handles, (list, tuple)) else []:
            if isinstance(handle, RemovableHandle):
                handle.remove()
    model.zero_grad()
    (model(x) * 10).sum().backward()
    expect(
        all(torch.allclose(p.grad, true[name]) for name, p in model.named_parameters()),
        "after removing the returned handles the gradients are still clipped: return the real handles",
    )
    passed("every parameter gradient is clamped, and the handles remove the hooks again")


@checker
def check_output_grad_norms(attach: Callable[[nn.Module, dict[str, float]], Any]) -> None:
    """Exercise 3: full backward pre-hooks that record the L2 norm of each layer's output gradient.

    ``attach(model, norms)`` registers a hook on every ``Conv2d`` and ``Linear`` of ``model`` that
    stores ``norms[layer_name] = grad_output[0].norm().item()`` and returns the handles.
    """
    torch.manual_seed(0)
    model = DigitsCNN().eval()
    images = torch.rand(6, 1, 8, 8)
    labels = torch.arange(6)
    wanted_layers = [name for name, m in model.named_modules() if isinstance(m, (nn.Conv2d, nn.Linear))]

    outputs: dict[str, Tensor] = {}
    keep = [model.get_submodule(n).register_forward_hook(_keep_output(outputs, n)) for n in wanted_layers]
    loss = nn.functional.cross_entropy(model(images), labels)
    for h in keep:
        h.remove()
    true_norms = {
        n: g.norm().item()
        for n, g in zip(wanted_layers, torch.autograd.grad(loss, [outputs[n] for n in wanted_layers]), strict=True)
    }

    norms: dict[str, float] = {}
    handles = learner_result(attach, N_("attach should return the list of handles it registered"), model, norms)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # features.0: "no inputs require gradients"
            nn.functional.cross_entropy(model(images), labels).backward()
    finally:
        for handle in handles if isinstance(handles, (list, tuple)) else []:
            if isinstance(handle, RemovableHandle):
                handle.remove()
    left = list_hooks(model, include_global=False)
    expect(len(left) == 0, f"{len(left)} hook(s) are still attached: return every handle you register")
    expect(
        sorted(norms) == sorted(wanted_layers),
        f"norms should have one entry per Conv2d/Linear layer, {wanted_layers}; got {sorted(norms)}",
    )
    for name in wanted_layers:
        value = norms[name]
        expect(isinstance(value, float), f"norms[{name!r}] should be a Python float (use .item())")
        if abs(value - true_norms[name]) > 1e-5 * max(1.0, true_norms[name]):
            raise ExerciseNotSolved(
                f"norms[{name!r}] is not the L2 norm of the gradient with respect to that layer's output: "
                "use grad_output, not grad_input"
            )
    passed("one norm per Conv2d/Linear layer, equal to the norm of the gradient at its output")


def _keep_output(store: dict[str, Tensor], name: str) -> Callable[..., None]:
    def hook(module: nn.Module, args: tuple[Any, ...], output: Tensor) -> None:
        store[name] = output

    return hook
