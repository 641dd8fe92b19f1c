"""See what is attached to a model: every module hook, global hook and parameter tensor hook.

PyTorch keeps hooks in private ``OrderedDict`` attributes of each module (``_forward_hooks`` and
friends), in module-level dicts for global hooks, and on parameters (``_backward_hooks``,
``_post_accumulate_grad_hooks``). There is no public "list my hooks" call; :func:`list_hooks` reads
those places and returns a :class:`HookTable`, and :func:`remove_all_hooks` empties them.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.modules.module as _module_mod
import torch.optim.optimizer as _optim_mod
from torch import nn

from hookviz.capture import forget_model

__all__ = ["HookRow", "HookTable", "list_hooks", "remove_all_hooks"]

# (attribute on nn.Module, kind shown to the user)
_MODULE_HOOK_DICTS = [
    ("_forward_pre_hooks", "forward_pre"),
    ("_forward_hooks", "forward"),
    ("_backward_pre_hooks", "backward_pre"),
    ("_backward_hooks", "backward"),
    ("_state_dict_pre_hooks", "state_dict_pre"),
    ("_state_dict_hooks", "state_dict"),
    ("_load_state_dict_pre_hooks", "load_state_dict_pre"),
    ("_load_state_dict_post_hooks", "load_state_dict_post"),
]

_GLOBAL_HOOK_DICTS = [
    ("_global_forward_pre_hooks", "forward_pre"),
    ("_global_forward_hooks", "forward"),
    ("_global_backward_pre_hooks", "backward_pre"),
    ("_global_backward_hooks", "backward"),
    ("_global_module_registration_hooks", "module_registration"),
    ("_global_parameter_registration_hooks", "parameter_registration"),
    ("_global_buffer_registration_hooks", "buffer_registration"),
]

_OPTIMIZER_HOOK_DICTS = [
    ("_optimizer_step_pre_hooks", "step_pre"),
    ("_optimizer_step_post_hooks", "step_post"),
    ("_optimizer_state_dict_pre_hooks", "state_dict_pre"),
    ("_optimizer_state_dict_post_hooks", "state_dict"),
    ("_optimizer_load_state_dict_pre_hooks", "load_state_dict_pre"),
    ("_optimizer_load_state_dict_post_hooks", "load_state_dict_post"),
]

_GLOBAL_OPTIMIZER_HOOK_DICTS = [
    ("_global_optimizer_pre_hooks", "step_pre"),
    ("_global_optimizer_post_hooks", "step_post"),
]

_TENSOR_HOOK_ATTRS = [
    ("_backward_hooks", "tensor"),
    ("_post_accumulate_grad_hooks", "post_accumulate_grad"),
]


@dataclass(frozen=True)
class HookRow:
    """One attached hook: where it lives, its kind, the function's name and its flags."""

    where: str
    kind: str
    hook: str
    flags: str
    hook_id: int


def _describe(fn: Any) -> str:
    """A readable name for a hook function (also for bound methods, partials and callables)."""
    target = getattr(fn, "func", fn)  # functools.partial
    name = getattr(target, "__qualname__", None) or type(target).__name__
    owner = getattr(target, "__self__", None)
    if owner is not None and not isinstance(owner, type) and "." not in name:
        name = f"{type(owner).__name__}.{name}"
    return name


def _module_flags(module: nn.Module, attr: str, hook_id: int) -> str:
    flags = []
    if attr == "_forward_pre_hooks" and hook_id in module._forward_pre_hooks_with_kwargs:
        flags.append("with_kwargs")
    if attr == "_forward_hooks":
        if hook_id in module._forward_hooks_with_kwargs:
            flags.append("with_kwargs")
        if hook_id in module._forward_hooks_always_called:
            flags.append("always_call")
    if attr == "_backward_hooks":
        flags.append("full" if module._is_full_backward_hook else "legacy (deprecated)")
    return ", ".join(flags)


def _global_flags(attr: str, hook_id: int) -> str:
    flags = []
    if attr == "_global_forward_hooks":
        if hook_id in getattr(_module_mod, "_global_forward_hooks_with_kwargs", {}):
            flags.append("with_kwargs")
        if hook_id in getattr(_module_mod, "_global_forward_hooks_always_called", {}):
            flags.append("always_call")
    if attr == "_global_backward_hooks":
        full = getattr(_module_mod, "_global_is_full_backward_hook", None)
        if full is not None:
            flags.append("full" if full else "legacy (deprecated)")
    return ", ".join(flags)


