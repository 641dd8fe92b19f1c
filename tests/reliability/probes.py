"""Before/after probes: what a hookviz call must leave as it found it, and what it must not leave behind.

- :class:`ModelProbe` - one user model: the train/eval mode of every submodule, the module tree, every parameter
  and buffer (the same objects, bitwise the same values), ``requires_grad``, ``.grad`` (the same tensor object and
  the same values), every hook dict of every submodule and every tensor hook of its parameters (other libraries'
  hooks included), hookviz's own keyed-hook records and, for a Hugging Face model, its config.
- :class:`TensorProbe` - a user tensor (an input): values, ``requires_grad``, ``.grad`` and its tensor hooks.
- :class:`WorldProbe` - the process: the global module and optimizer hook dicts, the saved-tensors hooks,
  ipywidgets' registry of open widgets, live threads, open matplotlib figures, hookviz's register of models in
  use, grad mode and a few other switches, the language, the working directory and (optionally) the global RNG.

Each ``diff`` returns human-readable problems as ``(outcome, text)`` pairs, ``outcome`` being ``"changed"``
(the user's model or the process was changed) or ``"leak"`` (something was left open or attached).
"""

from __future__ import annotations

import gc
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.modules.module as module_hooks
import torch.optim.optimizer as optimizer_hooks
from torch import Tensor, nn

CHANGED, LEAK = "changed", "leak"

#: Every per-module hook dict PyTorch keeps (forward, backward, state-dict and load hooks).
MODULE_HOOK_DICTS = (
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_backward_pre_hooks",
    "_backward_hooks",
    "_state_dict_pre_hooks",
    "_state_dict_hooks",
    "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks",
)
#: The process-wide hook dicts (module and optimizer).
GLOBAL_HOOK_DICTS = tuple(
    (module_hooks, name)
    for name in (
        "_global_forward_pre_hooks",
        "_global_forward_hooks",
        "_global_forward_hooks_always_called",
        "_global_backward_pre_hooks",
        "_global_backward_hooks",
        "_global_module_registration_hooks",
        "_global_parameter_registration_hooks",
        "_global_buffer_registration_hooks",
    )
) + tuple((optimizer_hooks, name) for name in ("_global_optimizer_pre_hooks", "_global_optimizer_post_hooks"))


def _hook_dict(owner: Any, name: str) -> dict[int, Any]:
    value = getattr(owner, name, None)
    return dict(value) if value else {}


def _lazy_library_hook(fn: Any) -> bool:
    """A hook that the model's own library installs on the model's first call (transformers' output capture).

    Such a hook appearing is what any call of the model does; it is allowed, and whether it still works is checked
    by the case itself (``after`` checks). Its disappearing is a change like any other.
    """
    module = getattr(fn, "__module__", None) or getattr(getattr(fn, "func", None), "__module__", None) or ""
    return module.startswith("transformers")


def _tensor_hooks(t: Tensor) -> dict[str, dict[int, Any]]:
    return {
        "_backward_hooks": _hook_dict(t, "_backward_hooks"),
        "_post_accumulate_grad_hooks": _hook_dict(t, "_post_accumulate_grad_hooks"),
    }


def _diff_hooks(where: str, before: dict[int, Any], after: dict[int, Any], allow_added: bool) -> list[tuple[str, str]]:
    problems = []
    for hook_id, fn in before.items():
        if hook_id not in after:
            problems.append((CHANGED, f"{where}: hook {_name(fn)} was removed"))
        elif after[hook_id] is not fn:
            problems.append((CHANGED, f"{where}: hook {_name(fn)} was replaced by {_name(after[hook_id])}"))
    for hook_id, fn in after.items():
        if hook_id not in before and not allow_added and not _lazy_library_hook(fn):
            problems.append((LEAK, f"{where}: hook {_name(fn)} left attached"))
    return problems


def _name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _bytes(t: Tensor) -> Tensor:
    return t.reshape(-1).contiguous().view(torch.uint8)


