"""Checkers for notebook 17, the recipes.

Exercise 1 asks for ``record_outputs``, a feature recorder whose outputs survive an in-place layer; the checker runs
it on a small network with an ``nn.ReLU(inplace=True)`` right after a recorded layer and compares with the layers
run by hand. Exercise 2 asks for ``per_sample_grad_norms`` built on a forward hook and a full backward hook; the
checker compares with ``torch.func`` on a small MLP. Both checkers build their own models and count, through the
inspector, the hooks the learner's code leaves behind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.func import functional_call, grad, vmap
from torch.nn import functional as F

from hookviz.exercises import ExerciseNotSolved, call_learner_code, checker, expect, passed
from hookviz.hooks_table import list_hooks

__all__ = ["check_per_sample_grad_norms", "check_record_outputs"]

_HOOKS_LEFT = "{} hook(s) left on the model: remove every hook you register before returning (try/finally)"


def _hooks_left(model: nn.Module) -> int:
    """Hooks still attached to ``model``, its submodules and its parameters."""
    return len(list_hooks(model, include_global=False))


@checker
def check_record_outputs(record_outputs: Callable[..., Any]) -> None:
    """Exercise 1: ``record_outputs(model, names, inputs)`` returns copies of the named modules' outputs."""
    expect(callable(record_outputs), "record_outputs should be a function")
    with torch.random.fork_rng():
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(4, 6), nn.ReLU(inplace=True), nn.Linear(6, 3))
        inputs = torch.randn(5, 4)
    result = call_learner_code(record_outputs, net, ["0", "2"], inputs)
    expect(isinstance(result, dict), "record_outputs should return a dict {name: tensor}")
    expect(_hooks_left(net) == 0, _HOOKS_LEFT.format(_hooks_left(net)))
    with torch.no_grad():
        first = net[0](inputs)
        last = net[2](torch.relu(first))
    for name, reference in (("0", first), ("2", last)):
        expect(name in result and torch.is_tensor(result[name]), f"no output recorded for {name!r}")
        got = result[name]
        expect(got.shape == reference.shape, f"the output of {name!r} has shape {tuple(got.shape)}, expected "
               f"{tuple(reference.shape)}")
        if not torch.allclose(got.detach(), reference, atol=1e-6):
            if name == "0" and torch.allclose(got.detach(), reference.clamp(min=0), atol=1e-6):
                raise ExerciseNotSolved(
                    "the output of '0' lost its negative values: the in-place ReLU after it rewrote the tensor you "
                    "stored. detach() shares memory; store a copy"
                )
            raise ExerciseNotSolved(f"the output of {name!r} is not the module's output")
    expect(not result["0"].requires_grad, "the recorded outputs should carry no graph (detach them)")
    passed("record_outputs keeps copies that survive an in-place ReLU and leaves no hook")


def _reference_norms(model: nn.Module, linear_name: str, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Per-sample gradient norms of ``linear_name``'s weight, from torch.func."""
    params = {name: p.detach() for name, p in model.named_parameters()}

    def one(params: dict[str, torch.Tensor], sample: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(functional_call(model, params, (sample[None],)), target[None])

    grads = vmap(grad(one), in_dims=(None, 0, 0))(params, inputs, targets)
    return grads[f"{linear_name}.weight"].flatten(1).norm(dim=1)


@checker
def check_per_sample_grad_norms(per_sample_grad_norms: Callable[..., Any]) -> None:
    """Exercise 2: ``per_sample_grad_norms(model, linear, inputs, targets)`` with hooks, for a mean loss."""
    expect(callable(per_sample_grad_norms), "per_sample_grad_norms should be a function")
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
        inputs, targets = torch.randn(7, 6), torch.randint(0, 3, (7,))
    reference = _reference_norms(model, "2", inputs, targets)
    result = call_learner_code(per_sample_grad_norms, model, model[2], inputs, targets)
    expect(_hooks_left(model) == 0, _HOOKS_LEFT.format(_hooks_left(model)))
    expect(torch.is_tensor(result) and result.shape == (7,),
           "per_sample_grad_norms should return a tensor of shape (N,): one norm per sample")
    result = result.detach()
    if torch.allclose(result * len(inputs), reference, rtol=1e-4):
        raise ExerciseNotSolved(
            f"your norms are {len(inputs)} times too small: with the default mean the gradient reaching the layer "
            "is divided by the batch size"
        )
    error = ((result - reference).abs() / reference).max().item()
    expect(error < 1e-4, f"the norms differ from each sample's own gradient norm (largest relative error {error:.2g})")
    passed(f"per-sample gradient norms match torch.func's for a batch of {len(inputs)} samples")
