"""Family d: the same hook attached again and again (epoch setup code run 3 times, hooks made in forward)."""

from __future__ import annotations

import torch
from torch import nn

from . import Case, case, first_tensor, hf_llama, hook_count, images, named_mlp, run_case, tiny_cnn, token_ids

CASES: list[Case] = []
EPOCHS = 3


def _by_name(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


def _grows(name: str, path: str, at_least: int = EPOCHS, param: str | None = None):
    """bites: after build, the module at ``path`` (or parameter ``param``) carries >= ``at_least`` hooks."""

    def bites() -> None:
        torch.manual_seed(0)
        model, _, _ = _by_name(name).build()
        if param is not None:
            p = dict(model.named_parameters())[param]
            n = len(p._backward_hooks or {})
        else:
            n = hook_count(model.get_submodule(path))
        assert n >= at_least, f"{path or param}: only {n} hooks"

    return bites


# --- d1: register_hooks(model) helper called at every epoch start ---------------------------------------


def register_hooks(model, activations):
    def hook(module, inp, out):
        activations.append(out.detach().mean())

    model.features[3].register_forward_hook(hook)


@case(
    CASES,
    family="d",
    source="https://github.com/huggingface/peft/pull/2761 (one hook per call registered, hooks accumulate)",
    culprit=("features.3",),
    note="register_hooks(model, activations) called at each epoch start: a new closure each time",
    bites=_grows("d1_helper_each_epoch", "features.3"),
)
def d1_helper_each_epoch():
    model = tiny_cnn()
    activations = []
    for _epoch in range(EPOCHS):
        register_hooks(model, activations)
    return model, images(), {}


# --- d2: new SaveOutput() instance per epoch on every conv ----------------------------------------------


class SaveOutput:
    def __init__(self):
        self.outputs = []

    def __call__(self, module, module_in, module_out):
        self.outputs.append(module_out.detach())

    def clear(self):
        self.outputs = []


@case(
    CASES,
    family="d",
    source="https://github.com/jacobgil/pytorch-grad-cam/issues/132 (new hook object per loop iteration)",
    culprit=("features.0", "features.3", "SaveOutput"),
    note="save_output = SaveOutput(); for layer in model.modules(): register_forward_hook(save_output) -- every epoch",
    bites=_grows("d2_saveoutput_per_epoch", "features.0"),
)
def d2_saveoutput_per_epoch():
    model = tiny_cnn()
    for _epoch in range(EPOCHS):
        save_output = SaveOutput()
        for layer in model.modules():
            if isinstance(layer, nn.Conv2d):
                layer.register_forward_hook(save_output)
    return model, images(), {}


# --- d3: register_forward_hook inside the model's forward() ---------------------------------------------


class HookInForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 4)
        self.feature_maps = []

    def save_act(self, module, inp, out):
        self.feature_maps.append(out.detach())

    def forward(self, x):
        self.conv.register_forward_hook(self.save_act)
        x = torch.relu(self.conv(x))
        return self.fc(self.pool(x).flatten(1))


@case(
    CASES,
    family="d",
    source="https://github.com/pytorch/pytorch/issues/46386 (hooks registered from inside the module)",
    culprit=("conv", "save_act", "<root>"),
    note="forward() registers a hook on self.conv on every call; three earlier calls already happened",
    bites=_grows("d3_register_in_forward", "conv"),
)
def d3_register_in_forward():
    model = HookInForward()
    with torch.no_grad():
        for _epoch in range(EPOCHS):
            model(images(2))
    return model, images(), {}


# --- d4: parameter gradient hook registered in forward() ------------------------------------------------


class MaskedLinearNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 12)
        self.out = nn.Linear(12, 2)
        self.register_buffer("grad_scale", torch.full((12, 12), 0.5))

    def forward(self, x):
        self.fc.weight.register_hook(lambda g: g * self.grad_scale)
        return self.out(torch.relu(self.fc(x)))


