"""The training monitor: live feature maps, gradients and statistics of every layer while a model trains.

:class:`MonitorState` wraps any training step: it starts :func:`hookviz.capture` with a
:class:`~hookviz.summarize.StridedSample` reducer (each hook keeps a fixed sample of 256 elements), runs the
steps, turns the samples into statistics every few steps in one vectorised pass, and keeps them in a
:class:`~hookviz.summarize.RunHistory` (bounded memory, always spanning step 1 to now). While a view
is attached it also runs a fixed **probe** sample through the model a few times per second (eval mode,
no gradient, the model's mode put back) and keeps every watched layer's output for it: the live
feature maps. Its hooks are removed on every exit: the end of the run, :meth:`MonitorState.stop`, an
exception or a ``KeyboardInterrupt``.

Threading: the state owns its training thread (:meth:`MonitorState.start`); everything the training
thread and a reader share (pending samples, history, probe maps, step counter) is guarded by one
lock; "stop" and "idle" are :class:`threading.Event` objects, never polled flags.
:class:`TrainingMonitor` is a thin ipywidgets view over it.
"""

from __future__ import annotations

import inspect
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.figure import Figure
from torch import Tensor, nn

from hookviz.capture import Capture, iter_tensors, resolve_layers
from hookviz.data import load_digits
from hookviz.i18n import tr
from hookviz.models import make_digits_step
from hookviz.render import (
    feature_panel_png,
    figure_png,
    figure_text,
    finite_range,
    heatmap_panel_png,
    histogram_png,
    join_png,
    message_png,
    monitor_figure,
    pace_png,
    stack_png,
)
from hookviz.summarize import (
    GRAD_LOG_RANGE,
    Histogram,
    RunHistory,
    StridedSample,
    abs_histograms,
    as_numpy,
    log_histograms,
    nice_limit,
    pad_samples,
    sample_stats,
)
from hookviz.text import closest_names
from hookviz.widgets.common import (
    StaticFallback,
    as_tensor_argument,
    caption_html,
    check_int,
    check_model,
    check_number,
    claim_model,
    creation_place,
    monitor_step,
    previous_from_same_place,
    release_model,
    row,
    run_mode,
    show_png,
    show_text,
)
from hookviz.widgets.timeline import refuse_inference_mode

__all__ = [
    "MONITOR_KEY",
    "PROBE_KEY",
    "STOP_TIMEOUT",
    "MonitorState",
    "StepStats",
    "TrainingMonitor",
    "default_layers",
    "digits_step_fn",
]

MONITOR_KEY = "hookviz.monitor"
PROBE_KEY = "hookviz.monitor.probe"
# (id(model), key) -> the monitor that last used that key on that model; a new one stops an old one
# that is still training in the background (re-running the cell that created it).
_LATEST: weakref.WeakValueDictionary[tuple[int, str], MonitorState] = weakref.WeakValueDictionary()
_EMPTY = np.zeros(0, dtype=np.float32)
_RECENT = 50  # raw steps kept for "the last few steps" panels
STOP_TIMEOUT = 30.0  # seconds a new monitor waits for an earlier one on the same model to stop


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
    grad_frac_zero: np.ndarray
    grad_zeros: np.ndarray  # exact zeros among the sampled gradient values
    grad_nonfinite: np.ndarray
    _grad_hists: _GradHistograms | None = field(default=None, repr=False)  # this step's flush, histograms on demand
    _row: int = 0  # this step's row in it

    @property
    def grad_hist(self) -> np.ndarray:
        """``(L, bins)`` counts of log10|gradient| (exact zeros left out)."""
        if self._grad_hists is None:
            return np.zeros((len(self.grad_abs_mean), 0), dtype=np.float32)
        return self._grad_hists.rows()[self._row]


class _GradHistograms:
    """The log10|gradient| histograms of one flush's sampled gradients, computed when first read.

    Only the last few steps' gradient histograms are ever shown (the live panel, the charts), so the
    monitor keeps the samples of its recent steps and bins them on demand instead of in every step.
    """

    def __init__(self, samples: Any, steps: int, layers: int, bins: int) -> None:
        self._samples = samples
        self._shape = (steps, layers, bins)
        self._counts: np.ndarray | None = None

    def rows(self) -> np.ndarray:
        """``(steps, layers, bins)`` counts, float32."""
        counts = self._counts
        if counts is None:
            binned, _ = log_histograms(self._samples, bins=self._shape[2])
            counts = self._counts = binned.reshape(self._shape).astype(np.float32)
        return counts


def digits_step_fn(model: nn.Module, batch_size: int = 64, lr: float = 3e-3, seed: int = 0) -> Callable[[], Tensor]:
    """A training step for ``model`` on the bundled digits (the course's one step, ``make_digits_step``).

    Works for :class:`hookviz.DigitsCNN` and for any model taking ``(N, 1, 8, 8)`` images (an MLP can
    start with ``nn.Flatten()``). Each call trains on the next batch and returns the loss.
    """
    return make_digits_step(model, batch_size=batch_size, lr=lr, seed=seed)


def _default_step(model: nn.Module) -> Callable[[], Tensor]:
    """:func:`digits_step_fn` for a monitor given no ``step_fn``: a model that cannot train on the digits is told so."""
    step = digits_step_fn(model)

    def default_step() -> Tensor:
        try:
            return step()
        except (RuntimeError, ValueError, TypeError, IndexError, AssertionError) as exc:
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            message = (
                f"TrainingMonitor's default step trains the model on the course's digits (images of shape "
                f"(N, 1, 8, 8), 10 classes, cross-entropy) and {type(model).__name__} failed on them: "
                f"{type(exc).__name__}: {first_line}. For another model or other data pass your own step: "
                "TrainingMonitor(model, step_fn=step), where step() trains one step and returns the loss "
                "(an MLP on the digits can start with nn.Flatten() and take 64 inputs)"
            )
            try:
                error = type(exc)(message)
            except Exception:  # an exception class with another signature
                error = RuntimeError(message)
            raise error from exc

    return default_step


