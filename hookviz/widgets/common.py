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
import os
import re
import sys
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import ipywidgets as widgets
import numpy as np
import torch
from torch import Tensor, nn

from hookviz.guards import check_int, check_number, check_png, check_str, failing_layer, run_mode, run_model
from hookviz.i18n import tr

__all__ = [
    "StaticFallback",
    "as_tensor_argument",
    "check_int",
    "check_number",
    "check_model",
    "close_tree",
    "creation_place",
    "claim_model",
    "release_model",
    "failing_layer",
    "previous_from_same_place",
    "run_model",
    "using_model",
    "in_monitor_step",
    "monitor_step",
    "refuse_if_in_use",
    "run_mode",
    "StaticPicture",
    "caption_html",
    "refuse",
    "restart_notice",
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
        self.caption = check_str(caption, "caption")
        self.png = check_png(png, "png")

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


#: The CSS class of every hookviz widget's outer box: labextension/style/index.css gives it hookviz's Chinese font
#: as the last fallback (a browser on a computer without a Chinese font would draw boxes).
WIDGET_CLASS = "hookviz-widget"
#: The CSS class of the notice a hookviz widget carries for when its kernel is gone.
RESTART_NOTICE_CLASS = "hookviz-restart-notice"
#: ipywidgets 8 puts this class on every view whose model lost its kernel connection (a restart, a shutdown,
#: or a page opened from saved widget state); it draws its broken-link icon from it.
DISCONNECTED_CLASS = "jupyter-widgets-disconnected"
RESTART_TEXT = (
    "This widget is no longer connected to a running kernel (it was restarted or shut down, or the notebook was "
    "just opened): its controls do nothing now. Run this cell again (Shift+Enter), or Run ▸ Run All Cells, to "
    "get a live widget."
)


def restart_notice() -> widgets.HTML:
    """A notice that stays hidden while the widget is live and shows when its kernel is gone.

    The widget front end marks a view whose kernel connection died with ``jupyter-widgets-disconnected``;
    a style rule shipped inside the notice itself shows it then, so the learner reads "run this cell
    again" instead of facing controls that silently do nothing. No kernel is needed to show it.
    """
    css = (
        f"<style>.{RESTART_NOTICE_CLASS}{{display:none!important}}"
        f".{RESTART_NOTICE_CLASS}.{DISCONNECTED_CLASS}{{display:block!important;margin:4px 0;padding:6px 10px;"
        "border-left:4px solid #e0a800;background:#fff8e1;color:#000}"
        f".{RESTART_NOTICE_CLASS}.{DISCONNECTED_CLASS}::before{{display:none!important}}</style>"
    )
    notice = widgets.HTML(f"{css}<div style='white-space:normal;line-height:1.4'>⚠ {escape(tr(RESTART_TEXT))}</div>")
    notice.add_class(RESTART_NOTICE_CLASS)
    return notice


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
        """The current state as a plain picture (for viewers without widgets, or a report); its text, in the learner's
        language, is ``static view of`` and the widget's repr."""
        return StaticPicture(self.static_png(), tr(f"static view of {self!r}"))

    def _add_restart_notice(self) -> None:
        """Put a :func:`restart_notice` first in the widget (once), for when its kernel is gone; and mark the widget
        ``hookviz-widget`` (the course's JupyterLab helper gives such widgets hookviz's Chinese font as a fallback)."""
        if WIDGET_CLASS not in getattr(self, "_dom_classes", ()):
            self.add_class(WIDGET_CLASS)  # type: ignore[attr-defined]
        children = getattr(self, "children", None)
        if children is None or any(RESTART_NOTICE_CLASS in getattr(c, "_dom_classes", ()) for c in children):
            return
        self.children = (restart_notice(), *children)  # type: ignore[attr-defined]

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        if self.closed:
            return {"text/plain": repr(self)}
        self._add_restart_notice()
        data = widget_bundle(self, repr(self))  # type: ignore[arg-type]
        try:
            data["image/png"] = base64.b64encode(self.static_png()).decode("ascii")
        except Exception as exc:  # a fallback picture must never break displaying the widget
            data["text/plain"] = f"{data['text/plain']} (no static picture: {type(exc).__name__})"
        return data

    def close(self) -> None:
        """Close the widget and every widget inside it, stop what it runs, and let go of its state.

        ipywidgets keeps every open widget in a registry, and the observers of the controls refer to
        this widget: without closing them all, the widget, its model and the captured tensors would
        stay in memory for good. After ``close()`` nothing of hookviz refers to the model any more.
        Safe to call more than once.
        """
        if getattr(self, "_hookviz_closed", False):
            return
        self._hookviz_closed = True
        try:
            self._release()
        finally:
            close_tree(self)  # type: ignore[arg-type]
            self.state = None

    def _release(self) -> None:
        """What a widget stops or frees before it is closed (a monitor stops training); nothing by default."""

    def _close_previous_run(self, kind: str) -> None:
        """Close the ``kind`` widget that an earlier run of the same notebook cell made (a re-run cell)."""
        previous = previous_from_same_place(kind, self, outside_ipython=False)
        if previous is not None:
            previous.close()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return getattr(self, "_hookviz_closed", False)

    def _ipython_display_(self, **kwargs: Any) -> None:
        """Display the bundle of :meth:`_repr_mimebundle_` (ipywidgets 7 calls this, not the bundle method)."""
        from IPython.display import display

        display(self._repr_mimebundle_(), raw=True)
        handle = getattr(self, "_handle_displayed", None)  # ipywidgets 7: run on_displayed callbacks
        if handle is not None:
            handle(**kwargs)


def refusal(why: object) -> str:
    """The refusal a widget shows for a value it cannot take: ``refused: <why>``, in the learner's language."""
    from hookviz.i18n import tr

    return tr(f"refused: {tr(str(why))}")


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


# --------------------------------------------------------------------------- argument checks
# check_int and run_mode live in hookviz.guards (below every layer, so that non-widget helpers use them too); they
# are imported above and stay importable from here.


def as_tensor_argument(value: Any, name: str) -> Tensor:
    """``value`` as a tensor: a tensor as is, a numpy array or a list of numbers converted; else a clear error."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (np.ndarray, list, tuple)):
        try:  # a numpy array keeps its dtype; a list of Python floats becomes float32, like torch.tensor(list)
            return torch.as_tensor(value) if isinstance(value, np.ndarray) else torch.tensor(value)
        except (TypeError, ValueError, RuntimeError) as exc:
            raise TypeError(
                f"{name} must be a tensor (or a numpy array / list of numbers); could not convert it: {exc}"
            ) from None
    raise TypeError(f"{name} must be a tensor, not {type(value).__name__}; pass torch.as_tensor({name})")


def check_model(model: Any, who: str) -> nn.Module:
    """Refuse what ``who`` cannot run: not an ``nn.Module``, or weights on the meta device (no data)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"{who} needs model to be an nn.Module, got {type(model).__name__}")
    for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
        if tensor.is_meta:
            raise ValueError(
                f"{who}: {name!r} of {type(model).__name__} is on the meta device (shapes only, no values); "
                "materialise the model first, e.g. model.to_empty(device='cpu') and load_state_dict(...)"
            )
    return model


