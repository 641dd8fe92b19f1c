"""The checkers of notebook 11 (mistakes clinic) reject the buggy code the exercises start from and accept fixes."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest
import torch
from torch import nn

from hookviz.exercises import ExerciseNotSolved, nb11


def _stub(*args):
    raise NotImplementedError


# ---------------------------------------------------------------- exercise 1: output shapes per layer


def buggy_record_output_shapes(model, shapes):
    return [
        child.register_forward_hook(lambda m, args, out: shapes.__setitem__(name, tuple(out.shape)))  # noqa: B023
        for name, child in model.named_children()
    ]


def fixed_record_output_shapes(model, shapes):
    return [
        child.register_forward_hook(lambda m, args, out, name=name: shapes.__setitem__(name, tuple(out.shape)))
        for name, child in model.named_children()
    ]


def test_record_output_shapes_rejects_the_late_binding_bug_and_the_stub():
    with pytest.raises(ExerciseNotSolved, match="loop variable"):
        nb11.check_record_output_shapes(buggy_record_output_shapes)
    with pytest.raises(ExerciseNotSolved, match="not solved yet"):
        nb11.check_record_output_shapes(_stub)
    with pytest.raises(ExerciseNotSolved, match="handles"):
        nb11.check_record_output_shapes(lambda model, shapes: None)


def test_record_output_shapes_accepts_the_fix(capsys):
    nb11.check_record_output_shapes(fixed_record_output_shapes)
    assert "✓" in capsys.readouterr().out


# ---------------------------------------------------------------- exercise 2: weight-gradient norms


def buggy_log_weight_grad_norms(model, norms):
    handles = []
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):

            def log(mod, grad_input, grad_output, name=name):
                norms[name] = mod.weight.grad.norm().item()

            handles.append(module.register_full_backward_hook(log))
    return handles


def stale_log_weight_grad_norms(model, norms):
    """Reads .grad in a backward hook but survives None: gets the previous step's value instead."""
    handles = []
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):

            def log(mod, grad_input, grad_output, name=name):
                norms[name] = 0.0 if mod.weight.grad is None else mod.weight.grad.norm().item()

            handles.append(module.register_full_backward_hook(log))
    return handles


def fixed_log_weight_grad_norms(model, norms):
    handles = []
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):

            def log(param, name=name):
                norms[name] = param.grad.norm().item()

            handles.append(module.weight.register_post_accumulate_grad_hook(log))
    return handles


@pytest.mark.parametrize("wrong", [buggy_log_weight_grad_norms, stale_log_weight_grad_norms, _stub])
def test_log_weight_grad_norms_rejects_wrong_versions(wrong):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the full backward hook on the first layer warns
        with pytest.raises(ExerciseNotSolved):
            nb11.check_log_weight_grad_norms(wrong)


def test_log_weight_grad_norms_accepts_the_fix_and_leaves_no_hooks(capsys):
    nb11.check_log_weight_grad_norms(fixed_log_weight_grad_norms)
    assert "✓" in capsys.readouterr().out


# ---------------------------------------------------------------- exercise 3: steering a tuple-returning block


def buggy_add_steering(block, vector):
    return block.register_forward_hook(lambda module, args, output: output[0] + vector)


def drops_weights_add_steering(block, vector):
    return block.register_forward_hook(lambda module, args, output: (output[0] + vector, output[0]))


def fixed_add_steering(block, vector):
    def steer(module, args, output):
        hidden, *rest = output
        return (hidden + vector, *rest)

    return block.register_forward_hook(steer)


@pytest.mark.parametrize("wrong", [buggy_add_steering, drops_weights_add_steering, _stub])
def test_add_steering_rejects_wrong_versions(wrong):
    with pytest.raises(ExerciseNotSolved):
        nb11.check_add_steering(wrong)


def test_add_steering_accepts_the_fix(capsys):
    nb11.check_add_steering(fixed_add_steering)
    assert "✓" in capsys.readouterr().out


def test_tuple_block_returns_hidden_and_weights():
    hidden, weights = nb11.TupleBlock()(torch.randn(2, 4))
    assert hidden.shape == weights.shape == (2, 4)
    assert torch.allclose(weights.sum(-1), torch.ones(2))


# ---------------------------------------------------------------- plausible wrong answers get a specific hint


def named_modules_record_output_shapes(model, shapes):
    return [
        module.register_forward_hook(lambda m, args, out, name=name: shapes.__setitem__(name, tuple(out.shape)))
        for name, module in model.named_modules()
    ]


def weight_norm_log_weight_grad_norms(model, norms):
    """Section 19's mistake: the post-accumulate hook's argument read as if it were the gradient."""
    return [
        module.weight.register_post_accumulate_grad_hook(
            lambda param, name=name: norms.__setitem__(name, param.norm().item())
        )
        for name, module in model.named_modules()
        if isinstance(module, nn.Linear)
    ]


def nested_tuple_add_steering(block, vector):
    return block.register_forward_hook(lambda module, args, output: (output[0] + vector, output))


@pytest.mark.parametrize(
    ("check", "wrong", "hint"),
    [
        (nb11.check_record_output_shapes, named_modules_record_output_shapes, "named_children"),
        (nb11.check_log_weight_grad_norms, weight_norm_log_weight_grad_norms, "param.grad"),
        (nb11.check_add_steering, nested_tuple_add_steering, "nested"),
        (nb11.check_add_steering, drops_weights_add_steering, "second element changed"),
    ],
)
def test_plausible_wrong_answers_get_a_specific_hint(check, wrong, hint):
    with pytest.raises(ExerciseNotSolved, match=hint):
        check(wrong)


# ---------------------------------------------------------------- the clinic's numbering and its symptom index


def _clinic_markdown() -> list[str]:
    """The source of every markdown cell of notebook 11, in order."""
    path = Path(__file__).resolve().parents[1] / "notebooks" / "11_mistakes_clinic.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown"]


def test_mistakes_are_numbered_in_order_and_each_is_in_the_symptom_index():
    markdown = _clinic_markdown()
    anchors = [int(n) for text in markdown for n in re.findall(r'<a id="mistake-(\d\d)"></a>', text)]
    assert anchors == list(range(1, len(anchors) + 1)), "mistake anchors must run 01, 02, ... without gaps"
    index = next(text for text in markdown if '<a id="index"></a>' in text)
    indexed = {int(n) for n in re.findall(r"\]\(#mistake-(\d\d)\)", index)}
    assert indexed == set(anchors), f"sections missing from the index: {sorted(set(anchors) - indexed)}"
    assert f"to recognise {len(anchors)} hook bugs" in markdown[0]
