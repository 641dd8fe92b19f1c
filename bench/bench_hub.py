"""A class on one JupyterHub, rehearsed: N learners log in, pull the student copies and run notebooks 06 and 00.

What runs (all on 127.0.0.1, in a temporary folder that is removed at the end):

* a **git server** (``git daemon``) serving a student release branch: the student copies that
  ``scripts/make_student.py`` writes from ``notebooks/``, committed alone on a ``rehearsal-student``
  branch, as ``make release-student`` would release them;
* a **real JupyterHub** (``jupyterhub`` from pip) with the Python ``configurable-http-proxy``, the
  ``shared-password`` authenticator (one workshop password) and ``SimpleLocalProcessSpawner`` (one home
  folder per learner); each learner's single-user server has nbgitpuller and runs the course's own
  kernel (this checkout's ``.venv`` python, the pinned CPU torch);
* N **simulated learners**, one thread each, doing what a browser does: log in through the login form,
  wait for their server, follow the nbgitpuller link (``nbgitpuller_link.py`` in
  ``workshop/jupyterhub/`` builds it) and let it clone the course, then open ``student/06`` and run it
  cell by cell over the kernel's websocket, then open ``student/00`` in a second kernel and run it (06's
  kernel stays open, as when a learner moves on without shutting it down). A cell tagged
  ``raises-exception`` may fail; any other error stops that notebook, as *Run All* does.

It prints, per learner: time from the login request to the server being ready, to the course pulled,
to the first widget of 06 displayed ("time to first widget"), to 06 and 00 finished; the resident
memory (peak RSS sampled every second, and RSS/PSS/USS with both kernels open at the end) of the
learner's single-user server and kernels, and their CPU seconds; then a sizing table for a class of 30.
Learner 0 also checks what a re-pull does to a learner's edited notebook (kept) and to a deleted one
(restored fresh). Results go to ``bench/results/hub_rehearsal.json``.

**Its own environments** (the course's ``.venv`` is never changed), made by ``--install`` (or
``make hub-env``), under ``.venv-hub/`` (which git ignores: the folder holds its own ``.gitignore``):

* ``.venv-hub/hub``: ``jupyterhub`` and ``configurable-http-proxy`` (the hub and its proxy);
* ``.venv-hub/user``: the single-user server. A venv whose ``site-packages`` has a ``.pth`` line naming
  the course ``.venv``'s ``site-packages``, so JupyterLab, torch and hookviz are the course's own, plus
  ``jupyterhub`` (for ``jupyterhub-singleuser``) and ``nbgitpuller``, installed with the course's
  versions as constraints, so nothing the course pins is installed twice or changed. The kernel is the
  course's ``.venv/bin/python`` itself (a kernelspec in the temporary folder says so).

Set ``HOOKVIZ_HUB_VENV`` to use another folder. Everything the script starts (git daemon, hub, proxy,
single-user servers, kernels) is stopped on every exit path, Ctrl+C and SIGTERM included; the run is
bounded by ``--timeout`` seconds.

Usage::

    python bench/bench_hub.py --install              # make .venv-hub/ (needs pip and the network)
    python bench/bench_hub.py --learners 10          # the rehearsal (default 10 learners)
    python bench/bench_hub.py --learners 2 --timeout 170

Exit status: 0 when every learner got through, 1 when one did not, 0 with a "skipped" line when the hub
packages are not installed (``make bench`` runs every bench script).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import json
import os
import platform
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results" / "hub_rehearsal.json"
COURSE_PYTHON = Path(sys.executable) if (REPO / ".venv") in Path(sys.executable).parents else REPO / ".venv/bin/python"
HUB_VENV = Path(os.environ.get("HOOKVIZ_HUB_VENV", REPO / ".venv-hub"))
#: The versions the rehearsal was measured with.
HUB_PINS = ("jupyterhub==6.1.1", "configurable-http-proxy==0.4.0")
USER_PINS = ("jupyterhub==6.1.1", "nbgitpuller==1.3.0")
#: The branch the rehearsal serves: a student release, as the link builder demands.
BRANCH = "rehearsal-student"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
NOTEBOOKS = ("06_hookviz_explorer.ipynb", "00_start_here.ipynb")
MIB = 1024 * 1024
#: The class the sizing table is for, and the headroom it adds to measured figures.
CLASS_SIZE = 30
HEADROOM = 1.5


def _load_link_builder():
    spec = importlib.util.spec_from_file_location("nbgitpuller_link", REPO / "workshop/jupyterhub/nbgitpuller_link.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------ environments


def hub_python() -> Path:
    """The python of the hub's venv."""
    return HUB_VENV / "hub/bin/python"


def user_python() -> Path:
    """The python of the single-user servers' venv."""
    return HUB_VENV / "user/bin/python"


