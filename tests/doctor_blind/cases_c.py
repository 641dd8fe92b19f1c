"""Family c: a hook's return value breaks the forward or the backward (type, shape, dtype, arity)."""

from __future__ import annotations

import torch
from torch import nn

from . import (
    Case,
    case,
    expect_raises,
    hf_llama,
    images,
    named_mlp,
    run_case,
    tiny_cnn,
    token_ids,
)

CASES: list[Case] = []


def _raises(name: str, *types: type[BaseException]):
    def bites() -> None:
        c = next(c for c in CASES if c.name == name)
        expect_raises(lambda: run_case(c), *types)

    return bites


# --- c1: forward hook returns (output, aux) on a middle Linear -------------------------------------------


@case(
    CASES,
    family="c",
    source="https://github.com/pytorch/pytorch/pull/12573 (forward hooks may replace the output by returning a value)",
    culprit=("fc2", "add_aux"),
    note="forward hook returns a tuple (output, output.pow(2).mean()) where the next Linear expects a tensor",
    bites=_raises("c1_returns_tuple_aux", TypeError),
)
def c1_returns_tuple_aux():
    model = named_mlp()

    def add_aux(module, inp, out):
        return out, out.pow(2).mean()

    model.fc2.register_forward_hook(add_aux)
    return model, torch.randn(8, 10), {}


# --- c2: fastai-style hook returning a dict, registered directly with PyTorch ----------------------------


@case(
    CASES,
    family="c",
    source="https://github.com/fastai/fastai2/issues/425 (hook(self, m, i, o) returning a dict)",
    culprit=("features.0", "stats_hook"),
    note="a fastai Hooks function (its return is stored by fastai) registered straight on a conv: dict replaces output",
    bites=_raises("c2_returns_dict_fastai_style", TypeError, AttributeError),
)
def c2_returns_dict_fastai_style():
    model = tiny_cnn()

    def stats_hook(m, i, o):
        return {"mean": o.mean(), "std": o.std(), "out": o}

    model.features[0].register_forward_hook(stats_hook)
    return model, images(), {}


# --- c3: forward hook returns the flattened feature map -------------------------------------------------


@case(
    CASES,
    family="c",
    source="https://github.com/pdoyle5000/simple_net (forward_hook.py: feature vectors flattened in the hook)",
    culprit=("features.0", "flatten_features"),
    note="hook returns output.view(B, -1) on a conv followed by another conv: shape error downstream",
    bites=_raises("c3_returns_flattened", RuntimeError),
)
def c3_returns_flattened():
    model = tiny_cnn()

    def flatten_features(module, input, output):
        return output.view(output.size(0), -1)

    model.features[0].register_forward_hook(flatten_features)
    return model, images(), {}


# --- c4: forward hook casts to half "to save memory" ----------------------------------------------------


@case(
    CASES,
    family="c",
    source="https://github.com/ModelCloud/GPTQModel/pull/1027 (fix forward hook); activations cast in a hook",
    culprit=("fc1", "to_half"),
    note="hook returns output.half(): next float32 Linear fails with a dtype mismatch",
    bites=_raises("c4_returns_half", RuntimeError),
)
def c4_returns_half():
    model = named_mlp()

    def to_half(module, inp, out):
        return out.half()

    model.fc1.register_forward_hook(to_half)
    return model, torch.randn(8, 10), {}


# --- c5: forward hook returns `input` (the args tuple) --------------------------------------------------


@case(
    CASES,
    family="c",
    source="https://github.com/facebookresearch/kill-the-bits/issues/35 (confusing input and output in fwd_hook)",
    culprit=("features.3", "passthrough"),
    note="hook returns `input` (a tuple of args) instead of output: the next layer gets a tuple",
    bites=_raises("c5_returns_input_tuple", TypeError, AttributeError),
)
def c5_returns_input_tuple():
    model = tiny_cnn()

    def passthrough(module, input, output):
        return input

    model.features[3].register_forward_hook(passthrough)
    return model, images(), {}


# --- c6: with_kwargs pre-hook returning only kwargs -----------------------------------------------------


class ScaledBlock(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x, scale=1.0):
        return self.proj(x) * scale


class ScaledNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = ScaledBlock()
        self.head = nn.Linear(16, 2)

    def forward(self, x):
        return self.head(self.block(x, scale=0.5))


