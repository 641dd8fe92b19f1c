"""The reliability harness: every public entry point of hookviz, tried the way users misuse it.

- :mod:`reliability.registry` - which names are public (the rule) and where each one's cases are;
- :mod:`reliability.harness` - a :class:`~reliability.harness.Case` and :func:`~reliability.harness.run_case`,
  which classifies an outcome as clear / sane / raw / wrong / changed / leak / hang;
- :mod:`reliability.probes` - the before/after probes (model, tensors, hooks, widgets, threads, figures);
- :mod:`reliability.inputs` - the standard bad inputs per argument type, and :class:`~reliability.inputs.Spec`,
  which turns an entry point's arguments into cases;
- ``cases_*`` - the cases, one module per family of entry points.

``tests/test_reliability_harness.py`` runs every case (one test id each), checks that every public name is
registered, and tests the classifier itself.
"""

from __future__ import annotations

import importlib

from reliability.harness import Case

#: The modules that register cases (each has ``cases() -> list[Case]``).
CASE_MODULES = (
    "reliability.cases_releases",
    "reliability.cases_llama",
    "reliability.cases_ask",
    "reliability.cases_diagnose",
    "reliability.cases_monitor",
    "reliability.cases_atlas",
    "reliability.cases_doctor",
    "reliability.cases_misc",
)


def all_cases() -> list[Case]:
    """Every registered case, in a stable order (test ids must be the same in every xdist worker)."""
    out: list[Case] = []
    for name in CASE_MODULES:
        out += importlib.import_module(name).cases()
    return out
