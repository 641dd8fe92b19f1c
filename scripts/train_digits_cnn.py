"""Train the bundled DigitsCNN and write its weights into the package.

Run with ``python scripts/train_digits_cnn.py`` (or ``make weights``); it takes well under a minute
on 2 CPU cores and prints the held-out accuracy that README.md states.
"""

import time
from importlib import resources

import torch

from hookviz.data import load_digits
from hookviz.models import WEIGHTS_FILE, accuracy, train_digits_cnn


def main() -> None:
    """Train, report, save."""
    start = time.perf_counter()
    model = train_digits_cnn()
    seconds = time.perf_counter() - start
    x_test, y_test = load_digits("test")
    acc = accuracy(model, x_test, y_test)
    path = resources.files("hookviz").joinpath(WEIGHTS_FILE)
    torch.save(model.state_dict(), str(path))
    print(f"trained in {seconds:.1f} s; held-out accuracy {acc:.1%} on {len(y_test)} images; saved {WEIGHTS_FILE}")


if __name__ == "__main__":
    main()
