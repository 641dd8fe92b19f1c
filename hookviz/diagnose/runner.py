"""The one place that owns hook lifetime during a diagnosis: wrap the hooks, run the model as often as the
evidence needs, put everything back.

:class:`Run` reads the hooks attached to the model (through :func:`hookviz.list_hooks`), swaps each of them in
its dict for a wrapper that watches what it does (:mod:`hookviz.diagnose.watch`), and runs *passes* of the
model, each with two global probes (a :class:`~hookviz.capture.HookGroup`) that count module calls:

* ``main``: one training step, forward and backward with gradients on, in the model's own train/eval modes;
* ``caller``: when diagnose() is called under ``torch.no_grad()``, one forward as the caller runs it (a
  validation loop): hooks that fail only there are found;
* ``batch``: when a hook passed the batch size to a torch function as a number (``out.view(32, -1)``), the same
  step on a batch of another size (one sample fewer), for hooks that fail on the last, smaller batch of an epoch;
* ``probe``: differential passes, when one run cannot tell: without one hook's return value (which hook breaks
  the forward or the backward), with a hook given a copy of its gradient (what an in-place edit changed).

The rules (:mod:`hookviz.diagnose.rules`) read what the passes observed (:class:`~hookviz.diagnose.facts.Evidence`)
and report. Whatever happens, :class:`~hookviz.diagnose.state.State` puts the model back in a ``finally``.
"""

from __future__ import annotations

import functools
import gc
import importlib
import threading
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn
from torch.utils.hooks import RemovableHandle

from hookviz.capture import HookGroup
from hookviz.catalogue import hook_kind
from hookviz.diagnose import code
from hookviz.diagnose.facts import (
    GRADIENT_KINDS,
    MODULE_KINDS,
    TENSOR_KINDS,
    Call,
    Evidence,
    Pass,
    Site,
    default_loss,
    in_backward,
    output_tensors,
)
from hookviz.diagnose.report import DiagnosisError, Finding
from hookviz.diagnose.rules import RULES, Rule
from hookviz.diagnose.state import State
from hookviz.diagnose.watch import watched_call
from hookviz.hooks_table import library_owned, list_hooks, pytorch_owned
from hookviz.i18n import N_

_GLOBALS = "torch.nn.modules.module"
#: The passes whose hook calls the rules watch; probes only answer one question each.
OBSERVED = ("main", "caller", "batch")
#: At most this many differential passes to find the hook that breaks a run.
MAX_SUSPECTS = 24
#: A hook running inside itself this deep (it calls the module it is attached to) is stopped with a RecursionError,
#: long before Python's own limit, so that the doctor still has the stack to report it.
MAX_REENTRY = 8


