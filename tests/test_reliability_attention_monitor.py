"""The attention views (both paths) and the training monitor on bad, unusual and user-written inputs.

The same promise as ``test_reliability.py``, whose harness this reuses: every case is one input a user
might plausibly give, and the test asserts a hookviz error naming the argument (the innermost traceback
frame is hookviz code) or a correct result; the model as found (or, for cases that train on purpose, its
modes); no hook and no hookviz thread left; every widget closed.

What the cases cover, beyond the older table:

* the Llama-style path of the attention explorer (``q_proj`` ... ``o_proj``, patterns recomputed from q
  and k): the model is claimed as on the ``nn.MultiheadAttention`` path (a model a monitor trains is
  refused, never flipped to eval mode), bad tokens get the same "failed on inputs" error, and a recomputed
  pattern is checked against what the module computed: a bidirectional module gets its own pattern, and
  another scale, a q/k norm or a padding mask give no pattern and a reason, never a wrong heat map;
* seq-first ``(L, N)`` tokens of ``nn.MultiheadAttention(batch_first=False)`` labelled per sample;
* a monitor whose step replaces, removes or adds a watched layer (it follows the module now at that name
  and says so), and the messages of ``history=3``, the default digits step on a model that cannot take
  digits, an exhausted generator as ``data=`` and a complex loss.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import transformers
from test_reliability import (
    TOKENS,
    Case,
    _show,
    assert_hookviz_error,
    assert_unchanged,
    hookviz_threads,
    mlp,
    snapshot,
    tiny,
)
from torch import Tensor, nn

import hookviz
from hookviz.llama import VOCAB_SIZE, load_tiny_llama, make_copy_batch, tiny_llama_config
from hookviz.widgets import AttentionExplorer, AttentionState, MonitorState, TrainingMonitor, capture_attention
from hookviz.widgets.decoder_attention import capture_decoder_attention

PROMPTS = make_copy_batch(3, seed=4)[0]  # (3, 7) digit prompts and the separator

# --------------------------------------------------------------------------- user-written attention modules


class UserAttention(nn.Module):
    """A learner's own attention with ``q_proj`` ... ``o_proj`` (the shape the decoder path recognises).

    ``causal``: mask later keys; ``scale``: ``None`` for 1/√d; ``qk_norm``: LayerNorm of q and k per head
    after the projections (Qwen3, OLMo-2); ``kv_heads``: fewer key/value heads (grouped-query attention);
    ``via_weights``: multiply by ``o_proj.weight`` directly instead of calling ``o_proj``. It keeps the
    weights it used in ``self.true``.
    """

    def __init__(
        self,
        d: int = 8,
        heads: int = 2,
        *,
        causal: bool = True,
        scale: float | None = None,
        qk_norm: bool = False,
        kv_heads: int | None = None,
        via_weights: bool = False,
    ) -> None:
        super().__init__()
        self.num_heads, self.head_dim = heads, d // heads
        self.kv_heads = kv_heads or heads
        self.q_proj, self.o_proj = nn.Linear(d, d), nn.Linear(d, d)
        self.k_proj = nn.Linear(d, self.kv_heads * self.head_dim)
        self.v_proj = nn.Linear(d, self.kv_heads * self.head_dim)
        self.causal, self.scale, self.via_weights = causal, scale, via_weights
        self.q_norm = nn.LayerNorm(self.head_dim) if qk_norm else None
        self.k_norm = nn.LayerNorm(self.head_dim) if qk_norm else None
        self.true: Tensor | None = None

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        n, length, d = x.shape
        q = self.q_proj(x).view(n, length, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(n, length, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(n, length, self.kv_heads, self.head_dim).transpose(1, 2)
        if self.q_norm is not None and self.k_norm is not None:
            q, k = self.q_norm(q), self.k_norm(k)
        repeat = self.num_heads // self.kv_heads
        k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
        scores = q @ k.transpose(-1, -2) * (self.scale if self.scale is not None else 1 / math.sqrt(self.head_dim))
        if self.causal:
            scores = scores.masked_fill(~torch.ones(length, length, dtype=torch.bool).tril(), float("-inf"))
        if padding_mask is not None:
            scores = scores.masked_fill(padding_mask[:, None, None, :], float("-inf"))
        self.true = scores.softmax(-1).detach()
        mixed = (self.true @ v).transpose(1, 2).reshape(n, length, d)
        if self.via_weights:
            return F.linear(mixed, self.o_proj.weight, self.o_proj.bias)
        return self.o_proj(mixed)


class Block(nn.Module):
    """One user attention module (``att``), optionally a second one (``att2``), on float features."""

    def __init__(self, second: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__()
        self.att = UserAttention(**kwargs)
        self.att2 = UserAttention(**second) if second is not None else None

    def forward(self, x: Tensor, padding_mask: Tensor | None = None) -> Tensor:
        h = self.att(x, padding_mask)
        return self.att2(h, padding_mask) if self.att2 is not None else h


FEATURES = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(7)) * 3
FEATURES16 = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(8)) * 3
PADDED = torch.zeros(2, 5, dtype=torch.bool)
PADDED[:, 3:] = True


def user(**kwargs: Any) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        torch.manual_seed(0)
        return Block(**kwargs).eval()

    make.__name__ = "user(" + ", ".join(f"{k}={v}" for k, v in kwargs.items()) + ")"
    return make


def decoder() -> nn.Module:
    return load_tiny_llama()


def decoder_training() -> nn.Module:
    model = load_tiny_llama().train()
    model.model.layers[1].eval()  # a mixed mode must come back mixed
    return model


def meta_decoder() -> nn.Module:
    with torch.device("meta"):
        return transformers.LlamaForCausalLM(tiny_llama_config()).eval()


class SeqFirst(nn.Module):
    """``nn.Transformer``'s default layout: tokens ``(L, N)``, ``nn.MultiheadAttention(batch_first=False)``."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(20, 8)
        self.att = nn.MultiheadAttention(8, 2)

    def forward(self, tokens: Tensor) -> Tensor:
        h = self.emb(tokens)
        return self.att(h, h, h)[0]


