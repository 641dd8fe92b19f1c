"""Checkers for the exercises of notebook 08 (applications of hooks).

Each checker runs the learner's code on the bundled CNN (sometimes with planted faults: dead channels,
an infinite weight), compares the result with an independent computation and checks that no hook is
left behind. It prints ``✓ ...`` when everything holds, or raises
:class:`~hookviz.exercises.ExerciseNotSolved` with a hint. Checkers never print a solution.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from hookviz.data import load_digits
from hookviz.exercises import (
    ExerciseNotSolved,
    call_learner_code,
    checker,
    describe_learner_error,
    expect,
    learner_result,
    missing_return,
    passed,
)
from hookviz.hooks_table import list_hooks
from hookviz.i18n import N_, N_name
from hookviz.models import load_pretrained_cnn

__all__ = [
    "check_activity_counter",
    "check_contrastive_cam",
    "check_nan_guard",
    "check_channel_ablation",
]


# --------------------------------------------------------------------------- helpers


def _module_hook_count(model: nn.Module) -> int:
    """Forward, forward-pre and backward hooks attached to ``model`` or any submodule (read by the inspector)."""
    counted = ("forward_pre", "forward", "backward_pre", "backward", "backward_legacy")
    return sum(1 for row in list_hooks(model, include_global=False) if row.kind in counted)


def _forward_hook_count(module: nn.Module) -> int:
    """Forward hooks attached to ``module`` itself (not its submodules)."""
    return sum(1 for row in list_hooks(module, include_global=False) if row.kind == "forward" and row.where == "<root>")


def _expect_no_hooks(model: nn.Module, what: str) -> None:
    left = _module_hook_count(model)
    expect(
        left == 0,
        f"{left} hook(s) are still attached to the model after {what}; keep the handles that "
        "register_*_hook returns and call .remove() on each (a try/finally makes it safe)",
    )


def _digits(n: int, offset: int = 0) -> tuple[Tensor, Tensor]:
    x, y = load_digits("test")
    return x[offset : offset + n], y[offset : offset + n]


def _layer_output(model: nn.Module, layer: nn.Module, images: Tensor) -> Tensor:
    """The output of ``layer`` for ``images`` (graph kept), via a temporary forward hook."""
    kept: list[Tensor] = []
    handle = layer.register_forward_hook(lambda m, a, out: kept.append(out))
    try:
        model(images)
    finally:
        handle.remove()
    return kept[0]


# --------------------------------------------------------------------------- exercise 1


@checker
def check_activity_counter(counter_cls: type) -> None:
    """Check an ``ActivityCounter(module)`` that counts, per channel, the samples that activated it.

    Expected interface: ``counter = ActivityCounter(module)`` registers a forward hook on ``module``;
    after forward passes ``counter.counts`` is an integer tensor of shape ``(C,)`` (how many samples
    had at least one positive value in channel ``c``), ``counter.samples`` the number of samples seen,
    ``counter.dead()`` the sorted list of channels with a count of 0, ``counter.remove()`` removes
    the hook.
    """
    model = load_pretrained_cnn()
    with torch.no_grad():
        model.features[5].bias[[2, 9, 13]] = -50.0  # planted dead channels
    layer = model.features[6]
    x, _ = _digits(90)
    with torch.no_grad():  # the reference, computed before the learner's hook exists
        reference = (model.features[:7](x) > 0).flatten(2).any(dim=2).sum(dim=0)
    counter = call_learner_code(counter_cls, layer)
    expect(
        _forward_hook_count(layer) == 1,
        f"ActivityCounter(module) should register exactly one forward hook on the module; found "
        f"{_forward_hook_count(layer)}",
    )
    with torch.no_grad():
        for batch in x.split(32):  # three batches: 32, 32, 26
            model(batch)
    counts = getattr(counter, "counts", None)
    expect(isinstance(counts, Tensor), "counter.counts should be a tensor of shape (channels,) after a forward pass")
    expect(
        tuple(counts.shape) == tuple(reference.shape),
        f"counter.counts has shape {tuple(counts.shape)}; expected one count per channel {tuple(reference.shape)}",
    )
    expect(
        int(counts.sum()) != 0,
        "every count is 0: the hook never recorded anything (is it registered, does it add to counts?)",
    )
    expect(
        getattr(counter, "samples", None) == len(x),
        f"counter.samples should be the number of samples seen ({len(x)} in three batches), got "
        f"{getattr(counter, 'samples', None)}; add the batch size on every call",
    )
    expect(
        int(counts.max()) <= len(x),
        "a count is larger than the number of samples: count samples (any positive value in the "
        "channel), not positions or values",
    )
    expect(
        torch.equal(counts.long(), reference.long()),
        "the counts differ from the expected ones: count, for each channel, the samples that have at "
        "least one value > 0 anywhere in that channel's map, and keep adding across calls",
    )
    dead = learner_result(counter.dead, N_("dead() should return the list of dead channels"))
    expect(
        isinstance(dead, list) and all(type(c) is int for c in dead),
        f"dead() should return a plain list of Python ints, got {type(dead).__name__}"
        + (f" of {type(dead[0]).__name__}" if isinstance(dead, list) and dead else "")
        + " (.tolist() turns a tensor of indices into one)",
    )
    expect(
        list(dead) == [2, 9, 13],
        f"dead() returned {dead!r}; it should list (sorted, as ints) the channels whose count is 0",
    )
    call_learner_code(counter.remove)
    _expect_no_hooks(model, "counter.remove()")
    with torch.no_grad():
        model(x[:5])
    expect(int(counter.counts.sum()) == int(reference.sum()), "counts still change after remove()")
    passed("ActivityCounter counts per channel across batches, finds the 3 planted dead channels, removes its hook")


# --------------------------------------------------------------------------- exercise 2


def _reference_cam(model: nn.Module, layer: nn.Module, images: Tensor, score_fn: Callable[[Tensor], Tensor]) -> Tensor:
    """Grad-CAM computed without backward hooks: keep the layer's output, then ``torch.autograd.grad``."""
    kept: list[Tensor] = []
    handle = layer.register_forward_hook(lambda m, a, out: kept.append(out))
    try:
        logits = model(images)
    finally:
        handle.remove()
    (grads,) = torch.autograd.grad(score_fn(logits).sum(), kept[0])
    weights = grads.mean(dim=(2, 3), keepdim=True)
    return torch.relu((weights * kept[0]).sum(dim=1)).detach()


