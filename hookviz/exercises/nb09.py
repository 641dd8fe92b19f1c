"""Checkers for notebook 09, hooks in production (TorchScript pre-hooks, sampling hooks, DDP comm hooks).

Each ``check_*`` function runs the learner's code on a small case, prints ``✓ ...`` when it behaves
as asked and raises :class:`~hookviz.exercises.ExerciseNotSolved` with a hint otherwise.
"""

# No `from __future__ import annotations`: DDP reads comm hooks' annotations at run time.

import os
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from hookviz.exercises import (
    ExerciseNotSolved,
    call_learner_code,
    checker,
    expect,
    learner_result,
    missing_return,
    passed,
)
from hookviz.i18n import N_

__all__ = ["check_sampled_hook", "check_script_pre_hook", "check_local_only_comm_hook"]


@checker
def check_sampled_hook(make_sampled_hook: Callable[[list, int], Callable[..., Any]]) -> None:
    """Exercise 2: ``make_sampled_hook(store, every)`` returns a forward hook that appends the mean of
    the module's output (a Python float) to ``store`` on calls 0, ``every``, ``2 * every``, ...
    and does nothing on the other calls. It must not change the output."""
    torch.manual_seed(0)
    layer = nn.Linear(6, 3)
    for every in (10, 4):
        store: list = []
        hook = learner_result(
            make_sampled_hook, N_("make_sampled_hook must return the forward hook it builds"), store, every
        )
        expect(callable(hook), "make_sampled_hook must return a function (the forward hook)")
        handle = layer.register_forward_hook(hook)
        try:
            expected, outputs = [], []
            for call in range(25):
                x = torch.randn(2, 6)
                out = call_learner_code(layer, x)
                with torch.no_grad():
                    plain = nn.functional.linear(x, layer.weight, layer.bias)
                expect(torch.allclose(out, plain), "the hook changed the layer's output: a logging hook returns None")
                outputs.append(out)
                if call % every == 0:
                    expected.append(plain.mean().item())
        finally:
            handle.remove()
        expect(
            len(store) == len(expected),
            f"with every={every}, 25 calls should store {len(expected)} values, not {len(store)}: "
            "count the calls in the hook's closure and record only when the count is a multiple of `every`",
        )
        expect(
            all(isinstance(v, float) for v in store),
            "store plain Python floats (`.item()`), not tensors: a stored tensor can keep the autograd graph alive",
        )
        expect(
            all(abs(a - b) < 1e-5 for a, b in zip(store, expected, strict=True)),
            "the stored values are not the means of the outputs of calls 0, every, 2*every, ...",
        )
    passed("the hook records every k-th call only: the other calls cost one counter increment")


@checker
def check_script_pre_hook(hook: Callable[..., Any]) -> None:
    """Exercise 1: ``hook`` is a forward pre-hook that doubles a module's (single) input and that
    ``torch.jit.script`` can compile (both arguments and the return value annotated)."""
    torch.manual_seed(0)
    layer = nn.Linear(4, 2)
    x = torch.randn(3, 4)
    with torch.no_grad():
        expected = layer(2 * x)
    eager = call_learner_code(hook, layer, (x,))
    missing_return(hook, eager, N_("a pre-hook changes the module's input only through the value it returns"))
    expect(
        isinstance(eager, tuple) and len(eager) == 1 and isinstance(eager[0], torch.Tensor),
        "return the new inputs as a tuple holding one tensor, e.g. `(new_x,)`",
    )
    expect(torch.allclose(eager[0], 2 * x), "the returned input should be twice the original input")
    handle = layer.register_forward_pre_hook(hook)
    try:
        with warnings.catch_warnings():
            # 2.13 warns with DeprecationWarning, 2.14 with FutureWarning: match the message, not the category.
            warnings.filterwarnings("ignore", message=r"`torch\.jit\.\w+` is deprecated")
            try:
                scripted = torch.jit.script(layer)
            except Exception as exc:  # torch.jit.frontend errors have several types
                first = str(exc).strip().splitlines()[0].rstrip(".")
                raise ExerciseNotSolved(
                    f"torch.jit.script could not compile the hook: {first}. Hint: annotate both "
                    "arguments (the inputs are a tuple of tensors) and the return type"
                ) from None
    finally:
        handle.remove()
    with torch.no_grad():
        out = scripted(x)
    expect(torch.allclose(out, expected), "the scripted module does not see a doubled input")
    passed("TorchScript compiled the pre-hook into the module, and the scripted module doubles its input")


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(5, 4)
        self.b = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x)))


