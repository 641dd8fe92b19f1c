"""``hookviz.check_setup`` (alias ``hookviz.doctor``): a table, then READY or NOT READY; another torch only warns.

The report of this machine is replaced by made-up ones (monkeypatched) to reach every verdict without
installing anything. The command line is run for real once (``python -m hookviz.doctor --check``).
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys

import pytest

import hookviz

# `hookviz.doctor` is the function (re-exported by the package); the module is reached by its full name.
doctor_module = importlib.import_module("hookviz.doctor")

GOOD = {
    "python": "3.11.7",
    "torch": "2.13.0+cpu",
    "numpy": "2.4.6",
    "matplotlib": "3.11.2",
    "ipywidgets": "8.1.9",
    "transformers": "5.25.0",
    "jupyterlab": "4.6.6",
    "jupyterlab_widgets": "3.0.17",
    "ipykernel": "7.4.0",
    "nbval": "0.11.0",
    "widget front end": "@jupyter-widgets/jupyterlab-manager",
    "cuda available": "False",
    "torch threads": "1",
}


@pytest.fixture
def fake_report(monkeypatch):
    """Make ``environment_report`` return a copy of GOOD with the given changes; Colab off unless asked."""
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)

    def use(**changes):
        report = {
            **GOOD,
            **{key.replace("_", " ") if key == "widget_front_end" else key: v for key, v in changes.items()},
        }
        monkeypatch.setattr(doctor_module, "environment_report", lambda: dict(report))
        return report

    return use


def test_ready_machine_exits_zero(fake_report, capsys):
    fake_report()
    assert doctor_module.main(["--check"]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith("READY: everything the course needs is installed.")
    assert "WARNING" not in out and "NOT READY" not in out


def test_other_torch_is_a_warning_not_a_failure(fake_report, capsys):
    fake_report(torch="2.14.1+cu130")
    report = hookviz.doctor()  # must not raise
    assert report["torch"] == "2.14.1+cu130"
    out = capsys.readouterr().out
    warning = out[out.index("WARNING:"):out.index("READY: everything")]
    assert "2.13.0" in warning and "2.14.1+cu130" in warning and "supported range" in warning
    for difference in hookviz.releases.sections_that_differ("2.14.1"):
        assert difference.section in warning
    assert "The hook atlas of 2.14.1 matches 2.13.0's entry for entry" in warning
    assert "READY: everything" in out
    assert doctor_module.main(["--check"]) == 0


def test_colabs_torch_names_the_sections_that_differ_there():
    warning = doctor_module.release_warning("2.11.0")
    differing = hookviz.releases.sections_that_differ("2.11.0")
    assert differing, "Colab's torch differs from the pin somewhere the course teaches"
    for difference in differing:
        assert f"- {difference.section}: " in warning and difference.row("2.11.0")[1] in warning
    unchanged = set(hookviz.releases.DIFFERENCES) - {d.key for d in differing}
    for key in unchanged:
        assert f"- {hookviz.releases.DIFFERENCES[key].section}:" not in warning or any(
            d.section == hookviz.releases.DIFFERENCES[key].section for d in differing
        )


def test_a_release_outside_the_range_lists_every_release_dependent_section():
    for version in ("2.7.1", "2.15.0"):
        warning = doctor_module.release_warning(version)
        assert "outside the releases this course supports (2.8 to 2.14" in warning
        for difference in hookviz.releases.DIFFERENCES.values():
            assert difference.section in warning


def test_a_patch_release_without_its_own_atlas_uses_its_minor_releases(tmp_path):
    from hookviz import atlas

    assert atlas.stored_version_for("2.11.0+cu130") == "2.11.0"
    assert atlas.stored_version_for("2.14.0") == "2.14.1"
    assert atlas.stored_version_for("2.7.1") is None
    assert "no stored hook atlas" not in doctor_module.release_warning("2.14.0")
    assert "not a release number" in doctor_module.release_warning("nightly")


def test_missing_packages_give_numbered_fixes_and_exit_one(fake_report, capsys):
    fake_report(torch=None, ipywidgets=None, widget_front_end=None)
    assert doctor_module.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "NOT READY" in out
    fixes = re.findall(r"^  (\d+)\. (.*)$", out, flags=re.MULTILINE)
    assert [number for number, _ in fixes] == ["1", "2"]
    assert "missing torch, ipywidgets" in fixes[0][1] and "make setup" in fixes[0][1]
    assert "jupyterlab_widgets" in fixes[1][1]
    assert "torch  " in out and "MISSING" in out, "the table is still printed"


def test_without_check_the_exit_code_is_zero(fake_report):
    fake_report(numpy=None)
    assert doctor_module.main([]) == 0
    assert not doctor_module.check().ready


def test_old_python_is_not_ready(fake_report):
    fake_report(python="3.9.18")
    verdict = doctor_module.check()
    assert not verdict.ready and "Python 3.9.18 is too old" in verdict.problems[0]


def test_colab_advice_never_says_make(fake_report, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "google.colab", type(sys)("google.colab"))
    fake_report(torch="2.9.0+cu126", widget_front_end=None, ipywidgets="7.7.1")
    hookviz.doctor()
    out = capsys.readouterr().out
    assert "make lab" not in out and "make setup" not in out
    assert "enable_custom_widget_manager" in out and "first cell" in out
    assert "READY: everything" in out, "Colab's widget manager is not a JupyterLab extension: no failure"

    fake_report(torch=None)
    verdict = doctor_module.check()
    assert not verdict.ready
    assert "make" not in verdict.problems[0] and "Colab guard" in verdict.problems[0]


def test_check_setup_is_the_name_and_doctor_its_alias(fake_report, capsys):
    """The setup check has a name of its own; ``hookviz.doctor()`` (the workshop kits' command) still runs it."""
    fake_report()
    assert hookviz.check_setup() == hookviz.doctor()
    out = capsys.readouterr().out
    assert out.count("READY: everything the course needs is installed.") == 2
    assert "check_setup" in hookviz.__all__ and "doctor" in hookviz.__all__
    assert hookviz.diagnose is not hookviz.check_setup  # the hook doctor is another tool


def test_python_dash_m_hookviz_checks_the_setup():
    proc = subprocess.run([sys.executable, "-m", "hookviz", "--check"], capture_output=True, text=True)
    assert proc.returncode == (0 if doctor_module.check().ready else 1), proc.stdout + proc.stderr
    assert "torch" in proc.stdout and "READY" in proc.stdout


def test_command_line_check_on_this_machine():
    """The real command: READY here (the course's venv), with its exit code."""
    proc = subprocess.run([sys.executable, "-m", "hookviz.doctor", "--check"], capture_output=True, text=True)
    verdict = doctor_module.check()
    assert proc.returncode == (0 if verdict.ready else 1), proc.stdout + proc.stderr
    assert ("READY: everything" in proc.stdout) == verdict.ready
    assert "torch" in proc.stdout.splitlines()[1]
    assert "RuntimeWarning" not in proc.stderr, proc.stderr


def test_missing_transformers_is_a_problem(fake_report, capsys):
    """Notebook 14 runs a Hugging Face model: a machine without transformers is not ready, and says so."""
    fake_report(transformers=None)
    assert doctor_module.main(["--check"]) == 1
    assert "transformers" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------- issue 48
def test_the_module_is_reachable_by_import_and_still_runs_as_a_function(capsys):
    """Defect 16: `import hookviz.doctor` gave the function, hiding the module's check, release_warning, main..."""
    import hookviz.doctor as by_import
    from hookviz import doctor as from_package

    assert by_import is from_package is doctor_module is hookviz.doctor
    assert callable(by_import.check) and callable(by_import.release_warning) and callable(by_import.main)
    assert isinstance(by_import.check(dict(GOOD), colab=False), by_import.Verdict)
    assert hookviz.doctor() == hookviz.check_setup()  # the workshop kits' command still runs the check
    capsys.readouterr()


@pytest.mark.parametrize("version", [None, 2.13, ["2.13.0"]])
def test_release_warning_refuses_what_is_not_a_version_string(version):
    with pytest.raises(TypeError, match=r"release_warning: version must be a torch version string"):
        doctor_module.release_warning(version)


@pytest.mark.parametrize("python", ["3.12rc1", "3.11.0a7", "3.13.0+", "3.12"])
def test_a_pre_release_python_is_read_not_crashed_on(python):
    verdict = doctor_module.check({**GOOD, "python": python}, colab=False)
    assert verdict.ready, verdict.problems


@pytest.mark.parametrize("python", [None, "", "unknown"])
def test_a_report_without_a_python_version_says_so_instead_of_too_old(python):
    verdict = doctor_module.check({**GOOD, "python": python}, colab=False)
    assert not verdict.ready
    assert "too old" not in verdict.problems[0] and "Python version" in verdict.problems[0]
    with pytest.raises(TypeError, match="report must be a dict"):
        doctor_module.check(["python"])


def test_a_machine_without_a_chinese_font_is_warned_with_the_fix(fake_report, capsys):
    """The browser report: without a Chinese system font the zh edition shows boxes; the setup check says so."""
    fake_report(**{"Chinese font": None})
    assert doctor_module.main(["--check"]) == 0  # a warning, never a failure: the English course runs
    out = capsys.readouterr().out
    assert "no font that draws Chinese" in out and "apt-get install fonts-noto-cjk" in out
    assert out.rstrip().endswith("READY: everything the course needs is installed.")
    fake_report(**{"Chinese font": "Noto Sans CJK SC"})
    doctor_module.main(["--check"])
    assert "no font that draws Chinese" not in capsys.readouterr().out
    hookviz.set_language("zh")
    try:
        fake_report(**{"Chinese font": None})
        doctor_module.main(["--check"])
        assert "没有能显示中文的字体" in capsys.readouterr().out
    finally:
        hookviz.set_language(None)


def test_the_font_check_reads_fontconfig_and_leaves_hookvizs_own_font_out(monkeypatch):
    import subprocess as sp

    class Found:
        returncode, stdout = 0, "hookviz CJK SC\nNoto Sans CJK SC,Noto Sans CJK SC Regular\n"

    monkeypatch.setattr(doctor_module.sys, "platform", "linux")
    monkeypatch.setattr(doctor_module.shutil, "which", lambda name: "/usr/bin/fc-list")
    monkeypatch.setattr(sp, "run", lambda *a, **k: Found())
    assert doctor_module.chinese_font() == "Noto Sans CJK SC"
    Found.stdout = "hookviz CJK SC\n"
    assert doctor_module.chinese_font() is None
    assert "Chinese font" in doctor_module.environment_report()
