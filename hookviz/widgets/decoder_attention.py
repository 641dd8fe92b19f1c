"""Attention patterns of Llama-style decoders, recomputed from q and k captured by hooks.

A decoder written the way Hugging Face writes Llama (separate ``q_proj``/``k_proj``/``v_proj``/``o_proj``
``nn.Linear`` modules, rotary positions handed to the attention module as the keyword argument
``position_embeddings=(cos, sin)``, ``F.scaled_dot_product_attention``) never computes an attention
pattern anyone could hook: SDPA returns only the weighted values. The pattern can be recomputed from
what hooks do see: the outputs of ``q_proj`` and ``k_proj`` and the ``(cos, sin)`` the attention
module is called with. :func:`capture_decoder_attention` registers those hooks through one
:class:`hookviz.capture.HookGroup` for one forward pass (no cache), rotates q and k as the model does,
and returns ``softmax(q kᵀ / √d + causal mask)`` per head. :mod:`hookviz.widgets.attention` uses it
for any model with such modules and no ``nn.MultiheadAttention``, so ``AttentionState`` and
``AttentionExplorer`` work on those models too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from hookviz.capture import HookGroup
from hookviz.text import closest_hint
from hookviz.widgets.common import run_mode

__all__ = ["capture_decoder_attention", "decoder_attention_modules", "pattern_from_qk"]

_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj")


def _head_dim(module: nn.Module) -> int:
    """The module's ``head_dim``, or ``q_proj``'s width divided by its ``num_heads``."""
    head_dim = getattr(module, "head_dim", None)
    if isinstance(head_dim, int) and head_dim > 0:
        return head_dim
    heads = getattr(module, "num_heads", None)
    if isinstance(heads, int) and heads > 0:
        return module.q_proj.out_features // heads  # type: ignore[union-attr]
    raise ValueError(f"{type(module).__name__} has q_proj and k_proj but neither head_dim nor num_heads")


def decoder_attention_modules(model: nn.Module) -> dict[str, nn.Module]:
    """Every attention module with ``nn.Linear`` children ``q_proj``, ``k_proj``, ``v_proj`` and ``o_proj``, by name."""
    found = {}
    for name, module in model.named_modules():
        if all(isinstance(getattr(module, p, None), nn.Linear) for p in _PROJECTIONS) and (
            isinstance(getattr(module, "head_dim", None), int) or isinstance(getattr(module, "num_heads", None), int)
        ):
            found[name] = module
    return found


def _rotate_half(x: Tensor) -> Tensor:
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def pattern_from_qk(
    q: Tensor, k: Tensor, head_dim: int, position_embeddings: tuple[Tensor, Tensor] | None = None
) -> Tensor:
    """Causal attention pattern ``(N, heads, L, L)`` from ``q_proj``'s and ``k_proj``'s outputs ``(N, L, width)``.

    With ``position_embeddings=(cos, sin)`` (each ``(N, L, head_dim)`` or ``(L, head_dim)``) q and k
    are rotated first, as Llama's ``apply_rotary_pos_emb`` does. Fewer key heads than query heads
    (grouped-query attention) are repeated. The scale is ``1/√head_dim``, SDPA's default.
    """
    n, length, _ = q.shape
    q = q.reshape(n, length, -1, head_dim).transpose(1, 2).float()
    k = k.reshape(n, length, -1, head_dim).transpose(1, 2).float()
    if position_embeddings is not None:
        cos, sin = (t.float() for t in position_embeddings)
        if cos.ndim == 2:
            cos, sin = cos.unsqueeze(0), sin.unsqueeze(0)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
    if k.shape[1] != q.shape[1]:
        k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
    scores = q @ k.transpose(-1, -2) / math.sqrt(head_dim)
    causal = torch.ones(length, length, dtype=torch.bool, device=q.device).tril()
    return scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)


def _position_embeddings(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Tensor, Tensor] | None:
    """The ``(cos, sin)`` an attention module was called with (keyword or second positional argument)."""
    value = kwargs.get("position_embeddings", args[1] if len(args) > 1 else None)
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(t, Tensor) for t in value):
        return value  # type: ignore[return-value]
    return None


def capture_decoder_attention(
    model: nn.Module,
    inputs: Any,
    *,
    layers: Sequence[str] | None = None,
    model_kwargs: dict[str, Any] | None = None,
    key: str = "hookviz.attention",
) -> dict[str, Tensor]:
    """Run ``model(inputs, **model_kwargs)`` once (eval mode, no grad, no cache); return recomputed patterns.

    Returns ``{name: pattern}`` for every chosen attention module (see :func:`decoder_attention_modules`)
    that was called, each ``(N, heads, L, L)`` float32 on the CPU (the last call if one runs twice).
    The hooks live only during this call; each submodule's mode is restored afterwards.
    """
    modules = decoder_attention_modules(model)
    if not modules:
        raise ValueError(f"{type(model).__name__} has no attention module with q_proj, k_proj, v_proj and o_proj")
    chosen = list(modules) if layers is None else list(layers)
    for name in chosen:
        if name not in modules:
            raise KeyError(f"no attention module named {name!r}{closest_hint(name, list(modules))}")
    seen: dict[str, dict[str, Any]] = {name: {} for name in chosen}

    def keep_call(name: str) -> Any:
        def hook(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            seen[name]["rotary"] = _position_embeddings(args, kwargs)

        return hook

    def keep_output(name: str, what: str) -> Any:
        def hook(module: nn.Module, args: tuple[Any, ...], output: Tensor) -> None:
            seen[name][what] = output.detach()

        return hook

    with run_mode(model, False), torch.no_grad(), HookGroup(model, key=key) as hooks:
        for name in chosen:
            module = modules[name]
            hooks.register(module, "forward_pre", keep_call(name), with_kwargs=True)
            hooks.register(module.q_proj, "forward", keep_output(name, "q"))
            hooks.register(module.k_proj, "forward", keep_output(name, "k"))
        model(inputs, **(model_kwargs or {}))
    patterns = {}
    for name in chosen:
        got = seen[name]
        if "q" in got and "k" in got:
            pattern = pattern_from_qk(got["q"], got["k"], _head_dim(modules[name]), got.get("rotary"))
            patterns[name] = pattern.cpu()
    return patterns
