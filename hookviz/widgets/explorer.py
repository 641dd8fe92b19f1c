"""The layer explorer: pick a layer and a sample, see its feature maps and its gradient histogram.

Two plain-Python parts do the work: :class:`CapturedPass` is what **one** forward and backward pass
through :func:`hookviz.capture` recorded (every layer's output and output gradient, for the whole
batch); :class:`ExplorerState` is a view cursor over it (layer, sample, channel page, ordering) that
answers every choice from the captured arrays, and takes a new pass only when the gradient target
changes. :class:`LayerExplorer` is a thin ipywidgets view over the state; pictures come from
:mod:`hookviz.render`.

Any model, any inputs: each layer is drawn by its output's shape per sample (feature maps for
``(C, H, W)``, one heat map for the ``(positions, features)`` of a transformer or an LSTM, a heat strip
for a vector); a tuple output shows its first tensor and says so; an output with no tensor or no batch
dimension first is refused with the layer's name and the reason. The model comes back as it was.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as widgets
import numpy as np
import torch
from torch import Tensor, nn

from hookviz.capture import capture, iter_tensors, value_at
from hookviz.i18n import N_, get_language, note_separator, tr, tr_joined
from hookviz.render import (
    feature_panel_png,
    figure_text,
    finite_range,
    heatmap_panel_png,
    histogram_png,
    join_png,
    message_png,
    use_cjk_font,
)
from hookviz.summarize import Histogram, as_numpy, histogram
from hookviz.text import closest_names, text_table
from hookviz.widgets.common import (
    StaticFallback,
    as_tensor_argument,
    caption_html,
    check_int,
    check_model,
    refusal,
    refuse,
    row,
    run_mode,
    run_model,
    show_png,
    using_model,
)
from hookviz.widgets.timeline import refuse_inference_mode

__all__ = ["EXPLORER_KEY", "CapturedPass", "ExplorerState", "LayerExplorer", "LayerInfo"]

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

    def shown_label(self) -> str:
        """:attr:`label` as the picker shows it, in the current language (``not called`` translated)."""
        return f"{self.name} · {self.type} · {tr('not called') if self.shape is None else self.shape}"


def _kind_of(value: Any) -> str:
    """A short word for one element of a module output: ``Tensor``, ``None``, ``tuple`` ..."""
    return "Tensor" if isinstance(value, Tensor) else "None" if value is None else type(value).__name__


def _first_tensor(value: Any, batch: int | None = None) -> tuple[tuple[int | str, ...], Tensor | None, str]:
    """Path and value of the first tensor in a module output, and a note when it is inside a structure.

    The note names what the structure holds, so that a learner sees what was left out: an LSTM's
    ``(output, (h, c))`` reads "tuple of 2; showing element [0] (elements: Tensor, tuple)". With
    ``batch``, the first tensor whose first dimension is ``batch`` is taken (a dict of a scalar
    ``"aux"`` loss and the ``"logits"`` gives the logits, and the note names the key).
    """
    found = list(iter_tensors(value))
    if batch is not None:
        batch_first = [(p, t) for p, t in found if t.ndim >= 1 and t.shape[0] == batch]
        found = batch_first or [(p, t) for p, t in found if t.ndim >= 1]
    for path, tensor in found:
        if not path:
            return path, tensor, ""
        where = f"element [{path[0]}]" if isinstance(path[0], int) else f"key {path[0]!r}"
        nested = "".join(f"[{step!r}]" for step in path[1:])
        if isinstance(value, (tuple, list)):
            size = f" of {len(value)}"
            parts = f" (elements: {', '.join(_kind_of(v) for v in value)})"
        elif isinstance(value, dict):
            size, parts = "", f" (keys: {', '.join(map(repr, value))})"
        else:
            size = parts = ""
        return path, tensor, f"output is a {type(value).__name__}{size}; showing {where}{nested}{parts}"
    if batch is not None and any(True for _ in iter_tensors(value)):
        shapes = ", ".join(f"{_path_name(p)} {tuple(t.shape)}" for p, t in iter_tensors(value))
        return (), None, f"it holds only single numbers, no tensor with the batch dimension of {batch} ({shapes})"
    if value is None:
        return (), None, "the output is None (the module returns nothing to show)"
    return (), None, f"the output is a {type(value).__name__} with no tensor in it"


def _path_name(path: tuple[int | str, ...]) -> str:
    return "".join(f"[{step!r}]" for step in path) or "the tensor"


def _not_called_note(name: str, modules: dict[str, nn.Module]) -> str:
    """Why a module produced no output in the pass: a container, weights used directly, or skipped."""
    module = modules.get(name)
    parent = modules.get(name.rpartition(".")[0]) if name else None
    if isinstance(module, (nn.ModuleList, nn.ModuleDict, nn.ParameterList, nn.ParameterDict)):
        return N_(f"not called: a {type(module).__name__} only holds modules; its parent calls them one by one")
    if isinstance(parent, nn.MultiheadAttention):
        return N_("not called: MultiheadAttention uses this layer's weights directly, never calls it")
    return N_("not called in this pass (its parent may use its weights directly, or a fused fast path skipped it)")


@contextlib.contextmanager
def _restored(buffers: list[tuple[Tensor, Tensor]]) -> Iterator[None]:
    """Copy each saved value back into its buffer on the way out (a look must not train the model)."""
    try:
        yield
    finally:
        with torch.no_grad():
            for buffer, saved in buffers:
                buffer.copy_(saved)


def _batch_note(module: nn.Module | None, shape: tuple[int, ...], n: int) -> str:
    """Why an output cannot be shown per sample: its first dimension is not the batch."""
    text = N_(f"cannot show: shape {shape} has no batch dimension of {n} first")
    if getattr(module, "batch_first", True) is False:
        text += f" ({type(module).__name__} has batch_first=False: its outputs are (sequence, batch, ...))"
    return text


@dataclass
class CapturedPass:
    """What one forward and backward pass recorded: every layer's output and output gradient.

    Made by :meth:`run`; read-only afterwards. ``activations[name]`` and ``gradients[name]`` hold the
    whole batch (first dimension = samples); ``gradients[name]`` is ``None`` when no gradient reached
    the layer, and ``grad_notes[name]`` says why.
    """

    target: str | int
    info: dict[str, LayerInfo] = field(default_factory=dict)
    activations: dict[str, np.ndarray] = field(default_factory=dict)
    gradients: dict[str, np.ndarray | None] = field(default_factory=dict)
    grad_notes: dict[str, str] = field(default_factory=dict)
    n_outputs: int | None = None
    output_note: str = ""
    output_shape: tuple[int, ...] | None = None

    @staticmethod
    def target_value(out: Tensor, target: str | int, labels: Tensor | None) -> Tensor:
        """The scalar whose gradient is taken: the summed loss, the top logits, or one class's logits."""
        if target == "loss":
            if labels is None:
                raise ValueError("target='loss' needs labels; pass labels=... or target='predicted' or a class index")
            classes = out.shape[-1] if out.ndim >= 2 else 0
            if labels.numel() and (int(labels.min()) < 0 or int(labels.max()) >= classes):
                raise ValueError(
                    f"labels must be class indices from 0 to {classes - 1} (the model output {tuple(out.shape)} "
                    f"scores {classes} classes), but they run from {int(labels.min())} to {int(labels.max())}; "
                    "pass the right labels, or target='predicted'"
                )
            if out.ndim == 3 and tuple(labels.shape) == tuple(out.shape[:2]):  # a class per position
                flat, flat_labels = out.reshape(-1, out.shape[-1]), labels.reshape(-1).to(out.device)
                return nn.functional.cross_entropy(flat, flat_labels, reduction="sum")
            if out.ndim != 2 or labels.ndim != 1:
                raise ValueError(
                    "target='loss' needs (N, classes) logits with (N,) labels, or (N, positions, classes) "
                    f"logits with (N, positions) labels; the model returned shape {tuple(out.shape)} "
                    f"for labels of shape {tuple(labels.shape)}"
                )
            return nn.functional.cross_entropy(out, labels.to(out.device), reduction="sum")
        if target == "predicted":
            return out.reshape(len(out), -1).max(dim=1).values.sum()
        if isinstance(target, int) and not isinstance(target, bool):
            if out.ndim not in (2, 3) or not 0 <= target < out.shape[-1]:
                raise ValueError(f"class {target} does not exist in the model output of shape {tuple(out.shape)}")
            return out[..., target].sum()
        raise ValueError(f"target must be 'loss', 'predicted' or a class index, not {target!r}")

    @staticmethod
    def classes_of(out: Tensor) -> int | None:
        """How many classes a model output scores: ``C`` for ``(N, C)`` and ``(N, positions, C)`` logits."""
        return int(out.shape[-1]) if out.ndim in (2, 3) else None

    @classmethod
    def run(
        cls,
        model: nn.Module,
        inputs: Tensor,
        labels: Tensor | None,
        target: str | int,
        layer_names: list[str],
        *,
        train_mode: bool = False,
        key: str = EXPLORER_KEY,
    ) -> CapturedPass:
        """One forward and backward pass of ``inputs`` with every layer in ``layer_names`` captured.

        The model runs in ``train_mode`` (its buffers, such as BatchNorm's running statistics, are
        restored after a train-mode pass) and every submodule is put back in its own mode; its
        parameters' ``.grad`` and ``requires_grad`` are not touched (the gradient is taken with
        ``torch.autograd.grad``, with respect to a copy of the input that requires grad, so it reaches
        every layer even when all weights are frozen; for integer inputs such as tokens, with respect
        to the parameters that require grad, without writing their ``.grad``).
        """
        refuse_inference_mode("LayerExplorer")
        data = cls(target)
        x = inputs.clone()
        if x.is_floating_point():
            x.requires_grad_(True)
        # In train mode BatchNorm updates its running statistics: they are put back after the pass.
        buffers = [(b, b.clone()) for b in model.buffers()] if train_mode else []
        with (
            using_model(model, data, N_("a LayerExplorer"), "LayerExplorer"),
            torch.enable_grad(),  # a call inside torch.no_grad() still gets its gradients
            run_mode(model, train_mode),
            capture(model, layer_names, key=key) as cap,
            _restored(buffers),
        ):
            out_value = run_model(model, x, "LayerExplorer")
            _, out, data.output_note = _first_tensor(out_value, len(inputs))
            if out is None:
                raise TypeError(
                    f"LayerExplorer: {type(model).__name__} returned a {type(out_value).__name__}: "
                    f"{data.output_note}; the explorer needs the model's output (logits) with one row per "
                    "sample: wrap the model so that it returns them"
                )
            if out.is_complex():
                raise TypeError(
                    f"LayerExplorer: {type(model).__name__} returns complex values ({out.dtype}); the explorer "
                    "draws real numbers and takes gradients of a real target: wrap the model to return "
                    "out.abs() or out.real"
                )
            data.n_outputs = cls.classes_of(out)
            data.output_shape = tuple(out.shape[1:])
            value = cls.target_value(out, target, labels)
            wrt = [x] if x.requires_grad else [p for p in model.parameters() if p.requires_grad]
            if value.requires_grad and wrt:
                torch.autograd.grad(value, wrt, allow_unused=True)
                grad_missing = ""
            elif not wrt:
                grad_missing = (
                    N_("nothing requires grad: every parameter is frozen and the input is not floating-point "
                    "(integer tokens?), so there is no gradient to take")
                )
            else:
                grad_missing = (
                    N_("the model's output does not depend on anything that requires grad: its forward cuts the "
                    "graph (a .detach(), a torch.no_grad() block or an integer step such as argmax inside it)")
                )
        n = len(inputs)
        modules = dict(model.named_modules())
        for name, record in cap.records.items():
            if not record.activations:
                data.info[name] = LayerInfo(name, record.module_type, None, 0, _not_called_note(name, modules))
                continue
            path, act, note = _first_tensor(record.activations[-1])
            notes = [note] if note else []
            if record.calls > 1:
                notes.append(N_(f"called {record.calls} times; showing the last call"))
            if act is None:
                data.info[name] = LayerInfo(name, record.module_type, None, record.calls, f"cannot show: {note}")
                continue
            if act.is_complex():
                why = N_(f"cannot show: complex values ({str(act.dtype).removeprefix('torch.')}); show .abs() or .real")
                data.info[name] = LayerInfo(name, record.module_type, None, record.calls, why)
                continue
            if act.ndim == 0 or act.shape[0] != n:
                why = _batch_note(modules.get(name), tuple(act.shape), n)
                data.info[name] = LayerInfo(name, record.module_type, None, record.calls, "; ".join([why, *notes]))
                continue
            if getattr(modules.get(name), "batch_first", True) is False:
                notes.append(N_("batch_first=False: dimension 0 may be the sequence, not the sample"))
            data.activations[name] = as_numpy(act)
            grad = value_at(record.gradients[-1], path)  # the gradient of the very tensor shown
            if isinstance(grad, Tensor) and tuple(grad.shape) == tuple(act.shape):
                data.gradients[name] = as_numpy(grad)
            else:
                data.gradients[name] = None
                data.grad_notes[name] = grad_missing or "; ".join(record.notes) or N_("no gradient reached this layer")
            data.info[name] = LayerInfo(name, record.module_type, tuple(act.shape[1:]), record.calls, "; ".join(notes))
        return data

    @property
    def layers(self) -> list[str]:
        """Layers that can be shown (called, with a batch dimension), in module order."""
        return [name for name in self.info if name in self.activations]


