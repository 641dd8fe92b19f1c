"""Family a: a hook builds a modified value but does not return it (and correct hooks with the same names)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import (
    Case,
    case,
    hf_llama,
    hook_changes_something,
    hook_is_a_no_op,
    images,
    outputs_and_grads,
    tiny_cnn,
    token_ids,
)

CASES: list[Case] = []


def _by_name(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


def _ablation_bites(planted: str, intended) -> callable:
    """The planted hook is a no-op, while the version that returns its value changes the result."""

    def bites() -> None:
        c = _by_name(planted)
        hook_is_a_no_op(c)
        hook_changes_something(Case("intended", "a", "", intended, None, context=c.context))

    return bites


# --- a1: pytorch/pytorch#1926: channel selection assigned to `outputs`, never returned --------------------


def _a1(returns: bool):
    def build():
        model = tiny_cnn()
        select_maps = torch.zeros(16, 1, 1)
        select_maps[:8] = 1

        def fun(module, inputs, outputs):
            outputs = torch.mul(outputs, select_maps)
            if returns:
                return outputs

        model.features[3].register_forward_hook(fun)
        return model, images(), {}

    return build


case(
    CASES,
    family="a",
    source="https://github.com/pytorch/pytorch/issues/1926",
    culprit=("features.3", "fun"),
    note="forward hook multiplies conv output by a channel mask into `outputs` and drops it",
    bites=_ablation_bites("a1_select_maps_not_returned", _a1(True)),
    name="a1_select_maps_not_returned",
)(_a1(False))


# --- a2: pruning mask gradient hook: `new_g = g * mask` dropped ------------------------------------------


class PrunedNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def _a2(returns: bool):
    def build():
        model = PrunedNet()
        mask = (torch.rand_like(model.fc1.weight) > 0.5).float()

        def mask_grad(g):
            new_g = g * mask
            if returns:
                return new_g

        model.fc1.weight.register_hook(mask_grad)
        return model, torch.randn(8, 20), {}

    return build


case(
    CASES,
    family="a",
    source="https://discuss.pytorch.org/t/if-two-different-way-to-modify-grad-manually-is-equivalent/81640",
    culprit=("fc1.weight", "mask_grad"),
    note="gradient mask for pruning computed into new_g and not returned: pruned weights keep training",
    bites=_ablation_bites("a2_prune_mask_grad_dropped", _a2(True)),
    name="a2_prune_mask_grad_dropped",
)(_a2(False))


# --- a3: activation-gradient clipping rebinding `g` ------------------------------------------------------


class EncoderHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(12, 24), nn.Tanh())
        self.head = nn.Linear(24, 3)

    def forward(self, x):
        return self.head(self.encoder(x))


def _a3(returns: bool):
    def build():
        model = EncoderHead()

        def clip_grad(g):
            g = g.clamp(-1e-3, 1e-3)
            if returns:
                return g

        def fwd(module, inp, out):
            out.register_hook(clip_grad)

        model.encoder.register_forward_hook(fwd)
        return model, torch.randn(6, 12) * 3, {}

    return build


case(
    CASES,
    family="a",
    source="https://github.com/pytorch/pytorch/issues/1110 (hooks recommended to rewrite grads; clamp result dropped)",
    culprit=("encoder", "clip_grad"),
    note="tensor hook rebinding g = g.clamp(...) without return",
    bites=_ablation_bites("a3_clip_grad_rebinds", _a3(True)),
    name="a3_clip_grad_rebinds",
)(_a3(False))


# --- a4: forward pre-hook normalising the input, result never returned -----------------------------------


def _a4(returns: bool):
    def build():
        model = tiny_cnn()

        def normalize_input(module, inp):
            x = inp[0]
            x = (x - x.mean(dim=1, keepdim=True)) / (x.std(dim=1, keepdim=True) + 1e-5)
            if returns:
                return (x,)

        model.classifier.register_forward_pre_hook(normalize_input)
        return model, images(), {}

    return build


case(
    CASES,
    family="a",
    source="https://github.com/pytorch/pytorch/issues/9417 (pre-hooks that preprocess their input)",
    culprit=("classifier", "normalize_input"),
    note="forward pre-hook normalises inp[0] into x and drops it",
    bites=_ablation_bites("a4_prehook_normalize_dropped", _a4(True)),
    name="a4_prehook_normalize_dropped",
)(_a4(False))


# --- a5: DANN gradient reversal with a full backward hook that forgets to return ------------------------


class DANN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(16, 32), nn.ReLU())
        self.label_classifier = nn.Linear(32, 4)
        self.domain_classifier = nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x):
        feats = self.features(x)
        return torch.cat([self.label_classifier(feats), self.domain_classifier(feats)], dim=1)


def _a5(returns: bool):
    def build():
        model = DANN()

        def reverse_grad(module, grad_input, grad_output):
            grad_input = tuple(-0.1 * g if g is not None else None for g in grad_input)
            if returns:
                return grad_input

        model.domain_classifier.register_full_backward_hook(reverse_grad)
        return model, torch.randn(8, 16), {}

    return build


case(
    CASES,
    family="a",
    source="https://github.com/Voice-Privacy-Challenge/Voice-Privacy-Challenge-2022/issues/29",
    culprit=("domain_classifier", "reverse_grad"),
    note="gradient reversal via full backward hook: reversed grad_input rebound, not returned",
    bites=_ablation_bites("a5_grad_reversal_not_returned", _a5(True)),
    name="a5_grad_reversal_not_returned",
)(_a5(False))


# --- a6: activation steering on a Llama decoder layer, hidden rebound ----------------------------------


def _a6(returns: bool):
    def build():
        model = hf_llama()
        steer = torch.randn(32) * 4

        def add_steering(module, args, output):
            hidden = output[0] if isinstance(output, tuple) else output
            hidden = hidden + steer
            if returns:
                return (hidden,) + tuple(output[1:]) if isinstance(output, tuple) else hidden

        model.model.layers[0].register_forward_hook(add_steering)
        return model, token_ids(), {}

    return build


case(
    CASES,
    family="a",
    source="https://github.com/nishantsubramani/steering_vectors/issues/4 (steering with forward hooks)",
    culprit=("model.layers.0", "add_steering"),
    context="eval_no_grad",
    note="steering vector added to the residual stream into a local and dropped",
    bites=_ablation_bites("a6_llama_steering_dropped", _a6(True)),
    name="a6_llama_steering_dropped",
)(_a6(False))


# --- a7: LSTM output damping unpacked and dropped ------------------------------------------------------


class Tagger(nn.Module):
    def __init__(self, vocab=50, emb=16, hidden=24, tags=5):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, batch_first=True)
        self.hidden2tag = nn.Linear(hidden, tags)

    def forward(self, tokens):
        out, _ = self.lstm(self.embedding(tokens))
        return self.hidden2tag(out)


def _a7(returns: bool):
    def build():
        model = Tagger()

        def damp(module, inp, out):
            seq, (h, c) = out
            seq = seq * 0.5
            if returns:
                return seq, (h, c)

        model.lstm.register_forward_hook(damp)
        return model, torch.randint(0, 50, (4, 7)), {}

    return build


case(
    CASES,
    family="a",
    source="https://github.com/fastai/fastai/issues/2385 (hooks on LSTM outputs)",
    culprit=("lstm", "damp"),
    note="LSTM output tuple unpacked, scaled copy rebound, nothing returned",
    bites=_ablation_bites("a7_lstm_damp_dropped", _a7(True)),
    name="a7_lstm_damp_dropped",
)(_a7(False))


# --- a8: backward pre-hook scaling grad_output, rebinding ----------------------------------------------


def _a8(returns: bool):
    def build():
        model = EncoderHead()

        def scale_grad_output(module, grad_output):
            grad_output = (grad_output[0] * 0.1,)
            if returns:
                return grad_output

        model.head.register_full_backward_pre_hook(scale_grad_output)
        return model, torch.randn(6, 12), {}

    return build


case(
    CASES,
    family="a",
    source="https://github.com/pytorch/pytorch/issues/117265 (full_backward_pre_hook returning scaled grads)",
    culprit=("head", "scale_grad_output"),
    note="backward pre-hook rebinding grad_output instead of returning it",
    bites=_ablation_bites("a8_bwd_prehook_rebinds", _a8(True)),
    name="a8_bwd_prehook_rebinds",
)(_a8(False))


# --- a9: freeze the pretrained rows of an enlarged embedding; cloned grad not returned ------------------

N_OLD = 40


class NewTokenLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(48, 16)
        self.out = nn.Linear(16, 48)

    def forward(self, tokens):
        return self.out(self.emb(tokens))


def _a9(returns: bool):
    def build():
        model = NewTokenLM()

        def freeze_old_rows(grad):
            grad = grad.clone()
            grad[:N_OLD] = 0
            if returns:
                return grad

        model.emb.weight.register_hook(freeze_old_rows)
        return model, torch.randint(0, 48, (4, 10)), {}

    return build


def _a9_bites() -> None:
    _ablation_bites("a9_freeze_rows_clone_dropped", _a9(True))()
    out, g = outputs_and_grads(_by_name("a9_freeze_rows_clone_dropped"))
    assert g["emb.weight"][:N_OLD].abs().sum() > 0, "old rows got no gradient"


case(
    CASES,
    family="a",
    source="https://github.com/kohjingyu/fromage/issues/6 (zeroing grads of pretrained embedding rows)",
    culprit=("emb.weight", "freeze_old_rows"),
    note="gradient hook clones, zeroes the frozen rows, returns nothing: old rows keep training",
    bites=_a9_bites,
    name="a9_freeze_rows_clone_dropped",
)(_a9(False))


# --- a10: class-based ablation hook, clone edited, not returned ----------------------------------------


class Ablate:
    def __init__(self, idx, returns=False):
        self.idx = idx
        self.returns = returns

    def __call__(self, module, inp, out):
        out = out.clone()
        out[:, self.idx] = 0
        if self.returns:
            return out


def _a10(returns: bool):
    def build():
        model = tiny_cnn()
        model.features[1].register_forward_hook(Ablate([0, 1, 2], returns))
        return model, images(), {}

    return build


case(
    CASES,
    family="a",
    source="https://github.com/sagnikc395/refusal-circuit-dpo/issues/20 (patching activations with forward hooks)",
    culprit=("features.1", "Ablate"),
    note="callable-class hook zeroes channels of a clone and returns nothing",
    bites=_ablation_bites("a10_ablate_class_no_return", _a10(True)),
    name="a10_ablate_class_no_return",
)(_a10(False))


# --- clean: the same names, written correctly ------------------------------------------------------------


@case(
    CASES,
    family="a",
    source="https://github.com/mapbox/robosat (robosat/hooks.py FeatureHook: record only)",
    culprit=None,
    note="recording forward hook named like a1, returns None on purpose, stores detached output",
)
def a_clean_record_only():
    model = tiny_cnn()
    activation = {}

    def fun(module, inputs, outputs):
        activation["features.3"] = outputs.detach()

    model.features[3].register_forward_hook(fun)
    return model, images(), {}


@case(
    CASES,
    family="a",
    source="https://github.com/huaiyuechusan/pytorch-tutorial-2nd (grad_hook: grad *= 2)",
    culprit=None,
    note="parameter gradient doubled in place with g.mul_(2); returns None and really changes the grad",
)
def a_clean_param_grad_mul_inplace():
    model = PrunedNet()

    def mask_grad(g):
        g.mul_(2)

    model.fc1.weight.register_hook(mask_grad)
    return model, torch.randn(8, 20), {}


@case(
    CASES,
    family="a",
    source="https://github.com/huaiyuechusan/pytorch-tutorial-2nd (grad_hook: grad *= 2)",
    culprit=None,
    note="activation gradient scaled in place with `grad *= 2` inside a tensor hook registered by a forward hook",
)
def a_clean_activation_grad_imul():
    model = nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 3))

    def scale(grad):
        grad *= 2

    def fwd(module, inp, out):
        out.register_hook(scale)

    model[0].register_forward_hook(fwd)
    return model, torch.randn(6, 12), {}


@case(
    CASES,
    family="a",
    source="https://github.com/kohjingyu/fromage/issues/6 (param.grad[mask, :] = 0)",
    culprit=None,
    note="gradient hook zeroing frozen embedding rows in place (grad[:N_OLD] = 0), returns None",
)
def a_clean_freeze_rows_inplace():
    model = NewTokenLM()

    def freeze_old_rows(grad):
        grad[:N_OLD] = 0

    model.emb.weight.register_hook(freeze_old_rows)
    return model, torch.randint(0, 48, (4, 10)), {}


@case(
    CASES,
    family="a",
    source="https://github.com/pytorch/pytorch/pull/74414 (forward hook replaces output by returning it)",
    culprit=None,
    note="the a10 ablation written correctly: returns the edited clone",
)
def a_clean_ablate_returns():
    model = tiny_cnn()
    model.features[1].register_forward_hook(Ablate([0, 1, 2], returns=True))
    return model, images(), {}