def missing_packages() -> str | None:
    """Why the rehearsal cannot run here, or ``None`` when the hub packages are installed (found, not imported)."""
    checks = [
        (hub_python(), ("jupyterhub", "configurable_http_proxy")),
        (user_python(), ("jupyterhub.singleuser", "nbgitpuller", "jupyterlab", "torch", "websocket")),
        (COURSE_PYTHON, ("ipykernel", "hookviz", "psutil", "requests", "websocket")),
    ]
    code = "import importlib.util as u, sys; print(' '.join(n for n in sys.argv[1:] if u.find_spec(n) is None))"
    for python, names in checks:
        if not python.exists():
            return f"{python} not found (python bench/bench_hub.py --install, or make hub-env)"
        done = subprocess.run([str(python), "-c", code, *names], capture_output=True, text=True, timeout=120)
        if done.returncode or done.stdout.strip():
            return f"{python} lacks {done.stdout.strip() or done.stderr.strip()[-200:]}"
    if shutil.which("git") is None:
        return "git not found"
    return None


def install() -> None:
    """Make ``.venv-hub/hub`` and ``.venv-hub/user`` (the course's ``.venv`` is only read)."""
    base = sys._base_executable if hasattr(sys, "_base_executable") else sys.executable
    HUB_VENV.mkdir(parents=True, exist_ok=True)
    (HUB_VENV / ".gitignore").write_text("*\n", encoding="utf-8")
    subprocess.run([base, "-m", "venv", str(HUB_VENV / "hub")], check=True)
    subprocess.run([str(hub_python()), "-m", "pip", "install", "--quiet", *HUB_PINS], check=True)
    subprocess.run([base, "-m", "venv", str(HUB_VENV / "user")], check=True)
    course_site = _site_packages(COURSE_PYTHON)
    (_site_packages(user_python()) / "hookviz-course.pth").write_text(f"{course_site}\n", encoding="utf-8")
    freeze = subprocess.run(
        [str(COURSE_PYTHON), "-m", "pip", "freeze", "--exclude-editable"], capture_output=True, text=True, check=True
    ).stdout
    constraints = HUB_VENV / "course-constraints.txt"
    constraints.write_text("".join(f"{line}\n" for line in freeze.splitlines() if "==" in line), encoding="utf-8")
    subprocess.run(
        [str(user_python()), "-m", "pip", "install", "--quiet", "-c", str(constraints), *USER_PINS], check=True
    )
    print(f"installed {', '.join(HUB_PINS)} in {HUB_VENV / 'hub'} and {', '.join(USER_PINS)} in {HUB_VENV / 'user'}")


def _site_packages(python: Path) -> Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return Path(subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout.strip())


# ------------------------------------------------------------------ processes


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


#: The environment variable that marks every process of one rehearsal (value: that run's id).
MARKER = "HOOKVIZ_HUB_REHEARSAL"


class ProcessKeeper:
    """Every process the rehearsal starts, and everything they start, stopped when it ends.

    Each started process gets ``MARKER=<run id>`` in its environment; the hub passes it on to the proxy
    and (through ``Spawner.environment``) to the single-user servers, and they to their kernels. At the
    end every process carrying this run's marker is stopped, also one whose parent died first (the proxy
    outlives a hub stopped during its start-up, by JupyterHub's design).
    """

    def __init__(self) -> None:
        self.run_id = secrets.token_hex(8)
        self.started: list[subprocess.Popen] = []

    def start(self, cmd: list[str], log: Path, env: dict[str, str] | None = None, **kwargs) -> subprocess.Popen:
        """Start ``cmd`` in its own session with the run's marker, output to ``log``."""
        env = dict(os.environ if env is None else env, **{MARKER: self.run_id})
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env, **kwargs
            )
        self.started.append(proc)
        return proc

    def marked(self) -> list:
        """Live processes (psutil) that carry this run's marker."""
        import psutil

        found = []
        for proc in psutil.process_iter():
            with contextlib.suppress(psutil.Error):
                if proc.environ().get(MARKER) == self.run_id and proc.status() != psutil.STATUS_ZOMBIE:
                    found.append(proc)
        return found

    def stop_all(self, grace: float = 20.0) -> list[int]:
        """SIGTERM the started processes (the hub stops its servers and proxy), then kill what is left."""
        import psutil

        for proc in reversed(self.started):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for proc in self.started:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        leftovers = []
        for _ in range(3):  # a dying server may still start nothing new, but check again after killing
            remaining = self.marked()
            if not remaining:
                break
            for proc in remaining:
                with contextlib.suppress(psutil.Error):
                    proc.kill()
                    leftovers.append(proc.pid)
            psutil.wait_procs(remaining, timeout=5)
        for proc in self.started:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        return sorted(set(leftovers))


# ------------------------------------------------------------------ the course release and the hub


def make_release(work: Path, only: tuple[str, ...] = ()) -> Path:
    """Student copies committed alone on ``rehearsal-student`` in a bare repository; returns its folder.

    Every notebook (both editions), or only the notebooks named in ``only`` (the quick run).
    """
    src = work / "release"
    sources = [REPO / "notebooks" / name for name in only] or [REPO / "notebooks"]
    for source in sources:
        subprocess.run(
            [str(COURSE_PYTHON), str(REPO / "scripts/make_student.py"), str(source), str(src / "student")],
            check=True,
            capture_output=True,
            text=True,
        )
    (src / "README.md").write_text("Student copies of the hookviz course (a release branch).\n", encoding="utf-8")
    git = ["git", "-c", "user.email=release@hookviz.invalid", "-c", "user.name=release", "-C", str(src)]
    subprocess.run([*git, "init", "-q", "-b", BRANCH], check=True)
    subprocess.run([*git, "add", "-f", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "Student copies (rehearsal release)"], check=True)
    served = work / "git"
    served.mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(served / "hookviz")], check=True)
    return served


