"""The doctor's rule: one small class per pitfall, registered in :data:`RULES`, the way a linter keeps its rules.

A rule has an ``id`` (the kind of the findings it reports), a ``severity``, a ``link`` to the clinic
section or notebook that teaches the pitfall, a default ``fix`` and a one-line ``summary``. It detects
its pitfall from what the run *observed* (:class:`~hookviz.diagnose.facts.Evidence`), in one or more stages,
each a method that does nothing by default:

* ``static(run)``: before the run, from the hooks attached (their kinds, places, what they close over);
* ``before(run, call)`` / ``call(run, call)``: around every call of a user hook in the passes named by
  ``passes`` (``call.result`` is what it returned, ``call.error`` what it raised, ``call.edited()`` the
  tensors it edited in place, ``call.dropped()`` the tensors it computed and threw away, ``call.syncs`` ...);
* ``forward_failed(run, error)`` / ``backward_failed(run, error)``: return True when the rule explains a
  failure that no hook's return value explains;
* ``after(run)``: after every pass (module call counts, hooks that never fired, differential results);
* ``stored(run)``: what the hooks stored, before the model is put back.

It reports with ``self.report(run, where, message)``. This module imports nothing from the rest of the doctor
but its facts, so the rules and the runner import it without a circle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from hookviz.diagnose.facts import Call, Evidence

RULES: list[Rule] = []


class Rule:
    """One pitfall: its id, severity, link and fix, and the stages in which it looks for it."""

    id: ClassVar[str]
    severity: ClassVar[str]
    link: ClassVar[str]
    fix: ClassVar[str]
    summary: ClassVar[str]
    #: The passes whose hook calls :meth:`before` and :meth:`call` see (``main``: the training step).
    passes: ClassVar[tuple[str, ...]] = ("main",)

    def report(self, run: Evidence, where: str, message: str, **overrides: Any) -> None:
        run.report(self, where, message, **overrides)

    def static(self, run: Evidence) -> None:
        """Look at the hooks before the run."""

    def before(self, run: Evidence, call: Call) -> None:
        """Look at a hook's arguments before it runs."""

    def call(self, run: Evidence, call: Call) -> None:
        """Look at what a hook did; ``call.neutralise()`` drops its return value for the rest of the run."""

    def forward_failed(self, run: Evidence, error: Exception) -> bool:
        """Explain a failed forward; True when this rule reported it."""
        return False

    def backward_failed(self, run: Evidence, error: Exception) -> bool:
        """Explain a failed backward; True when this rule reported it."""
        return False

    def after(self, run: Evidence) -> None:
        """Look at the passes: module calls, hooks fired, the backward pass, what differential passes found."""

    def stored(self, run: Evidence) -> None:
        """Look at what the hooks can reach after the run."""

    def __repr__(self) -> str:
        return f"<rule {self.id} ({self.severity})>"


def rule(cls: type[Rule]) -> type[Rule]:
    """Register a rule (class decorator); ids are unique."""
    if any(r.id == cls.id for r in RULES):
        raise ValueError(f"two rules with the id {cls.id!r}")
    for attr in ("severity", "link", "fix", "summary"):
        if not isinstance(getattr(cls, attr, None), str):
            raise TypeError(f"rule {cls.__name__} needs a {attr}")
    RULES.append(cls())
    return cls


def by_id(rule_id: str) -> Rule:
    """The registered rule with this id."""
    for item in RULES:
        if item.id == rule_id:
            return item
    raise KeyError(f"no rule {rule_id!r}; ids: {', '.join(r.id for r in RULES)}")
