"""The course's tiny transformer: a two-layer ``nn.TransformerEncoder`` that reverses a row of digits.

The task is synthetic and deterministic: the input is a row of ``SEQ_LEN`` digit tokens (``0``-``9``)
and the target at position ``i`` is the token at position ``SEQ_LEN - 1 - i``. Moving a token from
one position to another is attention's job, so a trained model has a head whose pattern is a clean
anti-diagonal: a pattern a notebook can check with an ``assert``. The trained weights ship in
``hookviz/assets/tiny_transformer.pt`` (well under 1 MB); ``scripts/train_tiny_transformer.py``
re-creates them.

Layer names (``named_modules()``): ``embed`` (token embedding), ``pos_embed`` (learned positions),
``encoder.layers.0`` and ``encoder.layers.1`` (``nn.TransformerEncoderLayer``, post-norm, two heads,
``batch_first=True``, no dropout), inside each ``self_attn`` (``nn.MultiheadAttention``) with its
``out_proj``, ``linear1``, ``linear2``, ``norm1``, ``norm2`` and the dropouts; ``encoder.norm``
(the final ``LayerNorm``) and ``head`` (``nn.Linear`` to the vocabulary).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from hookviz.guards import check_int, check_module, check_number, check_seed, run_mode, run_model, shown_array
from hookviz.i18n import N_, join_notes
from hookviz.models import load_bundled_weights

__all__ = [
    "SEQ_LEN",
    "TINY_WEIGHTS_FILE",
    "VOCAB_SIZE",
    "TinyTransformer",
    "load_tiny_transformer",
    "make_tiny_batch",
    "reverse_targets",
    "tiny_accuracy",
    "train_tiny_transformer",
]

TINY_WEIGHTS_FILE = "assets/tiny_transformer.pt"
VOCAB_SIZE = 10  # the digit tokens 0..9
SEQ_LEN = 8
#: The most tokens :func:`make_tiny_batch` makes at once (int64: 800 MB); the course's batches hold 64 x 8.
MAX_TOKENS = 10**8


class TinyTransformer(nn.Module):
    """Token embedding + learned positions, a 2-layer ``nn.TransformerEncoder`` and a per-token head.

    ``forward(tokens)`` maps int64 tokens of shape ``(N, seq_len)`` to logits of shape
    ``(N, seq_len, vocab_size)``. The encoder layers are PyTorch's own ``nn.TransformerEncoderLayer``
    (post-norm, ReLU, ``batch_first=True``, ``dropout=0.0``), so everything a notebook shows about
    them holds for any model built from them.
    """

    def __init__(
        self,
        vocab_size: int = VOCAB_SIZE,
        seq_len: int = SEQ_LEN,
        d_model: int = 32,
        nhead: int = 2,
        num_layers: int = 2,
        dim_feedforward: int = 64,
    ) -> None:
        super().__init__()
        self.seq_len = seq_len
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos_embed = nn.Embedding(seq_len, d_model)
        layer = nn.TransformerEncoderLayer(
            d_model, nhead, dim_feedforward=dim_feedforward, dropout=0.0, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, num_layers, norm=nn.LayerNorm(d_model))
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens: Tensor, src_key_padding_mask: Tensor | None = None) -> Tensor:
        """Logits of shape ``(N, L, vocab_size)`` for tokens of shape ``(N, L)`` with ``L <= seq_len``.

        The model was trained on rows of exactly ``seq_len`` tokens: a shorter row runs, but its
        positions mirror around ``seq_len``, not around its own length, so it is not reversed.
        """
        _check_tokens(tokens, "tokens", seq_len=self.seq_len, vocab_size=self.embed.num_embeddings)
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.embed(tokens) + self.pos_embed(positions)
        return self.head(self.encoder(x, src_key_padding_mask=src_key_padding_mask))


def _check_tokens(tokens: Any, name: str, *, seq_len: int | None = None, vocab_size: int | None = None) -> Tensor:
    """``tokens`` when it is a batch of token ids: an integer tensor of shape ``(N, L)``, with ``L <= seq_len`` and ids
    from ``0`` to ``vocab_size - 1`` (when given); else a clear error naming ``name`` and the fix (torch's own
    IndexError would name neither)."""
    if not isinstance(tokens, Tensor):
        raise TypeError(join_notes([
            N_(f"{name} must be an int64 tensor of shape (N, L), not {shown_array(tokens)}"),
            N_(f"convert with torch.as_tensor({name}), or make a batch with make_tiny_batch()"),
        ]))
    if tokens.is_floating_point() or tokens.is_complex() or tokens.dtype == torch.bool:
        raise TypeError(join_notes([
            N_(f"{name} must be integer token ids (int64), not {tokens.dtype}"), N_(f"pass {name}.long()"),
        ]))
    if tokens.ndim != 2:
        raise ValueError(join_notes([
            N_(f"{name} must have shape (N, L) (a batch of rows), not {tuple(tokens.shape)}"),
            N_(f"for one row pass {name}[None]") if tokens.ndim == 1 else N_("pass one row of tokens per sample"),
        ]))
    if seq_len is not None and tokens.shape[1] > seq_len:
        raise ValueError(join_notes([
            N_(f"{name} has rows of {tokens.shape[1]} tokens, longer than the {seq_len} positions this model learned"),
            N_(f"pass at most {seq_len} tokens per row"),
        ]))
    if vocab_size is not None and tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= vocab_size):
        raise ValueError(join_notes([
            N_(f"token ids must be from 0 to {vocab_size - 1}, but {name} holds ids from {int(tokens.min())} to "
               f"{int(tokens.max())}"),
            N_(f"pass ids of the model's vocabulary (make_tiny_batch(n, vocab_size={vocab_size}) makes them)"),
        ]))
    return tokens


def reverse_targets(tokens: Tensor) -> Tensor:
    """The task's answer: each row of ``tokens`` reversed (position ``i`` gets token ``L - 1 - i``)."""
    if not isinstance(tokens, Tensor) or tokens.ndim == 0:
        raise TypeError(join_notes([
            N_(f"tokens must be a tensor of rows of tokens, not {shown_array(tokens)}"),
            N_("convert with torch.as_tensor(tokens), or make a batch with make_tiny_batch()"),
        ]))
    return tokens.flip(-1)


