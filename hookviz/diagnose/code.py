"""What a hook's own code says: the function it runs, where it was defined, what it closes over, the loop it was
made in, and what it can store into.

These functions read a hook without calling it. A hook can be a function, a lambda, a bound method, a
``functools.partial`` (nested too), or an object with ``__call__`` (the ``SaveOutput`` pattern). No rule decides
from a variable's *name*: names are only shown to the learner.
"""

from __future__ import annotations

import ast
import functools
import linecache
import os
import re
import types
from collections.abc import Iterator
from typing import Any

from torch import Tensor, nn


def unwrap(hook: Any) -> tuple[Any, list[Any]]:
    """The innermost callable behind ``functools.partial`` layers, and the values the partials bind."""
    bound: list[Any] = []
    for _ in range(10):
        if not isinstance(hook, functools.partial):
            break
        bound += [*hook.args, *hook.keywords.values()]
        hook = hook.func
    return hook, bound


def function_of(hook: Any) -> Any:
    """The plain Python function a hook runs (unwraps partials, bound methods and callable objects)."""
    target, _ = unwrap(hook)
    if isinstance(target, types.MethodType):
        return target.__func__
    if isinstance(target, types.FunctionType):
        return target
    call = vars(type(target)).get("__call__") or next(
        (vars(k)["__call__"] for k in type(target).__mro__ if "__call__" in vars(k)), None
    )
    return call if isinstance(call, types.FunctionType) else target


def owner_of(hook: Any) -> Any:
    """The object a hook is bound to: the ``self`` of a bound method or a callable object, else ``None``."""
    target, _ = unwrap(hook)
    if isinstance(target, types.MethodType):
        return target.__self__
    if isinstance(target, (types.FunctionType, types.BuiltinFunctionType, type)):
        return None
    return target


def name_of(hook: Any) -> str:
    """A readable name: the function's qualified name without Python's ``<locals>`` steps (``make.<locals>.save``
    reads ``make.save``), or the class of a callable object."""
    target, _ = unwrap(hook)
    name = getattr(target, "__qualname__", None) or type(target).__name__
    return name.replace("<locals>.", "") if isinstance(name, str) else str(name)


def is_cell_file(filename: str) -> bool:
    """True for the pseudo file name IPython gives a notebook cell (``<ipython-input-...>``, ``ipykernel_N/M.py``)."""
    return filename.startswith("<ipython-input-") or re.search(r"ipykernel_\d+[/\\]\d+\.py$", filename) is not None


def defined_at(hook: Any) -> str:
    """Where the hook's code was written, as a traceback names a place but without a machine path: ``cell:4`` (line
    4 of a notebook cell), ``train.py:12``. Empty when Python does not know (a builtin, a C function)."""
    function = function_of(hook)
    code = getattr(function, "__code__", None)
    if code is None:
        return ""
    if is_cell_file(code.co_filename):
        return f"cell:{code.co_firstlineno}"
    if code.co_filename.startswith("<"):
        return ""
    return f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}"


def codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """A code object and every code object nested in it (lambdas, comprehensions, inner functions)."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from codes(const)


def attribute_names(hook: Any) -> set[str]:
    """Every global or attribute name the hook's code (and the code nested in it) uses."""
    code = getattr(function_of(hook), "__code__", None)
    return {name for c in codes(code) for name in c.co_names} if code is not None else set()


def cells(function: Any) -> tuple[Any, ...] | None:
    closure = getattr(function, "__closure__", None)
    return tuple(closure) if closure else None