def seq_first() -> nn.Module:
    torch.manual_seed(0)
    return SeqFirst().eval()


class CrossAttention(nn.Module):
    """Queries from the input, keys and values from a memory of another width (``kdim=vdim=5``)."""

    def __init__(self) -> None:
        super().__init__()
        self.att = nn.MultiheadAttention(8, 2, kdim=5, vdim=5, batch_first=True)

    def forward(self, x: Tensor, memory: Tensor) -> Tensor:
        return self.att(x, memory, memory)[0]


def cross() -> nn.Module:
    torch.manual_seed(0)
    return CrossAttention().eval()


class PositionalCall(nn.Module):
    """Calls its attention with ``need_weights=False`` by position, and a causal mask with ``is_causal``."""

    def __init__(self) -> None:
        super().__init__()
        self.att = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x: Tensor) -> Tensor:
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        return self.att(x, x, x, None, False, mask, True, True)[0]


def positional() -> nn.Module:
    torch.manual_seed(0)
    return PositionalCall().eval()


class Unbatched(nn.Module):
    """An attention called on one unbatched sequence ``(L, E)``."""

    def __init__(self) -> None:
        super().__init__()
        self.att = nn.MultiheadAttention(8, 2)

    def forward(self, x: Tensor) -> Tensor:
        return self.att(x, x, x)[0]


def unbatched() -> nn.Module:
    torch.manual_seed(0)
    return Unbatched().eval()


# --------------------------------------------------------------------------- the table

CASES: list[Case] = []


