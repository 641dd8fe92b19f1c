"""Typed wrong answers: every checker refuses them with a hint that says what went wrong, never a raw error.

Each case is an answer a learner really types (the slips a workshop room makes: the wrong loop, a hook that
returns a shape, ``append`` on a dict, Python's ``min`` on a tensor, a wrong signature, an exception
swallowed...). The test asserts that the check raises :class:`~hookviz.exercises.ExerciseNotSolved` (so a
student copy prints ``✗ <hint>`` and "Run All" goes on) and that the hint names the mistake. A few right
answers prove that the stricter checks still accept good solutions.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.modules.module as module_hooks
from torch import nn
from torch.nn import functional as F

from hookviz.exercises import ExerciseNotSolved, nb00, nb01, nb02, nb03, nb04, nb05, nb07, nb08

# --------------------------------------------------------------------------- nb00 exercise 1: leaf output shapes


def shapes_named_children(model, x):
    shapes, handles = {}, []
    try:
        for name, module in model.named_children():
            handles.append(
                module.register_forward_hook(lambda m, a, out, name=name: shapes.update({name: tuple(out.shape)}))
            )
        model(x)
    finally:
        for handle in handles:
            handle.remove()
    return shapes


def shapes_hook_returns_the_shape(model, x):
    shapes, handles = {}, []
    try:
        for name, module in model.named_modules():
            if name and not list(module.children()):
                handles.append(module.register_forward_hook(lambda m, a, out: out.shape))
        model(x)
    finally:
        for handle in handles:
            handle.remove()
    return shapes


def shapes_never_removed(model, x):
    shapes = {}
    for name, module in model.named_modules():
        if name and not list(module.children()):
            module.register_forward_hook(lambda m, a, out, name=name: shapes.update({name: tuple(out.shape)}))
    model(x)
    return shapes


def shapes_removed_without_finally(model, x):
    shapes, handles = {}, []
    for name, module in model.named_modules():
        if name and not list(module.children()):
            handles.append(
                module.register_forward_hook(lambda m, a, out, name=name: shapes.update({name: tuple(out.shape)}))
            )
    model(x)
    for handle in handles:
        handle.remove()
    return shapes


def shapes_as_lists(model, x):
    shapes, handles = {}, []
    try:
        for name, module in model.named_modules():
            if name and not list(module.children()):
                handles.append(
                    module.register_forward_hook(lambda m, a, out, name=name: shapes.update({name: list(out.shape)}))
                )
        model(x)
    finally:
        for handle in handles:
            handle.remove()
    return shapes


def shapes_of_every_module(model, x):
    shapes, handles = {}, []
    try:
        for name, module in model.named_modules():
            handles.append(
                module.register_forward_hook(lambda m, a, out, name=name: shapes.update({name: tuple(out.shape)}))
            )
        model(x)
    finally:
        for handle in handles:
            handle.remove()
    return shapes


def shapes_append_on_a_dict(model, x):
    shapes, handles = {}, []
    try:
        for name, module in model.named_modules():
            if name and not list(module.children()):
                handles.append(
                    module.register_forward_hook(lambda m, a, out, name=name: shapes.append((name, out.shape)))
                )
        model(x)
    finally:
        for handle in handles:
            handle.remove()
    return shapes


def shapes_wrong_signature(model, x):
    shapes, handles = {}, []

    def make_hook(name):
        def hook(module, output):  # a forward hook gets (module, args, output)
            shapes[name] = tuple(output.shape)

        return hook

    try:
        for name, module in model.named_modules():
            if name and not list(module.children()):
                handles.append(module.register_forward_hook(make_hook(name)))
        model(x)
    finally:
        for handle in handles:
            handle.remove()
    return shapes


def shapes_forgot_to_return(model, x):
    shapes, handles = {}, []
    try:
        for name, module in model.named_modules():
            if name and not list(module.children()):
                handles.append(
                    module.register_forward_hook(lambda m, a, out, name=name: shapes.update({name: tuple(out.shape)}))
                )
        model(x)
    finally:
        for handle in handles:
            handle.remove()


def shapes_typo_in_the_hook(model, x):
    shapes, handles = {}, []

    def make_hook(name):
        def hook(module, args, output):
            shapes[name] = tuple(outptu.shape)  # noqa: F821 - the typo under test

        return hook

    try:
        for name, module in model.named_modules():
            if name and not list(module.children()):
                handles.append(module.register_forward_hook(make_hook(name)))
        model(x)
    finally:
        for handle in handles:
            handle.remove()
    return shapes


def record_output_shapes(model, x):
    """The notebook's solution."""
    shapes, handles = {}, []

    def make_hook(name):
        def hook(module, args, output):
            shapes[name] = tuple(output.shape)

        return hook

    try:
        for name, module in model.named_modules():
            if name and not list(module.children()):
                handles.append(module.register_forward_hook(make_hook(name)))
        model(x)
    finally:
        for handle in handles:
            handle.remove()
    return shapes


