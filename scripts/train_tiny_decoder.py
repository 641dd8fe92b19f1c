"""Train the bundled TinyDecoder (copy a row of digits after a separator) and write its weights into the package.

Run with ``python scripts/train_tiny_decoder.py`` (or ``make weights``); it takes well under two
minutes on one CPU thread and prints the held-out accuracy and the size of the weights file.
"""

import time
from importlib import resources

import torch

from hookviz.decoder import DECODER_WEIGHTS_FILE, copy_accuracy, make_copy_batch, train_tiny_decoder


def main() -> None:
    """Train, report, save."""
    torch.set_num_threads(1)  # the same float sums, so the same weights, on every machine that runs this
    start = time.perf_counter()
    model = train_tiny_decoder()
    seconds = time.perf_counter() - start
    prompts, answers = make_copy_batch(1000, seed=1)
    acc = copy_accuracy(model, prompts, answers)
    path = resources.files("hookviz").joinpath(DECODER_WEIGHTS_FILE)
    torch.save(model.state_dict(), str(path))
    size = path.stat().st_size if hasattr(path, "stat") else len(path.read_bytes())
    print(f"trained in {seconds:.1f} s; held-out token accuracy {acc:.1%}; "
          f"saved {DECODER_WEIGHTS_FILE} ({size:,} bytes)")


if __name__ == "__main__":
    main()
