"""bench/timing.py: paired ratios cancel a machine that slows down between rounds."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "timing.py"
spec = importlib.util.spec_from_file_location("bench_timing", SCRIPT)
timing = importlib.util.module_from_spec(spec)
spec.loader.exec_module(timing)


def test_paired_ratio_cancels_a_slow_round_that_a_ratio_of_medians_would_not():
    # round 2 ran on a machine three times slower: each variant's time of that round triples
    results = {
        "bare": [(1.0, 1.0), (3.0, 3.0), (1.0, 1.0), (3.0, 3.0)],
        "hooked": [(1.2, 1.1), (3.6, 3.3), (1.2, 1.1), (3.6, 3.3)],
    }
    assert timing.paired_ratio(results, "hooked") == 1.2
    assert abs(timing.paired_ratio(results, "hooked", cpu=True) - 1.1) < 1e-12
    assert timing.median_time(results, "bare") == 2.0


def test_interleaved_runs_every_variant_once_per_round_after_the_warm_up():
    calls: list[str] = []

    def variant(name: str):  # noqa: ANN202
        def run() -> tuple[float, float]:
            calls.append(name)
            return (0.1, 0.1)

        return run

    results = timing.interleaved({"a": variant("a"), "b": variant("b")}, rounds=3, warmup=1)
    assert calls == ["a", "b"] * 4
    assert {name: len(times) for name, times in results.items()} == {"a": 3, "b": 3}


def test_per_step_divides_by_the_steps():
    start = timing.clock()
    wall, cpu = timing.per_step((start[0] - 2.0, start[1] - 4.0), steps=2)
    assert wall >= 1.0 and cpu >= 2.0
