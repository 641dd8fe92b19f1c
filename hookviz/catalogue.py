"""One catalogue of PyTorch's hook kinds: how each is registered, where PyTorch keeps it, when it fires.

Every part of hookviz that names a hook kind uses these names: :func:`hookviz.register` (module
kinds), the inspector (:func:`hookviz.list_hooks` prints them in its ``kind`` column) and the hook
timeline's lanes. The names follow one rule: the kind a module gets from ``register_<x>_hook`` is
``<x>``, the full backward hooks are plain ``backward`` / ``backward_pre``, the deprecated
``register_backward_hook`` is ``backward_legacy``, global module hooks add ``global_``, optimizer
hooks add ``optimizer_`` (and ``global_optimizer_``).

>>> from hookviz.catalogue import HOOK_KINDS, hook_kind, kinds
>>> hook_kind("backward").register
'torch.nn.Module.register_full_backward_hook'
>>> hook_kind("backward_legacy").deprecated
True
>>> [k.name for k in kinds(target="tensor")]
['tensor', 'post_accumulate_grad']
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from hookviz.guards import check_flag, check_strings
from hookviz.i18n import N_, tr
from hookviz.text import closest_hint, text_table

__all__ = [
    "HOOK_KINDS",
    "PHASES",
    "TARGETS",
    "HookKind",
    "catalogue_table",
    "hook_kind",
    "kinds",
]

# What a hook is attached to, in the order a reader meets them.
TARGETS = (
    "tensor",
    "module",
    "global module",
    "autograd node",
    "autograd graph",
    "optimizer",
    "global optimizer",
    "ddp",
)
# When it fires: during forward, during backward, while a state_dict is saved or loaded, while a
# module gets a submodule / parameter / buffer, or around optimizer.step().
PHASES = ("forward", "backward", "state_dict", "registration", "optimizer")

_MODULE = "torch.nn.modules.module"
_OPTIM = "torch.optim.optimizer"


@dataclass(frozen=True)
class HookKind:
    """One kind of hook.

    Attributes:
        name: hookviz's name for the kind (``"forward"``, ``"backward_legacy"``, ``"tensor"`` ...).
        register: the registration call, fully qualified (``"torch.nn.Module.register_forward_hook"``).
        target: what the hook is attached to, one of :data:`TARGETS`.
        phase: when it fires, one of :data:`PHASES`.
        storage: where PyTorch keeps the hook, in words (``"module._forward_hooks"``).
        storage_attr: the name of the dict that holds the hooks, on the target object (per-object
            kinds) or in :attr:`storage_module` (global kinds); ``None`` when PyTorch keeps the hook
            where Python cannot read it (inside a C++ autograd node, the DDP reducer, a thread-local
            stack).
        storage_module: for global kinds, the module that holds the dict (``"torch.nn.modules.module"``).
        deprecated: True for the legacy kinds PyTorch tells you not to use.
        returns_handle: True when the registration returns a handle with ``.remove()``; False for
            context managers and DDP's comm hook.
        fires: one line saying when the hook runs and what it may return.
    """

    name: str
    register: str
    target: str
    phase: str
    storage: str
    storage_attr: str | None
    storage_module: str | None
    deprecated: bool
    returns_handle: bool
    fires: str

    @property
    def method(self) -> str:
        """The registration function's own name (``"register_forward_hook"``)."""
        return self.register.rsplit(".", 1)[1]

    @property
    def owner(self) -> str:
        """Where the registration function lives (``"torch.nn.Module"``, ``"torch.nn.modules.module"``)."""
        return self.register.rsplit(".", 1)[0]

    @property
    def is_global(self) -> bool:
        """True for hooks that fire for every module / optimizer in the process."""
        return self.target.startswith("global")

    @property
    def inspectable(self) -> bool:
        """True when :meth:`hooks_of` can read the attached hooks from Python."""
        return self.storage_attr is not None

    def registration_function(self) -> Any:
        """The registration function or method itself, imported from PyTorch (fails if it is gone)."""
        owner_path, method = self.owner, self.method
        if owner_path == "DistributedDataParallel":
            owner: Any = importlib.import_module("torch.nn.parallel").DistributedDataParallel
        else:
            try:
                owner = importlib.import_module(owner_path)
            except ModuleNotFoundError:
                module_path, cls = owner_path.rsplit(".", 1)
                owner = getattr(importlib.import_module(module_path), cls)
        return getattr(owner, method)

    def hooks_of(self, obj: Any = None) -> dict[int, Any]:
        """The hooks of this kind attached to ``obj`` (a tensor, module or optimizer), as ``{id: hook}``.

        Global kinds read the process-wide dict and ignore ``obj``. The two backward kinds share
        PyTorch's ``_backward_hooks`` dict; the flag ``_is_full_backward_hook`` (per module, or
        global) tells which kind its hooks are. Returns a new dict (removing from it changes
        nothing); raises ``ValueError`` for kinds PyTorch keeps out of Python's reach.
        """
        if self.storage_attr is None:
            raise ValueError(f"PyTorch keeps {self.name!r} hooks where Python cannot list them ({self.storage})")
        if self.storage_module is not None:
            holder: Any = importlib.import_module(self.storage_module)
        elif obj is None:
            raise TypeError(f"hooks_of() needs the {self.target} that {self.name!r} hooks are attached to")
        else:
            holder = obj
        hooks = getattr(holder, self.storage_attr, None) or {}
        if self.name in _BACKWARD_FLAG:
            flag = "_global_is_full_backward_hook" if self.is_global else "_is_full_backward_hook"
            is_full = getattr(holder, flag, None)
            legacy = self.name.endswith("_legacy")
            if (is_full is False) != legacy:
                return {}
        return dict(hooks)


