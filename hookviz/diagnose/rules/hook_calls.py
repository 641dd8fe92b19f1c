"""Rules that watch every call of a user hook: what it received, edited, returned or raised."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from torch import Tensor
from torch.utils.hooks import RemovableHandle

from hookviz.capture import iter_tensors
from hookviz.diagnose import code
from hookviz.diagnose.report import (
    DO_NOT_MODIFY,
    HOOK_RAISES,
    POST_ACCUMULATE_RETURN,
    PRE_HOOK_IN_PLACE,
    REPLACE_OUTPUT,
    RETURN_NEW_ARGS,
    RETURN_REPLACES,
    WHAT_CAN_CHANGE,
    clinic,
)
from hookviz.diagnose.rules import Rule, rule

if TYPE_CHECKING:
    from hookviz.diagnose.runner import Call, Run

BACKWARD_ROLES = ("backward", "backward_pre", "backward_legacy")
MODULE_ROLES = ("forward_pre", "forward", "backward_pre", "backward", "backward_legacy")


@rule
class GradReadTooEarly(Rule):
    id = "grad-read-too-early"
    severity = "warning"
    link = clinic(18)
    fix = "register_post_accumulate_grad_hook on the parameter (it runs after .grad is written)"
    summary = "a module backward hook reads .grad before this step's gradients are accumulated"

    def before(self, run: Run, call: Call) -> None:
        site = call.site
        if site.role not in BACKWARD_ROLES or site.module is None or "grad" not in code.attribute_names(site.hook):
            return
        if any(p.grad is None for p in site.module.parameters(recurse=False)):
            self.report(
                run,
                site.where,
                f"the backward hook {site.name} reads a `.grad`, but it runs before this step's parameter "
                "gradients are accumulated: it sees None, zeros or last step's gradient.",
            )


@rule
class OutputEditedInPlace(Rule):
    id = "output-edited-in-place"
    severity = "error"
    link = clinic(15)
    fix = "return a new tensor (output * 2, output.clamp(...)) instead of editing in place"
    summary = "a forward hook edits the module's output in place"

    def call(self, run: Run, call: Call) -> None:
        if call.site.role == "forward" and call.edited():
            self.report(
                run,
                call.site.where,
                f"the forward hook {call.site.name} edits the module's output in place: when a layer saved that "
                "output for backward (ReLU, Tanh, Sigmoid ...), backward() fails with 'modified by an "
                "inplace operation'; elsewhere the edit silently changes what later hooks see.",
            )


@rule
class InputEditedInPlace(Rule):
    id = "input-edited-in-place"
    severity = "warning"
    link = PRE_HOOK_IN_PLACE
    fix = "return new arguments instead: return (args[0] * 2,) (a pre-hook's return value replaces the arguments)"
    summary = "a forward pre-hook edits the module's input in place (the caller's tensor)"

    def call(self, run: Run, call: Call) -> None:
        if call.site.role == "forward_pre" and not call.site.pytorch_owned and call.edited():
            self.report(
                run,
                call.site.where,
                f"the forward pre-hook {call.site.name} edits the module's input in place: that tensor is the "
                "previous layer's output (or your batch), so the edit changes it for every other reader, and "
                "backward() fails when an operation saved it.",
            )


@rule
class GradientEditedInPlace(Rule):
    id = "gradient-edited-in-place"
    severity = "warning"
    link = DO_NOT_MODIFY
    fix = (
        "return a new gradient instead of editing the argument: `return grad * 0.5` in a tensor hook, "
        "`return tuple(None if g is None else g * 0.5 for g in grad_input)` in a backward hook"
    )
    summary = "a gradient hook edits the gradient it receives in place (mul_, clamp_, +=, [...] =)"
    _FAILS = ("single memory location", "modified by an inplace", "is being modified inplace", "in-place")

    def call(self, run: Run, call: Call) -> None:
        site = call.site
        if site.role not in ("tensor", *BACKWARD_ROLES) or site.pytorch_owned:
            return
        kind = "tensor hook" if site.role == "tensor" else f"{site.kind.name.replace('_', ' ')} hook"
        if call.error is not None:
            text = str(call.error)
            if any(part in text for part in self._FAILS) or call.edited():
                call.reported = True
                self.report(
                    run,
                    site.where,
                    f"the {kind} {site.name} edits the gradient it receives in place, and then fails: "
                    f"{type(call.error).__name__}: {(text.splitlines() or [''])[0]} (a gradient can be an expanded "
                    "view, one memory cell for many elements, which PyTorch refuses to write into).",
                    severity="error",
                )
            return
        if call.edited():
            self.report(
                run,
                site.where,
                f"the {kind} {site.name} edits the gradient it receives in place: PyTorch's documentation says a "
                "hook must not modify its argument. The edit works or not by accident: it can change another "
                "tensor's gradient that shares the memory, and it fails when the gradient is an expanded view.",
            )


@rule
class HookReturnsHandle(Rule):
    id = "hook-returns-handle"
    severity = "error"
    link = clinic(26)
    fix = "a def that registers the tensor hook and returns nothing"
    summary = "a forward hook returns the RemovableHandle of output.register_hook(...)"

    def call(self, run: Run, call: Call) -> None:
        if call.site.role in ("forward", "forward_pre") and isinstance(call.result, RemovableHandle):
            call.neutralise()
            self.report(
                run,
                call.site.where,
                f"the hook {call.site.name} returns a RemovableHandle (a lambda returning output.register_hook(...)): "
                "what a forward hook returns replaces the output, so the next layer receives the handle.",
            )


@rule
class HookChangesStructure(Rule):
    id = "hook-changes-structure"
    severity = "error"
    link = clinic(7)
    fix = "return the same structure, changing only the entry you mean: (hidden * 2, *rest)"
    summary = "a forward hook returns a bare tensor where the module returned a tuple"

    def call(self, run: Run, call: Call) -> None:
        result = call.result
        if call.site.role != "forward" or result is None or call.neutralised:
            return
        output = call.args[-1]
        if isinstance(output, (tuple, list)) and (not isinstance(result, (tuple, list)) or len(result) != len(output)):
            call.neutralise()
            self.report(
                run,
                call.site.where,
                f"the forward hook {call.site.name} returns {type(result).__name__} where the module returned a "
                f"{type(output).__name__} of {len(output)}: the returned value replaces the whole output, so the "
                "code after the module unpacks the wrong thing.",
            )


@rule
class HookCutsGraph(Rule):
    id = "hook-cuts-graph"
    severity = "error"
    link = clinic(11)
    fix = "a hook that stores returns nothing: stored.append(output.detach()) without `return`"
    summary = "a forward hook returns output.detach(): no gradient flows back through the module"

    def call(self, run: Run, call: Call) -> None:
        if call.site.role != "forward" or call.result is None or call.neutralised:
            return
        old = [t for _, t in iter_tensors(call.args[-1])]
        new = [t for _, t in iter_tensors(call.result)]
        if any(t.requires_grad for t in old) and new and not any(t.requires_grad for t in new):
            call.neutralise()
            self.report(
                run,
                call.site.where,
                f"the forward hook {call.site.name} returns a tensor that needs no gradient (output.detach()?): it "
                "replaces the output, so no gradient flows back through this module and the layers before it "
                "stop learning.",
            )


@rule
class BadGradientReturn(Rule):
    id = "bad-gradient-return"
    severity = "error"
    link = clinic(21)
    fix = "return None (compute summaries separately) or a tensor of the same shape and dtype"
    summary = "a tensor hook returns something other than None or a gradient of the same shape and dtype"

    def call(self, run: Run, call: Call) -> None:
        result = call.result
        if call.site.role != "tensor" or result is None or call.neutralised:
            return
        grad = call.args[0]
        if isinstance(result, Tensor) and result.shape == grad.shape and result.dtype == grad.dtype:
            return
        got = (
            f"a tensor of shape {tuple(result.shape)} ({result.dtype})"
            if isinstance(result, Tensor)
            else f"a {type(result).__name__}"
        )
        call.neutralise()
        self.report(
            run,
            call.site.where,
            f"the tensor hook {call.site.name} returns {got} for a gradient of shape {tuple(grad.shape)} "
            f"({grad.dtype}): what a tensor hook returns replaces the gradient, and backward() refuses another "
            "size or type.",
        )


@rule
class HookEditsParameter(Rule):
    id = "hook-edits-parameter"
    severity = "error"
    link = clinic(19)
    fix = "edit param.grad inside the hook (param.grad.mul_(0.5))"
    summary = "a post-accumulate-grad hook edits the parameter, thinking it receives the gradient"

    def call(self, run: Run, call: Call) -> None:
        if call.site.role == "post_accumulate_grad" and call.edited():
            self.report(
                run,
                call.site.where,
                f"the post-accumulate-grad hook {call.site.name} edits the parameter itself in place: it receives the "
                "parameter, not its gradient, so the weights change and .grad does not.",
            )


@rule
class PostAccumulateReturns(Rule):
    id = "post-accumulate-returns"
    severity = "error"
    link = POST_ACCUMULATE_RETURN
    fix = "return nothing: a def whose body edits param.grad (a lambda returns what its expression gives)"
    summary = "a post-accumulate-grad hook returns a value: backward() fails"

    def call(self, run: Run, call: Call) -> None:
        if call.site.role == "post_accumulate_grad" and call.error is None and call.result is not None:
            call.neutralise()
            self.report(
                run,
                call.site.where,
                f"the post-accumulate-grad hook {call.site.name} returns a {type(call.result).__name__} "
                "(a lambda returns its expression, p.grad.mul_(0.5) included): PyTorch requires None from these "
                "hooks, and backward() fails with 'post accumulate grad hooks should return None'.",
            )


@rule
class ReturnForgotten(Rule):
    id = "return-forgotten"
    severity = "warning"
    link = WHAT_CAN_CHANGE
    fix = "return the new value (return grad_input, return output, return grad): a hook returning None changes nothing"
    summary = "a hook builds a new gradient, output or input and forgets to return it"
    _LINKS = {"tensor": RETURN_REPLACES, "forward": REPLACE_OUTPUT, "forward_pre": RETURN_NEW_ARGS}
    _WHAT = {
        "tensor": "the gradient",
        "forward": "the output",
        "forward_pre": "the arguments",
        "backward": "grad_input",
        "backward_pre": "grad_output",
        "backward_legacy": "grad_input",
    }

    def call(self, run: Run, call: Call) -> None:
        site = call.site
        if site.role not in self._WHAT or call.error is not None or call.result is not None or site.pytorch_owned:
            return
        variable = code.dead_store(site.hook)
        if variable is None:
            return
        self.report(
            run,
            site.where,
            f"the {site.kind.name.replace('_', ' ')} hook {site.name} computes {variable!r} and never uses it, and "
            f"returns None: only what a hook returns replaces {self._WHAT[site.role]}, so the new value is lost "
            "and the hook changes nothing.",
            link=self._LINKS.get(site.role, self.link),
            fix=f"end the hook with `return {variable}`",
        )


@rule
class HookRaises(Rule):
    id = "hook-raises"
    severity = "error"
    link = HOOK_RAISES
    fix = "run the hook on its own to see why; an exception in a hook stops the whole forward/backward"
    summary = "a hook raises (wrong signature, None entries, unbound variables, frozen tensors ...)"
    _FIXES = {
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
        clinic(18): "read parameter gradients in register_post_accumulate_grad_hook, which runs after .grad is written",
        clinic(23): "keep None entries of grad_input as None: tuple(None if g is None else g * s for g in grad_input)",
        clinic(28): "in the forward hook, output.requires_grad_(True) before output.register_hook (or give the "
        "input requires_grad=True)",
    }

    def call(self, run: Run, call: Call) -> None:
        if call.error is None or call.reported:
            return
        error, site, args = call.error, call.site, call.args
        link = self._classify(run, call, error, args)
        self.report(
            run,
            site.where,
            f"the {site.kind.name} hook {site.name} raises {type(error).__name__}: {error}",
            fix=self._FIXES.get(link, self.fix),
            link=link,
        )

    def _classify(self, run: Run, call: Call, error: Exception, args: tuple[Any, ...]) -> str:
        text = str(error)
        site = call.site
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
        if "NoneType" in text and site.role in MODULE_ROLES and "grad" in code.attribute_names(site.hook):
            return clinic(18) if phase == "backward" else clinic(8)
        if "NoneType" in text:
            return clinic(23) if phase == "backward" else clinic(8)
        if "doesn't require gradient" in text:
            trainable = any(p.requires_grad for p in run.model.parameters())
            return clinic(14) if trainable else clinic(28)
        return self.link
