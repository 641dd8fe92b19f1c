"""The training monitor: activation and gradient statistics of every layer, live while a model trains.

:class:`MonitorState` wraps any training step: it starts :func:`hookviz.capture` with a
:class:`~hookviz.summarize.StridedSample` reducer (each hook keeps a fixed sample of 256 elements), runs the
steps, turns the samples into statistics every few steps in one vectorised pass, and keeps them in a
bounded history. Its hooks are removed on every exit: the end of the run, :meth:`MonitorState.stop`,
an exception or a ``KeyboardInterrupt``. :class:`TrainingMonitor` is a thin ipywidgets view over it.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.figure import Figure
from torch import Tensor, nn

from hookviz.capture import capture, resolve_layers
from hookviz.data import load_digits
from hookviz.render import figure_png, monitor_figure
from hookviz.summarize import (
    GRAD_LOG_RANGE,
    StridedSample,
    abs_histograms,
    log_histograms,
    nice_limit,
    pad_samples,
    sample_stats,
)
from hookviz.widgets.common import StaticFallback, show_png, show_text

__all__ = ["MONITOR_KEY", "MonitorState", "StepStats", "TrainingMonitor", "digits_step_fn"]

MONITOR_KEY = "hookviz.monitor"
# (id(model), key) -> the monitor that last used that key on that model; a new one stops an old one
# that is still training in the background (re-running the cell that created it).
_LATEST: weakref.WeakValueDictionary[tuple[int, str], MonitorState] = weakref.WeakValueDictionary()
_EMPTY = np.zeros(0, dtype=np.float32)


@dataclass
class StepStats:
    """Statistics of one training step, one entry per monitored layer (arrays of length L)."""

    step: int
    loss: float
    act_mean: np.ndarray
    act_std: np.ndarray
    act_frac_zero: np.ndarray
    act_nonfinite: np.ndarray
    act_hist: np.ndarray  # (L, bins) counts of |activation|
    grad_abs_mean: np.ndarray
    grad_nonfinite: np.ndarray
    grad_hist: np.ndarray  # (L, bins) counts of log10|gradient|


def digits_step_fn(model: nn.Module, batch_size: int = 64, lr: float = 3e-3, seed: int = 0) -> Callable[[], Tensor]:
    """A training step for ``model`` on the bundled digits: AdamW, cross-entropy, shuffled batches.

    Works for :class:`hookviz.DigitsCNN` and for any model taking ``(N, 1, 8, 8)`` images (an MLP can
    start with ``nn.Flatten()``). Each call trains on the next batch and returns the loss.
    """
    x, y = load_digits("train")
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    generator = torch.Generator().manual_seed(seed)
    batches: list[Tensor] = []

    def step() -> Tensor:
        if not batches:
            batches.extend(torch.randperm(len(y), generator=generator).split(batch_size))
        idx = batches.pop(0)
        model.train()
        loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()

    return step


def _tensor_of(value: Any) -> Tensor | None:
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (tuple, list)):
        for v in value:
            t = _tensor_of(v)
            if t is not None:
                return t
    if isinstance(value, dict):
        for v in value.values():
            t = _tensor_of(v)
            if t is not None:
                return t
    return None


class MonitorState:
    """Train with statistics: the plain-Python core of :class:`TrainingMonitor`.

    Args:
        model: the model being trained.
        step_fn: one training step (forward, backward, optimiser step); returns the loss.
        layers / types: which layers to watch (as in :func:`hookviz.capture`). By default every leaf
            module that has parameters (conv, linear, norm layers), in depth order.
        history: how many steps of statistics to keep (a bounded buffer; older steps are dropped).
        sample: elements kept per tensor per hook (a fixed strided sample; 256 keeps the hooks and the
            statistics under about a third of a bare training step of the bundled CNN).
        stats_every: turn collected samples into statistics every this many steps.
        capture_every: record every this many steps (1: every step). With more than 1 the hooks are
            attached only for the recorded steps, and the steps in between run with no hook at all.
        bins: histogram bins.
        key: hookviz capture key; a new monitor with the same key replaces the old one's hooks.
    """

    def __init__(
        self,
        model: nn.Module,
        step_fn: Callable[[], Any],
        *,
        layers: str | list[str] | None = None,
        types: type[nn.Module] | tuple[type[nn.Module], ...] | None = None,
        history: int = 500,
        sample: int = 256,
        stats_every: int = 10,
        capture_every: int = 1,
        bins: int = 40,
        key: str = MONITOR_KEY,
    ) -> None:
        if history < 1:
            raise ValueError("history must be at least 1 step")
        self.model = model
        self.step_fn = step_fn
        if layers is None and types is None:
            chosen = resolve_layers(model)
            with_params = {n: m for n, m in chosen.items() if any(True for _ in m.parameters(recurse=False))}
            chosen = with_params or chosen
        else:
            chosen = resolve_layers(model, layers, types)
        self.layer_names = list(chosen)
        self.history: deque[StepStats] = deque(maxlen=history)
        self.reducer = StridedSample(sample)
        self.stats_every = max(1, stats_every)
        self.capture_every = max(1, capture_every)
        self.bins = bins
        self.key = key
        self.step = 0
        self.act_limits: np.ndarray | None = None
        self.grad_edges = np.linspace(*GRAD_LOG_RANGE, bins + 1)
        self.train_seconds = 0.0
        self.draw_seconds = 0.0
        self.draws = 0
        self.last_error: str | None = None
        self._pending: list[tuple[int, float, list[Tensor], list[Tensor]]] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._running = False
        previous = _LATEST.get((id(model), key))
        if previous is not None and previous is not self and previous.running:
            previous.stop()  # its loop ends after the current step and removes its hooks
            previous.wait(timeout=30)
        _LATEST[(id(model), key)] = self

    # ------------------------------------------------------------------------------- running
    @property
    def running(self) -> bool:
        """True while :meth:`run` is executing (in this or another thread)."""
        return self._running

    def stop(self) -> None:
        """Ask a running :meth:`run` to finish after the current step (its hooks are then removed)."""
        self._stop.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until no :meth:`run` is executing; ``False`` if still running after ``timeout`` seconds."""
        deadline = None if timeout is None else time.perf_counter() + timeout
        while self._running:
            if deadline is not None and time.perf_counter() > deadline:
                return False
            time.sleep(0.01)
        return True

    def run(
        self,
        steps: int,
        on_update: Callable[[MonitorState], None] | None = None,
        every: int = 25,
        min_interval: float = 0.5,
    ) -> MonitorState:
        """Train ``steps`` more steps (or until :meth:`stop`), calling ``on_update`` now and then.

        ``on_update`` (a redraw) is throttled: at most every ``every`` steps, at least
        ``min_interval`` seconds apart, and never more often than four times its own duration, so
        drawing stays under about a fifth of the time. It is called once more at the end.
        """
        if self._running:
            raise RuntimeError("this monitor is already running; call stop() first")
        self._stop.clear()
        self._running = True
        cap = capture(self.model, self.layer_names, key=self.key, reduce=self.reducer)
        last_draw_step, last_draw_end, last_draw_cost = self.step, time.perf_counter(), 0.0
        always = self.capture_every == 1
        try:
            if always:
                cap.start()
            for _ in range(steps):
                if self._stop.is_set():
                    break
                t0 = time.perf_counter()
                recorded = always or (self.step + 1) % self.capture_every == 0
                if recorded and not always:
                    cap.start()
                loss = self.step_fn()
                if recorded:
                    if not always:
                        cap.stop()
                    self._collect(cap, loss)
                    cap.clear()
                else:
                    self.step += 1
                if len(self._pending) >= self.stats_every:
                    self._flush()
                self.train_seconds += time.perf_counter() - t0
                now = time.perf_counter()
                if (
                    on_update is not None
                    and self.step - last_draw_step >= every
                    and now - last_draw_end >= max(min_interval, 4 * last_draw_cost)
                ):
                    last_draw_cost = self._draw(on_update)
                    last_draw_step, last_draw_end = self.step, time.perf_counter()
        finally:
            cap.stop()  # hooks go on every exit path: end, stop(), exception, KeyboardInterrupt
            self._flush()
            self._running = False
        if on_update is not None:
            self._draw(on_update)
        return self

    def _draw(self, on_update: Callable[[MonitorState], None]) -> float:
        self._flush()
        t0 = time.perf_counter()
        on_update(self)
        cost = time.perf_counter() - t0
        self.draw_seconds += cost
        self.draws += 1
        return cost

    def _collect(self, cap: Any, loss: Any) -> None:
        acts, grads = [], []
        for name in self.layer_names:
            record = cap.records[name]
            act = _tensor_of(record.activations[-1]) if record.activations else None
            grad = _tensor_of(record.gradients[-1]) if record.gradients else None
            acts.append(_EMPTY if act is None else act)
            grads.append(_EMPTY if grad is None else grad)
        value = float(loss.detach()) if isinstance(loss, Tensor) else float(loss) if loss is not None else np.nan
        self.step += 1
        self._pending.append((self.step, value, acts, grads))

    def _flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        if not pending:
            return
        n_layers = len(self.layer_names)
        act_samples = pad_samples([a for _, _, acts, _ in pending for a in acts])
        grad_samples = pad_samples([g for _, _, _, grads in pending for g in grads])
        act = sample_stats(act_samples)
        grad = sample_stats(grad_samples)
        if self.act_limits is None:
            first = act["max_abs"][:n_layers]
            self.act_limits = np.array([nice_limit(1.25 * v) for v in first])
        act_hist = abs_histograms(act_samples, np.tile(self.act_limits, len(pending)), self.bins)
        grad_hist, self.grad_edges = log_histograms(grad_samples, bins=self.bins)

        def rows(values: np.ndarray, i: int) -> np.ndarray:
            return values[i * n_layers : (i + 1) * n_layers].astype(np.float32)

        for i, (step, loss, _, _) in enumerate(pending):
            self.history.append(
                StepStats(
                    step=step,
                    loss=loss,
                    act_mean=rows(act["mean"], i),
                    act_std=rows(act["std"], i),
                    act_frac_zero=rows(act["frac_zero"], i),
                    act_nonfinite=rows(act["nan"] + act["inf"], i),
                    act_hist=rows(act_hist, i),
                    grad_abs_mean=rows(grad["abs_mean"], i),
                    grad_nonfinite=rows(grad["nan"] + grad["inf"], i),
                    grad_hist=rows(grad_hist, i),
                )
            )

    # ------------------------------------------------------------------------------- reading
    def _series(self, field: str) -> np.ndarray:
        self._flush()
        if not self.history:
            return np.zeros((0, len(self.layer_names)), dtype=np.float32)
        return np.stack([getattr(s, field) for s in self.history])

    def steps(self) -> np.ndarray:
        """Step numbers held in the history (the last ``history`` steps)."""
        self._flush()
        return np.array([s.step for s in self.history], dtype=np.int64)

    def losses(self) -> np.ndarray:
        """Loss of each step in the history."""
        self._flush()
        return np.array([s.loss for s in self.history], dtype=np.float64)

    def act_mean(self) -> np.ndarray:
        """``(steps, layers)`` mean activation (over the sampled elements)."""
        return self._series("act_mean")

    def act_std(self) -> np.ndarray:
        """``(steps, layers)`` activation standard deviation."""
        return self._series("act_std")

    def act_frac_zero(self) -> np.ndarray:
        """``(steps, layers)`` fraction of activations that are exactly zero (dead ReLUs)."""
        return self._series("act_frac_zero")

    def grad_abs_mean(self) -> np.ndarray:
        """``(steps, layers)`` mean |gradient| with respect to each layer's output."""
        return self._series("grad_abs_mean")

    def nonfinite(self) -> dict[str, int]:
        """NaN + Inf counts seen in the samples of the history, activations and gradients."""
        return {
            "activations": int(self._series("act_nonfinite").sum()),
            "gradients": int(self._series("grad_nonfinite").sum()),
        }

    def _index(self, layer: str) -> int:
        try:
            return self.layer_names.index(layer)
        except ValueError:
            raise KeyError(f"layer {layer!r} is not monitored (monitored: {self.layer_names})") from None

    def colorful_dimension(self, layer: str) -> np.ndarray:
        """``(steps, bins)`` histograms of |activation| of ``layer`` over steps (fastai's colourful dimension)."""
        return self._series("act_hist")[:, self._index(layer)] if self.history else np.zeros((0, self.bins))

    def grad_histogram(self, layer: str, last: int = 10) -> np.ndarray:
        """Histogram of log10|gradient| of ``layer``, summed over the last ``last`` steps (see ``grad_edges``)."""
        series = self._series("grad_hist")
        return series[-last:, self._index(layer)].sum(axis=0) if len(series) else np.zeros(self.bins)

    def grad_by_depth(self, last: int = 10) -> np.ndarray:
        """Mean |gradient| of each monitored layer (input side first), averaged over the last ``last`` steps."""
        series = self.grad_abs_mean()
        return series[-last:].mean(axis=0) if len(series) else np.full(len(self.layer_names), np.nan)

    def summary(self) -> str:
        """A few deterministic lines: steps, loss at the start and end, gradient size by depth."""
        losses = self.losses()
        if not len(losses):
            return f"no steps yet; watching {len(self.layer_names)} layers: {', '.join(self.layer_names)}"
        depth = self.grad_by_depth()
        lines = [
            f"steps {int(self.steps()[0])}-{self.step} kept of {self.step} (history {self.history.maxlen})",
            f"loss: first {losses[0]:.3f}, last {losses[-1]:.3f}",
            "mean |grad| by depth: " + ", ".join(f"{n}={v:.1e}" for n, v in zip(self.layer_names, depth, strict=True)),
        ]
        return "\n".join(lines)

    def figure(self, selected: str | None = None, fig: Figure | None = None) -> Figure:
        """The dashboard as a matplotlib figure (loss, activation stats, colourful dimension, gradients)."""
        fig = fig if fig is not None else Figure(figsize=(10, 5), dpi=72)
        selected = selected or self.layer_names[-1]
        steps = self.steps()
        if not len(steps):
            fig.clear()
            fig.text(0.5, 0.5, "no steps yet", ha="center")
            return fig
        monitor_figure(
            fig,
            steps,
            self.losses(),
            self.layer_names,
            self.act_mean(),
            self.act_std(),
            self.colorful_dimension(selected),
            float(self.act_limits[self._index(selected)]) if self.act_limits is not None else 1.0,
            self.grad_histogram(selected),
            self.grad_edges,
            self.grad_by_depth(),
            selected,
        )
        return fig

    def __repr__(self) -> str:
        return (
            f"MonitorState(step={self.step}, layers={len(self.layer_names)}, "
            f"history={len(self.history)}/{self.history.maxlen}, running={self._running})"
        )


