"""The course's small CNN for the bundled digits, its trainer and its committed weights."""

from __future__ import annotations

from importlib import resources

import torch
from torch import Tensor, nn

from hookviz.data import load_digits

__all__ = ["DigitsCNN", "accuracy", "load_pretrained_cnn", "train_digits_cnn", "WEIGHTS_FILE"]

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


def train_digits_cnn(epochs: int = 15, batch_size: int = 64, lr: float = 3e-3, seed: int = 0) -> DigitsCNN:
    """Train a fresh :class:`DigitsCNN` on the bundled training split (about 10 s on 2 CPU cores)."""
    torch.manual_seed(seed)
    x, y = load_digits("train")
    model = DigitsCNN()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    generator = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(epochs):
        for idx in torch.randperm(len(y), generator=generator).split(batch_size):
            loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model.eval()


def load_pretrained_cnn() -> DigitsCNN:
    """The trained :class:`DigitsCNN` whose weights ship with hookviz, in eval mode."""
    model = DigitsCNN()
    with resources.files("hookviz").joinpath(WEIGHTS_FILE).open("rb") as f:
        state = torch.load(f, weights_only=True)
    model.load_state_dict(state)
    return model.eval()
