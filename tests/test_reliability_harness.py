"""Every public entry point of hookviz, tried the way users misuse it (issue 48): the shared reliability harness.

- ``test_case``: every registered case (``tests/reliability/cases_*.py``), one test id each. A case passes when its
  outcome is ``clear`` (refused at once, naming the argument) or ``sane`` (accepted, with the right answer); it
  fails on ``raw``, ``wrong``, ``changed``, ``leak`` or ``hang`` (see ``reliability.harness``).
- ``test_every_public_name_has_reliability_cases``: the registry is complete under the rule of
  ``reliability.registry`` (a new public function without cases fails here).
- ``test_the_classifier_*``: the harness itself tells each outcome apart, on fake entry points.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import ipywidgets as widgets
import pytest
import torch
from reliability import all_cases, registry
from reliability.harness import (
    ACCEPT,
    CHANGED,
    CLEAR,
    EITHER,
    GOOD,
    HANG,
    LEAK,
    RAW,
    REFUSE,
    SANE,
    WRONG,
    Case,
    Ctx,
    frozen,
    run_case,
)
from reliability.inputs import Arg, Spec
from torch import nn

import hookviz

CASES = all_cases()


@pytest.fixture(scope="module", autouse=True)
def _quick_collections() -> Iterator[None]:
    """Every case collects garbage a few times (to see what it left behind): freeze what exists already (the
    libraries, the cases), so that each collection looks at what the case made only. Undone afterwards."""
    import transformers  # noqa: F401 - imported before the freeze, with the widgets and the search index

    import hookviz.widgets  # noqa: F401

    hookviz.ask("hook")
    with frozen():
        yield


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case: Case) -> None:
    result = run_case(case)
    assert result.outcome in GOOD, f"{result.outcome}: {result.detail}"


def test_case_ids_are_unique_and_name_public_entry_points() -> None:
    ids = Counter(c.id for c in CASES)
    assert not [i for i, n in ids.items() if n > 1], [i for i, n in ids.items() if n > 1]
    names = {name for _, found in registry.public_names().values() for name in found}
    stale = sorted({c.entry for c in CASES} - names)
    assert not stale, f"cases registered under names that are not public (any more): {stale}"


def test_every_public_name_has_reliability_cases() -> None:
    """The rule is in reliability/registry.py: every public function and class (bar exceptions and dataclasses)
    of hookviz and its public submodules has new cases here, or an existing test named in registry.EXISTING."""
    covered_new = {c.entry for c in CASES}
    missing, broken = [], []
    for first, names in registry.entry_points().items():
        existing = [ref for name in names for ref in registry.EXISTING.get(name, ())]
        problems = [p for ref in existing if (p := registry.existing_problem(ref))]
        broken += problems
        if not covered_new & set(names) and len(existing) == len(problems):
            missing.append(first)
    assert not broken, "EXISTING names a test that no longer shows its case:\n  " + "\n  ".join(broken)
    assert not missing, (
        f"{len(missing)} public name(s) of hookviz without reliability cases (add cases in tests/reliability/, "
        f"or name an existing test in registry.EXISTING): {missing}"
    )


def test_existing_registrations_and_exemptions_are_not_stale() -> None:
    names = {name for _, found in registry.public_names().values() for name in found}
    stale = sorted(set(registry.EXISTING) - names)
    assert not stale, f"registry.EXISTING lists names that are not public entry points: {stale}"
    modules = {info for info in registry.EXEMPT_MODULES}
    found = {f"hookviz.{m.name}" for m in __import__("pkgutil").iter_modules(hookviz.__path__)}
    assert modules <= found, f"exempt modules that do not exist: {sorted(modules - found)}"
    assert registry.exempt_entry_points(), "the rule exempts exceptions and dataclasses: some should exist"


def test_the_new_entry_points_have_at_least_150_new_inputs() -> None:
    new_families = ("hookviz.ask", "hookviz.AskBox", "hookviz.AskState", "hookviz.search.", "hookviz.llama.",
                    "hookviz.releases.", "hookviz.expect_error", "hookviz.diagnose", "hookviz.atlas.",
                    "hookviz.check_setup", "hookviz.doctor", "hookviz.environment_report", "hookviz.MonitorState",
                    "hookviz.TrainingMonitor", "hookviz.remove_all_hooks")
    new = [c for c in CASES if c.new and c.entry.startswith(new_families)]
    assert len(new) >= 150, len(new)


# --------------------------------------------------------------------------- the classifier itself


def _fake(call: Any, expect: str = EITHER, names: tuple[str, ...] = ("steps",), **kw: Any) -> Case:
    return Case("fake", "fake", call, expect=expect, names=names, **kw)


def _model_ctx() -> Ctx:
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1)).train()
    model[0].eval()
    return Ctx(models=[model], tensors=[], model=model)


def _raises_from_torch(ctx: Ctx) -> Any:
    return torch.zeros(2) @ torch.zeros(3)  # torch's own shape error, no hookviz in between


def _refuses(ctx: Ctx) -> Any:
    return hookviz.releases.minor(2.10)  # hookviz refuses a float version, naming `version`


def test_the_classifier_tells_a_raw_error_from_a_clear_refusal() -> None:
    assert run_case(_fake(_raises_from_torch)).outcome == RAW
    assert run_case(_fake(_refuses, names=("version",))).outcome == CLEAR
    assert run_case(_fake(_refuses, names=("steps",))).outcome == RAW  # a refusal that names another argument
    assert run_case(_fake(lambda ctx: {}["x"], names=())).outcome == RAW  # a KeyError from the case's own code
    assert run_case(_fake(_refuses, expect=ACCEPT, names=("version",))).outcome == WRONG  # a valid input refused


def test_the_classifier_sees_a_silent_acceptance_and_a_wrong_answer() -> None:
    assert run_case(_fake(lambda ctx: 3, expect=REFUSE)).outcome == WRONG
    assert run_case(_fake(lambda ctx: 3, expect=ACCEPT, check=lambda a, ctx: None if a == 4 else "3")).outcome == WRONG
    assert run_case(_fake(lambda ctx: 4, expect=ACCEPT, check=lambda a, ctx: None if a == 4 else "3")).outcome == SANE


def test_the_classifier_sees_a_changed_model() -> None:
    def flip_modes(ctx: Ctx) -> None:
        ctx.model.train()  # puts the frozen first layer back in train mode

    def nudge(ctx: Ctx) -> None:
        with torch.no_grad():
            ctx.model[2].bias.add_(1e-7)

    def remove_users_hook(ctx: Ctx) -> None:
        ctx.model[0]._forward_hooks.clear()

    def with_hook() -> Ctx:
        ctx = _model_ctx()
        ctx.handle = ctx.model[0].register_forward_hook(lambda *a: None)
        return ctx

    def grad_mode_off(ctx: Ctx) -> None:
        torch.set_grad_enabled(False)

    for call, setup in ((flip_modes, _model_ctx), (nudge, _model_ctx), (remove_users_hook, with_hook),
                        (grad_mode_off, _model_ctx)):
        result = run_case(_fake(call, setup=setup))
        assert result.outcome == CHANGED, (call.__name__, result)
    assert torch.is_grad_enabled()  # the harness put the switch back


def test_the_classifier_sees_leaks() -> None:
    def leaves_a_widget(ctx: Ctx) -> None:
        ctx.widget = widgets.HTML("left open")
        raise ValueError("steps must be positive")

    def leaves_a_hook(ctx: Ctx) -> None:
        ctx.model[2].register_forward_hook(lambda *a: None)

    def leaves_a_global_hook(ctx: Ctx) -> None:
        torch.nn.modules.module.register_module_forward_hook(lambda *a: None)

    stop = threading.Event()

    def leaves_a_thread(ctx: Ctx) -> None:
        threading.Thread(target=stop.wait, args=(30,), daemon=True, name="fake-left-running").start()

    def leaves_a_figure(ctx: Ctx) -> None:
        import matplotlib.pyplot as plt

        plt.figure()

    try:
        for call in (leaves_a_widget, leaves_a_hook, leaves_a_global_hook, leaves_a_thread, leaves_a_figure):
            result = run_case(_fake(call, setup=_model_ctx))
            assert result.outcome == LEAK, (call.__name__, result)
    finally:
        stop.set()


def test_the_classifier_sees_a_hang_and_an_error_printed_later() -> None:
    result = run_case(_fake(lambda ctx: time.sleep(5), timeout=0.3))
    assert result.outcome == HANG, result

    class Broken:
        def __del__(self) -> None:
            raise AttributeError("no _closed")

    def refused_but_broken_later(ctx: Ctx) -> None:
        Broken()
        raise ValueError("steps must be at least 1")

    assert run_case(_fake(refused_but_broken_later)).outcome == RAW


def test_the_generated_inputs_cover_the_standard_kinds() -> None:
    """The harness, not each case, lists the bad inputs: a count gets bool, numpy and torch scalars, negative,
    zero, huge, 2.5, NaN, full-width digits, a list and None; a text gets empty, full-width, CJK and 20,000 chars."""
    spec = Spec("fake.count", lambda n=3: n, [Arg("n", "count", 3, minimum=1)], keywords=False)
    labels = {c.id.split(":", 1)[1] for c in spec.cases()}
    assert {"n=True", "n=np.int64", "n=torch.tensor", "n=negative", "n=zero", "n=1e9", "n=1e18", "n=float-2.5",
            "n=nan", "n=fullwidth-str", "n=None", "n=list"} <= labels, labels
    text = Spec("fake.text", lambda q: q, [Arg("q", "text", "hook", positional=True)], keywords=False)
    labels = {c.id.split(":", 1)[1] for c in text.cases()}
    assert {"q=empty", "q=fullwidth", "q=cjk", "q=long-20000", "q=bytes", "q=None"} <= labels, labels
    outcomes = {c.id: run_case(c).outcome for c in spec.cases()}
    assert outcomes["fake.count:n=True"] == WRONG  # an identity function takes everything: the harness says so
    assert outcomes["fake.count:valid"] == SANE
