"""The hook inspector lists every kind of hook with its flags, and removes them all."""

import pytest
import torch
import torch.nn.modules.module as module_mod
from torch import nn
from torch.optim.optimizer import register_optimizer_step_post_hook

import hookviz


def noop(*args, **kwargs):
    return None


def test_lists_every_local_kind_with_flags():
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    model[0].register_forward_pre_hook(noop, with_kwargs=True)
    model[0].register_forward_hook(noop, always_call=True)
    model[0].register_full_backward_pre_hook(noop)
    model[0].register_full_backward_hook(noop)
    model[0].weight.register_hook(noop)
    model[0].bias.register_post_accumulate_grad_hook(noop)
    model.register_state_dict_post_hook(noop)
    table = hookviz.list_hooks(model, include_global=False)
    kinds = table.kinds()
    assert kinds == {
        "forward_pre": 1,
        "forward": 1,
        "backward_pre": 1,
        "backward": 1,
        "state_dict_post": 1,
        "tensor": 1,
        "post_accumulate_grad": 1,
    }
    rows = {(r.where, r.kind): r for r in table}
    assert rows[("0", "forward_pre")].flags == "with_kwargs"
    assert rows[("0", "forward")].flags == "always_call"
    assert rows[("0", "backward")].flags == "full"
    assert rows[("param:0.weight", "tensor")].hook == "noop"
    text = str(table)
    assert text.splitlines()[0].split() == ["where", "kind", "hook", "flags"]
    assert "<table>" in table._repr_html_()


def test_legacy_backward_hook_is_flagged():
    import warnings

    layer = nn.Linear(2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        layer.register_backward_hook(noop)
    (row,) = hookviz.list_hooks(layer, include_global=False)
    assert row.kind == "backward_legacy" and "legacy" in row.flags


def test_remove_all_hooks_really_stops_them_firing():
    model = nn.Sequential(nn.Linear(2, 2))
    fired = []
    model[0].register_forward_hook(lambda *a: fired.append("forward"))
    model[0].register_full_backward_hook(lambda *a: fired.append("backward"))
    model[0].weight.register_hook(lambda g: fired.append("tensor"))
    hookviz.capture(model, "0", key="left-open").start()
    removed = hookviz.remove_all_hooks(model)
    assert removed == 4
    model(torch.randn(1, 2, requires_grad=True)).sum().backward()
    assert fired == []
    assert str(hookviz.list_hooks(model, include_global=False)) == "no hooks attached"
    assert hookviz.registered_keys(model) == {}


def test_global_hooks_are_listed_and_removed_only_on_request():
    model = nn.Linear(2, 2)
    handle = module_mod.register_module_forward_hook(noop)
    try:
        rows = [r for r in hookviz.list_hooks(model) if r.where == "<global>"]
        assert [(r.kind, r.hook) for r in rows] == [("global_forward", "noop")]
        hookviz.remove_all_hooks(model)
        assert any(r.where == "<global>" for r in hookviz.list_hooks(model))
        hookviz.remove_all_hooks(model, include_global=True)
        assert not any(r.where == "<global>" for r in hookviz.list_hooks(model))
    finally:
        handle.remove()


def test_describes_bound_methods_with_their_class():
    class Recorder:
        def hook(self, module, args, output):
            return None

    layer = nn.Linear(1, 1)
    layer.register_forward_hook(Recorder().hook)
    (row,) = hookviz.list_hooks(layer, include_global=False)
    assert row.hook.endswith("Recorder.hook")


def test_optimizer_hooks_are_listed_when_the_optimizer_is_given():
    model = nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    opt.register_step_pre_hook(noop)
    opt.register_step_post_hook(noop)
    opt.register_state_dict_pre_hook(noop)
    handle = register_optimizer_step_post_hook(noop)
    try:
        assert hookviz.list_hooks(model, include_global=False) == []
        rows = hookviz.list_hooks(model, optimizer=opt)
        assert [(r.where, r.kind) for r in rows] == [
            ("optimizer", "optimizer_step_pre"),
            ("optimizer", "optimizer_step_post"),
            ("optimizer", "optimizer_state_dict_pre"),
            ("<global optimizer>", "global_optimizer_step_post"),
        ]
        assert hookviz.remove_all_hooks(model, optimizer=opt) == 2  # step hooks; state-dict hook stays
        left = [r.kind for r in hookviz.list_hooks(model, optimizer=opt)]
        assert left == ["optimizer_state_dict_pre", "global_optimizer_step_post"]
        assert hookviz.remove_all_hooks(model, optimizer=opt, include_global=True) == 1
    finally:
        handle.remove()


def test_remove_all_hooks_with_globals_forgets_the_global_backward_kind():
    """A removed global full backward hook blocks legacy global hooks until remove_all_hooks resets the flag."""
    import warnings

    handle = module_mod.register_module_full_backward_hook(lambda m, gi, go: None)
    handle.remove()
    assert module_mod._global_is_full_backward_hook is True  # PyTorch's own leftover
    hookviz.remove_all_hooks(nn.Linear(2, 2), include_global=True)
    assert module_mod._global_is_full_backward_hook is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        legacy = module_mod.register_module_backward_hook(lambda m, gi, go: None)  # no longer refused
    legacy.remove()
    hookviz.remove_all_hooks(nn.Linear(2, 2), include_global=True)
    assert module_mod._global_is_full_backward_hook is None


def _pruned_and_normed() -> nn.Module:
    import torch.nn.utils.prune as prune

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4))
    prune.l1_unstructured(model[0], "weight", amount=0.5)
    with pytest.warns(FutureWarning):
        nn.utils.weight_norm(model[1])
    nn.utils.spectral_norm(model[2])
    return model.eval()


