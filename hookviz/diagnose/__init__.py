"""The hook doctor: run a model, forward and backward, and report the hook pitfalls it carries.

``diagnose(model, inputs)`` reads the hooks already attached to ``model`` (through the inspector,
:func:`hookviz.list_hooks`), swaps each of them for a wrapper that *watches* it, and runs the model on the inputs you
give. Every rule decides from what the run observed, never from the names in your code: what a hook received,
returned and raised; which tensors it edited in place (their version counters) or through ``.data`` (their values);
the tensors it computed from its arguments and threw away when it returned None (a forgotten ``return``); the torch
functions it called (``.item()``, reading ``p.grad``, registering a tensor hook, which is then watched too); what it
changed on the model (modes, ``requires_grad``, weights, grad mode) or registered; what it keeps afterwards
(closures, globals, bound objects, module attributes). What it finds comes back as a :class:`Diagnosis`: a list of
:class:`Finding` (kind, severity, where, message, fix, link) that prints as a text table and shows as an HTML table
in a notebook; a clean model gives ``no findings``. Each link points at the clinic section
(``notebooks/11_mistakes_clinic.ipynb#mistake-NN``) or the notebook that teaches the pitfall.

Where one run cannot tell, it runs again (:mod:`hookviz.diagnose.runner`): in your grad mode when you call it under
``torch.no_grad()`` (hooks that fail only in validation), on a batch one sample smaller when a hook holds the batch
size as a number, with one hook left out to name the hook whose return value breaks the forward or the backward, and
with a gradient hook given a copy of its gradient to measure what an in-place edit changed. Your hooks therefore run
once, as in one training step, and again only in those passes.

The doctor leaves the model as it found it: every submodule's mode and own attributes (``module.output = ...`` set by
a hook is taken away again; another library's state, such as transformers' output capturing, stays consistent),
parameter values, ``requires_grad``, every ``.grad`` (the very same tensor objects), buffers, tensor hooks, the
random number generator, the grad mode and every hook dict. What your hooks append to your own lists stays there. A
hook that raises or returns something harmful is reported and then neutralised for the rest of the run (its error is
swallowed, its return value ignored), so that one run finds as much as it can. A model that another hookviz tool is
training or showing (a ``TrainingMonitor``) is refused, and so is a call inside ``torch.inference_mode()``.

The doctor is a set of small rules, one per pitfall (:mod:`hookviz.diagnose.rules`, listed in :data:`RULES`): each
has an id (the finding's kind), a severity, a link, a fix and its own detection, and reads only the facts of
:mod:`hookviz.diagnose.facts`. :mod:`hookviz.diagnose.runner` is the one place that owns the hooks' lifetime during
the run; :mod:`hookviz.diagnose.state` puts the model back. Every message is written for the gettext catalogue
(``N_``), so it prints in the learner's language.

>>> import torch, hookviz
>>> print(hookviz.diagnose(torch.nn.Linear(2, 1), torch.randn(3, 2)))
no findings
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn.parameter import is_lazy

from hookviz.diagnose.report import (
    CLINIC,
    COMPILED,
    SCRIPT_HOOKS,
    SEVERITIES,
    Diagnosis,
    DiagnosisError,
    Finding,
    clinic,
    ordered,
)
from hookviz.diagnose.rules import RULES, Rule
from hookviz.diagnose.runner import Run
from hookviz.i18n import N_, N_name, tr

__all__ = [
    "CLINIC",
    "DETECTED",
    "NOT_DETECTABLE",
    "RULES",
    "SEVERITIES",
    "Diagnosis",
    "DiagnosisError",
    "Finding",
    "Rule",
    "clinic",
    "diagnose",
]

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


def _as_call(inputs: Any, kwargs: dict[str, Any] | None) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``inputs`` as the positional and keyword arguments of one call, with gradients kept off the caller's tensors."""
    if inputs is None:
        raise DiagnosisError(
            N_(
                "diagnose() needs `inputs`, the arguments of one forward call: a tensor, a tuple of positional "
                "arguments or a dict of keyword arguments, e.g. hookviz.diagnose(model, torch.randn(8, 1, 8, 8))"
            )
        )
    if isinstance(inputs, Tensor):
        args: tuple[Any, ...] = (inputs,)
        keywords: dict[str, Any] = {}
    elif isinstance(inputs, (tuple, list)):
        args, keywords = tuple(inputs), {}
    elif isinstance(inputs, dict):
        args, keywords = (), dict(inputs)
    else:
        kind = type(inputs).__name__
        raise DiagnosisError(
            N_(
                f"diagnose() got `inputs` of type {kind} (a NumPy array: torch.as_tensor(x) turns it into a tensor); "
                "give a tensor, a tuple of positional arguments or a dict of keyword arguments"
            )
            if hasattr(inputs, "__array__")
            else N_(
                f"diagnose() got `inputs` of type {kind}; give a tensor, a tuple of positional arguments or a dict "
                "of keyword arguments"
            )
        )
    if kwargs is not None:
        if not isinstance(kwargs, dict):
            raise DiagnosisError(N_(f"`kwargs` must be a dict of keyword arguments, got {type(kwargs).__name__}"))
        keywords.update(kwargs)

    def private(value: Any) -> Any:
        # The run must not touch the caller's tensors (a hook may edit its input in place, backward writes
        # .grad): a copy, a fresh leaf that needs grad where they do.
        if isinstance(value, Tensor) and not value.is_nested:
            return value.detach().clone().requires_grad_(value.requires_grad and value.is_floating_point())
        return value

    return tuple(private(a) for a in args), {k: private(v) for k, v in keywords.items()}


