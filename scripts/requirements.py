"""Print the course's pinned requirements from pyproject.toml, one per line, for another environment.

`python scripts/requirements.py --without torch` lists everything the course and its tests need except
PyTorch, so that `make test-torch TORCH=...` can pair the course with another PyTorch release.
"""

from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def requirements(extras: list[str], without: list[str]) -> list[str]:
    """The project's dependencies plus the named extras, minus the named distributions."""
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    found = list(project["dependencies"])
    for extra in extras:
        found += project["optional-dependencies"][extra]
    skip = {name.lower() for name in without}
    unique = dict.fromkeys(req for req in found if re.split(r"[<>=!~\[ ;]", req, maxsplit=1)[0].lower() not in skip)
    return list(unique)


def main() -> None:
    """Command line: print the requirements."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extra", action="append", default=["test"], help="optional extra to include (default: test)")
    parser.add_argument("--without", action="append", default=[], help="distribution to leave out (e.g. torch)")
    args = parser.parse_args()
    print("\n".join(requirements(args.extra, args.without)))


if __name__ == "__main__":
    main()
