"""Which names of hookviz are public, and where each one's reliability cases are.

The rule (``public_names``)
---------------------------
A *public module* is ``hookviz`` itself and every direct submodule or subpackage ``hookviz.X`` whose name does not
start with ``_`` (found with ``pkgutil.iter_modules``, so a module added tomorrow is included tomorrow); nested
modules (``hookviz.widgets.common``, ``hookviz.diagnose.runner``, ``hookviz.diagnose.rules.*``) are the
implementation of their package, whose ``__all__`` is what it offers. A module's *public names* are its
``__all__``; a module without ``__all__`` offers its functions and classes whose name does not start with ``_``
and that it defines itself. Only functions and classes count (a constant has no inputs to get wrong; a submodule
listed in ``__all__`` is a public module itself, unless calling it does something: ``hookviz.doctor()``). A name
bound to the same object in several places (``hookviz.ask`` is ``hookviz.search.ask``) is one entry point; it may be
registered under any of its names.

Exempt, by rule and checked mechanically:

- exception classes - hookviz raises them; nobody calls them with inputs;
- dataclasses - records that hookviz's functions fill in and return (``Answer``, ``Entry``, ``Finding``,
  ``HookRow``, ``LayerInfo`` ...): their reliability is that of the functions that make them, which have cases;

and, by module, with the reason in :data:`EXEMPT_MODULES` (``hookviz.exercises``: the checkers, covered by
``tests/test_wrong_answers.py``; ``hookviz.__main__``: a script).

Every other public name must have at least one reliability case: new ones, registered by the ``cases_*`` modules
of this package, or existing ones, registered in :data:`EXISTING` by the test that holds them (file, test
function, and the case-id prefix or the name the test calls). ``tests/test_reliability_harness.py`` fails when a
public name has neither, when an existing registration points at a test that is gone, and when an exemption no
longer applies.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import pkgutil
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hookviz

TESTS = Path(__file__).resolve().parent.parent

#: Public modules left out, and why.
EXEMPT_MODULES = {
    "hookviz.exercises": (
        "the exercise checkers of the notebooks: driven with the wrong answers learners type by "
        "tests/test_wrong_answers.py and with right and unsolved answers by tests/test_exercises.py"
    ),
    "hookviz.__main__": "a script (`python -m hookviz` runs check_setup, whose cases cover it)",
}


@dataclass(frozen=True)
class Existing:
    """An entry point covered by a test that was there before this harness: ``file::test`` and what shows it.

    ``shows`` is a case-id prefix of the test's table (a string literal or f-string head in the file), or the name
    the test function calls; the registry test checks both the test function and ``shows`` are in the file.
    """

    file: str
    test: str
    shows: str


_R = "test_reliability.py"
_RA = "test_reliability_atlas_timeline.py"
_RM = "test_reliability_attention_monitor.py"
_RD = "test_reliability_diagnose.py"
_TABLE = {_R: "test_bad_input_or_user_model", _RA: "test_bad_input_or_unusual_model",
          _RM: "test_attention_and_monitor_input", _RD: "test_bad_or_unusual_input"}


def _table(file: str, prefix: str) -> Existing:
    return Existing(file, _TABLE[file], prefix)


#: Entry points covered by an earlier round's reliability tests (each names the test and the cases).
EXISTING: dict[str, tuple[Existing, ...]] = {
    "hookviz.capture": (_table(_R, "capture layers="), _table(_RA, "capture grads='yes'")),
    "hookviz.Capture": (_table(_R, "first_nonfinite where='both'"), _table(_RA, "capture activation(call=5)")),
    "hookviz.HookGroup": (_table(_RA, "HookGroup(3, key='k')"),),
    "hookviz.register": (_table(_RA, "register hook=3"),),
    "hookviz.remove_key": (_table(_RA, "remove_key of"),),
    "hookviz.LayerExplorer": (_table(_R, "explorer inputs"), _table(_RA, "explorer widget")),
    "hookviz.ExplorerState": (_table(_R, "explorer page_size="), _table(_RA, "explorer set_target")),
    "hookviz.HookTimeline": (_table(_RA, "timeline widget"),),
    "hookviz.TimelineState": (_table(_R, "timeline loss_fn=3"), _table(_RA, "timeline global_hooks='yes'")),
    "hookviz.AttentionExplorer": (_table(_RM, "decoder AttentionExplorer"), _table(_RM, "user AttentionExplorer")),
    "hookviz.AttentionState": (_table(_R, "attention model_kwargs=3"), _table(_RM, "AttentionState(model=None)")),
    "hookviz.widgets.capture_attention": (_table(_RM, "decoder capture_attention"),),
    "hookviz.TrainingMonitor": (_table(_RM, "TrainingMonitor('a model')"),
                                Existing(_R, "test_a_started_monitor_is_stopped_by_close", "TrainingMonitor")),
    "hookviz.MonitorState": (_table(_R, "monitor step_fn=3"), _table(_RM, "monitor sample=0")),
    "hookviz.TinyTransformer": (_table(_R, "TinyTransformer("),),
    "hookviz.summarize.StridedSample": (_table(_R, "StridedSample("),
                                        Existing(_R, "test_the_strided_sample_cache_is_bounded", "StridedSample")),
    "hookviz.summarize.prime_stride": (Existing(_R, "test_the_strided_sample_cache_is_bounded", "prime_stride"),),
    "hookviz.atlas.AtlasWidget": (_table(_RA, "atlas widget"),),
    "hookviz.atlas.atlas_widget": (_table(_RA, "atlas atlas_widget(rows)"),),
    "hookviz.atlas.diff_atlases": (_table(_RA, "atlas diff_atlases(rows,"),),
    "hookviz.atlas.merge_versions": (_table(_RA, "atlas merge_versions(list)"),),
    "hookviz.atlas.probe": (_table(_RA, "atlas probe('forward',"),),
    "hookviz.atlas.rig_for": (_table(_RA, "atlas rig_for('nope')"),),
    "hookviz.atlas.run_atlas": (_table(_RA, "atlas run_atlas(kinds=3)"),),
    "hookviz.load_digits": (Existing("test_data_model.py", "test_bad_split_is_a_clear_error", "load_digits"),),
    "hookviz.ddp_demo.run_ddp_demo": (
        Existing("test_ddp_demo.py", "test_fork_is_refused_with_a_clear_error", "run_ddp_demo"),),
    "hookviz.ddp_demo.run_ddp_hook_probe": (
        Existing("test_ddp_demo.py", "test_hook_probe_refuses_fork", "run_ddp_hook_probe"),
        Existing("test_ddp_demo.py", "test_hook_probe_timeout_kills_the_workers_and_the_next_run_works",
                 "run_ddp_hook_probe"),
    ),
    "hookviz.ddp_demo.shard_gradients": (
        Existing("test_ddp_demo.py", "test_demo_runs_twice_after_backward_in_the_parent", "shard_gradients"),),
    "hookviz.ddp_demo.default_start_method": (
        Existing("test_ddp_demo.py", "test_default_start_method_is_never_fork", "default_start_method"),),
    "hookviz.fsdp_demo.run_fsdp_hook_probe": (
        Existing("test_nb15.py", "test_probe_refuses_a_world_size_that_does_not_divide", "run_fsdp_hook_probe"),),
    "hookviz.fsdp_demo.local_gradients": (
        Existing("test_nb15.py", "test_local_gradients_are_each_ranks_own", "local_gradients"),),
}


# --------------------------------------------------------------------------- the rule


def public_modules() -> list[str]:
    """``hookviz`` and its direct submodules whose names do not start with ``_``, minus :data:`EXEMPT_MODULES`."""
    found = ["hookviz"] + sorted(
        info.name for info in pkgutil.iter_modules(hookviz.__path__, "hookviz.")
        if not info.name.rsplit(".", 1)[1].startswith("_")
    )
    return [name for name in found if name not in EXEMPT_MODULES]


def module(name: str) -> types.ModuleType:
    """The module ``name`` (from ``sys.modules``: ``hookviz.doctor`` and ``hookviz.diagnose`` are shadowed on the
    package by functions of the same name)."""
    importlib.import_module(name)
    return sys.modules[name]


def _offered(mod: types.ModuleType) -> list[str]:
    names = getattr(mod, "__all__", None)
    if names is not None:
        return list(names)
    return [
        n for n, o in vars(mod).items()
        if not n.startswith("_") and (inspect.isfunction(o) or inspect.isclass(o)) and o.__module__ == mod.__name__
    ]


def exempt_reason(obj: Any) -> str | None:
    """Why ``obj`` needs no cases of its own (exception class, dataclass), or ``None``."""
    if isinstance(obj, type) and issubclass(obj, BaseException):
        return "an exception class: raised by hookviz, not called with inputs"
    if isinstance(obj, type) and dataclasses.is_dataclass(obj):
        return "a dataclass: a record hookviz's functions fill in and return"
    return None


def public_names() -> dict[int, tuple[Any, list[str]]]:
    """``id(object) -> (object, every public name it has)``: the entry points, per the rule above."""
    out: dict[int, tuple[Any, list[str]]] = {}
    for mod_name in public_modules():
        mod = module(mod_name)
        for name in _offered(mod):
            obj = getattr(mod, name)
            if not callable(obj):  # constants, and submodules (a public module of their own) unless callable
                continue
            out.setdefault(id(obj), (obj, []))[1].append(f"{mod_name}.{name}")
    return out


def entry_points() -> dict[str, list[str]]:
    """The first public name of each entry point that needs cases -> all its public names."""
    return {
        names[0]: names for obj, names in public_names().values() if exempt_reason(obj) is None
    }


def exempt_entry_points() -> dict[str, str]:
    """The first public name of each exempt entry point -> why it is exempt."""
    return {
        names[0]: reason for obj, names in public_names().values() if (reason := exempt_reason(obj)) is not None
    }


# --------------------------------------------------------------------------- existing tests


def existing_problem(ref: Existing) -> str | None:
    """``None`` when ``ref``'s test function exists and its file shows what ``ref.shows`` says; else why not."""
    path = TESTS / ref.file
    if not path.is_file():
        return f"{ref.file} is gone"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    if ref.test not in functions:
        return f"{ref.file}::{ref.test} is gone"
    strings = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            strings.append(node.value)
        elif isinstance(node, ast.JoinedStr):
            strings.append("".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values))
    if any(s.startswith(ref.shows) for s in strings):
        return None
    names = {n.id for n in ast.walk(functions[ref.test]) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(functions[ref.test]) if isinstance(n, ast.Attribute)}
    if ref.shows in names:
        return None
    return f"{ref.file}: no case id starting {ref.shows!r} and {ref.test} does not call {ref.shows}"
