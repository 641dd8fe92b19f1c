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

import torch
from torch import Tensor, nn

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
        self._check_tokens(tokens)
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.embed(tokens) + self.pos_embed(positions)
        return self.head(self.encoder(x, src_key_padding_mask=src_key_padding_mask))

    def _check_tokens(self, tokens: Tensor) -> None:
        """Refuse tokens the model cannot read, naming the fix (a raw IndexError would name neither)."""
        if not isinstance(tokens, Tensor):
            raise TypeError(f"tokens must be an int64 tensor of shape (N, L), not {type(tokens).__name__}")
        if tokens.is_floating_point() or tokens.is_complex() or tokens.dtype == torch.bool:
            raise TypeError(f"tokens must be integer token ids (int64), not {tokens.dtype}; pass tokens.long()")
        if tokens.ndim != 2:
            fix = "; for one row pass tokens[None]" if tokens.ndim == 1 else ""
            raise ValueError(f"tokens must have shape (N, L) (a batch of rows), not {tuple(tokens.shape)}{fix}")
        if tokens.shape[1] > self.seq_len:
            raise ValueError(
                f"rows of {tokens.shape[1]} tokens are longer than the {self.seq_len} positions this model "
                f"learned; pass at most {self.seq_len} tokens per row"
            )
        vocab = self.embed.num_embeddings
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= vocab):
            raise ValueError(
                f"token ids must be from 0 to {vocab - 1}, but they run from {int(tokens.min())} to {int(tokens.max())}"
            )


def reverse_targets(tokens: Tensor) -> Tensor:
    """The task's answer: each row of ``tokens`` reversed (position ``i`` gets token ``L - 1 - i``)."""
    return tokens.flip(-1)


def make_tiny_batch(
    n: int = 64, *, seed: int = 0, seq_len: int = SEQ_LEN, vocab_size: int = VOCAB_SIZE
) -> tuple[Tensor, Tensor]:
    """``(tokens, targets)`` for the reversal task: ``n`` rows of random digit tokens and their reversals.

    The same ``seed`` gives the same batch on every machine (a ``torch.Generator`` seeded with it;
    the global random state is not touched). Both tensors are int64 of shape ``(n, seq_len)``.
    """
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, vocab_size, (n, seq_len), generator=generator)
    return tokens, reverse_targets(tokens)


@torch.no_grad()
def tiny_accuracy(model: nn.Module, tokens: Tensor, targets: Tensor) -> float:
    """Fraction of positions whose arg-max logit equals the target (model put in eval mode, restored after)."""
    was_training = model.training
    model.eval()
    try:
        return (model(tokens).argmax(dim=-1) == targets).float().mean().item()
    finally:
        model.train(was_training)


def train_tiny_transformer(
    steps: int = 1500, batch_size: int = 128, lr: float = 3e-3, seed: int = 0
) -> TinyTransformer:
    """Train a fresh :class:`TinyTransformer` on the reversal task (well under a minute on 2 CPU cores).

    Deterministic: the weights come from ``torch.manual_seed(seed)``, batch ``k`` from
    :func:`make_tiny_batch` with seed ``seed * 100_003 + 10_000 + k`` (never the seeds of the held-out
    batches used by tests and notebooks, which stay below 10,000). Adam, cross-entropy per token.
    """
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