class ExplorerState:
    """A view cursor (layer, sample, page, order) over one :class:`CapturedPass` of a model.

    Args:
        model: any ``nn.Module`` (a CNN, a transformer, an LSTM ...). It is run in eval mode
            (``train_mode=False``) and every submodule is put back in its own mode afterwards; hooks
            of its own stay, parameter ``.grad`` and ``requires_grad`` are not touched, and buffers
            changed by a ``train_mode=True`` pass are restored.
        inputs: a batch (first dimension = samples): images, sequences ``(N, L, F)`` for a
            ``batch_first`` model, integer tokens ``(N, L)`` ... A batch of one is fine.
        labels: optional targets, ``(N,)`` for ``(N, classes)`` logits or ``(N, L)`` for per-position
            logits ``(N, L, classes)``; with them the gradient is of the summed cross-entropy loss.
        target: ``"loss"`` (needs labels), ``"predicted"`` (each sample's top logit) or a class index.
        layers: qualified names to offer; default every submodule (containers included).
        page_size: channels per page of the mosaic.
        key: hookviz capture key; a new explorer with the same key replaces an old one's hooks.

    Switching layer, sample, page or ordering never runs the model: :attr:`forward_passes` counts.
    ``page`` is a 0-based index here; the widget and the captions show pages counted from 1.
    Made inside ``torch.no_grad()`` it still takes its gradients; inside ``torch.inference_mode()``,
    where no gradient can exist, it is refused with the fix (make it outside that block).
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
        check_model(model, "LayerExplorer")
        inputs = as_tensor_argument(inputs, "inputs")
        if inputs.ndim == 0 or len(inputs) == 0:
            raise ValueError("inputs must be a batch tensor with at least one sample (shape (N, ...), N >= 1)")
        if labels is not None:
            labels = as_tensor_argument(labels, "labels")
            if labels.is_floating_point() or labels.is_complex() or labels.dtype == torch.bool:
                raise TypeError(
                    f"labels must be integer class indices, not {str(labels.dtype).removeprefix('torch.')} "
                    "values; pass labels.long() (or target='predicted' without labels)"
                )
            if labels.ndim == 0 or len(labels) != len(inputs):
                got = "a single number" if labels.ndim == 0 else f"{len(labels)} entries"
                raise ValueError(f"labels has {got} for {len(inputs)} inputs: pass one label per sample")
        page_size = check_int(page_size, "page_size", minimum=1)
        if layers is not None and not isinstance(layers, str):
            if not isinstance(layers, (list, tuple)) or not all(isinstance(n, str) for n in layers):
                raise TypeError(f"layers must be a list of layer names from model.named_modules(), not {layers!r}")
            layers = list(layers)
        self.model = model
        self.inputs = inputs.detach()
        self.labels = None if labels is None else labels.detach()
        self.layer_names = layers if layers is not None else [n for n, _ in model.named_modules() if n] or [""]
        self.page_size = page_size
        self.train_mode = train_mode
        self.key = key
        self.forward_passes = 0
        self._png_cache: dict[tuple[Any, ...], bytes] = {}
        self.data = self._capture(target if target is not None else ("loss" if labels is not None else "predicted"))
        self.layer = self.default_layer()
        self.sample = 0
        self.page = 0
        self.order = "index"

    def _capture(self, target: str | int) -> CapturedPass:
        data = CapturedPass.run(
            self.model, self.inputs, self.labels, target, self.layer_names, train_mode=self.train_mode, key=self.key
        )
        self.forward_passes += 1
        self._png_cache.clear()
        return data

    # ------------------------------------------------------------------------------- captured data
    @property
    def target(self) -> str | int:
        """What the gradient is taken of."""
        return self.data.target

    @property
    def info(self) -> dict[str, LayerInfo]:
        """Every offered layer, shown or not, with its type, shape and notes."""
        return self.data.info

    @property
    def activations(self) -> dict[str, np.ndarray]:
        """``{layer: output for the whole batch}``."""
        return self.data.activations

    @property
    def gradients(self) -> dict[str, np.ndarray | None]:
        """``{layer: d(target)/d(output) for the whole batch, or None}``."""
        return self.data.gradients

    @property
    def grad_notes(self) -> dict[str, str]:
        """Why a layer has no gradient."""
        return self.data.grad_notes

    @property
    def n_outputs(self) -> int | None:
        """Width of a ``(N, classes)`` model output (``None`` for other outputs)."""
        return self.data.n_outputs

    @property
    def output_note(self) -> str:
        """A note when the model's output is a structure (which tensor is used)."""
        return self.data.output_note

    @property
    def layers(self) -> list[str]:
        """Layers that can be shown (called, with a batch dimension), in module order."""
        return self.data.layers

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
        """The last conv layer whose maps are at least 8 x 8 pixels; else the last conv layer; else the
        last layer with spatial maps; else the last showable leaf."""
        if not self.layers:
            raise ValueError(f"no layer of {type(self.model).__name__} produced a tensor with a batch dimension")
        modules = dict(self.model.named_modules())
        convs = [n for n in self.layers if isinstance(modules.get(n), _CONV_TYPES)]
        big = [n for n in convs if self.activations[n].ndim >= 4 and min(self.activations[n].shape[-2:]) >= 8]
        if big or convs:
            return (big or convs)[-1]
        spatial = [n for n in self.layers if self.activations[n].ndim >= 4]
        if spatial:
            return spatial[-1]
        leaves = [n for n in self.layers if n in modules and not list(modules[n].children())]
        return (leaves or self.layers)[-1]

    def _check_layer(self, name: str) -> str:
        if not isinstance(name, str):
            raise TypeError(f"layer must be a layer name (a string from the layer list), not {name!r}")
        if name in self.activations:
            return name
        if name in self.info:
            raise KeyError(tr(f"layer {name!r} cannot be shown: {tr_joined(self.info[name].note)}"))
        shared = dict(self.model.named_modules(remove_duplicate=False)).get(name)
        first = next((n for n, m in self.model.named_modules() if m is shared), None) if shared is not None else None
        if first is not None and first != name:
            raise KeyError(
                tr(
                    f"layer {name!r} is the same module as {first!r} (one module shared under two names); "
                    f"the layer list shows it once, as {first!r}: choose {first!r}"
                )
            )
        close, owner = ", ".join(map(repr, closest_names(name, self.layers))), type(self.model).__name__
        raise KeyError(
            tr(
                f"no layer named {name!r} in {owner}; closest: {close}"
                if close
                else f"no layer named {name!r} in {owner}"
            )
        )

    # ------------------------------------------------------------------------------- the cursor
    def select(
        self, layer: str | None = None, sample: int | None = None, page: int | None = None, order: str | None = None
    ) -> ExplorerState:
        """Change what is shown (``page`` is 0-based). Never runs the model. Bad choices raise a clear error, in the
        learner's language (:func:`hookviz.i18n.tr`), as the widget shows it."""
        if layer is not None:
            new = self._check_layer(layer)
            if new != self.layer:
                self.layer, self.page = new, 0
        if sample is not None:
            sample = check_int(sample, "sample")
            if not 0 <= int(sample) < self.n_samples:
                raise IndexError(
                    tr(
                        f"sample {sample} is out of range: the batch has {self.n_samples} samples "
                        f"(0 to {self.n_samples - 1})"
                    )
                )
            self.sample = int(sample)
        if order is not None:
            if order not in ("index", "topk"):
                raise ValueError(tr(f"order must be 'index' or 'topk', not {order!r}"))
            self.order = order
        if page is not None:
            page = check_int(page, "page", minimum=0,
                             fix="pages are counted from 0 here (the widget shows them from 1)")
            if not 0 <= int(page) < self.pages:
                raise IndexError(
                    tr(f"page {int(page) + 1} does not exist: layer {self.layer!r} has {self.pages} page(s)")
                )
            self.page = int(page)
        self.page = min(self.page, self.pages - 1)
        return self

    def reset(self) -> ExplorerState:
        """Back to the opening view: default layer, sample 0, page 1, channels by index."""
        self.layer, self.sample, self.page, self.order = self.default_layer(), 0, 0, "index"
        return self

    def set_target(self, target: str | int) -> ExplorerState:
        """Take gradients of another target (``"loss"``, ``"predicted"`` or a class): one new pass."""
        self.data = self._capture(target)
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
        """How the chosen layer is drawn, from its per-sample shape.

        ``"maps"`` for ``(channels, H, W)`` (and more dimensions, folded into channels): a mosaic;
        ``"sequence"`` for ``(positions, features)``, what a transformer or an LSTM gives per sample:
        one heat map, a row per position; ``"strip"`` for a vector ``(features,)``: a heat strip.
        """
        ndim = self.activation().ndim
        return "maps" if ndim >= 3 else "sequence" if ndim == 2 else "strip"

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
        """Channels of the chosen layer (values, for a strip or a sequence heat map)."""
        return len(self.maps()) if self.kind == "maps" else int(self.activation().size)

    @property
    def pages(self) -> int:
        """How many pages of ``page_size`` channels the chosen layer has."""
        return max(1, math.ceil(self.channels / self.page_size)) if self.kind == "maps" else 1

    def channel_order(self) -> np.ndarray:
        """Channel indices in display order: by index, or by mean activation (highest first; NaN last)."""
        if self.kind != "maps" or self.order == "index":
            return np.arange(self.channels)
        maps = self.maps()
        means = np.nanmean(np.where(np.isinf(maps), np.nan, maps).reshape(len(maps), -1), axis=1) if maps.size else []
        key = np.where(np.isnan(means), -np.inf, means)
        return np.argsort(-key, kind="stable")

    def shown_channels(self) -> list[int]:
        """The channel indices on the current page, in display order."""
        start = self.page * self.page_size
        return [int(c) for c in self.channel_order()[start : start + self.page_size]]

    @property
    def is_output_layer(self) -> bool:
        """True when the chosen layer's output has the model output's per-sample shape (the logits, say)."""
        return self.data.output_shape is not None and self.info[self.layer].shape == self.data.output_shape

    def input_image(self) -> np.ndarray | None:
        """The chosen sample's input as a 2-D picture (channels averaged), or ``None`` if it is not an image."""
        x = self.inputs[self.sample]
        if not x.is_floating_point() or x.ndim < 2:
            return None
        pic = as_numpy(x)
        return pic.reshape(-1, *pic.shape[-2:]).mean(axis=0)

    def feature_png(self) -> bytes:
        """The feature-map panel of the current choice (cached: switching back is free).

        The input on the left, the maps as numbered tiles on one colour scale with its colour bar, or
        for a vector a strip whose cells are labelled (class numbers for the model's logits).
        """
        key = (self.layer, self.sample, self.page, self.order)
        png = self._png_cache.get(key)
        if png is None:
            label = self.label_text()
            title = f"{self.layer} · {figure_text(f'sample {self.sample}')}"
            if self.kind == "maps":
                maps = self.maps()
                lo, hi = finite_range(maps)  # one colour scale for the whole layer: pages compare
                shown = self.shown_channels()
                png = feature_panel_png(
                    maps[shown],
                    [str(c) for c in shown],
                    vmin=lo,
                    vmax=hi,
                    title=title,
                    image=self.input_image(),
                    image_caption=figure_text(label),
                )
            elif self.kind == "sequence":
                values = self.activation()
                classes = self.n_outputs is not None and values.shape[-1] == self.n_outputs and self.is_output_layer
                png = heatmap_panel_png(
                    values,
                    row_label=N_("position"),
                    col_label=N_("class") if classes else N_("feature"),
                    title=title,
                    image=self.input_image(),
                    image_caption=figure_text(label),
                )
            else:
                values = self.activation().reshape(-1)
                logits = self.n_outputs is not None and values.size == self.n_outputs
                title += " · " + figure_text("cell = class" if logits else "cell = index")
                png = feature_panel_png(values, title=title, image=self.input_image(), image_caption=figure_text(label))
            if len(self._png_cache) > 256:
                self._png_cache.clear()
            self._png_cache[key] = png
        return png

    def label(self) -> int | list[int] | None:
        """The chosen sample's label: an int, a list (a label per position, for a sequence), or None."""
        if self.labels is None:
            return None
        value = self.labels[self.sample]
        return int(value) if value.numel() == 1 else [int(v) for v in value.reshape(-1)]

    def label_text(self) -> str:
        """The label as the panel prints it under the input (a long label list is cut short)."""
        label = self.label()
        if label is None:
            return ""
        if isinstance(label, int):
            return f"label {label}"
        shown = " ".join(map(str, label[:12]))
        return f"labels {shown}{' …' if len(label) > 12 else ''}"

    def grad_histogram(self, bins: int = 40, drop_zeros: bool = False) -> Histogram | None:
        """Histogram of the chosen layer's output gradient for the chosen sample (``None`` without one)."""
        grad = self.gradient()
        return None if grad is None else histogram(grad, bins, drop_zeros=drop_zeros)

    def grad_png(self, log: bool = False, hide_zeros: bool = True) -> bytes:
        """The gradient histogram panel (exact zeros counted apart with ``hide_zeros``), or a message."""
        hist = self.grad_histogram(drop_zeros=hide_zeros)
        if hist is None:
            return message_png(self.grad_message())
        title = figure_text(f"d({figure_text(self.target_text)})/d(output) of {self.layer}")
        return histogram_png(hist, title=title, log=log)

    def grad_message(self) -> str:
        """What the gradient panel says of a layer without a gradient: why, each note in the learner's language
        where the picture can draw it (:func:`hookviz.render.figure_text`)."""
        note = self.grad_notes.get(self.layer, "")
        head = figure_text(f"no gradient for {self.layer}")
        shown = tr_joined(note)
        if shown == note or not use_cjk_font():
            return f"{head}: {note}"
        return f"{head}：{shown}"

    def static_png(self, log: bool = False, hide_zeros: bool = True) -> bytes:
        """Both panels side by side in one PNG (the widget's static fallback)."""
        return join_png([self.feature_png(), self.grad_png(log=log, hide_zeros=hide_zeros)])

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
            notes.append(N_(f"{nan} NaN and {inf} Inf values (magenta)"))
        finite = a[np.isfinite(a)]
        if finite.size and not finite.any():
            notes.append(N_("all values are 0 (a dead layer for this sample?)"))
        elif finite.size and finite.min() == finite.max():
            notes.append(N_(f"all values equal {finite.min():.4g}"))
        return notes

    def describe(self) -> dict[str, Any]:
        """A plain summary of the current view (what the caption says), for tests and notebooks."""
        info = self.info[self.layer]
        activation = self.activation()
        lo, hi = finite_range(activation)
        any_finite = bool(np.isfinite(activation).any())
        grad = self.grad_histogram()
        shown = self.shown_channels()
        return {
            "layer": self.layer,
            "type": info.type,
            "shape": info.shape,
            "sample": self.sample,
            "label": self.label(),
            "kind": self.kind,
            "channels": self.channels,
            "page": f"{self.page + 1}/{self.pages}",
            "shown": shown if self.kind == "maps" else self._shown_values(),
            # None when no value is finite: finite_range's stand-in (0, 1) is for drawing, not for reading
            "range": (round(lo, 4), round(hi, 4)) if any_finite else None,
            "gradient": grad.summary() if grad is not None else f"none: {self.grad_notes.get(self.layer, '')}",
            "notes": [n for n in [info.note, self.output_note, *self.value_notes()] if n],
        }

    def _shown_values(self) -> str:
        """What a strip or a heat map shows, in words: ``10 values`` or ``8 positions x 32 features``."""
        if self.kind == "sequence":
            rows, cols = self.activation().shape
            what = "classes" if self.n_outputs == cols and self.is_output_layer else "features"
            return f"{rows} positions x {cols} {what}"
        return f"{self.channels} values"

    def caption(self, translated: bool = False) -> str:
        """One line for the widget: layer, shape, sample, channels shown, value range and notes.

        In English, as notebooks print it; ``translated=True`` gives it in the current language (the widget's
        caption, :func:`hookviz.i18n.tr`): layer names, types and shapes stay as written."""
        t = tr if translated else str
        d = self.describe()
        # full-width brackets in Chinese only: an English caption keeps " (label 6)", even when shown by the widget
        wide = translated and get_language() != "en"
        label = "" if d["label"] is None else f"（{t(self.label_text())}）" if wide else f" ({t(self.label_text())})"
        if self.kind == "maps":
            shown, total = list(d["shown"]), d["channels"]
            listed = ", ".join(map(str, shown[:6])) + (", …" if len(shown) > 6 else "")
            if self.order == "topk":
                count = f"all {total}" if len(shown) == total else f"{len(shown)} of {total}"
                what = t(f"{count} channels, largest mean first: {listed}")
            elif shown and shown == list(range(shown[0], shown[0] + len(shown))):
                what = (
                    N_(f"all {total} channels")
                    if len(shown) == total
                    else N_(f"channels {shown[0]}-{shown[-1]} of {total}")
                )
                what = t(what)
            else:
                what = t(N_(f"channels {listed} of {total}"))
            what += " · " + t(f"page {d['page']} ({'top-k by mean' if self.order == 'topk' else 'by index'})")
        elif self.kind == "sequence":
            what = t(f"{d['shown']} as a heat map (a row per position)")
        else:
            what = t(N_(f"{d['channels']} values as a heat strip"))
        sample = t(f"sample {d['sample']}")
        text = f"{d['layer']} · {d['type']} · {d['shape']} · {sample}{label} · {what}"
        if d["range"] is not None:
            text += " · " + t(N_(f"range [{d['range'][0]:.3g}, {d['range'][1]:.3g}]"))
        if d["notes"]:
            notes = [tr_joined(note) for note in d["notes"]] if translated else d["notes"]
            text += " · " + (note_separator() if translated else "; ").join(notes)
        return text

    def layer_table(self) -> str:
        """The layer picker's content as a text table (name, type, per-sample output shape, notes); headers and notes
        in the learner's language."""
        return text_table(
            (tr("layer"), tr("type"), tr("output shape"), tr("note")),
            [(i.name, i.type, str(i.shape) if i.shape else "-", tr_joined(i.note)) for i in self.info.values()],
        )

    def __repr__(self) -> str:
        return (
            f"ExplorerState(layer={self.layer!r}, sample={self.sample}, page={self.page + 1}/{self.pages}, "
            f"order={self.order!r}, target={self.target!r}, forward_passes={self.forward_passes})"
        )


