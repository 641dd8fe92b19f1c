"""The explorer and the training monitor on a learner's own models, not only the course's CNN.

Three architectures a learner brings: a ResNet-style CNN built in code (residual blocks with
BatchNorm, a skip connection, nested modules), the bundled tiny transformer (``nn.TransformerEncoder``,
per-token logits, integer tokens as input) and an LSTM classifier (tuple outputs ``(output, (h, c))``,
3-D sequence tensors). Each gets the fitting view for every layer or a refusal that names the layer and
why, and each model is left exactly as it was found: hooks, every submodule's mode, ``.grad``,
``requires_grad``, parameters and buffers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from torch import Tensor, nn

import hookviz
from hookviz.transformer import load_tiny_transformer, make_tiny_batch
from hookviz.widgets import ExplorerState, LayerExplorer, MonitorState, TrainingMonitor
from hookviz.widgets.monitor import default_layers

# --------------------------------------------------------------------------- the learner's models


class BasicBlock(nn.Module):
    """conv-BN-ReLU-conv-BN plus a skip connection (a 1x1 conv when the shape changes), then ReLU."""

    def __init__(self, c_in: int, c_out: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut = (
            nn.Identity()
            if stride == 1 and c_in == c_out
            else nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out))
        )

    def forward(self, x: Tensor) -> Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class TinyResNet(nn.Module):
    """A ResNet-style CNN for the 8 x 8 digits: a stem, two stages of residual blocks, a head."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
        self.stage1 = nn.Sequential(BasicBlock(8, 8), BasicBlock(8, 8))
        self.stage2 = nn.Sequential(BasicBlock(8, 16, stride=2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(self.pool(self.stage2(self.stage1(self.stem(x)))).flatten(1))


class DigitRowsLSTM(nn.Module):
    """Reads a digit image as a sequence of 8 rows of 8 pixels; classifies from the last hidden state."""

    def __init__(self, hidden: int = 16) -> None:
        super().__init__()
        self.lstm = nn.LSTM(8, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 10)

    def forward(self, rows: Tensor) -> Tensor:
        out, (h, c) = self.lstm(rows)
        return self.head(out[:, -1])


def _digits(n: int = 16) -> tuple[Tensor, Tensor]:
    x, y = hookviz.load_digits("test")
    return x[:n], y[:n]


def _resnet_case() -> tuple[nn.Module, Tensor, Tensor]:
    torch.manual_seed(0)
    x, y = _digits()
    return TinyResNet(), x, y


def _transformer_case() -> tuple[nn.Module, Tensor, Tensor]:
    tokens, targets = make_tiny_batch(16, seed=1)
    return load_tiny_transformer(), tokens, targets


def _lstm_case() -> tuple[nn.Module, Tensor, Tensor]:
    torch.manual_seed(0)
    x, y = _digits()
    return DigitRowsLSTM(), x[:, 0], y  # (N, 8 rows, 8 pixels): a batch-first sequence


CASES: dict[str, Callable[[], tuple[nn.Module, Tensor, Tensor]]] = {
    "resnet": _resnet_case,
    "transformer": _transformer_case,
    "lstm": _lstm_case,
}


def _loss(out: Tensor, y: Tensor) -> Tensor:
    return nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))


