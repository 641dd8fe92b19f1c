"""Cost of one ``hookviz.diagnose`` on the course's CNN, as a ratio to one plain forward + backward.

The bundled trained CNN (``load_pretrained_cnn``, batch 64), one thread. Three variants, measured
interleaved in rounds so that a noisy machine slows all of them alike:

* plain: ``model(x).sum().backward()`` with no hook (the unit of the ratios);
* diagnose, no hooks: ``hookviz.diagnose(model, x)`` on the bare model;
* diagnose, 20 hooks: the same with a forward hook on every leaf layer (10) (storing a detached output, in a
  factory closure) and a post-accumulate-grad hook on every parameter (10, storing the gradient norm).

A diagnosis runs one forward and one backward like the plain step, and adds: a snapshot and restore of
the parameters, buffers and gradients, two global probes on every module call, the hook wrappers, and
the walk over what each hook can store. The ratio of a variant is the median over rounds of
(variant time / plain time of the same round). Prints medians and ratios; exits 1 when a diagnosis
costs more than ``TARGET`` plain steps.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import torch  # noqa: E402
from torch import nn  # noqa: E402

import hookviz  # noqa: E402

TARGET = 5.0
ROUNDS, REPEATS = 15, 20


def _hooked(model: nn.Module) -> list[Any]:
    """A forward hook on every leaf layer and a post-accumulate-grad hook on every parameter."""
    acts: dict[str, torch.Tensor] = {}
    norms: dict[str, float] = {}

    def recorder(name: str) -> Callable[..., None]:
        def record(module: nn.Module, args: Any, output: torch.Tensor) -> None:
            acts[name] = output.detach()

        return record

    def grad_norm(name: str) -> Callable[[torch.Tensor], None]:
        def record(param: torch.Tensor) -> None:
            norms[name] = float(param.grad.norm())

        return record

    handles = [
        m.register_forward_hook(recorder(name)) for name, m in model.named_modules() if name and not list(m.children())
    ]
    handles += [p.register_post_accumulate_grad_hook(grad_norm(name)) for name, p in model.named_parameters()]
    return handles


def main() -> int:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = hookviz.load_pretrained_cnn()
    images = torch.randn(64, 1, 8, 8)
    plain_model = hookviz.load_pretrained_cnn()
    hooked_model = hookviz.load_pretrained_cnn()
    handles = _hooked(hooked_model)
    assert len(hookviz.list_hooks(hooked_model, include_global=False)) == len(handles) == 20
    assert not hookviz.diagnose(hooked_model, images)  # the hooks are correct: nothing to report

    def plain() -> None:
        plain_model.zero_grad(set_to_none=True)
        plain_model(images).sum().backward()

    variants: dict[str, Callable[[], Any]] = {
        "plain forward+backward": plain,
        "diagnose, no hooks": lambda: hookviz.diagnose(model, images),
        "diagnose, 20 hooks": lambda: hookviz.diagnose(hooked_model, images),
    }
    for run in variants.values():  # warm up
        for _ in range(3):
            run()
    times: dict[str, list[float]] = {name: [] for name in variants}
    try:
        for _ in range(ROUNDS):
            for name, run in variants.items():
                start = time.perf_counter()
                for _ in range(REPEATS):
                    run()
                times[name].append((time.perf_counter() - start) / REPEATS)
    finally:
        for handle in handles:
            handle.remove()
    base = times["plain forward+backward"]
    worst = 0.0
    print(f"DigitsCNN (pretrained), batch {images.shape[0]}, 1 thread, {ROUNDS} rounds x {REPEATS} calls")
    for name, values in times.items():
        ratio = statistics.median(v / b for v, b in zip(values, base, strict=True))
        worst = max(worst, ratio)
        print(f"  {name:<24} median {statistics.median(values) * 1e3:7.2f} ms   ratio {ratio:5.2f}x")
    ok = worst <= TARGET
    print(f"worst ratio {worst:.2f}x (target <= {TARGET:.0f}x): {'ok' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
