"""The hook timeline: "when does my hook run?", answered by running one forward and backward pass.

:class:`TimelineState` attaches one hook of every kind to a small model (tensor hooks on the input
and the output, forward pre, forward, backward pre and backward hooks on every module,
post-accumulate-grad hooks on every parameter, and global module hooks), runs one forward and one
backward pass, records the order in which they fire, and removes every hook it added on every exit
path. :class:`HookTimeline` shows the events as a filterable chart and table.

Module hooks go through :func:`hookviz.register` under fixed keys (so re-running the cell replaces
them); tensor, post-accumulate-grad and global hooks have no keyed registry in
:mod:`hookviz.capture`, so their handles are kept here and removed in a ``finally`` block.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure
from torch import Tensor, nn
from torch.nn.modules import module as module_mod

from hookviz.capture import register, remove_key
from hookviz.render import figure_png, timeline_figure
from hookviz.widgets.common import StaticFallback, show_html, show_png

__all__ = ["HOOK_KINDS", "HookEvent", "HookTimeline", "TimelineState", "small_model"]

# Lanes of the chart, in the order a reader meets them.
HOOK_KINDS = (
    "global_forward_pre",
    "forward_pre",
    "global_forward",
    "forward",
    "tensor",
    "global_backward_pre",
    "backward_pre",
    "global_backward",
    "backward",
    "post_accumulate_grad",
)
TIMELINE_KEY = "hookviz.timeline"
_MODULE_KINDS = {
    "forward_pre": "forward_pre",
    "forward": "forward",
    "backward_pre": "full_backward_pre",
    "backward": "full_backward",
}


@dataclass(frozen=True)
class HookEvent:
    """One hook call: its position in the run, the phase, the hook kind and where it was attached."""

    order: int
    phase: str
    kind: str
    where: str


def small_model() -> nn.Sequential:
    """The timeline's default model: ``Linear(3, 4) -> ReLU -> Linear(4, 2)`` (seeded weights)."""
    gen = torch.Generator().manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
    return model


class TimelineState:
    """Run one forward and backward pass with every kind of hook attached and record the firing order.

    Args:
        model: the model (default :func:`small_model`). Keep it small: every hook fires once per module.
        inputs: a batch; default ``torch.randn(2, 3)`` with a fixed seed.
        loss_fn: turns the model's output into a scalar (default: ``output.pow(2).mean()``).
        global_hooks: also attach the global module hooks (they fire for *every* module in the process
            while attached, which is why they are removed right after the pass).
    """

    def __init__(
        self,
        model: nn.Module | None = None,
        inputs: Tensor | None = None,
        *,
        loss_fn: Callable[[Tensor], Tensor] | None = None,
        global_hooks: bool = True,
    ) -> None:
        self.model = model if model is not None else small_model()
        if inputs is None:
            inputs = torch.randn(2, 3, generator=torch.Generator().manual_seed(1))
        self.inputs = inputs
        self.loss_fn = loss_fn or (lambda out: out.pow(2).mean())
        self.global_hooks = global_hooks
        self.events: list[HookEvent] = []
        self._phase = "setup"
        self.run()

    def _names(self) -> dict[nn.Module, str]:
        return {m: (n or "<root>") for n, m in self.model.named_modules()}

    def _log(self, kind: str, where: str) -> None:
        self.events.append(HookEvent(len(self.events) + 1, self._phase, kind, where))

    def run(self) -> list[HookEvent]:
        """Attach every hook, run forward and backward once, detach everything; return the events."""
        self.events = []
        names = self._names()
        model = self.model
        handles: list[Any] = []
        keys: list[tuple[nn.Module, str]] = []
        model.zero_grad(set_to_none=True)
        try:
            for module, where in names.items():
                for kind, torch_kind in _MODULE_KINDS.items():
                    key = f"{TIMELINE_KEY}.{kind}"

                    def hook(*args: Any, _kind: str = kind, _where: str = where) -> None:
                        self._log(_kind, _where)

                    register(module, torch_kind, hook, key=key)
                    keys.append((module, key))
            for pname, param in model.named_parameters():
                if param.requires_grad:
                    handles.append(
                        param.register_post_accumulate_grad_hook(
                            lambda p, _w=f"param:{pname}": self._log("post_accumulate_grad", _w)
                        )
                    )
            if self.global_hooks:

                def global_hook(kind: str) -> Callable[..., None]:
                    def hook(module: nn.Module, *args: Any) -> None:
                        if module in names:  # only this model's modules
                            self._log(kind, names[module])

                    return hook

                handles += [
                    module_mod.register_module_forward_pre_hook(global_hook("global_forward_pre")),
                    module_mod.register_module_forward_hook(global_hook("global_forward")),
                    module_mod.register_module_full_backward_pre_hook(global_hook("global_backward_pre")),
                    module_mod.register_module_full_backward_hook(global_hook("global_backward")),
                ]
            x = self.inputs.detach().clone().requires_grad_(True)
            handles.append(x.register_hook(lambda g: self._log("tensor", "input x")))
            self._phase = "forward"
            out = model(x)
            if isinstance(out, Tensor) and out.requires_grad:
                handles.append(out.register_hook(lambda g: self._log("tensor", "model output")))
            loss = self.loss_fn(out)
            handles.append(loss.register_hook(lambda g: self._log("tensor", "loss")))
            self._phase = "backward"
            loss.backward()
        finally:
            self._phase = "done"
            for h in handles:
                h.remove()
            for module, key in keys:
                remove_key(module, key)
        return self.events

    def filter(
        self, kinds: Sequence[str] | None = None, phase: str | None = None, where: str | None = None
    ) -> list[HookEvent]:
        """Events of the given kinds, phase (``"forward"``/``"backward"``) and place (module name)."""
        for k in kinds or ():
            if k not in HOOK_KINDS:
                raise ValueError(f"unknown hook kind {k!r}; choose from {list(HOOK_KINDS)}")
        return [
            e
            for e in self.events
            if (kinds is None or e.kind in kinds)
            and (phase in (None, "all") or e.phase == phase)
            and (where in (None, "all") or e.where == where)
        ]

    def places(self) -> list[str]:
        """Every place a hook fired, in first-firing order."""
        return list(dict.fromkeys(e.where for e in self.events))

    def table(self, events: Sequence[HookEvent] | None = None) -> str:
        """Events as a text table: order, phase, kind, where."""
        events = self.events if events is None else events
        rows = [("#", "phase", "kind", "where")] + [(str(e.order), e.phase, e.kind, e.where) for e in events]
        widths = [max(len(r[c]) for r in rows) for c in range(4)]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)

    def html_table(self, events: Sequence[HookEvent]) -> str:
        """Events as an HTML table (forward rows blue, backward rows red)."""
        color = {"forward": "#e8f0fb", "backward": "#fbe9e8"}
        body = "".join(
            f"<tr style='background:{color.get(e.phase, 'white')}'><td>{e.order}</td><td>{e.phase}</td>"
            f"<td>{html.escape(e.kind)}</td><td>{html.escape(e.where)}</td></tr>"
            for e in events
        )
        head = "<tr><th>#</th><th>phase</th><th>kind</th><th>where</th></tr>"
        return f"<table style='font-size:12px'><thead>{head}</thead><tbody>{body}</tbody></table>"

    def figure(self, events: Sequence[HookEvent] | None = None, fig: Figure | None = None) -> Figure:
        """The lane chart of ``events`` (default all)."""
        events = self.events if events is None else events
        fig = fig if fig is not None else Figure(figsize=(9, 3.6), dpi=72)
        kinds = [k for k in HOOK_KINDS if any(e.kind == k for e in self.events)]
        timeline_figure(fig, [(e.order, e.phase, e.kind, e.where) for e in events], kinds)
        fig.subplots_adjust(left=0.17, right=0.98, top=0.9, bottom=0.13)
        return fig

    def __repr__(self) -> str:
        return f"TimelineState(events={len(self.events)}, places={len(self.places())})"


