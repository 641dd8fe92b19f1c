"""A real two-process DistributedDataParallel run on one CPU machine, to watch DDP communication hooks.

Notebook 09 calls :func:`run_ddp_demo`. It starts ``world_size`` processes with
``torch.multiprocessing.start_processes`` and the ``forkserver`` start method where the OS has it
(Linux, macOS), ``spawn`` elsewhere (Windows). Never plain ``fork``: once autograd has started its
worker threads in the parent (in notebook 09, the ``torch.compile``'d backward passes do it), torch 2.14
refuses to run backward in a forked child ("Unable to handle autograd's threading in combination with
fork-based multiprocessing"); torch 2.13 let it pass. The fork server is a fresh interpreter that never
runs autograd: it imports torch, DDP and this module once (``FORKSERVER_PRELOAD``), and the workers of
every later run in the same parent are forked from it, so only the first run pays for the imports. With
``spawn`` every worker imports torch itself, on every run. The workers import this module by name, so it
must be importable. They join a ``gloo`` process group over the loopback interface
(``MASTER_ADDR=127.0.0.1`` and a free port), and in each process runs two forward/backward passes of
:class:`hookviz.DigitsCNN` wrapped in ``DistributedDataParallel`` on that rank's own shard of a batch,
once per communication-hook setting:

* ``"none"``: DDP's built-in gradient all-reduce (average over ranks);
* ``"count"``: :func:`counting_hook`, a logging hook that records every bucket DDP hands it and then
  does the same average all-reduce itself;
* ``"fp16"``: PyTorch's ``fp16_compress_hook`` (gradients cast to float16 for the all-reduce).

Every rank gathers every rank's gradients (``all_gather_object``) so that the parent can check that
all ranks ended with the same gradients. The children print nothing: their stdout and stderr go to a
log file in the run's temporary folder, which the parent shows only if a child fails. The model, DDP
and comm-hook code is the same on many machines; there ``torchrun`` starts the processes and sets
``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT`` for each of them, so the worker would
call ``dist.init_process_group("nccl")`` without rank and size, with one GPU per process.

Notebook 13 calls :func:`run_ddp_hook_probe`, started the same way, to show what a parameter's tensor hook,
its post-accumulate-grad hook and an optimizer step pre-hook see under DDP (each rank's local gradient, or
the average); its children are killed if they outlive ``timeout_s``.
"""

# No `from __future__ import annotations` here: DDP inspects the hook's annotations at run time and
# rejects a `bucket` parameter annotated with the string "dist.GradBucket" instead of the class.

import contextlib
import functools
import multiprocessing
import os
import socket
import sys
import tempfile
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor, nn

from hookviz.guards import shown
from hookviz.i18n import N_, join_notes

__all__ = [
    "HOOKS",
    "PROBE_PLACES",
    "counting_hook",
    "default_start_method",
    "free_port",
    "run_ddp_demo",
    "run_ddp_hook_probe",
    "shard_gradients",
]

HOOKS = ("none", "count", "fp16")
# Imported once by the fork server, so that its forked workers start with them loaded. DDP's
# constructor imports torch._dynamo, the slowest of them (seconds).
FORKSERVER_PRELOAD = [
    "torch",
    "torch._dynamo",
    "torch.distributed.algorithms.ddp_comm_hooks.default_hooks",
    "torch.nn.parallel.distributed",
    "hookviz.ddp_demo",
]


def default_start_method() -> str:
    """``"forkserver"`` where this OS offers it (Linux, macOS), else ``"spawn"`` (Windows).

    Both are safe after autograd has run in the calling process; plain ``"fork"`` is not.
    """
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def counting_hook(state: list[dict[str, int]], bucket: dist.GradBucket) -> torch.futures.Future[Tensor]:
    """A DDP communication hook that logs each bucket, then averages it over ranks like DDP does.

    ``state`` is the list given to ``register_comm_hook``; one dict per bucket is appended
    (bucket index, number of gradient elements, number of parameters). The hook must return a future
    whose value is the bucket's reduced flat gradient tensor, which DDP copies back into ``.grad``.
    """
    buffer = bucket.buffer()
    state.append({"index": bucket.index(), "numel": buffer.numel(), "params": len(bucket.parameters())})
    buffer.div_(dist.get_world_size())
    fut = dist.all_reduce(buffer, async_op=True).get_future()
    return fut.then(lambda f: f.value()[0])


