"""The hook atlas: how every hook kind of :mod:`hookviz.catalogue` behaves, measured by probes that run.

Each hook kind gets a *rig* (:class:`Rig`): small objects of its own (a tiny module, a leaf tensor, an
optimizer ...), a way to attach one hook of that kind, and a *trigger* (the forward pass, the backward
pass, ``state_dict()``, ``optimizer.step()`` ...). A *situation* (:class:`Situation`) runs the trigger
in one setting taken from seven categories:

- ``lifecycle``: what happens to the objects the hook is attached to (deep copy, ``eval()``, frozen
  parameters, loading a state dict);
- ``shapes``: what the hooked call takes and gives (tuple / dict / ``None`` outputs, non-tensor and
  keyword arguments);
- ``repetition``: the trigger run twice, the hook registered twice, the module used twice in one pass;
- ``timing``: when registration and removal take effect (a hook that removes itself, or another hook,
  or adds a hook, while the trigger runs);
- ``failure``: an exception in the hook or in the hooked call;
- ``context``: ``no_grad``, ``inference_mode``, autocast, checkpointing, ``torch.func``, ``torch.jit.trace``;
- ``variations``: the model or the graph varied: cast after registering, a hooked child replaced, backward
  twice or with ``create_graph``, a leaf used twice, other module families (embedding, recurrent cell in a
  loop, LSTM, ``nn.Sequential``).

Every probe runs twice, once with a hook that only records its calls and once with a hook that
returns a replacement, and yields an :class:`Entry`: whether the hook fired, how many times, what it
received (types and shapes, never values), what its return value changed, the error the trigger
raised (if any) and the torch version it was measured on. :func:`run_atlas` runs them all (a few
seconds on one CPU thread); nothing printed depends on float rounding, the CPU or the build.

The probes register hooks only on objects they build themselves, remove every hook on every exit path
(global hooks included), and restore the global state they touch (the DDP probe's process group).

:class:`AtlasTable` is the searchable table as a plain state object (a query and two filters over the
entries, rendered as HTML or Markdown); :func:`atlas_widget` is the thin ipywidgets view over it.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import html
import json
import operator
import os
import re
import threading
import warnings
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from hookviz.catalogue import HOOK_KINDS, hook_kind
from hookviz.guards import check_int, shown
from hookviz.i18n import get_language, tr, translate
from hookviz.text import closest_hint

__all__ = [
    "CATEGORIES",
    "SNAPSHOT_DIR",
    "TAUGHT",
    "TAUGHT_HERE",
    "AtlasTable",
    "AtlasWidget",
    "Entry",
    "Rig",
    "Situation",
    "atlas_widget",
    "diff_atlases",
    "entries_by_key",
    "load_snapshot",
    "merge_versions",
    "probe",
    "rig_for",
    "run_atlas",
    "situations",
    "stored_version_for",
    "stored_versions",
    "summarize",
    "version_span",
    "teaching_links",
    "torch_version",
    "write_snapshot",
]

CATEGORIES = ("lifecycle", "shapes", "repetition", "timing", "failure", "context", "variations")
"""The seven situation categories, in the order the atlas lists them."""

SNAPSHOT_DIR = Path(__file__).resolve().parent / "assets" / "atlas"
"""Where the stored atlases live, one JSON file per torch version (``atlas-torch-2.13.0.json``)."""

NOT_APPLICABLE = "-"


def torch_version() -> str:
    """The running torch's version without the local build label (``"2.13.0"``, not ``"2.13.0+cpu"``)."""
    return torch.__version__.split("+")[0]


# ---------------------------------------------------------------------------------------------- summaries
def summarize(value: Any, depth: int = 0) -> str:
    """What a hook received, as types and shapes only (``"(Linear, (Tensor[2, 3],), Tensor[2, 3])"``).

    Tensors show their shape (and dtype unless float32), containers are opened two levels deep, and
    everything else shows its type name, or its value for small numbers, strings and booleans.
    """
    depth = check_int(depth, "depth", minimum=0)
    if isinstance(value, torch.Tensor):
        dtype = "" if value.dtype == torch.float32 else f" {str(value.dtype).replace('torch.', '')}"
        kind = "Parameter" if isinstance(value, nn.Parameter) else "Tensor"
        return f"{kind}{list(value.shape)}{dtype}"
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    if isinstance(value, str):
        return repr(value) if len(value) <= 12 else "str"
    if depth >= 2:
        return type(value).__name__
    if isinstance(value, tuple):
        inner = ", ".join(summarize(v, depth + 1) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        if len(value) > 4:
            return f"list[{len(value)}]"
        return "[" + ", ".join(summarize(v, depth + 1) for v in value) + "]"
    if isinstance(value, dict):
        if len(value) > 3:
            return f"dict[{len(value)} keys]"
        return "{" + ", ".join(f"{k!s}: {summarize(v, depth + 1)}" for k, v in value.items()) + "}"
    return type(value).__name__


def _fingerprint(value: Any) -> Any:
    """A comparable, exact copy of a trigger's result (tensors become nested lists)."""
    if isinstance(value, torch.Tensor):
        return ("tensor", str(value.dtype), value.detach().float().tolist())
    if isinstance(value, (tuple, list)):
        return tuple(_fingerprint(v) for v in value)
    if isinstance(value, dict):
        return tuple((str(k), _fingerprint(v)) for k, v in value.items())
    return value


# ---------------------------------------------------------------------------------------------- recorders
class _Recorder:
    """The hook under study: records a summary of each call, then returns what ``behaviour`` gives."""

    def __init__(self, behaviour: Callable[[tuple[Any, ...]], Any]) -> None:
        self.calls: list[str] = []
        self.behaviour = behaviour
        self.muted = False
        self.before: Callable[[], None] | None = None  # run on the first call (timing situations)
        self.thread = threading.get_ident()  # the thread that runs the probe (the caller)
        self.runs_in = NOT_APPLICABLE  # where the first call ran: thread and grad mode
        self.left = NOT_APPLICABLE  # failure situations: what the failed trigger left behind

    def __deepcopy__(self, memo: dict[int, Any]) -> _Recorder:
        # A plain function hook is shared by copy.deepcopy (functions are copied by reference); the
        # recorder behaves the same, so that a deep copy's calls are counted here.
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self.muted:
            if not self.calls:
                self.runs_in = _where_it_runs(self.thread)
            self.calls.append(summarize(args) + (f" + kwargs {summarize(kwargs)}" if kwargs else ""))
        if self.before is not None:
            before, self.before = self.before, None
            before()
        return self.behaviour(args)


def _where_it_runs(caller: int) -> str:
    """The thread a hook runs on (the probe's own, or another) and the grad mode it runs under."""
    thread = "caller thread" if threading.get_ident() == caller else "other thread"
    if torch.is_inference_mode_enabled():
        mode = "inference mode"
    else:
        mode = "grad on" if torch.is_grad_enabled() else "grad off"
    return f"{thread}, {mode}"


def _leaves_and_buffers(world: dict[str, Any]) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """The leaf tensors that require grad (parameters included) and the buffers of ``world``'s objects."""
    leaves: dict[int, torch.Tensor] = {}
    buffers: dict[int, torch.Tensor] = {}
    for value in world.values():
        if isinstance(value, nn.Module):
            leaves.update((id(p), p) for p in value.parameters() if p.requires_grad)
            buffers.update((id(b), b) for b in value.buffers())
        elif isinstance(value, torch.optim.Optimizer):
            leaves.update((id(p), p) for group in value.param_groups for p in group["params"] if p.requires_grad)
        elif isinstance(value, torch.Tensor) and value.is_leaf and value.requires_grad:
            leaves[id(value)] = value
    return list(leaves.values()), list(buffers.values())


def _state_left(world: dict[str, Any], buffers_before: list[torch.Tensor]) -> str:
    """What a failed trigger left on ``world``: how many leaves got a ``.grad``, how many buffers changed."""
    leaves, buffers = _leaves_and_buffers(world)
    parts = []
    if leaves:
        parts.append(f".grad set on {sum(leaf.grad is not None for leaf in leaves)} of {len(leaves)} leaves")
    if buffers and len(buffers) == len(buffers_before):
        changed = sum(not torch.equal(b, old) for b, old in zip(buffers, buffers_before, strict=True))
        parts.append(f"{changed} of {len(buffers)} buffers changed")
    return "; ".join(parts) or NOT_APPLICABLE


# ---------------------------------------------------------------------------------------------- rigs
@dataclass
class Rig:
    """How to attach one hook kind to small objects of its own and make it fire.

    Subclasses implement :meth:`build` (fresh objects, a dict), :meth:`attach` (register ``hook``,
    return a function that removes it) and :meth:`trigger` (run the operation once, return what a
    hook's return value could change). ``result`` names that thing for the atlas
    (``"the module's output"``).
    """

    kind: str
    result: str = "the result"
    handle: bool = True
    copyable: bool = True
    returns: bool = True
    module_rig: bool = False

    def build(self, variant: str = "plain") -> dict[str, Any]:
        """Fresh objects for one probe; ``variant`` selects a module-shape situation (module rigs)."""
        raise NotImplementedError

    def attach(self, world: dict[str, Any], hook: Callable[..., Any]) -> Callable[[], None]:
        """Register ``hook`` (this rig's kind) on ``world``'s objects; return what removes it."""
        raise NotImplementedError

    def trigger(self, world: dict[str, Any]) -> Any:
        """Run the operation that fires the hook once; return what a hook's return could change."""
        raise NotImplementedError

    def deep_copy(self, world: dict[str, Any]) -> dict[str, Any]:
        """A world whose hooked object is a ``copy.deepcopy`` of ``world``'s."""
        raise NotImplementedError

    def passthrough(self, args: tuple[Any, ...]) -> Any:
        """What the recording hook returns (``None`` unless the kind requires a value)."""
        return None

    def replacement(self, args: tuple[Any, ...]) -> Any:
        """What the replacing hook returns: a different value of the kind the hook may return."""
        return None


def _zeros_like_all(values: Any) -> Any:
    if isinstance(values, torch.Tensor):
        return torch.zeros_like(values)
    if isinstance(values, (tuple, list)):
        return type(values)(_zeros_like_all(v) for v in values)
    return values


def _doubled_all(values: Any) -> Any:
    if isinstance(values, torch.Tensor):
        return values * 2
    if isinstance(values, (tuple, list)):
        return type(values)(_doubled_all(v) for v in values)
    return values


def _tensors_in(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors_in(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors_in(v)]
    return []


class _Toy(nn.Module):
    """The module under study: one ``Linear(3, 3)``; ``shape`` selects what forward returns."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 3)
        self.shape = "tensor"

    def forward(self, x: torch.Tensor, scale: Any = 1.0) -> Any:
        if self.shape == "raises":
            raise ValueError("forward failed")
        y = self.linear(x) * (scale if isinstance(scale, float) else 1.0)
        if self.shape == "tuple":
            return y, y * 2
        if self.shape == "dict":
            return {"y": y}
        if self.shape == "none":
            return None
        return y


_MODULE_REGISTER = {
    "forward_pre": lambda m, h: m.register_forward_pre_hook(h),
    "forward": lambda m, h: m.register_forward_hook(h),
    "backward_pre": lambda m, h: m.register_full_backward_pre_hook(h),
    "backward": lambda m, h: m.register_full_backward_hook(h),
    "backward_legacy": lambda m, h: m.register_backward_hook(h),
    "global_forward_pre": lambda m, h: nn.modules.module.register_module_forward_pre_hook(h),
    "global_forward": lambda m, h: nn.modules.module.register_module_forward_hook(h),
    "global_backward_pre": lambda m, h: nn.modules.module.register_module_full_backward_pre_hook(h),
    "global_backward": lambda m, h: nn.modules.module.register_module_full_backward_hook(h),
    "global_backward_legacy": lambda m, h: nn.modules.module.register_module_backward_hook(h),
}

#: The module-shape variants of the module rigs: (category, situation name, question).
MODULE_VARIANTS: tuple[tuple[str, str, str], ...] = (
    ("lifecycle", "eval", "the module is in eval() mode"),
    ("lifecycle", "frozen", "all parameters have requires_grad=False (the input still requires grad)"),
    ("lifecycle", "frozen_no_input_grad", "frozen parameters and an input that does not require grad"),
    ("lifecycle", "loaded", "load_state_dict() from another model after the hook was registered"),
    ("shapes", "tuple_output", "forward returns a tuple of two tensors"),
    ("shapes", "dict_output", "forward returns a dict of tensors"),
    ("shapes", "none_output", "forward returns None"),
    ("shapes", "keyword_argument", "the module is called as module(x, scale=2.0)"),
    ("shapes", "non_tensor_argument", "a non-tensor positional argument: module(x, 'tag')"),
    ("repetition", "called_twice_in_one_pass", "the same module is applied twice: module(module(x))"),
    ("failure", "forward_raises", "the module's forward raises"),
    ("context", "inference_mode", "forward under torch.inference_mode()"),
    ("context", "autocast_bf16", "forward under torch.autocast('cpu', dtype=torch.bfloat16)"),
    ("context", "checkpoint", "torch.utils.checkpoint.checkpoint(module, x, use_reentrant=False)"),
    ("context", "checkpoint_reentrant", "torch.utils.checkpoint.checkpoint(module, x, use_reentrant=True)"),
    ("context", "functional_call", "torch.func.functional_call(module, params, (x,))"),
    ("context", "func_grad", "torch.func.grad over functional_call (gradient w.r.t. x)"),
    ("context", "jit_trace", "calling torch.jit.trace(module, x) (hooks counted after tracing)"),
    ("context", "autograd_grad_params", "torch.autograd.grad(loss, params) (no .backward(), no input grad)"),
    ("variations", "cast_float64", "the module is cast with .to(torch.float64) after the hook was registered "
     "(input float64)"),
    ("variations", "child_replaced", "the hook is on model.linear, then the child is replaced: "
     "model.linear = nn.Linear(3, 3)"),
    ("variations", "backward_twice", "one forward, then backward(retain_graph=True) twice"),
    ("variations", "create_graph", "backward(create_graph=True)"),
    ("variations", "embedding", "the module is an nn.Embedding(10, 3) called with integer indices"),
    ("variations", "gru_cell_loop", "the module is an nn.GRUCell(3, 3) called 3 times in a loop: h = cell(x, h)"),
    ("variations", "lstm", "the module is an nn.LSTM(3, 3) on an unbatched sequence; it returns (y, (h, c))"),
    ("variations", "sequential", "the hook is on an nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 3)) "
     "container"),
    ("variations", "module_list", "the hook is on an nn.ModuleList of two Linear layers that forward loops over"),
)


class _Stack(nn.Module):
    """Two ``Linear(3, 3)`` layers in an ``nn.ModuleList`` (``layers``) that forward loops over."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 3)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


#: The module families the ``variations`` category swaps in for the one-layer module (built with seed 0).
_FAMILIES: dict[str, Callable[[], nn.Module]] = {
    "embedding": lambda: nn.Embedding(10, 3),
    "gru_cell_loop": lambda: nn.GRUCell(3, 3),
    "lstm": lambda: nn.LSTM(3, 3),
    "sequential": lambda: nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 3)),
    "module_list": _Stack,
}


