"""``make release-student``: the commit Colab's student links open holds student copies and nothing else.

The target is run for real, on a throw-away git repository made from this checkout's Makefile, scripts,
notebooks and ``.gitignore`` (committed and tagged there), with the Python running the tests standing in
for ``.venv``. Then the release tag is read back from git: the release commit sits on the tag, its tree holds only
files under ``student/`` (one per course notebook, every edition, plus ``article_verdicts.md``), and no
file in it has a solution cell, a visible claim verdict or the teacher run's widget state; the Colab
install is pinned to the tag; the checkout the target ran in is left as it was.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from notebook_tools import REPO

TAG = "workshop-test"
#: What the throw-away repository needs from this checkout for the target to run.
NEEDED = ("Makefile", "pyproject.toml", ".gitignore", "scripts", "notebooks")
VERDICT_IN_HEADING = re.compile(
    r"^#{1,6}\s.*—\s*\*\*(TRUE|FALSE|PARTLY|OUTDATED|正确|错误|部分正确|已过时)\*\*", re.MULTILINE
)
VERDICT_IN_TABLE = re.compile(
    r"^\|\s*[AB]\d+\s*\|.*\*\*(TRUE|FALSE|PARTLY|OUTDATED|正确|错误|部分正确|已过时)\*\*", re.MULTILINE
)

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or shutil.which("make") is None, reason="needs git and make"
)


def git(repo: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org")
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_GLOBAL": os.devnull}
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def _copy_course(dst: Path) -> None:
    for name in NEEDED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, dst / name, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
        else:
            shutil.copy2(source, dst / name)


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> tuple[Path, str]:
    """A throw-away course repository with TAG, after ``make release-student TAG=...``; and make's output."""
    repo = tmp_path_factory.mktemp("course")
    _copy_course(repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the course")
    git(repo, "tag", TAG)
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org", GIT_CONFIG_GLOBAL=os.devnull)
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    # -o: the venv stamp counts as made; PY: this Python (it has nbformat) instead of the repository's .venv
    proc = subprocess.run(
        ["make", "-o", ".venv/.hookviz-installed", "release-student", f"TAG={TAG}", f"PY={sys.executable}"],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return repo, proc.stdout


def test_the_release_commit_sits_on_the_tag_and_holds_only_student_copies(released):
    repo, output = released
    release = git(repo, "rev-parse", f"{TAG}-student^{{commit}}").strip()
    assert git(repo, "rev-parse", f"{release}^").strip() == git(repo, "rev-parse", f"{TAG}^{{commit}}").strip()
    # nbgitpuller and Colab bring learners the whole tree of the release: it must hold student/ and nothing
    # else, so that no learner's home gets notebooks/ with the solutions.
    tree = sorted(git(repo, "ls-tree", "-r", "--name-only", release).splitlines())
    assert tree, "the release commit is empty"
    assert all(path.startswith("student/") for path in tree), [p for p in tree if not p.startswith("student/")]
    teacher = sorted(path.relative_to(repo / "notebooks").as_posix() for path in (repo / "notebooks").rglob("*.ipynb"))
    copies = sorted(path.removeprefix("student/") for path in tree if path.endswith(".ipynb"))
    assert copies == teacher, "one student copy per teacher notebook, every edition"
    assert "student/article_verdicts.md" in tree
    assert f"{TAG}-student" in output


def test_no_file_of_the_release_gives_an_answer_away(released):
    repo, _ = released
    release = f"{TAG}-student"
    for path in git(repo, "ls-tree", "-r", "--name-only", release, "student").splitlines():
        text = git(repo, "show", f"{release}:{path}")
        if path.endswith(".md"):
            assert not VERDICT_IN_TABLE.search(text), f"{path}: a verdict in the table"
            continue
        if not path.endswith(".ipynb"):
            continue
        nb = json.loads(text)
        assert "widgets" not in nb["metadata"], f"{path}: the teacher run's widget state"
        for cell in nb["cells"]:
            source = "".join(cell["source"])
            assert "solution" not in cell["metadata"].get("tags", []), f"{path}: a solution cell"
            if cell["cell_type"] == "code":
                assert not cell.get("outputs"), f"{path}: a stored output"
            visible = re.sub(r"<details>.*?</details>", "", source, flags=re.DOTALL)
            assert not VERDICT_IN_HEADING.search(visible), f"{path}: a verdict in a claim heading"
        guard = "".join(next(c for c in nb["cells"] if c["cell_type"] == "code")["source"])
        if "git+https://github.com/hookviz/hookviz" in guard:
            assert f"hookviz/hookviz@{TAG}" in guard, f"{path}: the Colab install is not pinned to the tag"


def test_the_checkout_is_left_as_it_was(released):
    repo, _ = released
    assert git(repo, "status", "--porcelain") == "", "make release-student changed the checkout"
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert len(git(repo, "worktree", "list").splitlines()) == 1, "the temporary worktree was not removed"
    assert not (repo / "student").exists()