def case(name: str, make: Callable[[], nn.Module], action: Callable[[nn.Module], Any], error: str | None = None,
         check: Callable[[nn.Module, Any], None] | None = None, trains: bool = False) -> None:  # fmt: skip
    CASES.append(Case(name, make, action, error, check, trains))


def _attention(model: nn.Module, inputs: Any = PROMPTS, **kwargs: Any) -> AttentionState:
    return AttentionState(model, inputs, **kwargs)


def _true_pattern(model: nn.Module, inputs: Tensor, **kwargs: Any) -> Tensor:
    """What ``model.att`` really computed for ``inputs`` (a plain call, no hook)."""
    with torch.no_grad():
        model(inputs, **kwargs)
    return model.att.true  # type: ignore[union-attr, return-value]


def _exact(inputs: Tensor = FEATURES, mask: str = "", **kwargs: Any) -> Callable[[nn.Module, AttentionState], None]:
    """The shown pattern is the module's own, and the caption says how it was found when it is not causal."""

    def check(model: nn.Module, state: AttentionState) -> None:
        true = _true_pattern(model, inputs, **kwargs)
        np.testing.assert_allclose(state.patterns["att"], true.numpy(), atol=1e-5)
        assert state.checks["att"].verified
        assert (mask in state.caption()) if mask else state.caption().endswith("keys (columns)")

    return check


def _decoder_patterns(model: nn.Module, state: AttentionState) -> None:
    assert state.layers == ["model.layers.0.self_attn", "model.layers.1.self_attn"]
    assert all(c.verified and c.mask == "causal" for c in state.checks.values())
    assert np.triu(state.pattern(), k=1).max() == 0.0
    assert state.token_labels()[0] == [str(int(t)) for t in PROMPTS[0]]


# -- the decoder path: bad tokens are wrapped as on the nn.MultiheadAttention path
for label, bad_tokens in [("float", PROMPTS.float()), ("1-D", PROMPTS[0]), ("3-D", PROMPTS[None]),
                          ("out of vocabulary", PROMPTS + VOCAB_SIZE), ("negative", PROMPTS * 0 - 1),
                          ("int16", PROMPTS.to(torch.int16)), ("numpy", PROMPTS.numpy()), ("a list", PROMPTS.tolist()),
                          ("a dict", {"input_ids": PROMPTS})]:  # fmt: skip
    case(f"decoder attention tokens: {label}", decoder, lambda m, t=bad_tokens: _attention(m, t),
         r"LlamaForCausalLM failed on inputs \(.*\).*Pass inputs the model accepts")  # fmt: skip
case("decoder attention empty batch", decoder, lambda m: _attention(m, PROMPTS[:0]), "at least one sample")
case("decoder attention scalar tokens", decoder, lambda m: _attention(m, PROMPTS[0, 0]), "at least one sample")
case("decoder attention model_kwargs=[1]", decoder, lambda m: _attention(m, model_kwargs=[1]),
     "model_kwargs must be a dict")  # fmt: skip
# (Hugging Face's forward takes **kwargs, so an unknown keyword passes silently: these are ones it refuses)
case("decoder attention model_kwargs a mask of the wrong shape", decoder,
     lambda m: _attention(m, model_kwargs={"attention_mask": torch.ones(1, 2)}), "failed on inputs")  # fmt: skip
case("decoder attention model_kwargs input_ids twice", decoder,
     lambda m: _attention(m, model_kwargs={"input_ids": PROMPTS}), "failed on inputs")  # fmt: skip
case("decoder attention layers=['nope']", decoder, lambda m: _attention(m, layers=["model.layers.0.self_atn"]),
     "no attention module named 'model.layers.0.self_atn'.*model.layers.0.self_attn")  # fmt: skip
