"""Rules about what a hook (or the forward) does besides its job: waits for the device, changes the model's
modes or ``requires_grad``, registers more hooks on every call."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch import Tensor

from hookviz.diagnose import code
from hookviz.diagnose.facts import PLACES
from hookviz.diagnose.report import WHAT_CAN_CHANGE
from hookviz.diagnose.rules.base import Rule, rule
from hookviz.i18n import N_

if TYPE_CHECKING:
    from hookviz.diagnose.facts import Call, Evidence

FAQ_SPEED = "notebooks/10_faq.ipynb#faq-speed"
RERUN_STACKS = "notebooks/05_lifetime_and_global_hooks.ipynb#rerun-stacks"


@rule
class DeviceSync(Rule):
    id = "device-sync"
    severity = "warning"
    link = FAQ_SPEED
    fix = N_(
        "keep the values on the device in the hook (stats.append(output.detach().mean())) and turn them into "
        "numbers once, after the step or the epoch (torch.stack(stats).tolist())"
    )
    summary = N_(
        "a hook turns a tensor into a Python value on every call (.item(), print, an `if` on a tensor): on a GPU "
        "each call waits for the GPU (a warning when the model is on one, a note on the CPU)"
    )

    def call(self, run: Evidence, call: Call) -> None:
        if not call.syncs or call.site.pytorch_owned:
            return
        site = call.site
        devices = {p.device.type for p in run.model.parameters()} | {
            t.device.type for t in call.args if isinstance(t, Tensor)
        }
        on_device = bool(devices - {"cpu", "meta"})
        syncs = ", ".join(call.syncs)
        message = (
            N_(
                f"the {site.kind_words} `{site.label}` on {PLACES} calls {syncs} every time it runs, turning a tensor "
                "into a Python value: this model runs on a GPU, where each one waits for all queued work to finish, "
                "once per call and layer, so training slows down."
            )
            if on_device
            else N_(
                f"the {site.kind_words} `{site.label}` on {PLACES} calls {syncs} every time it runs, turning a tensor "
                "into a Python value: on the CPU that costs nothing, but on a GPU each one waits for all queued work "
                "to finish, once per call and layer, so training slows down."
            )
        )
        self.report(
            run,
            site.where,
            message,
            severity="warning" if on_device else "info",
            group=site.name,
        )


@rule
class HookChangesModel(Rule):
    id = "hook-changes-model"
    severity = "warning"
    link = WHAT_CAN_CHANGE
    fix = N_(
        "set modes and requires_grad once, outside the hooks (model.eval(), p.requires_grad_(False) before "
        "training); a hook should observe the step, not reconfigure the model while it runs"
    )
    summary = N_("a hook changes a module's train/eval mode or a parameter's requires_grad while the model runs")

    def call(self, run: Evidence, call: Call) -> None:
        if not call.changed or call.site.pytorch_owned:
            return
        site = call.site
        changes = ", ".join(call.changed[:4]) + (" ..." if len(call.changed) > 4 else "")
        self.report(
            run,
            site.where,
            N_(
                f"the {site.kind_words} `{site.label}` on {site.where} changes the model while it runs: it set "
                f"{changes}. Everything after it in this step (and every later step) runs with that change."
            ),
        )


@rule
class RegistersDuringRun(Rule):
    id = "registers-hooks-every-call"
    severity = "warning"
    link = RERUN_STACKS
    fix = N_(
        "register the hook once, outside forward() and outside other hooks (keep its handle); for the gradient of "
        "an intermediate tensor made in forward(), tensor.register_hook on that tensor is fine"
    )
    summary = N_("the forward (or a hook) registers a hook on a module or parameter every time it runs: they pile up")

    def after(self, run: Evidence) -> None:
        for where, hook, by_whom in run.registered:
            name = code.name_of(hook)
            message = (
                N_(
                    f"the hook {by_whom} registers a hook ({name}) on {PLACES} every time it runs: after N steps N "
                    "copies are attached, each running on every call (the doctor removed the ones its run added)."
                )
                if by_whom
                else N_(
                    f"the model's forward() registers a hook ({name}) on {PLACES} every time it runs: after N steps "
                    "N copies are attached, each running on every call (the doctor removed the ones its run added)."
                )
            )
            self.report(
                run,
                where,
                message,
                group=f"{code.name_of(hook)}:{by_whom}",
            )
