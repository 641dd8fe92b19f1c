"""Two learners on a real JupyterHub: log in, pull the student copies, see notebook 06's first widget.

Opt-in (``hub`` marker, not in the default run): ``pytest -m hub tests/test_hub.py``. It runs
``bench/bench_hub.py --learners 2 --quick``: a real JupyterHub with the Python configurable-http-proxy,
single-user servers with nbgitpuller and the course's kernel, a git daemon on 127.0.0.1 serving a
student release branch. It needs the hub's own venvs (``make hub-env``, i.e.
``python bench/bench_hub.py --install``) and skips, saying so, when they are missing.
About one and a half minutes on 2 cores under a load of 10, over three under a load of 25 (the run is
bounded at 7 minutes).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench" / "bench_hub.py"

pytestmark = pytest.mark.hub


def _bench():
    if "bench_hub" not in sys.modules:  # dataclasses need the module registered while it loads
        spec = importlib.util.spec_from_file_location("bench_hub", BENCH)
        module = importlib.util.module_from_spec(spec)
        sys.modules["bench_hub"] = module
        spec.loader.exec_module(module)
    return sys.modules["bench_hub"]


def _hub_processes() -> set[int]:
    """Live processes started from the hub's venvs (hub, proxy, single-user servers)."""
    import psutil

    venv = str(_bench().HUB_VENV)
    found = set()
    for proc in psutil.process_iter(["pid", "cmdline"]):
        if any(venv in part for part in proc.info["cmdline"] or []):
            found.add(proc.info["pid"])
    return found


def test_two_learners_pull_and_see_a_widget(tmp_path):
    why = _bench().missing_packages()
    if why:
        pytest.skip(f"hub packages missing: {why}")
    before = _hub_processes()
    results = tmp_path / "hub.json"
    cmd = [sys.executable, str(BENCH), "--learners", "2", "--quick", "--timeout", "420", "--results", str(results)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=480)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    summary = json.loads(results.read_text(encoding="utf-8"))
    assert summary["completed"] == 2, summary["learners_detail"]
    for learner in summary["learners_detail"]:
        assert learner["errors"] == []
        assert learner["server_ready_s"] < learner["pulled_s"] < learner["first_widget_s"]
        assert learner["widgets_shown"] >= 1
    repull = summary["learners_detail"][0]["repull"]
    assert repull == {"edited notebook kept": True, "deleted notebook restored fresh": True}
    assert all(summary["peak_rss_mib"][name]["kernels"] > 0 for name in ("learner00", "learner01"))
    assert _hub_processes() <= before, "the rehearsal left hub processes running"
