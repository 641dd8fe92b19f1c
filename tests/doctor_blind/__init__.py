"""A blind evaluation set for ``hookviz.diagnose`` (the hook doctor), written without reading the tool.

Every case is a small model with the hooks a real user attached, written the way those users wrote them
(GitHub issues, forum threads, public repositories; each case records its source). A *planted* case has a
``culprit``: the names (module qualified name, parameter name, hook function or class name, ``<global>``)
any one of which a correct finding must name. A *clean* case (``culprit=None``) must get no finding of
severity "error" or "warning".

``build()`` returns ``(model, inputs, diagnose_kwargs)`` with the hooks already attached; ``context`` says how
the user calls the doctor ("train", "no_grad", "eval", "eval_no_grad"); ``bites()`` (planted cases) proves
the bug is real without calling the doctor; ``after(model, inputs)`` checks, after the diagnosis, what a
state snapshot cannot see; ``teardown()`` removes what a case registered globally.

``tests/doctor_blind/score.py`` scores the doctor on all cases; ``tests/test_doctor_blind_cases.py`` checks
the cases themselves (no doctor involved).
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

FAMILIES: dict[str, str] = {
    "a": "forgotten return / return ignored",
    "b": "late binding in loops",
    "c": "return value breaks forward/backward",
    "d": "re-registration",
    "e": "stored graphs (memory leak)",
    "f": "edits through .data",
    "g": "fails only in validation",
    "h": "input return, sync, global, state flips, batch size, views",
    "i": "beyond: reuse, inplace, bypassed, legacy, copies",
    "clean": "clean models",
}

CONTEXTS = ("train", "no_grad", "eval", "eval_no_grad")

Build = Callable[[], tuple[nn.Module, Any, dict]]


@dataclass
class Case:
    """One evaluation case (see the module docstring)."""

    name: str
    family: str
    source: str
    build: Build
    culprit: tuple[str, ...] | None
    context: str = "train"
    note: str = ""
    after: Callable[[nn.Module, Any], None] | None = None
    bites: Callable[[], None] | None = None
    teardown: Callable[[], None] | None = None
    extra: dict = field(default_factory=dict)

    @property
    def planted(self) -> bool:
        return self.culprit is not None


def case(
    registry: list[Case],
    *,
    family: str,
    source: str,
    culprit: tuple[str, ...] | list[str] | None,
    context: str = "train",
    note: str = "",
    after: Callable[[nn.Module, Any], None] | None = None,
    bites: Callable[[], None] | None = None,
    teardown: Callable[[], None] | None = None,
    name: str | None = None,
) -> Callable[[Build], Build]:
    """Decorator: register ``build`` as a case in ``registry``."""
    assert family in FAMILIES, family
    assert context in CONTEXTS, context

    def deco(build: Build) -> Build:
        registry.append(
            Case(
                name=name or build.__name__,
                family=family,
                source=source,
                build=build,
                culprit=tuple(culprit) if culprit is not None else None,
                context=context,
                note=note,
                after=after,
                bites=bites,
                teardown=teardown,
            )
        )
        return build

    return deco


def all_cases() -> list[Case]:
    """Every case of every ``cases_*`` module of this package, in a stable order."""
    cases: list[Case] = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("cases_"):
            module = importlib.import_module(f"{__name__}.{info.name}")
            cases.extend(module.CASES)
    names = [c.name for c in cases]
    dupes = {n for n in names if names.count(n) > 1}
    assert not dupes, f"duplicate case names: {sorted(dupes)}"
    return cases


# --------------------------------------------------------------------------------------------------------
# Running a model the way its user does (for the self-test and the bites() checks; the doctor is not used)
# --------------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def user_context(model: nn.Module, context: str) -> Iterator[None]:
    """Put ``model`` and the grad mode in ``context`` as the user's code does (eval() stays, as it would)."""
    if context in ("eval", "eval_no_grad"):
        model.eval()
    grad = torch.no_grad() if context in ("no_grad", "eval_no_grad") else contextlib.nullcontext()
    with grad:
        yield


def first_tensor(out: Any) -> torch.Tensor | None:
    """The first floating tensor in a model output (tensor, tuple/list, dict, Hugging Face ModelOutput)."""
    if isinstance(out, torch.Tensor):
        return out if out.is_floating_point() else None
    logits = getattr(out, "logits", None)
    if isinstance(logits, torch.Tensor):
        return logits
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (tuple, list)):
        for item in out:
            t = first_tensor(item)
            if t is not None:
                return t
    return None


def call(model: nn.Module, inputs: Any, kwargs: dict | None = None) -> Any:
    """``model(inputs, **kwargs)``; a tuple of inputs is spread as positional arguments."""
    kwargs = kwargs or {}
    if isinstance(inputs, tuple):
        return model(*inputs, **kwargs)
    return model(inputs, **kwargs)


def step(model: nn.Module, inputs: Any, diagnose_kwargs: dict | None = None) -> Any:
    """One forward (and backward where grad is on) as the user's loop does; returns the output."""
    diagnose_kwargs = diagnose_kwargs or {}
    out = call(model, inputs, diagnose_kwargs.get("kwargs"))
    if torch.is_grad_enabled():
        loss_fn = diagnose_kwargs.get("loss_fn")
        loss = loss_fn(out) if loss_fn is not None else first_tensor(out).float().pow(2).mean()
        if loss.requires_grad:
            loss.backward()
    return out


def run_case(c: Case) -> Any:
    """Build ``c`` (seeded) and run one step in its context; returns (model, inputs, kwargs, output)."""
    torch.manual_seed(0)
    model, inputs, dkw = c.build()
    with user_context(model, c.context):
        out = step(model, inputs, dkw)
    return model, inputs, dkw, out


