"""The layer explorer, driven without a kernel or browser: set the pickers, check the arrays and panels."""

import base64
import io

import ipywidgets
import numpy as np
import pytest
import torch
from PIL import Image
from torch import nn

import hookviz
from hookviz.widgets import ExplorerState, LayerExplorer
from hookviz.widgets.common import WIDGET_VIEW_MIME


@pytest.fixture(scope="module")
def digits() -> tuple[torch.Tensor, torch.Tensor]:
    x, y = hookviz.load_digits("test")
    return x[:32], y[:32]


def _png(out) -> bytes:  # noqa: ANN001
    (item,) = out.outputs
    return base64.b64decode(item["data"]["image/png"])


def _size(png: bytes) -> tuple[int, int]:
    return Image.open(io.BytesIO(png)).size


def test_picker_and_default_layer(digits) -> None:  # noqa: ANN001
    model = hookviz.load_pretrained_cnn()
    ex = LayerExplorer(model, *digits)
    # the last conv layer whose maps are at least 8 x 8 pixels: a learner can see the digit in them
    assert ex.layer.value == "features.0"
    assert ex.state.activation().shape == (8, 8, 8)
    labels = dict(ex.layer.options)
    assert "features.4 · Conv2d · (16, 4, 4)" in labels
    assert ex.state.describe()["shown"] == list(range(8))
    assert "Conv2d" in dict(ex.type_filter.options)
    assert not hookviz.list_hooks(model)


def test_switching_uses_captured_data(digits) -> None:  # noqa: ANN001
    model = hookviz.load_pretrained_cnn()
    ex = LayerExplorer(model, *digits)
    ex.layer.value = "features.4"
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
    with pytest.raises(IndexError, match="page 2 does not exist"):
        state.select(page=1)
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
    assert ex.state.n_samples == 1
    assert ex.state.gradient() is not None  # the input copy requires grad, so gradients still flow
    ex.layer.value = "features.4"
    hist = ex.state.grad_histogram()
    assert hist is not None and hist.finite == 16 * 4 * 4


def test_integer_input_without_gradient() -> None:
    model = nn.Sequential(nn.Embedding(10, 6), nn.Flatten(), nn.Linear(18, 3))
    for p in model.parameters():
        p.requires_grad_(False)
    ex = LayerExplorer(model, torch.tensor([[1, 2, 3], [4, 5, 6]]))
    assert ex.state.gradient() is None
    assert ex.state.grad_histogram() is None
    assert ex.grad_out.outputs[0]["data"]["image/png"]  # a message panel, not empty axes
    assert "every parameter is frozen and the input is not floating-point" in ex.state.grad_notes[ex.state.layer]


def test_512_channels_paging_and_topk() -> None:
    model = nn.Sequential(nn.Conv2d(1, 512, 3, padding=1))
    ex = LayerExplorer(model, torch.randn(2, 1, 6, 6))
    assert ex.state.channels == 512 and ex.state.pages == 8 and ex.page.value == 1
    ex.page.value = 8  # pages count from 1 in the box, as in the caption
    assert ex.state.shown_channels() == list(range(448, 512))
    assert "page 8/8" in ex.state.caption() and repr(ex).endswith("page=8/8, target='predicted')")
    ex.order.value = "topk"
    maps = ex.state.maps().reshape(512, -1).mean(1)
    assert ex.state.shown_channels()[0] == int(np.argsort(-maps)[448])
    ex.page.value = 1
    assert ex.state.shown_channels()[0] == int(maps.argmax())
    ex.page.value = 9  # refused visibly, not clamped
    assert ex.page.value == 1 and ex.state.page == 0 and "page 9 does not exist" in ex.message.value


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
    assert ex.state.describe()["range"] == (0.0, 0.0) and "range [0, 0]" in ex.state.caption()
    ex.layer.value = "2"
    assert any("32 NaN" in n for n in ex.state.describe()["notes"])
    assert "NaN" in ex.state.caption()
    # no finite value: the caption states no range (the (0, 1) used to draw it would be invented)
    assert ex.state.describe()["range"] is None and "range [" not in ex.state.caption()
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
    assert bundle["text/plain"] == "LayerExplorer(layer='features.0', sample=0, page=1/1, target='loss')"
    assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")
    assert bundle[WIDGET_VIEW_MIME]["model_id"] == ex.model_id
    assert repr(ex.show_static()).startswith("static view of LayerExplorer(")


