"""The layer explorer: pick a layer and a sample, see its feature maps and its gradient histogram.

:class:`ExplorerState` does the work in plain Python: **one** forward and backward pass through
:func:`hookviz.capture` when it is made (and again only if the gradient target changes), then every
choice of layer, sample, channel page or ordering is answered from the captured arrays.
:class:`LayerExplorer` is a thin ipywidgets view over it.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.figure import Figure
from torch import Tensor, nn

from hookviz.capture import capture, iter_tensors, value_at
from hookviz.render import colorize, figure_png, finite_range, heat_strip, histogram_png, mosaic, mosaic_png, strip_png
from hookviz.summarize import Histogram, as_numpy, histogram
from hookviz.widgets.common import StaticFallback, show_png, show_text

__all__ = ["EXPLORER_KEY", "ExplorerState", "LayerExplorer", "LayerInfo"]

EXPLORER_KEY = "hookviz.explorer"
_CONV_TYPES = (nn.modules.conv._ConvNd,)


@dataclass(frozen=True)
class LayerInfo:
    """One entry of the layer picker: qualified name, module type, per-sample output shape, notes."""

    name: str
    type: str
    shape: tuple[int, ...] | None
    calls: int
    note: str = ""

    @property
    def label(self) -> str:
        """What the picker shows: ``features.4 · Conv2d · (16, 4, 4)``."""
        shape = "not called" if self.shape is None else str(self.shape)
        return f"{self.name} · {self.type} · {shape}"


def _first_tensor(value: Any) -> tuple[tuple[int | str, ...], Tensor | None, str]:
    """Path and value of the first tensor in a module output, and a note when it is inside a structure."""
    for path, tensor in iter_tensors(value):
        if not path:
            return path, tensor, ""
        where = f"element [{path[0]}]" if isinstance(path[0], int) else f"key {path[0]!r}"
        nested = "".join(f"[{step!r}]" for step in path[1:])
        size = f" of {len(value)}" if isinstance(value, (tuple, list)) else ""
        return path, tensor, f"output is a {type(value).__name__}{size}; showing {where}{nested}"
    return (), None, f"output of type {type(value).__name__} holds no tensor"


class ExplorerState:
    """Everything the layer explorer shows, computed from one forward and backward pass.

    Args:
        model: any ``nn.Module``. It is run in eval mode (``train_mode=False``) and put back in its
            own mode afterwards; parameter ``.grad`` fields are not touched (the gradients are taken
            with ``torch.autograd.grad`` with respect to a copy of the input).
        inputs: a batch (first dimension = samples). A batch of one is fine.
        labels: optional targets; with them the gradient is of the summed cross-entropy loss.
        target: ``"loss"`` (needs labels), ``"predicted"`` (each sample's top logit) or a class index.
        layers: qualified names to offer; default every submodule (containers included).
        page_size: channels per page of the mosaic.
        key: hookviz capture key; a new explorer with the same key replaces an old one's hooks.

    Switching layer, sample, page or ordering never runs the model: :attr:`forward_passes` counts.
    """

    def __init__(
        self,
        model: nn.Module,
        inputs: Tensor,
        labels: Tensor | None = None,
        *,
        target: str | int | None = None,
        layers: list[str] | None = None,
        page_size: int = 64,
        train_mode: bool = False,
        key: str = EXPLORER_KEY,
    ) -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(f"expected an nn.Module, got {type(model).__name__}")
        if not isinstance(inputs, Tensor) or inputs.ndim == 0 or len(inputs) == 0:
            raise ValueError("inputs must be a batch tensor with at least one sample (shape (N, ...), N >= 1)")
        if labels is not None and len(labels) != len(inputs):
            raise ValueError(f"labels has {len(labels)} entries for {len(inputs)} inputs")
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.model = model
        self.inputs = inputs.detach()
        self.labels = None if labels is None else labels.detach()
        self.layer_names = layers if layers is not None else [n for n, _ in model.named_modules() if n] or [""]
        self.page_size = page_size
        self.train_mode = train_mode
        self.key = key
        self.forward_passes = 0
        self.target: str | int = target if target is not None else ("loss" if labels is not None else "predicted")
        self.info: dict[str, LayerInfo] = {}
        self.activations: dict[str, np.ndarray] = {}
        self.gradients: dict[str, np.ndarray | None] = {}
        self.grad_notes: dict[str, str] = {}
        self.n_outputs: int | None = None
        self.output_note = ""
        self._png_cache: dict[tuple[Any, ...], bytes] = {}
        self._run()
        self.layer = self.default_layer()
        self.sample = 0
        self.page = 0
        self.order = "index"

    # ------------------------------------------------------------------------------- the one pass
    def _target_value(self, out: Tensor) -> Tensor:
        target = self.target
        if target == "loss":
            if self.labels is None:
                raise ValueError("target='loss' needs labels; pass labels=... or target='predicted' or a class index")
            if out.ndim != 2:
                raise ValueError(
                    f"target='loss' needs (N, classes) logits, the model returned shape {tuple(out.shape)}"
                )
            return nn.functional.cross_entropy(out, self.labels.to(out.device), reduction="sum")
        if target == "predicted":
            flat = out.reshape(len(out), -1)
            return flat.max(dim=1).values.sum()
        if isinstance(target, int) and not isinstance(target, bool):
            if out.ndim != 2 or not 0 <= target < out.shape[1]:
                raise ValueError(f"class {target} does not exist in the model output of shape {tuple(out.shape)}")
            return out[:, target].sum()
        raise ValueError(f"target must be 'loss', 'predicted' or a class index, not {target!r}")

    def _run(self) -> None:
        model = self.model
        x = self.inputs.clone()
        if x.is_floating_point():
            x.requires_grad_(True)  # gradients reach every layer even when all weights are frozen
        was_training = model.training
        model.train(self.train_mode)
        self._png_cache.clear()
        try:
            with capture(model, self.layer_names, key=self.key) as cap:
                out_value = model(x)
                self.forward_passes += 1
                _, out, self.output_note = _first_tensor(out_value)
                if out is None:
                    raise TypeError(f"the model returned {type(out_value).__name__} with no tensor in it")
                self.n_outputs = int(out.shape[1]) if out.ndim == 2 else None
                value = self._target_value(out)
                wrt = [x] if x.requires_grad else [p for p in model.parameters() if p.requires_grad]
                if value.requires_grad and wrt:
                    torch.autograd.grad(value, wrt, allow_unused=True)
                    grad_missing = ""
                else:
                    grad_missing = "the output does not require grad (frozen model and integer input?)"
        finally:
            model.train(was_training)
        n = len(self.inputs)
        for name, record in cap.records.items():
            if not record.activations:
                self.info[name] = LayerInfo(name, record.module_type, None, 0, "not called in forward()")
                continue
            path, act, note = _first_tensor(record.activations[-1])
            notes = [note] if note else []
            if record.calls > 1:
                notes.append(f"called {record.calls} times; showing the last call")
            if act is None or act.ndim == 0 or act.shape[0] != n:
                shape_msg = "no tensor" if act is None else f"shape {tuple(act.shape)} has no batch dimension of {n}"
                self.info[name] = LayerInfo(name, record.module_type, None, record.calls, f"cannot show: {shape_msg}")
                continue
            self.activations[name] = as_numpy(act)
            grad = value_at(record.gradients[-1], path)  # the gradient of the very tensor shown
            if isinstance(grad, Tensor) and tuple(grad.shape) == tuple(act.shape):
                self.gradients[name] = as_numpy(grad)
            else:
                self.gradients[name] = None
                self.grad_notes[name] = grad_missing or "; ".join(record.notes) or "no gradient reached this layer"
            self.info[name] = LayerInfo(name, record.module_type, tuple(act.shape[1:]), record.calls, "; ".join(notes))

    # ------------------------------------------------------------------------------- choices
    @property
    def layers(self) -> list[str]:
        """Layers that can be shown (called, with a batch dimension), in module order."""
        return [name for name in self.info if name in self.activations]

    @property
    def n_samples(self) -> int:
        """Samples in the batch."""
        return len(self.inputs)

    def types(self) -> list[str]:
        """Module types among the showable layers, sorted (for the type filter)."""
        return sorted({self.info[n].type for n in self.layers})

    def layers_of_type(self, type_name: str | None) -> list[str]:
        """Showable layers of one module type (all of them for ``None`` or ``"all"``)."""
        if type_name in (None, "all"):
            return self.layers
        return [n for n in self.layers if self.info[n].type == type_name]

    def default_layer(self) -> str:
        """The last conv layer; else the last layer with spatial maps; else the last showable layer."""
        if not self.layers:
            raise ValueError(f"no layer of {type(self.model).__name__} produced a tensor with a batch dimension")
        modules = dict(self.model.named_modules())
        convs = [n for n in self.layers if isinstance(modules.get(n), _CONV_TYPES)]
        if convs:
            return convs[-1]
        spatial = [n for n in self.layers if self.activations[n].ndim >= 4]
        if spatial:
            return spatial[-1]
        leaves = [n for n in self.layers if n in modules and not list(modules[n].children())]
        return (leaves or self.layers)[-1]

    def _check_layer(self, name: str) -> str:
        if name in self.activations:
            return name
        if name in self.info:
            raise KeyError(f"layer {name!r} cannot be shown: {self.info[name].note}")
        close = difflib.get_close_matches(name, self.layers, n=3, cutoff=0.5)
        hint = f"; closest: {', '.join(map(repr, close))}" if close else ""
        raise KeyError(f"no layer named {name!r} in {type(self.model).__name__}{hint}")

    def select(
        self, layer: str | None = None, sample: int | None = None, page: int | None = None, order: str | None = None
    ) -> ExplorerState:
        """Change what is shown. Never runs the model. Unknown names or indices raise a clear error."""
        if layer is not None:
            new = self._check_layer(layer)
            if new != self.layer:
                self.layer, self.page = new, 0
        if sample is not None:
            if not 0 <= int(sample) < self.n_samples:
                raise IndexError(f"sample {sample} is out of range: the batch has {self.n_samples} samples")
            self.sample = int(sample)
        if order is not None:
            if order not in ("index", "topk"):
                raise ValueError(f"order must be 'index' or 'topk', not {order!r}")
            self.order = order
        if page is not None:
            if not 0 <= int(page) < self.pages:
                raise IndexError(f"page {page} is out of range: layer {self.layer!r} has {self.pages} page(s)")
            self.page = int(page)
        self.page = min(self.page, self.pages - 1)
        return self

    def set_target(self, target: str | int) -> ExplorerState:
        """Take gradients of another target (``"loss"``, ``"predicted"`` or a class): one new pass."""
        old = self.target
        self.target = target
        try:
            self._run()
        except Exception:
            self.target = old
            raise
        return self

    # ------------------------------------------------------------------------------- what is shown
    def activation(self) -> np.ndarray:
        """The chosen layer's output for the chosen sample (per-sample shape)."""
        return self.activations[self.layer][self.sample]

    def gradient(self) -> np.ndarray | None:
        """d(target)/d(output) of the chosen layer for the chosen sample, or ``None`` (see :meth:`describe`)."""
        grad = self.gradients.get(self.layer)
        return None if grad is None else grad[self.sample]

    @property
    def kind(self) -> str:
        """``"maps"`` for per-sample outputs with channels and space, ``"strip"`` for vectors."""
        return "maps" if self.activation().ndim >= 2 else "strip"

    def maps(self) -> np.ndarray:
        """All channel maps of the chosen layer and sample as ``(C, H, W)`` (a 2-D output is one map)."""
        a = self.activation()
        if a.ndim == 2:
            return a[None]
        if a.ndim > 3:
            return a.reshape(-1, *a.shape[-2:])
        return a

    @property
    def channels(self) -> int:
        """Channels of the chosen layer (values, for a strip)."""
        return len(self.maps()) if self.kind == "maps" else int(self.activation().size)

    @property
    def pages(self) -> int:
        """How many pages of ``page_size`` channels the chosen layer has."""
        return max(1, math.ceil(self.channels / self.page_size)) if self.kind == "maps" else 1

    def channel_order(self) -> np.ndarray:
        """Channel indices in display order: by index, or by mean activation (highest first; NaN last)."""
        if self.kind != "maps":
            return np.arange(self.channels)
        if self.order == "index":
            return np.arange(self.channels)
        maps = self.maps()
        means = np.nanmean(np.where(np.isinf(maps), np.nan, maps).reshape(len(maps), -1), axis=1) if maps.size else []
        key = np.where(np.isnan(means), -np.inf, means)
        return np.argsort(-key, kind="stable")

    def shown_channels(self) -> list[int]:
        """The channel indices on the current page, in display order."""
        order = self.channel_order()
        start = self.page * self.page_size
        return [int(c) for c in order[start : start + self.page_size]]

    def feature_png(self) -> bytes:
        """The feature-map picture of the current choice (cached: switching back is free)."""
        key = (self.layer, self.sample, self.page, self.order)
        png = self._png_cache.get(key)
        if png is None:
            if self.kind == "maps":
                maps = self.maps()
                lo, hi = finite_range(maps)  # one colour scale for the whole layer: pages compare
                png = mosaic_png(maps[self.shown_channels()], lo, hi)
            else:
                png = strip_png(self.activation())
            if len(self._png_cache) > 256:
                self._png_cache.clear()
            self._png_cache[key] = png
        return png

    def grad_histogram(self, bins: int = 40) -> Histogram | None:
        """Histogram of the chosen layer's output gradient for the chosen sample (``None`` without one)."""
        grad = self.gradient()
        return None if grad is None else histogram(grad, bins)

    def grad_png(self, log: bool = False) -> bytes | None:
        """The gradient histogram picture, or ``None`` when there is no gradient."""
        hist = self.grad_histogram()
        if hist is None:
            return None
        return histogram_png(hist, title=f"d({self.target_text})/d(output) of {self.layer}", log=log)

    @property
    def target_text(self) -> str:
        """The gradient target in words."""
        if self.target == "loss":
            return "loss"
        if self.target == "predicted":
            return "top logit"
        return f"logit {self.target}"

    def value_notes(self) -> list[str]:
        """Warnings about the chosen activation: all zero, constant, NaN or Inf values."""
        a = self.activation()
        notes = []
        nan, inf = int(np.isnan(a).sum()), int(np.isinf(a).sum())
        if nan or inf:
            notes.append(f"{nan} NaN and {inf} Inf values (magenta)")
        finite = a[np.isfinite(a)]
        if finite.size and not finite.any():
            notes.append("all values are 0 (a dead layer for this sample?)")
        elif finite.size and finite.min() == finite.max():
            notes.append(f"all values equal {finite.min():.4g}")
        return notes

    def describe(self) -> dict[str, Any]:
        """A plain summary of the current view (what the caption says), for tests and notebooks."""
        info = self.info[self.layer]
        a = self.activation()
        lo, hi = finite_range(a)
        grad = self.grad_histogram()
        shown = self.shown_channels()
        return {
            "layer": self.layer,
            "type": info.type,
            "shape": info.shape,
            "sample": self.sample,
            "label": None if self.labels is None else int(self.labels[self.sample]),
            "kind": self.kind,
            "channels": self.channels,
            "page": f"{self.page + 1}/{self.pages}",
            "shown": shown if self.kind == "maps" else f"{self.channels} values",
            "range": (round(lo, 4), round(hi, 4)),
            "gradient": grad.summary() if grad is not None else f"none: {self.grad_notes.get(self.layer, '')}",
            "notes": [n for n in [info.note, self.output_note, *self.value_notes()] if n],
        }

    def caption(self) -> str:
        """One line for the widget: layer, shape, sample, channels shown, value range and notes."""
        d = self.describe()
        label = "" if d["label"] is None else f" (label {d['label']})"
        if self.kind == "maps":
            shown = d["shown"]
            what = f"channels {', '.join(map(str, shown[:6]))}{'…' if len(shown) > 6 else ''} of {d['channels']}"
            what += f" · page {d['page']} ({'top-k by mean' if self.order == 'topk' else 'by index'})"
        else:
            what = f"{d['channels']} values as a heat strip"
        text = f"{d['layer']} · {d['type']} · {d['shape']} · sample {d['sample']}{label} · {what}"
        text += f" · range [{d['range'][0]:.3g}, {d['range'][1]:.3g}]"
        if d["notes"]:
            text += " · " + "; ".join(d["notes"])
        return text

    def layer_table(self) -> str:
        """The layer picker's content as a text table (name, type, per-sample output shape, notes)."""
        rows = [("layer", "type", "output shape", "note")]
        rows += [(i.name, i.type, str(i.shape) if i.shape else "-", i.note) for i in self.info.values()]
        widths = [max(len(r[c]) for r in rows) for c in range(4)]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def static_figure(self) -> Figure:
        """A matplotlib figure of the current view: feature maps and gradient histogram, with the caption."""
        fig = Figure(figsize=(8, 3.2), dpi=72, layout="constrained")
        ax_map, ax_hist = fig.subplots(1, 2, width_ratios=(1.2, 1))
        if self.kind == "maps":
            maps = self.maps()
            lo, hi = finite_range(maps)
            tiles = colorize(maps[self.shown_channels()], lo, hi)
            ax_map.imshow(mosaic(tiles, pad=1, fill=255), interpolation="nearest")
        else:
            ax_map.imshow(colorize(heat_strip(self.activation())), interpolation="nearest")
        ax_map.set_axis_off()
        ax_map.set_title(f"{self.layer} · sample {self.sample}", fontsize=9)
        hist = self.grad_histogram()
        if hist is None:
            ax_hist.text(0.5, 0.5, "no gradient", ha="center", va="center")
            ax_hist.set_axis_off()
        else:
            ax_hist.stairs(hist.counts, hist.edges, fill=True, color="tab:orange")
            ax_hist.set_title(f"d({self.target_text})/d(output): NaN {hist.nan} | Inf {hist.inf}", fontsize=9)
            ax_hist.tick_params(labelsize=7)
        return fig

    def __repr__(self) -> str:
        return (
            f"ExplorerState(layer={self.layer!r}, sample={self.sample}, page={self.page + 1}/{self.pages}, "
            f"order={self.order!r}, target={self.target!r}, forward_passes={self.forward_passes})"
        )


class LayerExplorer(StaticFallback, widgets.VBox):
    """A layer picker, a sample picker and two live panels (feature maps, gradient histogram).

    ``hookviz.LayerExplorer(model, images, labels)`` makes an :class:`ExplorerState` (one forward and
    backward pass) and shows it. Every control only re-reads the captured arrays, except "gradient
    of", which takes a new pass. The state is at ``explorer.state``; tests and notebooks can set the
    controls' ``.value`` and read ``explorer.state.describe()``.
    """

    def __init__(self, model: nn.Module, inputs: Tensor, labels: Tensor | None = None, **kwargs: Any) -> None:
        state = kwargs.pop("state", None) or ExplorerState(model, inputs, labels, **kwargs)
        self.state = state
        types = state.types()
        self.type_filter = widgets.Dropdown(
            options=[("all types", "all"), *[(t, t) for t in types]], value="all", description="type"
        )
        self.layer = widgets.Dropdown(
            options=self._layer_options("all"), value=state.layer, description="layer", layout={"width": "340px"}
        )
        target_options: list[tuple[str, str | int]] = []
        if state.labels is not None:
            target_options.append(("loss", "loss"))
        target_options.append(("top logit", "predicted"))
        if state.n_outputs:
            target_options += [(f"logit {k}", k) for k in range(state.n_outputs)]
        if state.target not in [v for _, v in target_options]:
            target_options.append((str(state.target), state.target))
        self.target = widgets.Dropdown(options=target_options, value=state.target, description="gradient of")
        self.sample = widgets.BoundedIntText(
            value=0, min=0, max=state.n_samples - 1, description="sample", layout={"width": "160px"}
        )
        self.order = widgets.ToggleButtons(options=[("index", "index"), ("top-k", "topk")], value="index")
        self.order.style.button_width = "64px"
        self.page = widgets.BoundedIntText(value=0, min=0, max=0, description="page", layout={"width": "140px"})
        self.log_scale = widgets.Checkbox(value=False, description="log counts", indent=False)
        self.caption = widgets.HTML()
        self.maps_out = widgets.Output(layout={"min_width": "280px"})
        self.grad_out = widgets.Output()
        super().__init__(
            [
                widgets.HBox([self.type_filter, self.layer, self.target]),
                widgets.HBox([self.sample, self.order, self.page, self.log_scale]),
                self.caption,
                widgets.HBox([self.maps_out, self.grad_out]),
            ]
        )
        self.type_filter.observe(self._on_type, names="value")
        self.layer.observe(lambda ch: self._apply(layer=ch["new"]), names="value")
        self.sample.observe(lambda ch: self._apply(sample=ch["new"]), names="value")
        self.order.observe(lambda ch: self._apply(order=ch["new"]), names="value")
        self.page.observe(lambda ch: self._apply(page=ch["new"]), names="value")
        self.log_scale.observe(lambda ch: self.refresh(), names="value")
        self.target.observe(self._on_target, names="value")
        self.refresh()

    def _layer_options(self, type_name: str) -> list[tuple[str, str]]:
        return [(self.state.info[n].label, n) for n in self.state.layers_of_type(type_name)]

    def _on_type(self, change: dict[str, Any]) -> None:
        options = self._layer_options(change["new"])
        current = self.state.layer
        self.layer.options = options
        names = [v for _, v in options]
        self.layer.value = current if current in names else names[-1]

    def _on_target(self, change: dict[str, Any]) -> None:
        self.state.set_target(change["new"])
        self.refresh()

    def _apply(self, **choice: Any) -> None:
        if choice.get("layer") is None and "layer" in choice:
            return  # the Dropdown passes through None while its options are replaced
        self.state.select(**choice)
        self.refresh()

    def refresh(self) -> None:
        """Redraw both panels and the caption from the state (no model run)."""
        state = self.state
        with self.page.hold_trait_notifications():
            self.page.max = state.pages - 1
            self.page.value = state.page
        self.page.disabled = state.pages == 1
        self.order.disabled = state.kind != "maps"
        self.caption.value = f"<code>{state.caption()}</code>"
        show_png(self.maps_out, state.feature_png(), f"feature maps of {state.layer}, sample {state.sample}")
        png = state.grad_png(log=self.log_scale.value)
        if png is None:
            show_text(self.grad_out, f"no gradient for {state.layer}: {state.grad_notes.get(state.layer, '')}")
        else:
            show_png(self.grad_out, png, f"gradient histogram of {state.layer}, sample {state.sample}")

    def static_png(self) -> bytes:
        """The current view as one PNG (the static fallback)."""
        return figure_png(self.state.static_figure())

    def __repr__(self) -> str:
        s = self.state
        return f"LayerExplorer(layer={s.layer!r}, sample={s.sample}, page={s.page + 1}/{s.pages}, target={s.target!r})"