def _same_values(a: Tensor, b: Tensor) -> bool:
    """Bitwise equality (NaN equals the same NaN; -0.0 differs from 0.0)."""
    if a.is_meta or b.is_meta:
        return a.shape == b.shape and a.dtype == b.dtype
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.numel() == 0:
        return True
    try:
        return bool(torch.equal(_bytes(a), _bytes(b)))
    except (RuntimeError, TypeError):  # a layout that has no bytes view (sparse, quantized)
        return bool(torch.equal(a, b))


def _copy(t: Tensor) -> Tensor:
    return t if t.is_meta else t.detach().clone()


@dataclass
class TensorProbe:
    """A user tensor: its values, ``requires_grad``, ``.grad`` (object and values) and its tensor hooks."""

    name: str
    tensor: Tensor
    values: Tensor
    requires_grad: bool
    grad: Tensor | None
    grad_values: Tensor | None
    hooks: dict[str, dict[int, Any]]

    @classmethod
    def take(cls, name: str, t: Tensor) -> TensorProbe:
        grad = t.grad if t.is_leaf else None
        return cls(name, t, _copy(t), t.requires_grad, grad, None if grad is None else _copy(grad), _tensor_hooks(t))

    def diff(self, *, values: bool = True, grads: bool = True, hooks: bool = True) -> list[tuple[str, str]]:
        t, problems = self.tensor, []
        if values and not _same_values(self.values, _copy(t)):
            problems.append((CHANGED, f"{self.name}: values changed"))
        if t.requires_grad != self.requires_grad:
            problems.append((CHANGED, f"{self.name}: requires_grad {self.requires_grad} -> {t.requires_grad}"))
        if grads and t.is_leaf:
            grad = t.grad
            if (grad is None) != (self.grad is None):
                problems.append((CHANGED, f"{self.name}: .grad {'appeared' if grad is not None else 'was cleared'}"))
            elif grad is not None and grad is not self.grad:
                problems.append((CHANGED, f"{self.name}: .grad is another tensor object"))
            elif grad is not None and not _same_values(self.grad_values, _copy(grad)):
                problems.append((CHANGED, f"{self.name}: .grad values changed"))
        after = _tensor_hooks(t)
        for kind, before in self.hooks.items():
            problems += _diff_hooks(f"{self.name} {kind}", before, after[kind], allow_added=not hooks)
        return problems


@dataclass
class ModelProbe:
    """Everything of one user model that hookviz must leave as it found it."""

    label: str
    model: nn.Module
    tree: list[tuple[str, int]] = field(default_factory=list)
    modes: list[tuple[str, bool]] = field(default_factory=list)
    module_hooks: dict[str, dict[str, dict[int, Any]]] = field(default_factory=dict)
    full_backward: dict[str, Any] = field(default_factory=dict)
    tensors: list[TensorProbe] = field(default_factory=list)
    objects: dict[str, int] = field(default_factory=dict)
    keyed: dict[str, dict[str, int]] = field(default_factory=dict)
    config: dict[str, Any] | None = None

    @classmethod
    def take(cls, model: nn.Module, label: str = "model") -> ModelProbe:
        probe = cls(label, model)
        named = list(model.named_modules(remove_duplicate=False))
        probe.tree = [(n, id(m)) for n, m in named]
        probe.modes = [(n or "<root>", m.training) for n, m in named]
        for n, m in named:
            probe.module_hooks[n or "<root>"] = {d: _hook_dict(m, d) for d in MODULE_HOOK_DICTS}
            probe.full_backward[n or "<root>"] = getattr(m, "_is_full_backward_hook", None)
        for n, t in [*model.named_parameters(), *model.named_buffers()]:
            probe.tensors.append(TensorProbe.take(f"{label}.{n}", t))
            probe.objects[n] = id(t)
        capture = sys.modules.get("hookviz.capture")
        if capture is not None:
            probe.keyed = {n or "<root>": capture.registered_keys(m) for n, m in named}
        config = getattr(model, "config", None)
        if config is not None and hasattr(config, "to_dict"):
            probe.config = _plain(config.to_dict())
        return probe

    def diff(self, *, params: bool = True, grads: bool = True, hooks: bool = True, modes: bool = True) -> list[
        tuple[str, str]
    ]:
        model, problems = self.model, []
        named = list(model.named_modules(remove_duplicate=False))
        if [(n, id(m)) for n, m in named] != self.tree:
            problems.append((CHANGED, f"{self.label}: the module tree changed (a submodule added, removed, replaced)"))
            return problems
        if modes:
            for (name, was), (_, m) in zip(self.modes, named, strict=True):
                if m.training != was:
                    problems.append((CHANGED, f"{self.label}: {name}.training {was} -> {m.training}"))
        for n, m in named:
            key = n or "<root>"
            for d, before in self.module_hooks[key].items():
                problems += _diff_hooks(f"{self.label} {key}.{d}", before, _hook_dict(m, d), allow_added=not hooks)
            flag = getattr(m, "_is_full_backward_hook", None)
            if hooks and flag != self.full_backward[key] and not m._backward_hooks:
                problems.append((CHANGED, f"{self.label} {key}: _is_full_backward_hook changed"))
        now = {n: id(t) for n, t in [*model.named_parameters(), *model.named_buffers()]}
        if now != self.objects:
            problems.append((CHANGED, f"{self.label}: parameters or buffers replaced, added or removed"))
        else:
            for probe in self.tensors:
                problems += probe.diff(values=params, grads=grads, hooks=hooks)
        capture = sys.modules.get("hookviz.capture")
        if capture is not None and hooks:
            for n, m in named:
                key = n or "<root>"
                now_keys = capture.registered_keys(m)
                if now_keys != self.keyed.get(key, {}):
                    was = self.keyed.get(key)
                    problems.append((LEAK, f"{self.label} {key}: hookviz keyed hooks {was} -> {now_keys}"))
        config = getattr(model, "config", None)
        if self.config is not None and config is not None and _plain(config.to_dict()) != self.config:
            changed = sorted(
                k for k in set(self.config) | set(_plain(config.to_dict()))
                if self.config.get(k) != _plain(config.to_dict()).get(k)
            )
            problems.append((CHANGED, f"{self.label}: config changed: {changed[:5]}"))
        return problems


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