@dataclass
class _ModuleRig(Rig):
    """Module and global-module forward / backward kinds, on a :class:`_Toy`."""

    backward: bool = False
    module_rig: bool = True

    def build(self, variant: str = "plain") -> dict[str, Any]:
        generator = torch.Generator().manual_seed(0)
        with torch.random.fork_rng():
            torch.manual_seed(0)
            model = _FAMILIES[variant]() if variant in _FAMILIES else _Toy()
        # Under checkpointing the input requires grad, as it does for every checkpointed block after the
        # first layer: reentrant checkpointing of an input without grad cuts the block out of the graph
        # (backward raises), which real checkpointed code never meets.
        x = torch.randn(2, 3, generator=generator, requires_grad=self.backward or variant.startswith("checkpoint"))
        shapes = {"tuple_output": "tuple", "dict_output": "dict", "none_output": "none", "forward_raises": "raises"}
        if isinstance(model, _Toy):
            model.shape = shapes.get(variant, "tensor")
        if variant == "eval":
            model.eval()
        if variant in ("frozen", "frozen_no_input_grad"):
            model.requires_grad_(False)
        if variant in ("frozen_no_input_grad", "autograd_grad_params"):
            x = x.detach()
        if variant == "embedding":
            x = torch.tensor([[0, 2, 4], [1, 1, 3]])  # indices: doubled by a replacing pre-hook, still < 10
        return {"model": model, "x": x, "variant": variant, "recorders": []}

    def attach(self, world: dict[str, Any], hook: Callable[..., Any]) -> Callable[[], None]:
        world["recorders"].append(hook)
        if self.kind.startswith("global_backward"):
            world.setdefault("global_flag", getattr(nn.modules.module, _FLAG, None))
        targets = {"child_replaced": "linear", "module_list": "layers"}
        target = getattr(world["model"], targets.get(world["variant"], ""), world["model"])
        return _MODULE_REGISTER[self.kind](target, hook).remove

    def deep_copy(self, world: dict[str, Any]) -> dict[str, Any]:
        return {**world, "model": copy.deepcopy(world["model"])}

    def _forward(self, world: dict[str, Any]) -> Any:
        model, x, variant = world["model"], world["x"], world["variant"]
        if variant == "keyword_argument":
            return model(x, scale=2.0)
        if variant == "non_tensor_argument":
            return model(x, "tag")
        if variant == "called_twice_in_one_pass":
            return model(model(x))
        if variant == "inference_mode":
            with torch.inference_mode():
                return model(x)
        if variant == "autocast_bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return model(x)
        if variant in ("checkpoint", "checkpoint_reentrant"):
            from torch.utils.checkpoint import checkpoint

            return checkpoint(model, x, use_reentrant=variant == "checkpoint_reentrant")
        if variant == "functional_call":
            return torch.func.functional_call(model, dict(model.named_parameters()), (x,))
        if variant == "jit_trace":
            for recorder in world["recorders"]:
                recorder.muted = True
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    traced = torch.jit.trace(model, (x,), check_trace=False)
            finally:
                for recorder in world["recorders"]:
                    recorder.muted = False
            return traced(x)
        if variant == "cast_float64":
            model.to(torch.float64)
            x = world["x"] = x.detach().double().requires_grad_(x.requires_grad)
        if variant == "child_replaced":
            with torch.random.fork_rng():
                torch.manual_seed(1)
                model.linear = nn.Linear(3, 3)
        if variant == "gru_cell_loop":
            h = torch.zeros(2, 3)
            for _ in range(3):
                h = model(x, h)
            return h
        if variant == "loaded":
            with torch.random.fork_rng():
                torch.manual_seed(1)
                other = _Toy()
            model.load_state_dict(other.state_dict())
        return model(x)

    def trigger(self, world: dict[str, Any]) -> Any:
        model, x, variant = world["model"], world["x"], world["variant"]
        if variant == "func_grad":
            params = {k: v.detach() for k, v in model.named_parameters()}

            def loss(inp: torch.Tensor) -> torch.Tensor:
                return torch.func.functional_call(model, params, (inp,)).sum()

            return torch.func.grad(loss)(x.detach())
        out = self._forward(world)
        # Forward kinds need no backward, except under checkpointing, whose backward re-runs forward.
        if not self.backward and not variant.startswith("checkpoint"):
            return out
        tensors = _tensors_in(out)
        if not tensors:
            return out
        loss = sum(t.float().sum() for t in tensors)
        if variant == "autograd_grad_params":
            return torch.autograd.grad(loss, list(model.parameters()))
        x = world["x"]  # cast_float64 replaced it
        x.grad = None
        for p in model.parameters():
            p.grad = None
        if variant == "backward_twice":
            loss.backward(retain_graph=True)
        loss.backward(create_graph=variant == "create_graph")
        if not self.backward:
            return out
        grads = x.grad, next(model.parameters()).grad  # _Toy's first parameter is linear.weight
        if variant == "create_graph":
            # A .grad made with create_graph=True holds a graph that refers back to its leaf (a reference cycle
            # that would keep the module and its hooks alive): keep detached copies and clear the .grad fields.
            grads = tuple(None if g is None else g.detach() for g in grads)
            x.grad = None
            for p in model.parameters():
                p.grad = None
        return grads

    def passthrough(self, args: tuple[Any, ...]) -> Any:
        return None

    def replacement(self, args: tuple[Any, ...]) -> Any:
        # Forward kinds return their value times 2, which keeps the graph, as a learner's replacement does
        # (a fresh zeros_like(output) has no graph, and backward through it fails under checkpointing).
        if self.kind.endswith("forward_pre"):
            return _doubled_all(args[1])
        if self.kind.endswith("forward"):
            return _doubled_all(args[2])
        if self.kind.endswith("backward_pre"):
            return _zeros_like_all(args[1])
        return _zeros_like_all(args[1])  # backward, backward_legacy: a replacement grad_input


