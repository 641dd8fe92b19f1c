"""See what is attached to a model: every module hook, global hook and parameter tensor hook.

PyTorch keeps hooks in private ``OrderedDict`` attributes of each module (``_forward_hooks`` and
friends), in module-level dicts for global hooks, and on parameters (``_backward_hooks``,
``_post_accumulate_grad_hooks``). There is no public "list my hooks" call; :func:`list_hooks` reads
the places that :mod:`hookviz.catalogue` names and returns a :class:`HookTable`, and
:func:`remove_all_hooks` empties them. The ``kind`` column uses the catalogue's names.

(This module was called ``hookviz.inspect``; it was renamed so that it no longer shadows the
standard library's ``inspect`` when Python runs from inside the package folder.)
"""

from __future__ import annotations

import html
import importlib
import sys
import types
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.modules.module as _module_mod
from torch import nn

from hookviz.capture import forget_model
from hookviz.catalogue import HookKind, kinds
from hookviz.guards import check_flag, check_int, shown
from hookviz.i18n import tr
from hookviz.text import text_table

__all__ = [
    "GLOBAL_CALL_KINDS",
    "HookRow",
    "HookTable",
    "RemovedHooks",
    "list_global_hooks",
    "list_hooks",
    "KNOWN_LIBRARIES",
    "library_owned",
    "owning_library",
    "pytorch_owned",
    "remove_all_hooks",
]

# Extra per-module / global dicts that PyTorch keys by the same hook id (flags of a hook).
_MODULE_EXTRAS = {
    "forward_pre": ("_forward_pre_hooks_with_kwargs",),
    "forward": ("_forward_hooks_with_kwargs", "_forward_hooks_always_called"),
}
_GLOBAL_EXTRAS = {"global_forward": ("_global_forward_hooks_with_kwargs", "_global_forward_hooks_always_called")}
#: The global module hooks that fire on module calls and their backward (forward and backward, not the
#: registration hooks): the kinds a learner registers to watch every module.
GLOBAL_CALL_KINDS = tuple(k.name for k in kinds(target="global module") if not k.name.endswith("_registration"))


@dataclass(frozen=True)
class HookRow:
    """One attached hook: where it lives, its kind (a catalogue name), the function's name and its flags."""

    where: str
    kind: str
    hook: str
    flags: str
    hook_id: int
    _stores: tuple[Any, ...] = field(default=(), repr=False, compare=False)
    #: the known library that attached the hook (:func:`owning_library`: ``"transformers"``, ``"torch"`` ...), or None
    library: str | None = field(default=None, compare=False)

    def remove(self) -> bool:
        """Detach this hook (like its handle's ``remove()``); False if it was already gone."""
        dicts = [ref() for ref in self._stores]
        if not dicts or dicts[0] is None or self.hook_id not in dicts[0]:
            return False
        for hooks in dicts:
            if hooks is not None:
                hooks.pop(self.hook_id, None)
        return True


def _describe(fn: Any) -> str:
    """A readable name for a hook function (also for bound methods, partials and callables)."""
    target = getattr(fn, "func", fn)  # functools.partial
    name = getattr(target, "__qualname__", None) or type(target).__name__
    owner = getattr(target, "__self__", None)
    if owner is not None and not isinstance(owner, type) and "." not in name:
        name = f"{type(owner).__name__}.{name}"
    return name


def _flags(holder: Any, kind: HookKind, hook_id: int) -> str:
    """with_kwargs / always_call flags of a forward (pre-)hook; full / legacy for backward hooks."""
    prefix = "_global" if kind.is_global else ""
    flags = []
    if kind.name in ("forward_pre", "forward", "global_forward"):
        base = "_forward_pre_hooks" if kind.name == "forward_pre" else "_forward_hooks"
        if hook_id in getattr(holder, f"{prefix}{base}_with_kwargs", {}):
            flags.append("with_kwargs")
        if kind.name != "forward_pre" and hook_id in getattr(holder, f"{prefix}{base}_always_called", {}):
            flags.append("always_call")
    if kind.name in ("backward", "global_backward"):
        flags.append("full")
    if kind.name in ("backward_legacy", "global_backward_legacy"):
        flags.append("legacy (deprecated)")
    return ", ".join(flags)


