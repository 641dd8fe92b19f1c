"""hookviz.llama: the tiny Llama's config, builders, loader, copy-task batches, generation, accuracy and training."""

from __future__ import annotations

import copy
import functools
from typing import Any

import numpy as np
import torch

from hookviz import llama
from reliability import models
from reliability.harness import ACCEPT, EITHER, REFUSE, Case, Ctx
from reliability.inputs import Arg, FromCtx, Spec, Value


@functools.lru_cache(maxsize=2)
def _loaded(attn: str = "sdpa") -> torch.nn.Module:
    with torch.random.fork_rng(devices=[]):
        return llama.load_tiny_llama(attn)


def loaded(attn: str = "sdpa") -> torch.nn.Module:
    """A copy of the shipped, trained tiny Llama (never called: no lazily installed hooks)."""
    return copy.deepcopy(_loaded(attn))


def _layers(model: Any) -> int:
    return len(model.model.layers)


def _is_llama(answer: Any) -> str | None:
    import transformers

    if not isinstance(answer, transformers.LlamaForCausalLM):
        return f"not a LlamaForCausalLM: {type(answer).__name__}"
    if answer.training:
        return "not in eval mode"
    return None


# --------------------------------------------------------------------------- config overrides


def _override_cases(entry: str, fn: Any, check_config: Any) -> list[Case]:
    """``random_llama`` / ``tiny_llama_config`` with one override each: right ones must take, wrong ones refused."""
    short = entry.removeprefix("hookviz.")
    overrides: list[tuple[str, dict[str, Any], str, tuple[str, ...], Any]] = [
        ("num_hidden_layers=3", {"num_hidden_layers": 3}, ACCEPT, (), {"num_hidden_layers": 3}),
        ("num_hidden_layers=np.int64", {"num_hidden_layers": np.int64(3)}, ACCEPT, (), {"num_hidden_layers": 3}),
        ("num_hidden_layers=torch.tensor", {"num_hidden_layers": torch.tensor(3)}, EITHER, ("num_hidden_layers",),
         {"num_hidden_layers": 3}),
        ("typo-num_hidden_layer", {"num_hidden_layer": 3}, REFUSE, ("num_hidden_layer",), None),
        ("typo-num_attention_head", {"num_attention_head": 8}, REFUSE, ("num_attention_head",), None),
        ("typo-fullwidth-field", {"ｎｕｍ_ｈｉｄｄｅｎ_ｌａｙｅｒｓ": 3}, REFUSE, ("num_hidden_layers", "field"), None),
        ("num_hidden_layers=0", {"num_hidden_layers": 0}, REFUSE, ("num_hidden_layers",), None),
        ("num_hidden_layers=-1", {"num_hidden_layers": -1}, REFUSE, ("num_hidden_layers",), None),
        ("num_hidden_layers=2.5", {"num_hidden_layers": 2.5}, REFUSE, ("num_hidden_layers",), None),
        ("num_hidden_layers=str", {"num_hidden_layers": "3"}, REFUSE, ("num_hidden_layers",), None),
        ("num_hidden_layers=True", {"num_hidden_layers": True}, REFUSE, ("num_hidden_layers",), None),
        ("heads-not-divisible", {"num_attention_heads": 3}, REFUSE, ("num_attention_heads", "num_key_value_heads"),
         None),
        ("kv-heads-3", {"num_key_value_heads": 3}, REFUSE, ("num_attention_heads", "num_key_value_heads"), None),
        ("kv-heads-above-heads", {"num_key_value_heads": 8}, REFUSE, ("num_attention_heads", "num_key_value_heads"),
         None),
        ("vocab_size=0", {"vocab_size": 0}, REFUSE, ("vocab_size",), None),
        ("hidden_size=nan", {"hidden_size": float("nan")}, REFUSE, ("hidden_size",), None),
        ("head_dim=1e9", {"head_dim": 10**9}, REFUSE, ("head_dim",), None),
        ("attn_implementation=eager", {"attn_implementation": "eager"}, ACCEPT, (), {"_attn_implementation": "eager"}),
        ("attn_implementation=flash", {"attn_implementation": "flash"}, REFUSE, ("attn_implementation",), None),
        ("attn_implementation=int", {"attn_implementation": 3}, REFUSE, ("attn_implementation",), None),
        ("rope_theta=-1", {"rope_theta": -1.0}, REFUSE, ("rope_theta",), None),
        ("hidden_act=typo", {"hidden_act": "silux"}, REFUSE, ("hidden_act", "silux"), None),
    ]
    # a config is data: a value that only fails when a model is built from it may be taken there (not by random_llama)
    config_only = ("head_dim=1e9", "attn_implementation=flash", "attn_implementation=int", "rope_theta=-1",
                   "hidden_act=typo")
    out = []
    for label, kwargs, expect, names, want in overrides:
        if entry.endswith("tiny_llama_config") and label in config_only:
            expect = EITHER

        def call(ctx: Ctx, kwargs: dict[str, Any] = kwargs) -> Any:
            return fn(**kwargs)

        def check(answer: Any, ctx: Ctx, want: Any = want) -> str | None:
            return check_config(answer, want or {})

        out.append(Case(f"{short}:{label}", entry, call, expect=expect, names=names, check=check, keeps_rng=True))
    return out


