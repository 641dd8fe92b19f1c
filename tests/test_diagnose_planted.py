"""The hook doctor measured the way a learner meets it: planted pitfalls, written the ways people write them.

Each variant builds a fresh model, plants one mistake (a lambda, a def, a callable class, a
``functools.partial``, a bound method, a global hook, a closure made in a loop, a cell of a notebook ...)
and names the finding ``hookviz.diagnose`` must report. Variants the doctor cannot see are listed in
:data:`UNDETECTABLE` with the reason. Then realistic clean models, with correct hooks of every kind,
must give no finding at any level (info included).
"""

from __future__ import annotations

import dataclasses
import functools
import linecache
import warnings
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
import torch.nn.modules.module as module_globals
from torch import nn
from torch.nn.utils import parametrizations

import hookviz
from hookviz.diagnose import diagnose
from hookviz.llama import VOCAB_SIZE, load_tiny_llama, make_copy_batch

Planted = tuple[nn.Module, Any, list[Any]]
VARIANTS: list[tuple[str, str, Callable[[], Planted]]] = []

#: Variants planted here that a run of the model cannot reveal, with the reason (none at present).
UNDETECTABLE: dict[str, str] = {}


def variant(kind: str) -> Callable[[Callable[[], Planted]], Callable[[], Planted]]:
    """Register a variant that must give a finding of ``kind``."""

    def register(build: Callable[[], Planted]) -> Callable[[], Planted]:
        VARIANTS.append((build.__name__, kind, build))
        return build

    return register


def mlp() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))


X = torch.randn(5, 4)


