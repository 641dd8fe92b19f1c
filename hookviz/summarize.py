"""Cheap statistics and histograms of tensors, with bounded memory.

Second stage of the hookviz data flow (capture -> **summary** -> render -> widget). Two jobs:

* :class:`StridedSample` is a ``reduce=`` function for :func:`hookviz.capture`: inside the hook it
  keeps a fixed strided sample of about ``n`` elements (one view and one copy), so that a hook on every
  layer of a training step stays cheap. The stride is a prime, so the sample does not keep landing on
  the same pixel of every channel the way a power-of-two stride would.
* :func:`sample_stats`, :func:`abs_histograms` and :func:`log_histograms` turn many such samples (all
  layers, several steps) into statistics in one vectorised numpy pass, long after the hooks ran.
  :func:`histogram` summarises one full array for the explorer (NaN and Inf counted, not dropped).

Nothing here touches autograd: every function gets a detached tensor or a numpy array.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch
from torch import Tensor

from hookviz.guards import check_array, check_flag, check_int, check_number, shown
from hookviz.i18n import tr

__all__ = [
    "GRAD_LOG_RANGE",
    "Histogram",
    "Padded",
    "RunHistory",
    "StridedSample",
    "abs_histograms",
    "as_numpy",
    "histogram",
    "log_histograms",
    "nice_limit",
    "pad_samples",
    "prime_stride",
    "sample_stats",
]

# Gradient sizes are histogrammed as log10|g| in quarter decades from 1e-10 to 1.
GRAD_LOG_RANGE = (-10.0, 0.0)


def _is_prime(n: int) -> bool:
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    f = 3
    while f * f <= n:
        if n % f == 0:
            return False
        f += 2
    return True


@lru_cache(maxsize=1024)
def prime_stride(numel: int, n: int) -> int:
    """The stride for a sample of about ``n`` of ``numel`` elements: 1 when all fit, else a prime >= numel/n.

    A prime stride spreads the sample over channels *and* positions of an ``(N, C, H, W)`` tensor;
    a stride such as 32 on 8x8 maps would pick the same two pixels of every map.
    """
    if n <= 0:
        raise ValueError(f"sample size must be positive, got {n}")
    if numel <= n:
        return 1
    stride = max(2, -(-numel // n))
    while not _is_prime(stride):
        stride += 1
    return stride


class StridedSample:
    """A ``reduce=`` function for :func:`hookviz.capture`: keep a fixed strided sample of each tensor.

    ``StridedSample(1024)(t)`` returns a new 1-D float32 CPU tensor of at most about 1,024 elements of
    ``t`` (every ``prime_stride``-th element in row-major order). The same positions are taken on every
    call with the same shape, so statistics over steps compare like with like. The index tensors
    are cached for the last :attr:`CACHE_SIZE` tensor sizes only: a varying batch size (the last
    batch of an epoch, a padded sequence length) never makes the cache grow without bound.
    """

    CACHE_SIZE = 64

    def __init__(self, n: int = 1024) -> None:
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"sample size must be a whole number, not {n!r}")
        if n <= 0:
            raise ValueError(f"sample size must be positive, got {n}")
        self.n = n
        self._index: dict[int | tuple[int, torch.device], Tensor] = {}

    def __call__(self, t: Tensor) -> Tensor:
        numel = t.numel()
        is_cpu = t.is_cpu
        # Keyed by size alone on the CPU: this runs in every hook call, and t.device is a slow lookup.
        key = numel if is_cpu else (numel, t.device)
        index = self._index.get(key)
        if index is None:
            if len(self._index) >= self.CACHE_SIZE:
                del self._index[next(iter(self._index))]  # the oldest size goes first
            stride = prime_stride(numel, self.n)
            index = self._index[key] = torch.arange(0, numel, stride, device=t.device)
        # torch.take reads the tensor in logical (row-major) order, contiguous or not, and returns
        # a new tensor: one operation per hook.
        sample = torch.take(t, index)
        if sample.dtype != torch.float32 or not is_cpu:
            sample = sample.to("cpu", dtype=torch.float32)
        return sample

    def __repr__(self) -> str:
        return f"StridedSample(n={self.n})"


def as_numpy(value: Tensor | np.ndarray) -> np.ndarray:
    """A float numpy array of ``value`` (a detached tensor is converted; float16/bfloat16 become float32)."""
    return _numbers(value, "value")


def _numbers(value: Tensor | np.ndarray, name: str) -> np.ndarray:
    """:func:`as_numpy`, refusing what is not numbers with a message that names the argument ``name``."""
    if isinstance(value, Tensor) and not value.is_meta:  # the hot path: a tensor is converted as it always was
        value = value.detach()
        if value.dtype in (torch.float16, torch.bfloat16) or not value.is_floating_point():
            value = value.float()
        return value.cpu().numpy()
    return check_array(value, name)


class Padded:
    """Samples stacked once by :func:`pad_samples`: pass it instead of a list to skip re-stacking.

    ``values`` is ``(S, width)`` float32 with zeros after each sample's end, ``mask`` marks the real
    entries, ``lengths`` the sample sizes, and ``all_finite`` says no NaN/Inf is present (fast path).
    """

    __slots__ = ("all_finite", "lengths", "mask", "values")

    def __init__(self, values: np.ndarray, mask: np.ndarray, lengths: np.ndarray) -> None:
        values, mask = np.asarray(values), np.asarray(mask)
        if mask.shape != values.shape:
            raise ValueError(tr(f"mask must have the shape of values {values.shape}, not {mask.shape}"))
        self.values = values
        self.mask = mask
        self.lengths = lengths
        self.all_finite = bool(np.isfinite(values).all())

    def __len__(self) -> int:
        return len(self.values)


def pad_samples(samples: Sequence[Tensor | np.ndarray] | Padded) -> Padded:
    """Stack samples of different lengths into one zero-padded ``(S, max_len)`` float32 array.

    1-D tensors (what :class:`StridedSample` returns) are joined and copied in one operation; other
    samples of equal length (the same layer at different steps) are stacked in one operation each; and
    row-wise reductions over the padded array are several times faster than scattering with
    ``np.bincount`` over one long concatenation. Every function below accepts the result.
    """
    if isinstance(samples, Padded):
        return samples
    if isinstance(samples, (str, bytes, Tensor, np.ndarray)) or not isinstance(samples, Sequence):
        raise TypeError(tr(f"samples must be a list of tensors or arrays (one per sample), not {shown(samples)}"))
    samples = [s if isinstance(s, Tensor) else _numbers(s, "samples") for s in samples]
    lengths = np.array([s.numel() if isinstance(s, Tensor) else np.size(s) for s in samples], dtype=np.int64)
    width = int(lengths.max()) if len(lengths) else 0
    buf = np.zeros((len(samples), max(width, 1)), dtype=np.float32)
    mask = np.arange(buf.shape[1])[None, :] < lengths[:, None]
    filled = [s for s, size in zip(samples, lengths.tolist(), strict=True) if size]
    flat = _cat_flat(filled)
    if flat is not None:  # 1-D tensors (StridedSample output): one copy in all
        # The mask's True entries, in row-major order, are the samples' values one after another.
        buf[mask] = flat
        return Padded(buf, mask, lengths)
    groups: dict[int, list[int]] = {}
    for i, size in enumerate(lengths.tolist()):
        if size:
            groups.setdefault(size, []).append(i)
    for size, rows in groups.items():
        items = [samples[i] for i in rows]
        if all(isinstance(t, Tensor) for t in items):
            block = as_numpy(torch.stack([t.detach().reshape(-1) for t in items]))
        else:
            block = np.stack([as_numpy(a).reshape(-1) for a in items])
        buf[rows, :size] = block
    return Padded(buf, mask, lengths)


def _cat_flat(samples: list[Tensor | np.ndarray]) -> np.ndarray | None:
    """The samples one after another as float32, when all are 1-D tensors on one device; else None."""
    if not samples or not all(isinstance(s, Tensor) for s in samples):
        return None
    try:
        flat = torch.cat(samples)
    except RuntimeError:  # different numbers of dimensions, or devices
        return None
    if flat.ndim != 1 or flat.is_complex():
        return None
    return flat.detach().to("cpu", torch.float32).numpy()


def sample_stats(samples: Sequence[Tensor | np.ndarray] | Padded) -> dict[str, np.ndarray]:
    """Statistics of each sample, all computed in one vectorised pass.

    Returns a dict of arrays with one entry per sample: ``n``, ``mean``, ``std``, ``abs_mean``,
    ``max_abs``, ``frac_zero`` (all over the finite values), ``nan`` and ``inf`` (counts). A sample
    with no finite value has NaN statistics, never an exception.
    """
    p = pad_samples(samples)
    buf, mask = p.values, p.mask
    if p.all_finite:  # the usual case: padding is zero, so plain row sums are right
        x, n = buf, p.lengths
        nan = inf = np.zeros(len(buf), dtype=np.int64)
        zeros = (buf == 0).sum(axis=1) - (buf.shape[1] - p.lengths)
    else:
        nan = (np.isnan(buf) & mask).sum(axis=1)
        inf = (np.isinf(buf) & mask).sum(axis=1)
        finite = np.isfinite(buf) & mask
        x = np.where(finite, buf, np.float32(0))
        n = finite.sum(axis=1)
        zeros = ((buf == 0) & finite).sum(axis=1)
    absx = np.abs(x)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = x.sum(axis=1, dtype=np.float64) / n
        var = np.maximum(np.einsum("ij,ij->i", x, x, dtype=np.float64) / n - mean * mean, 0.0)
        abs_mean = absx.sum(axis=1, dtype=np.float64) / n
        frac_zero = zeros / n
    max_abs = absx.max(axis=1).astype(np.float64)
    max_abs[n == 0] = np.nan
    return {
        "n": np.asarray(n).astype(np.int64),
        "mean": mean,
        "std": np.sqrt(var),
        "abs_mean": abs_mean,
        "max_abs": max_abs,
        "frac_zero": frac_zero,
        "nan": np.asarray(nan).astype(np.int64),
        "inf": np.asarray(inf).astype(np.int64),
    }


def _row_bincount(idx: np.ndarray, weights: np.ndarray, bins: int) -> np.ndarray:
    rows = idx.shape[0]
    flat = idx + (np.arange(rows, dtype=np.int64) * bins)[:, None]
    return np.bincount(flat.ravel(), weights=weights.ravel(), minlength=rows * bins).reshape(rows, bins)


def abs_histograms(
    samples: Sequence[Tensor | np.ndarray] | Padded, limits: Sequence[float], bins: int = 40
) -> np.ndarray:
    """Histogram of ``|x|`` for each sample in ``bins`` equal bins over ``[0, limit]`` (one limit per sample).

    This is the fastai "colorful dimension" histogram. Values above the limit are counted in the last
    bin; NaN and Inf are left out (count them with :func:`sample_stats`). Returns ``(len(samples), bins)``.
    """
    p = pad_samples(samples)
    buf = p.values
    bins = check_int(bins, "bins", minimum=1)
    lim = np.asarray(check_array(limits, "limits"), dtype=np.float32)
    if lim.shape != (len(buf),) or np.any(~np.isfinite(lim)) or np.any(lim <= 0):
        raise ValueError("limits must be one positive, finite number per sample")
    finite = p.mask if p.all_finite else np.isfinite(buf) & p.mask
    scaled = np.abs(buf if p.all_finite else np.where(finite, buf, np.float32(0))) * (bins / lim)[:, None]
    idx = np.minimum(scaled, bins - 1).astype(np.int64)
    return _row_bincount(idx, finite, bins)


def log_histograms(
    samples: Sequence[Tensor | np.ndarray] | Padded,
    lo: float = GRAD_LOG_RANGE[0],
    hi: float = GRAD_LOG_RANGE[1],
    bins: int = 40,
) -> tuple[np.ndarray, np.ndarray]:
    """Histogram of ``log10|x|`` for each sample over ``[lo, hi]``: how big gradients are, across decades.

    Exact zeros, NaN and Inf are left out (see :func:`sample_stats`); values outside the range go
    to the first or last bin. Returns ``(counts of shape (len(samples), bins), edges)``.
    """
    lo, hi = check_number(lo, "lo"), check_number(hi, "hi")
    if hi <= lo:
        raise ValueError(tr(f"lo must be below hi (a range of log10|x|), not lo={lo:g}, hi={hi:g}"))
    bins = check_int(bins, "bins", minimum=1)
    p = pad_samples(samples)
    buf = p.values
    keep = (buf != 0) if p.all_finite else np.isfinite(buf) & p.mask & (buf != 0)
    logs = np.log10(np.abs(np.where(keep, buf, np.float32(1))))
    idx = np.clip((logs - lo) * (bins / (hi - lo)), 0, bins - 1).astype(np.int64)
    return _row_bincount(idx, keep, bins), np.linspace(lo, hi, bins + 1)


def nice_limit(value: float) -> float:
    """Round a positive magnitude up to 1, 2 or 5 times a power of ten (1 for zero, NaN or Inf)."""
    value = check_number(value, "value", finite=False)
    if not np.isfinite(value) or value <= 0:
        return 1.0
    exp = np.floor(np.log10(value))
    for m in (1.0, 2.0, 5.0, 10.0):
        if m * 10**exp >= value:
            return float(m * 10**exp)
    return float(10 ** (exp + 1))


@dataclass
class Histogram:
    """A histogram of the finite values of an array, with the values it could not place counted."""

    counts: np.ndarray
    edges: np.ndarray
    total: int
    nan: int
    inf: int
    zeros: int | None = None  # exact zeros left out of ``counts`` (None: zeros are counted in the bins)

    @property
    def finite(self) -> int:
        """How many values were finite (in ``counts``, plus the exact zeros when they were left out)."""
        return self.total - self.nan - self.inf

    def summary(self) -> str:
        """One line: how many values, the range, and the NaN/Inf counts."""
        lo, hi = (float(self.edges[0]), float(self.edges[-1])) if self.finite else (float("nan"), float("nan"))
        return f"{self.total} values, range [{lo:.3g}, {hi:.3g}], NaN {self.nan}, Inf {self.inf}"


def histogram(values: Tensor | np.ndarray, bins: int = 40, drop_zeros: bool = False) -> Histogram:
    """Histogram of the finite values of ``values`` in ``bins`` equal bins; NaN and Inf are counted apart.

    All values equal (an all-zero gradient, for example) give one bin around that value instead of an
    error. No finite value at all gives empty counts over ``[0, 1]``. With ``drop_zeros`` exact zeros
    are left out of the bins and counted in ``Histogram.zeros`` (behind a ReLU or a max-pool most of a
    gradient is exactly zero, and that one spike would flatten every other bar).
    """
    arr = _numbers(values, "values").reshape(-1)
    bins = check_int(bins, "bins", minimum=1)
    drop_zeros = check_flag(drop_zeros, "drop_zeros")
    nan = int(np.isnan(arr).sum())
    inf = int(np.isinf(arr).sum())
    finite = arr[np.isfinite(arr)]
    zeros = None
    if drop_zeros:
        zeros = int((finite == 0).sum())
        finite = finite[finite != 0]
    if finite.size == 0:
        return Histogram(np.zeros(bins, np.int64), np.linspace(0.0, 1.0, bins + 1), int(arr.size), nan, inf, zeros)
    lo, hi = float(finite.min()), float(finite.max())
    if hi - lo < 1e-12 * max(1.0, abs(lo)):
        pad = 0.5 if lo == 0 else abs(lo) * 0.5
        lo, hi = lo - pad, hi + pad
    counts, edges = np.histogram(finite, bins=bins, range=(lo, hi))
    return Histogram(counts.astype(np.int64), edges, int(arr.size), nan, inf, zeros)


class RunHistory:
    """Per-step statistics of a whole run in bounded memory: the points always span step 1 to now.

    Each point is the mean of ``width`` consecutive steps. When all ``capacity`` points are full,
    neighbouring points are merged pairwise (the mean of two equal-width means) and ``width`` doubles,
    so after 10,000 steps the first point still describes the first few steps of the run, at a coarser
    time resolution, and memory never grows. The steps of an unfinished point are shown as a last,
    partial point. Values are named arrays of a fixed shape (``loss`` a scalar, ``act_mean`` one
    entry per layer, ``act_hist`` ``(layers, bins)`` ...).
    """

    def __init__(self, capacity: int = 512) -> None:
        capacity = check_int(capacity, "capacity", minimum=2)
        if capacity % 2:
            raise ValueError(tr(f"capacity must be an even number of points, not {capacity}"))
        self.capacity = capacity
        self.width = 1
        self.count = 0
        self._data: dict[str, np.ndarray] = {}
        self._ends = np.zeros(capacity, dtype=np.int64)
        self._partial: dict[str, np.ndarray] = {}
        self._partial_n = 0
        self._partial_end = 0
        self.first_step: int | None = None

    def __len__(self) -> int:
        return self.count + (1 if self._partial_n else 0)

    def append(self, step: int, values: dict[str, np.ndarray | float]) -> None:
        """Add the statistics of one step (steps must come in increasing order)."""
        if self.first_step is None:
            self.first_step = step
        for name, value in values.items():
            arr = np.asarray(value, dtype=np.float64)
            if name not in self._data:
                self._data[name] = np.zeros((self.capacity, *arr.shape), dtype=np.float64)
                self._partial[name] = np.zeros(arr.shape, dtype=np.float64)
            if self._partial_n == 0:
                self._partial[name][...] = arr
            else:
                self._partial[name] += arr
        self._partial_n += 1
        self._partial_end = step
        if self._partial_n == self.width:
            self._commit()

    def extend(self, steps: Sequence[int], values: dict[str, np.ndarray]) -> None:
        """Add the statistics of several steps at once: ``values[name][i]`` belongs to ``steps[i]``.

        The same points as :meth:`append` called once per step, bit for bit (each point's steps are
        summed in order, then divided), in a few array operations per whole point instead of per step.
        """
        steps = list(steps)
        arrays = {name: np.asarray(value, dtype=np.float64) for name, value in values.items()}
        i, k = 0, len(steps)
        while i < k:
            width = self.width
            whole = min((k - i) // width, self.capacity - self.count)
            if self._partial_n or not whole or any(name not in self._data for name in arrays):
                self.append(steps[i], {name: arr[i] for name, arr in arrays.items()})
                i += 1
                continue
            if self.first_step is None:
                self.first_step = steps[i]
            rows = slice(self.count, self.count + whole)
            for name, arr in arrays.items():
                block = arr[i : i + whole * width].reshape(whole, width, *arr.shape[1:])
                total = block[:, 0].copy()
                for j in range(1, width):
                    total += block[:, j]
                self._data[name][rows] = total / width
            self._ends[rows] = steps[i + width - 1 : i + whole * width : width]
            self._partial_end = steps[i + whole * width - 1]
            self.count += whole
            i += whole * width
            if self.count == self.capacity:
                self._halve()

    def _commit(self) -> None:
        i = self.count
        for name, total in self._partial.items():
            self._data[name][i] = total / self._partial_n
        self._ends[i] = self._partial_end
        self.count += 1
        self._partial_n = 0
        if self.count == self.capacity:
            self._halve()

    def _halve(self) -> None:
        half = self.capacity // 2
        for arr in self._data.values():
            arr[:half] = (arr[0::2] + arr[1::2]) / 2
        self._ends[:half] = self._ends[1::2]
        self.count = half
        self.width *= 2

    def steps(self) -> np.ndarray:
        """The last step of each point (the partial point included)."""
        ends = self._ends[: self.count]
        return np.append(ends, self._partial_end) if self._partial_n else ends.copy()

    def series(self, name: str) -> np.ndarray:
        """``(points, *shape)`` means of one value; empty before the first step."""
        if name not in self._data:
            return np.zeros((0,), dtype=np.float64)
        done = self._data[name][: self.count]
        if not self._partial_n:
            return done.copy()
        return np.concatenate([done, (self._partial[name] / self._partial_n)[None]])

    def __repr__(self) -> str:
        return f"RunHistory(points={len(self)}/{self.capacity}, steps per point={self.width})"
