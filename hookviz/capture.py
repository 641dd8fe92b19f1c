"""Hook lifetime in one place: capture activations and output gradients of chosen layers.

Data flows one way in hookviz: a hook captures -> a summary reduces -> a renderer draws -> a widget
shows. This module is the only place that registers module hooks on a user's model, and every hook it
adds is removed on every exit path (normal exit, an exception, ``KeyboardInterrupt``).

Two entry points:

* :func:`capture` - a context manager (also usable with ``start()`` / ``stop()``) that records, for
  every call of every chosen layer, the layer's output (detached, copied to CPU) and the gradient of
  the loss with respect to that output.
* :func:`register` - register any module hook under a *key*; registering again under the same key
  replaces the earlier hook instead of stacking a second one (safe to re-run a notebook cell).
"""

from __future__ import annotations

import operator
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import count
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

from hookviz.catalogue import HookKind, hook_kind
from hookviz.guards import check_module, shown
from hookviz.i18n import N_, tr
from hookviz.text import closest_hint, closest_names

__all__ = [
    "Capture",
    "HookGroup",
    "iter_tensors",
    "value_at",
    "LayerRecord",
    "capture",
    "register",
    "registered_keys",
    "remove_key",
    "resolve_layers",
]

# model-or-module -> {key: the HookGroup that holds that key now}.  Weak keys, and a group refers to
# its model only through a weak reference: the registry never keeps a model alive.
_REGISTRY: weakref.WeakKeyDictionary[nn.Module, dict[str, HookGroup]] = weakref.WeakKeyDictionary()
_auto_key = count()

# What each per-object kind of hook attaches to (autograd nodes are checked by their method only).
_TARGET_TYPES: dict[str, type] = {"tensor": Tensor, "module": nn.Module, "optimizer": torch.optim.Optimizer}

# Spellings :func:`register` still accepts (the registration methods' own words), mapped to the kind.
_REGISTER_ALIASES = {"full_backward": "backward", "full_backward_pre": "backward_pre"}


# --------------------------------------------------------------------------- owned handles