# --------------------------------------------------------------------------- one model, one user at a time

# model -> (what uses it, e.g. "a TrainingMonitor started at cell line 3", the owner object's id)
_BUSY: weakref.WeakKeyDictionary[nn.Module, tuple[str, int]] = weakref.WeakKeyDictionary()
_BUSY_LOCK = threading.Lock()


def _overlapping(model: nn.Module) -> tuple[nn.Module, str, int] | None:
    mine = {id(m) for m in model.modules()}
    for busy, (what, owner) in list(_BUSY.items()):
        if id(busy) in mine or any(m is model for m in busy.modules()):
            return busy, what, owner
    return None


def _refusal(who: str, busy: nn.Module, what: str) -> RuntimeError:
    return RuntimeError(tr(
        f"{who}: this {type(busy).__name__} is being used by {tr(what)}: stop it first "
        "(monitor.stop(), then monitor.state.wait()), or give this tool its own copy of the model "
        "(copy.deepcopy(model))"
    ))


def claim_model(model: nn.Module, owner: object, what: str, who: str) -> bool:
    """Mark ``model`` as used by ``owner`` (``what`` says by whom, for others' refusals); refuse if another uses it.

    A model counts as used when it, a module inside it or a module that contains it is claimed.
    Returns ``True`` when this call made the claim (``False``: ``owner`` held it already).
    """
    with _BUSY_LOCK:
        found = _overlapping(model)
        if found is not None and found[2] != id(owner):
            raise _refusal(who, found[0], found[1])
        if found is None:
            _BUSY[model] = (what, id(owner))
            return True
        return False


def release_model(model: nn.Module, owner: object) -> None:
    """Give up ``owner``'s claim on ``model`` (nothing happens when someone else holds it)."""
    with _BUSY_LOCK:
        held = _BUSY.get(model)
        if held is not None and held[1] == id(owner):
            del _BUSY[model]