@dataclass
class _TensorRig(Rig):
    """``tensor``, ``post_accumulate_grad``, ``node_pre``, ``node`` and ``multi_grad`` on a tiny graph."""

    def build(self, variant: str = "plain") -> dict[str, Any]:
        w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        v = torch.tensor([4.0, 5.0, 6.0], requires_grad=True)
        y = w * v * w if variant == "leaf_used_twice" else w * v
        world = {"w": w, "v": v, "y": y, "loss": y.sum(), "variant": variant}
        if variant.startswith("reloaded"):  # w is a module's parameter, reloaded before the graph is built
            world["holder"] = holder = nn.Module()
            holder.w = nn.Parameter(w.detach().clone())
            world["w"] = holder.w
        return world

    def attach(self, world: dict[str, Any], hook: Callable[..., Any]) -> Callable[[], None]:
        w, v, y = world["w"], world["v"], world["y"]
        if self.kind == "tensor":
            return w.register_hook(hook).remove
        if self.kind == "post_accumulate_grad":
            return w.register_post_accumulate_grad_hook(hook).remove
        if self.kind == "node_pre":
            return y.grad_fn.register_prehook(hook).remove
        if self.kind == "node":
            return y.grad_fn.register_hook(hook).remove
        return torch.autograd.graph.register_multi_grad_hook((w, v), hook).remove

    def deep_copy(self, world: dict[str, Any]) -> dict[str, Any]:
        w = copy.deepcopy(world["w"])
        y = w * world["v"]
        return {**world, "w": w, "y": y, "loss": y.sum()}

    def trigger(self, world: dict[str, Any]) -> Any:
        w, v = world["w"], world["v"]
        if world.get("variant", "").startswith("reloaded"):
            holder = world["holder"]
            holder.load_state_dict({"w": torch.tensor([7.0, 8.0, 9.0])}, assign=world["variant"] == "reloaded_assign")
            holder.w.grad = v.grad = None
            (holder.w * v).sum().backward()
            return holder.w.grad, v.grad
        w.grad = v.grad = None
        world["loss"].backward(retain_graph=True)
        return w.grad, v.grad

    def replacement(self, args: tuple[Any, ...]) -> Any:
        if self.kind == "node":
            return _zeros_like_all(args[0])
        return _zeros_like_all(args[0])


@dataclass
class _StateDictRig(Rig):
    """Module ``state_dict`` / ``load_state_dict`` hooks on ``Sequential(Linear(3, 2))``."""

    def build(self, variant: str = "plain") -> dict[str, Any]:
        with torch.random.fork_rng():
            torch.manual_seed(0)
            model = nn.Sequential(nn.Linear(3, 2))
            source = nn.Sequential(nn.Linear(3, 2))
        return {"model": model, "saved": source.state_dict()}

    def attach(self, world: dict[str, Any], hook: Callable[..., Any]) -> Callable[[], None]:
        model = world["model"]
        register = {
            "state_dict_pre": model.register_state_dict_pre_hook,
            "state_dict_post": model.register_state_dict_post_hook,
            "load_state_dict_pre": model.register_load_state_dict_pre_hook,
            "load_state_dict_post": model.register_load_state_dict_post_hook,
        }[self.kind]
        return register(hook).remove

    def deep_copy(self, world: dict[str, Any]) -> dict[str, Any]:
        return {**world, "model": copy.deepcopy(world["model"])}

    def trigger(self, world: dict[str, Any]) -> Any:
        model = world["model"]
        if self.kind.startswith("load"):
            result = model.load_state_dict(world["saved"])
            return model[0].weight, tuple(result.missing_keys), tuple(result.unexpected_keys)
        return tuple(model.state_dict())

    def replacement(self, args: tuple[Any, ...]) -> Any:
        if self.kind == "state_dict_post":
            return {"replaced": torch.zeros(1)}
        if self.kind == "load_state_dict_pre":
            return {}
        if self.kind == "load_state_dict_post":
            return "replaced"
        return "replaced"


@dataclass
class _RegistrationRig(Rig):
    """Global module / parameter / buffer registration hooks on an empty ``nn.Module``."""

    def build(self, variant: str = "plain") -> dict[str, Any]:
        return {"holder": nn.Module(), "child": nn.Identity(), "param": nn.Parameter(torch.zeros(2)),
                "buffer": torch.zeros(2)}

    def attach(self, world: dict[str, Any], hook: Callable[..., Any]) -> Callable[[], None]:
        register = {
            "global_module_registration": nn.modules.module.register_module_module_registration_hook,
            "global_parameter_registration": nn.modules.module.register_module_parameter_registration_hook,
            "global_buffer_registration": nn.modules.module.register_module_buffer_registration_hook,
        }[self.kind]
        return register(hook).remove

    def deep_copy(self, world: dict[str, Any]) -> dict[str, Any]:
        return {**world, "holder": copy.deepcopy(world["holder"])}

    def trigger(self, world: dict[str, Any]) -> Any:
        holder = world["holder"]
        if self.kind == "global_module_registration":
            holder.add_module("child", world["child"])
            return type(holder.child).__name__
        if self.kind == "global_parameter_registration":
            holder.register_parameter("param", world["param"])
            return summarize(holder.param)
        holder.register_buffer("buffer", world["buffer"])
        return summarize(holder.buffer)

    def replacement(self, args: tuple[Any, ...]) -> Any:
        if self.kind == "global_module_registration":
            return nn.Tanh()
        if self.kind == "global_parameter_registration":
            return nn.Parameter(torch.zeros(5))
        return torch.zeros(7)


@dataclass
class _SavedTensorsRig(Rig):
    """``saved_tensors`` (pack hook under study) and ``saved_tensors_on_cpu`` (its pack hook wrapped)."""

    handle: bool = False

    def build(self, variant: str = "plain") -> dict[str, Any]:
        w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        return {"w": w, "contexts": []}

    def attach(self, world: dict[str, Any], hook: Callable[..., Any]) -> Callable[[], None]:
        if self.kind == "saved_tensors":
            manager = torch.autograd.graph.saved_tensors_hooks(hook, lambda packed: packed)
        else:
            manager = torch.autograd.graph.save_on_cpu()
            original = manager.pack_hook

            def pack(tensor: torch.Tensor) -> Any:
                hook(tensor)
                return original(tensor)

            manager.pack_hook = pack
        world["contexts"].append(manager)
        return lambda: world["contexts"].remove(manager) if manager in world["contexts"] else None

    def deep_copy(self, world: dict[str, Any]) -> dict[str, Any]:
        return {**world, "w": copy.deepcopy(world["w"])}

    def trigger(self, world: dict[str, Any]) -> Any:
        w = world["w"]
        with contextlib.ExitStack() as stack:
            for manager in list(world["contexts"]):
                stack.enter_context(manager)
            loss = (w * w).sum()
        w.grad = None
        loss.backward()
        return w.grad

    def passthrough(self, args: tuple[Any, ...]) -> Any:
        return args[0]

    def replacement(self, args: tuple[Any, ...]) -> Any:
        return torch.zeros_like(args[0])


@dataclass
class _OptimizerRig(Rig):
    """Optimizer step / state_dict hooks (one optimizer or every optimizer) on ``SGD([p], lr=0.1)``."""

    def build(self, variant: str = "plain") -> dict[str, Any]:
        p = nn.Parameter(torch.tensor([1.0, 2.0]))
        optimizer = torch.optim.SGD([p], lr=0.1)
        saved = copy.deepcopy(optimizer.state_dict())
        saved["param_groups"][0]["lr"] = 0.5
        return {"p": p, "optimizer": optimizer, "saved": saved}

    def attach(self, world: dict[str, Any], hook: Callable[..., Any]) -> Callable[[], None]:
        import torch.optim.optimizer as optimizer_hooks

        optimizer = world["optimizer"]
        register = {
            "optimizer_step_pre": optimizer.register_step_pre_hook,
            "optimizer_step_post": optimizer.register_step_post_hook,
            "optimizer_state_dict_pre": optimizer.register_state_dict_pre_hook,
            "optimizer_state_dict_post": optimizer.register_state_dict_post_hook,
            "optimizer_load_state_dict_pre": optimizer.register_load_state_dict_pre_hook,
            "optimizer_load_state_dict_post": optimizer.register_load_state_dict_post_hook,
            "global_optimizer_step_pre": optimizer_hooks.register_optimizer_step_pre_hook,
            "global_optimizer_step_post": optimizer_hooks.register_optimizer_step_post_hook,
        }[self.kind]
        return register(hook).remove

    def deep_copy(self, world: dict[str, Any]) -> dict[str, Any]:
        return {**world, "optimizer": copy.deepcopy(world["optimizer"])}

    def trigger(self, world: dict[str, Any]) -> Any:
        optimizer = world["optimizer"]
        if "step" in self.kind:
            param = optimizer.param_groups[0]["params"][0]
            param.grad = torch.ones_like(param)
            returned = optimizer.step(lambda: torch.tensor(7.0))
            return param, returned
        if "load" in self.kind:
            optimizer.load_state_dict(world["saved"])
            return optimizer.param_groups[0]["lr"]
        return tuple(optimizer.state_dict())

    def replacement(self, args: tuple[Any, ...]) -> Any:
        if "step_pre" in self.kind:
            return (args[1][:1], {})  # step()'s args start with the optimizer itself; drop the closure
        if self.kind == "optimizer_state_dict_post":
            return {"replaced": 1}
        if self.kind == "optimizer_load_state_dict_pre":
            changed = copy.deepcopy(args[1])
            changed["param_groups"][0]["lr"] = 0.25
            return changed
        return "replaced"