def _unwrap_compiled(model: Any) -> tuple[nn.Module, list[Finding]]:
    original = getattr(model, "_orig_mod", None)
    if isinstance(model, nn.Module) and isinstance(original, nn.Module) and type(model).__name__ == "OptimizedModule":
        note = Finding(
            "compiled-wrapper",
            "info",
            "<root>",
            N_(
                "this is a torch.compile wrapper: the doctor runs the original module eagerly. Hooks registered after "
                "the first compiled call may not be seen by the compiled code until it recompiles."
            ),
            N_("register hooks before compiling (or diagnose the model before torch.compile)"),
            COMPILED,
        )
        return original, [note]
    return model, []


def _scripted(model: nn.Module) -> list[Finding]:
    """A TorchScript model runs compiled code: say what the doctor cannot check there."""
    if not isinstance(model, torch.jit.ScriptModule):
        return []
    return [
        Finding(
            "torchscript-model",
            "info",
            "<root>",
            N_(
                "this is a TorchScript model: it runs compiled code, so Python hooks registered on it or on its "
                "submodules after torch.jit.script never run, and its backward hooks were dropped when it was "
                "scripted. The doctor can only check what is attached to it now."
            ),
            N_("register the hooks on the Python model before scripting it (forward hooks only), or diagnose the "
               "Python model"),
            SCRIPT_HOOKS,
        )
    ]


def _check_scaler(scaler: Any) -> None:
    """``scaler=`` is a GradScaler instance (or None); anything else is a TypeError that says what to give."""
    if scaler is None:
        return
    if isinstance(scaler, type):
        raise TypeError(
            tr(
                N_(
                    f"diagnose(scaler=...) got the class {scaler.__name__} itself, not a scaler: create one, "
                    "scaler=torch.amp.GradScaler('cuda') (the one your training loop uses), or leave scaler= out"
                )
            )
        )
    if isinstance(scaler, torch.amp.GradScaler):
        return
    methods = ("scale", "unscale_", "is_enabled", "step", "update")
    if all(callable(getattr(scaler, m, None)) for m in methods) and not isinstance(scaler, torch.optim.Optimizer):
        return  # a GradScaler of another namespace (torch.cuda.amp, ShardedGradScaler)
    raise TypeError(
        tr(
            N_(
                f"diagnose(scaler=...) must be the torch.amp.GradScaler your training loop uses (or None), got "
                f"{type(scaler).__name__}: give scaler=torch.amp.GradScaler('cuda') or your own scaler object, "
                "or leave scaler= out when you do not train with mixed precision"
            )
        )
    )