def _free_port() -> int:
    from hookviz.ddp_demo import free_port

    return free_port()


@checker
def check_local_only_comm_hook(hook: Callable[..., Any]) -> None:
    """Exercise 3: ``hook(state, bucket)`` is a DDP communication hook that does no communication at
    all: it returns an already completed future holding the bucket's own (local) gradients.

    The check runs a one-process ``gloo`` group on 127.0.0.1, wraps a small net in DDP, registers
    the hook, counts calls of ``torch.distributed.all_reduce`` and compares the gradients with the
    gradients of the same net without DDP.
    """
    from torch.nn.parallel import DistributedDataParallel as DDP

    created = not dist.is_initialized()
    if created:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ["MASTER_PORT"] = str(_free_port())
        dist.init_process_group("gloo", rank=0, world_size=1)
    real_all_reduce = dist.all_reduce
    reduces = []

    def counting_all_reduce(*args: Any, **kwargs: Any) -> Any:
        reduces.append(1)
        return real_all_reduce(*args, **kwargs)

    calls = []

    def wrapped(state: Any, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        calls.append(bucket.index())
        result = hook(state, bucket)
        # DDP's C++ reducer trusts the hook's result: a wrong type can crash the process, so check here.
        if not isinstance(result, torch._C.Future):  # torch.futures.Future and what .then() returns
            raise TypeError(f"_hook_returned_{type(result).__name__}_not_a_Future")
        if result.done():
            value = result.value()
            if not isinstance(value, torch.Tensor) or value.shape != bucket.buffer().shape:
                raise TypeError("_future_value_is_not_the_bucket_buffer")
        return result

    try:
        torch.manual_seed(0)
        plain = _Net()
        ddp = DDP(_Net())
        ddp.module.load_state_dict(plain.state_dict())
        try:
            ddp.register_comm_hook(None, wrapped)
        except ValueError as exc:
            raise ExerciseNotSolved(f"DDP refused the hook: {exc}") from None
        x = torch.randn(8, 5)
        plain(x).pow(2).mean().backward()
        dist.all_reduce = counting_all_reduce
        try:
            ddp(x).pow(2).mean().backward()
        except Exception as exc:
            text = f"{type(exc).__name__}: {exc}"
            if "NotImplementedError" in text or isinstance(exc, NotImplementedError):
                raise ExerciseNotSolved(
                    "not solved yet: replace `raise NotImplementedError` in the exercise cell with your code"
                ) from None
            if "_not_a_Future" in text:
                raise ExerciseNotSolved(
                    "the hook must return a torch.futures.Future (make one, set its result, return it)"
                ) from None
            if "_future_value_is_not_the_bucket_buffer" in text:
                raise ExerciseNotSolved("the future's result must be the bucket's flat gradient tensor") from None
            raise ExerciseNotSolved(
                f"backward failed inside your hook: {text.splitlines()[0]}. Hint: return a "
                "torch.futures.Future whose result is set to the bucket's buffer"
            ) from None
        finally:
            dist.all_reduce = real_all_reduce
        expect(len(calls) > 0, "DDP never called the hook: register it with ddp.register_comm_hook(state, hook)")
        expect(not reduces, "the hook called dist.all_reduce: this hook must not communicate at all")
        same = all(
            p.grad is not None and torch.allclose(p.grad, q.grad)
            for p, q in zip(ddp.module.parameters(), plain.parameters(), strict=True)
        )
        expect(
            same, "the gradients DDP wrote back are not the local gradients: set the future's result to bucket.buffer()"
        )
    finally:
        dist.all_reduce = real_all_reduce
        if created:
            dist.destroy_process_group()
    passed("DDP accepted the completed future: every rank keeps its own gradients, nothing is sent")
