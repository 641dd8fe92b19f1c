"""What a diagnosis observes, as plain data: the hooks (:class:`Site`), each call of one (:class:`Call`), each run
of the model (:class:`Pass`) and the :class:`Evidence` the rules read and report to.

This module is the floor that the runner (which fills it) and the rules (which read it) both stand on: it
imports neither of them, so the doctor's house has no circle.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

from hookviz.catalogue import HookKind
from hookviz.diagnose import code
from hookviz.diagnose.report import Finding
from hookviz.hooks_table import library_owned
from hookviz.i18n import N_name

#: Where a grouped finding's places go in its message (the rules write ``f"... on {PLACES} ..."``): one finding for
#: the same hook doing the same thing on several parameters names them all there.
PLACES = "{places}"

MODULE_KINDS = ("forward_pre", "forward", "backward_pre", "backward", "backward_legacy")
TENSOR_KINDS = ("tensor", "post_accumulate_grad")
GRADIENT_KINDS = ("backward_pre", "backward", "backward_legacy", "tensor", "post_accumulate_grad")
BACKWARD_ROLES = ("backward", "backward_pre", "backward_legacy")


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


def describe(value: Any, depth: int = 2) -> str:
    """A value a hook received or returned, written like code so that it reads the same in every language and on
    every release (no tensor reprs): ``Tensor(8, 4, float32)``, ``tuple(Tensor(8, 4, float32), None)``,
    ``dict(out)``, ``RemovableHandle``."""
    if isinstance(value, Tensor):
        if value.is_nested:
            return "NestedTensor"
        dtype = str(value.dtype).removeprefix("torch.")
        return f"Tensor({', '.join(map(str, value.shape))}{', ' if value.dim() else ''}{dtype})"
    if value is None:
        return "None"
    if isinstance(value, (tuple, list)) and depth > 0:
        items = ", ".join(describe(v, depth - 1) for v in list(value)[:4]) + (", ..." if len(value) > 4 else "")
        return f"{type(value).__name__}({items})"
    if isinstance(value, dict):
        return f"dict({', '.join(map(str, list(value)[:5]))})"
    return type(value).__name__


# ----------------------------------------------------------------------------------------------- sites


@dataclass(eq=False)
class Site:
    """One user hook, wrapped for the run: where it lives, its kind, and how often it ran in the main pass."""

    where: str
    kind: HookKind
    holder: Any
    hook_id: int
    hook: Any
    flags: str
    module: nn.Module | None
    calls: int = 0
    calls_in_backward: int = 0
    registered_by: Site | None = None  # a tensor hook a user hook registered while the model ran (Grad-CAM's)

    @property
    def name(self) -> str:
        return code.name_of(self.hook)

    @property
    def label(self) -> str:
        """The hook's name and where it was defined, like a traceback's place: ``save_output (cell:4)``."""
        place = code.defined_at(self.hook)
        return f"{self.name} ({place})" if place else self.name

    @property
    def pytorch_owned(self) -> bool:
        """A hook PyTorch's own utilities or another known library (``transformers``) attached: never reported."""
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

    @property
    def kind_words(self) -> str:
        """The kind as words: ``forward hook``, ``full backward hook``, ``tensor hook`` ..."""
        return _KIND_WORDS.get(self.role, self.role)


_KIND_WORDS = {
    "forward_pre": N_name("forward pre-hook"),
    "forward": N_name("forward hook"),
    "backward_pre": N_name("backward pre-hook"),
    "backward": N_name("full backward hook"),
    "backward_legacy": N_name("legacy backward hook"),
    "tensor": N_name("tensor hook"),
    "post_accumulate_grad": N_name("post-accumulate-grad hook"),
}


# ----------------------------------------------------------------------------------------------- calls


@dataclass
class Received:
    """A tensor a hook received, as it was before the hook ran: its version and (for small ones) a copy."""

    tensor: Tensor
    version: int
    copy: Tensor | None
    what: str = "output"  # output, input, gradient or parameter

    def edited(self) -> bool:
        """Edited in place through autograd (its version moved)."""
        return self.tensor._version != self.version

    def edited_unseen(self) -> bool:
        """Edited without autograd seeing it (``.data``, ``torch.no_grad()`` writes ...): the values changed, the
        version did not."""
        if self.copy is None or self.edited():
            return False
        now = self.tensor.detach()
        if now.shape != self.copy.shape or now.dtype != self.copy.dtype:
            return True  # `tensor.data = other` replaced its values (and shape) without a version
        return not torch.equal(now.contiguous().view(-1).view(torch.uint8), self.copy.view(-1).view(torch.uint8))


