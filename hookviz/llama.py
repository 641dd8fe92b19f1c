"""The course's tiny language model: a real Hugging Face ``transformers.LlamaForCausalLM``, trained on a copy task.

Nothing is downloaded. The architecture comes from a :class:`transformers.LlamaConfig` (two layers, four query
heads sharing two key/value heads: **grouped-query attention**, as in Llama 3, Mistral and Qwen2), and the
trained weights ship with hookviz in ``hookviz/assets/tiny_llama/`` (``config.json``, ``model.safetensors``,
``generation_config.json``), loaded with ``from_pretrained`` on that local folder, the way practitioners load
any checkpoint. ``scripts/train_tiny_llama.py`` re-creates them.

The task is synthetic and deterministic: a prompt of ``COPY_LEN`` digit tokens and a separator (``SEP``); the
answer is the same digits again. Copying digit ``j`` means looking exactly ``COPY_LEN`` positions back, which is
attention's job, so the trained model has heads whose pattern is a clean diagonal band.

Two things differ between the ``transformers`` releases the course supports, and this module names them once:
the keyword that carries the KV cache into each layer and the output field that returns it (``cache`` in 5.25,
``past_key_values`` in 5.15): :data:`CACHE_KEYWORD`, :func:`cache_of`.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from torch.nn import functional as F

__all__ = [
    "CACHE_KEYWORD",
    "COPY_LEN",
    "PAD",
    "SEP",
    "TINY_LLAMA_DIR",
    "VOCAB_SIZE",
    "cache_of",
    "copy_accuracy",
    "generate_greedy",
    "load_tiny_llama",
    "make_copy_batch",
    "random_llama",
    "tiny_llama_config",
    "train_tiny_llama",
]

TINY_LLAMA_DIR = "assets/tiny_llama"
COPY_LEN = 6  # digits in a prompt
SEP = 10  # the separator token that ends a prompt
PAD = 11  # padding: never in a prompt, so generate() sees no right-padding
VOCAB_SIZE = 12  # the digits 0..9, SEP and PAD


def _transformers():
    """Import ``transformers`` (a course dependency) with a clear message when it is missing."""
    try:
        import transformers
    except ImportError as error:  # pragma: no cover - the course installs it
        raise ImportError(
            "hookviz.llama needs Hugging Face transformers: pip install 'transformers>=5.15,<6' "
            "(`make lab` installs the course's pin)"
        ) from error
    return transformers


def _cache_keyword() -> str:
    """The keyword a decoder layer receives its cache under, read from the installed transformers' own code."""
    import inspect

    _transformers()
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer

    parameters = inspect.signature(LlamaDecoderLayer.forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"


#: ``"cache"`` (transformers 5.25, the pin) or ``"past_key_values"`` (5.15, Colab's), read from the running release:
#: the keyword that carries the KV cache into
#: the model, each decoder layer and each attention module, and the name of the output field that returns it.
CACHE_KEYWORD: str = _cache_keyword()


def cache_of(mapping: Any) -> Any:
    """The KV cache in a hook's ``kwargs`` or in a model output, whichever keyword this transformers uses.

    ``None`` when there is none (a forward pass with ``use_cache=False``).
    """
    return mapping.get(CACHE_KEYWORD) if hasattr(mapping, "get") else getattr(mapping, CACHE_KEYWORD, None)


def tiny_llama_config(**overrides: Any):
    """The :class:`transformers.LlamaConfig` of the course's model; ``overrides`` change any field.

    Two layers, hidden size 32, four query heads of size 8 and two key/value heads (grouped-query attention:
    each key/value head serves two query heads), a 12-token vocabulary (digits, ``SEP``, ``PAD``), no tied
    embeddings, SDPA attention.
    """
    transformers = _transformers()
    fields = dict(
        vocab_size=VOCAB_SIZE, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=32,
        tie_word_embeddings=False, bos_token_id=None, eos_token_id=None, pad_token_id=PAD,
    )
    fields.update(overrides)
    config = transformers.LlamaConfig(**fields)
    config._attn_implementation = overrides.get("attn_implementation", "sdpa")
    return config


def random_llama(seed: int = 0, **overrides: Any):
    """A fresh, untrained ``LlamaForCausalLM`` of :func:`tiny_llama_config` (with ``overrides``), in eval mode."""
    transformers = _transformers()
    torch.manual_seed(seed)
    return transformers.LlamaForCausalLM(tiny_llama_config(**overrides)).eval()


def _weights_dir() -> Path:
    return Path(str(resources.files("hookviz").joinpath(TINY_LLAMA_DIR)))


def load_tiny_llama(attn_implementation: str = "sdpa"):
    """The trained tiny ``LlamaForCausalLM`` that ships with hookviz, in eval mode (nothing is downloaded).

    ``attn_implementation``: ``"sdpa"`` (the default, as in most deployments) or ``"eager"`` (the one that can
    return attention weights).
    """
    transformers = _transformers()
    progress_bar_was_on = transformers.utils.logging.is_progress_bar_enabled()
    transformers.utils.logging.disable_progress_bar()  # no "Loading weights" bar in a notebook's stored output
    try:
        model = transformers.LlamaForCausalLM.from_pretrained(
            _weights_dir(), attn_implementation=attn_implementation, local_files_only=True
        )
    finally:
        if progress_bar_was_on:
            transformers.utils.logging.enable_progress_bar()
    return model.eval()


def make_copy_batch(n: int = 64, *, seed: int = 0, copy_len: int = COPY_LEN) -> tuple[Tensor, Tensor]:
    """``(prompts, answers)`` for the copy task: ``n`` prompts (digits then ``SEP``) and their digits.

    ``prompts`` has shape ``(n, copy_len + 1)``, ``answers`` ``(n, copy_len)``; both int64. The same
    ``seed`` gives the same batch on every machine; the global random state is not touched.
    """
    generator = torch.Generator().manual_seed(seed)
    digits = torch.randint(0, 10, (n, copy_len), generator=generator)
    prompts = torch.cat([digits, torch.full((n, 1), SEP)], dim=1)
    return prompts, digits.clone()


def generate_greedy(model, prompts: Tensor, max_new_tokens: int, **kwargs: Any) -> Tensor:
    """Hugging Face ``model.generate`` with greedy decoding and no stop token: ``(N, L + max_new_tokens)``."""
    return model.generate(prompts, max_new_tokens=max_new_tokens, min_new_tokens=max_new_tokens,
                          do_sample=False, **kwargs)


@torch.no_grad()
def copy_accuracy(model, prompts: Tensor, answers: Tensor) -> float:
    """Fraction of answer tokens that greedy ``generate()`` gets right (the model's mode is restored after)."""
    was_training = model.training
    model.eval()
    try:
        new = generate_greedy(model, prompts, answers.shape[1])[:, prompts.shape[1]:]
        return (new == answers).float().mean().item()
    finally:
        model.train(was_training)


def train_tiny_llama(steps: int = 2000, batch_size: int = 64, lr: float = 5e-3, seed: int = 0):
    """Train a fresh tiny ``LlamaForCausalLM`` on the copy task with teacher forcing (about a minute).

    Deterministic: the weights come from ``torch.manual_seed(seed)``, batch ``k`` from :func:`make_copy_batch`
    with seed ``seed * 100_003 + 10_000 + k`` (never the seeds below 10,000 that tests and notebooks use).
    AdamW, cross-entropy on the answer positions only.
    """
    model = random_llama(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    for k in range(steps):
        prompts, answers = make_copy_batch(batch_size, seed=seed * 100_003 + 10_000 + k)
        sequence = torch.cat([prompts, answers], dim=1)
        logits = model(sequence[:, :-1], use_cache=False).logits[:, prompts.shape[1] - 1:]
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), answers.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()
