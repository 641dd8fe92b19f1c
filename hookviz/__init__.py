"""hookviz: learn every PyTorch hook type live.

The capture core (:mod:`hookviz.capture`) owns hook lifetime; :mod:`hookviz.catalogue` names every
hook kind; :mod:`hookviz.hooks_table` lists and removes what is attached to a model;
:mod:`hookviz.summarize` and :mod:`hookviz.render` turn captured tensors into statistics and pictures;
:mod:`hookviz.widgets` shows them live; :mod:`hookviz.data` and :mod:`hookviz.models` ship the course's
digits and its small trained CNN; :func:`hookviz.check_setup` (module :mod:`hookviz.doctor`) checks
the installation; :func:`hookviz.diagnose`, the hook doctor, checks the hooks on a model;
:func:`hookviz.ask` (module :mod:`hookviz.search`, widget :class:`AskBox`) finds the sections of the course that
answer a question typed in your own words.
"""

from hookviz import (
    catalogue,
    diagnose,  # the package, callable: hookviz.diagnose(model, inputs) runs diagnose.diagnose()
    doctor,  # the module, callable: hookviz.doctor() runs check_setup()
    releases,
)
from hookviz.capture import (
    Capture,
    HookGroup,
    LayerRecord,
    capture,
    register,
    registered_keys,
    remove_key,
    resolve_layers,
)
from hookviz.data import load_digits
from hookviz.diagnose import Diagnosis, DiagnosisError, Finding
from hookviz.doctor import check_setup, environment_report
from hookviz.hooks_table import HookTable, list_hooks, remove_all_hooks
from hookviz.i18n import N_, N_name, get_language, ljust, set_language, tr
from hookviz.i18n import on_language_change as _on_language_change
from hookviz.models import DigitsCNN, accuracy, load_pretrained_cnn, make_digits_step, train_digits_cnn
from hookviz.releases import expect_error
from hookviz.search import Answer, Answers, ask
from hookviz.transformer import TinyTransformer, load_tiny_transformer, make_tiny_batch

__version__ = "0.1.0"

# The widgets import ipywidgets and matplotlib: load them on first use, so `import hookviz` stays light.
_WIDGETS = (
    "AskBox",
    "AskState",
    "AttentionExplorer",
    "AttentionState",
    "ExplorerState",
    "HookTimeline",
    "LayerExplorer",
    "MonitorState",
    "TimelineState",
    "TrainingMonitor",
    "digits_step_fn",
)


def __getattr__(name: str):
    """Import a widget class on first access (module-level ``__getattr__``, PEP 562)."""
    if name in _WIDGETS:
        from hookviz import widgets

        return getattr(widgets, name)
    raise AttributeError(f"module 'hookviz' has no attribute {name!r}")


__all__ = [
    *_WIDGETS,
    "Answer",
    "Answers",
    "Capture",
    "DigitsCNN",
    "HookGroup",
    "HookTable",
    "TinyTransformer",
    "LayerRecord",
    "accuracy",
    "ask",
    "catalogue",
    "check_setup",
    "expect_error",
    "capture",
    "diagnose",
    "Diagnosis",
    "DiagnosisError",
    "Finding",
    "doctor",
    "environment_report",
    "get_language",
    "list_hooks",
    "load_digits",
    "load_pretrained_cnn",
    "load_tiny_transformer",
    "make_digits_step",
    "make_tiny_batch",
    "register",
    "releases",
    "registered_keys",
    "remove_all_hooks",
    "remove_key",
    "resolve_layers",
    "set_language",
    "train_digits_cnn",
    "tr",
    "N_",
    "N_name",
    "ljust",
]

def _charts_follow_language(language: str) -> None:
    """Once a language other than English is chosen, charts made from then on can draw it (hookviz's own font).

    Registered with :func:`hookviz.i18n.on_language_change` here, above both layers, so that the language layer
    never imports the pictures (``hookviz.render`` imports matplotlib only when a language needs it).
    """
    if language != "en":
        from hookviz.render import use_cjk_font

        use_cjk_font()


_on_language_change(_charts_follow_language)
_charts_follow_language(get_language())  # HOOKVIZ_LANG=zh: charts draw Chinese from the start, as after set_language
