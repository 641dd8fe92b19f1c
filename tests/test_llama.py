"""hookviz.llama: the course's Hugging Face ``LlamaForCausalLM`` and the hook recipes notebook 14 teaches on it.

* The shipped model: it loads from the package with no network, in eval mode, copies held-out prompts, has
  grouped-query attention (4 query heads on 2 key/value heads), its weights are small; ``CACHE_KEYWORD`` is the
  keyword each layer really receives the cache under; the data, ``random_llama`` and the training are
  deterministic; the cache gives the logits of the whole sequence.
* Notebook 14's recipes (per-head outputs from a pre-hook on ``o_proj``, the pattern recomputed from hooked
  q and k with ``apply_rotary_pos_emb`` and ``repeat_kv``, ``with_kwargs=True`` for ``self_attn``, the prefill
  told from a decode step by the cache length) on fresh random models of three families, built from configs:
  Llama (another GQA shape), Mistral (a sliding window) and Qwen2 (biased q/k/v). Nothing downloads.
* The attention explorer on the shipped model (patterns recomputed from hooked q and k), driven headless.
"""

from __future__ import annotations

import base64
import io
import socket
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import transformers
from PIL import Image
from torch import nn
from torch.nn import functional as F
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb, repeat_kv

import hookviz
from hookviz.llama import (
    CACHE_KEYWORD,
    COPY_LEN,
    PAD,
    SEP,
    TINY_LLAMA_DIR,
    VOCAB_SIZE,
    cache_of,
    copy_accuracy,
    generate_greedy,
    load_tiny_llama,
    make_copy_batch,
    random_llama,
    train_tiny_llama,
)
from hookviz.widgets import AttentionExplorer, AttentionState, capture_attention
from hookviz.widgets.decoder_attention import decoder_attention_modules, pattern_from_qk

OTHER_CACHE_KEYWORD = {"cache": "past_key_values", "past_key_values": "cache"}[CACHE_KEYWORD]


def _sequences(n: int, seed: int) -> torch.Tensor:
    """Teacher-forced copy rows: prompt and answer without the last answer token, ``(n, 12)``."""
    prompts, answers = make_copy_batch(n, seed=seed)
    return torch.cat([prompts, answers], dim=1)[:, :-1]


@pytest.fixture(scope="module")
def tiny() -> transformers.LlamaForCausalLM:
    """The shipped model, shared by the tests that only read it (each leaves it as it found it)."""
    return load_tiny_llama()


# --------------------------------------------------------------------------- the shipped model


def test_the_shipped_weights_load_with_no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("load_tiny_llama tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    model = load_tiny_llama()
    assert isinstance(model, transformers.LlamaForCausalLM) and not model.training
    assert model.config._attn_implementation == "sdpa"
    eager = load_tiny_llama(attn_implementation="eager")
    assert eager.config._attn_implementation == "eager" and not eager.training
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), eager.state_dict().values(), strict=True))


def test_the_weights_are_small_safetensors() -> None:
    folder = Path(str(resources.files("hookviz").joinpath(TINY_LLAMA_DIR)))
    files = {f.name: f.stat().st_size for f in folder.iterdir()}
    assert {"config.json", "model.safetensors"} <= set(files)
    assert sum(files.values()) < 300_000, files


def test_grouped_query_attention_shapes(tiny: transformers.LlamaForCausalLM) -> None:
    config = tiny.config
    assert (config.num_attention_heads, config.num_key_value_heads, config.head_dim) == (4, 2, 8)
    assert (config.vocab_size, config.num_hidden_layers, config.hidden_size) == (VOCAB_SIZE, 2, 32)
    names = {name for name, _ in tiny.named_modules()}
    for name in ("model.embed_tokens", "model.rotary_emb", "model.norm", "lm_head", "model.layers.1.mlp.down_proj"):
        assert name in names
    attn = tiny.model.layers[0].self_attn
    assert all(type(getattr(attn, p)) is nn.Linear for p in ("q_proj", "k_proj", "v_proj", "o_proj"))
    assert (attn.q_proj.out_features, attn.k_proj.out_features, attn.v_proj.out_features) == (32, 16, 16)
    assert attn.o_proj.in_features == 32
    seen: dict[str, torch.Size] = {}
    handles = [getattr(attn, p).register_forward_hook(lambda m, a, out, p=p: seen.update({p: out.shape}))
               for p in ("q_proj", "k_proj", "v_proj")]  # fmt: skip
    try:
        with torch.no_grad():
            out = tiny(_sequences(3, seed=5))
    finally:
        for handle in handles:
            handle.remove()
    assert seen == {"q_proj": (3, 12, 32), "k_proj": (3, 12, 16), "v_proj": (3, 12, 16)}
    assert type(out).__name__ == "CausalLMOutputWithPast" and out.logits.shape == (3, 2 * COPY_LEN, VOCAB_SIZE)


