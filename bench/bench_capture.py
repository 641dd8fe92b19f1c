"""Cost of watching every layer while training the bundled CNN (target: <= +0.1 over the hooks' own cost).

Three variants of the same training step (DigitsCNN, batch 64, AdamW), measured interleaved in
rounds so that a noisy machine slows all of them alike, one thread:

* bare: no hooks;
* hookviz: ``MonitorState`` on every leaf layer (10 layers): ``hookviz.capture`` with a
  ``StridedSample`` reducer (256 elements per tensor, the monitor's default) on activations and
  output gradients, statistics and histograms computed every 10 steps in one vectorised pass, no
  drawing (also shown: 1,024 elements per tensor, and recording every 2nd step);
* hand-written sampling hooks: a forward hook per layer keeping the same strided sample of the output,
  plus a tensor hook keeping one of its gradient, no check and no statistics: what PyTorch's hooks alone
  cost, the floor under any hook-based monitor;
* naive: a forward hook per layer that calls ``torch.histc`` on the full output, plus a tensor
  hook that does the same on the full gradient;
* plain store-all: the hand-written hook that keeps everything, a forward hook per layer storing a
  detached CPU copy of the output plus a tensor hook storing a copy of its gradient;
* capture: ``hookviz.capture`` on the same layers, storing the same copies, with its checks
  (structured outputs, aliased outputs, no-grad notes, the meta device): started once and cleared
  every step, as the plain hook's lists are (compared with the plain hook kept for the run), and (the
  notebooks' way) a new ``with capture(...)`` block around every step (compared with the plain hooks
  registered and removed around every step).

The ratio of a variant is the median over rounds of (variant time / bare time of the same round), for
wall time and for the thread's CPU time: pairing cancels the slow swings of a shared machine, and the CPU
time leaves out the time the thread waited for a core. Prints medians and ratios; exits 1 when the
monitor costs more than 0.1 (of a bare step) above the hand-written sampling hooks, or when capture
costs more than 0.15 above the plain store-all hook.

Why the monitor is measured against the floor: on this small model (4 ms a step) a forward hook and
a tensor hook on each of 10 layers cost PyTorch itself x1.17-x1.31 of the step (the floor, measured
in the same runs), so an absolute bound such as x1.3 measures the machine's noise and PyTorch's hook
dispatch more than hookviz. What hookviz adds on top (the checks, the statistics every 10 steps, the
history) is what its code can change, and what this target bounds.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import sys  # noqa: E402
from collections.abc import Callable  # noqa: E402

import torch  # noqa: E402
from timing import Timing, clock, interleaved, median_time, paired_ratio, per_step  # noqa: E402
from torch import nn  # noqa: E402

import hookviz  # noqa: E402
from hookviz.summarize import StridedSample  # noqa: E402
from hookviz.widgets.monitor import MonitorState, digits_step_fn  # noqa: E402

FLOOR_MARGIN = 0.1  # the monitor's ratio may exceed the hand-written sampling hooks' (the floor) by this much
CAPTURE_MARGIN = 0.15  # capture's ratio may exceed the plain store-all hook's by at most this much
ROUNDS, STEPS = 16, 60


def main() -> int:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = hookviz.DigitsCNN()
    step = digits_step_fn(model)
    leaves = [name for name, m in model.named_modules() if name and not list(m.children())]
    monitor = MonitorState(model, step, layers=leaves, history=1000)
    monitor1k = MonitorState(model, step, layers=leaves, history=1000, sample=1024, key="bench.1k")
    monitor2 = MonitorState(model, step, layers=leaves, history=1000, capture_every=2, key="bench.2")

    def hook_leaves(hook_for: Callable[[str], Callable]) -> list:
        """A forward hook ``hook_for(name)`` on each watched leaf; returns the handles."""
        return [m.register_forward_hook(hook_for(name)) for name, m in model.named_modules() if name in leaves]

    def naive_on() -> list:
        def grad_hook(g: torch.Tensor) -> None:
            torch.histc(g, bins=40)

        def fwd(module: nn.Module, args: tuple, out: torch.Tensor) -> None:
            torch.histc(out.detach(), bins=40)
            if out.requires_grad:
                out.register_hook(grad_hook)

        return hook_leaves(lambda name: fwd)

    def sampling_on() -> list:
        """The floor: hand-written hooks taking the monitor's samples, with no check and no statistics."""
        sample = StridedSample(256)
        kept: list[torch.Tensor] = []

        def grad_hook(g: torch.Tensor) -> None:
            kept.append(sample(g))

        def fwd(module: nn.Module, args: tuple, out: torch.Tensor) -> None:
            kept.append(sample(out.detach()))
            if out.requires_grad:
                out.register_hook(grad_hook)
            if len(kept) > 1000:
                kept.clear()

        return hook_leaves(lambda name: fwd)

    def time_bare() -> Timing:
        t0 = clock()
        for _ in range(STEPS):
            step()
        return per_step(t0, STEPS)

    def time_hookviz() -> Timing:
        t0 = clock()
        monitor.run(STEPS)
        return per_step(t0, STEPS)

    def time_hookviz1k() -> Timing:
        t0 = clock()
        monitor1k.run(STEPS)
        return per_step(t0, STEPS)

    def time_hookviz2() -> Timing:
        t0 = clock()
        monitor2.run(STEPS)
        return per_step(t0, STEPS)

    def plain_on(store: dict[str, tuple[list, list]]) -> list:
        def make(name: str):  # noqa: ANN202 - a hook factory
            acts, grads = store.setdefault(name, ([], []))

            def grad_hook(g: torch.Tensor) -> None:
                grads.append(g.detach().to("cpu", copy=True))

            def fwd(module: nn.Module, args: tuple, out: torch.Tensor) -> None:
                acts.append(out.detach().to("cpu", copy=True))
                if out.requires_grad:
                    out.register_hook(grad_hook)

            return fwd

        return hook_leaves(make)

    def time_plain() -> Timing:
        store: dict[str, tuple[list, list]] = {}
        handles = plain_on(store)
        try:
            t0 = clock()
            for _ in range(STEPS):
                for acts, grads in store.values():
                    acts.clear()
                    grads.clear()
                step()
            return per_step(t0, STEPS)
        finally:
            for h in handles:
                h.remove()

    def time_plain_each() -> Timing:
        """The plain hooks registered and removed around every step, like a with-block."""
        t0 = clock()
        for _ in range(STEPS):
            handles = plain_on({})
            try:
                step()
            finally:
                for h in handles:
                    h.remove()
        return per_step(t0, STEPS)

    def time_capture() -> Timing:
        with hookviz.capture(model, leaves, key="bench.capture") as cap:
            t0 = clock()
            for _ in range(STEPS):
                cap.clear()
                step()
            return per_step(t0, STEPS)

    def time_capture_each() -> Timing:
        t0 = clock()
        for _ in range(STEPS):
            with hookviz.capture(model, leaves, key="bench.capture"):
                step()
        return per_step(t0, STEPS)

    def with_hooks(hooks_on: Callable[[], list]) -> Callable[[], Timing]:
        """The bare step timed with the hooks that ``hooks_on()`` registers, removed afterwards."""

        def run() -> Timing:
            handles = hooks_on()
            try:
                return time_bare()
            finally:
                for h in handles:
                    h.remove()

        return run

    variants = {
        "bare": time_bare,
        "hookviz": time_hookviz,
        "hookviz1k": time_hookviz1k,
        "hookviz2": time_hookviz2,
        "naive": with_hooks(naive_on),
        "sampling": with_hooks(sampling_on),
        "plain": time_plain,
        "capture": time_capture,
        "plain_each": time_plain_each,
        "capture_each": time_capture_each,
    }
    results = interleaved(variants, ROUNDS)
    med = {name: median_time(results, name) for name in variants}
    ratio = {name: paired_ratio(results, name) for name in variants}
    cpu = {name: paired_ratio(results, name, cpu=True) for name in variants}
    assert not hookviz.list_hooks(model, include_global=False), "hooks left behind"
    ratio_hv = ratio["hookviz"]
    print(f"bench_capture: DigitsCNN batch 64, {len(leaves)} layers watched, {ROUNDS}x{STEPS} steps per variant")
    print(f"  bare step                        {med['bare'] * 1e3:7.2f} ms")
    print(f"  {'':32} {'wall':>7}      ratio   cpu ratio")
    print(
        f"  hookviz monitor (256/tensor)     {med['hookviz'] * 1e3:7.2f} ms   x{ratio_hv:.2f}   x{cpu['hookviz']:.2f}"
        f"  ({ratio_hv - ratio['sampling']:+.2f} over the floor; target <= +{FLOOR_MARGIN})"
    )
    print(f"  hookviz monitor (1024/tensor)    {med['hookviz1k'] * 1e3:7.2f} ms   x{ratio['hookviz1k']:.2f}")
    print(f"  hookviz, recording every 2nd step {med['hookviz2'] * 1e3:6.2f} ms   x{ratio['hookviz2']:.2f}")
    print(
        f"  hand-written sampling hooks      {med['sampling'] * 1e3:7.2f} ms   x{ratio['sampling']:.2f}   "
        f"x{cpu['sampling']:.2f}  (the same samples, no checks, no statistics: PyTorch's own share)"
    )
    print(f"  naive histc on full tensors      {med['naive'] * 1e3:7.2f} ms   x{ratio['naive']:.2f}")
    print(f"  plain store-all hook             {med['plain'] * 1e3:7.2f} ms   x{ratio['plain']:.2f}")
    # like for like: hooks kept for the whole run against the plain hooks kept, hooks added around every step
    # against the plain hooks added and removed around every step
    extra = {"capture": ratio["capture"] - ratio["plain"], "capture_each": ratio["capture_each"] - ratio["plain_each"]}
    print(
        f"  hookviz.capture, store all       {med['capture'] * 1e3:7.2f} ms   x{ratio['capture']:.2f}  "
        f"({extra['capture']:+.2f} over the plain store-all hook; target <= +{CAPTURE_MARGIN})"
    )
    print(f"  plain hooks added every step     {med['plain_each'] * 1e3:7.2f} ms   x{ratio['plain_each']:.2f}")
    print(
        f"  a new capture every step         {med['capture_each'] * 1e3:7.2f} ms   x{ratio['capture_each']:.2f}  "
        f"({extra['capture_each']:+.2f} over the plain hooks added every step; target <= +{CAPTURE_MARGIN})"
    )
    print(f"  statistics kept: {len(monitor.history)} steps of {monitor.step}")
    failed = False
    if ratio_hv - ratio["sampling"] > FLOOR_MARGIN:
        print(f"FAIL: the hookviz monitor costs {ratio_hv - ratio['sampling']:+.2f} over hand-written sampling hooks")
        failed = True
    if max(extra.values()) > CAPTURE_MARGIN:
        print(f"FAIL: hookviz.capture costs {max(extra.values()):+.2f} over a plain store-all hook > +{CAPTURE_MARGIN}")
        failed = True
    if failed:
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
