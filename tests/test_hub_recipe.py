"""The JupyterHub recipe in ``workshop/jupyterhub/`` holds together (cheap: no hub is started).

* ``config.yaml`` (Zero to JupyterHub) parses; its idle culler outlasts the longest break of
  ``workshop/agenda.md`` (and at least an hour); requests and limits are sane; the postStart pull names a
  student release branch and writes into the home folder;
* the image keeps the course outside ``/home`` (``build-image.sh``'s ``--target-repo-dir``), and so does
  the TLJH script, which also installs the pinned CPU torch and sets a culler longer than the breaks;
* ``nbgitpuller_link.py`` builds the documented link and refuses any ref that is not a student release;
* the TLJH config snippet loads with traitlets and sets one torch thread.

Optional: with ``REPO2DOCKER`` set (as for ``tests/test_binder.py``), ``repo2docker --no-build`` with the
flags of ``build-image.sh`` must produce a Dockerfile that installs nbgitpuller.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path, PurePosixPath
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
RECIPE = REPO / "workshop" / "jupyterhub"
AGENDA = REPO / "workshop" / "agenda.md"
#: What the culler must outlast at the very least, whatever the agenda says (an hour).
MIN_CULL_SECONDS = 3600
#: The rehearsal's figures per learner with notebooks 06 and 00 open (README.md): held (PSS), peak (RSS).
HELD_MIB, PEAK_MIB = 731, 994
#: Headroom on measured memory.
HEADROOM = 1.5


def _link_module():
    spec = importlib.util.spec_from_file_location("nbgitpuller_link", RECIPE / "nbgitpuller_link.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def longest_break_minutes(agenda: str) -> int:
    """The longest break in the agenda, in minutes.

    Reads every Markdown table whose header has a ``min`` column: a row whose text says "break" gives its
    minutes; prose such as "a 15-minute break" counts too. Raises ``ValueError`` when no break is found.
    """
    found: list[int] = []
    minutes_column = None
    for line in agenda.splitlines():
        if not line.lstrip().startswith("|"):
            minutes_column = None if not line.strip() else minutes_column
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        lowered = [cell.lower() for cell in cells]
        if "min" in lowered or "minutes" in lowered:
            minutes_column = lowered.index("min") if "min" in lowered else lowered.index("minutes")
            continue
        if minutes_column is None or minutes_column >= len(cells):
            continue
        if re.search(r"\bbreak\b", line, re.IGNORECASE) and cells[minutes_column].isdigit():
            found.append(int(cells[minutes_column]))
    found += [int(m) for m in re.findall(r"(\d+)[- ]minute break", agenda, re.IGNORECASE)]
    if not found:
        raise ValueError("no break found in the agenda")
    return max(found)


@pytest.fixture(scope="module")
def z2jh() -> dict:
    return yaml.safe_load((RECIPE / "config.yaml").read_text(encoding="utf-8"))


def test_break_parser_reads_tables_and_prose():
    table = "| clock | min | what |\n|---|---|---|\n| 1:00 | 12 | **Break.** stretch |\n| 1:12 | 30 | work |\n"
    assert longest_break_minutes(table) == 12
    assert longest_break_minutes("Then a 20-minute break.\n" + table) == 20
    with pytest.raises(ValueError):
        longest_break_minutes("| clock | min | what |\n|---|---|---|\n| 0:00 | 5 | launch |\n")


def test_culler_outlasts_the_longest_break(z2jh):
    longest = longest_break_minutes(AGENDA.read_text(encoding="utf-8"))
    cull = z2jh["cull"]
    assert cull["enabled"] is True
    assert cull["timeout"] >= max(MIN_CULL_SECONDS, 2 * 60 * longest), (cull["timeout"], longest)
    assert 0 < cull["every"] <= cull["timeout"] / 4, "check often enough that the timeout means something"
    assert cull.get("maxAge", 0) == 0, "a maximum age would stop active learners' servers"
    tljh = (RECIPE / "tljh.sh").read_text(encoding="utf-8")
    timeout = int(re.search(r"tljh-config set services\.cull\.timeout (\d+)", tljh)[1])
    assert timeout >= max(MIN_CULL_SECONDS, 2 * 60 * longest)
    assert int(re.search(r"tljh-config set services\.cull\.every (\d+)", tljh)[1]) <= timeout / 4


def _bytes(quantity: str | int) -> float:
    """A memory quantity as JupyterHub's ByteSpecification reads it (K, M, G, T count in 1024s)."""
    if isinstance(quantity, int | float):
        return float(quantity)
    units = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    return float(quantity[:-1]) * units[quantity[-1]]


