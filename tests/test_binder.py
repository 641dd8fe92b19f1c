"""The ``binder/`` folder builds the course on mybinder.org: what can be checked without building it.

* repo2docker reads ``binder/`` (not the root), and only the files it should;
* ``binder/environment.yml`` parses, every spec is valid conda syntax, torch is the CPU build, and
  there is no local pip reference (that would disable repo2docker's cached environment step);
* ``binder/postBuild`` really installs hookviz with ``--no-deps`` and writes a valid ``overrides.json``
  that turns the JupyterLab news pop-up off (run here with a stand-in ``python``), and a real
  JupyterLab started on that settings folder reports the news defaults as off;
* ``binder/start`` sets one torch thread and hands over to the server command.

Optional, skipped unless available: conda's own spec parser (``py-rattler``) and
``repo2docker --no-build --debug .`` (``pip install jupyter-repo2docker`` in a separate venv and
point ``REPO2DOCKER`` at its ``repo2docker`` executable, or put it on PATH). The real build and
the conda solve can only happen on mybinder.org.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
BINDER = REPO / "binder"
ENV_FILES = [BINDER / "environment.yml", REPO / "environment.yml"]
# name[op version[,op version]][=build]; the forms conda accepts in environment files, and no others.
VERSION = r"[0-9A-Za-z_.*+!]+"
SPEC = re.compile(
    rf"^[a-z0-9][a-z0-9_.\-]*"
    rf"(?:(?:=|==|>=|<=|>|<|!=|~=){VERSION}(?:,(?:==|>=|<=|>|<|!=){VERSION})*(?:=[A-Za-z0-9_.*]+)?)?$"
)
OVERRIDES_KEY = "@jupyterlab/apputils-extension:notification"
WIDGETS_KEY = "@jupyter-widgets/jupyterlab-manager:plugin"
TRACKER_KEY = "@jupyterlab/notebook-extension:tracker"
JUPYTER_DIRS = ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR")


def conda_deps(path: Path) -> list[str]:
    return [d for d in yaml.safe_load(path.read_text(encoding="utf-8"))["dependencies"] if isinstance(d, str)]


def test_repo2docker_reads_binder_folder_only():
    assert BINDER.is_dir() and not (REPO / ".binder").exists(), "binder/ and .binder/ together is an error"
    assert not (BINDER / "Dockerfile").exists(), "a Dockerfile would override the whole configuration"
    present = {p.name for p in BINDER.iterdir()}
    # overrides.json and workspace.json are not repo2docker files: postBuild and `make lab` copy them into
    # JupyterLab's settings and workspaces
    allowed = {"environment.yml", "postBuild", "start", "README.md", "overrides.json", "workspace.json", "apt.txt"}
    assert present <= allowed, f"unexpected files: {present}"


@pytest.mark.parametrize("path", ENV_FILES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_environment_file_is_valid(path):
    env = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert set(env) <= {"name", "channels", "dependencies"}, set(env)
    assert env["channels"][0] == "conda-forge" and "nodefaults" in env["channels"]
    for spec in conda_deps(path):
        assert SPEC.match(spec), f"{path.name}: {spec!r} is not a conda spec"
    pip_lists = [d["pip"] for d in env["dependencies"] if isinstance(d, dict)]
    assert all(set(d) == {"pip"} for d in env["dependencies"] if isinstance(d, dict))
    if pip_lists:
        assert "pip" in conda_deps(path), "list pip itself when using a pip: section"


def test_binder_env_has_no_local_pip_reference():
    """``- pip: [-e .]`` would make repo2docker re-solve the environment on every commit."""
    env = yaml.safe_load((BINDER / "environment.yml").read_text(encoding="utf-8"))
    pip = [req for d in env["dependencies"] if isinstance(d, dict) for req in d.get("pip", [])]
    assert not [r for r in pip if r.startswith(("-e", ".", "/", "file:"))], pip


def test_binder_env_is_cpu_only_and_small():
    names = {re.match(r"[a-z0-9_.\-]+", spec).group(0) for spec in conda_deps(BINDER / "environment.yml")}
    assert "pytorch-cpu" in names
    assert not names & {"pytorch-gpu", "cudatoolkit", "cuda-version", "torchvision", "ipympl", "voila"}, names
    python = [s for s in conda_deps(BINDER / "environment.yml") if s.startswith("python=")]
    assert python, "pin python: repo2docker ignores runtime.txt when environment.yml exists"


def test_spec_regex_rejects_bad_specs():
    for bad in ("pytorch-cpu >>2", "numpy==", "=2.0", "numpy 2.0 extra words"):
        assert not SPEC.match(bad), bad
    for good in ("pip", "python=3.11", "pytorch-cpu=2.13.0", "pytorch=2.13.0=cpu_*", "numpy>=2,<3"):
        assert SPEC.match(good), good


def test_specs_parse_with_conda_matchspec():
    rattler = pytest.importorskip("rattler", reason="py-rattler not installed (optional)")
    for path in ENV_FILES:
        for spec in conda_deps(path):
            rattler.MatchSpec(spec)


@pytest.mark.parametrize("name", ["postBuild", "start"])
def test_scripts_are_executable_bash(name):
    script = BINDER / name
    assert os.access(script, os.X_OK), f"chmod +x binder/{name} (and commit the mode)"
    text = script.read_text(encoding="utf-8")
    assert text.startswith("#!/bin/bash\n")
    subprocess.run(["bash", "-n", str(script)], check=True)


def test_postbuild_installs_hookviz_and_silences_the_news(tmp_path):
    """Run postBuild with a stand-in ``python`` that records its arguments instead of installing."""
    calls, settings_dir = _run_postbuild_with_fake_python(tmp_path)
    assert "-m pip install --no-deps -e ." in calls, calls
    assert "scripts/make_student.py notebooks student" in calls, calls
    settings = json.loads((settings_dir / "overrides.json").read_text(encoding="utf-8"))
    assert settings[OVERRIDES_KEY] == {"fetchNews": "false", "checkForUpdates": False}
    # widget state is saved with the notebook: after a restart a widget shows its last picture
    assert settings[WIDGETS_KEY] == {"saveState": True}
    # closing a notebook's tab shuts its kernel down (tests/browser/test_learner_browser.py proves it in Lab)
    assert settings[TRACKER_KEY] == {"kernelShutdown": True}


def test_make_lab_uses_the_same_jupyterlab_defaults():
    """`make lab` (the learners' JupyterLab: it is `make student-lab`) and `make teacher-lab` install
    binder/overrides.json into the course's venv."""
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    settings = text.split("\ndefine lab-settings\n", 1)[1].split("\nendef\n", 1)[0]
    assert "binder/overrides.json $(VENV)/share/jupyter/lab/settings/overrides.json" in settings
    assert "binder/workspace.json $(LAB_WORKSPACE_FILE)" in settings
    for target in ("teacher-lab", "student-lab"):
        recipe = text.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0]
        assert "$(lab-settings)" in recipe and "$(LAB_DIRS)" in recipe, target
    assert "\nlab: student-lab\n" in text, "make lab must open the student copies"


