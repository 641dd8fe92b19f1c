"""Notebook 15's checkers and its two-process FSDP2 probe (``hookviz.fsdp_demo``).

The checkers must accept the solutions and refuse the mistakes the notebook warns about: a kept view,
an unbounded buffer, a logger that makes a compiled model recompile on every step.
"""

from __future__ import annotations

from collections import deque

import pytest
import torch
from torch import nn

from hookviz.exercises import ExerciseNotSolved
from hookviz.exercises.nb15 import check_norm_logger_compiles_once, check_recent_rows
from hookviz.fsdp_demo import FSDP_PROBE_PLACES, local_gradients, probe_batch, run_fsdp_hook_probe

# --- Exercise 1: recent rows ---------------------------------------------------------------------------


def _rows_hook(keep, make_buffer=lambda n: deque(maxlen=n)):
    def attach(layer, maxlen):
        buffer = make_buffer(maxlen)
        return layer.register_forward_hook(lambda mod, args, out: buffer.append(keep(out))), buffer

    return attach


def test_recent_rows_accepts_a_deque_of_clones(capsys):
    check_recent_rows(_rows_hook(lambda out: out[0].detach().clone()))
    assert capsys.readouterr().out.startswith("✓")


def test_recent_rows_refuses_a_view():
    with pytest.raises(ExerciseNotSolved, match="view"):
        check_recent_rows(_rows_hook(lambda out: out[0].detach()))


def test_recent_rows_refuses_an_unbounded_list():
    with pytest.raises(ExerciseNotSolved, match="holds 6 tensors"):
        check_recent_rows(_rows_hook(lambda out: out[0].detach().clone(), make_buffer=lambda n: []))


def test_recent_rows_refuses_the_whole_output():
    with pytest.raises(ExerciseNotSolved, match="shape"):
        check_recent_rows(_rows_hook(lambda out: out.detach().clone()))


def test_recent_rows_stub_and_missing_handle():
    def stub(layer, maxlen):
        raise NotImplementedError

    with pytest.raises(ExerciseNotSolved, match="not solved yet"):
        check_recent_rows(stub)
    handles = []

    def buffer_only(layer, maxlen):
        buffer = deque(maxlen=maxlen)
        handles.append(layer.register_forward_hook(lambda mod, args, out: buffer.append(out[0].detach().clone())))
        return buffer

    with pytest.raises(ExerciseNotSolved, match="pair"):
        check_recent_rows(buffer_only)


# --- Exercise 2: a logger that compiles once -----------------------------------------------------------


def test_norm_logger_accepts_a_disabled_hook(capsys):
    def make(log):
        @torch.compiler.disable
        def hook(module, args, out):
            log.append(out.detach().norm())

        return hook

    check_norm_logger_compiles_once(make)
    assert capsys.readouterr().out.startswith("✓")


def test_norm_logger_refuses_a_plain_list_append():
    def make(log):
        return lambda module, args, out: log.append(out.detach().norm())

    with pytest.raises(ExerciseNotSolved, match="graphs in 10 steps"):
        check_norm_logger_compiles_once(make)


def test_norm_logger_refuses_wrong_values():
    def make(log):
        @torch.compiler.disable
        def hook(module, args, out):
            log.append(out.detach().abs().sum())

        return hook

    with pytest.raises(ExerciseNotSolved, match="norms"):
        check_norm_logger_compiles_once(make)


# --- the FSDP2 probe -------------------------------------------------------------------------------------


def test_probe_refuses_a_world_size_that_does_not_divide():
    with pytest.raises(ValueError, match="world_size=4"):
        run_fsdp_hook_probe(world_size=4)
    with pytest.raises(ValueError, match="batch_size=7"):
        run_fsdp_hook_probe(world_size=2, batch_size=7)


def test_local_gradients_are_each_ranks_own():
    grads = local_gradients(world_size=2, batch_size=8)
    assert len(grads) == 2 and all(tuple(g.shape) == (6, 4) for g in grads)
    assert not torch.allclose(grads[0], grads[1])
    assert torch.equal(probe_batch(8), probe_batch(8))


@pytest.mark.slow
def test_probe_sees_sharded_averaged_gradients():
    # Autograd has run in this process first, as in the notebook (forked workers would then fail on 2.14).
    torch.compile(nn.Linear(4, 2), backend="aot_eager")(torch.randn(3, 4)).sum().backward()
    torch.compiler.reset()
    probe = run_fsdp_hook_probe(world_size=2, batch_size=8, timeout_s=180)
    average = sum(local_gradients(2, 8)) / 2
    assert [rank["rank"] for rank in probe] == [0, 1]
    for rank in probe:
        calls = {place: len(rank["seen"][place]) for place in FSDP_PROBE_PLACES}
        assert calls == {"activation_hook": 1, "tensor_hook": 0, "post_accumulate_grad_hook": 1, "step_pre_hook": 1}
        rows = slice(3 * rank["rank"], 3 * rank["rank"] + 3)
        seen = rank["seen"]["post_accumulate_grad_hook"][0]
        assert seen["type"] == "DTensor" and seen["placements"] == ["S(0)"] and seen["shape"] == (6, 4)
        assert torch.allclose(seen["local"], average[rows], atol=1e-6)
        assert torch.allclose(rank["full_grad"], average, atol=1e-6)
