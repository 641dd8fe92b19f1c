"""Each rule of the hook doctor on its own: the registry, and for every rule a model that shows its pitfall.

The doctor is a list of small rules (``hookviz.diagnose.RULES``), one per pitfall, each with an id (the
kind of its findings), a severity, a link, a fix and a summary. For each rule, :data:`POSITIVE` plants
its pitfall in the smallest model that shows it; :data:`NEGATIVE` gives the correct code next to it,
which the rule must leave alone. A new rule without a case here fails
:func:`test_every_rule_has_its_own_case`.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.modules.module as module_globals
from torch import nn
from torch.utils.checkpoint import checkpoint

import hookviz
from hookviz.diagnose import DETECTED, RULES, SEVERITIES, Rule, diagnose
from hookviz.diagnose.rules import by_id, rule

ROOT = Path(__file__).resolve().parents[1]
Case = Callable[[list[Any]], tuple[nn.Module, Any, dict[str, Any]]]


def mlp() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 1))


X = torch.randn(3, 2)


# ------------------------------------------------------------------------------------------ registry


def test_rule_ids_are_unique_and_described() -> None:
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids)) and len(ids) >= 28
    for item in RULES:
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", item.id), item.id
        assert item.severity in SEVERITIES, item
        assert item.fix and item.summary and item.link.startswith("notebooks/"), item


def test_every_link_points_at_an_existing_anchor() -> None:
    from hookviz.diagnose import report

    links = {r.link for r in RULES} | {v for k, v in vars(report).items() if k.isupper() and "#" in str(v)}
    links |= {report.clinic(n) for n in DETECTED}
    for link in links:
        path, anchor = link.split("#")
        assert f'<a id=\\"{anchor}\\"' in (ROOT / path).read_text(), link


def test_a_rule_id_is_registered_once() -> None:
    with pytest.raises(ValueError, match="two rules"):

        @rule
        class Again(Rule):  # pragma: no cover - refused at registration
            id = "late-binding"
            severity = "warning"
            link = "notebooks/10_faq.ipynb#faq-not-firing"
            fix = "-"
            summary = "-"


def test_adding_a_pitfall_is_adding_a_rule() -> None:
    """A rule written outside the package joins every diagnosis while it is registered."""

    class HookOnRoot(Rule):
        id = "hook-on-root"
        severity = "info"
        link = "notebooks/10_faq.ipynb#faq-not-firing"
        fix = "hook the layer you mean"
        summary = "a forward hook on the model itself"

        def static(self, run: Any) -> None:
            for site in run.sites:
                if site.where == "<root>" and site.role == "forward":
                    self.report(run, "<root>", "a forward hook on the whole model sees only its final output.")

    model = mlp()
    handle = model.register_forward_hook(lambda m, a, o: None)
    RULES.append(HookOnRoot())
    try:
        assert diagnose(model, X).kinds() == {"hook-on-root": 1}
    finally:
        RULES.pop()
        handle.remove()
    assert list(diagnose(model, X)) == []


# ------------------------------------------------------------------------------------- one case per rule


class Boom(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x * 1

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("this backward always fails")


class Checkpointed(nn.Module):
    def __init__(self, reentrant: bool = False) -> None:
        super().__init__()
        self.block = nn.Sequential(nn.Linear(2, 2), nn.Tanh())
        self.head = nn.Linear(2, 1)
        self.reentrant = reentrant

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(checkpoint(self.block, x, use_reentrant=self.reentrant))


class Twice(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc, self.act, self.out = nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.act(self.fc(self.act(x))))


class ReturnsNone(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def forward(self, x: torch.Tensor) -> None:
        self.fc(x)  # computes, returns nothing


class Pair(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(2, 2)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.inner(x)
        return y, y.softmax(-1)


class UsesPair(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pair = Pair()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self.pair(x)
        return a * b


class InplaceAfter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc, self.relu = nn.Linear(2, 2), nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.fc(x)).sum(-1)


def _legacy(model: nn.Module) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model[2].register_backward_hook(lambda m, gi, go: None)


def _late(h: list[Any]) -> tuple[nn.Module, Any, dict[str, Any]]:
    model, seen = mlp(), {}
    for i, layer in enumerate(model):
        h.append(layer.register_forward_hook(lambda m, a, o: seen.__setitem__(i, o.shape)))  # noqa: B023
    return model, X, {}


def _late_ok(h: list[Any]) -> tuple[nn.Module, Any, dict[str, Any]]:
    model, seen = mlp(), {}
    for i, layer in enumerate(model):
        h.append(layer.register_forward_hook(lambda m, a, o, i=i: seen.__setitem__(i, o.shape)))
    return model, X, {}


def _forgot(h: list[Any]) -> tuple[nn.Module, Any, dict[str, Any]]:
    model = mlp()

    def clip(module: nn.Module, grad_input: Any, grad_output: Any) -> None:
        grad_input = tuple(g.clamp(-1, 1) for g in grad_input if g is not None)  # noqa: F841

    h.append(model[2].register_full_backward_hook(clip))
    return model, X, {}


def _forgot_ok(h: list[Any]) -> tuple[nn.Module, Any, dict[str, Any]]:
    model, log = mlp(), []

    def clip(module: nn.Module, grad_input: Any, grad_output: Any) -> tuple[Any, ...]:
        grad_input = tuple(None if g is None else g.clamp(-1, 1) for g in grad_input)
        return grad_input

    def watch(module: nn.Module, grad_input: Any, grad_output: Any) -> None:
        norm = grad_output[0].norm().item()
        log.append(norm)

    h.append(model[2].register_full_backward_hook(clip))
    h.append(model[0].register_full_backward_hook(watch))
    return model, X, {}


def _grad_in_place(h: list[Any]) -> tuple[nn.Module, Any, dict[str, Any]]:
    model = mlp()

    def halve(grad: torch.Tensor) -> None:
        grad.mul_(0.5)

    h.append(model[0].weight.register_hook(halve))
    return model, X, {}


def _grad_new(h: list[Any]) -> tuple[nn.Module, Any, dict[str, Any]]:
    model = mlp()
    h.append(model[0].weight.register_hook(lambda g: g * 0.5))
    h.append(model[2].bias.register_post_accumulate_grad_hook(_halve_grad))
    return model, X, {}


def _halve_grad(param: torch.Tensor) -> None:
    param.grad.mul_(0.5)


def _simple(attach: Callable[[nn.Module], Any], make: Callable[[], nn.Module] = mlp, inputs: Any = X,
            **options: Any) -> Case:  # fmt: skip
    def build(h: list[Any]) -> tuple[nn.Module, Any, dict[str, Any]]:
        model = make()
        handle = attach(model)
        h.extend(handle if isinstance(handle, list) else [handle] if handle is not None else [])
        return model, inputs, dict(options)

    return build


def _frozen() -> nn.Module:
    model = mlp()
    model[0].requires_grad_(False)
    return model


class Stack(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 1)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def _scale_input(module: nn.Module, args: Any) -> None:
    args[0].mul_(2)


def _scale_output(module: nn.Module, args: Any, output: torch.Tensor) -> None:
    output.mul_(2)


def _noop(module: nn.Module, args: Any, output: Any) -> None:
    return None


def _noop3(module: nn.Module, grad_input: Any, grad_output: Any) -> None:
    return None


TOKENS = hookviz.make_tiny_batch(2, seed=0)[0]
SAVED: list[Any] = []
SAVED_BY_NAME: dict[str, Any] = {}


def _data_edit(module: nn.Module, args: Any, output: torch.Tensor) -> None:
    output.data.mul_(2)


def _freeze_first(model: nn.Module) -> Callable[..., None]:
    def freeze(module: nn.Module, args: Any, output: Any) -> None:
        model[0].weight.requires_grad_(False)

    return freeze


def _fixed_batch(module: nn.Module, args: Any, output: torch.Tensor) -> torch.Tensor:
    return output.view(3, -1) * 1.0  # the batch size written as a number


def _item(module: nn.Module, args: Any, output: torch.Tensor) -> None:
    SAVED.append(output.mean().item())


def _view_hook(model: nn.Module) -> None:
    view = model[0].weight[0]
    view.register_hook(lambda g: None)
    SAVED.append(view)


class RegistersInForward(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.fc.weight.register_hook(lambda g: None)  # a new hook on every call
        return self.fc(x)


class Finite(nn.Module):
    """Refuses activations that overflowed: three hooks that each scale by 1e20 break it, any two of them too, one
    alone not (leaving out any single hook does not help)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.c(self.b(self.a(x)))
        if not torch.isfinite(h).all():
            raise ValueError("the activations overflowed")
        return h


