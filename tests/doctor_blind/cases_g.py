"""Family g: hooks that work in training and fail only in validation (no_grad and/or eval mode)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import Case, case, expect_raises, hf_llama, hidden_of, images, named_mlp, run_case, tiny_cnn, token_ids

CASES: list[Case] = []


def _fails_only_in_context(name: str, *types: type[BaseException]):
    """bites: a training step works; the same model in the case's context raises."""

    def bites() -> None:
        c = next(c for c in CASES if c.name == name)
        run_case(Case("train", "g", "", c.build, None, context="train"))
        expect_raises(lambda: run_case(c), *types)

    return bites


# --- g1: Grad-CAM forward hook registering a tensor hook on the output ----------------------------------


class GradCAM:
    def __init__(self, model, target_layer):
        self.model = model
        self.activations = None
        self.gradients = None
        target_layer.register_forward_hook(self.save_activation)

    def save_activation(self, module, input, output):
        self.activations = output.detach()
        output.register_hook(self.save_gradient)

    def save_gradient(self, grad):
        self.gradients = grad.detach()


@case(
    CASES,
    family="g",
    source=(
        "https://github.com/frgfm/torch-cam/issues/217 (cannot register a hook on a"
        " tensor that doesn't require gradient)"
    ),
    culprit=("features.3", "GradCAM", "save_activation"),
    context="eval_no_grad",
    note="output.register_hook in a forward hook: raises under torch.no_grad() in the validation loop",
    bites=_fails_only_in_context("g1_gradcam_register_hook_no_grad", RuntimeError),
)
def g1_gradcam_register_hook_no_grad():
    model = tiny_cnn()
    model._blind_cam = [GradCAM(model, model.features[3])]
    return model, images(), {}


# --- g2: logging output.grad_fn.name() --------------------------------------------------------------


@case(
    CASES,
    family="g",
    source="https://github.com/ultralytics/ultralytics/issues/10273 (_record_grad_fn forward hooks on every module)",
    culprit=("fc1", "fc2", "fc3", "record_grad_fn"),
    context="no_grad",
    note="hook logs output.grad_fn.name(): grad_fn is None under no_grad -> AttributeError",
    bites=_fails_only_in_context("g2_grad_fn_name_no_grad", AttributeError),
)
def g2_grad_fn_name_no_grad():
    model = named_mlp()
    trace = []

    def record_grad_fn(module, inputs, outputs):
        trace.append((type(module).__name__, outputs.grad_fn.name()))

    for m in model.modules():
        if isinstance(m, nn.Linear):
            m.register_forward_hook(record_grad_fn)
    return model, torch.randn(8, 10), {}


# --- g3: a training-only attribute used by the eval branch (Lightning sanity check runs val first) -----


class ChannelDropHook:
    def __init__(self, p=0.2):
        self.p = p

    def __call__(self, module, inp, output):
        if module.training:
            self.mask = (torch.rand(output.shape[1], 1, 1) > self.p).float()
            return output * self.mask / (1 - self.p)
        return output * self.mask.mean()


@case(
    CASES,
    family="g",
    source=(
        "https://github.com/Lightning-AI/pytorch-lightning/pull/2298 (callbacks/hooks around a validation sanity check)"
    ),
    culprit=("features.1", "ChannelDropHook"),
    context="eval_no_grad",
    note="eval branch reads self.mask, which only a training forward creates: AttributeError on the first validation",
    bites=lambda: _g3_bites(),
)
def g3_training_only_attribute():
    torch.manual_seed(0)
    model = tiny_cnn()
    model.features[1].register_forward_hook(ChannelDropHook())
    return model, images(), {}


def _g3_bites() -> None:
    c = next(c for c in CASES if c.name == "g3_training_only_attribute")
    expect_raises(lambda: run_case(c), AttributeError)
    # after one training step the same hook works in eval: the failure is validation-first only
    torch.manual_seed(0)
    model, x, _ = c.build()
    model(x)
    model.eval()
    with torch.no_grad():
        model(x)


# --- g4: Jacobian penalty with torch.autograd.grad inside the hook --------------------------------------


class JacobianPenalty:
    def __init__(self, module):
        self.penalty = None
        module.register_forward_hook(self.hook)

    def hook(self, module, inp, out):
        (g,) = torch.autograd.grad(out.pow(2).sum(), module.weight, create_graph=True)
        self.penalty = g.pow(2).sum()


@case(
    CASES,
    family="g",
    source="https://github.com/tcmyxc/model-doctor-xwx (hooks/grad_hook.py: torch.autograd.grad on hooked activations)",
    culprit=("fc2", "JacobianPenalty"),
    context="no_grad",
    note="torch.autograd.grad inside a forward hook: under no_grad the output has no grad_fn",
    bites=_fails_only_in_context("g4_autograd_grad_in_hook_no_grad", RuntimeError),
)
def g4_autograd_grad_in_hook_no_grad():
    model = named_mlp()
    model._blind_pen = [JacobianPenalty(model.fc2)]
    return model, torch.randn(8, 10), {}


# --- g5: saliency hook registers a grad hook on the module *input* --------------------------------------


class Saliency:
    def __init__(self, embedding):
        self.grad = None
        embedding.register_forward_hook(self.fwd)

    def fwd(self, module, inp, out):
        out.register_hook(self.keep)

    def keep(self, grad):
        self.grad = grad.detach()


class TextCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(60, 16)
        self.conv = nn.Conv1d(16, 8, 3, padding=1)
        self.fc = nn.Linear(8, 2)

    def forward(self, tokens):
        x = self.embedding(tokens).transpose(1, 2)
        x = F.relu(self.conv(x)).amax(-1)
        return self.fc(x)


@case(
    CASES,
    family="g",
    source="https://github.com/wtyhub/LPN/issues/6 (output.register_hook in an evaluation script)",
    culprit=("embedding", "Saliency"),
    context="eval_no_grad",
    note="embedding-saliency hook: fine in training, RuntimeError in an eval/no_grad loop",
    bites=_fails_only_in_context("g5_embedding_saliency_eval", RuntimeError),
)
def g5_embedding_saliency_eval():
    model = TextCNN()
    model._blind_sal = [Saliency(model.embedding)]
    return model, torch.randint(0, 60, (4, 9)), {}


# --- g6: Grad-CAM on a Llama decoder layer under no_grad ----------------------------------------------


@case(
    CASES,
    family="g",
    source="https://github.com/Comfy-Org/ComfyUI/issues/4246 (GradCAM: cannot register a hook ... inference)",
    culprit=("model.layers.1", "capture_act_grad"),
    context="no_grad",
    note="decoder-layer hook calls hidden.register_hook: works in training, raises under no_grad",
    bites=_fails_only_in_context("g6_llama_layer_gradcam_no_grad", RuntimeError),
)
def g6_llama_layer_gradcam_no_grad():
    model = hf_llama()
    store = {}

    def capture_act_grad(module, args, output):
        hidden = hidden_of(output)
        store["act"] = hidden.detach()
        hidden.register_hook(lambda g: store.__setitem__("grad", g.detach()))

    model.model.layers[1].register_forward_hook(capture_act_grad)
    return model, token_ids(), {}


# --- g7: SWA-like averaging hook: eval branch stacks an empty cache -------------------------------------


class AverageOutputs:
    def __init__(self):
        self.cache = []

    def __call__(self, module, inp, out):
        if module.training:
            self.cache.append(out.detach().mean(0))
            return None
        return out - torch.stack(self.cache).mean(0)


@case(
    CASES,
    family="g",
    source="https://github.com/ultralytics/ultralytics/issues/10273 (eval-mode model with forward hooks)",
    culprit=("fc2", "AverageOutputs"),
    context="eval",
    note="eval branch centres outputs with torch.stack(self.cache): empty before any training step",
    bites=_fails_only_in_context("g7_eval_branch_empty_cache", RuntimeError),
)
def g7_eval_branch_empty_cache():
    model = named_mlp()
    model.fc2.register_forward_hook(AverageOutputs())
    return model, torch.randn(8, 10), {}


# --- g8: eval branch returns (logits, probs) ------------------------------------------------------------


@case(
    CASES,
    family="g",
    source="https://github.com/ModelCloud/GPTQModel/pull/1003 (custom forward hook returning extra values)",
    culprit=("fc2", "expose_probs"),
    context="eval",
    note="hook returns (output, output.softmax(-1)) when not module.training: the next Linear gets a tuple",
    bites=_fails_only_in_context("g8_eval_branch_returns_tuple", TypeError, AttributeError),
)
def g8_eval_branch_returns_tuple():
    model = named_mlp()

    def expose_probs(module, inp, output):
        if not module.training:
            return output, output.softmax(-1)

    model.fc2.register_forward_hook(expose_probs)
    return model, torch.randn(8, 10), {}


# --- clean: hooks that are careful in validation ----------------------------------------------------


@case(
    CASES,
    family="g",
    source="https://github.com/frgfm/torch-cam/issues/217 (fix: register the tensor hook only when it can work)",
    culprit=None,
    context="eval_no_grad",
    note="Grad-CAM that registers its tensor hook only when output.requires_grad (validation loop)",
)
def g_clean_gradcam_guarded_no_grad():
    model = tiny_cnn()

    class GuardedGradCAM(GradCAM):
        def save_activation(self, module, input, output):
            self.activations = output.detach()
            if output.requires_grad:
                output.register_hook(self.save_gradient)

    model._blind_cam = [GuardedGradCAM(model, model.features[3])]
    return model, images(), {}


@case(
    CASES,
    family="g",
    source="https://github.com/frgfm/torch-cam/issues/217 (fix: register the tensor hook only when it can work)",
    culprit=None,
    context="train",
    note="the guarded Grad-CAM in a training step (the tensor hook is registered and fires)",
)
def g_clean_gradcam_guarded_train():
    model = tiny_cnn()

    class GuardedGradCAM(GradCAM):
        def save_activation(self, module, input, output):
            self.activations = output.detach()
            if output.requires_grad:
                output.register_hook(self.save_gradient)

    model._blind_cam = [GuardedGradCAM(model, model.features[3])]
    return model, images(), {}


@case(
    CASES,
    family="g",
    source="https://github.com/Lightning-AI/pytorch-lightning/pull/2298; eval branch that needs no training state",
    culprit=None,
    context="eval_no_grad",
    note="hook branching on module.training whose eval branch is harmless (returns None)",
)
def g_clean_training_branch_safe():
    model = tiny_cnn()

    def channel_drop(module, inp, output):
        if module.training:
            mask = (torch.rand(output.shape[1], 1, 1) > 0.2).float()
            return output * mask / 0.8
        return None

    model.features[1].register_forward_hook(channel_drop)
    return model, images(), {}