def _run_postbuild_with_fake_python(tmp_path: Path) -> tuple[list[str], Path]:
    log = tmp_path / "python-calls.txt"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "python"
    fake.write_text(f'#!/bin/bash\nprintf "%s\\n" "$*" >> "{log}"\n', encoding="utf-8")
    fake.chmod(0o755)
    prefix = tmp_path / "prefix"
    home = tmp_path / "home"
    env = dict(
        os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}", NB_PYTHON_PREFIX=str(prefix), HOME=str(home)
    )
    subprocess.run(["bash", str(BINDER / "postBuild")], cwd=REPO, env=env, check=True, timeout=60)
    workspace = home / ".jupyter" / "lab" / "workspaces" / "default-37a8.jupyterlab-workspace"
    assert workspace.read_text() == (BINDER / "workspace.json").read_text(), "the wide file browser on Binder too"
    return log.read_text(encoding="utf-8").splitlines(), prefix / "share" / "jupyter" / "lab" / "settings"


@pytest.mark.slow
def test_jupyterlab_applies_the_overrides(tmp_path):
    """Start JupyterLab on the settings folder postBuild wrote: the news pop-up defaults are off."""
    pytest.importorskip("jupyterlab")
    _, settings_dir = _run_postbuild_with_fake_python(tmp_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(8)
    env = dict(os.environ, **{k: str(tmp_path / k.lower()) for k in JUPYTER_DIRS})
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={tmp_path}",
           f"--LabApp.app_settings_dir={settings_dir}", f"--LabApp.user_settings_dir={tmp_path / 'user'}",
           f"--LabApp.workspaces_dir={tmp_path / 'ws'}"]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    url = f"http://127.0.0.1:{port}/lab/api/settings/{OVERRIDES_KEY}?token={token}"
    widgets_url = f"http://127.0.0.1:{port}/lab/api/settings/{WIDGETS_KEY}?token={token}"
    tracker_url = f"http://127.0.0.1:{port}/lab/api/settings/{TRACKER_KEY}?token={token}"
    with open(tmp_path / "server.log", "w") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    reply = json.load(response)
                with urllib.request.urlopen(widgets_url, timeout=5) as response:
                    widgets_reply = json.load(response)
                with urllib.request.urlopen(tracker_url, timeout=5) as response:
                    tracker_reply = json.load(response)
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail((tmp_path / "server.log").read_text()[-2000:])
                time.sleep(0.3)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    props = reply["schema"]["properties"]
    assert props["fetchNews"]["default"] == "false" and props["checkForUpdates"]["default"] is False
    assert widgets_reply["schema"]["properties"]["saveState"]["default"] is True
    assert tracker_reply["schema"]["properties"]["kernelShutdown"]["default"] is True