def _claims() -> Any:
    """The widgets' register of models in use, when the widgets are loaded (else nobody can be using one).

    ``None`` too inside a monitor's training step (its own thread under ``start()``, the caller's under ``run()``):
    there diagnose() is called by the step itself, between two steps' worth of work, and disturbs nothing.
    """
    claims = sys.modules.get("hookviz.widgets.common")
    if threading.current_thread().name.startswith("hookviz-monitor") or (claims and claims.in_monitor_step()):
        return None  # MonitorState.run() runs the step in the caller's thread: in_monitor_step() says so
    return claims


def diagnose(
    model: nn.Module,
    inputs: Any = None,
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
            floating-point output that requires grad (inside tuples, lists, dicts and dataclasses).
        scaler: the ``torch.amp.GradScaler`` your training loop uses, if any: gradient hooks then see
            scaled gradients, and the doctor says so.

    Returns:
        a :class:`Diagnosis`, a list of :class:`Finding` that prints as a table (``no findings`` when clean).

    Raises:
        DiagnosisError: the model is not an ``nn.Module``, another hookviz tool is using it (a monitor
            training it), the call is inside ``torch.inference_mode()``, the inputs are of the wrong type,
            or the forward / ``loss_fn`` fails on them (the message says why and how to fix it).
        TypeError: ``scaler=`` is not a GradScaler.
    """
    if not isinstance(model, nn.Module):
        raise DiagnosisError(
            N_(
                f"diagnose() needs the model (an nn.Module) as its first argument, got {type(model).__name__}; "
                "call hookviz.diagnose(model, inputs)"
            )
        )
    if torch.is_inference_mode_enabled():
        raise DiagnosisError(
            N_(
                "diagnose() was called inside torch.inference_mode(): no tensor made there can have a gradient, "
                "so no backward pass can run (and hooks would be judged on a graph that does not exist). Call "
                "hookviz.diagnose(model, inputs) outside the `with torch.inference_mode():` block."
            )
        )
    tensors = [*model.named_parameters(), *model.named_buffers()]
    inference = [n for n, t in tensors if not is_lazy(t) and t.is_inference()]
    if inference:
        raise DiagnosisError(
            N_(
                f"the model's {inference[0]} (and {len(inference) - 1} more) is an inference tensor: the model was "
                "built "
                "or loaded inside torch.inference_mode(), so it cannot take part in a backward pass. Build or load it "
                "outside the `with torch.inference_mode():` block (torch.no_grad() is enough for evaluation)."
            )
        )
    if loss_fn is not None and not callable(loss_fn):
        raise DiagnosisError(
            N_(
                f"loss_fn must be a function that turns the model's output into a scalar tensor, got "
                f"{type(loss_fn).__name__}; e.g. loss_fn=lambda out: out.logits.sum(), or leave it out"
            )
        )
    _check_scaler(scaler)
    model, notes = _unwrap_compiled(model)
    notes += _scripted(model)
    args, keywords = _as_call(inputs, kwargs)
    claims = _claims()
    owner = object()
    if claims is not None:
        try:
            claims.claim_model(model, owner, N_name("a running hookviz.diagnose()"), "diagnose()")
        except RuntimeError as busy:
            raise DiagnosisError(
                N_(
                    f"{busy}. diagnose() runs its own forward and backward pass and puts the weights back afterwards: "
                    "on a model another tool is training it would disturb that training and report the other "
                    "tool's calls as yours."
                )
            ) from None
    try:
        run = Run(model, loss_fn=loss_fn, scaler=scaler, caller_grad=torch.is_grad_enabled())
        run.diagnose(args, keywords)
    finally:
        if claims is not None:
            claims.release_model(model, owner)
    return Diagnosis(notes + ordered(run.findings))


class _CallableModule(types.ModuleType):
    """This package, callable: ``hookviz.diagnose(model, inputs)`` runs :func:`diagnose`, while ``import
    hookviz.diagnose as dg`` (which Python looks up as the attribute ``hookviz.diagnose``) gives the package itself,
    with :data:`RULES`, :func:`clinic` and :data:`NOT_DETECTABLE`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Diagnosis:
        return diagnose(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
