"""Find hooks a test left behind: every hook registered while a guard watches, wherever PyTorch keeps it.

Every PyTorch registration that returns a handle builds a ``torch.utils.hooks.RemovableHandle``
(module, global module, tensor, autograd-node, optimizer and state-dict hooks alike). While a
:class:`HookLeakGuard` is started it records each handle made, with the place in the calling code that
made it. A hook is *left behind* when, after a garbage collection, the dict that holds it still exists
and still holds it: hooks on models and tensors that died with the test are not leaks, hooks on
anything still alive (a module-level model, a fixture, a global dict) are. Global module and optimizer
hooks written into PyTorch's dicts without a handle, and saved-tensors hooks left pushed, are caught by
comparing with a snapshot taken at start.
"""

from __future__ import annotations

import gc
import os
import sys
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.modules.module as module_hooks
import torch.optim.optimizer as optimizer_hooks
from torch.utils.hooks import RemovableHandle

_GLOBAL_DICTS = [
    (module_hooks, name)
    for name in (
        "_global_forward_pre_hooks",
        "_global_forward_hooks",
        "_global_backward_pre_hooks",
        "_global_backward_hooks",
        "_global_module_registration_hooks",
        "_global_parameter_registration_hooks",
        "_global_buffer_registration_hooks",
    )
] + [(optimizer_hooks, name) for name in ("_global_optimizer_pre_hooks", "_global_optimizer_post_hooks")]

_TORCH_DIR = os.path.dirname(torch.__file__)


def _caller() -> str:
    """``file:line in function`` of the first frame outside PyTorch and this file (who registered the hook)."""
    frame = sys._getframe(2)
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith(_TORCH_DIR) and path != __file__:
            return f"{os.path.basename(path)}:{frame.f_lineno} in {frame.f_code.co_name}"
        frame = frame.f_back
    return "?"


def _name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__


@dataclass
class _Made:
    handle: RemovableHandle
    where: str


class HookLeakGuard:
    """Record every hook registered between :meth:`start` and :meth:`stop`; report those still attached."""

    def __init__(self) -> None:
        self._made: list[_Made] = []
        self._original_init: Any = None
        self._global_ids: dict[tuple[str, str], set[int]] = {}
        self._saved_tensors_hooks: Any = None
        self._prune_at = 64

    def start(self) -> HookLeakGuard:
        """Snapshot the global hook dicts and start recording handles."""
        self._global_ids = {(mod.__name__, name): set(getattr(mod, name)) for mod, name in _GLOBAL_DICTS}
        self._saved_tensors_hooks = torch._C._autograd._top_saved_tensors_default_hooks(False)
        original = self._original_init = RemovableHandle.__init__
        made = self._made

        def recording_init(handle: RemovableHandle, *args: Any, **kwargs: Any) -> None:
            original(handle, *args, **kwargs)
            made.append(_Made(handle, _caller()))
            if len(made) >= self._prune_at:  # keep the records small in tests that register thousands of hooks
                made[:] = self._still_attached()
                self._prune_at = max(64, 2 * len(made))

        RemovableHandle.__init__ = recording_init  # type: ignore[method-assign]
        return self

    def stop(self) -> None:
        """Stop recording (the records stay, for :meth:`leaks`)."""
        if self._original_init is not None:
            RemovableHandle.__init__ = self._original_init  # type: ignore[method-assign]
            self._original_init = None

    def _still_attached(self) -> list[_Made]:
        found = []
        for made in self._made:
            hooks = made.handle.hooks_dict_ref()
            if hooks is not None and made.handle.id in hooks:
                found.append(made)
        return found

    def _attached(self) -> list[_Made]:
        attached = self._still_attached()
        if attached:  # hooks on objects that died with the test are not leaks: collect, then look again
            gc.collect()
            attached = self._still_attached()
        return attached

    def _new_global_ids(self) -> dict[tuple[str, str], set[int]]:
        new = {}
        for mod, name in _GLOBAL_DICTS:
            ids = set(getattr(mod, name)) - self._global_ids.get((mod.__name__, name), set())
            if ids:
                new[(mod.__name__, name)] = ids
        return new

    def leaks(self) -> list[str]:
        """One line per hook registered since :meth:`start` that is still attached to a live object."""
        lines = []
        seen_global: set[tuple[str, int]] = set()
        global_dicts = {id(getattr(mod, name)): f"{mod.__name__}.{name}" for mod, name in _GLOBAL_DICTS}
        for made in self._attached():
            hooks = made.handle.hooks_dict_ref()
            fn = hooks[made.handle.id]
            holder = global_dicts.get(id(hooks))
            if holder is not None:
                seen_global.add((holder, made.handle.id))
            place = f"global dict {holder}" if holder else "a live module, tensor or optimizer"
            lines.append(f"hook {_name(fn)} registered at {made.where}, still attached to {place}")
        for (mod_name, name), ids in self._new_global_ids().items():
            for hook_id in ids:
                if (f"{mod_name}.{name}", hook_id) not in seen_global:
                    fn = getattr(sys.modules[mod_name], name)[hook_id]
                    lines.append(f"hook {_name(fn)} written into global dict {mod_name}.{name} without a handle")
        if torch._C._autograd._top_saved_tensors_default_hooks(False) != self._saved_tensors_hooks:
            lines.append("saved_tensors_hooks are still pushed (a `with saved_tensors_hooks(...)` never exited)")
        return lines

    def cleanup(self) -> None:
        """Remove every hook :meth:`leaks` would report, so that one leaking test does not break the next."""
        for made in self._attached():
            made.handle.remove()
        for (mod_name, name), ids in self._new_global_ids().items():
            hooks = getattr(sys.modules[mod_name], name)
            for hook_id in ids:
                hooks.pop(hook_id, None)
        while torch._C._autograd._top_saved_tensors_default_hooks(False) not in (None, self._saved_tensors_hooks):
            torch._C._autograd._pop_saved_tensors_default_hooks()
        self._made.clear()
