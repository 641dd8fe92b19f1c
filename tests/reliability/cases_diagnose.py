"""hookviz.diagnose on Hugging Face models (a tiny Llama and a tiny Qwen2, built from configs).

Besides the model itself (modes, weights, ``.grad``, every hook dict, the config), each case checks afterwards that
transformers' own output capture still works: ``model(x, output_hidden_states=True)`` gives every layer's hidden
states (and, on the eager models, ``output_attentions=True`` every attention map), as on a fresh model.
transformers installs that capture lazily, with hooks, on the first call that asks for it.
"""

from __future__ import annotations

from typing import Any

import torch

from hookviz import Diagnosis, diagnose
from reliability import models
from reliability.harness import ACCEPT, EITHER, REFUSE, Case, Ctx

HIDDEN = {"output_hidden_states": True}


def _setup(kind: str, attn: str, train: bool = False, prepare: Any = None) -> Any:
    def setup() -> Ctx:
        model = models.hf(kind, attn, train=train)
        x = models.tokens()
        ctx = Ctx(models=[model], tensors=[x], model=model, x=x, seen=[])
        if prepare is not None:
            prepare(ctx)
        return ctx

    return setup


def _after(attentions: bool) -> Any:
    return lambda ctx: models.capture_works(ctx.model, attentions)


def _clean(answer: Any, ctx: Ctx) -> str | None:
    if not isinstance(answer, Diagnosis):
        return f"not a Diagnosis: {type(answer).__name__}"
    problems = [f for f in answer if f.severity != "info"]
    return f"findings on a clean model: {[f.kind for f in problems]}" if problems else None


def _found(*kinds: str) -> Any:
    def check(answer: Any, ctx: Ctx) -> str | None:
        if not isinstance(answer, Diagnosis):
            return f"not a Diagnosis: {type(answer).__name__}"
        if not len(answer):
            return "the planted pitfall was not found"
        if kinds and not any(f.kind in kinds for f in answer):
            return f"found {[f.kind for f in answer]}, not {kinds}"
        return None

    return check


def case(cid: str, call: Any, kind: str = "llama", attn: str = "sdpa", *, expect: str = ACCEPT,
         names: tuple[str, ...] = (), check: Any = _clean, train: bool = False, prepare: Any = None,
         mutates: frozenset[str] = frozenset(), after: bool = True) -> Case:
    return Case(
        f"diagnose-hf:{kind}-{attn}:{cid}", "hookviz.diagnose", call, _setup(kind, attn, train, prepare), expect, names,
        check if expect != REFUSE else None, after=_after(attn == "eager") if after else None, keeps_rng=True,
        timeout=30, mutates=mutates,
    )


def _called_once_with_capture(ctx: Ctx) -> None:
    with torch.no_grad():
        ctx.model(ctx.x, output_hidden_states=True)


def _user_layer_hook(ctx: Ctx) -> None:
    def record(module: Any, args: Any, kwargs: Any, output: Any) -> None:
        ctx.seen.append(output[0].shape if isinstance(output, tuple) else output.shape)

    ctx.handle = ctx.model.model.layers[0].register_forward_hook(record, with_kwargs=True)


def _hook_reads_args0(ctx: Ctx) -> None:
    """A forward hook on the attention module that reads args[0]: transformers calls it with keywords only."""

    def read(module: Any, args: Any, output: Any) -> None:
        ctx.seen.append(args[0].shape)

    ctx.handle = ctx.model.model.layers[0].self_attn.register_forward_hook(read)


def _hook_doubles_output(ctx: Ctx) -> None:
    def double(module: Any, args: Any, output: Any) -> Any:
        return output * 2

    ctx.handle = ctx.model.model.layers[1].mlp.register_forward_hook(double)


def _with_grads(ctx: Ctx) -> None:
    ctx.model(ctx.x, labels=ctx.x).loss.backward()


def _config_asks(ctx: Ctx) -> None:
    ctx.model.config.output_hidden_states = True


def _checkpointing(ctx: Ctx) -> None:
    ctx.model.gradient_checkpointing_enable()


def _generate_same(ctx: Ctx) -> str | None:
    broken = models.capture_works(ctx.model, False)
    if broken:
        return broken
    fresh = models.hf("llama", "sdpa")
    with torch.no_grad():
        a = ctx.model.generate(ctx.x, max_new_tokens=3, do_sample=False)
        b = fresh.generate(ctx.x, max_new_tokens=3, do_sample=False)
    return None if torch.equal(a, b) else "generate() gives other tokens than a fresh copy's"


