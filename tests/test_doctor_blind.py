"""Targets for ``hookviz.diagnose`` on the blind evaluation set (tests/doctor_blind).

The set was written without reading the doctor: realistic hook code from public threads, each planted
pitfall with the names a correct finding must mention, and clean models that must draw no error or warning.
Targets: at least 90 % of the planted pitfalls found (an error/warning naming a culprit), at most one false
alarm per 30 clean models, and no case whose model state the diagnosis changed.
"""

from __future__ import annotations

import pytest
from doctor_blind.score import format_table, format_verbose, score_all


@pytest.fixture(scope="module")
def results():
    return score_all()


def test_report(results) -> None:
    print(format_table(results))
    assert not [r.name for r in results if r.outcome == "case-error"], format_verbose(
        [r for r in results if r.outcome == "case-error"]
    )


def test_at_least_90_percent_of_planted_pitfalls_found(results) -> None:
    planted = [r for r in results if r.planted]
    found = [r for r in planted if r.outcome == "found"]
    assert len(found) >= 0.9 * len(planted), format_table(results)


def test_at_most_one_false_alarm_per_30_clean_models(results) -> None:
    clean = [r for r in results if not r.planted]
    false_alarms = [r for r in clean if r.outcome == "false-alarm"]
    assert len(false_alarms) <= len(clean) // 30, format_table(results)


def test_the_diagnosis_changes_nothing(results) -> None:
    changed = [r for r in results if r.changed]
    assert not changed, format_table(results)
