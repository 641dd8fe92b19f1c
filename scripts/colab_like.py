"""Check that the Colab-like environment (``make colab-env``) is what it claims to be.

Google Colab runs a recent PyTorch with ipywidgets 7 (7.7.1), the classic notebook 6.5 and no JupyterLab.
``make test-colab`` checks every notebook in such an environment; this script refuses to let that run
count if the environment drifted (a newer ipywidgets pulled in by a dependency, JupyterLab installed,
another PyTorch).

    python scripts/colab_like.py --check-env --torch 2.14.1
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import importlib.util
import sys


def problems(torch_version: str) -> list[str]:
    """What differs from a Colab-like environment (empty when nothing does)."""
    found = []
    try:
        torch = metadata.version("torch").split("+")[0]
    except metadata.PackageNotFoundError:
        torch = "none"
    if torch != torch_version:
        found.append(f"torch {torch} is installed, expected {torch_version}")
    widgets = metadata.version("ipywidgets")
    if not widgets.startswith("7."):
        found.append(f"ipywidgets {widgets} is installed, expected 7.x as on Colab")
    if importlib.util.find_spec("jupyterlab") is not None:
        found.append("JupyterLab is installed; Colab has none")
    if importlib.util.find_spec("hookviz") is None:
        found.append("hookviz is not installed (pip install --no-deps -e .)")
    return found


def main() -> int:
    """Command line: exit 1 and say why when the environment is not Colab-like."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check-env", action="store_true", help="check the running environment")
    parser.add_argument("--torch", required=True, help="the PyTorch version expected")
    args = parser.parse_args()
    found = problems(args.torch)
    for line in found:
        print(f"not Colab-like: {line}", file=sys.stderr)
    if not found:
        print(
            f"Colab-like: torch {args.torch}, ipywidgets {metadata.version('ipywidgets')}, "
            f"notebook {metadata.version('notebook')}, ipykernel {metadata.version('ipykernel')}, no JupyterLab"
        )
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
