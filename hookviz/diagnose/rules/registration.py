"""Rules that read how the hooks were registered: where, how many copies, what they close over, what is global."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from torch import Tensor, nn

from hookviz.diagnose import code
from hookviz.diagnose.report import GLOBAL_EVERY_MODEL, LEGACY, clinic
from hookviz.diagnose.rules.base import Rule, rule
from hookviz.i18n import N_

if TYPE_CHECKING:
    from hookviz.diagnose.facts import Evidence, Site

GRADIENT_ROLES = ("backward_pre", "backward", "backward_legacy", "tensor", "post_accumulate_grad")


def _own(run: Evidence, site: Site) -> tuple[set[str], set[int]]:
    """What identifies a site's own place and the places above it: their full and short names (and its parameter's
    name) and the ids of those modules and the parameter. A hook that reads one of these reads its own place."""
    names: set[str] = set()
    ids: set[int] = set()
    if isinstance(site.holder, nn.Parameter):
        ids.add(id(site.holder))
        name = site.where.removeprefix("param:")
        names |= {name, name.rsplit(".", 1)[-1]}
    module = site.module
    if module is not None:
        full = run.names.get(id(module), "")
        parts = full.split(".") if full and full != "<root>" else []
        for i in range(len(parts) + 1):
            prefix = ".".join(parts[:i]) or "<root>"
            names |= {prefix, prefix.rsplit(".", 1)[-1]}
        by_name = {n or "<root>": m for n, m in run.model.named_modules()}
        ids |= {id(by_name[n]) for n in names if n in by_name}
    return names, ids


def _reads_own(value: Any, own: tuple[set[str], set[int]]) -> bool | None:
    """Whether ``value`` names the site's own place (True), another place (False), or no place at all (None)."""
    names, ids = own
    if isinstance(value, (nn.Module, Tensor)):
        return id(value) in ids
    if isinstance(value, str):
        return value in names
    return None


@rule
class LateBinding(Rule):
    id = "late-binding"
    severity = "warning"
    link = clinic(1)
    fix = N_(
        "bind the value when the hook is made: a factory function, functools.partial or a default argument (name=name)"
    )
    summary = N_("hooks made in a loop read the loop variable when they run, so all of them see its last value")

    def static(self, run: Evidence) -> None:
        """Hooks of the same code on several places that read one shared variable (the same closure cell, or a
        global) whose value names one place of the model, not each hook's own, or that the source shows to be
        the variable of the loop that made them."""
        groups: dict[tuple[str, int], list[Site]] = {}
        for site in run.sites:
            function_code = getattr(code.function_of(site.hook), "__code__", None)
            if function_code is not None:
                groups.setdefault((site.role, id(function_code)), []).append(site)
        for sites in groups.values():
            distinct = [s for i, s in enumerate(sites) if all(s.hook is not t.hook for t in sites[:i])]
            if len({id(s.holder) for s in distinct}) < 2:
                continue
            stale = self._stale(run, distinct)
            if stale is None:
                continue
            variable, value = stale
            shown = (
                repr(value) if isinstance(value, (str, int, float)) else (run.place_of(value) or type(value).__name__)
            )
            places = ", ".join(s.where for s in distinct)
            self.report(
                run,
                places,
                N_(
                    f"the hooks `{distinct[0].label}` ({distinct[0].kind_words}) on {places} were made in a loop and "
                    f"all read one variable, {variable!r}, when they run: every one of them sees its last value "
                    f"({shown}), not the value of its own place."
                ),
            )

    @staticmethod
    def _shared(distinct: list[Site]) -> Iterator[tuple[str, Any]]:
        """The variables every hook of the group reads from one place: the same closure cell, or a global."""
        function = code.function_of(distinct[0].hook)
        function_code = function.__code__
        cells = [code.cells(code.function_of(s.hook)) or () for s in distinct]
        for index, name in enumerate(function_code.co_freevars):
            if all(len(c) > index for c in cells) and all(c[index] is cells[0][index] for c in cells):
                if code.cell_is_set(cells[0][index]):
                    yield name, cells[0][index].cell_contents
        namespace = getattr(function, "__globals__", {})
        for name in dict.fromkeys(n for c in code.codes(function_code) for n in c.co_names):
            if name in namespace:
                yield name, namespace[name]

    def _stale(self, run: Evidence, distinct: list[Site]) -> tuple[str, Any] | None:
        """A shared variable that names the place of some of these hooks and not of the others (its last value in
        the loop: one module, one name), or that the source shows to be the loop's own variable."""
        owns = [_own(run, s) for s in distinct]
        loops = code.loop_variables(code.function_of(distinct[0].hook)) or set()
        for name, value in self._shared(distinct):
            if callable(value) and not isinstance(value, nn.Module):
                continue
            verdicts = [_reads_own(value, own) for own in owns]
            if True in verdicts and False in verdicts:
                return name, value  # right for one hook's place, wrong for the others'
            if name in loops and isinstance(value, (int, float, str, bytes, tuple, nn.Module, Tensor)):
                return name, value  # the loop's own variable (an index, a label, a layer): the source says so
        return None