# --------------------------------------------------------------------------- the process


def open_widgets() -> dict[Any, Any]:
    """ipywidgets' registry of open widgets (model id -> widget); empty when ipywidgets is not loaded."""
    widget = sys.modules.get("ipywidgets.widgets.widget")
    return dict(getattr(widget, "_instances", {})) if widget is not None else {}


def _claims() -> dict[int, str]:
    common = sys.modules.get("hookviz.widgets.common")
    if common is None:
        return {}
    return {id(m): what for m, (what, _) in list(common._BUSY.items())}


def _switches() -> dict[str, Any]:
    switches = {
        "torch.is_grad_enabled()": torch.is_grad_enabled(),
        "torch.is_inference_mode_enabled()": torch.is_inference_mode_enabled(),
        "torch.get_default_dtype()": torch.get_default_dtype(),
        "torch.are_deterministic_algorithms_enabled()": torch.are_deterministic_algorithms_enabled(),
        "torch.is_anomaly_enabled()": torch.is_anomaly_enabled(),
        "torch.backends.cudnn.enabled": torch.backends.cudnn.enabled,
        "saved-tensors hooks": torch._C._autograd._top_saved_tensors_default_hooks(False),
        "os.getcwd()": os.getcwd(),
    }
    i18n = sys.modules.get("hookviz.i18n")
    if i18n is not None:
        switches["hookviz language"] = i18n.get_language()
    transformers_logging = sys.modules.get("transformers.utils.logging")
    if transformers_logging is not None:
        switches["transformers progress bar"] = transformers_logging.is_progress_bar_enabled()
        switches["transformers verbosity"] = transformers_logging.get_verbosity()
    return switches