def cell(source: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """Run ``source`` the way a notebook cell runs: module-level code, its source known to linecache."""
    filename = f"<ipython-input-{abs(hash(source)) % 10_000}-planted>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - the learner's cell
    return namespace


# ------------------------------------------------------------------------------- stored graphs


@variant("stored-graph")
def stored_by_lambda() -> Planted:
    model, kept = mlp(), []
    return model, X, [model[1].register_forward_hook(lambda m, a, o: kept.append(o))]


@variant("stored-graph")
def stored_by_def_in_dict() -> Planted:
    model, acts = mlp(), {}

    def save(module: nn.Module, args: Any, output: torch.Tensor) -> None:
        acts[module] = output

    return model, X, [model[2].register_forward_hook(save)]


class SaveOutput:
    """The blog post's pattern: a callable object that keeps every output in a list attribute."""

    def __init__(self) -> None:
        self.outputs: list[torch.Tensor] = []

    def __call__(self, module: nn.Module, module_in: Any, module_out: torch.Tensor) -> None:
        self.outputs.append(module_out)

    def clear(self) -> None:
        self.outputs = []


@variant("stored-graph")
def stored_by_callable_class() -> Planted:
    model, saver = mlp(), SaveOutput()
    return model, X, [model[0].register_forward_hook(saver), model[2].register_forward_hook(saver)]


@variant("stored-graph")
def stored_by_partial() -> Planted:
    model, store = mlp(), []

    def save(into: list[Any], module: nn.Module, args: Any, output: torch.Tensor) -> None:
        into.append(output)

    return model, X, [model[3].register_forward_hook(functools.partial(save, store))]


@variant("stored-graph")
def stored_by_global_hook() -> Planted:
    model, kept = mlp(), []
    return model, X, [module_globals.register_module_forward_hook(lambda m, a, o: kept.append(o))]


@variant("stored-graph")
def stored_by_global_pre_hook() -> Planted:
    model, inputs = mlp(), []
    return model, X, [module_globals.register_module_forward_pre_hook(lambda m, args: inputs.append(args[0]))]


@variant("stored-graph")
def stored_by_factory_closure() -> Planted:
    model, store = mlp(), {}

    def keep(name: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: Any, output: torch.Tensor) -> None:
            store.setdefault(name, []).append(output[0])  # a view of the output, still in the graph

        return hook

    return model, X, [model[i].register_forward_hook(keep(str(i))) for i in (0, 2)]


class Recorder:
    def __init__(self) -> None:
        self.seen: deque[torch.Tensor] = deque(maxlen=3)

    def record(self, module: nn.Module, args: Any, output: torch.Tensor) -> None:
        self.seen.append(output)


@variant("stored-graph")
def stored_by_bound_method_in_deque() -> Planted:
    model, recorder = mlp(), Recorder()
    return model, X, [model[4].register_forward_hook(recorder.record)]


# ------------------------------------------------------------------------------- late binding


@variant("late-binding")
def late_binding_name_lambda() -> Planted:
    model, acts = mlp(), {}
    handles = []
    for name, layer in model.named_children():
        handles.append(layer.register_forward_hook(lambda m, a, o: acts.__setitem__(name, o.detach())))  # noqa: B023
    return model, X, handles


@variant("late-binding")
def late_binding_enumerate_index() -> Planted:
    model, acts = mlp(), {}
    handles = []
    for i, layer in enumerate(model):
        handles.append(layer.register_forward_hook(lambda m, a, o: acts.__setitem__(i, o.detach())))  # noqa: B023
    return model, X, handles


@variant("late-binding")
def late_binding_range_index_def() -> Planted:
    model, norms = mlp(), [0.0] * 5
    handles = []
    for i in range(len(model)):

        def hook(module: nn.Module, args: Any, output: torch.Tensor) -> None:
            norms[i] = output.detach().norm().item()  # noqa: B023

        handles.append(model[i].register_forward_hook(hook))
    return model, X, handles


@variant("late-binding")
def late_binding_comprehension() -> Planted:
    model, acts = mlp(), {}
    handles = [
        layer.register_forward_hook(lambda m, a, o: acts.__setitem__(i, o.detach()))  # noqa: B023
        for i, layer in enumerate(model)
    ]
    return model, X, handles


@variant("late-binding")
def late_binding_backward_hooks_index() -> Planted:
    model, grads = mlp(), {}
    handles = []
    for i, layer in enumerate(model):
        if isinstance(layer, nn.Linear):
            handles.append(
                layer.register_full_backward_hook(lambda m, gi, go: grads.__setitem__(i, go[0].norm()))  # noqa: B023
            )
    return model, X, handles


@variant("late-binding")
def late_binding_module_object() -> Planted:
    model, acts = mlp(), {}
    handles = []
    for layer in model:
        handles.append(layer.register_forward_hook(lambda m, a, o: acts.__setitem__(layer, o.detach())))  # noqa: B023
    return model, X, handles


@variant("late-binding")
def late_binding_cell_global_index() -> Planted:
    model = mlp()
    ns = cell(
        "acts = {}\nhandles = []\n"
        "for i, layer in enumerate(model):\n"
        "    handles.append(layer.register_forward_hook(lambda m, a, o: acts.__setitem__(i, o.detach())))\n",
        {"model": model},
    )
    return model, X, ns["handles"]


@variant("late-binding")
def late_binding_cell_global_name_def() -> Planted:
    model = mlp()
    ns = cell(
        "shapes = {}\nhandles = []\n"
        "for name, layer in model.named_children():\n"
        "    def log_shape(module, args, output):\n"
        "        shapes[name] = tuple(output.shape)\n"
        "    handles.append(layer.register_forward_hook(log_shape))\n",
        {"model": model},
    )
    return model, X, ns["handles"]


@variant("late-binding")
def late_binding_tensor_hooks_on_params() -> Planted:
    model, norms = mlp(), {}
    handles = []
    for n, p in model.named_parameters():
        handles.append(p.register_hook(lambda g: norms.__setitem__(n, g.norm().item())))  # noqa: B023
    return model, X, handles


# ------------------------------------------------------------------------------- forgotten return


@variant("return-forgotten")
def forgot_return_backward_rebinds_grad_input() -> Planted:
    model = mlp()

    def clip(module: nn.Module, grad_input: Any, grad_output: Any) -> None:
        grad_input = tuple(None if g is None else g.clamp(-0.1, 0.1) for g in grad_input)

    return model, X, [model[2].register_full_backward_hook(clip)]


@variant("return-forgotten")
def forgot_return_backward_new_name() -> Planted:
    model = mlp()

    def clip(module: nn.Module, grad_input: Any, grad_output: Any) -> None:
        clipped = [g.clamp(-0.1, 0.1) if g is not None else None for g in grad_input]  # noqa: F841

    return model, X, [model[4].register_full_backward_hook(clip)]


@variant("return-forgotten")
def forgot_return_tensor_hook() -> Planted:
    model = mlp()

    def clamp(grad: torch.Tensor) -> None:
        grad = grad.clamp(-1, 1)  # noqa: F841

    return model, X, [model[0].weight.register_hook(clamp)]


@variant("return-forgotten")
def forgot_return_forward_hook() -> Planted:
    model = mlp()

    def scale(module: nn.Module, args: Any, output: torch.Tensor) -> None:
        output = output * 2  # noqa: F841

    return model, X, [model[1].register_forward_hook(scale)]


@variant("return-forgotten")
def forgot_return_backward_pre_hook() -> Planted:
    model = mlp()

    def halve(module: nn.Module, grad_output: Any) -> None:
        grad_output = (grad_output[0] * 0.5,)  # noqa: F841

    return model, X, [model[2].register_full_backward_pre_hook(halve)]


@variant("return-forgotten")
def forgot_return_forward_pre_hook() -> Planted:
    model = mlp()

    def noise(module: nn.Module, args: Any) -> None:
        args = (args[0] + 0.1 * torch.randn_like(args[0]),)  # noqa: F841

    return model, X, [model[2].register_forward_pre_hook(noise)]


class GradClipper:
    def __init__(self, limit: float) -> None:
        self.limit = limit

    def __call__(self, module: nn.Module, grad_input: Any, grad_output: Any) -> None:
        new_grad_input = tuple(g.clamp(-self.limit, self.limit) for g in grad_input if g is not None)  # noqa: F841


@variant("return-forgotten")
def forgot_return_callable_class() -> Planted:
    model = mlp()
    return model, X, [model[2].register_full_backward_hook(GradClipper(0.1))]


# ------------------------------------------------------------------------- gradients edited in place


@variant("gradient-edited-in-place")
def grad_mul_in_tensor_hook() -> Planted:
    model = mlp()
    return model, X, [model[0].weight.register_hook(lambda g: g.mul_(0.5))]


@variant("gradient-edited-in-place")
def grad_clamp_in_tensor_hook_def() -> Planted:
    model = mlp()

    def clip(grad: torch.Tensor) -> None:
        grad.clamp_(-0.01, 0.01)

    return model, X, [model[2].bias.register_hook(clip)]


@variant("gradient-edited-in-place")
def grad_iadd_in_tensor_hook() -> Planted:
    model = mlp()

    def add_noise(grad: torch.Tensor) -> torch.Tensor:
        grad += 0.01
        return grad

    return model, X, [model[4].weight.register_hook(add_noise)]


@variant("gradient-edited-in-place")
def grad_setitem_in_tensor_hook() -> Planted:
    model = mlp()

    def zero_big(grad: torch.Tensor) -> None:
        grad[grad.abs() > 0.05] = 0.0

    return model, X, [model[0].weight.register_hook(zero_big)]


@variant("gradient-edited-in-place")
def grad_input_edited_in_backward_hook() -> Planted:
    model = mlp()

    def amplify(module: nn.Module, grad_input: Any, grad_output: Any) -> None:
        grad_input[0].mul_(2)  # works here, silently

    return model, X, [model[2].register_full_backward_hook(amplify)]


@variant("gradient-edited-in-place")
def grad_output_edited_expanded() -> Planted:
    model = mlp()

    def double(module: nn.Module, grad_input: Any, grad_output: Any) -> None:
        grad_output[0].mul_(2)  # the gradient of sum() is an expanded view: PyTorch refuses

    return model, X, [model[4].register_full_backward_hook(double)]


@variant("gradient-edited-in-place")
def grad_output_zeroed_in_backward_pre_hook() -> Planted:
    model = mlp()

    def drop(module: nn.Module, grad_output: Any) -> None:
        grad_output[0].zero_()

    return model, X, [model[2].register_full_backward_pre_hook(drop)]


# ---------------------------------------------------------------------- the clinic's classics, new forms


@variant("hook-cuts-graph")
def returns_detach_clone_def() -> Planted:
    model, stored = mlp(), []

    def save(module: nn.Module, args: Any, output: torch.Tensor) -> torch.Tensor:
        copy = output.detach().clone()
        stored.append(copy)
        return copy

    return model, X, [model[2].register_forward_hook(save)]


@variant("duplicate-hook")
def duplicate_registered_in_training_loop() -> Planted:
    model, log = mlp(), []

    def record(module: nn.Module, args: Any, output: torch.Tensor) -> None:
        log.append(output.detach().mean().item())

    return model, X, [model[2].register_forward_hook(record) for _step in range(3)]


@variant("duplicate-hook")
def duplicate_partial_cell_run_twice() -> Planted:
    model, log = mlp(), []

    def record(into: list[Any], module: nn.Module, args: Any, output: torch.Tensor) -> None:
        into.append(output.detach())

    hook = functools.partial(record, log)
    return model, X, [model[0].register_forward_hook(hook), model[0].register_forward_hook(hook)]


class SharedAct(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2, self.act = nn.Linear(4, 8), nn.Linear(8, 3), nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.fc2(self.act(self.fc1(x))))


@variant("module-called-twice")
def hooked_module_called_twice() -> Planted:
    model, acts = SharedAct(), {}
    return model, X, [model.act.register_forward_hook(lambda m, a, o: acts.__setitem__("act", o.detach()))]


@variant("module-called-twice")
def global_hook_on_reused_module() -> Planted:
    model, acts = SharedAct(), {}
    return model, X, [module_globals.register_module_forward_hook(lambda m, a, o: acts.__setitem__(m, o.detach()))]


@variant("output-edited-in-place")
def output_add_in_place() -> Planted:
    model = mlp()
    return model, X, [model[1].register_forward_hook(lambda m, a, o: o.add_(1.0) and None)]


@variant("input-edited-in-place")
def input_scaled_in_pre_hook() -> Planted:
    model = mlp()

    def scale(module: nn.Module, args: Any) -> None:
        args[0].mul_(0.5)

    return model, X, [model[2].register_forward_pre_hook(scale)]


@variant("bad-gradient-return")
def tensor_hook_returns_norm() -> Planted:
    model = mlp()
    return model, X, [model[4].weight.register_hook(lambda g: g.norm())]


@variant("hook-returns-handle")
def lambda_returns_handle() -> Planted:
    model, grads = mlp(), []
    return model, X, [model[2].register_forward_hook(lambda m, a, o: o.register_hook(grads.append))]


class Stack(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


@variant("hook-never-fires")
def hook_on_module_list() -> Planted:
    model = Stack()
    return model, X, [model.layers.register_forward_hook(lambda m, a, o: None)]


@variant("grad-read-too-early")
def backward_hook_reads_weight_grad() -> Planted:
    model, norms = mlp(), []
    return model, X, [model[0].register_full_backward_hook(lambda m, gi, go: norms.append(m.weight.grad))]


@variant("hook-edits-parameter")
def post_accumulate_decays_weight() -> Planted:
    model = mlp()
    return model, X, [model[2].weight.register_post_accumulate_grad_hook(lambda p: p.mul_(0.99))]


@variant("post-accumulate-returns")
def post_accumulate_lambda_returns_grad() -> Planted:
    model = mlp()
    return model, X, [model[0].bias.register_post_accumulate_grad_hook(lambda p: p.grad.mul_(0.5))]


@variant("legacy-backward-hook")
def legacy_backward_hook() -> Planted:
    model = mlp()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        handle = model[2].register_backward_hook(lambda m, gi, go: None)
    return model, X, [handle]


class ResidualInplace(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.relu = nn.ReLU(inplace=True)
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.relu(self.fc(x)))


@variant("inplace-after-backward-hook")
def full_backward_hook_before_inplace_relu() -> Planted:
    model = ResidualInplace()
    return model, X, [model.fc.register_full_backward_hook(lambda m, gi, go: None)]


@variant("hook-raises")
def pre_hook_with_forward_signature() -> Planted:
    model = mlp()
    return model, X, [model[0].register_forward_pre_hook(lambda m, a, o: None)]


@variant("stores-parameter-view")
def snapshots_share_the_weight() -> Planted:
    model, history = mlp(), []
    return model, X, [model[0].register_forward_hook(lambda m, a, o: history.append(m.weight.detach()))]


class InplaceAfterLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc, self.relu, self.head = nn.Linear(4, 8), nn.ReLU(inplace=True), nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.relu(self.fc(x)))


@variant("stored-output-edited")
def stored_detach_before_inplace_relu() -> Planted:
    model, acts = InplaceAfterLinear(), {}
    return model, X, [model.fc.register_forward_hook(lambda m, a, o: acts.__setitem__("fc", o.detach()))]


@variant("stored-output-edited")
def stored_detach_before_residual_add() -> Planted:
    model, features = ResNet(), []

    def keep(module: nn.Module, args: Any, output: torch.Tensor) -> None:
        features.append(output.detach().cpu())  # .cpu() on a CPU tensor is the same memory

    return model, torch.randn(2, 1, 8, 8), [model.layer1[0].bn2.register_forward_hook(keep)]


@variant("no-gradient-reaches")
def backward_hook_on_frozen_first_layer() -> Planted:
    model = mlp()
    model[0].requires_grad_(False)
    return model, X, [model[0].register_full_backward_hook(lambda m, gi, go: None)]


IDS = [name for name, _, _ in VARIANTS]


@pytest.mark.parametrize(("name", "kind", "build"), VARIANTS, ids=IDS)
def test_the_doctor_finds_the_planted_pitfall(name: str, kind: str, build: Callable[[], Planted]) -> None:
    model, inputs, handles = build()
    try:
        diagnosis = diagnose(model, inputs)
    finally:
        for handle in handles:
            handle.remove()
    if name in UNDETECTABLE:
        pytest.skip(UNDETECTABLE[name])
    assert kind in diagnosis.kinds(), f"{name}: expected {kind}, got:\n{diagnosis}"


def test_the_suite_is_large_and_nearly_all_found() -> None:
    kinds = {kind for _, kind, _ in VARIANTS}
    assert len(VARIANTS) >= 40, len(VARIANTS)
    assert len(set(IDS)) == len(IDS)
    assert len(VARIANTS) - len(UNDETECTABLE) >= 38
    assert len(kinds) >= 15, sorted(kinds)
    assert set(UNDETECTABLE) <= set(IDS)


# =============================================================================== clean models


class BasicBlock(nn.Module):
    """torchvision's BasicBlock: one ReLU object called twice, BatchNorm, ``out += identity``."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = nn.Sequential(BasicBlock(8), BasicBlock(8))
        self.layer2 = nn.Sequential(BasicBlock(8))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet_with_feature_hooks() -> Planted:
    model, features = ResNet().train(), {}

    def keep(name: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: Any, output: torch.Tensor) -> None:
            features[name] = output.detach().clone()  # a copy: the next block's `out += identity` edits it

        return hook

    handles = [model.get_submodule(n).register_forward_hook(keep(n)) for n in ("layer1", "layer2", "avgpool")]
    return model, torch.randn(2, 1, 8, 8), handles


def resnet_eval_no_hooks() -> Planted:
    return ResNet().eval(), torch.randn(2, 1, 8, 8), []


class LSTMTagger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(20, 8)
        self.drop = nn.Dropout(0.2)
        self.lstm = nn.LSTM(8, 16, batch_first=True, bidirectional=True)
        self.tag = nn.Linear(32, 5)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.lstm(self.drop(self.embed(tokens)))
        return self.tag(self.drop(hidden))  # one Dropout used twice, without hooks


def lstm_tagger_with_hooks() -> Planted:
    model, seen, norms = LSTMTagger().train(), {}, {}

    def lstm_out(module: nn.Module, args: Any, output: tuple[torch.Tensor, Any]) -> None:
        seen["lstm"] = output[0].detach()

    handles = [model.lstm.register_forward_hook(lstm_out)]
    handles.append(
        model.tag.weight.register_post_accumulate_grad_hook(lambda p: norms.__setitem__("tag", p.grad.norm()))
    )
    return model, torch.randint(0, 20, (3, 7)), handles


def tiny_llama_with_hooks() -> Planted:
    model, residual, grads = load_tiny_llama(), {}, {}
    handles = [
        layer.register_forward_hook(
            lambda m, a, o, i=i: residual.__setitem__(i, (o[0] if isinstance(o, tuple) else o).detach())
        )
        for i, layer in enumerate(model.model.layers)
    ]
    handles.append(model.lm_head.register_full_backward_hook(lambda m, gi, go: grads.__setitem__("head", go[0].norm())))
    handles.append(model.model.layers[1].self_attn.o_proj.register_forward_pre_hook(lambda m, args: None))
    return model, make_copy_batch(4)[0], handles


def tiny_transformer_with_hooks() -> Planted:
    model, acts = hookviz.load_tiny_transformer(), {}
    layer = model.encoder.layers[0]
    handles = [layer.linear1.register_forward_hook(lambda m, a, o: acts.__setitem__("ff", o.detach()))]
    handles.append(layer.linear2.weight.register_hook(lambda g: None))
    return model, hookviz.make_tiny_batch(4, seed=0)[0], handles


def every_correct_hook_kind() -> Planted:
    model, log = mlp(), {}

    def pre(module: nn.Module, args: Any) -> None:
        log["pre"] = args[0].shape

    def pre_kwargs(module: nn.Module, args: Any, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        return (args[0] * 1.0,), kwargs

    def forward(module: nn.Module, args: Any, output: torch.Tensor) -> None:
        log["out"] = output.detach().cpu()
        output.register_hook(lambda grad: log.__setitem__("out grad", grad.norm().item()))

    def clip(module: nn.Module, grad_input: Any, grad_output: Any) -> tuple[Any, ...]:
        return tuple(None if g is None else g.clamp(-1, 1) for g in grad_input)

    def scale(module: nn.Module, grad_output: Any) -> tuple[Any, ...]:
        return (grad_output[0] * 1.0,)

    def halve_grad(param: torch.Tensor) -> None:
        param.grad.mul_(0.5)  # the parameter's .grad, not the hook's argument: allowed

    handles = [
        model[0].register_forward_pre_hook(pre),
        model[2].register_forward_pre_hook(pre_kwargs, with_kwargs=True),
        model[2].register_forward_hook(forward),
        model[3].register_forward_hook(lambda m, a, o: None, always_call=True),
        model[4].register_full_backward_hook(clip),
        model[2].register_full_backward_pre_hook(scale),
        model[0].weight.register_hook(lambda g: g.clamp(-1, 1)),
        model[0].bias.register_post_accumulate_grad_hook(halve_grad),
    ]
    return model, X, handles


def digits_cnn_with_probes() -> Planted:
    model, acts, norms = hookviz.DigitsCNN(), {}, {}
    handles = []
    for name, module in model.named_modules():
        if isinstance(module, nn.Conv2d):
            handles.append(module.register_forward_hook(functools.partial(_record, acts, name)))
            handles.append(
                module.weight.register_post_accumulate_grad_hook(
                    lambda p, name=name: norms.__setitem__(name, p.grad.norm().item())
                )
            )
    return model, torch.randn(4, 1, 8, 8), handles


def _record(into: dict[str, Any], name: str, module: nn.Module, args: Any, output: torch.Tensor) -> None:
    into[name] = output.detach()


class DropoutMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(4, 16), nn.Linear(16, 16), nn.Linear(16, 3)
        self.drop = nn.Dropout(0.1)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.drop(self.act(self.fc1(x)))
        x = self.drop(self.act(self.fc2(x)))  # Dropout and ReLU reused, no hooks on them
        return self.fc3(x)


def dropout_mlp_with_hooks() -> Planted:
    model, stats = DropoutMLP().train(), {}
    handles = [
        getattr(model, n).register_forward_hook(
            lambda m, a, o, n=n: stats.__setitem__(n, (o.mean().item(), o.std().item()))
        )
        for n in ("fc1", "fc2", "fc3")
    ]
    return model, X, handles


def parametrized_model_with_hooks() -> Planted:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4), nn.Linear(4, 2))
    parametrizations.orthogonal(model[0])
    parametrizations.weight_norm(model[2])
    parametrizations.spectral_norm(model[3])
    acts = {}
    handles = [model[0].register_forward_hook(lambda m, a, o: acts.__setitem__("0", o.detach()))]
    handles.append(model[2].register_full_backward_hook(lambda m, gi, go: None))
    return model.train(), X, handles


class Block(nn.Module):
    """A GPT block: pre-LN, causal SDPA attention, one Dropout used twice."""

    def __init__(self, d: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.drop = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, length, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(n, length, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(n, length, d)
        x = x + self.drop(self.proj(attended))
        return x + self.drop(self.mlp(self.ln2(x)))


class GPT(nn.Module):
    def __init__(self, vocab: int = 12, d: int = 16) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(1, 8, d))
        self.blocks = nn.ModuleList([Block(d), Block(d)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.embed.weight  # tied

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens) + self.pos[:, : tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def gpt_with_residual_and_head_hooks() -> Planted:
    model, residual, per_head = GPT().train(), {}, {}
    handles = [
        block.register_forward_hook(lambda m, a, o, i=i: residual.__setitem__(i, o.detach()))
        for i, block in enumerate(model.blocks)
    ]
    handles += [
        block.proj.register_forward_pre_hook(lambda m, args, i=i: per_head.__setitem__(i, args[0].detach().view(
            *args[0].shape[:2], 2, -1)))
        for i, block in enumerate(model.blocks)
    ]  # fmt: skip
    handles.append(model.embed.weight.register_hook(lambda g: None))  # the tied weight: one hook, one gradient
    return model, torch.randint(0, 12, (2, 6)), handles


@dataclasses.dataclass
class Output:
    logits: torch.Tensor
    hidden: torch.Tensor | None = None


class ModelOutput(OrderedDict):
    """The shape of Hugging Face's ModelOutput: a dict that is also read by attribute."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError as error:
            raise AttributeError(name) from error


class DataclassOut(nn.Module):
    def __init__(self, as_model_output: bool = False) -> None:
        super().__init__()
        self.body, self.head = nn.Linear(4, 8), nn.Linear(8, 3)
        self.as_model_output = as_model_output

    def forward(self, x: torch.Tensor) -> Any:
        hidden = self.body(x).relu()
        logits = self.head(hidden)
        if self.as_model_output:
            return ModelOutput(logits=logits, hidden=hidden)
        return Output(logits=logits, hidden=hidden)


def dataclass_output_with_backward_hooks() -> Planted:
    model = DataclassOut()
    return model, X, [model.head.register_full_backward_hook(lambda m, gi, go: None),
                      model.body.weight.register_hook(lambda g: None)]  # fmt: skip


def model_output_with_backward_hooks() -> Planted:
    model = DataclassOut(as_model_output=True)
    return model, X, [model.body.register_full_backward_hook(lambda m, gi, go: None)]


CLEAN = [
    resnet_with_feature_hooks,
    resnet_eval_no_hooks,
    lstm_tagger_with_hooks,
    tiny_llama_with_hooks,
    tiny_transformer_with_hooks,
    every_correct_hook_kind,
    digits_cnn_with_probes,
    dropout_mlp_with_hooks,
    parametrized_model_with_hooks,
    gpt_with_residual_and_head_hooks,
    dataclass_output_with_backward_hooks,
    model_output_with_backward_hooks,
]


@pytest.mark.parametrize("build", CLEAN, ids=[b.__name__ for b in CLEAN])
def test_a_clean_model_gives_no_finding_at_any_level(build: Callable[[], Planted]) -> None:
    model, inputs, handles = build()
    fired: list[int] = []
    try:
        diagnosis = diagnose(model, inputs)
    finally:
        for handle in handles:
            handle.remove()
    # nothing to fix; at most a note that a hook turns tensors into Python values (free here, a wait on a GPU)
    assert {f.kind for f in diagnosis} <= {"device-sync"}, f"{build.__name__}:\n{diagnosis}"
    assert all(f.severity == "info" for f in diagnosis)
    assert not fired


def test_there_are_at_least_eight_clean_models() -> None:
    assert len(CLEAN) >= 8


def test_the_llama_gets_its_backward_pass() -> None:
    """The ModelOutput (a dataclass) of the course's Hugging Face Llama: the backward hook fires in the diagnosis."""
    model, fired = load_tiny_llama(), []
    handle = model.lm_head.register_full_backward_hook(lambda m, gi, go: fired.append(go[0].shape))
    try:
        assert list(diagnose(model, make_copy_batch(4)[0])) == []
    finally:
        handle.remove()
    assert len(fired) == 1 and fired[0][-1] == VOCAB_SIZE