def test_remove_all_hooks_keeps_the_hooks_pytorch_needs_and_says_so() -> None:
    """Pruning, weight_norm and spectral_norm recompute the weight in a forward pre-hook: those stay."""
    model = _pruned_and_normed()
    x = torch.randn(3, 4)
    expected = model(x)
    model[0].register_forward_hook(lambda *args: None)  # the user's own hooks go
    model[1].register_forward_pre_hook(lambda *args: None)
    with pytest.warns(UserWarning, match=r"kept 3 hook\(s\).*L1Unstructured.*WeightNorm.*SpectralNorm"):
        removed = hookviz.remove_all_hooks(model)
    assert removed == 2
    assert [(row.where, row.hook) for row in removed.kept] == [
        ("0", "L1Unstructured"),
        ("1", "WeightNorm"),
        ("2", "SpectralNorm"),
    ]
    assert torch.equal(model(x), expected)  # the pruned weight is still recomputed: same output
    kept = [row.hook for row in hookviz.list_hooks(model) if row.kind == "forward_pre"]
    assert kept == ["L1Unstructured", "WeightNorm", "SpectralNorm"]
    for module in model:  # tidy up (PyTorch's own undo calls)
        module._forward_pre_hooks.clear()


def test_remove_all_hooks_refuses_what_is_not_a_model() -> None:
    for bad in (None, 3, "model"):
        with pytest.raises(TypeError, match=r"needs model to be an nn.Module.*remove_all_hooks\(model\)"):
            hookviz.remove_all_hooks(bad)  # type: ignore[arg-type]


def test_pytorch_owned_tells_a_users_hook_from_pytorchs() -> None:
    import functools

    import torch.nn.utils.prune as prune

    from hookviz.hooks_table import pytorch_owned

    def mine(*args: object) -> None:
        return None

    assert not pytorch_owned(mine) and not pytorch_owned(functools.partial(mine, 1)) and not pytorch_owned(print)
    assert pytorch_owned(prune.Identity()) and pytorch_owned(functools.partial(torch.nn.init.zeros_))


def test_hooks_transformers_leaves_on_a_model_are_named_kept_and_not_mistakes():
    """transformers collects output_hidden_states with forward hooks it leaves on the layers: list_hooks names
    them as its own, remove_all_hooks keeps them (with a warning naming the library), the doctor ignores them."""
    import warnings

    import hookviz
    from hookviz.hooks_table import owning_library
    from hookviz.llama import make_copy_batch, random_llama

    model = random_llama(3)
    prompts, _ = make_copy_batch(2)
    assert len(hookviz.list_hooks(model)) == 0
    with torch.no_grad():
        model(prompts, output_hidden_states=True)
    table = hookviz.list_hooks(model)
    assert len(table) == 4 and all(row.flags == "transformers's own" for row in table)
    assert all(row.library == "transformers" for row in table)
    mine = model.model.layers[0].register_forward_hook(lambda m, a, out: None)
    assert owning_library(lambda: None) is None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        removed = hookviz.remove_all_hooks(model)
    assert int(removed) == 1 and len(removed.kept) == 4 and "transformers attached" in str(caught[0].message)
    assert mine.id not in model.model.layers[0]._forward_hooks
    with torch.no_grad():
        assert len(model(prompts, output_hidden_states=True).hidden_states) == 3  # transformers still works
    assert len(hookviz.diagnose(model, prompts)) == 0
