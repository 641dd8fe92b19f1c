"""Checkers for notebook 13: hooks inside a training loop (mixed precision, frozen backbones)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from hookviz.exercises import ExerciseNotSolved, call_learner_code, checker, expect, missing_return, passed
from hookviz.exercises.nb12 import expect_no_new_global_hooks, global_hook_ids, remove_new_global_hooks
from hookviz.hooks_table import list_hooks
from hookviz.i18n import N_
from hookviz.models import DigitsCNN

__all__ = ["check_true_norm_logger", "check_frozen_gradcam"]


def _total_norm(optimizer: torch.optim.Optimizer) -> float:
    grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item()


#: The optimizers exercise 1 is checked with: an ordinary one, whose step hooks see unscaled gradients and skip a
#: skipped step, and two fused ones, which take the scale themselves (their step pre-hook sees scaled gradients, and
#: both step hooks run on a step the scaler skips).
_OPTIMIZERS: dict[str, Callable[[Any], torch.optim.Optimizer]] = {
    "SGD": lambda params: torch.optim.SGD(params, lr=0.05),
    "SGD(fused=True)": lambda params: torch.optim.SGD(params, lr=0.05, fused=True),
    "Adam(fused=True)": lambda params: torch.optim.Adam(params, lr=1e-3, fused=True),
}


@checker
def check_true_norm_logger(attach: Callable[[torch.optim.Optimizer, list[float]], Any]) -> None:
    """Check ``attach(optimizer, log)``: log the unscaled total gradient norm once per step actually taken.

    It runs with an ordinary optimizer (``SGD``) and with fused ones (``fused=True``), which unscale inside their
    own step: the answer must hold for both kinds. Global module hooks left behind are refused too.
    """
    before = global_hook_ids()
    try:
        for name, make in _OPTIMIZERS.items():
            _check_true_norm_logger(attach, name, make)
        expect_no_new_global_hooks(before, "attach_true_norm_logger(...)")
    finally:
        remove_new_global_hooks(before)
    passed("3 unscaled norms for 3 steps taken; the skipped NaN step left no entry")


def _check_true_norm_logger(
    attach: Callable[[torch.optim.Optimizer, list[float]], Any],
    name: str,
    make: Callable[[Any], torch.optim.Optimizer],
) -> None:
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
    optimizer = make(model.parameters())
    fused = name != "SGD"
    scaler = torch.amp.GradScaler("cpu")
    x, y = torch.randn(32, 6), torch.randint(0, 4, (32,))
    bad = x.clone()
    bad[0, 0] = float("nan")
    log: list[float] = []
    handle = call_learner_code(attach, optimizer, log)
    expect(
        hasattr(handle, "remove"),
        "attach should return the handle of the hook it registered (what register_step_pre_hook returns)",
    )
    truth: list[float] = []
    skipped = []
    scales = []
    try:
        for inputs in (x, bad, x, x):
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = nn.functional.cross_entropy(model(inputs), y)
            scaler.scale(loss).backward()
            scale = scaler.get_scale()
            true_norm = _total_norm(optimizer) / scale  # dividing by a power of two is exact
            scaler.step(optimizer)
            scaler.update()
            skipped.append(scaler.get_scale() < scale)
            if not skipped[-1]:
                truth.append(true_norm)
                scales.append(scale)
    finally:
        handle.remove()
    expect(skipped == [False, True, False, False], "internal: the NaN step was expected to be skipped")
    expect(
        all(isinstance(v, float) for v in log),
        f"log floats (e.g. norm.item()), got {sorted({type(v).__name__ for v in log})}",
    )
    if fused and len(log) == len(truth) + 1:
        raise ExerciseNotSolved(
            f"with {name} you logged {len(log)} values for 3 steps taken: a fused optimizer runs its step hooks on "
            "the step the scaler skips too (it skips the update inside its kernel). Skip a norm that is not finite "
            "(math.isfinite)."
        )
    expect(
        len(log) == len(truth),
        f"4 steps ran and the scaler skipped one (NaN gradients): 3 steps were taken, you logged {len(log)} "
        "values. Hint: an optimizer step pre-hook runs only when optimizer.step() really runs, and a hook on a "
        "parameter also fires on the skipped step.",
    )
    ratios = [got / want for got, want in zip(log, truth, strict=True)]
    scaled = any(math.isclose(r, s, rel_tol=1e-3) or r > 100 for r, s in zip(ratios, scales, strict=True))
    if fused and scaled:
        raise ExerciseNotSolved(
            f"with {name} your norms are {ratios[0]:.0f} times the true ones: a fused optimizer unscales the "
            "gradients inside its own step, so its step pre-hook still sees them scaled. A step post-hook sees "
            "them unscaled with both kinds of optimizer."
        )
    expect(
        not scaled,
        f"your norms are {ratios[0]:.0f} times the true ones: you logged scaled gradients. The step pre-hook runs "
        "after scaler.step() has unscaled them; read p.grad there.",
    )
    expect(
        all(math.isclose(r, 1.0, rel_tol=1e-4) for r in ratios),
        f"your norms differ from the total gradient norm (ratios {[round(r, 3) for r in ratios]}). Hint: the "
        "2-norm over all parameters of the optimizer, e.g. the norm of the stack of each p.grad's norm.",
    )
    left = list_hooks(model, include_global=False, optimizer=optimizer)
    expect(not left, f"{len(left)} hook(s) still attached after handle.remove(): return the handle of your hook")


def _reference_cam(model: nn.Module, layer: nn.Module, images: Tensor, target: int) -> Tensor:
    stored: dict[str, Tensor] = {}

    def keep(module: nn.Module, inputs: Any, output: Tensor) -> None:
        stored["act"] = output

    handle = layer.register_forward_hook(keep)
    try:
        score = model(images)[:, target].sum()
    finally:
        handle.remove()
    (grad,) = torch.autograd.grad(score, stored["act"])
    weights = grad.mean(dim=(2, 3), keepdim=True)
    return (weights * stored["act"]).sum(dim=1).relu().detach()


@checker
def check_frozen_gradcam(frozen_gradcam: Callable[[nn.Module, nn.Module, Tensor, int], Tensor]) -> None:
    """Check ``frozen_gradcam(model, layer, images, target)`` on a fully frozen model.

    No hook may be left, neither on the model nor a global module hook (those are removed after the check).
    """
    before = global_hook_ids()
    try:
        _check_frozen_gradcam(frozen_gradcam, before)
    finally:
        remove_new_global_hooks(before)


def _check_frozen_gradcam(
    frozen_gradcam: Callable[[nn.Module, nn.Module, Tensor, int], Tensor], before: set[tuple[str, int]]
) -> None:
    from hookviz.data import load_digits

    torch.manual_seed(4)
    trainable = DigitsCNN().eval()
    images = load_digits("test")[0][:6]
    frozen = DigitsCNN().eval()
    frozen.load_state_dict(trainable.state_dict())
    frozen.requires_grad_(False)
    for layer_name, target in (("features.4", 2), ("features.0", 7)):
        layer = dict(frozen.named_modules())[layer_name]
        want = _reference_cam(trainable, dict(trainable.named_modules())[layer_name], images, target)
        got = call_learner_code(frozen_gradcam, frozen, layer, images.clone(), target)
        missing_return(frozen_gradcam, got, N_("frozen_gradcam should return the map as a tensor"))
        expect(isinstance(got, Tensor), f"frozen_gradcam should return a tensor, got {type(got).__name__}")
        expect(
            tuple(got.shape) == tuple(want.shape),
            f"the map for {layer_name} has shape {tuple(got.shape)}, expected {tuple(want.shape)} (N, H, W)",
        )
        expect(
            torch.allclose(got, want, atol=1e-6),
            f"the map for {layer_name}, class {target}, differs from Grad-CAM on the same model unfrozen. Hint: "
            "weights = gradient averaged over height and width, then ReLU of the weighted sum over channels.",
        )
        expect(
            all(not p.requires_grad for p in frozen.parameters()),
            "the model is no longer frozen: make the captured activation require grad, not the parameters",
        )
        expect(all(p.grad is None for p in frozen.parameters()), "frozen parameters got a .grad")
        left = list_hooks(frozen, include_global=False)
        expect(not left, f"{len(left)} hook(s) left on the model: remove them in a finally block")
        expect_no_new_global_hooks(before, "frozen_gradcam(...)")
    passed("Grad-CAM on a fully frozen model matches the unfrozen one, and the model stays frozen with no hooks")
