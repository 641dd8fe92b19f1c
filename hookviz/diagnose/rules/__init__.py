"""The doctor's rules, one small class per pitfall (:mod:`hookviz.diagnose.rules.base` says what a rule is).

One family of rules per module, by what they read: how hooks were registered (``registration``), what a hook
returned (``returns``), what it edited (``edits``), what it raised (``raises``), what else it did to the model
or the device (``side_effects``), how the passes went (``firing``, ``failures``) and what the hooks stored
(``stored``). Adding a pitfall is adding a rule: a subclass of :class:`Rule` decorated with :func:`rule` in the
family it belongs to, and its case in ``tests/test_diagnose_rules.py``. The order below is the order of
findings within a severity.
"""

from hookviz.diagnose.rules import (  # noqa: F401 - importing a family registers its rules
    edits,
    failures,
    firing,
    raises,
    registration,
    returns,
    side_effects,
    stored,
)
from hookviz.diagnose.rules.base import RULES, Rule, by_id, rule

__all__ = ["RULES", "Rule", "by_id", "rule"]
