"""Checkers for notebook 13: hooks inside a training loop (mixed precision, frozen backbones)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from hookviz.exercises import call_learner_code, checker, expect, passed
from hookviz.hooks_table import list_hooks
from hookviz.models import DigitsCNN

__all__ = ["check_true_norm_logger", "check_frozen_gradcam"]


def _total_norm(optimizer: torch.optim.Optimizer) -> float:
    grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item()


@checker
def check_true_norm_logger(attach: Callable[[torch.optim.Optimizer, list[float]], Any]) -> None:
    """Check ``attach(optimizer, log)``: log the unscaled total gradient norm once per step actually taken."""
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
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
    reference = optimizer.register_step_pre_hook(lambda opt, args, kwargs: truth.append(_total_norm(opt)))
    skipped = []
    try:
        for inputs in (x, bad, x, x):
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = nn.functional.cross_entropy(model(inputs), y)
            scaler.scale(loss).backward()
            scale = scaler.get_scale()
            scaler.step(optimizer)
            scaler.update()
            skipped.append(scaler.get_scale() < scale)
    finally:
        reference.remove()
        handle.remove()
    expect(skipped == [False, True, False, False], "internal: the NaN step was expected to be skipped")
    expect(
        all(isinstance(v, float) for v in log),
        f"log floats (e.g. norm.item()), got {sorted({type(v).__name__ for v in log})}",
    )
    expect(
        len(log) == len(truth),
        f"4 steps ran and the scaler skipped one (NaN gradients): 3 steps were taken, you logged {len(log)} "
        "values. Hint: an optimizer step pre-hook runs only when optimizer.step() really runs, and a hook on a "
        "parameter also fires on the skipped step.",
    )
    ratios = [got / want for got, want in zip(log, truth, strict=True)]
    expect(
        not any(math.isclose(r, scaler.get_scale(), rel_tol=1e-3) or r > 100 for r in ratios),
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
    passed("3 unscaled norms for 3 steps taken; the skipped NaN step left no entry")


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
    """Check ``frozen_gradcam(model, layer, images, target)`` on a fully frozen model."""
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
    passed("Grad-CAM on a fully frozen model matches the unfrozen one, and the model stays frozen with no hooks")
