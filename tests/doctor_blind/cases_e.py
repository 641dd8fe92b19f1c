"""Family e: hooks store outputs (inputs, stats) without .detach(): the autograd graph is kept alive."""

from __future__ import annotations

import torch
from torch import nn

from . import Case, case, hf_llama, hidden_of, images, named_mlp, run_case, tiny_cnn, token_ids

CASES: list[Case] = []


def _by_name(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


def _flatten(obj):
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _flatten(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _flatten(v)


def _keeps_graph(name: str, getter):
    """bites: after one training step, what the hook stored still references autograd nodes."""

    def bites() -> None:
        c = _by_name(name)
        try:
            model, _, _, _ = run_case(c)
            stored = list(_flatten(getter(model)))
            assert stored, "the hook stored nothing"
            assert any(t.grad_fn is not None for t in stored), "stored tensors carry no graph"
        finally:
            if c.teardown is not None:
                c.teardown()

    return bites


# --- e1: module.output = output on every conv/linear (DeepLIFT-style bookkeeping) -----------------------


def _save_io(module, input, output):
    module.input = input[0]
    module.output = output


@case(
    CASES,
    family="e",
    source="https://github.com/jmschrei/tangermeme/pull/54 (module.input/module.output stored by hooks)",
    culprit=("features.0", "features.3", "classifier.0", "classifier.2", "_save_io"),
    note="module.output = output (no detach) on every conv and linear",
    bites=_keeps_graph("e1_module_attribute_output", lambda m: m.features[3].output),
)
def e1_module_attribute_output():
    model = tiny_cnn()
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            m.register_forward_hook(_save_io)
    return model, images(), {}


# --- e2: FeatureExtractor with self._features[layer_id] = output ---------------------------------------


class FeatureExtractor(nn.Module):
    def __init__(self, model, layers):
        super().__init__()
        self.model = model
        self.layers = layers
        self._features = {layer: torch.empty(0) for layer in layers}
        for layer_id in layers:
            layer = dict([*self.model.named_modules()])[layer_id]
            layer.register_forward_hook(self.save_outputs_hook(layer_id))

    def save_outputs_hook(self, layer_id):
        def fn(_, __, output):
            self._features[layer_id] = output

        return fn

    def forward(self, x):
        _ = self.model(x)
        return self._features


@case(
    CASES,
    family="e",
    source="https://github.com/BNUCNL/dnnbrain/pull/118 (activation extraction by hooks); FeatureExtractor pattern",
    culprit=("features.0", "features.3", "FeatureExtractor"),
    note="extractor dict self._features[layer_id] = output; the wrapped model is diagnosed",
    bites=_keeps_graph("e2_feature_extractor_dict", lambda m: m._blind_extractor[0]._features),
)
def e2_feature_extractor_dict():
    model = tiny_cnn()
    # kept in a list so that the extractor is not registered as a submodule of the model
    model._blind_extractor = [FeatureExtractor(model, ["features.0", "features.3"])]
    return model, images(), {}


# --- e3: SaveFeature bound method: self.features = output ----------------------------------------------


class SaveFeature:
    features = None

    def __init__(self, m):
        self.hook = m.register_forward_hook(self.hook_fn)

    def hook_fn(self, module, input, output):
        self.features = output

    def remove(self):
        self.hook.remove()


@case(
    CASES,
    family="e",
    source="https://github.com/skshbjj/Lung-Diseases-detection-using-densenet-121-with-website-using-flask (layers.py)",
    culprit=("features.3", "SaveFeature", "hook_fn"),
    note="bound-method hook keeps the last output (with graph) in self.features",
    bites=_keeps_graph("e3_savefeature_bound_method", lambda m: m._blind_sf[0].features),
)
def e3_savefeature_bound_method():
    model = tiny_cnn()
    model._blind_sf = [SaveFeature(model.features[3])]
    return model, images(), {}


# --- e4: closure list growing every batch -----------------------------------------------------------


@case(
    CASES,
    family="e",
    source="https://github.com/jacobgil/pytorch-grad-cam/issues/71 (activations accumulate in device memory)",
    culprit=("classifier.0", "hook_fn"),
    note="activations.append(o) in a closure: one graph kept per batch",
    bites=_keeps_graph("e4_closure_list_append", lambda m: m._blind_store),
)
def e4_closure_list_append():
    model = tiny_cnn()
    activations = []

    def hook_fn(m, i, o):
        activations.append(o)

    model.classifier[0].register_forward_hook(hook_fn)
    model._blind_store = activations
    return model, images(), {}


# --- e5: module-level global list ----------------------------------------------------------------------

FEATS: list = []


def collect_feats(module, inp, out):
    FEATS.append(out)


@case(
    CASES,
    family="e",
    source="pattern seen in a code-corpus feature-hook helper (_FEATURE_STORE global dict of lists)",
    culprit=("features.3", "collect_feats"),
    note="FEATS.append(out) into a module-level list: graphs outlive every batch",
    bites=_keeps_graph("e5_global_list", lambda m: FEATS),
    teardown=FEATS.clear,
)
def e5_global_list():
    model = tiny_cnn()
    model.features[3].register_forward_hook(collect_feats)
    return model, images(), {}


# --- e6: the watcher stores inputs (middle layer inputs carry graph) -----------------------------------


class Watcher:
    def __init__(self, model):
        self.activations = {}
        self.modules_to_layers = {}
        for name, m in model.named_modules():
            if isinstance(m, nn.Linear):
                self.modules_to_layers[m] = name
                self.activations[name] = []
                m.register_forward_hook(self.fwd_hook)

    def fwd_hook(self, module, input, output):
        layer = self.modules_to_layers[module]
        self.activations[layer].append(input[0])


@case(
    CASES,
    family="e",
    source="https://github.com/facebookresearch/kill-the-bits/issues/35 (fwd_hook storing input activations)",
    culprit=("fc2", "fc3", "Watcher", "fwd_hook"),
    note="inputs appended without .data/.detach(): fc2's and fc3's inputs carry the graph",
    bites=_keeps_graph("e6_watcher_stores_inputs", lambda m: m._blind_watcher[0].activations),
)
def e6_watcher_stores_inputs():
    model = named_mlp()
    model._blind_watcher = [Watcher(model)]
    return model, torch.randn(8, 10), {}


# --- e7: activation statistics kept as tensors with grad_fn --------------------------------------------


class ActivationStats:
    def __init__(self, modules):
        self.stats = {m: [] for m in modules}
        self.handles = [m.register_forward_hook(self.hook) for m in modules]

    def hook(self, m, i, o):
        self.stats[m].append((o.mean(), o.std()))


@case(
    CASES,
    family="e",
    source="https://github.com/fastai/fastai/issues/2385 (ActivationStats-style HookCallback)",
    culprit=("features.0", "features.3", "ActivationStats"),
    note="mean/std appended as 0-d tensors with grad_fn: each keeps its whole batch graph",
    bites=_keeps_graph("e7_stats_scalars_keep_graph", lambda m: list(m._blind_stats[0].stats.values())),
)
def e7_stats_scalars_keep_graph():
    model = tiny_cnn()
    model._blind_stats = [ActivationStats([model.features[0], model.features[3]])]
    return model, images(), {}


# --- e8: Llama hidden states cached without detach while training --------------------------------------


@case(
    CASES,
    family="e",
    source="https://github.com/EleutherAI/sparsify/issues/11 (collecting residual activations for SAE training)",
    culprit=("model.layers.0", "model.layers.1", "cache_hidden"),
    note="decoder-layer hook appends the hidden states (with graph) to a list during training",
    bites=_keeps_graph("e8_llama_hidden_cache_train", lambda m: m._blind_store),
)
def e8_llama_hidden_cache_train():
    model = hf_llama()
    cache = []

    def cache_hidden(module, args, output):
        cache.append(hidden_of(output))

    for layer in model.model.layers:
        layer.register_forward_hook(cache_hidden)
    model._blind_store = cache
    return model, token_ids(), {}


# --- e9: clone() mistaken for detach() -------------------------------------------------------------


@case(
    CASES,
    family="e",
    source="https://github.com/jacobgil/pytorch-grad-cam/pull/575 (activations retained the autograd graph)",
    culprit=("classifier.1", "keep_copy"),
    note="self.feats = output.clone(): a copy, but still in the graph",
    bites=_keeps_graph("e9_clone_is_not_detach", lambda m: m._blind_store),
)
def e9_clone_is_not_detach():
    model = tiny_cnn()
    store = {}

    def keep_copy(module, inp, output):
        store["relu"] = output.clone()

    model.classifier[1].register_forward_hook(keep_copy)
    model._blind_store = store
    return model, images(), {}


# --- e10: .cpu() mistaken for detach() -------------------------------------------------------------


class ActivationsAndGradients:
    def __init__(self, model, target_layer):
        self.activations = []
        target_layer.register_forward_hook(self.save_activation)

    def save_activation(self, module, input, output):
        self.activations.append(output.cpu())


@case(
    CASES,
    family="e",
    source="https://github.com/jacobgil/pytorch-grad-cam/issues/71 (activations kept on device; .cpu() suggested)",
    culprit=("features.4", "ActivationsAndGradients", "save_activation"),
    note="output.cpu() keeps requires_grad and grad_fn (and on CPU is the same tensor)",
    bites=_keeps_graph("e10_cpu_is_not_detach", lambda m: m._blind_ag[0].activations),
)
def e10_cpu_is_not_detach():
    model = tiny_cnn()
    model._blind_ag = [ActivationsAndGradients(model, model.features[4])]
    return model, images(), {}


# --- e11: pre-hook saving the input tuple on the module -------------------------------------------------


def save_input(module, input):
    module.saved_input = input


@case(
    CASES,
    family="e",
    source="https://github.com/jmschrei/tangermeme/pull/54 (inputs saved on the module for the backward rule)",
    culprit=("fc2", "fc3", "save_input"),
    note="forward pre-hook stores the args tuple on the module: the tensors inside carry the graph",
    bites=_keeps_graph("e11_prehook_saves_input_tuple", lambda m: m.fc3.saved_input),
)
def e11_prehook_saves_input_tuple():
    model = named_mlp()
    for layer in (model.fc2, model.fc3):
        layer.saved_input = None
        layer.register_forward_pre_hook(save_input)
    return model, torch.randn(8, 10), {}


# --- clean: detached storage ------------------------------------------------------------------------


@case(
    CASES,
    family="e",
    source="https://github.com/Iversy/Deep (lab5/grad.py: self.activations = output.detach())",
    culprit=None,
    note="Grad-CAM storing output.detach() and grad_output[0].detach() with a full backward hook",
)
def e_clean_gradcam_detached():
    model = tiny_cnn()

    class GradCAM:
        def __init__(self, model, target_layer):
            self.gradients = None
            self.activations = None
            target_layer.register_forward_hook(self.save_activations)
            target_layer.register_full_backward_hook(self.save_gradients)

        def save_activations(self, module, input, output):
            self.activations = output.detach()

        def save_gradients(self, module, grad_input, grad_output):
            self.gradients = grad_output[0].detach()

    model._blind_cam = [GradCAM(model, model.features[4])]
    return model, images(), {}


@case(
    CASES,
    family="e",
    source="https://github.com/EleutherAI/sparsify/issues/11; hidden states collected with .detach()",
    culprit=None,
    note="Llama decoder-layer cache with detach() during training",
)
def e_clean_llama_cache_detached():
    model = hf_llama()
    cache = []

    def cache_hidden(module, args, output):
        cache.append(hidden_of(output).detach())

    for layer in model.model.layers:
        layer.register_forward_hook(cache_hidden)
    return model, token_ids(), {}