def make_tiny_batch(
    n: int = 64, *, seed: int = 0, seq_len: int = SEQ_LEN, vocab_size: int = VOCAB_SIZE
) -> tuple[Tensor, Tensor]:
    """``(tokens, targets)`` for the reversal task: ``n`` rows of random digit tokens and their reversals.

    The same ``seed`` gives the same batch on every machine (a ``torch.Generator`` seeded with it;
    the global random state is not touched). Both tensors are int64 of shape ``(n, seq_len)``.
    """
    n = check_int(n, "n", minimum=1, fix=N_("the number of rows, e.g. make_tiny_batch(64)"))
    seed = check_seed(seed)
    seq_len = check_int(seq_len, "seq_len", minimum=1, fix=N_(f"tokens per row, e.g. {SEQ_LEN}"))
    vocab_size = check_int(vocab_size, "vocab_size", minimum=1, fix=N_(f"how many token ids, e.g. {VOCAB_SIZE}"))
    if n * seq_len > MAX_TOKENS:
        raise ValueError(join_notes([
            N_(f"n * seq_len must be at most {MAX_TOKENS:,} tokens, not {n:,} * {seq_len:,}"),
            N_("make n or seq_len smaller (the course's batches are 64 rows of 8 tokens)"),
        ]))
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, vocab_size, (n, seq_len), generator=generator)
    return tokens, reverse_targets(tokens)


@torch.no_grad()
def tiny_accuracy(model: nn.Module, tokens: Tensor, targets: Tensor) -> float:
    """Fraction of positions whose arg-max logit equals the target (model put in eval mode; every submodule's own
    mode is put back after)."""
    check_module(model, "model")
    tokens, targets = _check_tokens(tokens, "tokens"), _check_tokens(targets, "targets")
    if not tokens.numel():
        raise ValueError(join_notes([
            N_(f"tokens is empty (shape {tuple(tokens.shape)})"), N_("pass at least one row of one token"),
        ]))
    if targets.shape != tokens.shape:
        raise ValueError(join_notes([
            N_(f"targets has shape {tuple(targets.shape)}, and tokens {tuple(tokens.shape)}"),
            N_("pass one target per token (make_tiny_batch gives both)"),
        ]))
    with run_mode(model, False):
        predictions = run_model(model, tokens, "tiny_accuracy", "tokens").argmax(dim=-1)
    return (predictions == targets).float().mean().item()


def train_tiny_transformer(
    steps: int = 1500, batch_size: int = 128, lr: float = 3e-3, seed: int = 0
) -> TinyTransformer:
    """Train a fresh :class:`TinyTransformer` on the reversal task (well under a minute on 2 CPU cores).

    Deterministic: the weights come from ``torch.manual_seed(seed)``, batch ``k`` from
    :func:`make_tiny_batch` with seed ``seed * 100_003 + 10_000 + k`` (never the seeds of the held-out
    batches used by tests and notebooks, which stay below 10,000). Adam, cross-entropy per token.
    """
    steps = check_int(steps, "steps", minimum=0, fix=N_("training steps, e.g. 1500"))
    batch_size = check_int(batch_size, "batch_size", minimum=1, maximum=MAX_TOKENS // SEQ_LEN,
                           fix=N_("rows per step, e.g. 128"))
    lr = check_number(lr, "lr", above=0, fix=N_("the learning rate, e.g. 3e-3"))
    seed = check_seed(seed)
    check_seed(seed * 100_003 + 10_000 + steps, "seed * 100_003 + 10_000 + steps", fix=N_("use a smaller seed"))
    torch.manual_seed(seed)
    model = TinyTransformer()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for k in range(steps):
        tokens, targets = make_tiny_batch(batch_size, seed=seed * 100_003 + 10_000 + k)
        logits = model(tokens)
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


def load_tiny_transformer() -> TinyTransformer:
    """The trained :class:`TinyTransformer` whose weights ship with hookviz, in eval mode."""
    return load_bundled_weights(TinyTransformer(), TINY_WEIGHTS_FILE)  # type: ignore[return-value]