def _first_tensor(value: Any) -> Tensor | None:
    return next((t for _, t in iter_tensors(value)), None)


def default_layers(model: nn.Module) -> dict[str, nn.Module]:
    """The layers a monitor watches by default: every module that holds parameters of its own.

    That is each conv, linear and norm layer of a CNN, an ``nn.LSTM``, and an ``nn.MultiheadAttention``
    (its ``in_proj_weight`` is its own, although it is not a leaf). A child of ``nn.MultiheadAttention``
    (its ``out_proj``) is left out: the attention uses its weights directly and never calls it, so it
    would never record anything. A model without parameters gets every leaf module.
    """
    modules = dict(model.named_modules())
    chosen = {}
    for name, module in modules.items():
        if not any(True for _ in module.parameters(recurse=False)):
            continue
        if name and isinstance(modules.get(name.rpartition(".")[0]), nn.MultiheadAttention):
            continue
        chosen[name] = module
    return chosen or resolve_layers(model)


def _check_probe(model: nn.Module, probe: Tensor) -> None:
    """Refuse a probe that cannot go through ``model``: no batch dimension, or another floating dtype."""
    if probe.ndim == 0 or len(probe) == 0:
        raise ValueError(
            "probe must be a batch with at least one sample (shape (N, ...)); for one sample x pass x[None] or x[:1]"
        )
    weights = next((p for p in model.parameters() if p.is_floating_point()), None)
    if probe.is_floating_point() and weights is not None and probe.dtype != weights.dtype:
        raise TypeError(
            f"probe is {str(probe.dtype).removeprefix('torch.')} but the weights of {type(model).__name__} are "
            f"{str(weights.dtype).removeprefix('torch.')}; pass probe.to({weights.dtype})"
        )


def _loss_value(loss: Any) -> float:
    """The number a training step returned: a number, a one-element tensor, or ``None`` (NaN); else a clear error."""
    if loss is None:
        return float("nan")
    if isinstance(loss, Tensor):
        if loss.is_complex():
            dtype = str(loss.dtype).removeprefix("torch.")
            raise TypeError(
                f"step_fn must return a real loss, but it returned a complex tensor ({dtype}, shape "
                f"{tuple(loss.shape)}); a loss to minimise is a real number: return e.g. loss.abs() or loss.real"
            )
        if loss.numel() == 1:
            return float(loss.detach())
        what = f"a tensor of shape {tuple(loss.shape)}"
    elif isinstance(loss, (int, float, np.integer, np.floating)) and not isinstance(loss, bool):
        return float(loss)
    elif isinstance(loss, dict):
        what = f"a dict with keys {', '.join(map(repr, loss))}"
    else:
        what = f"a {type(loss).__name__} ({loss!r})" if isinstance(loss, str) else f"a {type(loss).__name__}"
    raise TypeError(
        f"step_fn must return the loss as a number or a one-element tensor (or None), but it returned {what}; "
        "return the loss itself, e.g. return loss (or loss.mean(), or out['loss'])"
    )


def _cycle(data: Iterable[Any]) -> Iterator[Any]:
    """Batches of ``data`` for ever: a new pass (epoch) over it each time it runs out."""
    one_pass = iter(data) is data  # a generator or another iterator: it cannot start a second pass
    given = 0
    while True:
        empty = True
        for batch in data:
            empty = False
            given += 1
            yield batch
        if empty and given and one_pass:
            raise ValueError(
                f"data= is a {type(data).__name__} that yielded {given} batches and is now exhausted: a generator or "
                "iterator cannot start a second pass (epoch). Pass a list of batches or a DataLoader (both can be "
                "iterated again), or train at most as many steps as it yields"
            )
        if empty and given:
            raise ValueError(f"data= yielded {given} batches on its first pass and none on the next (was it emptied?)")
        if empty:
            raise ValueError(
                f"data= yielded no batch at all (an empty {type(data).__name__}); pass a non-empty list of batches or "
                "a DataLoader"
            )


