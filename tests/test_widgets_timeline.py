"""The hook timeline: every kind of hook fires, in PyTorch's order, and none is left behind."""

import pytest
import torch
from torch import nn

import hookviz
from hookviz.widgets import HOOK_KINDS, HookTimeline, TimelineState


def test_every_kind_fires_in_order() -> None:
    state = TimelineState()
    kinds = {e.kind for e in state.events}
    assert kinds == set(HOOK_KINDS)
    order = [(e.kind, e.where) for e in state.events]
    # forward: pre-hook before forward hook, children inside the root
    assert order.index(("forward_pre", "<root>")) < order.index(("forward_pre", "0"))
    assert order.index(("forward", "0")) < order.index(("forward", "<root>"))
    assert order.index(("global_forward", "0")) < order.index(("forward", "0"))
    # backward: tensor hooks on loss and output first, the input's tensor hook last
    assert state.events[16].kind == "tensor" and state.events[-1].where == "input x"
    assert order.index(("backward_pre", "2")) < order.index(("backward_pre", "0"))
    assert order.index(("post_accumulate_grad", "param:2.weight")) < order.index(("backward", "2"))
    assert {e.phase for e in state.events} == {"forward", "backward"}
    assert not hookviz.list_hooks(state.model)


def test_filters_and_widget() -> None:
    tl = HookTimeline()
    total = len(tl.state.events)
    tl.phase.value = "backward"
    assert all(e.phase == "backward" for e in tl.shown())
    tl.kinds.value = ("post_accumulate_grad",)
    assert len(tl.shown()) == 4 and tl.count.value == f"4 of {total} hook calls"
    tl.where.value = "0"
    assert tl.shown() == []
    html_item = tl.table_out.outputs[0]
    assert "<table" in html_item["data"]["text/html"]
    with pytest.raises(ValueError, match="unknown hook kind"):
        tl.state.filter(["sideways"])
    assert repr(tl) == f"HookTimeline(shown=0, events={total})"


def test_rerun_and_custom_model_leave_nothing() -> None:
    model = nn.Sequential(nn.Linear(2, 2))
    before = len(torch.nn.modules.module._global_forward_hooks)
    for _ in range(2):
        state = TimelineState(model, torch.ones(1, 2))
    assert len(torch.nn.modules.module._global_forward_hooks) == before
    assert not hookviz.list_hooks(model) and not hookviz.registered_keys(model)
    assert state.table().splitlines()[0].split() == ["#", "phase", "kind", "where"]


def test_hooks_removed_when_forward_raises() -> None:
    class Boom(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise RuntimeError("boom")

    model = nn.Sequential(nn.Linear(3, 3), Boom())
    with pytest.raises(RuntimeError, match="boom"):
        TimelineState(model)
    assert not hookviz.list_hooks(model)
