"""Checkers for notebook 06 (the hookviz explorer, timeline and monitor): read answers off state objects.

Each checker recomputes the answer from the same state object the learner used, prints ``✓ ...``
when the learner's answer matches, and otherwise raises
:class:`~hookviz.exercises.ExerciseNotSolved` with a hint (never the answer itself).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hookviz.exercises import ExerciseNotSolved, call_learner_code, checker, describe_learner_error, expect, passed
from hookviz.i18n import tr

__all__ = ["check_first_backward_kind", "check_largest_grad_layer", "check_top_channel"]


def _not_solved(answer: Any) -> None:
    if answer is None:
        raise ExerciseNotSolved("not solved yet: set `answer` in the exercise cell")


class _RecordedGradients:
    """A stand-in for a monitor's state with gradient sizes chosen here: the function must read them."""

    def __init__(self, layer_names: list[str], depth: list[float]) -> None:
        self.layer_names = list(layer_names)
        self._depth = np.asarray(depth, dtype=np.float64)

    def grad_by_depth(self, last: int = 10) -> np.ndarray:
        """Mean |gradient| per layer, in ``layer_names`` order."""
        return self._depth.copy()


def _decoys(names: list[str]) -> list[_RecordedGradients]:
    """Monitor states whose largest gradient sits at every position in turn (a fixed guess passes one at most)."""
    decoys = []
    for top in range(len(names)):
        depth = [1e-4 * (1 + i) for i in range(len(names))]
        depth[top] = 1e-2
        decoys.append(_RecordedGradients(names, depth))
    return decoys


@checker
def check_largest_grad_layer(largest_grad_layer: Any, state: Any) -> None:
    """Exercise 1: ``largest_grad_layer(state)`` names the monitored layer with the largest mean |gradient|.

    The function is run on the notebook's monitor and on monitor states whose largest gradient sits at
    every other layer: a name typed in as a constant (guessed, or copied from a printout) cannot pass.
    """
    _not_solved(largest_grad_layer)
    expect(
        callable(largest_grad_layer),
        "largest_grad_layer should be a function that takes a monitor state and returns a layer name",
    )
    names = list(state.layer_names)
    for candidate in [state, *_decoys(names)]:
        try:
            answer = call_learner_code(largest_grad_layer, candidate)
        except ExerciseNotSolved:
            raise
        except Exception as exc:  # noqa: BLE001 - the learner's own error becomes a located hint
            raise ExerciseNotSolved(
                describe_learner_error(exc)
                + "\n  "
                + tr("it gets a monitor state: read state.layer_names and state.grad_by_depth()")
            ) from exc
        expect(
            isinstance(answer, str),
            f"largest_grad_layer(state) should return a layer name (a str from state.layer_names), got {answer!r}",
        )
        expect(answer in names, f"{answer!r} is not a monitored layer: return one of state.layer_names")
        best = names[int(np.nanargmax(np.asarray(candidate.grad_by_depth())))]
        expect(
            answer == best,
            "not the largest for every state it was given: compute the answer from the state passed in "
            "(state.grad_by_depth() has one number per name in state.layer_names, same order) and return "
            "the name at the position of its maximum",
        )
    chosen = call_learner_code(largest_grad_layer, state)
    passed(f"{chosen} has the largest mean |gradient| of the {len(names)} monitored layers")


@checker
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


@checker
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
