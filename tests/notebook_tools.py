"""What the notebook tests share: where the notebooks are, the student-copy script, cell tags."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
#: HOOKVIZ_NOTEBOOK_DIR points the tests at another folder of notebooks (e.g. a copy of a few).
NB_DIR = Path(os.environ.get("HOOKVIZ_NOTEBOOK_DIR", REPO / "notebooks"))
NOTEBOOKS = sorted(NB_DIR.glob("[0-9][0-9]_*.ipynb"))


def load_script(name: str) -> ModuleType:
    """Import ``scripts/<name>.py`` as a module (the scripts folder is not a package)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


make_student = load_script("make_student")


def tags(cell) -> list[str]:
    """The cell's tags (empty list when it has none)."""
    return list(cell.get("metadata", {}).get("tags", []))


def nb_id(path: Path) -> str:
    """A short test id for a notebook: its file stem."""
    return path.stem
