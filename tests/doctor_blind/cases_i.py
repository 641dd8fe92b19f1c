"""Family i ("beyond"): shared modules, in-place ops with backward hooks, bypassed or never-called modules,
legacy backward hooks, hooks travelling with copies, version drift of outputs, recursion."""

from __future__ import annotations

import copy
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from . import (
    Case,
    case,
    expect_raises,
    grads,
    hf_llama,
    images,
    run_case,
    tiny_cnn,
    token_ids,
    user_context,
)

CASES: list[Case] = []


def _by_name(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


def _never_fires(name: str):
    def bites() -> None:
        model, _, _, _ = run_case(_by_name(name))
        assert model._blind_calls == [], "the hook fired"

    return bites


def _raises(name: str, *types: type[BaseException]):
    def bites() -> None:
        expect_raises(lambda: run_case(_by_name(name)), *types)

    return bites


# --- i1: DeepLIFT rescale hooks on a ReLU used twice: the backward uses the other call's tensors -------


class SharedReluModel(nn.Module):
    def __init__(self, shared=True):
        super().__init__()
        self.shared_relu = nn.ReLU()
        self.relu2 = self.shared_relu if shared else nn.ReLU()
        self.linear1 = nn.Linear(10, 10)
        self.linear2 = nn.Linear(10, 10)
        self.out = nn.Linear(10, 2)

    def forward(self, x):
        x = self.shared_relu(self.linear1(x))
        x = self.relu2(self.linear2(x))
        return self.out(x)


def _fwd(module, input, output):
    module.input = input[0].clone().detach()
    module.output = output.clone().detach()


def _bwd(module, grad_input, grad_output):
    delta_in, delta_out = module.input, module.output
    mult = torch.where(delta_in.abs() > 1e-6, delta_out / delta_in, torch.zeros_like(delta_in))
    return (grad_output[0] * mult,)


def _i1(shared: bool):
    def build():
        model = SharedReluModel(shared)
        relus = [model.shared_relu] if shared else [model.shared_relu, model.relu2]
        for m in relus:
            m.register_forward_hook(_fwd)
            m.register_full_backward_hook(_bwd)
        return model, torch.randn(8, 10), {}

    return build


def _i1_bites() -> None:
    torch.manual_seed(0)
    shared = run_case(Case("shared", "i", "", _i1(True), ("x",)))[0]
    torch.manual_seed(0)
    separate = run_case(Case("separate", "i", "", _i1(False), None))[0]
    g_s, g_p = grads(shared), grads(separate)
    assert not torch.allclose(g_s["linear1.weight"], g_p["linear1.weight"]), "same grads as separate ReLUs"


case(
    CASES,
    family="i",
    source="https://github.com/jmschrei/tangermeme/pull/54 (Add hook stacks to handle shared modules)",
    culprit=("shared_relu", "_fwd", "_bwd"),
    note="module.input/output overwritten by the second call; the first call's backward uses them: wrong attributions",
    bites=_i1_bites,
    name="i1_shared_relu_deeplift_hooks",
)(_i1(True))


# --- i2: full backward hook on a conv followed by ReLU(inplace=True) ------------------------------------


class ConvBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.relu = nn.ReLU(inplace=True)
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(self.relu(self.conv1(x)).mean((2, 3)))


@case(
    CASES,
    family="i",
    source="https://github.com/pytorch/pytorch/issues/61519 (Inplace ReLU incompatible with backward hook)",
    culprit=("conv1", "relu", "hook_g"),
    note="register_full_backward_hook on conv1 whose output an inplace ReLU modifies: RuntimeError in forward",
    bites=_raises("i2_inplace_relu_full_backward_hook", RuntimeError),
)
def i2_inplace_relu_full_backward_hook():
    model = ConvBlock()
    grads_seen = []

    def hook_g(m, grad_input, grad_output):
        grads_seen.append(grad_output[0].detach())

    model.conv1.register_full_backward_hook(hook_g)
    return model, images(), {}


# --- i3: parent calls child.forward(x) directly: the child's hooks never run -------------------------


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 16), nn.ReLU())

    def forward(self, x):
        return self.net(x)


class Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.head = nn.Linear(16, 2)

    def forward(self, x):
        return self.head(self.encoder.forward(x))


@case(
    CASES,
    family="i",
    source="https://github.com/numenta/nupic.torch/pull/51 (Forward hooks are ignored when calling the forward method)",
    culprit=("encoder", "save_embedding"),
    note="Wrapper.forward calls self.encoder.forward(x): the hook on encoder never fires",
    bites=_never_fires("i3_forward_called_directly"),
)
def i3_forward_called_directly():
    model = Wrapper()
    calls = []

    def save_embedding(module, inp, out):
        calls.append(out.detach())

    model.encoder.register_forward_hook(save_embedding)
    model._blind_calls = calls
    return model, torch.randn(8, 10), {}


# --- i4: hook on a pooling module the forward never uses (F.adaptive_avg_pool2d instead) -----------------


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = F.relu(self.conv(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


@case(
    CASES,
    family="i",
    source="https://github.com/Lightning-AI/pytorch-lightning/pull/2298 (hooks on layers that are never used)",
    culprit=("pool", "grab_pooled"),
    note="self.pool is defined but forward uses F.adaptive_avg_pool2d: the hook on pool never fires",
    bites=_never_fires("i4_hook_on_unused_module"),
)
def i4_hook_on_unused_module():
    model = Net()
    calls = []

    def grab_pooled(module, inp, out):
        calls.append(out.detach())

    model.pool.register_forward_hook(grab_pooled)
    model._blind_calls = calls
    return model, images(), {}


# --- i5: legacy register_backward_hook on a multi-op block -------------------------------------------


class BlockNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(nn.Linear(10, 5), nn.ReLU(), nn.Linear(5, 3))
        self.head = nn.Linear(3, 2)

    def forward(self, x):
        return self.head(self.block(x))


def _i5_bites() -> None:
    c = _by_name("i5_legacy_backward_hook_multi_op")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, x, _, _ = run_case(c)
    shapes = model._blind_calls
    assert shapes, "hook did not fire"
    assert all(s != (x.shape[0], 10) for s in shapes[0] if s is not None), shapes
    # (grad_input describes the last Linear's inputs, not the block's input of shape (B, 10))


@case(
    CASES,
    family="i",
    source="https://github.com/pytorch/pytorch/issues/598 (module hooks are registered on the last function)",
    culprit=("block", "bh"),
    note="register_backward_hook on a Sequential: grad_input belongs to its last op, not to the block",
    bites=_i5_bites,
)
def i5_legacy_backward_hook_multi_op():
    model = BlockNet()
    seen = []

    def bh(m, grad_input, grad_output):
        seen.append([None if g is None else tuple(g.shape) for g in grad_input])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.block.register_backward_hook(bh)
    model._blind_calls = seen
    return model, torch.randn(8, 10).requires_grad_(), {}


# --- i6: hooks registered before deepcopy travel to the EMA teacher, writing into the student's dict -----


class StudentNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(10, 16), nn.ReLU())
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.backbone(x))


def _i6_build():
    student = StudentNet()
    student_feats = {}

    def save_student_feats(module, inp, out):
        student_feats["backbone"] = out.detach()

    student.backbone.register_forward_hook(save_student_feats)
    teacher = copy.deepcopy(student)  # EMA teacher made after the hooks were attached
    teacher._blind_store = student_feats
    return teacher, torch.randn(8, 10), {}


def _i6_bites() -> None:
    torch.manual_seed(0)
    teacher, x, _ = _i6_build()
    store = teacher._blind_store
    assert not store
    with torch.no_grad():
        teacher(x)
    assert "backbone" in store, "running the teacher did not touch the student's feature dict"


case(
    CASES,
    family="i",
    source="https://github.com/huggingface/accelerate/pull/1971 (copied model still references the original's hooks)",
    culprit=("backbone", "save_student_feats"),
    note="teacher = deepcopy(student) after hooks: the teacher's forward overwrites student_feats",
    bites=_i6_bites,
    name="i6_deepcopy_shares_hook_closure",
)(_i6_build)


# --- i7: siamese encoder: gradient saved by a backward hook is overwritten by the second branch --------


