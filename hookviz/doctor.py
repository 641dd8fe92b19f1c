"""Setup check: versions of what the course needs, whether widgets can render, and a verdict.

In a notebook, ``hookviz.check_setup()`` prints a table and a verdict and returns the report
(``hookviz.doctor()`` is the same function under its old name, kept for the workshop kits; the hook
doctor that checks a model's hooks is :func:`hookviz.diagnose`). From a shell,
``python -m hookviz.doctor --check`` prints the same and exits 0 when the machine is READY, 1 when it is
NOT READY (each problem comes with a numbered fix). A torch other than the one the stored outputs were
made with is a WARNING, never a failure. Inside the supported range (:mod:`hookviz.releases`, 2.8 to 2.14)
the warning names the notebook sections whose behaviour differs on that release (each of those cells prints
a table by release and checks the running one); outside it, the warning says the course is not proven
there and lists every section that depends on the release.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import platform
import re
import shutil
import subprocess
import sys
import types
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hookviz import releases
from hookviz.i18n import get_language, tr

# `python -m hookviz.doctor` first imports the package, whose __init__ imports this module, and runpy then
# warns that the module it is about to run is already imported. Harmless here (main() only reads the
# environment); this filter silences exactly that message, and nothing else.
warnings.filterwarnings("ignore", message=r"'hookviz\.doctor' found in sys\.modules", category=RuntimeWarning)

__all__ = ["Verdict", "check", "check_setup", "doctor", "environment_report", "main", "release_warning"]

PACKAGES = (
    "torch", "numpy", "matplotlib", "ipywidgets", "transformers",
    "jupyterlab", "jupyterlab_widgets", "ipykernel", "nbval",
)
#: What the course cannot run without.
REQUIRED = ("torch", "numpy", "matplotlib", "ipywidgets", "transformers")
#: The torch version the stored outputs were made with.
OUTPUTS_TORCH = releases.PINNED
MIN_PYTHON = (3, 11)


@dataclass
class Verdict:
    """The outcome of :func:`check`: problems with their fixes, warnings, and whether the machine is ready."""

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        """True when nothing stops the course from running (warnings allowed)."""
        return not self.problems


def _version(dist: str) -> str | None:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


def _widget_frontend() -> str | None:
    """Where the ipywidgets JupyterLab extension lives, or None if it is not installed."""
    for prefix in {sys.prefix, sys.base_prefix}:
        ext = Path(prefix, "share", "jupyter", "labextensions", "@jupyter-widgets", "jupyterlab-manager")
        if ext.is_dir():
            return "@jupyter-widgets/jupyterlab-manager"
    return None


def on_colab() -> bool:
    """True inside a Google Colab runtime."""
    return "google.colab" in sys.modules


#: Words in the family names of fonts that draw Chinese (Noto/Source Han CJK, WenQuanYi, the Windows and macOS ones).
_CJK_FAMILY = re.compile(
    r"CJK|WenQuanYi|WQY|Source Han|Noto Sans SC|Noto Serif SC|YaHei|SimSun|SimHei|NSimSun|DengXian|KaiTi|FangSong|"
    r"PingFang|Heiti|Hiragino Sans GB|STHeiti|STSong|Songti|Droid Sans Fallback|AR PL|Sarasa|HarmonyOS Sans SC",
    re.IGNORECASE,
)
def chinese_font() -> str | None:
    """The family of a font on this machine that draws Chinese, or ``None`` when there is none.

    What is checked, honestly: the fonts of the machine that runs Python (``fc-list :lang=zh``, else matplotlib's list
    of system fonts, by family name). A browser draws the notebooks' text with the fonts of the machine *it* runs on:
    this says whether a browser on this machine can (a container, a minimal Linux, WSL), not whether a laptop that
    reaches a remote server can (Windows and macOS always have one). hookviz's own font is not counted: it draws
    hookviz's pictures only.
    """
    if sys.platform in ("win32", "darwin"):  # both ship Chinese fonts (Microsoft YaHei, PingFang)
        return "the system's (Windows and macOS ship Chinese fonts)"
    fc_list = shutil.which("fc-list")
    if fc_list:
        try:
            found = subprocess.run([fc_list, ":lang=zh", "family"], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            found = None
        if found is not None and found.returncode == 0:
            families = sorted({line.split(",")[0].strip() for line in found.stdout.splitlines() if line.strip()})
            families = [f for f in families if not f.startswith("hookviz")]
            families.sort(key=lambda f: not re.search(r"\b(SC|CN)\b|WenQuanYi|WQY", f))  # simplified Chinese first
            return families[0] if families else None
    try:
        from matplotlib import font_manager
    except ImportError:  # pragma: no cover - matplotlib is a course dependency
        return None
    package = str(Path(__file__).resolve().parent)
    names = sorted({f.name for f in font_manager.fontManager.ttflist
                    if _CJK_FAMILY.search(f.name) and not str(f.fname).startswith(package)})
    return names[0] if names else None


def environment_report() -> dict[str, str | None]:
    """A dict of Python and package versions, plus the widget front end, a Chinese font and whether CUDA is usable."""
    report: dict[str, str | None] = {"python": platform.python_version()}
    report.update({name: _version(name) for name in PACKAGES})
    report["widget front end"] = _widget_frontend()
    report["Chinese font"] = chinese_font()
    try:
        import torch
    except ImportError:
        report["cuda available"] = report["torch threads"] = None
    else:
        report["cuda available"] = str(torch.cuda.is_available())
        report["torch threads"] = str(torch.get_num_threads())
    return report


def _python_version(text: Any) -> tuple[int, int] | None:
    """``(3, 12)`` of ``"3.12.1"``, ``"3.12rc1"`` or ``"3.12"``; ``None`` when ``text`` holds no version."""
    match = re.match(r"\s*(\d+)\.(\d+)", text) if isinstance(text, str) else None
    return (int(match.group(1)), int(match.group(2))) if match else None


def check(report: dict[str, str | None] | None = None, *, colab: bool | None = None) -> Verdict:
    """Judge a report (default: this machine's): what must be fixed, and what only differs."""
    report = environment_report() if report is None else report
    if not isinstance(report, dict):
        raise TypeError(tr(
            f"report must be a dict such as environment_report() returns (or None for this machine's), not "
            f"{type(report).__name__}"
        ))
    if colab is not None and not isinstance(colab, bool):
        raise TypeError(tr(f"colab must be True, False or None (found from this machine), not {colab!r}"))
    colab = on_colab() if colab is None else colab
    verdict = Verdict()
    python = _python_version(report.get("python"))
    if python is None:
        verdict.problems.append(
            f"the report has no Python version (python: {report.get('python')!r}): check this machine with "
            "hookviz.check_setup(), or pass environment_report()'s dict."
        )
    elif python < MIN_PYTHON:
        verdict.problems.append(
            f"Python {report.get('python')} is too old: install Python {'.'.join(map(str, MIN_PYTHON))} or newer "
            "(SETUP.md), then make the course's environment again."
        )
    missing = [name for name in REQUIRED if report.get(name) is None]
    if missing:
        if colab:
            fix = (
                "run the notebook's first cell (the Colab guard installs hookviz with --no-deps), "
                f"or `!pip install {' '.join(missing)}` in a cell"
            )
        else:
            fix = "run `make setup` in the course folder (or `pip install -e .` in your environment; see SETUP.md)"
        verdict.problems.append(f"missing {', '.join(missing)}: {fix}.")
    if not colab and report.get("widget front end") is None:
        verdict.problems.append(
            "JupyterLab cannot draw the widgets of notebook 06 (no @jupyter-widgets/jupyterlab-manager): "
            "`make lab` installs it (package jupyterlab_widgets); in your own environment "
            "`pip install jupyterlab_widgets`, then restart JupyterLab."
        )
    if "Chinese font" in report and report["Chinese font"] is None and not colab:
        verdict.warnings.append(
            "this machine has no font that draws Chinese: a browser running on it shows the Chinese edition "
            "(notebooks/zh, the widgets under set_language('zh')) as empty boxes; hookviz's pictures carry their own "
            "font. Install one (Debian/Ubuntu: sudo apt-get install fonts-noto-cjk; Fedora: sudo dnf install "
            "google-noto-sans-cjk-fonts; conda: conda install -c conda-forge font-ttf-noto-cjk), then reload the page. "
            "A browser on another computer uses that "
            "computer's fonts (Windows and macOS have Chinese ones)."
        )
    torch_version = report.get("torch")
    if torch_version is not None and not isinstance(torch_version, str):
        verdict.problems.append(
            f"the report's torch version is not a version string (torch: {torch_version!r}): check this machine with "
            "hookviz.check_setup(), or pass environment_report()'s dict."
        )
    elif torch_version is not None and torch_version.split("+")[0] != OUTPUTS_TORCH:
        verdict.warnings.append(release_warning(torch_version))
    if colab:
        verdict.warnings.append(
            "on Colab: no `make` needed - run each notebook's first cell (it installs hookviz, keeping Colab's torch); "
            "the widgets of notebook 06 need Colab's widget manager: run "
            "`from google.colab import output; output.enable_custom_widget_manager()` once per runtime if they do "
            "not show; save your work with File > Save a copy in Drive (a runtime reset loses it)."
        )
    return verdict


def _section_list(differences: list[releases.Difference], version: str | None = None) -> str:
    """One indented line per difference: the section, and what happens on ``version`` when given."""
    return "".join(
        f"\n  - {d.section}" + (f": {tr(d.what)} -> {tr(d.row(version)[1])}" if version else "") for d in differences
    )


def _atlas_sections(version: str) -> tuple[str | None, list[str]]:
    """The stored atlas for ``version`` and the notebook sections teaching entries that differ from the pin's."""
    from hookviz import atlas  # imported here: the atlas imports torch.distributed, which doctor needs rarely

    stored = atlas.stored_version_for(version)
    if stored is None or atlas.stored_version_for(OUTPUTS_TORCH) is None:
        return stored, []
    changed = atlas.diff_atlases(atlas.load_snapshot(atlas.stored_version_for(OUTPUTS_TORCH)),
                                 atlas.load_snapshot(stored))
    links = atlas.teaching_links()
    keys = [(old or new).key for old, new in changed]
    return stored, sorted({links.get(key, f"16_hook_atlas.ipynb (entry {key[0]} / {key[1]})") for key in keys})


def release_warning(version: str) -> str:
    """What differs on torch ``version`` from the stored outputs, by notebook section (a warning's text).

    In the current language (:func:`tr`), sentence by sentence; the sections' ids stay as written."""
    if not isinstance(version, str):
        raise TypeError(tr(
            f"release_warning: version must be a torch version string such as '2.11.0', not {version!r}; "
            "environment_report()['torch'] is this machine's"
        ))
    base = version.split("+")[0]
    span = f"{releases.OLDEST} to {releases.NEWEST}"
    tested = ", ".join(f"{v} ({tr(why)})" for v, why in releases.TESTED.items())
    try:
        releases.minor(base)
    except ValueError:
        return tr(f"torch {version} is not a release number this course knows; it is proven on {tested}.")
    if not releases.in_range(base):
        return (
            tr(
                f"torch {version} is outside the releases this course supports ({span}; every notebook is proven on "
                f"{tested}): notebooks may fail or show other outputs there, and notebook 16 has no stored hook atlas "
                "for it. These sections teach behaviour that changes between releases:"
            )
            + _section_list(list(releases.DIFFERENCES.values()))
        )
    text = tr(
        f"the stored outputs were made with torch {OUTPUTS_TORCH}; torch {version} is in the supported range "
        f"({span}), so every notebook runs and its checks hold"
    )
    zh = get_language() == "zh"
    full_stop = "。" if zh else ". "
    differing = releases.sections_that_differ(base)
    if differing:
        text += full_stop + tr(
            f"These sections behave differently on {base} than in the stored outputs (each cell prints a table "
            "by release and checks yours):"
        )
        text += f"{_section_list(differing, base)}\n"
    stored, atlas_sections = _atlas_sections(base)
    if stored is None:
        sentence = tr(f"Notebook 16 has no stored hook atlas for torch {base}: its §1 check stops there.")
    elif atlas_sections:
        sentence = tr(f"The hook atlas of {stored} differs from {OUTPUTS_TORCH}'s in: {', '.join(atlas_sections)}.")
    else:
        sentence = tr(f"The hook atlas of {stored} matches {OUTPUTS_TORCH}'s entry for entry.")
    if text.endswith("\n"):
        full_stop = "" if zh else " "
    text += full_stop + sentence
    return text


def _print_verdict(verdict: Verdict) -> None:
    """The warnings, then READY or NOT READY with numbered fixes, in the current language (:func:`tr`).

    In Chinese the words WARNING, READY and NOT READY follow in parentheses, since the workshop kits name them.
    """
    zh = get_language() == "zh"
    for warning in verdict.warnings:
        print(f"\n警告（WARNING）：{tr(warning)}" if zh else f"\nWARNING: {warning}")
    if verdict.ready:
        ready = "就绪（READY）：课程需要的一切都已安装。" if zh else "READY: everything the course needs is installed."
        print(f"\n{ready}")
        return
    print("\n未就绪（NOT READY）。请按以下顺序修复：" if zh else "\nNOT READY. Fix, in this order:")
    for number, problem in enumerate(verdict.problems, start=1):
        print(f"  {number}. {tr(problem)}")


def _width(text: str) -> int:
    """Columns ``text`` takes in a terminal: a Chinese character takes two."""
    return sum(2 if "\u2e80" <= char <= "\u9fff" or "\uff00" <= char <= "\uffef" else 1 for char in text)


def check_setup() -> dict[str, str | None]:
    """Print :func:`environment_report` as a table, then READY or NOT READY with numbered fixes; return the report.

    It never raises on a different torch version: that is a warning saying what may differ. To check the
    hooks on a model instead, use :func:`hookviz.diagnose` (the hook doctor).
    """
    report = environment_report()
    names = {name: tr(name) for name in report}
    width = max(_width(name) for name in names.values())
    for name, value in report.items():
        shown = names[name]
        print(f"{shown}{' ' * (width - _width(shown))}  {value if value is not None else tr('MISSING')}")
    _print_verdict(check(report))
    return report


def doctor() -> dict[str, str | None]:
    """The old name of :func:`check_setup` (the workshop kits call ``hookviz.doctor()``): the same check."""
    return check_setup()


def main(argv: list[str] | None = None) -> int:
    """``python -m hookviz.doctor [--check]``: print the report; with ``--check`` exit 0 if READY, else 1."""
    if argv is not None and (not isinstance(argv, (list, tuple)) or not all(isinstance(a, str) for a in argv)):
        raise TypeError(tr(f"main: argv must be a list of command-line words such as ['--check'], not {argv!r}"))
    parser = argparse.ArgumentParser(prog="python -m hookviz.doctor", description="Is this machine ready?")
    parser.add_argument("--check", action="store_true", help="exit 0 when READY, 1 when NOT READY")
    args = parser.parse_args(argv)
    report = check_setup()
    return 0 if not args.check or check(report).ready else 1


class _CallableModule(types.ModuleType):
    """This module, callable: ``hookviz.doctor()`` runs :func:`check_setup` (the name the workshop kits call), while
    ``import hookviz.doctor`` and ``from hookviz import doctor`` give the module itself, with :func:`check`,
    :func:`release_warning`, :class:`Verdict` and :func:`main` (``python -m hookviz.doctor``)."""

    def __call__(self) -> dict[str, str | None]:
        return check_setup()


sys.modules[__name__].__class__ = _CallableModule

if __name__ == "__main__":
    sys.exit(main())
