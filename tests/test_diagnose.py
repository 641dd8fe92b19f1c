"""The hook doctor: every clinic mistake that running the model can reveal is planted and found.

Each ``test_mistake_NN`` builds a fresh model, plants mistake NN of notebook 11 and asserts that
``hookviz.diagnose`` reports it at the right module with the link to the clinic's section. The course's
models with nothing planted give no findings, a diagnosis leaves the model exactly as it found it, and a
diagnosis that cannot run raises a :class:`~hookviz.diagnose.DiagnosisError` that says why.
"""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.modules.module as module_globals
from torch import nn
from torch.utils.checkpoint import checkpoint

import hookviz
from hookviz.diagnose import DETECTED, NOT_DETECTABLE, RULES, DiagnosisError, Finding, clinic, diagnose

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def handles() -> Iterator[list[Any]]:
    """Handles of the hooks a test plants; removed when the test ends."""
    planted: list[Any] = []
    yield planted
    for handle in planted:
        handle.remove()


def found(diagnosis: list[Finding], mistake: int, where: str) -> Finding:
    """The finding that links to ``mistake`` and names ``where``; fails with the whole report otherwise."""
    hits = [f for f in diagnosis if f.link == clinic(mistake) and where in f.where.split(", ")]
    assert hits, f"mistake {mistake} at {where!r} not reported:\n{diagnosis}"
    return hits[0]


def mlp() -> nn.Sequential:
    return nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))


# ----------------------------------------------------------------------------------- the clinic list


def test_every_clinic_mistake_is_either_detected_or_explained() -> None:
    notebook = (ROOT / "notebooks" / "11_mistakes_clinic.ipynb").read_text()
    numbers = {int(n) for n in re.findall(r'<a id=\\"mistake-(\d+)\\"', notebook)}
    assert numbers == set(range(1, 37))
    assert set(DETECTED) | set(NOT_DETECTABLE) == numbers
    assert not set(DETECTED) & set(NOT_DETECTABLE)
    assert all(len(reason) > 40 for reason in NOT_DETECTABLE.values())
    tested = {int(name.split("_")[-1]) for name in globals() if re.fullmatch(r"test_mistake_\d\d", name)}
    assert tested == set(DETECTED), f"detected without a test: {set(DETECTED) - tested}"


# ------------------------------------------------------------------------------------ clean models


class ResidualBlock(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(channels)
        self.relu2 = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.bn2(self.conv2(self.relu1(self.bn1(self.conv1(x)))))
        return self.relu2(out + x)


class SmallResNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(1, 8, 3, padding=1)
        self.blocks = nn.Sequential(ResidualBlock(8), ResidualBlock(8))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.pool(self.blocks(self.stem(x))).flatten(1))


class LSTMTagger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 6)
        self.lstm = nn.LSTM(6, 8, batch_first=True)
        self.head = nn.Linear(8, 3)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.lstm(self.embed(tokens))
        return self.head(hidden)


def clean_models() -> list[tuple[str, nn.Module, Any]]:
    tokens, _ = hookviz.make_tiny_batch(4, seed=0)
    return [
        ("DigitsCNN", hookviz.DigitsCNN(), torch.randn(4, 1, 8, 8)),
        ("pretrained CNN", hookviz.load_pretrained_cnn(), torch.randn(4, 1, 8, 8)),
        ("tiny transformer", hookviz.load_tiny_transformer(), tokens),
        ("ResNet-style", SmallResNet(), torch.randn(2, 1, 8, 8)),
        ("LSTM", LSTMTagger(), torch.randint(0, 10, (2, 5))),
        ("bare LSTM", nn.LSTM(4, 8), torch.randn(5, 2, 4)),
    ]


@pytest.mark.parametrize("name, model, inputs", clean_models(), ids=[m[0] for m in clean_models()])
def test_clean_models_give_no_findings(name: str, model: nn.Module, inputs: Any) -> None:
    diagnosis = diagnose(model, inputs)
    assert list(diagnosis) == [], f"{name}:\n{diagnosis}"
    assert str(diagnosis) == "no findings"
    assert diagnosis._repr_html_() == "<p>no findings</p>"


