"""What every public entry point shares to keep its promise: refuse a bad argument at once, leave the model as found.

- :func:`check_int` / :func:`check_number`: an argument that must be a whole number / a number, refused with a
  message that names the argument and the fix, in the learner's language (``1.7``, ``"2"`` and ``True`` are never
  silently turned into ``1``, ``2`` and ``1``);
- :func:`run_mode`: run a model in train or eval mode, then put **every** submodule's own mode back.

A bottom layer: it imports nothing from hookviz but :mod:`hookviz.i18n`, so that the helpers of every layer (the
search, the tiny Llama helpers, the releases table, the widgets) use the same checks.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from hookviz.i18n import join_notes

__all__ = ["check_int", "check_number", "run_mode"]


def _with_fix(message: str, fix: str) -> str:
    """``message`` and its ``fix`` in the learner's language, joined with the language's separator."""
    return join_notes([message, fix] if fix else [message])


def check_int(value: Any, name: str, *, minimum: int | None = None, maximum: int | None = None, fix: str = "") -> int:
    """``value`` as an ``int`` when it is a whole number (an ``int`` or a numpy/torch integer), else a clear error.

    ``1.7``, ``"2"`` and ``True`` are refused rather than silently turned into ``1``, ``2`` and ``1``;
    with ``minimum`` (``maximum``), a smaller (larger) number is refused too. The message names the argument and
    the fix.
    """
    if isinstance(value, Tensor) and value.numel() == 1 and not value.is_floating_point() and not value.is_complex():
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(_with_fix(f"{name} must be a whole number (an int), not {value!r}", fix))
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(_with_fix(f"{name} must be at least {minimum}, not {value}", fix))
    if maximum is not None and value > maximum:
        raise ValueError(_with_fix(f"{name} must be at most {maximum:,}, not {value:,}", fix))
    return value


def check_number(value: Any, name: str, *, minimum: float | None = None, above: float | None = None,
                 maximum: float | None = None, fix: str = "") -> float:
    """``value`` as a ``float`` when it is a finite real number (an int, a float, a numpy/torch scalar), else a
    clear error; with ``minimum`` a smaller number is refused, with ``above`` that number and smaller ones.
    ``"0.5"`` and ``True`` are refused."""
    if isinstance(value, Tensor) and value.numel() == 1 and not value.is_complex():
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(_with_fix(f"{name} must be a number, not {value!r}", fix))
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(_with_fix(f"{name} must be a finite number, not {value!r}", fix))
    if minimum is not None and value < minimum:
        raise ValueError(_with_fix(f"{name} must be at least {minimum:g}, not {value:g}", fix))
    if above is not None and value <= above:
        raise ValueError(_with_fix(f"{name} must be above {above:g}, not {value:g}", fix))
    if maximum is not None and value > maximum:
        raise ValueError(_with_fix(f"{name} must be at most {maximum:g}, not {value:g}", fix))
    return value


@contextlib.contextmanager
def run_mode(model: nn.Module, training: bool) -> Iterator[None]:
    """Run ``model`` in train or eval mode, then put **every** submodule's own mode back.

    ``model.train(was_training)`` would not do: a model that is training with some parts frozen in
    eval mode (BatchNorm layers of a fine-tuned backbone, say) would come back with those parts
    training. cuDNN's RNN kernels refuse backward in eval mode, so while an ``nn.RNNBase`` (LSTM, GRU,
    RNN) runs on a GPU in eval mode here, cuDNN is switched off (PyTorch's own kernels are used).
    """
    modes = [(module, module.training) for module in model.modules()]
    recurrent_on_gpu = not training and any(
        isinstance(m, nn.RNNBase) and any(p.is_cuda for p in m.parameters()) for m, _ in modes
    )
    cudnn = torch.backends.cudnn.enabled
    model.train(training)
    try:
        if recurrent_on_gpu:
            torch.backends.cudnn.enabled = False  # only this flag: benchmark/deterministic stay as they are
        yield
    finally:
        torch.backends.cudnn.enabled = cudnn
        for module, mode in modes:
            module.training = mode