def _config_of(answer: Any) -> Any:
    return answer.config if hasattr(answer, "model") else answer


def _check_config(answer: Any, want: dict[str, Any]) -> str | None:
    import transformers

    config = _config_of(answer)
    if not isinstance(config, transformers.LlamaConfig):
        return f"not a LlamaConfig: {type(config).__name__}"
    if hasattr(answer, "model"):
        wrong = _is_llama(answer)
        if wrong:
            return wrong
        if _layers(answer) != config.num_hidden_layers:
            return f"{_layers(answer)} layers built for num_hidden_layers={config.num_hidden_layers}"
    for field, value in want.items():
        if getattr(config, field) != value or type(getattr(config, field)) is not type(value):
            return f"config.{field} is {getattr(config, field)!r}, not {value!r}"
    for field, value in (("vocab_size", 12), ("num_attention_heads", 4), ("num_key_value_heads", 2)):
        if field not in want and getattr(config, field) != value:
            return f"config.{field} is {getattr(config, field)!r}, not the course's {value}"
    return None


# --------------------------------------------------------------------------- specs


def _check_batch(answer: Any, args: dict[str, Any]) -> str | None:
    prompts, answers = answer
    n, copy_len = int(args.get("n", 64)), int(args.get("copy_len", llama.COPY_LEN))
    if tuple(prompts.shape) != (n, copy_len + 1) or tuple(answers.shape) != (n, copy_len):
        return f"shapes {tuple(prompts.shape)}, {tuple(answers.shape)} for n={n}, copy_len={copy_len}"
    if prompts.dtype != torch.int64 or answers.dtype != torch.int64:
        return "not int64"
    if not (torch.equal(prompts[:, :-1], answers) and bool((prompts[:, -1] == llama.SEP).all())):
        return "the prompts are not the answers followed by SEP"
    if answers.numel() and not bool(((answers >= 0) & (answers <= 9)).all()):
        return "answers are not digits"
    return None


def _generate_setup() -> Ctx:
    prompts, answers = llama.make_copy_batch(4, seed=5)
    model = loaded()
    return Ctx(models=[model], tensors=[prompts, answers], model=model, prompts=prompts, answers=answers)


def _check_generated(answer: Any, args: dict[str, Any]) -> str | None:
    prompts = torch.as_tensor(args["prompts"])
    if prompts.ndim == 1:
        prompts = prompts[None]
    n_new = int(args["max_new_tokens"])
    if not isinstance(answer, torch.Tensor) or tuple(answer.shape) != (prompts.shape[0], prompts.shape[1] + n_new):
        return f"shape {tuple(getattr(answer, 'shape', ()))}, not {(prompts.shape[0], prompts.shape[1] + n_new)}"
    if not torch.equal(answer[:, : prompts.shape[1]], prompts.long()):
        return "the prompts are not kept at the start"
    return None


def _accuracy_setup() -> Ctx:
    ctx = _generate_setup()
    ctx.model.train()
    ctx.model.model.layers[0].eval()  # a frozen first block while fine-tuning: its mode must come back
    return ctx


def _check_accuracy(answer: Any, args: dict[str, Any]) -> str | None:
    if not isinstance(answer, float) or not 0.0 <= answer <= 1.0:
        return f"not a fraction: {answer!r}"
    return None


def _tokens_arg(name: str, attr: str, **kw: Any) -> Arg:
    example = llama.make_copy_batch(4, seed=5)[0 if attr == "prompts" else 1]
    return Arg(name, "tensor", FromCtx(attr), positional=True, vocab=llama.VOCAB_SIZE, example=example, **kw)


class _FakeOutput:
    def __init__(self, cache: Any) -> None:
        setattr(self, llama.CACHE_KEYWORD, cache)


