"""Rules about what a hook returns: what PyTorch does with it, what it replaces, and what the hook forgot to return.

Each rule decides from the values themselves: what the hook received (the output, the arguments, the
gradients), what it returned, what it held in its frame when it returned None, and, for a run that fails,
which hook's return value, left out in a differential pass, makes the run succeed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from torch import Tensor
from torch.utils.hooks import RemovableHandle

from hookviz.capture import iter_tensors
from hookviz.diagnose.facts import PLACES, describe, output_tensors
from hookviz.diagnose.report import (
    POST_ACCUMULATE_RETURN,
    REPLACE_OUTPUT,
    RETURN_NEW_ARGS,
    RETURN_REPLACES,
    WHAT_CAN_CHANGE,
    clinic,
)
from hookviz.diagnose.rules.base import Rule, rule
from hookviz.i18n import N_, N_name

if TYPE_CHECKING:
    from hookviz.diagnose.facts import Call, Evidence, Site

#: What a hook's return value takes the place of, by role.
REPLACES = {
    "tensor": N_name("the gradient"),
    "forward": N_name("the module's output"),
    "forward_pre": N_name("the module's positional arguments"),
    "backward": "grad_input",
    "backward_pre": "grad_output",
    "backward_legacy": "grad_input",
}
#: What a hook of each role may return (the fix when it returns something else).
MAY_RETURN = {
    "tensor": N_("return None, or a tensor of the gradient's shape and dtype"),
    "forward": N_("return None (a hook that only records), or a value of the output's structure, shape and dtype"),
    "forward_pre": N_(
        "return None, or a tuple of new positional arguments (with with_kwargs=True: a pair (args, kwargs))"
    ),
    "backward": N_("return None, or a tuple with one entry per grad_input entry (None or a tensor of its shape)"),
    "backward_pre": N_("return None, or a tuple with one entry per grad_output entry (None or a tensor of its shape)"),
    "backward_legacy": N_("return None, or a tuple with one entry per grad_input entry"),
    "post_accumulate_grad": N_("return None: edit param.grad in place"),
}


@rule
class HookReturnsHandle(Rule):
    id = "hook-returns-handle"
    severity = "error"
    link = clinic(26)
    fix = N_("a def that registers the tensor hook and returns nothing")
    summary = N_("a forward hook returns the RemovableHandle of output.register_hook(...)")

    def call(self, run: Evidence, call: Call) -> None:
        if call.site.role in ("forward", "forward_pre") and isinstance(call.result, RemovableHandle):
            call.neutralise()
            self.report(
                run,
                call.site.where,
                N_(
                    f"the {call.site.kind_words} `{call.site.label}` on {call.site.where} returns a RemovableHandle "
                    "(a lambda returning output.register_hook(...)): what a forward hook returns replaces the output, "
                    "so the next layer receives the handle."
                ),
            )


@rule
class HookReturnsInput(Rule):
    id = "hook-returns-input"
    severity = "error"
    link = REPLACE_OUTPUT
    fix = N_("return None to leave the output alone, or return a new output computed from `output`")
    summary = N_("a forward hook returns the module's input: the module's work is thrown away")

    def call(self, run: Evidence, call: Call) -> None:
        site, result = call.site, call.result
        if site.role != "forward" or result is None or call.neutralised or len(call.args) < 3:
            return
        inputs = call.args[1] if not site.with_kwargs else call.args[1]
        input_ids = {id(t) for t in output_tensors(inputs, 2)} | {id(inputs)}
        output_ids = {id(t) for t in output_tensors(call.args[-1], 2)}
        returned = list(output_tensors(result, 2)) if not isinstance(result, Tensor) else [result]
        if id(result) in input_ids or (returned and all(id(t) in input_ids - output_ids for t in returned)):
            call.neutralise()
            self.report(
                run,
                site.where,
                N_(
                    f"the forward hook `{site.label}` on {site.where} returns the module's input ({describe(result)}) "
                    "instead of its output: the returned value replaces the output, so the module's own work is "
                    "thrown away and the next layer receives what this one received."
                ),
            )


@rule
class HookChangesStructure(Rule):
    id = "hook-changes-structure"
    severity = "error"
    link = clinic(7)
    fix = N_("return the same structure, changing only the entry you mean: (hidden * 2, *rest)")
    summary = N_("a forward hook returns a bare tensor where the module returned a tuple")

    def call(self, run: Evidence, call: Call) -> None:
        result = call.result
        if call.site.role != "forward" or result is None or call.neutralised:
            return
        output = call.args[-1]
        if isinstance(output, (tuple, list)) and (not isinstance(result, (tuple, list)) or len(result) != len(output)):
            call.neutralise()
            self.report(
                run,
                call.site.where,
                N_(
                    f"the forward hook `{call.site.label}` on {call.site.where} returns {describe(result, 0)} where "
                    "the "
                    f"module returned {describe(output, 0)}: the returned value replaces the whole output, so the "
                    "code after the module unpacks the wrong thing."
                ),
            )


@rule
class HookCutsGraph(Rule):
    id = "hook-cuts-graph"
    severity = "error"
    link = clinic(11)
    fix = N_("a hook that stores returns nothing: stored.append(output.detach()) without `return`")
    summary = N_("a forward hook returns output.detach(): no gradient flows back through the module")

    def call(self, run: Evidence, call: Call) -> None:
        if call.site.role != "forward" or call.result is None or call.neutralised or not call.pass_.grad:
            return
        old = [t for _, t in iter_tensors(call.args[-1])]
        new = [t for _, t in iter_tensors(call.result)]
        if any(t.requires_grad for t in old) and new and not any(t.requires_grad for t in new):
            call.neutralise()
            self.report(
                run,
                call.site.where,
                N_(
                    f"the forward hook `{call.site.label}` on {call.site.where} returns a tensor that needs no "
                    "gradient (output.detach()?): it replaces the output, so no gradient flows back through this "
                    "module and the layers before it stop learning."
                ),
            )


@rule
class OutputReplacedByAnotherShape(Rule):
    id = "output-replaced"
    severity = "warning"
    link = REPLACE_OUTPUT
    fix = N_("return a tensor of the output's shape and dtype (or None to leave the output alone)")
    summary = N_("a forward hook replaces the output with a tensor of another shape or dtype")

    def call(self, run: Evidence, call: Call) -> None:
        site, result = call.site, call.result
        if site.role != "forward" or call.neutralised or not isinstance(result, Tensor):
            return
        output = call.args[-1]
        if not isinstance(output, Tensor) or output.is_nested or result.is_nested:
            return
        if result.shape != output.shape or result.dtype != output.dtype:
            self.report(
                run,
                site.where,
                N_(
                    f"the forward hook `{site.label}` on {site.where} replaces the output, {describe(output)}, with "
                    f"{describe(result)}: every layer after it now computes on a value of another shape or type."
                ),
            )


@rule
class BadGradientReturn(Rule):
    id = "bad-gradient-return"
    severity = "error"
    link = clinic(21)
    fix = N_("return None (compute summaries separately) or a tensor of the same shape and dtype")
    summary = N_("a tensor hook returns something other than None or a gradient of the same shape and dtype")

    def call(self, run: Evidence, call: Call) -> None:
        result = call.result
        if call.site.role != "tensor" or result is None or call.neutralised:
            return
        grad = call.args[0]
        if isinstance(result, Tensor) and result.shape == grad.shape and result.dtype == grad.dtype:
            return
        call.neutralise()
        self.report(
            run,
            call.site.where,
            N_(
                f"the tensor hook `{call.site.label}` on {PLACES} returns {describe(result)} for a gradient that is "
                f"{describe(grad)}: what a tensor hook returns replaces the gradient, and backward() refuses another "
                "size or type."
            ),
            group=f"{call.site.name}:{describe(result)}",
        )


@rule
class BadBackwardReturn(Rule):
    id = "bad-backward-return"
    severity = "error"
    link = WHAT_CAN_CHANGE
    fix = N_("return None, or a tuple with one entry (None or a tensor of the same shape) per gradient received")
    summary = N_("a module backward hook or backward pre-hook returns what backward() refuses")

    def call(self, run: Evidence, call: Call) -> None:
        site, result = call.site, call.result
        if site.role not in ("backward", "backward_pre") or result is None or call.neutralised or len(call.args) < 2:
            return
        received = call.args[1]
        what = "grad_input" if site.role == "backward" else "grad_output"
        problem = _gradient_tuple_problem(result, received, site, what)
        if problem is None:
            return
        call.neutralise()
        self.report(
            run,
            site.where,
            problem,
            fix=MAY_RETURN[site.role],
        )


def _gradient_tuple_problem(result: Any, received: Any, site: Site, what: str) -> str | None:
    """Why ``result`` cannot replace the gradient tuple ``received``, as the finding's message (None when it can)."""
    head = (site.kind_words, site.label, site.where, describe(result), what, describe(received))
    words, label, where, returned, which, had = head
    if not isinstance(result, (tuple, list)):
        return N_(
            f"the {words} `{label}` on {where} returns {returned} for {which}, which is {had}: a backward hook must "
            "return a tuple (one entry per gradient), not a bare value, so backward() fails."
        )
    if len(result) != len(received):
        return N_(
            f"the {words} `{label}` on {where} returns {returned} for {which}, which is {had}: it has {len(result)} "
            f"entries where {len(received)} are needed, so backward() fails."
        )
    for new, old in zip(result, received, strict=True):
        if new is None or old is None:
            continue
        if not isinstance(new, Tensor):
            return N_(
                f"the {words} `{label}` on {where} returns {returned} for {which}, which is {had}: an entry is "
                f"{describe(new)}, not a tensor, so backward() fails."
            )
        if new.shape != old.shape:
            return N_(
                f"the {words} `{label}` on {where} returns {returned} for {which}, which is {had}: an entry has shape "
                f"{tuple(new.shape)} where the gradient has {tuple(old.shape)}, so backward() fails."
            )
    return None


