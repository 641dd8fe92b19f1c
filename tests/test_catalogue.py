"""The catalogue of hook kinds matches PyTorch, and the inspector and register() speak its names."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.optim.optimizer as optimizer_hooks
from torch import nn

import hookviz
from hookviz.catalogue import HOOK_KINDS, PHASES, TARGETS, catalogue_table, hook_kind, kinds
from hookviz.text import closest_hint, closest_names, text_table


def noop(*args, **kwargs):
    return None


def test_every_registration_call_exists_and_every_field_is_from_its_vocabulary():
    for kind in HOOK_KINDS.values():
        assert callable(kind.registration_function()), kind.register
        assert kind.target in TARGETS and kind.phase in PHASES
        assert kind.fires and kind.storage
    assert [k.name for k in kinds(deprecated=True)] == ["backward_legacy", "global_backward_legacy"]
    assert hook_kind("backward").method == "register_full_backward_hook"
    assert hook_kind("backward_legacy").method == "register_backward_hook"
    assert len(HOOK_KINDS) == 34  # the registration APIs notebook 00 finds on PyTorch's hook owners


def test_no_public_hook_registration_on_the_owners_is_missing():
    """Every public register_*hook* on Tensor, Module, Optimizer and the global modules is in the catalogue."""
    owners = {
        "torch.Tensor": torch.Tensor,
        "torch.nn.Module": nn.Module,
        "torch.optim.Optimizer": torch.optim.Optimizer,
        "torch.nn.modules.module": torch.nn.modules.module,
        "torch.optim.optimizer": optimizer_hooks,
    }
    listed = {k.register for k in HOOK_KINDS.values()}
    for owner_name, owner in owners.items():
        for name in dir(owner):
            if name.startswith("register") and "hook" in name:
                assert f"{owner_name}.{name}" in listed, f"{owner_name}.{name} is missing from the catalogue"


def test_hooks_of_reads_each_inspectable_module_and_tensor_kind():
    layer = nn.Linear(2, 2)
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    handles = []
    for kind in kinds(target="module") + kinds(target="tensor") + kinds(target="optimizer"):
        if kind.name == "backward_legacy":
            continue  # cannot share a module with full backward hooks; checked below
        target = {"module": layer, "tensor": layer.weight, "optimizer": opt}[kind.target]
        handles.append(getattr(target, kind.method)(noop))
        assert len(kind.hooks_of(target)) == 1, kind.name
    assert hook_kind("backward_legacy").hooks_of(layer) == {}
    for handle in handles:
        handle.remove()
    legacy = nn.Linear(2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        handle = legacy.register_backward_hook(noop)
    assert list(hook_kind("backward_legacy").hooks_of(legacy).values()) == [noop]
    assert hook_kind("backward").hooks_of(legacy) == {}
    handle.remove()
    with pytest.raises(ValueError, match="cannot list"):
        hook_kind("node").hooks_of(layer)


def test_global_kinds_read_the_process_wide_dicts():
    with torch.nn.modules.module.register_module_full_backward_hook(noop):
        assert list(hook_kind("global_backward").hooks_of().values()) == [noop]
        assert hook_kind("global_backward_legacy").hooks_of() == {}
        assert [r.kind for r in hookviz.hooks_table.list_global_hooks()] == ["global_backward"]


def test_hook_kind_errors_say_what_to_use():
    with pytest.raises(ValueError, match="called 'backward'"):
        hook_kind("register_full_backward_hook")
    with pytest.raises(ValueError, match="hookviz calls it 'state_dict_post'"):
        hook_kind("state_dict")
    with pytest.raises(ValueError, match="closest: 'post_accumulate_grad'"):
        hook_kind("post_accumulate")
    with pytest.raises(ValueError, match="unknown target"):
        kinds(target="modul")


def test_catalogue_table_lists_the_kinds_of_a_target():
    lines = catalogue_table(target="tensor").splitlines()
    assert lines[0].split() == ["name", "register", "phase"]
    assert [line.split()[0] for line in lines[2:]] == ["tensor", "post_accumulate_grad"]
    assert "deprecated" in catalogue_table(columns=("name", "deprecated"))
    with pytest.raises(ValueError, match="unknown column"):
        catalogue_table(columns=("nam",))


def test_text_table_and_hints():
    assert text_table(("a", "bb"), [("xxx", 1)]) == "a    bb\n---  --\nxxx  1"
    assert text_table(("a", "bb"), [("xxx", 1)], rule=False) == "a    bb\nxxx  1"
    assert text_table(("a",), [], empty="nothing") == "nothing"
    with pytest.raises(ValueError, match="cells"):
        text_table(("a", "b"), [("only one",)])
    assert closest_names("feature.0", ["", "features.0", "classifier.1"]) == ["features.0"]
    assert closest_hint("zzz", ["features.0"]) == ""
    assert closest_hint("feature.0", ["features.0"]) == "; closest: 'features.0'"
