"""Train the bundled TinyTransformer (digit-row reversal) and write its weights into the package.

Run with ``python scripts/train_tiny_transformer.py`` (or ``make weights``); it takes about a minute
on one CPU thread and prints the held-out accuracy and the size of the weights file.
"""

import time
from importlib import resources

import torch

from hookviz.transformer import TINY_WEIGHTS_FILE, make_tiny_batch, tiny_accuracy, train_tiny_transformer


def main() -> None:
    """Train, report, save."""
    torch.set_num_threads(1)  # the same float sums, so the same weights, on every machine that runs this
    start = time.perf_counter()
    model = train_tiny_transformer()
    seconds = time.perf_counter() - start
    tokens, targets = make_tiny_batch(1000, seed=1)
    acc = tiny_accuracy(model, tokens, targets)
    path = resources.files("hookviz").joinpath(TINY_WEIGHTS_FILE)
    torch.save(model.state_dict(), str(path))
    size = path.stat().st_size if hasattr(path, "stat") else len(path.read_bytes())
    print(f"trained in {seconds:.1f} s; held-out token accuracy {acc:.1%}; saved {TINY_WEIGHTS_FILE} ({size:,} bytes)")


if __name__ == "__main__":
    main()