def _checks_its_arguments(hook: Any) -> Any:
    """``hook`` (a communication hook taking a list ``state`` and a bucket) that first refuses a wrong ``state`` or
    ``bucket`` naming it; DDP's own calls pass. Notebook 09 prints ``inspect.getsource(counting_hook)``: through
    ``__wrapped__`` it still shows the hook itself, five lines to read, not these checks."""

    @functools.wraps(hook)
    def checked(state: Any, bucket: Any) -> Any:
        if not isinstance(state, list):
            raise TypeError(join_notes([
                N_(f"state must be the list the hook appends to, not {shown(state)}"),
                N_("pass a list to register_comm_hook: model.register_comm_hook(buckets, counting_hook)"),
            ]))
        if not isinstance(bucket, dist.GradBucket):
            raise TypeError(join_notes([
                N_(f"bucket must be the dist.GradBucket DDP hands the hook, not {shown(bucket)}"),
                N_("let DDP call the hook: model.register_comm_hook(buckets, counting_hook)"),
            ]))
        return hook(state, bucket)

    return checked


counting_hook = _checks_its_arguments(counting_hook)


def _batch(batch_size: int) -> tuple[Tensor, Tensor]:
    from hookviz.data import load_digits

    x, y = load_digits("train")
    return x[:batch_size], y[:batch_size]


def _shard(x: Tensor, y: Tensor, rank: int, world_size: int) -> tuple[Tensor, Tensor]:
    return x[rank::world_size], y[rank::world_size]


def _fresh_model(seed: int) -> nn.Module:
    from hookviz.models import DigitsCNN

    torch.manual_seed(seed)
    return DigitsCNN()


def _grads(model: nn.Module) -> dict[str, Tensor]:
    return {name: p.grad.detach().clone() for name, p in model.named_parameters()}


def _one_step(rank: int, world_size: int, hook: str, batch_size: int, bucket_cap_mb: float) -> dict[str, Any]:
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel as DDP

    # Rank 1 starts from different weights on purpose: DDP broadcasts rank 0's weights at wrap time.
    model = DDP(_fresh_model(seed=rank), bucket_cap_mb=bucket_cap_mb)
    buckets: list[dict[str, int]] = []
    if hook == "count":
        model.register_comm_hook(buckets, counting_hook)
    elif hook == "fp16":
        model.register_comm_hook(None, default_hooks.fp16_compress_hook)
    x, y = _shard(*_batch(batch_size), rank, world_size)
    # Two identical steps: in the first one DDP keeps all gradients in one bucket (by default it
    # skips initial bucketing); after it, DDP rebuilds the buckets in the order the gradients became
    # ready, each filled up to about `bucket_cap_mb`.
    per_step: list[list[dict[str, int]]] = []
    for _ in range(2):
        model.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        per_step.append(buckets[:])
        buckets.clear()
    grads = _grads(model.module)
    weights = {name: p.detach().clone() for name, p in model.module.named_parameters()}
    gathered: list[Any] = [None] * world_size
    dist.all_gather_object(gathered, {"grads": grads, "weights": weights})
    return {"buckets": per_step, "all_ranks": gathered, "local_loss": loss.item()}


def _checked_start_method(start_method: str | None) -> str:
    """The start method for the worker processes: ``forkserver`` (spawn on Windows) unless told otherwise.

    Refuses ``fork``: a forked worker cannot run backward once autograd has run in the parent process.
    """
    if start_method is None:
        start_method = default_start_method()
    if start_method not in ("forkserver", "spawn"):
        raise ValueError(
            f"start_method must be 'forkserver' or 'spawn', not {start_method!r}: a forked worker cannot run "
            "backward once autograd has run in the parent process"
        )
    if start_method == "forkserver":
        # Takes effect when the fork server starts (the first run in this process); later runs reuse it.
        multiprocessing.get_context("forkserver").set_forkserver_preload(FORKSERVER_PRELOAD)
    return start_method


@contextlib.contextmanager
def _joined_group(rank: int, world_size: int, port: int, outdir: str, timeout_s: float | None = None) -> Iterator[None]:
    """In a worker process: send its output to ``outdir/rank<N>.log``, join the gloo group on loopback, and
    leave the group (and flush the log) on every exit path."""
    log = open(Path(outdir, f"rank{rank}.log"), "w")  # noqa: SIM115 - kept open for the process's life
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    sys.stdout = sys.stderr = log
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    timeout = {} if timeout_s is None else {"timeout": timedelta(seconds=timeout_s)}
    dist.init_process_group("gloo", rank=rank, world_size=world_size, **timeout)
    try:
        yield
    finally:
        dist.destroy_process_group()
        log.flush()


