"""hookviz widgets: thin ipywidgets views over plain-Python state objects.

* :class:`LayerExplorer` / :class:`ExplorerState` (a cursor over a :class:`CapturedPass`) - feature maps
  and gradient histogram of any layer.
* :class:`TrainingMonitor` / :class:`MonitorState` - live feature maps of a probe sample, gradients and
  activation statistics while training.
* :class:`HookTimeline` / :class:`TimelineState` - the order in which every kind of hook fires.
* :class:`AskBox` / :class:`AskState` - a question in your own words, and the sections of the course that answer it
  (:func:`hookviz.ask`); its static form is its one-line repr.

Each widget draws a static PNG of its state where no widget front end exists (``show_static()``,
and an ``image/png`` entry in its display bundle).
"""

from hookviz.widgets.ask import AskBox, AskState
from hookviz.widgets.attention import ATTENTION_KEY, AttentionExplorer, AttentionState, capture_attention
from hookviz.widgets.common import StaticPicture
from hookviz.widgets.explorer import EXPLORER_KEY, CapturedPass, ExplorerState, LayerExplorer, LayerInfo
from hookviz.widgets.monitor import MONITOR_KEY, MonitorState, StepStats, TrainingMonitor, digits_step_fn
from hookviz.widgets.timeline import HOOK_KINDS, HookEvent, HookTimeline, TimelineState, small_model

__all__ = [
    "ATTENTION_KEY",
    "AskBox",
    "AskState",
    "AttentionExplorer",
    "AttentionState",
    "capture_attention",
    "EXPLORER_KEY",
    "CapturedPass",
    "HOOK_KINDS",
    "MONITOR_KEY",
    "ExplorerState",
    "HookEvent",
    "HookTimeline",
    "LayerExplorer",
    "LayerInfo",
    "MonitorState",
    "StaticPicture",
    "StepStats",
    "TimelineState",
    "TrainingMonitor",
    "digits_step_fn",
    "small_model",
]
