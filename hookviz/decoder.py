"""The course's tiny decoder: a two-layer decoder-only language model written the way Llama is written.

It has the parts practitioners hook on today's LLMs, with the same names as Hugging Face's Llama code:
``model.embed_tokens``, ``model.rotary_emb`` (rotary positions), ``model.layers.N`` (each with
``input_layernorm`` and ``post_attention_layernorm`` (RMSNorm), ``self_attn`` with four separate
``nn.Linear`` projections ``q_proj``, ``k_proj``, ``v_proj``, ``o_proj`` and
``F.scaled_dot_product_attention`` under a causal mask, and ``mlp`` with ``gate_proj``, ``up_proj``,
``down_proj``), ``model.norm`` (the final RMSNorm) and ``lm_head``. The model returns a structured
output, :class:`DecoderOutput` (a dataclass with ``logits`` and ``past_key_values``), keeps keys and
values in a :class:`KVCache` and has a greedy :meth:`TinyDecoder.generate` loop.

The task is synthetic and deterministic: a prompt of ``COPY_LEN`` digit tokens and a separator
(``SEP``), and the answer is the same digits again. Copying token ``j`` means looking exactly
``COPY_LEN`` positions back, which is attention's job, so a trained model has a head whose pattern
is a clean diagonal band. The weights ship in ``hookviz/assets/tiny_decoder.pt`` (well under 1 MB);
``scripts/train_tiny_decoder.py`` re-creates them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from hookviz.models import load_bundled_weights

__all__ = [
    "COPY_LEN",
    "DECODER_WEIGHTS_FILE",
    "DecoderOutput",
    "KVCache",
    "SEP",
    "TinyDecoder",
    "VOCAB_SIZE",
    "apply_rotary",
    "copy_accuracy",
    "load_tiny_decoder",
    "make_copy_batch",
    "train_tiny_decoder",
]

DECODER_WEIGHTS_FILE = "assets/tiny_decoder.pt"
COPY_LEN = 6  # digits in a prompt
SEP = 10  # the separator token that ends a prompt
VOCAB_SIZE = 11  # the digits 0..9 and SEP


@dataclass
class DecoderOutput:
    """What :class:`TinyDecoder` returns: ``logits`` ``(N, L, vocab)`` and the cache (``None`` without one)."""

    logits: Tensor
    past_key_values: KVCache | None = None


class KVCache:
    """Keys and values of every layer, grown by :meth:`update` (in the style of Hugging Face's ``DynamicCache``).

    ``keys[i]`` and ``values[i]`` have shape ``(N, heads, S, head_dim)``: everything layer ``i`` has
    seen so far. A forward pass with a cache only computes the new positions' q, k and v.
    """

    def __init__(self) -> None:
        self.keys: list[Tensor] = []
        self.values: list[Tensor] = []

    def update(self, key: Tensor, value: Tensor, layer_idx: int) -> tuple[Tensor, Tensor]:
        """Append the new positions' ``key`` and ``value`` of layer ``layer_idx``; return all of them."""
        if layer_idx == len(self.keys):
            self.keys.append(key)
            self.values.append(value)
        else:
            self.keys[layer_idx] = torch.cat([self.keys[layer_idx], key], dim=-2)
            self.values[layer_idx] = torch.cat([self.values[layer_idx], value], dim=-2)
        return self.keys[layer_idx], self.values[layer_idx]

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """How many positions layer ``layer_idx`` has cached (0 for an empty cache)."""
        return int(self.keys[layer_idx].shape[-2]) if layer_idx < len(self.keys) else 0

    def __repr__(self) -> str:
        return f"KVCache(layers={len(self.keys)}, positions={self.get_seq_length()})"


class RMSNorm(nn.Module):
    """Root-mean-square norm with a learned scale (no mean subtraction, no bias), as in Llama."""

    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        """``x / rms(x) * weight`` over the last dimension."""
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class RotaryEmbedding(nn.Module):
    """Rotary position embedding: ``(cos, sin)`` of shape ``(N, L, head_dim)`` for the given positions."""

    def __init__(self, head_dim: int, base: float = 10000.0) -> None:
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x: Tensor, position_ids: Tensor) -> tuple[Tensor, Tensor]:
        """``(cos, sin)`` for ``position_ids`` of shape ``(N, L)``, in ``x``'s dtype."""
        freqs = position_ids[..., None].float() * self.inv_freq
        emb = torch.cat([freqs, freqs], dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def _rotate_half(x: Tensor) -> Tensor:
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def apply_rotary(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate queries or keys ``x`` of shape ``(N, heads, L, head_dim)`` by the positions' angles.

    ``cos`` and ``sin`` are what ``model.rotary_emb`` returns, shape ``(N, L, head_dim)``; the same
    formula as Hugging Face's ``apply_rotary_pos_emb`` (``x * cos + rotate_half(x) * sin``).
    """
    return x * cos.unsqueeze(1) + _rotate_half(x) * sin.unsqueeze(1)


class Attention(nn.Module):
    """Multi-head causal self-attention with separate q/k/v/o projections and SDPA (no weights returned)."""

    def __init__(self, d_model: int, num_heads: int, layer_idx: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.layer_idx = layer_idx
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, d_model, bias=False)
        self.v_proj = nn.Linear(d_model, d_model, bias=False)
        self.o_proj = nn.Linear(d_model, d_model, bias=False)

    def forward(
        self,
        hidden_states: Tensor,
        position_embeddings: tuple[Tensor, Tensor],
        past_key_values: KVCache | None = None,
    ) -> tuple[Tensor, None]:
        """``(output, None)``: like Hugging Face's SDPA attention, there are no attention weights to return."""
        n, length, _ = hidden_states.shape
        shape = (n, length, self.num_heads, self.head_dim)
        q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        cos, sin = position_embeddings
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        if past_key_values is not None:
            k, v = past_key_values.update(k, v, self.layer_idx)
        past = k.shape[-2] - length
        # Query i (at position past + i) may look at keys 0 .. past + i.
        mask = torch.ones(length, k.shape[-2], dtype=torch.bool, device=q.device).tril(diagonal=past)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        out = out.transpose(1, 2).reshape(n, length, self.num_heads * self.head_dim)
        return self.o_proj(out), None


class MLP(nn.Module):
    """Llama's gated MLP: ``down_proj(silu(gate_proj(x)) * up_proj(x))``."""

    def __init__(self, d_model: int, hidden: int) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(d_model, hidden, bias=False)
        self.up_proj = nn.Linear(d_model, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, d_model, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        """The gated MLP of ``x``."""
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    """Pre-norm block: ``x + attn(norm(x))``, then ``x + mlp(norm(x))``; returns the residual stream."""

    def __init__(self, d_model: int, num_heads: int, hidden: int, layer_idx: int) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(d_model)
        self.self_attn = Attention(d_model, num_heads, layer_idx)
        self.post_attention_layernorm = RMSNorm(d_model)
        self.mlp = MLP(d_model, hidden)

    def forward(
        self,
        hidden_states: Tensor,
        position_embeddings: tuple[Tensor, Tensor],
        past_key_values: KVCache | None = None,
    ) -> Tensor:
        """The residual stream after this block, shape ``(N, L, d_model)``."""
        attn_out, _ = self.self_attn(
            self.input_layernorm(hidden_states),
            position_embeddings=position_embeddings,
            past_key_values=past_key_values,
        )
        hidden_states = hidden_states + attn_out
        return hidden_states + self.mlp(self.post_attention_layernorm(hidden_states))


class DecoderModel(nn.Module):
    """Embedding, rotary positions, the layers and the final norm: the last hidden states ``(N, L, d_model)``."""

    def __init__(self, vocab_size: int, d_model: int, num_heads: int, num_layers: int, hidden: int) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size, d_model)
        self.rotary_emb = RotaryEmbedding(d_model // num_heads)
        self.layers = nn.ModuleList(DecoderLayer(d_model, num_heads, hidden, i) for i in range(num_layers))
        self.norm = RMSNorm(d_model)

    def forward(self, input_ids: Tensor, past_key_values: KVCache | None = None) -> Tensor:
        """Run the layers on ``input_ids`` ``(N, L)``; new positions start after what the cache holds."""
        if not isinstance(input_ids, Tensor):
            raise TypeError(
                f"input_ids must be a tensor of token ids of shape (N, L), not a {type(input_ids).__name__}; "
                "e.g. torch.tensor(ids)"
            )
        past = past_key_values.get_seq_length() if past_key_values is not None else 0
        positions = torch.arange(past, past + input_ids.shape[1], device=input_ids.device)
        positions = positions.expand(input_ids.shape[0], -1)
        hidden_states = self.embed_tokens(input_ids)
        position_embeddings = self.rotary_emb(hidden_states, positions)
        for layer in self.layers:
            hidden_states = layer(
                hidden_states, position_embeddings=position_embeddings, past_key_values=past_key_values
            )
        return self.norm(hidden_states)


class TinyDecoder(nn.Module):
    """A decoder-only LM (``model`` + ``lm_head``) in the style of Hugging Face's ``LlamaForCausalLM``.

    ``forward(input_ids, past_key_values=None, use_cache=False)`` returns a :class:`DecoderOutput`.
    Defaults: 2 layers, 2 heads of 16 dimensions, ``d_model`` 32, MLP width 64, vocabulary 11.
    """

    def __init__(
        self,
        vocab_size: int = VOCAB_SIZE,
        d_model: int = 32,
        num_heads: int = 2,
        num_layers: int = 2,
        hidden: int = 64,
    ) -> None:
        super().__init__()
        self.model = DecoderModel(vocab_size, d_model, num_heads, num_layers, hidden)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(
        self, input_ids: Tensor, past_key_values: KVCache | None = None, use_cache: bool = False
    ) -> DecoderOutput:
        """Logits for every position of ``input_ids`` ``(N, L)``, and the cache when one is used."""
        if use_cache and past_key_values is None:
            past_key_values = KVCache()
        hidden_states = self.model(input_ids, past_key_values=past_key_values)
        return DecoderOutput(logits=self.lm_head(hidden_states), past_key_values=past_key_values)

    @torch.no_grad()
    def generate(self, input_ids: Tensor, max_new_tokens: int = COPY_LEN, use_cache: bool = True) -> Tensor:
        """Greedy decoding: ``input_ids`` ``(N, L)`` followed by ``max_new_tokens`` new tokens.

        With the cache (the default) the first call (the **prefill**) runs the whole prompt and each
        later call (a **decode** step) runs only the token chosen last. Without it every step runs the
        whole sequence again. Either way the model runs ``max_new_tokens`` times.
        """
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
        tokens = input_ids
        cache = KVCache() if use_cache else None
        step_input = input_ids
        for _ in range(max_new_tokens):
            out = self(step_input, past_key_values=cache, use_cache=use_cache)
            next_token = out.logits[:, -1].argmax(-1, keepdim=True)
            tokens = torch.cat([tokens, next_token], dim=1)
            step_input = next_token if use_cache else tokens
        return tokens


def make_copy_batch(n: int = 64, *, seed: int = 0, copy_len: int = COPY_LEN) -> tuple[Tensor, Tensor]:
    """``(prompts, answers)`` for the copy task: ``n`` prompts (digits then ``SEP``) and their digits.

    ``prompts`` has shape ``(n, copy_len + 1)``, ``answers`` ``(n, copy_len)``; both int64. The same
    ``seed`` gives the same batch on every machine; the global random state is not touched.
    """
    generator = torch.Generator().manual_seed(seed)
    digits = torch.randint(0, 10, (n, copy_len), generator=generator)
    prompts = torch.cat([digits, torch.full((n, 1), SEP)], dim=1)
    return prompts, digits.clone()


@torch.no_grad()
def copy_accuracy(model: TinyDecoder, prompts: Tensor, answers: Tensor) -> float:
    """Fraction of answer tokens that greedy :meth:`~TinyDecoder.generate` gets right (mode restored after)."""
    was_training = model.training
    model.eval()
    try:
        new = model.generate(prompts, max_new_tokens=answers.shape[1])[:, prompts.shape[1] :]
        return (new == answers).float().mean().item()
    finally:
        model.train(was_training)


def train_tiny_decoder(steps: int = 1200, batch_size: int = 64, lr: float = 3e-3, seed: int = 0) -> TinyDecoder:
    """Train a fresh :class:`TinyDecoder` on the copy task with teacher forcing (well under a minute).

    Deterministic: the weights come from ``torch.manual_seed(seed)``, batch ``k`` from
    :func:`make_copy_batch` with seed ``seed * 100_003 + 10_000 + k`` (never the seeds below 10,000 that
    tests and notebooks use). AdamW, cross-entropy on the answer positions only.
    """
    torch.manual_seed(seed)
    model = TinyDecoder()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    for k in range(steps):
        prompts, answers = make_copy_batch(batch_size, seed=seed * 100_003 + 10_000 + k)
        sequence = torch.cat([prompts, answers], dim=1)
        logits = model(sequence[:, :-1]).logits[:, prompts.shape[1] - 1 :]
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), answers.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


def load_tiny_decoder() -> TinyDecoder:
    """The trained :class:`TinyDecoder` whose weights ship with hookviz, in eval mode."""
    return load_bundled_weights(TinyDecoder(), DECODER_WEIGHTS_FILE)  # type: ignore[return-value]
