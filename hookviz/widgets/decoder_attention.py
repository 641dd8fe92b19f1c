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

A recomputed pattern is only right if the module computes attention that way. Another module with the
same four projections may not: an encoder without the causal mask, another scale (Gemma's
``query_pre_attn_scalar``), a norm of q and k after the projections (Qwen3, OLMo-2), a padding mask, a
gate on the output. So every pattern is **checked**: the input of ``o_proj`` (what the module's own
attention produced) must equal ``pattern @ v`` with the ``v_proj`` output of the same call. The causal
pattern is tried first, then the one without a mask; one that reproduces the module's output is kept and
says which it is, and a layer that neither reproduces is left out with the reason
(:class:`PatternCheck`), never drawn wrong.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from hookviz.capture import HookGroup
from hookviz.i18n import N_
from hookviz.text import closest_hint
from hookviz.widgets.common import run_mode, run_model, using_model

__all__ = ["PatternCheck", "capture_decoder_attention", "check_pattern", "decoder_attention_modules", "pattern_from_qk"]

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
    q: Tensor,
    k: Tensor,
    head_dim: int,
    position_embeddings: tuple[Tensor, Tensor] | None = None,
    *,
    causal: bool = True,
) -> Tensor:
    """Attention pattern ``(N, heads, L, S)`` from ``q_proj``'s ``(N, L, width)`` and ``k_proj``'s ``(N, S, width)``.

    With ``position_embeddings=(cos, sin)`` (each ``(N, L, head_dim)`` or ``(L, head_dim)``) q and k
    are rotated first, as Llama's ``apply_rotary_pos_emb`` does. Fewer key heads than query heads
    (grouped-query attention) are repeated. The scale is ``1/√head_dim``, SDPA's default. ``causal``:
    query ``i`` sees keys up to ``i`` (counted from the end when there are more keys than queries).
    """
    n, length, _ = q.shape
    keys = k.shape[1]
    q = q.reshape(n, length, -1, head_dim).transpose(1, 2).float()
    k = k.reshape(n, keys, -1, head_dim).transpose(1, 2).float()
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
    if causal:
        allowed = torch.ones(length, keys, dtype=torch.bool, device=q.device).tril(diagonal=keys - length)
        scores = scores.masked_fill(~allowed, float("-inf"))
    return scores.softmax(dim=-1)


@dataclass
class PatternCheck:
    """How one layer's recomputed pattern compares with what the module really did.

    ``mask`` is ``"causal"`` or ``"none"`` for the variant kept, ``None`` when no pattern is shown.
    ``verified``: ``pattern @ v`` reproduced the module's input of ``o_proj`` (``error`` is the largest
    difference relative to the largest value of that input); ``False`` with a pattern shown means it
    could not be checked. ``note`` says it in words (empty for the usual, checked causal case).
    """

    layer: str
    mask: str | None
    verified: bool
    error: float | None
    note: str = ""

    @property
    def shown(self) -> bool:
        """True when the layer has a pattern to show."""
        return self.mask is not None


def _tolerance(dtype: torch.dtype) -> float:
    """Largest relative difference that still counts as "the same attention" for values of ``dtype``."""
    return 1e-3 if dtype in (torch.float32, torch.float64) else 3e-2


