"""Timing shared by the benches: variants measured interleaved in rounds, compared by paired ratios.

A shared machine speeds up and slows down over seconds. Running every variant once per round and
dividing each variant's time by the baseline's time *of the same round* cancels those swings; the
median over rounds then ignores the odd round a neighbour disturbed. Each measurement gives the wall
time and the thread's CPU time (which leaves out the time the thread waited for a core).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

Timing = tuple[float, float]  # (wall seconds, thread CPU seconds), per step


def clock() -> Timing:
    """Now, as (wall, thread CPU) seconds."""
    return time.perf_counter(), time.thread_time()


def per_step(start: Timing, steps: int) -> Timing:
    """Wall and CPU seconds per step since ``start``."""
    wall, cpu = clock()
    return (wall - start[0]) / steps, (cpu - start[1]) / steps


def interleaved(variants: dict[str, Callable[[], Timing]], rounds: int, warmup: int = 3) -> dict[str, list[Timing]]:
    """Run each variant once per round, ``warmup`` unrecorded rounds first; ``{name: [timing per round]}``."""
    for _ in range(warmup):
        for run in variants.values():
            run()
    results: dict[str, list[Timing]] = {name: [] for name in variants}
    for _ in range(rounds):
        for name, run in variants.items():
            results[name].append(run())
    return results


def median_time(results: dict[str, list[Timing]], name: str, cpu: bool = False) -> float:
    """Median seconds per step of one variant (wall time, or CPU time with ``cpu=True``)."""
    return statistics.median(t[cpu] for t in results[name])


def paired_ratio(results: dict[str, list[Timing]], name: str, base: str = "bare", cpu: bool = False) -> float:
    """Median over rounds of (variant time / ``base`` time of the same round)."""
    return statistics.median(a[cpu] / b[cpu] for a, b in zip(results[name], results[base], strict=True))