def _d4_bites() -> None:
    _grows("d4_param_hook_in_forward", "", param="fc.weight")()
    model, _, _, _ = run_case(_by_name("d4_param_hook_in_forward"))
    # four hooks now (three old + the one this call made): the gradient is scaled by 0.5**4, not 0.5
    assert len(model.fc.weight._backward_hooks) == EPOCHS + 1


@case(
    CASES,
    family="d",
    source="https://github.com/pytorch/pytorch/issues/41529 (gradient-masking hooks on weights)",
    culprit=("fc.weight", "fc", "<lambda>"),
    note="self.fc.weight.register_hook(...) in forward(): the gradient is scaled once per past call",
    bites=_d4_bites,
)
def d4_param_hook_in_forward():
    model = MaskedLinearNet()
    for _epoch in range(EPOCHS):
        model(torch.randn(2, 12))
    return model, torch.randn(6, 12), {}


# --- d5: Grad-CAM object created per image, never removed ----------------------------------------------


class GradCAM:
    def __init__(self, model, target_layer):
        self.model = model
        self.gradients = None
        self.activations = None
        target_layer.register_forward_hook(self.save_activations)
        target_layer.register_full_backward_hook(self.save_gradients)

    def save_activations(self, module, input, output):
        self.activations = output.detach()

    def save_gradients(self, module, grad_input, grad_output):
        self.gradients = grad_output[0].detach()


@case(
    CASES,
    family="d",
    source="https://github.com/jacobgil/pytorch-grad-cam/issues/132 (CAM object re-created in a loop)",
    culprit=("features.3", "GradCAM", "save_activations", "save_gradients"),
    note="cam = GradCAM(model, model.features[3]) for each image: 3 forward + 3 backward hooks",
    bites=_grows("d5_gradcam_per_image", "features.3", at_least=2 * EPOCHS),
)
def d5_gradcam_per_image():
    model = tiny_cnn()
    for _img in range(EPOCHS):
        cam = GradCAM(model, model.features[3])
    model._blind_cam = cam
    return model, images(), {}


# --- d6: model.apply(add_hooks) at every epoch start ----------------------------------------------------


def record_std(module, inp, out):
    module.last_out_std = out.detach().std()


def add_hooks(m):
    if isinstance(m, nn.Linear):
        m.register_forward_hook(record_std)


@case(
    CASES,
    family="d",
    source="https://github.com/Lightning-AI/pytorch-lightning/pull/2298 (summary hook handles not removed)",
    culprit=("fc1", "fc2", "fc3", "record_std"),
    note="on_train_epoch_start: model.apply(add_hooks): the same function registered 3 times per Linear",
    bites=_grows("d6_apply_add_hooks_each_epoch", "fc2"),
)
def d6_apply_add_hooks_each_epoch():
    model = named_mlp()
    for _epoch in range(EPOCHS):
        model.apply(add_hooks)
    return model, torch.randn(8, 10), {}


# --- d7: full backward hook for gradient logging added each epoch -----------------------------------------


@case(
    CASES,
    family="d",
    source="https://github.com/pytorch/pytorch/issues/54405 (register_full_backward_hook for logging)",
    culprit=("fc2", "log_grad"),
    note="model.fc2.register_full_backward_hook(log_grad) in the epoch loop",
    bites=_grows("d7_full_bwd_logger_each_epoch", "fc2"),
)
def d7_full_bwd_logger_each_epoch():
    model = named_mlp()
    grad_log = []

    def log_grad(module, grad_input, grad_output):
        grad_log.append(grad_output[0].detach().norm())

    for _epoch in range(EPOCHS):
        model.fc2.register_full_backward_hook(log_grad)
    return model, torch.randn(8, 10), {}


# --- d8: steering hook added per prompt, handle dropped: steering applied 3x ----------------------------


def _d8_build():
    model = hf_llama()
    vec = torch.randn(32)

    def steer(model, vec):
        def hook(m, args, output):
            return output + vec if isinstance(output, torch.Tensor) else (output[0] + vec,) + tuple(output[1:])

        return model.model.layers[1].register_forward_hook(hook)

    for _prompt in range(EPOCHS):
        steer(model, vec)
    return model, token_ids(), {}


