"""The hook doctor decides from what the run observed, never from names: the cases issue 44 quoted, and one case
per kind of evidence (frame locals at return, torch functions called, differential passes, the caller's grad
mode, a second batch size, what was registered or stored during the run), each with the correct code beside it.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import Any

import pytest
import torch
import transformers
from torch import nn

import hookviz
from hookviz.diagnose import Diagnosis, diagnose
from hookviz.llama import load_tiny_llama

X = torch.randn(6, 4)


@pytest.fixture
def handles() -> Iterator[list[Any]]:
    made: list[Any] = []
    yield made
    for handle in made:
        handle.remove()


def mlp() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


def serious(diagnosis: Diagnosis) -> list[Any]:
    return [f for f in diagnosis if f.severity in ("error", "warning")]


# ------------------------------------------------------------------------------- the cases issue 44 quoted


def test_grad_times_two_in_a_tensor_hook_is_not_said_to_change_nothing(handles: list[Any]) -> None:
    """Notebook 01 §3 proves that `grad *= 2` doubles the gradient; the doctor must agree (EN and zh)."""
    model = mlp()

    def double(grad: torch.Tensor) -> None:
        grad *= 2

    handles.append(model[0].weight.register_hook(double))
    diagnosis = diagnose(model, X)
    assert not serious(diagnosis), diagnosis
    assert diagnosis.kinds() == {"gradient-edited-in-place": 1}
    assert "changes nothing" not in str(diagnosis) and "Here that works" in diagnosis[0].message
    hookviz.set_language("zh")
    try:
        assert "什么也不改变" not in str(diagnosis) and "不起作用" not in str(diagnosis)
    finally:
        hookviz.set_language(None)


def test_an_lstm_hook_that_unpacks_the_output_is_not_told_to_return_h(handles: list[Any]) -> None:
    lstm, last = nn.LSTM(4, 3, batch_first=True), {}

    def keep_last(module: nn.Module, args: Any, output: Any) -> None:
        seq, (h, c) = output
        last["h"] = h.detach()

    handles.append(lstm.register_forward_hook(keep_last))
    diagnosis = diagnose(lstm, torch.randn(2, 5, 4), loss_fn=lambda out: out[0].sum())
    assert list(diagnosis) == [], diagnosis


def test_a_conv_hook_with_an_unused_local_is_not_told_to_return_it(handles: list[Any]) -> None:
    conv, shapes = nn.Conv2d(3, 3, 3, padding=1), []

    def shape_of(module: nn.Module, inputs: Any, output: torch.Tensor) -> None:
        x = inputs[0]  # noqa: F841 - the learner's leftover: the input, unused
        shapes.append(tuple(output.shape))

    handles.append(conv.register_forward_hook(shape_of))
    assert list(diagnose(conv, torch.randn(2, 3, 5, 5))) == []


@pytest.mark.parametrize("flag", ["output_hidden_states", "output_attentions"])
def test_transformers_output_capture_still_works_after_a_diagnosis(flag: str) -> None:
    model, ids = load_tiny_llama(), torch.randint(0, 10, (2, 12))
    if flag == "output_attentions":
        model.set_attn_implementation("eager")
    assert list(diagnose(model, ids, kwargs={flag: True})) == []
    with torch.no_grad():
        out = model(ids, **{flag: True})
    captured = out.hidden_states if flag == "output_hidden_states" else out.attentions
    assert captured is not None and len(captured) >= 2


def test_qwen2_with_flags_in_the_inputs_dict_is_left_working() -> None:
    torch.manual_seed(0)
    config = transformers.Qwen2Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2)  # fmt: skip
    model = transformers.Qwen2ForCausalLM(config)
    ids = torch.randint(0, 64, (2, 7))
    assert list(diagnose(model, {"input_ids": ids, "output_hidden_states": True})) == []
    with torch.no_grad():
        assert len(model(ids, output_hidden_states=True).hidden_states) == 3


def test_a_tensor_hook_the_model_registers_during_the_run_is_removed_and_reported() -> None:
    class Registers(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.fc.weight.register_hook(lambda g: None)
            return self.fc(x)

    model = Registers()
    diagnosis = diagnose(model, X)
    assert diagnosis.kinds() == {"registers-hooks-every-call": 1}
    assert "param:fc.weight" in diagnosis[0].where
    assert not model.fc.weight._backward_hooks  # the doctor's run left none behind
    assert hookviz.list_hooks(model) == []


# ------------------------------------------------------------------------- forgotten returns, by evidence


@pytest.mark.parametrize("name", ["boosted", "g2", "tmp", "x"])
def test_a_dropped_new_output_is_found_whatever_its_name(handles: list[Any], name: str) -> None:
    model = mlp()
    namespace: dict[str, Any] = {}
    exec(f"def hook(module, args, output):\n    {name} = output * 2\n", namespace)  # noqa: S102
    handles.append(model[0].register_forward_hook(namespace["hook"]))
    diagnosis = diagnose(model, X)
    assert diagnosis.kinds() == {"return-forgotten": 1}, diagnosis
    assert f"`{name}`" in diagnosis[0].message and diagnosis[0].fix == f"end the hook with `return {name}`"


def test_a_copy_edited_then_dropped_is_a_forgotten_return(handles: list[Any]) -> None:
    model = mlp()

    def zero_first(module: nn.Module, args: Any, out: torch.Tensor) -> None:
        out = out.clone()
        out[:, 0] = 0

    handles.append(model[0].register_forward_hook(zero_first))
    assert diagnose(model, X).kinds() == {"return-forgotten": 1}


def test_a_temporary_that_is_read_is_not_a_forgotten_return(handles: list[Any]) -> None:
    model, stats = mlp(), []

    def absmean(module: nn.Module, args: Any, output: torch.Tensor) -> None:
        magnitude = output.abs()
        stats.append(magnitude.mean().detach())

    handles.append(model[0].register_forward_hook(absmean))
    assert list(diagnose(model, X)) == []


# ------------------------------------------------------------------------------ bad returns named, not inputs


@pytest.mark.parametrize(
    "hook",
    [
        lambda m, a, o: (o, o),  # a tuple where a tensor was
        lambda m, a, o: o[:, :3],  # another width
        lambda m, a, o: {"out": o},  # a dict
    ],
)
def test_a_return_that_breaks_the_forward_is_blamed_on_the_hook(handles: list[Any], hook: Any) -> None:
    model = mlp()
    handles.append(model[0].register_forward_hook(hook))
    diagnosis = diagnose(model, X)
    blamed = [f for f in diagnosis if f.severity == "error"]
    assert blamed and all(f.where == "0" for f in blamed), diagnosis
    assert "inputs" not in blamed[0].fix


def test_a_bad_backward_hook_return_names_the_module_and_the_hook(handles: list[Any]) -> None:
    model = mlp()

    def clip(module: nn.Module, grad_input: Any, grad_output: Any) -> Any:
        return grad_input[0].clamp(-1, 1)  # a bare tensor: a tuple is needed

    handles.append(model[2].register_full_backward_hook(clip))
    diagnosis = diagnose(model, X)
    assert diagnosis.kinds() == {"bad-backward-return": 1}
    assert diagnosis[0].where == "2" and "clip" in diagnosis[0].message and "backward" not in diagnosis[0].where


def test_a_pre_hook_with_kwargs_returning_only_kwargs_is_named(handles: list[Any]) -> None:
    model = mlp()
    handles.append(model[2].register_forward_pre_hook(lambda m, args, kwargs: kwargs, with_kwargs=True))
    assert diagnose(model, X).kinds() == {"pre-hook-return": 1}


def test_a_hook_returning_the_module_input_is_found(handles: list[Any]) -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2))
    handles.append(model[0].register_forward_hook(lambda m, args, out: args[0]))
    assert diagnose(model, X).kinds() == {"hook-returns-input": 1}


def test_inputs_that_are_wrong_without_any_hook_are_still_blamed_on_the_inputs(handles: list[Any]) -> None:
    model = mlp()
    handles.append(model[0].register_forward_hook(lambda m, a, o: None))
    with pytest.raises(hookviz.DiagnosisError, match="without its hooks too"):
        diagnose(model, torch.randn(6, 5))


# ------------------------------------------------------------------------------------ copies and storage


def test_a_new_closure_each_epoch_is_a_copy(handles: list[Any]) -> None:
    model, acts = mlp(), {}

    def attach(name: str, module: nn.Module) -> Any:
        def save(m: nn.Module, a: Any, o: torch.Tensor) -> None:
            acts[name] = o.detach()

        return module.register_forward_hook(save)

    for _epoch in range(3):
        handles.append(attach("fc", model[0]))
    assert diagnose(model, X).kinds() == {"duplicate-hook": 1}


def test_a_new_object_each_epoch_is_a_copy(handles: list[Any]) -> None:
    class SaveOutput:
        def __init__(self) -> None:
            self.outputs: list[torch.Tensor] = []

        def __call__(self, m: nn.Module, a: Any, o: torch.Tensor) -> None:
            self.outputs.append(o.detach())

    model = mlp()
    for _epoch in range(2):
        handles.append(model[2].register_forward_hook(SaveOutput()))
    assert diagnose(model, X).kinds() == {"duplicate-hook": 1}


def test_two_differently_configured_hooks_of_one_factory_are_not_copies(handles: list[Any]) -> None:
    model, seen = mlp(), []

    def scaled(factor: float) -> Any:
        return lambda m, a, o: seen.append(float(factor))

    handles += [model[0].register_forward_hook(scaled(1.0)), model[0].register_forward_hook(scaled(2.0))]
    assert "duplicate-hook" not in diagnose(model, X).kinds()


def test_an_output_kept_on_a_module_attribute_is_a_stored_graph_and_is_removed_afterwards(handles: list[Any]) -> None:
    model = mlp()

    def keep(module: nn.Module, args: Any, output: torch.Tensor) -> None:
        module.output = output

    handles.append(model[0].register_forward_hook(keep))
    diagnosis = diagnose(model, X)
    assert diagnosis.kinds() == {"stored-graph": 1} and diagnosis[0].where == "0"
    assert not hasattr(model[0], "output")  # left as found


def test_an_extractor_module_storing_into_self_features_is_a_stored_graph(handles: list[Any]) -> None:
    class Extractor(nn.Module):
        def __init__(self, model: nn.Module) -> None:
            super().__init__()
            self.model, self.features = model, {}
            self.handle = model[0].register_forward_hook(self.save)

        def save(self, module: nn.Module, args: Any, output: torch.Tensor) -> None:
            self.features["0"] = output

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.model(x)

    extractor = Extractor(mlp())
    handles.append(extractor.handle)
    assert diagnose(extractor, X).kinds() == {"stored-graph": 1}


# ---------------------------------------------------------------------------------- edits through .data


@pytest.mark.parametrize("where", ["grad", "output"])
def test_edits_through_data_are_found(handles: list[Any], where: str) -> None:
    model = mlp()
    if where == "grad":
        handles.append(model[2].weight.register_hook(lambda g: g.data.clamp_(-1e-3, 1e-3) and None))
    else:

        def halve(module: nn.Module, args: Any, output: torch.Tensor) -> None:
            output.data.mul_(0.5)

        handles.append(model[0].register_forward_hook(halve))
    assert "edit-through-data" in diagnose(model, X).kinds()


# ---------------------------------------------------------------------------------- the caller's context


def test_a_grad_cam_hook_that_fails_only_in_validation_is_found_under_no_grad(handles: list[Any]) -> None:
    model, grads = mlp(), []

    def gradcam(module: nn.Module, args: Any, output: torch.Tensor) -> None:
        output.register_hook(grads.append)

    handles.append(model[0].register_forward_hook(gradcam))
    assert serious(diagnose(model, X)) == []  # training: fine
    model.eval()
    with torch.no_grad():
        diagnosis = diagnose(model, X)
    assert diagnosis.kinds() == {"hook-raises-in-context": 1}, diagnosis
    assert "torch.no_grad()" in diagnosis[0].message
    assert not torch.is_grad_enabled() or True  # the caller's grad mode is back (checked below)
    with torch.no_grad():
        diagnose(model, X)
        assert not torch.is_grad_enabled()
    assert model.training is False


def test_a_hook_with_a_fixed_batch_size_is_found_on_another_batch(handles: list[Any]) -> None:
    model = mlp()

    def flat(module: nn.Module, args: Any, output: torch.Tensor) -> None:
        feats = output.reshape(6, -1)
        torch.manual_seed(0) if feats is None else None

    handles.append(model[0].register_forward_hook(flat))
    diagnosis = diagnose(model, X)
    assert diagnosis.kinds() == {"hook-raises-in-context": 1}, diagnosis
    assert "batch of 5" in diagnosis[0].message


# --------------------------------------------------------------------------------- not covered before


def test_a_hook_that_changes_requires_grad_or_modes_is_found(handles: list[Any]) -> None:
    model = mlp()

    def freeze(module: nn.Module, args: Any, output: torch.Tensor) -> None:
        module.eval()

    handles.append(model[2].register_forward_hook(freeze))
    diagnosis = diagnose(model, X)
    assert diagnosis.kinds() == {"hook-changes-model": 1} and "2.training = False" in diagnosis[0].message
    assert model[2].training  # put back


def test_a_global_hook_is_named_as_global_not_root(handles: list[Any]) -> None:
    def trace(module: nn.Module, args: Any, output: Any) -> None:
        return None

    handles.append(nn.modules.module.register_module_forward_hook(trace))
    diagnosis = diagnose(mlp(), X)
    assert diagnosis.kinds() == {"global-hook": 1} and diagnosis[0].where == "<global>"
    assert "trace" in diagnosis[0].message


def test_a_hook_on_a_view_of_a_parameter_is_found(handles: list[Any]) -> None:
    model = mlp()
    row = model[0].weight[0]
    handles.append(row.register_hook(lambda g: None))
    diagnosis = diagnose(model, X)
    assert diagnosis.kinds() == {"hook-on-parameter-view": 1} and diagnosis[0].where == "param:0.weight"


def test_identical_findings_on_many_parameters_are_grouped(handles: list[Any]) -> None:
    model = mlp()

    def clip(grad: torch.Tensor) -> None:
        grad = grad.clamp(-1, 1)  # noqa: F841

    handles += [p.register_hook(clip) for p in model.parameters()]
    diagnosis = diagnose(model, X)
    assert len(diagnosis) == 1 and diagnosis.kinds() == {"return-forgotten": 1}
    assert all(name in diagnosis[0].message for name in ("0.weight", "0.bias", "2.weight", "2.bias"))


def test_a_run_leaves_no_graph_alive(handles: list[Any]) -> None:
    model, outs = mlp(), []
    handles.append(model[0].register_forward_hook(lambda m, a, o: outs.append(weakref.ref(o))))
    diagnose(model, X)
    assert outs and all(ref() is None for ref in outs)


# ------------------------------------------------------------------------- more evidence, more realistic code


def test_a_tensor_hook_registered_inside_a_forward_hook_is_watched_too(handles: list[Any]) -> None:
    """Grad-CAM registers `output.register_hook(save)` in a forward hook: that inner hook is checked like the others,
    and nothing of it outlives the step."""
    model = mlp()

    def forward_hook(module: nn.Module, args: Any, output: torch.Tensor) -> None:
        def save(grad: torch.Tensor) -> None:
            grad = grad * 2  # noqa: F841 - the planted bug: the doubled gradient is thrown away

        output.register_hook(save)

    handles.append(model[0].register_forward_hook(forward_hook))
    diagnosis = diagnose(model, X)
    assert diagnosis.kinds() == {"return-forgotten": 1} and "forward_hook.save" in diagnosis[0].message
    assert diagnosis[0].where == "0"


def test_an_expression_whose_value_is_thrown_away_is_a_forgotten_return(handles: list[Any]) -> None:
    model = mlp()

    def scale(module: nn.Module, args: Any, output: torch.Tensor) -> None:
        output.mul(2)  # computed, never returned nor kept

    handles.append(model[0].register_forward_hook(scale))
    diagnosis = diagnose(model, X)
    assert diagnosis.kinds() == {"return-forgotten": 1} and "`mul(...)`" in diagnosis[0].message


def test_a_list_bound_as_a_default_argument_is_searched_for_stored_graphs(handles: list[Any]) -> None:
    model, kept = mlp(), []
    handles.append(model[0].register_forward_hook(lambda m, a, o, store=kept: store.append(o)))
    assert diagnose(model, X).kinds() == {"stored-graph": 1}


def test_a_key_computed_in_the_registration_loop_is_late_bound(handles: list[Any]) -> None:
    model, acts = mlp(), {}
    for layer in (model[0], model[2]):
        key = f"{type(layer).__name__}_{id(layer)}"
        handles.append(layer.register_forward_hook(lambda m, a, o: acts.__setitem__(key, o.detach())))  # noqa: B023
    assert diagnose(model, X).kinds() == {"late-binding": 1}


def test_a_hook_that_switches_grad_mode_off_is_found_and_undone(handles: list[Any]) -> None:
    model = mlp()

    def off(module: nn.Module, args: Any, output: torch.Tensor) -> None:
        torch.set_grad_enabled(False)

    handles.append(model[0].register_forward_hook(off))
    diagnosis = diagnose(model, X)
    assert diagnosis.kinds() == {"hook-changes-model": 1} and "torch.set_grad_enabled(False)" in diagnosis[0].message
    assert torch.is_grad_enabled()


def test_a_torchscript_model_gets_a_note_on_what_cannot_be_checked() -> None:
    scripted = torch.jit.script(mlp())
    diagnosis = diagnose(scripted, X)
    assert [(f.kind, f.severity) for f in diagnosis] == [("torchscript-model", "info")]


def test_an_optimizer_step_in_a_post_accumulate_hook_is_not_mistaken_for_the_clinic_mistake(handles: list[Any]) -> None:
    """Optimizer-in-backward (PyTorch's own tutorial): the hook reads p.grad, steps, clears it. The weights change on
    purpose; mistake 19 is a hook that edits the parameter thinking it is the gradient."""
    model = mlp()
    optimizers = {p: torch.optim.SGD([p], lr=0.1) for p in model.parameters()}

    def step(param: torch.Tensor) -> None:
        optimizers[param].step()
        optimizers[param].zero_grad()

    handles += [p.register_post_accumulate_grad_hook(step) for p in model.parameters()]
    assert serious(diagnose(model, X)) == []


def test_a_reused_module_whose_hook_overwrites_its_record_is_a_warning_and_one_that_appends_a_note(
    handles: list[Any],
) -> None:
    class Shared(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1, self.fc2, self.act = nn.Linear(4, 8), nn.Linear(8, 2), nn.ReLU()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.act(self.fc2(self.act(self.fc1(x))))

    model, shapes, calls = Shared(), {}, []
    handle = model.act.register_forward_hook(lambda m, a, o: shapes.__setitem__("act", tuple(o.shape)))
    assert [(f.kind, f.severity) for f in diagnose(model, X)] == [("module-called-twice", "warning")]
    handle.remove()
    handles.append(model.act.register_forward_hook(lambda m, a, o: calls.append(tuple(o.shape))))
    assert [(f.kind, f.severity) for f in diagnose(model, X)] == [("module-called-twice", "info")]
