"""The doctor's rules: one small class per pitfall, registered in :data:`RULES`, the way a linter keeps its rules.

A rule has an ``id`` (the kind of the findings it reports), a ``severity``, a ``link`` to the clinic
section or notebook that teaches the pitfall, a default ``fix`` and a one-line ``summary``. It detects
its pitfall in one or more stages of a run, each a method that does nothing by default:

* ``static(run)``: before the run, from the hooks attached and their code;
* ``before(run, call)`` / ``call(run, call)``: around every call of a user hook (``call.result`` is what it
  returned, ``call.error`` what it raised, ``call.edited()`` the tensors it edited in place);
* ``forward_failed(run, error)`` / ``backward_failed(run, error)``: return True when the rule explains it;
* ``after(run)``: after the forward and backward pass (module call counts, hooks that never fired);
* ``stored(run)``: what the hooks stored, before the model is put back.

It reports with ``self.report(run, where, message)``. Adding a pitfall is adding a rule: a subclass of
:class:`Rule` decorated with :func:`rule`, in the module of the stage it needs, and its test in
``tests/test_diagnose_rules.py``. The order of :data:`RULES` is the order of findings within a severity.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from hookviz.diagnose.runner import Call, Run

RULES: list[Rule] = []


class Rule:
    """One pitfall: its id, severity, link and fix, and the stages in which it looks for it."""

    id: ClassVar[str]
    severity: ClassVar[str]
    link: ClassVar[str]
    fix: ClassVar[str]
    summary: ClassVar[str]

    def report(self, run: Run, where: str, message: str, **overrides: Any) -> None:
        run.report(self, where, message, **overrides)

    def static(self, run: Run) -> None:
        """Look at the hooks before the run."""

    def before(self, run: Run, call: Call) -> None:
        """Look at a hook's arguments before it runs."""

    def call(self, run: Run, call: Call) -> None:
        """Look at what a hook did; ``call.neutralise()`` drops its return value for the rest of the run."""

    def forward_failed(self, run: Run, error: Exception) -> bool:
        """Explain a failed forward; True when this rule reported it."""
        return False

    def backward_failed(self, run: Run, error: Exception) -> bool:
        """Explain a failed backward; True when this rule reported it."""
        return False

    def after(self, run: Run) -> None:
        """Look at the run: module calls, hooks fired, the backward pass."""

    def stored(self, run: Run) -> None:
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


# registration order = the order of findings within a severity
from hookviz.diagnose.rules import registration, hook_calls, failures, after_run, stored  # noqa: E402, F401, I001

__all__ = ["RULES", "Rule", "by_id", "rule"]