case("decoder attention meta model", meta_decoder, _attention, "meta device")
case("decoder attention prompts", decoder, _attention, check=_decoder_patterns)
case("decoder attention mixed modes come back", decoder_training, _attention, check=_decoder_patterns)
LAYER1 = "model.layers.1.self_attn"
case("decoder capture_attention one layer", decoder, lambda m: capture_attention(m, PROMPTS, layers=[LAYER1]),
     check=lambda m, r: {k: tuple(v.shape) for k, v in r.items()} == {LAYER1: (3, 4, 7, 7)})  # fmt: skip
case("capture_decoder_attention without q/k/v/o", mlp, lambda m: capture_decoder_attention(m, torch.zeros(2, 64)),
     "has no attention module with q_proj, k_proj, v_proj and o_proj")  # fmt: skip
for choice, why in [({"head": 4}, "head 4 does not exist"), ({"head": 0.5}, "head must be a whole number"),
                    ({"sample": 3}, "out of range"), ({"sample": "1"}, "sample must be a whole number"),
                    ({"layer": "model.layers.2.self_attn"}, "no attention layer named")]:  # fmt: skip
    case(f"decoder attention select {choice}", decoder, lambda m, c=choice: _attention(m).select(**c), why)


def _explorer(model: nn.Module, inputs: Any = PROMPTS, **kwargs: Any) -> AttentionExplorer:
    return AttentionExplorer(model, inputs, **kwargs)


def _explorer_ok(model: nn.Module, explorer: AttentionExplorer) -> None:
    explorer.layer.value = explorer.layer.options[-1]
    explorer.head.value = "mean"
    explorer.sample.value = 2
    assert explorer.state.describe()["sample"] == 2 and explorer.out.outputs
    explorer.sample.value = 9  # refused in the widget, shown as a message
    assert "out of range" in explorer.message.value and explorer.state.sample == 2


case("decoder AttentionExplorer controls", decoder, _explorer, check=_explorer_ok)
case("decoder AttentionExplorer float tokens", decoder, lambda m: _explorer(m, PROMPTS.float()), "failed on inputs")


# -- recomputed patterns are checked against what the module computed (AW04-AW08 and more)
case("user attention causal, 1/sqrt(d) (exact)", user(), lambda m: _attention(m, FEATURES), check=_exact())
case("user attention bidirectional", user(causal=False), lambda m: _attention(m, FEATURES),
     check=_exact(mask="no causal mask"))  # fmt: skip
case("user attention grouped-query, causal", user(d=16, heads=4, kv_heads=2), lambda m: _attention(m, FEATURES16),
     check=_exact(FEATURES16))  # fmt: skip
case("user attention grouped-query, bidirectional", user(d=16, heads=4, kv_heads=2, causal=False),
     lambda m: _attention(m, FEATURES16), check=_exact(FEATURES16, mask="no causal mask"))  # fmt: skip
for name, kwargs in [("scale=1.0", {"scale": 1.0}), ("scale=0.05", {"scale": 0.05}), ("q/k norm", {"qk_norm": True}),
                     ("bidirectional with q/k norm", {"causal": False, "qk_norm": True})]:  # fmt: skip
    case(f"user attention {name}: no pattern, a reason", user(**kwargs), lambda m: _attention(m, FEATURES),
         "shows no pattern for att.*does not reproduce.*o_proj")  # fmt: skip
    case(f"user AttentionExplorer {name}", user(**kwargs), lambda m: _explorer(m, FEATURES), "shows no pattern")
case("user attention padding mask via model_kwargs", user(causal=False),
     lambda m: _attention(m, FEATURES, model_kwargs={"padding_mask": PADDED}),
     "shows no pattern.*padding mask")  # fmt: skip


def _one_of_two(model: nn.Module, state: AttentionState) -> None:
    assert state.layers == ["att"] and list(state.not_shown) == ["att2"]
    assert "not shown: att2" in state.caption() and "att2" in state.describe()["not_shown"]
    np.testing.assert_allclose(state.patterns["att"], _true_pattern(model, FEATURES).numpy(), atol=1e-5)


