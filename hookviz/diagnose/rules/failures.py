"""Rules that explain a forward or backward pass that fails because of a hook."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookviz.diagnose.report import IF_YOU_SEE, clinic
from hookviz.diagnose.rules.base import Rule, rule
from hookviz.i18n import N_

if TYPE_CHECKING:
    from hookviz.diagnose.facts import Evidence as Run


@rule
class InplaceAfterBackwardHook(Rule):
    id = "inplace-after-backward-hook"
    severity = "error"
    link = clinic(24)
    fix = N_(
        "take the gradient with a tensor hook on the output, registered from a forward hook; or make "
        "the next operation out-of-place"
    )
    summary = N_("an in-place operation after a module with a full backward hook makes the forward fail")

    def forward_failed(self, run: Run, error: Exception) -> bool:
        if "BackwardHookFunction" not in str(error) or "inplace" not in str(error):
            return False
        self.report(
            run,
            run.main.last_backward_hooked or "<root>",
            N_(
                "this module has a full backward hook (or backward pre-hook), which makes its output a view "
                "made by BackwardHookFunction; the in-place operation that follows it (out += identity, "
                f"ReLU(inplace=True)) makes the forward fail: {error}"
            ),
        )
        return True


@rule
class BackwardFails(Rule):
    id = "backward-fails"
    severity = "error"
    link = IF_YOU_SEE
    fix = N_("look the error up in the clinic's index by symptom")
    summary = N_("backward() fails (a hook returned the wrong thing, or edited a saved tensor in place)")

    def backward_failed(self, run: Run, error: Exception) -> bool:
        text = str(error)
        if "changed the size" in text or "changed the type" in text or "hook returned" in text:
            link, fix = clinic(21), N_("a tensor hook returns None or a tensor of the gradient's shape and dtype")
        elif "modified by an inplace operation" in text:
            link, fix = clinic(15), N_("return a new tensor from the hook instead of editing the output in place")
        else:
            link, fix = self.link, self.fix
        if not run.has_link(link):
            self.report(run, "backward", N_(f"backward() fails: {type(error).__name__}: {text}"), fix=fix, link=link)
        return True
