"""Checkers for the exercises of notebook 12 (hooks in transformers).

Each checker runs the learner's function on the bundled tiny transformer and on a second, untrained
model of another size (four heads), compares the result with an independent computation and checks
that no hook is left behind (and, for attention weights, that the fused fast path is back). It
prints ``✓ ...`` when everything holds, or raises :class:`~hookviz.exercises.ExerciseNotSolved`
with a hint. Checkers never print a solution.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import Tensor, nn

from hookviz.exercises import (
    ExerciseNotSolved,
    call_learner_code,
    checker,
    expect,
    has_no_return,
    missing_return,
    passed,
)
from hookviz.hooks_table import GLOBAL_CALL_KINDS, HookTable, list_global_hooks, list_hooks
from hookviz.i18n import N_, N_name
from hookviz.transformer import TinyTransformer, load_tiny_transformer, make_tiny_batch

__all__ = ["check_attention_weights", "check_patch_position", "check_logit_lens"]


# --------------------------------------------------------------------------- helpers


def _models() -> list[tuple[str, TinyTransformer]]:
    """The trained tiny transformer and an untrained one with four heads (so no answer is hard-coded)."""
    torch.manual_seed(12)
    other = TinyTransformer(d_model=16, nhead=4, dim_feedforward=32).eval()
    # The names go into the hints, so they are shown in the learner's language too.
    return [(N_name("the tiny transformer"), load_tiny_transformer()), (N_name("a 4-head model"), other)]


def _expect_no_hooks(model: nn.Module, what: str, before: set[tuple[str, int]]) -> None:
    left = [row for row in list_hooks(model, include_global=False) if row.kind.startswith(("forward", "backward"))]
    expect(
        not left,
        f"{len(left)} hook(s) are still attached after {what} (on {', '.join(sorted({r.where for r in left}))}); "
        "keep every handle and remove it in a `finally:` block",
    )
    expect_no_new_global_hooks(before, what)


def global_hook_ids() -> set[tuple[str, int]]:
    """The ``(kind, id)`` of every global module hook registered now, read through the inspector."""
    return {(row.kind, row.hook_id) for row in list_global_hooks(optimizer=False) if row.kind in GLOBAL_CALL_KINDS}


def expect_no_new_global_hooks(before: set[tuple[str, int]], what: str) -> None:
    """Fail when ``what`` left a global module hook that was not registered ``before`` it ran."""
    new = sorted(kind for kind, _ in global_hook_ids() - before)
    expect(
        not new,
        f"{len(new)} global module hook(s) ({', '.join(new)}) are still registered after {what}: they run for "
        "every module of every model in this process. Keep the handle of register_module_*_hook and remove it in "
        "a `finally:` block.",
    )


def remove_new_global_hooks(before: set[tuple[str, int]]) -> None:
    """Remove the global module hooks registered since ``before`` (a leaked one would slow every later cell)."""
    HookTable(
        row
        for row in list_global_hooks(optimizer=False)
        if row.kind in GLOBAL_CALL_KINDS and (row.kind, row.hook_id) not in before
    ).remove()


@contextmanager
def _global_hooks_removed_after() -> Iterator[set[tuple[str, int]]]:
    """Yield the global module hooks registered now; on exit remove any added since, and restore the fast path."""
    before, fastpath = global_hook_ids(), torch.backends.mha.get_fastpath_enabled()
    try:
        yield before
    finally:
        remove_new_global_hooks(before)
        torch.backends.mha.set_fastpath_enabled(fastpath)


def _layer_outputs(model: TinyTransformer, tokens: Tensor) -> tuple[Tensor, list[Tensor], list[Tensor]]:
    """Logits, every encoder layer's input and output, computed by calling the layers one by one (no hooks)."""
    with torch.no_grad():
        x = model.embed(tokens) + model.pos_embed(torch.arange(tokens.shape[1]))
        inputs, outputs = [], []
        for layer in model.encoder.layers:
            inputs.append(x)
            x = layer(x)
            outputs.append(x)
        logits = model.head(model.encoder.norm(x))
    return logits, inputs, outputs