@rule
class DuplicateHook(Rule):
    id = "duplicate-hook"
    severity = "warning"
    link = clinic(13)
    fix = N_(
        "register once, before the training loop (or in a cell that removes the old handles first), and keep "
        "the handles to remove them: hookviz.remove_all_hooks(model) clears the copies"
    )
    summary = N_("copies of the same hook attached to the same place (registered again each epoch or cell run)")

    def static(self, run: Evidence) -> None:
        """Hooks on one place that run the same code configured the same way: the same function, or the same
        factory's closures over equal values, or instances of one class in the same state."""
        seen: dict[tuple[int, str, tuple[Any, ...]], list[Site]] = {}
        for site in run.sites:
            key = (id(site.holder), site.kind.name, code.configuration(site.hook))
            seen.setdefault(key, []).append(site)
        for copies in seen.values():
            if len(copies) < 2:
                continue
            site = copies[0]
            count, words, label = len(copies), site.kind_words, site.label
            message = (
                N_(
                    f"{count} copies of the {words} `{label}` are attached globally: each runs on every call, so "
                    f"whatever it records or changes happens {count} times (a registration inside the training loop, "
                    "a helper or a cell run again)."
                )
                if site.is_global
                else N_(
                    f"{count} copies of the {words} `{label}` are attached on {site.where}: each runs on every call, "
                    f"so whatever it records or changes happens {count} times (a registration inside the training "
                    "loop, a helper or a cell run again)."
                )
            )
            self.report(run, site.where, message)


@rule
class LegacyBackwardHook(Rule):
    id = "legacy-backward-hook"
    severity = "warning"
    link = LEGACY
    fix = N_("register_full_backward_hook, with the same signature")
    summary = N_("register_backward_hook sees the last autograd node of the module only")

    def static(self, run: Evidence) -> None:
        for site in run.sites:
            if site.kind.deprecated and not site.is_global:
                self.report(
                    run,
                    site.where,
                    N_(
                        f"`{site.label}` is a legacy backward hook (register_backward_hook): it fires on the last "
                        "autograd "
                        "node of the module's forward only, so grad_input can be the gradient of that one operation."
                    ),
                )
        if any(row.kind == "global_backward_legacy" for row in run.global_rows):
            self.report(
                run,
                "<global>",
                N_(
                    "a global legacy backward hook (register_module_backward_hook) sees the last autograd node of "
                    "each module only."
                ),
                fix=N_("register_module_full_backward_hook"),
            )


@rule
class GlobalHookLeft(Rule):
    id = "global-hook"
    severity = "warning"
    link = GLOBAL_EVERY_MODEL
    fix = N_(
        "keep the handle that register_module_forward_hook returns and call handle.remove() when done (or use a "
        "with-block, hookviz.HookGroup); to watch one model, hook its modules instead"
    )
    summary = N_("a global module hook is registered: it runs for every module of every model in the process")

    def static(self, run: Evidence) -> None:
        for site in run.sites:
            if site.is_global and not site.pytorch_owned:
                self.report(
                    run,
                    "<global>",
                    N_(
                        f"the global {site.kind_words} `{site.label}` is registered: it runs for every call of every "
                        "module "
                        "of every model in this process, this one included, until its handle is removed."
                    ),
                )


@rule
class FastPathHidesModules(Rule):
    id = "fast-path-hides-modules"
    severity = "warning"
    link = clinic(32)
    fix = N_(
        "register the hooks on the submodules you want (that keeps the layer off its fast path), or "
        "torch.backends.mha.set_fastpath_enabled(False) around the run"
    )
    summary = N_("global forward hooks see nothing inside a TransformerEncoderLayer on its fused fast path")

    def static(self, run: Evidence) -> None:
        layers = [m for m in run.model.modules() if isinstance(m, nn.TransformerEncoderLayer)]
        forward_globals = [r for r in run.global_rows if r.kind in ("global_forward", "global_forward_pre")]
        if layers and forward_globals:
            self.report(
                run,
                ", ".join(run.names[id(m)] for m in layers),
                N_(
                    "in eval mode under torch.no_grad() these TransformerEncoderLayers can run as one fused kernel and "
                    "call none of their submodules: your global forward hooks then see nothing inside them."
                ),
            )


@rule
class NestedTensorOutputs(Rule):
    id = "nested-tensor-outputs"
    severity = "warning"
    link = clinic(33)
    fix = N_(
        "pad it back in the hook (output.to_padded_tensor(0.0) when output.is_nested), or build the "
        "encoder with enable_nested_tensor=False"
    )
    summary = N_("hooks on the layers of a nested-tensor TransformerEncoder receive NestedTensors")

    def static(self, run: Evidence) -> None:
        for encoder in run.model.modules():
            if not isinstance(encoder, nn.TransformerEncoder) or not getattr(encoder, "use_nested_tensor", False):
                continue
            hooked = [
                s.where
                for s in run.sites
                if s.kind.name in ("forward", "forward_pre") and any(s.holder is layer for layer in encoder.layers)
            ]
            if hooked:
                self.report(
                    run,
                    ", ".join(dict.fromkeys(hooked)),
                    N_(
                        "with a src_key_padding_mask, in eval mode under torch.no_grad(), this encoder packs the batch "
                        "into a nested tensor: these hooks then receive a NestedTensor, on which output.shape and "
                        "slicing fail."
                    ),
                )


@rule
class ScaledGradients(Rule):
    id = "scaled-gradients"
    severity = "warning"
    link = clinic(27)
    fix = N_(
        "call scaler.unscale_(optimizer) and clip with clip_grad_norm_ after backward(); log in an "
        "optimizer step pre-hook"
    )
    summary = N_("under a GradScaler, gradient hooks see scaled gradients")

    def static(self, run: Evidence) -> None:
        scaler = run.scaler
        if scaler is None or not scaler.is_enabled():
            return
        hooked = [s.where for s in run.sites if s.role in GRADIENT_ROLES and s.registered_by is None]
        if hooked:
            self.report(
                run,
                ", ".join(dict.fromkeys(hooked)),
                N_(
                    "under this GradScaler the gradient hooks here run during backward(), before unscale_: "
                    "they see gradients multiplied by the scale (65,536 at first); norms logged are that much "
                    "too big and clipping there is undone by unscaling."
                ),
            )
