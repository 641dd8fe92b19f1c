"""Checkers for notebook 10, the FAQ: two quick quizzes whose answers the checker works out by running code.

Each ``check_*`` function rebuilds the quiz's situation, measures the true answer, and compares it
with the learner's. It prints ``✓ ...`` when they match and raises
:class:`~hookviz.exercises.ExerciseNotSolved` with a hint otherwise, without revealing the answer.
"""

from __future__ import annotations

import copy
import io
from typing import Any

import torch
from torch import nn

from hookviz.exercises import ExerciseNotSolved, checker, expect, passed

__all__ = ["check_quiz_calls", "check_quiz_survivors", "SURVIVOR_OPTIONS"]

SURVIVOR_OPTIONS = ("deepcopy", "state_dict", "save_model")


def _count_calls() -> int:
    """Quiz 1's situation: one ReLU used twice in forward, its registration cell run twice."""
    calls = []

    def count(module: nn.Module, args: tuple[Any, ...], output: torch.Tensor) -> None:
        calls.append(1)

    relu = nn.ReLU()
    model = nn.Sequential(nn.Linear(4, 4), relu, nn.Linear(4, 4), relu)
    for _ in range(2):  # the registration cell, run twice
        relu.register_forward_hook(count)
    model(torch.randn(1, 4))
    return len(calls)


@checker
def check_quiz_calls(answer: Any) -> None:
    """Quiz 1: how many times does the hook run in one forward pass?"""
    expect(answer is not None, "not answered yet: set `answer` to a whole number")
    expect(isinstance(answer, int) and not isinstance(answer, bool), "the answer is a whole number (an int)")
    truth = _count_calls()
    expect(
        answer == truth,
        f"{answer} is not it. Hint: a hook runs once per *call* of its module, and every registration is a "
        "separate hook",
    )
    passed(f"{truth} calls: two registrations × two uses of the same ReLU instance")


_FIRED: list[str] = []  # module-level, so that an unpickled copy of the hook appends to the same list


def _quiz_hook(module: nn.Module, args: tuple[Any, ...], output: torch.Tensor) -> None:
    """A picklable forward hook (a module-level function) that records that it ran."""
    _FIRED.append("ran")


def _runs_hook(model: nn.Module) -> bool:
    _FIRED.clear()
    model(torch.randn(1, 4))
    return bool(_FIRED)


def _survivors() -> set[str]:
    """Quiz 2's situation: which ways of copying a model keep a forward hook?"""
    model = nn.Sequential(nn.Linear(4, 2))
    model[0].register_forward_hook(_quiz_hook)
    kept = set()
    if _runs_hook(copy.deepcopy(model)):
        kept.add("deepcopy")
    fresh = nn.Sequential(nn.Linear(4, 2))
    fresh.load_state_dict(model.state_dict())
    if _runs_hook(fresh):
        kept.add("state_dict")
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    if _runs_hook(torch.load(buffer, weights_only=False)):
        kept.add("save_model")
    return kept


@checker
def check_quiz_survivors(answer: Any) -> None:
    """Quiz 2: the set of options (from ``SURVIVOR_OPTIONS``) after which the hook still runs."""
    expect(answer is not None, f"not answered yet: set `answer` to a set of names from {SURVIVOR_OPTIONS}")
    if not isinstance(answer, (set, frozenset, list, tuple)):
        raise ExerciseNotSolved(f"the answer is a set of names, e.g. {{'{SURVIVOR_OPTIONS[0]}'}}")
    unknown = set(answer) - set(SURVIVOR_OPTIONS)
    expect(not unknown, f"unknown option(s) {sorted(unknown)}; choose from {SURVIVOR_OPTIONS}")
    truth = _survivors()
    wrong = len(set(answer) ^ truth)
    expect(
        wrong == 0,
        f"{wrong} option(s) wrong. Hint: ask what each one copies: the whole Python object, only the tensors, "
        "or the pickled object",
    )
    passed("right: module hooks live on the module object, not in its tensors")
