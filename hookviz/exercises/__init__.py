"""Checkers for the notebooks' exercises: one module per notebook (``hookviz.exercises.nb01`` ...).

A checker takes what the learner wrote (a hook function, a class, a number), exercises it on a small
case and either prints a short confirmation or raises :class:`ExerciseNotSolved` with a message that
says what is wrong and gives a hint. Checkers never print the solution.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["ExerciseNotSolved", "expect", "passed", "call_learner_code"]


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
