"""The hook doctor: run a model once, forward and backward, and report the hook pitfalls it carries.

``diagnose(model, inputs)`` reads the hooks already attached to ``model`` (through the inspector,
:func:`hookviz.list_hooks`), wraps each of them for one run so that it can see whether it fires, how
often, what it returns and what it raises, adds two global probes (through a
:class:`~hookviz.capture.HookGroup`) that count every module call, and runs one forward and one
backward pass on the inputs you give. What it finds comes back as a :class:`Diagnosis`: a list of
:class:`Finding` (kind, severity, where, message, fix, link) that prints as a text table and shows as
an HTML table in a notebook; a clean model gives ``no findings``. Each link points at the clinic
section (``notebooks/11_mistakes_clinic.ipynb#mistake-NN``) or the notebook that teaches the pitfall.

The doctor leaves the model as it found it: the train/eval mode of every submodule, parameter values,
``requires_grad``, every ``.grad`` (the very same tensor objects), buffers, the random number generator
and every hook dict. Your hooks do run once (like in one training step), so what they append to your
own lists stays there. A hook that raises or returns something harmful is reported and then neutralised
for the rest of the run (its error is swallowed, its return value ignored), so that one run finds as
much as it can.

For the run, each hook's entry in the dict that :mod:`hookviz.catalogue` names is swapped for its
wrapper, and every hook dict of the model is put back as it was afterwards: the one place outside the
inspector that writes to those dicts, always undone in a ``finally``.

>>> import torch, hookviz
>>> print(hookviz.diagnose(torch.nn.Linear(2, 1), torch.randn(3, 2)))
no findings
"""

from __future__ import annotations

import html
import types
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

from hookviz.capture import HookGroup, iter_tensors
from hookviz.catalogue import HookKind, hook_kind, kinds
from hookviz.hooks_table import list_hooks
from hookviz.text import text_table

__all__ = ["CLINIC", "DETECTED", "NOT_DETECTABLE", "Diagnosis", "DiagnosisError", "Finding", "clinic", "diagnose"]

CLINIC = "notebooks/11_mistakes_clinic.ipynb"
SEVERITIES = ("error", "warning", "info")

_NOT_FIRING = "notebooks/10_faq.ipynb#faq-not-firing"
_FROZEN = "notebooks/13_hooks_in_training_loops.ipynb#frozen-silent"
_MEMORY = "notebooks/05_lifetime_and_global_hooks.ipynb#memory-detach"
_HOOK_RAISES = "notebooks/05_lifetime_and_global_hooks.ipynb#hook-raises"
_LEGACY = "notebooks/04_backward_hooks.ipynb#legacy-grad-input"
_COMPILED = "notebooks/10_faq.ipynb#faq-compile-late"
_IF_YOU_SEE = "notebooks/10_faq.ipynb#faq-if-you-see"

_FLAG_DICTS = ("_forward_pre_hooks_with_kwargs", "_forward_hooks_with_kwargs", "_forward_hooks_always_called")
_MODULE_KINDS = ("forward_pre", "forward", "backward_pre", "backward", "backward_legacy")
_TENSOR_KINDS = ("tensor", "post_accumulate_grad")
_GRADIENT_KINDS = ("backward_pre", "backward", "backward_legacy", "tensor", "post_accumulate_grad")


DETECTED = (1, 3, 4, 5, 6, 7, 8, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 26, 27, 28, 30, 31, 32, 33)
"""The clinic's mistakes (notebook 11) that a diagnosis finds, each planted and found by a test."""

NOT_DETECTABLE = {
    2: "the AttributeError is raised while registering, before anything is attached, and with an isinstance "
    "filter no hook is attached at all: a model without hooks carries no trace of it",
    9: "the AttributeError is raised while registering, on the wrong object (a module, a tensor or a tuple): "
    "nothing reaches the model for a run to find",
    12: "the model shows only the hooks still attached; whether you meant to remove one of them is in your code, "
    "not in the model (a hook attached twice is reported, as mistake 13)",
    25: "reverse order is PyTorch's normal backward order; pairing two lists in the wrong order happens in the code "
    "that reads them after the run, which the doctor does not see",
    29: "the failure appears only under torch.func transforms (grad, vmap); a plain forward and backward run works, "
    "and flagging every full backward hook would flag correct models",
    34: "prefill and decode steps exist only inside generate() with a KV cache, and the shape test fails only for a "
    "one-token prompt: one forward and backward on the given inputs has no decode step to tell apart",
    35: "a tensor hook on a parameter stops firing only when FSDP2 shards it across processes; the doctor runs the "
    "model in one process, where the same hook fires as it should",
    36: "recompiles happen only under torch.compile, over many calls; the doctor runs the model eagerly, and a hook "
    "that appends to a list or deque is correct eager code",
}
"""The clinic's mistakes a run of the model cannot reveal, and why."""


def clinic(number: int) -> str:
    """The link to the clinic's section for mistake ``number`` (``notebooks/11_mistakes_clinic.ipynb#mistake-07``)."""
    return f"{CLINIC}#mistake-{number:02d}"


class DiagnosisError(ValueError):
    """The diagnosis could not run: the message says why and how to fix it."""


