"""Score ``hookviz.diagnose`` on the blind evaluation set.

    .venv/bin/python -m tests.doctor_blind.score [--verbose] [--family a] [-k substring]

For every case: build the model (hooks attached as the user attached them), put it in the case's context
(``model.eval()`` for "eval"/"eval_no_grad", ``torch.no_grad()`` for "no_grad"/"eval_no_grad"), snapshot its
state, call ``hookviz.diagnose(model, inputs, **diagnose_kwargs)``, snapshot again, run the case's ``after``
check, then its ``teardown``.

Outcomes. Planted case: "found" when some finding of severity "error" or "warning" names a culprit (its
``where`` equals a culprit or ``"param:" + culprit``, or a culprit appears in its ``message`` as a whole
identifier); "blamed-wrong" when the doctor raised, or its errors/warnings name no culprit; "missed" when it
gave no error/warning. Clean case: "false-alarm" on any error/warning or exception, else "clean-ok".
Independently, "changed" when the state after the diagnosis differs from the state before, or ``after`` fails.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import re
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.modules.module as module_hooks
from torch import nn

from . import FAMILIES, Case, all_cases

SERIOUS = ("error", "warning")

MODULE_HOOK_DICTS = (
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_backward_hooks",
    "_backward_pre_hooks",
    "_state_dict_hooks",
    "_state_dict_pre_hooks",
    "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks",
)

GLOBAL_STATE = sorted(n for n in dir(module_hooks) if n.startswith("_global_"))


# --------------------------------------------------------------------------------------------------------
# State snapshots
# --------------------------------------------------------------------------------------------------------


class _Ref:
    """Compared by identity (hook functions, parameter and grad objects)."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Ref) and (self.obj is other.obj or _plain_equal(self.obj, other.obj))

    def __repr__(self) -> str:
        return f"<{getattr(self.obj, '__qualname__', type(self.obj).__name__)}>"


def _plain_equal(a: Any, b: Any) -> bool:
    if isinstance(a, (bool, int, float, str, type(None))) and isinstance(b, (bool, int, float, str, type(None))):
        return a == b
    return False


class _Bits:
    """A tensor's dtype, shape, device and exact bytes."""

    __slots__ = ("dtype", "shape", "device", "bytes")

    def __init__(self, t: torch.Tensor) -> None:
        t = t.detach()
        self.dtype, self.shape, self.device = t.dtype, tuple(t.shape), t.device
        flat = t.contiguous().reshape(-1)
        self.bytes = flat.view(torch.uint8).clone() if flat.numel() else flat.clone()

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, _Bits)
            and (self.dtype, self.shape, self.device) == (other.dtype, other.shape, other.device)
            and torch.equal(self.bytes, other.bytes)
        )

    def __repr__(self) -> str:
        return f"tensor{list(self.shape)}"


def _items(d: Any) -> tuple:
    if d is None:
        return ()
    return tuple((k, _Ref(v)) for k, v in d.items())


def snapshot(model: nn.Module) -> dict[str, Any]:
    """Everything the doctor must leave as it found it."""
    s: dict[str, Any] = {"grad_enabled": torch.is_grad_enabled()}
    for name in GLOBAL_STATE:
        value = getattr(module_hooks, name)
        s[f"global {name}"] = _items(value) if isinstance(value, dict) else _Ref(value)
    for mname, m in model.named_modules(remove_duplicate=False):
        key = mname or "<root>"
        s[f"training {key}"] = m.training
        for d in MODULE_HOOK_DICTS:
            s[f"hooks {key}.{d}"] = _items(getattr(m, d, None))
        s[f"full-backward flag {key}"] = getattr(m, "_is_full_backward_hook", None)
        s[f"attributes {key}"] = tuple(
            sorted(k for k, v in vars(m).items() if not isinstance(v, (torch.Tensor, nn.Module)))
        )
        s[f"submodules {key}"] = tuple(m._modules)
        s[f"parameters {key}"] = tuple(m._parameters)
        s[f"buffers {key}"] = tuple(m._buffers)
    for pname, p in model.named_parameters(remove_duplicate=False):
        s[f"param {pname} object"] = _Ref(p)
        s[f"param {pname} value"] = _Bits(p)
        s[f"param {pname} requires_grad"] = p.requires_grad
        s[f"param {pname} grad object"] = _Ref(p.grad)
        s[f"param {pname} grad value"] = None if p.grad is None else _Bits(p.grad)
        s[f"param {pname} tensor hooks"] = _items(p._backward_hooks)
        s[f"param {pname} post-accumulate hooks"] = _items(getattr(p, "_post_accumulate_grad_hooks", None))
    for bname, b in model.named_buffers(remove_duplicate=False):
        s[f"buffer {bname} object"] = _Ref(b)
        s[f"buffer {bname} value"] = _Bits(b)
    return s