class HookGroup:
    """The handles of the hooks one owner registered; removing the group removes exactly those.

    A group may hold a *key* on a model: claiming a key that another group holds removes that
    group's hooks and makes it inactive, so that re-running a notebook cell replaces its hooks
    instead of stacking copies. A group that lost its key (or was removed) never touches the hooks
    of the group that holds the key now.

    ::

        with HookGroup(model, key="my-probe") as hooks:   # or hooks.claim() ... hooks.remove()
            hooks.register(model.fc, "forward", show)
            hooks.register(model.fc.weight, "tensor", log_grad)
            hooks.register(None, "global_forward", count_calls)
            model(x).sum().backward()
        # every hook of the group is gone here, also after an exception or KeyboardInterrupt

    Any kind of :mod:`hookviz.catalogue` whose registration returns a handle can be registered.
    """

    def __init__(self, model: nn.Module | None = None, *, key: str | None = None) -> None:
        if key is not None and not isinstance(model, nn.Module):
            raise TypeError(f"a key is held on an nn.Module, got {type(model).__name__}")
        self._model_ref = weakref.ref(model) if model is not None else None
        self.key = key
        self.handles: list[Any] = []
        self._claimed = False
        self._removed = False

    @property
    def model(self) -> nn.Module | None:
        """The model the key is held on (``None`` without a model, or once the model is gone)."""
        return self._model_ref() if self._model_ref is not None else None

    def add(self, handle: Any) -> Any:
        """Take ownership of a handle (anything with ``.remove()``); returns it."""
        if not callable(getattr(handle, "remove", None)):
            raise TypeError(f"a hook handle has a remove() method; got {type(handle).__name__}")
        if self._removed:
            handle.remove()
            raise RuntimeError("this HookGroup was removed (or lost its key); make a new one")
        self.handles.append(handle)
        return handle

    def register(self, target: Any, kind: str | HookKind, hook: Callable[..., Any], **kwargs: Any) -> Any:
        """Register ``hook`` of ``kind`` on ``target`` and keep its handle; returns the handle.

        ``target`` is the tensor, module, optimizer or autograd node to attach to; ``None`` for
        the global kinds; the sequence of tensors for ``multi_grad``. Keyword arguments go to
        PyTorch's registration call (``prepend=True``, ``with_kwargs=True`` ...).
        """
        info = kind if isinstance(kind, HookKind) else hook_kind(kind)
        if not callable(hook):
            raise TypeError(f"the hook must be a function (called when the {info.name!r} hook fires), not {hook!r}")
        if not info.returns_handle:
            raise ValueError(
                f"{info.register} returns no handle ({info.storage}); use it directly "
                "(as a `with` block for the saved-tensors kinds)"
            )
        if info.is_global or info.name == "multi_grad":
            function = info.registration_function()
            args = (hook,) if info.is_global else (target, hook)
            return self.add(function(*args, **kwargs))
        method = getattr(target, info.method, None)
        expected = _TARGET_TYPES.get(info.target)
        if method is None or (expected is not None and not isinstance(target, expected)):
            raise TypeError(f"{info.name!r} hooks attach to a {info.target}, not to {type(target).__name__}")
        return self.add(method(hook, **kwargs))

    def claim(self) -> HookGroup:
        """Hold the group's key on its model, removing the hooks of the group that held it before."""
        if self.key is None:
            return self
        model = self.model
        if model is None:
            raise RuntimeError("the model this HookGroup was made for no longer exists")
        held = _REGISTRY.setdefault(model, {})
        previous = held.get(self.key)
        held[self.key] = self
        self._claimed = True
        if previous is not None and previous is not self:
            previous._release()
        return self

    def remove(self) -> int:
        """Remove every hook of this group; return how many handles it held. Safe to call again.

        It gives up the group's key only if the group still holds it: a stale group never touches
        the hooks of the group that replaced it.
        """
        model = self.model
        if self.key is not None and model is not None:
            held = _REGISTRY.get(model, {})
            if held.get(self.key) is self:
                del held[self.key]
        return self._release()

    def _release(self) -> int:
        count_ = len(self.handles)
        for handle in self.handles:
            handle.remove()
        self.handles = []
        self._removed = True
        return count_

    @property
    def active(self) -> bool:
        """True while the group's hooks are attached (and, for a keyed group, it still holds its key)."""
        if self._removed:
            return False
        if self.key is None:
            return True
        model = self.model
        return model is not None and _REGISTRY.get(model, {}).get(self.key) is self

    def __len__(self) -> int:
        return len(self.handles)

    def __enter__(self) -> HookGroup:
        return self.claim()

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def __repr__(self) -> str:
        state = "active" if self.active else "inactive"
        return f"HookGroup({state}, key={self.key!r}, hooks={len(self.handles)})"


# --------------------------------------------------------------------------- keyed registration


def remove_key(owner: nn.Module, key: str) -> int:
    """Remove every hook registered on ``owner`` under ``key``; return how many were removed."""
    check_module(owner, "owner")
    group = _REGISTRY.get(owner, {}).get(key)
    return group.remove() if group is not None else 0


def forget_model(model: nn.Module) -> None:
    """Drop hookviz's records of keyed hooks on ``model`` and its submodules (after a bulk removal)."""
    for module in model.modules():
        for group in _REGISTRY.pop(module, {}).values():
            group._release()  # the hooks are gone already; this marks the owners inactive


def registered_keys(owner: nn.Module) -> dict[str, int]:
    """Keys that hookviz currently holds hooks for on ``owner``, with the number of hooks each."""
    check_module(owner, "owner")
    return {key: len(group.handles) for key, group in _REGISTRY.get(owner, {}).items()}