def test_the_model_copies_held_out_prompts(tiny: transformers.LlamaForCausalLM) -> None:
    prompts, answers = make_copy_batch(500, seed=1)  # training uses seeds from 10,000 on
    assert (prompts[:, -1] == SEP).all() and not (prompts == PAD).any()
    assert copy_accuracy(tiny, prompts, answers) > 0.99
    assert not tiny.training


def test_generate_with_and_without_the_cache_agree(tiny: transformers.LlamaForCausalLM) -> None:
    prompts, _ = make_copy_batch(32, seed=7)
    with_cache = tiny.generate(prompts, max_new_tokens=COPY_LEN)  # greedy: the default of the shipped model
    assert with_cache.shape == (32, prompts.shape[1] + COPY_LEN)
    assert torch.equal(with_cache, generate_greedy(tiny, prompts, COPY_LEN))
    assert torch.equal(with_cache, tiny.generate(prompts, max_new_tokens=COPY_LEN, use_cache=False))


def test_cache_keyword_is_what_each_layer_and_attention_receives(tiny: transformers.LlamaForCausalLM) -> None:
    seen: dict[str, dict[str, Any]] = {}
    modules = {"model": tiny, "layer": tiny.model.layers[0], "attention": tiny.model.layers[1].self_attn}
    handles = [module.register_forward_pre_hook(lambda m, args, kwargs, w=where: seen.update({w: kwargs}),
                                                with_kwargs=True)
               for where, module in modules.items()]  # fmt: skip
    tokens = _sequences(4, seed=8)
    try:
        with torch.no_grad():
            first = tiny(tokens[:, :7], use_cache=True)
    finally:
        for handle in handles:
            handle.remove()
    cache = cache_of(first)
    assert cache is not None and cache.get_seq_length() == 7
    for where in ("layer", "attention"):
        assert CACHE_KEYWORD in seen[where] and OTHER_CACHE_KEYWORD not in seen[where], where
        assert cache_of(seen[where]) is cache, where
    assert cache_of(seen["model"]) is None  # not given by the caller: the model makes the cache itself
    with torch.no_grad():
        rest = tiny(tokens[:, 7:], **{CACHE_KEYWORD: cache}, use_cache=True)
        whole = tiny(tokens).logits
        uncached = tiny(tokens, use_cache=False)
    assert cache_of(rest) is cache and cache.get_seq_length() == tokens.shape[1]
    assert torch.allclose(torch.cat([first.logits, rest.logits], dim=1), whole, atol=1e-5)
    assert cache_of(uncached) is None


def test_data_is_deterministic_and_leaves_the_global_random_state_alone() -> None:
    state = torch.get_rng_state()
    a_prompts, a_answers = make_copy_batch(16, seed=3)
    assert torch.equal(torch.get_rng_state(), state)
    b_prompts, b_answers = make_copy_batch(16, seed=3)
    assert torch.equal(a_prompts, b_prompts) and torch.equal(a_answers, b_answers)
    assert torch.equal(a_prompts[:, :COPY_LEN], a_answers) and a_prompts.shape == (16, COPY_LEN + 1)
    assert not torch.equal(a_prompts, make_copy_batch(16, seed=4)[0])


def test_random_llama_is_deterministic() -> None:
    first, second, other = random_llama(5), random_llama(5), random_llama(6)
    assert isinstance(first, transformers.LlamaForCausalLM) and not first.training

    def same(a: nn.Module, b: nn.Module) -> bool:
        return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))

    assert same(first, second) and not same(first, other)
    wide = random_llama(5, num_hidden_layers=3, num_attention_heads=8, head_dim=4)
    assert (len(wide.model.layers), wide.config.num_attention_heads, wide.config.num_key_value_heads) == (3, 8, 2)


