"""Checkers for notebook 15: hooks in compiled and sharded training loops, and hooks that keep tensors."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from hookviz.exercises import call_learner_code, checker, expect, passed
from hookviz.hooks_table import list_hooks

__all__ = ["check_norm_logger_compiles_once", "check_recent_rows"]


def _stored_bytes(tensors: list[Tensor]) -> int:
    """Bytes of memory the tensors keep alive: each distinct storage counted once."""
    storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors}
    return sum(storages.values())


@checker
def check_recent_rows(attach: Callable[[nn.Module, int], Any]) -> None:
    """Check ``attach(layer, maxlen)``: keep the first output row of the last ``maxlen`` calls, and no more."""
    torch.manual_seed(5)
    layer = nn.Linear(4, 5)
    result = call_learner_code(attach, layer, 3)
    expect(
        isinstance(result, tuple) and len(result) == 2,
        "attach should return a pair (handle, buffer): the handle of the forward hook and the buffer it fills",
    )
    handle, buffer = result
    expect(hasattr(handle, "remove"), "the first item should be the handle that register_forward_hook returned")
    outputs = []
    try:
        with torch.no_grad():
            for step in range(6):
                out = layer(torch.randn(8, 4) + step)
                outputs.append(out[0].clone())
                out.mul_(0)  # the caller changes the output in place afterwards (as an in-place ReLU would)
        kept = list(buffer)
    finally:
        handle.remove()
    expect(
        len(kept) == 3,
        f"after 6 calls with maxlen=3 the buffer holds {len(kept)} tensors, expected 3: use "
        "collections.deque(maxlen=maxlen), which drops the oldest entry itself",
    )
    expect(all(isinstance(t, Tensor) for t in kept), "the buffer should hold tensors (one output row per call)")
    expect(
        all(tuple(t.shape) == (5,) for t in kept),
        f"each kept tensor should be the first row of the output, shape (5,); got {[tuple(t.shape) for t in kept]}",
    )
    expect(
        not any(
            torch.equal(t, torch.zeros(5)) and not torch.equal(want, torch.zeros(5))
            for t, want in zip(kept, outputs[-3:], strict=True)
        ),
        "the kept rows turned to zeros when the output was changed in place after the hook ran: you kept a view "
        "of the output. Keep a copy: out[0].detach().clone()",
    )
    expect(
        all(torch.allclose(t, want) for t, want in zip(kept, outputs[-3:], strict=True)),
        "the kept rows are not the first output rows of the last 3 calls, oldest first",
    )
    row_bytes = 5 * 4
    expect(
        _stored_bytes(kept) == 3 * row_bytes,
        f"the 3 kept rows hold {_stored_bytes(kept)} bytes alive, but 3 rows of 5 float32 need {3 * row_bytes}: "
        "a row sliced from the output shares the whole batch's storage. Keep a copy: out[0].detach().clone()",
    )
    expect(all(not t.requires_grad for t in kept), "detach the kept rows: they should not hold the autograd graph")
    left = list_hooks(layer, include_global=False)
    expect(not left, f"{len(left)} hook(s) still attached after handle.remove(): return the handle of your hook")
    passed("the last 3 first rows, copied: 60 bytes kept after 6 calls, and no hook left behind")


@checker
def check_norm_logger_compiles_once(make_hook: Callable[[list[Any]], Callable[..., Any]]) -> None:
    """Check ``make_hook(log)``: a forward hook logging the output's norm that a compiled model runs every step
    without compiling again."""
    from torch._dynamo.utils import counters

    torch.manual_seed(6)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
    log: list[Any] = []
    hook = call_learner_code(make_hook, log)
    expect(callable(hook), f"make_hook should return the hook function, got {type(hook).__name__}")
    handle = model[0].register_forward_hook(hook)
    truth = []
    previous_level = logging.getLogger("torch._dynamo").level
    torch.compiler.reset()
    counters.clear()
    try:
        torch._logging.set_logs(dynamo=logging.ERROR)
        compiled = torch.compile(model, backend="eager")
        for _ in range(10):
            with torch.no_grad():  # the layer's output without calling the layer (which would run the hook)
                truth.append(nn.functional.linear(x, model[0].weight, model[0].bias).norm())
            optimizer.zero_grad()
            nn.functional.cross_entropy(compiled(x), y).backward()
            optimizer.step()
        graphs = counters["stats"]["unique_graphs"]
    finally:
        handle.remove()
        torch.compiler.reset()
        counters.clear()
        logging.getLogger("torch._dynamo").setLevel(previous_level)
    expect(
        len(log) == 10,
        f"10 compiled training steps ran and your hook logged {len(log)} values: it should append one per call",
    )
    values = [float(v) for v in log]
    expect(
        all(abs(got - float(want)) <= 1e-4 * float(want) for got, want in zip(values, truth, strict=True)),
        "the logged values are not the norms of the layer's output at each step (out.detach().norm())",
    )
    expect(
        graphs <= 2,
        f"Dynamo compiled {graphs} graphs in 10 steps: it guards the length of the list your hook appends to, so "
        "every step compiled again (up to the recompile limit). Hint: wrap the hook in torch.compiler.disable.",
    )
    passed("10 norms logged in 10 compiled steps, without compiling again at every step")
