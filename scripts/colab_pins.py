"""Colab's package versions, as Google publishes them, for the Colab-true environment (``make colab-env``).

``scripts/colab_pins.txt`` keeps the versions of the packages the course uses from Google's published list of
what a Colab runtime has installed (repository ``googlecolab/backend-info``, file ``pip-freeze.txt``), with the
date of the copy it was read from. This script

- prints them for pip (``--requirements``; ``--only torch`` or ``--without torch`` for one part),
- refuses a venv that does not hold exactly those versions, with JupyterLab absent as on Colab (``--check-env``),
- refreshes the file from a newer copy of Google's list (``--refresh pip-freeze.txt --date 2026-09-30``): every
  package already pinned takes the version that list gives (``torch==2.11.0+cpu`` and
  ``torch @ https://.../torch-2.11.0%2Bcpu-...whl`` both read as 2.11.0); a package the list lacks is an error.

    python scripts/colab_pins.py --check-env
"""

from __future__ import annotations

import argparse
import importlib.metadata as metadata
import importlib.util
import re
import sys
from pathlib import Path
from urllib.parse import unquote

PINS_FILE = Path(__file__).resolve().with_name("colab_pins.txt")
_PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^\s#]+)")
_URL_VERSION = re.compile(r"-(\d+(?:\.\d+)+)(?:\+[^-]+)?-")


def normalise(name: str) -> str:
    """A distribution name as pip compares them (``Typing_Extensions`` -> ``typing-extensions``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(path: Path = PINS_FILE) -> dict[str, str]:
    """The pinned versions, by normalised name, in the file's order."""
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = _PIN.match(line.strip())
        if match:
            pins[normalise(match.group(1))] = match.group(2)
    return pins


def pins_date(path: Path = PINS_FILE) -> str:
    """The date of the copy of Google's list the pins were read from (``YYYY-MM-DD``)."""
    match = re.search(r"^# Copy read on: (\d{4}-\d{2}-\d{2})$", path.read_text(encoding="utf-8"), re.M)
    if not match:
        raise ValueError(f"{path} has no '# Copy read on: YYYY-MM-DD' line")
    return match.group(1)


def parse_freeze(text: str) -> dict[str, str]:
    """Versions from a ``pip freeze`` listing: ``name==version`` and ``name @ URL`` lines, local labels dropped."""
    found = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _PIN.match(line)
        if match:
            found[normalise(match.group(1))] = match.group(2).split("+")[0]
            continue
        if " @ " in line:
            name, url = (part.strip() for part in line.split(" @ ", 1))
            version = _URL_VERSION.search(unquote(url.rsplit("/", 1)[-1]))
            if version:
                found[normalise(name)] = version.group(1)
    return found


def refresh(freeze_text: str, date: str, path: Path = PINS_FILE) -> list[str]:
    """Rewrite the pins from a newer copy of Google's list; returns the changes (``torch 2.11.0 -> 2.12.0``)."""
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        raise ValueError(f"--date must be YYYY-MM-DD, got {date!r}")
    listed = parse_freeze(freeze_text)
    pins = read_pins(path)
    missing = [name for name in pins if name not in listed]
    if missing:
        raise ValueError(f"the list has no {', '.join(missing)}: is it Colab's pip-freeze.txt?")
    changes = [f"{name} {old} -> {listed[name]}" for name, old in pins.items() if listed[name] != old]
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        match = _PIN.match(line.strip())
        if match:
            line = f"{match.group(1)}=={listed[normalise(match.group(1))]}"
        elif line.startswith("# Copy read on: "):
            line = f"# Copy read on: {date}"
        lines.append(line)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return changes


def problems(pins: dict[str, str]) -> list[str]:
    """How the running environment differs from the pins (empty when it does not)."""
    found = []
    for name, version in pins.items():
        try:
            installed = metadata.version(name).split("+")[0]
        except metadata.PackageNotFoundError:
            installed = "none"
        if installed != version:
            found.append(f"{name} {installed} is installed, Colab has {version}")
    if importlib.util.find_spec("jupyterlab") is not None:
        found.append("JupyterLab is installed; Colab has none")
    if importlib.util.find_spec("hookviz") is None:
        found.append("hookviz is not installed (pip install --no-deps -e .)")
    return found


def main(argv: list[str] | None = None) -> int:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--requirements", action="store_true", help="print the pins for pip, one per line")
    group.add_argument("--check-env", action="store_true", help="check the running environment against the pins")
    group.add_argument("--refresh", metavar="PIP_FREEZE_TXT", help="rewrite the pins from a newer list")
    parser.add_argument("--date", help="with --refresh: the date of that copy (YYYY-MM-DD)")
    parser.add_argument("--only", action="append", default=[], help="with --requirements: just these packages")
    parser.add_argument("--without", action="append", default=[], help="with --requirements: leave these out")
    args = parser.parse_args(argv)
    pins = read_pins()
    if args.requirements:
        only = {normalise(n) for n in args.only}
        without = {normalise(n) for n in args.without}
        unknown = (only | without) - set(pins)
        if unknown:
            parser.error(f"not a Colab pin: {', '.join(sorted(unknown))} (pins: {', '.join(pins)})")
        print("\n".join(f"{n}=={v}" for n, v in pins.items() if (not only or n in only) and n not in without))
        return 0
    if args.refresh:
        if not args.date:
            parser.error("--refresh needs --date YYYY-MM-DD (the day that copy of Google's list was read)")
        changes = refresh(Path(args.refresh).read_text(encoding="utf-8"), args.date)
        print("\n".join(changes) if changes else "no version changed", f"(pins dated {args.date})")
        return 0
    found = problems(pins)
    for line in found:
        print(f"not Colab-true: {line}", file=sys.stderr)
    if not found:
        listed = ", ".join(f"{n} {v}" for n, v in pins.items())
        print(f"Colab-true (Google's list of {pins_date()}): {listed}; no JupyterLab; Python {sys.version.split()[0]}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
