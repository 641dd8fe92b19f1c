"""The atlas, the hook timeline, the explorer's grad modes and capture, driven with bad and unusual inputs.

The same promise as ``test_reliability.py`` (whose snapshot and error checks this module reuses), for the
atlas (its table, its search widget, its snapshots), :class:`~hookviz.widgets.TimelineState` /
:class:`~hookviz.widgets.HookTimeline`, :class:`~hookviz.widgets.ExplorerState` /
:class:`~hookviz.widgets.LayerExplorer` inside ``torch.no_grad()`` and ``torch.inference_mode()``, lazy and
meta-device models, and the reading side of :func:`hookviz.capture`.
For every input the test asserts:

* a correct result, or an error **raised by hookviz** (innermost traceback frame in hookviz code) whose
  message names the argument or the cause and the fix;
* the model left exactly as found (``state_dict``, buffers, modes, ``requires_grad``, ``.grad``) with the
  same hooks as before; no hookviz thread left running;
* nothing leaked: every ipywidget the call opened is closed again once the result is closed.

A lazy model may come back initialised (what its first forward pass does, with PyTorch's own lazy hooks gone);
everything else of it is compared as for any model.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
from ipywidgets.widgets.widget import _instances
from test_reliability import (
    Snapshot,
    X,
    Y,
    assert_hookviz_error,
    assert_unchanged,
    cnn,
    frozen_cnn,
    hookviz_threads,
    meta_cnn,
    snapshot,
    tiny,
)
from torch import Tensor, nn

import hookviz
from hookviz import atlas
from hookviz.transformer import make_tiny_batch
from hookviz.widgets import ExplorerState, HookTimeline, LayerExplorer, TimelineState

TOKENS, _ = make_tiny_batch(4, seed=5)


# --------------------------------------------------------------------------- models and data


def lazy() -> nn.Module:
    """An ``nn.LazyLinear`` model that has never run (its first weight has no shape yet)."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.LazyLinear(16), nn.ReLU(), nn.Linear(16, 10))


def tiny_mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))


def no_model() -> nn.Module:
    """For the atlas cases: a bystander model that must stay untouched."""
    return tiny_mlp()


