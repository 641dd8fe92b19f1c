"""Refuse to start building a large venv on a disk that cannot hold it, with the figures and the fix.

`python3 scripts/disk_check.py --need-gb 7.5 --what "torch 2.8.0 (.venv-torch-2.8.0)"` exits 1 with a message
when the disk under the current folder has less free space than that, instead of letting pip stop half-way
with "No space left on device". The sizes are measured ones (a CUDA build of PyTorch that runs on the CPU
brings several GB of NVIDIA libraries), listed in the Makefile beside each venv.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

GB = 1024**3


def shortfall(need_gb: float, where: Path) -> float:
    """GB missing on the disk that holds ``where`` for ``need_gb`` GB (0 when there is room)."""
    free_gb = shutil.disk_usage(where).free / GB
    return max(0.0, need_gb - free_gb)


def message(need_gb: float, what: str, where: Path) -> str:
    """What the learner reads when the disk is too small."""
    free_gb = shutil.disk_usage(where).free / GB
    return (
        f"error: {what} needs about {need_gb:.1f} GB of free disk; {free_gb:.1f} GB is free under {where}.\n"
        "  fix: free some space (old venvs of the course are safe to delete: rm -rf .venv-torch-* .venv-colab; "
        "pip's cache: pip cache purge), then run the same make command again."
    )


def main(argv: list[str] | None = None) -> int:
    """Command line: exit 1 (with the message) when there is not enough room."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--need-gb", type=float, required=True, help="free space needed, in GB")
    parser.add_argument("--what", required=True, help="what will be installed, for the message")
    parser.add_argument("--where", type=Path, default=Path("."), help="a folder on the disk to check")
    args = parser.parse_args(argv)
    if args.need_gb <= 0:
        parser.error("--need-gb must be a positive number of GB, e.g. --need-gb 7.5")
    if shortfall(args.need_gb, args.where) > 0:
        print(message(args.need_gb, args.what, args.where), file=sys.stderr)
        return 1
    free_gb = shutil.disk_usage(args.where).free / GB
    print(f"disk: {free_gb:.1f} GB free, {what_short(args.what)} needs about {args.need_gb:.1f} GB")
    return 0


def what_short(what: str) -> str:
    """The first words of ``what``, for the one-line report."""
    return what.split(" (")[0]


if __name__ == "__main__":
    sys.exit(main())