def _clip_weights(module: nn.Module, args: Any) -> None:
    module.weight.data.clamp_(-0.01, 0.01)  # a weight constraint written as a pre-hook



POSITIVE: dict[str, Case] = {
    "late-binding": _late,
    "duplicate-hook": _simple(lambda m: [m[0].register_forward_hook(_noop) for _ in range(2)]),
    "legacy-backward-hook": _simple(_legacy),
    "fast-path-hides-modules": _simple(
        lambda m: module_globals.register_module_forward_hook(_noop), hookviz.load_tiny_transformer, TOKENS
    ),
    "nested-tensor-outputs": _simple(
        lambda m: m.encoder.layers[1].register_forward_hook(_noop), hookviz.load_tiny_transformer, TOKENS
    ),
    "scaled-gradients": _simple(
        lambda m: m[0].weight.register_hook(lambda g: None), scaler=torch.amp.GradScaler("cpu")
    ),
    "grad-read-too-early": _simple(lambda m: m[0].register_full_backward_hook(lambda mod, gi, go: mod.weight.grad)),
    "output-edited-in-place": _simple(lambda m: m[0].register_forward_hook(_scale_output)),
    "input-edited-in-place": _simple(lambda m: m[2].register_forward_pre_hook(_scale_input)),
    "gradient-edited-in-place": _grad_in_place,
    "hook-returns-handle": _simple(lambda m: m[0].register_forward_hook(lambda mod, a, o: o.register_hook(print))),
    "hook-changes-structure": _simple(lambda m: m.pair.register_forward_hook(lambda mod, a, o: o[0] * 2), UsesPair),
    "hook-cuts-graph": _simple(lambda m: m[0].register_forward_hook(lambda mod, a, o: o.detach())),
    "bad-gradient-return": _simple(lambda m: m[0].weight.register_hook(lambda g: g.sum())),
    "hook-edits-parameter": _simple(lambda m: m[0].weight.register_post_accumulate_grad_hook(lambda p: p.mul_(0.5))),
    "post-accumulate-returns": _simple(
        lambda m: m[0].weight.register_post_accumulate_grad_hook(lambda p: p.grad.mul_(0.5))
    ),
    "return-forgotten": _forgot,
    "hook-raises": _simple(lambda m: m[0].register_forward_hook(lambda mod, a, o: 1 / 0)),
    "inplace-after-backward-hook": _simple(lambda m: m.fc.register_full_backward_hook(_noop3), InplaceAfter),
    "backward-fails": _simple(lambda m: m[1].register_forward_hook(lambda mod, a, o: Boom.apply(o))),
    "fires-in-backward": _simple(
        lambda m: m.block[0].register_forward_hook(_noop), Checkpointed, torch.randn(2, 2, requires_grad=True)
    ),
    "module-called-twice": _simple(
        lambda m: m.act.register_forward_hook(lambda mod, a, o: SAVED_BY_NAME.__setitem__("act", o.detach())), Twice
    ),
    "hook-never-fires": _simple(lambda m: m.layers.register_forward_hook(_noop), Stack),
    "no-gradient-reaches": _simple(lambda m: m[0].register_full_backward_hook(_noop3), _frozen),
    "no-backward-pass": _simple(lambda m: m.fc.register_full_backward_hook(_noop3), ReturnsNone),
    "loss-fn-cuts-graph": _simple(
        lambda m: m[0].register_full_backward_hook(_noop3), loss_fn=lambda out: out.detach().sum()
    ),
    "stores-parameter-view": _simple(lambda m: m[0].register_forward_hook(lambda mod, a, o: SAVED.append(mod.weight))),
    "stored-graph": _simple(lambda m: m[0].register_forward_hook(lambda mod, a, o: SAVED.append(o))),
    "stored-output-edited": _simple(
        lambda m: m.fc.register_forward_hook(lambda mod, a, o: SAVED.append(o.detach())), InplaceAfter
    ),
    "hook-returns-input": _simple(lambda m: m[0].register_forward_hook(lambda mod, a, o: a[0])),
    "output-replaced": _simple(lambda m: m[2].register_forward_hook(lambda mod, a, o: o.double())),
    "bad-backward-return": _simple(lambda m: m[2].register_full_backward_hook(lambda mod, gi, go: gi[0])),
    "pre-hook-return": _simple(lambda m: m[2].register_forward_pre_hook(lambda mod, a, kw: kw, with_kwargs=True)),
    "return-breaks-run": _simple(lambda m: m[0].register_forward_hook(lambda mod, a, o: [o])),
    "edit-through-data": _simple(lambda m: m[0].register_forward_hook(_data_edit)),
    "hook-raises-in-context": _simple(lambda m: m[0].register_forward_hook(_fixed_batch)),
    "device-sync": _simple(lambda m: m[0].register_forward_hook(_item)),
    "hook-changes-model": _simple(lambda m: m[2].register_forward_hook(_freeze_first(m))),
    "registers-hooks-every-call": _simple(lambda m: None, RegistersInForward),
    "global-hook": _simple(lambda m: module_globals.register_module_forward_hook(_noop)),
    "hook-edits-weights": _simple(lambda m: m[0].register_forward_pre_hook(_clip_weights)),
    "hook-on-parameter-view": _simple(_view_hook),
    "hooks-break-forward": _simple(
        lambda m: [layer.register_forward_hook(lambda mod, a, o: o * 1e20) for layer in (m.a, m.b, m.c)], Finite
    ),
}

