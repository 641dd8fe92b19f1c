"""hookviz.summarize: strided samples, vectorised statistics and histograms (NaN/Inf counted)."""

import numpy as np
import pytest
import torch

import hookviz
from hookviz.summarize import (
    RunHistory,
    StridedSample,
    abs_histograms,
    as_numpy,
    histogram,
    log_histograms,
    nice_limit,
    pad_samples,
    prime_stride,
    sample_stats,
)


def test_prime_stride_spreads_over_positions() -> None:
    assert prime_stride(100, 1000) == 1
    stride = prime_stride(64 * 8 * 8 * 8, 1024)
    assert stride >= 32 and all(stride % p for p in range(2, stride))
    # positions inside each 8x8 map that the sample visits: many, not the two a stride of 32 gives
    positions = {(i % 64) for i in range(0, 64 * 8 * 8 * 8, stride)}
    assert len(positions) == 64


def test_strided_sample_is_a_copy_of_fixed_positions() -> None:
    t = torch.arange(10_000, dtype=torch.float32).reshape(10, 10, 100)
    reduce = StridedSample(100)
    s = reduce(t)
    assert s.ndim == 1 and 90 <= len(s) <= 100
    assert torch.equal(s, reduce(t.clone()))
    t.zero_()
    assert s.sum() > 0  # the sample does not share memory with the live tensor
    # non-contiguous tensors are sampled in logical order too
    nc = torch.arange(100.0).reshape(10, 10).t()
    assert torch.equal(StridedSample(1000)(nc), nc.reshape(-1))
    assert StridedSample(10)(torch.ones(3, dtype=torch.float16)).dtype == torch.float32
    with pytest.raises(ValueError):
        StridedSample(0)


def test_sample_stats_counts_nonfinite_and_empty() -> None:
    samples = [torch.tensor([1.0, -2.0, 0.0, float("nan")]), torch.tensor([]), torch.tensor([float("inf"), 3.0])]
    stats = sample_stats(samples)
    assert stats["n"].tolist() == [3, 0, 1]
    assert stats["nan"].tolist() == [1, 0, 0] and stats["inf"].tolist() == [0, 0, 1]
    assert stats["mean"][0] == pytest.approx(-1 / 3) and np.isnan(stats["mean"][1])
    assert stats["frac_zero"][0] == pytest.approx(1 / 3)
    assert stats["max_abs"][2] == 3.0
    np.testing.assert_allclose(stats["std"][0], np.std([1.0, -2.0, 0.0]), rtol=1e-6)


def test_histograms_per_row() -> None:
    samples = [np.array([0.1, 0.6, 5.0]), np.array([2e-3, -2e-3, 0.0, np.nan])]
    padded = pad_samples(samples)
    counts = abs_histograms(padded, [1.0, 1.0], bins=2)
    assert counts.tolist() == [[1, 2], [3, 0]]  # 5.0 goes to the last bin; zero counts, NaN left out
    logs, edges = log_histograms(samples, lo=-4, hi=0, bins=4)
    assert logs[1].tolist() == [0, 2, 0, 0]  # log10(2e-3) = -2.7 -> second bin; zero and NaN left out
    assert edges[0] == -4 and edges[-1] == 0
    with pytest.raises(ValueError):
        abs_histograms(samples, [1.0], bins=2)


def test_histogram_constant_nan_and_empty() -> None:
    h = histogram(np.zeros(10))
    assert h.counts.sum() == 10 and h.edges[0] < 0 < h.edges[-1]
    h = histogram(torch.tensor([1.0, float("nan"), float("inf"), 2.0]))
    assert (h.nan, h.inf, h.finite, h.counts.sum()) == (1, 1, 2, 2)
    assert "NaN 1, Inf 1" in h.summary()
    h = histogram(np.array([np.nan, np.nan]))
    assert h.counts.sum() == 0 and h.nan == 2


def test_nice_limit() -> None:
    assert [nice_limit(v) for v in (0.7, 1.0, 1.2, 3.0, 7.0, 0.0, float("nan"))] == [1.0, 1.0, 2.0, 5.0, 10.0, 1.0, 1.0]