@dataclass(frozen=True)
class Finding:
    """One pitfall the doctor found.

    Attributes:
        kind: a short name for the pitfall (``"hook-never-fires"``, ``"module-called-twice"`` ...).
        severity: ``"error"`` (will raise or corrupt), ``"warning"`` (silently wrong or missing
            numbers) or ``"info"`` (worth knowing).
        where: the module name (``"features.0"``, ``<root>`` for the model itself), ``param:<name>``
            for a parameter, ``<global>`` for global hooks, or ``backward`` for the backward pass.
        message: what will happen, in one or two sentences.
        fix: what to do instead.
        link: the clinic section or notebook that teaches it (a path relative to the course's root).
    """

    kind: str
    severity: str
    where: str
    message: str
    fix: str
    link: str

    @property
    def mistake(self) -> int | None:
        """The clinic's mistake number this finding is about, or ``None`` when it links elsewhere."""
        if self.link.startswith(f"{CLINIC}#mistake-"):
            return int(self.link.rsplit("-", 1)[1])
        return None


class Diagnosis(list[Finding]):
    """The findings of one diagnosis: a list that prints as a text table and shows as HTML in a notebook."""

    columns = ("#", "severity", "kind", "where", "see")

    def _cells(self) -> list[tuple[str, ...]]:
        return [(str(i), f.severity, f.kind, f.where, f.link) for i, f in enumerate(self, 1)]

    def __str__(self) -> str:
        if not self:
            return "no findings"
        details = [f"{i}. {f.message}\n   fix: {f.fix}" for i, f in enumerate(self, 1)]
        return text_table(self.columns, self._cells()) + "\n\n" + "\n".join(details)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        if not self:
            return "<p>no findings</p>"
        head = "".join(f"<th>{c}</th>" for c in ("#", "severity", "kind", "where", "what happens", "fix", "see"))
        rows = []
        for i, f in enumerate(self, 1):
            href = f.link.removeprefix("notebooks/")
            cells = (str(i), f.severity, f.kind, f.where, f.message, f.fix)
            link = f'<a href="{html.escape(href)}">{html.escape(f.link.rsplit("/", 1)[-1])}</a>'
            rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + f"<td>{link}</td></tr>")
        return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"

    def kinds(self) -> dict[str, int]:
        """How many findings of each kind."""
        result: dict[str, int] = {}
        for finding in self:
            result[finding.kind] = result.get(finding.kind, 0) + 1
        return result

    def mistakes(self) -> list[int]:
        """The clinic mistake numbers found, sorted, each once."""
        return sorted({f.mistake for f in self if f.mistake is not None})

    def at(self, where: str) -> Diagnosis:
        """The findings whose ``where`` names ``where`` (exactly, or as one of a comma-separated list)."""
        return Diagnosis(f for f in self if where in f.where.split(", "))


# ---------------------------------------------------------------------------------------------- sites


@dataclass(eq=False)
class _Site:
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
        target = getattr(self.hook, "func", self.hook)
        return getattr(target, "__qualname__", None) or type(target).__name__

    @property
    def with_kwargs(self) -> bool:
        return "with_kwargs" in self.flags


def _in_backward() -> bool:
    """True while the autograd engine runs a backward pass (a private function that torch 2.13 and 2.14 have)."""
    task = getattr(torch._C, "_current_graph_task_id", None)
    return task is not None and task() != -1


def _function_of(hook: Any) -> Any:
    """The plain function behind a hook (unwraps ``functools.partial`` and bound methods)."""
    target = getattr(hook, "func", hook)
    return getattr(target, "__func__", target)


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _attribute_names(hook: Any) -> set[str]:
    """Every global or attribute name the hook's code (and the code nested in it) uses."""
    code = getattr(_function_of(hook), "__code__", None)
    return {name for c in _codes(code) for name in c.co_names} if code is not None else set()


def _cells(hook: Any) -> tuple[Any, ...] | None:
    closure = getattr(_function_of(hook), "__closure__", None)
    return tuple(closure) if closure else None


def _same_behaviour(a: Any, b: Any) -> bool:
    """True when two hooks are the same function, or the same code closing over the very same variables."""
    if a is b:
        return True
    fa, fb = _function_of(a), _function_of(b)
    if getattr(a, "__self__", None) is not getattr(b, "__self__", None):
        return False
    if fa is fb:
        return True
    code_a, code_b = getattr(fa, "__code__", None), getattr(fb, "__code__", None)
    if code_a is None or code_a is not code_b:
        return False
    cells_a, cells_b = _cells(fa), _cells(fb)
    if cells_a is None or cells_b is None:
        return cells_a is cells_b
    return all(x is y for x, y in zip(cells_a, cells_b, strict=True))


# ------------------------------------------------------------------------------------ stored tensors

_WALK_LIMIT = 20_000


