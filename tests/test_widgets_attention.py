"""The attention explorer, driven without a kernel or browser: pick layer, head and sample; the model is untouched."""

import base64
import io
import warnings

import numpy as np
import pytest
import torch
from PIL import Image
from torch import nn

import hookviz
from hookviz.widgets import AttentionExplorer, AttentionState, capture_attention
from hookviz.widgets.common import WIDGET_VIEW_MIME

MIRROR = list(range(hookviz.transformer.SEQ_LEN))[::-1]


def _called_modules(model: nn.Module, *args: object, **kwargs: object) -> list[str]:
    """Types of every module whose forward ran (a global hook, removed before returning)."""
    called: list[str] = []
    handle = torch.nn.modules.module.register_module_forward_hook(lambda m, a, o: called.append(type(m).__name__))
    try:
        with torch.no_grad():
            model(*args, **kwargs)
    finally:
        handle.remove()
    return called


def _snapshot(model: nn.Module) -> tuple[dict[str, torch.Tensor], list[bool], list[bool], list[object]]:
    state = {k: v.clone() for k, v in model.state_dict().items()}
    modes = [m.training for m in model.modules()]
    flags = [p.requires_grad for p in model.parameters()]
    grads = [p.grad for p in model.parameters()]
    return state, modes, flags, grads


def test_state_finds_the_anti_diagonal_head() -> None:
    model = hookviz.load_tiny_transformer()
    tokens, _ = hookviz.make_tiny_batch(4, seed=11)
    state = AttentionState(model, tokens)
    assert state.layers == ["encoder.layers.0.self_attn", "encoder.layers.1.self_attn"]
    assert state.heads() == 2 and state.n_samples == 4
    d = state.describe()
    assert d["shape"] == (8, 8) and d["head"] == 0
    assert d["argmax"] == MIRROR
    np.testing.assert_allclose(state.pattern().sum(axis=1), 1.0, atol=1e-5)  # each row is a distribution
    state.select(head=None)
    np.testing.assert_allclose(state.pattern(), state.patterns[state.layer][0].mean(axis=0), atol=1e-7)
    queries, keys = state.token_labels()
    assert queries == [str(int(t)) for t in tokens[0]] == keys
    assert state.forward_passes == 1


def test_patterns_match_a_direct_call_of_the_attention() -> None:
    model = hookviz.load_tiny_transformer()
    tokens, _ = hookviz.make_tiny_batch(3, seed=12)
    weights = capture_attention(model, tokens)
    x = model.embed(tokens) + model.pos_embed(torch.arange(tokens.shape[1]))
    with torch.no_grad():
        _, direct = model.encoder.layers[0].self_attn(x, x, x, need_weights=True, average_attn_weights=False)
    assert weights["encoder.layers.0.self_attn"].shape == (3, 2, 8, 8)
    torch.testing.assert_close(weights["encoder.layers.0.self_attn"], direct, rtol=1e-4, atol=1e-5)


def test_model_is_left_exactly_as_it_was() -> None:
    model = hookviz.load_tiny_transformer()
    model.train()
    model.encoder.layers[1].eval()  # a mixed mode must come back mixed
    model.head.weight.requires_grad_(False)
    own_calls: list[int] = []
    own = model.encoder.layers[0].self_attn.register_forward_hook(lambda m, a, o: own_calls.append(1))
    tokens, _ = hookviz.make_tiny_batch(2, seed=13)
    before = _snapshot(model)
    try:
        AttentionState(model, tokens)
        after = _snapshot(model)
        assert all(torch.equal(before[0][k], after[0][k]) for k in before[0])
        assert before[1:] == after[1:]
        assert own_calls == [1]  # the user's hook ran once, and is still the only hook
        assert hookviz.list_hooks(model).kinds() == {"forward": 1}
    finally:
        own.remove()
    assert not hookviz.list_hooks(model)


def test_need_weights_and_the_fast_path_come_back() -> None:
    model = hookviz.load_tiny_transformer()
    tokens, _ = hookviz.make_tiny_batch(2, seed=14)
    fast = _called_modules(model, tokens)
    assert "MultiheadAttention" not in fast  # eval + no grad + no hooks: the fused layer kernel
    AttentionState(model, tokens)
    assert _called_modules(model, tokens) == fast
    seen: list[object] = []
    model.train()  # the slow path: the layer calls its attention, and says what it asks for
    handle = model.encoder.layers[0].self_attn.register_forward_pre_hook(
        lambda m, a, kw: seen.append((kw.get("need_weights"), kw.get("average_attn_weights", "unset"))),
        with_kwargs=True,
    )
    try:
        model(tokens)
    finally:
        handle.remove()
    assert seen == [(False, "unset")]