@case(
    CASES,
    family="c",
    source="https://github.com/pytorch/pytorch/pull/104278 (with_kwargs hooks); pre-hook must return (args, kwargs)",
    culprit=("block", "override_scale"),
    note="forward pre-hook registered with_kwargs=True edits kwargs and returns only the dict",
    bites=_raises("c6_kwargs_prehook_returns_dict", RuntimeError),
)
def c6_kwargs_prehook_returns_dict():
    model = ScaledNet()

    def override_scale(module, args, kwargs):
        kwargs["scale"] = 2.0
        return kwargs

    model.block.register_forward_pre_hook(override_scale, with_kwargs=True)
    return model, torch.randn(4, 16), {}


# --- c7: full backward hook returns a tensor instead of a tuple ----------------------------------------


@case(
    CASES,
    family="c",
    source=(
        "https://github.com/TransformerLensOrg/TransformerLens/pull/1175 (full backward hook returning a bare tensor)"
    ),
    culprit=("fc2", "halve_grad"),
    note="register_full_backward_hook hook returns grad_input[0] * 0.5 (a tensor, not a tuple)",
    bites=_raises("c7_full_bwd_returns_tensor", RuntimeError),
)
def c7_full_bwd_returns_tensor():
    model = named_mlp()

    def halve_grad(module, grad_input, grad_output):
        return grad_input[0] * 0.5

    model.fc2.register_full_backward_hook(halve_grad)
    return model, torch.randn(8, 10), {}


# --- c8: full backward hook returns grad_output in place of grad_input (wrong shape) --------------------


@case(
    CASES,
    family="c",
    source=(
        "https://github.com/jordan-g/PyTorch-Feedback-Alignment-Layers/issues/1 (hook has changed the size of value)"
    ),
    culprit=("fc3", "fa_backward_hook"),
    note="feedback-alignment style hook returns (grad_output[0],) for a Linear 32->3: wrong size",
    bites=_raises("c8_full_bwd_wrong_shape", RuntimeError),
)
def c8_full_bwd_wrong_shape():
    model = named_mlp()
    model.fc3.weight_fa = torch.randn(3, 32)

    def fa_backward_hook(module, grad_input, grad_output):
        return (grad_output[0],)

    model.fc3.register_full_backward_hook(fa_backward_hook)
    return model, torch.randn(8, 10), {}


# --- c9: backward pre-hook averaging grad_output over the batch ----------------------------------------


@case(
    CASES,
    family="c",
    source="https://github.com/pytorch/pytorch/issues/117265 (full_backward_pre_hook returning new grad_output)",
    culprit=("fc3", "smooth_grad"),
    note="backward pre-hook returns (grad_output[0].mean(0, keepdim=True),): batch dimension lost",
    bites=_raises("c9_bwd_prehook_wrong_shape", RuntimeError),
)
def c9_bwd_prehook_wrong_shape():
    model = named_mlp()

    def smooth_grad(module, grad_output):
        return (grad_output[0].mean(0, keepdim=True),)

    model.fc3.register_full_backward_pre_hook(smooth_grad)
    return model, torch.randn(8, 10), {}


# --- c10: parameter gradient hook returning a reduced gradient -----------------------------------------


@case(
    CASES,
    family="c",
    source="https://github.com/pytorch/pytorch/issues/5022 (hook has returned an incorrect number of values)",
    culprit=("fc1.weight", "average_rows"),
    note="weight.register_hook(average_rows) returns g.mean(0): gradient shape changes",
    bites=_raises("c10_param_hook_wrong_shape", RuntimeError),
)
def c10_param_hook_wrong_shape():
    model = named_mlp()

    def average_rows(g):
        return g.mean(0)

    model.fc1.weight.register_hook(average_rows)
    return model, torch.randn(8, 10), {}


# --- c11: decoder-layer hook written for tuple outputs (transformers 4.x) ------------------------------


@case(
    CASES,
    family="c",
    source="https://github.com/zjunlp/EasyEdit/pull/678 (Fix forward hook output compat)",
    culprit=("model.layers.0", "scale_residual"),
    note="return (output[0] * 1.1,) + output[1:] assumes a tuple; the decoder layer returns a tensor",
    bites=_raises("c11_llama_layer_tuple_assumed", TypeError),
)
def c11_llama_layer_tuple_assumed():
    model = hf_llama()

    def scale_residual(module, args, output):
        return (output[0] * 1.1,) + output[1:]

    model.model.layers[0].register_forward_hook(scale_residual)
    return model, token_ids(), {}


# --- c12: SaveFeatures returning its (detached) features: graph cut silently ----------------------------


class SaveFeatures:
    features = None

    def __init__(self, m):
        self.hook = m.register_forward_hook(self.hook_fn)

    def hook_fn(self, module, input, output):
        self.features = output.detach()
        return self.features

    def remove(self):
        self.hook.remove()


