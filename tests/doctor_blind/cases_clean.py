"""Clean models from realistic code: no finding of severity "error" or "warning" is acceptable on these."""

from __future__ import annotations

import torch
import torch.nn.functional as F
import torch.utils.checkpoint
from torch import nn

from . import (
    Case,
    case,
    hf_hidden_states_after,
    hf_llama,
    hf_qwen2,
    hidden_of,
    images,
    mlp,
    named_mlp,
    tiny_cnn,
    token_ids,
)

CASES: list[Case] = []


def _clean(source: str, note: str, context: str = "train", after=None):
    return case(CASES, family="clean", source=source, culprit=None, context=context, note=note, after=after)


def _hook_still_fires(attr: str = "_blind_calls"):
    """after: the user's own recording hook still fires on a later plain call."""

    def after(model, inputs) -> None:
        calls = getattr(model, attr)
        n = len(calls)
        with torch.no_grad():
            model(inputs)
        assert len(calls) > n, "the user's hook no longer fires after the diagnosis"

    return after


# --- plain models --------------------------------------------------------------------------------------


@_clean("https://pytorch.org/tutorials/beginner/basics/buildmodel_tutorial.html (NeuralNetwork MLP)", "MLP, no hooks")
def clean_mlp_no_hooks():
    return mlp(), torch.randn(16, 10), {}


@_clean(
    "https://github.com/mapbox/robosat (robosat/hooks.py FeatureHook) with detach",
    "CNN with SaveFeatures-style recording hooks on two convs, output.detach()",
    after=_hook_still_fires(),
)
def clean_cnn_recording_hooks():
    model = tiny_cnn()
    calls = []

    class SaveFeatures:
        features = None

        def __init__(self, m):
            self.hook = m.register_forward_hook(self.hook_fn)

        def hook_fn(self, module, input, output):
            self.features = output.detach()
            calls.append(1)

        def remove(self):
            self.hook.remove()

    model._blind_sf = [SaveFeatures(model.features[0]), SaveFeatures(model.features[3])]
    model._blind_calls = calls
    return model, images(), {}


class BasicBlock(nn.Module):
    """torchvision-style BasicBlock: ONE ReLU module used twice in forward."""

    def __init__(self, c=8):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class TinyResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.layer1 = nn.Sequential(BasicBlock(), BasicBlock())
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        x = self.layer1(F.relu(self.stem(x)))
        return self.fc(x.mean((2, 3)))


@_clean(
    "https://github.com/pytorch/vision (torchvision/models/resnet.py BasicBlock, self.relu used twice)",
    "ResNet blocks with a shared ReLU, no hooks",
)
def clean_resnet_shared_relu_no_hooks():
    return TinyResNet(), images(), {}


@_clean(
    "https://github.com/jacobgil/pytorch-grad-cam (target_layers = [model.layer4[-1]]); activations detached",
    "ResNet blocks with a shared ReLU; recording hooks on the convs only, validation loop",
    context="eval_no_grad",
)
def clean_resnet_shared_relu_val_hooks():
    model = TinyResNet()
    acts = {}
    for name, m in model.named_modules():
        if isinstance(m, nn.Conv2d):
            m.register_forward_hook(lambda mod, i, o, name=name: acts.__setitem__(name, o.detach()))
    return model, images(), {}


class LSTMTagger(nn.Module):
    def __init__(self, vocab=50, emb=16, hidden=24, tags=5):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, batch_first=True)
        self.hidden2tag = nn.Linear(hidden, tags)

    def forward(self, sentence):
        lstm_out, _ = self.lstm(self.word_embeddings(sentence))
        return F.log_softmax(self.hidden2tag(lstm_out), dim=-1)