NEGATIVE: dict[str, Case] = {
    "late-binding": _late_ok,
    "duplicate-hook": _simple(lambda m: [m[0].register_forward_hook(_noop), m[2].register_forward_hook(_noop)]),
    "scaled-gradients": _simple(lambda m: m[0].weight.register_hook(lambda g: None), scaler=None),
    "output-edited-in-place": _simple(lambda m: m[0].register_forward_hook(lambda mod, a, o: o * 2)),
    "input-edited-in-place": _simple(lambda m: m[2].register_forward_pre_hook(lambda mod, a: (a[0] * 2,))),
    "gradient-edited-in-place": _grad_new,
    "hook-changes-structure": _simple(
        lambda m: m.pair.register_forward_hook(lambda mod, a, o: (o[0] * 2, *o[1:])), UsesPair
    ),
    "return-forgotten": _forgot_ok,
    "module-called-twice": _simple(lambda m: m.fc.register_forward_hook(_noop), Twice),
    "no-backward-pass": _simple(lambda m: m[0].register_full_backward_hook(_noop3)),
    "stored-graph": _simple(lambda m: m[0].register_forward_hook(lambda mod, a, o: SAVED.append(o.detach()))),
    "stored-output-edited": _simple(
        lambda m: m.fc.register_forward_hook(lambda mod, a, o: SAVED.append(o.detach().clone())), InplaceAfter
    ),
    "hook-returns-input": _simple(lambda m: m[0].register_forward_hook(lambda mod, a, o: o * 2)),
    "edit-through-data": _simple(lambda m: m[0].register_forward_hook(lambda mod, a, o: o * 2)),
    "hook-raises-in-context": _simple(lambda m: m[0].register_forward_hook(lambda mod, a, o: o.view(o.shape[0], -1))),
    "device-sync": _simple(lambda m: m[0].register_forward_hook(lambda mod, a, o: SAVED.append(o.detach().cpu()))),
    "registers-hooks-every-call": _simple(lambda m: m[0].weight.register_hook(lambda g: None)),
    "hook-on-parameter-view": _simple(lambda m: m[0].weight.register_hook(lambda g: None)),
}