def test_resources_per_learner(z2jh):
    """The limits cover the rehearsal's figures (README.md) with room to spare."""
    user = z2jh["singleuser"]
    guarantee, limit = _bytes(user["memory"]["guarantee"]), _bytes(user["memory"]["limit"])
    assert HELD_MIB * HEADROOM * 2**20 <= guarantee <= limit
    assert limit >= PEAK_MIB * HEADROOM * 2**20
    assert 0 < float(user["cpu"]["guarantee"]) <= float(user["cpu"]["limit"])
    assert user["extraEnv"]["OMP_NUM_THREADS"] == "1"
    assert user["defaultUrl"] == "/lab"
    tljh = (RECIPE / "tljh.sh").read_text(encoding="utf-8")
    assert _bytes(re.search(r"tljh-config set limits\.memory (\S+)", tljh)[1]) >= PEAK_MIB * HEADROOM * 2**20
    readme = (RECIPE / "README.md").read_text(encoding="utf-8")
    assert f"{HELD_MIB} MiB" in readme and f"{PEAK_MIB} MiB" in readme, "README.md reports the figures used here"


def test_course_lives_outside_home():
    script = (RECIPE / "build-image.sh").read_text(encoding="utf-8")
    target = PurePosixPath(re.search(r"^TARGET_REPO_DIR=(\S+)$", script, re.MULTILINE)[1])
    assert '--target-repo-dir "${TARGET_REPO_DIR}"' in script
    assert target.is_absolute() and PurePosixPath("/home") not in (target, *target.parents), target
    assert "nbgitpuller" in re.search(r'^APPENDIX="(.*)"$', script, re.MULTILINE)[1]
    tljh = (RECIPE / "tljh.sh").read_text(encoding="utf-8")
    course = PurePosixPath(re.search(r"^COURSE=(\S+)", tljh, re.MULTILINE)[1])
    assert course.is_absolute() and PurePosixPath("/home") not in course.parents


def test_tljh_installs_the_pinned_cpu_torch():
    pins = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    torch_pin = next(p for p in pins if p.startswith("torch=="))
    tljh = (RECIPE / "tljh.sh").read_text(encoding="utf-8")
    assert f"--index-url https://download.pytorch.org/whl/cpu {torch_pin}" in tljh
    assert "assert not torch.version.cuda" in tljh


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
@pytest.mark.parametrize("name", ["build-image.sh", "tljh.sh"])
def test_shell_scripts_parse(name):
    subprocess.run(["bash", "-n", str(RECIPE / name)], check=True, timeout=30)


def test_poststart_pulls_a_student_release_into_home(z2jh):
    command = " ".join(z2jh["singleuser"]["lifecycleHooks"]["postStart"]["exec"]["command"])
    pulled = re.search(r"gitpuller (\S+) (\S+) (\S+)", command)
    assert pulled, command
    repo, branch, folder = pulled.groups()
    assert _link_module().STUDENT_RELEASE.match(branch.replace("<TAG>", "workshop-2026-05")), branch
    assert folder.startswith("/home/jovyan/"), "the pull goes to the persistent home, next to the learner's work"
    assert "|| true" in command, "an unreachable git host must not stop the server from starting"


def test_link_builder_makes_the_documented_link():
    links = _link_module()
    link = links.build_link("https://hub.example.org/", "workshop-2026-05-student")
    parts = urlsplit(link)
    assert parts.path == "/hub/user-redirect/git-pull"
    query = {key: value[0] for key, value in parse_qs(parts.query).items()}
    assert query == {
        "repo": "https://github.com/hookviz/hookviz",
        "branch": "workshop-2026-05-student",
        "targetpath": "hookviz",
        "urlpath": "lab/tree/hookviz/student/00_start_here.ipynb",
    }
    assert link in (RECIPE / "README.md").read_text(encoding="utf-8"), "README.md shows this exact link"
    other = links.build_link("https://hub.example.org", "w-student", notebook="zh/06_hookviz_explorer.ipynb")
    assert "urlpath=lab/tree/hookviz/student/zh/06_hookviz_explorer.ipynb" in other


