"""The training monitor with the other tools: one model, two tools - refused, or both right.

A monitor that trains a model holds hooks on it and a claim on it (``hookviz.widgets.common``). Another tool on
the same model must either refuse clearly (naming the monitor) or work without disturbing it: the monitor's
statistics stay finite, its ``last_error`` stays ``None``, every step it was asked for runs. A monitor step that
calls ``diagnose()`` on its own model must behave the same whether the steps run in the monitor's thread
(``start()``) or in the caller's (``run()``). Also the widget's own arguments (``steps``, ``interval``,
``charts_every``), which the first review found unchecked.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import torch
from torch import nn

import hookviz
from hookviz import ExplorerState, MonitorState, TimelineState, TrainingMonitor
from hookviz.widgets import AttentionState
from reliability import models
from reliability.harness import ACCEPT, EITHER, REFUSE, Case, Ctx
from reliability.inputs import Arg, FromCtx, Spec

TRAINS = frozenset({"params", "grads"})
MONITOR_WORDS = ("monitor", "TrainingMonitor", "being used")


def _setup(model_factory: Any = models.mlp, steps: int = 0, sleep: float = 0.0, diagnose_every: int = 0) -> Any:
    def setup() -> Ctx:
        model = model_factory()
        x = models.mlp_input()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        ctx = Ctx(models=[model], tensors=[x], model=model, x=x, optimizer=optimizer, steps=[], diagnoses=[])

        def step() -> torch.Tensor:
            ctx.steps.append(1)
            if diagnose_every and len(ctx.steps) % diagnose_every == 0:
                ctx.diagnoses.append(hookviz.diagnose(model, x[:4]))
            loss = model(x).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            if sleep:
                time.sleep(sleep)
            optimizer.step()
            return loss

        ctx.step = step
        ctx.state = MonitorState(model, step, stats_every=1)
        return ctx

    return setup


def _training(ctx: Ctx, steps: int = 10**6) -> MonitorState:
    """Start the monitor and wait until it has run a few steps."""
    ctx.state.start(steps)
    deadline = time.monotonic() + 20
    while len(ctx.steps) < 3 and time.monotonic() < deadline:
        time.sleep(0.005)
    return ctx.state


def _stop(answer: Any, ctx: Ctx) -> None:
    state = getattr(ctx, "state", None)
    if state is not None:
        state.stop()
        state.wait(30)


def _monitor_fine(ctx: Ctx, steps: int | None = None) -> str | None:
    state = ctx.state
    state.wait(30)
    if state.last_error is not None:
        return f"the monitor stopped: {state.last_error}"
    grads = np.asarray(state.grad_abs_mean())
    if grads.size and not np.isfinite(grads[-1]).all():
        return f"the monitor records NaN gradients now: {state.summary().splitlines()[-1]}"
    if steps is not None and state.step != steps:
        return f"the monitor ran {state.step} steps of {steps}"
    return None


def _while_training(cid: str, entry: str, other: Any, expect: str = EITHER, names: tuple[str, ...] = MONITOR_WORDS,
                    check: Any = None, factory: Any = models.mlp) -> Case:
    """``other(ctx)`` while a monitor trains the model in its thread: refused, or the monitor undisturbed."""

    def call(ctx: Ctx) -> Any:
        _training(ctx)
        try:
            return other(ctx)
        finally:
            ctx.state.stop()

    def checked(answer: Any, ctx: Ctx) -> str | None:
        problem = _monitor_fine(ctx)
        if problem is None and check is not None:
            problem = check(answer, ctx)
        return problem

    return Case(f"monitor+{cid}", entry, call, _setup(factory, sleep=0.002), expect, names, checked,
                cleanup=_stop, mutates=TRAINS, timeout=40)


def _hooks_kept(ctx: Ctx) -> Any:
    removed = hookviz.remove_all_hooks(ctx.model)
    time.sleep(0.1)  # the monitor trains on: its hooks must still record
    return removed


def _step_diagnoses(how: str) -> Case:
    def call(ctx: Ctx) -> Any:
        if how == "start":
            ctx.state.start(6)
            ctx.state.wait(30)
        else:
            ctx.state.run(6)
        return ctx.state

    def check(answer: Any, ctx: Ctx) -> str | None:
        if ctx.state.last_error is not None:
            return f"the monitor stopped: {ctx.state.last_error}"
        if len(ctx.diagnoses) != 3 or any(list(d) for d in ctx.diagnoses):
            return f"diagnoses {[list(d) for d in ctx.diagnoses]}"
        return None

    return Case(f"monitor+diagnose-in-step-under-{how}", "hookviz.MonitorState", call,
                _setup(diagnose_every=2), ACCEPT, check=check, cleanup=_stop, mutates=TRAINS, timeout=40)


def _start_and_run_agree() -> Case:
    def call(ctx: Ctx) -> Any:
        first = _setup(diagnose_every=2)()
        first.state.start(4)
        first.state.wait(30)
        second = _setup(diagnose_every=2)()
        try:
            second.state.run(4)
        except Exception as error:  # noqa: BLE001 - what run() raised is the difference
            return (first.state.last_error, repr(error))
        return (first.state.last_error, second.state.last_error), [list(d) for d in first.diagnoses], [
            list(d) for d in second.diagnoses]

    def check(answer: Any, ctx: Ctx) -> str | None:
        if len(answer) == 2:
            return f"start(): {answer[0]}, run(): {answer[1]}"
        errors, a, b = answer
        return None if errors == (None, None) and a == b else f"start() and run() differ: {errors}, {a}, {b}"

    return Case("monitor+diagnose-in-step-start-and-run-agree", "hookviz.MonitorState", call, expect=ACCEPT,
                check=check, timeout=60)


def _widget_step_diagnoses() -> Case:
    def call(ctx: Ctx) -> Any:
        widget = TrainingMonitor(ctx.model, ctx.step, interval=0.05, charts_every=60.0)
        ctx.widget = widget
        widget.run(4)
        return widget

    def check(answer: Any, ctx: Ctx) -> str | None:
        error = answer.state.last_error
        return f"the widget's run stopped: {error}" if error else None

    return Case("monitor+diagnose-in-TrainingMonitor.run", "hookviz.TrainingMonitor", call, _setup(diagnose_every=2),
                ACCEPT, check=check, mutates=TRAINS, timeout=60)


def _under(mode: Any, expect: str, names: tuple[str, ...]) -> Case:
    def call(ctx: Ctx) -> Any:
        with mode():
            return ctx.state.run(3)

    def check(answer: Any, ctx: Ctx) -> str | None:
        return None if ctx.state.step == 3 and ctx.state.last_error is None else f"step {ctx.state.step}"

    return Case(f"monitor:run-under-{mode.__name__}", "hookviz.MonitorState", call, _setup(), expect, names, check,
                cleanup=_stop, mutates=TRAINS)


def _second_monitor(key: str | None) -> Any:
    def run(ctx: Ctx) -> Any:
        other = MonitorState(ctx.model, ctx.step, **({"key": key} if key else {}))
        ctx.other = other
        other.start(5)
        other.wait(30)
        ctx.first_running = ctx.state.running  # the first monitor trains on (asked for a million steps)
        return other

    return run


def _second_fine(replaces: bool) -> Any:
    def check(answer: Any, ctx: Ctx) -> str | None:
        if answer.last_error is not None or answer.step != 5:
            return f"the second monitor ran {answer.step} of 5 steps: {answer.last_error}"
        if not replaces and not ctx.first_running:
            return f"the first monitor was stopped silently at step {ctx.state.step}"
        return None

    return check


def _capture_records(ctx: Ctx) -> Any:
    with hookviz.capture(ctx.model, ["0"]) as cap:
        ctx.model(ctx.x[:2])
    return cap


def _llama_monitor() -> Any:
    def setup() -> Ctx:
        model = models.hf("llama", "eager", train=True)
        x = models.tokens()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        ctx = Ctx(models=[model], tensors=[x], model=model, x=x, steps=[])

        def step() -> torch.Tensor:
            ctx.steps.append(1)
            loss = model(x, labels=x).loss
            optimizer.zero_grad()
            loss.backward()
            time.sleep(0.002)
            optimizer.step()
            return loss

        ctx.step = step
        ctx.state = MonitorState(model, step, stats_every=1)
        return ctx

    return setup


def hf_cases() -> list[Case]:
    def run_then_capture(ctx: Ctx) -> Any:
        return ctx.state.run(3)

    def attention_while(ctx: Ctx) -> Any:
        _training(ctx, 10**6)
        try:
            return AttentionState(ctx.model, ctx.x)
        finally:
            ctx.state.stop()

    def diagnose_while(ctx: Ctx) -> Any:
        _training(ctx, 10**6)
        try:
            return hookviz.diagnose(ctx.model, ctx.x, kwargs={"output_hidden_states": True})
        finally:
            ctx.state.stop()

    return [
        Case("monitor+hf:run-then-transformers-capture", "hookviz.MonitorState", run_then_capture, _llama_monitor(),
             ACCEPT, check=lambda a, ctx: _monitor_fine(ctx, 3),
             after=lambda ctx: models.capture_works(ctx.model, True),
             mutates=TRAINS, cleanup=_stop, timeout=40),
        Case("monitor+hf:AttentionState-while-training", "hookviz.AttentionState", attention_while, _llama_monitor(),
             REFUSE, MONITOR_WORDS, mutates=TRAINS, cleanup=_stop, timeout=40,
             after=lambda ctx: models.capture_works(ctx.model, True)),
        Case("monitor+hf:diagnose-while-training", "hookviz.diagnose", diagnose_while, _llama_monitor(), REFUSE,
             MONITOR_WORDS, mutates=TRAINS, cleanup=_stop, timeout=40,
             after=lambda ctx: models.capture_works(ctx.model, True)),
    ]


def interplay_cases() -> list[Case]:
    return [
        _while_training("remove_all_hooks", "hookviz.remove_all_hooks", _hooks_kept),
        _while_training("remove_all_hooks-include_global", "hookviz.remove_all_hooks",
                        lambda ctx: hookviz.remove_all_hooks(ctx.model, include_global=True)),
        _while_training("remove_all_hooks-on-a-submodule", "hookviz.remove_all_hooks",
                        lambda ctx: hookviz.remove_all_hooks(ctx.model[2])),
        _while_training("list_hooks", "hookviz.list_hooks", lambda ctx: hookviz.list_hooks(ctx.model), ACCEPT,
                        check=lambda a, ctx: None if len(a) else "the monitor's hooks are not listed"),
        _while_training("capture", "hookviz.capture", _capture_records,
                        check=lambda cap, ctx: None if cap.activation("0") is not None else "nothing captured"),
        _while_training("ExplorerState", "hookviz.ExplorerState", lambda ctx: ExplorerState(ctx.model, ctx.x),
                        REFUSE),
        _while_training("TimelineState", "hookviz.TimelineState", lambda ctx: TimelineState(ctx.model, ctx.x),
                        REFUSE),
        _while_training("second-MonitorState-same-key-replaces", "hookviz.MonitorState", _second_monitor(None),
                        EITHER, check=_second_fine(replaces=True)),
        _while_training("second-MonitorState-other-key", "hookviz.MonitorState", _second_monitor("another"),
                        EITHER, check=_second_fine(replaces=False)),
        _while_training("diagnose", "hookviz.diagnose", lambda ctx: hookviz.diagnose(ctx.model, ctx.x), REFUSE),
        _while_training("diagnose-a-submodule", "hookviz.diagnose", lambda ctx: hookviz.diagnose(ctx.model[0], ctx.x),
                        REFUSE),
        _step_diagnoses("start"),
        _step_diagnoses("run"),
        _start_and_run_agree(),
        _widget_step_diagnoses(),
        _under(torch.no_grad, EITHER, ("no_grad", "grad")),
        _under(torch.inference_mode, REFUSE, ("inference_mode",)),
        Case("monitor:remove_all_hooks-after-the-run", "hookviz.remove_all_hooks",
             lambda ctx: (ctx.state.run(2), hookviz.remove_all_hooks(ctx.model))[1], _setup(), ACCEPT,
             check=lambda a, ctx: None if int(a) == 0 else f"removed {int(a)} hooks after the run",
             mutates=TRAINS),
        Case("diagnose-inside-capture", "hookviz.diagnose", _diagnose_in_capture, _setup(), EITHER,
             ("capture", "hookviz.capture", "being used"), check=_diagnose_in_capture_check),
    ]


def _diagnose_in_capture(ctx: Ctx) -> Any:
    with hookviz.capture(ctx.model, ["0", "2"]) as cap:
        diagnosis = hookviz.diagnose(ctx.model, ctx.x[:4])
        ctx.model(ctx.x[:2])
    return diagnosis, cap


def _diagnose_in_capture_check(answer: Any, ctx: Ctx) -> str | None:
    diagnosis, cap = answer
    if [f for f in diagnosis if f.severity != "info"]:
        return f"hookviz's own capture hooks reported as mistakes: {[f.kind for f in diagnosis]}"
    activation = cap.activation("0")
    return None if activation is not None else "the capture recorded nothing"


# --------------------------------------------------------------------------- the widget's own arguments


def _widget_setup() -> Ctx:
    model = models.mlp()
    x = models.mlp_input()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

    def step() -> torch.Tensor:
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    return Ctx(models=[model], tensors=[x], model=model, step=step)


def _check_widget(answer: Any, args: dict[str, Any]) -> str | None:
    if not isinstance(answer, TrainingMonitor):
        return f"not a TrainingMonitor: {type(answer).__name__}"
    for name in ("interval", "charts_every"):
        if name in args and args[name] is not None:
            got = getattr(answer, name)
            if not isinstance(got, float) or not math.isfinite(got) or got < 0:
                return f"widget.{name} is {got!r}"
    steps = answer.steps.value
    if "steps" in args and args["steps"] is not None and steps != int(args["steps"]):
        return f"the steps box shows {steps}, not {args['steps']}"
    return None


def widget_spec() -> Spec:
    return Spec(
        "hookviz.TrainingMonitor",
        lambda model, step_fn, **kw: TrainingMonitor(model, step_fn, **kw),
        [
            Arg("model", "model", FromCtx("model"), positional=True, skip=("None",)),
            Arg("step_fn", "callable", FromCtx("step"), positional=True, skip=("None",)),
            Arg("steps", "count", 50, minimum=1, skip=("1e18",)),
            # 0 is documented and used by the tests: a live redraw after every step, the charts as often as they can
            Arg("interval", "number", 0.2),
            Arg("charts_every", "number", 3.0),
        ],
        check=_check_widget,
        setup=_widget_setup,
        mutates=TRAINS,
        keeps_rng=False,
        short="TrainingMonitor",
    )


def cases() -> list[Case]:
    return interplay_cases() + hf_cases() + widget_spec().cases()


__all__ = ["cases", "nn"]