def refuse_if_in_use(model: nn.Module, who: str) -> None:
    """Refuse (the same ``RuntimeError`` as :func:`claim_model`) when a hookviz tool uses ``model`` now.

    For a tool that changes the model without running it (``remove_all_hooks``): it claims nothing, but must not
    pull the hooks out from under a monitor that is training the model.
    """
    with _BUSY_LOCK:
        found = _overlapping(model)
    if found is not None:
        raise _refusal(who, found[0], found[1])


_STEPPING = threading.local()


@contextlib.contextmanager
def monitor_step() -> Iterator[None]:
    """Mark this thread as running a monitor's training step (:meth:`MonitorState.run` runs it in the caller's
    thread, :meth:`~MonitorState.start` in its own): a tool that the step itself calls on the monitor's model (the
    hook doctor) is part of the training, not another user of the model."""
    depth = getattr(_STEPPING, "depth", 0)
    _STEPPING.depth = depth + 1
    try:
        yield
    finally:
        _STEPPING.depth = depth


def in_monitor_step() -> bool:
    """True while this thread runs a monitor's training step (see :func:`monitor_step`)."""
    return getattr(_STEPPING, "depth", 0) > 0


@contextlib.contextmanager
def using_model(model: nn.Module, owner: object, what: str, who: str) -> Iterator[None]:
    """Claim ``model`` for ``owner`` during the ``with`` block (see :func:`claim_model`)."""
    mine = claim_model(model, owner, what, who)
    try:
        yield
    finally:
        if mine:
            release_model(model, owner)


# --------------------------------------------------------------------------- re-run cells, closing


def creation_place() -> tuple[str, str, int]:
    """Where the user's code called into hookviz: ``(file, function, line)`` of the first frame outside hookviz.

    IPython names a cell's code ``<ipython-input-N-hash>`` (``N`` the execution count) or, under
    ipykernel, after a hash of the cell's source; the count is dropped so that a re-run cell is the same place.
    """
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame = frame.f_back
    if frame is None:
        return ("<unknown>", "", 0)
    filename = re.sub(r"^<ipython-input-\d+-", "<ipython-input-", frame.f_code.co_filename)
    return (filename, frame.f_code.co_name, frame.f_lineno)


def run_id() -> int | None:
    """The IPython execution count of the running cell (``None`` outside IPython)."""
    shell = sys.modules.get("IPython")
    get = getattr(shell, "get_ipython", None)
    ip = get() if get is not None else None
    return getattr(ip, "execution_count", None)


# (kind, place) -> (the object made there last, the run it was made in)
_MADE_AT: dict[tuple[str, tuple[str, str, int]], tuple[weakref.ref[Any], int | None]] = {}


def previous_from_same_place(kind: str, obj: object, *, outside_ipython: bool) -> Any:
    """Remember ``obj`` as the latest ``kind`` made at the caller's place; return the earlier one of a re-run.

    An earlier object made at the same place in another cell execution is returned (the cell was run
    again). Within one execution (a loop making several), nothing is returned. Outside IPython there
    are no executions: ``outside_ipython`` says whether the same place then counts as a re-run.
    """
    key = (kind, creation_place())
    current = run_id()
    previous = _MADE_AT.get(key)
    _MADE_AT[key] = (weakref.ref(obj), current)
    for stale in [k for k, (ref, _) in _MADE_AT.items() if ref() is None]:
        del _MADE_AT[stale]
    if previous is None:
        return None
    earlier, earlier_run = previous[0](), previous[1]
    if earlier is None or earlier is obj:
        return None
    if current is None and earlier_run is None:
        return earlier if outside_ipython else None
    return earlier if current != earlier_run else None


def _widgets_in(value: Any) -> list[widgets.Widget]:
    if isinstance(value, widgets.Widget):
        return [value]
    if isinstance(value, (list, tuple)):
        return [w for v in value for w in _widgets_in(v)]
    return []


def close_tree(widget: widgets.Widget) -> None:
    """Close ``widget`` and every widget it holds (children, layouts, styles), so ipywidgets keeps none of them."""
    seen: set[int] = set()
    stack = [widget]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        for name in current.keys:
            try:
                value = getattr(current, name)
            except Exception:  # noqa: S112 - a trait that cannot be read holds no widget we made
                continue
            stack.extend(_widgets_in(value))
        if current is not widget:
            current.close()
    widgets.Widget.close(widget)
