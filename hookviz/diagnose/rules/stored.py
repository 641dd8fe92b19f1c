"""Rules that look at what the hooks stored during the run: in their closures, the globals they read, their bound
object's attributes (an extractor's ``self.features``), ``functools.partial`` arguments, and the attributes of
the modules they are attached to (``module.output = output``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor

from hookviz.diagnose import code
from hookviz.diagnose.facts import PLACES
from hookviz.diagnose.report import CLONE_DETAIL, MEMORY, clinic
from hookviz.diagnose.rules.base import Rule, rule
from hookviz.i18n import N_

if TYPE_CHECKING:
    from hookviz.diagnose.facts import Call, Site
    from hookviz.diagnose.facts import Evidence as Run


def _module_attributes(run: Run) -> list[tuple[str, Site, Tensor]]:
    """Tensors that the attributes of modules carrying the learner's hooks hold now and did not before the run
    (``module.output = out``). Other modules' attributes are the model's own business (a forward that keeps
    ``self.result``); what a hook keeps elsewhere is found from the hook itself (its globals: ``model.acts``)."""
    found = []
    for key, module in run.modules.items():
        sites = [s for s in run.module_sites(module) if not s.pytorch_owned]
        if not sites:
            continue
        before = run.attributes_before.get(key, set())
        for name, value in code.user_attributes(module).items():
            for tensor_id, tensor in code.tensors_in([value]).items():
                if tensor_id not in before:
                    found.append((f"{run.names[key]}.{name}", sites[0], tensor))
    return found


@rule
class StoresParameterView(Rule):
    id = "stores-parameter-view"
    severity = "warning"
    link = clinic(20)
    fix = N_("store weight.detach().clone()")
    summary = N_("a hook stores a parameter without a copy: every snapshot equals the final value")

    def stored(self, run: Run) -> None:
        storages = {}
        for name, param in run.model.named_parameters():
            if param.device.type != "meta":
                storages[param.untyped_storage().data_ptr()] = name
        for site in run.sites:
            shared = [
                storages[t.untyped_storage().data_ptr()]
                for t in run.new_stored(site)
                if not t.is_nested and t.device.type != "meta" and t.untyped_storage().data_ptr() in storages
            ]
            if shared:
                self.report(
                    run,
                    site.where,
                    N_(
                        f"the {site.kind_words} `{site.label}` stores {shared[0]} without a copy (weight.detach() "
                        "shares "
                        "its memory): the "
                        "optimizer updates it in place, so every stored snapshot will equal the final value."
                    ),
                )


@rule
class StoredGraph(Rule):
    id = "stored-graph"
    severity = "warning"
    link = MEMORY
    fix = N_("store output.detach() (and .cpu() for long runs)")
    summary = N_("a hook stores a tensor that is still part of the autograd graph (memory grows every step)")

    def stored(self, run: Run) -> None:
        for site in run.sites:
            if any(t.grad_fn is not None for t in run.new_stored(site)):
                self.report(
                    run,
                    site.where,
                    N_(
                        f"the {site.kind_words} `{site.label}` on {PLACES} stores a tensor that is still part of the "
                        "autograd graph: it keeps the graph (and its saved activations) alive as long as you keep it, "
                        "and memory grows every step."
                    ),
                    group=site.name,
                )
        for attribute, site, tensor in _module_attributes(run):
            if tensor.grad_fn is not None:
                self.report(
                    run,
                    site.where,
                    N_(
                        f"`{attribute}` holds a tensor that is still part of the autograd graph (set while the model "
                        "ran, next to its hooks): the module keeps the graph and its saved activations alive until "
                        "the next step replaces it, and a list of them grows every step."
                    ),
                )


@rule
class StoredOutputEditedLater(Rule):
    id = "stored-output-edited"
    severity = "warning"
    link = CLONE_DETAIL
    fix = N_("store output.detach().clone() (detach() alone shares the output's memory)")
    summary = N_("a hook stores output.detach(), and a later in-place operation (ReLU(inplace=True), +=) edits it")

    def call(self, run: Run, call: Call) -> None:
        if call.site.role == "forward" and call.error is None:
            seen = run.notes.setdefault(self.id, {})
            seen.setdefault(id(call.site), []).extend((r.tensor, r.tensor._version) for r in call.received)

    def stored(self, run: Run) -> None:
        seen = run.notes.get(self.id, {})
        for site in run.sites:
            outputs = seen.get(id(site))
            if not outputs:
                continue
            edited = {t.untyped_storage().data_ptr() for t, version in outputs if t._version != version and _plain(t)}
            stored = [t for t in run.new_stored(site) if t.grad_fn is None and _plain(t)]
            if any(t.untyped_storage().data_ptr() in edited for t in stored):
                self.report(
                    run,
                    site.where,
                    N_(
                        f"the forward hook `{site.label}` stores the output without a copy (output.detach() shares its "
                        "memory), and "
                        "an in-place operation after the module (ReLU(inplace=True), out += identity) edits that "
                        "memory: "
                        "the stored activation is not what the module returned."
                    ),
                )


def _plain(t: Tensor) -> bool:
    return not t.is_nested and t.device.type != "meta" and t.layout == torch.strided