def test_every_rule_has_its_own_case() -> None:
    assert set(POSITIVE) == {r.id for r in RULES}, set(POSITIVE) ^ {r.id for r in RULES}
    assert set(NEGATIVE) <= set(POSITIVE)


def _diagnose(build: Case) -> Any:
    handles: list[Any] = []
    try:
        model, inputs, options = build(handles)
        return diagnose(model, inputs, **options)
    finally:
        for handle in handles:
            handle.remove()
        SAVED.clear()
        SAVED_BY_NAME.clear()


@pytest.mark.parametrize("rule_id", list(POSITIVE))
def test_the_rule_finds_its_pitfall(rule_id: str) -> None:
    diagnosis = _diagnose(POSITIVE[rule_id])
    hits = [f for f in diagnosis if f.kind == rule_id]
    assert hits, f"{rule_id} not reported:\n{diagnosis}"
    item = by_id(rule_id)
    assert all(f.fix and f.link and f.message for f in hits)
    # an in-place gradient edit that works is a note; a device sync on the CPU model is a note (a warning on a GPU)
    assert any(f.severity == item.severity for f in hits) or rule_id in ("gradient-edited-in-place", "device-sync")


@pytest.mark.parametrize("rule_id", list(NEGATIVE))
def test_the_rule_leaves_the_correct_code_alone(rule_id: str) -> None:
    diagnosis = _diagnose(NEGATIVE[rule_id])
    assert rule_id not in diagnosis.kinds(), f"{rule_id} reported on correct code:\n{diagnosis}"


