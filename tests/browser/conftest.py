"""Fixtures for the real-browser tests: a throwaway JupyterLab server and headless Debian Chromium.

The server serves a temporary *copy* of ``notebooks/`` (Lab writes checkpoints and autosaves; nothing
may land in the repository), on a free loopback port, with a random token and its own config, data,
runtime, settings and workspace folders. It runs with the learners' defaults (``binder/overrides.json``: no
news pop-up covering screenshots, widget state saved, closing a tab shuts its kernel down), and notebook
windowing is off so that every cell stays in the DOM. Chromium is Debian's ``/usr/bin/chromium`` driven by
the Python ``playwright`` package through ``executable_path``: no ``playwright install`` download.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Debian's Chromium; HOOKVIZ_CHROMIUM points the tests at another binary (the run-guard tests point it at a
# missing one to prove that a missing browser skips the browser tests only).
CHROMIUM = os.environ.get("HOOKVIZ_CHROMIUM", "/usr/bin/chromium")
REPO = Path(__file__).resolve().parents[2]


def _missing() -> str | None:
    if not os.path.exists(CHROMIUM):
        return f"Chromium not found at {CHROMIUM} (install Debian's chromium: apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the Python playwright package is missing (pip install playwright; no browser download needed)"
    return None


HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the browser tests (and only them) when Chromium or playwright is missing.

    A conftest hook of this kind receives every item of the session, not only this folder's: the
    skip is applied to the items that live under ``tests/browser/``, so a missing browser never
    skips a unit test or a notebook cell.
    """
    reason = _missing()
    if not reason:
        return
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.skip(reason=reason))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A JupyterLab server on a copy of the notebooks; yields its url, token and root folder."""
    root = tmp_path_factory.mktemp("labroot")
    shutil.copytree(REPO / "notebooks", root, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    home = tmp_path_factory.mktemp("jhome")
    # The learners' JupyterLab defaults, from the file `make lab`, Binder and the workshop hub install:
    # binder/overrides.json as the app-level settings (no news pop-up, widget state saved with the notebook,
    # closing a notebook's tab shuts its kernel down).
    app_settings = home / "app-settings"
    app_settings.mkdir()
    shutil.copy(REPO / "binder" / "overrides.json", app_settings / "overrides.json")
    # Render every cell: with Lab's default windowing, off-screen cells leave the DOM, and a check that
    # "every prompt has a number" would only see the cells on screen.
    notebook_settings = home / "settings" / "@jupyterlab" / "notebook-extension"
    notebook_settings.mkdir(parents=True)
    (notebook_settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(home / "cfg"),
        JUPYTER_RUNTIME_DIR=str(home / "run"),
        JUPYTER_DATA_DIR=str(home / "data"),
        OMP_NUM_THREADS="1",
        PYTHONHASHSEED="0",
    )
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.app_settings_dir={app_settings}",
        f"--LabApp.user_settings_dir={home / 'settings'}",
        f"--LabApp.workspaces_dir={home / 'ws'}",
    ]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log_path = home / "server.log"
    log = open(log_path, "w")  # noqa: SIM115 - closed in teardown
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    try:
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    raise RuntimeError("JupyterLab did not start:\n" + log_path.read_text()[-3000:]) from None
                time.sleep(0.25)
        yield {"url": url, "token": token, "root": root, "log": log_path}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Any]:
    """A Chromium page (headless, isolated profile, 1280x1000)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        # Playwright rejects --user-data-dir in args: a persistent context takes the profile folder instead.
        ctx = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=CHROMIUM,
            headless=True,
            viewport={"width": 1280, "height": 1000},
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        pg = ctx.pages[0] if ctx.pages else ctx.new_page()
        pg.set_default_timeout(120_000)
        try:
            yield pg
        finally:
            ctx.close()