def specs() -> list[Spec]:
    seed_extra = [Value("2**70", 2**70, REFUSE), Value("2**63", 2**63, REFUSE)]
    return [
        Spec(
            "hookviz.llama.make_copy_batch",
            llama.make_copy_batch,
            [
                Arg("n", "count", 4, positional=True, minimum=1),
                Arg("seed", "int", 3, minimum=0, extra=seed_extra),
                Arg("copy_len", "count", 6, minimum=1),
            ],
            check=_check_batch,
        ),
        Spec(
            "hookviz.llama.random_llama",
            llama.random_llama,
            [Arg("seed", "int", 1, positional=True, minimum=0, extra=seed_extra)],
            check=lambda answer, args: _is_llama(answer),
            keywords=False,  # it takes **overrides: the override cases try unknown keywords
        ),
        Spec(
            "hookviz.llama.load_tiny_llama",
            llama.load_tiny_llama,
            [Arg("attn_implementation", "choice", "eager", positional=True, none_ok=False,
                 extra=[Value("flash_attention_2", "flash_attention_2", REFUSE)])],
            check=lambda answer, args: _is_llama(answer),
            keeps_rng=True,
        ),
        Spec(
            "hookviz.llama.generate_greedy",
            llama.generate_greedy,
            [
                Arg("model", "model", FromCtx("model"), positional=True),
                _tokens_arg("prompts", "prompts"),
                Arg("max_new_tokens", "count", 3, positional=True, minimum=1, huge_ok=False),
            ],
            check=_check_generated,
            setup=_generate_setup,
        ),
        Spec(
            "hookviz.llama.copy_accuracy",
            llama.copy_accuracy,
            [
                Arg("model", "model", FromCtx("model"), positional=True),
                _tokens_arg("prompts", "prompts", skip=("empty-seq",)),
                _tokens_arg("answers", "answers",
                            extra=[Value("fewer-rows", llama.make_copy_batch(2, seed=5)[1], REFUSE),
                                   Value("no-columns", torch.zeros(4, 0, dtype=torch.long), REFUSE)]),
            ],
            check=_check_accuracy,
            setup=_accuracy_setup,
            keywords=False,
        ),
        Spec(
            "hookviz.llama.train_tiny_llama",
            llama.train_tiny_llama,
            [
                Arg("steps", "count", 1, minimum=0, huge_ok=False),
                Arg("batch_size", "count", 2, minimum=1, skip=("1e9",)),
                Arg("lr", "number", 5e-3, positive=True),
                Arg("seed", "int", 0, minimum=0, extra=seed_extra),
            ],
            check=lambda answer, args: _is_llama(answer),
            timeout=30,
        ),
    ]


def cache_cases() -> list[Case]:
    def case(label: str, value: Any, expect: str, want: Any = None) -> Case:
        return Case(
            f"llama.cache_of:{label}", "hookviz.llama.cache_of", lambda ctx: llama.cache_of(value), expect=expect,
            names=("mapping",), check=lambda answer, ctx: None if answer is want else f"gave {answer!r}",
            keeps_rng=True,
        )

    marker = object()
    return [
        case("valid-kwargs", {llama.CACHE_KEYWORD: marker}, ACCEPT, marker),
        case("output-object", _FakeOutput(marker), ACCEPT, marker),
        case("no-cache", {"use_cache": False}, ACCEPT, None),
        case("int", 3, REFUSE),
        case("str", "cache", REFUSE),
        case("list", [marker], REFUSE),
        case("None", None, EITHER, None),
    ]


def rng_case() -> Case:
    """random_llama must not reset the caller's random numbers (it used to call torch.manual_seed)."""

    def call(ctx: Ctx) -> tuple[torch.Tensor, torch.Tensor]:
        torch.manual_seed(123)
        llama.random_llama(0)
        first = torch.rand(3)
        torch.manual_seed(456)
        llama.random_llama(0)
        second = torch.rand(3)
        return first, second

    def check(answer: Any, ctx: Ctx) -> str | None:
        first, second = answer
        return "the caller's random numbers were reset to the same stream" if torch.equal(first, second) else None

    return Case("llama.random_llama:keeps-callers-rng", "hookviz.llama.random_llama", call, expect=ACCEPT, check=check)


def cases() -> list[Case]:
    out = [c for spec in specs() for c in spec.cases()]
    out += _override_cases("hookviz.llama.random_llama", lambda **kw: llama.random_llama(0, **kw), _check_config)
    out += _override_cases("hookviz.llama.tiny_llama_config", llama.tiny_llama_config, _check_config)
    out += cache_cases()
    out.append(rng_case())
    out.append(
        Case("llama.tiny_llama_config:valid", "hookviz.llama.tiny_llama_config", lambda ctx: llama.tiny_llama_config(),
             expect=ACCEPT, check=lambda answer, ctx: _check_config(answer, {}), keeps_rng=True)
    )
    out.append(
        Case("llama.tiny_llama_config:positional", "hookviz.llama.tiny_llama_config",
             lambda ctx: llama.tiny_llama_config(3), expect=REFUSE, names=("positional", "argument"), keeps_rng=True)
    )
    return out


__all__ = ["cases", "loaded", "models"]
