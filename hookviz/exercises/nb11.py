"""Checkers for notebook 11, the mistakes clinic: "this cell has a hook bug, find and fix it" exercises.

Each ``check_*`` function builds fresh models, runs the learner's function on them, compares what it
recorded or changed with the truth worked out without hooks, and removes every hook it added. It prints
``✓ ...`` when the fix is right and raises :class:`~hookviz.exercises.ExerciseNotSolved` with a hint
otherwise, without printing the solution.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from hookviz.diagnose import diagnose
from hookviz.exercises import ExerciseNotSolved, call_learner_code, checker, expect, passed
from hookviz.hooks_table import list_hooks
from hookviz.models import DigitsCNN

__all__ = [
    "check_record_output_shapes",
    "check_log_weight_grad_norms",
    "check_add_steering",
    "check_attach_probes",
    "TupleBlock",
]


def _handles(value: Any, what: str) -> list[Any]:
    """The learner's return value as a list of handles, or a helpful failure."""
    expect(value is not None, f"{what} must return the handles it registered (it returned None)")
    handles = list(value) if isinstance(value, (list, tuple)) else [value]
    expect(
        all(hasattr(handle, "remove") for handle in handles),
        f"{what} must return what `register_*` returned: handles with a `remove()` method",
    )
    return handles


def _hook_count(model: nn.Module) -> int:
    """Module and parameter hooks attached anywhere in ``model`` (global hooks are not the learner's)."""
    return len(list_hooks(model, include_global=False))


def _remove_and_verify(handles: list[Any], model: nn.Module) -> None:
    for handle in handles:
        handle.remove()
    expect(
        _hook_count(model) == 0, "after removing the returned handles, hooks are still attached: return every handle"
    )


@checker
def check_record_output_shapes(record_output_shapes: Callable[..., Any]) -> None:
    """Exercise 1: one output shape per direct child, stored under that child's own name."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 1))
    shapes: dict[str, tuple[int, ...]] = {}
    handles = _handles(call_learner_code(record_output_shapes, model, shapes), "record_output_shapes")
    try:
        model(torch.randn(4, 2))
    finally:
        for handle in handles:
            handle.remove()
    truth = {"0": (4, 3), "1": (4, 3), "2": (4, 5), "3": (4, 5), "4": (4, 1)}
    expect(
        list(shapes) != ["4"],
        "only the last layer's name was recorded: every hook looks up the loop variable when it runs, after the "
        "loop ended. Hint: bind the name when the hook is created (a default argument or a factory function)",
    )
    expect(
        "" not in shapes,
        "a name '' was recorded: `named_modules()` also yields the model itself (and every container) under its "
        "own name. Hint: `named_children()` yields only the direct children",
    )
    expect(set(shapes) == set(truth), f"recorded names {sorted(shapes)}, expected one per child: {sorted(truth)}")
    wrong = sorted(name for name in truth if tuple(shapes[name]) != truth[name])
    expect(not wrong, f"wrong shapes for {wrong}: store the shape of each child's own output")
    expect(_hook_count(model) == 0, "hooks are left on the model after removing the returned handles")
    passed("one shape per layer, each under its own name")


@checker
def check_log_weight_grad_norms(log_weight_grad_norms: Callable[..., Any]) -> None:
    """Exercise 2: the norm of each Linear weight's gradient from the current backward pass."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    norms: dict[str, float] = {}
    handles = _handles(call_learner_code(log_weight_grad_norms, model, norms), "log_weight_grad_norms")
    try:
        for scale in (1.0, 3.0):  # two steps: a stale value from the first step is caught in the second
            model.zero_grad()
            norms.clear()
            data = torch.randn(5, 3) * scale  # data, not requiring grad, as in training
            try:
                model(data).pow(2).sum().backward()
            except AttributeError as exc:
                raise ExerciseNotSolved(
                    f"the hook failed with AttributeError: {exc}. Hint: a module backward hook may run before "
                    "the weight's .grad is written; use a hook that runs after the gradient is accumulated"
                ) from exc
            truth = {"0": model[0].weight.grad.norm().item(), "2": model[2].weight.grad.norm().item()}
            expect(set(norms) == set(truth), f"logged names {sorted(norms)}, expected {sorted(truth)}")
            wrong = sorted(n for n in truth if abs(norms[n] - truth[n]) > 1e-5 * max(1.0, truth[n]))
            weight_norms = {"0": model[0].weight.norm().item(), "2": model[2].weight.norm().item()}
            expect(
                not wrong or any(abs(norms[n] - weight_norms[n]) > 1e-5 * max(1.0, weight_norms[n]) for n in wrong),
                f"for {wrong} you logged the norm of the weight itself, not of its gradient: a post-accumulate hook "
                "receives the parameter. Hint: its gradient is `param.grad`",
            )
            expect(
                not wrong,
                f"wrong norm for {wrong}: the value read is not this step's gradient. Hint: read the gradient "
                "after it has been accumulated into .grad",
            )
    finally:
        _remove_and_verify(handles, model)
    passed("each Linear's weight-gradient norm, from the current backward pass, first layer included")


