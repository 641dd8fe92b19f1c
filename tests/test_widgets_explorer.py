"""The layer explorer, driven without a kernel or browser: set the pickers, check the arrays and panels."""

import base64

import numpy as np
import pytest
import torch
from torch import nn

import hookviz
from hookviz.widgets import ExplorerState, LayerExplorer


@pytest.fixture(scope="module")
def digits() -> tuple[torch.Tensor, torch.Tensor]:
    x, y = hookviz.load_digits("test")
    return x[:32], y[:32]


def _png(out) -> bytes:  # noqa: ANN001
    (item,) = out.outputs
    return base64.b64decode(item["data"]["image/png"])


def test_picker_and_default_layer(digits) -> None:  # noqa: ANN001
    model = hookviz.load_pretrained_cnn()
    ex = LayerExplorer(model, *digits)
    assert ex.layer.value == "features.4"  # the last conv layer
    labels = dict(ex.layer.options)
    assert "features.4 · Conv2d · (16, 4, 4)" in labels
    assert ex.state.describe()["shown"] == list(range(16))
    assert "Conv2d" in dict(ex.type_filter.options)
    assert not hookviz.list_hooks(model)


def test_switching_uses_captured_data(digits) -> None:  # noqa: ANN001
    model = hookviz.load_pretrained_cnn()
    ex = LayerExplorer(model, *digits)
    before = _png(ex.maps_out)
    ex.layer.value = "features.0"
    after = _png(ex.maps_out)
    assert before != after
    ex.sample.value = 5
    assert ex.state.sample == 5 and _png(ex.maps_out) != after
    with torch.no_grad():
        expected = model.features[0](digits[0][5:6])[0].numpy()
    np.testing.assert_allclose(ex.state.activation(), expected, rtol=1e-5, atol=1e-6)
    ex.order.value = "topk"
    means = expected.reshape(8, -1).mean(1)
    assert ex.state.shown_channels() == list(np.argsort(-means, kind="stable"))
    ex.log_scale.value = True
    assert ex.state.forward_passes == 1  # no re-run for any of the above
    ex.target.value = 3
    assert ex.state.forward_passes == 2 and ex.state.target == 3


def test_gradient_matches_autograd(digits) -> None:  # noqa: ANN001
    model = hookviz.load_pretrained_cnn()
    state = ExplorerState(model, *digits)
    state.select(layer="features.4", sample=2)
    x = digits[0].clone()
    act = model.features[:5](x)
    act.retain_grad()
    out = model.classifier(model.features[5:](act))
    nn.functional.cross_entropy(out, digits[1], reduction="sum").backward()
    np.testing.assert_allclose(state.gradient(), act.grad[2].numpy(), rtol=1e-4, atol=1e-7)
    assert all(p.grad is None or True for p in model.parameters())


def test_unknown_layer_and_bad_sample(digits) -> None:  # noqa: ANN001
    state = ExplorerState(hookviz.load_pretrained_cnn(), *digits)
    with pytest.raises(KeyError, match="closest: 'features.4'"):
        state.select(layer="features.44")
    with pytest.raises(IndexError, match="32 samples"):
        state.select(sample=32)
    with pytest.raises(ValueError, match="needs labels"):
        ExplorerState(hookviz.load_pretrained_cnn(), digits[0], target="loss")


def test_model_without_conv_layers_and_linear_strip() -> None:
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 20), nn.Tanh(), nn.Linear(20, 10))
    x, y = hookviz.load_digits("test")
    ex = LayerExplorer(model, x[:4], y[:4])
    assert ex.state.layer == "3" and ex.state.kind == "strip"
    assert ex.state.describe()["shown"] == "10 values"
    ex.layer.value = "1"
    assert ex.state.pages == 1 and _png(ex.maps_out).startswith(b"\x89PNG")


class TupleOut(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x * 2, x.mean()


def test_tuple_outputs() -> None:
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), TupleOut())
    state = ExplorerState(model, torch.randn(3, 1, 8, 8))  # the model returns a tuple too
    state.select(layer="1")
    assert "tuple of 2; showing element [0]" in state.describe()["notes"][0]
    assert state.activation().shape == (4, 8, 8)
    assert "tuple" in state.output_note


