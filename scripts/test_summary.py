"""Print what each stage of ``make test`` (or CI) ran and what it did not, from the run guard's reports.

Every pytest run of the Makefile writes ``.test-reports/<stage>.json`` (``tests/run_guard.py``). This
prints one line per stage (passed, failed, skipped, notebooks run) and, for each skipped group, its reason
and the command that enables it. ``--compare A B --less browser`` also checks that stage B passed exactly
as many tests as stage A, less the tests of the named group that B skipped (CI uses it for the run with
Chromium hidden), and exits 1 when it did not.

    python scripts/test_summary.py course notebooks-generic-default browser
    python scripts/test_summary.py --all
    python scripts/test_summary.py --compare course course-no-chromium --less browser
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPORTS = Path(__file__).resolve().parents[1] / ".test-reports"


def load(stage: str) -> dict | None:
    """The report of one stage, or None when that stage has not run."""
    path = REPORTS / f"{stage}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def describe(stage: str, report: dict | None) -> list[str]:
    """The summary lines of one stage."""
    if report is None:
        return [f"{stage:<28} did not run (no {REPORTS.name}/{stage}.json)"]
    c = report["counts"]
    line = (
        f"{stage:<28} {c.get('passed', 0):>5} passed {c.get('failed', 0):>3} failed "
        f"{c.get('error', 0):>3} errors {c.get('skipped', 0):>4} skipped · "
        f"notebooks run {report['notebooks_executed']}/{report['notebooks_collected']}"
    )
    lines = [line]
    for name, group in sorted(report["skipped_groups"].items()):
        reasons = "; ".join(sorted(set(group["reasons"])))
        if name == "not allowed":
            lines.append(f"    NOT ALLOWED: {group['count']} skipped: {reasons}")
        else:
            lines.append(f"    {group['what']} skipped ({group['count']}): {reasons} — {group['enable']}")
    lines += [f"    RUN GUARD: {problem}" for problem in report["problems"]]
    return lines


def compare(full: str, reduced: str, less: str) -> list[str]:
    """Why stage ``reduced`` did not pass as many tests as ``full`` less the ``less`` group (empty: it did)."""
    a, b = load(full), load(reduced)
    if a is None or b is None:
        return [f"cannot compare: {full if a is None else reduced} did not run"]
    expected = a["counts"].get("passed", 0) - b["skipped_groups"].get(less, {}).get("count", 0)
    got = b["counts"].get("passed", 0)
    problems = []
    if got != expected:
        problems.append(f"{reduced} passed {got} tests, expected {expected} ({full}'s passed less its {less} skips)")
    for stage, report in ((full, a), (reduced, b)):
        bad = report["counts"].get("failed", 0) + report["counts"].get("error", 0)
        if bad:
            problems.append(f"{stage} had {bad} failures or errors")
    return problems


def main() -> int:
    """Command line: print the summary; exit 1 on a failed comparison or a stage the guard rejected."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stages", nargs="*", help="stage names, in order")
    parser.add_argument("--all", action="store_true", help="every stage that has a report")
    parser.add_argument("--compare", nargs=2, metavar=("FULL", "REDUCED"))
    parser.add_argument("--less", default="browser", help="the skipped group REDUCED may lack (default: browser)")
    args = parser.parse_args()
    stages = list(args.stages)
    if args.all:
        stages += sorted(p.stem for p in REPORTS.glob("*.json") if p.stem not in stages)
    if args.compare:
        stages += [s for s in args.compare if s not in stages]
    print("── what ran and what did not " + "─" * 40)
    failed = False
    for stage in stages:
        report = load(stage)
        print("\n".join(describe(stage, report)))
        failed |= bool(report and report["problems"])
    if args.compare:
        problems = compare(*args.compare, args.less)
        for line in problems:
            print(f"COMPARE FAILED: {line}")
        if not problems:
            full, reduced = args.compare
            print(f"{reduced} passed exactly the tests of {full}, less its {args.less} skips")
        failed |= bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