def cases() -> list[Case]:
    out: list[Case] = []
    for kind in ("llama", "qwen2"):
        out += [
            case("plain", lambda ctx: diagnose(ctx.model, ctx.x), kind),
            case("kwargs-output_hidden_states", lambda ctx: diagnose(ctx.model, ctx.x, kwargs=HIDDEN), kind),
            case("inputs-dict-output_hidden_states",
                 lambda ctx: diagnose(ctx.model, {"input_ids": ctx.x, "output_hidden_states": True}), kind),
            case("kwargs-output_attentions", lambda ctx: diagnose(ctx.model, ctx.x, kwargs={"output_attentions": True}),
                 kind, "eager"),
            case("inputs-dict-both-outputs-and-mask",
                 lambda ctx: diagnose(ctx.model, {"input_ids": ctx.x, "attention_mask": torch.ones_like(ctx.x),
                                                  "output_attentions": True, "output_hidden_states": True}),
                 kind, "eager"),
            case("capture-installed-before", lambda ctx: diagnose(ctx.model, ctx.x, kwargs=HIDDEN),
                 kind, prepare=_called_once_with_capture),
            case("config-output_hidden_states", lambda ctx: diagnose(ctx.model, ctx.x), kind, prepare=_config_asks),
            case("train-mode", lambda ctx: diagnose(ctx.model, ctx.x, kwargs={"output_hidden_states": True}), kind,
                 train=True),
        ]
    out += [
        case("labels", lambda ctx: diagnose(ctx.model, {"input_ids": ctx.x, "labels": ctx.x})),
        case("use_cache", lambda ctx: diagnose(ctx.model, ctx.x, kwargs={"use_cache": True})),
        case("return_dict-False", lambda ctx: diagnose(ctx.model, ctx.x, kwargs={"return_dict": False})),
        case("loss_fn-logits", lambda ctx: diagnose(ctx.model, ctx.x, loss_fn=lambda out: out.logits.sum())),
        case("loss_fn-not-scalar", lambda ctx: diagnose(ctx.model, ctx.x, loss_fn=lambda out: out.logits),
             expect=REFUSE, names=("loss_fn",)),
        case("loss_fn-hidden-states-without-asking",
             lambda ctx: diagnose(ctx.model, ctx.x, loss_fn=lambda out: out.hidden_states[-1].sum()),
             expect=REFUSE, names=("loss_fn", "hidden_states")),
        case("user-hook-kept", lambda ctx: diagnose(ctx.model, ctx.x, kwargs={"output_hidden_states": True}),
             prepare=_user_layer_hook),
        case("hook-reads-args0-of-keyword-call", lambda ctx: diagnose(ctx.model, ctx.x), prepare=_hook_reads_args0,
             check=_found(), after=False),  # the user's own hook breaks every later call: nothing to compare
        case("hook-doubles-output", lambda ctx: diagnose(ctx.model, ctx.x), prepare=_hook_doubles_output,
             check=lambda a, ctx: None if isinstance(a, Diagnosis) else f"{a!r}"),
        case("grads-kept", lambda ctx: diagnose(ctx.model, ctx.x, kwargs={"output_hidden_states": True}),
             prepare=_with_grads),
        case("under-no_grad", lambda ctx: _under(torch.no_grad, ctx)),
        case("under-inference_mode", lambda ctx: _under(torch.inference_mode, ctx), expect=REFUSE,
             names=("inference_mode",)),
        case("gradient-checkpointing", lambda ctx: diagnose(ctx.model, ctx.x, kwargs={"output_hidden_states": True}),
             train=True, prepare=_checkpointing, expect=EITHER, names=("checkpoint", "checkpointing")),
        case("out-of-vocab-ids", lambda ctx: diagnose(ctx.model, torch.full_like(ctx.x, 99)), expect=REFUSE,
             names=("inputs", "input_ids")),
        case("negative-ids", lambda ctx: diagnose(ctx.model, torch.full_like(ctx.x, -1)), expect=REFUSE,
             names=("inputs", "input_ids")),
        case("float-ids", lambda ctx: diagnose(ctx.model, ctx.x.float()), expect=REFUSE, names=("inputs", "input_ids")),
        case("empty-batch", lambda ctx: diagnose(ctx.model, ctx.x[:0]), expect=REFUSE, names=("inputs", "input_ids")),
        case("dict-typo-key", lambda ctx: diagnose(ctx.model, {"input_idz": ctx.x}), expect=REFUSE,
             names=("input_idz", "inputs")),
        case("kwargs-list", lambda ctx: diagnose(ctx.model, ctx.x, kwargs=[("output_hidden_states", True)]),
             expect=REFUSE, names=("kwargs",)),
        case("kwargs-unknown-keyword", lambda ctx: diagnose(ctx.model, ctx.x, kwargs={"colour_map": 1}),
             expect=EITHER, names=("colour_map",)),  # the model's forward takes **kwargs: it ignores it itself
        case("numpy-ids", lambda ctx: diagnose(ctx.model, ctx.x.numpy()), expect=REFUSE, names=("inputs", "numpy")),
        case("list-of-ids", lambda ctx: diagnose(ctx.model, ctx.x.tolist()), expect=EITHER, names=("inputs",)),
        Case("diagnose-hf:llama-sdpa:generate-after", "hookviz.diagnose",
             lambda ctx: diagnose(ctx.model, ctx.x, kwargs={"output_hidden_states": True}),
             _setup("llama", "sdpa"), ACCEPT, check=_clean, after=_generate_same, keeps_rng=True, timeout=30),
    ]
    return out


def _under(mode: Any, ctx: Ctx) -> Any:
    with mode():
        return diagnose(ctx.model, ctx.x, kwargs={"output_hidden_states": True})