def _fast_path_taken(model: TinyTransformer, tokens: Tensor) -> bool:
    """True when, in eval mode without grad, no nn.MultiheadAttention forward ran (the fused layer kernel)."""
    ran: list[str] = []
    handle = torch.nn.modules.module.register_module_forward_hook(lambda m, a, o: ran.append(type(m).__name__))
    try:
        with torch.no_grad():
            model(tokens)
    finally:
        handle.remove()
    return "MultiheadAttention" not in ran


# --------------------------------------------------------------------------- exercise 1


@checker
def check_attention_weights(fn: Callable[..., Any]) -> None:
    """Check ``attention_weights(model, tokens, layer_index)`` -> per-head weights ``(N, heads, L, L)``."""
    with _global_hooks_removed_after() as before:
        _check_attention_weights(fn, before)


def _check_attention_weights(fn: Callable[..., Any], before: set[tuple[str, int]]) -> None:
    for name, model in _models():
        tokens, _ = make_tiny_batch(5, seed=21)
        _, inputs, _ = _layer_outputs(model, tokens)
        for index in range(len(model.encoder.layers)):
            attn = model.encoder.layers[index].self_attn
            with torch.no_grad():
                x = inputs[index]
                _, want = attn(x, x, x, need_weights=True, average_attn_weights=False)
            got = call_learner_code(fn, model, tokens, index)
            _expect_no_hooks(model, "attention_weights(...)", before)
            if has_no_return(fn):
                missing_return(fn, got, N_("attention_weights should return the captured weights"))
            expect(
                got is not None,
                "attention_weights returned None: the layer calls its attention with need_weights=False; "
                "a with_kwargs forward pre-hook on self_attn can ask for the weights",
            )
            expect(isinstance(got, Tensor), f"attention_weights should return a tensor, got {type(got).__name__}")
            heads = attn.num_heads
            if tuple(got.shape) == (len(tokens), tokens.shape[1], tokens.shape[1]):
                raise ExerciseNotSolved(
                    f"the weights have shape {tuple(got.shape)}: averaged over the heads. Ask for one pattern "
                    "per head (average_attn_weights=False)"
                )
            expect(
                tuple(got.shape) == tuple(want.shape),
                f"for {name}, layer {index}, the weights should have shape (N, heads, L, L) = {tuple(want.shape)}, "
                f"got {tuple(got.shape)}",
            )
            expect(
                torch.allclose(got.detach().float(), want, atol=1e-5, rtol=1e-4),
                f"for {name}, layer {index}, the weights differ from those of self_attn of that layer "
                f"({heads} heads); keep the weights of encoder.layers[{index}].self_attn, for this call",
            )
        expect(not model.training, "attention_weights left the model in training mode")
        expect(
            torch.backends.mha.get_fastpath_enabled(),
            "torch.backends.mha.set_fastpath_enabled(False) is still in effect after attention_weights: every "
            "transformer layer in this process now skips its fused fast path. The hooks on self_attn switch it off "
            "for their own layer already; if you turn it off yourself, turn it back on in a `finally:` block.",
        )
        expect(
            _fast_path_taken(model, tokens),
            "after attention_weights the layers no longer take the fused fast path: a hook is still attached",
        )
    passed("per-head attention weights of every layer, on two models; no hook left, the fast path is back")


# --------------------------------------------------------------------------- exercise 2


def _patched_reference(model: TinyTransformer, clean: Tensor, corrupt: Tensor, layer: int, position: int) -> Tensor:
    """The corrupted run with one layer's output at one position taken from the clean run (no hooks)."""
    _, _, clean_outputs = _layer_outputs(model, clean)
    with torch.no_grad():
        x = model.embed(corrupt) + model.pos_embed(torch.arange(corrupt.shape[1]))
        for index, block in enumerate(model.encoder.layers):
            x = block(x)
            if index == layer:
                x = x.clone()
                x[:, position] = clean_outputs[layer][:, position]
        return model.head(model.encoder.norm(x))


@checker
def check_patch_position(fn: Callable[..., Any]) -> None:
    """Check ``patch_position(model, clean, corrupt, layer_index, position)`` -> patched logits."""
    with _global_hooks_removed_after() as before:
        _check_patch_position(fn, before)