case("user attention, second layer q/k-normed", user(second={"qk_norm": True}), lambda m: _attention(m, FEATURES),
     check=_one_of_two)  # fmt: skip


def _unchecked(model: nn.Module, state: AttentionState) -> None:
    assert not state.checks["att"].verified
    assert "not checked (o_proj was not called" in state.caption()
    assert "not checked" in state.describe()["source"]


case("user attention that never calls o_proj", user(via_weights=True), lambda m: _attention(m, FEATURES),
     check=_unchecked)  # fmt: skip


# -- nn.MultiheadAttention path: token labels and user call styles
SEQ_TOKENS = torch.tensor([[1, 2], [3, 4], [5, 6]])  # 3 positions x 2 samples


def _labels_per_column(model: nn.Module, state: AttentionState) -> None:
    assert state.n_samples == 2
    for sample in (0, 1):
        state.select(sample=sample)
        assert state.token_labels()[0] == [str(int(t)) for t in SEQ_TOKENS[:, sample]]
    assert "column" in state.describe()["labels"]


def _labels_are_positions(model: nn.Module, state: AttentionState) -> None:
    assert state.token_labels()[0] == ["0", "1"] and "labels are positions" in state.caption()


def _labels_per_row(model: nn.Module, state: AttentionState) -> None:
    assert state.n_samples == 8 and state.token_labels()[0] == [str(int(t)) for t in TOKENS8[0]]
    assert state.describe()["labels"] == "token ids"


TOKENS8 = hookviz.make_tiny_batch(8, seed=6)[0]  # (8, 8): square, batch-first attention
case("MHA batch_first=False, (L, N) tokens", seq_first, lambda m: _attention(m, SEQ_TOKENS), check=_labels_per_column)
case("MHA batch_first=False, square tokens", seq_first, lambda m: _attention(m, SEQ_TOKENS[:2]),
     check=_labels_are_positions)  # fmt: skip
case("MHA batch_first=True, square tokens", tiny, lambda m: _attention(m, TOKENS8), check=_labels_per_row)
case("MHA labels= given", seq_first, lambda m: _attention(m, SEQ_TOKENS, labels=[["a", "b", "c"], ["d", "e", "f"]]),
     check=lambda m, s: s.token_labels()[0] == ["a", "b", "c"] and s.describe()["labels"] == "given")  # fmt: skip
case("MHA float (L, N) tokens", seq_first, lambda m: _attention(m, SEQ_TOKENS.float()), "failed on inputs")
case("MHA tokens out of the embedding", seq_first, lambda m: _attention(m, SEQ_TOKENS + 50), "failed on inputs")
MEMORY = torch.randn(2, 6, 5, generator=torch.Generator().manual_seed(9))
case("MHA cross-attention, memory via model_kwargs", cross,
     lambda m: _attention(m, FEATURES[:, :4], model_kwargs={"memory": MEMORY}),
     check=lambda m, s: s.pattern().shape == (4, 6) and s.token_labels()[1] == [str(i) for i in range(6)])  # fmt: skip
case("MHA cross-attention without its memory", cross, lambda m: _attention(m, FEATURES[:, :4]), "failed on inputs")


def _causal_per_head(model: nn.Module, state: AttentionState) -> None:
    assert state.heads() == 2 and np.triu(state.pattern(), k=1).max() == 0.0


case("MHA need_weights=False by position, is_causal", positional, lambda m: _attention(m, FEATURES),
     check=_causal_per_head)  # fmt: skip
case("MHA unbatched (L, E) call", unbatched, lambda m: _attention(m, FEATURES[0]),
     check=lambda m, s: s.n_samples == 1 and s.pattern().shape == (5, 5))  # fmt: skip
case("AttentionState(model=None)", tiny, lambda m: AttentionState(None, TOKENS), "needs model to be an nn.Module")
case("AttentionState(state_dict)", tiny, lambda m: AttentionState(m.state_dict(), TOKENS),
     "needs model to be an nn.Module")  # fmt: skip