class TwinOut(nn.Module):
    """Returns two same-shaped tensors; the model then uses only the second."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x * 2, x * 3


class UsesSecond(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.twin = TwinOut()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.twin(x)[1].flatten(1).sum(1, keepdim=True)


def test_tuple_output_never_shows_another_elements_gradient() -> None:
    state = ExplorerState(UsesSecond(), torch.randn(2, 1, 4, 4), target=0)
    state.select(layer="twin")
    assert state.activation().shape == (1, 4, 4)  # element [0] is shown ...
    assert state.gradients["twin"] is None  # ... and it got no gradient; element [1]'s must not stand in


def test_batch_of_one_and_frozen_model() -> None:
    model = hookviz.load_pretrained_cnn()
    for p in model.parameters():
        p.requires_grad_(False)
    x, y = hookviz.load_digits("test")
    ex = LayerExplorer(model, x[:1], y[:1])
    assert ex.state.n_samples == 1 and ex.sample.max == 0
    assert ex.state.gradient() is not None  # the input copy requires grad, so gradients still flow
    hist = ex.state.grad_histogram()
    assert hist is not None and hist.finite == 16 * 4 * 4


def test_integer_input_without_gradient() -> None:
    model = nn.Sequential(nn.Embedding(10, 6), nn.Flatten(), nn.Linear(18, 3))
    for p in model.parameters():
        p.requires_grad_(False)
    ex = LayerExplorer(model, torch.tensor([[1, 2, 3], [4, 5, 6]]))
    assert ex.state.gradient() is None
    (item,) = ex.grad_out.outputs
    assert "no gradient" in item["text"] and "does not require grad" in item["text"]


def test_512_channels_paging_and_topk() -> None:
    model = nn.Sequential(nn.Conv2d(1, 512, 3, padding=1))
    ex = LayerExplorer(model, torch.randn(2, 1, 6, 6))
    assert ex.state.channels == 512 and ex.state.pages == 8 and ex.page.max == 7
    ex.page.value = 7
    assert ex.state.shown_channels() == list(range(448, 512))
    ex.order.value = "topk"
    maps = ex.state.maps().reshape(512, -1).mean(1)
    assert ex.state.shown_channels()[0] == int(np.argsort(-maps)[448])
    ex.page.value = 0
    assert ex.state.shown_channels()[0] == int(maps.argmax())


class Fill(nn.Module):
    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 0 + self.value


class Scale(nn.Module):
    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.value


def test_zero_and_nan_activations() -> None:
    model = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), Fill(0.0), Scale(float("nan")), nn.Flatten())
    ex = LayerExplorer(model, torch.randn(2, 1, 4, 4), target="predicted")
    ex.layer.value = "1"
    assert any("all values are 0" in n for n in ex.state.describe()["notes"])
    ex.layer.value = "2"
    assert any("32 NaN" in n for n in ex.state.describe()["notes"])
    assert "NaN" in ex.state.caption()
    _png(ex.maps_out)  # still a picture (magenta), not an error
    ex.layer.value = "1"
    hist = ex.state.grad_histogram()
    assert hist is not None and hist.nan == 32  # x * NaN sends NaN back into the gradient: counted
    png = _png(ex.grad_out)
    assert png.startswith(b"\x89PNG")


def test_inplace_relu_after_chosen_layer() -> None:
    model = nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.ReLU(inplace=True), nn.Flatten(), nn.Linear(48, 2))
    x = torch.randn(2, 1, 4, 4)
    state = ExplorerState(model, x, target="predicted")
    state.select(layer="0")
    with torch.no_grad():
        raw = model[0](x)
    assert (raw < 0).any()
    np.testing.assert_allclose(state.activations["0"], raw.numpy(), rtol=1e-6)  # stored before the ReLU ran
    assert state.gradient() is not None
    assert not hookviz.list_hooks(model)


def test_rerun_leaves_no_hooks_and_static_fallback(digits) -> None:  # noqa: ANN001
    model = hookviz.load_pretrained_cnn()
    for _ in range(2):  # re-running the cell
        ex = LayerExplorer(model, *digits)
    assert not hookviz.list_hooks(model)
    assert not hookviz.registered_keys(model)
    bundle = ex._repr_mimebundle_()
    assert bundle["text/plain"] == "LayerExplorer(layer='features.4', sample=0, page=1/1, target='loss')"
    assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")
    assert repr(ex.show_static()).startswith("static view of LayerExplorer(")
