"""scripts/disk_check.py: a venv of several GB is refused before pip starts when the disk cannot hold it."""

from __future__ import annotations

import importlib.util
import shutil
from collections import namedtuple
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "disk_check.py"
spec = importlib.util.spec_from_file_location("disk_check", SCRIPT)
disk_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(disk_check)

Usage = namedtuple("Usage", "total used free")


def fake_disk(monkeypatch, free_gb: float) -> None:
    monkeypatch.setattr(shutil, "disk_usage", lambda where: Usage(500 * disk_check.GB, 0, int(free_gb * disk_check.GB)))


def test_too_little_room_is_refused_with_figures_and_fix(monkeypatch, capsys):
    fake_disk(monkeypatch, 2.0)
    assert disk_check.main(["--need-gb", "7.5", "--what", "torch 2.8.0 (.venv-torch-2.8.0)"]) == 1
    err = capsys.readouterr().err
    assert "torch 2.8.0 (.venv-torch-2.8.0) needs about 7.5 GB" in err
    assert "2.0 GB is free" in err
    assert "rm -rf .venv-torch-* .venv-colab" in err


def test_enough_room_passes_and_says_so(monkeypatch, capsys):
    fake_disk(monkeypatch, 40.0)
    assert disk_check.main(["--need-gb", "7.5", "--what", "torch 2.8.0 (.venv-torch-2.8.0)"]) == 0
    assert "40.0 GB free, torch 2.8.0 needs about 7.5 GB" in capsys.readouterr().out


def test_a_bad_size_names_the_argument(capsys):
    with pytest.raises(SystemExit):
        disk_check.main(["--need-gb", "0", "--what", "x"])
    assert "--need-gb must be a positive number" in capsys.readouterr().err


def test_makefile_checks_the_disk_before_each_large_venv_and_keeps_no_wheel_cache():
    makefile = (SCRIPT.parents[1] / "Makefile").read_text(encoding="utf-8")
    for venv in ("$(TORCH_VENV)/.ready:", "$(COLAB_VENV)/.ready:"):
        recipe = makefile.split(venv, 1)[1].split("\n\n", 1)[0]
        assert "scripts/disk_check.py" in recipe, venv
        assert recipe.index("disk_check.py") < recipe.index("pip install"), venv
        assert "pip install --quiet $(NO_PIP_CACHE)" in recipe, venv
    assert "NO_PIP_CACHE := --no-cache-dir" in makefile


def test_ci_drops_each_release_venv_after_its_stage():
    ci = (SCRIPT.parents[1] / ".ci" / "run").read_text(encoding="utf-8")
    assert "make test-colab DROP_VENV=1" in ci
    assert "make test-releases DROP_VENV=1" in ci
