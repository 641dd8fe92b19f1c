"""Family b: loop variables captured late by hooks registered in a loop (and the fixed versions)."""

# ruff: noqa: B023  (closures that do not bind their loop variable are the planted bugs of this family)

from __future__ import annotations

import functools

import torch
from torch import nn

from . import Case, case, first_tensor, hf_llama, hidden_of, images, named_mlp, run_case, tiny_cnn, token_ids

CASES: list[Case] = []


def _by_name(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


def _store(c: Case) -> dict:
    """Run case ``c`` and return the dict its hooks filled (the builds stash it on the model)."""
    model, _, _, _ = run_case(c)
    return model._blind_store


def _keys_collapse(name: str, expected_keys: int):
    def bites() -> None:
        store = _store(_by_name(name))
        assert len(store) < expected_keys, f"hooks wrote {len(store)} distinct keys, expected collapse"

    return bites


# --- b1: lambda over named_modules, `name` late-bound ---------------------------------------------------

CNN_CONVS = ("features.0", "features.3")


@case(
    CASES,
    family="b",
    source="https://github.com/deepfx/netlens/pull/1 (hooks over named_modules); lambda closes over loop `name`",
    culprit=CNN_CONVS + ("<lambda>",),
    note="acts.__setitem__(name, o) in a lambda: every layer writes under the last name",
    bites=_keys_collapse("b1_lambda_named_modules", 2),
)
def b1_lambda_named_modules():
    model = tiny_cnn()
    acts = {}
    for name, m in model.named_modules():
        if isinstance(m, nn.Conv2d):
            m.register_forward_hook(lambda mod, i, o: acts.__setitem__(name, o.detach()))
    model._blind_store = acts
    return model, images(), {}


# --- b2: def inside for-enumerate, `i` late-bound --------------------------------------------------------


class Stack(nn.Module):
    def __init__(self, n=3, d=16):
        super().__init__()
        self.layers = nn.ModuleList([nn.Sequential(nn.Linear(d, d), nn.GELU()) for _ in range(n)])
        self.head = nn.Linear(d, 2)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


@case(
    CASES,
    family="b",
    source="https://github.com/facebookresearch/kill-the-bits/issues/35 (fwd_hook storing per-layer activations)",
    culprit=("layers.0", "layers.1", "layers.2"),
    note="def hook inside `for i, layer in enumerate(...)` uses i at call time: all layers -> feats[2]",
    bites=_keys_collapse("b2_def_in_loop_index", 3),
)
def b2_def_in_loop_index():
    model = Stack()
    feats = {}
    for i, layer in enumerate(model.layers):

        def hook(m, inp, out):
            feats[i] = out.detach()

        layer.register_forward_hook(hook)
    model._blind_store = feats
    return model, torch.randn(5, 16), {}


# --- b3: per-layer scale factors applied through a lambda: every layer gets the last scale ---------------


def _b3(fixed: bool):
    def build():
        model = Stack()
        scales = [1.0, 0.5, 0.1]
        for idx, layer in enumerate(model.layers):
            if fixed:
                layer.register_forward_hook(lambda m, i, o, idx=idx: o * scales[idx])
            else:
                layer.register_forward_hook(lambda m, i, o: o * scales[idx])
        return model, torch.randn(5, 16), {}

    return build


def _b3_bites() -> None:
    late = run_case(Case("late", "b", "", _b3(False), ("x",)))[3]
    fixed = run_case(Case("fixed", "b", "", _b3(True), None))[3]
    assert not torch.allclose(first_tensor(late), first_tensor(fixed)), "late binding made no difference"


case(
    CASES,
    family="b",
    source="https://github.com/deepfx/netlens/pull/1 (per-layer hooks); scales[idx] read after the loop",
    culprit=("layers.0", "layers.1", "layers.2", "<lambda>"),
    note="layer-wise output scaling: every hook multiplies by scales[2]",
    bites=_b3_bites,
    name="b3_lambda_scale_last_idx",
)(_b3(False))

case(
    CASES,
    family="b",
    source="https://github.com/deepfx/netlens/pull/1 (per-layer hooks); fixed with a default argument",
    culprit=None,
    note="same per-layer scaling with `idx=idx` default argument",
    name="b_clean_lambda_scale_default_arg",
)(_b3(True))


# --- b4: gradient norm logging per parameter via lambda --------------------------------------------------

MLP_PARAMS = ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias")


@case(
    CASES,
    family="b",
    source=(
        "https://github.com/pytorch/pytorch/issues/16276 (hooks registered `for idx, m"
        " in enumerate(model.named_modules())`)"
    ),
    culprit=MLP_PARAMS + ("<lambda>",),
    note="p.register_hook(lambda g: grad_norms.__setitem__(name, g.norm())): all under the last name",
    bites=_keys_collapse("b4_param_grad_norm_lambda", 6),
)
def b4_param_grad_norm_lambda():
    model = named_mlp()
    grad_norms = {}
    for name, p in model.named_parameters():
        p.register_hook(lambda g: grad_norms.__setitem__(name, g.detach().norm()))
    model._blind_store = grad_norms
    return model, torch.randn(8, 10), {}


# --- b5: nested: tensor hook registered inside a forward hook defined in the loop -----------------------


@case(
    CASES,
    family="b",
    source="https://github.com/kazuto1011/grad-cam-pytorch (per-layer forward/backward hooks by name)",
    culprit=CNN_CONVS + ("save_fmaps",),
    note="forward hook defined in the loop registers a grad hook storing grads[name]: name is the last conv",
    bites=_keys_collapse("b5_nested_grad_hook_name", 2),
)
def b5_nested_grad_hook_name():
    model = tiny_cnn()
    fmaps, grads = {}, {}
    for name, m in model.named_modules():
        if isinstance(m, nn.Conv2d):

            def save_fmaps(module, inp, out):
                fmaps[name] = out.detach()
                out.register_hook(lambda g: grads.__setitem__(name, g.detach()))

            m.register_forward_hook(save_fmaps)
    model._blind_store = grads
    return model, images(), {}


# --- b6: list comprehension of lambdas: comprehension variable is late-bound too -------------------------


@case(
    CASES,
    family="b",
    source="https://github.com/Lightning-AI/pytorch-lightning/pull/2298 (summary hooks via comprehension)",
    culprit=("features", "flatten", "classifier", "<lambda>"),
    note="handles = [m.register_forward_hook(lambda *a: calls.append(n)) for n, m in named_children()]",
    bites=lambda: _b6_bites(),
)
def b6_comprehension_lambda():
    model = tiny_cnn()
    calls = []
    model._blind_handles = [m.register_forward_hook(lambda *a: calls.append(n)) for n, m in model.named_children()]
    model._blind_store = calls
    return model, images(), {}


def _b6_bites() -> None:
    calls = _store(_by_name("b6_comprehension_lambda"))
    assert len(calls) == 3 and len(set(calls)) == 1, calls


# --- b7: HF Llama decoder layers cached under f"layer{i}" with i late-bound ------------------------------


@case(
    CASES,
    family="b",
    source="https://github.com/p-e-w/heretic/pull/384 (capture residuals with hooks on decoder layers)",
    culprit=("model.layers.0", "model.layers.1", "<lambda>"),
    context="eval_no_grad",
    note="cache[f'layer{i}'] written by a lambda in `for i, layer in enumerate(model.model.layers)`",
    bites=_keys_collapse("b7_llama_layer_cache_late_i", 2),
)
def b7_llama_layer_cache_late_i():
    model = hf_llama()
    cache = {}
    for i, layer in enumerate(model.model.layers):
        layer.register_forward_hook(lambda m, a, o: cache.__setitem__(f"layer{i}", hidden_of(o).detach()))
    model._blind_store = cache
    return model, token_ids(), {}


# --- b8: pruning masks per parameter, `mask` late-bound (same shapes: silent) ---------------------------


class Twin(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 16)
        self.fc2 = nn.Linear(16, 16)
        self.out = nn.Linear(16, 2)

    def forward(self, x):
        return self.out(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


def _b8(fixed: bool):
    def build():
        model = Twin()
        masks = {
            "fc1.weight": (torch.rand(16, 16) > 0.5).float(),
            "fc2.weight": (torch.rand(16, 16) > 0.5).float(),
        }
        for name, p in model.named_parameters():
            if name in masks:
                mask = masks[name]
                if fixed:
                    p.register_hook(functools.partial(torch.mul, other=mask))
                else:
                    p.register_hook(lambda g: g * mask)
        model._blind_masks = masks
        return model, torch.randn(8, 16), {}

    return build


def _b8_bites() -> None:
    model, _, _, _ = run_case(Case("late", "b", "", _b8(False), ("x",)))
    g1 = model.fc1.weight.grad
    wrong = (model._blind_masks["fc1.weight"] == 0) & (g1 != 0)
    assert wrong.any(), "fc1 gradient respects its own mask"


case(
    CASES,
    family="b",
    source="https://github.com/pytorch/pytorch/issues/41529 (ApplyMask gradient hooks on parameters)",
    culprit=("fc1.weight", "fc2.weight", "<lambda>"),
    note="p.register_hook(lambda g: g * mask) in a loop: fc1 gets fc2's mask",
    bites=_b8_bites,
    name="b8_prune_mask_late_bound",
)(_b8(False))

case(
    CASES,
    family="b",
    source="https://github.com/pytorch/pytorch/issues/41529 (ApplyMask); fixed with functools.partial",
    culprit=None,
    note="the b8 masks bound with functools.partial(torch.mul, other=mask)",
    name="b_clean_prune_mask_partial",
)(_b8(True))


# --- b9: stats hook keyed by the module *object* captured late (module variable `m`) --------------------


@case(
    CASES,
    family="b",
    source=(
        "https://github.com/softmax1/Flash-Attention-Softmax-N/pull/34 (register_activation_hooks over named modules)"
    ),
    culprit=("fc1", "fc2", "fc3", "log_stats"),
    note="hook ignores its `module` argument and uses the loop's `m` and `name`: all stats go to the last Linear",
    bites=_keys_collapse("b9_loop_module_variable", 3),
)
def b9_loop_module_variable():
    model = named_mlp()
    stats = {}
    for name, m in model.named_modules():
        if isinstance(m, nn.Linear):

            def log_stats(module, inp, out):
                stats[(name, m.out_features)] = out.detach().std()

            m.register_forward_hook(log_stats)
    model._blind_store = stats
    return model, torch.randn(8, 10), {}


# --- clean versions ------------------------------------------------------------------------------------


@case(
    CASES,
    family="b",
    source="https://github.com/deepfx/netlens/pull/1; fixed with a default argument (name=name)",
    culprit=None,
    note="b1 with `lambda mod, i, o, name=name: ...`",
)
def b_clean_lambda_default_name():
    model = tiny_cnn()
    acts = {}
    for name, m in model.named_modules():
        if isinstance(m, nn.Conv2d):
            m.register_forward_hook(lambda mod, i, o, name=name: acts.__setitem__(name, o.detach()))
    return model, images(), {}


@case(
    CASES,
    family="b",
    source="pattern seen in a code-corpus feature-hook helper (_save(key) factory returning fn)",
    culprit=None,
    note="factory function get_activation(name) returning the hook: each closure has its own name",
)
def b_clean_factory():
    model = Stack()
    activation = {}

    def get_activation(name):
        def hook(model, input, output):
            activation[name] = output.detach()

        return hook

    for i, layer in enumerate(model.layers):
        layer.register_forward_hook(get_activation(f"layers.{i}"))
    return model, torch.randn(5, 16), {}


@case(
    CASES,
    family="b",
    source="https://github.com/p-e-w/heretic/pull/384; fixed with functools.partial(idx=i)",
    culprit=None,
    context="eval_no_grad",
    note="Llama layer cache with functools.partial binding the index",
)
def b_clean_llama_partial():
    model = hf_llama()
    cache = {}

    def save(module, args, output, *, idx):
        cache[f"layer{idx}"] = hidden_of(output).detach()

    for i, layer in enumerate(model.model.layers):
        layer.register_forward_hook(functools.partial(save, idx=i))
    return model, token_ids(), {}