def register(module: nn.Module, kind: str, hook: Callable[..., Any], *, key: str, **kwargs: Any) -> RemovableHandle:
    """Register a module hook under ``key``, replacing any hook registered earlier with that key.

    ``kind`` is a module kind of :mod:`hookviz.catalogue`: ``forward_pre``, ``forward``,
    ``backward_pre`` and ``backward`` (the *full* backward hooks), ``backward_legacy`` (the
    deprecated ``register_backward_hook``) or one of the state-dict kinds. ``full_backward`` and
    ``full_backward_pre`` are accepted as other names of ``backward`` and ``backward_pre``. Extra
    keyword arguments (``prepend``, ``with_kwargs``, ``always_call``) go to the matching
    ``nn.Module.register_*_hook`` method. Re-running a notebook cell that calls this therefore leaves
    exactly one hook in place, never a stack of copies.
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"register() needs an nn.Module, got {type(module).__name__}")
    if not isinstance(key, str):
        raise TypeError(f"register(): key must be a string naming the hook (e.g. key='show-fc'), not {key!r}")
    info = hook_kind(_REGISTER_ALIASES.get(kind, kind))
    if info.target != "module":
        raise ValueError(
            f"register() attaches module hooks; {kind!r} is a {info.target} hook. "
            "Use HookGroup(model, key=...).register(...) for other kinds"
        )
    group = HookGroup(module, key=key)
    handle = group.register(module, info, hook, **kwargs)
    group.claim()
    return handle


# --------------------------------------------------------------------------- layer selection


def resolve_layers(
    model: nn.Module,
    layers: str | Iterable[str] | None = None,
    types: type[nn.Module] | tuple[type[nn.Module], ...] | None = None,
) -> dict[str, nn.Module]:
    """Turn a user's layer choice into ``{qualified_name: module}``, in ``named_modules()`` order.

    ``layers`` are qualified names from ``model.named_modules()`` (``"features.0"``); ``types``
    keeps modules of the given class(es). With neither, every leaf module is chosen. An unknown name
    raises ``KeyError`` that names the closest matches.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"expected an nn.Module, got {type(model).__name__}")
    if types is not None and not (
        isinstance(types, type) or (isinstance(types, tuple) and all(isinstance(t, type) for t in types))
    ):
        raise TypeError(f"types must be a module class or a tuple of classes (e.g. nn.Conv2d), not {types!r}")
    named = dict(model.named_modules())
    if isinstance(layers, str):
        layers = [layers]
    if layers is not None:
        if not isinstance(layers, Iterable) or isinstance(layers, (bytes, Tensor)):
            raise TypeError(
                "layers must be a layer name or a list of names from model.named_modules() "
                f"(e.g. ['features.0']), or None for every leaf; got {layers!r}"
            )
        layers = list(layers)
        for name in layers:
            if not isinstance(name, str):
                raise TypeError(f"layer names must be strings from named_modules(), got {name!r}")
            if name not in named:
                _refuse_second_name(model, named, name)
                close, owner = ", ".join(map(repr, closest_names(name, named))), type(model).__name__
                raise KeyError(
                    tr(
                        f"no layer named {name!r} in {owner}; closest: {close}"
                        if close
                        else f"no layer named {name!r} in {owner}"
                    )
                )
        chosen_names = set(layers)
        chosen = {name: module for name, module in named.items() if name in chosen_names}
    else:
        chosen = {name: mod for name, mod in named.items() if name and next(mod.children(), None) is None}
        if not chosen and next(model.children(), None) is None:
            chosen = {"": model}  # a model that is a single leaf module
    if types is not None:
        chosen = {name: mod for name, mod in chosen.items() if isinstance(mod, types)}
    if not chosen:
        wanted = f" of type {types}" if types is not None else ""
        raise ValueError(f"no layers{wanted} to capture in {type(model).__name__}")
    return chosen


def _refuse_second_name(model: nn.Module, named: dict[str, nn.Module], name: str) -> None:
    """Raise a clear ``KeyError`` when ``name`` is a second name of a module shared under two names."""
    every = dict(model.named_modules(remove_duplicate=False))
    module = every.get(name)
    if module is None:
        return
    first = next(n for n, m in named.items() if m is module)
    raise KeyError(
        f"layer {name!r} of {type(model).__name__} is the same module as {first!r} (one module shared under two "
        f"names): named_modules() lists it once, as {first!r}; use {first!r} (it records every call of the module)"
    )


# --------------------------------------------------------------------------- records


