"""One set of versions: pyproject.toml's pins, environment.yml (conda users) and binder/environment.yml agree.

pyproject.toml is the source of truth (the notebooks' stored outputs were made with those versions).
conda-forge names some packages differently; :data:`CONDA_NAMES` maps them.
"""

from __future__ import annotations

import importlib.metadata as md
import re
import tomllib
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
ENV_FILES = {"environment.yml": REPO / "environment.yml", "binder/environment.yml": REPO / "binder" / "environment.yml"}
#: pip name -> the conda-forge names that provide it (the first is the one we use).
CONDA_NAMES = {
    "torch": ("pytorch-cpu", "pytorch"),
    "matplotlib": ("matplotlib-base", "matplotlib"),
}
#: What Binder needs: the course, JupyterLab, and nbval/pytest so a teacher can test there.
BINDER_NEEDS = {
    "torch", "numpy", "matplotlib", "ipywidgets", "transformers", "jupyterlab", "ipykernel", "nbval", "pytest"
}
#: Packages that must not be pinned exactly in pyproject.toml (with the reason).
UNPINNED_OK = {"pyyaml": "only used to read YAML in tests"}

REQ = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*(?:\[[^\]]*\])?\s*(?:==\s*([^\s;,]+))?\s*(?:[;,].*)?$")
CONDA_SPEC = re.compile(r"^([A-Za-z0-9_.\-]+)\s*(?:(==?|>=|<=|>|<|!=|~=)\s*([A-Za-z0-9_.*+!\-]+))?(?:=([\w.*]+))?$")


def canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def pins() -> dict[str, str | None]:
    """Every requirement of pyproject.toml (dependencies and all extras): name -> exact version or None."""
    project = pyproject()["project"]
    reqs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        reqs.extend(extra)
    result: dict[str, str | None] = {}
    for req in reqs:
        match = REQ.match(req)
        assert match, f"cannot read the requirement {req!r}"
        name, version = canon(match.group(1)), match.group(2)
        assert result.get(name, version) == version, f"{name} is pinned twice with different versions"
        result[name] = version
    return result


def conda_name_to_pip(name: str) -> str:
    for pip_name, conda_names in CONDA_NAMES.items():
        if name in conda_names:
            return pip_name
    return canon(name)


def env_versions(path: Path) -> dict[str, str | None]:
    """pip name -> version pinned in a conda environment file (conda deps and its pip: list)."""
    env = yaml.safe_load(path.read_text(encoding="utf-8"))
    result: dict[str, str | None] = {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            for req in dep.get("pip", []):
                match = REQ.match(req.split("#")[0])
                assert match, f"{path.name}: cannot read the pip requirement {req!r}"
                result[canon(match.group(1))] = match.group(2)
            continue
        match = CONDA_SPEC.match(dep.replace(" ", ""))
        assert match, f"{path.name}: cannot read the conda spec {dep!r}"
        name, op, version = match.group(1), match.group(2), match.group(3)
        if name == "python":
            result["python"] = version
            continue
        if version is not None:
            assert op in ("=", "=="), f"{path.name}: pin {name} exactly (=X.Y.Z), not {op}{version}"
            version = version.rstrip(".*")
        result[conda_name_to_pip(name)] = version
    return result


def test_pyproject_pins_exactly():
    for name, version in pins().items():
        assert version is not None or name in UNPINNED_OK, f"pin {name} exactly in pyproject.toml (name==X.Y.Z)"


def test_torch_is_the_cpu_2_13_0_build():
    assert pins()["torch"] == "2.13.0"
    for label, path in ENV_FILES.items():
        text = path.read_text(encoding="utf-8")
        deps = [d for d in yaml.safe_load(text)["dependencies"] if isinstance(d, str)]
        names = {CONDA_SPEC.match(d.replace(" ", "")).group(1) for d in deps}
        assert "pytorch-cpu" in names, f"{label}: depend on pytorch-cpu so that conda picks the CPU build"
        assert not names & {"pytorch-gpu", "cudatoolkit", "cuda-version", "torch"}, f"{label}: {names}"


@pytest.mark.parametrize("label", ENV_FILES)
def test_conda_env_agrees_with_pyproject(label):
    want = pins()
    have = env_versions(ENV_FILES[label])
    for name, version in have.items():
        if name == "python" or name not in want:
            continue
        assert want[name] is None or version == want[name], (
            f"{label} has {name} {version}, pyproject.toml pins {want[name]}"
        )


def test_root_env_has_every_pinned_package():
    have = env_versions(ENV_FILES["environment.yml"])
    missing = sorted(set(pins()) - set(have))
    assert not missing, f"environment.yml lacks {missing} (pyproject.toml requires them)"


def test_binder_env_has_what_the_course_needs():
    have = env_versions(ENV_FILES["binder/environment.yml"])
    missing = sorted(BINDER_NEEDS - set(have))
    assert not missing, f"binder/environment.yml lacks {missing}"


@pytest.mark.parametrize("label", ENV_FILES)
def test_python_version_satisfies_requires_python(label):
    requires = pyproject()["project"]["requires-python"]
    minimum = tuple(int(x) for x in re.fullmatch(r">=\s*(\d+)\.(\d+)", requires).groups())
    python = env_versions(ENV_FILES[label]).get("python")
    assert python, f"{label}: pin python (repo2docker ignores runtime.txt when environment.yml exists)"
    assert tuple(int(x) for x in python.split(".")[:2]) >= minimum


def test_installed_versions_are_the_pins():
    """The environment running the tests is the pinned one (stored notebook outputs depend on it)."""
    for name, version in pins().items():
        if version is None:
            continue
        try:
            installed = md.version(name)
        except md.PackageNotFoundError:
            if name == "playwright":
                continue  # optional: only the browser tests need it
            raise
        assert installed.split("+")[0] == version, f"{name} {installed} is installed, pyproject.toml pins {version}"