def _worker(rank: int, world_size: int, port: int, outdir: str, batch_size: int, bucket_cap_mb: float) -> None:
    """Body of one child process: join the group, run one DDP step per hook setting, save results."""
    with _joined_group(rank, world_size, port, outdir):
        results = {hook: _one_step(rank, world_size, hook, batch_size, bucket_cap_mb) for hook in HOOKS}
        results["backend"] = dist.get_backend()
        results["world_size"] = dist.get_world_size()
        torch.save(results, Path(outdir, f"rank{rank}.pt"))


def run_ddp_demo(
    world_size: int = 2, batch_size: int = 64, bucket_cap_mb: float = 0.001, start_method: str | None = None
) -> list[dict[str, Any]]:
    """Run the demo in ``world_size`` processes on this machine; return each rank's results.

    ``bucket_cap_mb`` is tiny on purpose (0.001 MB: 262 float32 gradients per bucket) so that even
    this small CNN's gradients travel in several buckets. Each returned dict maps a hook name
    (``"none"``, ``"count"``, ``"fp16"``) to ``{"buckets", "all_ranks", "local_loss"}`` (``buckets``:
    one list of logged buckets per step, filled only by ``"count"``) and also holds
    ``"backend"`` and ``"world_size"``. ``start_method`` is ``"forkserver"`` or ``"spawn"``; ``None``
    picks :func:`default_start_method`. ``"fork"`` is refused: it breaks once autograd has run in this
    process. Raises ``RuntimeError`` with the children's logs if a child fails.
    """
    import torch.multiprocessing as mp

    start_method = _checked_start_method(start_method)

    with tempfile.TemporaryDirectory() as outdir:
        try:
            mp.start_processes(
                _worker,
                args=(world_size, free_port(), outdir, batch_size, bucket_cap_mb),
                nprocs=world_size,
                join=True,
                start_method=start_method,
            )
        except Exception as exc:
            logs = "\n".join(p.read_text() for p in sorted(Path(outdir).glob("rank*.log")))
            raise RuntimeError(f"a DDP worker failed: {exc}\n{logs}") from exc
        return [torch.load(Path(outdir, f"rank{r}.pt"), weights_only=False) for r in range(world_size)]


def shard_gradients(world_size: int = 2, batch_size: int = 64, seed: int = 0) -> dict[str, Tensor]:
    """Without any process group: the average over shards of each shard's gradient, in one process.

    This is what DDP should produce (rank 0's weights, each rank's own shard, gradients averaged),
    computed by hand so that the notebook can compare it with the distributed run.
    """
    x, y = _batch(batch_size)
    total: dict[str, Tensor] = {}
    for rank in range(world_size):
        model = _fresh_model(seed)
        xs, ys = _shard(x, y, rank, world_size)
        nn.functional.cross_entropy(model(xs), ys).backward()
        for name, g in _grads(model).items():
            total[name] = total.get(name, 0) + g / world_size
    return total


# --- What parameter hooks see under DDP (notebook 13) -------------------------------------------------

#: The places :func:`run_ddp_hook_probe` records the gradient of the watched weight, in the order they run.
PROBE_PLACES = ("tensor_hook", "post_accumulate_grad_hook", "after_backward", "step_pre_hook")


