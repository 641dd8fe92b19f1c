"""Train the course's tiny Hugging Face ``LlamaForCausalLM`` (copy a row of digits after a separator) and save it.

Run with ``python scripts/train_tiny_llama.py`` (or ``make weights``); it takes about a minute on one CPU thread,
prints the held-out accuracy, and writes ``hookviz/assets/tiny_llama/`` with ``save_pretrained`` (safetensors).
"""

import time
from importlib import resources
from pathlib import Path

import torch

from hookviz.llama import TINY_LLAMA_DIR, copy_accuracy, make_copy_batch, train_tiny_llama


def main() -> None:
    """Train, report, save."""
    torch.set_num_threads(1)  # the same float sums, so the same weights, on every machine that runs this
    start = time.perf_counter()
    model = train_tiny_llama()
    seconds = time.perf_counter() - start
    prompts, answers = make_copy_batch(1000, seed=1)
    acc = copy_accuracy(model, prompts, answers)
    folder = Path(str(resources.files("hookviz").joinpath(TINY_LLAMA_DIR)))
    model.save_pretrained(folder)
    size = sum(f.stat().st_size for f in folder.iterdir())
    print(f"trained in {seconds:.1f} s; held-out token accuracy {acc:.1%}; saved {TINY_LLAMA_DIR} ({size:,} bytes)")


if __name__ == "__main__":
    main()