@dataclass
class _DDPRig(Rig):
    """DDP's comm hook, on a one-process ``gloo`` group with an in-memory store (nothing networked)."""

    handle: bool = False

    def build(self, variant: str = "plain") -> dict[str, Any]:
        import torch.distributed as dist

        with torch.random.fork_rng():
            torch.manual_seed(0)
            module = nn.Linear(3, 2)
        started = False
        if not dist.is_initialized():
            dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
            started = True
        world = {"started": started, "recorders": []}
        try:
            world["ddp"] = nn.parallel.DistributedDataParallel(module)
        except BaseException:
            if started:
                dist.destroy_process_group()
            raise
        return world

    def attach(self, world: dict[str, Any], hook: Callable[..., Any]) -> Callable[[], None]:
        import torch.distributed as dist

        def comm_hook(state, bucket):  # type: ignore[no-untyped-def]  # DDP checks names and annotations
            return hook(state, bucket)

        comm_hook.__annotations__ = {"state": object, "bucket": dist.GradBucket,
                                     "return": torch.futures.Future[torch.Tensor]}

        world["ddp"].register_comm_hook(None, comm_hook)
        return lambda: None

    def deep_copy(self, world: dict[str, Any]) -> dict[str, Any]:
        return {**world, "ddp": copy.deepcopy(world["ddp"])}

    def trigger(self, world: dict[str, Any]) -> Any:
        ddp = world["ddp"]
        ddp.zero_grad(set_to_none=True)
        ddp(torch.ones(2, 3)).sum().backward()
        return ddp.module.weight.grad

    def passthrough(self, args: tuple[Any, ...]) -> Any:
        future: torch.futures.Future = torch.futures.Future()
        future.set_result(args[1].buffer())
        return future

    def replacement(self, args: tuple[Any, ...]) -> Any:
        future: torch.futures.Future = torch.futures.Future()
        future.set_result(torch.zeros_like(args[1].buffer()))
        return future

    @staticmethod
    def finish(world: dict[str, Any]) -> None:
        """Destroy the process group the rig started (and only that one)."""
        import torch.distributed as dist

        if world.get("started") and dist.is_initialized():
            dist.destroy_process_group()


def rig_for(kind: str) -> Rig | None:
    """The rig that probes ``kind`` (``None`` for ``saved_tensors_disabled``, probed by its own situations)."""
    hook_kind(kind)  # a clear error for unknown names
    if kind in _MODULE_REGISTER:
        result = "the gradients (x.grad, weight.grad)" if "backward" in kind else "the module's output"
        return _ModuleRig(kind, result=result, backward="backward" in kind)
    if kind in ("tensor", "post_accumulate_grad", "node_pre", "node", "multi_grad"):
        return _TensorRig(kind, result="the leaves' .grad", copyable=kind in ("tensor", "post_accumulate_grad"))
    if kind in ("state_dict_pre", "state_dict_post"):
        return _StateDictRig(kind, result="the state_dict keys")
    if kind in ("load_state_dict_pre", "load_state_dict_post"):
        return _StateDictRig(kind, result="the loaded weights and missing / unexpected keys")
    if kind.endswith("_registration"):
        return _RegistrationRig(kind, result="what the module holds", copyable=False)
    if kind in ("saved_tensors", "saved_tensors_on_cpu"):
        return _SavedTensorsRig(kind, result="the leaf's .grad", returns=kind == "saved_tensors")
    if kind.startswith(("optimizer_", "global_optimizer_")):
        what = "the parameter and step()'s return" if "step" in kind else (
            "the lr that was loaded" if "load" in kind else "the state_dict keys")
        return _OptimizerRig(kind, result=what)
    if kind == "ddp_comm":
        return _DDPRig(kind, result="the gradient DDP writes", copyable=False)
    return None


# ---------------------------------------------------------------------------------------------- situations
@dataclass(frozen=True)
class Situation:
    """One setting a hook is probed in: ``category`` (one of :data:`CATEGORIES`), a short name, the question."""

    category: str
    name: str
    question: str
    variant: str = "plain"
    applies: Callable[[Rig], bool] = field(default=lambda rig: True, compare=False, repr=False)


def _with_handle(rig: Rig) -> bool:
    return rig.handle


def _copyable(rig: Rig) -> bool:
    return rig.copyable


def _module(rig: Rig) -> bool:
    return rig.module_rig


def _graph(rig: Rig) -> bool:
    return isinstance(rig, _TensorRig)


def _leaf(rig: Rig) -> bool:
    return rig.kind in ("tensor", "post_accumulate_grad")


GENERIC_SITUATIONS: tuple[Situation, ...] = (
    Situation("shapes", "plain", "the plain case: one trigger"),
    Situation("repetition", "triggered_twice", "the trigger runs twice"),
    Situation("repetition", "registered_twice", "the same function is registered twice"),
    Situation("timing", "removed_inside", "the hook removes itself on its first call; the trigger runs twice",
              applies=_with_handle),
    Situation("timing", "removed_inside_before_another", "the hook removes itself on its first call, and another "
              "hook of the same kind is registered after it", applies=_with_handle),
    Situation("timing", "removed_by_earlier_hook", "an earlier hook of the same kind removes this one during "
              "the trigger", applies=_with_handle),
    Situation("timing", "added_by_earlier_hook", "an earlier hook of the same kind registers this one during "
              "the trigger", applies=_with_handle),
    Situation("failure", "hook_raises", "the hook raises ValueError on its first call; the trigger runs again"),
    Situation("lifecycle", "deepcopy", "the hooked object is copy.deepcopy'd and the copy is triggered",
              applies=_copyable),
    Situation("context", "no_grad", "the whole trigger runs under torch.no_grad()"),
    Situation("variations", "leaf_used_twice", "the leaf w is used twice in the graph: y = w * v * w",
              variant="leaf_used_twice", applies=_graph),
    Situation("variations", "reloaded_in_place", "the hooked leaf is a module's parameter, then "
              "module.load_state_dict(...) (copies in place) before the graph is built",
              variant="reloaded_in_place", applies=_leaf),
    Situation("variations", "reloaded_assign", "the hooked leaf is a module's parameter, then "
              "module.load_state_dict(..., assign=True) before the graph is built",
              variant="reloaded_assign", applies=_leaf),
) + tuple(
    Situation(category, name, question, variant=name, applies=_module)
    for category, name, question in MODULE_VARIANTS
)


def situations(rig: Rig | None = None) -> list[Situation]:
    """The situations that apply to ``rig`` (all of them when ``rig`` is ``None``)."""
    if rig is not None and not isinstance(rig, Rig):
        raise TypeError(tr(f"situations: rig must be a Rig (rig_for(kind) makes one) or None, not {shown(rig)}"))
    return [s for s in GENERIC_SITUATIONS if rig is None or s.applies(rig)]


_UNSET = object()
_FLAG = "_global_is_full_backward_hook"


def _restore_global_backward_flag(saved: Any) -> None:
    """Put back PyTorch's global full/legacy backward flag when no global backward hook is left.

    PyTorch remembers which of the two global backward kinds was used last, even after the hook is
    removed, and then refuses the other kind for the rest of the process (notebook 05). A probe of
    one of them must not change what the learner's process may register afterwards.
    """
    if saved is _UNSET:
        return
    module_hooks = nn.modules.module
    if not hook_kind("global_backward").hooks_of() and not hook_kind("global_backward_legacy").hooks_of():
        setattr(module_hooks, _FLAG, saved)


def _run_situation(rig: Rig, situation: Situation, study: _Recorder) -> tuple[Any, str]:
    """Run one situation with ``study`` as the hook under study; return (fingerprint, error type or "")."""
    world = rig.build(situation.variant)
    removers: list[Callable[[], None]] = []
    error = ""
    result: Any = None
    try:
        name = situation.name
        target_world = world
        if name in ("removed_by_earlier_hook", "added_by_earlier_hook"):
            earlier = _Recorder(rig.passthrough)
            earlier.muted = True
            removers.append(rig.attach(world, earlier))
            if name == "removed_by_earlier_hook":
                remove_study = rig.attach(world, study)
                removers.append(remove_study)
                earlier.before = remove_study
            else:
                earlier.before = lambda: removers.append(rig.attach(world, study))
        else:
            removers.append(rig.attach(world, study))
        if name == "registered_twice":
            removers.append(rig.attach(world, study))
        if name in ("removed_inside", "removed_inside_before_another"):
            study.before = removers[-1]
        if name == "removed_inside_before_another":
            follower = _Recorder(rig.passthrough)
            follower.muted = True
            removers.append(rig.attach(world, follower))
        if name == "hook_raises":
            def fail() -> None:
                raise ValueError("raised by the hook")

            study.before = fail
        if name == "deepcopy":
            target_world = rig.deep_copy(world)
        runs = 2 if name in ("triggered_twice", "removed_inside", "removed_inside_before_another", "hook_raises") else 1
    except Exception as exc:  # noqa: BLE001 - registering itself failed: that is the finding
        error, runs = type(exc).__name__, 0
    try:
        results = []
        failure = situation.category == "failure"  # only failures record what the trigger left behind
        buffers_before = [b.clone() for b in _leaves_and_buffers(target_world)[1]] if failure else []
        for run in range(runs):
            try:
                with torch.no_grad() if name == "no_grad" else contextlib.nullcontext():
                    results.append(_fingerprint(rig.trigger(target_world)))
            except Exception as exc:  # noqa: BLE001 - the atlas records what the trigger raised
                error = error or type(exc).__name__
                results.append(("raised", type(exc).__name__))
            if run == 0 and failure:
                study.left = _state_left(target_world, buffers_before)
        result = tuple(results)
    finally:
        for remove in reversed(removers):
            remove()
        _restore_global_backward_flag(world.get("global_flag", _UNSET))
        if isinstance(rig, _DDPRig):
            rig.finish(world)
    return result, error