# --------------------------------------------------------------------------- nb00 exercise 2: grad-norm logger


def logger_tensor_hook(param, log):
    return param.register_hook(lambda grad: log.append(grad.norm().item()))


def logger_without_handle(param, log):
    param.register_post_accumulate_grad_hook(lambda p: log.append(p.grad.norm().item()))


def logger_wrong_signature(param, log):
    return param.register_post_accumulate_grad_hook(lambda: log.append(param.grad.norm().item()))


# --------------------------------------------------------------------------- nb01


def clip_each_entry(grad):
    return grad.clamp(-1.0, 1.0)


def clip_always_divides(grad):
    return grad / grad.norm()


def clip_in_place(grad):
    norm = grad.norm()
    if norm > 1:
        grad /= norm
    return grad


def clip_python_min(grad):
    return min(grad, torch.ones_like(grad))


def clip_returns_the_norm(grad):
    return grad.norm()


def clip_forgets_to_return(grad):
    norm = grad.norm()
    if norm > 1:
        grad = grad / norm  # noqa: F841 - rebinding, never returned: the mistake under test


def clip_hook(grad):
    """The notebook's solution."""
    norm = grad.norm()
    if norm <= 1:
        return None
    return grad / norm


def once_never_removes(tensor, fn):
    return tensor.register_hook(fn)


def once_drops_the_value(tensor, fn):
    handle = None

    def hook(grad):
        fn(grad)
        handle.remove()

    handle = tensor.register_hook(hook)
    return handle


def once_returns_nothing(tensor, fn):
    def hook(grad):
        result = fn(grad)
        handle.remove()
        return result

    handle = tensor.register_hook(hook)


class LoggerOfIncomingGradients:
    def __init__(self):
        self.norms = []

    def attach(self, model):
        return [p.register_hook(lambda grad: self.norms.append(grad.norm().item())) for p in model.parameters()]


class LoggerWithADict:
    def __init__(self):
        self.norms = {}

    def attach(self, model):
        return [p.register_post_accumulate_grad_hook(self.hook) for p in model.parameters()]

    def hook(self, param):
        self.norms[id(param)] = param.grad.norm().item()


# --------------------------------------------------------------------------- nb02


def feature_hook_returns_detached(store, name):
    def hook(module, args, output):
        store[name] = output.detach().cpu().clone()
        return store[name]

    return hook


def feature_hook_without_detach(store, name):
    def hook(module, args, output):
        store[name] = output

    return hook


def feature_hook_without_clone(store, name):
    def hook(module, args, output):
        store[name] = output.detach().cpu()

    return hook


def feature_hook_append_on_a_dict(store, name):
    def hook(module, args, output):
        store.append(output.detach())

    return hook


def feature_hook_stores_the_input(store, name):
    def hook(module, args, output):
        store[name] = args[0].detach().cpu().clone()

    return hook


def feature_hook_wrong_key(store, name):
    def hook(module, args, output):
        store[type(module).__name__] = output.detach().cpu().clone()

    return hook


