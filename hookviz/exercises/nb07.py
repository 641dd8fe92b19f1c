"""Checkers for notebook 07: autograd-graph hooks, saved-tensor hooks, state_dict hooks, optimizer in backward."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from hookviz.exercises import (
    ExerciseNotSolved,
    call_learner_code,
    checker,
    expect,
    learner_result,
    missing_return,
    passed,
)
from hookviz.i18n import N_, N_name
from hookviz.models import DigitsCNN

__all__ = ["check_count_saved_bytes", "check_renaming_hook", "check_optimizer_in_backward"]


def _reference_saved_bytes(fn: Callable[..., Tensor], *inputs: Tensor) -> int:
    total = 0

    def pack(t: Tensor) -> Tensor:
        nonlocal total
        total += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*inputs)
    return total


@checker
def check_count_saved_bytes(count_saved_bytes: Callable[..., int]) -> None:
    """Check ``count_saved_bytes(fn, *inputs)``: bytes of every tensor autograd saves while running ``fn``."""
    x = torch.randn(3, 5, requires_grad=True)
    w = torch.randn(5, 4, requires_grad=True)
    cases: list[tuple[str, Callable[..., Tensor], tuple[Tensor, ...]]] = [
        ("x * x", lambda a: a * a, (x,)),
        ("x.exp()", lambda a: a.exp(), (x,)),
        ("(x @ w).relu()", lambda a, b: (a @ b).relu(), (x, w)),
        (N_name("x + 1 (saves nothing)"), lambda a: a + 1, (x,)),
    ]
    for label, fn, inputs in cases:
        got = call_learner_code(count_saved_bytes, fn, *inputs)
        missing_return(count_saved_bytes, got, N_("count_saved_bytes should return the number of bytes as an int"))
        want = _reference_saved_bytes(fn, *inputs)
        expect(
            isinstance(got, int) and not isinstance(got, bool),
            f"count_saved_bytes should return an int, got {type(got).__name__}",
        )
        expect(
            got == want,
            f"for {label} you counted {got} bytes, autograd saved {want}. Hint: count inside the pack hook, once per "
            "call, with numel() * element_size(); a tensor saved twice counts twice.",
        )
    with torch.no_grad():
        got = count_saved_bytes(lambda a: a * a, x)
    expect(got == 0, f"under torch.no_grad() nothing is saved, but you counted {got} bytes")
    passed("count_saved_bytes matches what autograd packs, including tensors saved twice and none under no_grad")


def _old_checkpoint(model: nn.Module, renames: dict[str, str]) -> dict[str, Tensor]:
    old = {}
    for key, value in model.state_dict().items():
        for new, legacy in renames.items():
            if key.startswith(new):
                key = legacy + key[len(new) :]
        old[key] = value.clone()
    return old


@checker
def check_renaming_hook(make_renaming_hook: Callable[[dict[str, str]], Callable[..., Any]]) -> None:
    """Check ``make_renaming_hook(old_to_new)``: a load_state_dict pre-hook that renames key prefixes."""
    torch.manual_seed(1)
    source = DigitsCNN()
    renames = {"features.0.": "stem.conv.", "features.1.": "stem.bn.", "classifier.1.": "head."}
    old = _old_checkpoint(source, renames)
    hook = learner_result(
        make_renaming_hook,
        N_("make_renaming_hook(...) should return the hook function it builds"),
        {legacy: new for new, legacy in renames.items()},
    )
    expect(callable(hook), "make_renaming_hook(...) should return a hook function")
    target = DigitsCNN()
    target.register_load_state_dict_pre_hook(hook)
    try:
        target.load_state_dict(old)
    except RuntimeError as exc:
        first = str(exc).splitlines()[1].strip() if len(str(exc).splitlines()) > 1 else str(exc)
        raise ExerciseNotSolved(
            f"loading the old checkpoint still fails: {first[:160]}... Hint: the hook gets (module, state_dict, "
            "prefix, ...); rename keys of state_dict in place (pop the old key, set the new one)."
        ) from exc
    for (name, want), got in zip(source.state_dict().items(), target.state_dict().values(), strict=True):
        expect(torch.equal(want, got), f"{name} was loaded with the wrong values")
    passed("an old checkpoint with renamed layers loads strictly into DigitsCNN through your pre-hook")


@checker
def check_optimizer_in_backward(
    attach: Callable[[nn.Module, Callable[[list[nn.Parameter]], torch.optim.Optimizer]], list[Any]],
) -> None:
    """Check ``attach(model, make_optimizer)``: per-parameter optimizers stepping in post-accumulate-grad hooks."""
    torch.manual_seed(2)
    base = nn.Sequential(nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 3))
    x, y = torch.randn(8, 6), torch.randint(0, 3, (8,))
    reference = copy.deepcopy(base)
    opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for _ in range(3):
        opt.zero_grad()
        nn.functional.cross_entropy(reference(x), y).backward()
        opt.step()

    model = copy.deepcopy(base)
    made: list[list[nn.Parameter]] = []  # the parameters of every optimizer the learner creates

    def make_optimizer(params: Any) -> torch.optim.Optimizer:
        if isinstance(params, Tensor):
            raise ExerciseNotSolved("make_optimizer takes a list of parameters: make_optimizer([param])")
        params = list(params)
        made.append(params)
        return torch.optim.SGD(params, lr=0.1, momentum=0.9)

    handles = call_learner_code(attach, model, make_optimizer)
    try:
        n_params = len(list(model.parameters()))
        expect(
            bool(made),
            "attach made no optimizer: create them in attach, one per parameter with make_optimizer([param]) - "
            "not inside the hook, where a new optimizer would forget its momentum at every step",
        )
        sizes = [len(params) for params in made]
        expect(
            len(made) == n_params and sizes == [1] * n_params,
            f"you made {len(made)} optimizer(s) holding {sizes} parameters for a model with {n_params} "
            "parameters. With one optimizer for all parameters, every hook's step() walks over every "
            "parameter: a backward pass runs it once per parameter, and it steps whichever parameters hold a "
            ".grad at that moment (the weights come out right here only because every other .grad is None "
            "then). Make one optimizer per parameter, make_optimizer([param]), and step that one in the "
            "parameter's hook.",
        )
        missing_return(attach, handles, N_("attach should return one handle per parameter"))
        expect(
            isinstance(handles, (list, tuple)) and len(handles) == len(list(model.parameters())),
            "attach should return one handle per parameter (a list of what register_post_accumulate_grad_hook returns)",
        )
        for _ in range(3):
            nn.functional.cross_entropy(model(x), y).backward()
            expect(
                all(p.grad is None for p in model.parameters()),
                "after backward() the parameters still hold .grad: free it inside the hook (p.grad = None or "
                "zero_grad(set_to_none=True)) so that no gradient outlives its own step",
            )
        same = all(torch.equal(p, q) for p, q in zip(model.parameters(), reference.parameters(), strict=True))
        expect(
            same,
            "after 3 steps the weights differ from an ordinary optimizer.step() loop. Hint: one optimizer per "
            "parameter, created once (not inside the hook), stepped in that parameter's hook.",
        )
    finally:
        for handle in handles if isinstance(handles, (list, tuple)) else []:
            handle.remove()
    passed("stepping inside backward gives exactly the weights of a normal optimizer loop, with no grads kept")
