"""Rules about hooks that raise: in the training step, only under the caller's ``torch.no_grad()``, or only on a
batch of another size, and hooks that read a gradient before it exists."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch import nn

from hookviz.diagnose.facts import BACKWARD_ROLES, PLACES, describe
from hookviz.diagnose.report import EVAL_NO_GRAD, HOOK_RAISES, IF_YOU_SEE, clinic
from hookviz.diagnose.rules.base import Rule, rule
from hookviz.i18n import N_

if TYPE_CHECKING:
    from hookviz.diagnose.facts import Call, Evidence

MODULE_ROLES = ("forward_pre", "forward", "backward_pre", "backward", "backward_legacy")


def received_words(call: Call) -> str:
    """The call the hook received, written like code (for the fix of a hook that raises): the learner can rebuild
    it, ``hook(Linear, tuple(Tensor(8, 4, float32)), Tensor(8, 2, float32))``."""
    parts = [type(a).__name__ if isinstance(a, nn.Module) else describe(a) for a in call.args]
    parts += [f"{k}={describe(v)}" for k, v in call.kwargs.items()]
    return f"{call.site.name}({', '.join(parts)})"


def read_a_grad(call: Call) -> bool:
    """The hook read some tensor's ``.grad`` (seen as ``Tensor.grad.__get__`` among the torch functions it called)."""
    return bool(call.read_grad_of)


@rule
class GradReadTooEarly(Rule):
    id = "grad-read-too-early"
    severity = "warning"
    link = clinic(18)
    fix = N_("register_post_accumulate_grad_hook on the parameter (it runs after .grad is written)")
    summary = N_("a module backward hook reads .grad before this step's gradients are accumulated")

    def call(self, run: Evidence, call: Call) -> None:
        site = call.site
        if site.role not in BACKWARD_ROLES or site.module is None:
            return
        own = {id(p) for p in site.module.parameters()}
        read = [t for t in call.read_grad_of if id(t) in own]
        if read and (call.error is not None or any(t.grad is None for t in read)):
            self.report(
                run,
                site.where,
                N_(
                    f"the {site.kind_words} `{site.label}` on {site.where} reads a parameter's `.grad`, but it runs "
                    "before this step's parameter gradients are accumulated: it sees None, zeros or last step's "
                    "gradient."
                ),
            )


@rule
class HookRaises(Rule):
    id = "hook-raises"
    severity = "error"
    link = HOOK_RAISES
    fix = N_("make the hook work on what it receives; an exception in a hook stops the whole forward or backward")
    summary = N_("a hook raises (wrong signature, None entries, unbound variables, frozen tensors ...)")
    _FIXES = {
        clinic(3): N_(
            "use the signature of the kind you register: forward (module, args, output), pre-hook "
            "(module, args), full backward (module, grad_input, grad_output), tensor (grad)"
        ),
        clinic(4): N_(
            "with with_kwargs=True: forward hook (module, args, kwargs, output), pre-hook (module, args, kwargs)"
        ),
        clinic(5): N_("the hook's input is the tuple of positional arguments: take args[0]"),
        clinic(6): N_(
            "the module was called with keywords only: register with with_kwargs=True and find the "
            "argument by name (inspect.signature(module.forward).bind(*args, **kwargs))"
        ),
        clinic(8): N_("an entry of a hook's tuple is None when there is nothing: skip None entries"),
        clinic(10): N_("store into a dict or list the hook mutates, or declare nonlocal / global"),
        clinic(14): N_("hook only the tensors and parameters that require grad"),
        clinic(18): N_(
            "read parameter gradients in register_post_accumulate_grad_hook, which runs after .grad is written"
        ),
        clinic(23): N_(
            "keep None entries of grad_input as None: tuple(None if g is None else g * s for g in grad_input)"
        ),
        clinic(28): N_(
            "in the forward hook, output.requires_grad_(True) before output.register_hook (or give the "
            "input requires_grad=True)"
        ),
    }

    def call(self, run: Evidence, call: Call) -> None:
        if call.error is None or call.reported:
            return
        error, site = call.error, call.site
        link = classify(run, call)
        if isinstance(error, RecursionError):
            fix = N_(
                "do not call the module a hook is attached to from inside that hook (each call fires the hook again): "
                "use the output the hook receives"
            )
        else:
            fix = self._FIXES.get(link) or N_(
                f"make the hook work on what it receives, here {received_words(call)}; an exception in a hook stops "
                "the whole forward or backward"
            )
        self.report(
            run,
            site.where,
            N_(f"the {site.kind_words} `{site.label}` on {PLACES} raises {type(error).__name__}: {_first_line(error)}"),
            fix=fix,
            link=link,
            group=f"{site.name}:{type(error).__name__}:{_first_line(error)}",
        )