def make_hook(store, name):
    """The notebook's solution."""

    def hook(module, args, output):
        store[name] = output.detach().cpu().clone()

    return hook


def mixup_also_in_eval(lam, perm):
    return lambda module, args, output: lam * output + (1 - lam) * output[perm]


def mixup_right(lam, perm):
    def hook(module, args, output):
        if module.training:
            return lam * output + (1 - lam) * output[perm]
        return None

    return hook


def targets_as_labels(y, lam, perm, n_classes):
    return y


def targets_swapped(y, lam, perm, n_classes):
    return (1 - lam) * F.one_hot(y, n_classes).float() + lam * F.one_hot(y[perm], n_classes).float()


def counters_assign_instead_of_add(model):
    counts, handles = {}, []
    for name, module in model.named_modules():
        if name:
            handles.append(module.register_forward_hook(lambda m, a, o, name=name: counts.update({name: 1})))
    return counts, handles


def counters_only_counts(model):
    counts = {}
    for name, module in model.named_modules():
        if name:
            module.register_forward_hook(lambda m, a, o, name=name: counts.update({name: counts.get(name, 0) + 1}))
    return counts


# --------------------------------------------------------------------------- nb03


def clamp_in_place(module, args):
    args[0].clamp_(0, 1)


def clamp_returns_nothing(module, args):
    args[0].clamp(0, 1)


def clamp_wrong_bounds(module, args):
    return (args[0].clamp(-1, 1),)


def guard_with_assert(module, args):
    assert args[0].shape[1:] == (1, 8, 8), "wrong shape"  # noqa: S101 - the mistake under test


def guard_without_the_shape(module, args):
    if args[0].dim() != 4 or tuple(args[0].shape[1:]) != (1, 8, 8):
        raise ValueError("wrong input shape")


def guard_checks_ndim_only(module, args):
    if args[0].dim() != 4:
        raise ValueError(f"expected (N, 1, 8, 8), got {tuple(args[0].shape)}")


def cap_with_indexing(module, args, kwargs):
    if kwargs["factor"] > 1.0:
        return args, {**kwargs, "factor": 1.0}
    return None


def cap_returns_kwargs_only(module, args, kwargs):
    return {**kwargs, "factor": min(kwargs.get("factor", 1.0), 1.0)}


# --------------------------------------------------------------------------- nb04


def halve_every_entry_no_none(module, grad_input, grad_output):
    return tuple(g * 0.5 for g in grad_input)


def halve_the_output_gradient(module, grad_input, grad_output):
    return tuple(None if g is None else g * 0.5 for g in grad_output)


def clip_hooks_without_handles(model, limit):
    for p in model.parameters():
        p.register_hook(lambda grad: grad.clamp(-limit, limit))


def norms_from_grad_input(model, norms):
    handles = []
    for name, module in model.named_modules():
        if isinstance(module, (nn.Conv2d, nn.Linear)):

            def hook(module, grad_input, grad_output, name=name):
                gi = grad_input[0] if grad_input[0] is not None else grad_output[0] * 0
                norms[name] = gi.norm().item()

            handles.append(module.register_full_backward_hook(hook))
    return handles


def norms_as_tensors(model, norms):
    handles = []
    for name, module in model.named_modules():
        if isinstance(module, (nn.Conv2d, nn.Linear)):
            handles.append(
                module.register_full_backward_pre_hook(
                    lambda m, grad_output, name=name: norms.update({name: grad_output[0].norm()})
                )
            )
    return handles


# --------------------------------------------------------------------------- nb05


def _count(counts: dict[str, int]) -> Callable[..., None]:
    def hook(module, args, output):
        counts[type(module).__name__] = counts.get(type(module).__name__, 0) + 1

    return hook


def count_with_local_hooks(model, x):
    counts = {}
    handles = [m.register_forward_hook(_count(counts)) for m in model.modules()]
    try:
        model(x)
    finally:
        for handle in handles:
            handle.remove()
    return counts