@dataclass(frozen=True)
class Entry:
    """One cell of the atlas: how ``kind`` behaved in ``situation`` (of ``category``) under torch ``torch``.

    ``fires``: the hook ran at least once; ``calls``: how many times; ``receives``: what its first call
    received (types and shapes); ``returns``: what returning a replacement changed (``"nothing"``,
    ``"<what>"`` or ``"error: <Type>"``; ``"-"`` where the kind takes no return); ``error``: the type of
    the exception the trigger raised with a recording hook (``""`` when none); ``runs_in``: where its first
    call ran, the thread (the caller's or another) and the grad mode (``"caller thread, grad off"``);
    ``left``: in the ``failure`` category, what the failed trigger left behind (how many leaves got a
    ``.grad``, how many buffers changed; ``"-"`` elsewhere).
    """

    kind: str
    category: str
    situation: str
    question: str
    fires: bool
    calls: int
    receives: str
    returns: str
    error: str
    torch: str
    runs_in: str = NOT_APPLICABLE
    left: str = NOT_APPLICABLE

    @property
    def key(self) -> tuple[str, str]:
        """(kind, situation): the entry's identity, the same in every torch version."""
        return self.kind, self.situation

    def outcome(self) -> tuple[bool, int, str, str, str, str, str]:
        """What was measured (the fields a version diff compares)."""
        return self.fires, self.calls, self.receives, self.returns, self.error, self.runs_in, self.left


def probe(kind: str, situation: Situation) -> Entry:
    """Run ``situation`` for ``kind`` twice (recording hook, then replacing hook) and return the entry."""
    rig = rig_for(kind)
    if rig is None:
        raise ValueError(f"{kind!r} has no rig; its entries come from run_atlas()")
    if not isinstance(situation, Situation):
        raise TypeError(
            f"probe: situation must be a Situation, not {situation!r}; pick one of "
            f"hookviz.atlas.situations(hookviz.atlas.rig_for({kind!r})) (each has a .name)"
        )
    study = _Recorder(rig.passthrough)
    result, error = _run_situation(rig, situation, study)
    returns = NOT_APPLICABLE
    if rig.returns and study.calls:
        replacing = _Recorder(rig.replacement)
        replaced, replaced_error = _run_situation(rig, situation, replacing)
        if replaced_error and replaced_error != error:
            returns = f"error: {replaced_error}"
        elif replaced == result:
            returns = "nothing"
        else:
            returns = rig.result
    return Entry(
        kind=kind,
        category=situation.category,
        situation=situation.name,
        question=situation.question,
        fires=bool(study.calls),
        calls=len(study.calls),
        receives=study.calls[0] if study.calls else NOT_APPLICABLE,
        returns=returns,
        error=error,
        torch=torch_version(),
        runs_in=study.runs_in,
        left=study.left,
    )


def _disabled_entries() -> list[Entry]:
    """``saved_tensors_disabled``: the block is the "hook"; it fires when registering inside it raises."""

    def registering_raises(setup: Callable[[], contextlib.AbstractContextManager[Any]]) -> tuple[bool, str]:
        try:
            with setup():
                pass
        except RuntimeError as exc:
            return True, type(exc).__name__
        return False, ""

    disable = torch.autograd.graph.disable_saved_tensors_hooks
    plain_hooks = lambda: torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)  # noqa: E731
    checks: list[tuple[str, str, str, Callable[[], tuple[bool, str]]]] = []

    def inside(make: Callable[[], Any]) -> Callable[[], tuple[bool, str]]:
        def run() -> tuple[bool, str]:
            with disable("saved tensor hooks are off here"):
                return registering_raises(make)

        return run

    def after_block() -> tuple[bool, str]:
        with disable("off"):
            pass
        return registering_raises(plain_hooks)

    def nested_inner_exit() -> tuple[bool, str]:
        with disable("outer"):
            with disable("inner"):
                pass
            return registering_raises(plain_hooks)

    def after_exception() -> tuple[bool, str]:
        try:
            with disable("off"):
                raise ValueError("inside the block")
        except ValueError:
            pass
        return registering_raises(plain_hooks)

    def already_active() -> tuple[bool, str]:
        with plain_hooks():
            try:
                with disable("off"):
                    pass
            except RuntimeError as exc:
                return True, type(exc).__name__
        return False, ""

    checks = [
        ("shapes", "plain", "saved_tensors_hooks is entered inside the block", inside(plain_hooks)),
        ("context", "save_on_cpu_inside", "save_on_cpu is entered inside the block",
         inside(torch.autograd.graph.save_on_cpu)),
        ("timing", "after_block", "saved_tensors_hooks is entered after the block ended", after_block),
        ("repetition", "nested_inner_exit", "blocks nested; saved_tensors_hooks entered after the inner one ended "
         "(inside the outer)", nested_inner_exit),
        ("failure", "after_exception", "an exception left the block; saved_tensors_hooks is entered afterwards",
         after_exception),
        ("lifecycle", "while_hooks_active", "the block is entered while saved_tensors_hooks are active",
         already_active),
    ]
    entries = []
    for category, name, question, check in checks:
        raised, error = check()
        entries.append(Entry("saved_tensors_disabled", category, name, question, raised, int(raised),
                             NOT_APPLICABLE, NOT_APPLICABLE, error, torch_version()))
    return entries


def run_atlas(kinds: list[str] | None = None) -> list[Entry]:
    """Probe every hook kind (or the ``kinds`` named) in every situation that applies; return the entries.

    Deprecation warnings raised by the probes are swallowed (the atlas records behaviour, not warnings).
    """
    if isinstance(kinds, str):
        kinds = [kinds]  # one kind's name, as run_atlas("forward")
    if kinds is not None and not isinstance(kinds, (list, tuple)):
        raise TypeError(f"run_atlas: kinds must be a list of hook kind names (or None for all), not {kinds!r}")
    names = list(HOOK_KINDS) if kinds is None else list(kinds)
    for name in names:
        hook_kind(name)
    entries: list[Entry] = []
    with warnings.catch_warnings(), torch.random.fork_rng():
        warnings.simplefilter("ignore")
        for name in names:
            rig = rig_for(name)
            if rig is None:
                entries.extend(_disabled_entries())
                continue
            entries.extend(probe(name, situation) for situation in situations(rig))
    return entries


# ---------------------------------------------------------------------------------------------- teaching
_N01, _N02, _N03, _N04 = "01_tensor_hooks", "02_forward_hooks", "03_forward_pre_hooks", "04_backward_hooks"
_N05, _N07, _N09 = "05_lifetime_and_global_hooks", "07_autograd_hooks", "09_hooks_in_production"
_N10, _N13, _N00 = "10_faq", "13_hooks_in_training_loops", "00_start_here"
_NO_GRAD = f"{_N05}#eval-no-grad"

#: Where the course teaches an entry: (kind, situation) -> "notebook#anchor" (the notebook without
#: ``.ipynb``). Only sections that show that very situation are listed; the ``plain`` entry of a kind
#: links to the section that introduces the kind.
TAUGHT: dict[tuple[str, str], str] = {
    ("tensor", "plain"): f"{_N01}#return-replaces",
    ("tensor", "removed_inside"): f"{_N01}#remove-timing",
    ("tensor", "deepcopy"): f"{_N10}#faq-copy-tensor-hooks",
    ("post_accumulate_grad", "plain"): f"{_N01}#post-accumulate-return",
    ("forward_pre", "plain"): f"{_N03}#return-new-args",
    ("forward_pre", "keyword_argument"): f"{_N03}#with-kwargs",
    ("forward_pre", "registered_twice"): f"{_N05}#rerun-stacks",
    ("forward_pre", "hook_raises"): f"{_N05}#hook-raises",
    ("forward_pre", "jit_trace"): f"{_N09}#trace-hooks",
    ("forward_pre", "functional_call"): f"{_N13}#functional-call",
    ("forward_pre", "func_grad"): f"{_N13}#func-what-works",
    ("forward", "plain"): f"{_N02}#replace-output",
    ("forward", "tuple_output"): f"{_N02}#tuple-output",
    ("forward", "keyword_argument"): f"{_N02}#with-kwargs",
    ("forward", "forward_raises"): f"{_N02}#always-call",
    ("forward", "called_twice_in_one_pass"): f"{_N02}#twice-or-never",
    ("forward", "registered_twice"): f"{_N05}#rerun-stacks",
    ("forward", "hook_raises"): f"{_N05}#hook-stays",
    ("forward", "deepcopy"): f"{_N10}#faq-copy",
    ("forward", "jit_trace"): f"{_N09}#trace-hooks",
    ("forward", "checkpoint"): f"{_N13}#checkpoint-per-layer",
    ("forward", "checkpoint_reentrant"): f"{_N13}#checkpoint-per-layer",
    ("forward", "functional_call"): f"{_N13}#functional-call",
    ("forward", "func_grad"): f"{_N13}#func-what-works",
    ("backward_pre", "plain"): f"{_N00}#map-full_backward_pre",
    ("backward_pre", "jit_trace"): f"{_N09}#trace-backward-pre-hook",
    ("backward_pre", "func_grad"): f"{_N13}#func-grad",
    ("backward", "plain"): f"{_N04}#what-can-change",
    ("backward", "removed_inside"): f"{_N04}#when-effective",
    ("backward", "frozen"): f"{_N13}#frozen",
    ("backward", "frozen_no_input_grad"): f"{_N13}#frozen-silent",
    ("backward", "func_grad"): f"{_N13}#func-grad",
    ("backward", "autograd_grad_params"): f"{_N13}#autograd-grad",
    ("backward", "jit_trace"): f"{_N09}#trace-refuses-backward-hooks",
    ("backward_legacy", "plain"): f"{_N04}#legacy-grad-input",
    ("backward_legacy", "jit_trace"): f"{_N09}#trace-refuses-backward-hooks",
    ("state_dict_pre", "plain"): f"{_N07}#state-dict-export",
    ("state_dict_post", "plain"): f"{_N07}#state-dict-export",
    ("load_state_dict_pre", "plain"): f"{_N07}#load-pre-hook",
    ("load_state_dict_post", "plain"): f"{_N07}#state-dict-load",
    ("global_forward_pre", "plain"): f"{_N05}#global-every-model",
    ("global_forward", "plain"): f"{_N05}#global-every-model",
    ("global_backward_pre", "plain"): f"{_N00}#map-global-forward-backward",
    ("global_backward", "plain"): f"{_N00}#map-global-forward-backward",
    ("global_backward_legacy", "plain"): f"{_N05}#pitfall-global-backward-flag",
    ("global_module_registration", "plain"): f"{_N05}#registration-hooks",
    ("global_parameter_registration", "plain"): f"{_N05}#registration-hooks",
    ("global_buffer_registration", "plain"): f"{_N05}#registration-hooks",
    ("node_pre", "plain"): f"{_N07}#node-hooks-return",
    ("node", "plain"): f"{_N07}#node-hooks-return",
    ("multi_grad", "plain"): f"{_N07}#multi-grad-hook",
    ("saved_tensors", "plain"): f"{_N07}#saved-bf16",
    ("saved_tensors_on_cpu", "plain"): f"{_N07}#save-on-cpu",
    ("optimizer_step_pre", "plain"): f"{_N07}#optimizer-hooks",
    ("optimizer_step_post", "plain"): f"{_N07}#optimizer-hooks",
    ("optimizer_state_dict_pre", "plain"): f"{_N07}#optimizer-shallow-copy",
    ("optimizer_state_dict_post", "plain"): f"{_N07}#optimizer-shallow-copy",
    ("optimizer_load_state_dict_pre", "plain"): f"{_N07}#optimizer-shallow-copy",
    ("optimizer_load_state_dict_post", "plain"): f"{_N07}#optimizer-shallow-copy",
    ("global_optimizer_step_pre", "plain"): f"{_N07}#optimizer-global-hooks",
    ("global_optimizer_step_post", "plain"): f"{_N07}#optimizer-global-hooks",
    ("ddp_comm", "plain"): f"{_N09}#ddp-same-gradients",
    ("forward", "lstm"): f"{_N02}#tuple-output",
    ("forward", "module_list"): "11_mistakes_clinic#mistake-17",
}
for _kind in ("forward_pre", "forward", "backward_pre", "backward", "backward_legacy"):
    for _situation in ("no_grad", "eval", "inference_mode"):
        TAUGHT[(_kind, _situation)] = _NO_GRAD