def _map_tensors(value: Any, fn: Callable[[Tensor], Any]) -> Any:
    """Apply ``fn`` to every tensor inside nested tuples / lists / dicts; other leaves become None."""
    if isinstance(value, Tensor):
        return fn(value)
    if isinstance(value, list):
        return [_map_tensors(v, fn) for v in value]
    if isinstance(value, tuple):  # named tuples come back as plain tuples
        return tuple(_map_tensors(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _map_tensors(v, fn) for k, v in value.items()}
    return None


def iter_tensors(value: Any) -> Iterator[tuple[tuple[int | str, ...], Tensor]]:
    """Yield ``(path, tensor)`` for every tensor inside nested tuples / lists / dicts, in order.

    ``path`` is the sequence of indices / keys that leads to the tensor (``()`` for a bare tensor);
    :func:`value_at` follows it in a captured activation or gradient. A container that holds itself (a list
    appended to itself) is refused, naming ``value``, instead of being walked forever.
    """
    return _iter_tensors(value, set())


def _iter_tensors(value: Any, open_: set[int]) -> Iterator[tuple[tuple[int | str, ...], Tensor]]:
    """:func:`iter_tensors`; ``open_`` holds the ids of the containers being walked (the way down to ``value``)."""
    if isinstance(value, Tensor):
        yield (), value
        return
    if not isinstance(value, (tuple, list, dict)):
        return
    if id(value) in open_:
        raise ValueError(tr(f"value holds itself (a {type(value).__name__} inside itself): iter_tensors cannot walk "
                            "it; pass a value without the loop"))
    open_.add(id(value))
    try:
        for k, v in (value.items() if isinstance(value, dict) else enumerate(value)):
            for path, t in _iter_tensors(v, open_):
                yield (k, *path), t
    finally:
        open_.discard(id(value))


def value_at(value: Any, path: tuple[int | str, ...]) -> Any:
    """The entry of a nested tuple / list / dict at ``path`` (from :func:`iter_tensors`), or None if absent."""
    if not isinstance(path, (tuple, list)):
        raise TypeError(tr(f"value_at: path must be a tuple of indices and keys (what iter_tensors yields), "
                           f"not {shown(path)}"))
    for step in path:
        try:
            value = value[step]
        except (KeyError, IndexError, TypeError):
            return None
    return value


def _count_nonfinite(value: Any) -> tuple[int, int]:
    nan = inf = 0
    for _, t in iter_tensors(value):
        if t.is_floating_point() or t.is_complex():
            nan += int(torch.isnan(t).sum())
            inf += int(torch.isinf(t).sum())
    return nan, inf


def _no_grad_note() -> str:
    """Why a layer's output does not require grad, for its notes."""
    if not torch.is_grad_enabled():
        return N_("no gradients: the output does not require grad (torch.no_grad() or inference mode)")
    return N_("no gradients: the output does not require grad (nothing before it requires grad)")


def _check_call(record: LayerRecord, call: Any) -> int:
    """``call`` as an index into ``record``'s calls (negative counts from the last); a clear error otherwise."""
    try:
        if isinstance(call, bool):
            raise TypeError
        call = operator.index(call)
    except TypeError:
        raise TypeError(f"call must be a whole number (a call index, -1 for the last), not {call!r}") from None
    if not -record.calls <= call < record.calls:
        raise IndexError(f"layer {record.name!r} was called {record.calls} time(s); there is no call {call}")
    return call


def _on_gradient(t: Tensor, hook: Callable[[Tensor], None]) -> None:
    """Call ``hook(gradient of t)`` in backward, after ``t``'s own tensor hooks (see :class:`LayerRecord`).

    A pre-hook on the node that made ``t`` receives the gradient of each of the node's outputs: the gradient a
    tensor hook on ``t`` would get, for less work per call than ``Tensor.register_hook`` (it runs on every
    captured layer of every step).
    """
    node = t.grad_fn
    if node is None:  # a leaf: no node to hook
        t.register_hook(hook)
        return
    output_nr = t.output_nr

    def node_hook(grad_outputs: tuple[Any, ...]) -> None:
        grad = grad_outputs[output_nr]
        if grad is not None:
            hook(grad)

    node.register_prehook(node_hook)


@dataclass
class LayerRecord:
    """Everything captured for one layer: one entry per call of the module.

    ``activations[i]`` is the output of call ``i`` (a tensor, or the same tuple/list/dict structure
    the module returned, with tensors detached and copied to CPU). ``gradients[i]`` is the gradient
    of the backward pass with respect to that output, or ``None`` while no gradient has arrived: the
    gradient the layer's backward receives, after any tensor hook on the output has changed it (it is read
    by a pre-hook on the output's autograd node, which runs after the tensor's own hooks; an output that is
    a leaf, with no node, is read by a tensor hook).
    """

    name: str
    module_type: str
    activations: list[Any] = field(default_factory=list)
    gradients: list[Any] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    entangled: dict[int, str] = field(default_factory=dict)  # call -> why some outputs have no own gradient

    @property
    def calls(self) -> int:
        """How many times the module was called while capturing."""
        return len(self.activations)

    def note(self, text: str) -> None:
        """Record a message once."""
        if text not in self.notes:
            self.notes.append(text)


class Capture:
    """Records activations and output gradients of chosen layers; removes its hooks on exit.

    Use :func:`capture` to make one. Read results by layer name::

        with hookviz.capture(model, ["features.0"]) as cap:
            model(x).sum().backward()
        cap.activation("features.0")   # last call's output, detached, on CPU
        cap.gradient("features.0")     # d(loss)/d(output) of that call

    ``thread``: record only the calls made in the thread of that ``threading.get_ident()`` (a training monitor's
    loop: another thread running the model meanwhile is not one of its steps); ``None``, the default: every call.
    """

    def __init__(
        self,
        model: nn.Module,
        layers: dict[str, nn.Module],
        *,
        grads: bool = True,
        key: str | None = None,
        copy: bool = True,
        reduce: Callable[[Tensor], Any] | None = None,
        thread: int | None = None,
    ) -> None:
        self.model = model
        self.reduce = reduce
        self.thread = thread
        self.layers = layers
        self.grads = grads
        self.copy = copy
        self.key = key if key is not None else f"hookviz.capture.{next(_auto_key)}"
        self.records: dict[str, LayerRecord] = {
            name: LayerRecord(name, type(mod).__name__) for name, mod in layers.items()
        }
        # (layer, call) in the order the calls happened: forward hooks, then gradients as backward runs
        self.forward_order: list[tuple[str, int]] = []
        self.backward_order: list[tuple[str, int]] = []
        self._hooks: HookGroup | None = None

    # -- lifetime ------------------------------------------------------------------------------
    def start(self) -> Capture:
        """Register the hooks and hold the capture's key. Returns ``self``.

        A capture started earlier under the same key on the same model loses its hooks and becomes
        inactive; stopping it later leaves this capture's hooks alone.
        """
        self.stop()  # a second start() replaces this capture's own hooks, never stacks them
        group = HookGroup(self.model, key=self.key)
        try:
            for name, module in self.layers.items():  # forward hooks on modules: registered directly (cheap)
                group.add(module.register_forward_hook(self._make_forward_hook(name)))
        except BaseException:
            group.remove()
            raise
        self._hooks = group.claim()
        return self

    def stop(self) -> None:
        """Remove every hook this capture added (and nobody else's). Safe to call more than once."""
        if self._hooks is not None:
            self._hooks.remove()
            self._hooks = None

    @property
    def active(self) -> bool:
        """True while this capture's hooks are registered (False once a newer capture took its key)."""
        return self._hooks is not None and self._hooks.active

    def __enter__(self) -> Capture:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def clear(self) -> None:
        """Forget everything captured so far (hooks stay as they are)."""
        for rec in self.records.values():
            rec.activations.clear()
            rec.gradients.clear()
            rec.notes.clear()
            rec.entangled.clear()
        self.forward_order.clear()
        self.backward_order.clear()

    # -- hooks ---------------------------------------------------------------------------------
    def _keep(self, t: Tensor) -> Any:
        t = t.detach()
        if self.reduce is not None:
            return self.reduce(t)
        if t.is_meta:
            raise ValueError(
                "capture: a captured layer's output or gradient is on the meta device (shapes only, no values), "
                f"so there is nothing to capture; pass real inputs and {_META_FIX}"
            )
        # copy=True: a following in-place op (ReLU(inplace=True)) must not change what we stored.
        return t.to("cpu", copy=True) if self.copy else t.cpu()

    def _make_forward_hook(self, name: str) -> Callable[..., None]:
        record = self.records[name]

        activations, gradients, order = record.activations, record.gradients, self.forward_order
        keep, make_grad_hook, only, get_ident = self._keep, self._make_grad_hook, self.thread, threading.get_ident

        def forward_hook(module: nn.Module, args: tuple[Any, ...], output: Any) -> None:
            if only is not None and get_ident() != only:
                return
            call = len(activations)
            if isinstance(output, Tensor):  # the common case, kept short: it runs for every layer of every step
                activations.append(keep(output))
                gradients.append(None)
                order.append((name, call))
                if not self.grads:
                    return
                if output.requires_grad:
                    _on_gradient(output, make_grad_hook(record, call, (), None))
                else:
                    record.note(_no_grad_note())
                return
            tensors = list(iter_tensors(output))
            if not tensors:
                record.note(N_(f"output of type {type(output).__name__} holds no tensor; nothing captured"))
            record.activations.append(_map_tensors(output, self._keep))
            record.gradients.append(None)
            self.forward_order.append((name, call))
            if not self.grads:
                return
            needs_grad = [(path, t) for path, t in tensors if t.requires_grad]
            if tensors and not needs_grad:
                record.note(_no_grad_note())
            structure = _map_tensors(output, lambda t: None)
            entangled = _entangled(needs_grad, args) if len(needs_grad) > 1 else {}
            if entangled:
                reason = "; ".join(dict.fromkeys(entangled.values()))
                record.entangled[call] = reason
                record.note(reason)
            for path, t in needs_grad:
                if path not in entangled:
                    _on_gradient(t, self._make_grad_hook(record, call, path, structure))

        return forward_hook

    def _make_grad_hook(
        self, record: LayerRecord, call: int, path: tuple[int | str, ...], structure: Any
    ) -> Callable[[Tensor], None]:
        """A gradient hook (for :func:`_on_gradient`) storing the gradient of call ``call``; it holds no reference to
        the output."""

        def grad_hook(grad: Tensor) -> None:
            kept = self._keep(grad)
            if not self.backward_order or self.backward_order[-1] != (record.name, call):
                self.backward_order.append((record.name, call))
            if structure is None:
                record.gradients[call] = kept
                return
            current = record.gradients[call]
            if current is None:
                current = _thaw(structure)
                record.gradients[call] = current
            _set_path(current, path, kept)

        return grad_hook

    # -- reading -------------------------------------------------------------------------------
    def _record(self, name: str) -> LayerRecord:
        if not isinstance(name, str):
            raise TypeError(
                f"a layer is named by a string from named_modules() (captured: {list(self.records)}), not {name!r}"
            )
        try:
            return self.records[name]
        except KeyError:
            hint = closest_hint(name, self.records)
            raise KeyError(f"layer {name!r} was not captured (captured: {list(self.records)}){hint}") from None

    def activation(self, name: str, call: int = -1) -> Any:
        """Output of layer ``name`` at call ``call`` (default: the last call)."""
        record = self._record(name)
        if not record.activations:
            raise LookupError(f"layer {name!r} was not called while capturing")
        return record.activations[_check_call(record, call)]

    def gradient(self, name: str, call: int = -1) -> Any:
        """Gradient w.r.t. the output of layer ``name`` at call ``call``; a clear error if none exists."""
        record = self._record(name)
        if not record.gradients:
            raise LookupError(f"layer {name!r} was not called while capturing")
        call = _check_call(record, call)
        if not self.grads:
            raise LookupError(f"no gradient captured for {name!r}: this capture was made with grads=False")
        entangled = record.entangled.get(call % len(record.gradients))
        if entangled:
            raise LookupError(f"no per-output gradient captured for {name!r}: {entangled}")
        grad = record.gradients[call]
        if grad is None:
            why = "; ".join(record.notes) or "backward() has not reached this layer (was it called?)"
            raise LookupError(f"no gradient captured for {name!r}: {why}")
        return grad

    @property
    def activations(self) -> dict[str, list[Any]]:
        """``{layer: [output of each call]}``."""
        return {name: rec.activations for name, rec in self.records.items()}

    @property
    def gradients(self) -> dict[str, list[Any]]:
        """``{layer: [output gradient of each call, or None]}``."""
        return {name: rec.gradients for name, rec in self.records.items()}

    @property
    def notes(self) -> dict[str, list[str]]:
        """Messages about layers that could not be fully captured (no tensor, no gradient)."""
        return {name: list(rec.notes) for name, rec in self.records.items() if rec.notes}

    def nonfinite(self) -> dict[str, dict[str, int]]:
        """Count NaN and Inf values per layer, in activations and gradients (values are kept)."""
        self._refuse_reduced("nonfinite()")
        result = {}
        for name, rec in self.records.items():
            counts = {"act_nan": 0, "act_inf": 0, "grad_nan": 0, "grad_inf": 0}
            for act in rec.activations:
                nan, inf = _count_nonfinite(act)
                counts["act_nan"] += nan
                counts["act_inf"] += inf
            for grad in rec.gradients:
                nan, inf = _count_nonfinite(grad)
                counts["grad_nan"] += nan
                counts["grad_inf"] += inf
            result[name] = counts
        return result

    def first_nonfinite(self, where: str = "activations") -> tuple[str, int] | None:
        """The first ``(layer, call)``, in execution order, whose output holds NaN or Inf.

        ``where="gradients"`` looks at the output gradients instead, in the order backward produced
        them. Returns ``None`` when every captured value is finite. Needs ``reduce=None`` (the default).
        """
        if where not in ("activations", "gradients"):
            raise ValueError(f"where must be 'activations' or 'gradients', not {where!r}")
        self._refuse_reduced("first_nonfinite()")
        order = self.forward_order if where == "activations" else self.backward_order
        for name, call in order:
            record = self.records[name]
            value = (record.activations if where == "activations" else record.gradients)[call]
            if any(_count_nonfinite(value)):
                return name, call
        return None

    def _refuse_reduced(self, what: str) -> None:
        if self.reduce is not None:
            raise ValueError(
                f"{what} reads the captured tensors, but this capture kept reduce(tensor) instead "
                f"(reduce={self.reduce!r}): a summary such as a mean can hide or invent NaN/Inf. "
                "Capture with reduce=None to look for NaN and Inf, or count them inside your reduce function"
            )

    def __repr__(self) -> str:
        state = "active" if self.active else "stopped"
        calls = {name: rec.calls for name, rec in self.records.items()}
        return f"Capture({state}, key={self.key!r}, calls={calls})"


def _autograd_id(t: Tensor) -> tuple[int, int]:
    """What autograd knows a tensor as: its node and output number (the tensor itself for a leaf)."""
    return (id(t.grad_fn), t.output_nr) if t.grad_fn is not None else (id(t), -1)


def _path_text(path: tuple[int | str, ...]) -> str:
    return "".join(f"[{step!r}]" for step in path) or "output"


def _entangled(outputs: list[tuple[tuple[int | str, ...], Tensor]], args: tuple[Any, ...]) -> dict[Any, str]:
    """Outputs of one module call whose tensor-hook gradient would not be their own gradient, and why.

    A tensor hook sees the tensor's *total* gradient: when the same tensor is returned twice, or one
    returned tensor is computed from another inside the module, the hook on the first sees the
    gradient that flows through both. Those outputs are returned (``{path: reason}``) so that no
    hook is registered on them. Walks the autograd graph from each output back to the module's inputs.
    """
    by_id: dict[tuple[int, int], list[tuple[int | str, ...]]] = {}
    for path, t in outputs:
        by_id.setdefault(_autograd_id(t), []).append(path)
    refused: dict[Any, str] = {}
    for paths in by_id.values():
        if len(paths) > 1:
            reason = (
                N_(f"outputs {' and '.join(map(_path_text, paths))} are the same tensor (aliased): a tensor hook "
                "sees the sum of their gradients, so no per-output gradient is captured for them")
            )
            refused.update({p: reason for p in paths})
    targets = {key: paths[0] for key, paths in by_id.items() if key[1] >= 0}
    boundary = {id(t.grad_fn) for _, t in iter_tensors(args) if t.grad_fn is not None}
    for path, t in outputs:
        if t.grad_fn is None:
            continue
        seen: set[int] = set()
        stack = [t.grad_fn]
        while stack and len(seen) < 200_000:
            node = stack.pop()
            for parent, number in node.next_functions:
                if parent is None:
                    continue
                source = targets.get((id(parent), number))
                if source is not None and source != path:
                    refused[source] = (
                        N_(f"output {_path_text(path)} is computed from output {_path_text(source)}: a tensor hook on "
                        f"{_path_text(source)} sees the gradient through both, so its own gradient is not captured")
                    )
                if id(parent) not in seen and id(parent) not in boundary:
                    seen.add(id(parent))
                    stack.append(parent)
    return refused


def _thaw(structure: Any) -> Any:
    """Make a mutable copy (lists for tuples) of a nested structure so that leaves can be set."""
    if isinstance(structure, (tuple, list)):
        return [_thaw(v) for v in structure]
    if isinstance(structure, dict):
        return {k: _thaw(v) for k, v in structure.items()}
    return structure


def _set_path(container: Any, path: tuple[int | str, ...], value: Any) -> None:
    for step in path[:-1]:
        container = container[step]
    container[path[-1]] = value


_META_FIX = "materialise the model first, e.g. model.to_empty(device='cpu') and load_state_dict(...)"


def _refuse_meta(model: nn.Module) -> None:
    """A clear error for a model whose weights are on the meta device: shapes only, no values to capture.

    Only the first parameter and the first buffer are looked at (a model built under ``torch.device("meta")``
    or moved with ``.to("meta")`` has them all there), so that a capture made every step stays cheap; a
    meta output of any layer is refused when it is kept (:meth:`Capture._keep`).
    """
    for name, tensor in (next(model.named_parameters(), ("", None)), next(model.named_buffers(), ("", None))):
        if tensor is not None and tensor.is_meta:
            raise ValueError(
                f"capture: {name!r} of {type(model).__name__} is on the meta device (shapes only, no values), so "
                f"there is nothing to capture; {_META_FIX}"
            )


def capture(
    model: nn.Module,
    layers: str | Iterable[str] | None = None,
    *,
    types: type[nn.Module] | tuple[type[nn.Module], ...] | None = None,
    grads: bool = True,
    key: str | None = None,
    copy: bool = True,
    reduce: Callable[[Tensor], Any] | None = None,
) -> Capture:
    """Capture activations (and output gradients) of the chosen layers of ``model``.

    Args:
        model: any ``nn.Module``.
        layers: qualified names from ``model.named_modules()``; ``None`` means every leaf module.
        types: keep only modules of these types (e.g. ``nn.Conv2d``).
        grads: also capture the gradient with respect to each layer's output. It is taken with a
            tensor hook attached to the output from inside the forward hook, which keeps working
            when an in-place op such as ``ReLU(inplace=True)`` follows the layer.
        key: hooks are held under this key on ``model``; starting another capture with the same key
            removes the earlier one's hooks first (re-running a cell never stacks hooks).
        copy: store copies (default). Without a copy, a CPU activation would share memory with the
            live tensor and change under a following in-place op.
        reduce: store ``reduce(tensor)`` instead of a copy of each activation and gradient (for
            example a histogram or a few statistics), so that long runs keep little memory. It gets
            the detached tensor on its own device and must return new data, not a view of it.

    Returns:
        A :class:`Capture`; use it in a ``with`` block, or call ``start()`` and ``stop()``.

    When a layer returns the same tensor twice, or one of its outputs is computed from another, a
    tensor hook would see the gradient of both: no gradient is captured for those outputs, the
    layer's notes say why, and :meth:`Capture.gradient` refuses that call naming the outputs. A
    model on the meta device (shapes only) is refused with the way to materialise it.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"capture() needs model to be an nn.Module, got {type(model).__name__}")
    if reduce is not None and not callable(reduce):
        raise TypeError(f"reduce must be a function of a tensor (or None), not {reduce!r}")
    if key is not None and not isinstance(key, str):
        raise TypeError(f"key must be a string (or None), not {key!r}")
    for flag, value in (("grads", grads), ("copy", copy)):
        if not isinstance(value, bool):
            raise TypeError(f"{flag} must be True or False, not {value!r}")
    _refuse_meta(model)
    return Capture(model, resolve_layers(model, layers, types), grads=grads, key=key, copy=copy, reduce=reduce)
