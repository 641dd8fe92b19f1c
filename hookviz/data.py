"""The course's bundled dataset: 1,797 real handwritten digits, 8x8 pixels, shipped in the package.

They are the UCI "Optical Recognition of Handwritten Digits" test images as distributed with
scikit-learn (``sklearn.datasets.load_digits``), stored in ``hookviz/assets/digits.npz`` so that no
cell ever downloads anything.
"""

from __future__ import annotations

from importlib import resources

import numpy as np
import torch
from torch import Tensor

__all__ = ["load_digits", "DIGITS_SPLIT_SEED", "N_TEST"]

DIGITS_SPLIT_SEED = 0
N_TEST = 360  # held-out images (20%)


def _raw() -> tuple[np.ndarray, np.ndarray]:
    with resources.files("hookviz").joinpath("assets/digits.npz").open("rb") as f:
        data = np.load(f)
        return data["images"], data["labels"]


def load_digits(split: str = "train") -> tuple[Tensor, Tensor]:
    """Return ``(images, labels)`` of the bundled digits.

    Args:
        split: ``"train"`` (1,437 images), ``"test"`` (the 360 held-out images) or ``"all"``.

    Returns:
        ``images`` as float32 of shape ``(N, 1, 8, 8)`` scaled to ``[0, 1]``, and ``labels`` as
        int64 of shape ``(N,)``. The split is a fixed permutation, the same on every machine.
    """
    if split not in ("train", "test", "all"):
        raise ValueError(f"split must be 'train', 'test' or 'all', not {split!r}")
    images, labels = _raw()
    x = torch.from_numpy(images.astype(np.float32) / 16.0).unsqueeze(1)
    y = torch.from_numpy(labels.astype(np.int64))
    if split == "all":
        return x, y
    order = np.random.default_rng(DIGITS_SPLIT_SEED).permutation(len(y))
    idx = torch.from_numpy(order[:N_TEST] if split == "test" else order[N_TEST:])
    return x[idx], y[idx]