class Siamese(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 8))
        self.head = nn.Linear(16, 1)

    def forward(self, pair):
        a, b = pair[:, 0], pair[:, 1]
        return self.head(torch.cat([self.encoder(a), self.encoder(b)], dim=1))


class SaveGrad:
    def __init__(self, module):
        self.grad = None
        self.calls = 0
        module.register_full_backward_hook(self.save_grad)

    def save_grad(self, module, grad_input, grad_output):
        self.calls += 1
        self.grad = grad_output[0].detach()


def _i7_bites() -> None:
    model, _, _, _ = run_case(_by_name("i7_siamese_grad_overwritten"))
    saver = model._blind_saver[0]
    assert saver.calls == 2, "expected the hook to fire once per branch"


@case(
    CASES,
    family="i",
    source="https://github.com/jmschrei/tangermeme/pull/54 (shared modules overwrite what the hooks store)",
    culprit=("encoder", "SaveGrad", "save_grad"),
    note="Grad-CAM style self.grad = grad_output[0] on a module used twice: one branch's gradient is lost",
    bites=_i7_bites,
)
def i7_siamese_grad_overwritten():
    model = Siamese()
    model._blind_saver = [SaveGrad(model.encoder)]
    return model, torch.randn(6, 2, 10), {}


# --- i8: hook on the ModuleList of decoder layers: never called --------------------------------------


@case(
    CASES,
    family="i",
    source="https://github.com/p-e-w/heretic/pull/384 (hooks must go on each decoder layer)",
    culprit=("model.layers", "capture_all_layers"),
    context="eval_no_grad",
    note="model.model.layers (a ModuleList) is never called: its forward hook never fires",
    bites=_never_fires("i8_llama_hook_on_modulelist"),
)
def i8_llama_hook_on_modulelist():
    model = hf_llama()
    calls = []

    def capture_all_layers(module, args, output):
        calls.append(output)

    model.model.layers.register_forward_hook(capture_all_layers)
    model._blind_calls = calls
    return model, token_ids(), {}


# --- i9: hook on self.relu while forward uses F.relu ----------------------------------------------------


class FunctionalReluNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 16)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(16, 2)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


@case(
    CASES,
    family="i",
    source="https://github.com/fastai/fastai/issues/2385 (HookCallback misses layers that are not modules in forward)",
    culprit=("relu", "count_dead"),
    note="forward uses F.relu; the nn.ReLU attribute that carries the hook is never called",
    bites=_never_fires("i9_hook_on_relu_but_functional_used"),
)
def i9_hook_on_relu_but_functional_used():
    model = FunctionalReluNet()
    calls = []

    def count_dead(module, inp, out):
        calls.append((out == 0).float().mean())

    model.relu.register_forward_hook(count_dead)
    model._blind_calls = calls
    return model, torch.randn(8, 10), {}


# --- i10: full backward hook on the first layer expects grad_input[0] ----------------------------------


@case(
    CASES,
    family="i",
    source="https://github.com/yizt/Grad-CAM.pytorch/issues/15 (set input.requires_grad_(True) for the hook)",
    culprit=("features.0", "save_input_grad"),
    note="input saliency from grad_input[0] of the first conv: None when the images need no grad",
    bites=_raises("i10_first_layer_grad_input_none", AttributeError, TypeError),
)
def i10_first_layer_grad_input_none():
    model = tiny_cnn()
    saliency = []

    def save_input_grad(module, grad_input, grad_output):
        saliency.append(grad_input[0].abs().amax(1))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.features[0].register_full_backward_hook(save_input_grad)
    return model, images(), {}


# --- i11: hook treats the LSTM output as a tensor ----------------------------------------------------


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(40, 12)
        self.lstm = nn.LSTM(12, 16, batch_first=True)
        self.fc = nn.Linear(16, 3)

    def forward(self, tokens):
        out, _ = self.lstm(self.embedding(tokens))
        return self.fc(out[:, -1])