@_clean(
    "https://pytorch.org/tutorials/beginner/nlp/sequence_models_tutorial.html (LSTMTagger) + recording hook",
    "LSTM tagger; forward hook records output[0].detach() and returns nothing",
    after=_hook_still_fires(),
)
def clean_lstm_tagger_recording_hook():
    model = LSTMTagger()
    calls = []

    def save_lstm(module, inp, output):
        seq, (h, c) = output
        calls.append(seq.detach())

    model.lstm.register_forward_hook(save_lstm)
    model._blind_calls = calls
    return model, torch.randint(0, 50, (4, 7)), {}


class GRUTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(50, 16)
        self.gru = nn.GRU(16, 24, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(48, 5)

    def forward(self, tokens):
        out, _ = self.gru(self.embedding(tokens))
        return self.fc(out)


@_clean(
    "https://github.com/pytorch/pytorch/issues/54405 (register_full_backward_hook for logging), returning None",
    "bidirectional GRU tagger; full backward hook on the output Linear logs detached grad norms, returns None",
)
def clean_gru_full_backward_logger():
    model = GRUTagger()
    grad_norms = []

    def log_grad(module, grad_input, grad_output):
        grad_norms.append(grad_output[0].detach().norm())

    model.fc.register_full_backward_hook(log_grad)
    return model, torch.randint(0, 50, (4, 7)), {}


# --- Hugging Face models --------------------------------------------------------------------------------


@_clean(
    "https://github.com/EleutherAI/sparsify/issues/11 (output_hidden_states=True to read activations)",
    "tiny LlamaForCausalLM, training step with output_hidden_states=True",
    after=hf_hidden_states_after("output_hidden_states"),
)
def clean_llama_hidden_states_train():
    return hf_llama(), token_ids(), {"kwargs": {"output_hidden_states": True}}


@_clean(
    "https://github.com/huggingface/transformers/pull/39120 (outputs collected by hooks for new llamas)",
    "tiny Llama (eager attention) in a validation loop with output_attentions=True",
    context="eval_no_grad",
    after=hf_hidden_states_after("output_attentions"),
)
def clean_llama_attentions_eval_no_grad():
    return hf_llama(attn_implementation="eager"), token_ids(), {"kwargs": {"output_attentions": True}}


@_clean(
    "https://github.com/sagnikc395/refusal-circuit-dpo/issues/20 (Qwen2 model.layers[i] residual stream)",
    "tiny Qwen2ForCausalLM in eval mode (grad on) with output_hidden_states=True and output_attentions=True",
    context="eval",
    after=hf_hidden_states_after("output_hidden_states"),
)
def clean_qwen2_hidden_and_attn_eval():
    model = hf_qwen2(attn_implementation="eager")
    return model, token_ids(), {"kwargs": {"output_hidden_states": True, "output_attentions": True}}


@_clean(
    "https://github.com/TransformerLensOrg/TransformerLens/issues/1160 (hooks on GPT-2 blocks)",
    "tiny GPT2LMHeadModel; hooks on every attention record output[0].detach()",
    after=_hook_still_fires(),
)
def clean_gpt2_attention_recording():
    import transformers

    config = transformers.GPT2Config(
        vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0
    )
    model = transformers.GPT2LMHeadModel(config)
    calls = []

    def save_attn(module, args, output):
        calls.append(hidden_of(output).detach())

    for block in model.transformer.h:
        block.attn.register_forward_hook(save_attn)
    model._blind_calls = calls
    return model, token_ids(), {}


@_clean(
    "https://github.com/speechbrain/speechbrain/pull/1751 (retrieving encoder hidden states)",
    "tiny BertForSequenceClassification training step (dropout on) with output_hidden_states=True",
    after=hf_hidden_states_after("output_hidden_states"),
)
def clean_bert_seqcls_hidden_states_train():
    import transformers

    config = transformers.BertConfig(
        vocab_size=64,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=32,
        num_labels=3,
    )
    return transformers.BertForSequenceClassification(config), token_ids(), {"kwargs": {"output_hidden_states": True}}


@_clean(
    "https://github.com/IBM/vLLM-Hook/pull/35 (reference steering hook returning the changed residual)",
    "Llama steering hook that RETURNS the modified hidden states (generation, no grad)",
    context="eval_no_grad",
)
def clean_llama_steering_returns():
    model = hf_llama()
    vector = torch.randn(32)

    def steer(module, args, output):
        residual = output[0] if isinstance(output, tuple) else output
        changed = residual.clone()
        changed[:, -1:, :] += 4.0 * vector
        return (changed, *output[1:]) if isinstance(output, tuple) else changed

    model.model.layers[1].register_forward_hook(steer)
    return model, token_ids(), {}


@_clean(
    "https://github.com/huggingface/transformers (tie_word_embeddings); hidden states requested",
    "tiny Llama with tied input/output embeddings and output_hidden_states=True",
    after=hf_hidden_states_after("output_hidden_states"),
)
def clean_llama_tied_embeddings():
    model = hf_llama(tie_word_embeddings=True)
    assert model.lm_head.weight is model.model.embed_tokens.weight
    return model, token_ids(), {"kwargs": {"output_hidden_states": True}}


# --- tied weights, checkpointing, norms ----------------------------------------------------------------


class TiedLM(nn.Module):
    def __init__(self, vocab=40, d=16):
        super().__init__()
        self.encoder = nn.Embedding(vocab, d)
        self.rnn = nn.GRU(d, d, batch_first=True)
        self.decoder = nn.Linear(d, vocab)
        self.decoder.weight = self.encoder.weight

    def forward(self, tokens):
        h, _ = self.rnn(self.encoder(tokens))
        return self.decoder(h)


@_clean(
    "https://github.com/pytorch/examples (word_language_model: tie_weights, decoder.weight = encoder.weight)",
    "word-language-model style RNN with tied weights, gradient-clipping hook that returns its result",
)
def clean_tied_weights_rnn_lm():
    model = TiedLM()

    def clip_grad(grad):
        return grad.clamp(-0.5, 0.5)

    model.encoder.weight.register_hook(clip_grad)
    return model, torch.randint(0, 40, (4, 9)), {}


class CheckpointedMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(16, 16), nn.GELU()) for _ in range(3)])
        self.head = nn.Linear(16, 2)

    def forward(self, x):
        for block in self.blocks:
            x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
        return self.head(x)