def classify(run: Evidence, call: Call) -> str:
    """The clinic section that explains a hook's error, from the error and what the hook did."""
    error, site, args = call.error, call.site, call.args
    text = str(error)
    phase = site.kind.phase
    if isinstance(error, (UnboundLocalError, NameError)):
        return clinic(10)
    if isinstance(error, TypeError) and ("positional argument" in text or "were given" in text):
        return clinic(4) if site.with_kwargs else clinic(3)
    if isinstance(error, AttributeError) and "'dict' object" in text and site.with_kwargs:
        return clinic(4)
    if isinstance(error, AttributeError) and "'tuple' object" in text and phase == "forward":
        return clinic(5)
    if isinstance(error, IndexError) and phase == "forward" and len(args) > 1 and args[1] == ():
        return clinic(6)
    if "NoneType" in text and site.role in MODULE_ROLES and read_a_grad(call):
        return clinic(18) if phase == "backward" else clinic(8)
    if "NoneType" in text:
        return clinic(23) if phase == "backward" else clinic(8)
    if "doesn't require gradient" in text or "does not require grad" in text:
        trainable = any(p.requires_grad for p in run.model.parameters())
        return clinic(14) if trainable else clinic(28)
    return HOOK_RAISES


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [""])[0]


@rule
class RaisesOnlyInContext(Rule):
    id = "hook-raises-in-context"
    severity = "error"
    link = IF_YOU_SEE
    fix = N_("make the hook work in every context it runs in: without gradients, and on every batch size")
    summary = N_("a hook that works in the training step raises under torch.no_grad() or on a batch of another size")
    passes = ("caller", "batch")

    def call(self, run: Evidence, call: Call) -> None:
        if call.error is None:
            return
        site, error = call.site, call.error
        main = run.passes.get("main")
        if main is not None and any(c.site is site and c.error is not None for c in main.calls):
            return  # it raises in the training step too: reported there
        if call.pass_.name == "caller":
            message = N_(
                f"the {site.kind_words} `{site.label}` on {PLACES} raises {type(error).__name__} under "
                "torch.no_grad(), where you called diagnose() (a validation loop), but not with gradients on: "
                f"{_first_line(error)}"
            )
            fix = N_(
                "make the hook work without gradients: guard what needs a graph with `if output.requires_grad:` "
                "(output.register_hook, output.grad_fn ...), or remove the hook before evaluating"
            )
            link = EVAL_NO_GRAD
        else:
            message = N_(
                f"the {site.kind_words} `{site.label}` on {PLACES} raises {type(error).__name__} on a batch of "
                f"{call.pass_.batch} samples, but not on the batch you gave (the last batch of an epoch is often "
                f"smaller): {_first_line(error)}"
            )
            fix = N_("use the sizes the hook receives (output.shape[0], output.flatten(1)) instead of fixed numbers")
            link = self.link
        self.report(
            run,
            site.where,
            message,
            fix=fix,
            link=link,
            group=f"{site.name}:{call.pass_.name}",
        )