def write_hub_config(work: Path, ports: dict[str, int], token: str, password: str, run_id: str) -> Path:
    """``jupyterhub_config.py`` for the rehearsal: loopback only, shared password, one home per learner."""
    data = work / "jupyter-data"
    kernel_dir = data / "kernels/python3"
    kernel_dir.mkdir(parents=True)
    kernel = {
        "argv": [str(COURSE_PYTHON), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (hookviz course)",
        "language": "python",
    }
    (kernel_dir / "kernel.json").write_text(json.dumps(kernel), encoding="utf-8")
    course_prefix = COURSE_PYTHON.parent.parent
    environment = {
        "JUPYTER_PATH": f"{data}{os.pathsep}{course_prefix / 'share/jupyter'}",
        "JUPYTER_CONFIG_PATH": str(course_prefix / "etc/jupyter"),
        "OMP_NUM_THREADS": "1",
        MARKER: run_id,
    }
    args = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    config = f"""
c = get_config()  # noqa
c.JupyterHub.bind_url = "http://127.0.0.1:{ports["hub"]}"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{ports["hub_api"]}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{ports["proxy_api"]}"
c.ConfigurableHTTPProxy.command = [{str(HUB_VENV / "hub/bin/configurable-http-proxy")!r}]
c.JupyterHub.db_url = "sqlite:///{work / "hub/jupyterhub.sqlite"}"
c.JupyterHub.cookie_secret_file = {str(work / "hub/cookie_secret")!r}
c.JupyterHub.pid_file = {str(work / "hub/jupyterhub.pid")!r}
c.JupyterHub.cleanup_servers = True
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = {password!r}
c.Authenticator.allow_all = True
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {str(work / "home/{username}")!r}
c.Spawner.cmd = [{str(HUB_VENV / "user/bin/jupyterhub-singleuser")!r}]
c.Spawner.args = {args!r}
c.Spawner.default_url = "/lab"
c.Spawner.environment = {environment!r}
c.Spawner.start_timeout = 300
c.Spawner.http_timeout = 300
c.JupyterHub.services = [{{"name": "rehearsal", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{"name": "rehearsal", "services": ["rehearsal"],
    "scopes": ["admin:users", "admin:servers", "tokens", "list:users", "read:users"]}}]
"""
    path = work / "hub/jupyterhub_config.py"
    path.write_text(config, encoding="utf-8")
    return path


def wait_for(url: str, deadline: float, proc: subprocess.Popen | None = None, what: str = "") -> None:
    """Poll ``url`` until it answers 200 (the proxy answers 404 until the hub has added its route)."""
    import requests

    while True:
        try:
            if requests.get(url, timeout=5).ok:
                return
            raise requests.RequestException("not ready")
        except requests.RequestException:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"{what} exited with {proc.returncode}") from None
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} did not answer at {url}") from None
            time.sleep(0.3)


# ------------------------------------------------------------------ one learner


def decode_frame(frame: str | bytes) -> dict:
    """A kernel message from a websocket frame: JSON text, or the binary form a message with buffers takes.

    Binary frames (a widget sending a picture as a buffer): a big-endian uint32 count ``n``, ``n`` uint32
    offsets, then the JSON message at ``offsets[0]:offsets[1]`` and the buffers after it.
    """
    if isinstance(frame, str):
        return json.loads(frame)
    count = int.from_bytes(frame[:4], "big")
    offsets = [int.from_bytes(frame[4 * (i + 1) : 4 * (i + 2)], "big") for i in range(count)]
    end = offsets[1] if count > 1 else len(frame)
    return json.loads(frame[offsets[0] : end].decode("utf-8"))