class HookTimeline(StaticFallback, widgets.VBox):
    """Filter the recorded hook events by kind, phase and place; see them as a chart and a table."""

    def __init__(self, model: nn.Module | None = None, inputs: Tensor | None = None, **kwargs: Any) -> None:
        state = kwargs.pop("state", None) or TimelineState(model, inputs, **kwargs)
        self.state = state
        present = [k for k in HOOK_KINDS if any(e.kind == k for e in state.events)]
        self.kinds = widgets.SelectMultiple(options=present, value=tuple(present), description="kinds", rows=6)
        self.phase = widgets.ToggleButtons(options=["all", "forward", "backward"], value="all")
        self.where = widgets.Dropdown(options=["all", *state.places()], value="all", description="where")
        self.count = widgets.Label()
        self.chart = widgets.Output()
        self.table_out = widgets.Output(layout={"max_height": "260px", "overflow": "auto"})
        super().__init__(
            [widgets.HBox([self.kinds, widgets.VBox([self.phase, self.where, self.count])]), self.chart, self.table_out]
        )
        for w in (self.kinds, self.phase, self.where):
            w.observe(lambda _: self.refresh(), names="value")
        self._fig = Figure(figsize=(9, 3.6), dpi=72)
        self.refresh()

    def shown(self) -> list[HookEvent]:
        """The events that pass the current filters."""
        return self.state.filter(list(self.kinds.value), self.phase.value, self.where.value)

    def refresh(self) -> None:
        """Redraw the chart and the table for the current filters."""
        events = self.shown()
        self.count.value = f"{len(events)} of {len(self.state.events)} hook calls"
        show_png(self.chart, figure_png(self.state.figure(events, self._fig)), f"{len(events)} hook calls")
        show_html(self.table_out, self.state.html_table(events), self.state.table(events))

    def static_png(self) -> bytes:
        """The chart of the current selection as PNG (the static fallback)."""
        return figure_png(self.state.figure(self.shown()))

    def __repr__(self) -> str:
        return f"HookTimeline(shown={len(self.shown())}, events={len(self.state.events)})"