def check_pattern(pattern: Tensor, v: Tensor, attended: Tensor, head_dim: int) -> float:
    """Largest ``|pattern @ v - attended|`` relative to ``max |attended|``: 0 when the pattern is what the module used.

    ``pattern`` is ``(N, heads, L, S)``, ``v`` ``v_proj``'s output ``(N, S, kv_heads * head_dim)`` (fewer
    key-value heads are repeated, as grouped-query attention does), ``attended`` the input of ``o_proj``
    ``(N, L, heads * head_dim)``.
    """
    n, heads, length, keys = pattern.shape
    values = v.reshape(n, keys, -1, head_dim).transpose(1, 2).float()
    if values.shape[1] != heads:
        values = values.repeat_interleave(heads // values.shape[1], dim=1)
    mixed = (pattern.float() @ values).transpose(1, 2).reshape(attended.shape)
    target = attended.float()
    scale = float(target.abs().max()) if target.numel() else 0.0
    return float((mixed - target).abs().max()) / max(scale, 1e-12) if target.numel() else 0.0


_FAILED = (
    "hookviz shows no pattern for {layer}: softmax(q kᵀ/√d), with a causal mask or without one, does not reproduce "
    "what the module passed to o_proj (largest difference {error:.2g} of its largest value). The module computes its "
    "attention some other way hookviz cannot see from q_proj and k_proj: a norm of q and k after the projections "
    "(Qwen3, OLMo-2), another scale, an attention or padding mask, a gate. To see its pattern, have the module "
    "compute the weights itself and return or keep them"
)


def _decide(name: str, got: dict[str, Any], head_dim: int) -> tuple[Tensor | None, PatternCheck]:
    """The pattern to show for one layer's recorded call (or none), and how it was checked."""
    try:
        causal = pattern_from_qk(got["q"], got["k"], head_dim, got.get("rotary"), causal=True)
    except (RuntimeError, ValueError, IndexError) as exc:
        note = (
            N_(f"hookviz shows no pattern for {name}: q_proj's and k_proj's outputs "
            f"{tuple(got['q'].shape)} and {tuple(got['k'].shape)} do not split into heads of {head_dim} the way "
            f"Llama's attention does ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})")
        )
        return None, PatternCheck(name, None, False, None, note)
    if "v" not in got or "attended" not in got:
        missing = "v_proj" if "v" not in got else "o_proj"
        note = (
            f"{name}: recomputed assuming a causal mask and a 1/√d scale, not checked ({missing} was not called, so "
            "hookviz could not compare it with what the module computed)"
        )
        return causal, PatternCheck(name, "causal", False, None, note)
    full = pattern_from_qk(got["q"], got["k"], head_dim, got.get("rotary"), causal=False)
    try:
        errors = {
            mask: check_pattern(p, got["v"], got["attended"], head_dim)
            for mask, p in (("causal", causal), ("none", full))
        }
    except (RuntimeError, ValueError, IndexError):
        note = (
            f"{name}: recomputed assuming a causal mask and a 1/√d scale, not checked (o_proj's input "
            f"{tuple(got['attended'].shape)} is not the heads' outputs side by side)"
        )
        return causal, PatternCheck(name, "causal", False, None, note)
    tolerance = _tolerance(got["attended"].dtype)
    if errors["causal"] <= tolerance:
        note = ""
        if errors["none"] <= tolerance and not torch.allclose(full, causal, atol=0.05):
            note = (
                f"{name}: shown with a causal mask, but its values cannot tell a causal pattern from one "
                "without a mask (both reproduce the module's output)"
            )
        return causal, PatternCheck(name, "causal", True, errors["causal"], note)
    if errors["none"] <= tolerance:
        note = f"{name}: no causal mask (every query sees every key), checked against the module's output"
        return full, PatternCheck(name, "none", True, errors["none"], note)
    best = min(errors.values())
    return None, PatternCheck(name, None, False, best, _FAILED.format(layer=name, error=best))


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
    checks: dict[str, PatternCheck] | None = None,
) -> dict[str, Tensor]:
    """Run ``model(inputs, **model_kwargs)`` once (eval mode, no grad, no cache); return recomputed patterns.

    Returns ``{name: pattern}`` for every chosen attention module (see :func:`decoder_attention_modules`)
    that was called and whose pattern reproduces what the module computed, each ``(N, heads, L, S)``
    float32 on the CPU (the last call if one runs twice). Pass a dict as ``checks`` to get a
    :class:`PatternCheck` for every called layer, the ones left out included (with the reason);
    without it, a layer left out is reported as a ``UserWarning``.
    The model is claimed for the call (a model a ``TrainingMonitor`` trains is refused); the hooks live
    only during this call; each submodule's mode is restored afterwards.
    """
    if model_kwargs is not None and not isinstance(model_kwargs, dict):
        raise TypeError(f"model_kwargs must be a dict of keyword arguments for the model, not {model_kwargs!r}")
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
            seen[name].clear()  # a second call of the module: keep only the last one, all of a piece
            seen[name]["rotary"] = _position_embeddings(args, kwargs)

        return hook

    def keep_output(name: str, what: str) -> Any:
        def hook(module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
            if isinstance(output, Tensor):
                seen[name][what] = output.detach()

        return hook

    def keep_input(name: str) -> Any:
        def hook(module: nn.Module, args: tuple[Any, ...]) -> None:
            if args and isinstance(args[0], Tensor):
                seen[name]["attended"] = args[0].detach()

        return hook

    owner = object()
    with (
        using_model(model, owner, N_("an AttentionExplorer"), "AttentionExplorer"),
        run_mode(model, False),
        torch.no_grad(),
        HookGroup(model, key=key) as hooks,
    ):
        for name in chosen:
            module = modules[name]
            hooks.register(module, "forward_pre", keep_call(name), with_kwargs=True)
            hooks.register(module.q_proj, "forward", keep_output(name, "q"))
            hooks.register(module.k_proj, "forward", keep_output(name, "k"))
            hooks.register(module.v_proj, "forward", keep_output(name, "v"))
            hooks.register(module.o_proj, "forward_pre", keep_input(name))
        run_model(model, inputs, "AttentionExplorer", **(model_kwargs or {}))
    patterns = {}
    for name in chosen:
        got = seen[name]
        if "q" not in got or "k" not in got:
            continue
        pattern, check = _decide(name or "the model", got, _head_dim(modules[name]))
        if checks is not None:
            checks[name] = check
        elif not check.shown:  # nobody asked for the checks: a layer left out must not go unnoticed
            warnings.warn(check.note, UserWarning, stacklevel=2)
        if pattern is not None:
            patterns[name] = pattern.cpu()
    return patterns
