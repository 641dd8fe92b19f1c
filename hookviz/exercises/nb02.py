"""Checkers for ``notebooks/02_forward_hooks.ipynb`` (``nn.Module.register_forward_hook``).

Each ``check_*`` function runs the learner's code on the course CNN or a tiny model, prints
``✓ ...`` when it behaves as asked and raises :class:`~hookviz.exercises.ExerciseNotSolved` with a
hint otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn import functional as F
from torch.utils.hooks import RemovableHandle

from hookviz.data import load_digits
from hookviz.exercises import ReturnRecorder, call_learner_code, checker, expect, learner_result, missing_return, passed
from hookviz.hooks_table import list_hooks
from hookviz.i18n import N_
from hookviz.models import load_pretrained_cnn

__all__ = ["check_feature_hook", "check_mixup", "check_call_counter"]

Hook = Callable[[nn.Module, tuple[Any, ...], Any], Any]


@checker
def check_feature_hook(make_hook: Callable[[dict[str, Tensor], str], Hook]) -> None:
    """Exercise 1: ``make_hook(store, name)`` returns a forward hook that keeps a safe copy of the output.

    Safe: detached (no graph kept alive), on the CPU, a copy that a later in-place layer cannot change,
    and the model's own output untouched.
    """
    model = load_pretrained_cnn()
    x = load_digits("test")[0][:8]
    store: dict[str, Tensor] = {}
    names = sorted(["features.2", "classifier.1"])
    modules = dict(model.named_modules())
    hook = learner_result(make_hook, N_("make_hook must return the hook function it builds"), store, "features.2")
    expect(callable(hook), "make_hook must return a function (module, args, output) -> None")
    handles = [modules["features.2"].register_forward_hook(hook)]
    handles.append(modules["classifier.1"].register_forward_hook(call_learner_code(make_hook, store, "classifier.1")))
    try:
        logits = call_learner_code(model, x)
    finally:
        for h in handles:
            h.remove()
    expect(sorted(store) == names, f"store should have the keys {names} (the `name` given), got {sorted(store)}")
    with torch.no_grad():
        want = {"features.2": model.features[:3](x), "classifier.1": model(x)}
    for name in names:
        kept = store[name]
        expect(isinstance(kept, Tensor), f"store[{name!r}] should be a tensor, got {type(kept).__name__}")
        expect(
            kept.grad_fn is None and not kept.requires_grad,
            f"store[{name!r}] is still attached to the autograd graph: it keeps the whole graph alive; detach it",
        )
        expect(kept.device.type == "cpu", f"store[{name!r}] should be on the CPU")
        expect(
            kept.shape == want[name].shape and torch.allclose(kept, want[name]),
            f"store[{name!r}] does not hold that layer's output",
        )
    expect(
        logits.requires_grad,
        "the model's output no longer requires grad: your hook returned the detached tensor and so replaced the"
        " output; a hook that only records should return None",
    )
    # A layer followed by ReLU(inplace=True): what is kept must be what the layer returned.
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(inplace=True))
    batch = torch.randn(5, 3)
    with torch.no_grad():
        returned = net[0](batch).clone()
    kept_store: dict[str, Tensor] = {}
    handle = net[0].register_forward_hook(call_learner_code(make_hook, kept_store, "0"))
    try:
        call_learner_code(net, batch)
    finally:
        handle.remove()
    kept = kept_store.get("0")
    expect(isinstance(kept, Tensor), "on a Linear layer the hook stored nothing under the given name")
    expect(
        torch.equal(kept, returned),
        "behind a ReLU(inplace=True) the stored output lost its negative values: the ReLU overwrote the very "
        "tensor you kept. What you keep must be the layer's output as it was returned (section 2's detail).",
    )
    passed("the hook stores detached CPU copies that later in-place layers cannot change, and leaves the model alone")


@checker
def check_mixup(
    make_mixup_hook: Callable[[float, Tensor], Hook],
    mix_targets: Callable[[Tensor, float, Tensor, int], Tensor],
) -> None:
    """Exercise 2: a mixup hook that mixes only in training mode, and mixed (soft) targets."""
    model = load_pretrained_cnn()
    x, y = load_digits("test")
    x, y = x[:16], y[:16]
    perm = torch.randperm(16, generator=torch.Generator().manual_seed(1))
    lam = 0.3
    hook = learner_result(make_mixup_hook, N_("make_mixup_hook must return the hook function it builds"), lam, perm)
    expect(callable(hook), "make_mixup_hook must return a function (module, args, output)")
    model.train()  # batch statistics in BatchNorm: the reference below is computed the same way
    with torch.no_grad():
        h = model.features[:4](x)
        want = model.classifier(model.features[4:](lam * h + (1 - lam) * h[perm]))
        plain_train = model(x)
    recorder = ReturnRecorder(hook)
    handle = model.features[3].register_forward_hook(recorder)
    try:
        train_logits = call_learner_code(model, x)
        if torch.allclose(train_logits, plain_train):
            recorder.expect_returned(N_("a forward hook replaces the output only through the value it returns"))
        model.eval()
        eval_logits = call_learner_code(model, x)
    finally:
        handle.remove()
    with torch.no_grad():
        plain_eval = model(x)
    expect(isinstance(train_logits, Tensor), "the model should still return logits")
    expect(
        not torch.allclose(train_logits, plain_train),
        "in training mode the output did not change: the hook must return the mixed output",
    )
    expect(
        torch.allclose(train_logits, want, atol=1e-5),
        "in training mode the hidden state should become lam * output + (1 - lam) * output[perm]",
    )
    expect(train_logits.requires_grad, "keep the mixed output in the graph (do not detach it) so that training works")
    expect(
        torch.allclose(eval_logits, plain_eval, atol=1e-6),
        "in eval mode the hook must leave the output alone: look at module.training and return None",
    )
    soft = call_learner_code(mix_targets, y, lam, perm, 10)
    missing_return(mix_targets, soft, N_("mix_targets must return the mixed targets"))
    expect(
        isinstance(soft, Tensor) and soft.shape == (16, 10) and soft.is_floating_point(),
        "mix_targets must return a float tensor of shape (batch, n_classes): one probability row per example",
    )
    expect(torch.allclose(soft.sum(dim=1), torch.ones(16)), "each row of the mixed targets must sum to 1")
    logits = want
    mixed_loss = lam * F.cross_entropy(logits, y) + (1 - lam) * F.cross_entropy(logits, y[perm])
    expect(
        math.isclose(F.cross_entropy(logits, soft).item(), mixed_loss.item(), rel_tol=1e-5),
        "cross-entropy with your soft targets differs from mixing the two losses with lam and 1 - lam: "
        "the label y must get weight lam and the label y[perm] weight 1 - lam",
    )
    passed("the hook mixes hidden states in training only, and the soft targets give the mixed loss")


class _Reuser(nn.Module):
    """A tiny model that calls its `act` module twice per forward."""

    def __init__(self) -> None:
        super().__init__()
        self.lin1 = nn.Linear(3, 3)
        self.act = nn.Tanh()
        self.lin2 = nn.Linear(3, 2)

    def forward(self, x: Tensor) -> Tensor:
        return self.lin2(self.act(self.lin1(self.act(x))))


@checker
def check_call_counter(
    register_counters: Callable[[nn.Module], tuple[dict[str, int], list[RemovableHandle]]],
) -> None:
    """Exercise 3: ``register_counters(model)`` counts calls of every named submodule with forward hooks."""
    model = _Reuser()
    result = learner_result(register_counters, "register_counters must return a tuple (counts, handles)", model)
    expect(
        isinstance(result, tuple) and len(result) == 2,
        "register_counters must return a tuple (counts, handles)",
    )
    counts, handles = result
    expect(isinstance(counts, dict), "counts should be a dict {module name: number of calls}")
    expect(
        isinstance(handles, list) and all(isinstance(h, RemovableHandle) for h in handles),
        "handles should be the list of handles returned by register_forward_hook",
    )
    model(torch.ones(1, 3))
    want = {"lin1": 1, "act": 2, "lin2": 1}
    got = {k: v for k, v in counts.items() if k}
    expect(
        got == want,
        f"after one forward the counts should be {want}, got {got}: "
        "hook every submodule from named_modules() (skip the root, whose name is '') and add 1 per call",
    )
    for h in handles:
        h.remove()
    model(torch.ones(1, 3))
    expect({k: v for k, v in counts.items() if k} == want, "after removing the handles the counts must not change")
    expect(not list_hooks(model, include_global=False), "some hooks are still attached after removing the handles")
    passed("every call is counted (a reused module twice) and the handles remove every hook")