def test_correct_hooks_give_no_findings(handles: list[Any]) -> None:
    """The fixed version of the clinic's hooks (factory closures, detached stores, post-accumulate hooks)."""
    model = hookviz.DigitsCNN()
    acts: dict[str, torch.Tensor] = {}
    norms: dict[str, float] = {}

    def recorder(name: str) -> Any:
        def record(module: nn.Module, args: Any, output: torch.Tensor) -> None:
            acts[name] = output.detach()

        return record

    for name, module in model.named_modules():
        if isinstance(module, nn.Conv2d):
            handles.append(module.register_forward_hook(recorder(name)))
            handles.append(
                module.weight.register_post_accumulate_grad_hook(
                    lambda p, name=name: norms.__setitem__(name, p.grad.norm())
                )
            )
    handles.append(model.classifier[1].register_full_backward_hook(lambda m, gi, go: None))
    assert list(diagnose(model, torch.randn(4, 1, 8, 8))) == []
    assert sorted(acts) == ["features.0", "features.4"] and sorted(norms) == ["features.0", "features.4"]


# --------------------------------------------------------------------------- the model is left as found


def _state(model: nn.Module) -> dict[str, Any]:
    hook_dicts = (
        "_forward_pre_hooks",
        "_forward_hooks",
        "_backward_pre_hooks",
        "_backward_hooks",
        "_forward_pre_hooks_with_kwargs",
        "_forward_hooks_with_kwargs",
        "_forward_hooks_always_called",
        "_state_dict_hooks",
        "_load_state_dict_pre_hooks",
    )
    return {
        "modes": [m.training for m in model.modules()],
        "flags": [m._is_full_backward_hook for m in model.modules()],
        "hooks": [[(k, v) for k, v in getattr(m, d).items()] for m in model.modules() for d in hook_dicts],
        "hook dict objects": [id(getattr(m, d)) for m in model.modules() for d in hook_dicts],
        "tensor hooks": [
            [list((getattr(p, d) or {}).items()) for d in ("_backward_hooks", "_post_accumulate_grad_hooks")]
            for p in model.parameters()
        ],
        "requires_grad": [p.requires_grad for p in model.parameters()],
        "grad objects": [p.grad for p in model.parameters()],
        "grad values": [None if p.grad is None else p.grad.clone() for p in model.parameters()],
        "params": [p.detach().clone() for p in model.parameters()],
        "buffers": [(n, b.clone()) for n, b in model.named_buffers()],
        "global hooks": list(module_globals._global_forward_hooks.items()),
    }


def _assert_same(before: dict[str, Any], after: dict[str, Any]) -> None:
    for key in ("modes", "flags", "hooks", "hook dict objects", "tensor hooks", "requires_grad", "global hooks"):
        assert before[key] == after[key], key
    assert all(a is b for a, b in zip(before["grad objects"], after["grad objects"], strict=True))
    for a, b in zip(before["grad values"], after["grad values"], strict=True):
        assert (a is None and b is None) or torch.equal(a, b)
    assert all(torch.equal(a, b) for a, b in zip(before["params"], after["params"], strict=True))
    assert all(
        na == nb and torch.equal(a, b) for (na, a), (nb, b) in zip(before["buffers"], after["buffers"], strict=True)
    )


