"""Rules about what a hook edits in place: the output, the input, a gradient or a parameter.

An edit is seen in the values, not in the code: a tensor's version counter moves when autograd sees an
in-place operation; its values change without the version moving when the edit goes through ``.data`` (or
under ``torch.no_grad()``), which autograd never sees. What an in-place gradient edit did is measured by a
differential pass: the same step with the hook given a copy of its gradient and its edit returned as the new
gradient; leaves whose gradient differs between the two are what the in-place edit changed besides.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookviz.diagnose.facts import PLACES
from hookviz.diagnose.report import DO_NOT_MODIFY, PRE_HOOK_IN_PLACE, clinic
from hookviz.diagnose.rules.base import Rule, rule
from hookviz.i18n import N_, N_name

if TYPE_CHECKING:
    from hookviz.diagnose.facts import Call, Evidence

BACKWARD_ROLES = ("backward", "backward_pre", "backward_legacy")


@rule
class OutputEditedInPlace(Rule):
    id = "output-edited-in-place"
    severity = "error"
    link = clinic(15)
    fix = N_("return a new tensor (output * 2, output.clamp(...)) instead of editing in place")
    summary = N_("a forward hook edits the module's output in place")

    def call(self, run: Evidence, call: Call) -> None:
        if call.site.role == "forward" and call.edited("output"):
            self.report(
                run,
                call.site.where,
                N_(
                    f"the forward hook `{call.site.label}` on {call.site.where} edits the module's output in place: "
                    "when a "
                    "layer saved that output for backward (ReLU, Tanh, Sigmoid ...), backward() fails with 'modified "
                    "by an inplace operation'; elsewhere the edit silently changes what later hooks see."
                ),
            )


@rule
class InputEditedInPlace(Rule):
    id = "input-edited-in-place"
    severity = "warning"
    link = PRE_HOOK_IN_PLACE
    fix = N_("return new arguments instead: return (args[0] * 2,) (a pre-hook's return value replaces the arguments)")
    summary = N_("a forward pre-hook edits the module's input in place (the caller's tensor)")

    def call(self, run: Evidence, call: Call) -> None:
        if call.site.role in ("forward_pre", "forward") and not call.site.pytorch_owned and call.edited("input"):
            self.report(
                run,
                call.site.where,
                N_(
                    f"the {call.site.kind_words} `{call.site.label}` on {call.site.where} edits the module's input in "
                    "place: "
                    "that tensor is the previous layer's output (or your batch), so the edit changes it for every "
                    "other reader, and backward() fails when an operation saved it."
                ),
            )


@rule
class EditedThroughData(Rule):
    id = "edit-through-data"
    severity = "warning"
    link = clinic(15)
    fix = N_(
        "return a new tensor from the hook (output * mask, grad.clamp(-1, 1)) instead of writing through .data: "
        "autograd then knows what happened"
    )
    summary = N_("a hook changes the values of what it received through .data: autograd never sees the edit")

    def call(self, run: Evidence, call: Call) -> None:
        site = call.site
        if site.pytorch_owned or site.role == "post_accumulate_grad":
            return
        edited = [r for r in call.received if r.edited_unseen() and r.what != "weight"]
        if not edited:
            return
        what = {
            "gradient": N_name("the gradient"),
            "output": N_name("the module's output"),
            "input": N_name("the module's input"),
        }.get(edited[0].what, N_name("what it received"))
        consequence = (
            N_name(
                "backward() then computes with values it did not save and raises nothing: the gradients are "
                "silently wrong"
            )
            if site.role in ("forward", "forward_pre")
            else N_name(
                "autograd's own checks (an expanded gradient, a tensor another branch still reads) cannot stop it, "
                "so when the gradient is shared the edit silently changes other gradients too"
            )
        )
        self.report(
            run,
            site.where,
            N_(
                f"the {site.kind_words} `{site.label}` on {PLACES} changes the values of {what} through .data (or "
                "under "
                f"torch.no_grad()), which moves no version counter: {consequence}."
            ),
            group=site.name,
        )


@rule
class GradientEditedInPlace(Rule):
    id = "gradient-edited-in-place"
    severity = "warning"
    link = DO_NOT_MODIFY
    fix = N_(
        "return a new gradient instead of editing the argument: `return grad * 0.5` in a tensor hook, "
        "`return tuple(None if g is None else g * 0.5 for g in grad_input)` in a backward hook"
    )
    summary = N_("a gradient hook edits the gradient it receives in place (mul_, clamp_, +=, [...] =)")
    _FAILS = ("single memory location", "modified by an inplace", "is being modified inplace", "in-place")

    def call(self, run: Evidence, call: Call) -> None:
        site = call.site
        if site.role not in ("tensor", *BACKWARD_ROLES) or site.pytorch_owned or call.error is None:
            return
        text = str(call.error)
        if any(part in text for part in self._FAILS) or call.edited():
            call.reported = True
            self.report(
                run,
                site.where,
                N_(
                    f"the {site.kind_words} `{site.label}` on {PLACES} edits the gradient it receives in place, and "
                    f"then fails: {type(call.error).__name__}: {(text.splitlines() or [''])[0]} (a gradient can be an "
                    "expanded view, one memory cell for many elements, which PyTorch refuses to write into)."
                ),
                severity="error",
                group=f"{site.name}:fails",
            )

    def after(self, run: Evidence) -> None:
        """An in-place edit that worked: the differential pass says whether it changed more than its own gradient."""
        through_data = {id(c.site) for c in run.main.calls if c.edited_unseen()}
        for site in run.sites:
            effects = run.inplace_effects.get(id(site))
            if effects is None or (not effects and id(site) in through_data):
                continue  # an edit through .data is reported as such (edit-through-data)
            if effects:
                changed = ", ".join(effects[:4]) + (" ..." if len(effects) > 4 else "")
                self.report(
                    run,
                    site.where,
                    N_(
                        f"the {site.kind_words} `{site.label}` on {PLACES} edits the gradient it receives in place, "
                        "and "
                        f"that tensor is shared: the edit also changes the gradient of {changed} (compared with the "
                        "same hook returning an edited copy)."
                    ),
                    group=f"{site.name}:shared",
                )
            else:
                self.report(
                    run,
                    site.where,
                    N_(
                        f"the {site.kind_words} `{site.label}` on {PLACES} edits the gradient it receives in place. "
                        "Here that works: the gradients are exactly those of the same hook returning an edited copy "
                        "(PyTorch's documentation still says a hook should not modify its argument: it fails on an "
                        "expanded gradient and changes other gradients when the tensor is shared)."
                    ),
                    severity="info",
                    group=f"{site.name}:works",
                )


@rule
class HookEditsParameter(Rule):
    id = "hook-edits-parameter"
    severity = "error"
    link = clinic(19)
    fix = N_("edit param.grad inside the hook (param.grad.mul_(0.5))")
    summary = N_("a post-accumulate-grad hook edits the parameter, thinking it receives the gradient")

    def call(self, run: Evidence, call: Call) -> None:
        param = call.args[0] if call.args else None
        if any(t is param for t in call.read_grad_of):
            return  # it read param.grad and then changed the weights: an optimizer step in backward, on purpose
        if call.site.role == "post_accumulate_grad" and (call.edited() or call.edited_unseen()):
            self.report(
                run,
                call.site.where,
                N_(
                    f"the post-accumulate-grad hook `{call.site.label}` on {PLACES} edits the parameter itself in "
                    "place: "
                    "it receives the parameter, not its gradient, so the weights change and .grad does not."
                ),
                group=call.site.name,
            )


@rule
class HookEditsWeights(Rule):
    id = "hook-edits-weights"
    severity = "warning"
    link = clinic(19)
    fix = N_(
        "keep weights out of hooks: change them between steps (with torch.no_grad(): ...), or make the constraint "
        "part of the model with torch.nn.utils.parametrize, which autograd and the optimizer see"
    )
    summary = N_("a hook changes its module's weights (in place or through .data) while the model runs")

    def call(self, run: Evidence, call: Call) -> None:
        site = call.site
        if site.pytorch_owned:
            return
        stepped = {id(t) for t in call.read_grad_of}  # weights whose .grad it read: an optimizer step, on purpose
        changed = [
            r.tensor
            for r in call.received
            if r.what == "weight" and (r.edited() or r.edited_unseen()) and id(r.tensor) not in stepped
        ]
        if not changed:
            return
        names = [p for p in (run.place_of(t) for t in changed) if p]
        shown = ", ".join(n.removeprefix("param:") for n in names) or site.where
        self.report(
            run,
            site.where,
            N_(
                f"the {site.kind_words} `{site.label}` on {site.where} changes {shown} while the model runs: the "
                "optimizer's state and this step's gradients were computed for other values, and a change through "
                ".data is invisible to autograd."
            ),
        )