# -- a model a monitor is training is refused on both paths, and never flipped to eval mode
def _while_training(model: nn.Module, inputs: Any) -> Any:
    modes: list[bool] = []
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)

    def step() -> Tensor:
        out = model(inputs[:2])
        out = out.logits if hasattr(out, "logits") else out
        modes.append(model.training)
        loss = out.float().pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    monitor = MonitorState(model, step)
    monitor.start(10**6)
    try:
        while monitor.step < 2:
            time.sleep(0.005)
        for _ in range(5):
            try:
                AttentionState(model, inputs[:2])
            except RuntimeError as exc:
                assert_hookviz_error(exc, "being used by a monitor that trains it")
            else:
                raise AssertionError("AttentionState ran on a model a monitor is training")
    finally:
        monitor.stop()
        assert monitor.wait(30)
    assert monitor.last_error is None and all(modes), "a training step ran in eval mode"
    return monitor


case("decoder attention while a monitor trains it", decoder_training, lambda m: _while_training(m, PROMPTS),
     check=lambda m, r: None, trains=True)  # fmt: skip
case("MHA attention while a monitor trains it", lambda: tiny().train(), lambda m: _while_training(m, TOKENS),
     check=lambda m, r: None, trains=True)  # fmt: skip


# -- the monitor
X8, Y4 = torch.randn(16, 8, generator=torch.Generator().manual_seed(1)), torch.arange(16) % 4


def small() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def _changing_step(model: nn.Module, change: str, at: int = 5) -> Callable[[], Tensor]:
    """An SGD step that, in step ``at``, replaces / removes / appends a layer the way users do."""
    count = [0]

    def step() -> Tensor:
        count[0] += 1
        if count[0] == at:
            if change == "replace":
                model[2] = nn.Linear(16, 4)  # e.g. a fresh head
            elif change == "delete and append":
                del model[2]
                model.append(nn.Linear(16, 4))
            elif change == "remove":
                del model[2]
            elif change == "append":
                model.append(nn.ReLU())
            elif change == "replace the ReLU":
                model[1] = nn.GELU()
        out = model(X8)
        out = out if out.shape[-1] == 4 else out[:, :4]
        loss = F.cross_entropy(out, Y4)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    return step


def _follows(change: str, text: str, value: str) -> Callable[[nn.Module, Any], None]:
    def check(model: nn.Module, state: Any) -> None:
        state = getattr(state, "state", state)
        summary = state.summary()
        assert text in summary, summary
        assert "nan" not in summary, summary
        assert value in summary.splitlines()[2], summary
        assert state.silent_layers() == []

    return check


for change, text, value, kwargs in [
    ("replace", "layer '2' was replaced in step 5 (by a new Linear)", "2=", {}),
    ("delete and append", "layer '2' was replaced in step 5", "2=", {}),
    ("replace", "layer '2' was replaced in step 5", "2=", {"capture_every": 3}),
    ("replace", "layer '2' was replaced in step 5", "2=", {"stats_every": 1, "history": 4}),
    ("remove", "layer '2' was removed from the model in step 5", "2=removed", {}),
]:
    case(f"monitor step: {change} {kwargs}", small,
         lambda m, c=change, k=kwargs: MonitorState(m, _changing_step(m, c), **k).run(12),
         check=_follows(change, text, value), trains=True)  # fmt: skip
case("monitor step appends a layer (unwatched)", small,
     lambda m: MonitorState(m, _changing_step(m, "append")).run(8),
     check=lambda m, s: not s.layer_changes and "nan" not in s.summary(), trains=True)  # fmt: skip
case("monitor layers=['1'] and the step replaces that ReLU", small,
     lambda m: MonitorState(m, _changing_step(m, "replace the ReLU"), layers=["1"]).run(8),
     check=_follows("replace", "by a new GELU", "1="), trains=True)  # fmt: skip


