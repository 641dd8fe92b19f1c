"""The attention explorer: pick an attention layer, a head and a sample, see its attention pattern.

``nn.TransformerEncoderLayer`` calls its ``nn.MultiheadAttention`` with ``need_weights=False``, so
no hook on it sees a pattern unless it asks for one. :func:`capture_attention` asks: for one forward
pass it registers, through one :class:`hookviz.capture.HookGroup`, a ``with_kwargs`` forward
pre-hook on every ``nn.MultiheadAttention`` that sets ``need_weights=True`` and
``average_attn_weights=False``, and a forward hook that keeps the per-head weights. The hooks are
removed on every exit path and every submodule's train/eval mode is put back, so the model then
runs exactly as before (fast path included).

:class:`AttentionState` is the plain-Python cursor (layer, head, sample) over what one pass
captured; :class:`AttentionExplorer` is a thin ipywidgets view over it, with a static PNG fallback.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets
import numpy as np
import torch
from PIL import Image, ImageDraw
from torch import Tensor, nn

from hookviz.capture import HookGroup
from hookviz.i18n import CAPTION_SEPARATOR, N_, join_notes, tr, tr_caption
from hookviz.render import FONT_PX, colorize, figure_text, panel_font, png_bytes
from hookviz.text import closest_hint, closest_names
from hookviz.widgets.common import (
    StaticFallback,
    caption_html,
    check_int,
    check_model,
    refuse,
    row,
    run_mode,
    run_model,
    show_png,
    using_model,
)
from hookviz.widgets.decoder_attention import PatternCheck, capture_decoder_attention, decoder_attention_modules

__all__ = ["ATTENTION_KEY", "AttentionExplorer", "AttentionState", "attention_modules", "capture_attention"]

ATTENTION_KEY = "hookviz.attention"

# nn.MultiheadAttention.forward(query, key, value, key_padding_mask, need_weights, attn_mask,
# average_attn_weights, is_causal): the arguments after the first three, by position.
_MHA_OPTIONAL = ("key_padding_mask", "need_weights", "attn_mask", "average_attn_weights", "is_causal")


def attention_modules(model: nn.Module) -> dict[str, nn.MultiheadAttention]:
    """Every ``nn.MultiheadAttention`` inside ``model``, by qualified name, in ``named_modules()`` order."""
    return {name: m for name, m in model.named_modules() if isinstance(m, nn.MultiheadAttention)}


def _ask_for_weights(
    module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Forward pre-hook (``with_kwargs=True``): the same call, with per-head weights requested."""
    kwargs = dict(kwargs)
    for name, value in zip(_MHA_OPTIONAL, args[3:], strict=False):  # optional arguments given by position
        kwargs[name] = value
    kwargs["need_weights"] = True
    kwargs["average_attn_weights"] = False
    return tuple(args[:3]), kwargs


def _sequence_length(inputs: Any, model_kwargs: dict[str, Any] | None) -> int | None:
    """The full sequence length of the call: a padding mask's last dimension, else the input's second one.

    A nested tensor (what ``nn.TransformerEncoder`` makes of a padded batch) pads back only to its
    longest row, so a batch whose rows all end in padding would come back short without it.
    """
    masks = [
        value.shape[-1]
        for name, value in (model_kwargs or {}).items()
        if "padding_mask" in name and isinstance(value, Tensor) and value.ndim == 2
    ]
    if masks:
        return max(masks)
    return int(inputs.shape[1]) if isinstance(inputs, Tensor) and inputs.ndim >= 2 else None


def _pad_to_length(weights: Tensor, length: int | None) -> Tensor:
    """``(N, heads, l, l)`` weights padded with zeros to ``(N, heads, length, length)`` (padding = no attention)."""
    if length is None or weights.shape[-1] >= length:
        return weights
    grow = length - weights.shape[-1]
    return nn.functional.pad(weights, (0, grow, 0, length - weights.shape[-2]))