#: The entries that notebook 16 (the atlas itself) teaches in its own proving sections.
TAUGHT_HERE: dict[tuple[str, str], str] = {
    ("optimizer_step_post", "removed_inside_before_another"): "16_hook_atlas#remove-inside-a-hook",
    ("optimizer_step_pre", "removed_inside_before_another"): "16_hook_atlas#remove-inside-a-hook",
    ("state_dict_pre", "removed_inside_before_another"): "16_hook_atlas#remove-inside-a-hook",
    ("forward", "removed_inside_before_another"): "16_hook_atlas#remove-inside-a-hook",
    ("optimizer_step_pre", "deepcopy"): "16_hook_atlas#optimizer-deepcopy",
    ("optimizer_step_post", "deepcopy"): "16_hook_atlas#optimizer-deepcopy",
    ("backward", "dict_output"): "16_hook_atlas#dict-output-backward",
    ("backward_pre", "dict_output"): "16_hook_atlas#dict-output-backward",
}


def teaching_links(extra: dict[tuple[str, str], str] | None = None) -> dict[tuple[str, str], str]:
    """:data:`TAUGHT` and :data:`TAUGHT_HERE` as ``{(kind, situation): "NN_name.ipynb#anchor"}``, plus ``extra``.

    An entry that an earlier notebook teaches keeps that link; notebook 16's own sections fill in the rest.
    """
    if extra is not None and not isinstance(extra, dict):
        raise TypeError(
            f"teaching_links: extra must be a dict {{(kind, situation): 'notebook.ipynb#anchor'}} (or None), "
            f"not {type(extra).__name__}"
        )
    links = {key: "{}.ipynb#{}".format(*target.split("#")) for key, target in TAUGHT.items()}
    links.update({key: "{}.ipynb#{}".format(*target.split("#")) for key, target in TAUGHT_HERE.items()
                  if key not in TAUGHT})
    for key, link in (extra or {}).items():
        if not (isinstance(key, tuple) and len(key) == 2 and all(isinstance(k, str) for k in key)):
            raise TypeError(tr(f"teaching_links: extra's keys must be (kind, situation) pairs of strings, "
                               f"such as ('forward', 'plain'), not {shown(key)}"))
        if not isinstance(link, str):
            raise TypeError(tr(f"teaching_links: extra[{key!r}] must be a link 'notebook.ipynb#anchor', "
                               f"not {shown(link)}"))
    links.update(extra or {})
    return links


# ---------------------------------------------------------------------------------------------- snapshots
def entries_by_key(entries: list[Entry]) -> dict[tuple[str, str], Entry]:
    """The entries keyed by (kind, situation)."""
    if not isinstance(entries, (list, tuple)) or not all(isinstance(e, Entry) for e in entries):
        raise TypeError(tr(f"entries_by_key: entries must be a list of Entry (what load_snapshot(version) or "
                           f"run_atlas() returns), not {shown(entries)}"))
    return {e.key: e for e in entries}


def _directory(directory: Any, who: str, *, existing: bool = True) -> Path:
    """``directory`` as a :class:`~pathlib.Path` (a ``str`` or any path-like, ``~`` expanded); with ``existing``, a
    folder that is there. A clear error naming ``directory`` otherwise."""
    if not isinstance(directory, (str, os.PathLike)) or not str(directory).strip():
        raise TypeError(tr(
            f"{who}: directory must be a folder path (a str or a pathlib.Path), not {directory!r}; "
            "leave it out for the atlases that ship with hookviz"
        ))
    path = Path(directory).expanduser()
    try:
        found = path.is_dir()
        there = found or path.exists()
    except OSError as error:  # a name too long for the file system, ...
        raise ValueError(tr(f"{who}: directory {str(directory)[:80]!r} cannot be a folder: {error.strerror}")) from None
    if not existing and there and not found:
        raise FileExistsError(tr(f"{who}: directory {str(directory)[:200]} is a file, not a folder"))
    if existing and not found:
        what = "is a file, not a folder" if there else "does not exist"
        raise FileNotFoundError(tr(
            f"{who}: directory {str(directory)[:200]} {what}; leave it out for the atlases that ship with hookviz"
        ))
    return path


def write_snapshot(entries: list[Entry], directory: Path = SNAPSHOT_DIR) -> Path:
    """Store ``entries`` as ``atlas-torch-<version>.json`` (one entry per line); return the path."""
    directory = _directory(directory, "write_snapshot", existing=False)
    if not isinstance(entries, list) or not all(isinstance(e, Entry) for e in entries):
        raise TypeError(tr(
            "write_snapshot: entries must be a list of Entry (what run_atlas() returns), not "
            f"{type(entries).__name__}"
        ))
    releases = sorted({e.torch for e in entries})
    if len(releases) > 1:
        raise ValueError(tr(
            f"write_snapshot: entries must come from one torch release (one run_atlas()), not from {releases}"
        ))
    version = entries[0].torch if entries else torch_version()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"atlas-torch-{version}.json"
    lines = ",\n".join(json.dumps(asdict(e), ensure_ascii=False) for e in entries)
    path.write_text(f"[\n{lines}\n]\n", encoding="utf-8")
    _stored_versions_cached.cache_clear()
    return path


def _check_version(version: Any, who: str, directory: Path) -> str:
    """``version`` when it is a version string; a clear ``TypeError`` naming the stored versions otherwise."""
    if not isinstance(version, str):
        stored = stored_versions(directory)
        example = stored[-1] if stored else torch_version()
        hint = closest_hint(str(version), stored) if isinstance(version, (int, float)) else ""
        raise TypeError(
            f"{who}: version must be a torch version string such as {example!r}, not {version!r}{hint}; "
            f"stored: {stored} (hookviz.atlas.torch_version() is the running one)"
        )
    version = version.strip()
    if not re.fullmatch(r"\d{1,4}\.\d{1,4}(\.\d{1,4})?([a-z0-9.+]{0,40})", version):
        stored = stored_versions(directory)
        raise ValueError(tr(
            f"{who}: no stored atlas for torch {version[:80]!r}: that is not a torch version such as "
            f"'2.13.0'{closest_hint(version[:80], stored)}; stored: {stored}"
        ))
    return version


def load_snapshot(version: str, directory: Path = SNAPSHOT_DIR) -> list[Entry]:
    """The stored atlas of torch ``version``; a clear error naming the stored versions when there is none."""
    directory = _directory(directory, "load_snapshot")
    version = _check_version(version, "load_snapshot", directory)
    path = directory / f"atlas-torch-{version}.json"
    if not path.exists():
        stored = sorted(p.stem.removeprefix("atlas-torch-") for p in directory.glob("atlas-torch-*.json"))
        where = "" if directory == SNAPSHOT_DIR else f" in the folder {directory}"
        raise FileNotFoundError(
            f"no stored atlas for torch {version!r}{where}{closest_hint(version, stored)}; stored: {stored}. "
            "Run hookviz.atlas.write_snapshot(hookviz.atlas.run_atlas()) under that torch to add one"
        )
    try:
        return [Entry(**row) for row in json.loads(path.read_text(encoding="utf-8"))]
    except (ValueError, TypeError) as error:  # not JSON, or not the atlas's entries
        raise ValueError(tr(
            f"load_snapshot: {path} is not a stored atlas ({type(error).__name__}: {str(error)[:120]}); write it "
            "again with hookviz.atlas.write_snapshot(hookviz.atlas.run_atlas()), or pass another directory"
        )) from None