def count_swallowing_the_error(model, x):
    counts = {}
    handle = module_hooks.register_module_forward_hook(_count(counts))
    try:
        model(x)
    except Exception:  # noqa: BLE001, S110 - the mistake under test
        pass
    handle.remove()
    return counts


def count_leaking_the_hook(model, x):
    counts = {}
    module_hooks.register_module_forward_hook(_count(counts))
    model(x)
    return counts


def count_leaking_on_error(model, x):
    counts = {}
    handle = module_hooks.register_module_forward_hook(_count(counts))
    model(x)
    handle.remove()
    return counts


def count_calls(model, x):
    """The notebook's solution."""
    counts = {}
    with module_hooks.register_module_forward_hook(_count(counts)):
        model(x)
    return counts


def attach_stacking(module, hook):
    return module.register_forward_hook(hook)


_one_handle: list[Any] = []


def attach_with_one_global_handle(module, hook):
    if _one_handle:
        _one_handle.pop().remove()
    _one_handle.append(module.register_forward_hook(hook))


def safe_hook_without_clone(store):
    return lambda module, args, output: store.append(output.detach())


def safe_hook_without_detach(store):
    return lambda module, args, output: store.append(output.clone())


def safe_hook_indexing_a_list(store):
    def hook(module, args, output):
        store["output"] = output.detach().clone()

    return hook


# --------------------------------------------------------------------------- nb07


def saved_numel_only(fn, *inputs):
    total = 0

    def pack(t):
        nonlocal total
        total += t.numel()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*inputs)
    return total


def saved_as_a_tensor(fn, *inputs):
    total = torch.tensor(0)

    def pack(t):
        nonlocal total
        total = total + t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*inputs)
    return total


def renaming_returns_a_new_dict(old_to_new):
    def hook(module, state_dict, prefix, *rest):
        renamed = {}
        for key, value in state_dict.items():
            for old, new in old_to_new.items():
                if key.startswith(old):
                    key = new + key[len(old) :]
            renamed[key] = value
        return renamed

    return hook


def optimizers_keeping_grads(model, make_optimizer):
    per_param = {p: make_optimizer([p]) for p in model.parameters()}
    return [p.register_post_accumulate_grad_hook(lambda q: per_param[q].step()) for p in model.parameters()]


# --------------------------------------------------------------------------- nb08


class CounterOfPositions:
    def __init__(self, module):
        self.counts, self.samples = None, 0
        self.handle = module.register_forward_hook(self.hook)

    def hook(self, module, args, output):
        counts = (output > 0).sum(dim=(0, 2, 3))
        self.counts = counts if self.counts is None else self.counts + counts
        self.samples += output.shape[0]

    def dead(self):
        return (self.counts == 0).nonzero().flatten().tolist()

    def remove(self):
        self.handle.remove()


class CounterDeadAsTensor(CounterOfPositions):
    def hook(self, module, args, output):
        counts = (output > 0).flatten(2).any(dim=2).sum(dim=0)
        self.counts = counts if self.counts is None else self.counts + counts
        self.samples += output.shape[0]

    def dead(self):
        return (self.counts == 0).nonzero().flatten()


class CounterNeverRemoves(CounterDeadAsTensor):
    def dead(self):
        return (self.counts == 0).nonzero().flatten().tolist()

    def remove(self):
        pass


def _cam(model, layer_name, images, score_fn, relu=True):
    layer = dict(model.named_modules())[layer_name]
    kept = {}
    with layer.register_forward_hook(lambda m, a, out: kept.update(A=out)):
        score = score_fn(model(images)).sum()
    (grads,) = torch.autograd.grad(score, kept["A"])
    cam = (grads.mean(dim=(2, 3), keepdim=True) * kept["A"]).sum(dim=1)
    return (torch.relu(cam) if relu else cam).detach()


def cam_plain(model, layer_name, images, cls, foil):
    return _cam(model, layer_name, images, lambda lo: lo[:, cls])


def cam_without_relu(model, layer_name, images, cls, foil):
    return _cam(model, layer_name, images, lambda lo: lo[:, cls] - lo[:, foil], relu=False)


