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
from torch import Tensor, nn
from torch.nn import functional as F

from hookviz.guards import check_int, check_number, run_mode
from hookviz.i18n import tr
from hookviz.text import closest_names

__all__ = [
    "ATTENTION",
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
    if isinstance(mapping, (str, bytes, int, float, list, tuple)) or mapping is None:
        raise TypeError(tr(
            f"cache_of: mapping must be a hook's kwargs (a dict) or a model's output, not {type(mapping).__name__}"
        ))
    return mapping.get(CACHE_KEYWORD) if hasattr(mapping, "get") else getattr(mapping, CACHE_KEYWORD, None)


#: The config fields that must be whole numbers of at least 1 when an override gives them.
_COUNT_FIELDS = (
    "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "head_dim", "max_position_embeddings",
)
#: A seed the random generators take: a whole number from 0 to 2**63 - 1.
_SEED_LIMIT = 2**63
#: The largest count a config field, a batch or a prompt may have here (the course's model is tiny: a count in the
#: billions would only ask torch for more memory than the machine has).
_MAX_COUNT = 4096
_MAX_BATCH = 100_000
#: The attention implementations the course's model runs with (``"eager"`` can return the attention weights).
ATTENTION = ("sdpa", "eager")


def _check_attention(value: Any) -> str:
    """``value`` when it is one of :data:`ATTENTION`, else a clear error with the closest name."""
    if not isinstance(value, str) or value not in ATTENTION:
        close = ", ".join(map(repr, closest_names(str(value), ATTENTION)))
        raise ValueError(tr(
            f"attn_implementation must be 'sdpa' or 'eager' (the course's CPU model runs with these), not {value!r}"
            + (f"; closest: {close}" if close else "")
        ))
    return value


def _config_fields(config_class: type) -> set[str]:
    """The keywords ``config_class`` knows: its own parameters, its attributes and those of every config."""
    import dataclasses
    import inspect

    known = set(inspect.signature(config_class.__init__).parameters) - {"self", "kwargs"}
    if dataclasses.is_dataclass(config_class):
        known |= {f.name for f in dataclasses.fields(config_class)}
    known |= {name.lstrip("_").removesuffix("_internal") for name in vars(config_class())}
    return known | {"attn_implementation", "output_attentions", "torch_dtype"}


def _check_overrides(overrides: dict[str, Any], who: str) -> None:
    """Refuse a field ``LlamaConfig`` does not have (transformers would keep it silently) and counts below 1."""
    transformers = _transformers()
    known = _config_fields(transformers.LlamaConfig)
    for name in overrides:
        if name not in known:
            close = ", ".join(map(repr, closest_names(name, known)))
            if close:
                raise TypeError(tr(f"{who}: LlamaConfig has no field {name!r} (transformers would keep a misspelled "
                                   f"field and build the default model); closest: {close}"))
            raise TypeError(tr(f"{who}: LlamaConfig has no field {name!r} (transformers would keep a misspelled field "
                               "and build the default model)"))
    for name in _COUNT_FIELDS:
        if name in overrides:  # converted: transformers' config refuses a numpy or torch integer
            overrides[name] = check_int(overrides[name], name, minimum=1, maximum=_MAX_COUNT,
                                        fix="the course's model is tiny: 2 layers, hidden size 32")
    if "attn_implementation" in overrides:
        _check_attention(overrides["attn_implementation"])
    if "hidden_act" in overrides:
        from transformers.activations import ACT2FN

        act = overrides["hidden_act"]
        if not isinstance(act, str) or act not in ACT2FN:
            close = ", ".join(map(repr, closest_names(str(act), ACT2FN)))
            raise ValueError(tr(f"hidden_act must be the name of an activation transformers knows, not {act!r}"
                                + (f"; closest: {close}" if close else "")))


def _check_seed(seed: Any, name: str = "seed") -> int:
    seed = check_int(seed, name, minimum=0)
    if seed >= _SEED_LIMIT:
        raise ValueError(tr(f"{name} must be below 2**63 (what torch's random generator takes), not {seed}"))
    return seed


def tiny_llama_config(**overrides: Any):
    """The :class:`transformers.LlamaConfig` of the course's model; ``overrides`` change any field.

    Two layers, hidden size 32, four query heads of size 8 and two key/value heads (grouped-query attention:
    each key/value head serves two query heads), a 12-token vocabulary (digits, ``SEP``, ``PAD``), no tied
    embeddings, SDPA attention. A field ``LlamaConfig`` does not have (a misspelling) is refused, with the closest
    names; so are counts below 1 and query heads that the key/value heads do not divide.
    """
    transformers = _transformers()
    _check_overrides(overrides, "tiny_llama_config")
    fields = dict(
        vocab_size=VOCAB_SIZE, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=32,
        tie_word_embeddings=False, bos_token_id=None, eos_token_id=None, pad_token_id=PAD,
    )
    fields.update(overrides)
    heads, kv_heads = fields["num_attention_heads"], fields["num_key_value_heads"]
    if heads % kv_heads:
        raise ValueError(tr(
            f"num_attention_heads ({heads}) must be a multiple of num_key_value_heads ({kv_heads}): each key/value "
            "head serves the same number of query heads; choose num_key_value_heads that divide it"
        ))
    config = transformers.LlamaConfig(**fields)
    config._attn_implementation = overrides.get("attn_implementation", "sdpa")
    return config


def random_llama(seed: int = 0, **overrides: Any):
    """A fresh, untrained ``LlamaForCausalLM`` of :func:`tiny_llama_config` (with ``overrides``), in eval mode.

    The weights come from ``torch.manual_seed(seed)`` inside :func:`torch.random.fork_rng`: the caller's global
    random state is left as it was.
    """
    transformers = _transformers()
    seed = _check_seed(seed)
    config = tiny_llama_config(**overrides)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return transformers.LlamaForCausalLM(config).eval()


def _weights_dir() -> Path:
    return Path(str(resources.files("hookviz").joinpath(TINY_LLAMA_DIR)))


def load_tiny_llama(attn_implementation: str = "sdpa"):
    """The trained tiny ``LlamaForCausalLM`` that ships with hookviz, in eval mode (nothing is downloaded).

    ``attn_implementation``: ``"sdpa"`` (the default, as in most deployments) or ``"eager"`` (the one that can
    return attention weights).
    """
    transformers = _transformers()
    _check_attention(attn_implementation)
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
    n = check_int(n, "n", minimum=1, maximum=_MAX_BATCH, fix="how many prompts, e.g. make_copy_batch(64)")
    seed = _check_seed(seed)
    copy_len = check_int(copy_len, "copy_len", minimum=1, maximum=_MAX_COUNT)
    generator = torch.Generator().manual_seed(seed)
    digits = torch.randint(0, 10, (n, copy_len), generator=generator)
    prompts = torch.cat([digits, torch.full((n, 1), SEP)], dim=1)
    return prompts, digits.clone()


def _check_model(model: Any, who: str) -> None:
    if not isinstance(model, nn.Module) or not hasattr(model, "generate"):
        raise TypeError(tr(
            f"{who}: model must be a Hugging Face causal language model (load_tiny_llama(), random_llama()), not "
            f"{type(model).__name__}"
        ))


def _check_tokens(tokens: Any, name: str) -> Tensor:
    """``tokens`` when it is a 2-D integer tensor (a batch of token ids), else a clear error."""
    integer = isinstance(tokens, Tensor) and not (tokens.is_floating_point() or tokens.is_complex())
    if not integer or tokens.dtype == torch.bool:
        what = str(tokens.dtype).removeprefix("torch.") if isinstance(tokens, Tensor) else type(tokens).__name__
        raise TypeError(tr(
            f"{name} must be token ids (an integer tensor, e.g. from make_copy_batch), not {what}; "
            f"use {name}.long() for token ids stored as floats"
        ))
    if tokens.ndim != 2:
        raise ValueError(tr(
            f"{name} must be 2-D (samples, tokens), not of shape {tuple(tokens.shape)}; "
            f"use {name}[None] for one sample"
        ))
    if tokens.numel() == 0:
        raise ValueError(tr(f"{name} is empty (shape {tuple(tokens.shape)}): give at least one sample of one token"))
    return tokens


def _check_vocabulary(model: Any, tokens: Tensor, name: str) -> None:
    """Refuse token ids the model's embedding does not have (torch would say "index out of range in self")."""
    size = getattr(getattr(model, "config", None), "vocab_size", None)
    low, high = int(tokens.min()), int(tokens.max())
    if low < 0 or (isinstance(size, int) and high >= size):
        raise ValueError(tr(
            f"{name} holds token ids from {low} to {high}, and the model knows 0 to {size - 1}: "
            "give ids of its vocabulary (make_copy_batch gives the copy task's)"
        ))


def generate_greedy(model, prompts: Tensor, max_new_tokens: int, **kwargs: Any) -> Tensor:
    """Hugging Face ``model.generate`` with greedy decoding and no stop token: ``(N, L + max_new_tokens)``."""
    _check_model(model, "generate_greedy")
    prompts = _check_tokens(prompts, "prompts")
    _check_vocabulary(model, prompts, "prompts")
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens", minimum=1, maximum=_MAX_COUNT)
    try:
        return model.generate(prompts, max_new_tokens=max_new_tokens, min_new_tokens=max_new_tokens,
                              do_sample=False, **kwargs)
    except ValueError as error:  # transformers' word for a misspelled keyword: name it as an argument of ours
        if "model_kwargs" not in str(error) or not kwargs:
            raise
        raise TypeError(tr(
            f"generate_greedy: model.generate() does not take the keyword argument(s) {sorted(kwargs)}: "
            "check their spelling (they go to transformers' generate())"
        )) from error


@torch.no_grad()
def copy_accuracy(model, prompts: Tensor, answers: Tensor) -> float:
    """Fraction of answer tokens that greedy ``generate()`` gets right (every submodule's mode is restored after)."""
    _check_model(model, "copy_accuracy")
    prompts, answers = _check_tokens(prompts, "prompts"), _check_tokens(answers, "answers")
    if len(answers) != len(prompts):
        raise ValueError(tr(
            f"copy_accuracy: answers has {len(answers)} rows for {len(prompts)} prompts: pass the answers of the same "
            "prompts (make_copy_batch gives both)"
        ))
    _check_vocabulary(model, prompts, "prompts")
    _check_vocabulary(model, answers, "answers")
    with run_mode(model, False):
        new = generate_greedy(model, prompts, answers.shape[1])[:, prompts.shape[1]:]
        return (new == answers).float().mean().item()


def train_tiny_llama(steps: int = 2000, batch_size: int = 64, lr: float = 5e-3, seed: int = 0):
    """Train a fresh tiny ``LlamaForCausalLM`` on the copy task with teacher forcing (about a minute).

    Deterministic: the weights come from ``torch.manual_seed(seed)``, batch ``k`` from :func:`make_copy_batch`
    with seed ``seed * 100_003 + 10_000 + k`` (never the seeds below 10,000 that tests and notebooks use).
    AdamW, cross-entropy on the answer positions only. The caller's global random state is left as it was.
    """
    steps = check_int(steps, "steps", minimum=0)
    batch_size = check_int(batch_size, "batch_size", minimum=1, maximum=_MAX_BATCH)
    lr = check_number(lr, "lr", above=0, maximum=10)
    seed = _check_seed(seed)
    _check_seed(seed * 100_003 + 10_000 + steps, "seed * 100_003 + 10_000 + steps")
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