@dataclass
class WorldProbe:
    """The process around the call: global hooks, open widgets, threads, figures, claims and switches."""

    global_hooks: dict[str, dict[int, Any]]
    widgets: set[Any]
    threads: set[threading.Thread]
    figures: set[int]
    claims: dict[int, str]
    switches: dict[str, Any]
    rng: Tensor | None

    @classmethod
    def take(cls, rng: bool = False) -> WorldProbe:
        gc.collect()
        return cls(
            {f"{mod.__name__}.{name}": _hook_dict(mod, name) for mod, name in GLOBAL_HOOK_DICTS},
            set(open_widgets()),
            {t for t in threading.enumerate() if t.is_alive()},
            _figures(),
            _claims(),
            _switches(),
            torch.random.get_rng_state() if rng else None,
        )

    def diff(self, grace: float = 3.0) -> list[tuple[str, str]]:
        """What changed in the process since :meth:`take` (threads get ``grace`` seconds to finish)."""
        problems = []
        for key, before in self.global_hooks.items():
            mod_name, name = key.rsplit(".", 1)
            problems += _diff_hooks(key, before, _hook_dict(sys.modules[mod_name], name), allow_added=False)
        deadline = time.monotonic() + grace
        new_threads = [t for t in threading.enumerate() if t.is_alive() and t not in self.threads]
        for t in new_threads:
            t.join(max(0.0, deadline - time.monotonic()))
        gc.collect()
        still = [t.name for t in threading.enumerate() if t.is_alive() and t not in self.threads]
        if still:
            problems.append((LEAK, f"threads left running: {still}"))
        left = set(open_widgets()) - self.widgets
        if left:
            kinds = sorted({type(w).__name__ for k, w in open_widgets().items() if k in left})
            problems.append((LEAK, f"{len(left)} ipywidgets left open ({', '.join(kinds[:6])})"))
        figures = _figures() - self.figures
        if figures:
            problems.append((LEAK, f"{len(figures)} matplotlib figure(s) left open"))
        claims = {k: v for k, v in _claims().items() if k not in self.claims}
        if claims:
            problems.append((LEAK, f"models left claimed as in use: {sorted(claims.values())}"))
        switches = _switches()
        for key, before in self.switches.items():
            if switches.get(key) != before:
                problems.append((CHANGED, f"{key}: {before!r} -> {switches.get(key)!r}"))
        if self.rng is not None and not torch.equal(self.rng, torch.random.get_rng_state()):
            problems.append((CHANGED, "the global random number generator's state changed"))
        return problems

    def cleanup(self) -> None:
        """Undo what :meth:`diff` found: global hooks removed, widgets and figures closed, switches put back."""
        for key, before in self.global_hooks.items():
            mod_name, name = key.rsplit(".", 1)
            hooks = getattr(sys.modules[mod_name], name)
            for hook_id in [k for k in hooks if k not in before]:
                hooks.pop(hook_id, None)
        for key, widget in open_widgets().items():
            if key not in self.widgets:
                try:
                    widget.close()
                except Exception:  # noqa: S112 - a broken widget is closed as far as it goes
                    continue
        if "matplotlib.pyplot" in sys.modules:
            import matplotlib.pyplot as plt

            for number in _figures() - self.figures:
                plt.close(number)
        common = sys.modules.get("hookviz.widgets.common")
        if common is not None:
            for model in [m for m in list(common._BUSY) if id(m) not in self.claims]:
                common._BUSY.pop(model, None)
        switches = self.switches
        torch.set_grad_enabled(switches["torch.is_grad_enabled()"])
        torch.set_default_dtype(switches["torch.get_default_dtype()"])
        torch.set_anomaly_enabled(switches["torch.is_anomaly_enabled()"])
        torch.backends.cudnn.enabled = switches["torch.backends.cudnn.enabled"]
        if os.getcwd() != switches["os.getcwd()"]:
            os.chdir(switches["os.getcwd()"])
        if "hookviz language" in switches and sys.modules.get("hookviz.i18n") is not None:
            sys.modules["hookviz.i18n"].set_language(switches["hookviz language"])
        transformers_logging = sys.modules.get("transformers.utils.logging")
        if transformers_logging is not None and "transformers progress bar" in switches:
            if switches["transformers progress bar"]:
                transformers_logging.enable_progress_bar()
            else:
                transformers_logging.disable_progress_bar()
            if "transformers verbosity" in switches:
                transformers_logging.set_verbosity(switches["transformers verbosity"])
        if self.rng is not None:
            torch.random.set_rng_state(self.rng)


def _figures() -> set[int]:
    if "matplotlib.pyplot" not in sys.modules:
        return set()
    import matplotlib.pyplot as plt

    return set(plt.get_fignums())