@_clean(
    "https://pytorch.org/docs/stable/checkpoint.html (use_reentrant=False) with a name-keyed recording hook",
    "activation checkpointing; forward hooks overwrite acts[name] with detached outputs (recompute-safe)",
)
def clean_checkpoint_recording_hook():
    model = CheckpointedMLP()
    acts = {}

    def get_activation(name):
        def hook(module, inp, out):
            acts[name] = out.detach()

        return hook

    for i, block in enumerate(model.blocks):
        block.register_forward_hook(get_activation(f"blocks.{i}"))
    return model, torch.randn(8, 16), {}


@_clean(
    "https://github.com/pytorch/pytorch/issues/1110 (hooks returning new grads); gradient clipping per parameter",
    "every parameter gets p.register_hook(lambda g: g.clamp(-1, 1)): returns the clipped grad",
)
def clean_grad_clip_hooks_return():
    model = named_mlp()
    for p in model.parameters():
        p.register_hook(lambda g: g.clamp(-1.0, 1.0))
    return model, torch.randn(8, 10), {}


@_clean(
    "https://github.com/pytorch/pytorch/pull/22285 (forward_pre_hook returning (relu(input[0]),))",
    "forward pre-hook standardising the input and returning a 1-tuple",
)
def clean_prehook_returns_args():
    model = tiny_cnn()

    def normalize_input(module, inp):
        x = inp[0]
        return ((x - x.mean(dim=1, keepdim=True)) / (x.std(dim=1, keepdim=True) + 1e-5),)

    model.classifier.register_forward_pre_hook(normalize_input)
    return model, images(), {}