class MonitorState:
    """Train with statistics and live probe feature maps: the plain-Python core of :class:`TrainingMonitor`.

    Args:
        model: the model being trained: any ``nn.Module`` (a CNN, a transformer, an LSTM ...).
        step_fn: one training step (forward, backward, optimiser step); returns the loss (a tensor,
            a number, or ``None``). Called with no argument, or with the next batch when ``data`` is given.
        data: optional batches (a ``DataLoader``, a list of ``(x, y)`` ...): each step calls
            ``step_fn(batch)`` with the next one, starting a new pass over ``data`` when it runs out.
        layers / types: which layers to watch (as in :func:`hookviz.capture`). By default every
            module that holds parameters of its own (conv, linear, norm layers, an LSTM, an
            attention), in depth order; see :func:`default_layers`.
        history: points of the whole-run history (even; older points are merged pairwise when full).
        sample: elements kept per tensor per hook (a fixed strided sample; 256 keeps the hooks and the
            statistics under about a third of a bare training step of the bundled CNN).
        stats_every: turn collected samples into statistics every this many steps.
        capture_every: record every this many steps (1: every step). With more than 1 the hooks are
            attached only for the recorded steps, and the steps in between run with no hook at all.
        bins: histogram bins.
        probe: an input batch ``(N, ...)`` whose first sample's feature maps are shown live (``None``:
            no live maps); pass ``x[:1]`` to send only one sample through the model.
        probe_label: its label, shown with it.
        key: hookviz capture key; a new monitor with the same key replaces the old one's hooks.
    """

    def __init__(
        self,
        model: nn.Module,
        step_fn: Callable[..., Any],
        *,
        data: Iterable[Any] | None = None,
        layers: str | list[str] | None = None,
        types: type[nn.Module] | tuple[type[nn.Module], ...] | None = None,
        history: int = 512,
        sample: int = 256,
        stats_every: int = 10,
        capture_every: int = 1,
        bins: int = 40,
        probe: Tensor | None = None,
        probe_label: int | None = None,
        key: str = MONITOR_KEY,
    ) -> None:
        check_model(model, "TrainingMonitor")
        if not callable(step_fn):
            raise TypeError(f"step_fn must be a function that runs one training step, got {type(step_fn).__name__}")
        history = check_int(history, "history", minimum=2, fix="the default is 512")
        if history % 2:
            raise ValueError(
                f"history must be an even number of points (the oldest are merged two by two when it is full), "
                f"not {history}; e.g. history={history + 1}"
            )
        sample = check_int(sample, "sample", minimum=1)
        stats_every = check_int(stats_every, "stats_every", minimum=1, fix="1 turns samples into statistics every step")
        capture_every = check_int(capture_every, "capture_every", minimum=1, fix="1 records every step")
        bins = check_int(bins, "bins", minimum=1, fix="the default is 40")
        if data is not None and not (hasattr(data, "__iter__") or hasattr(data, "__getitem__")):
            raise TypeError(
                f"data must be the batches to train on (a list of batches, a DataLoader, a generator), not "
                f"{type(data).__name__}"
            )
        if probe is not None:
            probe = as_tensor_argument(probe, "probe")
            _check_probe(model, probe)
        if probe_label is not None:
            probe_label = check_int(probe_label, "probe_label")
        if not isinstance(key, str):
            raise TypeError(f"key must be a string, not {key!r}")
        self.model = model
        self.step_fn = step_fn
        self.data = data
        self._batches: Iterator[Any] | None = None
        chosen = default_layers(model) if layers is None and types is None else resolve_layers(model, layers, types)
        self.layer_names = list(chosen)
        self._watched: dict[str, nn.Module | None] = dict(chosen)  # name -> the module watched under it (None: gone)
        self._links = {name: self._path(name) for name in chosen}  # name -> (parent, key, child) from the model down
        self._unchanged = self._link_checks()
        self._changed_at: dict[str, int] = {}  # name -> the step in which the module at that name changed
        #: what happened to watched layers during training ("layer '2' was replaced at step 5 ..."), in order
        self.layer_changes: list[str] = []
        self.history = RunHistory(history)
        self.recent: deque[StepStats] = deque(maxlen=_RECENT)
        self.reducer = StridedSample(sample)
        self.stats_every = stats_every
        self.capture_every = capture_every
        self.bins = bins
        self.key = key
        self.step = 0
        self.act_limits: np.ndarray | None = None
        self.grad_edges = np.linspace(*GRAD_LOG_RANGE, bins + 1)
        self.probe = None if probe is None else probe.detach()
        self.probe_label = probe_label
        self.probe_maps: dict[str, np.ndarray] = {}
        self.probe_step: int | None = None
        self.probe_note = ""
        self.train_seconds = 0.0
        self.updates = 0
        self.last_error: str | None = None
        self.thread: threading.Thread | None = None
        self._nonfinite = {"activations": 0, "gradients": 0}
        self._recorded: set[str] = set()  # watched layers that produced an output in a recorded step
        self._pending: list[tuple[int, float, list[Tensor], list[Tensor]]] = []
        self._lock = threading.RLock()  # guards everything the training thread and readers share
        self._stop = threading.Event()
        self._idle = threading.Event()  # set while no run() is executing
        self._idle.set()
        self._looping = False
        place = creation_place()
        where = place[0] if place[0].startswith("<") else os.path.basename(place[0])  # a cell, or a file's name
        self._what = f"a monitor that trains it (made at line {place[2]} of {where})"
        # The monitor made by an earlier run of the same cell (whatever its model), and the last one on this model
        # with this key, stop: re-running a cell never piles up trainings.
        rerun = previous_from_same_place("MonitorState", self, outside_ipython=True)
        for previous in (rerun, _LATEST.get((id(model), key))):
            if previous is None or previous is self or not previous.running:
                continue
            previous.stop()  # its loop ends after the current step and removes its hooks
            if not previous.wait(timeout=STOP_TIMEOUT):
                raise RuntimeError(
                    f"the earlier monitor on this {type(previous.model).__name__} (key {previous.key!r}) is still "
                    f"training {STOP_TIMEOUT:g} s "
                    "after it was asked to stop (a very slow step?); its hooks would collide with this "
                    "monitor's. Wait for it, or pass another key="
                )
        _LATEST[(id(model), key)] = self

    # ------------------------------------------------------------------------------- running
    @property
    def running(self) -> bool:
        """True while the training loop of :meth:`run` is executing (in this or another thread)."""
        return self._looping

    def stop(self) -> None:
        """Ask a running :meth:`run` to finish after the current step (its hooks are then removed)."""
        self._stop.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until :meth:`run` has returned (its last update drawn); ``False`` if not within ``timeout`` s."""
        return self._idle.wait(timeout)

    def start(
        self, steps: int, on_update: Callable[[MonitorState], None] | None = None, interval: float = 0.2
    ) -> threading.Thread:
        """Train ``steps`` more steps in a background thread owned by this state; returns the thread.

        An error in the thread is kept in :attr:`last_error` and reported through one last
        ``on_update`` (a background thread has no cell to raise into).
        """
        steps = check_int(steps, "steps", minimum=0)
        interval = check_number(interval, "interval", minimum=0)
        with self._lock:
            self._claim()
            self.last_error = None
            self.thread = threading.Thread(
                target=self._run_claimed, args=(steps, on_update, interval, True), name="hookviz-monitor", daemon=True
            )
            self.thread.start()
            return self.thread

    def _claim(self) -> None:
        if not self._idle.is_set():
            raise RuntimeError("this monitor is already running; call stop() first")
        claim_model(self.model, self, self._what, "TrainingMonitor")  # one tool per model at a time
        self._stop.clear()
        self._idle.clear()
        self._looping = True

    def run(
        self, steps: int, on_update: Callable[[MonitorState], None] | None = None, interval: float = 0.2
    ) -> MonitorState:
        """Train ``steps`` more steps here (or until :meth:`stop`), calling ``on_update`` as it goes.

        With ``on_update`` (a view), every ``interval`` seconds of wall time the probe sample is run
        through the model and ``on_update(state)`` is called; once more at the end. Without it the
        run is "headless": no probe and no drawing. An interrupt (``KeyboardInterrupt``) or a
        ``SystemExit`` in a step stops the run with the monitor consistent (hooks removed, steps
        counted, :attr:`last_error` says what stopped it) and is raised again.
        """
        steps = check_int(steps, "steps", minimum=0)
        interval = check_number(interval, "interval", minimum=0)
        refuse_inference_mode("MonitorState.run()")  # start()'s thread is never in inference mode either
        with self._lock:
            self._claim()
        with torch.enable_grad():  # as in start()'s own thread: torch.no_grad() around the call changes nothing
            self._run_claimed(steps, on_update, interval, False)
        return self

    def _run_claimed(
        self, steps: int, on_update: Callable[[MonitorState], None] | None, interval: float, keep_errors: bool
    ) -> None:
        try:
            try:
                self._loop(steps, on_update, interval)
            except BaseException as exc:  # KeyboardInterrupt and SystemExit too: the state must stay consistent
                if keep_errors or not isinstance(exc, Exception):
                    self.last_error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                self._looping = False
                release_model(self.model, self)
                if on_update is not None:
                    try:
                        self._update(on_update)  # the last picture shows where it stopped, and why
                    except Exception:  # noqa: S110 - the error that stopped the run is the one to report
                        pass
                if not keep_errors:  # the foreground run raises it in the cell; a background thread keeps it
                    raise
                return
            finally:
                self._looping = False
                release_model(self.model, self)
            if on_update is not None:
                self._update(on_update)
        finally:
            self._idle.set()

    def _module_at(self, name: str) -> nn.Module | None:
        """The module now at ``name`` in the model (``None`` when there is none)."""
        if not name:
            return self.model
        try:
            module = self.model.get_submodule(name)
        except (AttributeError, TypeError, KeyError):
            return None
        return module if isinstance(module, nn.Module) else None

    def _path(self, name: str) -> tuple[tuple[nn.Module, str, nn.Module], ...] | None:
        """``(parent, key, child)`` from the model down to ``name`` (``None`` when nothing is at ``name``)."""
        links = []
        parent = self.model
        for key in name.split(".") if name else ():
            child = parent._modules.get(key)
            if child is None:
                return None
            links.append((parent, key, child))
            parent = child
        return tuple(links)

    def _follow_layers(self, step: int) -> bool:
        """Watch the module now at each watched name: a layer replaced or removed (in step ``step``) is noted.

        Cheap: it runs after every step, and checks each watched layer with a few dict lookups (is
        each module on the way down still where it was?). Returns ``True`` when a module changed, so
        that the capture is made again on the modules now in the model.
        """
        checks = self._unchanged
        if checks is not None:
            for parent, key, child in checks:
                if parent._modules.get(key) is not child:
                    break
            else:
                return False
        changed = False
        for name, links in self._links.items():
            if links is not None and all(parent._modules.get(key) is child for parent, key, child in links):
                continue
            module, now = self._watched[name], self._module_at(name)
            self._links[name] = self._path(name) if now is not None else None
            if now is module:
                continue
            changed = True
            if now is None:
                text = (
                    f"layer {name!r} was removed from the model in step {step}: it has no statistics from step "
                    f"{step} on"
                )
            elif module is None:
                text = f"a layer {name!r} ({type(now).__name__}) is back in step {step}: watched from step {step + 1}"
            else:
                text = (
                    f"layer {name!r} was replaced in step {step} (by a new {type(now).__name__}): the new module is "
                    f"watched from step {step + 1}"
                )
            with self._lock:
                self._watched[name] = now
                self._changed_at[name] = step
                self.layer_changes.append(text)
        self._unchanged = self._link_checks()
        return changed

    def _link_checks(self) -> tuple[tuple[nn.Module, str, nn.Module], ...] | None:
        """Every ``(parent, key, child)`` link of the watched layers once (shared containers are checked once).

        ``None`` while a watched layer is missing: then each step looks for it again.
        """
        if any(links is None for links in self._links.values()):
            return None
        unique = {
            (id(parent), key): (parent, key, child) for links in self._links.values() for parent, key, child in links
        }
        return tuple(unique.values())

    def _capture(self, **kwargs: Any) -> Capture:
        """A capture of the watched layers that are in the model now."""
        live = {name: module for name, module in self._watched.items() if module is not None}
        return Capture(self.model, live, **kwargs)

    def _loop(self, steps: int, on_update: Callable[[MonitorState], None] | None, interval: float) -> None:
        self._follow_layers(self.step)  # changed between two runs: "in step N" is the last step before
        # only this thread's calls are steps: a probe drawn for the layer picker, or the user running the model in
        # another thread meanwhile, must not land in the step's records (a call without a gradient: NaN statistics)
        thread = threading.get_ident()
        cap = self._capture(key=self.key, reduce=self.reducer, thread=thread)
        always = self.capture_every == 1
        last_update = time.perf_counter()
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
                loss = _loss_value(self._one_step())  # a clear error for a string, a dict, a vector ...
                if recorded:
                    if not always:
                        cap.stop()
                    self._collect(cap, loss)
                    cap.clear()
                else:
                    with self._lock:
                        self.step += 1
                if self._follow_layers(self.step):  # the step replaced or removed a watched layer
                    cap.stop()
                    cap = self._capture(key=self.key, reduce=self.reducer, thread=thread)
                    if always:
                        cap.start()
                with self._lock:
                    if len(self._pending) >= self.stats_every:
                        self._flush()
                now = time.perf_counter()
                self.train_seconds += now - t0
                if on_update is not None and now - last_update >= interval:
                    last_update = now
                    self._update(on_update)
        finally:
            cap.stop()  # hooks go on every exit path: end, stop(), exception, KeyboardInterrupt
            with self._lock:
                self._flush()

    def _one_step(self) -> Any:
        """Run the user's step once: ``step_fn()``, or ``step_fn(next batch)`` when ``data`` was given."""
        if self.data is None:
            with monitor_step():
                return self.step_fn()
        if self._batches is None:
            self._batches = _cycle(self.data)
        batch = next(self._batches)
        with monitor_step():
            return self.step_fn(batch)

    def _update(self, on_update: Callable[[MonitorState], None]) -> None:
        # The training capture may still be on: the probe's (gradient-free) call lands in its records
        # before the next step's call, and _collect reads each layer's last call, so it never mixes in.
        if self.probe is not None:
            self.run_probe()
        on_update(self)
        self.updates += 1

    def run_probe(self) -> dict[str, np.ndarray]:
        """Run the probe sample through the model now and keep every watched layer's output for it.

        Eval mode (BatchNorm uses its running statistics and does not update them), no gradient; the
        model's own mode is put back. Returns ``{layer: output for the probe}``.
        """
        if self.probe is None:
            return {}
        try:
            with run_mode(self.model, False), torch.no_grad(), self._capture(key=PROBE_KEY, grads=False) as cap:
                self.model(self.probe)
        except Exception as exc:  # a probe that does not fit the model must not stop training
            self.probe_note = f"probe failed: {type(exc).__name__}: {exc}"
            self.probe = None
            return {}
        maps = {}
        n = len(self.probe) if self.probe.ndim else 0
        for name in self.layer_names:
            record = cap.records.get(name)
            tensor = _first_tensor(record.activations[-1]) if record is not None and record.activations else None
            if tensor is not None and tensor.ndim >= 1 and len(tensor) == n:
                maps[name] = as_numpy(tensor[0])
        with self._lock:
            self.probe_maps, self.probe_step = maps, self.step
        return maps

    def _collect(self, cap: Any, loss: Any) -> None:
        acts, grads = [], []
        records = cap.records
        for name in self.layer_names:
            record = records.get(name)  # None: the layer was removed from the model
            if record is None or not record.activations:
                acts.append(_EMPTY)
                grads.append(_EMPTY)
                continue
            act, grad = record.activations[-1], record.gradients[-1]
            if not isinstance(act, Tensor):  # a tuple, dict ... output: its first tensor
                act = _first_tensor(act)
            if grad is not None and not isinstance(grad, Tensor):
                grad = _first_tensor(grad)
            acts.append(_EMPTY if act is None else act)
            grads.append(_EMPTY if grad is None else grad)
            if act is not None and name not in self._recorded:
                self._recorded.add(name)
        with self._lock:
            self.step += 1
            self._pending.append((self.step, loss, acts, grads))

    def _flush(self) -> None:
        """Turn pending samples into statistics (call with the lock held: steps stay in order)."""
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
        grad_hists = _GradHistograms(grad_samples, len(pending), n_layers, self.bins)  # binned when read

        def per_step(values: np.ndarray) -> np.ndarray:  # one row per pending step, one column per layer
            return values.reshape(len(pending), n_layers, *values.shape[1:]).astype(np.float32)

        act_mean, act_std, act_frac_zero = per_step(act["mean"]), per_step(act["std"]), per_step(act["frac_zero"])
        act_nonfinite, act_hist = per_step(act["nan"] + act["inf"]), per_step(act_hist)
        grad_abs_mean, grad_frac_zero = per_step(grad["abs_mean"]), per_step(grad["frac_zero"])
        grad_zeros = per_step(np.nan_to_num(grad["frac_zero"]) * grad["n"])
        grad_nonfinite = per_step(grad["nan"] + grad["inf"])
        self._nonfinite["activations"] += int(act_nonfinite.sum())
        self._nonfinite["gradients"] += int(grad_nonfinite.sum())
        for i, (step, loss, _, _) in enumerate(pending):
            self.recent.append(
                StepStats(
                    step=step,
                    loss=loss,
                    act_mean=act_mean[i],
                    act_std=act_std[i],
                    act_frac_zero=act_frac_zero[i],
                    act_nonfinite=act_nonfinite[i],
                    act_hist=act_hist[i],
                    grad_abs_mean=grad_abs_mean[i],
                    grad_frac_zero=grad_frac_zero[i],
                    grad_zeros=grad_zeros[i],
                    grad_nonfinite=grad_nonfinite[i],
                    _grad_hists=grad_hists,
                    _row=i,
                )
            )
        self.history.extend(
            [step for step, _, _, _ in pending],
            {
                "loss": [loss for _, loss, _, _ in pending],
                "act_mean": act_mean,
                "act_std": act_std,
                "act_frac_zero": act_frac_zero,
                "act_hist": act_hist,
                "grad_abs_mean": grad_abs_mean,
            },
        )

    # ------------------------------------------------------------------------------- reading
    def _series(self, field: str) -> np.ndarray:
        with self._lock:
            self._flush()
            if not len(self.history):
                return np.zeros((0, len(self.layer_names)), dtype=np.float64)
            return self.history.series(field)

    def steps(self) -> np.ndarray:
        """The last step of each history point: always from the start of the run to now."""
        with self._lock:
            self._flush()
            return self.history.steps()

    def losses(self) -> np.ndarray:
        """Loss of each history point (the mean over the steps the point covers)."""
        with self._lock:
            self._flush()
            return self.history.series("loss") if len(self.history) else np.zeros(0)

    def act_mean(self) -> np.ndarray:
        """``(points, layers)`` mean activation (over the sampled elements)."""
        return self._series("act_mean")

    def act_std(self) -> np.ndarray:
        """``(points, layers)`` activation standard deviation."""
        return self._series("act_std")

    def act_frac_zero(self) -> np.ndarray:
        """``(points, layers)`` fraction of activations that are exactly zero (dead ReLUs)."""
        return self._series("act_frac_zero")

    def grad_abs_mean(self) -> np.ndarray:
        """``(points, layers)`` mean |gradient| with respect to each layer's output."""
        return self._series("grad_abs_mean")

    def nonfinite(self) -> dict[str, int]:
        """NaN + Inf counts seen in the samples of the whole run, activations and gradients."""
        with self._lock:
            self._flush()
            return dict(self._nonfinite)

    def _index(self, layer: str) -> int:
        try:
            return self.layer_names.index(layer)
        except ValueError:
            raise KeyError(f"layer {layer!r} is not monitored (monitored: {self.layer_names})") from None

    def colorful_dimension(self, layer: str) -> np.ndarray:
        """``(points, bins)`` histograms of |activation| of ``layer`` over the run (fastai's colourful dimension)."""
        series = self._series("act_hist")
        return series[:, self._index(layer)] if len(series) else np.zeros((0, self.bins))

    def _recent(self, last: int) -> list[StepStats]:
        with self._lock:
            self._flush()
            return list(self.recent)[-last:]

    def grad_histogram(self, layer: str, last: int = 10) -> np.ndarray:
        """Histogram of log10|gradient| of ``layer``, summed over the last ``last`` steps (see ``grad_edges``)."""
        i = self._index(layer)
        recent = self._recent(last)
        return np.sum([s.grad_hist[i] for s in recent], axis=0) if recent else np.zeros(self.bins)

    def grad_zero_fraction(self, layer: str, last: int = 10) -> float | None:
        """Share of exact zeros in ``layer``'s sampled output gradient over the last ``last`` steps."""
        i = self._index(layer)
        recent = self._recent(last)
        return float(np.mean([s.grad_frac_zero[i] for s in recent])) if recent else None

    def grad_by_depth(self, last: int = 10) -> np.ndarray:
        """Mean |gradient| of each monitored layer (input side first), averaged over the last ``last`` steps."""
        recent = self._recent(last)
        if not recent:
            return np.full(len(self.layer_names), np.nan)
        values = np.array([s.grad_abs_mean for s in recent])
        means = values.mean(axis=0)
        with self._lock:
            changed = dict(self._changed_at)
        if changed:  # a layer replaced in step N: its new module's steps only (step N may have none)
            steps = np.array([s.step for s in recent])
            for name, since in changed.items():
                after = values[steps > since, self._index(name)]
                means[self._index(name)] = after.mean() if len(after) else np.nan
        return means

    def silent_layers(self) -> list[str]:
        """Watched layers that produced no output in any recorded step (never called as a module).

        Their statistics are NaN. Typical causes: a layer the model does not use, a child whose
        parent uses its weights directly (``nn.MultiheadAttention``'s ``out_proj``), or a layer
        inside a fused fast path.
        """
        with self._lock:
            if not self.step:
                return []
            return [n for n in self.layer_names if n not in self._recorded]

    def probe_layers(self) -> list[str]:
        """Watched layers whose output for the probe is known."""
        with self._lock:
            return [n for n in self.layer_names if n in self.probe_maps]

    def default_live_layer(self) -> str:
        """The first watched layer whose probe output has maps of at least 8 x 8 pixels (else the last layer)."""
        if self.probe is not None and not self.probe_maps:
            self.run_probe()
        with self._lock:
            for name in self.layer_names:
                maps = self.probe_maps.get(name)
                if maps is not None and maps.ndim >= 3 and min(maps.shape[-2:]) >= 8:
                    return name
        return self.layer_names[-1]

    def summary(self) -> str:
        """A few deterministic lines: steps, loss at the start and end, gradient size by depth."""
        losses = self.losses()
        if not len(losses):
            return f"no steps yet; watching {len(self.layer_names)} layers: {', '.join(self.layer_names)}"
        depth = self.grad_by_depth()
        silent = set(self.silent_layers())
        with self._lock:
            changes, gone = list(self.layer_changes), {n for n, m in self._watched.items() if m is None}
        lines = [
            f"steps 1-{self.step} in {len(self.history)} points of {self.history.width} step(s) "
            f"(at most {self.history.capacity} points)",
            f"loss: first point {losses[0]:.3f}, last {losses[-1]:.3f}",
            "mean |grad| by depth: "
            + ", ".join(
                f"{n}=removed" if n in gone else f"{n}=not called" if n in silent else f"{n}={v:.1e}"
                for n, v in zip(self.layer_names, depth, strict=True)
            ),
            *changes,
        ]
        return "\n".join(lines)

    # ------------------------------------------------------------------------------- pictures
    def live_png(self, layer: str | None = None) -> bytes:
        """The live panel: the probe input and ``layer``'s feature maps for it (fixed size, Pillow)."""
        layer = layer or self.layer_names[-1]
        with self._lock:
            maps, step = self.probe_maps.get(layer), self.probe_step
        if maps is None:
            why = self.probe_note or (
                "no probe sample: pass probe=..." if self.probe is None else "press Train: maps appear while it trains"
            )
            return message_png(f"{figure_text(f'feature maps of {layer}')}: {figure_text(why)}", size=(430, 290))
        probe = self.probe
        image = as_numpy(probe[0]) if probe is not None and probe[0].ndim >= 2 and probe.is_floating_point() else None
        caption = "" if self.probe_label is None else figure_text(f"label {self.probe_label}")
        title = figure_text(f"{layer} at step {step}")
        if maps.ndim == 2:  # (positions, features): a sequence model's output for one sample
            return heatmap_panel_png(maps, title=title, image=image, image_caption=caption)
        if maps.ndim >= 3:
            tiles = maps.reshape(-1, *maps.shape[-2:])
            return feature_panel_png(
                tiles, [str(c) for c in range(len(tiles))], title=title, image=image, image_caption=caption
            )
        lo, hi = finite_range(maps)
        return feature_panel_png(
            maps.reshape(-1),
            vmin=lo,
            vmax=hi,
            title=f"{title} {figure_text('(cell = output index)')}",
            image=image,
            image_caption=caption,
        )

    def live_grad_png(self, layer: str | None = None, last: int = 10) -> bytes:
        """The live gradient panel: log10|gradient| of ``layer``'s output over the last steps, zeros counted."""
        layer = layer or self.layer_names[-1]
        recent = self._recent(last)
        if not recent:
            return message_png(figure_text(f"gradient of {layer}: no steps yet"), size=(300, 210))
        i = self._index(layer)
        counts = np.sum([s.grad_hist[i] for s in recent], axis=0).astype(np.int64)
        nonfinite = int(sum(s.grad_nonfinite[i] for s in recent))
        zeros = int(round(sum(float(s.grad_zeros[i]) for s in recent)))
        total = int(counts.sum()) + zeros + nonfinite
        hist = Histogram(counts, self.grad_edges, total, nonfinite, 0, zeros)
        return histogram_png(
            hist,
            title=figure_text(f"|gradient| of {layer}, last {len(recent)} steps"),
            x_label=figure_text("log10 |gradient| (-3 = 0.001)"),
        )

    def pace_png(self) -> bytes:
        """The fast charts (loss over steps, mean |gradient| by layer) up to the latest step, with Pillow.

        Cheap (a few ms), so the view redraws them with the live row: they keep pace with training.
        """
        with self._lock:
            self._flush()
            steps, losses, depth = self.history.steps(), self.losses(), self.grad_by_depth()
        return pace_png(steps, losses, self.layer_names, depth)

    def figure(self, selected: str | None = None, fig: Figure | None = None) -> Figure:
        """The charts as a matplotlib figure (loss, gradient by layer, activation stats, colourful dimension)."""
        fig = fig if fig is not None else Figure(figsize=(9, 7.6), dpi=72)
        selected = selected or self.layer_names[-1]
        with self._lock:
            self._flush()
            steps = self.history.steps()
            limit = float(self.act_limits[self._index(selected)]) if self.act_limits is not None else 1.0
            return monitor_figure(
                fig,
                steps,
                self.losses(),
                self.layer_names,
                self.act_mean(),
                self.act_std(),
                self.colorful_dimension(selected),
                limit,
                self.grad_histogram(selected),
                self.grad_edges,
                self.grad_by_depth(),
                selected,
                self.grad_zero_fraction(selected),
                self.history.width,
            )

    def __repr__(self) -> str:
        return (
            f"MonitorState(step={self.step}, layers={len(self.layer_names)}, "
            f"history={len(self.history)}/{self.history.capacity}, running={self.running})"
        )