class HookTable(list[HookRow]):
    """A list of :class:`HookRow` that prints as a table (text and HTML)."""

    columns = ("where", "kind", "hook", "flags")

    def _cells(self) -> list[tuple[str, ...]]:
        return [(r.where, r.kind, r.hook, r.flags) for r in self]

    def __str__(self) -> str:
        if not self:
            return "no hooks attached"
        rows = [self.columns, *self._cells()]
        widths = [max(len(row[i]) for row in rows) for i in range(len(self.columns))]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        if not self:
            return "<p>no hooks attached</p>"
        head = "".join(f"<th>{c}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in self._cells())
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    def kinds(self) -> dict[str, int]:
        """How many hooks of each kind."""
        result: dict[str, int] = {}
        for row in self:
            result[row.kind] = result.get(row.kind, 0) + 1
        return result


def list_hooks(
    model: nn.Module, *, include_global: bool = True, optimizer: torch.optim.Optimizer | None = None
) -> HookTable:
    """List every hook attached to ``model``, its submodules and its parameters.

    Rows name where the hook lives (a qualified module name, ``<root>`` for the model itself,
    ``param:<name>`` for a parameter, ``<global>`` for hooks that fire on every module), the kind
    (``forward_pre``, ``forward``, ``backward_pre``, ``backward``, ``state_dict``..., ``tensor``,
    ``post_accumulate_grad``), the hook function's name and its flags (``with_kwargs``,
    ``always_call``, ``full`` or ``legacy`` backward hook). With ``optimizer``, its step and
    state-dict hooks are listed too (``optimizer``), and the global optimizer step hooks
    (``<global optimizer>``).
    """
    table = HookTable()
    for name, module in model.named_modules():
        where = name or "<root>"
        for attr, kind in _MODULE_HOOK_DICTS:
            for hook_id, fn in getattr(module, attr, {}).items():
                table.append(HookRow(where, kind, _describe(fn), _module_flags(module, attr, hook_id), hook_id))
    for pname, param in model.named_parameters():
        for attr, kind in _TENSOR_HOOK_ATTRS:
            for hook_id, fn in (getattr(param, attr, None) or {}).items():
                table.append(HookRow(f"param:{pname}", kind, _describe(fn), "", hook_id))
    if include_global:
        for attr, kind in _GLOBAL_HOOK_DICTS:
            for hook_id, fn in getattr(_module_mod, attr, {}).items():
                table.append(HookRow("<global>", kind, _describe(fn), _global_flags(attr, hook_id), hook_id))
    if optimizer is not None:
        for attr, kind in _OPTIMIZER_HOOK_DICTS:
            for hook_id, fn in (getattr(optimizer, attr, None) or {}).items():
                table.append(HookRow("optimizer", kind, _describe(fn), "", hook_id))
        if include_global:
            for attr, kind in _GLOBAL_OPTIMIZER_HOOK_DICTS:
                for hook_id, fn in getattr(_optim_mod, attr, {}).items():
                    table.append(HookRow("<global optimizer>", kind, _describe(fn), "", hook_id))
    return table


def remove_all_hooks(
    model: nn.Module, *, include_global: bool = False, optimizer: torch.optim.Optimizer | None = None
) -> int:
    """Remove every hook from ``model``, its submodules and parameters; return how many were removed.

    State-dict hooks are left alone (they are part of how some modules load their weights). Global
    module hooks affect every model in the process, so they are removed only with
    ``include_global=True``. With ``optimizer``, its step hooks go too (and, with
    ``include_global=True``, the global optimizer step hooks).
    """
    removed = 0
    if optimizer is not None:
        step_hooks = [getattr(optimizer, attr, None) for attr, kind in _OPTIMIZER_HOOK_DICTS if kind.startswith("step")]
        if include_global:
            step_hooks += [getattr(_optim_mod, attr, None) for attr, _ in _GLOBAL_OPTIMIZER_HOOK_DICTS]
        for hooks in step_hooks:
            if hooks:
                removed += len(hooks)
                hooks.clear()
    for module in model.modules():
        for attr, kind in _MODULE_HOOK_DICTS:
            if kind.startswith(("state_dict", "load_state_dict")):
                continue
            hooks = getattr(module, attr, None)
            if hooks:
                removed += len(hooks)
                hooks.clear()
        module._forward_pre_hooks_with_kwargs.clear()
        module._forward_hooks_with_kwargs.clear()
        module._forward_hooks_always_called.clear()
        module._is_full_backward_hook = None
    for param in model.parameters():
        for attr, _ in _TENSOR_HOOK_ATTRS:
            hooks = getattr(param, attr, None)
            if hooks:
                removed += len(hooks)
                hooks.clear()
    if include_global:
        for attr, _ in _GLOBAL_HOOK_DICTS:
            hooks = getattr(_module_mod, attr, None)
            if hooks:
                removed += len(hooks)
                hooks.clear()
        for extra in ("_global_forward_hooks_with_kwargs", "_global_forward_hooks_always_called"):
            getattr(_module_mod, extra, {}).clear()
    forget_model(model)  # hookviz's own bookkeeping: those handles are dead now
    return removed
