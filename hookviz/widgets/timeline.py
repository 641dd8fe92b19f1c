"""The hook timeline: "when does my hook run?", answered by running one forward and backward pass.

:class:`TimelineState` attaches one hook of every kind to a small model (tensor hooks on the input
and the output, forward pre, forward, backward pre and backward hooks on every module,
post-accumulate-grad hooks on every parameter, and global module hooks), runs one forward and one
backward pass, records the order in which they fire, and removes every hook it added on every exit
path. :class:`HookTimeline` shows the events as a filterable chart and table.

Every hook is registered through one :class:`hookviz.capture.HookGroup` that owns its handles
(held under a fixed key on the model, so re-running the cell replaces them) and removes exactly them
on every exit path. The user's model is left as found: the parameters' ``.grad`` (the backward pass
writes them) and the training mode are put back afterwards.
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

from hookviz.capture import HookGroup, iter_tensors
from hookviz.catalogue import HOOK_KINDS as CATALOGUE
from hookviz.catalogue import hook_kind
from hookviz.i18n import N_, tr
from hookviz.render import figure_png, timeline_figure
from hookviz.text import closest_hint, text_table
from hookviz.widgets.common import (
    StaticFallback,
    as_tensor_argument,
    check_model,
    row,
    run_mode,
    run_model,
    show_html,
    show_png,
    using_model,
)

__all__ = ["HOOK_KINDS", "HookEvent", "HookTimeline", "TimelineState", "small_model"]

# The kinds the timeline attaches (hookviz.catalogue names), in the order a reader meets them.
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
assert all(k in CATALOGUE for k in HOOK_KINDS), "timeline kinds must be catalogue kinds"
TIMELINE_KEY = "hookviz.timeline"
_MODULE_KINDS = ("forward_pre", "forward", "backward_pre", "backward")
_GLOBAL_KINDS = ("global_forward_pre", "global_forward", "global_backward_pre", "global_backward")


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


_GLOBAL_BACKWARD_FLAG = "_global_is_full_backward_hook"


def _restore_global_backward_flag(saved: bool | None) -> None:
    """Put back PyTorch's "global full or legacy backward hooks" flag once no global backward hook is left.

    Registering a global full backward hook sets it for the rest of the process, and PyTorch then refuses
    the legacy kind (notebook 05): the timeline's own global hooks must not decide that for the learner.
    """
    if not hook_kind("global_backward").hooks_of() and not hook_kind("global_backward_legacy").hooks_of():
        setattr(nn.modules.module, _GLOBAL_BACKWARD_FLAG, saved)


def refuse_inference_mode(who: str) -> None:
    """A clear error when called inside ``torch.inference_mode()``: no gradient, no backward hook can exist there.

    ``torch.no_grad()`` can be lifted for the tool's own pass (``torch.enable_grad()``); inference mode
    cannot, and its tensors can never require grad.
    """
    if torch.is_inference_mode_enabled():
        raise RuntimeError(tr(
            f"{who}: called inside torch.inference_mode(), where no gradient can be computed and no backward "
            f"hook can fire (torch.enable_grad() cannot lift it); call it outside `torch.inference_mode()` "
            "(torch.no_grad() is fine: the tool takes its own gradients)"
        ))


def initialise_lazy(model: nn.Module, inputs: Any, who: str) -> None:
    """Run one forward pass without hooks, in eval mode, if ``model`` has uninitialised lazy parameters.

    ``nn.LazyLinear`` and friends only get their weights on their first forward pass; hooks cannot be
    attached to an uninitialised parameter. The pass runs in eval mode (BatchNorm statistics and dropout
    untouched) and without gradients; every submodule gets its own mode back.
    """
    lazy = [*model.parameters(), *model.buffers()]
    if not any(isinstance(t, nn.parameter.UninitializedTensorMixin) for t in lazy):
        return
    x = inputs.detach().clone() if isinstance(inputs, Tensor) else inputs
    with torch.no_grad(), run_mode(model, False):
        run_model(model, x, who)


def _describe_output(out: Any) -> str:
    if isinstance(out, Tensor):
        return f"tensor {tuple(out.shape)} {str(out.dtype).removeprefix('torch.')}"
    return f"{type(out).__name__} of {len(out)}" if isinstance(out, (tuple, list, dict)) else type(out).__name__


def _default_loss(out: Any) -> Tensor:
    """``out.pow(2).mean()``, summed over every floating-point tensor of a tuple, list or dict output."""
    if isinstance(out, Tensor) and out.is_floating_point():
        return out.pow(2).mean()
    parts = [t.float().pow(2).mean() for _, t in iter_tensors(out) if t.is_floating_point() and t.numel()]
    if not parts:
        raise ValueError(
            f"HookTimeline: the model returned {_describe_output(out)} with no floating-point tensor to take a "
            "loss of; pass loss_fn= that turns its output into one number"
        )
    return torch.stack(parts).sum()


class TimelineState:
    """Run one forward and backward pass with every kind of hook attached and record the firing order.

    Args:
        model: the model (default :func:`small_model`). Keep it small: every hook fires once per module.
            It is left as found: ``.grad`` of every parameter and the training mode are restored.
        inputs: a batch; default ``torch.randn(2, 3)`` with a fixed seed.
        loss_fn: turns the model's output into a scalar (default: ``output.pow(2).mean()``).
        global_hooks: also attach the global module hooks (they fire for *every* module in the process
            while attached, which is why they are removed right after the pass).
        input_requires_grad: feed a copy of the input that requires grad (default), as the output of an
            earlier layer would; ``False`` feeds raw data, as a network's first layer gets it (the first
            module's full backward hook then fires before its weight's hooks).
    """

    def __init__(
        self,
        model: nn.Module | None = None,
        inputs: Tensor | None = None,
        *,
        loss_fn: Callable[[Tensor], Tensor] | None = None,
        global_hooks: bool = True,
        input_requires_grad: bool = True,
    ) -> None:
        self.model = check_model(model if model is not None else small_model(), "HookTimeline")
        if inputs is None:
            inputs = torch.randn(2, 3, generator=torch.Generator().manual_seed(1))
        self.inputs = as_tensor_argument(inputs, "inputs")
        if loss_fn is not None and not callable(loss_fn):
            raise TypeError(f"loss_fn must be a function of the model's output, not {loss_fn!r}")
        for flag, value in (("global_hooks", global_hooks), ("input_requires_grad", input_requires_grad)):
            if not isinstance(value, bool):
                raise TypeError(f"HookTimeline: {flag} must be True or False, not {value!r}")
        self.loss_fn = loss_fn or _default_loss
        self.global_hooks = global_hooks
        self.input_requires_grad = input_requires_grad
        self.events: list[HookEvent] = []
        self._phase = "setup"
        self._grad_source = ""
        self.run()

    def _names(self) -> dict[nn.Module, str]:
        return {m: (n or "<root>") for n, m in self.model.named_modules()}

    def _log(self, kind: str, where: str) -> None:
        self.events.append(HookEvent(len(self.events) + 1, self._phase, kind, where))

    def run(self) -> list[HookEvent]:
        """Attach every hook, run forward and backward once, detach everything; return the events.

        The parameters' ``.grad`` are set aside before the pass (so accumulation starts from nothing,
        as in a first step) and put back afterwards; every submodule's own train/eval mode and every
        buffer (BatchNorm's running statistics, which a train-mode pass updates) are put back too.
        An integer input (tokens) is fed as it is, without an input tensor hook: only floating-point
        tensors can require grad. Called inside ``torch.no_grad()``, the pass still takes gradients
        (``torch.enable_grad()``); inside ``torch.inference_mode()`` no gradient can exist, so it is
        refused with a clear error. A model with lazy layers (``nn.LazyLinear``) not yet initialised is
        initialised first by one forward pass without hooks, as its first forward pass would.
        """
        refuse_inference_mode("HookTimeline")
        self.events = []
        model = self.model
        # Claimed first: nothing of a model another tool is training is touched before the refusal.
        with using_model(model, self, N_("a HookTimeline"), "HookTimeline"), torch.enable_grad():
            initialise_lazy(model, self.inputs, "HookTimeline")
            self._run(model)
        return self.events

    def _run(self, model: nn.Module) -> None:
        names = self._names()
        saved_flag = getattr(nn.modules.module, _GLOBAL_BACKWARD_FLAG, None)
        saved_grads = [(p, p.grad) for p in model.parameters()]
        modes = [(module, module.training) for module in model.modules()]
        buffers = [(b, b.clone()) for b in model.buffers()]
        try:
            for p, _ in saved_grads:
                p.grad = None
            with HookGroup(model, key=TIMELINE_KEY) as hooks:
                for module, where in names.items():
                    for kind in _MODULE_KINDS:

                        def hook(*args: Any, _kind: str = kind, _where: str = where) -> None:
                            self._log(_kind, _where)

                        hooks.register(module, kind, hook)
                for pname, param in model.named_parameters():
                    if param.requires_grad:
                        hooks.register(
                            param,
                            "post_accumulate_grad",
                            lambda p, _w=f"param:{pname}": self._log("post_accumulate_grad", _w),
                        )
                if self.global_hooks:

                    def global_hook(kind: str) -> Callable[..., None]:
                        def hook(module: nn.Module, *args: Any) -> None:
                            if module in names:  # only this model's modules
                                self._log(kind, names[module])

                        return hook

                    for kind in _GLOBAL_KINDS:
                        hooks.register(None, kind, global_hook(kind))
                x = self.inputs.detach().clone()
                if self.input_requires_grad and (x.is_floating_point() or x.is_complex()):
                    x.requires_grad_(True)
                    hooks.register(x, "tensor", lambda g: self._log("tensor", N_("input x")))
                trainable = any(p.requires_grad for p in model.parameters())
                self._grad_source = "the input" if x.requires_grad else "a parameter" if trainable else ""
                self._phase = "forward"
                out = run_model(model, x, "HookTimeline")
                if isinstance(out, Tensor) and out.requires_grad:
                    hooks.register(out, "tensor", lambda g: self._log("tensor", N_("model output")))
                loss = self._loss(out)
                hooks.register(loss, "tensor", lambda g: self._log("tensor", "loss"))
                self._phase = "backward"
                loss.backward()
        finally:
            self._phase = "done"
            _restore_global_backward_flag(saved_flag)
            for p, grad in saved_grads:
                p.grad = grad
            for module, mode in modes:
                module.training = mode
            with torch.no_grad():
                for buffer, saved in buffers:
                    buffer.copy_(saved)

    def _loss(self, out: Any) -> Tensor:
        """The scalar the backward pass starts from; a clear error when there is none to differentiate."""
        try:
            loss = self.loss_fn(out)
        except ValueError:
            raise
        except Exception as exc:
            raise TypeError(
                f"HookTimeline: loss_fn failed on the model's output ({_describe_output(out)}): "
                f"{type(exc).__name__}: {exc}. Pass loss_fn= that turns this output into one number"
            ) from exc
        if not isinstance(loss, Tensor) or loss.numel() != 1:
            raise TypeError(
                f"HookTimeline: loss_fn must return a one-element tensor, got {_describe_output(loss)}; "
                "reduce it, e.g. loss_fn=lambda out: out.sum()"
            )
        if not loss.requires_grad and self._grad_source:
            raise ValueError(
                f"HookTimeline: the loss of {type(self.model).__name__} does not require grad although "
                f"{self._grad_source} does, so no backward pass can run: the forward or loss_fn cuts the graph "
                "(a .detach(), a torch.no_grad() block, or an integer result such as argmax). Return a loss computed "
                "from the output with differentiable operations"
            )
        if not loss.requires_grad:
            raise ValueError(
                f"HookTimeline: the loss of {type(self.model).__name__} does not require grad, so no backward "
                "pass can run (every parameter is frozen and the input cannot require grad, e.g. integer "
                "tokens, or input_requires_grad=False). Unfreeze a parameter (p.requires_grad_(True)) or "
                "pass floating-point inputs"
            )
        return loss.reshape(())

    def filter(
        self, kinds: Sequence[str] | None = None, phase: str | None = None, where: str | None = None
    ) -> list[HookEvent]:
        """Events of the given kinds, phase (``"forward"``/``"backward"``) and place (module name).

        ``None`` (or ``"all"`` for phase and place) keeps everything; one kind may be given as a string.
        An unknown kind, phase or place is a clear ``ValueError`` (never an empty list that looks like an answer).
        """
        if isinstance(kinds, str):
            kinds = [kinds]
        if kinds is not None and not isinstance(kinds, (list, tuple, set, frozenset)):
            raise TypeError(f"kinds must be a list of hook kinds from {list(HOOK_KINDS)} (or None), not {kinds!r}")
        for k in kinds or ():
            if k not in HOOK_KINDS:
                hint = closest_hint(k, HOOK_KINDS) if isinstance(k, str) else ""
                raise ValueError(f"unknown hook kind {k!r}{hint}; choose from {list(HOOK_KINDS)}")
        if phase not in (None, "all", "forward", "backward"):
            raise ValueError(f"phase must be 'forward', 'backward' or 'all' (or None), not {phase!r}")
        if where not in (None, "all") and where not in self._possible_places():
            hint = closest_hint(where, self._possible_places()) if isinstance(where, str) else ""
            raise ValueError(f"where={where!r} is not a place a hook was attached to{hint}; see state.places()")
        return [
            e
            for e in self.events
            if (kinds is None or e.kind in kinds)
            and (phase in (None, "all") or e.phase == phase)
            and (where in (None, "all") or e.where == where)
        ]

    def _possible_places(self) -> list[str]:
        """Every place the timeline attaches a hook to (whether or not it fired): modules, parameters, tensors."""
        modules = list(self._names().values())
        params = [f"param:{name}" for name, _ in self.model.named_parameters()]
        return [*modules, *params, N_("input x"), N_("model output"), "loss", *self.places()]

    def places(self) -> list[str]:
        """Every place a hook fired, in first-firing order."""
        return list(dict.fromkeys(e.where for e in self.events))

    def table(self, events: Sequence[HookEvent] | None = None) -> str:
        """Events as a text table: order, phase, kind, where (headers, phases and the named places such as
        ``input x`` in the learner's language; kinds, module and parameter names as written)."""
        events = self.events if events is None else events
        return text_table(
            ("#", tr("phase"), tr("kind"), tr("where")),
            [(e.order, tr(e.phase), e.kind, tr(e.where)) for e in events],
            rule=False,
        )

    def html_table(self, events: Sequence[HookEvent]) -> str:
        """Events as an HTML table (forward rows blue, backward rows red)."""
        color = {"forward": "#e8f0fb", "backward": "#fbe9e8"}
        body = "".join(
            f"<tr style='background:{color.get(e.phase, 'white')}'><td>{e.order}</td><td>{e.phase}</td>"
            f"<td>{html.escape(e.kind)}</td><td>{html.escape(e.where)}</td></tr>"
            for e in events
        )
        head = "<tr><th>#</th><th>phase</th><th>kind</th><th>where</th></tr>"
        if not events:
            return "<p style='font-size:13px;color:#555'>no hook calls match these filters</p>"
        return f"<table style='font-size:13px'><thead>{head}</thead><tbody>{body}</tbody></table>"

    def figure(self, events: Sequence[HookEvent] | None = None, fig: Figure | None = None) -> Figure:
        """The lane chart of ``events`` (default all)."""
        events = self.events if events is None else events
        fig = fig if fig is not None else Figure(figsize=(9, 6), dpi=72)
        kinds = [k for k in HOOK_KINDS if any(e.kind == k for e in self.events)]
        return timeline_figure(fig, [(e.order, e.phase, e.kind, e.where) for e in events], kinds)

    def __repr__(self) -> str:
        return f"TimelineState(events={len(self.events)}, places={len(self.places())})"


class HookTimeline(StaticFallback, widgets.VBox):
    """Filter the recorded hook events by kind, phase and place; see them as a chart and a table."""

    def __init__(self, model: nn.Module | None = None, inputs: Tensor | None = None, **kwargs: Any) -> None:
        state = kwargs.pop("state", None) or TimelineState(model, inputs, **kwargs)
        self.state = state
        present = [k for k in HOOK_KINDS if any(e.kind == k for e in state.events)]
        self.kinds = widgets.SelectMultiple(
            options=present, value=tuple(present), description=tr("kinds"), rows=6, layout={"width": "300px"}
        )
        self.phase = widgets.ToggleButtons(options=[(tr(p), p) for p in ("all", "forward", "backward")], value="all")
        self.phase.style.button_width = "80px"
        self.where = widgets.Dropdown(
            options=[(tr("all"), "all"), *[(p, p) for p in state.places()]],
            value="all",
            description=tr("where"),
            layout={"width": "240px"},
        )
        self.count = widgets.Label()
        self.chart = widgets.Output(layout={"height": "440px"})
        self.table_out = widgets.Output(layout={"max_height": "260px", "overflow": "auto"})
        super().__init__(
            [row(self.kinds, widgets.VBox([self.phase, self.where, self.count])), self.chart, self.table_out]
        )
        for w in (self.kinds, self.phase, self.where):
            w.observe(lambda _: self.refresh(), names="value")
        self._fig = Figure(figsize=(9, 6), dpi=72)
        self.refresh()
        self._close_previous_run("HookTimeline")

    def reset(self) -> HookTimeline:
        """Back to the opening view: every kind, both phases, every place."""
        self.kinds.value = tuple(self.kinds.options)
        self.phase.value = "all"
        self.where.value = "all"
        return self

    def shown(self) -> list[HookEvent]:
        """The events that pass the current filters."""
        return self.state.filter(list(self.kinds.value), self.phase.value, self.where.value)

    def refresh(self) -> None:
        """Redraw the chart and the table for the current filters."""
        if self.state is None:  # closed
            return
        events = self.shown()
        self.count.value = tr(f"{len(events)} of {len(self.state.events)} hook calls")
        show_png(self.chart, figure_png(self.state.figure(events, self._fig)), f"{len(events)} hook calls")
        show_html(self.table_out, self.state.html_table(events), self.state.table(events))

    def _release(self) -> None:
        """Let go of the figure and the drawn chart and table: a closed timeline kept in ``Out[n]`` holds no PNG."""
        self._fig = None
        for out in (getattr(self, "chart", None), getattr(self, "table_out", None)):  # None: refused while built
            if out is not None:
                out.outputs = ()

    def static_png(self) -> bytes:
        """The chart of the current selection as PNG (the static fallback)."""
        return figure_png(self.state.figure(self.shown()))

    def __repr__(self) -> str:
        if self.state is None:
            return "HookTimeline(closed)"
        return f"HookTimeline(shown={len(self.shown())}, events={len(self.state.events)})"