def _guard_modules(model, error: type[Exception], with_name: bool, leaves_only: bool = False):
    def make_guard(name):
        def guard(module, args, output):
            if isinstance(output, torch.Tensor) and not torch.isfinite(output).all():
                raise error(f"non-finite output in {name!r}" if with_name else "non-finite output")

        return guard

    modules = [(n, m) for n, m in model.named_modules() if not (leaves_only and list(m.children()))]
    return [m.register_forward_hook(make_guard(n)) for n, m in modules]


def guard_raising_value_error(model):
    return _guard_modules(model, ValueError, with_name=True)


def guard_without_the_name(model):
    return _guard_modules(model, FloatingPointError, with_name=False)


def guard_on_children_only(model):
    return [m.register_forward_hook(lambda mod, a, out: None) for _, m in model.named_children()]


def _ablation(model, layer_name, images, labels, sign=1.0, use_predictions=False):
    layer = dict(model.named_modules())[layer_name]
    with torch.no_grad():
        clean_logits = model(images)
        target = clean_logits.argmax(1) if use_predictions else labels
        clean = clean_logits.gather(1, target[:, None]).squeeze(1)
        kept = {}
        with layer.register_forward_hook(lambda m, a, out: kept.update(out=out)):
            model(images)
        drops = []
        for c in range(kept["out"].shape[1]):

            def zero(module, args, out, c=c):
                out = out.clone()
                out[:, c] = 0
                return out

            with layer.register_forward_hook(zero):
                ablated = model(images).gather(1, target[:, None]).squeeze(1)
            drops.append(sign * (clean - ablated).mean())
    return torch.stack(drops)


def ablation_flipped(model, layer_name, images, labels):
    return _ablation(model, layer_name, images, labels, sign=-1.0)


def ablation_predicted_class(model, layer_name, images, labels):
    return _ablation(model, layer_name, images, labels, use_predictions=True)


# --------------------------------------------------------------------------- did the right thing, forgot `return`
# The computation is right in each of these; only the `return` is missing (or one path returns None). The
# hint must name that slip, not send the learner to redo a computation they got right.


def clip_returns_only_when_small(grad):
    norm = grad.norm()
    if norm > 1:
        grad = grad / norm
    else:
        return grad


def make_hook_forgets_to_return(store, name):
    def hook(module, args, output):
        store[name] = output.detach().cpu().clone()


def mixup_hook_forgets_to_return(lam, perm):
    def hook(module, args, output):
        if module.training:
            mixed = lam * output + (1 - lam) * output[perm]  # noqa: F841 - computed, never returned

    return hook


def clamp_computes_but_forgets_to_return(module, args):
    clamped = (args[0].clamp(0, 1),)  # noqa: F841 - computed, never returned


def cap_computes_but_forgets_to_return(module, args, kwargs):
    capped = {**kwargs, "factor": min(kwargs.get("factor", 1.0), 1.0)}  # noqa: F841 - never returned


def halve_computes_but_forgets_to_return(module, grad_input, grad_output):
    halved = tuple(None if g is None else g * 0.5 for g in grad_input)  # noqa: F841 - never returned


def count_calls_forgets_to_return(model, x):
    counts = {}
    with module_hooks.register_module_forward_hook(_count(counts)):
        model(x)


def saved_bytes_forgets_to_return(fn, *inputs):
    total = 0

    def pack(t):
        nonlocal total
        total += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*inputs)


FORGOT_RETURN = [
    (nb00.check_record_output_shapes, shapes_forgot_to_return),
    (nb01.check_clip_hook, clip_forgets_to_return),
    (nb01.check_register_once, once_returns_nothing),
    (nb02.check_feature_hook, make_hook_forgets_to_return),
    (nb03.check_clamp_input, clamp_returns_nothing),
    (nb03.check_clamp_input, clamp_computes_but_forgets_to_return),
    (nb03.check_cap_factor, cap_computes_but_forgets_to_return),
    (nb04.check_halve_input_grads, halve_computes_but_forgets_to_return),
    (nb04.check_clip_hooks, clip_hooks_without_handles),
    (nb05.check_count_calls, count_calls_forgets_to_return),
    (nb07.check_count_saved_bytes, saved_bytes_forgets_to_return),
]


