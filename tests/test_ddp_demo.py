"""The two-process DDP demo of notebook 09 (``hookviz.ddp_demo``).

The demo must work where notebook 09 calls it: in a process where autograd has already run, including
a ``torch.compile``'d backward (with torch 2.14, forked workers then fail with "Unable to handle
autograd's threading in combination with fork-based multiprocessing"), and more than once per process.
"""

from __future__ import annotations

import sys

import pytest
import torch
from torch import nn

from hookviz import DigitsCNN
from hookviz.ddp_demo import HOOKS, default_start_method, run_ddp_demo, shard_gradients


def _run_autograd_in_this_process() -> None:
    """What notebook 09 does before its DDP cells: plain and compiled backward passes."""
    layer = nn.Linear(4, 2)
    layer(torch.randn(3, 4)).sum().backward()
    torch.compile(nn.Linear(4, 2), backend="aot_eager")(torch.randn(3, 4)).sum().backward()
    torch.compiler.reset()
    assert layer.weight.grad is not None


def _check_one_run(results: list[dict], reference: dict[str, torch.Tensor]) -> None:
    assert len(results) == 2
    n_values = sum(p.numel() for p in DigitsCNN().parameters())
    for rank, result in enumerate(results):
        assert result["backend"] == "gloo" and result["world_size"] == 2, f"rank {rank}"
        assert set(HOOKS) <= set(result)
    # The two ranks trained on different halves of the batch.
    assert results[0]["none"]["local_loss"] != results[1]["none"]["local_loss"]
    for hook in HOOKS:
        rank0, rank1 = results[0][hook]["all_ranks"]
        assert set(rank0["grads"]) == set(reference)
        for name in reference:
            # DDP broadcast rank 0's weights, then averaged the gradients: every rank holds the same.
            assert torch.equal(rank0["weights"][name], rank1["weights"][name]), (hook, name)
            assert torch.equal(rank0["grads"][name], rank1["grads"][name]), (hook, name)
        error = max((rank0["grads"][k] - reference[k]).abs().max().item() for k in reference)
        if hook == "fp16":
            assert 1e-6 < error < 1e-2, f"fp16 compression should round the gradients a little, error {error}"
        else:
            assert error < 1e-6, f"{hook}: DDP's gradients differ from the hand-made average by {error}"
    step1, step2 = results[0]["count"]["buckets"]
    assert len(step1) == 1 and len(step2) > 1
    assert sum(b["numel"] for b in step1) == sum(b["numel"] for b in step2) == n_values
    assert results[0]["count"]["buckets"] == results[1]["count"]["buckets"]
    assert results[0]["none"]["buckets"] == [[], []]  # only the counting hook logs buckets


@pytest.mark.slow
def test_demo_runs_twice_after_backward_in_the_parent():
    _run_autograd_in_this_process()
    reference = shard_gradients(world_size=2, batch_size=64)
    first = run_ddp_demo(world_size=2, batch_size=64, bucket_cap_mb=0.001)
    _check_one_run(first, reference)
    torch.randn(2, requires_grad=True).pow(2).sum().backward()  # more autograd between the two runs
    second = run_ddp_demo(world_size=2, batch_size=64, bucket_cap_mb=0.001)
    _check_one_run(second, reference)
    for name in reference:  # the same seeds and data give the same gradients on every run
        assert torch.equal(
            first[0]["none"]["all_ranks"][0]["grads"][name], second[0]["none"]["all_ranks"][0]["grads"][name]
        )


def test_default_start_method_is_never_fork():
    method = default_start_method()
    assert method in ("forkserver", "spawn")
    if sys.platform.startswith("linux"):
        assert method == "forkserver"


def test_fork_is_refused_with_a_clear_error():
    with pytest.raises(ValueError, match="forkserver' or 'spawn'"):
        run_ddp_demo(start_method="fork")


# --- notebook 13: what parameter hooks see under DDP ---------------------------------------------------


def _check_probe(probe: list[dict], world_size: int) -> None:
    from hookviz.ddp_demo import PROBE_PLACES

    assert [rank["rank"] for rank in probe] == list(range(world_size))
    average = sum(rank["local_grad"] for rank in probe) / world_size
    for rank in probe:
        local = rank["local_grad"]
        assert not torch.allclose(local, average, atol=1e-3), "each rank must see other data"
        for mode in ("no_sync", "synced"):
            seen = rank["steps"][mode]
            assert set(seen) == set(PROBE_PLACES)
            for place in ("tensor_hook", "post_accumulate_grad_hook"):
                assert len(seen[place]) == 1 and torch.allclose(seen[place][0], local, atol=1e-6), (mode, place)
            after = seen["after_backward"][0]
            assert torch.allclose(after, local if mode == "no_sync" else average, atol=1e-6), mode
        assert rank["steps"]["no_sync"]["step_pre_hook"] == []
        assert torch.allclose(rank["steps"]["synced"]["step_pre_hook"][0], average, atol=1e-6)


@pytest.mark.slow
def test_hook_probe_shows_local_gradients_in_hooks_twice_in_a_row():
    from hookviz.ddp_demo import run_ddp_hook_probe

    _run_autograd_in_this_process()
    first = run_ddp_hook_probe(world_size=2, batch_size=64)
    _check_probe(first, 2)
    second = run_ddp_hook_probe(world_size=2, batch_size=64)
    _check_probe(second, 2)
    assert torch.equal(first[0]["local_grad"], second[0]["local_grad"])


@pytest.mark.slow
def test_hook_probe_with_three_ranks():
    from hookviz.ddp_demo import run_ddp_hook_probe

    _check_probe(run_ddp_hook_probe(world_size=3, batch_size=60), 3)


@pytest.mark.slow
def test_hook_probe_timeout_kills_the_workers_and_the_next_run_works():
    import multiprocessing

    from hookviz.ddp_demo import run_ddp_hook_probe

    with pytest.raises(RuntimeError, match="did not finish within"):
        run_ddp_hook_probe(world_size=2, timeout_s=0.05)
    assert not multiprocessing.active_children()
    _check_probe(run_ddp_hook_probe(world_size=2), 2)


def test_hook_probe_refuses_fork():
    from hookviz.ddp_demo import run_ddp_hook_probe

    with pytest.raises(ValueError, match="forkserver' or 'spawn'"):
        run_ddp_hook_probe(start_method="fork")
