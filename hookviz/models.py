"""The course's small CNN for the bundled digits, its trainer and its committed weights."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from typing import Any

import torch
from torch import Tensor, nn

from hookviz.data import load_digits
from hookviz.guards import (
    check_int,
    check_module,
    check_number,
    check_seed,
    run_mode,
    run_model,
    shown,
    shown_array,
)
from hookviz.i18n import N_, join_notes

__all__ = ["DigitsCNN", "accuracy", "load_pretrained_cnn", "make_digits_step", "train_digits_cnn", "WEIGHTS_FILE"]

WEIGHTS_FILE = "assets/digits_cnn.pt"


class DigitsCNN(nn.Module):
    """Two conv blocks (Conv-BatchNorm-ReLU-MaxPool) and a linear classifier, for 1x8x8 digits.

    Layer names (``named_modules()``): ``features.0`` conv 1->8, ``features.1`` BN, ``features.2``
    ReLU, ``features.3`` pool (8x8 -> 4x4), ``features.4`` conv 8->16, ``features.5`` BN,
    ``features.6`` ReLU, ``features.7`` pool (4x4 -> 2x2), ``classifier.0`` flatten,
    ``classifier.1`` linear 64->10.
    """

    def __init__(self, channels: tuple[int, int] = (8, 16), n_classes: int = 10) -> None:
        if isinstance(channels, (str, bytes)) or not isinstance(channels, (tuple, list)) or len(channels) != 2:
            raise TypeError(join_notes([
                N_(f"channels must be a pair of whole numbers (the two conv layers' output channels), "
                   f"not {shown(channels)}"),
                N_("e.g. DigitsCNN(channels=(8, 16))"),
            ]))
        c1, c2 = (check_int(c, f"channels[{i}]", minimum=1) for i, c in enumerate(channels))
        n_classes = check_int(n_classes, "n_classes", minimum=1, fix=N_("the number of classes, e.g. 10 digits"))
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, c1, kernel_size=3, padding=1),
            nn.BatchNorm2d(c1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(c1, c2, kernel_size=3, padding=1),
            nn.BatchNorm2d(c2),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(c2 * 2 * 2, n_classes))

    def forward(self, x: Tensor) -> Tensor:
        """Logits of shape ``(N, 10)`` for images of shape ``(N, 1, 8, 8)``."""
        return self.classifier(self.features(x))


@torch.no_grad()
def accuracy(model: nn.Module, images: Tensor, labels: Tensor) -> float:
    """Fraction of ``images`` whose arg-max logit equals the label (model put in eval mode; every submodule's own
    mode is put back after)."""
    check_module(model, "model")
    if not isinstance(images, Tensor) or images.ndim == 0:
        raise TypeError(join_notes([
            N_(f"images must be a tensor with one image per row (N, 1, 8, 8 for DigitsCNN), not {shown_array(images)}"),
            N_("load them with hookviz.load_digits(), or convert with torch.as_tensor(images)"),
        ]))
    if not len(images):
        raise ValueError(join_notes([N_(f"images is empty ({shown_array(images)})"), N_("pass at least one image")]))
    integer = isinstance(labels, Tensor) and not (labels.is_floating_point() or labels.is_complex())
    if not integer or labels.dtype == torch.bool or labels.ndim == 0:
        raise TypeError(join_notes([
            N_(f"labels must be a tensor of class indices (integers, one per image), not {shown_array(labels)}"),
            N_("pass the labels hookviz.load_digits() gives, or labels.long()"),
        ]))
    if len(labels) != len(images):
        raise ValueError(join_notes([
            N_(f"labels has {len(labels)} rows for {len(images)} images"),
            N_("pass one label per image (the labels of the same images)"),
        ]))
    with run_mode(model, False):
        predictions = run_model(model, images, "accuracy", "images").argmax(dim=1)
    if predictions.shape != labels.shape:
        raise ValueError(join_notes([
            N_(f"labels has shape {tuple(labels.shape)}, and the model's predictions {tuple(predictions.shape)}"),
            N_("pass one class index per prediction"),
        ]))
    return (predictions == labels).float().mean().item()


def _step_settings(batch_size: Any, lr: Any, seed: Any) -> tuple[int, float, int]:
    """``batch_size``, ``lr`` and ``seed`` of a digits training run, checked (a clear error names the bad one)."""
    return (
        check_int(batch_size, "batch_size", minimum=1, fix=N_("images per step, e.g. 64")),
        check_number(lr, "lr", above=0, fix=N_("the learning rate, e.g. 3e-3")),
        check_seed(seed),
    )


def make_digits_step(
    model: nn.Module, *, batch_size: int = 64, lr: float = 3e-3, seed: int = 0
) -> Callable[[], Tensor]:
    """The course's training step on the bundled digits: each call trains ``model`` on the next batch.

    AdamW (``lr``, weight decay 1e-4), cross-entropy, batches of ``batch_size`` from a fresh shuffle
    of the training split every epoch (a generator seeded with ``seed``). Each call puts the model in
    training mode, runs forward, backward and ``optimizer.step()``, and returns the batch's loss
    (detached). :func:`train_digits_cnn` and the training monitor both train with it. The returned
    function has ``steps_per_epoch`` and ``optimizer`` attributes.
    """
    check_module(model, "model")
    batch_size, lr, seed = _step_settings(batch_size, lr, seed)
    x, y = load_digits("train")
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    generator = torch.Generator().manual_seed(seed)
    batches: list[Tensor] = []

    def step() -> Tensor:
        if not batches:
            batches.extend(torch.randperm(len(y), generator=generator).split(batch_size))
        idx = batches.pop(0)
        model.train()
        loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.detach()

    step.steps_per_epoch = -(-len(y) // batch_size)  # type: ignore[attr-defined]
    step.optimizer = optimizer  # type: ignore[attr-defined]
    return step


def train_digits_cnn(epochs: int = 15, batch_size: int = 64, lr: float = 3e-3, seed: int = 0) -> DigitsCNN:
    """Train a fresh :class:`DigitsCNN` on the bundled training split (about 10 s on 2 CPU cores)."""
    epochs = check_int(epochs, "epochs", minimum=0, fix=N_("passes over the training split, e.g. 15"))
    batch_size, lr, seed = _step_settings(batch_size, lr, seed)
    torch.manual_seed(seed)
    model = DigitsCNN()
    step = make_digits_step(model, batch_size=batch_size, lr=lr, seed=seed)
    for _ in range(epochs * step.steps_per_epoch):  # type: ignore[attr-defined]
        step()
    return model.eval()


def load_bundled_weights(model: nn.Module, weights_file: str) -> nn.Module:
    """Load the weights that ship with hookviz at ``weights_file`` (inside the package) into ``model``.

    Returns ``model`` in eval mode. ``torch.load(..., weights_only=True)``: tensors only, no pickled code.
    """
    with resources.files("hookviz").joinpath(weights_file).open("rb") as f:
        state = torch.load(f, weights_only=True)
    model.load_state_dict(state)
    return model.eval()


def load_pretrained_cnn() -> DigitsCNN:
    """The trained :class:`DigitsCNN` whose weights ship with hookviz, in eval mode."""
    return load_bundled_weights(DigitsCNN(), WEIGHTS_FILE)  # type: ignore[return-value]