@pytest.mark.parametrize(
    "check, answer", FORGOT_RETURN, ids=[f"{c.__module__.rsplit('.', 1)[-1]}-{a.__name__}" for c, a in FORGOT_RETURN]
)
def test_a_forgotten_return_is_named_as_the_mistake(check, answer, capsys):
    with pytest.raises(ExerciseNotSolved) as info:
        check(answer)
    message = str(info.value)
    del info
    gc.collect()
    assert f"`{answer.__name__}` has no `return` statement, so calling it gives None" in message, message
    assert "only the `return` is missing" in message, message
    assert "✓" not in capsys.readouterr().out


def test_a_return_missing_on_one_path_is_named_too(capsys):
    with pytest.raises(ExerciseNotSolved) as info:
        nb01.check_clip_hook(clip_returns_only_when_small)
    message = str(info.value)
    assert message.startswith("`clip_returns_only_when_small` returned None: a tensor hook changes the gradient"), (
        message
    )
    assert "divide by the norm" not in message  # the computation was right: it is not blamed


def test_a_forgotten_return_inside_a_hook_factory_is_named(capsys):
    with pytest.raises(ExerciseNotSolved) as info:
        nb02.check_mixup(mixup_hook_forgets_to_return, targets_swapped)
    message = str(info.value)
    assert message.startswith("`hook` has no `return` statement"), message
    assert "replaces the output only through the value it returns" in message


def test_the_forgotten_return_hint_speaks_chinese():
    from hookviz.i18n import set_language

    set_language("zh")
    try:
        with pytest.raises(ExerciseNotSolved) as info:
            nb01.check_clip_hook(clip_forgets_to_return)
    finally:
        set_language(None)
    message = str(info.value)
    assert "`clip_forgets_to_return` 里没有 `return` 语句" in message, message
    assert "张量钩子只能通过返回值改变梯度" in message and "缺的只是 `return`" in message, message


def test_none_where_a_value_was_expected_gets_the_return_hint():
    from hookviz.exercises import describe_learner_error

    def uses_a_factory_without_return():
        make = lambda: None  # noqa: E731 - a factory that forgot its return
        return make().register_forward_hook

    try:
        uses_a_factory_without_return()
    except AttributeError as exc:
        text = describe_learner_error(exc)
    assert "a function (or a hook factory) without `return` gives None" in text, text


# --------------------------------------------------------------------------- the cases

