"""What every hookviz widget shares: drawing PNGs into an ``Output`` and a static fallback picture.

Drawing rule: a widget never uses ``with out:``. In ipywidgets 8 even ``Output.clear_output()`` is
implemented as ``with self: clear_output()``, which routes through the kernel's display machinery
(nbval then sees stray outputs, and without a kernel nothing is cleared at all). hookviz therefore
replaces an ``Output``'s content with **one assignment to** ``out.outputs``: the same thing
``clear_output()`` followed by ``append_display_data()`` would leave behind, sent as one state
update, identical in JupyterLab, nbclient, nbval and a plain pytest process.
"""

from __future__ import annotations

import base64
import contextlib
import html
from collections.abc import Iterator
from typing import Any

import ipywidgets as widgets
import torch
from torch import nn

__all__ = [
    "StaticFallback",
    "run_mode",
    "StaticPicture",
    "caption_html",
    "refuse",
    "row",
    "show_html",
    "show_png",
    "show_text",
    "widget_bundle",
]


def _display_data(data: dict[str, str]) -> dict[str, Any]:
    return {"output_type": "display_data", "data": data, "metadata": {}}


def show_png(out: widgets.Output, png: bytes, text: str) -> None:
    """Replace what ``out`` shows with a PNG (``text`` is its plain-text alternative)."""
    out.outputs = (_display_data({"image/png": base64.b64encode(png).decode("ascii"), "text/plain": text}),)


def show_text(out: widgets.Output, text: str) -> None:
    """Replace what ``out`` shows with a plain message (used for "nothing to draw, because ...")."""
    out.outputs = ({"output_type": "stream", "name": "stdout", "text": text if text.endswith("\n") else text + "\n"},)


def show_html(out: widgets.Output, markup: str, text: str) -> None:
    """Replace what ``out`` shows with HTML (a table, say) and its plain-text alternative."""
    out.outputs = (_display_data({"text/html": markup, "text/plain": text}),)


def escape(text: str) -> str:
    """HTML-escape ``text``."""
    return html.escape(text)


class StaticPicture:
    """A PNG with a stable text repr: shows as a picture where there is no widget front end.

    ``repr()`` is the caption, so a notebook cell that ends with ``widget.show_static()`` stores a
    PNG (which nbval ignores) and a deterministic ``text/plain``.
    """

    def __init__(self, png: bytes, caption: str) -> None:
        self.png = png
        self.caption = caption

    def _repr_png_(self) -> bytes:
        return self.png

    def __repr__(self) -> str:
        return self.caption


WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json"


def widget_bundle(widget: widgets.Widget, text: str) -> dict[str, Any]:
    """The display bundle of a live widget: its view, and ``text`` as the plain-text alternative.

    Built here rather than borrowed from ipywidgets: version 8 has ``Widget._repr_mimebundle_``,
    version 7 (what Colab ships) displays through ``_ipython_display_`` instead and has no such
    method. The view entry is the same in both (widget message protocol 2.0).
    """
    data: dict[str, Any] = {"text/plain": text}
    if widget._view_name is not None:
        data[WIDGET_VIEW_MIME] = {"version_major": 2, "version_minor": 0, "model_id": widget.model_id}
    return data


class StaticFallback:
    """Mixin for widgets: add a PNG of the current state to the widget's display bundle.

    JupyterLab, Colab and VS Code render the live widget (its view ranks first); GitHub, nbviewer and
    other viewers without a widget manager fall back to the PNG. Subclasses implement
    :meth:`static_png` and a short, stable ``__repr__``. Works the same under ipywidgets 7 and 8:
    the bundle is built by :func:`widget_bundle`, and :meth:`_ipython_display_` (the hook ipywidgets
    7 uses) displays that same bundle.
    """

    def static_png(self) -> bytes:  # pragma: no cover - abstract
        """A PNG of what the widget shows now."""
        raise NotImplementedError

    def show_static(self) -> StaticPicture:
        """The current state as a plain picture (for viewers without widgets, or a report)."""
        return StaticPicture(self.static_png(), f"static view of {self!r}")

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        data = widget_bundle(self, repr(self))  # type: ignore[arg-type]
        try:
            data["image/png"] = base64.b64encode(self.static_png()).decode("ascii")
        except Exception as exc:  # a fallback picture must never break displaying the widget
            data["text/plain"] = f"{data['text/plain']} (no static picture: {type(exc).__name__})"
        return data

    def _ipython_display_(self, **kwargs: Any) -> None:
        """Display the bundle of :meth:`_repr_mimebundle_` (ipywidgets 7 calls this, not the bundle method)."""
        from IPython.display import display

        display(self._repr_mimebundle_(), raw=True)
        handle = getattr(self, "_handle_displayed", None)  # ipywidgets 7: run on_displayed callbacks
        if handle is not None:
            handle(**kwargs)


def refuse(message: widgets.HTML, text: str) -> None:
    """Show ``text`` as a visible refusal (red) under a widget's controls; empty text clears it."""
    message.value = f"<span style='color:#b00020'>{escape(text)}</span>" if text else ""


def row(*children: widgets.Widget) -> widgets.HBox:
    """A row of controls that wraps onto a second line instead of being cut off in a narrow window."""
    return widgets.HBox(list(children), layout={"flex_flow": "row wrap", "align_items": "center"})


def caption_html(text: str) -> str:
    """A caption that wraps between words only (never mid-word), in the notebook's font."""
    return (
        f"<div style='white-space:normal;word-break:normal;overflow-wrap:normal;line-height:1.4'>{escape(text)}</div>"
    )


@contextlib.contextmanager
def run_mode(model: nn.Module, training: bool) -> Iterator[None]:
    """Run ``model`` in train or eval mode, then put **every** submodule's own mode back.

    ``model.train(was_training)`` would not do: a model that is training with some parts frozen in
    eval mode (BatchNorm layers of a fine-tuned backbone, say) would come back with those parts
    training. cuDNN's RNN kernels refuse backward in eval mode, so while an ``nn.RNNBase`` (LSTM, GRU,
    RNN) runs on a GPU in eval mode here, cuDNN is switched off (PyTorch's own kernels are used).
    """
    modes = [(module, module.training) for module in model.modules()]
    recurrent_on_gpu = not training and any(
        isinstance(m, nn.RNNBase) and any(p.is_cuda for p in m.parameters()) for m, _ in modes
    )
    cudnn = torch.backends.cudnn.enabled
    model.train(training)
    try:
        if recurrent_on_gpu:
            torch.backends.cudnn.enabled = False  # only this flag: benchmark/deterministic stay as they are
        yield
    finally:
        torch.backends.cudnn.enabled = cudnn
        for module, mode in modes:
            module.training = mode