def _probe_one_rank(rank: int, world_size: int, batch_size: int) -> dict[str, Any]:
    """One rank of :func:`run_ddp_hook_probe`: a ``no_sync`` backward, then a synchronised step."""
    import copy

    from torch.nn.parallel import DistributedDataParallel as DDP

    model = _fresh_model(seed=0)  # the same weights on every rank
    plain = copy.deepcopy(model)  # the same model without DDP: this rank's local gradient
    x, y = _shard(*_batch(batch_size), rank, world_size)
    nn.functional.cross_entropy(plain(x), y).backward()
    weight = model.classifier[1].weight
    seen: dict[str, list[Tensor]] = {place: [] for place in PROBE_PLACES}
    handles = [
        weight.register_hook(lambda g: seen["tensor_hook"].append(g.detach().clone())),
        weight.register_post_accumulate_grad_hook(
            lambda p: seen["post_accumulate_grad_hook"].append(p.grad.detach().clone())
        ),
    ]
    ddp = DDP(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    handles.append(optimizer.register_step_pre_hook(lambda *_: seen["step_pre_hook"].append(weight.grad.clone())))
    try:
        steps: dict[str, dict[str, list[Tensor]]] = {}
        for mode in ("no_sync", "synced"):
            optimizer.zero_grad(set_to_none=True)
            for values in seen.values():
                values.clear()
            if mode == "no_sync":
                with ddp.no_sync():
                    nn.functional.cross_entropy(ddp(x), y).backward()
            else:
                nn.functional.cross_entropy(ddp(x), y).backward()
            seen["after_backward"].append(weight.grad.detach().clone())
            if mode == "synced":
                optimizer.step()
            steps[mode] = {place: list(values) for place, values in seen.items()}
    finally:
        for handle in handles:
            handle.remove()
    return {"rank": rank, "local_grad": plain.classifier[1].weight.grad.detach().clone(), "steps": steps}


def _gather_worker(
    rank: int, probe: Any, world_size: int, port: int, outdir: str, batch_size: int, timeout_s: float
) -> None:
    """Body of one child process of :func:`run_probe_workers`: join the group, run ``probe(rank, world_size,
    batch_size)``, gather every rank's result and let rank 0 save them."""
    with _joined_group(rank, world_size, port, outdir, timeout_s):
        result = probe(rank, world_size, batch_size)
        gathered: list[Any] = [None] * world_size
        dist.all_gather_object(gathered, result)
        if rank == 0:
            torch.save(gathered, Path(outdir, "probe.pt"))


def run_ddp_hook_probe(
    world_size: int = 2, batch_size: int = 64, timeout_s: float = 120.0, start_method: str | None = None
) -> list[dict[str, Any]]:
    """Watch one weight's gradient through a DDP step in ``world_size`` gloo processes; one dict per rank.

    Every rank wraps the same :class:`hookviz.DigitsCNN` (seed 0) in ``DistributedDataParallel`` and
    trains on its own shard of the first ``batch_size`` training digits (rank ``r`` takes every
    ``world_size``-th image from ``r``). Before wrapping, a tensor hook and a post-accumulate-grad hook
    are put on ``classifier.1.weight``, and an optimizer step pre-hook reads its ``.grad``. Two
    backward passes run: one inside ``ddp.no_sync()``, then one synchronised pass followed by
    ``optimizer.step()``. Each rank's dict holds ``"rank"``, ``"local_grad"`` (the same model's
    gradient on that rank's shard without DDP) and ``"steps"``: for ``"no_sync"`` and ``"synced"``, the
    gradients seen at each place of :data:`PROBE_PLACES` (a list, one entry per call).

    The children are started like :func:`run_ddp_demo`'s (fork server, or spawn); ``timeout_s`` bounds
    the process group's operations and the whole run: past it the children are killed and a
    ``RuntimeError`` with their logs is raised. Children never outlive the call.
    """
    return run_probe_workers(
        _probe_one_rank, "DDP", world_size, batch_size, timeout_s, _checked_start_method(start_method)
    )


def run_probe_workers(
    probe: Any, label: str, world_size: int, batch_size: int, timeout_s: float, start_method: str
) -> list[dict[str, Any]]:
    """Run ``probe(rank, world_size, batch_size)`` (a module-level function) in ``world_size`` processes joined
    in one gloo group, wait for them at most ``timeout_s`` and return every rank's result, in rank order.

    The one runner of the multi-process probes (DDP here, FSDP2 in :mod:`hookviz.fsdp_demo`): a worker that
    fails, or a run past the deadline, raises ``RuntimeError`` with every rank's log; the children are killed
    on every exit path and never outlive the call.
    """
    import time

    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as outdir:

        def logs() -> str:
            return "\n".join(p.read_text() for p in sorted(Path(outdir).glob("rank*.log")))

        context = mp.start_processes(
            _gather_worker,
            args=(probe, world_size, free_port(), outdir, batch_size, timeout_s),
            nprocs=world_size,
            join=False,
            start_method=start_method,
        )
        deadline = time.monotonic() + timeout_s
        try:
            # Never wait past the deadline: the last wait is cut to the time that is left.
            while not context.join(timeout=max(0.0, min(0.2, deadline - time.monotonic()))):
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"the {label} workers did not finish within {timeout_s} s")
        except Exception as exc:
            article = "an" if label[0] in "AEFHILMNORSX" else "a"
            raise RuntimeError(f"{article} {label} worker failed: {exc}\n{logs()}") from exc
        finally:
            for process in context.processes:
                if process.is_alive():
                    process.kill()
                process.join()
        return torch.load(Path(outdir, "probe.pt"), weights_only=False)