def test_static_fallback_does_not_need_ipywidgets_8_bundle_method(digits, monkeypatch) -> None:  # noqa: ANN001
    # ipywidgets 7 (Colab) has no Widget._repr_mimebundle_ and displays through _ipython_display_
    monkeypatch.delattr(ipywidgets.Widget, "_repr_mimebundle_", raising=False)
    ex = LayerExplorer(hookviz.load_pretrained_cnn(), *digits)
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, raw=False: shown.append((obj, raw)))
    ex._ipython_display_()
    ((bundle, raw),) = shown
    assert raw and set(bundle) == {"text/plain", "image/png", WIDGET_VIEW_MIME}
    assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")
    assert bundle[WIDGET_VIEW_MIME] == {"version_major": 2, "version_minor": 0, "model_id": ex.model_id}


def test_typed_sample_out_of_range_is_refused_visibly(digits) -> None:  # noqa: ANN001
    ex = LayerExplorer(hookviz.load_pretrained_cnn(), *digits)
    ex.sample.value = 5
    ex.sample.value = 99
    assert ex.state.sample == 5 and ex.sample.value == 5  # not clamped to 31: the box goes back
    assert "refused" in ex.message.value and "0 to 31" in ex.message.value
    ex.sample.value = 6
    assert ex.state.sample == 6 and ex.message.value == ""


def test_panels_keep_their_size_and_show_zero_counts(digits) -> None:  # noqa: ANN001
    ex = LayerExplorer(hookviz.load_pretrained_cnn(), *digits)
    sizes = set()
    for layer in ("features.0", "features.4", "features.7", "classifier.1"):
        ex.layer.value = layer
        sizes.add((_size(_png(ex.maps_out)), _size(_png(ex.grad_out))))
    assert len(sizes) == 1  # no height jump when switching from maps to a vector strip
    ex.layer.value = "features.2"  # in front of a max-pool most of the gradient is exactly zero
    hidden = ex.state.grad_histogram(drop_zeros=True)
    assert hidden.zeros > 0 and hidden.counts.sum() + hidden.zeros == hidden.finite
    assert ex.state.grad_histogram().counts.sum() == hidden.finite  # shown again without the toggle


def test_reset_returns_to_the_opening_view(digits) -> None:  # noqa: ANN001
    ex = LayerExplorer(hookviz.load_pretrained_cnn(), *digits)
    opening = repr(ex)
    ex.layer.value, ex.sample.value, ex.order.value, ex.hide_zeros.value = "features.4", 7, "topk", False
    assert repr(ex) != opening
    ex.reset()
    assert repr(ex) == opening and ex.sample.value == 0 and ex.order.value == "index" and ex.hide_zeros.value


def test_explorer_leaves_the_model_as_found(digits) -> None:  # noqa: ANN001
    model = hookviz.load_pretrained_cnn().train()
    nn.functional.cross_entropy(model(digits[0][:4]), digits[1][:4]).backward()
    grads = {n: (p.grad, p.grad.clone()) for n, p in model.named_parameters()}
    running = model.features[1].running_mean.clone()
    ex = LayerExplorer(model, *digits)
    ex.target.value = 3  # a second pass
    assert model.training
    for name, p in model.named_parameters():
        assert p.grad is grads[name][0] and torch.equal(p.grad, grads[name][1])
    assert torch.equal(model.features[1].running_mean, running)  # the pass ran in eval mode
    assert not hookviz.list_hooks(model)


# --------------------------------------------------------------------------- freed, re-run, refusals


def test_a_closed_explorer_frees_its_model_and_every_child_widget() -> None:
    import gc
    import weakref

    from ipywidgets.widgets.widget import _instances

    before = set(_instances)
    model = hookviz.DigitsCNN()
    ref = weakref.ref(model)
    explorer = LayerExplorer(model, torch.randn(8, 1, 8, 8))
    explorer.close()
    assert set(_instances) == before and repr(explorer) == "LayerExplorer(closed)"
    del explorer, model
    gc.collect()
    assert ref() is None


