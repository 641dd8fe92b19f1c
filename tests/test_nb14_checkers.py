"""Notebook 14's checkers (on Hugging Face Llama models): a right answer passes, each common wrong answer gets its
own hint, and the decode-by-shape answer that §7 warns against is refused (one-token prompts)."""

from collections.abc import Callable

import pytest
import torch
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb, repeat_kv

from hookviz.exercises import ExerciseNotSolved, nb14
from hookviz.hooks_table import list_hooks
from hookviz.llama import cache_of


def _head_outputs(
    after_o_proj: bool = False, split: bool = True, remove: bool = True, kv_heads: bool = False
) -> Callable[..., torch.Tensor]:
    def head_outputs(model, tokens, layer_index):  # noqa: ANN001, ANN202
        attn = model.model.layers[layer_index].self_attn
        kept = {}
        if after_o_proj:
            handle = attn.o_proj.register_forward_hook(lambda m, a, out: kept.update(z=out.detach()))
        else:
            handle = attn.o_proj.register_forward_pre_hook(lambda m, a: kept.update(z=a[0].detach()))
        try:
            with torch.no_grad():
                model(tokens)
        finally:
            if remove:
                handle.remove()
        z = kept["z"]
        if kv_heads:  # the key/value head count, and what is left over folded into the last dimension
            return z.view(*z.shape[:2], model.config.num_key_value_heads, -1)
        return z.view(*z.shape[:2], model.config.num_attention_heads, attn.head_dim) if split else z

    return head_outputs


def _pattern(rotary: bool = True, causal: bool = True, scale: bool = True) -> Callable[..., torch.Tensor]:
    def attention_pattern(model, tokens, layer_index):  # noqa: ANN001, ANN202
        attn = model.model.layers[layer_index].self_attn
        kept = {}
        handles = [
            attn.q_proj.register_forward_hook(lambda m, a, out: kept.update(q=out.detach())),
            attn.k_proj.register_forward_hook(lambda m, a, out: kept.update(k=out.detach())),
            attn.register_forward_pre_hook(
                lambda m, a, kw: kept.update(rotary=kw["position_embeddings"]), with_kwargs=True
            ),
        ]
        try:
            with torch.no_grad():
                model(tokens)
        finally:
            for handle in handles:
                handle.remove()
        n, length, _ = kept["q"].shape
        heads, kv_heads = model.config.num_attention_heads, model.config.num_key_value_heads
        q = kept["q"].view(n, length, heads, attn.head_dim).transpose(1, 2)
        k = kept["k"].view(n, length, kv_heads, attn.head_dim).transpose(1, 2)
        if rotary:
            q, k = apply_rotary_pos_emb(q, k, *kept["rotary"])
        k = repeat_kv(k, heads // kv_heads)
        scores = q @ k.transpose(-1, -2) / (attn.head_dim**0.5 if scale else 1.0)
        if causal:
            scores = scores.masked_fill(~torch.ones(length, length, dtype=torch.bool).tril(), float("-inf"))
        return scores.softmax(-1)

    return attention_pattern


def _steer(phase: str = "decode", returns: bool = True, by_shape: bool = False) -> Callable[..., torch.Tensor]:
    def steer_new_tokens(model, prompts, vector, layer_index, max_new_tokens):  # noqa: ANN001, ANN202
        state = {"decode": False}

        def which_phase(module, args, kwargs):  # noqa: ANN001, ANN202
            if by_shape:  # the pitfall: "one position means a decode step"
                state["decode"] = kwargs["input_ids"].shape[1] == 1
                return
            cache = cache_of(kwargs)
            state["decode"] = cache is not None and cache.get_seq_length() > 0

        def add(module, args, output):  # noqa: ANN001, ANN202
            wanted = {"decode": state["decode"], "all": True, "prefill": not state["decode"]}[phase]
            if wanted:
                steered = output + vector
                return steered if returns else None
            return None

        handles = [
            model.register_forward_pre_hook(which_phase, with_kwargs=True),
            model.model.layers[layer_index].register_forward_hook(add),
        ]
        try:
            return model.generate(prompts, max_new_tokens=max_new_tokens)
        finally:
            for handle in handles:
                handle.remove()

    return steer_new_tokens


def _hint(check: Callable[..., None], answer: Callable[..., object]) -> str:
    with pytest.raises(ExerciseNotSolved) as info:
        check(answer)
    return str(info.value)


def test_right_answers_pass(capsys: pytest.CaptureFixture[str]) -> None:
    nb14.check_head_outputs(_head_outputs())
    nb14.check_attention_pattern(_pattern())
    nb14.check_steer_new_tokens(_steer())
    assert capsys.readouterr().out.count("✓") == 3


def test_head_outputs_wrong_answers_get_their_hints() -> None:
    assert "forward pre-hook on o_proj" in _hint(nb14.check_head_outputs, _head_outputs(after_o_proj=True))
    assert "Split its last dimension" in _hint(nb14.check_head_outputs, _head_outputs(split=False))
    assert "still attached" in _hint(nb14.check_head_outputs, _head_outputs(remove=False))
    assert "number of key/value heads" in _hint(nb14.check_head_outputs, _head_outputs(kv_heads=True))


def test_attention_pattern_wrong_answers_get_their_hints() -> None:
    assert "rotary" in _hint(nb14.check_attention_pattern, _pattern(rotary=False))
    assert "mask the scores" in _hint(nb14.check_attention_pattern, _pattern(causal=False))
    assert "sqrt(head_dim)" in _hint(nb14.check_attention_pattern, _pattern(scale=False))


def test_steering_wrong_answers_get_their_hints() -> None:
    assert "the prompt was steered too" in _hint(nb14.check_steer_new_tokens, _steer("all"))
    assert "only the prefill was steered" in _hint(nb14.check_steer_new_tokens, _steer("prefill"))
    assert "nothing was steered" in _hint(nb14.check_steer_new_tokens, _steer(returns=False))
    # Deciding "decode" by one position passes on 7-token prompts and fails on one-token prompts (§7's pitfall).
    assert "cannot tell them apart" in _hint(nb14.check_steer_new_tokens, _steer(by_shape=True))


def test_the_stubs_fail_with_the_not_solved_message() -> None:
    def stub(*args):  # noqa: ANN002, ANN202
        raise NotImplementedError

    for check in (nb14.check_head_outputs, nb14.check_attention_pattern, nb14.check_steer_new_tokens):
        assert "not solved yet" in _hint(check, stub)


def test_the_checkers_reference_is_what_sdpa_computes() -> None:
    """The by-hand computation the checkers compare with is what the model's SDPA computes, on both models."""
    for _, model in nb14._models():
        tokens = nb14._sequences(3, seed=5)
        last = len(model.model.layers) - 1
        assert torch.allclose(nb14._by_hand(model, tokens)[last]["z"], _head_outputs()(model, tokens, last), atol=1e-5)
        assert len(list_hooks(model, include_global=False)) == 0