class LayerExplorer(StaticFallback, widgets.VBox):
    """A layer picker, a sample picker and two panels (feature maps, gradient histogram).

    ``hookviz.LayerExplorer(model, images, labels)`` makes an :class:`ExplorerState` (one forward and
    backward pass) and shows it. Every control only re-reads the captured arrays, except "gradient
    of", which takes a new pass. A typed sample or page that does not exist is refused with a message
    (the box goes back to the shown value), never silently clamped. Pages count from 1. The state is
    at ``explorer.state``; tests and notebooks can set the controls' ``.value`` and read
    ``explorer.state.describe()``; :meth:`reset` returns to the opening view.
    """

    def __init__(self, model: nn.Module, inputs: Tensor, labels: Tensor | None = None, **kwargs: Any) -> None:
        state = kwargs.pop("state", None) or ExplorerState(model, inputs, labels, **kwargs)
        self.state = state
        narrow = {"description_width": "initial"}
        self.type_filter = widgets.Dropdown(
            options=[(tr("all types"), "all"), *[(t, t) for t in state.types()]],
            value="all",
            description=tr("type"),
            layout={"width": "190px"},
            style=narrow,
        )
        self.layer = widgets.Dropdown(
            options=self._layer_options("all"),
            value=state.layer,
            description=tr("layer"),
            layout={"width": "330px"},
            style=narrow,
        )
        target_options: list[tuple[str, str | int]] = []
        if state.labels is not None:
            target_options.append((tr("loss"), "loss"))
        target_options.append((tr("top logit"), "predicted"))
        if state.n_outputs and state.n_outputs <= 100:  # a longer list is no use in a dropdown: set_target(k)
            target_options += [(tr(f"logit {k}"), k) for k in range(state.n_outputs)]
        if state.target not in [v for _, v in target_options]:
            target_options.append((str(state.target), state.target))
        self.target = widgets.Dropdown(
            options=target_options,
            value=state.target,
            description=tr("gradient of"),
            layout={"width": "210px"},
            style=narrow,
        )
        self.sample = widgets.IntText(value=0, description=tr("sample"), layout={"width": "130px"}, style=narrow)
        self.order = widgets.ToggleButtons(options=[(tr("index"), "index"), (tr("top-k"), "topk")], value="index")
        self.order.style.button_width = "64px"
        self.page = widgets.IntText(value=1, description=tr("page"), layout={"width": "110px"}, style=narrow)
        self.hide_zeros = widgets.Checkbox(
            value=True, description=tr("hide exact zeros"), indent=False, layout={"width": "150px"}
        )
        self.log_scale = widgets.Checkbox(
            value=False, description=tr("log counts"), indent=False, layout={"width": "110px"}
        )
        self.message = widgets.HTML()
        self.caption = widgets.HTML()
        self.maps_out = widgets.Output(layout={"height": "296px", "width": "436px"})
        self.grad_out = widgets.Output(layout={"height": "296px", "width": "306px"})
        super().__init__(
            [
                row(self.type_filter, self.layer, self.target),
                row(self.sample, self.order, self.page, self.hide_zeros, self.log_scale),
                self.message,
                self.caption,
                row(self.maps_out, self.grad_out),
            ]
        )
        self.type_filter.observe(self._on_type, names="value")
        self.layer.observe(lambda ch: self._apply(layer=ch["new"]), names="value")
        self.sample.observe(self._on_sample, names="value")
        self.order.observe(lambda ch: self._apply(order=ch["new"]), names="value")
        self.page.observe(self._on_page, names="value")
        self.log_scale.observe(lambda ch: self.refresh(), names="value")
        self.hide_zeros.observe(lambda ch: self.refresh(), names="value")
        self.target.observe(self._on_target, names="value")
        self.refresh()
        self._close_previous_run("LayerExplorer")

    def _layer_options(self, type_name: str) -> list[tuple[str, str]]:
        return [(self.state.info[n].shown_label(), n) for n in self.state.layers_of_type(type_name)]

    def _on_type(self, change: dict[str, Any]) -> None:
        if self.state is None:  # closed
            return
        options = self._layer_options(change["new"])
        current = self.state.layer
        self.layer.options = options
        names = [v for _, v in options]
        self.layer.value = current if current in names else names[-1]

    def _on_target(self, change: dict[str, Any]) -> None:
        if self.state is None:  # closed
            return
        self.state.set_target(change["new"])
        self.refresh()

    def _on_sample(self, change: dict[str, Any]) -> None:
        if self.state is None:  # closed
            return
        if change["new"] == self.state.sample:
            return
        self._apply(sample=change["new"])

    def _on_page(self, change: dict[str, Any]) -> None:
        if self.state is None:  # closed
            return
        if change["new"] == self.state.page + 1:
            return
        self._apply(page=change["new"] - 1)

    def _apply(self, **choice: Any) -> None:
        if (choice.get("layer") is None and "layer" in choice) or self.state is None:
            return  # the Dropdown passes through None while its options are replaced; or the explorer is closed
        try:
            self.state.select(**choice)
        except (IndexError, KeyError, ValueError) as exc:
            refuse(self.message, refusal(exc.args[0] if exc.args else exc))
            self._sync_boxes()  # the boxes show what is really shown
            return
        refuse(self.message, "")
        self.refresh()

    def _sync_boxes(self) -> None:
        with self.hold_trait_notifications():
            self.sample.value = self.state.sample
            self.page.value = self.state.page + 1

    def reset(self) -> LayerExplorer:
        """Back to the opening view (default layer, sample 0, page 1, by index, zeros hidden, linear counts)."""
        self.state.reset()
        self.type_filter.value = "all"
        self.layer.value = self.state.layer
        self.order.value = "index"
        self.hide_zeros.value = True
        self.log_scale.value = False
        self._sync_boxes()
        refuse(self.message, "")
        self.refresh()
        return self

    def refresh(self) -> None:
        """Redraw both panels and the caption from the state (no model run)."""
        state = self.state
        if state is None:  # closed
            return
        self._sync_boxes()
        self.page.disabled = state.pages == 1
        self.order.disabled = state.kind != "maps"
        # The pictures first, then the caption: each assignment is one message to the page, and the feature
        # maps are what the learner waits for when picking a layer.
        show_png(self.maps_out, state.feature_png(), f"feature maps of {state.layer}, sample {state.sample}")
        png = state.grad_png(log=self.log_scale.value, hide_zeros=self.hide_zeros.value)
        show_png(self.grad_out, png, f"gradient histogram of {state.layer}, sample {state.sample}")
        self.caption.value = caption_html(state.caption(translated=True))

    def _release(self) -> None:
        """Let go of the drawn panels: a closed explorer kept in ``Out[n]`` holds no PNG.

        Also called when the constructor was refused before the panels existed: then there is nothing to drop.
        """
        for out in (getattr(self, "maps_out", None), getattr(self, "grad_out", None)):
            if out is not None:
                out.outputs = ()
        if getattr(self, "caption", None) is not None:
            self.caption.value = ""

    def static_png(self) -> bytes:
        """The current view as one PNG (the static fallback)."""
        return self.state.static_png(log=self.log_scale.value, hide_zeros=self.hide_zeros.value)

    def __repr__(self) -> str:
        s = self.state
        if s is None:
            return "LayerExplorer(closed)"
        return f"LayerExplorer(layer={s.layer!r}, sample={s.sample}, page={s.page + 1}/{s.pages}, target={s.target!r})"
