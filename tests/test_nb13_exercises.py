"""The checkers of notebook 13 accept the solutions and reject the mistakes the notebook warns about."""

from __future__ import annotations

import math

import pytest
import torch

from hookviz.exercises import ExerciseNotSolved
from hookviz.exercises.nb13 import check_frozen_gradcam, check_true_norm_logger


def _total_norm(optimizer: torch.optim.Optimizer) -> float:
    grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
    return torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])).item()


def step_pre_hook_logger(optimizer, log):
    return optimizer.register_step_pre_hook(lambda opt, args, kwargs: log.append(_total_norm(opt)))


def parameter_hook_logger(optimizer, log):
    """The pitfall: a tensor hook fires on every backward, skipped steps included, with scaled gradients."""
    first = optimizer.param_groups[0]["params"][0]
    return first.register_hook(lambda g: log.append(g.norm().item()))


def step_post_hook_logger(optimizer, log):
    """The answer for both kinds of optimizer: after the step, skipping a non-finite norm (a skipped fused step)."""

    def log_norm(opt, args, kwargs):
        norm = _total_norm(opt)
        if math.isfinite(norm):
            log.append(norm)

    return optimizer.register_step_post_hook(log_norm)


def finite_step_pre_hook_logger(optimizer, log):
    """A pre-hook that skips non-finite norms: right for SGD, scaled for a fused optimizer."""

    def log_norm(opt, args, kwargs):
        norm = _total_norm(opt)
        if math.isfinite(norm):
            log.append(norm)

    return optimizer.register_step_pre_hook(log_norm)


def test_true_norm_logger_accepts_a_step_post_hook(capsys):
    check_true_norm_logger(step_post_hook_logger)
    assert capsys.readouterr().out.startswith("✓")


def test_a_plain_step_pre_hook_fails_on_the_fused_optimizers_skipped_step():
    with pytest.raises(ExerciseNotSolved, match=r"with SGD\(fused=True\) you logged 4 values .* fused optimizer"):
        check_true_norm_logger(step_pre_hook_logger)


def test_a_step_pre_hook_sees_scaled_gradients_of_a_fused_optimizer():
    with pytest.raises(ExerciseNotSolved, match=r"with SGD\(fused=True\) your norms are 65536 times"):
        check_true_norm_logger(finite_step_pre_hook_logger)


def test_true_norm_logger_refuses_a_global_hook_left_behind():
    before = len(torch.nn.modules.module._global_forward_hooks)

    def leaky(optimizer, log):
        torch.nn.modules.module.register_module_forward_hook(lambda module, inputs, output: None)
        return step_post_hook_logger(optimizer, log)

    with pytest.raises(ExerciseNotSolved, match="global module hook"):
        check_true_norm_logger(leaky)
    assert len(torch.nn.modules.module._global_forward_hooks) == before


def test_true_norm_logger_rejects_a_parameter_hook():
    with pytest.raises(ExerciseNotSolved, match="skipped one"):
        check_true_norm_logger(parameter_hook_logger)


def test_true_norm_logger_stub_is_not_solved():
    def stub(optimizer, log):
        raise NotImplementedError

    with pytest.raises(ExerciseNotSolved, match="not solved yet"):
        check_true_norm_logger(stub)


def test_true_norm_logger_needs_the_handle():
    handles = []

    def no_handle(optimizer, log):
        handles.append(step_pre_hook_logger(optimizer, log))

    try:
        with pytest.raises(ExerciseNotSolved, match="handle"):
            check_true_norm_logger(no_handle)
    finally:
        for handle in handles:
            handle.remove()


def _gradcam(model, layer, batch, target, *, unfreeze=False, leave_hook=False):
    stored = {}
    if unfreeze:
        model.requires_grad_(True)

    def keep(module, inputs, output):
        if not output.requires_grad:
            output.requires_grad_(True)
        stored["activation"] = output

    handle = layer.register_forward_hook(keep)
    score = model(batch)[:, target].sum()
    if not leave_hook:
        handle.remove()
    (gradient,) = torch.autograd.grad(score, stored["activation"])
    weights = gradient.mean(dim=(2, 3), keepdim=True)
    return (weights * stored["activation"]).sum(dim=1).relu().detach()


def test_frozen_gradcam_accepts_the_output_fix(capsys):
    check_frozen_gradcam(_gradcam)
    assert capsys.readouterr().out.startswith("✓")


def test_frozen_gradcam_rejects_unfreezing():
    with pytest.raises(ExerciseNotSolved, match="no longer frozen"):
        check_frozen_gradcam(lambda *args: _gradcam(*args, unfreeze=True))


def test_frozen_gradcam_rejects_a_hook_left_behind():
    with pytest.raises(ExerciseNotSolved, match="left on the model"):
        check_frozen_gradcam(lambda *args: _gradcam(*args, leave_hook=True))


def test_frozen_gradcam_reports_the_plain_grad_cam_failure():
    def plain(model, layer, batch, target):
        stored = {}
        handle = layer.register_forward_hook(lambda m, i, o: o.register_hook(lambda g: stored.update(g=g)) and None)
        try:
            model(batch)[:, target].sum().backward()
        finally:
            handle.remove()
        return stored["g"]

    with pytest.raises(ExerciseNotSolved):
        check_frozen_gradcam(plain)


def test_frozen_gradcam_refuses_a_global_hook_left_behind():
    before = len(torch.nn.modules.module._global_forward_pre_hooks)

    def leaky(model, layer, batch, target):
        torch.nn.modules.module.register_module_forward_pre_hook(lambda module, inputs: None)
        return _gradcam(model, layer, batch, target)

    with pytest.raises(ExerciseNotSolved, match=r"global module hook\(s\) \(global_forward_pre\)"):
        check_frozen_gradcam(leaky)
    assert len(torch.nn.modules.module._global_forward_pre_hooks) == before