class TrainingMonitor(StaticFallback, widgets.VBox):
    """Live training dashboard: Train / Stop buttons, a layer picker and six throttled panels.

    ``monitor.run(300)`` trains in the foreground (the cell blocks; interrupt the kernel to stop:
    hooks are removed and the history is kept). The **Train** button trains ``steps`` more steps in a
    background thread, so **Stop** works while it runs. The state is at ``monitor.state``.
    """

    def __init__(
        self,
        model: nn.Module | None = None,
        step_fn: Callable[[], Any] | None = None,
        *,
        steps: int = 100,
        every: int = 25,
        min_interval: float = 0.5,
        **kwargs: Any,
    ) -> None:
        state = kwargs.pop("state", None)
        if state is None:
            if model is None:
                raise ValueError("pass a model (and a step_fn, or it trains on the bundled digits)")
            state = MonitorState(model, step_fn or digits_step_fn(model), **kwargs)
        self.state = state
        self.every = every
        self.min_interval = min_interval
        self._thread: threading.Thread | None = None
        self._fig = Figure(figsize=(10, 5), dpi=72)
        self.steps = widgets.BoundedIntText(
            value=steps, min=1, max=100_000, description="steps", layout={"width": "170px"}
        )
        self.train_button = widgets.Button(description="Train", icon="play", button_style="success")
        self.stop_button = widgets.Button(description="Stop", icon="stop", button_style="danger", disabled=True)
        self.layer = widgets.Dropdown(options=state.layer_names, value=state.layer_names[-1], description="layer")
        self.status = widgets.Label()
        self.out = widgets.Output()
        super().__init__(
            [widgets.HBox([self.steps, self.train_button, self.stop_button, self.layer]), self.status, self.out]
        )
        self.train_button.on_click(lambda _: self.start(self.steps.value))
        self.stop_button.on_click(lambda _: self.stop())
        self.layer.observe(lambda _: self.redraw(), names="value")
        self.redraw()

    def _status(self) -> str:
        losses = self.state.losses()
        loss = f"loss {losses[-1]:.4f}" if len(losses) else "no steps yet"
        what = "training…" if self.state.running else "stopped"
        return f"step {self.state.step} · {loss} · {what}"

    def redraw(self, state: MonitorState | None = None) -> None:
        """Draw the dashboard from the state (called by the throttled training loop)."""
        self.status.value = self._status()
        if not len(self.state.steps()):
            show_text(self.out, "no steps yet: press Train, or call monitor.run(steps)")
            return
        self.state.figure(self.layer.value, self._fig)
        show_png(self.out, figure_png(self._fig), f"training monitor at step {self.state.step}")

    def run(self, steps: int) -> TrainingMonitor:
        """Train ``steps`` steps in the foreground, redrawing live (throttled)."""
        self._set_running(True)
        try:
            self.state.run(steps, on_update=self.redraw, every=self.every, min_interval=self.min_interval)
        finally:
            self._set_running(False)
            self.status.value = self._status()
        return self

    def start(self, steps: int) -> threading.Thread:
        """Train ``steps`` more steps in a background thread (Stop works meanwhile); returns the thread."""
        if self._thread is not None and self._thread.is_alive():
            raise RuntimeError("already training; press Stop first")

        def work() -> None:
            try:
                self.run(steps)
            except Exception as exc:  # shown in the widget: a background thread has no cell to raise into
                self.state.last_error = f"{type(exc).__name__}: {exc}"
                self.status.value = f"stopped by an error: {self.state.last_error}"

        self._thread = threading.Thread(target=work, name="hookviz-monitor", daemon=True)
        self._set_running(True)
        self._thread.start()
        return self._thread

    def stop(self) -> None:
        """Stop training after the current step; the hooks are removed when the loop ends."""
        self.state.stop()

    def _set_running(self, running: bool) -> None:
        self.train_button.disabled = running
        self.stop_button.disabled = not running

    def static_png(self) -> bytes:
        """The dashboard as one PNG (the static fallback)."""
        return figure_png(self.state.figure(self.layer.value))

    def __repr__(self) -> str:
        s = self.state
        return (
            f"TrainingMonitor(step={s.step}, layers={len(s.layer_names)}, history={len(s.history)}/{s.history.maxlen})"
        )
