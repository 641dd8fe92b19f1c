"""The one place that owns hook lifetime during a diagnosis: wrap the hooks, run the model, put everything back.

:class:`Run` reads the hooks attached to the model (through :func:`hookviz.list_hooks`), swaps each of
them in its dict for a wrapper that records what it does, adds two global probes (through a
:class:`~hookviz.capture.HookGroup`) that count module calls, runs one forward and one backward pass,
and hands every stage to the rules of :mod:`hookviz.diagnose.rules`. Whatever happens, the hook dicts,
modes, parameters, buffers, gradients and the random number generator are put back in a ``finally``.
"""

from __future__ import annotations

import dataclasses
import importlib
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn.parameter import is_lazy

from hookviz.capture import HookGroup
from hookviz.catalogue import HookKind, hook_kind, kinds
from hookviz.diagnose import code
from hookviz.diagnose.report import DiagnosisError, Finding
from hookviz.diagnose.rules import RULES, Rule
from hookviz.hooks_table import library_owned, list_hooks, pytorch_owned

FLAG_DICTS = ("_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs", "_forward_hooks_always_called")
GLOBAL_FLAG_DICTS = ("_global_forward_hooks_always_called", "_global_forward_hooks_with_kwargs")
MODULE_KINDS = ("forward_pre", "forward", "backward_pre", "backward", "backward_legacy")
TENSOR_KINDS = ("tensor", "post_accumulate_grad")
GRADIENT_KINDS = ("backward_pre", "backward", "backward_legacy", "tensor", "post_accumulate_grad")
_GLOBALS = "torch.nn.modules.module"


def in_backward() -> bool:
    """True while the autograd engine runs a backward pass (a private function that torch 2.8 to 2.14 have)."""
    task = getattr(torch._C, "_current_graph_task_id", None)
    return task is not None and task() != -1