class Detaches(nn.Module):
    """A forward that cuts the graph: its logits are detached."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(x).detach()


@functools.cache
def rows() -> list[tuple[atlas.Entry, list[str]]]:
    return atlas.merge_versions({v: atlas.load_snapshot(v) for v in atlas.stored_versions()})


def table(**filters: Any) -> atlas.AtlasTable:
    return atlas.AtlasTable(rows(), teaches=atlas.teaching_links(), **filters)


def entries() -> list[atlas.Entry]:
    return atlas.load_snapshot(atlas.stored_versions()[-1])


# --------------------------------------------------------------------------- the table


@dataclass
class Case:
    """``action(model)`` on a fresh ``make()``: raise a hookviz error matching ``error``, or pass ``check``."""

    name: str
    make: Callable[[], nn.Module]
    action: Callable[[nn.Module], Any]
    error: str | None = None
    check: Callable[[nn.Module, Any], None] | None = None
    initialises: bool = False  # a lazy model: compared after its first forward pass


CASES: list[Case] = []


def case(
    name: str,
    make: Callable[[], nn.Module],
    action: Callable[[nn.Module], Any],
    error: str | None = None,
    check: Callable[[nn.Module, Any], None] | None = None,
    initialises: bool = False,
) -> None:
    CASES.append(Case(name, make, action, error, check, initialises))


def _is(expected: Any) -> Callable[[nn.Module, Any], None]:
    def check(model: nn.Module, result: Any) -> None:
        assert result == expected, f"{result!r} != {expected!r}"

    return check


def _html_counts(html: str) -> tuple[int, int, int]:
    """(rows shown, rows said to be hidden, rows the header says are visible)."""
    shown = html.count("<tr>") - 1
    more = re.search(r"… (\d+) more rows", html)
    visible = int(re.match(r"<p>(\d+) of", html).group(1))  # type: ignore[union-attr]
    return shown, int(more.group(1)) if more else 0, visible


def _counts_add_up(limit: int) -> Callable[[nn.Module, str], None]:
    def check(model: nn.Module, html: str) -> None:
        shown, hidden, visible = _html_counts(html)
        assert shown == min(limit, visible) and shown + hidden == visible, (shown, hidden, visible)

    return check


# -- atlas: the table's filters (AT01, AT02, AT05, AT06)
for kind, why in [
    ("forwrd", "kind='forwrd' is not in the atlas; closest: 'forward'"),
    ("", "kind='' is not in"),
    ("FORWARD", "kind='FORWARD' is not in the atlas"),
    (["forward"], "kind must be a hook kind's name"),
    (3, "kind must be a hook kind's name"),
    (None, None),
]:
    if why is None:
        case(
            "atlas set(kind=None) keeps 'all'",
            no_model,
            lambda m: (t := table(), t.set(kind=None), t.kind)[-1],
            check=_is("all"),
        )
        continue
    case(f"atlas set(kind={kind!r})", no_model, lambda m, k=kind: table().set(kind=k), why)
    case(f"atlas AtlasTable(rows, kind={kind!r})", no_model, lambda m, k=kind: table(kind=k), why)
case("atlas set(category='Failure')", no_model, lambda m: table().set(category="Failure"), "closest: 'failure'")
case("atlas set(category=2)", no_model, lambda m: table().set(category=2), "category must be one of")
case("atlas AtlasTable(category='timin')", no_model, lambda m: table(category="timin"), "category='timin'")
case(
    "atlas set(category=None) keeps 'all'",
    no_model,
    lambda m: (t := table(), t.set(category=None), t.category)[-1],
    check=_is("all"),
)
case("atlas set(query=123)", no_model, lambda m: table().set(query=123), "query must be a string")
case("atlas AtlasTable(query=b'x')", no_model, lambda m: table(query=b"x"), "query must be a string")
case(
    "atlas refused set() changes nothing",
    no_model,
    lambda m: (t := table(), pytest.raises(ValueError, t.set, kind="forward", category="nope"), (t.kind, t.category))[
        -1
    ],
    check=_is(("all", "all")),
)

# -- atlas: queries are plain text, escaped in the HTML (AT03, AT04)
for query in ["(", "[a-z]+", ".*", "\\", "", "   ", "\x00", "deepcopy forward", "FORWARD"]:
    case(f"atlas query {query!r}", no_model, lambda m, q=query: table(query=q).to_html(5), check=_counts_add_up(5))
case(
    "atlas query '<script>' is escaped",
    no_model,
    lambda m: table(query="<script>x").to_html(),
    check=lambda m, html: None if "<script>" not in html else pytest.fail("unescaped query"),
)


def _fast(limit_s: float) -> Callable[[nn.Module, Any], None]:
    def check(model: nn.Module, seconds: float) -> None:
        assert seconds < limit_s, f"{seconds:.2f} s"

    return check


def _timed(action: Callable[[], Any]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


case(
    "atlas 100,000-character query",
    no_model,
    lambda m: _timed(lambda: table(query="x" * 100_000).visible()),
    check=_fast(5.0),
)
case(
    "atlas 1,000-word query",
    no_model,
    lambda m: _timed(lambda: table(query="forward " * 1000).visible()),
    check=_fast(5.0),
)

# -- atlas: rows and teaches (AT07)
case(
    "atlas AtlasTable(entries of load_snapshot)",
    no_model,
    lambda m: atlas.AtlasTable(entries()),
    r"rows must be \(entry, versions\) pairs.*merge_versions",
)
case("atlas AtlasTable('rows')", no_model, lambda m: atlas.AtlasTable("rows"), "rows must be a list of")
case(
    "atlas AtlasTable([(entry,)])",
    no_model,
    lambda m: atlas.AtlasTable([(entries()[0],)]),
    r"rows must be \(entry, versions\) pairs",
)
case(
    "atlas AtlasTable(rows, teaches=list)",
    no_model,
    lambda m: atlas.AtlasTable(rows(), ["x"]),
    "teaches must be a dict",
)
case(
    "atlas AtlasTable([]) is empty, not an error",
    no_model,
    lambda m: atlas.AtlasTable([]).to_html(),
    check=lambda m, html: None if html.startswith("<p>0 of 0 rows") else pytest.fail(html[:40]),
)

# -- atlas: limits (AT08)
case("atlas to_html(limit=-1)", no_model, lambda m: table().to_html(limit=-1), "limit must be 0 or more")
case("atlas to_html('10')", no_model, lambda m: table().to_html("10"), "limit must be a whole number")
case("atlas to_html(2.5)", no_model, lambda m: table().to_html(2.5), "limit must be a whole number")
case("atlas to_html(True)", no_model, lambda m: table().to_html(True), "limit must be a whole number")
for limit in (0, 1, 10**6):
    case(f"atlas to_html({limit})", no_model, lambda m, n=limit: table().to_html(n), check=_counts_add_up(limit))
case(
    "atlas to_html(torch.tensor(2.0))", no_model, lambda m: table().to_html(torch.tensor(2.0)), "limit must be a whole"
)
case(
    "capture activation(call=torch.tensor(0.5))",
    frozen_cnn,
    lambda m: _captured(m).activation("features.0", torch.tensor(0.5)),
    "call must be a whole number",
)
case("atlas to_html(np.int64(3))", no_model, lambda m: table().to_html(np.int64(3)), check=_counts_add_up(3))

# -- atlas: the search widget (AT08, AT10, AT11)


def _widget_then(action: Callable[[atlas.AtlasWidget], Any]) -> Callable[[nn.Module], Any]:
    def run(model: nn.Module) -> Any:
        widget = atlas.atlas_widget(table(), limit=5)
        try:
            return action(widget)
        finally:
            widget.close()

    return run


case(
    "atlas atlas_widget(table, -1)", no_model, lambda m: atlas.atlas_widget(table(), -1), "atlas_widget: limit must be"
)
case("atlas atlas_widget(table, '5')", no_model, lambda m: atlas.atlas_widget(table(), "5"), "limit must be a whole")
case("atlas atlas_widget(rows)", no_model, lambda m: atlas.atlas_widget(rows()), "atlas_widget needs an AtlasTable")
case(
    "atlas widget query typed",
    no_model,
    _widget_then(lambda w: (setattr(w.query, "value", "deepcopy optimizer"), _html_counts(w.view.value))[-1]),
    check=lambda m, counts: None if counts[0] == min(5, counts[2]) and counts[2] > 0 else pytest.fail(counts),
)
case(
    "atlas widget kind dropdown",
    no_model,
    _widget_then(lambda w: (setattr(w.kind, "value", "backward"), w.table.kind)[-1]),
    check=_is("backward"),
)


def _dropdown_nope(widget: atlas.AtlasWidget) -> Any:
    from traitlets import TraitError

    with pytest.raises(TraitError):
        widget.kind.value = "nope"  # ipywidgets refuses it
    return widget.table.kind


case("atlas widget kind dropdown 'nope'", no_model, _widget_then(_dropdown_nope), check=_is("all"))
case(
    "atlas widget closed twice",
    no_model,
    _widget_then(lambda w: (w.close(), w.close(), repr(w), w._repr_mimebundle_())[2:]),
    check=_is(("AtlasWidget(closed)", {"text/plain": "AtlasWidget(closed)"})),
)
case(
    "atlas closed widget ignores its controls",
    no_model,
    _widget_then(lambda w: (w.close(), setattr(w.query, "value", "x"), w.table.query)[-1]),
    check=_is(""),
)

# -- atlas: snapshots and the module's other entry points (AT09)
case("atlas load_snapshot(None)", no_model, lambda m: atlas.load_snapshot(None), "version must be a torch version")
case("atlas load_snapshot(2.13)", no_model, lambda m: atlas.load_snapshot(2.13), r"not 2\.13; closest: '2\.13\.0'")
case("atlas load_snapshot('2.13')", no_model, lambda m: atlas.load_snapshot("2.13"), "closest: '2.13.0'")
case("atlas load_snapshot('')", no_model, lambda m: atlas.load_snapshot(""), "no stored atlas for torch ''")
case("atlas stored_version_for(None)", no_model, lambda m: atlas.stored_version_for(None), "version must be")
case(
    "atlas stored_version_for('2.13.5')",
    no_model,
    lambda m: atlas.stored_version_for("2.13.5+cu128"),
    check=_is("2.13.0"),
)
case("atlas merge_versions(list)", no_model, lambda m: atlas.merge_versions(entries()), "needs a dict")
case("atlas merge_versions({'x': 3})", no_model, lambda m: atlas.merge_versions({"x": 3}), "must be a list of Entry")
case("atlas diff_atlases(rows, [])", no_model, lambda m: atlas.diff_atlases(rows(), []), "old must be a list of Entry")
case("atlas teaching_links(['x'])", no_model, lambda m: atlas.teaching_links(["x"]), "extra must be a dict")
case("atlas run_atlas(kinds=3)", no_model, lambda m: atlas.run_atlas(3), "kinds must be a list")
case("atlas run_atlas(['forwrd'])", no_model, lambda m: atlas.run_atlas(["forwrd"]), "closest: 'forward'")
case(
    "atlas run_atlas('state_dict_pre')",
    no_model,
    lambda m: {e.kind for e in atlas.run_atlas("state_dict_pre")},
    check=_is({"state_dict_pre"}),
)
case("atlas probe('forward', 'plain')", no_model, lambda m: atlas.probe("forward", "plain"), "must be a Situation")
case("atlas rig_for('nope')", no_model, lambda m: atlas.rig_for("nope"), "unknown hook kind 'nope'")
case("atlas rig_for(3)", no_model, lambda m: atlas.rig_for(3), "a hook kind is a name")

# -- the hook timeline: lazy models, grad modes, filters (X01, X03)


def _timeline(model: nn.Module, inputs: Any = None, **kwargs: Any) -> TimelineState:
    return TimelineState(model, X[:2] if inputs is None else inputs, **kwargs)


def _fired(model: nn.Module, state: TimelineState) -> None:
    assert any(e.phase == "backward" for e in state.events) and any(e.phase == "forward" for e in state.events)
    assert any(e.kind == "post_accumulate_grad" for e in state.events)


def _in(context: Callable[[], Any], action: Callable[[nn.Module], Any]) -> Callable[[nn.Module], Any]:
    def run(model: nn.Module) -> Any:
        with context():
            return action(model)

    return run


case("timeline uninitialised LazyLinear", lazy, _timeline, check=_fired, initialises=True)
case(
    "timeline LazyLinear, wrong input",
    lazy,
    lambda m: _timeline(m, torch.randn(5)),
    "HookTimeline: Sequential failed on inputs",
    initialises=True,
)
case("timeline inside no_grad", cnn, _in(torch.no_grad, _timeline), check=_fired)
case(
    "timeline inside inference_mode",
    cnn,
    _in(torch.inference_mode, _timeline),
    r"call it outside `torch.inference_mode\(\)`",
)
case(
    "timeline widget inside inference_mode",
    cnn,
    _in(torch.inference_mode, lambda m: HookTimeline(m, X[:2])),
    "inference_mode",
)
case(
    "timeline inside no_grad, frozen model",
    frozen_cnn,
    _in(torch.no_grad, _timeline),
    check=lambda m, s: None if any(e.phase == "backward" for e in s.events) else pytest.fail("no backward"),
)
case("timeline model that detaches", Detaches, _timeline, "although the input does.*cuts the graph")
case(
    "timeline loss_fn that detaches", cnn, lambda m: _timeline(m, loss_fn=lambda o: o.detach().sum()), "cuts the graph"
)
case("timeline loss_fn argmax", cnn, lambda m: _timeline(m, loss_fn=lambda o: o.argmax()), "does not require grad")
case("timeline model=3", cnn, lambda m: TimelineState(3), "needs model to be an nn.Module")
case("timeline meta model", meta_cnn, _timeline, "meta device")
case("timeline global_hooks='yes'", cnn, lambda m: _timeline(m, global_hooks="yes"), "global_hooks must be True")
case(
    "timeline input_requires_grad=1",
    cnn,
    lambda m: _timeline(m, input_requires_grad=1),
    "input_requires_grad must be True",
)
case("timeline filter kinds=['nope']", tiny_mlp, lambda m: TimelineState(m).filter(["nope"]), "unknown hook kind")
case("timeline filter kinds=['forwrd']", tiny_mlp, lambda m: TimelineState(m).filter(["forwrd"]), "closest: 'forward'")
case(
    "timeline filter kinds='forward'",
    tiny_mlp,
    lambda m: {e.kind for e in TimelineState(m).filter("forward")},
    check=_is({"forward"}),
)
case("timeline filter kinds=3", tiny_mlp, lambda m: TimelineState(m).filter(3), "kinds must be a list")
case("timeline filter phase='fwd'", tiny_mlp, lambda m: TimelineState(m).filter(phase="fwd"), "phase must be")
case(
    "timeline filter where='2'",
    tiny_mlp,
    lambda m: [e.where for e in TimelineState(m).filter(where="2")][:1],
    check=_is(["2"]),
)
case(
    "timeline filter where='3'",
    tiny_mlp,
    lambda m: TimelineState(m).filter(where="3"),
    "where='3' is not a place a hook",
)


def _legacy_global_backward_after(model: nn.Module) -> Any:
    import torch.nn.modules.module as module_hooks

    flag = module_hooks._global_is_full_backward_hook
    # As in a fresh process: another test in this worker may have registered a global full backward hook, and
    # PyTorch keeps the flag after its removal (tests/test_global_backward_flag.py).
    module_hooks._global_is_full_backward_hook = None
    try:
        TimelineState(model)
        with module_hooks.register_module_backward_hook(lambda m, gi, go: None):  # refused if the flag stuck
            return True
    finally:
        module_hooks._global_is_full_backward_hook = flag


def _closed_timeline(model: nn.Module) -> Any:
    widget = HookTimeline(model)
    widget.close()
    widget.kinds.value = ("forward",)  # a closed widget ignores its controls
    return widget._fig, widget.chart.outputs, widget.table_out.outputs, repr(widget)


case("timeline then a legacy global backward hook", tiny_mlp, _legacy_global_backward_after, check=_is(True))
case(
    "timeline filter where='input x' (integer tokens: never fired)",
    tiny,
    lambda m: TimelineState(m, TOKENS).filter(where="input x"),
    check=_is([]),
)
case(
    "timeline closed widget keeps no drawing",
    tiny_mlp,
    _closed_timeline,
    check=_is((None, (), (), "HookTimeline(closed)")),
)

# -- the explorer: grad modes, lazy models, a graph cut inside the model (X02, X03)


def _explore(model: nn.Module, inputs: Any = X, labels: Any = None, **kwargs: Any) -> ExplorerState:
    return ExplorerState(model, inputs, labels, **kwargs)


def _has_gradient(model: nn.Module, state: ExplorerState) -> None:
    assert state.gradient() is not None, state.describe()["gradient"]


case("explorer inside no_grad", cnn, _in(torch.no_grad, lambda m: _explore(m, X, Y)), check=_has_gradient)
case(
    "explorer inside no_grad, integer tokens",
    tiny,
    _in(torch.no_grad, lambda m: _explore(m, TOKENS)),
    check=_has_gradient,
)
case(
    "explorer inside inference_mode",
    cnn,
    _in(torch.inference_mode, lambda m: _explore(m, X, Y)),
    r"LayerExplorer: called inside torch.inference_mode\(\).*call it outside",
)
case(
    "explorer widget inside inference_mode",
    cnn,
    _in(torch.inference_mode, lambda m: LayerExplorer(m, X)),
    "inference_mode",
)
case(
    "explorer set_target inside inference_mode",
    cnn,
    lambda m: (s := _explore(m, X, Y), _in(torch.inference_mode, lambda _: s.set_target("predicted"))(m)),
    "inference_mode",
)
case(
    "explorer uninitialised LazyLinear",
    lazy,
    _explore,
    check=lambda m, s: None if s.layers else pytest.fail(),
    initialises=True,
)
case(
    "explorer model that detaches",
    Detaches,
    _explore,
    check=lambda m, s: None if "cuts the graph" in s.describe()["gradient"] else pytest.fail(s.describe()["gradient"]),
)
case(
    "explorer frozen model, integer tokens",
    lambda: tiny().requires_grad_(False),
    lambda m: _explore(m, TOKENS),
    check=lambda m, s: None if "every parameter is frozen" in s.describe()["gradient"] else pytest.fail(),
)


def _closed_explorer(model: nn.Module) -> Any:
    widget = LayerExplorer(model, X)
    widget.close()
    widget.sample.value = 3  # a closed widget ignores its controls
    return widget.maps_out.outputs, widget.grad_out.outputs, repr(widget)


case("explorer closed widget keeps no picture", cnn, _closed_explorer, check=_is(((), (), "LayerExplorer(closed)")))

# -- capture: meta device, grad modes, lazy models, reading the results (C09)


def _captured(model: nn.Module, inputs: Any = X, context: Callable[[], Any] | None = None, **kwargs: Any) -> Any:
    """A capture of one pass; the backward is taken with respect to a copy of the input (no ``.grad`` written)."""
    x = inputs.clone().requires_grad_(True) if inputs.is_floating_point() else inputs
    with hookviz.capture(model, **kwargs) as cap:
        if context is None:
            torch.autograd.grad(model(x).sum(), x)
        else:
            with context():
                model(x)
    return cap


case("capture meta model", meta_cnn, lambda m: hookviz.capture(m), "'features.0.weight' of DigitsCNN is on the meta")
case(
    "capture meta input, no weights",
    lambda: nn.Sequential(nn.ReLU()),
    lambda m: _captured(m, torch.randn(2, 3, device="meta")),
    "on the meta device.*pass real inputs",
)
case(
    "capture inside inference_mode, then gradient()",
    frozen_cnn,
    lambda m: _captured(m, context=torch.inference_mode).gradient("features.0"),
    "inference mode",
)
case(
    "capture inside no_grad, then gradient()",
    frozen_cnn,
    lambda m: _captured(m, context=torch.no_grad).gradient("features.0"),
    "torch.no_grad",
)
case(
    "capture uninitialised LazyLinear",
    lazy,
    (lambda m: _captured(m).gradient("1").shape),
    check=_is((6, 16)),
    initialises=True,
)
case("capture grads='yes'", frozen_cnn, lambda m: hookviz.capture(m, grads="yes"), "grads must be True or False")
case("capture copy=None", frozen_cnn, lambda m: hookviz.capture(m, copy=None), "copy must be True or False")
case(
    "capture gradient() of a layer typo",
    frozen_cnn,
    lambda m: _captured(m).gradient("feature.0"),
    "layer 'feature.0' was not captured.*closest: 'features.0'",
)
case(
    "capture grads=False, then gradient() of a layer",
    frozen_cnn,
    (lambda m: _captured(m, grads=False).gradient("features.0")),
    "grads=False",
)
case("capture activation(3)", frozen_cnn, (lambda m: _captured(m).activation(3)), "named by a string")
case("capture activation(call=5)", frozen_cnn, (lambda m: _captured(m).activation("features.0", 5)), "no call 5")
case(
    "capture activation(call='1')",
    frozen_cnn,
    (lambda m: _captured(m).activation("features.0", "1")),
    "call must be a whole number",
)
case(
    "capture gradient(call=1.0)",
    frozen_cnn,
    (lambda m: _captured(m).gradient("features.0", 1.0)),
    "call must be a whole number",
)
case(
    "capture activation(call=np.int64(0))",
    frozen_cnn,
    (lambda m: tuple(_captured(m).activation("features.0", np.int64(0)).shape)),
    check=_is((6, 8, 8, 8)),
)
case(
    "register kind 'forwrd'",
    frozen_cnn,
    lambda m: hookviz.register(m, "forwrd", lambda *a: None, key="k"),
    "closest: 'forward'",
)
case("register hook=3", frozen_cnn, lambda m: hookviz.register(m, "forward", 3, key="k"), "the hook must be a function")
case(
    "register key=None",
    frozen_cnn,
    lambda m: hookviz.register(m, "forward", lambda *a: None, key=None),
    "key must be a string",
)
case("HookGroup(3, key='k')", frozen_cnn, lambda m: hookviz.HookGroup(3, key="k"), "a key is held on an nn.Module")
case("remove_key of an unknown key", frozen_cnn, lambda m: hookviz.remove_key(m, "never-registered"), check=_is(0))
case(
    "capture started twice keeps one set of hooks",
    frozen_cnn,
    lambda m: (c := hookviz.capture(m, ["features.0"]), c.start(), c.start(), len(hookviz.list_hooks(m)), c.stop())[3],
    check=_is(1),
)


# --------------------------------------------------------------------------- the test


def _lazy_snapshot(model: nn.Module) -> Snapshot:
    """:func:`snapshot` of a model with lazy parameters: those have no values yet and are left out."""
    lazy = nn.parameter.UninitializedTensorMixin
    return Snapshot(
        {k: v.detach().clone() for k, v in model.state_dict(keep_vars=True).items() if not isinstance(v, lazy)},
        [m.training for m in model.modules()],
        [p.requires_grad for p in model.parameters()],
        [None if p.grad is None else p.grad.clone() for p in model.parameters()],
    )


def _assert_unchanged_but_initialised(model: nn.Module, before: Snapshot) -> None:
    """As :func:`assert_unchanged`, for a lazy model: its lazy weights may be initialised now, nothing else changed."""
    after = _lazy_snapshot(model)
    assert after.modes == before.modes and after.requires_grad == before.requires_grad
    assert all(g is None for g in after.grads) and all(g is None for g in before.grads), ".grad changed"
    for key, value in before.state.items():
        assert torch.equal(after.state[key], value), f"{key} changed"


def _hooks(model: nn.Module, initialises: bool) -> list[tuple[str, str, str]]:
    """The hooks on ``model``; for a lazy model without PyTorch's own lazy hooks (its first pass removes them)."""
    hooks = [(r.where, r.kind, r.hook) for r in hookviz.list_hooks(model)]
    lazy = ("_lazy_load_hook", "_infer_parameters")
    return [h for h in hooks if not (initialises and any(name in h[2] for name in lazy))]


