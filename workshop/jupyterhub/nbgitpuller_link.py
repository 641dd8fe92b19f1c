"""Build the nbgitpuller link that brings a learner the student copies of a workshop release.

A JupyterHub with nbgitpuller turns one link into "log in, start my server, clone (or update) the course
into my home folder, open notebook 00". The link must name a **student release branch** (the
``<TAG>-student`` ref that ``make release-student TAG=<TAG>`` makes, pushed as a branch), never ``main`` or
a teacher ref: whatever the ref holds lands in every learner's home. This script refuses any other ref.

Usage::

    python workshop/jupyterhub/nbgitpuller_link.py https://hub.example.org workshop-2026-05-student
    python workshop/jupyterhub/nbgitpuller_link.py https://hub.example.org workshop-2026-05-student \\
        --notebook 06_hookviz_explorer.ipynb --repo https://github.com/hookviz/hookviz
    python workshop/jupyterhub/nbgitpuller_link.py https://hub.example.org workshop-2026-05-student --check .

It prints ``<hub>/hub/user-redirect/git-pull?repo=...&branch=...&targetpath=hookviz&urlpath=lab/tree/...``.
With ``--check CHECKOUT`` it also refuses a branch whose tree holds anything besides ``student/``: nbgitpuller
copies the whole tree into every learner's home.
Only the standard library is used, so it runs anywhere Python 3 does.

Why a branch and not the tag: nbgitpuller clones a tag fine the first time, but its update step merges
``origin/<branch>``, which does not exist for a tag, so the second click on the link fails. Push the
release commit as a branch of the same name as well (see README.md next to this file).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from urllib.parse import urlencode

#: The course's public repository.
COURSE_REPO = "https://github.com/hookviz/hookviz"
#: The folder in the learner's home that nbgitpuller clones into.
TARGET_FOLDER = "hookviz"
#: The notebook a link opens unless told otherwise.
FIRST_NOTEBOOK = "00_start_here.ipynb"
#: A student release ref, as ``make release-student TAG=<TAG>`` names it: ``<TAG>-student``.
STUDENT_RELEASE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*-student$")
#: Refs that never hold student copies only.
TEACHER_REFS = frozenset({"main", "master", "HEAD"})


class NotAStudentRelease(ValueError):
    """The ref named in a link is not a student release: the link would bring the solutions."""


def check_student_branch(branch: str) -> str:
    """Return ``branch`` if it names a student release (``<TAG>-student``); raise otherwise."""
    if branch in TEACHER_REFS or not STUDENT_RELEASE.match(branch):
        raise NotAStudentRelease(
            f"{branch!r} is not a student release: links must name the <TAG>-student branch that "
            "`make release-student TAG=<TAG>` makes (the teacher notebooks carry the solutions)"
        )
    return branch


def files_outside_student(branch: str, checkout: str = ".") -> list[str]:
    """Files of ``branch`` (in the git checkout ``checkout``) that are not under ``student/``.

    nbgitpuller clones the whole tree of the ref into every learner's home: anything listed here (the
    teacher notebooks above all) reaches the learners too.
    """
    names = subprocess.run(
        ["git", "-C", checkout, "ls-tree", "-r", "--name-only", branch],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    if not any(name.startswith("student/") for name in names):
        raise NotAStudentRelease(f"{branch!r} holds no student/ folder")
    return [name for name in names if not name.startswith("student/")]


def build_link(
    hub_url: str,
    branch: str,
    *,
    repo: str = COURSE_REPO,
    notebook: str = FIRST_NOTEBOOK,
    target_folder: str = TARGET_FOLDER,
    app: str = "lab",
) -> str:
    """The nbgitpuller link that logs a learner in, pulls ``branch`` of ``repo`` and opens ``notebook``.

    ``notebook`` is a file name inside ``student/`` (``00_start_here.ipynb``, ``zh/00_start_here.ipynb``).
    """
    check_student_branch(branch)
    if notebook.startswith("/") or ".." in notebook.split("/"):
        raise ValueError(f"notebook must be a path inside student/, got {notebook!r}")
    query = urlencode(
        {
            "repo": repo,
            "branch": branch,
            "targetpath": target_folder,
            "urlpath": f"{app}/tree/{target_folder}/student/{notebook}",
        },
        safe="/:",
    )
    return f"{hub_url.rstrip('/')}/hub/user-redirect/git-pull?{query}"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: print the link, or the reason it was refused (exit 2)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("hub_url", help="the hub's address, e.g. https://hub.example.org")
    parser.add_argument("branch", help="the student release branch, e.g. workshop-2026-05-student")
    parser.add_argument("--repo", default=COURSE_REPO, help=f"the course repository (default {COURSE_REPO})")
    parser.add_argument("--notebook", default=FIRST_NOTEBOOK, help="the notebook inside student/ to open")
    parser.add_argument("--target-folder", default=TARGET_FOLDER, help="the folder in the learner's home")
    parser.add_argument(
        "--check",
        metavar="CHECKOUT",
        help="a git checkout that has the branch: refuse it if it holds more than student/",
    )
    args = parser.parse_args(argv)
    try:
        if args.check:
            check_student_branch(args.branch)
            extra = files_outside_student(args.branch, args.check)
            if extra:
                raise NotAStudentRelease(
                    f"{args.branch!r} also holds {len(extra)} files outside student/ (e.g. {extra[0]}): "
                    "nbgitpuller would copy them into every learner's home"
                )
        print(
            build_link(
                args.hub_url, args.branch, repo=args.repo, notebook=args.notebook, target_folder=args.target_folder
            )
        )
    except (ValueError, subprocess.CalledProcessError) as exc:
        print(f"nbgitpuller_link: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
