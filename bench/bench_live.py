"""Live view while training in the background (targets: >= 4 refreshes per second, >= 70 % of headless speed,
charts keeping pace: the fast charts refreshed at least every 0.6 s, drawn from the latest step).

The bundled CNN trains on the digits (batch 64, AdamW, one thread) in the monitor's background thread
(what the Train button does) while this process's main thread waits, as an idle kernel does. Three
variants, interleaved in rounds of equal wall time so that a busy machine slows all of them alike:

* bare: the training step alone in a background thread, no hooks (for reference only);
* headless: ``MonitorState.start()`` with no view: hooks on every watched layer, statistics, no drawing;
* live: ``TrainingMonitor.start()`` (the Train button): the same, plus the probe digit run through the
  model and the live row (feature maps of the chosen layer, its gradient histogram, the status line)
  redrawn into the widget's ``Image`` widgets every 0.2 s, and the charts every few seconds (cost-bounded).

Cadence: times at which the live feature-map ``Image`` widget received a new picture; reported as refreshes
per second of wall time and the longest gap. The charts' cadence beside it: the fast charts (loss, mean
|gradient| by layer, ``pace_img``) and the detailed matplotlib charts (``out``), each as refreshes per
second; the charts' lag is how far the step they show is behind the training step when they reach the
widget (in steps), and the longest gap between two chart pictures bounds how far behind the status line
they ever are. Training speed: steps per second of wall time. The
ratio live / headless is the median over rounds of the ratio within each round. There is no browser
here (tests/browser measures the same in JupyterLab). Exits 1 when a target is missed.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import statistics  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

import hookviz  # noqa: E402
from hookviz.widgets.monitor import MonitorState, TrainingMonitor, digits_step_fn  # noqa: E402

TARGET_HZ, TARGET_SPEED = 4.0, 0.70
TARGET_CHARTS_GAP_S, TARGET_CHARTS_LAG_STEPS = 0.6, 1
ROUNDS, SECONDS = 3, 4.0


def bare_rate(step) -> float:  # noqa: ANN001
    """Steps per second of the bare step in a background thread, for SECONDS of wall time."""
    done = threading.Event()
    count = [0]

    def work() -> None:
        while not done.is_set():
            step()
            count[0] += 1

    thread = threading.Thread(target=work, daemon=True)
    t0 = time.perf_counter()
    thread.start()
    time.sleep(SECONDS)
    done.set()
    thread.join()
    return count[0] / (time.perf_counter() - t0)


def state_rate(state: MonitorState, start) -> float:  # noqa: ANN001
    """Steps per second of ``start()`` (a background run) for SECONDS of wall time."""
    first = state.step
    t0 = time.perf_counter()
    start()
    time.sleep(SECONDS)
    steps = state.step - first
    elapsed = time.perf_counter() - t0
    state.stop()
    assert state.wait(60), "the monitor did not stop"
    return steps / elapsed


def main() -> int:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = hookviz.DigitsCNN()
    step = digits_step_fn(model)
    headless = MonitorState(model, step, key="bench.headless")
    live = TrainingMonitor(model, step, probe=hookviz.load_digits("test")[0][:1], key="bench.live")
    stamps: list[float] = []
    live.live_img.observe(lambda _: stamps.append(time.perf_counter()), names="value")
    pace_stamps: list[tuple[float, int, int]] = []  # (time, training step then, last step the charts show)
    detail_stamps: list[float] = []

    def on_pace(_: object) -> None:
        shown = live.state.history.steps()
        pace_stamps.append((time.perf_counter(), live.state.step, int(shown[-1]) if len(shown) else 0))

    live.pace_img.observe(on_pace, names="value")
    live.out.observe(lambda _: detail_stamps.append(time.perf_counter()), names="outputs")
    for _ in range(20):  # warm-up
        step()
    results: dict[str, list[float]] = {"bare": [], "headless": [], "live": []}
    cadence, gaps, pace_hz, detail_hz, lags, pace_gaps = [], [], [], [], [], []
    for _ in range(ROUNDS):
        results["bare"].append(bare_rate(step))
        results["headless"].append(state_rate(headless, lambda: headless.start(10**9)))
        stamps.clear()
        pace_stamps.clear()
        detail_stamps.clear()
        t_start = time.perf_counter()
        results["live"].append(state_rate(live.state, lambda: live.start(10**9)))
        t_stop = time.perf_counter()
        during = stamps[:-1]  # the last picture is the final redraw after Stop
        cadence.append((len(during) - 1) / (during[-1] - during[0]) if len(during) > 2 else 0.0)
        charts = pace_stamps[:-1]
        pace_hz.append((len(charts) - 1) / (charts[-1][0] - charts[0][0]) if len(charts) > 2 else 0.0)
        detail_hz.append(len([t for t in detail_stamps if t <= t_stop]) / (t_stop - t_start))
        lags.extend(step - shown for _, step, shown in charts)
        pace_gaps.append(max((b[0] - a[0] for a, b in zip(charts, charts[1:], strict=False)), default=SECONDS))
        gaps.append(max(b - a for a, b in zip(during, during[1:], strict=False)) if len(during) > 1 else SECONDS)
    ratio = statistics.median(a / b for a, b in zip(results["live"], results["headless"], strict=True))
    vs_bare = statistics.median(a / b for a, b in zip(results["live"], results["bare"], strict=True))
    hz, gap = statistics.median(cadence), max(gaps)
    assert not hookviz.list_hooks(model, include_global=False), "hooks left behind"
    med = {k: statistics.median(v) for k, v in results.items()}
    print(
        f"bench_live: DigitsCNN batch 64 training in a background thread, {ROUNDS} rounds x {SECONDS:g} s per variant"
    )
    print(f"  bare step (no hooks)                 {med['bare']:7.1f} steps/s")
    print(f"  headless monitor (hooks, statistics) {med['headless']:7.1f} steps/s")
    print(f"  live view (probe maps + pictures)    {med['live']:7.1f} steps/s")
    print(f"  live / headless  {ratio:.2f}  (target >= {TARGET_SPEED})   live / bare {vs_bare:.2f}")
    print(f"  live refreshes   {hz:.1f} per second (target >= {TARGET_HZ}), longest gap {gap * 1e3:.0f} ms")
    charts_hz, worst_lag, charts_gap = statistics.median(pace_hz), max(lags, default=10**9), max(pace_gaps)
    print(
        f"  charts (loss, mean |gradient|) {charts_hz:.1f} per second, longest gap {charts_gap * 1e3:.0f} ms "
        f"(target <= {TARGET_CHARTS_GAP_S * 1e3:.0f} ms), drawn at most {worst_lag} step(s) behind the training "
        f"step (target <= {TARGET_CHARTS_LAG_STEPS})"
    )
    print(f"  detailed charts (matplotlib)  {statistics.median(detail_hz):.2f} per second (every few seconds)")
    failed = (
        ratio < TARGET_SPEED
        or hz < TARGET_HZ
        or charts_gap > TARGET_CHARTS_GAP_S
        or worst_lag > TARGET_CHARTS_LAG_STEPS
    )

    print("FAIL" if failed else "OK")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