@checker
def check_contrastive_cam(fn: Callable[..., Tensor]) -> None:
    """Check ``contrastive_cam(model, layer_name, images, cls, foil)``: Grad-CAM of ``logit[cls] - logit[foil]``."""
    model = load_pretrained_cnn()
    x, _ = _digits(12)
    cases = [("features.6", 3, 8), ("features.2", 0, 6)]
    for name, cls, foil in cases:
        layer = dict(model.named_modules())[name]
        got = call_learner_code(fn, model, name, x, cls, foil)
        _expect_no_hooks(model, "contrastive_cam(...)")
        missing_return(fn, got, N_("contrastive_cam should return the map as a tensor"))
        expect(isinstance(got, Tensor), f"contrastive_cam should return a tensor, got {type(got).__name__}")
        want = _reference_cam(model, layer, x, lambda lo, c=cls, f=foil: lo[:, c] - lo[:, f])
        expect(
            tuple(got.shape) == tuple(want.shape),
            f"for layer {name!r} the map should have shape (N, H, W) = {tuple(want.shape)}, got {tuple(got.shape)}",
        )
        got = got.detach().float()
        expect(bool((got >= 0).all()), "the map has negative values: Grad-CAM ends with a ReLU")
        plain = _reference_cam(model, layer, x, lambda lo, c=cls: lo[:, c])
        if not torch.allclose(got, want, atol=1e-5, rtol=1e-4):
            if torch.allclose(got, plain, atol=1e-5, rtol=1e-4):
                raise ExerciseNotSolved(
                    "this is the plain Grad-CAM of `cls`; the score to differentiate here is the "
                    "difference logit[cls] - logit[foil]"
                )
            raise ExerciseNotSolved(
                f"the map for layer {name!r} differs from Grad-CAM of logit[cls] - logit[foil]: "
                "weights = gradient averaged over the spatial positions (one weight per channel), "
                "map = ReLU of the weighted sum of the channels"
            )
    passed("contrastive Grad-CAM matches torch.autograd.grad at two layers, and no hook is left behind")


# --------------------------------------------------------------------------- exercise 3


class _Reordered(nn.Module):
    """``head`` is registered first but runs last: registration order is not execution order."""

    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Linear(4, 3)
        self.body = nn.Sequential(nn.Linear(5, 4), nn.ReLU())

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.body(x))


def _expect_raises_naming(run: Callable[[], Any], name: str, others: list[str], case: str) -> None:
    try:
        run()
    except FloatingPointError as exc:
        message = str(exc)
        expect(
            repr(name) in message or f" {name}" in message or message.startswith(name),
            f"{case}: the FloatingPointError should name {name!r}; its message was {message!r}",
        )
        for other in others:
            expect(
                repr(other) not in message,
                f"{case}: the error names {other!r}, but {name!r} produced the first non-finite output",
            )
        return
    except ExerciseNotSolved:
        raise
    except Exception as exc:  # noqa: BLE001 - report whatever the learner's hook raised
        raise ExerciseNotSolved(f"{case}: expected FloatingPointError, but {describe_learner_error(exc)}") from exc
    raise ExerciseNotSolved(
        f"{case}: the forward pass finished without FloatingPointError although {name!r} produced "
        "NaN/Inf; the guard must raise from the forward hook"
    )