def test_postbuild_stops_on_the_first_error(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python").write_text("#!/bin/bash\nexit 3\n", encoding="utf-8")
    (bindir / "python").chmod(0o755)
    env = dict(
        os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}", NB_PYTHON_PREFIX=str(tmp_path),
        HOME=str(tmp_path / "home"),
    )
    result = subprocess.run(["bash", str(BINDER / "postBuild")], cwd=REPO, env=env, timeout=60)
    assert result.returncode != 0, "a failed pip install must fail the Binder build"
    assert not (tmp_path / "share").exists()


@pytest.mark.parametrize(("given", "expected"), [(None, "1"), ("4", "4")])
def test_start_sets_one_thread_and_execs(given, expected):
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    if given is not None:
        env["OMP_NUM_THREADS"] = given
    cmd = [str(BINDER / "start"), sys.executable, "-c", "import os; print(os.environ['OMP_NUM_THREADS'])"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == expected


def _repo2docker() -> str | None:
    return os.environ.get("REPO2DOCKER") or shutil.which("repo2docker")


@pytest.mark.skipif(_repo2docker() is None, reason="repo2docker not installed (optional; set REPO2DOCKER)")
def test_repo2docker_detects_the_configuration():
    cmd = [_repo2docker(), "--no-build", "--debug", "--no-run", "--user-id", "1000", "--user-name", "jovyan", "."]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-2000:]
    assert "Building conda environment for python=3.11" in text
    # the environment is solved BEFORE the repository is copied in: cached between commits
    assert text.index("src/binder/environment.yml") < text.index("COPY --chown=1000:1000 src/ ${REPO_DIR}/")
    assert "./binder/postBuild" in text and 'R2D_ENTRYPOINT="${REPO_DIR}/binder/start"' in text


def test_teaching_guide_links_every_notebook():
    """TEACHING.md's Colab badges and Binder links name real notebooks, and every notebook has a badge."""
    text = (REPO / "TEACHING.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"notebooks/([0-9]{2}_[a-z0-9_]+)\.ipynb", text))
    existing = {p.stem for p in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb")}
    assert linked >= existing, f"TEACHING.md has no link to {sorted(existing - linked)}"
    missing = sorted(linked - existing)
    assert not missing, f"TEACHING.md links notebooks that do not exist: {missing}"
    colab = "https://colab.research.google.com/github/hookviz/hookviz/blob/main/notebooks/{}.ipynb"
    for name in existing:
        assert colab.format(name) in text, f"no Colab badge for {name}"
    binder = "https://mybinder.org/v2/gh/hookviz/hookviz/HEAD?urlpath=lab/tree/notebooks/00_start_here.ipynb"
    assert binder in text


def test_the_image_carries_a_font_that_draws_chinese():
    """The browser report: without a Chinese font the zh edition shows boxes; repo2docker installs binder/apt.txt."""
    packages = [line.strip() for line in (BINDER / "apt.txt").read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.startswith("#")]
    assert packages == ["fonts-wqy-microhei"]