def test_explorer_controls_and_static_fallback() -> None:
    model = hookviz.load_tiny_transformer()
    tokens, _ = hookviz.make_tiny_batch(3, seed=15)
    ex = AttentionExplorer(model, tokens)
    first = base64.b64decode(ex.out.outputs[0]["data"]["image/png"])
    ex.head.value = "mean"
    assert ex.state.head is None
    ex.layer.value = "encoder.layers.1.self_attn"
    assert ex.state.layer == "encoder.layers.1.self_attn"
    ex.sample.value = 2
    assert ex.state.sample == 2
    assert base64.b64decode(ex.out.outputs[0]["data"]["image/png"]) != first
    ex.sample.value = 9
    assert ex.state.sample == 2 and ex.sample.value == 2 and "out of range" in ex.message.value
    bundle = ex._repr_mimebundle_()
    assert WIDGET_VIEW_MIME in bundle and "image/png" in bundle
    assert bundle["text/plain"].startswith("AttentionExplorer(encoder.layers.1.self_attn · mean of heads · sample 2")
    picture = ex.show_static()
    assert Image.open(io.BytesIO(picture.png)).size[0] >= 300
    assert repr(picture).startswith("static view of AttentionExplorer(")
    assert ex.state.forward_passes == 1
    assert not hookviz.list_hooks(model)


def test_bad_choices_are_clear_errors() -> None:
    model = hookviz.load_tiny_transformer()
    tokens, _ = hookviz.make_tiny_batch(2, seed=16)
    state = AttentionState(model, tokens)
    with pytest.raises(KeyError, match="encoder.layers.0.self_attn"):
        state.select(layer="encoder.layers.0.self_atn")
    with pytest.raises(IndexError, match="2 heads"):
        state.select(head=2)
    with pytest.raises(ValueError, match="no nn.MultiheadAttention"):
        AttentionState(hookviz.load_pretrained_cnn(), torch.zeros(1, 1, 8, 8))


def test_batch_first_false_positional_need_weights_and_padding() -> None:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0)  # batch_first=False: (L, N, E)
    state = AttentionState(layer, torch.randn(5, 3, 16))
    assert state.n_samples == 3 and state.pattern().shape == (5, 5)  # weights are batch-first anyway

    class Positional(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = nn.MultiheadAttention(8, 2, batch_first=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.attn(x, x, x, None, False)[0]  # need_weights=False given by position

    state = AttentionState(Positional(), torch.randn(2, 4, 8))
    assert state.heads() == 2 and state.pattern().shape == (4, 4)

    model = hookviz.load_tiny_transformer()
    tokens, _ = hookviz.make_tiny_batch(2, seed=17)
    pad = torch.zeros(2, 8, dtype=torch.bool)
    pad[:, 6:] = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the encoder's nested-tensor prototype warning
        state = AttentionState(model, tokens, model_kwargs={"src_key_padding_mask": pad})
    assert np.allclose(state.pattern()[:6, 6:], 0.0)  # padded keys get no attention


def test_attention_choices_are_whole_numbers_and_a_batch_is_not_empty() -> None:
    model = hookviz.load_tiny_transformer()
    tokens = hookviz.make_tiny_batch(3)[0]
    state = AttentionState(model, tokens)
    for head in (1.5, "2", True):
        with pytest.raises(TypeError, match="head must be a whole number"):
            state.select(head=head)
    with pytest.raises(TypeError, match="sample must be a whole number"):
        state.select(sample=1.7)
    assert state.head == 0 and state.sample == 0  # nothing was coerced
    with pytest.raises(ValueError, match="at least one sample"):
        AttentionState(model, tokens[:0])
    with pytest.raises(ValueError, match=r"for one row pass tokens\[None\]"):
        AttentionState(model, tokens[0])


def test_a_closed_attention_explorer_lets_its_model_go() -> None:
    import gc
    import weakref

    from ipywidgets.widgets.widget import _instances

    before = set(_instances)
    model = hookviz.load_tiny_transformer()
    ref = weakref.ref(model)
    explorer = AttentionExplorer(model, hookviz.make_tiny_batch(2)[0])
    explorer.close()
    assert set(_instances) == before
    del explorer, model
    gc.collect()
    assert ref() is None


def test_padded_batch_gives_full_size_patterns_with_zero_weight_on_padding() -> None:
    """With a padding mask the layers may run on nested tensors; the patterns still cover every position."""
    model = hookviz.load_tiny_transformer()
    tokens, _ = hookviz.make_tiny_batch(8, seed=3)
    padded = torch.zeros(8, hookviz.transformer.SEQ_LEN, dtype=torch.bool)
    padded[:, 6:] = True  # every row ends in two padding positions: the case that came back (8, 2, 6, 6)
    before = _snapshot(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        state = AttentionState(model, tokens, model_kwargs={"src_key_padding_mask": padded})
    for name, pattern in state.patterns.items():
        assert pattern.shape == (8, 2, 8, 8), name
        assert (pattern[..., 6:] == 0).all(), f"{name}: attention on padded keys"
        # each real query's weights over the real keys sum to 1 (padded query rows hold no pattern)
        np.testing.assert_allclose(pattern[:, :, :6, :6].sum(-1), 1.0, atol=1e-5)
    after = _snapshot(model)
    assert all(torch.equal(before[0][k], after[0][k]) for k in before[0]) and before[1:] == after[1:]
    assert not hookviz.list_hooks(model)


def test_unbatched_attention_call_is_one_sample_with_its_heads() -> None:
    class OneSequence(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn = nn.MultiheadAttention(8, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.attn(x, x, x)[0]

    state = AttentionState(OneSequence(), torch.randn(5, 8))
    assert state.n_samples == 1 and state.heads() == 2
    (pattern,) = state.patterns.values()
    assert pattern.shape == (1, 2, 5, 5)