def test_accuracy_restores_training_mode() -> None:
    model = load_tiny_llama().train()
    prompts, answers = make_copy_batch(4, seed=2)
    copy_accuracy(model, prompts, answers)
    assert model.training


def test_training_is_deterministic() -> None:
    first, second = train_tiny_llama(steps=3, batch_size=8), train_tiny_llama(steps=3, batch_size=8)
    for (name, a), (_, b) in zip(first.state_dict().items(), second.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    assert not first.training


# --------------------------------------------------------------------------- notebook 14's recipes, three families

_SHAPE = dict(vocab_size=VOCAB_SIZE, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
              num_key_value_heads=2, max_position_embeddings=32, tie_word_embeddings=False, bos_token_id=None,
              eos_token_id=None, pad_token_id=PAD)  # fmt: skip
SLIDING_WINDOW = 8  # shorter than the 12 tokens of a sequence, so the window matters


def _llama() -> nn.Module:
    """Another grouped-query shape than the shipped model: 3 layers, 8 query heads on 2 key/value heads of 4."""
    return random_llama(1, num_hidden_layers=3, num_attention_heads=8, num_key_value_heads=2, head_dim=4)


def _mistral() -> nn.Module:
    torch.manual_seed(2)
    config = transformers.MistralConfig(**_SHAPE, head_dim=8, sliding_window=SLIDING_WINDOW)
    config._attn_implementation = "sdpa"
    return transformers.MistralForCausalLM(config).eval()


def _qwen2() -> nn.Module:
    torch.manual_seed(3)
    config = transformers.Qwen2Config(**_SHAPE)  # head_dim = hidden_size / heads = 8
    config._attn_implementation = "sdpa"
    model = transformers.Qwen2ForCausalLM(config).eval()
    with torch.no_grad():  # the biases start at zero: make them count
        for layer in model.model.layers:
            for projection in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                projection.bias.normal_(0, 0.5)
    return model


FAMILIES: dict[str, Callable[[], nn.Module]] = {"llama": _llama, "mistral": _mistral, "qwen2": _qwen2}


@pytest.fixture(scope="module", params=list(FAMILIES))
def family(request: pytest.FixtureRequest) -> nn.Module:
    return FAMILIES[request.param]()


def test_the_families_have_the_shapes_they_are_meant_to_have(family: nn.Module) -> None:
    config, attn = family.config, family.model.layers[0].self_attn
    assert config.num_key_value_heads < config.num_attention_heads  # grouped-query attention
    assert attn.k_proj.out_features == config.num_key_value_heads * attn.head_dim < attn.q_proj.out_features
    assert attn.o_proj.bias is None
    if config.model_type == "mistral":
        assert config.sliding_window == SLIDING_WINDOW
    if config.model_type == "qwen2":
        assert all(getattr(attn, p).bias is not None for p in ("q_proj", "k_proj", "v_proj"))
    else:
        assert attn.q_proj.bias is None


def _capture(model: nn.Module, tokens: torch.Tensor, layer_index: int) -> dict[str, Any]:
    """Notebook 14's hooks for one forward pass: q, k, v, the rotary (cos, sin), o_proj's input and output."""
    attn, got = model.model.layers[layer_index].self_attn, {}
    handles = [
        attn.q_proj.register_forward_hook(lambda m, a, out: got.update(q=out.detach())),
        attn.k_proj.register_forward_hook(lambda m, a, out: got.update(k=out.detach())),
        attn.v_proj.register_forward_hook(lambda m, a, out: got.update(v=out.detach())),
        attn.register_forward_pre_hook(lambda m, args, kwargs: got.update(rotary=kwargs["position_embeddings"]),
                                       with_kwargs=True),
        attn.o_proj.register_forward_pre_hook(lambda m, args: got.update(z=args[0].detach())),
        attn.o_proj.register_forward_hook(lambda m, args, out: got.update(out=out.detach())),
    ]
    try:
        with torch.no_grad():
            model(tokens)
    finally:
        for handle in handles:
            handle.remove()
    return got


def test_per_head_outputs_from_an_o_proj_pre_hook_add_up(family: nn.Module) -> None:
    heads, tokens = family.config.num_attention_heads, _sequences(4, seed=21)
    for layer_index, layer in enumerate(family.model.layers):
        got, attn = _capture(family, tokens, layer_index), layer.self_attn
        z = got["z"].view(4, 12, heads, attn.head_dim)
        weight = attn.o_proj.weight
        per_head = [z[:, :, h] @ weight[:, h * attn.head_dim:(h + 1) * attn.head_dim].T for h in range(heads)]
        assert torch.allclose(sum(per_head), got["out"], atol=1e-5), layer_index


def _recomputed(model: nn.Module, got: dict[str, Any], *, rotary: bool = True, window: int | None) -> torch.Tensor:
    """Notebook 14's pattern (rotary, ``repeat_kv``, causal, a sliding window if any) times v: ``(N, L, width)``."""
    config, attn = model.config, model.model.layers[0].self_attn
    heads, kv_heads, head_dim = config.num_attention_heads, config.num_key_value_heads, attn.head_dim
    n, length, _ = got["q"].shape
    q = got["q"].view(n, length, heads, head_dim).transpose(1, 2)
    k = got["k"].view(n, length, kv_heads, head_dim).transpose(1, 2)
    v = got["v"].view(n, length, kv_heads, head_dim).transpose(1, 2)
    if rotary:
        q, k = apply_rotary_pos_emb(q, k, *got["rotary"])
    k, v = repeat_kv(k, heads // kv_heads), repeat_kv(v, heads // kv_heads)
    scores = q @ k.transpose(-1, -2) * head_dim**-0.5
    query, key = torch.arange(length)[:, None], torch.arange(length)[None, :]
    allowed = key <= query
    if window is not None:
        allowed &= query - key < window  # Mistral's sliding window: the last `window` positions, this one included
    pattern = scores.masked_fill(~allowed, float("-inf")).softmax(-1)
    return (pattern @ v).transpose(1, 2).reshape(n, length, heads * head_dim)


def test_the_pattern_recomputed_from_q_and_k_reproduces_o_proj_input(family: nn.Module) -> None:
    tokens = _sequences(4, seed=22)
    window = getattr(family.config, "sliding_window", None) if family.config.model_type == "mistral" else None
    for layer_index in range(len(family.model.layers)):
        got = _capture(family, tokens, layer_index)
        assert torch.allclose(_recomputed(family, got, window=window), got["z"], atol=1e-5), layer_index
        assert not torch.allclose(_recomputed(family, got, rotary=False, window=window), got["z"], atol=1e-3)
        if window is not None:  # the window matters here: the plain causal pattern is wrong for Mistral
            assert not torch.allclose(_recomputed(family, got, window=None), got["z"], atol=1e-3)


def test_self_attn_gets_everything_by_keyword_and_a_layer_gets_hidden_states_positionally(family: nn.Module) -> None:
    layer, seen = family.model.layers[1], {}
    handles = [
        layer.self_attn.register_forward_pre_hook(lambda m, args: seen.update(plain=args)),
        layer.self_attn.register_forward_pre_hook(lambda m, args, kwargs: seen.update(args=args, kwargs=kwargs),
                                                  with_kwargs=True),
        layer.input_layernorm.register_forward_hook(lambda m, args, out: seen.update(normed=out)),
        layer.register_forward_pre_hook(lambda m, args, kwargs: seen.update(layer_args=args, layer_kwargs=kwargs),
                                        with_kwargs=True),
    ]
    try:
        with torch.no_grad():
            family(_sequences(2, seed=23))
    finally:
        for handle in handles:
            handle.remove()
    assert seen["plain"] == () and seen["args"] == ()  # a plain pre-hook's args[0] would fail
    assert {"hidden_states", "position_embeddings", CACHE_KEYWORD} <= set(seen["kwargs"])
    assert OTHER_CACHE_KEYWORD not in seen["kwargs"]
    assert torch.equal(seen["kwargs"]["hidden_states"], seen["normed"])
    assert len(seen["layer_args"]) == 1 and seen["layer_args"][0].shape == (2, 12, 32)
    assert CACHE_KEYWORD in seen["layer_kwargs"]


def _phases(model: nn.Module, prompts: torch.Tensor, max_new_tokens: int) -> tuple[list[bool], list[bool]]:
    """For each model call under ``generate()``: prefill by the tokens' shape, and by the cache length."""
    by_shape, by_cache = [], []

    def classify(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        by_shape.append(kwargs["input_ids"].shape[1] > 1)
        by_cache.append(cache_of(kwargs).get_seq_length() == 0)

    handle = model.register_forward_pre_hook(classify, with_kwargs=True)
    try:
        new = generate_greedy(model, prompts, max_new_tokens)
    finally:
        handle.remove()
    assert new.shape == (prompts.shape[0], prompts.shape[1] + max_new_tokens)
    return by_shape, by_cache


def test_the_cache_length_tells_the_prefill_under_generate_even_for_one_token(family: nn.Module) -> None:
    prompts = make_copy_batch(3, seed=24)[0]
    assert _phases(family, prompts, 4) == ([True, False, False, False], [True, False, False, False])
    by_shape, by_cache = _phases(family, torch.tensor([[SEP]]), 3)
    assert by_cache == [True, False, False]
    assert by_shape == [False, False, False]  # the pitfall: by shape, a one-token prompt has no prefill


def test_steering_only_the_decode_steps_leaves_the_prefill_alone(family: nn.Module) -> None:
    """Notebook 14's exercise 3 recipe: a phase-reading pre-hook on the model, the vector added in decode steps."""
    last = family.model.layers[-1]
    vector = torch.randn(family.config.hidden_size, generator=torch.Generator().manual_seed(0)) * 20
    for prompts in (make_copy_batch(3, seed=25)[0], torch.tensor([[SEP], [3]])):
        state, acted = {}, []

        def read_phase(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], state: dict = state) -> None:
            state["decode"] = cache_of(kwargs).get_seq_length() > 0

        def add(module: nn.Module, args: Any, output: torch.Tensor, state: dict = state, acted: list = acted) -> Any:
            acted.append(state["decode"])
            return output + vector if state["decode"] else None

        handles = [family.register_forward_pre_hook(read_phase, with_kwargs=True), last.register_forward_hook(add)]
        try:
            steered = generate_greedy(family, prompts, 3)
        finally:
            for handle in handles:
                handle.remove()
        plain = generate_greedy(family, prompts, 3)
        length = prompts.shape[1]
        assert acted == [False, True, True]
        assert torch.equal(steered[:, length], plain[:, length])  # the first new token comes out of the prefill
        assert not hookviz.list_hooks(family)


# --------------------------------------------------------------------------- the attention explorer on it


def test_state_recomputes_the_copy_band_from_hooked_q_and_k(tiny: transformers.LlamaForCausalLM) -> None:
    tokens = _sequences(4, seed=11)
    state = AttentionState(tiny, tokens)
    assert state.layers == ["model.layers.0.self_attn", "model.layers.1.self_attn"]
    assert state.heads() == 4 and state.n_samples == 4 and state.forward_passes == 1
    state.select(layer="model.layers.0.self_attn", head=2, sample=1)  # a head that looks 6 back (notebook 14 §3)
    view = state.describe()
    assert view["shape"] == (12, 12) and view["argmax"][COPY_LEN:] == list(range(COPY_LEN))
    np.testing.assert_allclose(state.pattern().sum(axis=1), 1.0, atol=1e-5)
    assert np.triu(state.pattern(), k=1).max() == 0.0  # causal: no query sees a later key
    assert state.token_labels()[0] == [str(int(t)) for t in tokens[1]]


def test_recomputed_patterns_reproduce_what_sdpa_computed(tiny: transformers.LlamaForCausalLM) -> None:
    """pattern @ v (the key/value heads repeated) equals the input of o_proj, SDPA's result, for every layer."""
    tokens = _sequences(3, seed=12)
    patterns = capture_attention(tiny, tokens)
    kept: dict[str, torch.Tensor] = {}
    for name, module in decoder_attention_modules(tiny).items():
        kept.clear()
        handles = [
            module.v_proj.register_forward_hook(lambda m, a, out: kept.update(v=out)),
            module.o_proj.register_forward_pre_hook(lambda m, args: kept.update(z=args[0])),
        ]
        try:
            with torch.no_grad():
                tiny(tokens)
        finally:
            for handle in handles:
                handle.remove()
        assert patterns[name].shape == (3, 4, 12, 12), name
        v = repeat_kv(kept["v"].view(3, 12, 2, 8).transpose(1, 2), 2)
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
    model = load_tiny_llama()
    model.model.layers[0].train()  # a mixed mode must come back as it was
    before = {k: v.clone() for k, v in model.state_dict().items()}
    modes = [m.training for m in model.modules()]
    AttentionState(model, _sequences(2, seed=13))
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert [m.training for m in model.modules()] == modes
    assert not hookviz.list_hooks(model)


def test_explorer_controls_and_static_fallback_on_the_llama(tiny: transformers.LlamaForCausalLM) -> None:
    ex = AttentionExplorer(tiny, _sequences(3, seed=15))
    try:
        first = base64.b64decode(ex.out.outputs[0]["data"]["image/png"])
        ex.layer.value = "model.layers.0.self_attn"
        ex.head.value = 3
        ex.sample.value = 2
        assert (ex.state.layer, ex.state.head, ex.state.sample) == ("model.layers.0.self_attn", 3, 2)
        assert base64.b64decode(ex.out.outputs[0]["data"]["image/png"]) != first
        assert ex.state.describe()["argmax"][COPY_LEN:] == list(range(COPY_LEN))
        ex.head.value = "mean"
        assert ex.state.head is None
        picture = ex.show_static()
        assert Image.open(io.BytesIO(picture.png)).size[0] >= 300
        assert ex.state.forward_passes == 1 and not hookviz.list_hooks(tiny)
    finally:
        ex.close()


def test_layers_can_be_chosen_and_a_wrong_name_is_a_clear_error(tiny: transformers.LlamaForCausalLM) -> None:
    tokens = _sequences(2, seed=16)
    assert list(capture_attention(tiny, tokens, layers=["model.layers.1.self_attn"])) == ["model.layers.1.self_attn"]
    with pytest.raises(KeyError, match="model.layers.1.self_attn"):
        capture_attention(tiny, tokens, layers=["model.layers.1.self_atn"])
    assert not hookviz.list_hooks(tiny)


def test_every_recomputed_pattern_is_checked_against_what_the_module_computed(
    tiny: transformers.LlamaForCausalLM,
) -> None:
    """pattern @ v reproduces each layer's input of o_proj: checked, causal, and the caption says so."""
    state = AttentionState(tiny, _sequences(2, seed=17))
    assert {name: (c.mask, c.verified) for name, c in state.checks.items()} == {
        "model.layers.0.self_attn": ("causal", True),
        "model.layers.1.self_attn": ("causal", True),
    }
    assert all(c.error is not None and c.error < 1e-4 for c in state.checks.values())
    assert state.caption() == (
        "model.layers.0.self_attn · head 0 (heads 0-3) · sample 0 · 12 queries (rows) x 12 keys (columns)"
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


# ---------------------------------------------------------------------------------------------- issue 48: bad input
def test_copy_accuracy_puts_every_submodule_s_mode_back() -> None:
    """Defect 2: a frozen (eval) block inside a training model stays in eval after copy_accuracy."""
    model = load_tiny_llama().train()
    model.model.layers[0].eval()
    modes = {name: m.training for name, m in model.named_modules()}
    copy_accuracy(model, *make_copy_batch(4))
    assert {name: m.training for name, m in model.named_modules()} == modes


def test_a_misspelled_config_field_is_refused_with_the_closest_name() -> None:
    """Defect 7: transformers keeps an unknown keyword as an attribute; hookviz refuses it."""
    from hookviz.llama import tiny_llama_config

    with pytest.raises(TypeError, match=r"num_hidden_layer.*closest: 'num_hidden_layers'"):
        random_llama(1, num_hidden_layer=3)
    with pytest.raises(TypeError, match=r"num_attention_head\b.*'num_attention_heads'"):
        tiny_llama_config(num_attention_head=8)
    assert tiny_llama_config(num_hidden_layers=3, attn_implementation="eager").num_hidden_layers == 3


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda: make_copy_batch(-1), ValueError, ["n must be at least 1", "-1"]),
        (lambda: make_copy_batch(2.5), TypeError, ["n must be a whole number", "2.5"]),
        (lambda: make_copy_batch("4"), TypeError, ["n must be a whole number", "'4'"]),
        (lambda: make_copy_batch(2, seed=None), TypeError, ["seed must be a whole number", "None"]),
        (lambda: make_copy_batch(2, seed=2**70), ValueError, ["seed must be", "2**63"]),
        (lambda: make_copy_batch(2, copy_len=-1), ValueError, ["copy_len must be at least 1"]),
        (lambda: random_llama("x"), TypeError, ["seed must be a whole number", "'x'"]),
        (lambda: random_llama(0, num_key_value_heads=3), ValueError,
         ["num_attention_heads (4)", "num_key_value_heads (3)", "divide"]),
        (lambda: random_llama(0, hidden_size=0), ValueError, ["hidden_size must be at least 1"]),
        (lambda: train_tiny_llama(steps=2.5), TypeError, ["steps must be a whole number", "2.5"]),
        (lambda: train_tiny_llama(batch_size=0), ValueError, ["batch_size must be at least 1"]),
        (lambda: train_tiny_llama(lr="0.1"), TypeError, ["lr must be a number"]),
    ],
)
def test_the_helpers_refuse_bad_counts_naming_the_argument(
    call: Callable[[], Any], error: type, words: list[str]
) -> None:
    """Defect 13: each helper names its own argument, instead of torch's or transformers' message."""
    with pytest.raises(error) as info:
        call()
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_generate_and_accuracy_refuse_tokens_and_answers_that_do_not_fit(tiny: transformers.LlamaForCausalLM) -> None:
    prompts, answers = make_copy_batch(4)
    cases = [
        (lambda: generate_greedy(tiny, prompts.float(), 2), TypeError, ["prompts must be token ids", "float32"]),
        (lambda: generate_greedy(tiny, prompts[0], 2), ValueError, ["prompts must be 2-D", "(7,)"]),
        (lambda: generate_greedy(tiny, prompts, 0), ValueError, ["max_new_tokens must be at least 1"]),
        (lambda: generate_greedy(tiny, prompts, 2.5), TypeError, ["max_new_tokens must be a whole number"]),
        (lambda: copy_accuracy(tiny, prompts, answers[:2]), ValueError, ["answers", "4 prompts", "2"]),
        (lambda: copy_accuracy(tiny, prompts, answers[:, :0]), ValueError, ["answers is empty", "(4, 0)"]),
        (lambda: copy_accuracy(tiny, prompts, answers + 20), ValueError, ["answers holds token ids from", "0 to 11"]),
        (lambda: generate_greedy(tiny, prompts - 20, 2), ValueError, ["prompts holds token ids from -"]),
        (lambda: copy_accuracy(tiny, prompts, answers.float()), TypeError, ["answers must be token ids"]),
        (lambda: copy_accuracy("model", prompts, answers), TypeError, ["model must be", "str"]),
    ]
    for call, error, words in cases:
        with pytest.raises(error) as info:
            call()
        for word in words:
            assert word in str(info.value), (word, str(info.value))