_BACKWARD_FLAG = {"backward", "backward_legacy", "global_backward", "global_backward_legacy"}


def _kind(
    name: str,
    register: str,
    target: str,
    phase: str,
    storage: str,
    fires: str,
    *,
    attr: str | None = None,
    module: str | None = None,
    deprecated: bool = False,
    handle: bool = True,
) -> HookKind:
    return HookKind(name, register, target, phase, storage, attr, module, deprecated, handle, fires)


_ALL = [
    # ---- tensors
    _kind(
        "tensor", "torch.Tensor.register_hook", "tensor", "backward", "tensor._backward_hooks",
        "when the gradient w.r.t. the tensor is computed; may return a replacement gradient",
        attr="_backward_hooks",
    ),
    _kind(
        "post_accumulate_grad", "torch.Tensor.register_post_accumulate_grad_hook", "tensor", "backward",
        "tensor._post_accumulate_grad_hooks",
        "on a leaf, right after .grad was accumulated; receives the tensor, must return None",
        attr="_post_accumulate_grad_hooks",
    ),
    # ---- one module
    _kind(
        "forward_pre", "torch.nn.Module.register_forward_pre_hook", "module", "forward",
        "module._forward_pre_hooks",
        "before forward(); may return replacement positional args (and kwargs with with_kwargs=True)",
        attr="_forward_pre_hooks",
    ),
    _kind(
        "forward", "torch.nn.Module.register_forward_hook", "module", "forward", "module._forward_hooks",
        "after forward(); may return a replacement output", attr="_forward_hooks",
    ),
    _kind(
        "backward_pre", "torch.nn.Module.register_full_backward_pre_hook", "module", "backward",
        "module._backward_pre_hooks",
        "before the module's input gradients are computed; may return a replacement grad_output",
        attr="_backward_pre_hooks",
    ),
    _kind(
        "backward", "torch.nn.Module.register_full_backward_hook", "module", "backward",
        "module._backward_hooks (module._is_full_backward_hook is True)",
        "when the gradients w.r.t. the module's inputs are computed; may return a replacement grad_input",
        attr="_backward_hooks",
    ),
    _kind(
        "backward_legacy", "torch.nn.Module.register_backward_hook", "module", "backward",
        "module._backward_hooks (module._is_full_backward_hook is False)",
        "deprecated: fires on the last autograd node of forward only, so grad_input can be wrong",
        attr="_backward_hooks", deprecated=True,
    ),
    _kind(
        "state_dict_pre", "torch.nn.Module.register_state_dict_pre_hook", "module", "state_dict",
        "module._state_dict_pre_hooks", "before state_dict() collects the module's entries",
        attr="_state_dict_pre_hooks",
    ),
    _kind(
        "state_dict_post", "torch.nn.Module.register_state_dict_post_hook", "module", "state_dict",
        "module._state_dict_hooks", "after state_dict() collected the module's entries; may edit them",
        attr="_state_dict_hooks",
    ),
    _kind(
        "load_state_dict_pre", "torch.nn.Module.register_load_state_dict_pre_hook", "module", "state_dict",
        "module._load_state_dict_pre_hooks", "before load_state_dict() loads the module's entries",
        attr="_load_state_dict_pre_hooks",
    ),
    _kind(
        "load_state_dict_post", "torch.nn.Module.register_load_state_dict_post_hook", "module", "state_dict",
        "module._load_state_dict_post_hooks", "after load_state_dict(); sees the missing / unexpected keys",
        attr="_load_state_dict_post_hooks",
    ),
    # ---- every module in the process
    _kind(
        "global_forward_pre", f"{_MODULE}.register_module_forward_pre_hook", "global module", "forward",
        f"{_MODULE}._global_forward_pre_hooks", "before every module's forward(), before its own pre-hooks",
        attr="_global_forward_pre_hooks", module=_MODULE,
    ),
    _kind(
        "global_forward", f"{_MODULE}.register_module_forward_hook", "global module", "forward",
        f"{_MODULE}._global_forward_hooks", "after every module's forward(), before its own forward hooks",
        attr="_global_forward_hooks", module=_MODULE,
    ),
    _kind(
        "global_backward_pre", f"{_MODULE}.register_module_full_backward_pre_hook", "global module", "backward",
        f"{_MODULE}._global_backward_pre_hooks", "like backward_pre, for every module",
        attr="_global_backward_pre_hooks", module=_MODULE,
    ),
    _kind(
        "global_backward", f"{_MODULE}.register_module_full_backward_hook", "global module", "backward",
        f"{_MODULE}._global_backward_hooks (_global_is_full_backward_hook is True)",
        "like backward, for every module", attr="_global_backward_hooks", module=_MODULE,
    ),
    _kind(
        "global_backward_legacy", f"{_MODULE}.register_module_backward_hook", "global module", "backward",
        f"{_MODULE}._global_backward_hooks (_global_is_full_backward_hook is False)",
        "deprecated: like backward_legacy, for every module",
        attr="_global_backward_hooks", module=_MODULE, deprecated=True,
    ),
    _kind(
        "global_module_registration", f"{_MODULE}.register_module_module_registration_hook", "global module",
        "registration", f"{_MODULE}._global_module_registration_hooks",
        "when any module gets a submodule; may return a replacement",
        attr="_global_module_registration_hooks", module=_MODULE,
    ),
    _kind(
        "global_parameter_registration", f"{_MODULE}.register_module_parameter_registration_hook",
        "global module", "registration", f"{_MODULE}._global_parameter_registration_hooks",
        "when any module gets a parameter; may return a replacement",
        attr="_global_parameter_registration_hooks", module=_MODULE,
    ),
    _kind(
        "global_buffer_registration", f"{_MODULE}.register_module_buffer_registration_hook", "global module",
        "registration", f"{_MODULE}._global_buffer_registration_hooks",
        "when any module gets a buffer; may return a replacement",
        attr="_global_buffer_registration_hooks", module=_MODULE,
    ),
    # ---- autograd
    _kind(
        "node_pre", "torch.autograd.graph.Node.register_prehook", "autograd node", "backward",
        "inside the C++ autograd node (not readable from Python)",
        "before the node runs; receives its grad_outputs, may return replacements",
    ),
    _kind(
        "node", "torch.autograd.graph.Node.register_hook", "autograd node", "backward",
        "inside the C++ autograd node (not readable from Python)",
        "after the node ran; receives grad_inputs and grad_outputs, may return replacement grad_inputs",
    ),
    _kind(
        "multi_grad", "torch.autograd.graph.register_multi_grad_hook", "autograd graph", "backward",
        "one tensor hook on each of the tensors (tensor._backward_hooks)",
        "once the gradients of all (mode='all') or the first (mode='any') of several tensors are computed",
    ),
    _kind(
        "saved_tensors", "torch.autograd.graph.saved_tensors_hooks", "autograd graph", "forward",
        "a thread-local stack in the autograd engine (a context manager)",
        "pack when forward saves a tensor for backward, unpack when backward uses it",
        handle=False,
    ),
    _kind(
        "saved_tensors_on_cpu", "torch.autograd.graph.save_on_cpu", "autograd graph", "forward",
        "a thread-local stack in the autograd engine (a context manager)",
        "ready-made saved_tensors hooks that keep saved tensors on the CPU",
        handle=False,
    ),
    _kind(
        "saved_tensors_disabled", "torch.autograd.graph.disable_saved_tensors_hooks", "autograd graph", "forward",
        "a thread-local flag in the autograd engine (a context manager)",
        "makes registering saved_tensors hooks an error inside the block",
        handle=False,
    ),
    # ---- one optimizer
    _kind(
        "optimizer_step_pre", "torch.optim.Optimizer.register_step_pre_hook", "optimizer", "optimizer",
        "optimizer._optimizer_step_pre_hooks", "before step(); may return replacement (args, kwargs)",
        attr="_optimizer_step_pre_hooks",
    ),
    _kind(
        "optimizer_step_post", "torch.optim.Optimizer.register_step_post_hook", "optimizer", "optimizer",
        "optimizer._optimizer_step_post_hooks", "after step()", attr="_optimizer_step_post_hooks",
    ),
    _kind(
        "optimizer_state_dict_pre", "torch.optim.Optimizer.register_state_dict_pre_hook", "optimizer",
        "state_dict", "optimizer._optimizer_state_dict_pre_hooks", "before optimizer.state_dict()",
        attr="_optimizer_state_dict_pre_hooks",
    ),
    _kind(
        "optimizer_state_dict_post", "torch.optim.Optimizer.register_state_dict_post_hook", "optimizer",
        "state_dict", "optimizer._optimizer_state_dict_post_hooks",
        "after optimizer.state_dict(); may return a replacement", attr="_optimizer_state_dict_post_hooks",
    ),
    _kind(
        "optimizer_load_state_dict_pre", "torch.optim.Optimizer.register_load_state_dict_pre_hook", "optimizer",
        "state_dict", "optimizer._optimizer_load_state_dict_pre_hooks",
        "before optimizer.load_state_dict(); may return a replacement state_dict",
        attr="_optimizer_load_state_dict_pre_hooks",
    ),
    _kind(
        "optimizer_load_state_dict_post", "torch.optim.Optimizer.register_load_state_dict_post_hook",
        "optimizer", "state_dict", "optimizer._optimizer_load_state_dict_post_hooks",
        "after optimizer.load_state_dict()", attr="_optimizer_load_state_dict_post_hooks",
    ),
    # ---- every optimizer in the process
    _kind(
        "global_optimizer_step_pre", f"{_OPTIM}.register_optimizer_step_pre_hook", "global optimizer",
        "optimizer", f"{_OPTIM}._global_optimizer_pre_hooks", "before every optimizer's step()",
        attr="_global_optimizer_pre_hooks", module=_OPTIM,
    ),
    _kind(
        "global_optimizer_step_post", f"{_OPTIM}.register_optimizer_step_post_hook", "global optimizer",
        "optimizer", f"{_OPTIM}._global_optimizer_post_hooks", "after every optimizer's step()",
        attr="_global_optimizer_post_hooks", module=_OPTIM,
    ),
    # ---- distributed
    _kind(
        "ddp_comm", "DistributedDataParallel.register_comm_hook", "ddp", "backward",
        "the C++ DDP reducer (not readable from Python)",
        "replaces DDP's gradient all-reduce, once per bucket; returns a Future; can be set once",
        handle=False,
    ),
]