@pytest.mark.parametrize(
    "branch", ["main", "master", "HEAD", "workshop-2026-05", "student", "-student", "workshop-2026-05-student/x"]
)
def test_link_builder_refuses_refs_that_are_not_student_releases(branch):
    links = _link_module()
    with pytest.raises(links.NotAStudentRelease):
        links.build_link("https://hub.example.org", branch)
    done = subprocess.run(
        [sys.executable, str(RECIPE / "nbgitpuller_link.py"), "--", "https://hub.example.org", branch],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "not a student release" in done.stderr and not done.stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="no git")
def test_link_builder_checks_what_the_branch_holds(tmp_path):
    """--check refuses a release branch whose tree carries more than student/ (the teacher notebooks)."""
    git = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t", "-C", str(tmp_path)]
    subprocess.run([*git, "init", "-q", "-b", "w-student"], check=True)
    (tmp_path / "student").mkdir()
    (tmp_path / "student" / "00_start_here.ipynb").write_text("{}", encoding="utf-8")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "student only"], check=True)
    cli = [sys.executable, str(RECIPE / "nbgitpuller_link.py"), "https://hub.example.org", "w-student"]
    good = subprocess.run([*cli, "--check", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert good.returncode == 0 and "branch=w-student" in good.stdout, good.stderr
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "00_start_here.ipynb").write_text("{}", encoding="utf-8")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "teacher notebooks too"], check=True)
    bad = subprocess.run([*cli, "--check", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "notebooks/00_start_here.ipynb" in bad.stderr and not bad.stdout
    assert _link_module().files_outside_student("w-student", str(tmp_path)) == ["notebooks/00_start_here.ipynb"]


def test_link_builder_refuses_paths_outside_student():
    with pytest.raises(ValueError):
        _link_module().build_link("https://hub.example.org", "w-student", notebook="../notebooks/00_start_here.ipynb")


def test_tljh_snippet_sets_one_thread():
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("tljh_hookviz_config.py", path=str(RECIPE)).load_config()
    assert config.Spawner.environment.get_value({}) == {"OMP_NUM_THREADS": "1"}
    assert config.Authenticator.allow_all is True


def _repo2docker() -> str | None:
    return os.environ.get("REPO2DOCKER") or shutil.which("repo2docker")


@pytest.mark.skipif(_repo2docker() is None, reason="repo2docker not installed (optional; set REPO2DOCKER)")
def test_repo2docker_accepts_the_image_flags():
    script = (RECIPE / "build-image.sh").read_text(encoding="utf-8")
    target = re.search(r"^TARGET_REPO_DIR=(\S+)$", script, re.MULTILINE)[1]
    appendix = re.search(r'^APPENDIX="(.*)"$', script, re.MULTILINE)[1]
    cmd = [_repo2docker(), "--no-build", "--debug", "--no-run", "--user-id", "1000", "--user-name", "jovyan",
           "--target-repo-dir", target, "--appendix", appendix, "."]  # fmt: skip
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-2000:]
    assert appendix in text and "./binder/postBuild" in text


def test_tljh_installs_the_course_jupyterlab_defaults():
    """The hub's learners get binder/overrides.json (saved widget state, closing a tab shuts its kernel down), as
    on Binder (postBuild) and with `make lab`; TLJH's user environment is /opt/tljh/user."""
    tljh = (RECIPE / "tljh.sh").read_text(encoding="utf-8")
    line = re.search(r"^install .*binder/overrides\.json.*$", tljh, re.MULTILINE)
    assert line, "tljh.sh must install binder/overrides.json"
    assert line[0].endswith("/opt/tljh/user/share/jupyter/lab/settings/overrides.json"), line[0]


def test_the_hub_installs_a_font_that_draws_chinese():
    """TLJH installs the font itself; the Kubernetes image gets it from binder/apt.txt (repo2docker reads binder/)."""
    tljh = (RECIPE / "tljh.sh").read_text(encoding="utf-8")
    assert "apt-get install -y --no-install-recommends fonts-wqy-microhei" in tljh
    assert "fonts-wqy-microhei" in (REPO / "binder" / "apt.txt").read_text(encoding="utf-8")
