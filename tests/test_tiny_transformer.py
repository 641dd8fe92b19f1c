"""The bundled tiny transformer: its weights load, are small, solve the reversal task; its data is fixed."""

import io
from importlib import resources

import pytest
import torch
from torch import nn

import hookviz
from hookviz.transformer import (
    SEQ_LEN,
    TINY_WEIGHTS_FILE,
    VOCAB_SIZE,
    reverse_targets,
    tiny_accuracy,
    train_tiny_transformer,
)


def test_weights_file_is_small_and_loads_with_weights_only():
    raw = resources.files("hookviz").joinpath(TINY_WEIGHTS_FILE).read_bytes()
    assert len(raw) < 1_000_000
    state = torch.load(io.BytesIO(raw), weights_only=True)
    assert set(state) == set(hookviz.TinyTransformer().state_dict())


def test_loaded_model_is_in_eval_mode_and_built_from_pytorch_layers():
    model = hookviz.load_tiny_transformer()
    assert not model.training
    layers = [m for m in model.modules() if isinstance(m, nn.TransformerEncoderLayer)]
    assert len(layers) == 2
    assert all(layer.self_attn.batch_first and layer.self_attn.num_heads == 2 for layer in layers)
    tokens, _ = hookviz.make_tiny_batch(3, seed=5)
    with torch.no_grad():
        assert model(tokens).shape == (3, SEQ_LEN, VOCAB_SIZE)


def test_loaded_model_reverses_held_out_rows():
    model = hookviz.load_tiny_transformer()
    tokens, targets = hookviz.make_tiny_batch(500, seed=1)
    assert tiny_accuracy(model, tokens, targets) > 0.98
    assert not model.training


def test_accuracy_restores_training_mode():
    model = hookviz.load_tiny_transformer().train()
    tokens, targets = hookviz.make_tiny_batch(4, seed=2)
    tiny_accuracy(model, tokens, targets)
    assert model.training


def test_data_is_deterministic_and_leaves_the_global_random_state_alone():
    state = torch.get_rng_state()
    a_tokens, a_targets = hookviz.make_tiny_batch(16, seed=3)
    assert torch.equal(torch.get_rng_state(), state)
    b_tokens, b_targets = hookviz.make_tiny_batch(16, seed=3)
    c_tokens, _ = hookviz.make_tiny_batch(16, seed=4)
    assert torch.equal(a_tokens, b_tokens) and torch.equal(a_targets, b_targets)
    assert not torch.equal(a_tokens, c_tokens)
    assert a_tokens.dtype == torch.int64 and a_tokens.shape == (16, SEQ_LEN)
    assert int(a_tokens.min()) >= 0 and int(a_tokens.max()) < VOCAB_SIZE
    assert torch.equal(a_targets, reverse_targets(a_tokens))
    assert torch.equal(a_targets[:, 0], a_tokens[:, -1])


def test_first_layer_has_an_anti_diagonal_head():
    """The property notebook 12 relies on: a layer-0 head moves token L-1-i to position i."""
    model = hookviz.load_tiny_transformer()
    attn = model.encoder.layers[0].self_attn
    tokens, _ = hookviz.make_tiny_batch(64, seed=6)
    x = model.embed(tokens) + model.pos_embed(torch.arange(SEQ_LEN))
    with torch.no_grad():
        _, weights = attn(x, x, x, need_weights=True, average_attn_weights=False)
    mirror = torch.arange(SEQ_LEN).flip(0)
    assert (weights[:, 0].argmax(-1) == mirror).float().mean() > 0.95


@pytest.mark.slow
def test_training_is_deterministic_and_learns_quickly():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        first = train_tiny_transformer(steps=60)
        second = train_tiny_transformer(steps=60)
    finally:
        torch.set_num_threads(threads)
    for key, value in first.state_dict().items():
        assert torch.equal(value, second.state_dict()[key]), key
    tokens, targets = hookviz.make_tiny_batch(200, seed=1)
    assert tiny_accuracy(first, tokens, targets) > 0.2  # chance is 0.1