class KernelChannel:
    """Execute code in a kernel over the Jupyter server's websocket (what JupyterLab does)."""

    def __init__(self, ws_url: str, token: str, timeout: float) -> None:
        import websocket

        self.session = uuid.uuid4().hex
        self.ws = websocket.create_connection(
            f"{ws_url}?session_id={self.session}", header=[f"Authorization: token {token}"], timeout=timeout
        )

    def close(self) -> None:
        """Close the websocket (the kernel keeps running)."""
        with contextlib.suppress(Exception):
            self.ws.close()

    def request(self, msg_type: str, content: dict, channel: str = "shell") -> str:
        """Send one message; return its id."""
        msg_id = uuid.uuid4().hex
        header = {
            "msg_id": msg_id,
            "msg_type": msg_type,
            "username": "learner",
            "session": self.session,
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "version": "5.3",
        }
        message = {"header": header, "parent_header": {}, "metadata": {}, "content": content, "channel": channel}
        self.ws.send(json.dumps(message))
        return msg_id

    def execute(self, code: str, deadline: float) -> tuple[dict, list[dict]]:
        """Run ``code``; return the ``execute_reply`` content and the iopub outputs, waiting for idle."""
        import websocket

        msg_id = self.request(
            "execute_request",
            {"code": code, "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False},
        )
        reply, outputs, idle = None, [], False
        while reply is None or not idle:
            self.ws.settimeout(max(1.0, deadline - time.monotonic()))
            try:
                message = decode_frame(self.ws.recv())
            except websocket.WebSocketTimeoutException:
                raise TimeoutError("cell did not finish in time") from None
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = message["header"]["msg_type"]
            if message.get("channel") == "shell" and kind == "execute_reply":
                reply = message["content"]
            elif kind == "status" and message["content"].get("execution_state") == "idle":
                idle = True
            elif kind in ("display_data", "execute_result", "error", "stream"):
                outputs.append({"type": kind, **message["content"]})
        return reply, outputs

    def wait_ready(self, deadline: float) -> None:
        """Wait for the kernel to answer ``kernel_info``."""
        import websocket

        msg_id = self.request("kernel_info_request", {})
        while True:
            self.ws.settimeout(max(1.0, deadline - time.monotonic()))
            try:
                message = decode_frame(self.ws.recv())
            except websocket.WebSocketTimeoutException:
                raise TimeoutError("kernel did not start in time") from None
            if message.get("parent_header", {}).get("msg_id") == msg_id and message.get("channel") == "shell":
                return


@dataclass
class LearnerResult:
    """What one simulated learner went through, in seconds since its login request."""

    name: str
    server_ready_s: float | None = None
    pulled_s: float | None = None
    kernel_ready_s: float | None = None
    first_widget_s: float | None = None
    nb06_done_s: float | None = None
    nb00_done_s: float | None = None
    cpu_to_first_widget_s: float | None = None
    cells_run: int = 0
    widgets_shown: int = 0
    errors: list[str] = field(default_factory=list)
    repull: dict[str, bool] = field(default_factory=dict)
    ws_retries: list[str] = field(default_factory=list)


class Learner:
    """One learner: a browser-like HTTP session against the hub, then kernels through the server API."""

    def __init__(
        self, index: int, base: str, admin_token: str, password: str, cell_timeout: float, cpu_probe=None
    ) -> None:
        import requests

        self.name = f"learner{index:02d}"
        self.base, self.admin_token, self.password = base, admin_token, password
        self.http = requests.Session()
        self.cell_timeout = cell_timeout
        self.result = LearnerResult(self.name)
        self.token = ""
        self.t0 = 0.0
        self.cpu_probe = cpu_probe  # name -> CPU seconds of the learner's server and kernels so far

    def _since(self) -> float:
        return round(time.monotonic() - self.t0, 2)

    def _admin(self, method: str, path: str, **kwargs):
        import requests

        headers = {"Authorization": f"token {self.admin_token}"}
        response = requests.request(method, f"{self.base}/hub/api{path}", headers=headers, timeout=60, **kwargs)
        response.raise_for_status()
        return response.json() if response.content else None

    def _user_api(self, method: str, path: str, **kwargs):
        headers = {"Authorization": f"token {self.token}"}
        response = self.http.request(
            method, f"{self.base}/user/{self.name}/api{path}", headers=headers, timeout=120, **kwargs
        )
        response.raise_for_status()
        return response.json() if response.content else None

    def log_in_and_spawn(self, deadline: float) -> None:
        """The login form, then the hub's implicit spawn; wait until the server is ready."""
        self.t0 = time.monotonic()
        self.http.get(f"{self.base}/hub/login", timeout=60).raise_for_status()
        form = {"username": self.name, "password": self.password, "_xsrf": self.http.cookies.get("_xsrf", "")}
        response = self.http.post(f"{self.base}/hub/login", data=form, timeout=120)
        response.raise_for_status()
        if "/hub/login" in urlsplit(response.url).path:
            raise RuntimeError("login refused")
        while True:
            server = self._admin("GET", f"/users/{self.name}").get("servers", {}).get("")
            if server and server.get("ready"):
                break
            if time.monotonic() > deadline:
                raise TimeoutError("server not ready in time")
            time.sleep(0.5)
        self.result.server_ready_s = self._since()
        self.token = self._admin("POST", f"/users/{self.name}/tokens", json={"note": "rehearsal"})["token"]

    def pull(self, link: str, repo: str, deadline: float) -> list[str]:
        """Open the nbgitpuller link (its page), then run the pull it starts; return nbgitpuller's lines."""
        page = self.http.get(link, timeout=120)
        page.raise_for_status()
        if f"/user/{self.name}/git-pull" not in page.url:
            raise RuntimeError(f"the link landed on {page.url}")
        params = {"repo": repo, "branch": BRANCH, "targetpath": "hookviz"}
        lines, finished = [], False
        with self.http.get(
            f"{self.base}/user/{self.name}/git-pull/api", params=params, stream=True, timeout=120
        ) as stream:
            stream.raise_for_status()
            for raw in stream.iter_lines(decode_unicode=True):
                if not raw or not raw.startswith("data:"):
                    continue
                event = json.loads(raw[5:])
                lines.append(event.get("output") or event.get("message") or event.get("phase", ""))
                if event.get("phase") == "error":
                    raise RuntimeError(f"nbgitpuller: {event.get('message')}")
                if event.get("phase") == "finished":
                    finished = True
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError("pull did not finish in time")
        if not finished:
            raise RuntimeError("nbgitpuller stream ended without 'finished'")
        return lines

    def run_notebook(self, notebook: str, deadline: float, until_widget: bool = False) -> None:
        """Open ``student/<notebook>`` in a new kernel and run its code cells in order, like Run All.

        With ``until_widget`` it stops after the first cell that displays a widget.
        """
        path = f"hookviz/student/{notebook}"
        model = self._user_api("GET", f"/contents/{path}", params={"content": 1})
        session = self._user_api(
            "POST",
            "/sessions",
            json={"path": path, "name": notebook, "type": "notebook", "kernel": {"name": "python3"}},
        )
        ws_url = (
            self.base.replace("http://", "ws://") + f"/user/{self.name}/api/kernels/{session['kernel']['id']}/channels"
        )
        channel = self._connect(ws_url, deadline)
        try:
            channel.wait_ready(min(deadline, time.monotonic() + self.cell_timeout))
            if self.result.kernel_ready_s is None:
                self.result.kernel_ready_s = self._since()
            for index, cell in enumerate(model["content"]["cells"]):
                if cell["cell_type"] != "code" or not "".join(cell["source"]).strip():
                    continue
                cell_deadline = min(deadline, time.monotonic() + self.cell_timeout)
                try:
                    reply, outputs = channel.execute("".join(cell["source"]), cell_deadline)
                except Exception as exc:
                    raise RuntimeError(f"{notebook} cell {index}: {type(exc).__name__}: {exc}") from exc
                self.result.cells_run += 1
                widgets = [o for o in outputs if WIDGET_VIEW in o.get("data", {})]
                if widgets and self.result.first_widget_s is None:
                    self.result.first_widget_s = self._since()
                    if self.cpu_probe is not None:
                        self.result.cpu_to_first_widget_s = round(self.cpu_probe(self.name), 2)
                self.result.widgets_shown += len(widgets)
                if reply.get("status") == "error" and "raises-exception" not in cell["metadata"].get("tags", []):
                    raise RuntimeError(f"{notebook} cell {index}: {reply.get('ename')}: {reply.get('evalue')}")
                if until_widget and widgets:
                    return
        finally:
            channel.close()

    def _connect(self, ws_url: str, deadline: float, attempts: int = 4) -> KernelChannel:
        """Open the kernel's websocket; on a failed handshake try again, as JupyterLab does (counted)."""
        import websocket

        for attempt in range(attempts):
            try:
                return KernelChannel(ws_url, self.token, self.cell_timeout)
            except (websocket.WebSocketException, OSError) as exc:
                if attempt == attempts - 1 or time.monotonic() > deadline:
                    raise
                self.result.ws_retries.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:80]}")
                time.sleep(2 * (attempt + 1))
        raise AssertionError("unreachable")

    def check_repull(self, link: str, repo: str, deadline: float) -> None:
        """A re-pull keeps a notebook the learner edited and restores one the learner deleted."""
        path = "hookviz/student/00_start_here.ipynb"
        model = self._user_api("GET", f"/contents/{path}", params={"content": 1})
        model["content"]["cells"][0]["source"] = "# my notes\n" + "".join(model["content"]["cells"][0]["source"])
        self._user_api("PUT", f"/contents/{path}", json={"type": "notebook", "content": model["content"]})
        self.pull(link, repo, deadline)
        again = self._user_api("GET", f"/contents/{path}", params={"content": 1})
        self.result.repull["edited notebook kept"] = "".join(again["content"]["cells"][0]["source"]).startswith(
            "# my notes"
        )
        self._user_api("DELETE", f"/contents/{path}")
        self.pull(link, repo, deadline)
        fresh = self._user_api("GET", f"/contents/{path}", params={"content": 1})
        self.result.repull["deleted notebook restored fresh"] = not "".join(
            fresh["content"]["cells"][0]["source"]
        ).startswith("# my notes")

    def run(self, link: str, repo: str, deadline: float, check_repull: bool, quick: bool = False) -> None:
        """The whole visit (``quick``: 06 up to its first widget only); errors are recorded, never raised."""
        try:
            self.log_in_and_spawn(deadline)
            self.pull(link, repo, deadline)
            self.result.pulled_s = self._since()
            names = {item["name"] for item in self._user_api("GET", "/contents/hookviz/student")["content"]}
            absent = [n for n in NOTEBOOKS if n not in names]
            if absent:
                raise RuntimeError(f"not pulled: {absent}")
            if "notebooks" in {item["name"] for item in self._user_api("GET", "/contents/hookviz")["content"]}:
                raise RuntimeError("the release brought the teacher notebooks (solutions) too")
            self.run_notebook(NOTEBOOKS[0], deadline, until_widget=quick)
            if self.result.first_widget_s is None:
                raise RuntimeError(f"{NOTEBOOKS[0]} displayed no widget")
            if not quick:
                self.result.nb06_done_s = self._since()
                self.run_notebook(NOTEBOOKS[1], deadline)
                self.result.nb00_done_s = self._since()
            if check_repull:
                self.check_repull(link, repo, deadline)
        except Exception as exc:  # noqa: BLE001 - a learner's failure is a result to report
            self.result.errors.append(f"{type(exc).__name__}: {exc}")