def _check_patch_position(fn: Callable[..., Any], before: set[tuple[str, int]]) -> None:
    for name, model in _models():
        clean, _ = make_tiny_batch(6, seed=31)
        corrupt = clean.clone()
        corrupt[:, 2] = (clean[:, 2] + 5) % 10
        with torch.no_grad():
            corrupt_logits = model(corrupt)
            clean_logits = model(clean)
        for layer, position in [(0, 5), (1, 5), (0, 2)]:
            got = call_learner_code(fn, model, clean, corrupt, layer, position)
            _expect_no_hooks(model, "patch_position(...)", before)
            missing_return(fn, got, N_("patch_position should return the logits"))
            expect(isinstance(got, Tensor), f"patch_position should return the logits, got {type(got).__name__}")
            want = _patched_reference(model, clean, corrupt, layer, position)
            expect(
                tuple(got.shape) == tuple(want.shape),
                f"the logits should have shape {tuple(want.shape)} (the corrupted run's), got {tuple(got.shape)}",
            )
            got = got.detach()
            if not torch.allclose(got, want, atol=1e-4, rtol=1e-4):
                if torch.allclose(got, corrupt_logits, atol=1e-4, rtol=1e-4):
                    raise ExerciseNotSolved(
                        "these are the corrupted run's logits, unpatched: your hook changed a copy of the output (or "
                        "rebound the name) and returned None. Return the patched tensor (or assign into the output "
                        "itself, in place)"
                    )
                if torch.allclose(got, clean_logits, atol=1e-4, rtol=1e-4):
                    raise ExerciseNotSolved(
                        "these are the clean run's logits: patch only the one position, in the corrupted run"
                    )
                raise ExerciseNotSolved(
                    f"for {name}, layer {layer}, position {position}: the logits differ from the corrupted run with "
                    "that layer's output at that position taken from the clean run (all samples, that position only)"
                )
    passed("patched logits match an independent computation at three (layer, position) pairs on two models")


# --------------------------------------------------------------------------- exercise 3


@checker
def check_logit_lens(fn: Callable[..., Any]) -> None:
    """Check ``logit_lens(model, tokens)`` -> one ``(N, L, vocab)`` logits tensor per encoder layer."""
    with _global_hooks_removed_after() as before:
        _check_logit_lens(fn, before)


def _check_logit_lens(fn: Callable[..., Any], before: set[tuple[str, int]]) -> None:
    for name, model in _models():
        tokens, _ = make_tiny_batch(7, seed=41)
        logits, _, outputs = _layer_outputs(model, tokens)
        got = call_learner_code(fn, model, tokens)
        _expect_no_hooks(model, "logit_lens(...)", before)
        missing_return(fn, got, N_("logit_lens should return a list of tensors (one per layer)"))
        expect(
            isinstance(got, (list, tuple)) and all(isinstance(t, Tensor) for t in got),
            f"logit_lens should return a list of tensors (one per layer), got {type(got).__name__}",
        )
        expect(
            len(got) == len(outputs),
            f"{name} has {len(outputs)} encoder layers; logit_lens returned {len(got)} tensors",
        )
        for index, (lens, out) in enumerate(zip(got, outputs, strict=True)):
            with torch.no_grad():
                want = model.head(model.encoder.norm(out))
                without_norm = model.head(out)
            lens = lens.detach()
            expect(
                tuple(lens.shape) == tuple(want.shape),
                f"layer {index}: expected logits of shape {tuple(want.shape)}, got {tuple(lens.shape)}",
            )
            if not torch.allclose(lens, want, atol=1e-4, rtol=1e-4):
                if torch.allclose(lens, without_norm, atol=1e-4, rtol=1e-4):
                    raise ExerciseNotSolved(
                        "decode through the final norm first (model.encoder.norm), then model.head: the head was "
                        "trained on normalised vectors"
                    )
                raise ExerciseNotSolved(
                    f"for {name}, layer {index}: the lens logits differ from model.head(model.encoder.norm(output of "
                    f"encoder.layers[{index}]))"
                )
        expect(
            torch.allclose(got[-1].detach(), logits, atol=1e-4, rtol=1e-4),
            "the last layer's lens should equal the model's own logits",
        )
    passed("logit lens of every layer matches an independent computation on two models; no hook left")