class Run:
    """One diagnosis: the sites, the passes, what they observed, and the findings the rules reported."""

    def __init__(self, model: nn.Module, *, loss_fn: Callable[[Any], Tensor] | None = None, scaler: Any = None,
                 rules: list[Rule] | None = None, caller_grad: bool = True) -> None:  # fmt: skip
        self.model = model
        self.loss_fn = loss_fn
        self.rules = RULES if rules is None else rules
        self.evidence = Evidence(model, scaler=scaler, caller_grad=caller_grad)
        self.current: Pass | None = None
        self.internal_error: Exception | None = None
        self._made: list[Pass] = []  # every pass run, to free what they saw (a pass and its calls refer to each other)
        self._depth: dict[int, int] = {}  # id(site) -> how many of its calls are running now (nested)
        self._thread = threading.get_ident()
        self._collect_sites()

    @property
    def findings(self) -> list[Finding]:
        return self.evidence.findings

    # ---------------------------------------------------------------------------------------- sites
    def _collect_sites(self) -> None:
        ev = self.evidence
        table = list_hooks(self.model, include_global=True)
        self.hooks_before = {(row.where, row.kind, row.hook_id) for row in table}
        by_where = {n or "<root>": m for n, m in self.model.named_modules()}
        params = {f"param:{n}": p for n, p in self.model.named_parameters()}
        ev.global_rows = [row for row in table if row.where == "<global>"]
        owners = {
            f"param:{ev.param_name(m, local)}": m
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
            ev.sites.append(Site(row.where, kind, holder, row.hook_id, hook, row.flags, module))
        self.full_backward_hooked = {id(s.holder) for s in ev.sites if s.kind.name in ("backward", "backward_pre")}

    # ------------------------------------------------------------------------------------- wrapping
    def _wrapper(self, site: Site) -> Callable[..., Any]:
        run = self
        ev = self.evidence

        def diagnosed(*args: Any, **kwargs: Any) -> Any:
            current = run.current
            if current is None:
                return site.hook(*args, **kwargs)
            if id(site) in current.skipped:
                return None
            backward = in_backward()
            if not backward and threading.get_ident() != run._thread:
                return site.hook(*args, **kwargs)  # another thread's forward: not ours to watch
            copied = id(site) in current.given_copy
            if copied:
                args = _copied_gradients(site.role, args)
            call = Call(site, current, args, kwargs, in_backward=backward)
            observed = current.name in OBSERVED
            if current.name == "main":
                site.calls += 1
                site.calls_in_backward += backward
            if observed:
                run._rules("before", current, call)
            depth = run._depth.get(id(site), 0)
            run._depth[id(site)] = depth + 1
            try:
                if depth >= MAX_REENTRY:  # the hook calls its own module again and again: stop it here
                    raise RecursionError(
                        f"the hook was entered {depth} times inside itself: it calls the module it is attached to"
                    )
                if site.pytorch_owned:  # PyTorch's or another library's own hook: run it as it is, never judged
                    call.result = site.hook(*args, **kwargs)
                else:
                    adopt = functools.partial(run._adopt, site) if observed else None
                    records = code.records(site.hook) if current.name == "main" else None
                    call.result = watched_call(call, site.hook, run.model, ev.names, adopt)
                    call.written = code.records_written(records) if records is not None else []
            except Exception as error:  # a user hook failed: report it, go on without it
                call.error = error
            finally:
                run._depth[id(site)] = depth
            current.calls.append(call)
            if observed:
                run._rules("call", current, call)
            if call.error is not None or id(site) in current.ignored:
                return None
            if copied and call.result is None:
                return _returned_gradients(site.role, args)
            return call.result

        diagnosed.__qualname__ = site.name
        return diagnosed

    def _rules(self, stage: str, current: Pass, call: Call) -> None:
        """Hand a hook call to the rules watching ``current``; a rule's own failure is the doctor's bug, kept to be
        raised once the model has run (never blamed on the hook or the model)."""
        for rule in self.rules:
            if current.name in rule.passes:
                try:
                    getattr(rule, stage)(self.evidence, call)
                except Exception as error:  # noqa: BLE001 - re-raised by _pass
                    self.internal_error = self.internal_error or error

    def _adopt(self, parent: Site, tensor: Tensor, hook: Any) -> Any:
        """A tensor hook that ``parent`` registers while the model runs (``output.register_hook(save_grad)``): it
        becomes a site of its own, watched like the others, and its wrapper is what gets registered."""
        if not callable(hook) or library_owned(hook):
            return hook
        # no reference to the tensor: it (and its graph) must die with the step, as without the doctor
        site = Site(parent.where, hook_kind("tensor"), None, -1, hook, "", parent.module, registered_by=parent)
        ev = self.evidence
        ev.sites.append(site)
        ev.stored_before[id(site)] = {i: t.grad_fn is not None for i, t in code.reachable_tensors(hook).items()}
        return self._wrapper(site)

    def install(self) -> None:
        for site in self.evidence.sites:
            if site.registered_by is not None:
                continue
            getattr(site.holder, site.kind.storage_attr)[site.hook_id] = self._wrapper(site)

    def uninstall(self) -> None:
        for site in self.evidence.sites:
            if site.registered_by is not None:
                continue
            hooks = getattr(site.holder, site.kind.storage_attr, None)
            if hooks is not None and site.hook_id in hooks:
                hooks[site.hook_id] = site.hook

    # --------------------------------------------------------------------------------------- probes
    def _probe_pre(self, module: nn.Module, args: Any) -> None:
        current = self.current
        key = id(module)
        if current is None or key not in self.evidence.modules:
            return
        backward = in_backward()
        if not backward and threading.get_ident() != self._thread:
            return  # another thread's forward
        calls = current.backward_calls if backward else current.forward_calls
        calls[key] = calls.get(key, 0) + 1

    def _probe_post(self, module: nn.Module, args: Any, output: Any) -> None:
        if self.current is not None and id(module) in self.full_backward_hooked:
            self.current.last_backward_hooked = self.evidence.names[id(module)]

    # --------------------------------------------------------------------------------------- stages
    def static(self) -> None:
        ev = self.evidence
        for rule in self.rules:
            rule.static(ev)
        ev.stored_before = {
            id(s): {i: t.grad_fn is not None for i, t in code.reachable_tensors(s.hook).items()} for s in ev.sites
        }
        ev.attributes_before = {id(m): set(code.tensors_in([code.user_attributes(m)])) for m in self.model.modules()}
        ev.orphan_views = _hooked_views(self.model)

    def diagnose(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Every pass the evidence needs, then the rules' checks; the model is put back whatever happens."""
        ev = self.evidence
        self.static()
        state = State.take(self.model)
        self.state = state
        try:
            self.install()
            try:
                main = self._main(args, kwargs)
                if main is not None:
                    self._registered_during(main)
                if main is not None and ev.sites:
                    if not ev.caller_grad:
                        self._context("caller", args, kwargs, grad=False, backward=False)
                    smaller = _other_batch(args, kwargs)
                    if smaller is not None and self._uses_batch_size(main, smaller[3]):
                        # a hook holds the batch size as a number: does it still work on another one?
                        self._context("batch", *smaller[:2], grad=True, backward=True, batch=smaller[2])
                    self._probe_in_place_edits(main, args, kwargs)
            finally:
                self.uninstall()
                self.current = None
            if "main" in ev.passes and ev.main.forward_error is None:
                for rule in self.rules:
                    rule.after(ev)
            for rule in self.rules:
                rule.stored(ev)
        finally:
            state.restore()
            self._release()

    def _release(self) -> None:
        """Forget what the passes saw: the run keeps no tensor, graph or traceback (their frames hold tensors with
        autograd's hooks) once the findings are written."""
        ev = self.evidence
        ev.stored_after.clear()
        ev.notes.clear()
        errors = [e for p in self._made for e in (p.forward_error, p.backward_error)]
        errors += [error for _, error, _ in ev.culprits.values()]
        seen: set[int] = set()
        for error in errors:
            while error is not None and id(error) not in seen:
                seen.add(id(error))
                error.__traceback__ = None
                error = error.__cause__ or error.__context__
        ev.culprits.clear()
        ev.passes.clear()
        ev.sites = [s for s in ev.sites if s.registered_by is None]
        for p in self._made:
            p.calls.clear()
            p.grads.clear()
        self._made.clear()
        self._leaves = []
        self.internal_error = None

    # ---- the passes
    def _pass(self, p: Pass, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Pass:
        """Run the model once (forward, and backward when ``p.backward``) with the hooks watched, into ``p``."""
        self.state.reset_for_pass()
        self._made.append(p)
        for leaf in getattr(self, "_leaves", []):
            leaf.grad = None
        self.current = p
        try:
            with HookGroup() as probes, warnings.catch_warnings(record=True) as caught, torch.set_grad_enabled(p.grad):
                warnings.simplefilter("always")
                probes.register(None, "global_forward_pre", self._probe_pre)
                probes.register(None, "global_forward", self._probe_post)
                handles = RemovableHandle.next_id
                output = None
                try:
                    output = self.model(*args, **kwargs)
                except Exception as error:  # explained by the caller of _pass (a differential pass, or a rule)
                    p.forward_error = error
                by_hooks = sum(c.registered for c in p.calls if not c.in_backward)
                p.registered_in_forward = RemovableHandle.next_id - handles - by_hooks
                if p.forward_error is None and p.backward:
                    self._backward(p, output)
                    if p.backward_error is None and p.no_backward is None:
                        p.grads = {id(t): (None if t.grad is None else t.grad.detach().clone()) for t in self._leaves}
                output = None  # the run keeps no tensor of the forward: its graph is freed now
            p.warnings = [str(w.message) for w in caught]
        finally:
            self.current = None
        if self.internal_error is not None:
            raise self.internal_error
        return p

    def _backward(self, p: Pass, output: Any) -> None:
        if output is None:
            p.no_backward = "output-none"
            return
        if self.loss_fn is not None:
            try:
                loss = self.loss_fn(output)
            except Exception as error:
                raise DiagnosisError(
                    N_(
                        f"loss_fn failed on the model's output: {type(error).__name__}: {error}; give a function "
                        "that turns the output into a scalar tensor (or leave loss_fn out to sum the outputs)"
                    )
                ) from error
            if not isinstance(loss, Tensor) or loss.numel() != 1:
                raise DiagnosisError(
                    N_(
                        f"loss_fn must return a scalar tensor, got {type(loss).__name__}"
                        + (f" of shape {tuple(loss.shape)}" if isinstance(loss, Tensor) else "")
                    )
                )
            if not loss.requires_grad and default_loss(output) is not None:
                p.no_backward = "loss-fn"
                return
        else:
            loss = default_loss(output)
        if loss is None or not loss.requires_grad:
            p.no_backward = "no-grad-output"
            return
        try:
            loss.backward()
        except Exception as error:  # explained by a differential pass or a rule
            p.backward_error = error

    def _main(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Pass | None:
        """The training step; a failure is explained (a hook's return value, a rule) or blamed on the inputs."""
        ev = self.evidence
        self._leaves = [p for p in self.model.parameters() if p.requires_grad]
        self._leaves += [t for t in output_tensors((args, kwargs), 3) if t.requires_grad]
        main = self._pass(Pass("main", grad=True, backward=True), args, kwargs)
        ev.passes["main"] = main
        for phase in ("forward", "backward"):
            error = main.forward_error if phase == "forward" else main.backward_error
            if error is None:
                continue
            culprit = self._differential(main, args, kwargs, phase)
            if culprit is not None:
                site, how = culprit
                ev.culprits[id(site)] = (f"main:{phase}:{how}", error, _last_call(main, site))
                for s in ev.sites:
                    s.calls = s.calls_in_backward = 0
                ignored = main.ignored | {id(site)} if how == "ignored" else main.ignored
                skipped = main.skipped | {id(site)} if how == "skipped" else main.skipped
                again = Pass("main", grad=True, backward=True, ignored=ignored, skipped=skipped)
                main = self._pass(again, args, kwargs)
                ev.passes["main"] = main
                if main.failed:
                    return self._unexplained(main, args, kwargs)
                return main
            return self._unexplained(main, args, kwargs)
        return main

    def _unexplained(self, main: Pass, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Pass | None:
        """A failure no hook's return value explains: a rule may (in-place after a backward hook...); else the
        model fails without any hook, and the inputs are wrong."""
        ev = self.evidence
        if main.forward_error is not None:
            error = main.forward_error
            for rule in self.rules:
                if rule.forward_failed(ev, error):
                    return None
            bare = self._pass(self._bare(main), args, kwargs)
            if bare.forward_error is not None:
                raise DiagnosisError(
                    N_(
                        "the model's forward failed on the inputs you gave (it fails without its hooks too), so "
                        "nothing "
                        f"could be diagnosed: {type(error).__name__}: {_first_line(error)}. Run model(inputs) on its "
                        "own "
                        "first, and give diagnose() inputs of the shape, dtype and device it expects (a tuple for "
                        "several positional arguments, a dict for keyword arguments)."
                    )
                ) from error
            ev.notes["hooks-break-forward"] = (error, [s for s in ev.sites if any(c.site is s for c in main.calls)])
            return None
        error = main.backward_error
        for rule in self.rules:
            if rule.backward_failed(ev, error):
                break
        return main

    def _bare(self, failed: Pass) -> Pass:
        """A pass like ``failed`` with every user hook left out: does the model run on these inputs at all?"""
        skipped = frozenset(id(s) for s in self.evidence.sites)
        return Pass("probe", grad=failed.grad, backward=False, batch=failed.batch, skipped=skipped)

    def _differential(self, failed: Pass, args: tuple[Any, ...], kwargs: dict[str, Any],
                      phase: str) -> tuple[Site, str] | None:  # fmt: skip
        """The hook without which ``failed`` would not have failed in ``phase``, and how it was left out:
        ``"ignored"`` (its return value dropped, for a hook that returned something) or ``"skipped"`` (not called)."""
        backward = phase == "backward"
        suspects: list[tuple[Site, str]] = []
        for call in failed.calls:
            if call.site.registered_by is not None:
                continue  # made anew by each pass: it cannot be left out of another one
            if call.site.role in GRADIENT_KINDS and not backward:
                continue
            if backward and not call.in_backward:
                continue
            how = "ignored" if call.result is not None and not call.neutralised and call.error is None else "skipped"
            if all(s is not call.site for s, _ in suspects):
                suspects.append((call.site, how))
        suspects.sort(key=lambda item: item[1] != "ignored")  # hooks that returned something first
        for site, how in suspects[:MAX_SUSPECTS]:
            left_out = frozenset({id(site)})
            probe = Pass(
                "probe",
                grad=failed.grad,
                backward=backward,
                batch=failed.batch,
                ignored=failed.ignored | left_out if how == "ignored" else failed.ignored,
                skipped=failed.skipped | left_out if how == "skipped" else failed.skipped,
            )
            self._pass(probe, args, kwargs)
            if probe.forward_error is None and (not backward or probe.backward_error is None):
                return site, how
        return None

    def _context(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], *, grad: bool, backward: bool,
                 batch: int | None = None) -> None:  # fmt: skip
        """A pass in another context (the caller's grad mode, another batch size); a failure there that the
        model shows without its hooks too is the model's, not a hook's, and is not reported."""
        ev = self.evidence
        ignored = frozenset(id(c.site) for c in ev.main.calls if c.neutralised) | ev.main.ignored
        p = self._pass(Pass(name, grad=grad, backward=backward, batch=batch, ignored=ignored,
                            skipped=ev.main.skipped), args, kwargs)  # fmt: skip
        ev.passes[name] = p
        for phase in ("forward", "backward"):
            error = p.forward_error if phase == "forward" else p.backward_error
            if error is None:
                continue
            bare = self._pass(self._bare(p), args, kwargs)
            if bare.forward_error is not None:
                ev.notes[f"{name}-model-fails"] = error
                return
            culprit = self._differential(p, args, kwargs, phase)
            if culprit is not None:
                site, how = culprit
                ev.culprits.setdefault(id(site), (f"{name}:{phase}:{how}", error, _last_call(p, site)))
            return

    def _uses_batch_size(self, main: Pass, size: int) -> bool:
        """Whether a hook that ran holds the batch size as a number: it passed it to a torch function
        (``view(32, -1)``), or it is a constant of its code (``assert out.shape[0] == 32``), a value it reads (a
        global ``BATCH = 32``, ``self.batch_size``, a ``functools.partial`` argument), or the first size of a tensor
        it keeps (a buffer made for one batch: ``self.buffer = torch.zeros(32, 8)``)."""
        if size < 2 or any(size in c.numbers for c in main.calls):
            return size >= 2
        if size < 3:
            return False  # 1 and 2 are everywhere in code (`grad * 2`): they say nothing about the batch
        for site in {id(c.site): c.site for c in main.calls}.values():
            function = code.function_of(site.hook)
            function_code = getattr(function, "__code__", None)
            if function_code is None:
                continue
            constants = {c for part in code.codes(function_code) for c in part.co_consts if type(c) is int}
            held = [v for _, v in code.free_values(function)] + code.unwrap(site.hook)[1]
            owner = code.owner_of(site.hook)
            if owner is not None:
                held += list(code.user_attributes(owner).values())
            values = {v for v in held if type(v) is int}
            values |= {t.shape[0] for t in held if isinstance(t, Tensor) and t.dim() >= 1 and not t.is_nested}
            if size in constants or size in values:
                return True
        return False

    def _probe_in_place_edits(self, main: Pass, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """For each gradient hook that edited its gradient in place and did not fail: run once more with the hook
        given a copy of its gradient, returned as a new one; the leaves whose gradient differs are what the
        in-place edit changed besides the gradient it meant (nothing, when it behaves like a return)."""
        ev = self.evidence
        if not main.grads:
            return
        editors = []
        for call in main.calls:
            if call.site.role in ("tensor", "backward", "backward_pre") and call.error is None and not (
                call.site.registered_by
            ):
                if (call.edited() or call.edited_unseen()) and all(s is not call.site for s in editors):
                    editors.append(call.site)
        names = {id(p): n for n, p in self.model.named_parameters()}
        for site in editors[:MAX_SUSPECTS]:
            probe = self._pass(Pass("probe", grad=True, backward=True, ignored=main.ignored, skipped=main.skipped,
                                    given_copy=frozenset({id(site)})), args, kwargs)  # fmt: skip
            if probe.failed or not probe.grads:
                continue
            differ = []
            for leaf in self._leaves:
                a, b = main.grads.get(id(leaf)), probe.grads.get(id(leaf))
                if (a is None) != (b is None) or (a is not None and b is not None and not torch.equal(a, b)):
                    differ.append(names.get(id(leaf), "the input"))
            ev.inplace_effects[id(site)] = differ

    def _registered_during(self, main: Pass) -> None:
        """Hooks that appeared on the model's modules and parameters (or globally) during the main pass, by whom."""
        ev = self.evidence
        if not main.registered_in_forward and not any(c.registered for c in main.calls):
            return
        by_hooks = [c.site.label for c in main.calls if c.registered]
        who = ", ".join(dict.fromkeys(by_hooks)) if by_hooks else ""
        for row in list_hooks(self.model, include_global=True):
            if (row.where, row.kind, row.hook_id) in self.hooks_before:
                continue
            kind = hook_kind(row.kind)
            holder = importlib.import_module(_GLOBALS) if row.where == "<global>" else None
            if holder is None:
                holder = dict(self.model.named_modules()).get(row.where) if kind.name in MODULE_KINDS else None
            if holder is None and kind.name in TENSOR_KINDS:
                holder = dict(self.model.named_parameters()).get(row.where.removeprefix("param:"))
            hooks = kind.hooks_of(holder) if holder is not None else {}
            hook = hooks.get(row.hook_id)
            if hook is None or library_owned(hook) or _ours(hook):
                continue
            ev.registered.append((row.where, hook, who))


# ------------------------------------------------------------------------------------------ helpers


def _ours(hook: Any) -> bool:
    """True for a hook that hookviz itself registered (a capture's or a widget's global hooks)."""
    function = code.function_of(hook)
    module = getattr(function, "__module__", None) or type(hook).__module__
    return isinstance(module, str) and module.startswith("hookviz.")


def _last_call(p: Pass, site: Site) -> Call | None:
    """The last call of ``site`` in pass ``p`` (what it received and returned when the pass failed)."""
    calls = [c for c in p.calls if c.site is site]
    return calls[-1] if calls else None


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [""])[0]


def _copied_gradients(role: str, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The hook's arguments with its gradient(s) replaced by copies (a probe pass)."""

    def copy(value: Any) -> Any:
        if isinstance(value, Tensor):
            return value.detach().clone()
        if isinstance(value, tuple):
            return tuple(copy(v) for v in value)
        return value

    if role == "tensor":
        return (copy(args[0]), *args[1:])
    if role == "backward":
        return (args[0], copy(args[1]), *args[2:])
    if role == "backward_pre":
        return (args[0], copy(args[1]), *args[2:])
    return args


def _returned_gradients(role: str, args: tuple[Any, ...]) -> Any:
    """What a probe's hook returns instead of editing in place: the copies it edited."""
    return args[0] if role == "tensor" else args[1]


def _other_batch(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...] | None:
    """The same call with one sample fewer (two samples from one), the new size and the batch size: every tensor
    argument with a first dimension shares its size, the batch; ``None`` when there is no such dimension."""
    tensors = [v for v in [*args, *kwargs.values()] if isinstance(v, Tensor) and not v.is_nested]
    sizes = {t.shape[0] for t in tensors if t.dim() >= 1}
    if not tensors or any(t.dim() == 0 for t in tensors) or len(sizes) != 1:
        return None
    size = sizes.pop()
    if size == 0:
        return None
    new = size - 1 if size > 2 else size + 1

    def resize(value: Any) -> Any:
        if not isinstance(value, Tensor) or value.is_nested:
            return value
        with torch.no_grad():
            resized = value[:new] if new < size else torch.cat([value, value[: new - size]])
        resized = resized.detach().clone()
        return resized.requires_grad_(value.requires_grad)

    return tuple(resize(a) for a in args), {k: resize(v) for k, v in kwargs.items()}, new, size


def _hooked_views(model: nn.Module) -> list[tuple[str, Any]]:
    """Tensor hooks on views of the model's parameters (``fc.weight[0].register_hook``) that are still alive: the
    forward uses the parameter itself, never such a view, so they never fire."""
    params = {id(p): n for n, p in model.named_parameters()}
    found = []
    for obj in gc.get_objects():
        if not issubclass(type(obj), Tensor) or isinstance(obj, nn.Parameter):
            continue
        base = obj._base
        hooks = obj._backward_hooks
        if base is not None and id(base) in params and hooks:
            found += [(params[id(base)], hook) for hook in hooks.values() if not library_owned(hook)]
    return found
