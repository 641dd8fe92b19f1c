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
import html
from typing import Any

import ipywidgets as widgets

__all__ = ["StaticPicture", "StaticFallback", "show_html", "show_png", "show_text"]


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


class StaticFallback:
    """Mixin for widgets: add a PNG of the current state to the widget's display bundle.

    JupyterLab, Colab and VS Code render the live widget (its view ranks first); GitHub, nbviewer and
    other viewers without a widget manager fall back to the PNG. Subclasses implement
    :meth:`static_png` and a short, stable ``__repr__``.
    """

    def static_png(self) -> bytes:  # pragma: no cover - abstract
        """A PNG of what the widget shows now."""
        raise NotImplementedError

    def show_static(self) -> StaticPicture:
        """The current state as a plain picture (for viewers without widgets, or a report)."""
        return StaticPicture(self.static_png(), f"static view of {self!r}")

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        data = widgets.DOMWidget._repr_mimebundle_(self, **kwargs)  # type: ignore[arg-type]
        if data is None:
            data = {"text/plain": repr(self)}
        try:
            data["image/png"] = base64.b64encode(self.static_png()).decode("ascii")
        except Exception as exc:  # a fallback picture must never break displaying the widget
            data["text/plain"] = f"{data.get('text/plain', '')} (no static picture: {type(exc).__name__})"
        return data
