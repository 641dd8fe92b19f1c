"""Environment check: versions of what the course needs and whether widgets can render."""

from __future__ import annotations

import importlib.metadata as md
import platform
import sys
from pathlib import Path

__all__ = ["environment_report", "doctor"]

PACKAGES = ("torch", "numpy", "matplotlib", "ipywidgets", "jupyterlab", "jupyterlab_widgets", "ipykernel", "nbval")


def _version(dist: str) -> str | None:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


def _widget_frontend() -> str | None:
    """Where the ipywidgets JupyterLab extension lives, or None if it is not installed."""
    for prefix in {sys.prefix, sys.base_prefix}:
        ext = Path(prefix, "share", "jupyter", "labextensions", "@jupyter-widgets", "jupyterlab-manager")
        if ext.is_dir():
            return "@jupyter-widgets/jupyterlab-manager"
    return None


def environment_report() -> dict[str, str | None]:
    """A dict of Python and package versions, plus the widget front end and whether CUDA is usable."""
    import torch

    report: dict[str, str | None] = {"python": platform.python_version()}
    report.update({name: _version(name) for name in PACKAGES})
    report["widget front end"] = _widget_frontend()
    report["cuda available"] = str(torch.cuda.is_available())
    report["torch threads"] = str(torch.get_num_threads())
    return report


def doctor() -> dict[str, str | None]:
    """Print :func:`environment_report` as a table with hints for anything missing; return the report."""
    report = environment_report()
    width = max(map(len, report))
    for name, value in report.items():
        print(f"{name.ljust(width)}  {value if value is not None else 'MISSING'}")
    if report["widget front end"] is None:
        print("\nWidgets will not render in JupyterLab: install the course with `make lab` (jupyterlab_widgets).")
    if report["torch"] is not None and not report["torch"].startswith("2.13.0"):
        print(f"\nThe course's outputs were made with torch 2.13.0; you have {report['torch']}.")
    return report