CASES = [
    # nb00 exercise 1
    (nb00.check_record_output_shapes, (shapes_named_children,), "named_children() gives only the first level"),
    (nb00.check_record_output_shapes, (shapes_hook_returns_the_shape,), "a hook that only records must return None"),
    (nb00.check_record_output_shapes, (shapes_never_removed,), "still attached after your function returned"),
    (nb00.check_record_output_shapes, (shapes_removed_without_finally,), "`finally:` block"),
    (nb00.check_record_output_shapes, (shapes_as_lists,), "as a tuple of ints"),
    (nb00.check_record_output_shapes, (shapes_of_every_module,), "a leaf module has no children"),
    (nb00.check_record_output_shapes, (shapes_append_on_a_dict,), "`append` is a list method"),
    (nb00.check_record_output_shapes, (shapes_wrong_signature,), "parameters do not match"),
    (nb00.check_record_output_shapes, (shapes_forgot_to_return,), "has no `return` statement"),
    (nb00.check_record_output_shapes, (shapes_typo_in_the_hook,), "`outptu` is not defined"),
    # nb00 exercise 2
    (nb00.check_attach_grad_norm_logger, (logger_tensor_hook,), "incoming gradient"),
    (nb00.check_attach_grad_norm_logger, (logger_without_handle,), "return the handle"),
    (nb00.check_attach_grad_norm_logger, (logger_wrong_signature,), "parameters do not match"),
    # nb01
    (nb01.check_clip_hook, (clip_each_entry,), "clamped on its own"),
    (nb01.check_clip_hook, (clip_always_divides,), "must pass unchanged"),
    (nb01.check_clip_hook, (clip_in_place,), "changed the gradient it received"),
    (nb01.check_clip_hook, (clip_python_min,), "Python's `if`, `and`/`or`, `min`"),
    (nb01.check_clip_hook, (clip_returns_the_norm,), "has shape ()"),
    (nb01.check_clip_hook, (clip_forgets_to_return,), "has no `return` statement"),
    (nb01.check_register_once, (once_never_removes,), "has to remove itself"),
    (nb01.check_register_once, (once_drops_the_value,), "does your hook return what fn returns?"),
    (nb01.check_register_once, (once_returns_nothing,), "has no `return` statement"),
    (nb01.check_grad_norm_logger_class, (LoggerOfIncomingGradients,), "accumulated p.grad"),
    (nb01.check_grad_norm_logger_class, (LoggerWithADict,), "list attribute `norms`"),
    # nb02
    (nb02.check_feature_hook, (feature_hook_returns_detached,), "a hook that only records should return None"),
    (nb02.check_feature_hook, (feature_hook_without_detach,), "still attached to the autograd graph"),
    (nb02.check_feature_hook, (feature_hook_without_clone,), "ReLU(inplace=True)"),
    (nb02.check_feature_hook, (feature_hook_append_on_a_dict,), "`append` is a list method"),
    (nb02.check_feature_hook, (feature_hook_stores_the_input,), "does not hold that layer's output"),
    (nb02.check_feature_hook, (feature_hook_wrong_key,), "(the `name` given)"),
    (nb02.check_mixup, (mixup_also_in_eval, targets_swapped), "in eval mode"),
    (nb02.check_mixup, (mixup_right, targets_as_labels), "float tensor of shape (batch, n_classes)"),
    (nb02.check_mixup, (mixup_right, targets_swapped), "the label y must get weight lam"),
    (nb02.check_call_counter, (counters_assign_instead_of_add,), "add 1 per call"),
    (nb02.check_call_counter, (counters_only_counts,), "a tuple (counts, handles)"),
    # nb03
    (nb03.check_clamp_input, (clamp_in_place,), "changed the caller's tensor in place"),
    (nb03.check_clamp_input, (clamp_returns_nothing,), "only through the value it returns"),
    (nb03.check_clamp_input, (clamp_wrong_bounds,), "clamped into [0, 1]"),
    (nb03.check_digit_shape_guard, (guard_with_assert,), "raised AssertionError instead of ValueError"),
    (nb03.check_digit_shape_guard, (guard_without_the_shape,), "should say which shape it got"),
    (nb03.check_digit_shape_guard, (guard_checks_ndim_only,), "was accepted"),
    (nb03.check_cap_factor, (cap_with_indexing,), "use kwargs.get"),
    (nb03.check_cap_factor, (cap_returns_kwargs_only,), "Return None or (args, kwargs)"),
    # nb04
    (nb04.check_halve_input_grads, (halve_every_entry_no_none,), "keep None entries as None"),
    (nb04.check_halve_input_grads, (halve_the_output_gradient,), "backward failed"),
    (nb04.check_clip_hooks, (clip_hooks_without_handles,), "return a list of the handles"),
    (nb04.check_output_grad_norms, (norms_from_grad_input,), "use grad_output, not grad_input"),
    (nb04.check_output_grad_norms, (norms_as_tensors,), "Python float"),
    # nb05
    (nb05.check_count_calls, (count_with_local_hooks,), "one global forward hook"),
    (nb05.check_count_calls, (count_swallowing_the_error,), "the error must reach the caller"),
    (nb05.check_count_calls, (count_leaking_the_hook,), "a global hook is still registered"),
    (nb05.check_count_calls, (count_leaking_on_error,), "your global hook stays registered"),
    (nb05.check_attach_once, (attach_stacking,), "it stacked"),
    (nb05.check_attach_once, (attach_with_one_global_handle,), "Key the handles by module"),
    (nb05.check_safe_hook, (safe_hook_without_clone,), "ReLU(inplace=True)"),
    (nb05.check_safe_hook, (safe_hook_without_detach,), "still part of the autograd graph"),
    (nb05.check_safe_hook, (safe_hook_indexing_a_list,), "this is a list, not a dict"),
    # nb07
    (nb07.check_count_saved_bytes, (saved_numel_only,), "numel() * element_size()"),
    (nb07.check_count_saved_bytes, (saved_as_a_tensor,), "should return an int"),
    (nb07.check_renaming_hook, (renaming_returns_a_new_dict,), "rename keys of state_dict in place"),
    (nb07.check_optimizer_in_backward, (optimizers_keeping_grads,), "free it inside the hook"),
    # nb08
    (nb08.check_activity_counter, (CounterOfPositions,), "count samples"),
    (nb08.check_activity_counter, (CounterDeadAsTensor,), "plain list of Python ints"),
    (nb08.check_activity_counter, (CounterNeverRemoves,), "still attached to the model after counter.remove()"),
    (nb08.check_contrastive_cam, (cam_plain,), "plain Grad-CAM"),
    (nb08.check_contrastive_cam, (cam_without_relu,), "Grad-CAM ends with a ReLU"),
    (
        nb08.check_nan_guard,
        (guard_raising_value_error,),
        "expected FloatingPointError, but your code raised ValueError",
    ),
    (nb08.check_nan_guard, (guard_without_the_name,), "should name 'features.4'"),
    (nb08.check_nan_guard, (guard_on_children_only,), "put a forward hook on every module"),
    (nb08.check_channel_ablation, (ablation_flipped,), "the signs are flipped"),
    (nb08.check_channel_ablation, (ablation_predicted_class,), "not the predicted class"),
]