def grads(model: nn.Module) -> dict[str, torch.Tensor | None]:
    return {n: (None if p.grad is None else p.grad.detach().clone()) for n, p in model.named_parameters()}


def hook_count(module: nn.Module) -> int:
    """Forward, forward-pre and backward hooks on ``module`` (not its children)."""
    return (
        len(module._forward_hooks)
        + len(module._forward_pre_hooks)
        + len(module._backward_hooks)
        + len(module._backward_pre_hooks)
    )


def expect_raises(fn: Callable[[], Any], *types: type[BaseException]) -> BaseException:
    """Run ``fn``; fail unless it raises one of ``types`` (default: any Exception). Returns the exception."""
    types = types or (Exception,)
    try:
        fn()
    except types as err:
        return err
    raise AssertionError(f"expected {[t.__name__ for t in types]} to be raised")


# --------------------------------------------------------------------------------------------------------
# Tiny models used by several case files
# --------------------------------------------------------------------------------------------------------


def tiny_cnn(num_classes: int = 5) -> nn.Module:
    """A VGG-like ``features`` / ``classifier`` network on 3x16x16 images."""
    model = nn.Sequential()
    model.features = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
    )
    model.flatten = nn.Flatten()
    model.classifier = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, num_classes))
    return model


def images(n: int = 4) -> torch.Tensor:
    return torch.randn(n, 3, 16, 16)


def mlp(sizes: tuple[int, ...] = (10, 32, 32, 3)) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=False)):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def named_mlp(sizes: tuple[int, ...] = (10, 32, 32, 3)) -> nn.Sequential:
    """Like :func:`mlp` with named layers fc1, act1, fc2, act2, fc3."""
    from collections import OrderedDict

    layers: OrderedDict[str, nn.Module] = OrderedDict()
    n = len(sizes) - 1
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=False), start=1):
        layers[f"fc{i}"] = nn.Linear(a, b)
        if i < n:
            layers[f"act{i}"] = nn.ReLU()
    return nn.Sequential(layers)


def hf_llama(**overrides: Any) -> nn.Module:
    import transformers

    config = dict(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    config.update(overrides)
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**config))


def hf_qwen2(**overrides: Any) -> nn.Module:
    import transformers

    config = dict(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    config.update(overrides)
    return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**config))


def token_ids(batch: int = 2, seq: int = 8, vocab: int = 64) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, seq))


def hidden_of(output: Any) -> torch.Tensor:
    """A decoder layer's hidden states whatever the transformers version returns (tensor or tuple)."""
    return output[0] if isinstance(output, tuple) else output


def hf_hidden_states_after(flag: str = "output_hidden_states") -> Callable[[nn.Module, Any], None]:
    """``after`` check: the config is untouched and a later plain call with ``flag`` still returns it."""

    def after(model: nn.Module, inputs: Any) -> None:
        assert not getattr(model.config, flag, False), f"config.{flag} was left switched on"
        with torch.no_grad():
            plain = model(inputs)
            asked = model(inputs, **{flag: True})
        attr = "hidden_states" if flag == "output_hidden_states" else "attentions"
        assert getattr(plain, attr, None) is None, f"a plain call now returns {attr}"
        got = getattr(asked, attr, None)
        assert got is not None and len(got) >= model.config.num_hidden_layers, f"{flag}=True lost its {attr}"

    return after


# --------------------------------------------------------------------------------------------------------
# Helpers for bites() checks
# --------------------------------------------------------------------------------------------------------


def strip_hooks(model: nn.Module) -> None:
    """Remove every module hook and every parameter tensor hook from ``model`` (to compare with/without)."""
    for m in model.modules():
        for attr in (
            "_forward_hooks",
            "_forward_pre_hooks",
            "_backward_hooks",
            "_backward_pre_hooks",
            "_forward_hooks_with_kwargs",
            "_forward_pre_hooks_with_kwargs",
            "_forward_hooks_always_called",
        ):
            getattr(m, attr).clear()
    for p in model.parameters():
        if p._backward_hooks:
            p._backward_hooks.clear()


def outputs_and_grads(c: Case, *, strip: bool = False) -> tuple[torch.Tensor, dict]:
    """Build ``c`` seeded, optionally strip its hooks, run one step in its context: (output, grads)."""
    torch.manual_seed(0)
    model, inputs, dkw = c.build()
    if strip:
        strip_hooks(model)
    try:
        with user_context(model, c.context):
            out = step(model, inputs, dkw)
        return first_tensor(out).detach().clone(), grads(model)
    finally:
        if c.teardown is not None:
            c.teardown()


def same(a: dict | torch.Tensor, b: dict | torch.Tensor) -> bool:
    """Bitwise-equal tensors, or dicts of tensors/None."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
    if a.keys() != b.keys():
        return False
    for k in a:
        if (a[k] is None) != (b[k] is None):
            return False
        if a[k] is not None and not torch.equal(a[k], b[k]):
            return False
    return True


def hook_is_a_no_op(c: Case) -> None:
    """Assert: with the user's hooks the outputs and gradients are exactly those of the bare model."""
    out_h, g_h = outputs_and_grads(c)
    out_0, g_0 = outputs_and_grads(c, strip=True)
    assert same(out_h, out_0), "the hook changed the output (it was supposed to have no effect)"
    assert same(g_h, g_0), "the hook changed the gradients (it was supposed to have no effect)"


def hook_changes_something(c: Case) -> None:
    """Assert: with the user's hooks the output or gradients differ from the bare model's."""
    out_h, g_h = outputs_and_grads(c)
    out_0, g_0 = outputs_and_grads(c, strip=True)
    assert not (same(out_h, out_0) and same(g_h, g_0)), "the hook has no effect at all"