def cell_is_set(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises ValueError
    except ValueError:
        return False
    return True


def same_behaviour(a: Any, b: Any) -> bool:
    """True when two hooks are the same function, or the same code closing over the very same variables."""
    if a is b:
        return True
    if owner_of(a) is not owner_of(b):
        return False
    bound_a, bound_b = unwrap(a)[1], unwrap(b)[1]
    if len(bound_a) != len(bound_b) or any(x is not y for x, y in zip(bound_a, bound_b, strict=True)):
        return False
    fa, fb = function_of(a), function_of(b)
    if fa is fb:
        return True
    code_a, code_b = getattr(fa, "__code__", None), getattr(fb, "__code__", None)
    if code_a is None or code_a is not code_b:
        return False
    cells_a, cells_b = cells(fa), cells(fb)
    if cells_a is None or cells_b is None:
        return cells_a is cells_b
    return all(x is y for x, y in zip(cells_a, cells_b, strict=True))


def free_values(function: Any) -> Iterator[tuple[str, Any]]:
    """The current values of the variables a function reads from outside: its closure cells and its globals."""
    code = getattr(function, "__code__", None)
    if code is None:
        return
    for name, cell in zip(code.co_freevars, cells(function) or (), strict=False):
        if cell_is_set(cell):
            yield name, cell.cell_contents
    namespace = getattr(function, "__globals__", {})
    for name in code.co_names:
        if name in namespace:
            yield name, namespace[name]


# ----------------------------------------------------------------------------------------- stored tensors

WALK_LIMIT = 20_000


def user_attributes(obj: Any) -> dict[str, Any]:
    """The attributes a person gave ``obj``: an object's ``__dict__`` and slots; for a module, those of its
    ``__dict__`` that PyTorch does not manage (``self.features``, ``module.output``), not its parameters,
    buffers, submodules or hook dicts."""
    if isinstance(obj, (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)):
        return {}
    attributes = dict(getattr(obj, "__dict__", {}) or {})
    if isinstance(obj, nn.Module):
        attributes = {k: v for k, v in attributes.items() if k not in _module_keys()}
    for slot in getattr(type(obj), "__slots__", ()):
        if isinstance(slot, str) and hasattr(obj, slot):
            attributes[slot] = getattr(obj, slot)
    return attributes


def class_attributes(obj: Any) -> dict[str, Any]:
    """The data a person's class keeps for all its instances (``class SaveOutput: outputs = []``): the class
    attributes of ``obj``'s own classes (not PyTorch's or the standard library's) that are not functions."""
    found: dict[str, Any] = {}
    for klass in type(obj).__mro__:
        module = getattr(klass, "__module__", "") or ""
        if module.split(".")[0] in ("builtins", "torch", "typing", "abc", "collections", "hookviz"):
            continue
        for name, value in vars(klass).items():
            if not name.startswith("__") and not callable(value) and not isinstance(value, (property, staticmethod,
                                                                                            classmethod)):
                found.setdefault(name, value)
    return found


@functools.cache
def _module_keys() -> frozenset[str]:
    """The attributes PyTorch itself keeps in every module's ``__dict__`` (its parameters, buffers, submodules, hook
    dicts, ``training``): everything else in a module's ``__dict__`` was put there by a person or another library."""
    return frozenset(vars(nn.Module())) | {"_is_full_backward_hook", "_compiled_call_impl"}


def roots_of(hook: Any) -> list[Any]:
    """Where a hook can keep what it stores: its closure, the globals it reads, its bound object's attributes
    (``self.outputs``, an extractor module's ``self.features``) and the arguments bound by ``functools.partial``."""
    function = function_of(hook)
    roots: list[Any] = []
    owner = owner_of(hook)
    if owner is not None:
        roots.append(user_attributes(owner))
        roots.append(class_attributes(owner))
    roots += unwrap(hook)[1]
    roots += list(getattr(function, "__defaults__", None) or ())  # lambda m, a, o, store=store: store.append(o)
    roots += list((getattr(function, "__kwdefaults__", None) or {}).values())
    roots += [c.cell_contents for c in (cells(function) or ()) if cell_is_set(c)]
    namespace = getattr(function, "__globals__", {})
    roots += [namespace[name] for name in attribute_names(hook) if name in namespace]
    return roots


def tensors_in(roots: list[Any], depth: int = 3) -> dict[int, Tensor]:
    """Every tensor reachable from ``roots`` through dicts, lists, tuples, sets, deques and the attributes of plain
    objects and modules (``model.acts``), not through a module's parameters, buffers or submodules: a model's own
    weights are not what a hook stored."""
    found: dict[int, Tensor] = {}
    seen: set[int] = set()

    def walk(value: Any, depth: int) -> None:
        if len(seen) > WALK_LIMIT or id(value) in seen:
            return
        seen.add(id(value))
        if isinstance(value, Tensor):
            found[id(value)] = value
        elif depth <= 0 or isinstance(value, (str, bytes, int, float, bool, type(None))):
            return
        elif isinstance(value, dict):
            for item in list(value.values()):
                walk(item, depth - 1)
        elif isinstance(value, (list, tuple, set, frozenset)) or type(value).__name__ == "deque":
            for item in list(value):
                walk(item, depth - 1)
        elif isinstance(value, nn.Module) or (not isinstance(value, (types.ModuleType, type)) and not callable(value)):
            walk(user_attributes(value), depth - 1)  # a module's own attributes, not its weights or submodules

    for root in roots:
        walk(root, depth)
    return found


def records(hook: Any) -> dict[int, tuple[Any, Any]]:
    """The dicts and lists a hook can write its records into (closure, globals, bound object, class), each with a
    snapshot to compare after the run: a dict's keys and the identity of each value, a list's length."""
    found: dict[int, tuple[Any, Any]] = {}

    def look(value: Any, depth: int) -> None:
        if id(value) in found or depth < 0:
            return
        if isinstance(value, dict):
            found[id(value)] = (value, {k: id(v) for k, v in list(value.items())[:10_000]})
            for item in list(value.values())[:100]:
                if isinstance(item, (dict, list)):
                    look(item, depth - 1)
        elif isinstance(value, list):
            found[id(value)] = (value, len(value))

    for root in roots_of(hook):
        look(root, 1)
    return found


def records_written(before: dict[int, tuple[Any, Any]]) -> list[tuple[int, Any]]:
    """The records written since ``before`` (:func:`records`): ``(id(dict), key)`` for each dict entry added or
    replaced, ``(id(list), None)`` for each list item added."""
    written: list[tuple[int, Any]] = []
    for key, (container, snapshot) in before.items():
        if isinstance(container, dict):
            now = {k: id(v) for k, v in list(container.items())[:10_000]}
            written += [(key, k) for k, v in now.items() if snapshot.get(k) != v]
        else:
            written += [(key, None)] * max(0, len(container) - snapshot)
    return written


def reachable_tensors(hook: Any) -> dict[int, Tensor]:
    """Tensors the hook can store into: its closure, globals, bound object (``self.outputs``) and partial arguments."""
    return tensors_in(roots_of(hook))


def configuration(hook: Any) -> tuple[Any, ...]:
    """What makes a hook behave the way it does, for telling copies from differently configured hooks: its code,
    and for each value it closes over, is bound to (partial, ``self``): the value when it is a number, string or
    None, the object itself when it is a module, a tensor or a function, else its type (two fresh lists are the
    same configuration; two scales of 1 and 2 are not)."""

    def token(value: Any) -> Any:
        if value is None or isinstance(value, (int, float, str, bytes, bool)):
            return ("value", value)
        if isinstance(value, (nn.Module, Tensor, types.FunctionType, types.ModuleType, type)):
            return ("object", id(value))
        return ("type", type(value).__qualname__)

    function = function_of(hook)
    code = getattr(function, "__code__", None)
    owner = owner_of(hook)
    bound = [token(v) for v in unwrap(hook)[1]]
    closure = [token(c.cell_contents) if cell_is_set(c) else ("empty",) for c in (cells(function) or ())]
    closure += [token(v) for v in getattr(function, "__defaults__", None) or ()]
    state = sorted((k, token(v)) for k, v in user_attributes(owner).items()) if owner is not None else []
    return (id(code) if code is not None else id(function), type(owner).__qualname__, tuple(bound), tuple(closure),
            tuple(state))  # fmt: skip


# ------------------------------------------------------------------------------------------ late binding

_SOURCES: dict[tuple[str, int, int], ast.AST | None] = {}


def _tree(filename: str) -> ast.AST | None:
    lines = linecache.getlines(filename)
    if not lines:
        return None
    key = (filename, len(lines), hash("".join(lines)))
    if key not in _SOURCES:
        if len(_SOURCES) > 64:
            _SOURCES.clear()
        try:
            _SOURCES[key] = ast.parse("".join(lines))
        except (SyntaxError, ValueError):
            _SOURCES[key] = None
    return _SOURCES[key]


def _bound(body: list[ast.stmt]) -> set[str]:
    """The names a block of statements binds by assignment (not in nested functions or classes)."""
    names: set[str] = set()
    for statement in body:
        for node in [statement, *_walk_local(statement)]:
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
                for target in getattr(node, "targets", None) or [node.target]:
                    names |= _targets(target)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None:
                        names |= _targets(item.optional_vars)
    return names


def _walk_local(node: ast.AST) -> list[ast.AST]:
    """The nodes under ``node``, not entering nested functions, lambdas or classes."""
    found = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        found.append(child)
        found += _walk_local(child)
    return found


def _targets(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def loop_variables(function: Any) -> set[str] | None:
    """The variables of every ``for`` loop (or comprehension) the hook's definition sits in, read from its source.

    ``None`` when the source cannot be read (then nothing is known).
    """
    code = getattr(function, "__code__", None)
    if code is None:
        return None
    lines = linecache.getlines(code.co_filename)
    key = (code.co_filename, len(lines), hash("".join(lines)), code.co_firstlineno, code.co_name)
    if key not in _LOOPS:
        if len(_LOOPS) > 1024:
            _LOOPS.clear()
        _LOOPS[key] = _loop_variables(code)
    return _LOOPS[key]


_LOOPS: dict[tuple[Any, ...], set[str] | None] = {}


def _loop_variables(code: types.CodeType) -> set[str] | None:
    tree = _tree(code.co_filename)
    if tree is None:
        return None
    line = code.co_firstlineno
    kinds = (ast.Lambda,) if code.co_name == "<lambda>" else (ast.FunctionDef, ast.AsyncFunctionDef)
    found: set[str] = set()
    hit = False

    def visit(node: ast.AST, loops: set[str]) -> None:
        nonlocal hit
        if isinstance(node, kinds) and (
            node.lineno == line or min([d.lineno for d in getattr(node, "decorator_list", [])] or [node.lineno]) == line
        ):
            hit = True
            found.update(loops)
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            if not isinstance(node, ast.While):
                visit(node.iter, loops)
            # the loop's own variables, and every name its body binds anew on each turn (key = f"{name}_out")
            inner = loops | (_targets(node.target) if not isinstance(node, ast.While) else set()) | _bound(node.body)
            for child in [*node.body, *node.orelse]:
                visit(child, inner)
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = set(loops)
            for generator in node.generators:
                inner |= _targets(generator.target)
            for child in ast.iter_child_nodes(node):
                visit(child, inner)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, loops)

    visit(tree, set())
    return found if hit else None