def test_strided_sample_as_capture_reducer_keeps_little() -> None:
    model = hookviz.DigitsCNN()
    x, y = hookviz.load_digits("test")
    with hookviz.capture(model, ["features.0"], reduce=StridedSample(256)) as cap:
        torch.nn.functional.cross_entropy(model(x[:64]), y[:64]).backward()
    assert cap.activation("features.0").numel() <= 256
    assert cap.gradient("features.0").numel() <= 256


def test_run_history_spans_the_whole_run_in_bounded_memory() -> None:
    history = RunHistory(capacity=64)
    losses = 1.0 / (1.0 + np.arange(10_000))
    for step, loss in enumerate(losses, start=1):
        history.append(step, {"loss": loss, "per_layer": np.array([loss, 2 * loss])})
    assert len(history) <= 64 and history.width == 256
    steps, series = history.steps(), history.series("loss")
    assert steps[0] == history.width and steps[-1] == 10_000  # step 1 to now, after 10,000 steps
    np.testing.assert_allclose(series[0], losses[: history.width].mean())  # the early drop is still there
    np.testing.assert_allclose(series[-1], losses[steps[-2] :].mean())  # the unfinished last point
    assert history.series("per_layer").shape == (len(history), 2)
    with pytest.raises(ValueError, match="even"):
        RunHistory(capacity=5)


def test_histogram_can_leave_exact_zeros_out() -> None:
    values = np.array([0.0] * 197 + [0.5, -0.5, 1.0])
    h = histogram(values, bins=4, drop_zeros=True)
    assert h.zeros == 197 and h.counts.sum() == 3 and h.finite == 200
    assert histogram(values, bins=4).zeros is None and histogram(values, bins=4).counts.sum() == 200


@pytest.mark.parametrize(
    "samples",
    [
        [torch.tensor([1.0, 2.0, 3.0]), np.zeros(0, np.float32), torch.tensor([4.0]), torch.tensor([5.0, 6.0])],
        [torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([3.0, 4.0, 5.0])],
        [torch.tensor([1.5, 2.5], dtype=torch.float16), torch.tensor([1, 2, 3])],
        [torch.tensor([[1.0, 2.0]]), torch.tensor([[3.0, 4.0, 5.0]])],  # 2-D: stacked per length instead
        [torch.tensor([1.0, 2.0]), np.array([3.0, 4.0, 5.0])],  # a numpy sample: stacked per length instead
    ],
)
def test_pad_samples_puts_each_sample_in_its_row(samples) -> None:  # noqa: ANN001
    padded = pad_samples(samples)
    assert padded.values.dtype == np.float32 and padded.lengths.tolist() == [np.size(as_numpy(s)) for s in samples]
    for row, sample in enumerate(samples):
        size = padded.lengths[row]
        np.testing.assert_array_equal(padded.values[row, :size], as_numpy(sample).reshape(-1).astype(np.float32))
        assert not padded.values[row, size:].any() and padded.mask[row].sum() == size


@pytest.mark.parametrize("capacity", [2, 4, 16])
@pytest.mark.parametrize("chunks", [[1] * 40, [10] * 30, [3, 7, 1, 20, 64, 5] * 6, [100, 1, 333]])
def test_run_history_extend_gives_the_points_of_one_append_per_step(capacity: int, chunks: list[int]) -> None:
    """The monitor adds a flush's steps with one extend(): bit for bit what appending each step gives."""
    rng = np.random.default_rng(capacity)
    one_by_one, at_once = RunHistory(capacity), RunHistory(capacity)
    step = 0
    for size in chunks:
        steps = list(range(step + 1, step + size + 1))
        step += size
        values = {
            "loss": rng.normal(size=size).astype(np.float32),
            "act_mean": rng.normal(size=(size, 3)).astype(np.float32),
            "act_hist": rng.normal(size=(size, 3, 4)).astype(np.float32),
        }
        for i, s in enumerate(steps):
            one_by_one.append(s, {name: value[i] for name, value in values.items()})
        at_once.extend(steps, values)
        assert (len(at_once), at_once.width, at_once.first_step) == (
            len(one_by_one),
            one_by_one.width,
            one_by_one.first_step,
        )
        assert np.array_equal(at_once.steps(), one_by_one.steps())
        for name in values:
            assert np.array_equal(at_once.series(name), one_by_one.series(name)), name
    assert at_once.width > 1, "the case must reach merged points"