# ------------------------------------------------------------------ memory and CPU


def learner_processes(hub_pid: int) -> dict[str, dict[str, list]]:
    """``{learner: {"server": [proc], "kernels": [procs]}}`` found under the hub process."""
    import psutil

    found: dict[str, dict[str, list]] = {}
    with contextlib.suppress(psutil.Error):
        for proc in psutil.Process(hub_pid).children(recursive=False):
            with contextlib.suppress(psutil.Error):
                user = proc.environ().get("JUPYTERHUB_USER")
                if not user:
                    continue
                found[user] = {"server": [proc], "kernels": proc.children(recursive=True)}
    return found


class MemorySampler(threading.Thread):
    """Every second: the RSS of each learner's server and kernels (peaks kept), and MemAvailable."""

    def __init__(self, hub_pid: int) -> None:
        super().__init__(daemon=True)
        self.hub_pid = hub_pid
        self.peak: dict[str, dict[str, float]] = {}
        self.min_available = _mem_available()
        self.stop_event = threading.Event()

    def run(self) -> None:
        """Sample until stopped."""
        import psutil

        while not self.stop_event.wait(1.0):
            self.min_available = min(self.min_available, _mem_available())
            for user, procs in learner_processes(self.hub_pid).items():
                figures = {}
                for role, members in procs.items():
                    total = 0
                    for proc in members:
                        with contextlib.suppress(psutil.Error):
                            total += proc.memory_info().rss
                    figures[role] = total / MIB
                figures["total"] = figures["server"] + figures["kernels"]
                peak = self.peak.setdefault(user, dict.fromkeys(figures, 0.0))
                for key, value in figures.items():
                    peak[key] = max(peak[key], value)


