"""Cost of the training monitor on the course CNN (target: <= 1.2x the bare training step).

The same training step of the bundled CNN (DigitsCNN, batch 64, AdamW, one thread) in four variants,
measured interleaved in rounds so that a noisy machine slows all of them alike:

* bare: no hooks;
* capture only: ``hookviz.capture`` with the monitor's reducer (a strided sample of 256 values per
  tensor) on the same layers, cleared every step: the hooks alone, no statistics (for reference);
* monitor: ``MonitorState(model, step).run(...)`` as a learner makes it, watching its default layers
  (the 5 layers with parameters): hooks, the check that each watched layer is still in the model,
  statistics every 10 steps, no drawing;
* monitor, every leaf: the same on all 10 leaf layers (what ``bench_capture.py`` measures).

The ratio of a variant is the median over rounds of (variant time / bare time of the same round),
wall time and the thread's CPU time both: pairing cancels the slow swings of a shared machine, and the
CPU time leaves out the time the thread waited for a core. Prints the medians and ratios; exits 1 when
the monitor's wall-time ratio is above the target.

Where the time goes (cProfile of one monitored step): PyTorch's own forward, backward and AdamW step
are most of it; then the capture hooks (the strided sample of each output and gradient, a tensor hook
per output); then the statistics, computed every 10 steps in one vectorised pass (the gradient
histograms only when a view reads them: only the last steps' are ever shown); the per-step
bookkeeping (the last call of each layer, the check that no watched layer was replaced) is a few
dict lookups per layer.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import sys  # noqa: E402
from collections.abc import Callable  # noqa: E402

import torch  # noqa: E402
from timing import Timing, clock, interleaved, median_time, paired_ratio, per_step  # noqa: E402

import hookviz  # noqa: E402
from hookviz.summarize import StridedSample  # noqa: E402
from hookviz.widgets.monitor import MonitorState, default_layers, digits_step_fn  # noqa: E402

TARGET = 1.2
ROUNDS, STEPS = 16, 50


def main() -> int:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = hookviz.DigitsCNN()
    step = digits_step_fn(model)
    leaves = [name for name, m in model.named_modules() if name and not list(m.children())]
    watched = list(default_layers(model))
    monitor = MonitorState(model, step, history=1000, key="bench.monitor")
    monitor_leaves = MonitorState(model, step, layers=leaves, history=1000, key="bench.leaves")

    def timed(run: Callable[[], object]) -> Callable[[], Timing]:
        def measure() -> Timing:
            start = clock()
            run()
            return per_step(start, STEPS)

        return measure

    def bare() -> None:
        for _ in range(STEPS):
            step()

    def capture_only() -> None:
        with hookviz.capture(model, watched, key="bench.capture", reduce=StridedSample(256)) as cap:
            for _ in range(STEPS):
                cap.clear()
                step()

    variants = {
        "bare": timed(bare),
        "capture": timed(capture_only),
        "monitor": timed(lambda: monitor.run(STEPS)),
        "leaves": timed(lambda: monitor_leaves.run(STEPS)),
    }
    results = interleaved(variants, ROUNDS)
    assert not hookviz.list_hooks(model, include_global=False), "hooks left behind"

    labels = {
        "bare": "bare step",
        "capture": f"capture hooks only ({len(watched)} layers)",
        "monitor": f"monitor, default layers ({len(watched)})",
        "leaves": f"monitor, every leaf ({len(leaves)})",
    }
    print(f"bench_monitor: DigitsCNN batch 64, {ROUNDS} rounds x {STEPS} steps per variant, one thread")
    print(f"  {'':34} {'wall':>9} {'ratio':>7}   {'cpu':>9} {'ratio':>7}")
    for name, label in labels.items():
        print(
            f"  {label:34} {median_time(results, name) * 1e3:6.2f} ms  x{paired_ratio(results, name):.2f}   "
            f"{median_time(results, name, cpu=True) * 1e3:6.2f} ms  x{paired_ratio(results, name, cpu=True):.2f}"
        )
    measured, leaves_ratio = paired_ratio(results, "monitor"), paired_ratio(results, "leaves")
    print(f"  monitor / bare step: x{measured:.2f} (target <= x{TARGET}); every leaf x{leaves_ratio:.2f}")
    if measured > TARGET:
        print(f"FAIL: the monitor costs x{measured:.2f} > x{TARGET} of a bare step")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