def _widget_follows(model: nn.Module) -> TrainingMonitor:
    monitor = TrainingMonitor(model, _changing_step(model, "replace"), probe=X8[:1], interval=0.0)
    return monitor.run(8)


def _widget_follow_check(model: nn.Module, monitor: TrainingMonitor) -> None:
    assert "replaced in step 5" in monitor.status.value
    assert monitor.state.probe_maps.keys() == {"0", "2"} and monitor.state.probe is not None


case("TrainingMonitor view, the step replaces a layer", small, _widget_follows, check=_widget_follow_check,
     trains=True)  # fmt: skip


def _background_follows(model: nn.Module) -> MonitorState:
    state = MonitorState(model, _changing_step(model, "replace"))
    state.start(12)
    assert state.wait(30)
    return state


case("monitor start(), the step replaces a layer", small, _background_follows,
     check=_follows("replace", "replaced in step 5", "2="), trains=True)  # fmt: skip


def _quiet(model: nn.Module, value: Any = 0.5) -> Callable[..., Any]:
    def step(*batch: Any) -> Any:
        return value() if callable(value) else value

    return step


for bad in [3, 5, 1, 2.0, "512"]:
    why = "history must be an even number.*history=" if isinstance(bad, int) and bad > 1 else "history must be"
    case(f"monitor history={_show(bad)}", small, lambda m, h=bad: MonitorState(m, _quiet(m), history=h), why)
case("monitor history=2 runs", small, lambda m: MonitorState(m, _quiet(m), history=2, stats_every=1).run(9),
     check=lambda m, s: len(s.history) <= 2 and s.steps()[-1] == 9)  # fmt: skip
for value, why in [(lambda: torch.tensor(1 + 1j), "complex tensor.*loss.abs"),
                   (lambda: torch.ones(1, dtype=torch.complex64), "complex tensor"),
                   (lambda: [1.0], "step_fn must return the loss"), (lambda: (torch.tensor(1.0),), "returned a tuple"),
                   (lambda: np.array([1.0]), "step_fn must return the loss"), (lambda: True, "returned a bool"),
                   (lambda: torch.ones(3), r"tensor of shape \(3,\)"), (lambda: "0.5", "returned a str")]:  # fmt: skip
    label = _show(value()) if not isinstance(value(), Tensor) else f"tensor {value().dtype} {tuple(value().shape)}"
    case(f"monitor step returns {label}", small, lambda m, v=value: MonitorState(m, _quiet(m, v)).run(2), why)
for value in [np.float32(1.0), torch.tensor([1]), torch.tensor(float("inf")), None]:
    case(f"monitor step returns {_show(value)} (accepted)", small,
         lambda m, v=value: MonitorState(m, _quiet(m, v)).run(3), check=lambda m, s: s.step == 3)  # fmt: skip


def _generator(n: int) -> Any:
    yield from ((X8, Y4) for _ in range(n))


case("monitor data= a generator of 3 batches, 5 steps", small,
     lambda m: MonitorState(m, _quiet(m), data=_generator(3)).run(5),
     "generator that yielded 3 batches and is now exhausted.*list of batches or a DataLoader")  # fmt: skip
case("monitor data= a generator of 5 batches, 5 steps", small,
     lambda m: MonitorState(m, _quiet(m), data=_generator(5)).run(5), check=lambda m, s: s.step == 5)  # fmt: skip
case("monitor data=[]", small, lambda m: MonitorState(m, _quiet(m), data=[]).run(3), "yielded no batch at all")
case("monitor data=iter([])", small, lambda m: MonitorState(m, _quiet(m), data=iter([])).run(3),
     "yielded no batch at all")  # fmt: skip
case("monitor data=5", small, lambda m: MonitorState(m, _quiet(m), data=5), "data must be the batches")
case("monitor data= a list of 2, 5 steps (epochs)", small,
     lambda m: MonitorState(m, _quiet(m), data=[(X8, Y4)] * 2).run(5), check=lambda m, s: s.step == 5)  # fmt: skip
