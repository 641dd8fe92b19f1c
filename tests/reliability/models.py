"""Tiny user models for the cases (each built fresh, in well under a second).

The Hugging Face models are built from transformers' own configs here (not through :mod:`hookviz.llama`, whose
helpers are under test): a 2-layer Llama and a 2-layer Qwen2 with grouped-query attention, 12 tokens.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import torch
from torch import Tensor, nn

VOCAB = 12
N_LAYERS = 2


def mlp(frozen_part: bool = True) -> nn.Module:
    """An MLP in train mode; with ``frozen_part``, its first Linear frozen in eval mode (a fine-tuned part)."""
    gen = torch.Generator().manual_seed(1)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
    model.train()
    if frozen_part:
        model[0].eval()
    return model


def mlp_input() -> Tensor:
    return torch.randn(16, 8, generator=torch.Generator().manual_seed(2))


def _hf_config(kind: str, attn: str, **overrides: Any) -> Any:
    import transformers

    fields = dict(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=N_LAYERS, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=32, pad_token_id=11, bos_token_id=None, eos_token_id=None,
        tie_word_embeddings=False,
    )
    fields.update(overrides)
    config = (transformers.LlamaConfig if kind == "llama" else transformers.Qwen2Config)(**fields)
    config._attn_implementation = attn
    return config


@functools.lru_cache(maxsize=8)
def _pristine(kind: str, attn: str) -> nn.Module:
    import transformers

    cls = transformers.LlamaForCausalLM if kind == "llama" else transformers.Qwen2ForCausalLM
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return cls(_hf_config(kind, attn)).eval()


def hf(kind: str = "llama", attn: str = "sdpa", train: bool = False) -> nn.Module:
    """A fresh tiny ``LlamaForCausalLM`` / ``Qwen2ForCausalLM`` (a copy of one never called: no lazy hooks yet)."""
    model = copy.deepcopy(_pristine(kind, attn))
    return model.train() if train else model


def tokens(n: int = 2, length: int = 7, seed: int = 3) -> Tensor:
    return torch.randint(0, 10, (n, length), generator=torch.Generator().manual_seed(seed))


def capture_works(model: nn.Module, attentions: bool) -> str | None:
    """``None`` when transformers' own output capture gives every layer's hidden states (and attentions), as on a
    fresh model; else what is missing. Run on the model itself, after the probes: it is the after-check."""
    x = tokens()
    with torch.no_grad():
        out = model(x, output_hidden_states=True, output_attentions=attentions)
    hidden = out.hidden_states or ()
    if len(hidden) != N_LAYERS + 1:
        return f"model(x, output_hidden_states=True) gives {len(hidden)} hidden states, a fresh model {N_LAYERS + 1}"
    if attentions:
        found = out.attentions or ()
        if len(found) != N_LAYERS or any(a is None for a in found):
            return f"model(x, output_attentions=True) gives {len(found)} attention maps, a fresh model {N_LAYERS}"
    return None