def _mem_available() -> float:
    with open("/proc/meminfo", encoding="ascii") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(hub_pid: int, user: str) -> float:
    """CPU seconds (user + system) used so far by ``user``'s single-user server and kernels."""
    import psutil

    total = 0.0
    for members in learner_processes(hub_pid).get(user, {}).values():
        for proc in members:
            with contextlib.suppress(psutil.Error):
                times = proc.cpu_times()
                total += times.user + times.system
    return total


def snapshot(hub_pid: int) -> dict[str, dict[str, float]]:
    """RSS, PSS and USS (MiB) and CPU seconds of every learner's server and kernels, now."""
    import psutil

    result = {}
    for user, procs in learner_processes(hub_pid).items():
        figures: dict = {}
        kernels: list[tuple[float, int, int]] = []
        for role, members in procs.items():
            for proc in members:
                with contextlib.suppress(psutil.Error):
                    full = proc.memory_full_info()
                    cpu = proc.cpu_times()
                    for key, value in (("rss", full.rss), ("pss", full.pss), ("uss", full.uss)):
                        figures[f"{role}_{key}"] = figures.get(f"{role}_{key}", 0.0) + value / MIB
                    figures["cpu_s"] = figures.get("cpu_s", 0.0) + cpu.user + cpu.system
                    if role == "kernels":  # in start order: 06's kernel, then 00's
                        kernels.append((proc.create_time(), round(full.rss / MIB), round(full.pss / MIB)))
            figures.setdefault(f"{role}_count", len(members))
        figures["kernel_rss_pss_mib"] = [(rss, pss) for _, rss, pss in sorted(kernels)]
        result[user] = figures
    return result


# ------------------------------------------------------------------ report


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def sizing(stats: dict) -> dict:
    """Memory and CPU for a class of :data:`CLASS_SIZE`, from the measured per-learner figures."""
    peak = stats["peak_rss_mib"]["max"]
    held = stats["end_pss_mib"]["median"]
    cpu_widget = stats["cpu_to_first_widget_s"]["median"]
    result = {
        "memory_limit_per_learner_mib": peak * HEADROOM,
        "memory_guarantee_per_learner_mib": held * HEADROOM,
        "ram_for_class_gib": (CLASS_SIZE * held * HEADROOM + 1024) / 1024,
        "ram_for_class_every_learner_at_limit_gib": (CLASS_SIZE * peak * HEADROOM + 1024) / 1024,
        "cpu_seconds_to_first_widget": cpu_widget,
        "cores_for_class_first_widget_in_1_min": CLASS_SIZE * cpu_widget / 60,
    }
    if "cpu_s" in stats and "all_done_s" in stats:
        result["cpu_seconds_06_and_00"] = stats["cpu_s"]["median"]
        result["cores_for_class_06_and_00_in_5_min"] = CLASS_SIZE * stats["cpu_s"]["median"] / 300
    return result