def test_the_model_is_left_exactly_as_found(handles: list[Any]) -> None:
    """Modes, .grad (the same objects and values), requires_grad, parameters, buffers, hook dicts, RNG."""
    model = hookviz.DigitsCNN().train()
    model.features[1].eval()  # a mixed mode must survive too
    model.features[0].weight.requires_grad_(False)
    model(torch.randn(4, 1, 8, 8)).sum().backward()  # .grad set on the trainable parameters
    handles.append(model.features[4].register_forward_hook(lambda m, a, o: None, with_kwargs=False))
    handles.append(model.features[4].register_forward_pre_hook(lambda m, a, k: None, with_kwargs=True))
    handles.append(model.features[6].register_forward_hook(lambda m, a, o: o.mul_(2)))  # edits in place
    handles.append(model.classifier[1].register_full_backward_hook(lambda m, gi, go: None))
    handles.append(model.classifier[1].weight.register_hook(lambda g: g * 0))
    handles.append(model.classifier[1].bias.register_post_accumulate_grad_hook(lambda p: p.mul_(0.5)))
    handles.append(model.features[5].register_forward_hook(lambda m, a, o: None, always_call=True))
    handles.append(module_globals.register_module_forward_hook(lambda m, a, o: None))
    before = _state(model)
    images = torch.randn(4, 1, 8, 8)
    rng = torch.get_rng_state()
    diagnosis = diagnose(model, images)
    assert diagnosis  # the planted pitfalls were seen ...
    _assert_same(before, _state(model))  # ... and nothing of the model changed
    assert torch.equal(rng, torch.get_rng_state())


def test_the_model_is_left_as_found_when_the_diagnosis_fails(handles: list[Any]) -> None:
    model = mlp().train()
    handles.append(model[0].register_forward_hook(lambda m, a, o: None))
    before = _state(model)
    with pytest.raises(DiagnosisError):
        diagnose(model, torch.randn(4, 5))
    _assert_same(before, _state(model))


def test_the_callers_inputs_get_no_gradient() -> None:
    x = torch.randn(4, 2, requires_grad=True)
    diagnose(mlp(), x)
    assert x.grad is None


# ------------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "model, inputs, needle",
    [
        ("not a model", torch.randn(2, 2), "nn.Module"),
        (None, torch.randn(2, 2), "nn.Module"),
        (nn.Linear(2, 1), None, "needs `inputs`"),
        (nn.Linear(2, 1), np.zeros((2, 2), dtype=np.float32), "torch.as_tensor"),
        (nn.Linear(2, 1), "x", "give a tensor"),
        (nn.Linear(2, 1), torch.randn(3, 5), "shape, dtype and device"),
        (nn.Linear(2, 1), torch.zeros(3, 2, dtype=torch.long), "shape, dtype and device"),
    ],
    ids=["str", "None", "no inputs", "numpy", "str inputs", "wrong shape", "wrong dtype"],
)
def test_a_diagnosis_that_cannot_run_says_why(model: Any, inputs: Any, needle: str) -> None:
    with pytest.raises(DiagnosisError, match=re.escape(needle)):
        diagnose(model, inputs)


def test_a_bad_loss_fn_is_named() -> None:
    with pytest.raises(DiagnosisError, match="loss_fn must return a scalar"):
        diagnose(nn.Linear(2, 1), torch.randn(3, 2), loss_fn=lambda out: out)
    with pytest.raises(DiagnosisError, match="loss_fn failed"):
        diagnose(nn.Linear(2, 1), torch.randn(3, 2), loss_fn=lambda out: out.nope)