@checker
def check_nan_guard(install: Callable[[nn.Module], list[Any]]) -> None:
    """Check ``install_nan_guard(model) -> handles``: forward hooks that raise at the first NaN/Inf output."""
    models: list[nn.Module] = []  # the checker's own models: any hook the learner leaves on them goes at the end
    try:
        _check_nan_guard(install, models)
    finally:
        for model in models:
            list_hooks(model, include_global=False).remove()
    passed("the guard stops the forward pass at the first module (in execution order) whose output is NaN/Inf")


def _check_nan_guard(install: Callable[[nn.Module], list[Any]], models: list[nn.Module]) -> None:
    x, _ = _digits(8)
    clean = load_pretrained_cnn()
    models.append(clean)
    handles = learner_result(install, "install_nan_guard should return the list of handles", clean)
    expect(isinstance(handles, (list, tuple)) and handles, "install_nan_guard should return the list of handles")
    expect(_module_hook_count(clean) >= 10, "put a forward hook on every module (named_modules()), not only a few")
    with torch.no_grad():
        try:
            out = clean(x)
        except FloatingPointError as exc:
            raise ExerciseNotSolved(f"the guard raised on a clean model: {exc}") from exc
    expect(bool(torch.isfinite(out).all()), "the clean model should still give finite logits with the guard on")
    for handle in handles:
        handle.remove()
    _expect_no_hooks(clean, "removing the handles install_nan_guard returned")

    bad = load_pretrained_cnn()
    models.append(bad)
    with torch.no_grad():
        bad.features[4].weight[3, 2, 1, 1] = float("inf")
    handles = call_learner_code(install, bad)
    with torch.no_grad():
        _expect_raises_naming(
            lambda: bad(x), "features.4", ["features.5", "features"], N_name("inf weight in features.4")
        )
        bad_input = x.clone()
        bad_input[0, 0, 4, 4] = float("nan")
        _expect_raises_naming(lambda: bad(bad_input), "features.0", ["features.4"], N_name("NaN in the input"))
    for handle in handles:
        handle.remove()

    reordered = _Reordered()
    models.append(reordered)
    with torch.no_grad():
        reordered.body[0].weight[0, 0] = float("inf")
    handles = call_learner_code(install, reordered)
    with torch.no_grad():
        _expect_raises_naming(
            lambda: reordered(torch.ones(2, 5)),
            "body.0",
            ["head"],
            N_name("a model whose modules run in another order"),
        )
    for handle in handles:
        handle.remove()
    _expect_no_hooks(reordered, "removing the handles")


# --------------------------------------------------------------------------- exercise 4


@checker
def check_channel_ablation(fn: Callable[..., Tensor]) -> None:
    """Check ``channel_ablation(model, layer_name, images, labels) -> Tensor (C,)``.

    Entry ``c`` is the mean over the images of (the logit of the label given for each image) minus
    (the same logit when channel ``c`` of the layer's output is set to zero by a forward hook).
    """
    model = load_pretrained_cnn()
    x, y = _digits(40, offset=100)
    # the second case uses other labels than the true ones: the function must read the labels it is given
    for name, labels in (("features.6", y), ("features.2", (y + 3) % 10)):
        layer = dict(model.named_modules())[name]
        got = call_learner_code(fn, model, name, x, labels)
        _expect_no_hooks(model, "channel_ablation(...)")
        missing_return(fn, got, N_("channel_ablation should return the drops as a tensor"))
        expect(isinstance(got, Tensor), f"channel_ablation should return a tensor, got {type(got).__name__}")
        with torch.no_grad():
            feats = _layer_output(model, layer, x)
            n_channels = feats.shape[1]
            clean = model(x).gather(1, labels[:, None]).squeeze(1)
            want = torch.empty(n_channels)
            for c in range(n_channels):

                def zero_c(module: nn.Module, args: Any, out: Tensor, c: int = c) -> Tensor:
                    out = out.clone()
                    out[:, c] = 0
                    return out

                handle = layer.register_forward_hook(zero_c)
                try:
                    ablated = model(x).gather(1, labels[:, None]).squeeze(1)
                finally:
                    handle.remove()
                want[c] = (clean - ablated).mean()
        expect(
            tuple(got.shape) == (n_channels,),
            f"for {name!r} expected one number per channel, shape ({n_channels},), got {tuple(got.shape)}",
        )
        got = got.detach().float()
        if torch.allclose(got, -want, atol=1e-4) and not torch.allclose(got, want, atol=1e-4):
            raise ExerciseNotSolved("the signs are flipped: report clean logit minus ablated logit")
        expect(
            bool(torch.allclose(got, want, atol=1e-4, rtol=1e-4)),
            f"the drops for {name!r} differ from the expected ones: zero one channel at a time with a "
            "forward hook that returns a modified copy, read the logit of the label given for each "
            "image (the `labels` argument, not the predicted class), average over the images",
        )
    passed("channel ablation matches an independent computation at two layers, and no hook is left behind")