def capture_attention(
    model: nn.Module,
    inputs: Any,
    *,
    layers: Sequence[str] | None = None,
    model_kwargs: dict[str, Any] | None = None,
    key: str = ATTENTION_KEY,
    checks: dict[str, PatternCheck] | None = None,
) -> dict[str, Tensor]:
    """Run ``model(inputs, **model_kwargs)`` once in eval mode, without grad; return per-head attention.

    Returns ``{name: weights}`` for every chosen ``nn.MultiheadAttention`` that was called, each of
    shape ``(N, heads, L, S)`` (float32, on the CPU; the last call if a module runs more than once).
    ``layers`` are qualified names (default: every ``nn.MultiheadAttention``). The model is claimed
    for the call (a model a ``TrainingMonitor`` trains is refused); the hooks live only during this
    call; each submodule's mode is restored afterwards.

    A model without ``nn.MultiheadAttention`` but with Llama-style attention modules (``q_proj`` ...
    ``o_proj``) gets patterns recomputed from q and k and checked against what each module computed
    (:func:`hookviz.widgets.decoder_attention.capture_decoder_attention`); ``checks``, a dict, receives
    how each layer was checked (a layer whose pattern cannot be reproduced is left out, with the reason).
    """
    if model_kwargs is not None and not isinstance(model_kwargs, dict):
        raise TypeError(f"model_kwargs must be a dict of keyword arguments for the model, not {model_kwargs!r}")
    modules = attention_modules(model)
    if not modules and decoder_attention_modules(model):  # a Llama-style decoder: recompute from q and k
        return capture_decoder_attention(
            model, inputs, layers=layers, model_kwargs=model_kwargs, key=key, checks=checks
        )
    if not modules:
        raise ValueError(f"{type(model).__name__} has no nn.MultiheadAttention to show")
    chosen = list(modules) if layers is None else list(layers)
    for name in chosen:
        if name not in modules:
            raise KeyError(f"no nn.MultiheadAttention named {name!r}{closest_hint(name, list(modules))}")
    found: dict[str, Tensor] = {}
    full_length = _sequence_length(inputs, model_kwargs)

    def keep(name: str) -> Any:
        def hook(module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
            weights = output[1] if isinstance(output, tuple) and len(output) > 1 else None
            if isinstance(weights, Tensor):
                # A padded batch the encoder turned into a nested tensor: the weights come padded (or nested)
                # to the longest row only; pad them back to the full length.
                if weights.is_nested or any(isinstance(a, Tensor) and a.is_nested for a in args[:1]):
                    dense = weights.to_padded_tensor(0.0) if weights.is_nested else weights
                    weights = _pad_to_length(dense, full_length)
                if weights.ndim == 3:  # an unbatched call (L, E): (heads, L, S) is one sample, not `heads` samples
                    weights = weights.unsqueeze(0)
                found[name] = weights.detach().float().cpu()

        return hook

    owner = object()
    with (
        using_model(model, owner, N_("an AttentionExplorer"), "AttentionExplorer"),
        run_mode(model, False),
        torch.no_grad(),
        HookGroup(model, key=key) as hooks,
    ):
        for name in chosen:
            hooks.register(modules[name], "forward_pre", _ask_for_weights, with_kwargs=True)
            hooks.register(modules[name], "forward", keep(name))
        run_model(model, inputs, "AttentionExplorer", **(model_kwargs or {}))
    return {name: found[name] for name in chosen if name in found}


def _seq_first(model: nn.Module, state: AttentionState) -> bool | None:
    """``True`` when every shown ``nn.MultiheadAttention`` is ``batch_first=False``, ``False`` when all are
    batch-first (Llama-style attention always is), ``None`` when they differ."""
    modules = attention_modules(model)
    flags = {bool(modules[name].batch_first) for name in state.patterns if name in modules}
    if not modules:
        return False
    return None if len(flags) != 1 else not flags.pop()


def _default_labels(inputs: Any, n_rows: int, length: int, seq_first: bool | None) -> tuple[list[list[str]], str]:
    """Token ids as labels for integer tokens, else positions; and where the labels come from.

    Tokens ``(N, L)`` label sample ``i`` with row ``i``; seq-first tokens ``(L, N)`` (the layout of
    ``nn.MultiheadAttention(batch_first=False)``) with column ``i``. The shape tells them apart unless it
    is square; then the attention modules' ``batch_first`` decides when it is ``True`` (``seq_first``
    ``False``), and the labels are positions otherwise (a square batch cannot tell its layout).
    """
    positions = [[str(i) for i in range(length)] for _ in range(n_rows)]
    if not isinstance(inputs, Tensor) or inputs.is_floating_point() or inputs.is_complex() or inputs.is_meta:
        return positions, "positions"
    if inputs.ndim == 1 and n_rows == 1:  # an unbatched call: one sample of tokens
        return [[str(int(t)) for t in inputs[:length]]], "token ids"
    if inputs.ndim != 2:
        return positions, "positions"
    rows, cols = inputs.shape
    by_row = rows == n_rows and (cols != n_rows or seq_first is False)
    by_column = cols == n_rows and rows != n_rows
    if by_row:
        return [[str(int(t)) for t in row_] for row_ in inputs[:n_rows, :length]], "token ids"
    if by_column:
        columns = inputs[:length, :n_rows].T
        return [[str(int(t)) for t in col] for col in columns], "token ids of column i (seq-first tokens (L, N))"
    if rows == cols == n_rows:
        layout = "batch_first=False" if seq_first else "of both layouts"
        why = f"could be (N, L) or (L, N): the attention modules are {layout}"
    else:
        why = f"do not match the {n_rows} samples the attention saw"
    return positions, f"positions (tokens of shape {tuple(inputs.shape)} {why}; pass labels=)"


class AttentionState:
    """A cursor (layer, head, sample) over the attention patterns of one forward pass.

    Args:
        model: any ``nn.Module`` with ``nn.MultiheadAttention`` inside (an ``nn.TransformerEncoder``,
            say). It runs once, in eval mode and without grad; it is left exactly as it was.
        inputs: what ``model`` is called with (a batch; first dimension = samples).
        labels: token text per sample (``labels[sample][position]``); default: the token ids of an
            integer input, else the positions.
        layers: qualified names of attention modules to offer (default: all).
        model_kwargs: extra keyword arguments of the call (``src_key_padding_mask=...``).
        key: hookviz key of the hooks (a newer capture under the same key replaces an older one).

    ``head`` is a head index or ``None`` for the mean over heads. Changing the choice never runs the
    model again: :attr:`forward_passes` counts.
    """

    def __init__(
        self,
        model: nn.Module,
        inputs: Any,
        *,
        labels: Sequence[Sequence[str]] | None = None,
        layers: Sequence[str] | None = None,
        model_kwargs: dict[str, Any] | None = None,
        key: str = ATTENTION_KEY,
    ) -> None:
        check_model(model, "AttentionExplorer")
        if isinstance(inputs, Tensor) and (inputs.ndim == 0 or len(inputs) == 0):
            raise ValueError(
                "inputs must be a batch with at least one sample (shape (N, L) of tokens or (N, L, features)); "
                f"got shape {tuple(inputs.shape)}"
            )
        self.model = model
        self.inputs = inputs
        checks: dict[str, PatternCheck] = {}
        weights = capture_attention(model, inputs, layers=layers, model_kwargs=model_kwargs, key=key, checks=checks)
        #: how each recomputed (Llama-style) layer was checked; empty for nn.MultiheadAttention (its own weights)
        self.checks = checks
        #: layers called but not shown, and why (their pattern could not be reproduced)
        self.not_shown = {name: c.note for name, c in checks.items() if not c.shown}
        if not weights and self.not_shown:
            raise ValueError("AttentionExplorer: " + join_notes(list(self.not_shown.values())))
        if not weights:
            raise ValueError(f"no nn.MultiheadAttention of {type(model).__name__} was called in the forward pass")
        self.forward_passes = 1
        self.patterns: dict[str, np.ndarray] = {name: w.numpy() for name, w in weights.items()}
        first = next(iter(self.patterns.values()))
        self.n_samples = int(first.shape[0])
        width = max(max(p.shape[-2], p.shape[-1]) for p in self.patterns.values())
        if labels is not None:
            self.labels = [list(r) for r in labels]
            self.label_source = "given"
        else:
            self.labels, self.label_source = _default_labels(inputs, self.n_samples, width, _seq_first(model, self))
        self.layer = next(iter(self.patterns))
        self.head: int | None = 0
        self.sample = 0

    @property
    def layers(self) -> list[str]:
        """Attention modules that were called, in module order."""
        return list(self.patterns)

    def heads(self, layer: str | None = None) -> int:
        """Number of heads of ``layer`` (default: the chosen one)."""
        return int(self.patterns[layer or self.layer].shape[1])

    def select(
        self, layer: str | None = None, head: int | None | str = "keep", sample: int | None = None
    ) -> AttentionState:
        """Change layer, head (an index, or ``None`` for the mean of the heads) or sample; never runs the model."""
        if layer is not None:
            if layer not in self.patterns:
                close = ", ".join(map(repr, closest_names(layer, self.layers)))
                raise KeyError(
                    tr(
                        f"no attention layer named {layer!r}; closest: {close}"
                        if close
                        else f"no attention layer named {layer!r}"
                    )
                )
            self.layer = layer
        if head != "keep":
            if head is not None:
                head = check_int(head, "head", fix=N_("None shows the mean of the heads"))
            if head is not None and not 0 <= int(head) < self.heads():
                raise IndexError(
                    tr(f"head {head} does not exist: {self.layer!r} has {self.heads()} heads (0 to {self.heads() - 1})")
                )
            self.head = None if head is None else int(head)
        elif self.head is not None and self.head >= self.heads():
            self.head = 0
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
        return self

    def pattern(self) -> np.ndarray:
        """The chosen pattern, shape ``(L, S)``: row ``i`` is how query position ``i`` spreads over the keys."""
        weights = self.patterns[self.layer][self.sample]
        return weights.mean(axis=0) if self.head is None else weights[self.head]

    def token_labels(self) -> tuple[list[str], list[str]]:
        """``(query labels, key labels)`` of the chosen sample."""
        rows, cols = self.pattern().shape
        text = self.labels[self.sample] if self.sample < len(self.labels) else []
        pad = [str(i) for i in range(max(rows, cols))]
        full = list(text) + pad[len(text) :]
        return full[:rows], full[:cols]

    def source(self, layer: str | None = None) -> str:
        """Where ``layer``'s pattern comes from: the module's own weights, or recomputed (and how it was checked)."""
        check = self.checks.get(layer or self.layer)
        if check is None:
            return "the module's own attention weights"
        mask = "causal mask" if check.mask == "causal" else "no mask"
        if check.verified:
            return f"recomputed from q and k ({mask}, 1/√d scale); pattern @ v reproduces the module's output"
        return check.note.removeprefix(f"{layer or self.layer}: ")

    def describe(self) -> dict[str, Any]:
        """The current view in plain data (for tests and notebooks): the strongest key of every query."""
        pattern = self.pattern()
        view = {
            "layer": self.layer,
            "head": "mean" if self.head is None else self.head,
            "sample": self.sample,
            "shape": tuple(pattern.shape),
            "argmax": [int(i) for i in pattern.argmax(axis=1)],
            "source": self.source(),
            "labels": self.label_source,
        }
        if self.not_shown:
            view["not_shown"] = dict(self.not_shown)
        return view

    def caption(self, translated: bool = False) -> str:
        """One line: layer, head, sample and what the picture shows (and anything unusual about it).

        In English, as notebooks print it; ``translated=True`` gives it in the current language, part by part
        (:func:`hookviz.i18n.tr_caption`: the widget's caption and repr; the layer name stays as written)."""
        head = "mean of heads" if self.head is None else N_(f"head {self.head} (heads 0-{self.heads() - 1})")
        rows, cols = self.pattern().shape
        parts = [self.layer, head, f"sample {self.sample}", N_(f"{rows} queries (rows) x {cols} keys (columns)")]
        check = self.checks.get(self.layer)
        if check is not None and check.note:
            parts.append(check.note.removeprefix(self.layer + ": "))
        if self.label_source.startswith("positions ("):
            parts.append(f"labels are {self.label_source}")
        if self.not_shown:
            parts.append(N_(f"not shown: {', '.join(self.not_shown)} (state.not_shown says why)"))
        english = CAPTION_SEPARATOR.join(parts)
        return tr_caption(english) if translated else english

    def png(self) -> bytes:
        """The chosen pattern as a labelled heat map (0 to 1, one colour scale for every head).

        Its title is in the learner's language where a Chinese font can draw it (:func:`figure_text`)."""
        queries, keys = self.token_labels()
        head = figure_text("mean") if self.head is None else figure_text(f"head {self.head}")
        title = f"{self.layer} · {head} · {figure_text(f'sample {self.sample}')}"
        return attention_png(self.pattern(), queries, keys, title=title)

    def __repr__(self) -> str:
        head = "mean" if self.head is None else self.head
        return (
            f"AttentionState(layer={self.layer!r}, head={head!r}, sample={self.sample}, "
            f"forward_passes={self.forward_passes})"
        )


def attention_png(pattern: np.ndarray, queries: Sequence[str], keys: Sequence[str], title: str = "") -> bytes:
    """A ``(L, S)`` attention pattern as a heat map on a 0-1 scale, keys labelled on top, queries on the left."""
    font = panel_font()
    rows, cols = pattern.shape
    cell = max(8, min(36, 300 // max(rows, cols, 1)))
    measure = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    left = int(max([measure.textlength(q, font=font) for q in queries] + [0])) + 10
    line = FONT_PX + 4
    top = 2 * line + 6
    width = max(left + cols * cell + 16, 300)
    height = top + rows * cell + line + 8
    img = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    draw.text((4, 2), title, fill=(30, 30, 30), font=font)
    tile = colorize(np.asarray(pattern, dtype=np.float32), 0.0, 1.0)
    tile = np.repeat(np.repeat(tile, cell, axis=0), cell, axis=1)
    img.paste(Image.fromarray(tile), (left, top))
    for j, text in enumerate(keys):
        x = left + j * cell + (cell - measure.textlength(text, font=font)) / 2
        draw.text((x, top - line), text, fill=(30, 30, 30), font=font)
    for i, text in enumerate(queries):
        draw.text((4, top + i * cell + (cell - FONT_PX) / 2), text, fill=(30, 30, 30), font=font)
    footer = figure_text("rows: queries · columns: keys · scale 0-1")
    draw.text((4, top + rows * cell + 4), footer, fill=(110, 110, 110), font=font)
    return png_bytes(np.asarray(img))


class AttentionExplorer(StaticFallback, widgets.VBox):
    """Layer, head and sample pickers over an :class:`AttentionState`, and the pattern as a heat map.

    ``AttentionExplorer(model, tokens)`` captures every attention pattern in one forward pass; the
    controls only re-read them. Set the controls' ``.value`` (or call ``state.select``) and read
    ``explorer.state.describe()`` in tests; ``show_static()`` gives the picture without a front end.
    """

    def __init__(self, model: nn.Module, inputs: Any, **kwargs: Any) -> None:
        self.state = kwargs.pop("state", None) or AttentionState(model, inputs, **kwargs)
        narrow = {"description_width": "initial"}
        self.layer = widgets.Dropdown(
            options=self.state.layers,
            value=self.state.layer,
            description=tr("layer"),
            style=narrow,
            layout={"width": "330px"},
        )
        self.head = widgets.Dropdown(
            options=self._head_options(),
            value=self._head_value(),
            description=tr("head"),
            style=narrow,
            layout={"width": "170px"},
        )
        self.sample = widgets.IntText(value=0, description=tr("sample"), style=narrow, layout={"width": "130px"})
        self.message = widgets.HTML()
        self.caption = widgets.HTML()
        self.out = widgets.Output(layout={"min_height": "320px"})
        super().__init__([row(self.layer, self.head, self.sample), self.message, self.caption, self.out])
        self.layer.observe(self._on_layer, names="value")
        self.head.observe(lambda ch: self._apply(head=None if ch["new"] == "mean" else ch["new"]), names="value")
        self.sample.observe(self._on_sample, names="value")
        self.refresh()
        self._close_previous_run("AttentionExplorer")

    def _head_options(self) -> list[tuple[str, int | str]]:
        return [(tr("mean of heads"), "mean"), *[(tr(f"head {h}"), h) for h in range(self.state.heads())]]

    def _head_value(self) -> int | str:
        return "mean" if self.state.head is None else self.state.head

    def _on_layer(self, change: dict[str, Any]) -> None:
        self.state.select(layer=change["new"])
        options = self._head_options()
        if [v for _, v in self.head.options] != [v for _, v in options]:
            self.head.options = options
            self.head.value = self._head_value()
        self.refresh()

    def _on_sample(self, change: dict[str, Any]) -> None:
        if change["new"] == self.state.sample:
            return
        try:
            self._apply(sample=change["new"])
        except IndexError as exc:
            self.sample.value = self.state.sample  # back to what is shown, then say why
            refuse(self.message, tr(str(exc.args[0] if exc.args else exc)))

    def _apply(self, **choice: Any) -> None:
        self.state.select(**choice)
        refuse(self.message, "")
        self.refresh()

    def refresh(self) -> None:
        """Redraw the heat map and the caption from the state."""
        text = self.state.caption(translated=True)
        self.caption.value = caption_html(text)
        show_png(self.out, self.state.png(), text)

    def static_png(self) -> bytes:
        """The current pattern as a PNG (the static fallback)."""
        return self.state.png()

    def __repr__(self) -> str:
        if self.state is None:
            return "AttentionExplorer(closed)"
        return f"AttentionExplorer({self.state.caption(translated=True)})"  # the learner's language
