"""Self-test of the blind evaluation set (tests/doctor_blind): no doctor involved.

Every planted case's bug must really bite (its ``bites()`` check passes: the output or gradient is not the
intended one, a hook count grows, a graph is kept alive, an error is raised in the user's context ...), and
every clean model must run one forward (and backward where grad is on) in its context without error.
"""

from __future__ import annotations

import pytest
from doctor_blind import FAMILIES, all_cases, run_case

CASES = all_cases()
PLANTED = [c for c in CASES if c.planted]
CLEAN = [c for c in CASES if not c.planted]


def test_the_set_is_big_enough_and_well_formed() -> None:
    assert len(PLANTED) >= 80, len(PLANTED)
    assert len(CLEAN) >= 30, len(CLEAN)
    for family in FAMILIES:
        if family != "clean":
            assert sum(c.family == family for c in PLANTED) >= 3, family
    for c in CASES:
        assert c.source.strip(), c.name
        if c.planted:
            assert c.culprit and all(isinstance(n, str) and n for n in c.culprit), c.name
            assert c.bites is not None, f"{c.name}: a planted case needs a bites() check"


@pytest.mark.parametrize("c", PLANTED, ids=[c.name for c in PLANTED])
def test_planted_bug_bites(c) -> None:
    try:
        c.bites()
    finally:
        if c.teardown is not None:
            c.teardown()


@pytest.mark.parametrize("c", CLEAN, ids=[c.name for c in CLEAN])
def test_clean_model_runs(c) -> None:
    try:
        model, inputs, _, _ = run_case(c)
        if c.after is not None:
            c.after(model, inputs)
        del model, inputs
    finally:
        if c.teardown is not None:
            c.teardown()