def _step_fn(model: nn.Module, x: Tensor, y: Tensor) -> Callable[[], Tensor]:
    """The learner's own training step: their optimiser, their loss, their batch."""
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05)

    def step() -> Tensor:
        optimizer.zero_grad()
        loss = _loss(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    return step


# --------------------------------------------------------------------------- "left as found"


def _snapshot(model: nn.Module) -> dict[str, Any]:
    """Everything about a model that looking at it must not change."""
    return {
        "hooks": [(r.where, r.kind, r.hook) for r in hookviz.list_hooks(model, include_global=False)],
        "modes": {n: m.training for n, m in model.named_modules()},
        "requires_grad": {n: p.requires_grad for n, p in model.named_parameters()},
        "grad": {n: (p.grad, None if p.grad is None else p.grad.clone()) for n, p in model.named_parameters()},
        "state": {k: v.clone() for k, v in model.state_dict().items()},
    }


def _assert_as_found(model: nn.Module, before: dict[str, Any], *, weights_may_train: bool = False) -> None:
    after = _snapshot(model)
    assert after["hooks"] == before["hooks"]
    assert after["modes"] == before["modes"]
    assert after["requires_grad"] == before["requires_grad"]
    if not weights_may_train:
        for name, (grad, value) in before["grad"].items():
            now = dict(model.named_parameters())[name].grad
            assert now is grad and (grad is None or torch.equal(now, value)), name
        for key, value in before["state"].items():
            assert torch.equal(after["state"][key], value), key


def _prepare_as_a_learner_would(model: nn.Module, x: Tensor, y: Tensor) -> tuple[list[int], Any]:
    """A model mid-fine-tuning: training, BatchNorm frozen in eval, part frozen, stale .grad, a hook of theirs."""
    model.train()
    for module in model.modules():
        if isinstance(module, nn.modules.batchnorm._BatchNorm):
            module.eval()
    first = next(model.parameters())
    first.requires_grad_(False)
    _loss(model(x[:4]), y[:4]).backward()  # leaves .grad on the other parameters
    calls: list[int] = []
    handle = model.register_forward_hook(lambda module, args, output: calls.append(1))
    return calls, handle


# --------------------------------------------------------------------------- the explorer


def test_explorer_on_a_resnet_style_cnn() -> None:
    model, x, y = _resnet_case()
    ex = LayerExplorer(model, x, y)
    state = ex.state
    # nested names, every block's layers, a skip connection's 1x1 conv, maps for every conv
    assert {"stage1.0.conv1", "stage1.0.shortcut", "stage2.0.shortcut.0", "fc"} <= set(state.layers)
    assert state.layer == "stage1.1.conv2"  # the last conv with maps of at least 8 x 8 pixels
    assert state.kind == "maps" and state.info["stage2.0.conv2"].shape == (16, 4, 4)
    assert state.info["stage1.0.relu"].note == "called 2 times; showing the last call"
    for layer in state.layers:  # every layer draws, without running the model again
        ex.layer.value = layer
        assert ex.maps_out.outputs[0]["data"]["image/png"]
    assert state.forward_passes == 1
    # the gradient shown is the real one: d(loss)/d(output of the first block)
    state.select(layer="stage1.0", sample=3)
    model.eval()  # the explorer looks in eval mode (BatchNorm uses its running statistics)
    act = model.stage1[0](model.stem(x))
    act.retain_grad()
    logits = model.fc(model.pool(model.stage2(model.stage1[1](act))).flatten(1))
    nn.functional.cross_entropy(logits, y, reduction="sum").backward()
    np.testing.assert_allclose(state.gradient(), act.grad[3].numpy(), rtol=1e-4, atol=1e-6)


def test_explorer_on_the_tiny_transformer() -> None:
    model, tokens, targets = _transformer_case()
    ex = LayerExplorer(model, tokens, targets)  # integer tokens in, per-token logits out, a label per token
    state = ex.state
    assert state.target == "loss" and state.n_outputs == 10
    assert state.layer == "head" and state.kind == "sequence"
    assert state.describe()["shown"] == "8 positions x 10 classes"
    assert "as a heat map (a row per position)" in state.caption()
    # an encoder layer's output per sample is (positions, features): a heat map, a row per token
    state.select(layer="encoder.layers.0")
    assert state.kind == "sequence" and state.describe()["shown"] == "8 positions x 32 features"
    # the attention returns (output, None): the note says which element is shown and what else there was
    attn = state.info["encoder.layers.0.self_attn"]
    assert attn.shape == (8, 32) and "tuple of 2; showing element [0] (elements: Tensor, None)" in attn.note
    # layers that never run as modules are refused with the reason, not silently missing
    out_proj = state.info["encoder.layers.0.self_attn.out_proj"]
    assert "MultiheadAttention uses this layer's weights directly" in out_proj.note
    assert "ModuleList only holds modules" in state.info["encoder.layers"].note
    with pytest.raises(KeyError, match="out_proj' cannot be shown: not called: MultiheadAttention"):
        state.select(layer="encoder.layers.1.self_attn.out_proj")
    for layer in state.layers:
        ex.layer.value = layer
        assert ex.maps_out.outputs[0]["data"]["image/png"] and ex.grad_out.outputs[0]["data"]["image/png"]
    # tokens cannot require grad: the gradient is taken with respect to the weights, and is real
    state.select(layer="encoder.layers.1", sample=2)
    grad = state.gradient()
    assert grad is not None and grad.shape == (8, 32) and np.abs(grad).max() > 0
    assert all(p.grad is None for p in model.parameters())


def test_explorer_on_an_lstm() -> None:
    model, rows, y = _lstm_case()
    ex = LayerExplorer(model, rows, y)
    state = ex.state
    info = state.info["lstm"]
    assert info.shape == (8, 16)  # element [0] of (output, (h, c)): every time step's hidden state
    assert info.note == "output is a tuple of 2; showing element [0] (elements: Tensor, tuple)"
    state.select(layer="lstm", sample=1)
    assert state.kind == "sequence" and state.describe()["shown"] == "8 positions x 16 features"
    ex.layer.value = "lstm"
    assert ex.order.disabled and ex.page.disabled  # no channels to page or sort in a heat map
    with torch.no_grad():
        expected = model.lstm(rows[1:2])[0][0].numpy()
    np.testing.assert_allclose(state.activation(), expected, rtol=1e-5, atol=1e-6)
    ex.layer.value = "head"
    assert state.kind == "strip" and state.describe()["shown"] == "10 values"


@pytest.mark.parametrize("case", CASES)
def test_explorer_leaves_the_learners_model_as_found(case: str) -> None:
    model, x, y = CASES[case]()
    calls, their_hook = _prepare_as_a_learner_would(model, x, y)
    before = _snapshot(model)
    ex = LayerExplorer(model, x, y)
    ex.target.value = "predicted"  # a second pass
    ExplorerState(model, x, y, train_mode=True)  # a pass in train mode: BatchNorm statistics restored
    _assert_as_found(model, before)
    assert len(calls) == 3  # their hook stayed and ran once per pass
    assert len(hookviz.list_hooks(model, include_global=False)) == 1
    their_hook.remove()


@pytest.mark.parametrize("case", CASES)
def test_batch_of_one(case: str) -> None:
    model, x, y = CASES[case]()
    state = ExplorerState(model, x[:1], y[:1])
    assert state.n_samples == 1 and state.layers
    for layer in state.layers:
        state.select(layer=layer)
        assert state.feature_png().startswith(b"\x89PNG")
    with pytest.raises(IndexError, match="the batch has 1 samples"):
        state.select(sample=1)


class ReturnsNone(nn.Module):
    def forward(self, x: Tensor) -> None:
        return None


class ReturnsText(nn.Module):
    def forward(self, x: Tensor) -> dict[str, str]:
        return {"status": "ok"}


class Probe(nn.Module):
    """A model with side branches whose outputs cannot be shown."""

    def __init__(self) -> None:
        super().__init__()
        self.logger = ReturnsNone()
        self.tagger = ReturnsText()
        self.seq_first = nn.LSTM(8, 4)  # batch_first=False: outputs are (sequence, batch, features)
        self.head = nn.Linear(64, 3)

    def forward(self, x: Tensor) -> Tensor:
        self.logger(x)
        self.tagger(x)
        self.seq_first(x[:, 0, :3].transpose(0, 1))  # 3 time steps of a batch of N
        return self.head(x.flatten(1))


def test_outputs_that_cannot_be_shown_are_refused_by_name_and_reason() -> None:
    x, y = _digits(5)
    state = ExplorerState(Probe(), x, target="predicted")
    assert state.info["logger"].note == "cannot show: the output is None (the module returns nothing to show)"
    assert state.info["tagger"].note == "cannot show: the output is a dict with no tensor in it"
    note = state.info["seq_first"].note
    assert note.startswith("cannot show: shape (3, 5, 4) has no batch dimension of 5 first")
    assert "LSTM has batch_first=False" in note and "elements: Tensor, tuple" in note
    for layer in ("logger", "tagger", "seq_first"):
        with pytest.raises(KeyError, match=f"layer '{layer}' cannot be shown"):
            state.select(layer=layer)
    assert "no batch dimension" in state.layer_table()


def test_long_vectors_and_wide_sequences_fit_the_panel() -> None:
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 1000), nn.Unflatten(1, (200, 5)), nn.Linear(5, 300))
    ex = LayerExplorer(model, torch.randn(2, 1, 8, 8))
    sizes = set()
    for layer in ("1", "2", "3"):  # 1000 values; 200 positions x 5 features; 200 x 300 logits
        ex.layer.value = layer
        png = ex.state.feature_png()
        import io

        from PIL import Image

        sizes.add(Image.open(io.BytesIO(png)).size)
    assert sizes == {(430, 290)}
    assert ex.state.describe()["shown"] == "200 positions x 300 classes"  # the model's output: logits
    ex.layer.value = "2"
    assert ex.state.describe()["shown"] == "200 positions x 5 features"