def _reachable_tensors(hook: Any) -> dict[int, Tensor]:
    """Tensors the hook can store into: inside its closure, its globals and its bound object (3 levels)."""
    function = _function_of(hook)
    roots: list[Any] = []
    owner = getattr(getattr(hook, "func", hook), "__self__", None)
    if owner is not None and not isinstance(owner, (nn.Module, type, types.ModuleType)):
        roots.append(getattr(owner, "__dict__", {}))
    roots += [c.cell_contents for c in (_cells(function) or ()) if _cell_is_set(c)]
    names = _attribute_names(function)
    namespace = getattr(function, "__globals__", {})
    roots += [namespace[name] for name in names if name in namespace]
    found: dict[int, Tensor] = {}
    seen: set[int] = set()

    def walk(value: Any, depth: int) -> None:
        if len(seen) > _WALK_LIMIT or id(value) in seen:
            return
        seen.add(id(value))
        if isinstance(value, Tensor):
            found[id(value)] = value
        elif depth > 0 and isinstance(value, dict):
            for item in list(value.values()):
                walk(item, depth - 1)
        elif depth > 0 and isinstance(value, (list, tuple, set)):
            for item in list(value):
                walk(item, depth - 1)

    for root in roots:
        walk(root, 3)
    return found


def _free_values(function: Any) -> Iterator[tuple[str, Any]]:
    """The current values of the variables a function reads from outside: its closure cells and its globals."""
    code = getattr(function, "__code__", None)
    if code is None:
        return
    for name, cell in zip(code.co_freevars, _cells(function) or (), strict=False):
        if _cell_is_set(cell):
            yield name, cell.cell_contents
    namespace = getattr(function, "__globals__", {})
    for name in code.co_names:
        if name in namespace:
            yield name, namespace[name]