def test_inputs_as_tuple_dict_and_kwargs() -> None:
    class TwoInputs(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(2, 1)

        def forward(self, x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
            return self.fc(x) * scale

    model = TwoInputs()
    assert list(diagnose(model, (torch.randn(3, 2), 2.0))) == []
    assert list(diagnose(model, {"x": torch.randn(3, 2)})) == []
    assert list(diagnose(model, torch.randn(3, 2), kwargs={"scale": 3.0})) == []


# ----------------------------------------------------------------------------------- the report


def test_the_report_is_a_list_a_text_table_and_html(handles: list[Any]) -> None:
    model = mlp()
    handles.append(model[2].register_forward_hook(lambda m, a, o: o.detach()))
    diagnosis = diagnose(model, torch.randn(4, 2))
    assert isinstance(diagnosis, list) and isinstance(diagnosis[0], Finding)
    finding = found(diagnosis, 11, "2")
    assert (finding.kind, finding.severity, finding.mistake) == ("hook-cuts-graph", "error", 11)
    text = str(diagnosis)
    assert text.splitlines()[0].split() == ["#", "severity", "kind", "where", "see"]
    assert "fix: " in text and clinic(11) in text
    page = diagnosis._repr_html_()
    assert '<a href="11_mistakes_clinic.ipynb#mistake-11">' in page and "<table>" in page
    assert diagnosis.mistakes() == [11] and diagnosis.kinds() == {"hook-cuts-graph": 1}
    assert list(diagnosis.at("2")) == [finding]


def test_every_link_points_at_an_existing_anchor(handles: list[Any]) -> None:
    report = sys.modules["hookviz.diagnose.report"]  # hookviz.diagnose is the function; the package lives here
    links = {value for name, value in vars(report).items() if name.isupper() and isinstance(value, str)}
    links = {link for link in links if link.startswith("notebooks/") and "#" in link}
    links |= {r.link for r in RULES} | {clinic(n) for n in DETECTED}
    assert len(links) > 20
    for link in links:
        path, anchor = link.split("#")
        assert f'<a id=\\"{anchor}\\"' in (ROOT / path).read_text(), link


# ------------------------------------------------------------------------- the clinic's mistakes


def test_mistake_01(handles: list[Any]) -> None:
    model, acts = mlp(), {}
    for name, layer in model.named_children():
        hook = lambda m, a, o: acts.__setitem__(name, tuple(o.shape))  # noqa: B023, E731 - the planted mistake
        handles.append(layer.register_forward_hook(hook))
    finding = found(diagnose(model, torch.randn(4, 2)), 1, "0")
    assert finding.where == "0, 1, 2" and "'2'" in finding.message


def test_mistake_01_not_reported_for_a_factory(handles: list[Any]) -> None:
    model, acts = mlp(), {}

    def recorder(name: str) -> Any:
        return lambda m, a, o: acts.__setitem__(name, tuple(o.shape))

    for name, layer in model.named_children():
        handles.append(layer.register_forward_hook(recorder(name)))
    assert list(diagnose(model, torch.randn(4, 2))) == []


def test_mistake_03(handles: list[Any]) -> None:
    model = mlp()
    handles.append(model[0].register_forward_hook(lambda module, output: None))
    assert "2 positional arguments" in found(diagnose(model, torch.randn(4, 2)), 3, "0").message


def test_mistake_04(handles: list[Any]) -> None:
    model = mlp()
    handles.append(model[2].register_forward_hook(lambda module, args, output: None, with_kwargs=True))
    found(diagnose(model, torch.randn(4, 2)), 4, "2")


def test_mistake_05(handles: list[Any]) -> None:
    model = mlp()
    handles.append(model[1].register_forward_hook(lambda module, inputs, output: inputs.shape))
    found(diagnose(model, torch.randn(4, 2)), 5, "1")


def test_mistake_06(handles: list[Any]) -> None:
    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.attn(input=x)

    model = Block()
    handles.append(model.attn.register_forward_pre_hook(lambda module, args: args[0].shape))
    found(diagnose(model, torch.randn(2, 4)), 6, "attn")


class TupleBlock(nn.Module):
    """Returns (hidden, weights) like a transformer layer."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.fc(x)
        return hidden, hidden.softmax(-1)


class UsesBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = TupleBlock()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden, weights = self.block(x)
        return hidden * weights


def test_mistake_07(handles: list[Any]) -> None:
    model = UsesBlock()
    handles.append(model.block.register_forward_hook(lambda module, args, output: output[0] * 2))
    found(diagnose(model, torch.randn(2, 4)), 7, "block")


def test_mistake_08(handles: list[Any]) -> None:
    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mha = nn.MultiheadAttention(4, 2, batch_first=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.mha(x, x, x, need_weights=False)[0]

    model = Attention()
    handles.append(model.mha.register_forward_hook(lambda module, args, output: output[1].shape))
    found(diagnose(model, torch.randn(1, 3, 4)), 8, "mha")


def test_mistake_10(handles: list[Any]) -> None:
    calls = 0  # noqa: F841 - the hook below thinks it updates this variable

    def count(module: nn.Module, args: Any, output: torch.Tensor) -> None:
        calls += 1  # noqa: F823, F841 - the planted mistake

    model = mlp()
    handles.append(model[2].register_forward_hook(count))
    found(diagnose(model, torch.randn(4, 2)), 10, "2")


def test_mistake_11(handles: list[Any]) -> None:
    model, stored = mlp(), []

    def save(module: nn.Module, args: Any, output: torch.Tensor) -> torch.Tensor:
        output = output.detach()
        stored.append(output)
        return output

    handles.append(model[0].register_forward_hook(save))
    diagnosis = diagnose(model, torch.randn(4, 2))
    found(diagnosis, 11, "0")
    assert not [f for f in diagnosis if f.kind == "stored-graph"]


def test_mistake_13(handles: list[Any]) -> None:
    model, calls = mlp(), []

    def log(module: nn.Module, args: Any, output: torch.Tensor) -> None:
        calls.append(1)

    for _step in range(3):  # registered inside the training loop
        handles.append(model[2].register_forward_hook(log))
        handles.append(model[0].weight.register_hook(lambda grad: grad * 2))
    diagnosis = diagnose(model, torch.randn(4, 2))
    found(diagnosis, 13, "2")
    found(diagnosis, 13, "param:0.weight")
    assert len(calls) == 3  # the learner's hook ran once per copy


def test_mistake_14(handles: list[Any]) -> None:
    model = mlp()
    model[0].requires_grad_(False)  # a frozen first layer, fine-tuning the rest
    handles.append(model[0].register_forward_hook(lambda m, a, output: output.register_hook(print) and None))
    found(diagnose(model, torch.randn(4, 2)), 14, "0")


def test_mistake_15(handles: list[Any]) -> None:
    model = mlp()

    def double_in_place(module: nn.Module, args: Any, output: torch.Tensor) -> None:
        output.mul_(2)

    handles.append(model[1].register_forward_hook(double_in_place))
    diagnosis = diagnose(model, torch.randn(4, 2))
    assert found(diagnosis, 15, "1").severity == "error"
    assert [f.where for f in diagnosis if f.link == clinic(15)] == ["1"]  # backward's own error is not repeated


def test_mistake_16(handles: list[Any]) -> None:
    class Reuses(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1, self.fc2, self.act = nn.Linear(2, 3), nn.Linear(3, 5), nn.ReLU()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.act(self.fc2(self.act(self.fc1(x))))

    model, acts = Reuses(), {}
    handles.append(model.act.register_forward_hook(lambda m, a, o: acts.__setitem__("act", o.detach())))
    finding = found(diagnose(model, torch.randn(4, 2)), 16, "act")
    assert finding.severity == "warning" and "2 times" in finding.message


def test_mistake_17(handles: list[Any]) -> None:
    class Stack(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for layer in self.layers:
                x = layer(x)
            return x

    model = Stack()
    handles.append(model.layers.register_forward_hook(lambda m, a, o: None))
    found(diagnose(model, torch.randn(4, 2)), 17, "layers")


def test_mistake_18(handles: list[Any]) -> None:
    model, seen = mlp(), []
    handles.append(model[0].register_full_backward_hook(lambda module, gi, go: seen.append(module.weight.grad)))
    found(diagnose(model, torch.randn(4, 2)), 18, "0")
    assert seen == [None]


def test_mistake_19(handles: list[Any]) -> None:
    model = mlp()
    weight = model[0].weight.detach().clone()

    def halve(grad: torch.Tensor) -> None:  # written like a tensor hook: it receives the parameter
        grad.mul_(0.5)

    handles.append(model[0].weight.register_post_accumulate_grad_hook(halve))
    found(diagnose(model, torch.randn(4, 2)), 19, "param:0.weight")
    assert torch.equal(model[0].weight, weight)  # the doctor put the weights back


def test_mistake_20(handles: list[Any]) -> None:
    model, history = mlp(), []
    handles.append(model[0].register_forward_hook(lambda module, a, o: history.append(module.weight.detach())))
    found(diagnose(model, torch.randn(4, 2)), 20, "0")


def test_mistake_21(handles: list[Any]) -> None:
    model = mlp()
    handles.append(model[2].weight.register_hook(lambda grad: grad.sum()))
    handles.append(model[0].bias.register_hook(lambda grad: grad.double()))
    diagnosis = diagnose(model, torch.randn(4, 2))
    found(diagnosis, 21, "param:2.weight")
    found(diagnosis, 21, "param:0.bias")


def test_mistake_22(handles: list[Any]) -> None:
    class Checkpointed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.block = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
            self.head = nn.Linear(4, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.head(checkpoint(self.block, x, use_reentrant=False))

    model = Checkpointed()
    handles.append(model.block[0].register_forward_hook(lambda m, a, o: None))
    handles.append(model.head.register_forward_hook(lambda m, a, o: None))
    diagnosis = diagnose(model, torch.randn(2, 4, requires_grad=True))
    assert "1 more during backward" in found(diagnosis, 22, "block.0").message
    assert not diagnosis.at("head")


def test_mistake_23(handles: list[Any]) -> None:
    model = mlp()

    def scale(module: nn.Module, grad_input: Any, grad_output: Any) -> Any:
        return tuple(g * 0.5 for g in grad_input)

    handles.append(model[0].register_full_backward_hook(scale))
    found(diagnose(model, torch.randn(4, 2)), 23, "0")


def test_mistake_24(handles: list[Any]) -> None:
    class Residual(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Linear(4, 4)
            self.fc = nn.Linear(4, 4)
            self.head = nn.Linear(4, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            identity = self.stem(x)
            out = self.fc(identity)
            out += identity
            return self.head(out)

    model = Residual()
    handles.append(model.fc.register_full_backward_hook(lambda m, gi, go: None))
    found(diagnose(model, torch.randn(2, 4)), 24, "fc")


def test_mistake_26(handles: list[Any]) -> None:
    model = mlp()
    handles.append(model[0].register_forward_hook(lambda module, args, output: output.register_hook(print)))
    found(diagnose(model, torch.randn(4, 2)), 26, "0")


def test_mistake_27(handles: list[Any]) -> None:
    model = mlp()
    handles.append(model[2].weight.register_hook(lambda grad: None))
    handles.append(model[0].register_full_backward_hook(lambda m, gi, go: None))
    scaler = torch.amp.GradScaler("cpu")
    diagnosis = diagnose(model, torch.randn(4, 2), scaler=scaler)
    found(diagnosis, 27, "param:2.weight")
    found(diagnosis, 27, "0")
    assert not diagnose(model, torch.randn(4, 2)).mistakes()  # without the scaler, nothing to say


def test_mistake_28(handles: list[Any]) -> None:
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(144, 3)).requires_grad_(False)
    grads = {}

    def keep_output_grad(module: nn.Module, args: Any, output: torch.Tensor) -> None:
        output.register_hook(lambda grad: grads.__setitem__("conv", grad))

    handles.append(model[0].register_forward_hook(keep_output_grad))
    found(diagnose(model, torch.randn(1, 1, 8, 8)), 28, "0")


def test_mistake_30(handles: list[Any]) -> None:
    class Reentrant(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.block = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
            self.head = nn.Linear(4, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.head(checkpoint(self.block, x, use_reentrant=True))

    model, fired = Reentrant(), []
    handles.append(model.block[0].weight.register_post_accumulate_grad_hook(lambda p: fired.append(1)))
    handles.append(model.head.weight.register_post_accumulate_grad_hook(lambda p: fired.append(2)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        diagnosis = diagnose(model, torch.randn(2, 4))
    assert found(diagnosis, 30, "param:block.0.weight").kind == "no-gradient-reaches"
    assert fired == [2] and not diagnosis.at("param:head.weight")
    assert caught == []  # the doctor records the checkpoint's warning instead of repeating it


def test_mistake_31(handles: list[Any]) -> None:
    model = hookviz.load_tiny_transformer()
    out_proj = model.encoder.layers[0].self_attn.out_proj
    handles.append(out_proj.register_forward_pre_hook(lambda module, args: (args[0] * 0,)))
    tokens, _ = hookviz.make_tiny_batch(4, seed=0)
    found(diagnose(model, tokens), 31, "encoder.layers.0.self_attn.out_proj")


def test_mistake_32(handles: list[Any]) -> None:
    model = hookviz.load_tiny_transformer()
    handles.append(module_globals.register_module_forward_hook(lambda module, args, output: None))
    tokens, _ = hookviz.make_tiny_batch(4, seed=0)
    found(diagnose(model, tokens), 32, "encoder.layers.1")


def test_mistake_33(handles: list[Any]) -> None:
    model = hookviz.load_tiny_transformer()
    handles.append(model.encoder.layers[1].register_forward_hook(lambda module, args, output: None))
    tokens, _ = hookviz.make_tiny_batch(4, seed=0)
    found(diagnose(model, tokens), 33, "encoder.layers.1")
    flat = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 1, enable_nested_tensor=False)
    handles.append(flat.layers[0].register_forward_hook(lambda module, args, output: None))
    assert 33 not in diagnose(flat, torch.randn(2, 3, 8)).mistakes()


# ------------------------------------------------------------------- checks beyond the clinic's list


def test_legacy_backward_hooks_are_reported(handles: list[Any]) -> None:
    model = mlp()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        handles.append(model[2].register_backward_hook(lambda m, gi, go: None))
    finding = [f for f in diagnose(model, torch.randn(4, 2)) if f.kind == "legacy-backward-hook"]
    assert [f.where for f in finding] == ["2"]


def test_stored_outputs_that_keep_the_graph_are_reported(handles: list[Any]) -> None:
    model, kept = mlp(), []
    handles.append(model[1].register_forward_hook(lambda m, a, o: kept.append(o)))
    finding = [f for f in diagnose(model, torch.randn(4, 2)) if f.kind == "stored-graph"]
    assert [f.where for f in finding] == ["1"]


def test_a_frozen_part_no_gradient_reaches(handles: list[Any]) -> None:
    model = mlp()
    model[0].requires_grad_(False)
    handles.append(model[0].register_full_backward_hook(lambda m, gi, go: None))
    diagnosis = diagnose(model, torch.randn(4, 2))
    assert [(f.kind, f.where) for f in diagnosis] == [("no-gradient-reaches", "0")]
    assert diagnosis[0].link.endswith("13_hooks_in_training_loops.ipynb#frozen-silent")


def test_a_compiled_wrapper_is_unwrapped(handles: list[Any]) -> None:
    model = mlp()
    compiled = torch.compile(model)
    handles.append(model[2].register_forward_hook(lambda m, a, o: o.detach()))
    diagnosis = diagnose(compiled, torch.randn(4, 2))
    assert diagnosis[0].kind == "compiled-wrapper"
    found(diagnosis, 11, "2")


def test_hooks_that_remove_themselves_or_add_more_leave_the_model_as_found(handles: list[Any]) -> None:
    model, added = mlp(), []

    def one_shot(module: nn.Module, args: Any, output: torch.Tensor) -> None:
        handles[0].remove()

    def adds_a_hook(module: nn.Module, args: Any, output: torch.Tensor) -> None:
        added.append(module.register_forward_hook(lambda m, a, o: None))

    handles.append(model[0].register_forward_hook(one_shot))
    handles.append(model[2].register_forward_hook(adds_a_hook))
    before = _state(model)
    diagnose(model, torch.randn(4, 2))
    _assert_same(before, _state(model))
    assert len(added) == 1 and len(hookviz.list_hooks(model, include_global=False)) == 2