@_clean(
    "https://github.com/facebookresearch/kill-the-bits/issues/19 (handles stored and removed after use)",
    "hooks registered, used for one batch, removed with their handles before the checked run",
)
def clean_hooks_removed_with_handles():
    model = tiny_cnn()
    feats = {}
    handles = [
        m.register_forward_hook(lambda mod, i, o, n=n: feats.__setitem__(n, o.detach()))
        for n, m in model.named_modules()
        if isinstance(m, nn.Conv2d)
    ]
    with torch.no_grad():
        model(images(2))
    for h in handles:
        h.remove()
    return model, images(), {}


class BNDropNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.drop = nn.Dropout(0.3)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x))).mean((2, 3))
        return self.fc(self.drop(x))


@_clean("https://pytorch.org/tutorials (BatchNorm + Dropout classifier)", "BatchNorm/Dropout model, training step")
def clean_bn_dropout_train():
    return BNDropNet(), images(8), {}


@_clean(
    "https://pytorch.org/tutorials (BatchNorm + Dropout classifier)",
    "BatchNorm/Dropout model in eval (grad on)",
    context="eval",
)
def clean_bn_dropout_eval():
    return BNDropNet(), images(8), {}


@_clean(
    "https://github.com/pdoyle5000/simple_net (feature vectors hooked in evaluation)",
    "BatchNorm/Dropout model in a validation loop with a detached recording hook on the BatchNorm",
    context="eval_no_grad",
    after=_hook_still_fires(),
)
def clean_bn_dropout_eval_no_grad_hook():
    model = BNDropNet()
    calls = []
    model.bn.register_forward_hook(lambda m, i, o: calls.append(o.detach().mean((0, 2, 3))))
    model._blind_calls = calls
    return model, images(8), {}


class SharedHeadNet(nn.Module):
    """A projection head applied to two views (SimCLR-style): one module called twice."""

    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(10, 16), nn.ReLU())
        self.projector = nn.Linear(16, 8)

    def forward(self, x):
        v1, v2 = x, x.flip(0)
        return torch.cat([self.projector(self.backbone(v1)), self.projector(self.backbone(v2))], 1)


@_clean(
    "https://github.com/jmschrei/tangermeme/pull/54 (stacks for shared modules): per-call append",
    "modules called twice; the recording hook appends one detached output per call (handles reuse)",
)
def clean_shared_module_hook_appends_per_call():
    model = SharedHeadNet()
    per_call = []
    model.projector.register_forward_hook(lambda m, i, o: per_call.append(o.detach()))
    return model, torch.randn(6, 10), {}


class TinyViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(12, 16)
        layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.encoder(self.embed(x)).mean(1))


@_clean(
    "https://github.com/jacobgil/pytorch-grad-cam/pull/183 (hooks on transformer blocks)",
    "nn.TransformerEncoder; hooks on self_attn record output[0].detach() (tuple handled)",
)
def clean_transformer_encoder_attn_hooks():
    model = TinyViT()
    attn_out = []

    def save_attn(module, inp, output):
        attn_out.append(output[0].detach())

    for layer in model.encoder.layers:
        layer.self_attn.register_forward_hook(save_attn)
    return model, torch.randn(3, 5, 12), {}


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        sn = nn.utils.spectral_norm
        self.main = nn.Sequential(
            sn(nn.Conv2d(3, 8, 4, 2, 1)), nn.LeakyReLU(0.2), sn(nn.Conv2d(8, 16, 4, 2, 1)), nn.LeakyReLU(0.2)
        )
        self.out = sn(nn.Linear(16 * 4 * 4, 1))

    def forward(self, x):
        return self.out(self.main(x).flatten(1))


