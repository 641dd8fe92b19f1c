"""The bundled tiny decoder: weights small and loadable, copies held-out rows, cache and no cache agree; and
the attention explorer on it (patterns recomputed from hooked q and k), driven headless."""

import base64
import io
from importlib import resources

import numpy as np
import pytest
import torch
from PIL import Image
from torch import nn
from torch.nn import functional as F

import hookviz
from hookviz.decoder import (
    COPY_LEN,
    DECODER_WEIGHTS_FILE,
    SEP,
    VOCAB_SIZE,
    DecoderOutput,
    KVCache,
    TinyDecoder,
    copy_accuracy,
    load_tiny_decoder,
    make_copy_batch,
    train_tiny_decoder,
)
from hookviz.widgets import AttentionExplorer, AttentionState, capture_attention
from hookviz.widgets.decoder_attention import decoder_attention_modules, pattern_from_qk


def _sequences(n: int, seed: int) -> torch.Tensor:
    prompts, answers = make_copy_batch(n, seed=seed)
    return torch.cat([prompts, answers], dim=1)[:, :-1]


# --------------------------------------------------------------------------- the model


def test_weights_file_is_small_and_loads_with_weights_only() -> None:
    raw = resources.files("hookviz").joinpath(DECODER_WEIGHTS_FILE).read_bytes()
    assert len(raw) < 1_000_000
    state = torch.load(io.BytesIO(raw), weights_only=True)
    assert set(state) == set(TinyDecoder().state_dict())


def test_loaded_model_has_llama_names_and_returns_a_dataclass() -> None:
    model = load_tiny_decoder()
    assert not model.training
    names = {name for name, _ in model.named_modules()}
    for name in ("model.embed_tokens", "model.rotary_emb", "model.norm", "lm_head", "model.layers.1.mlp.down_proj"):
        assert name in names
    for projection in ("q_proj", "k_proj", "v_proj", "o_proj"):
        assert type(getattr(model.model.layers[0].self_attn, projection)) is nn.Linear
    with torch.no_grad():
        out = model(_sequences(3, seed=5))
    assert isinstance(out, DecoderOutput) and out.logits.shape == (3, 2 * COPY_LEN, VOCAB_SIZE)
    assert out.past_key_values is None


def test_loaded_model_copies_held_out_prompts() -> None:
    model = load_tiny_decoder()
    prompts, answers = make_copy_batch(500, seed=1)
    assert (prompts[:, -1] == SEP).all()
    assert copy_accuracy(model, prompts, answers) > 0.98
    assert not model.training


def test_generation_with_and_without_the_cache_agree() -> None:
    model = load_tiny_decoder()
    prompts, _ = make_copy_batch(32, seed=7)
    with_cache = model.generate(prompts)
    assert with_cache.shape == (32, prompts.shape[1] + COPY_LEN)
    assert torch.equal(with_cache, model.generate(prompts, use_cache=False))
    with pytest.raises(ValueError, match="max_new_tokens"):
        model.generate(prompts, max_new_tokens=0)


def test_the_cache_gives_the_logits_of_the_full_sequence() -> None:
    model = load_tiny_decoder()
    tokens = _sequences(4, seed=8)
    with torch.no_grad():
        full = model(tokens).logits
        first = model(tokens[:, :7], use_cache=True)
        cache = first.past_key_values
        assert isinstance(cache, KVCache) and cache.get_seq_length() == 7
        rest = model(tokens[:, 7:], past_key_values=cache, use_cache=True)
    assert cache.get_seq_length() == tokens.shape[1] and repr(cache) == "KVCache(layers=2, positions=12)"
    assert torch.allclose(torch.cat([first.logits, rest.logits], dim=1), full, atol=1e-5)


def test_data_is_deterministic_and_leaves_the_global_random_state_alone() -> None:
    state = torch.get_rng_state()
    a_prompts, a_answers = make_copy_batch(16, seed=3)
    assert torch.equal(torch.get_rng_state(), state)
    b_prompts, b_answers = make_copy_batch(16, seed=3)
    assert torch.equal(a_prompts, b_prompts) and torch.equal(a_answers, b_answers)
    assert torch.equal(a_prompts[:, :COPY_LEN], a_answers)
    assert not torch.equal(a_prompts, make_copy_batch(16, seed=4)[0])


def test_accuracy_restores_training_mode() -> None:
    model = load_tiny_decoder().train()
    prompts, answers = make_copy_batch(4, seed=2)
    copy_accuracy(model, prompts, answers)
    assert model.training