def stored_versions(directory: Path = SNAPSHOT_DIR) -> list[str]:
    """The torch versions with a stored atlas, oldest first."""
    directory = _directory(directory, "stored_versions")
    names = [p.stem.removeprefix("atlas-torch-") for p in directory.glob("atlas-torch-*.json")]
    return sorted(names, key=lambda v: tuple(int(part) for part in v.split(".") if part.isdigit()))


def stored_version_for(version: str, directory: Path = SNAPSHOT_DIR) -> str | None:
    """The stored atlas to compare ``version`` with: its own, else its minor release's, else ``None``.

    Every patch release of a minor release is expected to behave as the stored one (``2.12.0`` as ``2.12.1``).
    """
    directory = _directory(directory, "stored_version_for")
    version = _check_version(version, "stored_version_for", directory).split("+")[0]  # a malformed one is refused
    stored = stored_versions(directory)
    if version in stored:
        return version
    same_minor = [v for v in stored if v.split(".")[:2] == version.split(".")[:2]]
    return same_minor[-1] if same_minor else None


def diff_atlases(old: list[Entry], new: list[Entry]) -> list[tuple[Entry | None, Entry | None]]:
    """The entries whose outcome differs between two atlases (or exist in only one), as (old, new) pairs."""
    for name, entries in (("old", old), ("new", new)):
        if not isinstance(entries, list) or not all(isinstance(e, Entry) for e in entries):
            raise TypeError(
                f"diff_atlases: {name} must be a list of Entry (what load_snapshot(version) or run_atlas() returns), "
                f"not {type(entries).__name__}"
            )
    before, after = entries_by_key(old), entries_by_key(new)
    pairs = []
    for key in list(before) + [k for k in after if k not in before]:
        a, b = before.get(key), after.get(key)
        if a is None or b is None or a.outcome() != b.outcome():
            pairs.append((a, b))
    return pairs


@functools.lru_cache(maxsize=8)
def _stored_versions_cached(directory: Path) -> tuple[str, ...]:
    """:func:`stored_versions`, read once per folder (a table cell asks for it on every render and search)."""
    return tuple(stored_versions(directory))


def version_span(versions: list[str], directory: Path = SNAPSHOT_DIR) -> str:
    """``versions`` for a table cell: a run of consecutive stored versions as ``2.8.0–2.14.1``, others listed."""
    if not isinstance(versions, (list, tuple)) or not all(isinstance(v, str) for v in versions):
        raise TypeError(tr(
            f"version_span: versions must be a list of version strings such as ['2.8.0', '2.9.1'], not {versions!r}"
        ))
    stored = list(_stored_versions_cached(_directory(directory, "version_span")))
    if len(versions) > 2 and all(v in stored for v in versions):
        first, last = stored.index(versions[0]), stored.index(versions[-1])
        if stored[first : last + 1] == list(versions):
            return f"{versions[0]}–{versions[-1]}"
    return ", ".join(versions)


def merge_versions(atlases: dict[str, list[Entry]]) -> list[tuple[Entry, list[str]]]:
    """One row per distinct outcome: each entry with the versions it was measured on, in key order.

    An entry that behaves the same in every version gives one row listing them all; one that changed
    gives a row per outcome.
    """
    if not isinstance(atlases, dict):
        raise TypeError(
            f"merge_versions needs a dict {{version: entries}}, not {type(atlases).__name__}; e.g. "
            "merge_versions({v: load_snapshot(v) for v in stored_versions()})"
        )
    for version, entries in atlases.items():
        if not isinstance(entries, list) or not all(isinstance(e, Entry) for e in entries):
            raise TypeError(
                f"merge_versions: the value for {version!r} must be a list of Entry (what load_snapshot({version!r}) "
                f"or run_atlas() returns), not {type(entries).__name__}"
            )
    rows: list[tuple[Entry, list[str]]] = []
    index: dict[tuple[tuple[str, str], tuple[Any, ...]], int] = {}
    for version, entries in atlases.items():
        for entry in entries:
            identity = (entry.key, entry.outcome())
            if identity in index:
                rows[index[identity]][1].append(version)
            else:
                index[identity] = len(rows)
                rows.append((entry, [version]))
    order = {key: i for i, key in enumerate(dict.fromkeys(e.key for e, _ in rows))}
    return sorted(rows, key=lambda row: order[row[0].key])


# ---------------------------------------------------------------------------------------------- the table
COLUMNS = ("kind", "category", "situation", "fires", "calls", "receives", "runs in", "returns", "error", "left",
           "measured on", "taught in")


