"""Checkers for the notebooks' exercises: one module per notebook (``hookviz.exercises.nb01`` ...).

A checker takes what the learner wrote (a hook function, a class, a number), exercises it on a small
case and either prints a short confirmation or raises :class:`ExerciseNotSolved` with a message that
says what is wrong and gives a hint. Checkers never print the solution.

**Soft checks** (on in the student copies that ``make student`` writes): after :func:`soft_checks`, a
top-level call to a ``check_*`` function in a notebook cell that raises :class:`ExerciseNotSolved`
prints ``✗ <hint>`` instead, so the cell ends without an error and "Run All" goes on past an
exercise the learner skipped. Any other exception still stops the cell. :func:`strict_checks` turns it
off again. It works through an IPython AST transformer, so it only affects cells run by IPython.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from typing import Any

__all__ = [
    "ExerciseNotSolved",
    "call_learner_code",
    "expect",
    "passed",
    "report_not_solved",
    "soft_checks",
    "soft_checks_enabled",
    "strict_checks",
]

#: The first character of the line a soft check prints for an exercise that is not solved yet.
NOT_SOLVED_MARK = "✗"


class ExerciseNotSolved(AssertionError):
    """Raised by a check cell when the exercise above it is not solved yet (or not solved right)."""


def expect(condition: bool, message: str) -> None:
    """Raise :class:`ExerciseNotSolved` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise ExerciseNotSolved(message)


def passed(what: str) -> None:
    """Print the confirmation shown when a check succeeds."""
    print(f"✓ {what}")


def call_learner_code(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call the learner's function, turning the stub's ``NotImplementedError`` into a friendly failure."""
    try:
        return fn(*args, **kwargs)
    except NotImplementedError as exc:
        raise ExerciseNotSolved(
            "not solved yet: replace `raise NotImplementedError` in the exercise cell with your code"
        ) from exc


def report_not_solved(error: ExerciseNotSolved) -> None:
    """Print the line a soft check shows instead of raising: ``✗`` and the checker's hint."""
    print(f"{NOT_SOLVED_MARK} {error}")


# The statement a soft check wraps around a top-level `check_...(...)` call. `__import__` keeps it
# independent of the names the learner's notebook happens to define.
_SOFT_TEMPLATE = """
try:
    pass
except __import__("hookviz.exercises", fromlist=["_"]).ExerciseNotSolved as _hookviz_not_solved:
    __import__("hookviz.exercises", fromlist=["_"]).report_not_solved(_hookviz_not_solved)
"""


def _is_check_call(statement: ast.stmt) -> bool:
    """True for a top-level expression statement ``check_x(...)`` or ``module.check_x(...)``."""
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return False
    func = statement.value.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return name.startswith("check_")


class _SoftCheckTransformer(ast.NodeTransformer):
    """Wraps every top-level ``check_*(...)`` call of a cell in ``try/except ExerciseNotSolved``."""

    def visit_Module(self, node: ast.Module) -> ast.Module:
        body: list[ast.stmt] = []
        for statement in node.body:
            if _is_check_call(statement):
                wrapper = ast.parse(_SOFT_TEMPLATE).body[0]
                wrapper.body = [statement]
                body.append(ast.copy_location(wrapper, statement))
            else:
                body.append(statement)
        node.body = body
        return ast.fix_missing_locations(node)


def _shell() -> Any:
    """The running IPython shell, or None outside IPython."""
    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None else None


def soft_checks_enabled() -> bool:
    """Whether soft checks are on in the running IPython kernel."""
    shell = _shell()
    return shell is not None and any(isinstance(t, _SoftCheckTransformer) for t in shell.ast_transformers)


def strict_checks() -> None:
    """Turn soft checks off: a check that is not solved raises :class:`ExerciseNotSolved` again."""
    shell = _shell()
    if shell is not None:
        shell.ast_transformers[:] = [t for t in shell.ast_transformers if not isinstance(t, _SoftCheckTransformer)]


def soft_checks() -> bool:
    """Make unsolved check cells print ``✗ <hint>`` instead of stopping "Run All"; return whether it is on.

    Safe to call again (it is never installed twice). Outside IPython (a plain script) there are no
    cells to soften: it returns ``False`` and checks keep raising.
    """
    shell = _shell()
    if shell is None:
        return False
    strict_checks()
    shell.ast_transformers.append(_SoftCheckTransformer())
    return True