@rule
class PreHookKeywordsReturn(Rule):
    id = "pre-hook-return"
    severity = "error"
    link = RETURN_NEW_ARGS
    fix = N_("with with_kwargs=True return None or a pair (args, kwargs): return args, {**kwargs, 'mask': mask}")
    summary = N_("a forward pre-hook registered with with_kwargs=True returns something other than (args, kwargs)")

    def call(self, run: Evidence, call: Call) -> None:
        site, result = call.site, call.result
        if site.role != "forward_pre" or not site.with_kwargs or result is None or call.neutralised:
            return
        if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict):
            return
        call.neutralise()
        self.report(
            run,
            site.where,
            N_(
                f"the forward pre-hook `{site.label}` on {site.where} was registered with with_kwargs=True and returns "
                f"{describe(result)}: PyTorch needs None or a pair (new_args, new_kwargs) from it, and the forward "
                "fails."
            ),
        )


@rule
class PostAccumulateReturns(Rule):
    id = "post-accumulate-returns"
    severity = "error"
    link = POST_ACCUMULATE_RETURN
    fix = N_("return nothing: a def whose body edits param.grad (a lambda returns what its expression gives)")
    summary = N_("a post-accumulate-grad hook returns a value: backward() fails")

    def call(self, run: Evidence, call: Call) -> None:
        if call.site.role == "post_accumulate_grad" and call.error is None and call.result is not None:
            call.neutralise()
            self.report(
                run,
                call.site.where,
                N_(
                    f"the post-accumulate-grad hook `{call.site.label}` on {PLACES} returns {describe(call.result)} "
                    "(a lambda returns its expression, p.grad.mul_(0.5) included): PyTorch requires None from these "
                    "hooks, and backward() fails with 'post accumulate grad hooks should return None'."
                ),
                group=call.site.name,
            )


