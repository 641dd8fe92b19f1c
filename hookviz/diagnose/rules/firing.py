"""Rules that read the passes as a whole: how often each module was called, which hooks fired, the backward pass."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from torch import nn

from hookviz.diagnose import code
from hookviz.diagnose.facts import GRADIENT_KINDS, PLACES
from hookviz.diagnose.report import FROZEN, IF_YOU_SEE, NOT_FIRING, clinic
from hookviz.diagnose.rules.base import Rule, rule
from hookviz.i18n import N_, N_name

if TYPE_CHECKING:
    from hookviz.diagnose.facts import Evidence as Run


@rule
class FiresInBackward(Rule):
    id = "fires-in-backward"
    severity = "warning"
    link = clinic(22)
    fix = N_(
        "record only outside backward (torch._C._current_graph_task_id() == -1), or clear the records before each step"
    )
    summary = N_("forward hooks fire again during backward (activation checkpointing recomputes the forward)")

    def after(self, run: Run) -> None:
        for site in run.sites:
            if site.kind.phase == "forward" and site.calls_in_backward:
                self.report(
                    run,
                    site.where,
                    N_(
                        f"the {site.kind_words} `{site.label}` ran {site.calls - site.calls_in_backward} time(s) in "
                        "the "
                        f"forward and {site.calls_in_backward} more during backward(): activation checkpointing "
                        "recomputes this module's forward, hooks included."
                    ),
                )


@rule
class ModuleCalledTwice(Rule):
    id = "module-called-twice"
    severity = "warning"
    link = clinic(16)
    fix = N_("one module object per use (or record a list of calls)")
    summary = N_("a module that carries hooks is called more than once in one forward, and its hooks keep one record")

    def stored(self, run: Run) -> None:
        """A hooked module called twice is the clinic's mistake 16 unless the evidence shows that its hooks keep one
        record per call (a list that grew by one item a call): a note then. When a later call wrote the same record
        (dict entry) as an earlier one, or nothing they keep can be seen, a warning."""
        if run.main.forward_error is not None:
            return
        roles = ("forward", "forward_pre", "backward", "backward_pre")
        global_sites = [s for s in run.sites if s.is_global and s.role in roles]
        for key, count in run.forward_calls.items():
            if count < 2:
                continue
            module = run.modules[key]
            own = [s for s in run.module_sites(module) if not s.pytorch_owned and s.role in roles]
            sites = own or global_sites
            if not sites:
                continue  # a reused module without hooks (one ReLU for every block) is fine
            calls = [c for c in run.main.calls if c.site in sites]
            if not own:  # a global hook: only its calls for this module
                calls = [c for c in calls if c.args and c.args[0] is module]
            seen: set[tuple[int, Any]] = set()
            overwritten = False
            for call in calls:
                keys = {k for k in call.written if k[1] is not None}
                overwritten |= bool(keys & seen)
                seen |= keys
            per_call = bool(calls) and all(any(k[1] is None for k in c.written) for c in calls) and not overwritten
            name, kind = run.names[key], type(module).__name__
            if per_call:
                self.report(
                    run,
                    name,
                    N_(
                        f"{name} ({kind}) is called {count} times in one forward, and its hooks fire on every call: "
                        "what they record holds one entry per call, not one per module."
                    ),
                    severity="info",
                )
                continue
            message = (
                N_(
                    f"{name} ({kind}) is called {count} times in one forward: its hooks fire on every call, and a "
                    "record keyed by module keeps only the last call's."
                )
                if own
                else N_(
                    f"{name} ({kind}) is called {count} times in one forward: the global hooks fire for it on "
                    "every call, and a record keyed by module keeps only the last call's."
                )
            )
            self.report(run, name, message)


@rule
class HookNeverFires(Rule):
    id = "hook-never-fires"
    severity = "warning"
    link = NOT_FIRING
    fix = N_("hook a module that is called (see the module calls with hookviz.HookTimeline)")
    summary = N_("hooks on a module the forward never calls (a container, MultiheadAttention.out_proj, a dead branch)")

    def after(self, run: Run) -> None:
        for key, module in run.modules.items():
            sites = run.module_sites(module)
            if not sites or key in run.forward_calls or key in run.backward_calls:
                continue
            name, labels = run.names[key], ", ".join(s.label for s in sites)
            if isinstance(module, (nn.ModuleList, nn.ModuleDict)):
                link, fix = clinic(17), N_("hook each element, or the module whose forward runs the loop")
                kind = type(module).__name__
                message = N_(f"the hooks on {name} ({labels}) never fired: {kind} is a container that is never called.")
            elif any(isinstance(p, nn.MultiheadAttention) and p.out_proj is module for p in run.model.modules()):
                link, fix = clinic(31), N_("hook self_attn itself (its output is (attended, weights))")
                message = N_(
                    f"the hooks on {name} ({labels}) never fired: MultiheadAttention hands out_proj's weights to a "
                    "function and never calls out_proj."
                )
            else:
                link, fix = self.link, self.fix
                message = N_(
                    f"the hooks on {name} ({labels}) never fired: the forward never called it (a direct .forward() "
                    "call, a functional op or an unused branch)."
                )
            self.report(run, name, message, fix=fix, link=link)


@rule
class NoGradientReaches(Rule):
    id = "no-gradient-reaches"
    severity = "warning"
    link = FROZEN
    fix = N_("hook only the parts that get gradients (the trainable ones after the frozen part)")
    summary = N_("a gradient hook never fires: the part it watches gets no gradient")

    def after(self, run: Run) -> None:
        if run.no_backward in ("output-none", "loss-fn") or run.backward_failed:
            return  # not the model's doing (NoBackwardPass and LossCutsGraph say why), or backward stopped early
        checkpoint_warning = any("None of the inputs have requires_grad" in w for w in run.warnings)
        for site in run.sites:
            if site.role not in GRADIENT_KINDS or site.calls or site.is_global or site.registered_by is not None:
                continue  # (a tensor hook registered while the model ran lives and dies with its tensor)
            module = site.module
            if module is not None and id(module) not in run.forward_calls:
                continue  # already reported: the module never ran
            if site.kind.name in ("tensor", "post_accumulate_grad") and not site.holder.requires_grad:
                why = N_name("the parameter does not require grad")
            elif run.no_backward:
                why = N_name("no output of the model requires grad, so there was no backward pass")
            else:
                why = N_name("no gradient reached it in backward()")
            message = (
                N_(
                    f"the {site.kind_words} `{site.label}` on {PLACES} never fired: {why} (reentrant checkpointing cut "
                    "this segment out of the graph)."
                )
                if checkpoint_warning
                else N_(f"the {site.kind_words} `{site.label}` on {PLACES} never fired: {why}.")
            )
            self.report(
                run,
                site.where,
                message,
                fix=N_("use torch.utils.checkpoint(..., use_reentrant=False)") if checkpoint_warning else self.fix,
                link=clinic(30) if checkpoint_warning else self.link,
                group=f"{site.name}:{why}",
            )


def _unchecked(run: Run) -> str:
    """The places of the gradient hooks a run without backward could not check ('' when there are none)."""
    hooked = (s.where for s in run.sites if s.role in GRADIENT_KINDS and not s.is_global and not s.registered_by)
    return ", ".join(dict.fromkeys(hooked))


@rule
class NoBackwardPass(Rule):
    id = "no-backward-pass"
    severity = "info"
    link = NOT_FIRING
    fix = N_("return the result from forward() (return self.result), or give diagnose() the model whose forward does")
    summary = N_("the forward returned None: the checks that need a backward pass could not run")

    def after(self, run: Run) -> None:
        if run.no_backward == "output-none":
            hooked = _unchecked(run)
            message = (
                N_(
                    "the model's forward returned None, so no backward pass could run: the forward checks ran, the "
                    f"gradient checks could not (the gradient hooks at {hooked} were not checked)."
                )
                if hooked
                else N_(
                    "the model's forward returned None, so no backward pass could run: the forward checks ran, the "
                    "gradient checks could not (no gradient hook is attached, so none was left unchecked)."
                )
            )
            self.report(run, "backward", message)


@rule
class LossCutsGraph(Rule):
    id = "loss-fn-cuts-graph"
    severity = "warning"
    link = FROZEN
    fix = N_(
        "give loss_fn= a differentiable loss (cross_entropy(out, y), out.pow(2).mean()): no argmax, .detach(), "
        ".item() or torch.no_grad() inside it"
    )
    summary = N_("the loss_fn given to diagnose() returns a tensor without gradient while the model's output has one")

    def after(self, run: Run) -> None:
        if run.no_backward == "loss-fn":
            hooked = _unchecked(run)
            message = (
                N_(
                    "the model's output requires grad, but the loss_fn you gave returns a tensor that does not "
                    "(argmax, detach, .item() or no_grad inside it): your loss_fn cut the graph, not the model, so no "
                    f"backward pass could run (the gradient hooks at {hooked} were not checked)."
                )
                if hooked
                else N_(
                    "the model's output requires grad, but the loss_fn you gave returns a tensor that does not "
                    "(argmax, detach, .item() or no_grad inside it): your loss_fn cut the graph, not the model, so no "
                    "backward pass could run (no gradient hook is attached, so none was left unchecked)."
                )
            )
            self.report(run, "loss_fn", message)


@rule
class ViewHookNeverFires(Rule):
    id = "hook-on-parameter-view"
    severity = "warning"
    link = NOT_FIRING
    fix = N_(
        "hook the parameter itself and take the part you want inside the hook: "
        "fc.weight.register_hook(lambda g: print(g[0].norm())) (or return a gradient with only that part changed)"
    )
    summary = N_("a tensor hook on a slice or view of a parameter (fc.weight[0]) never fires")

    def after(self, run: Run) -> None:
        for name, hook in run.orphan_views:
            self.report(
                run,
                f"param:{name}",
                N_(
                    f"the tensor hook {code.name_of(hook)} sits on a view of {name} (a slice like {name}[0], or "
                    f"{name}.view(...)), not on {name} itself: the forward computes from the parameter and never uses "
                    "that view, so no gradient ever reaches it and the hook never fires."
                ),
            )


@rule
class HooksBreakForward(Rule):
    id = "hooks-break-forward"
    severity = "error"
    link = IF_YOU_SEE
    fix = N_("leave the hooks out one at a time (handle.remove()) to see which combination breaks the forward")
    summary = N_("the forward fails with the hooks and runs without them, and no single hook explains it")

    def stored(self, run: Run) -> None:
        noted = run.notes.get("hooks-break-forward")
        if not noted:
            return
        error, sites = noted
        places = ", ".join(dict.fromkeys(s.where for s in sites)) or "<root>"
        self.report(
            run,
            places,
            N_(
                f"the forward fails with the hooks on {places} and runs without them, but leaving out any one of them "
                f"does not help: {type(error).__name__}: {(str(error).strip().splitlines() or [''])[0]}"
            ),
        )