case("TrainingMonitor data= without step_fn", small, lambda m: TrainingMonitor(m, data=[(X8, Y4)]),
     "data= needs a step_fn")  # fmt: skip
case("TrainingMonitor default step on an MLP of 8 inputs", lambda: nn.Sequential(nn.Linear(8, 4)),
     lambda m: TrainingMonitor(m).run(3),
     r"default step trains the model on the course's digits.*\(N, 1, 8, 8\).*step_fn=")  # fmt: skip


def _default_step_in_background(model: nn.Module) -> TrainingMonitor:
    monitor = TrainingMonitor(model)
    monitor.start(3)
    assert monitor.state.wait(30)
    return monitor


def _said_default_step(model: nn.Module, monitor: TrainingMonitor) -> None:
    assert "course's digits" in monitor.state.last_error and "step_fn=" in monitor.state.last_error
    assert "default step trains" in monitor.status.value and not monitor.train_button.disabled


case("TrainingMonitor default step on an MLP, Train button", lambda: nn.Sequential(nn.Linear(8, 4)),
     _default_step_in_background, check=_said_default_step)  # fmt: skip
case("TrainingMonitor('a model')", small, lambda m: TrainingMonitor("a model"), "needs model to be an nn.Module")
case("TrainingMonitor(state_dict)", small, lambda m: TrainingMonitor(m.state_dict()), "needs model to be an nn.Module")
case("monitor step_fn='train'", small, lambda m: MonitorState(m, "train"), "step_fn must be a function")
case("monitor sample=0", small, lambda m: MonitorState(m, _quiet(m), sample=0), "sample must be at least 1")
case("monitor layers=['9']", small, lambda m: MonitorState(m, _quiet(m), layers=["9"]), "no layer named '9'")


def _nan_from_step_5(model: nn.Module) -> MonitorState:
    count = [0]

    def step() -> Tensor:
        count[0] += 1
        return torch.tensor(float("nan") if count[0] >= 5 else 1.0)

    return MonitorState(model, step, probe=X8[:1]).run(8, on_update=lambda s: s.live_png(), interval=0.0)


case("monitor NaN loss from step 5, with a view", small, _nan_from_step_5,
     check=lambda m, s: np.isnan(s.losses()[-1]) and s.step == 8)  # fmt: skip


# --------------------------------------------------------------------------- the test


@pytest.mark.parametrize("item", CASES, ids=[c.name for c in CASES])
def test_attention_and_monitor_input(item: Case) -> None:
    """One case: a hookviz error naming the argument, or a right result; the model as found; nothing left."""
    model = item.make()
    before = snapshot(model)
    result: Any = None
    try:
        if item.error is not None:
            with pytest.raises(Exception) as raised:  # noqa: PT011 - the message is checked below
                result = item.action(model)
            assert_hookviz_error(raised.value, item.error)
        else:
            result = item.action(model)
            assert item.check is not None
            outcome = item.check(model, result)
            assert outcome is None or bool(outcome), f"wrong result: {result!r}"
    finally:
        state = getattr(result, "state", result)
        if isinstance(state, MonitorState):
            state.stop()
            assert state.wait(30)
        if hasattr(result, "close"):
            result.close()
    modes = [m.training for m in model.modules()]
    if not item.trains:
        assert_unchanged(model, before)
    elif len(modes) == len(before.modes):  # trained on purpose: the modes are what must come back
        assert modes == before.modes
    else:  # the step added or removed layers on purpose: the model's own mode
        assert modes[0] == before.modes[0]
    assert not hookviz.list_hooks(model)
    assert not hookviz_threads()


def test_the_table_covers_at_least_60_inputs() -> None:
    assert len(CASES) >= 60, len(CASES)
    assert len({c.name for c in CASES}) == len(CASES), "case names must be unique"