HOOK_KINDS: dict[str, HookKind] = {k.name: k for k in _ALL}
"""Every hook kind, by name, in the order a reader meets them (tensor, module, global, autograd, optimizer, DDP)."""

# Names that other code or older hookviz versions used, and what to use instead.
_RENAMED = {
    "full_backward": "backward",
    "full_backward_pre": "backward_pre",
    "legacy_backward": "backward_legacy",
    "state_dict": "state_dict_post",
    "step_pre": "optimizer_step_pre",
    "step_post": "optimizer_step_post",
}


def hook_kind(name: str) -> HookKind:
    """The :class:`HookKind` called ``name``; a clear ``ValueError`` naming the closest kinds otherwise.

    A registration method's name (``"register_full_backward_hook"``) and the spellings in
    ``_RENAMED`` (``"full_backward"`` ...) are answered with the kind to use instead.
    """
    if not isinstance(name, str):
        raise TypeError(f"a hook kind is a name (str), not {type(name).__name__}")
    if name in HOOK_KINDS:
        return HOOK_KINDS[name]
    by_method = [k.name for k in _ALL if k.method == name or k.register == name]
    if by_method:
        raise ValueError(f"{name!r} is a registration function; the hook kind is called {by_method[0]!r}")
    if name in _RENAMED:
        raise ValueError(f"unknown hook kind {name!r}; hookviz calls it {_RENAMED[name]!r}")
    raise ValueError(f"unknown hook kind {name!r}{closest_hint(name, HOOK_KINDS)}; see hookviz.catalogue.HOOK_KINDS")


