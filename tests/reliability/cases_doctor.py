"""hookviz.check_setup / hookviz.doctor: the report, the verdict on odd reports, the release warning, the CLI."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import torch
from torch import nn

import hookviz
from reliability import registry
from reliability.harness import ACCEPT, EITHER, REFUSE, Case, Ctx
from reliability.inputs import Arg, Spec, Value, fullwidth

doctor = registry.module("hookviz.doctor")


def _quiet(fn: Any) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        with contextlib.redirect_stdout(io.StringIO()):
            return fn(*args, **kwargs)

    return call


def _report(**changes: Any) -> dict[str, Any]:
    report = dict(doctor.environment_report())
    report.update(changes)
    return report


def _check_verdict(answer: Any, args: dict[str, Any]) -> str | None:
    if not isinstance(answer, doctor.Verdict):
        return f"not a Verdict: {type(answer).__name__}"
    if not all(isinstance(x, str) and x for x in [*answer.problems, *answer.warnings]):
        return "a problem or warning that is not a sentence"
    report = args.get("report")
    if isinstance(report, dict):
        python = str(report.get("python") or "")
        if python.startswith("3.12") and any("Python" in p for p in answer.problems):
            return f"Python {python} called too old"
        if report.get("torch") is None and not any("torch" in p for p in answer.problems):
            return "torch is missing and no problem says so"
    return None


def _check_warning(answer: Any, args: dict[str, Any]) -> str | None:
    if not isinstance(answer, str) or not answer.strip():
        return f"not a warning text: {answer!r}"
    return None


def specs() -> list[Spec]:
    return [
        Spec(
            "hookviz.doctor.check",
            doctor.check,
            [
                Arg("report", "mapping", _report(), positional=True, none_ok=True, default=None, extra=[
                    Value("python-3.12rc1", _report(python="3.12rc1"), ACCEPT),
                    Value("python-None", _report(python=None), EITHER),
                    Value("python-garbage", _report(python="garbage"), EITHER),
                    Value("torch-missing", _report(torch=None), ACCEPT),
                    Value("torch-garbage", _report(torch="nightly"), ACCEPT),
                    Value("torch-int", _report(torch=2), EITHER),
                    Value("torch-fullwidth", _report(torch=fullwidth("2.11.0")), EITHER),
                    Value("empty-dict", {}, EITHER),
                    Value("str", "report", REFUSE),
                ]),
                Arg("colab", "flag", False, none_ok=True, default=None),
            ],
            check=_check_verdict,
            short="doctor.check",
        ),
        Spec(
            "hookviz.doctor.release_warning",
            doctor.release_warning,
            [Arg("version", "version", "2.11", positional=True, aliases=("release", "torch"),
                 skip=("patch", "local", "padded", "v-prefix", "fullwidth", "negative-minor", "letters", "double-dot",
                       "major-only",
                       "empty", "cjk"),
                 extra=[Value("garbage", "nightly", ACCEPT), Value("outside", "2.99.0", ACCEPT),
                        Value("empty", "", EITHER), Value("fullwidth", fullwidth("2.11.0"), EITHER)])],
            check=_check_warning,
            short="doctor.release_warning",
        ),
        Spec(
            "hookviz.doctor.main",
            _quiet(doctor.main),
            [Arg("argv", "sequence", ["--check"], positional=True, skip=("str", "int", "empty", "None"), extra=[
                Value("empty-list", [], ACCEPT),
                Value("str-not-list", "--check", REFUSE),
                Value("int", 3, REFUSE),
            ])],
            check=lambda a, args: None if a in (0, 1) else f"exit status {a!r}",
            keywords=False,
            short="doctor.main",
        ),
    ]


def _cli_error(error: BaseException, ctx: Ctx) -> bool:
    return isinstance(error, SystemExit) and error.code == 2  # argparse's own usage error, naming the option


def scenario_cases() -> list[Case]:
    def quiet(fn: Any) -> Any:
        return lambda ctx: _quiet(fn)()

    def report_check(answer: Any, ctx: Ctx) -> str | None:
        return None if isinstance(answer, dict) and answer.get("torch") and answer.get("python") else f"{answer!r}"

    def module_reachable(ctx: Ctx) -> Any:
        namespace: dict[str, Any] = {}
        exec("import hookviz.doctor as d\nverdict = d.check()", namespace)  # noqa: S102 - what a learner types
        return namespace["verdict"]

    def diagnose_module_reachable(ctx: Ctx) -> Any:
        namespace: dict[str, Any] = {}
        exec("import hookviz.diagnose as dg\nrules = dg.RULES", namespace)  # noqa: S102 - what a learner types
        return namespace["rules"]

    return [
        Case("check_setup:valid", "hookviz.check_setup", quiet(hookviz.check_setup), expect=ACCEPT,
             check=report_check, keeps_rng=True),
        Case("check_setup:an-argument", "hookviz.check_setup", lambda ctx: hookviz.check_setup(True), expect=REFUSE,
             names=("positional", "argument"), keeps_rng=True),
        Case("check_setup:prints-ready", "hookviz.check_setup", lambda ctx: _printed(hookviz.check_setup),
             expect=ACCEPT, check=lambda a, ctx: None if "READY" in a else a[-200:], keeps_rng=True),
        Case("doctor:old-name", "hookviz.doctor", quiet(hookviz.doctor), expect=ACCEPT, check=report_check,
             keeps_rng=True),
        Case("doctor.doctor:valid", "hookviz.doctor.doctor", quiet(doctor.doctor), expect=ACCEPT, check=report_check,
             keeps_rng=True),
        Case("doctor.doctor:an-argument", "hookviz.doctor.doctor", lambda ctx: doctor.doctor(1), expect=REFUSE,
             names=("positional", "argument"), keeps_rng=True),
        Case("doctor:keyword", "hookviz.doctor", lambda ctx: hookviz.doctor(check=True), expect=REFUSE,
             names=("check",), keeps_rng=True),
        Case("environment_report:valid", "hookviz.environment_report", lambda ctx: hookviz.environment_report(),
             expect=ACCEPT, check=report_check, keeps_rng=True),
        Case("environment_report:an-argument", "hookviz.environment_report",
             lambda ctx: hookviz.environment_report("torch"), expect=REFUSE, names=("positional", "argument"),
             keeps_rng=True),
        Case("doctor.main:unknown-option", "hookviz.doctor.main", lambda ctx: _quiet(doctor.main)(["--bogus"]),
             expect=REFUSE, accept_error=_cli_error, keeps_rng=True),
        Case("doctor:module-reachable-by-import", "hookviz.doctor.check", module_reachable, expect=ACCEPT,
             check=lambda a, ctx: None if isinstance(a, doctor.Verdict) else f"{a!r}", keeps_rng=True),
        Case("diagnose:module-reachable-by-import", "hookviz.diagnose", diagnose_module_reachable, expect=ACCEPT,
             check=lambda a, ctx: None if a else "no rules", keeps_rng=True),
        # the function inside the package (hookviz.diagnose is the package, callable): the same answers
        Case("diagnose.diagnose:a-clean-layer", "hookviz.diagnose.diagnose",
             lambda ctx: str(registry.module("hookviz.diagnose").diagnose(nn.Linear(2, 1), torch.randn(3, 2))),
             expect=ACCEPT, check=lambda a, ctx: None if a == "no findings" else a),
        Case("diagnose.diagnose:model-None", "hookviz.diagnose.diagnose",
             lambda ctx: registry.module("hookviz.diagnose").diagnose(None, torch.ones(3, 2)), expect=REFUSE,
             names=("model",), keeps_rng=True),
    ]


def _printed(fn: Any) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fn()
    return out.getvalue()


def cases() -> list[Case]:
    out = [c for spec in specs() for c in spec.cases()]
    for case in out:
        case.keeps_rng = True
    return out + scenario_cases()