@_clean(
    "https://github.com/pytorch/pytorch (torch.nn.utils.spectral_norm: a forward pre-hook by PyTorch itself)",
    "SN-GAN discriminator: spectral_norm's own pre-hooks update u/v buffers in training",
)
def clean_spectral_norm_discriminator():
    return Discriminator(), images(), {}


class ParamWNConv(nn.Module):
    def __init__(self):
        super().__init__()
        wn = nn.utils.parametrizations.weight_norm
        self.conv1 = wn(nn.Conv1d(4, 8, 3, padding=1))
        self.conv2 = wn(nn.Conv1d(8, 8, 3, padding=1))
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        x = F.gelu(self.conv2(F.gelu(self.conv1(x))))
        return self.fc(x.mean(-1))


@_clean(
    "https://pytorch.org/docs/stable/generated/torch.nn.utils.parametrizations.weight_norm.html",
    "weight-normalised (parametrized) conv net with a recording hook on conv2",
)
def clean_weight_norm_parametrized():
    model = ParamWNConv()
    feats = []
    model.conv2.register_forward_hook(lambda m, i, o: feats.append(o.detach()))
    return model, torch.randn(4, 4, 20), {}


@_clean(
    "https://github.com/pytorch/pytorch/pull/104278 (always_call=True forward hooks)",
    "a timing/recording forward hook registered with always_call=True",
)
def clean_always_call_hook():
    model = named_mlp()
    seen = []
    model.fc2.register_forward_hook(lambda m, i, o: seen.append(type(o).__name__), always_call=True)
    return model, torch.randn(8, 10), {}


@_clean(
    "https://github.com/milesial/Pytorch-UNet (skip concatenation); recording hooks added on the decoder",
    "small U-Net with concatenated skips; recording hooks on the decoder convs",
)
def clean_unet_skip_hooks():
    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc1 = nn.Conv2d(3, 8, 3, padding=1)
            self.enc2 = nn.Conv2d(8, 16, 3, padding=1)
            self.up = nn.ConvTranspose2d(16, 8, 2, stride=2)
            self.dec1 = nn.Conv2d(16, 8, 3, padding=1)
            self.out = nn.Conv2d(8, 2, 1)

        def forward(self, x):
            e1 = F.relu(self.enc1(x))
            e2 = F.relu(self.enc2(F.max_pool2d(e1, 2)))
            d1 = F.relu(self.dec1(torch.cat([self.up(e2), e1], 1)))
            return self.out(d1)

    model = UNet()
    dec = {}
    for name in ("up", "dec1"):
        getattr(model, name).register_forward_hook(lambda m, i, o, name=name: dec.__setitem__(name, o.detach()))
    return model, images(), {}


@_clean(
    "https://github.com/kazuto1011/grad-cam-pytorch (Grad-CAM with tensor hooks, gradients detached)",
    "Grad-CAM storing activation and registering a tensor hook that stores grad.detach() (training step)",
)
def clean_gradcam_tensor_hook_train():
    model = TinyResNet()
    store = {}

    def forward_hook(module, inp, output):
        store["act"] = output.detach()
        output.register_hook(lambda grad: store.__setitem__("grad", grad.detach()))

    model.layer1[-1].register_forward_hook(forward_hook)
    return model, images(), {}


@_clean(
    "https://github.com/pytorch/pytorch/issues/117265 (full_backward_pre_hook returning tuple(go * 2 ...))",
    "full backward pre-hook returning a correctly shaped tuple of scaled grads",
)
def clean_backward_prehook_returns_tuple():
    model = named_mlp()

    def hook(module, grad_output):
        return tuple(go * 2 for go in grad_output)

    model.fc2.register_full_backward_pre_hook(hook)
    return model, torch.randn(8, 10), {}


@_clean(
    "https://github.com/huggingface/transformers (LlamaForCausalLM default call)",
    "tiny Llama, plain training step, no hooks, no extra kwargs",
)
def clean_llama_plain_train():
    return hf_llama(), token_ids(), {}