# --------------------------------------------------------------------------- the monitor


def test_default_layers_watch_attention_but_not_its_out_proj() -> None:
    model = load_tiny_transformer()
    names = list(default_layers(model))
    assert "encoder.layers.0.self_attn" in names and "encoder.layers.0.linear1" in names
    assert not any(n.endswith("out_proj") for n in names)
    assert list(default_layers(hookviz.DigitsCNN())) == [
        "features.0",
        "features.1",
        "features.4",
        "features.5",
        "classifier.1",
    ]
    assert list(default_layers(DigitRowsLSTM())) == ["lstm", "head"]


@pytest.mark.parametrize("case", CASES)
def test_monitor_trains_the_learners_model_with_their_step(case: str) -> None:
    model, x, y = CASES[case]()
    model.train()
    modes = {n: m.training for n, m in model.named_modules()}
    mon = TrainingMonitor(model, _step_fn(model, x, y), probe=x[:1], interval=0.0)
    state = mon.state
    mon.run(8)
    assert state.step == 8 and len(state.losses()) == 8
    assert not state.silent_layers() and np.all(np.isfinite(state.grad_by_depth()))
    # the probe reached every watched layer whose output has a batch dimension (not pos_embed's (8, 32))
    assert set(state.probe_layers()) == set(state.layer_names) - {"pos_embed"}
    for layer in state.layer_names:
        mon.layer.value = layer
        assert bytes(mon.live_img.value).startswith(b"\x89PNG")
    assert {n: m.training for n, m in model.named_modules()} == modes  # the probe's eval mode undone
    assert not hookviz.list_hooks(model, include_global=False)
    assert "not called" not in state.summary()


