"""Checkers for notebook 06 (the hookviz explorer, timeline and monitor): read answers off state objects.

Each checker recomputes the answer from the same state object the learner used, prints ``✓ ...``
when the learner's answer matches, and otherwise raises
:class:`~hookviz.exercises.ExerciseNotSolved` with a hint (never the answer itself).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hookviz.exercises import ExerciseNotSolved, expect, passed

__all__ = ["check_first_backward_kind", "check_largest_grad_layer", "check_top_channel"]


def _not_solved(answer: Any) -> None:
    if answer is None:
        raise ExerciseNotSolved("not solved yet: set `answer` in the exercise cell")


def check_largest_grad_layer(state: Any, answer: str | None) -> None:
    """Exercise 1: ``answer`` names the monitored layer with the largest mean |gradient| (last 10 steps)."""
    _not_solved(answer)
    names = list(state.layer_names)
    expect(isinstance(answer, str), f"answer should be a layer name (a string such as {names[0]!r}), got {answer!r}")
    expect(answer in names, f"{answer!r} is not a monitored layer; the monitored layers are {names}")
    depth = np.asarray(state.grad_by_depth())
    best = names[int(np.nanargmax(depth))]
    expect(
        answer == best,
        f"{answer!r} is not the largest: look at state.grad_by_depth() (one number per name in "
        "state.layer_names, same order) and take the position of its maximum",
    )
    passed(f"{answer} has the largest mean |gradient| of the {len(names)} monitored layers")


def check_top_channel(state: Any, layer: str, sample: int, answer: int | None) -> None:
    """Exercise 2: ``answer`` is the channel of ``layer`` with the highest mean activation for ``sample``."""
    _not_solved(answer)
    expect(
        isinstance(answer, (int, np.integer)) and not isinstance(answer, bool),
        f"answer should be a channel index (an int), got {type(answer).__name__}",
    )
    maps = state.activations[layer][sample]
    expect(0 <= int(answer) < len(maps), f"channel {answer} does not exist: {layer} has {len(maps)} channels")
    means = maps.reshape(len(maps), -1).mean(axis=1)
    expect(
        int(answer) == int(np.argmax(means)),
        "not the highest: average each channel's map over its pixels (state.activations[layer][sample] "
        "has shape (channels, H, W)) and take the index of the largest mean",
    )
    passed(f"channel {int(answer)} of {layer} has the highest mean activation for sample {sample}")


def check_first_backward_kind(state: Any, answer: str | None) -> None:
    """Exercise 3: ``answer`` is the hook kind that fires first once ``backward()`` starts."""
    _not_solved(answer)
    kinds = sorted({e.kind for e in state.events})
    expect(isinstance(answer, str) and answer in kinds, f"answer should be one of the recorded kinds {kinds}")
    first = next(e for e in state.events if e.phase == "backward")
    expect(
        answer == first.kind,
        "not that one: filter state.events to phase == 'backward' and look at the first event's kind",
    )
    passed(f"{answer} hooks fire first in backward (on the {first.where})")
