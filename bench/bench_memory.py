"""Memory of long runs and re-run cells (targets: 5,000 monitored steps grow resident memory by < 50 MiB;
a widget cell run 20 times keeps about one widget's worth, < 8 MiB more per re-run).

Part 1 trains the bundled CNN for 5,000 steps under a ``TrainingMonitor`` (statistics of every
parameterised layer every step, live probe feature maps and redraws into the widget, whole-run history
of at most 512 points, so it is merged pairwise several times during the run), after a short warm-up
that loads everything once. Resident memory (VmRSS) is read before and after.

Part 2 runs each widget's notebook cell 20 times in a real IPython shell (the way a learner re-runs a
cell: the same source, a new execution count, the widget as the cell's result, so IPython's ``Out``
history keeps every one of them) on a larger CNN (256 and 512 channels, 64 digits): the layer
explorer, the hook timeline, the training monitor (5 steps per run) and, on the bundled transformer,
the attention explorer. hookviz closes the widget an earlier run of the same cell made; the growth per
re-run is measured, and for the explorer also with that closing switched off (what every re-run cost
before), in the same process, so the two figures compare.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gc  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

import hookviz  # noqa: E402
from hookviz.widgets import TrainingMonitor  # noqa: E402
from hookviz.widgets import common as widget_common  # noqa: E402

TARGET_MIB = 50.0
RERUN_TARGET_MIB = 8.0  # per re-run of a cell, after the first
STEPS = 5000
RERUNS = 20

CELLS = {
    "LayerExplorer": "hookviz.LayerExplorer(big_cnn, images, labels)",
    "HookTimeline": "hookviz.HookTimeline(big_cnn, images[:8])",
    "TrainingMonitor": "mon = hookviz.TrainingMonitor(big_cnn, big_step, probe=images[:1])\nmon.run(5)\nmon",
    "AttentionExplorer": "hookviz.AttentionExplorer(tiny, tokens)",
}


def rss_mib() -> float:
    """Resident set size of this process in MiB (Linux /proc)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def monitored_steps() -> bool:
    """Part 1: 5,000 monitored steps of the bundled CNN; True when within the target."""
    torch.manual_seed(0)
    model = hookviz.DigitsCNN()
    monitor = TrainingMonitor(model)
    monitor.run(30)  # warm-up: allocator, fonts, the figure
    gc.collect()
    before = rss_mib()
    t0 = time.perf_counter()
    monitor.run(STEPS)
    seconds = time.perf_counter() - t0
    gc.collect()
    after = rss_mib()
    growth = after - before
    state = monitor.state
    print(
        f"monitored steps: {state.step - 30} steps in {seconds:.0f} s, {len(state.layer_names)} layers, "
        f"{state.updates} updates"
    )
    print(f"  resident memory {before:.1f} MiB -> {after:.1f} MiB: +{growth:.1f} MiB  (target < {TARGET_MIB:g})")
    print(
        f"  history: {len(state.history)} points of {state.history.width} steps for {state.step} steps "
        f"(at most {state.history.capacity}), first point ends at step {int(state.steps()[0])}"
    )
    print(f"  index cache of the strided sample: {len(state.reducer._index)} sizes")
    hooks = len(hookviz.list_hooks(model))
    print(f"  hooks left on the model: {hooks}")
    monitor.close()
    return growth < TARGET_MIB and not hooks


def rerun_growth(shell: InteractiveShell, cell: str, runs: int = RERUNS) -> tuple[float, float, float]:
    """Run ``cell`` ``runs`` times; return (MiB after the first run, after the last, growth per re-run)."""
    shell.run_cell(cell, store_history=True, silent=False)
    gc.collect()
    first = rss_mib()
    for _ in range(runs - 1):
        result = shell.run_cell(cell, store_history=True, silent=False)
        if result.error_in_exec is not None:
            raise result.error_in_exec
    gc.collect()
    last = rss_mib()
    return first, last, (last - first) / (runs - 1)


def rerun_cells() -> bool:
    """Part 2: each widget cell run 20 times in an IPython shell; True when every re-run stays within the target."""
    shell = InteractiveShell.instance()
    shell.display_formatter.active_types = ["text/plain"]  # no front end: keep the shell's display cheap
    torch.manual_seed(0)
    images, labels = hookviz.load_digits("test")
    big_cnn = hookviz.DigitsCNN(channels=(256, 512))
    optimizer = torch.optim.SGD(big_cnn.parameters(), lr=0.01)

    def big_step() -> torch.Tensor:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(big_cnn(images[:64]), labels[:64])
        loss.backward()
        optimizer.step()
        return loss

    namespace = dict(
        hookviz=hookviz,
        big_cnn=big_cnn,
        big_step=big_step,
        images=images[:64],
        labels=labels[:64],
        tiny=hookviz.load_tiny_transformer(),
        tokens=hookviz.make_tiny_batch(16)[0],
    )
    shell.user_ns.update(namespace)
    size = sum(p.numel() for p in big_cnn.parameters())
    print(f"re-run cells ({RERUNS} runs each; larger CNN: channels 256/512, {size:,} parameters, 64 digits):")
    ok = True
    for name, cell in CELLS.items():
        first, last, per_run = rerun_growth(shell, cell)
        ok &= per_run < RERUN_TARGET_MIB
        print(
            f"  {name:<18} {first:7.1f} MiB after run 1 -> {last:7.1f} MiB after run {RERUNS}: "
            f"{per_run:+.2f} MiB per re-run"
        )
    threads = [t.name for t in __import__("threading").enumerate() if t.name.startswith("hookviz")]
    print(f"  hookviz threads left running: {len(threads)}; hooks left on the CNN: {len(hookviz.list_hooks(big_cnn))}")
    ok &= not threads
    # The same explorer cell with the closing of the earlier run's widget switched off: what each re-run cost before.
    original = widget_common.previous_from_same_place
    widget_common.previous_from_same_place = lambda *args, **kwargs: None
    try:
        first, last, unclosed = rerun_growth(shell, CELLS["LayerExplorer"], runs=6)
    finally:
        widget_common.previous_from_same_place = original
    shell.reset(new_session=False)  # forget the Out history of those unclosed explorers
    shell.user_ns.update(namespace)
    gc.collect()
    closed = rerun_growth(shell, CELLS["LayerExplorer"], runs=6)[2]
    print(
        f"  LayerExplorer, 6 runs without closing the earlier run's widget: {unclosed:+.1f} MiB per re-run "
        f"({first:.1f} -> {last:.1f} MiB); the same 6 runs with it: {closed:+.2f} MiB per re-run"
    )
    return ok


def main() -> int:
    torch.set_num_threads(1)
    ok = monitored_steps()
    ok &= rerun_cells()
    print("OK" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