def _cell_is_set(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises ValueError
    except ValueError:
        return False
    return True


# ------------------------------------------------------------------------------------- model state


@dataclass
class _State:
    """Everything the run could change on the model, to put back afterwards."""

    modes: list[tuple[nn.Module, bool]]
    params: list[tuple[nn.Parameter, bool, Tensor | None, Tensor, int]]
    buffers: list[tuple[nn.Module, str, Tensor, Tensor]]
    rng: Tensor
    hook_dicts: list[tuple[dict[int, Any], list[tuple[int, Any]]]]
    backward_flags: list[tuple[nn.Module, bool | None]]

    @classmethod
    def take(cls, model: nn.Module) -> _State:
        params = [(p, p.requires_grad, p.grad, p.detach().clone(), p._version) for p in model.parameters()]
        buffers = [
            (module, name, buffer, buffer.detach().clone())
            for module in model.modules()
            for name, buffer in module._buffers.items()
            if buffer is not None
        ]
        # the dicts the catalogue names (and the forward hooks' flag dicts): a hook that removes itself or
        # registers more hooks while it runs must not leave the model changed
        names = [k.storage_attr for k in kinds(target="module") if k.phase != "state_dict"] + list(_FLAG_DICTS)
        holders: list[Any] = [*model.modules(), *model.parameters()]
        names += [k.storage_attr for k in kinds(target="tensor")]
        hook_dicts = []
        for holder in holders:
            for name in dict.fromkeys(names):
                hooks = getattr(holder, name, None)
                if isinstance(hooks, dict):
                    hook_dicts.append((hooks, list(hooks.items())))
        flags = [(m, m._is_full_backward_hook) for m in model.modules()]
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
        for module, flag in self.backward_flags:
            module._is_full_backward_hook = flag


# ------------------------------------------------------------------------------------------- inputs


def _as_call(inputs: Any, kwargs: dict[str, Any] | None) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``inputs`` as the positional and keyword arguments of one call, with gradients kept off the caller's tensors."""
    if inputs is None:
        raise DiagnosisError(
            "diagnose() needs `inputs`, the arguments of one forward call: a tensor, a tuple of positional "
            "arguments or a dict of keyword arguments, e.g. hookviz.diagnose(model, torch.randn(8, 1, 8, 8))"
        )
    if isinstance(inputs, Tensor):
        args: tuple[Any, ...] = (inputs,)
        keywords: dict[str, Any] = {}
    elif isinstance(inputs, (tuple, list)):
        args, keywords = tuple(inputs), {}
    elif isinstance(inputs, dict):
        args, keywords = (), dict(inputs)
    else:
        hint = " (a NumPy array: torch.as_tensor(x) turns it into a tensor)" if hasattr(inputs, "__array__") else ""
        raise DiagnosisError(
            f"diagnose() got `inputs` of type {type(inputs).__name__}{hint}; give a tensor, a tuple of positional "
            "arguments or a dict of keyword arguments"
        )
    if kwargs is not None:
        if not isinstance(kwargs, dict):
            raise DiagnosisError(f"`kwargs` must be a dict of keyword arguments, got {type(kwargs).__name__}")
        keywords.update(kwargs)

    def private(value: Any) -> Any:
        # The run's backward must not touch the caller's tensors: a fresh leaf that needs grad where they do.
        if isinstance(value, Tensor) and value.requires_grad:
            return value.detach().requires_grad_(True)
        return value

    return tuple(private(a) for a in args), {k: private(v) for k, v in keywords.items()}


def _default_loss(output: Any) -> Tensor | None:
    """The sum of every floating-point output that requires grad, or ``None`` when there is none."""
    parts = [
        t.float().sum()
        for _, t in iter_tensors(output)
        if t.requires_grad and t.is_floating_point() and not t.is_nested
    ]
    return torch.stack(parts).sum() if parts else None


# ------------------------------------------------------------------------------------------ the run


class _Doctor:
    """One diagnosis: the sites, the probes, what they saw, and the findings."""

    def __init__(self, model: nn.Module) -> None:
        self.model = model
        self.names = {id(m): (name or "<root>") for name, m in model.named_modules()}
        self.modules = {id(m): m for m in model.modules()}
        self.sites: list[_Site] = []
        self.findings: list[Finding] = []
        self.forward_calls: dict[int, int] = {}
        self.backward_calls: dict[int, int] = {}
        self.last_backward_hooked: str | None = None
        self.warnings: list[str] = []
        self.no_backward = False
        self._collect_sites()

    # ---- findings
    def add(self, kind: str, severity: str, where: str, message: str, fix: str, link: str) -> None:
        finding = Finding(kind, severity, where, message, fix, link)
        if not any((f.kind, f.where, f.link) == (kind, where, link) for f in self.findings):
            self.findings.append(finding)

    def has_link(self, link: str) -> bool:
        return any(f.link == link for f in self.findings)

    # ---- sites
    def _collect_sites(self) -> None:
        table = list_hooks(self.model, include_global=True)
        by_where = {name: m for name, m in ((n or "<root>", m) for n, m in self.model.named_modules())}
        params = {f"param:{n}": p for n, p in self.model.named_parameters()}
        self.global_rows = [row for row in table if row.where == "<global>"]
        owners = {
            f"param:{self._param_name(m, local)}": m
            for m in self.model.modules()
            for local, _ in m.named_parameters(recurse=False)
        }
        for row in table:
            if row.where == "<global>":
                continue
            kind = hook_kind(row.kind)
            if kind.name in _MODULE_KINDS:
                holder = by_where[row.where]
                module: nn.Module | None = holder
            elif kind.name in _TENSOR_KINDS:
                holder = params[row.where]
                module = owners.get(row.where)
            else:
                continue
            hook = kind.hooks_of(holder)[row.hook_id]
            self.sites.append(_Site(row.where, kind, holder, row.hook_id, hook, row.flags, module))
        self.full_backward_hooked = {id(s.holder) for s in self.sites if s.kind.name in ("backward", "backward_pre")}

    def _param_name(self, module: nn.Module, local: str) -> str:
        prefix = self.names[id(module)]
        return local if prefix == "<root>" else f"{prefix}.{local}"

    # ---- checks that need no run
    def static_checks(self, scaler: Any) -> None:
        self._late_binding()
        self._duplicates()
        for site in self.sites:
            if site.kind.deprecated:
                self.add(
                    "legacy-backward-hook",
                    "warning",
                    site.where,
                    f"{site.name} is a legacy backward hook (register_backward_hook): it fires on the last autograd "
                    "node of the module's forward only, so grad_input can be the gradient of that one operation.",
                    "register_full_backward_hook, with the same signature",
                    _LEGACY,
                )
        global_legacy = [row for row in self.global_rows if row.kind == "global_backward_legacy"]
        if global_legacy:
            self.add(
                "legacy-backward-hook",
                "warning",
                "<global>",
                "a global legacy backward hook (register_module_backward_hook) sees the last autograd node of "
                "each module only.",
                "register_module_full_backward_hook",
                _LEGACY,
            )
        self._transformer_fast_paths()
        if scaler is not None and getattr(scaler, "is_enabled", lambda: False)():
            hooked = [s.where for s in self.sites if s.kind.name in _GRADIENT_KINDS]
            if hooked:
                self.add(
                    "scaled-gradients",
                    "warning",
                    ", ".join(dict.fromkeys(hooked)),
                    "under this GradScaler the gradient hooks here run during backward(), before unscale_: "
                    "they see gradients multiplied by the scale (65,536 at first); norms logged are that much "
                    "too big and clipping there is undone by unscaling.",
                    "call scaler.unscale_(optimizer) and clip with clip_grad_norm_ after backward(); log in an "
                    "optimizer step pre-hook",
                    clinic(27),
                )

    def _late_binding(self) -> None:
        groups: dict[tuple[str, int], list[_Site]] = {}
        for site in self.sites:
            code = getattr(_function_of(site.hook), "__code__", None)
            if code is not None:
                groups.setdefault((site.kind.name, id(code)), []).append(site)
        for (kind, _), sites in groups.items():
            distinct = [s for i, s in enumerate(sites) if all(s.hook is not t.hook for t in sites[:i])]
            if len({id(s.holder) for s in distinct}) < 2:
                continue
            function = _function_of(distinct[0].hook)
            variables = dict(_free_values(function))
            # a factory gives each hook its own cells: only variables that every hook shares can be stale
            shared_cells = all(_same_behaviour(distinct[0].hook, s.hook) for s in distinct[1:])
            if not shared_cells:
                variables = {n: v for n, v in variables.items() if n in function.__code__.co_names}
            # the loop ran over the model's modules: the variable now holds the name (or module) it ended on
            labels = set(self.names.values()) | {name.rsplit(".", 1)[-1] for name in self.names.values()}
            stale = [
                name
                for name, value in variables.items()
                if (isinstance(value, str) and value in labels) or id(value) in self.modules
            ]
            if not stale:
                continue
            value = variables[stale[0]]
            shown = repr(value) if isinstance(value, str) else self.names.get(id(value), type(value).__name__)
            self.add(
                "late-binding",
                "warning",
                ", ".join(s.where for s in distinct),
                f"the {kind} hooks {distinct[0].name} on these modules were made in a loop and read the loop "
                f"variable {stale[0]!r} when they run: every one of them sees its last value ({shown}), not the "
                "value of its own module.",
                "bind the value when the hook is made: a factory function, functools.partial or a default "
                "argument (name=name)",
                clinic(1),
            )

    def _duplicates(self) -> None:
        for i, site in enumerate(self.sites):
            for earlier in self.sites[:i]:
                same_place = earlier.holder is site.holder and earlier.kind is site.kind
                if same_place and _same_behaviour(earlier.hook, site.hook):
                    self.add(
                        "duplicate-hook",
                        "warning",
                        site.where,
                        f"the same {site.kind.name} hook {site.name} is attached more than once: it runs once per copy "
                        "(a cell run twice, or a registration inside the training loop).",
                        "register once, before the loop, keep the handle and remove it in a finally",
                        clinic(13),
                    )
                    break

    def _transformer_fast_paths(self) -> None:
        layers = [m for m in self.model.modules() if isinstance(m, nn.TransformerEncoderLayer)]
        forward_globals = [r for r in self.global_rows if r.kind in ("global_forward", "global_forward_pre")]
        if layers and forward_globals:
            self.add(
                "fast-path-hides-modules",
                "warning",
                ", ".join(self.names[id(m)] for m in layers),
                "in eval mode under torch.no_grad() these TransformerEncoderLayers can run as one fused kernel and "
                "call none of their submodules: your global forward hooks then see nothing inside them.",
                "register the hooks on the submodules you want (that keeps the layer off its fast path), or "
                "torch.backends.mha.set_fastpath_enabled(False) around the run",
                clinic(32),
            )
        for encoder in self.model.modules():
            if not isinstance(encoder, nn.TransformerEncoder) or not getattr(encoder, "use_nested_tensor", False):
                continue
            hooked = [
                s.where
                for s in self.sites
                if s.kind.name in ("forward", "forward_pre") and any(s.holder is layer for layer in encoder.layers)
            ]
            if hooked:
                self.add(
                    "nested-tensor-outputs",
                    "warning",
                    ", ".join(dict.fromkeys(hooked)),
                    "with a src_key_padding_mask, in eval mode under torch.no_grad(), this encoder packs the batch "
                    "into a nested tensor: these hooks then receive a NestedTensor, on which output.shape and "
                    "slicing fail.",
                    "pad it back in the hook (output.to_padded_tensor(0.0) when output.is_nested), or build the "
                    "encoder with enable_nested_tensor=False",
                    clinic(33),
                )

    # ---- wrapping
    def _wrapper(self, site: _Site) -> Callable[..., Any]:
        doctor = self

        def diagnosed(*args: Any, **kwargs: Any) -> Any:
            site.calls += 1
            if _in_backward():
                site.calls_in_backward += 1
            before = doctor._before(site, args)
            try:
                result = site.hook(*args, **kwargs)
            except Exception as error:  # a user hook failed: report it, go on without it
                doctor._raised(site, error, args)
                return None
            return doctor._after(site, args, result, before)

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

    def _before(self, site: _Site, args: tuple[Any, ...]) -> Any:
        name = site.kind.name
        if name == "forward":
            return [(t, t._version) for _, t in iter_tensors(args[-1]) if not t.is_nested]
        if name == "post_accumulate_grad":
            return args[0]._version
        if name in ("backward", "backward_pre", "backward_legacy") and "grad" in _attribute_names(site.hook):
            if site.module is not None and any(p.grad is None for p in site.module.parameters(recurse=False)):
                self.add(
                    "grad-read-too-early",
                    "warning",
                    site.where,
                    f"the backward hook {site.name} reads a `.grad`, but it runs before this step's parameter "
                    "gradients are accumulated: it sees None, zeros or last step's gradient.",
                    "register_post_accumulate_grad_hook on the parameter (it runs after .grad is written)",
                    clinic(18),
                )
        return None

    def _after(self, site: _Site, args: tuple[Any, ...], result: Any, before: Any) -> Any:
        name = site.kind.name
        if name == "forward":
            if any(t._version != v for t, v in before):
                self.add(
                    "output-edited-in-place",
                    "error",
                    site.where,
                    f"the forward hook {site.name} edits the module's output in place: when a layer saved that "
                    "output for backward (ReLU, Tanh, Sigmoid ...), backward() fails with 'modified by an "
                    "inplace operation'; elsewhere the edit silently changes what later hooks see.",
                    "return a new tensor (output * 2, output.clamp(...)) instead of editing in place",
                    clinic(15),
                )
            if result is None:
                return None
            return self._checked_replacement(site, args[-1], result)
        if name == "forward_pre" and isinstance(result, RemovableHandle):
            self._returns_handle(site)
            return None
        if name == "tensor" and result is not None:
            grad = args[0]
            if not isinstance(result, Tensor) or result.shape != grad.shape or result.dtype != grad.dtype:
                got = (
                    f"a tensor of shape {tuple(result.shape)} ({result.dtype})"
                    if isinstance(result, Tensor)
                    else f"a {type(result).__name__}"
                )
                self.add(
                    "bad-gradient-return",
                    "error",
                    site.where,
                    f"the tensor hook {site.name} returns {got} for a gradient of shape {tuple(grad.shape)} "
                    f"({grad.dtype}): what a tensor hook returns replaces the gradient, and backward() refuses another "
                    "size or type.",
                    "return None (compute summaries separately) or a tensor of the same shape and dtype",
                    clinic(21),
                )
                return None
        if name == "post_accumulate_grad" and args[0]._version != before:
            self.add(
                "hook-edits-parameter",
                "error",
                site.where,
                f"the post-accumulate-grad hook {site.name} edits the parameter itself in place: it receives the "
                "parameter, not its gradient, so the weights change and .grad does not.",
                "edit param.grad inside the hook (param.grad.mul_(0.5))",
                clinic(19),
            )
        return result

    def _returns_handle(self, site: _Site) -> None:
        self.add(
            "hook-returns-handle",
            "error",
            site.where,
            f"the hook {site.name} returns a RemovableHandle (a lambda returning output.register_hook(...)): "
            "what a forward hook returns replaces the output, so the next layer receives the handle.",
            "a def that registers the tensor hook and returns nothing",
            clinic(26),
        )

    def _checked_replacement(self, site: _Site, output: Any, result: Any) -> Any:
        if isinstance(result, RemovableHandle):
            self._returns_handle(site)
            return None
        if isinstance(output, (tuple, list)) and (not isinstance(result, (tuple, list)) or len(result) != len(output)):
            self.add(
                "hook-changes-structure",
                "error",
                site.where,
                f"the forward hook {site.name} returns {type(result).__name__} where the module returned a "
                f"{type(output).__name__} of {len(output)}: the returned value replaces the whole output, so the "
                "code after the module unpacks the wrong thing.",
                "return the same structure, changing only the entry you mean: (hidden * 2, *rest)",
                clinic(7),
            )
            return None
        old = [t for _, t in iter_tensors(output)]
        new = [t for _, t in iter_tensors(result)]
        if any(t.requires_grad for t in old) and new and not any(t.requires_grad for t in new):
            self.add(
                "hook-cuts-graph",
                "error",
                site.where,
                f"the forward hook {site.name} returns a tensor that needs no gradient (output.detach()?): it "
                "replaces the output, so no gradient flows back through this module and the layers before it "
                "stop learning.",
                "a hook that stores returns nothing: stored.append(output.detach()) without `return`",
                clinic(11),
            )
            return None
        return result

    def _raised(self, site: _Site, error: Exception, args: tuple[Any, ...]) -> None:
        text = str(error)
        phase = site.kind.phase
        link = _HOOK_RAISES
        if isinstance(error, (UnboundLocalError, NameError)):
            link = clinic(10)
        elif isinstance(error, TypeError) and ("positional argument" in text or "were given" in text):
            link = clinic(4) if site.with_kwargs else clinic(3)
        elif isinstance(error, AttributeError) and "'dict' object" in text and site.with_kwargs:
            link = clinic(4)
        elif isinstance(error, AttributeError) and "'tuple' object" in text and phase == "forward":
            link = clinic(5)
        elif isinstance(error, IndexError) and phase == "forward" and len(args) > 1 and args[1] == ():
            link = clinic(6)
        elif "NoneType" in text and site.kind.name in _MODULE_KINDS and "grad" in _attribute_names(site.hook):
            link = clinic(18) if phase == "backward" else clinic(8)
        elif "NoneType" in text:
            link = clinic(23) if phase == "backward" else clinic(8)
        elif "doesn't require gradient" in text:
            trainable = any(p.requires_grad for p in self.model.parameters())
            link = clinic(14) if trainable else clinic(28)
        fixes = {
            clinic(3): "use the signature of the kind you register: forward (module, args, output), pre-hook "
            "(module, args), full backward (module, grad_input, grad_output), tensor (grad)",
            clinic(4): "with with_kwargs=True: forward hook (module, args, kwargs, output), "
            "pre-hook (module, args, kwargs)",
            clinic(5): "the hook's input is the tuple of positional arguments: take args[0]",
            clinic(6): "the module was called with keywords only: register with with_kwargs=True and find the "
            "argument by name (inspect.signature(module.forward).bind(*args, **kwargs))",
            clinic(8): "an entry of a hook's tuple is None when there is nothing: skip None entries",
            clinic(10): "store into a dict or list the hook mutates, or declare nonlocal / global",
            clinic(14): "hook only the tensors and parameters that require grad",
            clinic(
                18
            ): "read parameter gradients in register_post_accumulate_grad_hook, which runs after .grad is written",
            clinic(23): "keep None entries of grad_input as None: "
            "tuple(None if g is None else g * s for g in grad_input)",
            clinic(28): "in the forward hook, output.requires_grad_(True) before output.register_hook (or give the "
            "input requires_grad=True)",
            _HOOK_RAISES: "run the hook on its own to see why; an exception in a hook stops the whole forward/backward",
        }
        self.add(
            "hook-raises",
            "error",
            site.where,
            f"the {site.kind.name} hook {site.name} raises {type(error).__name__}: {text}",
            fixes[link],
            link,
        )

    # ---- probes
    def _probe_pre(self, module: nn.Module, args: Any) -> None:
        key = id(module)
        if key not in self.modules:
            return
        calls = self.backward_calls if _in_backward() else self.forward_calls
        calls[key] = calls.get(key, 0) + 1

    def _probe_post(self, module: nn.Module, args: Any, output: Any) -> None:
        if id(module) in self.full_backward_hooked:
            self.last_backward_hooked = self.names[id(module)]

    def run(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], loss_fn: Callable[[Any], Tensor] | None, state: _State
    ) -> None:
        """The forward and backward pass with the probes on; gradient checks before the state is restored."""
        state.clear_grads()
        with HookGroup() as probes, warnings.catch_warnings(record=True) as caught, torch.enable_grad():
            warnings.simplefilter("always")
            probes.register(None, "global_forward_pre", self._probe_pre)
            probes.register(None, "global_forward", self._probe_post)
            self.install()
            try:
                output = self._forward(args, kwargs)
                if output is not None:
                    self._backward(output, loss_fn)
            finally:
                self.uninstall()
        self.warnings = [str(w.message) for w in caught]
        if output is not None:
            self._after_run()

    def _forward(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            return self.model(*args, **kwargs)
        except Exception as error:
            if "BackwardHookFunction" in str(error) and "inplace" in str(error):
                where = self.last_backward_hooked or "<root>"
                self.add(
                    "inplace-after-backward-hook",
                    "error",
                    where,
                    "this module has a full backward hook (or backward pre-hook), which makes its output a view "
                    "made by BackwardHookFunction; the in-place operation that follows it (out += identity, "
                    f"ReLU(inplace=True)) makes the forward fail: {error}",
                    "take the gradient with a tensor hook on the output, registered from a forward hook; or make "
                    "the next operation out-of-place",
                    clinic(24),
                )
                return None
            raise DiagnosisError(
                f"the model's forward failed on the inputs you gave, so nothing could be diagnosed: "
                f"{type(error).__name__}: {error}. Run model(inputs) on its own first, and give diagnose() inputs "
                "of the shape, dtype and device it expects (a tuple for several positional arguments, a dict for "
                "keyword arguments)."
            ) from error

    def _backward(self, output: Any, loss_fn: Callable[[Any], Tensor] | None) -> None:
        if loss_fn is not None:
            try:
                loss = loss_fn(output)
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
        else:
            loss = _default_loss(output)
        if loss is None or not loss.requires_grad:
            self.no_backward = True
            return
        self.no_backward = False
        try:
            loss.backward()
        except Exception as error:
            text = str(error)
            if "changed the size" in text or "changed the type" in text or "hook returned" in text:
                link = clinic(21)
                fix = "a tensor hook returns None or a tensor of the gradient's shape and dtype"
            elif "modified by an inplace operation" in text:
                link = clinic(15)
                fix = "return a new tensor from the hook instead of editing the output in place"
            else:
                link, fix = _IF_YOU_SEE, "look the error up in the clinic's index by symptom"
            if not self.has_link(link):
                self.add(
                    "backward-fails",
                    "error",
                    "backward",
                    f"backward() fails: {type(error).__name__}: {text}",
                    fix,
                    link,
                )

    def _after_run(self) -> None:
        checkpoint_warning = any("None of the inputs have requires_grad" in w for w in self.warnings)
        # hooks that fired again during backward: recomputation (activation checkpointing)
        for site in self.sites:
            if site.kind.phase == "forward" and site.calls_in_backward:
                self.add(
                    "fires-in-backward",
                    "warning",
                    site.where,
                    f"the {site.kind.name} hook {site.name} ran {site.calls - site.calls_in_backward} time(s) in the "
                    f"forward and {site.calls_in_backward} more during backward(): activation checkpointing "
                    "recomputes this module's forward, hooks included.",
                    "record only outside backward (torch._C._current_graph_task_id() == -1), or clear the "
                    "records before each step",
                    clinic(22),
                )
        # modules used more than once in one forward
        for key, count in self.forward_calls.items():
            if count > 1:
                name = self.names[key]
                hooked = any(s.module is self.modules[key] and s.kind.phase == "forward" for s in self.sites)
                self.add(
                    "module-called-twice",
                    "warning" if hooked else "info",
                    name,
                    f"{name} ({type(self.modules[key]).__name__}) is called {count} times in one forward: its hooks "
                    "fire on every call, and a record keyed by module keeps only the last call's.",
                    "one module object per use (or record a list of calls)",
                    clinic(16),
                )
        # hooks that never fired
        for key, module in self.modules.items():
            sites = [s for s in self.sites if s.module is module and s.kind.name in _MODULE_KINDS]
            if not sites or key in self.forward_calls or key in self.backward_calls:
                continue
            name = self.names[key]
            if isinstance(module, (nn.ModuleList, nn.ModuleDict)):
                link, fix = clinic(17), "hook each element, or the module whose forward runs the loop"
                why = f"{type(module).__name__} is a container that is never called"
            elif self._is_out_proj(module):
                link, fix = clinic(31), "hook self_attn itself (its output is (attended, weights))"
                why = "MultiheadAttention hands out_proj's weights to a function and never calls out_proj"
            else:
                link = _NOT_FIRING
                fix = "hook a module that is called (see the module calls with hookviz.HookTimeline)"
                why = "the forward never called it (a direct .forward() call, a functional op or an unused branch)"
            self.add(
                "hook-never-fires",
                "warning",
                name,
                f"the hooks on {name} ({', '.join(s.name for s in sites)}) never fired: {why}.",
                fix,
                link,
            )
        # gradient hooks no gradient reached
        for site in self.sites:
            if site.kind.name not in _GRADIENT_KINDS or site.calls:
                continue
            module = site.module
            if module is not None and id(module) not in self.forward_calls:
                continue  # already reported: the module never ran
            if site.kind.name in _TENSOR_KINDS and not site.holder.requires_grad:
                why = "the parameter does not require grad"
            elif self.no_backward:
                why = "no output of the model requires grad, so there was no backward pass"
            else:
                why = "no gradient reached it in backward()"
            link = clinic(30) if checkpoint_warning else _FROZEN
            fix = (
                "use torch.utils.checkpoint(..., use_reentrant=False)"
                if checkpoint_warning
                else "hook only the parts that get gradients (the trainable ones after the frozen part)"
            )
            self.add(
                "no-gradient-reaches",
                "warning",
                site.where,
                f"the {site.kind.name} hook {site.name} never fired: {why}"
                + (" (reentrant checkpointing cut this segment out of the graph)." if checkpoint_warning else "."),
                fix,
                link,
            )

    def _is_out_proj(self, module: nn.Module) -> bool:
        return any(
            isinstance(parent, nn.MultiheadAttention) and parent.out_proj is module for parent in self.model.modules()
        )

    # ---- stored tensors
    def stored_before(self) -> dict[int, set[int]]:
        return {id(s): set(_reachable_tensors(s.hook)) for s in self.sites}

    def stored_checks(self, before: dict[int, set[int]]) -> None:
        storages = {}
        for name, param in self.model.named_parameters():
            storages[param.untyped_storage().data_ptr()] = name
        for site in self.sites:
            new = [t for i, t in _reachable_tensors(site.hook).items() if i not in before[id(site)]]
            shared = [
                storages[t.untyped_storage().data_ptr()]
                for t in new
                if not t.is_nested and t.untyped_storage().data_ptr() in storages
            ]
            if shared:
                self.add(
                    "stores-parameter-view",
                    "warning",
                    site.where,
                    f"the hook {site.name} stores {shared[0]} without a copy (weight.detach() shares its memory): the "
                    "optimizer updates it in place, so every stored snapshot will equal the final value.",
                    "store weight.detach().clone()",
                    clinic(20),
                )
            if any(t.grad_fn is not None for t in new):
                self.add(
                    "stored-graph",
                    "warning",
                    site.where,
                    f"the hook {site.name} stores a tensor that is still part of the autograd graph: it keeps the "
                    "graph (and its saved activations) alive as long as you keep it, and memory grows every step.",
                    "store output.detach() (and .cpu() for long runs)",
                    _MEMORY,
                )


def _unwrap_compiled(model: Any) -> tuple[nn.Module, list[Finding]]:
    original = getattr(model, "_orig_mod", None)
    if isinstance(model, nn.Module) and isinstance(original, nn.Module) and type(model).__name__ == "OptimizedModule":
        note = Finding(
            "compiled-wrapper",
            "info",
            "<root>",
            "this is a torch.compile wrapper: the doctor runs the original module eagerly. Hooks registered after "
            "the first compiled call may not be seen by the compiled code until it recompiles.",
            "register hooks before compiling (or diagnose the model before torch.compile)",
            _COMPILED,
        )
        return original, [note]
    return model, []


def diagnose(
    model: nn.Module,
    inputs: Any,
    *,
    kwargs: dict[str, Any] | None = None,
    loss_fn: Callable[[Any], Tensor] | None = None,
    scaler: Any = None,
) -> Diagnosis:
    """Run ``model`` once, forward and backward on ``inputs``, and report the hook pitfalls it carries.

    Args:
        model: the model, with the hooks you attached to it (a ``torch.compile`` wrapper is unwrapped).
        inputs: the arguments of one forward call: a tensor, a tuple of positional arguments, or a dict
            of keyword arguments.
        kwargs: more keyword arguments for the call.
        loss_fn: turns the output into the scalar to call ``backward()`` on; by default the sum of every
            floating-point output that requires grad.
        scaler: the ``torch.amp.GradScaler`` your training loop uses, if any: gradient hooks then see
            scaled gradients, and the doctor says so.

    Returns:
        a :class:`Diagnosis`, a list of :class:`Finding` that prints as a table (``no findings`` when clean).

    Raises:
        DiagnosisError: the model is not an ``nn.Module``, the inputs are of the wrong type, or the
            forward / ``loss_fn`` fails on them (the message says why and how to fix it).
    """
    if not isinstance(model, nn.Module):
        raise DiagnosisError(
            f"diagnose() needs the model (an nn.Module) as its first argument, got {type(model).__name__}; "
            "call hookviz.diagnose(model, inputs)"
        )
    model, notes = _unwrap_compiled(model)
    args, keywords = _as_call(inputs, kwargs)
    doctor = _Doctor(model)
    doctor.static_checks(scaler)
    stored = doctor.stored_before()
    state = _State.take(model)
    try:
        doctor.run(args, keywords, loss_fn, state)
        doctor.stored_checks(stored)
    finally:
        state.restore()
    return Diagnosis(notes + _ordered(doctor.findings))


def _ordered(findings: list[Finding]) -> list[Finding]:
    """Errors first, then warnings, then notes; in the order found within each."""
    return sorted(findings, key=lambda f: SEVERITIES.index(f.severity))
