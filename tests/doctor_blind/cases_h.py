"""Family h: returning the input, per-call device syncs, global hooks left behind, hooks that flip state,
hard-coded batch sizes, tensor hooks on views of parameters."""

from __future__ import annotations

from collections import OrderedDict

import torch
import torch.nn.modules.module as module_hooks
from torch import nn

from . import (
    Case,
    case,
    expect_raises,
    hf_llama,
    hook_changes_something,
    images,
    named_mlp,
    run_case,
    tiny_cnn,
    token_ids,
)

CASES: list[Case] = []


def _by_name(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


# --- h1: forward hook returns the module's input: the layer is silently skipped -------------------------


class ResidualMLP(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.inp = nn.Linear(10, d)
        self.block1 = nn.Sequential(nn.Linear(d, d), nn.GELU())
        self.block2 = nn.Sequential(nn.Linear(d, d), nn.GELU())
        self.out = nn.Linear(d, 3)

    def forward(self, x):
        x = self.inp(x)
        x = self.block1(x)
        x = self.block2(x)
        return self.out(x)


def _h1_bites() -> None:
    c = _by_name("h1_returns_input_skips_layer")
    hook_changes_something(c)
    model, _, _, _ = run_case(c)
    assert model.block2[0].weight.grad is None, "block2 still trained although its output was replaced"


@case(
    CASES,
    family="h",
    source="https://github.com/facebookresearch/kill-the-bits/issues/35 (input vs output in forward hooks)",
    culprit=("block2", "log_and_pass"),
    note="hook ends with `return input[0]`: block2's output is thrown away and the block gets no gradient",
    bites=_h1_bites,
)
def h1_returns_input_skips_layer():
    model = ResidualMLP()
    norms = []

    def log_and_pass(module, input, output):
        norms.append(output.detach().norm())
        return input[0]

    model.block2.register_forward_hook(log_and_pass)
    return model, torch.randn(8, 10), {}


# --- h2: the Llama final norm bypassed by a hook returning its input ----------------------------------


@case(
    CASES,
    family="h",
    source="https://github.com/EleutherAI/sparsify/issues/11 (hidden states vs residual stream around the norm)",
    culprit=("model.norm", "grab_pre_norm"),
    context="eval_no_grad",
    note="hook meant to grab the pre-norm residual returns args[0]: the final RMSNorm is skipped",
    bites=lambda: hook_changes_something(_by_name("h2_llama_norm_returns_input")),
)
def h2_llama_norm_returns_input():
    model = hf_llama()
    grabbed = {}

    def grab_pre_norm(module, args, output):
        grabbed["resid"] = args[0].detach()
        return args[0]

    model.model.norm.register_forward_hook(grab_pre_norm)
    return model, token_ids(), {}


# --- h3..h7: per-call device syncs in hooks ------------------------------------------------------------


def _sync_bites(name: str, attr: str):
    """bites: the hook really calls a host-sync method on a tensor each call (counted by a patched Tensor method)."""

    def bites() -> None:
        calls = []
        original = getattr(torch.Tensor, attr)

        def spy(self, *a, **k):
            calls.append(attr)
            return original(self, *a, **k)

        setattr(torch.Tensor, attr, spy)
        try:
            run_case(_by_name(name))
        finally:
            setattr(torch.Tensor, attr, original)
        assert calls, f"no Tensor.{attr} call during the step"

    return bites


@case(
    CASES,
    family="h",
    source="https://github.com/rosinality/style-based-gan-pytorch/pull/50 (each .item() synchronises with the GPU)",
    culprit=("features.1", "features.4", "log_relu"),
    note="dead-ReLU monitor: (output == 0).float().mean().item() in a forward hook on every ReLU, every step",
    bites=_sync_bites("h3_item_in_forward_hook", "item"),
)
def h3_item_in_forward_hook():
    model = tiny_cnn()
    dead = {}

    def log_relu(module, inp, output):
        dead.setdefault(id(module), []).append((output == 0).float().mean().item())

    for m in model.features:
        if isinstance(m, nn.ReLU):
            m.register_forward_hook(log_relu)
    return model, images(), {}


@case(
    CASES,
    family="h",
    source="https://github.com/jacobgil/pytorch-grad-cam/issues/71 (move activations with .cpu() in the hook)",
    culprit=("classifier.0", "histogram_hook"),
    note="TensorBoard-style histogram of every batch: torch.histc(output.detach().cpu()) in the hook",
    bites=_sync_bites("h4_cpu_in_forward_hook", "cpu"),
)
def h4_cpu_in_forward_hook():
    model = tiny_cnn()
    hists = []

    def histogram_hook(module, inp, output):
        hists.append(torch.histc(output.detach().cpu(), bins=20))

    model.classifier[0].register_forward_hook(histogram_hook)
    return model, images(), {}


@case(
    CASES,
    family="h",
    source="https://github.com/openvdb/fvdb-reality-capture/pull/144 (.item()/host copies force a sync)",
    culprit=("fc2", "grad_norm_logger"),
    note="full backward hook logs per-sample grad norms with .tolist() on every backward",
    bites=_sync_bites("h5_tolist_in_backward_hook", "tolist"),
)
def h5_tolist_in_backward_hook():
    model = named_mlp()
    log = []

    def grad_norm_logger(module, grad_input, grad_output):
        log.append(grad_output[0].norm(dim=1).tolist())

    model.fc2.register_full_backward_hook(grad_norm_logger)
    return model, torch.randn(8, 10), {}


def _h6_bites() -> None:
    calls = []
    original = torch.Tensor.__float__

    def spy(self):
        calls.append(1)
        return original(self)

    torch.Tensor.__float__ = spy
    try:
        run_case(_by_name("h6_float_in_param_grad_hook"))
    finally:
        torch.Tensor.__float__ = original
    assert calls, "no float(tensor) during the step"


@case(
    CASES,
    family="h",
    source="https://github.com/pytorch/pytorch/issues/63618 (item() host syncs every step)",
    culprit=("fc1.weight", "track_grad"),
    note="parameter hook appends float(g.norm()) on every backward",
    bites=_h6_bites,
)
def h6_float_in_param_grad_hook():
    model = named_mlp()
    grad_history = []

    def track_grad(g):
        grad_history.append(float(g.norm()))

    model.fc1.weight.register_hook(track_grad)
    return model, torch.randn(8, 10), {}


@case(
    CASES,
    family="h",
    source="https://github.com/pdoyle5000/simple_net (forward_hook.py: outputs.detach().cpu().numpy() every call)",
    culprit=("features.5", "SaveFeatureVectors"),
    note="feature vectors converted with .cpu().numpy() inside the hook during training",
    bites=_sync_bites("h7_numpy_in_forward_hook", "numpy"),
)
def h7_numpy_in_forward_hook():
    import numpy as np

    class SaveFeatureVectors:
        def __init__(self, m):
            self.hook = m.register_forward_hook(self.hook_fn)
            self.features = None

        def hook_fn(self, module, inputs, outputs):
            out = outputs.detach().cpu().numpy()
            self.features = out if self.features is None else np.vstack((self.features, out))

    model = tiny_cnn()
    model._blind_sfv = [SaveFeatureVectors(model.features[5])]
    return model, images(), {}


# --- h8..h10: global hooks left registered ----------------------------------------------------------

_GLOBAL_HANDLES: list = []


def _remove_globals() -> None:
    while _GLOBAL_HANDLES:
        _GLOBAL_HANDLES.pop().remove()


def _global_bites(name: str, dict_name: str):
    def bites() -> None:
        try:
            before = len(getattr(module_hooks, dict_name))
            _by_name(name).build()
            assert len(getattr(module_hooks, dict_name)) > before, "no global hook registered"
            # the global hook also fires for an unrelated module created afterwards
            other = nn.Linear(3, 3)
            run_case(Case("other", "h", "", lambda: (other, torch.randn(2, 3), {}), None))
        finally:
            _remove_globals()

    return bites


@case(
    CASES,
    family="h",
    source="https://github.com/pytorch/pytorch/pull/38972 (global nn.Module hooks for plotting, tracing, debugging)",
    culprit=("<global>", "log_shapes"),
    note="register_module_forward_hook(log_shapes) at notebook top, never removed",
    bites=_global_bites("h8_global_forward_hook_left", "_global_forward_hooks"),
    teardown=_remove_globals,
)
def h8_global_forward_hook_left():
    shapes = []

    def log_shapes(module, inp, out):
        if isinstance(out, torch.Tensor):
            shapes.append((type(module).__name__, tuple(out.shape)))

    _GLOBAL_HANDLES.append(module_hooks.register_module_forward_hook(log_shapes))
    return tiny_cnn(), images(), {}


@case(
    CASES,
    family="h",
    source="https://github.com/pytorch/pytorch/issues/54405 (register_module_full_backward_hook works globally)",
    culprit=("<global>", "grad_logger"),
    note="global full backward hook for gradient logging left on every module",
    bites=_global_bites("h9_global_full_backward_hook_left", "_global_backward_hooks"),
    teardown=_remove_globals,
)
def h9_global_full_backward_hook_left():
    grads = []

    def grad_logger(module, grad_input, grad_output):
        grads.append(grad_output[0].detach().abs().mean() if grad_output[0] is not None else None)

    _GLOBAL_HANDLES.append(module_hooks.register_module_full_backward_hook(grad_logger))
    return named_mlp(), torch.randn(8, 10), {}


@case(
    CASES,
    family="h",
    source="https://github.com/PaddlePaddle/docs/pull/7104 (register_module_forward_pre_hook: global for all modules)",
    culprit=("<global>", "cast_inputs"),
    note="global forward pre-hook casting float64 inputs to float32, left registered for the session",
    bites=_global_bites("h10_global_pre_hook_left", "_global_forward_pre_hooks"),
    teardown=_remove_globals,
)
def h10_global_pre_hook_left():
    def cast_inputs(module, args):
        if args and isinstance(args[0], torch.Tensor) and args[0].dtype == torch.float64:
            return (args[0].float(),) + tuple(args[1:])

    _GLOBAL_HANDLES.append(module_hooks.register_module_forward_pre_hook(cast_inputs))
    return named_mlp(), torch.randn(8, 10, dtype=torch.float64), {}


# --- h11: hook freezes parameters after the first call ---------------------------------------------------


@case(
    CASES,
    family="h",
    source="https://github.com/kohjingyu/fromage/issues/18 (which parameters really have requires_grad)",
    culprit=("features.0", "freeze_after_first_batch"),
    note="forward hook sets requires_grad_(False) on the module's parameters ('warm-up then freeze')",
    bites=lambda: _h11_bites(),
)
def h11_hook_changes_requires_grad():
    model = tiny_cnn()

    def freeze_after_first_batch(module, inp, out):
        for p in module.parameters():
            p.requires_grad_(False)

    model.features[0].register_forward_hook(freeze_after_first_batch)
    return model, images(), {}


def _h11_bites() -> None:
    model, _, _, _ = run_case(_by_name("h11_hook_changes_requires_grad"))
    assert not model.features[0].weight.requires_grad


# --- h12: pre-hook puts BatchNorm in eval mode ("freeze BN") -------------------------------------------


class BNNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(self.pool(torch.relu(self.bn(self.conv(x)))).flatten(1))


def set_bn_eval(module, inp):
    module.eval()


@case(
    CASES,
    family="h",
    source="https://discuss.pytorch.org/t/how-the-pytorch-freeze-network-in-some-layers-only-the-rest-of-the-training/7088/2",
    culprit=("bn", "set_bn_eval"),
    note="forward pre-hook calls module.eval() on the BatchNorm: model.train() is undone on every call",
    bites=lambda: _h12_bites(),
)
def h12_prehook_flips_bn_to_eval():
    model = BNNet()
    model.bn.register_forward_pre_hook(set_bn_eval)
    return model, images(), {}


def _h12_bites() -> None:
    model, _, _, _ = run_case(_by_name("h12_prehook_flips_bn_to_eval"))
    assert model.training and not model.bn.training


# --- h13: hard-coded batch size in a hook (works for the full batch only) ------------------------------

BATCH = 32


@case(
    CASES,
    family="h",
    source=(
        "https://github.com/microsoft/TransformerCompression/issues/48 (hook reshape(-1,"
        " seqlen, ...) fails on other sizes)"
    ),
    culprit=("classifier.2", "collect_flat"),
    note="hook does logits.view(BATCH, -1) with BATCH = 32; inputs are a full batch of 32 (a correct tool should "
    "also try another batch size, e.g. the smaller last batch)",
    bites=lambda: _h13_bites(),
)
def h13_hardcoded_batch_view():
    model = tiny_cnn()
    flat = []

    def collect_flat(module, inp, out):
        flat.append(out.detach().view(BATCH, -1))

    model.classifier[2].register_forward_hook(collect_flat)
    return model, images(BATCH), {}


def _h13_bites() -> None:
    model, x, _, _ = run_case(_by_name("h13_hardcoded_batch_view"))
    expect_raises(lambda: model(x[:7]), RuntimeError)


BATCH_SIZE = 4


@case(
    CASES,
    family="h",
    source="https://github.com/thecharm/Mega/issues/18 (view(-1, 10, 4096) breaks on the last batch)",
    culprit=("model.layers.1", "pool_tokens"),
    context="eval_no_grad",
    note="Llama layer hook views with BATCH_SIZE = 4 from the config (the inputs have 4 rows)",
    bites=lambda: _h14_bites(),
)
def h14_llama_hardcoded_batch():
    model = hf_llama()
    pooled = []

    def pool_tokens(module, args, output):
        h = output[0] if isinstance(output, tuple) else output
        pooled.append(h.detach().view(BATCH_SIZE, h.size(1), h.size(2)).mean(1))

    model.model.layers[1].register_forward_hook(pool_tokens)
    return model, token_ids(batch=BATCH_SIZE), {}


def _h14_bites() -> None:
    model, ids, _, _ = run_case(_by_name("h14_llama_hardcoded_batch"))
    with torch.no_grad():
        expect_raises(lambda: model(ids[:3]), RuntimeError)


# --- h15/h16: tensor hooks on a view of a parameter never fire ------------------------------------------


def _never_fires(name: str):
    def bites() -> None:
        model, _, _, _ = run_case(_by_name(name))
        assert model._blind_calls == [], "the hook on the view fired"

    return bites


@case(
    CASES,
    family="h",
    source="https://github.com/pytorch/pytorch/issues/5790 (hooks on parts of weights)",
    culprit=("fc.weight", "fc", "watch_row0"),
    note="model.fc.weight[0].register_hook(...): a hook on a fresh view that is not used by the forward",
    bites=_never_fires("h15_hook_on_param_row_view"),
)
def h15_hook_on_param_row_view():
    model = nn.Sequential(OrderedDict(body=named_mlp((10, 16)), act=nn.ReLU(), fc=nn.Linear(16, 3)))
    calls = []

    def watch_row0(g):
        calls.append(g.detach().norm())

    model.fc.weight[0].register_hook(watch_row0)
    model._blind_calls = calls
    return model, torch.randn(8, 10), {}


class PadLM(nn.Module):
    def __init__(self, vocab=30, d=12, pad_idx=0):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.rnn = nn.GRU(d, d, batch_first=True)
        self.out = nn.Linear(d, vocab)
        self.pad_idx = pad_idx

    def forward(self, tokens):
        h, _ = self.rnn(self.embed(tokens))
        return self.out(h)


def _h16_bites() -> None:
    c = _by_name("h16_zero_pad_row_via_view")
    model, _, _, _ = run_case(c)
    assert model._blind_calls == [], "the view hook fired"
    assert model.embed.weight.grad[0].abs().sum() > 0, "the pad row got no gradient anyway"


@case(
    CASES,
    family="h",
    source="https://github.com/huggingface/diffusers/issues/1009 (frozen embedding rows still change)",
    culprit=("embed.weight", "embed", "zero_pad_grad"),
    note="embed.weight[pad_idx].register_hook(zero_pad_grad): never fires, the pad row keeps training",
    bites=_h16_bites,
)
def h16_zero_pad_row_via_view():
    model = PadLM()
    calls = []

    def zero_pad_grad(g):
        calls.append(1)
        return torch.zeros_like(g)

    model.embed.weight[model.pad_idx].register_hook(zero_pad_grad)
    model._blind_calls = calls
    tokens = torch.randint(0, 30, (4, 7))
    tokens[:, -2:] = 0
    return model, tokens, {}


# --- clean ------------------------------------------------------------------------------------------


@case(
    CASES,
    family="h",
    source="https://github.com/pytorch/pytorch/pull/38972 (global hooks for debugging), used in a try/finally",
    culprit=None,
    note="a global forward hook registered for a debugging cell and removed before the run",
)
def h_clean_global_hook_removed():
    shapes = []

    def log_shapes(module, inp, out):
        shapes.append(type(module).__name__)

    handle = module_hooks.register_module_forward_hook(log_shapes)
    try:
        model = tiny_cnn()
        with torch.no_grad():
            model(images(2))
    finally:
        handle.remove()
    return model, images(), {}


@case(
    CASES,
    family="h",
    source="https://github.com/jacobgil/pytorch-grad-cam/issues/71; statistics kept on the device, read later",
    culprit=None,
    note="dead-ReLU monitor that keeps device tensors (no .item()) and is read once after the epoch",
)
def h_clean_stats_stay_on_device():
    model = tiny_cnn()
    dead = []

    def log_relu(module, inp, output):
        dead.append((output == 0).float().mean().detach())

    model.features[1].register_forward_hook(log_relu)
    return model, images(), {}


@case(
    CASES,
    family="h",
    source="https://github.com/microsoft/TransformerCompression/issues/48 (fixed: sizes taken from the tensor)",
    culprit=None,
    context="eval_no_grad",
    note="Llama layer hook reshaping with sizes read from the tensor itself",
)
def h_clean_llama_batch_from_tensor():
    model = hf_llama()
    pooled = []

    def pool_tokens(module, args, output):
        h = output[0] if isinstance(output, tuple) else output
        pooled.append(h.detach().reshape(h.shape[0], -1).mean(1))

    model.model.layers[1].register_forward_hook(pool_tokens)
    return model, token_ids(batch=4), {}