def diff(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Human-readable differences between two snapshots."""
    out = []
    for key in sorted(before.keys() | after.keys()):
        if key not in before:
            out.append(f"{key}: appeared")
        elif key not in after:
            out.append(f"{key}: disappeared")
        elif not (before[key] == after[key]):
            out.append(f"{key}: {before[key]!r} -> {after[key]!r}")
    return out


# --------------------------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------------------------


@dataclass
class CaseResult:
    name: str
    family: str
    planted: bool
    context: str
    outcome: str  # found | blamed-wrong | missed | clean-ok | false-alarm
    changed: bool
    changes: list[str] = field(default_factory=list)
    findings: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, severity, where)
    error: str | None = None
    seconds: float = 0.0


def _diagnose_api():
    import hookviz

    diagnose = hookviz.diagnose
    error = getattr(diagnose, "DiagnosisError", None)
    if error is None:
        error = getattr(sys.modules.get("hookviz.diagnose"), "DiagnosisError", None)
    return diagnose, error or Exception


def names_culprit(finding: Any, culprit: tuple[str, ...]) -> bool:
    """Does ``finding`` name one of ``culprit`` (``where`` exactly, or the message as a whole identifier)?"""
    where = str(getattr(finding, "where", ""))
    message = str(getattr(finding, "message", ""))
    for c in culprit:
        if where == c or where == f"param:{c}":
            return True
        if re.search(r"(?<!\w)" + re.escape(c) + r"(?!\w)", message):
            return True
    return False


def _context(model: nn.Module, context: str) -> contextlib.AbstractContextManager:
    if context in ("eval", "eval_no_grad"):
        model.eval()
    return torch.no_grad() if context in ("no_grad", "eval_no_grad") else contextlib.nullcontext()


def score_case(c: Case) -> CaseResult:
    """Run the doctor on one case and classify the result."""
    diagnose, diagnosis_error = _diagnose_api()
    start = time.perf_counter()
    findings: list[Any] = []
    error: str | None = None
    changes: list[str] = []
    try:
        torch.manual_seed(0)
        model, inputs, dkw = c.build()
        with _context(model, c.context):
            before = snapshot(model)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    findings = list(diagnose(model, inputs, **dkw))
                except diagnosis_error as err:
                    error = f"DiagnosisError: {err}"
                except Exception as err:  # noqa: BLE001 - any crash of the doctor is scored
                    error = f"{type(err).__name__}: {err}"
            changes = diff(before, snapshot(model))
        if c.after is not None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    c.after(model, inputs)
            except Exception as err:  # noqa: BLE001
                changes.append(f"after(): {type(err).__name__}: {err}")
    finally:
        if c.teardown is not None:
            c.teardown()

    serious = [f for f in findings if str(getattr(f, "severity", "")) in SERIOUS]
    if c.planted:
        if error is not None:
            outcome = "blamed-wrong"
        elif not serious:
            outcome = "missed"
        elif any(names_culprit(f, c.culprit) for f in serious):
            outcome = "found"
        else:
            outcome = "blamed-wrong"
    else:
        outcome = "false-alarm" if (error is not None or serious) else "clean-ok"

    result = CaseResult(
        name=c.name,
        family=c.family,
        planted=c.planted,
        context=c.context,
        outcome=outcome,
        changed=bool(changes),
        changes=changes,
        findings=[
            (str(getattr(f, "kind", "?")), str(getattr(f, "severity", "?")), str(getattr(f, "where", "?")))
            for f in findings
        ],
        error=error,
        seconds=time.perf_counter() - start,
    )
    return result


def score_all(cases: list[Case] | None = None) -> list[CaseResult]:
    """Score every case (or ``cases``); returns one :class:`CaseResult` per case, in order."""
    results = []
    for c in cases if cases is not None else all_cases():
        try:
            results.append(score_case(c))
        except Exception:  # a broken case must not hide the others
            results.append(
                CaseResult(c.name, c.family, c.planted, c.context, "case-error", False, error=traceback.format_exc())
            )
    gc.collect()
    return results


# --------------------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------------------


def summarize(results: list[CaseResult]) -> dict[str, dict[str, int]]:
    """Per family (and "total"): planted, found, blamed-wrong, missed, clean, false-alarm, changed, case-error."""
    table: dict[str, dict[str, int]] = {}
    keys = ("planted", "found", "blamed-wrong", "missed", "clean", "false-alarm", "changed", "case-error")
    for family in [*FAMILIES, "total"]:
        table[family] = dict.fromkeys(keys, 0)
    for r in results:
        for family in (r.family, "total"):
            row = table[family]
            row["planted" if r.planted else "clean"] += 1
            if r.outcome in row:
                row[r.outcome] += 1
            row["changed"] += r.changed
    return {f: row for f, row in table.items() if row["planted"] or row["clean"] or f == "total"}


def format_table(results: list[CaseResult]) -> str:
    table = summarize(results)
    header = f"{'family':<8}{'planted':>8}{'found':>7}{'blamed':>8}{'missed':>8}{'clean':>7}{'false+':>8}{'changed':>9}"
    lines = [header, "-" * len(header)]
    for family, row in table.items():
        if family == "total":
            lines.append("-" * len(header))
        lines.append(
            f"{family:<8}{row['planted']:>8}{row['found']:>7}{row['blamed-wrong']:>8}{row['missed']:>8}"
            f"{row['clean']:>7}{row['false-alarm']:>8}{row['changed']:>9}"
            + (f"   case errors: {row['case-error']}" if row["case-error"] else "")
        )
    total = table["total"]
    if total["planted"]:
        lines.append(f"found {total['found']}/{total['planted']} = {100 * total['found'] / total['planted']:.1f}%")
    if total["clean"]:
        lines.append(
            f"false alarms {total['false-alarm']}/{total['clean']} (allowed: {total['clean'] // 30}); "
            f"changed {total['changed']}"
        )
    return "\n".join(lines)


def format_verbose(results: list[CaseResult]) -> str:
    lines = []
    for r in results:
        flag = " CHANGED" if r.changed else ""
        lines.append(f"[{r.family}] {r.name} ({r.context}): {r.outcome}{flag}  {r.seconds:.2f}s")
        for kind, severity, where in r.findings:
            lines.append(f"      {severity:<8} {kind}  @ {where}")
        if r.error:
            lines.append(f"      raised: {r.error.strip().splitlines()[-1][:200]}")
        for change in r.changes[:5]:
            lines.append(f"      changed: {change[:200]}")
        if len(r.changes) > 5:
            lines.append(f"      changed: ... {len(r.changes) - 5} more")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", "-v", action="store_true", help="one line per case, with its findings")
    parser.add_argument("--family", action="append", help="only these families (repeatable)")
    parser.add_argument("-k", dest="substring", help="only cases whose name contains this")
    args = parser.parse_args(argv)
    cases = all_cases()
    if args.family:
        cases = [c for c in cases if c.family in args.family]
    if args.substring:
        cases = [c for c in cases if args.substring in c.name]
    start = time.perf_counter()
    results = score_all(cases)
    if args.verbose:
        print(format_verbose(results))
        print()
    print(format_table(results))
    print(f"{len(results)} cases in {time.perf_counter() - start:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