def _case_id(case) -> str:
    check, answers, _ = case
    return f"{check.__module__.rsplit('.', 1)[-1]}-{answers[0].__name__}"


def test_there_are_at_least_forty_wrong_answers_across_the_notebooks():
    assert len(CASES) >= 40
    modules = {check.__module__.rsplit(".", 1)[-1] for check, _, _ in CASES}
    assert modules == {"nb00", "nb01", "nb02", "nb03", "nb04", "nb05", "nb07", "nb08"}


@pytest.mark.parametrize("check, answers, hint", CASES, ids=[_case_id(c) for c in CASES])
def test_wrong_answer_is_refused_with_a_hint(check, answers, hint, capsys):
    with pytest.raises(ExerciseNotSolved) as info:
        check(*answers)
    message = str(info.value)
    del info  # its traceback holds the check's frames (and the tensors of a failed backward) alive
    gc.collect()
    assert hint in message, message
    assert "✓" not in capsys.readouterr().out, "the check printed a ✓ for a wrong answer"
    assert "Traceback" not in message


@pytest.mark.parametrize(
    "check, answer",
    [
        (nb00.check_record_output_shapes, record_output_shapes),
        (nb01.check_clip_hook, clip_hook),
        (nb02.check_feature_hook, make_hook),
        (nb05.check_count_calls, count_calls),
    ],
    ids=["nb00", "nb01", "nb02", "nb05"],
)
def test_right_answers_still_pass(check, answer, capsys):
    check(answer)
    assert capsys.readouterr().out.startswith("✓ ")


def test_a_learner_error_names_the_function_the_line_and_the_error():
    with pytest.raises(ExerciseNotSolved) as info:
        nb00.check_record_output_shapes(shapes_typo_in_the_hook)
    message = str(info.value)
    assert "your code raised NameError: name 'outptu' is not defined" in message
    line = next(i for i, text in enumerate(open(__file__).read().splitlines(), 1) if "tuple(outptu.shape)" in text)
    assert re.search(
        rf"in `hook`, line {line} of test_wrong_answers\.py: `shapes\[name\] = tuple\(outptu\.shape\)", message
    ), message
