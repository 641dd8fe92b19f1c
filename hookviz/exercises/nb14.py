"""Checkers for the exercises of notebook 14 (hooks on a Hugging Face Llama).

Each checker runs the learner's function on the bundled tiny ``LlamaForCausalLM`` and on a second,
untrained one of another shape (three layers, eight query heads sharing two key/value heads), compares the
result with an independent computation (the layers run by hand, or a generation whose phases the checker
counts itself) and checks that no hook is left behind. It prints
``✓ ...`` when everything holds, or raises :class:`~hookviz.exercises.ExerciseNotSolved` with a hint.
Checkers never print a solution.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from hookviz.exercises import ExerciseNotSolved, call_learner_code, checker, expect, passed
from hookviz.hooks_table import list_hooks
from hookviz.i18n import tr
from hookviz.llama import load_tiny_llama, make_copy_batch, random_llama

__all__ = ["check_attention_pattern", "check_head_outputs", "check_steer_new_tokens"]


# --------------------------------------------------------------------------- helpers


def _models() -> list[tuple[str, nn.Module]]:
    """The trained tiny Llama and an untrained one with three layers and 8 query heads on 2 key/value heads."""
    other = random_llama(14, num_hidden_layers=3, num_attention_heads=8, num_key_value_heads=2, head_dim=4)
    return [("the tiny Llama", load_tiny_llama()), ("a 3-layer Llama with 8 query heads", other)]


def _sequences(n: int, seed: int) -> Tensor:
    """Prompts followed by their answers, without the last token: the teacher-forced input, ``(n, 12)``."""
    prompts, answers = make_copy_batch(n, seed=seed)
    return torch.cat([prompts, answers], dim=1)[:, :-1]


def _expect_no_hooks(model: nn.Module, what: str) -> None:
    left = [
        row for row in list_hooks(model, include_global=False)
        if row.kind.startswith(("forward", "backward")) and row.library is None  # not transformers's own
    ]
    expect(
        not left,
        f"{len(left)} hook(s) are still attached after {what} (on {', '.join(sorted({r.where for r in left}))}); "
        "keep every handle and remove it in a `finally:` block",
    )


def _by_hand(model: nn.Module, tokens: Tensor) -> list[dict[str, Tensor]]:
    """Every layer's pattern (rotated and not), scores and per-head output z, computed without hooks or SDPA."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb, repeat_kv

    config = model.config
    heads, kv_heads, dim = config.num_attention_heads, config.num_key_value_heads, config.head_dim
    found = []
    with torch.no_grad():
        n, length = tokens.shape
        x = model.model.embed_tokens(tokens)
        cos, sin = model.model.rotary_emb(x, torch.arange(length).expand(n, -1))
        causal = torch.ones(length, length, dtype=torch.bool).tril()
        for layer in model.model.layers:
            attn = layer.self_attn
            h = layer.input_layernorm(x)
            q = attn.q_proj(h).view(n, length, heads, dim).transpose(1, 2)
            k, v = (p(h).view(n, length, kv_heads, dim).transpose(1, 2) for p in (attn.k_proj, attn.v_proj))
            rq, rk = apply_rotary_pos_emb(q, k, cos, sin)
            rk, k, v = (repeat_kv(t, heads // kv_heads) for t in (rk, k, v))
            scores = rq @ rk.transpose(-1, -2) / math.sqrt(dim)
            pattern = scores.masked_fill(~causal, float("-inf")).softmax(-1)
            unrotated = (q @ k.transpose(-1, -2) / math.sqrt(dim)).masked_fill(~causal, float("-inf")).softmax(-1)
            z = (pattern @ v).transpose(1, 2)  # (N, L, heads, head_dim)
            x = x + attn.o_proj(z.reshape(n, length, heads * dim))
            x = x + layer.mlp(layer.post_attention_layernorm(x))
            found.append({"pattern": pattern, "unrotated": unrotated, "scores": scores, "z": z})
    return found


def _tensor(got: Any, what: str) -> Tensor:
    expect(isinstance(got, Tensor), f"{what} should return a tensor, got {type(got).__name__}")
    return got.detach().float()


# --------------------------------------------------------------------------- exercise 1


@checker
def check_head_outputs(fn: Callable[..., Any]) -> None:
    """Check ``head_outputs(model, tokens, layer_index)`` -> the per-head outputs ``(N, L, heads, head_dim)``."""
    for name, model in _models():
        tokens = _sequences(5, seed=51)
        reference = _by_hand(model, tokens)
        for index, layer in enumerate(model.model.layers):
            attn = layer.self_attn
            got = _tensor(call_learner_code(fn, model, tokens, index), "head_outputs")
            config = model.config
            if got.ndim == 4 and got.shape[2] == config.num_key_value_heads != config.num_attention_heads:
                raise ExerciseNotSolved(
                    f"the result has {got.shape[2]} heads, the number of key/value heads: the per-head outputs are "
                    "one per query head (model.config.num_attention_heads)"
                )
            _expect_no_hooks(model, "head_outputs(...)")
            want = reference[index]["z"]
            n, length, heads, dim = want.shape
            if tuple(got.shape) == (n, length, heads * dim):
                raise ExerciseNotSolved(
                    f"the result has shape {tuple(got.shape)}: o_proj's input with the heads side by side. Split its "
                    "last dimension into (heads, head_dim) with .view(N, L, heads, head_dim)"
                )
            if tuple(got.shape) == (n, heads, length, dim):
                raise ExerciseNotSolved(
                    f"the result has shape {tuple(got.shape)} = (N, heads, L, head_dim); the exercise asks for "
                    "(N, L, heads, head_dim), the order of o_proj's input"
                )
            expect(
                tuple(got.shape) == tuple(want.shape),
                f"for {tr(name)}, layer {index}, the per-head outputs should have shape (N, L, heads, head_dim) = "
                f"{tuple(want.shape)}, got {tuple(got.shape)}",
            )
            if not torch.allclose(got, want, atol=1e-5, rtol=1e-4):
                with torch.no_grad():
                    after = attn.o_proj(want.reshape(n, length, heads * dim)).view(n, length, heads, dim)
                if torch.allclose(got, after, atol=1e-5, rtol=1e-4):
                    raise ExerciseNotSolved(
                        "these values come from o_proj's output, where the heads are already mixed: the per-head "
                        "outputs are o_proj's input, which a forward pre-hook on o_proj receives as args[0]"
                    )
                raise ExerciseNotSolved(
                    f"for {tr(name)}, layer {index}, the values differ from the input of "
                    f"model.model.layers[{index}].self_attn.o_proj in this forward pass"
                )
        expect(not model.training, "head_outputs left the model in training mode")
    passed("per-head outputs of every layer, on two Llama models, match an independent computation; no hook left")


# --------------------------------------------------------------------------- exercise 2


@checker
def check_attention_pattern(fn: Callable[..., Any]) -> None:
    """Check ``attention_pattern(model, tokens, layer_index)`` -> the causal pattern ``(N, heads, L, L)``."""
    for name, model in _models():
        tokens = _sequences(4, seed=52)
        reference = _by_hand(model, tokens)
        for index in range(len(model.model.layers)):
            got = _tensor(call_learner_code(fn, model, tokens, index), "attention_pattern")
            _expect_no_hooks(model, "attention_pattern(...)")
            want = reference[index]["pattern"]
            expect(
                tuple(got.shape) == tuple(want.shape),
                f"for {tr(name)}, layer {index}, the pattern should have shape (N, heads, L, L) = "
                f"{tuple(want.shape)}, got {tuple(got.shape)}",
            )
            if torch.allclose(got, want, atol=1e-5, rtol=1e-4):
                continue
            if torch.allclose(got, reference[index]["unrotated"], atol=1e-5, rtol=1e-4):
                raise ExerciseNotSolved(
                    "the pattern is computed from q and k before the rotary embedding: the model rotates both "
                    "(apply_rotary_pos_emb with the (cos, sin) the attention module receives) before SDPA"
                )
            if torch.allclose(got.sum(-1), torch.ones_like(got.sum(-1)), atol=1e-4) and got.triu(1).abs().max() > 1e-6:
                raise ExerciseNotSolved(
                    "a query attends to later positions: the model is causal, so mask the scores above the "
                    "diagonal with -inf before the softmax"
                )
            head_dim = model.config.head_dim
            causal = torch.ones(want.shape[-1], want.shape[-1], dtype=torch.bool).tril()
            unscaled = (reference[index]["scores"] * math.sqrt(head_dim)).masked_fill(~causal, float("-inf"))
            if torch.allclose(got, unscaled.softmax(-1), atol=1e-5, rtol=1e-4):
                raise ExerciseNotSolved("divide the scores by sqrt(head_dim) before the softmax, as SDPA does")
            if not torch.allclose(got.sum(-1), torch.ones_like(got.sum(-1)), atol=1e-4):
                raise ExerciseNotSolved("each row of a pattern sums to 1: take the softmax over the keys (last dim)")
            raise ExerciseNotSolved(
                f"for {tr(name)}, layer {index}, the pattern differs from softmax(q kᵀ / sqrt(head_dim)) under the "
                "causal mask, with q and k from q_proj and k_proj after the rotary embedding"
            )
    passed("attention patterns of every layer, on two Llama models, match softmax(q kᵀ/√d) with rotary and mask")


# --------------------------------------------------------------------------- exercise 3


def _steered_generate(
    model: nn.Module, prompts: Tensor, vector: Tensor, layer_index: int, new: int, *, prefill: bool, decode: bool
) -> Tensor:
    """Greedy ``generate()`` with ``vector`` added to layer ``layer_index``'s output in the chosen phases.

    The phase is known here by counting the model's calls (the first one is the prefill), not by any test on
    shapes or the cache, so it does not share the learner's way of telling the phases apart.
    """
    calls = []

    def count(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        calls.append(None)

    def add(module: nn.Module, args: tuple[Any, ...], output: Tensor) -> Tensor | None:
        first = len(calls) == 1
        return output + vector if (first and prefill) or (not first and decode) else None

    handles = [model.register_forward_pre_hook(count, with_kwargs=True),
               model.model.layers[layer_index].register_forward_hook(add)]
    try:
        with torch.no_grad():
            return model.generate(prompts, max_new_tokens=new)
    finally:
        for handle in handles:
            handle.remove()


def _steering_vector(model: nn.Module, layer_index: int) -> Tensor:
    """A vector that changes the answers: the difference of mean residuals before a 7 and before a 3."""
    prompts, answers = make_copy_batch(512, seed=53)
    sequences = torch.cat([prompts, answers], dim=1)[:, :-1]
    kept = {}
    handle = model.model.layers[layer_index].register_forward_hook(lambda m, a, out: kept.update(out=out))
    try:
        with torch.no_grad():
            model(sequences, use_cache=False)
    finally:
        handle.remove()
    residual = kept["out"][:, prompts.shape[1] - 1 :]
    vector = residual[answers == 7].mean(0) - residual[answers == 3].mean(0)
    return vector * (2.0 / max(vector.norm().item(), 1e-6)) * residual.norm(dim=-1).mean()


@checker
def check_steer_new_tokens(fn: Callable[..., Any]) -> None:
    """Check ``steer_new_tokens(model, prompts, vector, layer_index, max_new_tokens)`` -> generated tokens."""
    for (name, model), one_token in [(m, one) for m in _models() for one in (False, True)]:
        prompts, _ = make_copy_batch(16, seed=54)
        if one_token:  # a one-token prompt: its prefill has L == 1 like a decode step
            prompts = prompts[:, :1]
        layer_index = len(model.model.layers) - 1
        vector = _steering_vector(model, layer_index)
        new = 6
        want = _steered_generate(model, prompts, vector, layer_index, new, prefill=False, decode=True)
        everywhere = _steered_generate(model, prompts, vector, layer_index, new, prefill=True, decode=True)
        prompt_only = _steered_generate(model, prompts, vector, layer_index, new, prefill=True, decode=False)
        with torch.no_grad():
            plain = model.generate(prompts, max_new_tokens=new)
        got = call_learner_code(fn, model, prompts, vector, layer_index, new)
        _expect_no_hooks(model, "steer_new_tokens(...)")
        expect(
            isinstance(got, Tensor), f"steer_new_tokens should return the generated tokens, got {type(got).__name__}"
        )
        expect(
            tuple(got.shape) == tuple(want.shape),
            f"steer_new_tokens should return the prompts and {new} new tokens, shape {tuple(want.shape)}; got "
            f"{tuple(got.shape)}",
        )
        if torch.equal(got, want):
            continue
        if torch.equal(got, plain):
            raise ExerciseNotSolved(
                "nothing was steered: these are the unsteered tokens. A forward hook changes the layer's output "
                "only by returning the new tensor"
            )
        if torch.equal(got, everywhere):
            if one_token:
                raise ExerciseNotSolved(
                    "with one-token prompts the prefill was steered too: its input has one position, like a decode "
                    "step, so a test on the shape cannot tell them apart. Decide by how many positions the cache "
                    "already holds when the call starts"
                )
            raise ExerciseNotSolved(
                "the prompt was steered too: the hook must add the vector only in decode steps (when the cache "
                "already holds positions), not in the prefill"
            )
        if torch.equal(got, prompt_only):
            raise ExerciseNotSolved(
                "only the prefill was steered: that is the opposite, add the vector in the decode steps only"
            )
        raise ExerciseNotSolved(
            f"for {tr(name)}, the tokens differ from greedy generate() with the vector added to the output of "
            f"model.model.layers[{layer_index}] in every decode step and not in the prefill"
        )
    passed(
        "decode-only steering matches generate() with the phases counted, on two Llama models and one-token "
        "prompts; no hook left"
    )