@dataclass
class Local:
    """A tensor (or a tuple or list of tensors) a hook held in a local variable when it returned."""

    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    argument: bool  # it is one of the hook's arguments (or an element of one)
    shares_memory: bool  # it shares memory with an argument (a view, output.detach())
    derived: bool  # computed by torch operations from the hook's arguments
    read: bool  # read by a torch operation that is not an in-place edit of it, after it was made
    dropped: bool  # nothing held it any more once the hook had returned
    parts: int = 0  # for a tuple or list of tensors: how many tensors it holds (0: a tensor)
    expression: bool = False  # no variable held it: the value of an expression, thrown away at once


@dataclass(eq=False)
class Call:
    """One call of a wrapped hook: its arguments, what it returned or raised, and what the run saw it do."""

    site: Site
    pass_: Pass
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    received: list[Received] = field(default_factory=list)
    result: Any = None
    error: Exception | None = None
    neutralised: bool = False
    reported: bool = False
    ops: list[str] = field(default_factory=list)  # the torch functions it called, in order
    syncs: list[str] = field(default_factory=list)  # those that copy a value to the host (.item(), .cpu() ...)
    read_grad_of: list[Tensor] = field(default_factory=list)  # tensors whose .grad it read
    made: set[int] = field(default_factory=set)  # ids of the tensors its torch calls returned
    numbers: set[int] = field(default_factory=set)  # the integers it passed to torch functions (view(32, -1))
    locals: list[Local] = field(default_factory=list)
    registered: int = 0  # hooks registered while it ran (RemovableHandle ids taken)
    written: list[tuple[int, Any]] = field(default_factory=list)  # records it wrote: (id(dict), key), (id(list), None)
    changed: list[str] = field(default_factory=list)  # what it changed on the model: modes, requires_grad
    in_backward: bool = False

    def edited(self, what: str | None = None) -> list[Tensor]:
        """The tensors the hook received (of kind ``what``: output, input, gradient, parameter) and edited in place."""
        return [r.tensor for r in self.received if r.edited() and what in (None, r.what)]

    def edited_unseen(self, what: str | None = None) -> list[Tensor]:
        """The tensors the hook received whose values it changed without autograd seeing it (``.data``)."""
        return [r.tensor for r in self.received if r.edited_unseen() and what in (None, r.what)]

    def neutralise(self) -> None:
        """Ignore what the hook returned for the rest of the run (it is reported)."""
        self.result = None
        self.neutralised = True

    def dropped(self) -> list[Local]:
        """Tensors the hook computed from its arguments, never used, and threw away when it returned None."""
        if self.result is not None or self.error is not None:
            return []
        return [
            x for x in self.locals if x.dropped and x.derived and not x.read and not x.argument and not x.shares_memory
        ]


# ---------------------------------------------------------------------------------------------- passes


@dataclass(eq=False)
class Pass:
    """One run of the model: forward (and backward), in one grad mode, on one batch, with some hooks left out."""

    name: str  # "main", "caller" (the caller's grad mode), "batch" (another batch size), "probe" (differential)
    grad: bool
    backward: bool
    batch: int | None = None
    ignored: frozenset[int] = frozenset()  # ids of sites whose return value is ignored
    skipped: frozenset[int] = frozenset()  # ids of sites not called at all
    given_copy: frozenset[int] = frozenset()  # ids of sites that get a copy of their gradient and return it
    calls: list[Call] = field(default_factory=list)
    forward_calls: dict[int, int] = field(default_factory=dict)
    backward_calls: dict[int, int] = field(default_factory=dict)
    forward_error: Exception | None = None
    backward_error: Exception | None = None
    no_backward: str | None = None  # why no backward pass ran: output-none, loss-fn, no-grad-output
    warnings: list[str] = field(default_factory=list)
    grads: dict[int, Tensor | None] = field(default_factory=dict)  # id of each leaf -> its gradient afterwards
    registered_in_forward: int = 0  # hooks registered while the forward ran, by the model or its hooks
    last_backward_hooked: str | None = None

    @property
    def failed(self) -> bool:
        return self.forward_error is not None or self.backward_error is not None


# -------------------------------------------------------------------------------------------- evidence


