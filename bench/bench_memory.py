"""Memory of a long monitored run (target: 2,000 monitored steps grow resident memory by < 50 MiB).

Trains the bundled CNN for 2,000 steps under a ``TrainingMonitor`` (statistics of every parameterised
layer every step, live probe feature maps and redraws into the widget, whole-run history of at most
512 points, so it is merged pairwise twice during the run), after a short warm-up that loads everything
once. Resident memory (VmRSS) is read before and after.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gc  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402

import hookviz  # noqa: E402
from hookviz.widgets import TrainingMonitor  # noqa: E402

TARGET_MIB = 50.0


def rss_mib() -> float:
    """Resident set size of this process in MiB (Linux /proc)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def main() -> int:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = hookviz.DigitsCNN()
    monitor = TrainingMonitor(model)
    monitor.run(30)  # warm-up: allocator, fonts, the figure
    gc.collect()
    before = rss_mib()
    monitor.run(2000)
    gc.collect()
    after = rss_mib()
    growth = after - before
    state = monitor.state
    print(
        f"bench_memory: {state.step - 30} monitored steps, {len(state.layer_names)} layers, {state.updates} updates"
    )
    print(f"  resident memory {before:.1f} MiB -> {after:.1f} MiB: +{growth:.1f} MiB  (target < {TARGET_MIB})")
    print(
        f"  history: {len(state.history)} points of {state.history.width} steps for {state.step} steps "
        f"(at most {state.history.capacity}), first point ends at step {int(state.steps()[0])}"
    )
    print(f"  hooks left on the model: {len(hookviz.list_hooks(model))}")
    failed = growth >= TARGET_MIB or hookviz.list_hooks(model)
    print("FAIL" if failed else "OK")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