def test_rerunning_an_explorer_cell_closes_the_previous_explorer(monkeypatch) -> None:  # noqa: ANN001
    from hookviz.widgets import common

    runs = iter([1, 1, 2])  # two explorers in one run of a cell, then the cell is run again
    monkeypatch.setattr(common, "run_id", lambda: next(runs))
    made = []
    for _ in range(3):
        made.append(LayerExplorer(hookviz.DigitsCNN(), torch.randn(2, 1, 8, 8)))  # the same place
    assert [w.closed for w in made] == [False, True, False]  # the first run's explorers closed... in order
    made[0].close()
    made[2].close()


class _DictModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        logits = self.fc(x)
        return {"aux": logits.pow(2).mean(), "logits": logits}


def test_explorer_refusals_name_the_argument_the_layer_and_the_fix() -> None:
    x = torch.randn(4, 1, 8, 8)
    state = ExplorerState(_DictModel(), x, torch.tensor([0, 1, 2, 3]))  # the scalar "aux" comes first
    assert "showing key 'logits'" in state.output_note and state.n_outputs == 10
    model = hookviz.DigitsCNN()
    with pytest.raises(RuntimeError, match=r"DigitsCNN failed on inputs \(tensor \(4, 3, 8, 8\).* layer 'features.0'"):
        ExplorerState(model, torch.randn(4, 3, 8, 8))
    with pytest.raises(ValueError, match="labels must be class indices from 0 to 9.*run from 0 to 12"):
        ExplorerState(model, x, torch.tensor([0, 1, 2, 12]))
    with pytest.raises(ValueError, match="meta device.*to_empty"):
        with torch.device("meta"):
            meta = hookviz.DigitsCNN()
        ExplorerState(meta, x)
    state = ExplorerState(model, x, [0, 1, 2, 3])  # a list of labels is fine
    with pytest.raises(TypeError, match="sample must be a whole number"):
        state.select(sample=1.7)
    assert state.sample == 0


def test_no_grad_is_lifted_and_inference_mode_is_named() -> None:
    model = hookviz.DigitsCNN()
    x, y = torch.randn(4, 1, 8, 8), torch.tensor([0, 1, 2, 3])
    with torch.no_grad():
        state = ExplorerState(model, x, y)
    assert state.gradient() is not None and not state.describe()["gradient"].startswith("none")
    with torch.inference_mode(), pytest.raises(RuntimeError, match=r"call it outside `torch.inference_mode\(\)`") as e:
        ExplorerState(model, x, y)
    assert "frozen" not in str(e.value)
    with torch.inference_mode(), pytest.raises(RuntimeError, match="inference_mode"):
        state.set_target("predicted")
    assert state.forward_passes == 1 and all(p.grad is None for p in model.parameters())


def test_a_model_that_cuts_the_graph_is_not_called_frozen() -> None:
    class Detaches(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(x).detach()

    state = ExplorerState(Detaches(), torch.randn(3, 1, 8, 8))
    assert "cuts the graph" in state.describe()["gradient"] and "frozen" not in state.describe()["gradient"]


def test_a_closed_explorer_keeps_no_picture() -> None:
    explorer = LayerExplorer(hookviz.DigitsCNN(), torch.randn(4, 1, 8, 8))
    assert explorer.maps_out.outputs and explorer.grad_out.outputs
    explorer.close()
    assert not explorer.maps_out.outputs and not explorer.grad_out.outputs and not explorer.caption.value
    explorer.sample.value = 2  # a closed widget ignores its controls
    assert repr(explorer) == "LayerExplorer(closed)"


def test_the_english_caption_uses_plain_brackets_in_the_widget_too(digits) -> None:  # noqa: ANN001
    """Browser session: the English widget caption read "sample 0（label 6）" (boxes without a Chinese font)."""
    x, y = digits
    state = ExplorerState(hookviz.load_pretrained_cnn(), x, y)
    shown = state.caption(translated=True)
    assert f"sample 0 (label {int(y[0])})" in shown and "（" not in shown and "）" not in shown
    assert shown == state.caption()
    hookviz.set_language("zh")
    try:
        assert f"样本 0（标签 {int(y[0])}）" in state.caption(translated=True)
    finally:
        hookviz.set_language(None)


def test_a_negative_page_is_refused_as_such(digits) -> None:  # noqa: ANN001
    """Smaller issue E13: select(page=-1) said "page 0 does not exist"."""
    x, y = digits
    state = ExplorerState(hookviz.load_pretrained_cnn(), x, y)
    with pytest.raises(ValueError, match=r"page must be at least 0, not -1; pages are counted from 0 here"):
        state.select(page=-1)