class TrainingMonitor(StaticFallback, widgets.VBox):
    """Live training dashboard: Train / Stop, a layer picker, live feature maps of a probe digit, charts.

    ``monitor.run(300)`` trains in the foreground (the cell blocks; interrupt the kernel to stop:
    hooks are removed and the history is kept). The **Train** button trains ``steps`` more steps in a
    background thread owned by the state, so **Stop** and the layer picker work while it runs; Train
    again continues where it stopped. The live row (the probe digit, the chosen layer's feature maps
    for it and that layer's gradient histogram) refreshes several times a second; the charts below
    every few seconds (they cost more to draw) and at the end. The state is at ``monitor.state``.

    ``interval``: seconds between two live redraws (0: after every step); ``charts_every``: seconds between two
    redraws of the charts (0: as often as their drawing cost allows).
    """

    #: Seconds between two redraws of the fast charts (loss, mean |gradient|) while training runs. They are
    #: drawn with a live redraw (every ``interval`` s), the first one due within half an interval: with the
    #: default 0.2 s, every other live redraw, so that they are never much more than 0.4 s behind.
    PACE_EVERY = 0.4

    def __init__(
        self,
        model: nn.Module | None = None,
        step_fn: Callable[[], Any] | None = None,
        *,
        steps: int = 1000,
        interval: float = 0.2,
        charts_every: float = 3.0,
        **kwargs: Any,
    ) -> None:
        state = kwargs.pop("state", None)
        # Every argument is checked before anything is made: a refused monitor leaves no widget open.
        known = [n for n in inspect.signature(MonitorState.__init__).parameters if n not in ("self", "model")]
        for name in kwargs:
            if name not in known:
                close = ", ".join(map(repr, closest_names(name, [*known, "steps", "interval", "charts_every"])))
                message = f"TrainingMonitor has no argument {name!r}"
                raise TypeError(tr(f"{message}; closest: {close}" if close else message))
        steps = check_int(steps, "steps", minimum=1, fix="how many steps the Train button runs, e.g. 1000")
        interval = check_number(interval, "interval", minimum=0, fix="seconds between two live redraws, e.g. 0.2")
        charts_every = check_number(charts_every, "charts_every", minimum=0,
                                    fix="seconds between two redraws of the charts, e.g. 3.0")
        if state is not None and not isinstance(state, MonitorState):
            raise TypeError(tr(
                f"state must be a MonitorState (or None, to make one from model and step_fn), not "
                f"{type(state).__name__}"
            ))
        if state is None:
            if model is None:
                raise ValueError("pass a model (and a step_fn, or it trains on the bundled digits)")
            if step_fn is None and kwargs.get("data") is not None:
                raise ValueError("data= needs a step_fn(batch) that trains on one of its batches")
            if step_fn is None:
                check_model(model, "TrainingMonitor")  # before the default step reads its parameters
            if step_fn is None and "probe" not in kwargs:
                images, labels = load_digits("test")
                kwargs["probe"], kwargs["probe_label"] = images[:1], int(labels[0])
            state = MonitorState(model, step_fn or _default_step(model), **kwargs)
        self.state = state
        self.interval = interval
        self.charts_every = charts_every
        self._fig = Figure(figsize=(9, 7.6), dpi=72)
        self._draw_lock = threading.Lock()  # one live-row drawing at a time
        self._chart_lock = threading.Lock()  # one chart drawing at a time
        self._chart_thread: threading.Thread | None = None
        self._last_charts = 0.0
        self._chart_cost = 0.0
        self._last_pace = 0.0
        self.steps = widgets.IntText(value=steps, description=tr("steps"), layout={"width": "150px"})
        self.steps.style.description_width = "40px"
        self.train_button = widgets.Button(
            description=tr("Train"), icon="play", button_style="success", layout={"width": "90px"}
        )
        self.stop_button = widgets.Button(
            description=tr("Stop"), icon="stop", button_style="danger", disabled=True, layout={"width": "90px"}
        )
        self.layer = widgets.Dropdown(
            options=state.layer_names,
            value=state.default_live_layer(),
            description=tr("layer"),
            layout={"width": "230px"},
        )
        self.layer.style.description_width = "40px"
        self.status = widgets.HTML()
        self.message = widgets.HTML()
        # Image widgets, not Outputs: a new picture travels as a binary buffer and only the <img> changes
        # in the page (an Output would rebuild its output area several times a second).
        self.live_img = widgets.Image(format="png", layout={"height": "290px", "width": "430px"})
        self.grad_img = widgets.Image(format="png", layout={"height": "210px", "width": "300px"})
        # The fast charts (loss, mean |gradient| by layer) are Pillow pictures redrawn with the live row, so
        # they always show the status line's step; the detailed matplotlib charts below follow every few s.
        self.pace_img = widgets.Image(format="png", layout={"height": "200px", "width": "740px"})
        self.out = widgets.Output(layout={"min_height": "548px"})
        super().__init__(
            [
                row(self.steps, self.train_button, self.stop_button, self.layer),
                self.status,
                self.message,
                row(self.live_img, self.grad_img),
                self.pace_img,
                self.out,
            ]
        )
        self.add_class("hookviz-monitor")  # CSS hooks for the browser test and for styling
        self.live_img.add_class("hookviz-live")
        self.pace_img.add_class("hookviz-pace")
        self.status.add_class("hookviz-status")
        self.train_button.on_click(lambda _: self._on_train())
        self.stop_button.on_click(lambda _: self.stop())
        self.layer.observe(lambda _: self.redraw(charts=True), names="value")
        self.redraw(charts=True)
        self._close_previous_run("TrainingMonitor")

    def _release(self) -> None:
        """Stop training and wait for it (and for a chart being drawn) before the widget is closed."""
        state = getattr(self, "state", None)  # None too for a widget whose __init__ failed
        if isinstance(state, MonitorState):
            state.stop()
            state.wait(timeout=STOP_TIMEOUT)
        if hasattr(self, "_chart_thread"):
            self._wait_charts()

    def _status(self) -> str:
        s = self.state
        losses = s.losses()
        loss = tr(f"loss {losses[-1]:.4f}") if len(losses) else tr("no steps yet")
        if s.last_error:
            what = tr(f"stopped by an error: {s.last_error}")
        else:
            what = tr("training…") if s.running else tr("stopped")
        changes = f" · {tr(s.layer_changes[-1])}" if s.layer_changes else ""
        return caption_html(f"{tr(f'step {s.step}')} · {loss} · {what}{changes}")

    def redraw(self, state: MonitorState | None = None, charts: bool | None = None) -> None:
        """Draw the live row now, and the charts when due (``charts=None``: every few seconds while training).

        Called from the training thread and from the layer picker. The live row is cheap (a few ms,
        Pillow); the charts (matplotlib) are drawn in a helper thread while training runs, so that a
        slow chart never holds up the live row, and at most ten times their own cost apart.
        """
        s = self.state
        layer = self.layer.value
        with self._draw_lock:
            self.status.value = self._status()
            self.live_img.value = s.live_png(layer)
            self.grad_img.value = s.live_grad_png(layer)
            now = time.perf_counter()
            # the fast charts: every PACE_EVERY s while training, always at the end. The live redraws come every
            # `interval` s with a few ms of jitter, so "due" allows half an interval: a strict ">= PACE_EVERY"
            # would skip the redraw that comes a millisecond early and wait a whole interval more.
            due = now - self._last_pace >= self.PACE_EVERY - self.interval / 2
            if charts or not s.running or due:
                self._last_pace = now
                self.pace_img.value = s.pace_png()
        if charts or not s.running:
            self._wait_charts()
            self._draw_charts(layer)
        elif charts is None and now - self._last_charts >= max(self.charts_every, 10 * self._chart_cost):
            if self._chart_thread is None or not self._chart_thread.is_alive():
                self._last_charts = now
                self._chart_thread = threading.Thread(
                    target=self._draw_charts, args=(layer,), name="hookviz-monitor-charts", daemon=True
                )
                self._chart_thread.start()

    def _wait_charts(self) -> None:
        thread = self._chart_thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _draw_charts(self, layer: str) -> None:
        with self._chart_lock:
            s = self.state
            if not len(s.steps()):
                show_text(self.out, tr("no steps yet: press Train, or call monitor.run(steps)"))
                return
            t0 = time.perf_counter()
            s.figure(layer, self._fig)
            show_png(self.out, figure_png(self._fig), f"training monitor at step {s.step}")
            self._chart_cost = time.perf_counter() - t0
            self._last_charts = time.perf_counter()

    def run(self, steps: int) -> TrainingMonitor:
        """Train ``steps`` steps in the foreground, redrawing live."""
        self._set_running(True)
        try:
            self.state.run(steps, on_update=self.redraw, interval=self.interval)
        finally:
            self._set_running(False)
            self.status.value = self._status()
        return self

    def _on_train(self) -> None:
        steps = self.steps.value
        if not isinstance(steps, int) or not 1 <= steps <= 1_000_000:
            self.message.value = caption_html(tr(f"steps must be a whole number from 1 to 1000000, not {steps!r}"))
            return
        self.message.value = ""
        self.start(steps)

    def start(self, steps: int) -> threading.Thread:
        """Train ``steps`` more steps in the state's background thread (Stop works meanwhile)."""

        def update(state: MonitorState) -> None:
            self.redraw(state)
            if not state.running:
                self._set_running(False)

        self._set_running(True)
        try:
            return self.state.start(steps, on_update=update, interval=self.interval)
        except Exception:
            self._set_running(False)
            raise

    def stop(self) -> None:
        """Stop training after the current step; the hooks are removed when the loop ends."""
        self.state.stop()

    def _set_running(self, running: bool) -> None:
        self.train_button.disabled = running
        self.stop_button.disabled = not running
        self.steps.disabled = running

    def static_png(self) -> bytes:
        """The live row above the charts, as one PNG (the static fallback)."""
        live = join_png([self.state.live_png(self.layer.value), self.state.live_grad_png(self.layer.value)])
        if not len(self.state.steps()):
            return live
        return stack_png([live, figure_png(self.state.figure(self.layer.value))])

    def __repr__(self) -> str:
        s = self.state
        if s is None:
            return "TrainingMonitor(closed)"
        return (
            f"TrainingMonitor(step={s.step}, layers={len(s.layer_names)}, "
            f"history={len(s.history)}/{s.history.capacity})"
        )
