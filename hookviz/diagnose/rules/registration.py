"""Rules that read the hooks before the run: how they were registered and what their code reads."""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch import nn

from hookviz.diagnose import code
from hookviz.diagnose.report import LEGACY, clinic
from hookviz.diagnose.rules import Rule, rule

if TYPE_CHECKING:
    from hookviz.diagnose.runner import Run, Site

GRADIENT_ROLES = ("backward_pre", "backward", "backward_legacy", "tensor", "post_accumulate_grad")


@rule
class LateBinding(Rule):
    id = "late-binding"
    severity = "warning"
    link = clinic(1)
    fix = (
        "bind the value when the hook is made: a factory function, functools.partial or a default argument (name=name)"
    )
    summary = "hooks made in a loop read the loop variable when they run, so all of them see its last value"

    def static(self, run: Run) -> None:
        groups: dict[tuple[str, int], list[Site]] = {}
        for site in run.sites:
            function_code = getattr(code.function_of(site.hook), "__code__", None)
            if function_code is not None:
                groups.setdefault((site.role, id(function_code)), []).append(site)
        labels = set(run.names.values()) | {name.rsplit(".", 1)[-1] for name in run.names.values()}
        for (kind, _), sites in groups.items():
            distinct = [s for i, s in enumerate(sites) if all(s.hook is not t.hook for t in sites[:i])]
            if len({id(s.holder) for s in distinct}) < 2:
                continue
            function = code.function_of(distinct[0].hook)
            variables = dict(code.free_values(function))
            # a factory gives each hook its own cells: only variables that every hook shares can be stale
            if not all(code.same_behaviour(distinct[0].hook, s.hook) for s in distinct[1:]):
                variables = {n: v for n, v in variables.items() if n in function.__code__.co_names}
            # the hook was written inside a loop and reads that loop's variable (an index, a name, a module);
            # without the source: the variable now holds a name or a module of the model
            loops = (code.loop_variables(function) or set()) if variables else set()
            stale = [
                name
                for name, value in variables.items()
                if not callable(value) or isinstance(value, nn.Module)
                if name in loops or (isinstance(value, str) and value in labels) or id(value) in run.modules
            ]
            if not stale:
                continue
            value = variables[stale[0]]
            plain = isinstance(value, (str, int, float))
            shown = repr(value) if plain else run.names.get(id(value), type(value).__name__)
            self.report(
                run,
                ", ".join(s.where for s in distinct),
                f"the {kind} hooks {distinct[0].name} on these modules were made in a loop and read the loop "
                f"variable {stale[0]!r} when they run: every one of them sees its last value ({shown}), not the "
                "value of its own module.",
            )


@rule
class DuplicateHook(Rule):
    id = "duplicate-hook"
    severity = "warning"
    link = clinic(13)
    fix = "register once, before the loop, keep the handle and remove it in a finally"
    summary = "the same hook attached more than once to the same place"

    def static(self, run: Run) -> None:
        for i, site in enumerate(run.sites):
            for earlier in run.sites[:i]:
                same_place = earlier.holder is site.holder and earlier.kind is site.kind
                if same_place and code.same_behaviour(earlier.hook, site.hook):
                    self.report(
                        run,
                        site.where,
                        f"the same {site.kind.name} hook {site.name} is attached more than once: it runs once per copy "
                        "(a cell run twice, or a registration inside the training loop).",
                    )
                    break


@rule
class LegacyBackwardHook(Rule):
    id = "legacy-backward-hook"
    severity = "warning"
    link = LEGACY
    fix = "register_full_backward_hook, with the same signature"
    summary = "register_backward_hook sees the last autograd node of the module only"

    def static(self, run: Run) -> None:
        for site in run.sites:
            if site.kind.deprecated and not site.is_global:
                self.report(
                    run,
                    site.where,
                    f"{site.name} is a legacy backward hook (register_backward_hook): it fires on the last autograd "
                    "node of the module's forward only, so grad_input can be the gradient of that one operation.",
                )
        if any(row.kind == "global_backward_legacy" for row in run.global_rows):
            self.report(
                run,
                "<global>",
                "a global legacy backward hook (register_module_backward_hook) sees the last autograd node of "
                "each module only.",
                fix="register_module_full_backward_hook",
            )


@rule
class FastPathHidesModules(Rule):
    id = "fast-path-hides-modules"
    severity = "warning"
    link = clinic(32)
    fix = (
        "register the hooks on the submodules you want (that keeps the layer off its fast path), or "
        "torch.backends.mha.set_fastpath_enabled(False) around the run"
    )
    summary = "global forward hooks see nothing inside a TransformerEncoderLayer on its fused fast path"

    def static(self, run: Run) -> None:
        layers = [m for m in run.model.modules() if isinstance(m, nn.TransformerEncoderLayer)]
        forward_globals = [r for r in run.global_rows if r.kind in ("global_forward", "global_forward_pre")]
        if layers and forward_globals:
            self.report(
                run,
                ", ".join(run.names[id(m)] for m in layers),
                "in eval mode under torch.no_grad() these TransformerEncoderLayers can run as one fused kernel and "
                "call none of their submodules: your global forward hooks then see nothing inside them.",
            )


@rule
class NestedTensorOutputs(Rule):
    id = "nested-tensor-outputs"
    severity = "warning"
    link = clinic(33)
    fix = (
        "pad it back in the hook (output.to_padded_tensor(0.0) when output.is_nested), or build the "
        "encoder with enable_nested_tensor=False"
    )
    summary = "hooks on the layers of a nested-tensor TransformerEncoder receive NestedTensors"

    def static(self, run: Run) -> None:
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
                    "with a src_key_padding_mask, in eval mode under torch.no_grad(), this encoder packs the batch "
                    "into a nested tensor: these hooks then receive a NestedTensor, on which output.shape and "
                    "slicing fail.",
                )


@rule
class ScaledGradients(Rule):
    id = "scaled-gradients"
    severity = "warning"
    link = clinic(27)
    fix = (
        "call scaler.unscale_(optimizer) and clip with clip_grad_norm_ after backward(); log in an "
        "optimizer step pre-hook"
    )
    summary = "under a GradScaler, gradient hooks see scaled gradients"

    def static(self, run: Run) -> None:
        scaler = run.scaler
        if scaler is None or not scaler.is_enabled():
            return
        hooked = [s.where for s in run.sites if s.role in GRADIENT_ROLES]
        if hooked:
            self.report(
                run,
                ", ".join(dict.fromkeys(hooked)),
                "under this GradScaler the gradient hooks here run during backward(), before unscale_: "
                "they see gradients multiplied by the scale (65,536 at first); norms logged are that much "
                "too big and clipping there is undone by unscaling.",
            )