def test_a_reused_module_without_hooks_is_not_a_finding() -> None:
    assert list(diagnose(Twice(), X)) == []


def test_in_place_gradient_edit_that_fails_is_an_error_not_a_generic_raise() -> None:
    model = mlp()

    def double(module: nn.Module, grad_input: Any, grad_output: Any) -> None:
        grad_output[0].mul_(2)  # sum()'s gradient is an expanded view

    handle = model[2].register_full_backward_hook(double)
    try:
        diagnosis = diagnose(model, X)
    finally:
        handle.remove()
    assert [(f.kind, f.severity) for f in diagnosis] == [("gradient-edited-in-place", "error")], diagnosis


def test_a_forward_returning_none_still_gets_its_forward_checks() -> None:
    class Keeps(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc, self.unused = nn.Linear(2, 2), nn.Linear(2, 2)

        def forward(self, x: torch.Tensor) -> None:
            self.result = self.fc(self.fc(x))

    model = Keeps()
    handles = [model.fc.register_forward_hook(_noop), model.unused.register_forward_hook(_noop)]
    try:
        diagnosis = diagnose(model, X)
    finally:
        for handle in handles:
            handle.remove()
    assert diagnosis.kinds() == {"module-called-twice": 1, "hook-never-fires": 1, "no-backward-pass": 1}
    assert "returned None" in str(diagnosis)


def test_the_loss_fn_is_blamed_not_the_model() -> None:
    model = hookviz.DigitsCNN()
    handle = model.classifier[1].register_full_backward_hook(_noop3)
    try:
        diagnosis = diagnose(model, torch.randn(4, 1, 8, 8), loss_fn=lambda out: out.argmax().float())
    finally:
        handle.remove()
    assert diagnosis.kinds() == {"loss-fn-cuts-graph": 1}
    assert "your loss_fn cut the graph, not the model" in diagnosis[0].message
    assert "classifier.1" in diagnosis[0].message