@rule
class ReturnForgotten(Rule):
    id = "return-forgotten"
    severity = "warning"
    link = WHAT_CAN_CHANGE
    fix = N_(
        "return the new value (return grad_input, return output, return grad): a hook returning None changes nothing"
    )
    summary = N_("a hook computes a new gradient, output or input from its arguments and throws it away")
    _LINKS = {"tensor": RETURN_REPLACES, "forward": REPLACE_OUTPUT, "forward_pre": RETURN_NEW_ARGS}

    def call(self, run: Evidence, call: Call) -> None:
        """Evidence: the hook returned None, and held in a local variable a tensor it computed from its arguments,
        of the shape and dtype of what it may replace, that no later operation read and nothing kept."""
        site = call.site
        if site.role not in REPLACES or site.pytorch_owned:
            return
        dropped = call.dropped()
        if not dropped:
            return
        local = dropped[0]
        dtype = str(local.dtype).removeprefix("torch.")
        shape = f"Tensor({', '.join(map(str, local.shape))}{', ' if local.shape else ''}{dtype})"
        what = shape if not local.parts else f"{local.parts} × {shape}"
        self.report(
            run,
            site.where,
            N_(
                f"the {site.kind_words} `{site.label}` on {PLACES} computes `{local.name}` ({what}) like "
                f"{REPLACES[site.role]} from its arguments, then returns None and throws it away: only what a hook "
                f"returns replaces {REPLACES[site.role]}, so this hook changes nothing."
            ),
            link=self._LINKS.get(site.role, self.link),
            fix=(
                N_("return the value the hook computes: `return output.mul(2)`, not a bare `output.mul(2)`")
                if local.expression
                else _return_fix(site, local.name, bool(local.parts))
            ),
            group=f"{site.name}:{local.name}",
        )