@dataclass
class AtlasTable:
    """The searchable atlas as plain state: rows, a text query and two filters (no widgets involved).

    ``rows`` are ``(entry, versions)`` pairs (:func:`merge_versions`); ``teaches`` maps
    ``(kind, situation)`` to the notebook section that teaches it
    (``"05_lifetime_and_global_hooks.ipynb#hook-raises"``). ``query`` matches any column,
    case-insensitively, all words; ``kind`` and ``category`` are ``"all"`` or one value. The
    constructor checks its arguments as :meth:`set` does: a typo in a filter is an error naming the
    closest values, never an empty table.
    """

    rows: list[tuple[Entry, list[str]]]
    teaches: dict[tuple[str, str], str] = field(default_factory=dict)
    query: str = ""
    kind: str = "all"
    category: str = "all"

    def __post_init__(self) -> None:
        self.rows = _check_rows(self.rows)
        if not isinstance(self.teaches, dict):
            raise TypeError(
                f"AtlasTable: teaches must be a dict {{(kind, situation): 'notebook.ipynb#anchor'}}, not "
                f"{type(self.teaches).__name__}; e.g. teaches=hookviz.atlas.teaching_links()"
            )
        query, kind, category = self.query, self.kind, self.category
        self.query, self.kind, self.category = "", "all", "all"
        self.set(query=query, kind=kind, category=category)  # the same checks as a later set()

    def kinds(self) -> list[str]:
        """The kinds present, in catalogue order, after ``"all"``."""
        present = {e.kind for e, _ in self.rows}
        return ["all"] + [k for k in HOOK_KINDS if k in present]

    def categories(self) -> list[str]:
        """The categories present, after ``"all"``."""
        present = {e.category for e, _ in self.rows}
        return ["all"] + [c for c in CATEGORIES if c in present]

    def link(self, entry: Entry) -> str:
        """The section that teaches ``entry`` (``""`` when no notebook does yet)."""
        return self.teaches.get(entry.key, "")

    def cells(self, entry: Entry, versions: list[str]) -> list[str]:
        """One row's cells as text, in :data:`COLUMNS` order."""
        return [entry.kind, entry.category, entry.situation, "yes" if entry.fires else "no", str(entry.calls),
                entry.receives, entry.runs_in, entry.returns, entry.error or NOT_APPLICABLE, entry.left,
                version_span(versions), self.link(entry)]

    def shown_cells(self, entry: Entry, versions: list[str], language: str | None = None) -> list[str]:
        """:meth:`cells` as a learner reads them in ``language`` (default: the current one): yes/no, the
        categories and what a replacement changed translated; kinds, situations, types and links as written."""
        return [_shown_cell(i, cell, language) for i, cell in enumerate(self.cells(entry, versions))]

    def set(self, *, query: str | None = None, kind: str | None = None, category: str | None = None) -> None:
        """Change the filters (``None`` keeps one as it is); an unknown kind or category is a clear ``ValueError``.

        Every argument is checked before any filter changes: a refused call leaves the table as it was.
        """
        if query is not None and not isinstance(query, str):
            raise TypeError(f"query must be a string (the words to search for), not {query!r}; e.g. query='deepcopy'")
        if kind is not None:
            if not isinstance(kind, str):
                raise TypeError(
                    f"kind must be a hook kind's name (a string such as 'forward') or 'all', not {kind!r}; "
                    "the kinds present are table.kinds()"
                )
            if kind not in self.kinds():
                raise ValueError(f"kind={kind!r} is not in the atlas{closest_hint(kind, self.kinds())}")
        if category is not None:
            if not isinstance(category, str):
                raise TypeError(f"category must be one of {self.categories()} (a string), not {category!r}")
            if category not in self.categories():
                hint = closest_hint(category, self.categories())
                raise ValueError(f"category={category!r} is not one of {self.categories()}{hint}")
        if kind is not None:
            self.kind = kind
        if category is not None:
            self.category = category
        if query is not None:
            self.query = query

    def visible(self) -> list[tuple[Entry, list[str]]]:
        """The rows the filters let through."""
        words = self.query.lower().split()
        shown = []
        for entry, versions in self.rows:
            if self.kind != "all" and entry.kind != self.kind:
                continue
            if self.category != "all" and entry.category != self.category:
                continue
            text = " ".join([*self.cells(entry, versions), entry.question]).lower()
            if get_language() != "en":  # the words the learner reads in the table match too
                text += " " + " ".join([*self.shown_cells(entry, versions), tr(entry.question)]).lower()
            if all(word in text for word in words):
                shown.append((entry, versions))
        return shown

    def _link_html(self, target: str) -> str:
        if not target:
            return ""
        label = target.replace(".ipynb", "")
        return f'<a href="{html.escape(target)}" style="{LINK_STYLE}">{html.escape(label)}</a>'

    def to_html(self, limit: int | None = None) -> str:
        """The visible rows as an HTML table (the question as each situation's tooltip), in the current language."""
        limit = _check_limit(limit, "to_html")
        rows = self.visible()
        head = "".join(f"<th>{html.escape(_header(c, None))}</th>" for c in COLUMNS)
        body = []
        for entry, versions in rows[:limit]:
            cells = self.shown_cells(entry, versions)
            parts = [f"<td>{html.escape(c)}</td>" for c in cells[:-1]]
            parts[2] = f'<td title="{html.escape(tr(entry.question))}">{html.escape(entry.situation)}</td>'
            parts.append(f"<td>{self._link_html(cells[-1])}</td>")
            body.append("<tr>" + "".join(parts) + "</tr>")
        more = ""
        if limit is not None and len(rows) > limit:
            more = f"<p>{html.escape(_more_rows(len(rows) - limit, None))}</p>"
        # The table scrolls sideways inside its own box instead of being cut off at the notebook's right edge.
        count = html.escape(_rows_of(len(rows), len(self.rows), None))
        return (f"<p>{count}</p><div style=\"{TABLE_BOX_STYLE}\">"
                f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>{more}")

    def to_markdown(self) -> str:
        """The visible rows as a Markdown table (a static view for nbviewer or GitHub), in the current language."""
        lines = ["| " + " | ".join(_header(c, None) for c in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        for entry, versions in self.visible():
            cells = [c.replace("|", "\\|") for c in self.shown_cells(entry, versions)]
            if cells[-1]:
                cells[-1] = f"[{cells[-1].replace('.ipynb', '')}]({cells[-1]})"
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines)


# What a learner reads in the table, in their language (hookviz.i18n): the headers, yes/no, the categories, the
# counts, what a replacement changed and the tooltip questions. Kinds, situations, types, errors and links are
# identifiers and stay as written. The table's columns that are Entry fields keep the field's name after a
# translated header (a checker's hint says "read the fires column").
_FIELD_COLUMNS = ("kind", "category", "situation", "fires", "calls", "receives", "returns", "error")
#: The columns (by index in COLUMNS) whose cells are translated.
_TRANSLATED_CELLS = tuple(COLUMNS.index(c) for c in ("category", "fires", "runs in", "returns", "left"))


def _header(column: str, language: str | None) -> str:
    shown = translate(column, language or get_language())
    if shown == column or column not in _FIELD_COLUMNS:
        return shown
    return f"{shown}（{column}）"


def _shown_cell(index: int, cell: str, language: str | None) -> str:
    if index not in _TRANSLATED_CELLS or cell == NOT_APPLICABLE:
        return cell
    return translate(cell, language or get_language())


def _rows_of(shown: int, total: int, language: str | None) -> str:
    return translate(f"{shown} of {total} rows", language or get_language())


def _more_rows(count: int, language: str | None) -> str:
    return translate(f"… {count} more rows", language or get_language())


_HTML_ROW = re.compile(r"<tr>(.*?)</tr>", re.DOTALL)
_HTML_CELL = re.compile(r'<td( title="([^"]*)")?>(.*?)</td>', re.DOTALL)


def localise_html(page: str, language: str) -> str:
    """The HTML of an English :meth:`AtlasTable.to_html` (as a notebook stored it) as it shows in ``language``;
    any other HTML comes back unchanged (``scripts/make_zh.py`` uses it for the stored tables)."""
    header = "".join(f"<th>{c}</th>" for c in COLUMNS)
    found = re.fullmatch(r"<p>(\d+) of (\d+) rows</p>(<div [^>]*><table><thead><tr>)(.*?)(</tr></thead><tbody>)(.*)"
                         r"(</tbody></table></div>)(?:<p>… (\d+) more rows</p>)?", page, re.DOTALL)
    if found is None or found[4] != header:
        return page

    def row(match: re.Match[str]) -> str:
        cells = list(_HTML_CELL.finditer(match[1]))
        out, last = [], 0
        for index, cell in enumerate(cells):
            text = cell[3] if index == len(COLUMNS) - 1 else html.escape(
                _shown_cell(index, html.unescape(cell[3]), language))
            title = "" if cell[1] is None else f' title="{html.escape(translate(html.unescape(cell[2]), language))}"'
            out += [match[1][last : cell.start()], f"<td{title}>{text}</td>"]
            last = cell.end()
        return "<tr>" + "".join(out) + match[1][last:] + "</tr>"

    head = "".join(f"<th>{html.escape(_header(c, language))}</th>" for c in COLUMNS)
    more = "" if found[8] is None else f"<p>{html.escape(_more_rows(int(found[8]), language))}</p>"
    return (f"<p>{html.escape(_rows_of(int(found[1]), int(found[2]), language))}</p>{found[3]}{head}{found[5]}"
            f"{_HTML_ROW.sub(row, found[6])}{found[7]}{more}")


#: Links in the atlas table look like links (JupyterLab draws a widget's links black and without underline).
LINK_STYLE = "color:#1565c0;text-decoration:underline"
#: The table's box: as wide as the output area, scrolling sideways when the table is wider.
TABLE_BOX_STYLE = "max-width:100%;overflow-x:auto"


def _check_rows(rows: Any) -> list[tuple[Entry, list[str]]]:
    """``rows`` as a list of ``(entry, versions)`` pairs; a clear ``TypeError`` saying how to build them otherwise."""
    build = "build them with hookviz.atlas.merge_versions({version: entries})"
    if not isinstance(rows, (list, tuple)):
        raise TypeError(
            f"AtlasTable: rows must be a list of (entry, versions) pairs, not {type(rows).__name__}; {build}"
        )
    rows = list(rows)
    for row in rows:
        if isinstance(row, Entry):
            raise TypeError(
                "AtlasTable: rows must be (entry, versions) pairs, got Entry objects (what load_snapshot() and "
                f"run_atlas() return); {build}, e.g. AtlasTable(merge_versions({{{row.torch!r}: entries}}))"
            )
        if not (
            isinstance(row, tuple)
            and len(row) == 2
            and isinstance(row[0], Entry)
            and isinstance(row[1], (list, tuple))
            and all(isinstance(v, str) for v in row[1])
        ):
            raise TypeError(f"AtlasTable: rows must be (entry, versions) pairs, got {summarize(row)}; {build}")
    return rows


def _check_limit(limit: Any, who: str) -> int | None:
    """``limit`` as a number of rows (``None``: every row); a clear error for a negative number or a non-number."""
    if limit is None:
        return None
    try:
        if isinstance(limit, bool):
            raise TypeError
        value = operator.index(limit)
    except TypeError:
        raise TypeError(f"{who}: limit must be a whole number of rows (or None for every row), not {limit!r}") from None
    if value < 0:
        raise ValueError(f"{who}: limit must be 0 or more rows (or None for every row), not {value}")
    return value


class AtlasWidget:
    """The thin ipywidgets view over an :class:`AtlasTable`: a search box, two dropdowns and the HTML table.

    Every control only calls :meth:`AtlasTable.set` and re-renders :meth:`AtlasTable.to_html`, so a test
    can drive the view headless (set ``query.value``, read ``view.value``). Shown in a notebook, its
    plain-text form is one short line, so the stored output does not repeat the table. :meth:`close`
    closes every control; running the same notebook cell again closes the widget its earlier run made.
    """

    def __init__(self, table: AtlasTable, limit: int | None = 60) -> None:
        import ipywidgets as widgets

        from hookviz.widgets.common import previous_from_same_place

        if not isinstance(table, AtlasTable):
            raise TypeError(
                f"atlas_widget needs an AtlasTable, not {type(table).__name__}; e.g. "
                "atlas_widget(AtlasTable(merge_versions({v: load_snapshot(v) for v in stored_versions()})))"
            )
        self._closed = False
        self.table, self.limit = table, _check_limit(limit, "atlas_widget")
        self.query = widgets.Text(value=table.query, placeholder=tr("e.g. deepcopy forward"),
                                  description=tr("search"))
        self.kind = widgets.Dropdown(options=[(tr(k) if k == "all" else k, k) for k in table.kinds()],
                                     value=table.kind, description=tr("kind"))
        self.category = widgets.Dropdown(options=[(_category_option(c), c) for c in table.categories()],
                                         value=table.category, description=tr("category"))
        self.view = widgets.HTML(table.to_html(limit))
        for control in (self.query, self.kind, self.category):
            control.observe(self.refresh, names="value")
        self.box = widgets.VBox([widgets.HBox([self.query, self.kind, self.category]), self.view])
        self.box.add_class("hookviz-widget")  # hookviz's Chinese font as a fallback (labextension/style/index.css)
        previous = previous_from_same_place("AtlasWidget", self, outside_ipython=False)
        if previous is not None:  # the same notebook cell run again: its earlier widget is not shown any more
            previous.close()

    def refresh(self, _: Any = None) -> None:
        """Copy the controls into the table and re-render it."""
        if self._closed:
            return
        self.table.set(query=self.query.value, kind=self.kind.value, category=self.category.value)
        self.view.value = self.table.to_html(self.limit)

    def close(self) -> None:
        """Close the controls and the view (ipywidgets keeps every open widget) and stop observing them.

        Re-running the cell that made the widget closes the earlier one the same way. Safe to call twice.
        """
        if self._closed:
            return
        self._closed = True
        from hookviz.widgets.common import close_tree

        for control in (self.query, self.kind, self.category):
            control.unobserve(self.refresh, names="value")
        self.view.value = ""  # a closed widget kept in the notebook's output history holds no table
        close_tree(self.box)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    def __repr__(self) -> str:
        if self._closed:
            return "AtlasWidget(closed)"
        return (f"AtlasWidget({len(self.table.rows)} rows, query={self.table.query!r}, kind={self.table.kind!r}, "
                f"category={self.table.category!r})")

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """The live view and a one-line text; built by hookviz, so it works under ipywidgets 7 (Colab) and 8."""
        from hookviz.widgets.common import widget_bundle

        if self._closed:
            return {"text/plain": repr(self)}
        return widget_bundle(self.box, repr(self))


def _category_option(category: str) -> str:
    """A category as the dropdown shows it: ``生命周期（lifecycle）`` in Chinese (the value stays the name)."""
    shown = tr(category)
    return shown if shown == category or category == "all" else f"{shown}（{category}）"


def atlas_widget(table: AtlasTable, limit: int | None = 60) -> AtlasWidget:
    """The searchable view of ``table`` (:class:`AtlasWidget`), showing at most ``limit`` rows at a time."""
    return AtlasWidget(table, limit)


def iter_kinds(entries: list[Entry]) -> Iterator[str]:
    """The kinds the entries cover, in catalogue order."""
    present = {e.kind for e in entries}
    yield from (k for k in HOOK_KINDS if k in present)