def test_monitor_probe_shapes_per_architecture() -> None:
    shapes = {}
    for case, make in CASES.items():
        model, x, y = make()
        state = MonitorState(model, _step_fn(model, x, y), probe=x[:3])  # a probe batch: sample 0 is shown
        state.run_probe()
        shapes[case] = {n: state.probe_maps[n].shape for n in state.layer_names[:1] + state.layer_names[-1:]}
    assert shapes == {
        "resnet": {"stem.0": (8, 8, 8), "fc": (10,)},
        "transformer": {"embed": (8, 32), "head": (8, 10)},
        "lstm": {"lstm": (8, 16), "head": (10,)},
    }


@pytest.mark.parametrize("case", CASES)
def test_monitor_leaves_hooks_modes_and_requires_grad_as_found(case: str) -> None:
    model, x, y = CASES[case]()
    calls, their_hook = _prepare_as_a_learner_would(model, x, y)
    before = _snapshot(model)
    state = MonitorState(model, _step_fn(model, x, y), probe=x[:1])
    state.run(3, on_update=lambda s: None, interval=0.0)
    _assert_as_found(model, before, weights_may_train=True)
    assert len(calls) >= 3 and len(hookviz.list_hooks(model, include_global=False)) == 1
    their_hook.remove()


def test_monitor_feeds_batches_from_data() -> None:
    model, x, y = _lstm_case()
    batches = [(x[:8], y[:8]), (x[8:], y[8:])]
    seen: list[int] = []
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

    def train_step(batch: tuple[Tensor, Tensor]) -> Tensor:
        rows, labels = batch
        seen.append(int(labels[0]))
        optimizer.zero_grad()
        loss = _loss(model(rows), labels)
        loss.backward()
        optimizer.step()
        return loss

    state = TrainingMonitor(model, train_step, data=batches, probe=x[:1]).state
    state.run(5)  # two passes over the data and one more batch
    assert seen == [int(y[0]), int(y[8])] * 2 + [int(y[0])] and state.step == 5
    with pytest.raises(ValueError, match="data= needs a step_fn"):
        TrainingMonitor(model, data=batches)


def test_monitor_reports_a_watched_layer_that_never_runs() -> None:
    model, tokens, targets = _transformer_case()
    state = MonitorState(
        model, _step_fn(model, tokens, targets), layers=["encoder.layers.0.self_attn.out_proj", "head"]
    )
    state.run(2)
    assert state.silent_layers() == ["encoder.layers.0.self_attn.out_proj"]
    assert "encoder.layers.0.self_attn.out_proj=not called" in state.summary()
