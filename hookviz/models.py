"""The course's small CNN for the bundled digits, its trainer and its committed weights."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources

import torch
from torch import Tensor, nn

from hookviz.data import load_digits

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
        super().__init__()
        c1, c2 = channels
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
    """Fraction of ``images`` whose arg-max logit equals the label (model put in eval mode)."""
    was_training = model.training
    model.eval()
    try:
        return (model(images).argmax(dim=1) == labels).float().mean().item()
    finally:
        model.train(was_training)


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