def _rows(where: str, holder: Any, kind: HookKind, extras: tuple[str, ...] = ()) -> list[HookRow]:
    """The rows for the hooks of ``kind`` attached to ``holder`` (an object, or the global module)."""
    hooks = kind.hooks_of(holder)
    if not hooks:
        return []
    store = holder if kind.storage_module is None else _storage_module(kind)
    dicts = [getattr(store, kind.storage_attr)] + [getattr(store, name) for name in extras if hasattr(store, name)]
    refs = tuple(weakref.ref(d) for d in dicts)
    return [_row(where, kind, fn, _flags(store, kind, i), i, refs) for i, fn in hooks.items()]


def _row(where: str, kind: HookKind, fn: Any, flags: str, hook_id: int, refs: tuple[Any, ...]) -> HookRow:
    """One table row; a hook another library attached (not PyTorch) says whose it is in its flags as well:
    "transformers's own"."""
    library = owning_library(fn)
    if library is not None and library != "torch":
        flags = ", ".join(part for part in (flags, f"{library}'s own") if part)
    return HookRow(where, kind.name, _describe(fn), flags, hook_id, refs, library)


def _storage_module(kind: HookKind) -> Any:
    return importlib.import_module(kind.storage_module)


class HookTable(list[HookRow]):
    """A list of :class:`HookRow` that prints as a table (text and HTML)."""

    columns = ("where", "kind", "hook", "flags")

    def __init__(self, rows: Any = ()) -> None:
        if isinstance(rows, (str, bytes)):
            raise TypeError(tr(f"HookTable: rows must be a list of HookRow (list_hooks(model) makes the table), "
                               f"not {shown(rows)}"))
        rows = list(rows)
        for row in rows:
            if not isinstance(row, HookRow):
                raise TypeError(tr(f"HookTable: rows must be HookRow objects (list_hooks(model) makes the table); "
                                   f"one row is {shown(row)}"))
        super().__init__(rows)

    def _cells(self) -> list[tuple[str, ...]]:
        return [(r.where, r.kind, r.hook, r.flags) for r in self]

    def __str__(self) -> str:
        return text_table(self.columns, self._cells(), empty="no hooks attached")

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

    def remove(self) -> int:
        """Detach every hook listed in this table; return how many were still attached."""
        return sum(row.remove() for row in self)


def list_global_hooks(*, optimizer: bool = True) -> HookTable:
    """The hooks that fire for every module (``<global>``) and, with ``optimizer``, every optimizer step."""
    optimizer = check_flag(optimizer, "optimizer")
    table = HookTable()
    for kind in kinds(target="global module"):
        table += _rows("<global>", None, kind, _GLOBAL_EXTRAS.get(kind.name, ()))
    if optimizer:
        for kind in kinds(target="global optimizer"):
            table += _rows("<global optimizer>", None, kind)
    return table


