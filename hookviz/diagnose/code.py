"""What a hook's own code says: the function it runs, the names it reads, the loop it was made in, dead stores.

These functions read a hook without calling it. A hook can be a function, a lambda, a bound method, a
``functools.partial`` (nested too), or an object with ``__call__`` (the ``SaveOutput`` pattern).
"""

from __future__ import annotations

import ast
import dis
import functools
import linecache
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
    """A readable name: the function's qualified name, or the class of a callable object."""
    target, _ = unwrap(hook)
    return getattr(target, "__qualname__", None) or type(target).__name__


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


def reachable_tensors(hook: Any) -> dict[int, Tensor]:
    """Tensors the hook can store into: its closure, globals, bound object (``self.outputs``) and partial arguments."""
    function = function_of(hook)
    roots: list[Any] = []
    owner = owner_of(hook)
    if owner is not None and not isinstance(owner, (nn.Module, type, types.ModuleType)):
        roots.append(getattr(owner, "__dict__", {}))
        roots += [getattr(owner, slot, None) for slot in getattr(type(owner), "__slots__", ())]
    roots += unwrap(hook)[1]
    roots += [c.cell_contents for c in (cells(function) or ()) if cell_is_set(c)]
    namespace = getattr(function, "__globals__", {})
    roots += [namespace[name] for name in attribute_names(hook) if name in namespace]
    found: dict[int, Tensor] = {}
    seen: set[int] = set()

    def walk(value: Any, depth: int) -> None:
        if len(seen) > WALK_LIMIT or id(value) in seen:
            return
        seen.add(id(value))
        if isinstance(value, Tensor):
            found[id(value)] = value
        elif depth <= 0 or isinstance(value, (nn.Module, types.ModuleType, type, str, bytes)):
            return
        elif isinstance(value, dict):
            for item in list(value.values()):
                walk(item, depth - 1)
        elif isinstance(value, (list, tuple, set, frozenset)) or type(value).__name__ == "deque":
            for item in list(value):
                walk(item, depth - 1)

    for root in roots:
        walk(root, 3)
    return found


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
        if isinstance(node, (ast.For, ast.AsyncFor)):
            visit(node.iter, loops)
            inner = loops | _targets(node.target)
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


# ------------------------------------------------------------------------------------- forgotten return

_REBUILDS = ("grad", "out", "inp", "arg", "new", "clip", "scale", "result", "clamp", "norm")
_SHORT = {"g", "gi", "go", "x", "y", "h", "o", "res"}


def dead_store(hook: Any) -> str | None:
    """A local variable the hook computes from its arguments and then never uses (``grad_input = ...`` without
    ``return grad_input``), when the hook never returns a value; ``None`` otherwise."""
    code = getattr(function_of(hook), "__code__", None)
    return None if code is None else _dead_store(code)


@functools.lru_cache(maxsize=1024)
def _dead_store(code: types.CodeType) -> str | None:
    if code.co_name == "<lambda>" or code.co_flags & (0x20 | 0x80 | 0x200):  # generators, coroutines
        return None
    instructions = list(dis.get_instructions(code))
    for i, ins in enumerate(instructions):
        if ins.opname == "RETURN_CONST" and ins.argval is not None:
            return None
        if ins.opname == "RETURN_VALUE" and not (
            i and instructions[i - 1].opname == "LOAD_CONST" and instructions[i - 1].argval is None
        ):
            return None
    params = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    for i, ins in enumerate(instructions):
        if ins.opname not in ("STORE_FAST", "STORE_DEREF") or ins.argval.startswith("_"):
            continue
        name = ins.argval
        later = instructions[i + 1 :]
        if any(_loads(other, name) for other in later):
            continue
        if any(_loads(other, name) for other in instructions[:i]) and any(
            other.opname in ("JUMP_BACKWARD", "JUMP_ABSOLUTE") for other in later
        ):
            continue  # read earlier in a loop that comes back to it
        if name in params or name in _SHORT or any(part in name.lower() for part in _REBUILDS):
            return name
    return None


def _loads(ins: dis.Instruction, name: str) -> bool:
    if not ins.opname.startswith(("LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE", "DELETE_FAST", "LOAD_NAME")):
        return False
    value = ins.argval
    return name in value if isinstance(value, tuple) else value == name