def print_sizing(figures: dict) -> None:
    """Print the sizing table."""
    print(f"\nsizing for {CLASS_SIZE} learners (x{HEADROOM} headroom on measured figures; +1 GiB hub, proxy, system):")
    print(
        f"  memory limit per learner      = max peak RSS x{HEADROOM}:"
        f" {figures['memory_limit_per_learner_mib']:6.0f} MiB"
    )
    print(
        f"  memory guarantee per learner  = median PSS held x{HEADROOM}: "
        f"{figures['memory_guarantee_per_learner_mib']:6.0f} MiB"
    )
    print(f"  RAM for the class (guarantees):             {figures['ram_for_class_gib']:6.1f} GiB")
    print(
        f"  RAM if all {CLASS_SIZE} reach the limit at once:  "
        f" {figures['ram_for_class_every_learner_at_limit_gib']:6.1f} GiB"
    )
    print(
        f"  CPU to the first widget: {figures['cpu_seconds_to_first_widget']:.1f} CPU-s per learner; "
        f"{CLASS_SIZE} learners in the same minute need {figures['cores_for_class_first_widget_in_1_min']:.1f} cores"
    )
    if "cpu_seconds_06_and_00" in figures:
        print(
            f"  CPU for 06 + 00 top to bottom: {figures['cpu_seconds_06_and_00']:.1f} CPU-s per learner; {CLASS_SIZE}"
            f" learners within 5 minutes need {figures['cores_for_class_06_and_00_in_5_min']:.1f} cores"
        )


def report(results: list[LearnerResult], peaks: dict, snap: dict, machine: dict) -> dict:
    """Print the per-learner table and the sizing table; return everything as a dict."""
    print(f"\n{len(results)} learners on {machine['cpus']} CPUs ({machine['platform']})")
    print(
        f"{'learner':<10}{'ready':>7}{'pulled':>8}{'widget':>8}{'06 done':>8}{'00 done':>8}"
        f"{'peak RSS':>10}{'end PSS':>9}{'CPU s':>7}  errors"
    )
    for res in results:
        peak, snapshot_figures = peaks.get(res.name, {}), snap.get(res.name, {})
        pss = snapshot_figures.get("server_pss", 0) + snapshot_figures.get("kernels_pss", 0)

        def cell(value: float | None) -> str:
            return f"{value:.1f}" if value is not None else "-"

        print(
            f"{res.name:<10}{cell(res.server_ready_s):>7}{cell(res.pulled_s):>8}{cell(res.first_widget_s):>8}"
            f"{cell(res.nb06_done_s):>8}{cell(res.nb00_done_s):>8}{peak.get('total', 0):>9.0f}M{pss:>8.0f}M"
            f"{snapshot_figures.get('cpu_s', 0):>7.1f}  {'; '.join(res.errors) or 'ok'}"
        )
    ok = [r for r in results if not r.errors]
    summary: dict = {"learners": len(results), "completed": len(ok), "machine": machine}
    if ok:
        names = {r.name for r in ok}
        per = {
            "time_to_first_widget_s": [r.first_widget_s for r in ok],
            "server_ready_s": [r.server_ready_s for r in ok],
            "pulled_s": [r.pulled_s for r in ok],
            "all_done_s": [r.nb00_done_s for r in ok],
            "nb06_done_s": [r.nb06_done_s for r in ok],
            "peak_rss_mib": [peaks[n]["total"] for n in names if n in peaks],
            "peak_server_rss_mib": [peaks[n]["server"] for n in names if n in peaks],
            "peak_kernels_rss_mib": [peaks[n]["kernels"] for n in names if n in peaks],
            "end_pss_mib": [snap[n].get("server_pss", 0) + snap[n].get("kernels_pss", 0) for n in names if n in snap],
            "end_uss_mib": [snap[n].get("server_uss", 0) + snap[n].get("kernels_uss", 0) for n in names if n in snap],
            "cpu_s": [snap[n].get("cpu_s", 0) for n in names if n in snap],
            "cpu_to_first_widget_s": [r.cpu_to_first_widget_s for r in ok],
        }
        stats = {key: {"median": _median(v), "max": max(v)} for key, v in per.items() if v and None not in v}
        summary["stats"] = stats
        print("\nmedian / max over the learners that got through:")
        for key, value in stats.items():
            print(f"  {key:<26} {value['median']:8.1f} / {value['max']:8.1f}")
        drop = machine["mem_available_before_mib"] - machine["mem_available_min_mib"]
        summary["mem_available_drop_mib"] = drop
        print(
            f"  MemAvailable fell by {drop:.0f} MiB at most during the run (the whole machine: noisy where"
            " others work on it too)"
        )
        summary["sizing"] = sizing(stats)
        print_sizing(summary["sizing"])
    summary["learners_detail"] = [asdict(r) for r in results]
    summary["peak_rss_mib"] = peaks
    summary["end_snapshot_mib"] = snap
    return summary


# ------------------------------------------------------------------ main