def _d8_bites() -> None:
    _grows("d8_llama_steer_per_prompt", "model.layers.1")()
    torch.manual_seed(0)
    model, ids, _ = _d8_build()
    with torch.no_grad():
        many = first_tensor(model(ids)).clone()
        hooks = list(model.model.layers[1]._forward_hooks.keys())
        for k in hooks[1:]:
            del model.model.layers[1]._forward_hooks[k]
        once = first_tensor(model(ids))
    assert not torch.allclose(many, once), "stacked steering hooks gave the same logits"


case(
    CASES,
    family="d",
    source="https://github.com/huggingface/peft/pull/2761 (X-LoRA forward hooks accumulating during generate)",
    culprit=("model.layers.1",),
    context="eval_no_grad",
    note="steer(model, vec) per prompt returns a handle nobody removes: the vector is added 3 times",
    bites=_d8_bites,
    name="d8_llama_steer_per_prompt",
)(_d8_build)


# --- d9: input-noise pre-hook on the root model added each epoch ----------------------------------------


@case(
    CASES,
    family="d",
    source="https://github.com/yoshitomo-matsubara/torchdistill/pull/274 (pre-forward processes registered per epoch)",
    culprit=("<root>", "add_noise"),
    note="model.register_forward_pre_hook(add_noise) inside train_one_epoch(): noise added 3 times",
    bites=_grows("d9_root_prehook_each_epoch", ""),
)
def d9_root_prehook_each_epoch():
    model = named_mlp()

    def add_noise(module, inp):
        return (inp[0] + 0.05 * torch.randn_like(inp[0]),)

    for _epoch in range(EPOCHS):
        model.register_forward_pre_hook(add_noise)
    return model, torch.randn(8, 10), {}


# --- d10: gradient clamp hooks on every parameter, registered in train_one_epoch() ----------------------

MLP_PARAMS = ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias")


def train_one_epoch_setup(model):
    def clip_grad_hook(g):
        return g.clamp(-1.0, 1.0)

    for p in model.parameters():
        p.register_hook(clip_grad_hook)


@case(
    CASES,
    family="d",
    source="https://discuss.pytorch.org/t/if-two-different-way-to-modify-grad-manually-is-equivalent/81640",
    culprit=MLP_PARAMS + ("clip_grad_hook",),
    note="gradient clamp hooks added to every parameter at every epoch",
    bites=_grows("d10_param_clamp_each_epoch", "", param="fc2.weight"),
)
def d10_param_clamp_each_epoch():
    model = named_mlp()
    for _epoch in range(EPOCHS):
        train_one_epoch_setup(model)
    return model, torch.randn(8, 10), {}


# --- clean: registered once ------------------------------------------------------------------------------


@case(
    CASES,
    family="d",
    source="https://github.com/Lightning-AI/pytorch-lightning/pull/2298 (fixed: handles removed)",
    culprit=None,
    note="epoch loop that removes its handle at epoch end; the last epoch's hook is live",
)
def d_clean_handle_removed_each_epoch():
    model = tiny_cnn()
    activations = []

    def hook(module, inp, out):
        activations.append(out.detach().mean())

    handle = None
    for _epoch in range(EPOCHS):
        if handle is not None:
            handle.remove()
        handle = model.features[3].register_forward_hook(hook)
    return model, images(), {}


@case(
    CASES,
    family="d",
    source="https://github.com/jacobgil/pytorch-grad-cam/issues/483 (use the CAM as a context manager)",
    culprit=None,
    note="Grad-CAM used as a context manager per image; one instance still attached for the checked run",
)
def d_clean_gradcam_context_manager():
    model = tiny_cnn()

    class CAM(GradCAM):
        def __init__(self, model, target_layer):
            self.handles = [
                target_layer.register_forward_hook(self.save_activations),
                target_layer.register_full_backward_hook(self.save_gradients),
            ]

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            for h in self.handles:
                h.remove()

    for _img in range(EPOCHS - 1):
        with CAM(model, model.features[3]):
            pass
    model._blind_cam = CAM(model, model.features[3])
    return model, images(), {}