def _open_widgets() -> set[int]:
    return set(_instances)


@pytest.mark.parametrize("item", CASES, ids=[c.name for c in CASES])
def test_bad_input_or_unusual_model(item: Case) -> None:
    """One input: a hookviz error or a right result; the model as found; no hook, thread or widget left open."""
    model = item.make()
    before = _lazy_snapshot(model) if item.initialises else snapshot(model)
    hooks_before = _hooks(model, item.initialises)
    widgets_before = _open_widgets()
    grad_mode = torch.is_grad_enabled()
    result: Any = None
    try:
        if item.error is not None:
            with pytest.raises(Exception) as raised:  # noqa: PT011 - the message is checked below
                result = item.action(model)
            assert_hookviz_error(raised.value, item.error)
            text = str(raised.value)
            assert "nfreeze" not in text or "frozen" in item.error, f"blames a frozen model: {text}"
        else:
            result = item.action(model)
            assert item.check is not None
            item.check(model, result)
    finally:
        if hasattr(result, "close"):
            result.close()
    assert torch.is_grad_enabled() == grad_mode and not torch.is_inference_mode_enabled()
    if item.initialises:
        _assert_unchanged_but_initialised(model, before)
    else:
        assert_unchanged(model, before)
    assert _hooks(model, item.initialises) == hooks_before
    assert not hookviz_threads()
    assert _open_widgets() <= widgets_before, f"{len(_open_widgets() - widgets_before)} ipywidgets left open"


def test_the_table_covers_at_least_100_inputs() -> None:
    assert len(CASES) >= 100, len(CASES)
    assert len({c.name for c in CASES}) == len(CASES), "case names must be unique"
    groups = {name: sum(c.name.startswith(name) for c in CASES) for name in ("atlas", "timeline", "explorer")}
    assert min(groups.values()) >= 8, groups
    assert sum(c.name.startswith(("capture", "register", "HookGroup", "remove_key")) for c in CASES) >= 15
