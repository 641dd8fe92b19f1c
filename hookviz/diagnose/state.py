"""Everything a diagnosis could change on the model, taken before it runs and put back after, whatever happens.

The doctor promises to leave a model as it found it. A run can change a lot: a hook (or the forward itself)
can flip a module's mode, register hooks, set an attribute (``module.output = output``), replace a parameter,
edit weights in place, change ``requires_grad``; batch norm updates its statistics; backward writes
``.grad``; another library can install hooks on the first call and mark itself as installed
(``transformers`` does, for ``output_hidden_states``). :class:`State` keeps a shallow copy of every
module's own attributes (with the contents of the dicts and sets among them: its hook dicts, parameters,
buffers, submodules), each parameter's value, gradient, ``requires_grad`` and tensor hooks, the global hook
dicts, the random number generator and the grad mode, and puts all of it back.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn.parameter import is_lazy

from hookviz.catalogue import kinds

_GLOBALS = "torch.nn.modules.module"
GLOBAL_FLAG_DICTS = ("_global_forward_hooks_always_called", "_global_forward_hooks_with_kwargs")
TENSOR_HOOK_ATTRS = ("_backward_hooks", "_post_accumulate_grad_hooks")
_MISSING = object()


def _contents(value: Any) -> Any:
    """A copy of a container's contents (a dict's items, a set's members), to put back in the same object."""
    if isinstance(value, dict):
        return list(value.items())
    if isinstance(value, set):
        return set(value)
    return _MISSING


def _put_back(container: Any, contents: Any) -> None:
    """Put ``contents`` back into ``container`` (the same object: handles keep weak references to hook dicts)."""
    if isinstance(container, dict):
        if list(container.items()) != contents:
            container.clear()
            container.update(contents)
    elif isinstance(container, set) and container != contents:
        container.clear()
        container.update(contents)


def _same(param: Tensor, value: Tensor) -> bool:
    """The parameter still holds ``value`` (an edit through ``.data`` moves no version); a meta tensor has no values."""
    if param.device.type == "meta" or param.shape != value.shape:
        return param.shape == value.shape
    return torch.equal(param.detach(), value)


@dataclass
class _Attributes:
    """One object's ``__dict__`` as it was, with the contents of the dicts and sets it holds."""

    owner: Any
    values: dict[str, Any]
    containers: list[tuple[Any, Any]]

    @classmethod
    def of(cls, owner: Any) -> _Attributes:
        values = dict(vars(owner))
        containers = [(v, _contents(v)) for v in values.values() if _contents(v) is not _MISSING]
        return cls(owner, values, containers)

    def restore(self) -> None:
        now = vars(self.owner)
        for key in [k for k in now if k not in self.values]:
            del now[key]
        for key, value in self.values.items():
            if now.get(key, _MISSING) is not value:
                now[key] = value
        for container, contents in self.containers:
            _put_back(container, contents)


@dataclass
class _Parameter:
    param: nn.Parameter
    requires_grad: bool
    grad: Tensor | None
    value: Tensor
    version: int
    hooks: list[tuple[str, Any, Any]]  # (attribute, the dict or None, its contents)
    attributes: _Attributes

    @classmethod
    def of(cls, param: nn.Parameter) -> _Parameter:
        hooks = []
        for attr in TENSOR_HOOK_ATTRS:
            held = getattr(param, attr, None)
            hooks.append((attr, held, _contents(held) if isinstance(held, dict) else None))
        return cls(param, param.requires_grad, param.grad, param.detach().clone(), param._version, hooks,
                   _Attributes.of(param))  # fmt: skip

    def restore(self) -> None:
        param = self.param
        param.requires_grad_(self.requires_grad)
        if param._version != self.version or not _same(param, self.value):
            param.copy_(self.value)
        param.grad = self.grad
        for attr, held, contents in self.hooks:
            now = getattr(param, attr, None)
            if held is None:
                if isinstance(now, dict):
                    now.clear()  # the engine may hold the dict itself: empty it, then forget it
                    setattr(param, attr, None)
            else:
                _put_back(held, contents)
                if now is not held:
                    setattr(param, attr, held)
        self.attributes.restore()


@dataclass
class State:
    """Everything the run could change on the model, to put back afterwards.

    Costs one copy of the parameters and buffers (taken up front: a hook or the forward may edit them in
    place). Lazy modules not yet initialised are left to the run's forward, which initialises them as the
    first forward of a training loop would.
    """

    modules: list[_Attributes]
    modes: list[tuple[nn.Module, bool]]
    params: list[_Parameter]
    buffers: list[tuple[nn.Module, str, Tensor, Tensor]]
    global_dicts: list[tuple[dict[int, Any], Any]]
    global_flags: list[tuple[str, Any]]
    rng: Tensor
    grad_enabled: bool

    @classmethod
    def take(cls, model: nn.Module) -> State:
        lazy = [m for m in model.modules() if getattr(m, "has_uninitialized_params", lambda: False)()]
        modules = [_Attributes.of(m) for m in model.modules() if not any(m is x for x in lazy)]
        params = [_Parameter.of(p) for p in model.parameters() if not is_lazy(p)]
        buffers = [
            (module, name, buffer, buffer.detach().clone())
            for module in model.modules()
            for name, buffer in module._buffers.items()
            if buffer is not None and not is_lazy(buffer)
        ]
        globals_ = importlib.import_module(_GLOBALS)
        names = [k.storage_attr for k in kinds(target="global module")] + list(GLOBAL_FLAG_DICTS)
        global_dicts = [
            (getattr(globals_, name), list(getattr(globals_, name).items()))
            for name in dict.fromkeys(names)
            if isinstance(getattr(globals_, name, None), dict)
        ]
        flags = [(name, getattr(globals_, name, None)) for name in ("_global_is_full_backward_hook",)]
        return cls(modules, [(m, m.training) for m in model.modules()], params, buffers, global_dicts, flags,
                   torch.get_rng_state(), torch.is_grad_enabled())  # fmt: skip

    def clear_grads(self) -> None:
        for entry in self.params:
            entry.param.grad = None

    def reset_for_pass(self) -> None:
        """Before another pass: the weights, buffers and random numbers of the first (a pass sees what it saw)."""
        with torch.no_grad():
            for entry in self.params:
                if entry.param._version != entry.version or not _same(entry.param, entry.value):
                    entry.param.copy_(entry.value)
            for _, _, buffer, value in self.buffers:
                buffer.copy_(value)
        torch.set_rng_state(self.rng)
        self.clear_grads()

    def restore(self) -> None:
        for attributes in self.modules:
            attributes.restore()
        for module, training in self.modes:
            module.training = training
        with torch.no_grad():
            for entry in self.params:
                entry.restore()
            for module, name, buffer, value in self.buffers:
                module._buffers[name] = buffer
                buffer.copy_(value)  # batch norm updates its running statistics without bumping _version
        globals_ = importlib.import_module(_GLOBALS)
        for hooks, items in self.global_dicts:
            _put_back(hooks, items)
        for name, flag in self.global_flags:
            setattr(globals_, name, flag)
        torch.set_rng_state(self.rng)
        torch.set_grad_enabled(self.grad_enabled)