def test_training_is_deterministic() -> None:
    first, second = train_tiny_decoder(steps=3, batch_size=8), train_tiny_decoder(steps=3, batch_size=8)
    for (name, a), (_, b) in zip(first.state_dict().items(), second.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    assert not first.training


# --------------------------------------------------------------------------- the attention explorer on it


def test_state_recomputes_the_copy_band_from_hooked_q_and_k() -> None:
    model = load_tiny_decoder()
    tokens = _sequences(4, seed=11)
    state = AttentionState(model, tokens)
    assert state.layers == ["model.layers.0.self_attn", "model.layers.1.self_attn"]
    assert state.heads() == 2 and state.n_samples == 4 and state.forward_passes == 1
    state.select(layer="model.layers.1.self_attn", head=0, sample=1)
    view = state.describe()
    assert view["shape"] == (12, 12) and view["argmax"][COPY_LEN:] == list(range(COPY_LEN))
    np.testing.assert_allclose(state.pattern().sum(axis=1), 1.0, atol=1e-5)
    assert np.triu(state.pattern(), k=1).max() == 0.0  # causal: no query sees a later key
    assert state.token_labels()[0] == [str(int(t)) for t in tokens[1]]


def test_recomputed_patterns_reproduce_what_sdpa_computed() -> None:
    """pattern @ v equals the input of o_proj (the result of the model's own SDPA), for every layer."""
    model = load_tiny_decoder()
    tokens = _sequences(3, seed=12)
    patterns = capture_attention(model, tokens)
    kept: dict[str, torch.Tensor] = {}
    for name, module in decoder_attention_modules(model).items():
        kept.clear()
        handles = [
            module.v_proj.register_forward_hook(lambda m, a, out: kept.update(v=out)),
            module.o_proj.register_forward_pre_hook(lambda m, args: kept.update(z=args[0])),
        ]
        try:
            with torch.no_grad():
                model(tokens)
        finally:
            for handle in handles:
                handle.remove()
        v = kept["v"].view(3, 12, 2, 16).transpose(1, 2)
        mixed = (patterns[name] @ v).transpose(1, 2).reshape(3, 12, 32)
        assert torch.allclose(mixed, kept["z"], atol=1e-5), name


def test_pattern_from_qk_handles_grouped_query_attention() -> None:
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 5, 4 * 8), torch.randn(2, 5, 2 * 8), torch.randn(2, 2, 5, 8)
    pattern = pattern_from_qk(q, k, 8)
    want = F.scaled_dot_product_attention(
        q.view(2, 5, 4, 8).transpose(1, 2),
        k.view(2, 5, 2, 8).transpose(1, 2).repeat_interleave(2, dim=1),
        v.repeat_interleave(2, dim=1),
        is_causal=True,
    )
    assert pattern.shape == (2, 4, 5, 5)
    assert torch.allclose(pattern @ v.repeat_interleave(2, dim=1), want, atol=1e-5)


def test_model_is_left_exactly_as_it_was() -> None:
    model = load_tiny_decoder()
    model.model.layers[0].train()  # a mixed mode must come back as it was
    before = {k: v.clone() for k, v in model.state_dict().items()}
    modes = [m.training for m in model.modules()]
    AttentionState(model, _sequences(2, seed=13))
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert [m.training for m in model.modules()] == modes
    assert not hookviz.list_hooks(model)


def test_explorer_controls_and_static_fallback_on_the_decoder() -> None:
    model = load_tiny_decoder()
    ex = AttentionExplorer(model, _sequences(3, seed=15))
    first = base64.b64decode(ex.out.outputs[0]["data"]["image/png"])
    ex.layer.value = "model.layers.1.self_attn"
    ex.head.value = "mean"
    ex.sample.value = 2
    assert (ex.state.layer, ex.state.head, ex.state.sample) == ("model.layers.1.self_attn", None, 2)
    assert base64.b64decode(ex.out.outputs[0]["data"]["image/png"]) != first
    assert ex.state.describe()["argmax"][COPY_LEN:] == list(range(COPY_LEN))
    picture = ex.show_static()
    assert Image.open(io.BytesIO(picture.png)).size[0] >= 300
    assert ex.state.forward_passes == 1 and not hookviz.list_hooks(model)


def test_layers_can_be_chosen_and_a_wrong_name_is_a_clear_error() -> None:
    model = load_tiny_decoder()
    tokens = _sequences(2, seed=16)
    assert list(capture_attention(model, tokens, layers=["model.layers.1.self_attn"])) == ["model.layers.1.self_attn"]
    with pytest.raises(KeyError, match="model.layers.1.self_attn"):
        capture_attention(model, tokens, layers=["model.layers.1.self_atn"])
    assert not hookviz.list_hooks(model)


def test_every_recomputed_pattern_is_checked_against_what_the_module_computed() -> None:
    """pattern @ v reproduces each layer's input of o_proj: checked, causal, and the caption stays as it was."""
    model = load_tiny_decoder()
    state = AttentionState(model, _sequences(2, seed=17))
    assert {name: (c.mask, c.verified) for name, c in state.checks.items()} == {
        "model.layers.0.self_attn": ("causal", True),
        "model.layers.1.self_attn": ("causal", True),
    }
    assert all(c.error is not None and c.error < 1e-4 for c in state.checks.values())
    assert (
        state.caption()
        == "model.layers.0.self_attn · head 0 (heads 0-1) · sample 0 · 12 queries (rows) x 12 keys (columns)"
    )
    assert "reproduces the module's output" in state.describe()["source"] and not state.not_shown


def test_capture_attention_warns_about_a_layer_it_cannot_show() -> None:
    """Called directly, without checks=: a layer whose pattern is not reproducible is left out with a warning."""

    class QKNormed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.num_heads, self.head_dim = 2, 4
            self.q_proj, self.k_proj, self.v_proj, self.o_proj = (nn.Linear(8, 8) for _ in range(4))
            self.norm = nn.LayerNorm(4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            n, length, _ = x.shape
            q, k, v = (p(x).view(n, length, 2, 4).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
            out = F.scaled_dot_product_attention(self.norm(q), self.norm(k), v, is_causal=True)
            return self.o_proj(out.transpose(1, 2).reshape(n, length, 8))

    torch.manual_seed(0)
    with pytest.warns(UserWarning, match="shows no pattern for the model: .*does not reproduce"):
        patterns = capture_attention(QKNormed().eval(), torch.randn(2, 5, 8) * 3)
    assert patterns == {}