def list_hooks(
    model: nn.Module, *, include_global: bool = True, optimizer: torch.optim.Optimizer | None = None
) -> HookTable:
    """List every hook attached to ``model``, its submodules and its parameters.

    Rows name where the hook lives (a qualified module name, ``<root>`` for the model itself,
    ``param:<name>`` for a parameter, ``<global>`` for hooks that fire on every module), the kind
    (a name from :mod:`hookviz.catalogue`: ``forward_pre``, ``forward``, ``backward_pre``,
    ``backward``, ``backward_legacy``, ``state_dict_post``..., ``tensor``, ``post_accumulate_grad``,
    ``global_forward``...), the hook function's name and its flags (``with_kwargs``,
    ``always_call``, ``full`` or ``legacy`` backward hook). With ``optimizer``, its step and
    state-dict hooks are listed too (``optimizer``), and the global optimizer step hooks
    (``<global optimizer>``).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"list_hooks() needs an nn.Module, got {type(model).__name__}")
    table = HookTable()
    for name, module in model.named_modules():
        for kind in kinds(target="module"):
            table += _rows(name or "<root>", module, kind, _MODULE_EXTRAS.get(kind.name, ()))
    for pname, param in model.named_parameters():
        for kind in kinds(target="tensor"):
            table += _rows(f"param:{pname}", param, kind)
    if include_global:
        table += list_global_hooks(optimizer=False)
    if optimizer is not None:
        for kind in kinds(target="optimizer"):
            table += _rows("optimizer", optimizer, kind)
        if include_global:
            table += [row for row in list_global_hooks() if row.where == "<global optimizer>"]
    return table


#: Libraries whose own hooks hookviz recognises by where their code lives: PyTorch's utilities (prune, weight_norm,
#: FSDP ...) and the libraries that keep machinery in hooks on a user's model (Hugging Face ``transformers``
#: collects ``output_hidden_states`` and ``output_attentions`` with forward hooks it leaves on the layers).
KNOWN_LIBRARIES = ("torch", "transformers", "accelerate", "peft", "deepspeed", "torchvision")


def owning_library(fn: Any) -> str | None:
    """The known library (:data:`KNOWN_LIBRARIES`) whose code ``fn`` is, or None for anyone else's hook.

    A hook is a function, a bound method, a ``functools.partial`` or a callable object; the library is the top
    package of the module its code lives in. A hook written by a user (or by hookviz) gives None.
    """
    for _ in range(5):  # unwrap functools.partial and PyTorch's wrapper of a hook (module._WrappedHook)
        inner = getattr(fn, "func", None)
        if inner is None and type(fn).__name__ == "_WrappedHook":
            inner = getattr(fn, "hook", None)
        if inner is None or inner is fn:
            break
        fn = inner
    function = getattr(fn, "__func__", fn)  # a bound method: the function it runs
    if isinstance(function, types.FunctionType):
        module = function.__module__
    else:  # a callable object (prune's L1Unstructured, WeightNorm ...): its class
        module = type(fn).__module__
    root = module.split(".")[0] if isinstance(module, str) else None
    return root if root in KNOWN_LIBRARIES else None


def pytorch_owned(fn: Any) -> bool:
    """True for a hook that one of PyTorch's own utilities attached and needs (it is defined inside ``torch``).

    ``torch.nn.utils.prune`` recomputes ``weight`` from ``weight_orig * weight_mask`` in a forward
    pre-hook, ``weight_norm`` and ``spectral_norm`` recompute the weight the same way, FSDP, DDP and
    quantization observers keep their machinery in hooks too. Each of those hooks is a function, a
    bound method, a ``functools.partial`` or a callable object whose code lives in a ``torch.*`` module;
    a hook written by a user (or by hookviz) never does.
    """
    return owning_library(fn) == "torch"


def library_owned(fn: Any) -> bool:
    """True for a hook a known library attached for its own use (:func:`owning_library`): not the user's code."""
    return owning_library(fn) is not None


class RemovedHooks(int):
    """How many hooks :func:`remove_all_hooks` removed (an ``int``), with ``kept``: the PyTorch-owned hooks it left."""

    kept: HookTable

    def __new__(cls, removed: int, kept: HookTable) -> RemovedHooks:
        removed = check_int(removed, "removed", minimum=0)
        if not isinstance(kept, HookTable):
            raise TypeError(tr(f"RemovedHooks: kept must be a HookTable (the hooks left in place), not {shown(kept)}"))
        value = super().__new__(cls, removed)
        value.kept = kept
        return value


def _clear(
    holder: Any, kind: HookKind, cleared: set[int], where: str, kept: HookTable, extras: tuple[str, ...] = ()
) -> int:
    """Remove ``kind`` hooks from ``holder`` but PyTorch-owned ones (added to ``kept``); count each dict once."""
    hooks = getattr(holder, kind.storage_attr, None)
    if not hooks or id(hooks) in cleared:
        return 0
    cleared.add(id(hooks))
    removed = 0
    extra_dicts = [getattr(holder, name) for name in extras if isinstance(getattr(holder, name, None), dict)]
    for hook_id, fn in list(hooks.items()):
        if library_owned(fn):
            refs = tuple(weakref.ref(d) for d in [hooks, *extra_dicts])
            kept.append(_row(where, kind, fn, _flags(holder, kind, hook_id), hook_id, refs))
            continue
        del hooks[hook_id]
        for extra in extra_dicts:
            extra.pop(hook_id, None)
        removed += 1
    return removed