@case(
    CASES,
    family="c",
    source=(
        "https://github.com/skshbjj/Lung-Diseases-detection-using-densenet-121-with-website-using-flask"
        " (layers.py SaveFeature)"
    ),
    culprit=("features.3", "SaveFeatures", "hook_fn"),
    note="hook_fn ends with `return self.features` (detached): the output is replaced, features.0 gets no grad",
    bites=lambda: _c12_bites(),
)
def c12_savefeatures_returns_detached():
    model = tiny_cnn()
    model._blind_sf = SaveFeatures(model.features[3])
    return model, images(), {}


def _c12_bites() -> None:
    c = next(c for c in CASES if c.name == "c12_savefeatures_returns_detached")
    model, _, _, _ = run_case(c)
    assert model.features[0].weight.grad is None, "features.0 still got a gradient"
    assert model.classifier[0].weight.grad is not None


# --- c13: LSTM hook returns only the sequence tensor -----------------------------------------------------


class LSTMTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(40, 12)
        self.lstm = nn.LSTM(12, 16, batch_first=True)
        self.fc = nn.Linear(16, 4)

    def forward(self, tokens):
        out, (h, c) = self.lstm(self.embedding(tokens))
        return self.fc(out)


@case(
    CASES,
    family="c",
    source="https://github.com/fastai/fastai/issues/2385 (LSTM outputs in hooks are tuples)",
    culprit=("lstm", "keep_sequence"),
    note="hook returns output[0] (the sequence) where forward unpacks `out, (h, c)`",
    bites=_raises("c13_lstm_returns_sequence_only", ValueError, TypeError),
)
def c13_lstm_returns_sequence_only():
    model = LSTMTagger()

    def keep_sequence(module, inp, output):
        return output[0]

    model.lstm.register_forward_hook(keep_sequence)
    return model, torch.randint(0, 40, (4, 6)), {}


# --- c14: full backward hook on the first layer returning a gradient --------------------------------------


@case(
    CASES,
    family="c",
    source="https://github.com/Voice-Privacy-Challenge/Voice-Privacy-Challenge-2022/issues/29",
    culprit=("fc1", "reverse_grad_hook"),
    note="gradient-reversal full backward hook on a module whose input needs no grad returns a tuple",
    bites=_raises("c14_full_bwd_first_layer_returns", RuntimeError),
)
def c14_full_bwd_first_layer_returns():
    model = named_mlp()

    def reverse_grad_hook(module, grad_input, grad_output):
        return tuple(-g if g is not None else None for g in grad_output)

    model.fc1.register_full_backward_hook(reverse_grad_hook)
    return model, torch.randn(8, 10), {}


# --- clean: correct returns ------------------------------------------------------------------------------


@case(
    CASES,
    family="c",
    source="https://github.com/pytorch/pytorch/pull/22285 (forward_pre_hook returning (relu(input[0]),))",
    culprit=None,
    note="forward pre-hook returning a modified args tuple, forward hook returning -output (both correct)",
)
def c_clean_prehook_and_hook_return_right_types():
    model = named_mlp()

    def forward_pre_hook(m, input):
        return (torch.nn.functional.relu(input[0]),)

    def forward_hook(m, input, output):
        return -output

    model.fc2.register_forward_pre_hook(forward_pre_hook)
    model.fc2.register_forward_hook(forward_hook)
    return model, torch.randn(8, 10), {}


@case(
    CASES,
    family="c",
    source="https://github.com/pytorch/pytorch/pull/104278 (with_kwargs hooks)",
    culprit=None,
    note="with_kwargs pre-hook returning (args, kwargs) correctly",
)
def c_clean_kwargs_prehook_returns_pair():
    model = ScaledNet()

    def override_scale(module, args, kwargs):
        kwargs["scale"] = 2.0
        return args, kwargs

    model.block.register_forward_pre_hook(override_scale, with_kwargs=True)
    return model, torch.randn(4, 16), {}


@case(
    CASES,
    family="c",
    source="https://github.com/jordan-g/PyTorch-Feedback-Alignment-Layers/issues/1 (fixed hook)",
    culprit=None,
    note="full backward hook returning a grad_input tuple of the right arity and shapes",
)
def c_clean_full_bwd_returns_right_tuple():
    model = named_mlp()

    def fa_backward_hook(module, grad_input, grad_output):
        return tuple(None if g is None else g * 0.5 for g in grad_input)

    model.fc2.register_full_backward_hook(fa_backward_hook)
    return model, torch.randn(8, 10), {}
