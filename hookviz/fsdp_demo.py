"""A real two-process FSDP2 (``fully_shard``) run on one CPU machine, to watch what parameter hooks see.

Notebook 15 calls :func:`run_fsdp_hook_probe`. It starts ``world_size`` worker processes the way
:mod:`hookviz.ddp_demo` does (a fork server where the OS has one, ``spawn`` elsewhere; never ``fork``),
and each joins a ``gloo`` process group on the loopback interface with
:func:`hookviz.ddp_demo._joined_group`. In each process :func:`probe_model` (a two-layer MLP, the same
weights on every rank) is sharded with ``torch.distributed.fsdp.fully_shard``: each parameter becomes a
``DTensor`` of which this rank holds one slice (``Shard(dim=0)``). Before one training step, on the first
layer's weight, the probe registers a tensor hook, a post-accumulate-grad hook and an optimizer step
pre-hook, and a forward hook that puts a tensor hook on the layer's output (an activation, which FSDP does
not shard). Each rank trains on its own slice of the batch (rank ``r`` takes every ``world_size``-th row
from ``r``). Everything the hooks saw goes back to the parent, which :func:`local_gradients` lets compare
with the same model's gradients computed in one process without FSDP.

The children print nothing: their output goes to a log file that is shown only if one fails. Past
``timeout_s`` they are killed; they never outlive the call.
"""

from __future__ import annotations

import multiprocessing
from typing import Any

import torch
from torch import Tensor, nn

from hookviz.ddp_demo import FORKSERVER_PRELOAD, _checked_start_method, run_probe_workers
from hookviz.guards import check_int, check_seed
from hookviz.i18n import N_

__all__ = ["FSDP_PROBE_PLACES", "local_gradients", "probe_batch", "probe_model", "run_fsdp_hook_probe"]

#: The places :func:`run_fsdp_hook_probe` records, in the order they run in a step.
FSDP_PROBE_PLACES = ("activation_hook", "tensor_hook", "post_accumulate_grad_hook", "step_pre_hook")

# The fork server imports these once, so that only the first run in a process pays for them.
_FSDP_PRELOAD = [*FORKSERVER_PRELOAD, "torch.distributed.fsdp", "torch.distributed.tensor", "hookviz.fsdp_demo"]


def probe_model(seed: int = 0) -> nn.Sequential:
    """The probe's model: ``Linear(4, 6) -> ReLU -> Linear(6, 2)``, the same weights for the same ``seed``.

    The first layer's weight has 6 rows, so two ranks hold 3 rows each.
    """
    torch.manual_seed(check_seed(seed))
    return nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))


def probe_batch(batch_size: int = 8, seed: int = 1) -> Tensor:
    """The probe's batch: ``batch_size`` random rows of 4 features (the same for the same ``seed``)."""
    batch_size = check_int(batch_size, "batch_size", minimum=1, fix=N_("rows of the batch, e.g. 8"))
    generator = torch.Generator().manual_seed(check_seed(seed))
    return torch.randn(batch_size, 4, generator=generator)


def local_gradients(world_size: int = 2, batch_size: int = 8) -> list[Tensor]:
    """In one process, without FSDP: each rank's own full gradient of the first layer's weight.

    Rank ``r``'s gradient is that of ``probe_model()``'s loss (the sum of its outputs) on rows
    ``r, r + world_size, ...`` of :func:`probe_batch`, as each FSDP rank computes it before the
    gradients are reduced.
    """
    x = probe_batch(batch_size)
    grads = []
    for rank in range(world_size):
        model = probe_model()
        model(x[rank::world_size]).sum().backward()
        grads.append(model[0].weight.grad.detach().clone())
    return grads


def _probe_one_rank(rank: int, world_size: int, batch_size: int) -> dict[str, Any]:
    """One rank of :func:`run_fsdp_hook_probe`: shard the model, hook it, run one training step."""
    from torch.distributed.fsdp import fully_shard

    model = probe_model()
    fully_shard(model[0])
    fully_shard(model)
    weight = model[0].weight
    seen: dict[str, list[dict[str, Any]]] = {place: [] for place in FSDP_PROBE_PLACES}

    def describe(t: Tensor) -> dict[str, Any]:
        local = t.to_local() if hasattr(t, "to_local") else t
        return {
            "type": type(t).__name__,
            "shape": tuple(t.shape),
            "local": local.detach().clone(),
            "placements": [str(p) for p in getattr(t, "placements", ())],
        }

    def hook_the_output(module: nn.Module, inputs: Any, out: Tensor) -> None:
        out.register_hook(lambda g: seen["activation_hook"].append(describe(g)))

    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    handles = [
        weight.register_hook(lambda g: seen["tensor_hook"].append(describe(g))),
        weight.register_post_accumulate_grad_hook(lambda p: seen["post_accumulate_grad_hook"].append(describe(p.grad))),
        optimizer.register_step_pre_hook(lambda *_: seen["step_pre_hook"].append(describe(weight.grad))),
        model[0].register_forward_hook(hook_the_output),
    ]
    parameter = describe(weight)
    before = weight.to_local().detach().clone()
    try:
        x = probe_batch(batch_size)[rank::world_size]
        model(x).sum().backward()
        full_grad = weight.grad.full_tensor().detach().clone()  # a collective: every rank calls it
        optimizer.step()
    finally:
        for handle in handles:
            handle.remove()
    return {
        "rank": rank,
        "parameter": parameter,
        "seen": seen,
        "full_grad": full_grad,
        "step_change": (before - weight.to_local().detach()).clone(),
        "torch": torch.__version__,
    }


def run_fsdp_hook_probe(
    world_size: int = 2, batch_size: int = 8, timeout_s: float = 120.0, start_method: str | None = None
) -> list[dict[str, Any]]:
    """Watch the first layer's weight through one FSDP2 training step in ``world_size`` gloo processes.

    Returns one dict per rank: ``"rank"``; ``"parameter"`` (what the sharded weight is: ``type``,
    global ``shape``, this rank's ``local`` slice, ``placements``); ``"seen"``, for each place of
    :data:`FSDP_PROBE_PLACES`, one dict per call (the same keys, describing the gradient the hook got);
    ``"full_grad"`` (``weight.grad.full_tensor()`` after backward); ``"step_change"`` (how much the
    optimizer step moved this rank's slice); ``"torch"`` (the version the workers ran).

    ``world_size`` must divide the weight's 6 rows and ``batch_size`` (the rows of the batch).
    ``timeout_s`` bounds the process group's operations and the whole run: past it the children are
    killed and a ``RuntimeError`` with their logs is raised. ``start_method`` is ``"forkserver"`` or
    ``"spawn"`` (``None``: the fork server where the OS has one).
    """

    if not isinstance(world_size, int) or world_size < 1 or 6 % world_size or batch_size % world_size:
        raise ValueError(
            f"world_size={world_size!r} must be a whole number that divides the weight's 6 rows and "
            f"batch_size={batch_size!r}: use world_size=2 (or 1, 3, 6) and a batch_size it divides"
        )
    start_method = _checked_start_method(start_method)
    if start_method == "forkserver":
        multiprocessing.get_context("forkserver").set_forkserver_preload(_FSDP_PRELOAD)
    return run_probe_workers(_probe_one_rank, "FSDP", world_size, batch_size, timeout_s, start_method)