class Evidence:
    """Everything the rules read about one diagnosis, and the findings they report.

    The runner fills it: the model and its names, the user's hooks (:attr:`sites`), and the passes it ran
    (:attr:`main`, the training step; others by name in :attr:`passes`). Rules read it and call
    :meth:`report`; findings that differ only by place (the same hook on eight parameters) are merged into one.
    """

    def __init__(self, model: nn.Module, *, scaler: Any = None, caller_grad: bool = True) -> None:
        self.model = model
        self.scaler = scaler
        self.caller_grad = caller_grad
        self.names = {id(m): (name or "<root>") for name, m in model.named_modules()}
        self.modules = {id(m): m for m in model.modules()}
        self.sites: list[Site] = []
        self.global_rows: list[Any] = []
        self.passes: dict[str, Pass] = {}
        self.findings: list[Finding] = []
        self.notes: dict[str, Any] = {}  # what a rule keeps during the run
        self.stored_before: dict[int, dict[int, bool]] = {}  # id(site) -> {id(tensor): it had a grad_fn}
        self.stored_after: dict[int, list[Tensor]] = {}
        self.attributes_before: dict[int, set[int]] = {}  # id(module) -> ids of the tensors its attributes held
        self.registered: list[tuple[str, Any, str]] = []  # (where, hook, by whom) registered during the run
        self.inplace_effects: dict[int, list[str]] = {}  # id(site) -> leaves whose gradient its in-place edit changed
        self.orphan_views: list[tuple[str, Any]] = []  # (parameter name, hook) on a view that the forward never uses
        #: id(site) -> ("pass:phase:how", the error, the hook's call in the failed pass): found by differential passes
        self.culprits: dict[int, tuple[str, Exception, Call | None]] = {}
        self._groups: dict[tuple[str, str], int] = {}

    # ---- passes
    @property
    def main(self) -> Pass:
        return self.passes["main"]

    @property
    def forward_calls(self) -> dict[int, int]:
        return self.main.forward_calls

    @property
    def backward_calls(self) -> dict[int, int]:
        return self.main.backward_calls

    @property
    def no_backward(self) -> str | None:
        return self.main.no_backward

    @property
    def backward_failed(self) -> bool:
        return self.main.backward_error is not None

    @property
    def warnings(self) -> list[str]:
        return self.main.warnings

    # ---- findings
    def report(self, rule: Any, where: str, message: str, *, fix: str | None = None, link: str | None = None,
               severity: str | None = None, group: str | None = None) -> None:  # fmt: skip
        """Add a finding of ``rule`` (its fix, link and severity unless given).

        A finding with the same kind, place and link as an earlier one is dropped. With ``group``, findings of
        one rule with the same group key (the same hook doing the same thing on several parameters) become one:
        their places are joined in ``where``, and ``message`` may name them all with ``{places}``.
        """
        finding = Finding(rule.id, severity or rule.severity, where, message, fix or rule.fix, link or rule.link)
        if group is not None:
            key = (rule.id, group)
            if key in self._groups:
                index = self._groups[key]
                old = self.findings[index]
                places = [*old.where.split(", "), where]
                self.findings[index] = dataclasses.replace(
                    old, where=", ".join(dict.fromkeys(places)), message=self.notes[f"group:{key}"]
                )
                self._regroup(key, places)
                return
            self._groups[key] = len(self.findings)
            self.notes[f"group:{key}"] = message
            finding = dataclasses.replace(finding, message=message.replace("{places}", where))
        if not any((f.kind, f.where, f.link) == (finding.kind, finding.where, finding.link) for f in self.findings):
            self.findings.append(finding)

    def _regroup(self, key: tuple[str, str], places: list[str]) -> None:
        index = self._groups[key]
        shown = ", ".join(dict.fromkeys(places))  # no "and": the places are code, in every language
        template = self.notes[f"group:{key}"]
        self.findings[index] = dataclasses.replace(self.findings[index], message=template.replace("{places}", shown))

    def new_stored(self, site: Site) -> list[Tensor]:
        """The tensors ``site``'s hook can reach now and could not before the run, or that joined a graph during it
        (a buffer the hook copied a live output into: ``self.buffer[i] = output``); read once per run and hook."""
        if id(site) not in self.stored_after:
            before = self.stored_before.get(id(site), {})
            self.stored_after[id(site)] = [
                t
                for i, t in code.reachable_tensors(site.hook).items()
                if i not in before or (not before[i] and t.grad_fn is not None)
            ]
        return self.stored_after[id(site)]

    def has_link(self, link: str) -> bool:
        return any(f.link == link for f in self.findings)

    # ---- places
    def param_name(self, module: nn.Module, local: str) -> str:
        prefix = self.names[id(module)]
        return local if prefix == "<root>" else f"{prefix}.{local}"

    def module_sites(self, module: nn.Module) -> list[Site]:
        return [s for s in self.sites if s.module is module and s.kind.name in MODULE_KINDS]

    def place_of(self, value: Any) -> str | None:
        """The name of a module or parameter of the model (``features.0``, ``param:fc.weight``), or None."""
        if isinstance(value, nn.Module):
            return self.names.get(id(value))
        if isinstance(value, nn.Parameter):
            for name, param in self.model.named_parameters():
                if param is value:
                    return f"param:{name}"
        return None