def output_tensors(value: Any, depth: int = 6) -> Iterator[Tensor]:
    """Every tensor in a model's output: tuples, lists, dicts, dataclasses and ``ModelOutput``-like objects."""
    if isinstance(value, Tensor):
        yield value
    elif depth <= 0 or value is None or isinstance(value, (str, bytes, int, float, bool)):
        return
    elif isinstance(value, Mapping):
        for item in list(value.values()):
            yield from output_tensors(item, depth - 1)
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from output_tensors(item, depth - 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from output_tensors(getattr(value, f.name, None), depth - 1)
    elif callable(getattr(value, "to_tuple", None)):
        yield from output_tensors(value.to_tuple(), depth - 1)


def default_loss(output: Any) -> Tensor | None:
    """The sum of every floating-point output that requires grad, or ``None`` when there is none."""
    parts = [
        t.float().sum()
        for t in output_tensors(output)
        if t.requires_grad and (t.is_floating_point() or t.is_complex()) and not t.is_nested
    ]
    parts = [p.real if p.is_complex() else p for p in parts]
    return torch.stack(parts).sum() if parts else None


# ---------------------------------------------------------------------------------------------- sites


@dataclass(eq=False)
class Site:
    """One user hook, wrapped for the run: where it lives, its kind, and what the run saw it do."""

    where: str
    kind: HookKind
    holder: Any
    hook_id: int
    hook: Callable[..., Any]
    flags: str
    module: nn.Module | None
    calls: int = 0
    calls_in_backward: int = 0

    @property
    def name(self) -> str:
        return code.name_of(self.hook)

    @property
    def pytorch_owned(self) -> bool:
        """A hook PyTorch's own utilities (prune, weight_norm, lazy modules ...) or another known library
        (``transformers``'s output capturing) attached: not the learner's code, never reported as a mistake."""
        return library_owned(self.hook)

    @property
    def role(self) -> str:
        """The kind without ``global_``: a global forward hook is checked like a forward hook."""
        return self.kind.name.removeprefix("global_")

    @property
    def is_global(self) -> bool:
        return self.kind.name.startswith("global_")

    @property
    def with_kwargs(self) -> bool:
        return "with_kwargs" in self.flags


@dataclass(eq=False)
class Call:
    """One call of a wrapped hook: its arguments, what it returned or raised, and the tensors it received."""

    site: Site
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    received: list[tuple[Tensor, int]] = field(default_factory=list)
    result: Any = None
    error: Exception | None = None
    neutralised: bool = False
    reported: bool = False

    def edited(self) -> list[Tensor]:
        """The tensors the hook received and edited in place (their version moved)."""
        return [t for t, version in self.received if t._version != version]

    def neutralise(self) -> None:
        """Ignore what the hook returned for the rest of the run (it is reported)."""
        self.result = None
        self.neutralised = True


def _received(site: Site, args: tuple[Any, ...]) -> list[Tensor]:
    role = site.role
    if role == "forward":
        value: Any = args[-1]
    elif role == "forward_pre" or role == "backward_pre":
        value = args[1] if len(args) > 1 else ()
    elif role in ("backward", "backward_legacy"):
        value = args[1:3]
    elif role in ("tensor", "post_accumulate_grad"):
        value = args[0] if args else ()
    else:
        return []
    return [t for t in output_tensors(value, 3) if not t.is_nested]


# ------------------------------------------------------------------------------------- model state


@dataclass
class State:
    """Everything the run could change on the model, to put back afterwards.

    Costs one copy of the parameters and buffers (taken up front: a hook or the forward may edit them in
    place); only parameters whose version moved are copied back. Lazy parameters not yet initialised
    are not copied: the run's forward initialises them, as the first forward of a training loop would.
    """

    modes: list[tuple[nn.Module, bool]]
    params: list[tuple[nn.Parameter, bool, Tensor | None, Tensor, int]]
    buffers: list[tuple[nn.Module, str, Tensor, Tensor]]
    rng: Tensor
    hook_dicts: list[tuple[dict[int, Any], list[tuple[int, Any]]]]
    backward_flags: list[tuple[Any, str, Any]]

    @classmethod
    def take(cls, model: nn.Module) -> State:
        params = [
            (p, p.requires_grad, p.grad, p.detach().clone(), p._version) for p in model.parameters() if not is_lazy(p)
        ]
        buffers = [
            (module, name, buffer, buffer.detach().clone())
            for module in model.modules()
            for name, buffer in module._buffers.items()
            if buffer is not None and not is_lazy(buffer)
        ]
        # the dicts the catalogue names (and the forward hooks' flag dicts): a hook that removes itself or
        # registers more hooks while it runs must not leave the model changed
        names = [k.storage_attr for k in kinds(target="module") if k.phase != "state_dict"] + list(FLAG_DICTS)
        names += [k.storage_attr for k in kinds(target="tensor")]
        # a lazy module not yet initialised removes its own hooks in the forward that initialises it: not put back
        modules = [m for m in model.modules() if not getattr(m, "has_uninitialized_params", lambda: False)()]
        holders: list[Any] = [*modules, *model.parameters()]
        hook_dicts = []
        for holder in holders:
            for name in dict.fromkeys(names):
                hooks = getattr(holder, name, None)
                if isinstance(hooks, dict):
                    hook_dicts.append((hooks, list(hooks.items())))
        globals_ = importlib.import_module(_GLOBALS)
        global_names = [k.storage_attr for k in kinds(target="global module") if k.phase != "registration"]
        for name in dict.fromkeys([*global_names, *GLOBAL_FLAG_DICTS]):
            hooks = getattr(globals_, name, None)
            if isinstance(hooks, dict):
                hook_dicts.append((hooks, list(hooks.items())))
        flag = "_global_is_full_backward_hook"
        flags: list[tuple[Any, str, Any]] = [
            (m, "_is_full_backward_hook", m._is_full_backward_hook) for m in model.modules()
        ]
        flags.append((globals_, flag, getattr(globals_, flag, None)))
        modes = [(m, m.training) for m in model.modules()]
        return cls(modes, params, buffers, torch.get_rng_state(), hook_dicts, flags)

    def clear_grads(self) -> None:
        for param, *_ in self.params:
            param.grad = None

    def restore(self) -> None:
        for module, training in self.modes:
            module.training = training
        with torch.no_grad():
            for param, requires_grad, grad, value, version in self.params:
                param.requires_grad_(requires_grad)
                if param._version != version:
                    param.copy_(value)
                param.grad = grad
            for module, name, buffer, value in self.buffers:
                module._buffers[name] = buffer
                buffer.copy_(value)  # batch norm updates its running statistics without bumping _version
        torch.set_rng_state(self.rng)
        for hooks, items in self.hook_dicts:
            if list(hooks.items()) != items:
                hooks.clear()
                hooks.update(items)
        for holder, attr, flag in self.backward_flags:
            setattr(holder, attr, flag)


# ------------------------------------------------------------------------------------------ the run


class Run:
    """One diagnosis: the sites, the probes, what they saw, and the findings the rules reported."""

    def __init__(self, model: nn.Module, *, loss_fn: Callable[[Any], Tensor] | None = None, scaler: Any = None,
                 rules: list[Rule] | None = None) -> None:  # fmt: skip
        self.model = model
        self.loss_fn = loss_fn
        self.scaler = scaler
        self.rules = RULES if rules is None else rules
        self.names = {id(m): (name or "<root>") for name, m in model.named_modules()}
        self.modules = {id(m): m for m in model.modules()}
        self.sites: list[Site] = []
        self.findings: list[Finding] = []
        self.forward_calls: dict[int, int] = {}
        self.backward_calls: dict[int, int] = {}
        self.last_backward_hooked: str | None = None
        self.warnings: list[str] = []
        self.output: Any = None
        self.forward_failed = False
        self.backward_failed = False
        self.no_backward: str | None = None  # why no backward pass ran: output-none, loss-fn, no-grad-output
        self.stored_before: dict[int, set[int]] = {}
        self.stored_after: dict[int, list[Tensor]] = {}
        self.notes: dict[str, Any] = {}  # what a rule keeps during the run (cleared with the run)
        self._thread = threading.get_ident()
        self._collect_sites()

    # ---- findings
    def report(self, rule: Rule, where: str, message: str, *, fix: str | None = None, link: str | None = None,
               severity: str | None = None) -> None:  # fmt: skip
        """Add a finding of ``rule`` (its fix, link and severity unless given); once per kind, place and link."""
        finding = Finding(rule.id, severity or rule.severity, where, message, fix or rule.fix, link or rule.link)
        if not any((f.kind, f.where, f.link) == (finding.kind, where, finding.link) for f in self.findings):
            self.findings.append(finding)

    def has_link(self, link: str) -> bool:
        return any(f.link == link for f in self.findings)

    # ---- sites
    def _collect_sites(self) -> None:
        table = list_hooks(self.model, include_global=True)
        by_where = {n or "<root>": m for n, m in self.model.named_modules()}
        params = {f"param:{n}": p for n, p in self.model.named_parameters()}
        self.global_rows = [row for row in table if row.where == "<global>"]
        owners = {
            f"param:{self.param_name(m, local)}": m
            for m in self.model.modules()
            for local, _ in m.named_parameters(recurse=False)
        }
        globals_ = importlib.import_module(_GLOBALS)
        for row in table:
            kind = hook_kind(row.kind)
            module: nn.Module | None
            if row.where == "<global>":
                if kind.name.removeprefix("global_") not in MODULE_KINDS:
                    continue
                holder: Any = globals_
                module = None
            elif kind.name in MODULE_KINDS:
                holder = by_where[row.where]
                module = holder
            elif kind.name in TENSOR_KINDS:
                holder = params[row.where]
                module = owners.get(row.where)
            else:
                continue
            hook = kind.hooks_of(holder)[row.hook_id]
            if row.where == "<global>" and (pytorch_owned(hook) or _ours(hook)):
                continue
            self.sites.append(Site(row.where, kind, holder, row.hook_id, hook, row.flags, module))
        self.full_backward_hooked = {id(s.holder) for s in self.sites if s.kind.name in ("backward", "backward_pre")}

    def param_name(self, module: nn.Module, local: str) -> str:
        prefix = self.names[id(module)]
        return local if prefix == "<root>" else f"{prefix}.{local}"

    def module_sites(self, module: nn.Module) -> list[Site]:
        return [s for s in self.sites if s.module is module and s.kind.name in MODULE_KINDS]

    # ---- wrapping
    def _wrapper(self, site: Site) -> Callable[..., Any]:
        run = self

        def diagnosed(*args: Any, **kwargs: Any) -> Any:
            site.calls += 1
            if in_backward():
                site.calls_in_backward += 1
            call = Call(site, args, kwargs)
            call.received = [(t, t._version) for t in _received(site, args)]
            for rule in run.rules:
                rule.before(run, call)
            try:
                call.result = site.hook(*args, **kwargs)
            except Exception as error:  # a user hook failed: report it, go on without it
                call.error = error
            for rule in run.rules:
                rule.call(run, call)
            return None if call.error is not None else call.result

        diagnosed.__qualname__ = site.name
        return diagnosed

    def install(self) -> None:
        for site in self.sites:
            getattr(site.holder, site.kind.storage_attr)[site.hook_id] = self._wrapper(site)

    def uninstall(self) -> None:
        for site in self.sites:
            hooks = getattr(site.holder, site.kind.storage_attr, None)
            if hooks is not None and site.hook_id in hooks:
                hooks[site.hook_id] = site.hook

    # ---- probes
    def _probe_pre(self, module: nn.Module, args: Any) -> None:
        key = id(module)
        if key not in self.modules:
            return
        backward = in_backward()
        if not backward and threading.get_ident() != self._thread:
            return  # another thread's forward
        calls = self.backward_calls if backward else self.forward_calls
        calls[key] = calls.get(key, 0) + 1

    def _probe_post(self, module: nn.Module, args: Any, output: Any) -> None:
        if id(module) in self.full_backward_hooked:
            self.last_backward_hooked = self.names[id(module)]

    # ---- stages
    def static(self) -> None:
        for rule in self.rules:
            rule.static(self)
        self.stored_before = {id(s): set(code.reachable_tensors(s.hook)) for s in self.sites}

    def run(self, args: tuple[Any, ...], kwargs: dict[str, Any], state: State) -> None:
        """The forward and backward pass with the probes on; the rules' checks before the state is restored."""
        state.clear_grads()
        with HookGroup() as probes, warnings.catch_warnings(record=True) as caught, torch.enable_grad():
            warnings.simplefilter("always")
            probes.register(None, "global_forward_pre", self._probe_pre)
            probes.register(None, "global_forward", self._probe_post)
            try:
                self.install()
                self.output = self._forward(args, kwargs)
                if not self.forward_failed:
                    self._backward()
            finally:
                self.uninstall()
        self.output = None  # the run keeps no tensor of the forward: its graph is freed now
        self.warnings = [str(w.message) for w in caught]
        if not self.forward_failed:
            for rule in self.rules:
                rule.after(self)

    def _forward(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            return self.model(*args, **kwargs)
        except Exception as error:
            for rule in self.rules:
                if rule.forward_failed(self, error):
                    self.forward_failed = True
                    return None
            raise DiagnosisError(
                f"the model's forward failed on the inputs you gave, so nothing could be diagnosed: "
                f"{type(error).__name__}: {error}. Run model(inputs) on its own first, and give diagnose() inputs "
                "of the shape, dtype and device it expects (a tuple for several positional arguments, a dict for "
                "keyword arguments)."
            ) from error

    def _backward(self) -> None:
        output = self.output
        if output is None:
            self.no_backward = "output-none"
            return
        if self.loss_fn is not None:
            try:
                loss = self.loss_fn(output)
            except Exception as error:
                raise DiagnosisError(
                    f"loss_fn failed on the model's output: {type(error).__name__}: {error}; give a function "
                    "that turns the output into a scalar tensor (or leave loss_fn out to sum the outputs)"
                ) from error
            if not isinstance(loss, Tensor) or loss.numel() != 1:
                raise DiagnosisError(
                    f"loss_fn must return a scalar tensor, got {type(loss).__name__}"
                    + (f" of shape {tuple(loss.shape)}" if isinstance(loss, Tensor) else "")
                )
            if not loss.requires_grad and default_loss(output) is not None:
                self.no_backward = "loss-fn"
                return
        else:
            loss = default_loss(output)
        if loss is None or not loss.requires_grad:
            self.no_backward = "no-grad-output"
            return
        try:
            loss.backward()
        except Exception as error:
            self.backward_failed = True
            for rule in self.rules:
                if rule.backward_failed(self, error):
                    break

    def stored(self) -> None:
        for rule in self.rules:
            rule.stored(self)
        self.stored_after.clear()  # the run keeps no tensor the hooks stored
        self.notes.clear()


def _ours(hook: Any) -> bool:
    """True for a hook that hookviz itself registered (a capture's or a widget's global hooks)."""
    function = code.function_of(hook)
    module = getattr(function, "__module__", None) or type(hook).__module__
    return isinstance(module, str) and module.startswith("hookviz.")