def remove_all_hooks(
    model: nn.Module, *, include_global: bool = False, optimizer: torch.optim.Optimizer | None = None
) -> RemovedHooks:
    """Remove every hook from ``model``, its submodules and parameters; return how many were removed.

    State-dict hooks are left alone (they are part of how some modules load their weights), and so
    is every hook that PyTorch's own utilities or another known library attached and need
    (:func:`library_owned`: transformers's output capturing; :func:`pytorch_owned`: pruning,
    ``weight_norm``, ``spectral_norm``, FSDP/DDP and quantization internals): removing those would
    silently change what the model computes. The result is an ``int`` whose ``kept`` attribute
    lists the hooks left in place; a warning names them. Global module hooks affect every model in
    the process, so they are removed only with ``include_global=True``. With ``optimizer``, its step
    hooks go too (and, with ``include_global=True``, the global optimizer step hooks). A model that another hookviz
    tool is using (a monitor training it) is refused, as the other tools refuse it: its hooks are that tool's.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(
            f"remove_all_hooks() needs model to be an nn.Module, got {type(model).__name__}; "
            "pass the model whose hooks should go (remove_all_hooks(model))"
        )
    if optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer (or None), got {type(optimizer).__name__}")
    claims = sys.modules.get("hookviz.widgets.common")  # loaded with the widgets; else no tool can be using it
    if claims is not None:  # a monitor training it would go on recording nothing (NaN) without a word
        claims.refuse_if_in_use(model, "remove_all_hooks()")
    removed = 0
    cleared: set[int] = set()
    kept = HookTable()
    if optimizer is not None:
        for kind in kinds(target="optimizer", phase="optimizer"):
            removed += _clear(optimizer, kind, cleared, "optimizer", kept)
        if include_global:
            for kind in kinds(target="global optimizer"):
                removed += _clear(_storage_module(kind), kind, cleared, "<global optimizer>", kept)
    module_kinds = [k for k in kinds(target="module") if k.phase != "state_dict"]
    for name, module in model.named_modules():
        for kind in module_kinds:
            removed += _clear(module, kind, cleared, name or "<root>", kept, _MODULE_EXTRAS.get(kind.name, ()))
        if not module._backward_hooks:
            module._is_full_backward_hook = None
    for pname, param in model.named_parameters():
        for kind in kinds(target="tensor"):
            removed += _clear(param, kind, cleared, f"param:{pname}", kept)
    if include_global:
        for kind in kinds(target="global module"):
            removed += _clear(_module_mod, kind, cleared, "<global>", kept, _GLOBAL_EXTRAS.get(kind.name, ()))
        # PyTorch remembers whether the global backward hooks were full or legacy even after the last one is
        # removed, and then refuses the other kind; with no global backward hook left, forget that choice too.
        if not _module_mod._global_backward_hooks and hasattr(_module_mod, "_global_is_full_backward_hook"):
            _module_mod._global_is_full_backward_hook = None
    forget_model(model)  # hookviz's own bookkeeping: those handles are dead now
    if kept:
        names = ", ".join(f"{row.where} {row.kind} {row.hook}" for row in kept)
        libraries = sorted({row.library for row in kept if row.library != "torch"})
        if all(row.library != "torch" for row in kept):  # only other libraries' hooks (transformers ...)
            warnings.warn(
                f"remove_all_hooks kept {len(kept)} hook(s) that {' and '.join(libraries)} attached for its own "
                f"use ({names}): they are not yours, and that library needs them",
                stacklevel=2,
            )
        else:
            warnings.warn(
                f"remove_all_hooks kept {len(kept)} hook(s) that PyTorch's own utilities need ({names}): "
                "removing them would change what the model computes. Undo the utility instead "
                "(torch.nn.utils.prune.remove(module, 'weight'), remove_weight_norm ...) to drop them",
                stacklevel=2,
            )
    return RemovedHooks(removed, kept)