def _return_fix(site: Site, name: str, is_tuple: bool) -> str:
    if is_tuple:
        return N_(f"end the hook with `return {name}`")
    if site.role in ("forward_pre",):
        return N_(f"end the hook with `return ({name},)` (a tuple of the new positional arguments)")
    if site.role in ("backward", "backward_pre", "backward_legacy"):
        return N_(f"end the hook with `return ({name},)` (a tuple with one entry per gradient; None keeps one)")
    return N_(f"end the hook with `return {name}`")


@rule
class ReturnBreaksRun(Rule):
    id = "return-breaks-run"
    severity = "error"
    link = WHAT_CAN_CHANGE
    fix = N_("make the hook return None (to only record) or a value of the structure, shape and dtype it replaces")
    summary = N_(
        "a hook's return value (or what it does) makes the forward or the backward fail; found by leaving it out"
    )

    def after(self, run: Evidence) -> None:
        sites = {id(s): s for s in run.sites}
        for key, (tag, error, call) in run.culprits.items():
            site = sites[key]
            pass_name, phase, how = tag.split(":")
            failure = f"{type(error).__name__}: {(str(error).strip().splitlines() or [''])[0]}"
            step = N_name("forward") if phase == "forward" else N_name("backward")
            when = {
                "caller": N_name("under torch.no_grad() (how you called diagnose(), as in a validation loop)"),
                "batch": N_name("on a batch of another size (the last batch of an epoch is often smaller)"),
            }.get(pass_name, N_name("in the training step"))
            if how == "ignored" and call is not None:
                received = call.args[-1] if site.role == "forward" else (call.args[1] if len(call.args) > 1 else None)
                message = N_(
                    f"the {step} fails {when} because of the {site.kind_words} `{site.label}` on {site.where}: it "
                    f"returns {describe(call.result)} in place of {REPLACES.get(site.role, site.role)}, which is "
                    f"{describe(received)}; without that return value the {step} runs. The failure: {failure}"
                )
                fix = MAY_RETURN.get(site.role, self.fix)
            else:
                message = N_(
                    f"the {step} fails {when} because of the {site.kind_words} `{site.label}` on {site.where}: "
                    f"without it the {step} runs. The failure: {failure}"
                )
                fix = N_("make the hook work on what it receives here, or leave it out of this run")
            self.report(run, site.where, message, fix=fix)