def kinds(
    *, target: str | None = None, phase: str | None = None, deprecated: bool | None = None
) -> list[HookKind]:
    """Hook kinds filtered by ``target`` (see :data:`TARGETS`), ``phase`` (see :data:`PHASES`) and ``deprecated``.

    ``deprecated=False`` leaves out the legacy kinds; ``None`` (default) keeps them.
    """
    if target is not None and target not in TARGETS:
        raise ValueError(f"unknown target {target!r}{closest_hint(target, TARGETS)}; choose from {list(TARGETS)}")
    if phase is not None and phase not in PHASES:
        raise ValueError(f"unknown phase {phase!r}{closest_hint(phase, PHASES)}; choose from {list(PHASES)}")
    if deprecated is not None:
        deprecated = check_flag(deprecated, "deprecated",
                                fix=N_("True keeps only the legacy kinds, False leaves them out, None keeps all"))
    return [
        k
        for k in _ALL
        if (target is None or k.target == target)
        and (phase is None or k.phase == phase)
        and (deprecated is None or k.deprecated == deprecated)
    ]


def catalogue_table(
    *, target: str | None = None, phase: str | None = None, columns: tuple[str, ...] = ("name", "register", "phase")
) -> str:
    """The catalogue (or the kinds of one ``target`` / ``phase``) as a plain-text table.

    ``columns`` are :class:`HookKind` field or property names; ``deprecated`` is shown as
    ``"deprecated"`` or ``""`` and ``returns_handle`` as ``"handle"`` or ``""``.
    """
    known = set(HookKind.__dataclass_fields__) | {"method", "owner", "is_global", "inspectable"}
    columns = check_strings(columns, "columns", fix=N_("e.g. columns=('name', 'register', 'phase')"))
    for column in columns:
        if column not in known:
            raise ValueError(f"unknown column {column!r}{closest_hint(column, known)}")

    def cell(kind: HookKind, column: str) -> str:
        value = getattr(kind, column)
        if column == "deprecated":
            return tr("deprecated") if value else ""
        if column == "returns_handle":
            return tr("handle") if value else ""
        if column == "phase":
            return tr(value)
        return "" if value is None else str(value)

    headers = [tr(_COLUMN_HEADERS.get(column, column)) for column in columns]
    return text_table(headers, [[cell(k, c) for c in columns] for k in kinds(target=target, phase=phase)])


#: The headers :func:`catalogue_table` shows in the learner's language (the other columns show their field name).
_COLUMN_HEADERS = {"name": N_("name"), "register": N_("register"), "phase": N_("phase")}