def test_random_llama_leaves_the_callers_random_state_alone() -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    first = random_llama(5)
    assert torch.equal(torch.rand(3), expected)  # the caller's stream goes on as if nothing had happened
    again = random_llama(5)
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), again.state_dict().values(), strict=True))


def test_the_helpers_refusals_are_in_the_learners_language() -> None:
    from test_i18n import english_left

    hookviz.set_language("zh")
    try:
        for call in (lambda: make_copy_batch(-1), lambda: random_llama(0, num_hidden_layer=3),
                     lambda: random_llama(0, num_key_value_heads=3), lambda: copy_accuracy(None, *make_copy_batch(2))):
            with pytest.raises((TypeError, ValueError)) as info:
                call()
            assert not english_left(str(info.value)), str(info.value)
    finally:
        hookviz.set_language(None)


def test_counts_that_would_ask_for_more_memory_than_the_machine_has_are_refused() -> None:
    from hookviz.llama import load_tiny_llama, tiny_llama_config

    for call, words in [
        (lambda: make_copy_batch(10**9), ["n must be at most 100,000"]),
        (lambda: make_copy_batch(2, copy_len=10**18), ["copy_len must be at most 4,096"]),
        (lambda: random_llama(0, head_dim=10**9), ["head_dim must be at most 4,096"]),
        (lambda: train_tiny_llama(batch_size=10**18), ["batch_size must be at most 100,000"]),
        (lambda: load_tiny_llama("eage"), ["attn_implementation must be 'sdpa' or 'eager'", "closest: 'eager'"]),
        (lambda: random_llama(0, hidden_act="silux"), ["hidden_act must be", "closest: 'silu'"]),
    ]:
        with pytest.raises(ValueError) as info:
            call()
        for word in words:
            assert word in str(info.value), (word, str(info.value))
    assert tiny_llama_config(num_hidden_layers=np.int64(3)).num_hidden_layers == 3  # a numpy integer is an integer