@case(
    CASES,
    family="i",
    source="https://github.com/fastai/fastai2/issues/425 (hook outputs are tuples for some modules)",
    culprit=("lstm", "save_activation"),
    note="activation[name] = output.detach() on an nn.LSTM: output is a tuple",
    bites=_raises("i11_lstm_output_is_tuple", AttributeError),
)
def i11_lstm_output_is_tuple():
    model = Classifier()
    activation = {}

    def save_activation(module, inp, output):
        activation["lstm"] = output.detach()

    model.lstm.register_forward_hook(save_activation)
    return model, torch.randint(0, 40, (4, 6)), {}


# --- i12: a with_kwargs-style hook registered without with_kwargs=True ---------------------------------


@case(
    CASES,
    family="i",
    source="https://github.com/pytorch/pytorch/pull/104278 (with_kwargs forward hooks)",
    culprit=("classifier", "log_call"),
    note="hook(module, args, kwargs, output) registered with plain register_forward_hook: TypeError",
    bites=_raises("i12_kwargs_signature_without_flag", TypeError),
)
def i12_kwargs_signature_without_flag():
    model = tiny_cnn()
    log = []

    def log_call(module, args, kwargs, output):
        log.append((len(args), sorted(kwargs)))

    model.classifier.register_forward_hook(log_call)
    return model, images(), {}


# --- i13: attention-map hook on nn.MultiheadAttention treats (out, weights) as a tensor -----------------


class TinyViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(12, 16)
        layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.encoder(self.embed(x)).mean(1))


@case(
    CASES,
    family="i",
    source="https://github.com/jacobgil/pytorch-grad-cam/pull/183 (hooks on transformer blocks); MHA returns a tuple",
    culprit=("encoder.layers.0.self_attn", "encoder.layers.1.self_attn", "save_attn"),
    note="attn_maps.append(output.detach()) on nn.MultiheadAttention, whose output is (attn_output, weights)",
    bites=_raises("i13_mha_output_is_tuple", AttributeError),
)
def i13_mha_output_is_tuple():
    model = TinyViT()
    attn_maps = []

    def save_attn(module, inp, output):
        attn_maps.append(output.detach())

    for layer in model.encoder.layers:
        layer.self_attn.register_forward_hook(save_attn)
    return model, torch.randn(3, 5, 12), {}


# --- i14: a hook that calls its own module (perturbed re-run): infinite recursion -----------------------


@case(
    CASES,
    family="i",
    source="https://github.com/pytorch/pytorch/issues/46386 (fw_hook calling self(m_in) from a hook)",
    culprit=("fc2", "perturbation_check"),
    note="forward hook calls module(input[0] + noise) to measure sensitivity: the hook re-enters itself",
    bites=_raises("i14_hook_calls_its_module", RecursionError),
)
def i14_hook_calls_its_module():
    from . import named_mlp

    model = named_mlp()
    sensitivity = []

    def perturbation_check(module, input, output):
        noisy = module(input[0] + 0.01 * torch.randn_like(input[0]))
        sensitivity.append((noisy - output).detach().abs().mean())

    model.fc2.register_forward_hook(perturbation_check)
    return model, torch.randn(8, 10), {}


# --- i15: output[0] of a decoder layer that now returns a tensor: the first *sequence* is stored --------


def _i15_bites() -> None:
    c = _by_name("i15_llama_output0_is_first_sample")
    torch.manual_seed(0)
    model, ids, _ = c.build()
    with user_context(model, c.context):
        model(ids)
    grabbed = model._blind_store["layer0"]
    assert grabbed.shape != (ids.shape[0], ids.shape[1], 32), grabbed.shape


@case(
    CASES,
    family="i",
    source="https://github.com/zjunlp/EasyEdit/pull/678 (forward hook output compat across transformers versions)",
    culprit=("model.layers.0", "grab_layer0"),
    context="eval_no_grad",
    note="hidden = output[0] written for tuple outputs; the layer returns a tensor, so the hook keeps sample 0 only",
    bites=_i15_bites,
)
def i15_llama_output0_is_first_sample():
    model = hf_llama()
    store = {}

    def grab_layer0(module, args, output):
        store["layer0"] = output[0].detach()

    model.model.layers[0].register_forward_hook(grab_layer0)
    model._blind_store = store
    return model, token_ids(batch=3), {}