class TupleBlock(nn.Module):
    """A transformer-like block: returns ``(hidden, attention weights)``."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Return the hidden state and a softmax over it."""
        hidden = self.lin(x)
        return hidden, hidden.softmax(-1)


class _TupleNet(nn.Module):
    """A model that unpacks its block's tuple, as transformer models do."""

    def __init__(self) -> None:
        super().__init__()
        self.block = TupleBlock()
        self.head = nn.Linear(4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.block(x)
        return self.head(hidden)


@checker
def check_add_steering(add_steering: Callable[..., Any]) -> None:
    """Exercise 3: steer the hidden state of a tuple-returning block without breaking the tuple."""
    torch.manual_seed(0)
    net = _TupleNet()
    vector = torch.tensor([1.0, -2.0, 0.5, 3.0])
    x = torch.randn(3, 4)
    with torch.no_grad():
        hidden = net.block.lin(x)
        expected_out = net.head(hidden + vector)
        expected_weights = hidden.softmax(-1)
    handle = call_learner_code(add_steering, net.block, vector)
    handles = _handles(handle, "add_steering")
    try:
        with torch.no_grad():
            try:
                out = net(x)
                block_output = net.block(x)
            except ValueError as exc:
                raise ExerciseNotSolved(
                    f"the model broke: ValueError: {exc}. Hint: whatever the hook returns replaces the block's "
                    "output, and the model expects a tuple"
                ) from exc
        expect(
            isinstance(block_output, tuple) and len(block_output) == 2,
            "the block must still return a tuple of two: return the same structure, changing only the hidden state",
        )
        expect(tuple(out.shape) == (3, 1), f"the model's output has shape {tuple(out.shape)}, expected (3, 1)")
        expect(
            torch.allclose(out, expected_out, atol=1e-6),
            "the output is not the model with `vector` added to the hidden state",
        )
        expect(
            all(isinstance(part, torch.Tensor) for part in block_output),
            "the block's tuple must still hold two tensors (hidden state, attention weights): return "
            "`(steered hidden, *the other elements)`, not the old tuple nested inside a new one",
        )
        expect(
            torch.allclose(block_output[1], expected_weights, atol=1e-6),
            "the second element changed: leave everything but the hidden state as it was",
        )
    finally:
        _remove_and_verify(handles, net)
    with torch.no_grad():
        unsteered = torch.allclose(net(x), net.head(net.block.lin(x)), atol=1e-6)
    expect(unsteered, "after remove(), the model should be unsteered")
    passed("the hidden state is steered, the tuple and the rest of the model are intact")


@checker
def check_attach_probes(attach_probes: Callable[..., Any]) -> None:
    """Exercise 4: probes on every Conv2d that the hook doctor finds nothing wrong with, and that record right."""
    torch.manual_seed(0)
    model = DigitsCNN().eval()
    acts: dict[str, Any] = {}
    grad_norms: dict[str, float] = {}
    handles = _handles(call_learner_code(attach_probes, model, acts, grad_norms), "attach_probes")
    images = torch.randn(4, 1, 8, 8)
    try:
        # the doctor's notes (severity "info": a value read with .item(), free on the CPU) are worth knowing, not bugs
        findings = [f for f in diagnose(model, images) if f.severity != "info"]
        expect(
            not findings,
            f"hookviz.diagnose still reports {len(findings)} finding(s): "
            f"{', '.join(f'{f.kind} at {f.where}' for f in findings)}. "
            "Hint: print(hookviz.diagnose(model, x)) and follow each finding's fix",
        )
        acts.clear()
        grad_norms.clear()
        model.zero_grad(set_to_none=True)
        model(images).sum().backward()
        with torch.no_grad():
            truth = {"features.0": model.features[0](images), "features.4": model.features[:5](images)}
        expect(set(acts) == set(truth), f"recorded activations for {sorted(acts)}, expected {sorted(truth)}")
        wrong = sorted(
            name
            for name, value in truth.items()
            if not isinstance(acts[name], torch.Tensor) or not torch.allclose(acts[name], value, atol=1e-6)
        )
        expect(not wrong, f"the activation stored for {wrong} is not that layer's output")
        norms = {name: model.get_submodule(name).weight.grad.norm().item() for name in truth}
        expect(
            set(grad_norms) == set(norms), f"gradient norms logged for {sorted(grad_norms)}, expected {sorted(norms)}"
        )
        wrong = sorted(n for n in norms if abs(grad_norms[n] - norms[n]) > 1e-5 * max(1.0, norms[n]))
        expect(not wrong, f"wrong gradient norm for {wrong}: log the norm of this step's weight.grad")
    finally:
        _remove_and_verify(handles, model)
    passed("the doctor finds nothing, and each probe records its own layer's activation and gradient norm")