@contextlib.contextmanager
def terminate_on_signals() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into SystemExit and SIGINT into KeyboardInterrupt, so every ``finally`` runs."""

    def handler(signum, frame):
        raise SystemExit(128 + signum)

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}
    # Ctrl+C, even where the parent ignores SIGINT (a background job of a script)
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, interrupt)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def rehearse(
    learners: int, timeout: float, cell_timeout: float, keep: bool, quick: bool = False, results: Path = RESULTS
) -> int:
    """Run the whole rehearsal; return the exit status (the hub stops the servers when it is stopped)."""
    deadline = time.monotonic() + timeout
    link_builder = _load_link_builder()
    work = Path(tempfile.mkdtemp(prefix="hookviz-hub-"))
    (work / "hub").mkdir()
    (work / "home").mkdir()
    keeper = ProcessKeeper()
    sampler = None
    status = 1
    try:
        with terminate_on_signals():
            served = make_release(work, NOTEBOOKS if quick else ())
            ports = {key: free_port() for key in ("git", "hub", "hub_api", "proxy_api")}
            keeper.start(
                ["git", "daemon", "--reuseaddr", "--export-all", f"--base-path={served}", "--listen=127.0.0.1",
                 f"--port={ports['git']}", str(served)],
                work / "git-daemon.log",
            )  # fmt: skip
            repo_url = f"git://127.0.0.1:{ports['git']}/hookviz"
            token, password = secrets.token_hex(16), secrets.token_hex(8)
            config = write_hub_config(work, ports, token, password, keeper.run_id)
            before = _mem_available()
            hub_env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
            hub = keeper.start(
                [str(HUB_VENV / "hub/bin/jupyterhub"), "-f", str(config)], work / "hub/hub.log",
                cwd=work / "hub", env=hub_env,
            )  # fmt: skip
            base = f"http://127.0.0.1:{ports['hub']}"
            wait_for(f"{base}/hub/api/", min(deadline, time.monotonic() + 120), hub, "jupyterhub")
            start = time.monotonic()
            print(f"release built and hub up in {start - (deadline - timeout):.1f} s; {learners} learners log in now")
            link = link_builder.build_link(base, BRANCH, repo=repo_url, notebook=NOTEBOOKS[1])
            sampler = MemorySampler(hub.pid)
            sampler.start()
            probe = functools.partial(cpu_seconds, hub.pid)
            crowd = [Learner(i, base, token, password, cell_timeout, probe) for i in range(learners)]
            threads = [
                threading.Thread(target=lr.run, args=(link, repo_url, deadline, i == 0, quick), daemon=True)
                for i, lr in enumerate(crowd)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(max(0.0, deadline - time.monotonic()))
            late = [lr.name for lr, th in zip(crowd, threads, strict=True) if th.is_alive()]
            for lr in crowd:
                if lr.name in late:
                    lr.result.errors.append("still running at the timeout")
            snap = snapshot(hub.pid)
            sampler.stop_event.set()
            sampler.join(5)
            machine = {
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
                "load_average": os.getloadavg(),
                "mem_available_before_mib": before,
                "mem_available_min_mib": sampler.min_available,
                "wall_s": time.monotonic() - start,
            }
            summary = report([lr.result for lr in crowd], sampler.peak, snap, machine)
            repull = crowd[0].result.repull
            print(f"\nre-pull (learner00): {repull or 'not reached'}")
            retries = [(lr.name, r) for lr in crowd for r in lr.result.ws_retries]
            print(f"kernel websocket handshakes retried: {len(retries)} {retries if retries else ''}")
            print(f"wall time of the rehearsal: {machine['wall_s']:.0f} s; load average at the end: "
                  f"{', '.join(f'{x:.1f}' for x in machine['load_average'])}")  # fmt: skip
            summary["quick"] = quick
            results.parent.mkdir(parents=True, exist_ok=True)
            results.write_text(json.dumps(summary, indent=1, default=str), encoding="utf-8")
            status = 0 if summary["completed"] == learners and all(repull.values()) and repull else 1
    except BaseException as exc:
        if not isinstance(exc, SystemExit | KeyboardInterrupt):
            print(f"rehearsal failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            log = work / "hub/hub.log"
            if log.exists():
                print(log.read_text(errors="replace")[-3000:], file=sys.stderr)
        status = 1
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            print("interrupted: stopping everything the rehearsal started", file=sys.stderr)
    finally:
        if sampler is not None:
            sampler.stop_event.set()
        leftovers = keeper.stop_all()
        if leftovers:
            print(f"killed {len(leftovers)} processes that outlived the hub's shutdown", file=sys.stderr)
        if keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return status


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", action="store_true", help="make .venv-hub/ (hub and single-user venvs)")
    parser.add_argument("--learners", type=int, default=10, help="simulated learners (default 10)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds for the whole run (default 900)")
    parser.add_argument("--cell-timeout", type=float, default=300, help="seconds for one cell (default 300)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, homes)")
    parser.add_argument("--quick", action="store_true", help="run 06 only up to its first widget, skip 00")
    parser.add_argument("--results", type=Path, default=RESULTS, help=f"JSON file for the figures (default {RESULTS})")
    args = parser.parse_args(argv)
    if args.install:
        install()
        return 0
    why = missing_packages()
    if why:
        print(f"bench_hub: skipped: {why}")
        return 0
    if not 1 <= args.learners <= 40:
        parser.error("--learners must be 1..40")
    return rehearse(args.learners, args.timeout, args.cell_timeout, args.keep, args.quick, args.results)


if __name__ == "__main__":
    sys.exit(main())
