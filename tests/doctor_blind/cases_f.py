"""Family f: hooks that edit tensors through ``.data`` (outputs, inputs, grads, parameters): autograd never knows."""

from __future__ import annotations

from collections import OrderedDict

import torch
from torch import nn

from . import Case, case, named_mlp, outputs_and_grads, same, user_context

CASES: list[Case] = []


def _by_name(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


def _wrong_grads_vs(planted: str, functional_build, *, same_output: bool = True):
    """bites: the functional (autograd-visible) version of the edit gives the same output but other grads."""

    def bites() -> None:
        out_p, g_p = outputs_and_grads(_by_name(planted))
        out_f, g_f = outputs_and_grads(Case("functional", "f", "", functional_build, None))
        if same_output:
            assert torch.allclose(out_p, out_f, atol=1e-6), "the forward values differ too"
        assert not same(g_p, g_f), "gradients are right despite the .data edit"

    return bites


# --- f1: gating a Sigmoid output through .data ------------------------------------------------------


class Gated(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 16)
        self.gate = nn.Sigmoid()
        self.fc2 = nn.Linear(16, 2)

    def forward(self, x):
        return self.fc2(self.gate(self.fc1(x)))


def _f1(functional: bool):
    def build():
        model = Gated()

        def halve_gate(module, inp, output):
            if functional:
                return output * 0.5
            output.data.mul_(0.5)

        model.gate.register_forward_hook(halve_gate)
        return model, torch.randn(8, 10), {}

    return build


case(
    CASES,
    family="f",
    source="https://discuss.pytorch.org/t/why-not-modify-forward-hook-output/46584",
    culprit=("gate", "halve_gate"),
    note="output.data.mul_(0.5) on a Sigmoid output: sigmoid's backward reuses the edited result",
    bites=_wrong_grads_vs("f1_sigmoid_output_data_mul", _f1(True)),
    name="f1_sigmoid_output_data_mul",
)(_f1(False))


# --- f2: max-norm constraint applied in a forward hook via weight.data ---------------------------------


def _f2(where: str):
    def build():
        model = named_mlp((10, 16, 16, 2))
        with torch.no_grad():
            model.fc2.weight.mul_(3)

        def max_norm(module, inp, out):
            module.weight.data.renorm_(2, 0, 0.5)

        if where == "hook":
            model.fc2.register_forward_hook(max_norm)
        return model, torch.randn(8, 10), {}

    return build


def _f2_bites() -> None:
    c = _by_name("f2_weight_renorm_in_forward_hook")
    out_h, g_h = outputs_and_grads(c)
    out_0, g_0 = outputs_and_grads(Case("bare", "f", "", _f2("none"), None))
    assert torch.equal(out_h, out_0), "the output was computed with the original weight"
    assert not torch.allclose(g_h["fc1.weight"], g_0["fc1.weight"]), "earlier layers got the right gradient"


case(
    CASES,
    family="f",
    source="https://github.com/pytorch/pytorch/issues/5790 (weights modified around forward via hooks)",
    culprit=("fc2", "max_norm"),
    note="after the forward, weight.data.renorm_ changes the weight autograd saved: grad_input is wrong",
    bites=_f2_bites,
    name="f2_weight_renorm_in_forward_hook",
)(_f2("hook"))


# --- f3: grad.data.clamp_ on a residual branch: the skip path's gradient is the same tensor ------------


class ResNetish(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(8, 8)
        self.branch = nn.Sequential(nn.Linear(8, 8), nn.Tanh())
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        x = self.stem(x)
        x = self.branch(x) + x
        return self.head(x)


def _f3(functional: bool):
    def build():
        model = ResNetish()

        def clip_branch_grad(grad):
            if functional:
                return grad.clamp(-1e-3, 1e-3)
            grad.data.clamp_(-1e-3, 1e-3)

        def register_clip(module, inp, out):
            out.register_hook(clip_branch_grad)

        model.branch.register_forward_hook(register_clip)
        return model, torch.randn(6, 8), {}

    return build


case(
    CASES,
    family="f",
    source="https://github.com/pytorch/pytorch/issues/1110 (never modify the grads received in place)",
    culprit=("branch", "clip_branch_grad"),
    note="grad.data.clamp_ on the branch output also clamps the identical skip-path gradient",
    bites=_wrong_grads_vs("f3_grad_data_clamp_residual", _f3(True)),
    name="f3_grad_data_clamp_residual",
)(_f3(False))


# --- f4: standardising a layer's input through input[0].data (ReLU saved that tensor) -------------------


def _f4(functional: bool):
    def build():
        model = named_mlp((10, 16, 2))

        def standardize(module, input):
            x = input[0]
            if functional:
                return ((x - x.mean()) / (x.std() + 1e-5),)
            x.data.sub_(x.data.mean()).div_(x.data.std() + 1e-5)

        model.fc2.register_forward_pre_hook(standardize)
        return model, torch.randn(8, 10), {}

    return build


case(
    CASES,
    family="f",
    source="https://github.com/pytorch/pytorch/issues/9417 (pre-hooks preprocessing the input)",
    culprit=("fc2", "standardize"),
    note="pre-hook edits input[0].data in place: ReLU's saved result changes, its backward mask is wrong",
    bites=_wrong_grads_vs("f4_prehook_input_data_inplace", _f4(True)),
    name="f4_prehook_input_data_inplace",
)(_f4(False))


# --- f5: WGAN-style weight clipping inside a forward pre-hook: validation changes the weights -----------


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(10, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

    def forward(self, x):
        return self.main(x)


def clip_weights(module, inp):
    for p in module.parameters():
        p.data.clamp_(-0.01, 0.01)


def _f5_build():
    model = Critic()
    model.register_forward_pre_hook(clip_weights)
    return model, torch.randn(8, 10), {}


def _f5_bites() -> None:
    torch.manual_seed(0)
    model, x, _ = _by_name("f5_weight_clip_prehook_in_eval").build()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    with user_context(model, "eval_no_grad"):
        model(x)
    assert any(not torch.equal(before[n], p) for n, p in model.named_parameters()), "weights unchanged"


case(
    CASES,
    family="f",
    source="https://github.com/pytorch/pytorch/issues/5790 (a forward_pre_hook that modifies the weights)",
    culprit=("<root>", "clip_weights"),
    context="eval_no_grad",
    note="p.data.clamp_ in a forward pre-hook: merely evaluating the critic rewrites its weights",
    bites=_f5_bites,
    name="f5_weight_clip_prehook_in_eval",
)(_f5_build)


# --- f6: output.data = output.data.clamp(...) on a Tanh ---------------------------------------------


def _f6(functional: bool):
    def build():
        model = nn.Sequential(OrderedDict(fc1=nn.Linear(10, 16), tanh=nn.Tanh(), fc2=nn.Linear(16, 2)))
        with torch.no_grad():
            model.fc1.weight.mul_(4)

        def saturate(module, inp, output):
            if functional:
                return output.clamp(-0.5, 0.5)
            output.data = output.data.clamp(-0.5, 0.5)

        model.tanh.register_forward_hook(saturate)
        return model, torch.randn(8, 10), {}

    return build


case(
    CASES,
    family="f",
    source="https://github.com/pytorch/pytorch/issues/1926 (outputs = torch.mul(outputs[0].data ...))",
    culprit=("tanh", "saturate"),
    note="output.data reassigned on a Tanh: tanh's backward uses the clamped result (1 - y^2)",
    bites=_wrong_grads_vs("f6_tanh_output_data_assign", _f6(True)),
    name="f6_tanh_output_data_assign",
)(_f6(False))


# --- f7: attention masking through .data on nn.Softmax's output -------------------------------------


class TinyAttention(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.softmax = nn.Softmax(dim=-1)
        self.out = nn.Linear(d, 2)

    def forward(self, x):
        scores = self.q(x) @ self.k(x).transpose(1, 2) / 8**0.5
        attn = self.softmax(scores)
        return self.out((attn @ self.v(x)).mean(1))


def _f7(functional: bool):
    def build():
        model = TinyAttention()
        mask = torch.ones(5, 5).tril()

        def causal_mask(module, inp, output):
            if functional:
                return output * mask
            output.data.mul_(mask)

        model.softmax.register_forward_hook(causal_mask)
        return model, torch.randn(3, 5, 8), {}

    return build


case(
    CASES,
    family="f",
    source="https://github.com/sagnikc395/refusal-circuit-dpo/issues/20 (patching attention with forward hooks)",
    culprit=("softmax", "causal_mask"),
    note="attention probabilities masked with output.data.mul_: softmax backward uses the edited probs",
    bites=_wrong_grads_vs("f7_softmax_output_data_mask", _f7(True)),
    name="f7_softmax_output_data_mask",
)(_f7(False))


# --- f8: a forward hook clamps its (saved) input through .data after the Linear ran ---------------------


def _f8(functional: bool):
    def build():
        model = named_mlp((10, 16, 2))
        with torch.no_grad():
            model.fc1.weight.mul_(5)

        def cap_inputs(module, input, output):
            input[0].data.clamp_(max=0.1)

        if not functional:
            model.fc2.register_forward_hook(cap_inputs)
        return model, torch.randn(8, 10), {}

    return build


def _f8_bites() -> None:
    out_h, g_h = outputs_and_grads(_by_name("f8_hook_clamps_saved_input_data"))
    out_0, g_0 = outputs_and_grads(Case("bare", "f", "", _f8(True), None))
    assert torch.equal(out_h, out_0), "the output changed (the edit came after the Linear ran)"
    assert not torch.allclose(g_h["fc2.weight"], g_0["fc2.weight"]), "the Linear's weight grad is unaffected"


case(
    CASES,
    family="f",
    source="https://github.com/pytorch/pytorch/issues/95617 (hooks see tensors that were modified in place)",
    culprit=("fc2", "cap_inputs"),
    note="input[0].data.clamp_ after the Linear saved its input: weight gradient uses edited values",
    bites=_f8_bites,
    name="f8_hook_clamps_saved_input_data",
)(_f8(False))
