"""Watching one call of a user's hook: what it received, which torch functions it called, what it left in its
local variables when it returned, and what it changed on the model.

The evidence comes from the run, never from names: the tensors the hook received are compared before and
after (their version counter, and their values for those small enough to copy, which catches ``.data``
edits that bump no version); a :class:`~torch.overrides.TorchFunctionMode` lists the torch functions the hook
calls (``.item()`` and ``.cpu()`` copy to the host and wait for the GPU; reading ``p.grad`` shows up as
``Tensor.grad.__get__``); a profile function reads the hook's frame as it returns, so that a tensor it
computed from its arguments and threw away (a forgotten ``return``) is seen; the model's modes and
``requires_grad`` flags are compared around the call, and :class:`~torch.utils.hooks.RemovableHandle`'s id
counter says whether the hook registered anything.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn.parameter import is_lazy
from torch.overrides import TorchFunctionMode, resolve_name
from torch.utils.hooks import RemovableHandle

from hookviz.diagnose import code
from hookviz.diagnose.facts import Call, Local, Received, output_tensors

#: Tensors up to this many elements are copied before a hook runs, so that an edit through ``.data`` (which
#: moves no version counter) is seen; bigger ones are only checked through their version.
COPY_LIMIT = 1 << 20

#: A hook on a module watches every weight under that module when they hold at most this many numbers together, else
#: only the module's own (a copy of each is compared after the call).
WEIGHT_LIMIT = 1 << 22

#: Torch functions that turn a tensor's values into Python values (on a GPU each call waits for the GPU to finish),
#: as the code a learner writes: ``bool(tensor)`` is also an ``if`` on a tensor. (``.cpu()`` is not among them:
#: moving what a hook keeps off the GPU is how the course tells you to save memory.)
SYNCS = {
    "torch.Tensor.item": ".item()",
    "torch.Tensor.tolist": ".tolist()",
    "torch.Tensor.__bool__": "bool(tensor)",
    "torch.Tensor.__float__": "float(tensor)",
    "torch.Tensor.__int__": "int(tensor)",
    "torch.Tensor.__index__": "operator.index(tensor)",
    "torch.Tensor.__format__": "format(tensor)",
    "torch.Tensor.__repr__": "repr(tensor)",
}
_GRAD_READ = "torch.Tensor.grad.__get__"
_REGISTER = "torch.Tensor.register_hook"


def received_tensors(role: str, args: tuple[Any, ...]) -> list[tuple[str, Tensor]]:
    """The tensors a hook of ``role`` receives and may change, each with what it is: ``output``, ``input``,
    ``gradient`` or ``parameter`` (a post-accumulate-grad hook's argument)."""
    if role == "forward":
        groups: list[tuple[str, Any]] = [("output", args[-1] if args else ())]
        groups.append(("input", args[1] if len(args) >= 3 else ()))
    elif role == "forward_pre":
        groups = [("input", args[1] if len(args) > 1 else ())]
    elif role == "backward_pre":
        groups = [("gradient", args[1] if len(args) > 1 else ())]
    elif role in ("backward", "backward_legacy"):
        groups = [("gradient", args[1:3])]
    elif role == "tensor":
        groups = [("gradient", args[0] if args else ())]
    elif role == "post_accumulate_grad":
        groups = [("parameter", args[0] if args else ())]
    else:
        return []
    seen: set[int] = set()
    found = []
    for what, value in groups:
        for t in output_tensors(value, 3):
            if not t.is_nested and id(t) not in seen:
                seen.add(id(t))
                found.append((what, t))
    return found


def replaceable(role: str, args: tuple[Any, ...]) -> list[Tensor]:
    """The tensors whose place a hook's return value would take: the output, the positional arguments, the
    gradient, grad_input (a full backward hook), grad_output (a backward pre-hook)."""
    if role == "forward":
        value: Any = args[-1] if args else ()
    elif role in ("forward_pre", "backward_pre"):
        value = args[1] if len(args) > 1 else ()
    elif role in ("backward", "backward_legacy"):
        value = args[1] if len(args) > 1 else ()
    elif role == "tensor":
        value = args[0] if args else ()
    else:
        return []
    return [t for t in output_tensors(value, 2) if not t.is_nested]


def _copy(t: Tensor) -> Tensor | None:
    if is_lazy(t) or t.is_nested or t.layout != torch.strided or t.device.type == "meta" or t.numel() > COPY_LIMIT:
        return None
    with torch.no_grad():
        return t.detach().contiguous().clone()


def _flat(value: Any, depth: int = 2) -> Iterator[Tensor]:
    if isinstance(value, Tensor):
        yield value
    elif depth > 0 and isinstance(value, (tuple, list)):
        for item in value:
            yield from _flat(item, depth - 1)
    elif depth > 0 and isinstance(value, dict):
        for item in value.values():
            yield from _flat(item, depth - 1)


class _OpLog(TorchFunctionMode):
    """The torch functions a hook calls: their names, and which tensors go in and come out of each."""

    def __init__(self, on_register: Callable[[Tensor, Any], Any] | None = None) -> None:
        super().__init__()
        self.on_register = on_register
        self.ops: list[tuple[str, list[int], list[int]]] = []
        self.made: list[tuple[int, str, Any]] = []  # (op index, op name, weak reference) of each tensor made
        self.shapes: dict[int, tuple[Any, Any]] = {}  # op index -> shape and dtype of the tensor it made
        self.grad_reads: list[Tensor] = []
        self.numbers: set[int] = set()

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        try:
            name = resolve_name(func) or getattr(func, "__name__", "?")
        except Exception:  # noqa: BLE001 - a name is only for the record
            name = getattr(func, "__name__", "?")
        if name == _REGISTER and self.on_register is not None and len(args) >= 2 and isinstance(args[0], Tensor):
            args = (args[0], self.on_register(args[0], args[1]), *args[2:])  # a tensor hook made here is watched too
        result = func(*args, **kwargs)
        inputs = [id(t) for t in _flat(list(args) + list(kwargs.values()))]
        if len(self.numbers) < 64:
            self.numbers.update(_ints([*args, *kwargs.values()]))
        outputs = [id(t) for t in _flat(result)]
        if name == _GRAD_READ and args and isinstance(args[0], Tensor):
            self.grad_reads.append(args[0])
        if isinstance(result, Tensor) and id(result) not in inputs and len(self.made) < 256 and not result.is_nested:
            memory = result.untyped_storage().data_ptr() if _has_storage(result) else None
            self.shapes[len(self.ops)] = (tuple(result.shape), result.dtype, memory)
            self.made.append((len(self.ops), name, weakref.ref(result)))
        self.ops.append((name, inputs, outputs))
        return result


def _ints(values: list[Any], depth: int = 2) -> Iterator[int]:
    """The integers among a torch function's arguments (``view(32, -1)``, ``zeros((32, 10))``, ``t[:32]``)."""
    for value in values:
        if isinstance(value, int) and not isinstance(value, bool):
            yield value
        elif isinstance(value, slice):
            yield from (v for v in (value.start, value.stop) if isinstance(v, int))
        elif depth > 0 and isinstance(value, (tuple, list)):
            yield from _ints(list(value), depth - 1)


def _in_place(name: str) -> bool:
    """A torch function that writes into its first argument: ``mul_``, ``__setitem__``, ``__imul__`` ..."""
    short = name.rsplit(".", 1)[-1]
    return (short.endswith("_") and not short.endswith("__")) or short in ("__setitem__",) or short.startswith("__i")


class _FrameReader:
    """A profile function that reads the hook's own frame as it returns (its local variables' tensors)."""

    def __init__(self, function_code: Any) -> None:
        self.code = function_code
        self.frame: Any = None
        self.tensors: list[tuple[str, Tensor]] = []
        self.done = False

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if self.done:
            return
        if event == "call" and self.frame is None and frame.f_code is self.code:
            self.frame = frame
        elif event == "return" and frame is self.frame:
            # no torch call here: the hook's op log is still recording
            self.tensors = [(k, v) for k, v in frame.f_locals.items() if _tensor_or_tensors(v)]
            self.frame = None
            self.done = True


def _parts(value: Any, depth: int = 2) -> list[Tensor | None] | None:
    """The tensors of a value a hook could return in place of what it received: a tensor, or a tuple or list of
    tensors and Nones (nested one level: an LSTM's ``(output, (h, c))``); None for anything else."""
    if isinstance(value, Tensor):
        return [value]
    if depth > 0 and isinstance(value, (tuple, list)) and 0 < len(value) <= 16:
        parts: list[Tensor | None] = []
        for item in value:
            if item is None:
                parts.append(None)
                continue
            inner = _parts(item, depth - 1)
            if inner is None:
                return None
            parts += inner
        return parts if any(isinstance(p, Tensor) for p in parts) else None
    return None


def _tensor_or_tensors(value: Any) -> bool:
    """A tensor, or a tuple or list of tensors (and Nones): what a hook could return."""
    return _parts(value) is not None


def _watched_weights(site: Any, model: nn.Module) -> list[Tensor]:
    """The parameters a hook could edit without receiving them: every weight of the model when they are few enough
    to copy (:data:`WEIGHT_LIMIT`), else every weight under its module, or only its module's own (its parameter)."""
    others = [p for p in model.parameters() if not is_lazy(p) and p is not site.holder]
    if sum(p.numel() for p in others) <= WEIGHT_LIMIT:  # a small model: every weight (a hook may edit any of them)
        return others if site.role == "post_accumulate_grad" or not isinstance(site.holder, Tensor) else [
            *others, site.holder
        ]
    if site.role == "post_accumulate_grad":
        return []
    if site.module is not None and site.role != "tensor":
        every = [p for p in site.module.parameters() if not is_lazy(p)]
        if sum(p.numel() for p in every) <= WEIGHT_LIMIT:
            return every  # its own and its submodules' (a hook on a block, or on the model, clipping all weights)
        return [p for p in site.module.parameters(recurse=False) if not is_lazy(p)]
    holder = site.holder
    return [holder] if isinstance(holder, nn.Parameter) and not is_lazy(holder) else []


def _model_flags(model: nn.Module) -> tuple[list[bool], list[bool]]:
    return [m.training for m in model.modules()], [p.requires_grad for p in model.parameters()]


def _changes(model: nn.Module, before: tuple[list[bool], list[bool]], names: dict[int, str]) -> list[str]:
    modes, grads = before
    changed = []
    for module, was in zip(model.modules(), modes, strict=False):
        if module.training != was:
            changed.append(f"{names.get(id(module), '?')}.training = {module.training}")
    for (name, param), was in zip(model.named_parameters(), grads, strict=False):
        if param.requires_grad != was:
            changed.append(f"{name}.requires_grad = {param.requires_grad}")
    return changed


def watched_call(call: Call, hook: Any, model: nn.Module, names: dict[int, str],
                 on_register: Callable[[Tensor, Any], Any] | None = None) -> Any:  # fmt: skip
    """Call ``hook`` with ``call.args`` and record into ``call`` what it did; returns what it returned (or raises).

    ``on_register(tensor, hook)`` is given each tensor hook the hook registers (``output.register_hook(save_grad)``,
    as Grad-CAM does) and returns what to register instead (a watched wrapper)."""
    role = call.site.role
    args = call.args
    received = received_tensors(role, args)
    call.received = [Received(t, t._version, _copy(t), what) for what, t in received]
    call.received += [Received(w, w._version, _copy(w), "weight") for w in _watched_weights(call.site, model)]
    argument_ids = {id(t) for t in output_tensors(args, 3)}
    targets = replaceable(role, args)
    flags = _model_flags(model)
    switches = (torch.is_grad_enabled(), torch.get_default_dtype())
    handles = RemovableHandle.next_id
    function_code = getattr(code.function_of(hook), "__code__", None)
    reader = _FrameReader(function_code) if function_code is not None and targets else None
    previous = sys.getprofile()
    profiling = reader is not None and (previous is None or isinstance(previous, _FrameReader))
    log = _OpLog(on_register)
    try:
        if profiling:
            sys.setprofile(reader)
        with log:
            result = hook(*args, **call.kwargs)
    finally:
        if profiling:
            sys.setprofile(previous)
        call.registered = RemovableHandle.next_id - handles
        call.changed = _changes(model, flags, names)
        if torch.is_grad_enabled() != switches[0]:  # the rest of the step would run without (or with) a graph
            call.changed.append(f"torch.set_grad_enabled({torch.is_grad_enabled()})")
            torch.set_grad_enabled(switches[0])
        if torch.get_default_dtype() != switches[1]:
            call.changed.append(f"torch.set_default_dtype({torch.get_default_dtype()})")
            torch.set_default_dtype(switches[1])
        call.ops = [name for name, _, _ in log.ops]
        call.made = {output for _, _, outputs in log.ops for output in outputs}
        call.syncs = list(dict.fromkeys(SYNCS[name] for name in call.ops if name in SYNCS))
        call.read_grad_of = log.grad_reads
        call.numbers = log.numbers
    if reader is not None and result is None:
        call.locals = _locals(reader, log, argument_ids, targets, args)
    return result


def _locals(reader: _FrameReader, log: _OpLog, argument_ids: set[int], targets: list[Tensor],
            args: tuple[Any, ...]) -> list[Local]:  # fmt: skip
    """What the hook held in its local variables as it returned, with what the run knows of each tensor."""
    storages = {t.untyped_storage().data_ptr() for t in output_tensors(args, 3) if _has_storage(t)}
    shapes = {(tuple(t.shape), t.dtype) for t in targets}
    # which tensors the hook's torch calls derived from its arguments, and when each was made and read
    derived = set(argument_ids)
    made: dict[int, int] = {}
    reads: dict[int, list[int]] = {}
    for index, (name, inputs, outputs) in enumerate(log.ops):
        if any(i in derived for i in inputs):
            derived.update(outputs)
        for output in outputs:
            made[output] = index  # the last tensor made with this id (a freed temporary's id is reused)
        for position, tensor_id in enumerate(inputs):
            if not (position == 0 and _in_place(name)):
                reads.setdefault(tensor_id, []).append(index)
    found = _weigh(reader.tensors, shapes, argument_ids, storages, derived, made, reads)
    reader.tensors = []  # the last reference this module held: now only the hook's own stores keep them alive
    for local, refs in found:
        local.dropped = all(ref() is None for ref in refs)
    return [local for local, _ in found] + _discarded(log, shapes, derived, reads, storages)


def _discarded(log: _OpLog, shapes: set[Any], derived: set[int], reads: dict[int, list[int]],
               storages: set[int]) -> list[Local]:  # fmt: skip
    """Tensors a torch call of the hook made from its arguments, shaped like what it could replace, that no later
    call read, no variable held and nothing kept: an expression whose value was thrown away (``output.mul(2)``)."""
    found = []
    for index, name, ref in log.made:
        tensor = ref()
        if tensor is not None:
            continue  # kept somewhere (a list, an attribute): not thrown away
        outputs = log.ops[index][2]
        key = outputs[0] if outputs else None
        if key is None or key not in derived or any(i > index for i in reads.get(key, [])):
            continue
        shape, dtype, memory = log.shapes.get(index, (None, None, None))
        if (shape, dtype) not in shapes or memory in storages:
            continue  # not shaped like what it could replace, or a view of an argument (reshape, detach)
        short = name.rsplit(".", 1)[-1]
        found.append(Local(f"{short}(...)", shape, dtype, False, False, True, False, True, expression=True))
    return found


def _weigh(tensors: list[tuple[str, Any]], shapes: set[Any], argument_ids: set[int], storages: set[int],
           derived: set[int], made: dict[int, int],
           reads: dict[int, list[int]]) -> list[tuple[Local, list[Any]]]:  # fmt: skip
    """A :class:`Local` and weak references for each local variable shaped like what the hook could replace: a
    tensor, or a tuple or list of them (``grad_input = tuple(g.clamp(...) for g in grad_input)``, an LSTM output
    rebuilt as ``(out * 2, rest)``). Its new parts (not the hook's own arguments passed through) carry the evidence."""
    found = []
    for name, value in tensors:
        parts = [t for t in (_parts(value) or []) if isinstance(t, Tensor)]
        if not parts or any(t.is_nested or (tuple(t.shape), t.dtype) not in shapes for t in parts):
            continue
        new = [t for t in parts if id(t) not in argument_ids]
        local = Local(
            name=name,
            shape=tuple((new or parts)[0].shape),
            dtype=(new or parts)[0].dtype,
            argument=not new,
            shares_memory=any(_has_storage(t) and t.untyped_storage().data_ptr() in storages for t in new),
            derived=bool(new) and all(id(t) in derived for t in new),
            read=any(i > made.get(id(t), -1) for t in new for i in reads.get(id(t), [])),
            dropped=False,
            parts=len(parts) if not isinstance(value, Tensor) else 0,
        )
        found.append((local, [weakref.ref(t) for t in new]))
    return found


def _has_storage(t: Tensor) -> bool:
    return not t.is_nested and t.layout == torch.strided and t.device.type != "meta"
