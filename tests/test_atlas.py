"""The hook atlas (hookviz.atlas): coverage, the stored snapshots, the table, the links, and re-runs of its
findings on other modules and optimizers (a learner's variations), all without a kernel."""

from __future__ import annotations

import copy
import dataclasses
import json
import re

import pytest
import torch
import torch.distributed as dist
import torch.nn.modules.module as module_hooks
from notebook_tools import REPO
from torch import nn

from hookviz import atlas
from hookviz.catalogue import HOOK_KINDS, hook_kind


@pytest.fixture(scope="module")
def entries() -> list[atlas.Entry]:
    return atlas.run_atlas()


def by_key(entries: list[atlas.Entry]) -> dict[tuple[str, str], atlas.Entry]:
    return atlas.entries_by_key(entries)


# ------------------------------------------------------------------------------------------- coverage
def test_every_catalogue_kind_in_seven_categories(entries):
    assert list(atlas.iter_kinds(entries)) == list(HOOK_KINDS)
    assert {e.category for e in entries} == set(atlas.CATEGORIES) and len(atlas.CATEGORIES) == 7
    assert len({e.key for e in entries}) == len(entries), "(kind, situation) identifies an entry"
    for kind in HOOK_KINDS:
        assert len({e.category for e in entries if e.kind == kind}) >= 4, f"{kind} is probed in too few categories"


def test_every_entry_is_filled_in(entries):
    for e in entries:
        assert e.torch == atlas.torch_version()
        assert e.calls == 0 if not e.fires else e.calls >= 1
        assert (e.receives == atlas.NOT_APPLICABLE) == (not e.fires) or e.kind == "saved_tensors_disabled"
        assert e.question and e.category in atlas.CATEGORIES


def test_running_the_atlas_twice_gives_the_same_entries(entries):
    assert atlas.run_atlas() == entries


def test_the_running_torch_matches_its_stored_snapshot(entries):
    assert atlas.torch_version() in atlas.stored_versions()
    assert atlas.load_snapshot(atlas.torch_version()) == entries


def test_the_atlas_leaves_the_process_as_it_found_it(entries):
    """No hook left (the conftest guard checks that too), the global backward flag and no process group."""
    flag = module_hooks._global_is_full_backward_hook
    atlas.run_atlas(["global_backward", "global_backward_legacy", "ddp_comm"])
    assert module_hooks._global_is_full_backward_hook is flag
    assert not dist.is_initialized()
    for kind in HOOK_KINDS.values():
        if kind.is_global and kind.inspectable:
            assert not kind.hooks_of(), f"{kind.name} hook left behind"
    # a learner may still register either global backward kind afterwards
    with module_hooks.register_module_full_backward_hook(lambda m, gi, go: None):
        pass
    module_hooks._global_is_full_backward_hook = flag


def test_unknown_kind_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown hook kind 'forwrd'.*'forward'"):
        atlas.run_atlas(["forwrd"])


def test_a_missing_snapshot_names_the_stored_versions(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no stored atlas for torch '9.9.9'.*stored"):
        atlas.load_snapshot("9.9.9")


# ------------------------------------------------------------------------------------------- findings
@pytest.mark.parametrize(
    ("key", "fires", "calls", "error"),
    [
        (("forward", "called_twice_in_one_pass"), True, 2, ""),
        (("forward", "registered_twice"), True, 2, ""),
        (("forward", "forward_raises"), False, 0, "ValueError"),
        (("forward", "deepcopy"), True, 1, ""),
        (("forward", "jit_trace"), False, 0, ""),
        (("forward_pre", "checkpoint"), True, 2, ""),
        (("forward_pre", "checkpoint_reentrant"), True, 2, ""),
        (("forward", "checkpoint"), True, 1, ""),
        (("forward", "checkpoint_reentrant"), True, 2, ""),
        (("global_forward", "checkpoint_reentrant"), True, 4, ""),
        (("backward", "dict_output"), False, 0, ""),
        (("backward", "no_grad"), False, 0, "RuntimeError"),
        (("backward", "func_grad"), False, 0, "RuntimeError"),
        (("backward_legacy", "func_grad"), True, 1, ""),
        (("tensor", "deepcopy"), False, 0, ""),
        (("optimizer_step_pre", "deepcopy"), False, 0, ""),
        (("global_optimizer_step_pre", "deepcopy"), True, 1, ""),
        (("optimizer_step_post", "removed_inside"), True, 1, ""),
        (("optimizer_step_post", "removed_inside_before_another"), True, 1, "RuntimeError"),
        (("forward", "removed_inside_before_another"), True, 1, ""),
        (("state_dict_pre", "removed_by_earlier_hook"), False, 0, "RuntimeError"),
        (("saved_tensors_disabled", "plain"), True, 1, "RuntimeError"),
        (("saved_tensors_disabled", "after_block"), False, 0, ""),
        (("ddp_comm", "plain"), True, 1, ""),
    ],
)
def test_key_findings(entries, key, fires, calls, error):
    entry = by_key(entries)[key]
    assert (entry.fires, entry.calls, entry.error) == (fires, calls, error)


def test_returns_column(entries):
    found = by_key(entries)
    assert found[("forward", "plain")].returns == "the module's output"
    assert found[("forward", "removed_inside")].returns == "the module's output"
    assert found[("post_accumulate_grad", "plain")].returns == "error: RuntimeError"
    assert found[("optimizer_step_post", "plain")].returns == "nothing"
    assert found[("saved_tensors_on_cpu", "plain")].returns == atlas.NOT_APPLICABLE
    assert found[("optimizer_step_pre", "plain")].receives == "(SGD, (SGD, function), {})"


#: The forward kinds under checkpointing, as real checkpointed blocks meet them (an input that requires grad, a
#: replacement that keeps the graph): (fires, calls, returns, error), the same in every stored torch release.
CHECKPOINT_FORWARD = {
    ("forward_pre", "checkpoint"): (True, 2, "the module's output", ""),
    ("forward_pre", "checkpoint_reentrant"): (True, 2, "the module's output", ""),
    ("forward", "checkpoint"): (True, 1, "the module's output", ""),
    ("forward", "checkpoint_reentrant"): (True, 2, "the module's output", ""),
    ("global_forward_pre", "checkpoint"): (True, 4, "the module's output", ""),
    ("global_forward_pre", "checkpoint_reentrant"): (True, 4, "the module's output", ""),
    ("global_forward", "checkpoint"): (True, 2, "the module's output", ""),
    ("global_forward", "checkpoint_reentrant"): (True, 4, "the module's output", ""),
}


def test_checkpoint_entries_are_measured_as_real_code_meets_them(entries):
    """Not the artefacts of an input without grad (reentrant: backward raised, the hooks fired once) or of a
    replacement without a graph (zeros_like: "error: RuntimeError")."""
    found = by_key(entries)
    measured = {key: (found[key].fires, found[key].calls, found[key].returns, found[key].error)
                for key in CHECKPOINT_FORWARD}
    assert measured == CHECKPOINT_FORWARD


@pytest.mark.parametrize("version", atlas.stored_versions())
def test_every_stored_snapshot_has_the_real_checkpoint_entries(version):
    found = by_key(atlas.load_snapshot(version))
    measured = {key: (found[key].fires, found[key].calls, found[key].returns, found[key].error)
                for key in CHECKPOINT_FORWARD}
    assert measured == CHECKPOINT_FORWARD, f"the atlas stored for torch {version} has the old checkpoint probe"


def test_summarize_shows_types_and_shapes_never_values():
    value = (torch.zeros(2, 3), torch.zeros(1, dtype=torch.bfloat16), None, 2.0, {"y": nn.Parameter(torch.zeros(4))})
    assert atlas.summarize(value) == "(Tensor[2, 3], Tensor[1] bfloat16, None, 2.0, {y: Parameter[4]})"
    assert atlas.summarize((torch.zeros(1),)) == "(Tensor[1],)"
    assert atlas.summarize(list(range(9))) == "list[9]"


# ------------------------------------------------------------------------------------------- snapshots, diff
def test_snapshots_round_trip(tmp_path, entries):
    path = atlas.write_snapshot(entries[:5], tmp_path)
    assert path.name == f"atlas-torch-{atlas.torch_version()}.json"
    assert atlas.load_snapshot(atlas.torch_version(), tmp_path) == entries[:5]
    assert len(json.loads(path.read_text())) == 5


#: Key findings of the ``variations`` category: (fires, calls, receives, returns, error), the same in every stored
#: torch release. ``None`` skips a field.
VARIATIONS = {
    # a cast keeps every hook, which then receives float64 tensors
    ("forward", "cast_float64"): (True, 1, "(_Toy, (Tensor[2, 3] float64,), Tensor[2, 3] float64)",
                                  "the module's output", ""),
    ("backward", "cast_float64"): (True, 1, "(_Toy, (Tensor[2, 3] float64,), (Tensor[2, 3] float64,))", None, ""),
    # a hook on a replaced child stays on the old child: it never fires; global hooks see the new child
    ("forward_pre", "child_replaced"): (False, 0, "-", "-", ""),
    ("forward", "child_replaced"): (False, 0, "-", "-", ""),
    ("backward", "child_replaced"): (False, 0, "-", "-", ""),
    ("global_forward", "child_replaced"): (True, 2, "(Linear, (Tensor[2, 3],), Tensor[2, 3])", None, ""),
    # backward twice through one retained graph: backward hooks fire in both; create_graph changes nothing
    ("backward", "backward_twice"): (True, 2, None, "the gradients (x.grad, weight.grad)", ""),
    ("backward_pre", "backward_twice"): (True, 2, None, None, ""),
    ("global_backward", "backward_twice"): (True, 4, None, None, ""),
    ("forward", "backward_twice"): (True, 1, None, None, ""),
    ("backward", "create_graph"): (True, 1, "(_Toy, (Tensor[2, 3],), (Tensor[2, 3],))",
                                   "the gradients (x.grad, weight.grad)", ""),
    # an embedding's integer input has no gradient: grad_input is (None,), a replacement changes nothing;
    # the legacy hook receives the weight's gradient as its grad_input
    ("forward", "embedding"): (True, 1, "(Embedding, (Tensor[2, 3] int64,), Tensor[2, 3, 3])", None, ""),
    ("backward", "embedding"): (True, 1, "(Embedding, (None,), (Tensor[2, 3, 3],))", "nothing", ""),
    ("backward_legacy", "embedding"): (True, 1, "(Embedding, (Tensor[10, 3],), (Tensor[2, 3, 3],))", None, ""),
    # a recurrent cell called in a loop: every hook fires once per step
    ("forward_pre", "gru_cell_loop"): (True, 3, "(GRUCell, (Tensor[2, 3], Tensor[2, 3]))", None, ""),
    ("backward", "gru_cell_loop"): (True, 3, None, None, ""),
    # LSTM's nested (h, c) is not a top-level tensor: its grad_output slot is None
    ("backward", "lstm"): (True, 1, "(LSTM, (Tensor[2, 3],), (Tensor[2, 3], None))", None, ""),
    ("forward", "lstm"): (True, 1, "(LSTM, (Tensor[2, 3],), (Tensor[2, 3], tuple))", None, ""),
    # containers: a Sequential's hooks fire once per call; a ModuleList is never called, its hooks never fire
    ("forward", "sequential"): (True, 1, None, None, ""),
    ("backward", "sequential"): (True, 1, None, None, ""),
    ("global_forward", "sequential"): (True, 4, None, None, ""),
    ("forward", "module_list"): (False, 0, "-", "-", ""),
    ("backward", "module_list"): (False, 0, "-", "-", ""),
    ("global_forward", "module_list"): (True, 3, None, None, ""),
    # a leaf used twice: its hooks fire once, on the summed gradient
    ("tensor", "leaf_used_twice"): (True, 1, "(Tensor[3],)", "the leaves' .grad", ""),
    ("post_accumulate_grad", "leaf_used_twice"): (True, 1, None, None, ""),
    # load_state_dict copies into the hooked parameter (hook kept); assign=True swaps in a new one (hook lost)
    ("tensor", "reloaded_in_place"): (True, 1, None, "the leaves' .grad", ""),
    ("tensor", "reloaded_assign"): (False, 0, "-", "-", ""),
    ("post_accumulate_grad", "reloaded_in_place"): (True, 1, "(Parameter[3],)", None, ""),
    ("post_accumulate_grad", "reloaded_assign"): (False, 0, "-", "-", ""),
}


def _outcome_matches(entry: atlas.Entry, expected: tuple) -> bool:
    measured = (entry.fires, entry.calls, entry.receives, entry.returns, entry.error)
    return all(want is None or got == want for got, want in zip(measured, expected, strict=True))


def test_the_variations_findings(entries):
    found = by_key(entries)
    for key, expected in VARIATIONS.items():
        assert found[key].category == "variations"
        assert _outcome_matches(found[key], expected), (key, found[key].outcome())


@pytest.mark.parametrize("version", atlas.stored_versions())
def test_every_stored_snapshot_has_the_variations_findings(version):
    found = by_key(atlas.load_snapshot(version))
    for key, expected in VARIATIONS.items():
        assert _outcome_matches(found[key], expected), (version, key, found[key].outcome())


def test_variations_findings_rerun_by_hand():
    """The variations probes' findings, measured again without the atlas's rigs."""
    # a hook on a replaced child stays on the old child object: it fires when that object is called
    model = nn.Sequential(nn.Linear(3, 3))
    calls = []
    old = model[0]
    old.register_forward_hook(lambda *args: calls.append("old"))
    model[0] = nn.Linear(3, 3)
    model(torch.ones(1, 3))
    assert calls == []
    old(torch.ones(1, 3))
    assert calls == ["old"]
    # a leaf used twice: one call, with the summed gradient (d(w*v*w)/dw = 2*w*v)
    w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = torch.tensor([4.0, 5.0, 6.0])
    grads = []
    w.register_hook(lambda g: grads.append(g.clone()))
    (w * v * w).sum().backward()
    assert len(grads) == 1 and torch.equal(grads[0], 2 * w.detach() * v)
    # load_state_dict(assign=True) replaces the Parameter object, so its tensor hooks are gone
    for assign, fires in ((False, 1), (True, 0)):
        layer, fired = nn.Linear(3, 1), []
        layer.weight.register_hook(lambda g, fired=fired: fired.append(1))
        layer.load_state_dict(nn.Linear(3, 1).state_dict(), assign=assign)
        layer(torch.ones(2, 3)).sum().backward()
        assert len(fired) == fires
    # backward twice through a retained graph runs a full backward hook twice
    layer, fired = nn.Linear(3, 3), []
    layer.register_full_backward_hook(lambda *args: fired.append(1))
    loss = layer(torch.ones(2, 3, requires_grad=True)).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    assert len(fired) == 2


def test_every_stored_snapshot_has_the_same_entries():
    keys = {version: [e.key for e in atlas.load_snapshot(version)] for version in atlas.stored_versions()}
    assert len(set(map(tuple, keys.values()))) == 1, "every version has the same (kind, situation) list"


def test_diff_and_merge_find_a_changed_entry(entries):
    changed = [dataclasses.replace(e, calls=e.calls + 1, torch="9.9.9") if e.key == ("forward", "plain") else
               dataclasses.replace(e, torch="9.9.9") for e in entries]
    diff = atlas.diff_atlases(entries, changed)
    assert [(a.key, a.calls, b.calls) for a, b in diff] == [(("forward", "plain"), 1, 2)]
    rows = atlas.merge_versions({"1.0": entries, "9.9.9": changed})
    assert len(rows) == len(entries) + 1
    assert [versions for e, versions in rows if e.key == ("forward", "plain")] == [["1.0"], ["9.9.9"]]
    assert [versions for e, versions in rows if e.key == ("tensor", "plain")] == [["1.0", "9.9.9"]]
    assert atlas.diff_atlases(entries, entries[1:]) == [(entries[0], None)]


# ------------------------------------------------------------------------------------------- the table
@pytest.fixture()
def table(entries) -> atlas.AtlasTable:
    return atlas.AtlasTable(atlas.merge_versions({atlas.torch_version(): entries}), teaches=atlas.teaching_links())


def test_table_filters_headless(table, entries):
    assert len(table.visible()) == len(entries)
    table.set(query="deepcopy")
    assert table.visible() and all(e.situation == "deepcopy" for e, _ in table.visible())
    table.set(kind="optimizer_step_pre")
    assert [e.key for e, _ in table.visible()] == [("optimizer_step_pre", "deepcopy")]
    table.set(query="", kind="all", category="timing")
    assert {e.category for e, _ in table.visible()} == {"timing"}
    table.set(category="all", query="RUNTIMEERROR  optimizer")  # case-insensitive, every word
    assert table.visible() and all("optimizer" in e.kind and e.error == "RuntimeError" for e, _ in table.visible())


def test_table_refuses_unknown_filters_with_a_hint(table):
    with pytest.raises(ValueError, match="kind='forwad'.*'forward'"):
        table.set(kind="forwad")
    with pytest.raises(ValueError, match="category='timin'"):
        table.set(category="timin")


def test_table_renders_html_and_markdown_with_links(table):
    table.set(kind="forward", query="called_twice")
    html = table.to_html()
    assert "1 of" in html and 'href="02_forward_hooks.ipynb#twice-or-never"' in html
    assert 'title="the same module is applied twice' in html
    markdown = table.to_markdown().splitlines()
    assert markdown[0].startswith("| kind |") and len(markdown) == 3
    assert "[02_forward_hooks#twice-or-never](02_forward_hooks.ipynb#twice-or-never)" in markdown[2]
    table.set(kind="all", query="")
    assert "more rows" in table.to_html(limit=10)


def test_widget_is_a_thin_view_driven_headless(table):
    widget = atlas.atlas_widget(table, limit=5)
    assert repr(widget).startswith("AtlasWidget(") and "rows" in repr(widget)
    widget.query.value = "no_grad"
    assert table.query == "no_grad" and "no_grad" in widget.view.value
    widget.kind.value = "backward"
    assert widget.view.value.startswith("<p>1 of")
    widget.category.value = "lifecycle"
    assert widget.view.value.startswith("<p>0 of")
    bundle = widget._repr_mimebundle_()
    assert bundle["text/plain"] == repr(widget) and "application/vnd.jupyter.widget-view+json" in bundle


def test_the_constructor_checks_the_filters_as_set_does(table):
    rows = table.rows
    with pytest.raises(ValueError, match="kind='forwrd' is not in the atlas; closest: 'forward'"):
        atlas.AtlasTable(rows, kind="forwrd")
    with pytest.raises(ValueError, match="category='Failure'.*closest: 'failure'"):
        atlas.AtlasTable(rows, category="Failure")
    with pytest.raises(TypeError, match="query must be a string"):
        atlas.AtlasTable(rows, query=123)
    assert len(atlas.AtlasTable(rows, kind="forward", category="timing").visible()) > 0


def test_a_refused_set_changes_no_filter(table):
    with pytest.raises(ValueError, match="category='nope'"):
        table.set(kind="forward", category="nope", query="deepcopy")
    assert (table.kind, table.category, table.query) == ("all", "all", "")


@pytest.mark.parametrize(
    ("call", "error", "says"),
    [
        (lambda t: t.set(kind=3), TypeError, "kind must be a hook kind's name"),
        (lambda t: t.set(kind=["forward"]), TypeError, "kind must be a hook kind's name"),
        (lambda t: t.set(category=2), TypeError, "category must be one of"),
        (lambda t: t.set(query=123), TypeError, "query must be a string"),
        (lambda t: atlas.load_snapshot(None), TypeError, "version must be a torch version string"),
        (lambda t: atlas.load_snapshot(2.13), TypeError, "not 2.13; closest: '2.13.0'"),
        (lambda t: atlas.AtlasTable(atlas.load_snapshot("2.13.0")), TypeError, r"rows must be \(entry, versions\).*"
         r"merge_versions"),
        (lambda t: atlas.AtlasTable("rows"), TypeError, "rows must be a list of"),
        (lambda t: atlas.AtlasTable(t.rows, teaches=["x"]), TypeError, "teaches must be a dict"),
        (lambda t: t.to_html(limit=-1), ValueError, "limit must be 0 or more"),
        (lambda t: t.to_html("10"), TypeError, "limit must be a whole number"),
        (lambda t: t.to_html(2.5), TypeError, "limit must be a whole number"),
        (lambda t: atlas.atlas_widget(t, -1), ValueError, "atlas_widget: limit must be 0 or more"),
        (lambda t: atlas.atlas_widget(t.rows), TypeError, "atlas_widget needs an AtlasTable"),
        (lambda t: atlas.merge_versions(atlas.load_snapshot("2.13.0")), TypeError, "needs a dict"),
        (lambda t: atlas.stored_version_for(None), TypeError, "version must be a torch version string"),
        (lambda t: atlas.diff_atlases(t.rows, []), TypeError, "old must be a list of Entry"),
        (lambda t: atlas.teaching_links(extra=["x"]), TypeError, "extra must be a dict"),
        (lambda t: atlas.run_atlas(kinds=3), TypeError, "kinds must be a list"),
        (lambda t: atlas.probe("forward", "plain"), TypeError, "situation must be a Situation"),
    ],
)
def test_bad_arguments_are_clear_errors(table, call, error, says):
    with pytest.raises(error, match=says):
        call(table)


@pytest.mark.parametrize("limit", [0, 1, 5, 10**6])
def test_the_limit_counts_shown_and_hidden_rows_right(table, limit):
    html = table.to_html(limit)
    total = len(table.visible())
    shown = html.count("<tr>") - 1  # the header row
    assert shown == min(limit, total)
    more = re.search(r"… (\d+) more rows", html)
    assert (int(more.group(1)) if more else 0) == total - shown


def test_the_search_widget_closes_everything(table):
    from ipywidgets.widgets.widget import _instances

    before = set(_instances)
    widget = atlas.atlas_widget(table, limit=5)
    assert set(_instances) - before
    widget.close()
    assert set(_instances) == before, "closed widgets stay in ipywidgets' registry"
    assert repr(widget) == "AtlasWidget(closed)" and widget.closed
    assert widget._repr_mimebundle_() == {"text/plain": "AtlasWidget(closed)"}
    widget.query.value = "deepcopy"  # a closed widget no longer follows its controls
    assert table.query == ""
    widget.close()  # twice is fine


def test_a_rerun_cell_closes_the_earlier_search_widget(table, shell):
    """30 runs of the same notebook cell in a real IPython shell leave one search widget open, not 30."""
    import gc

    from ipywidgets.widgets.widget import _instances

    shell.user_ns.update(atlas=atlas, rows=table.rows)
    cell = "atlas.atlas_widget(atlas.AtlasTable(rows))"
    gc.collect()
    start = len(_instances)
    assert shell.run_cell(cell, store_history=True).success
    one = len(_instances) - start
    assert one > 0
    for _ in range(29):
        assert shell.run_cell(cell, store_history=True).success
    gc.collect()
    assert len(_instances) - start <= one, f"{len(_instances) - start} open ipywidgets after 30 runs (one: {one})"
    made = [v for v in shell.user_ns["Out"].values() if isinstance(v, atlas.AtlasWidget)]
    assert len(made) == 30 and sum(not w.closed for w in made) == 1 and not made[-1].closed
    made[-1].close()


# ------------------------------------------------------------------------------------------- links
def anchors(notebook: str) -> set[str]:
    text = (REPO / "notebooks" / f"{notebook}.ipynb").read_text(encoding="utf-8")
    return set(re.findall(r'<a id=\\"([^\\"]+)\\"', text))


def test_every_link_points_at_an_existing_anchor(entries):
    keys = {e.key for e in entries}
    for key, target in {**atlas.TAUGHT, **atlas.TAUGHT_HERE}.items():
        assert key in keys, f"{key} is linked but not in the atlas"
        notebook, anchor = target.split("#")
        assert anchor in anchors(notebook), f"{key}: {target} has no such anchor"


def test_links_are_notebook_files(entries):
    links = atlas.teaching_links()
    assert all(re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb#[a-z0-9_-]+", target) for target in links.values())
    assert set(links) == set(atlas.TAUGHT) | set(atlas.TAUGHT_HERE)


# ------------------------------------------------------------------------------------------- learner variations
def _fire_forward_twice_in_one_pass(module: nn.Module, x: torch.Tensor) -> int:
    calls = []
    with module.register_forward_hook(lambda m, a, o: calls.append(1)):
        module(module(x))
    return len(calls)


@pytest.mark.parametrize(
    ("module", "x"),
    [(nn.Conv2d(2, 2, 3, padding=1), torch.ones(1, 2, 4, 4)), (nn.Sequential(nn.Linear(3, 3), nn.ReLU()),
                                                              torch.ones(2, 3)), (nn.GRUCell(3, 3), torch.ones(2, 3))],
    ids=["conv", "sequential", "grucell"],
)
def test_other_modules_fire_once_per_call(module, x):
    assert _fire_forward_twice_in_one_pass(module, x) == 2
    calls = []
    with module.register_forward_hook(lambda m, a, o: calls.append(1)):
        copy.deepcopy(module)(x)
    assert calls == [1], "the deep copy carries the module's function hook"


@pytest.mark.parametrize("pack", ["list", "dict", "nested_tuple"])
def test_full_backward_hook_skips_containers_on_other_modules(pack):
    conv = nn.Conv2d(1, 1, 3)
    packers = {"list": lambda y: [y], "dict": lambda y: {"y": y}, "nested_tuple": lambda y: ((y,),)}

    class Wrapped(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = conv

        def forward(self, x: torch.Tensor):
            return packers[pack](self.conv(x))

    module, calls = Wrapped(), []
    with module.register_full_backward_hook(lambda m, gi, go: calls.append(1)):
        out = module(torch.ones(1, 1, 4, 4, requires_grad=True))
        tensor = out["y"] if pack == "dict" else (out[0][0] if pack == "nested_tuple" else out[0])
        tensor.sum().backward()
    assert calls == []


@pytest.mark.parametrize("make", [lambda ps: torch.optim.Adam(ps, lr=0.1), lambda ps: torch.optim.AdamW(ps),
                                  lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9)], ids=["adam", "adamw", "sgdm"])
@pytest.mark.parametrize("where", ["step_pre", "step_post", "state_dict_post"])
def test_removing_an_optimizer_hook_inside_breaks_the_loop_for_every_optimizer(make, where):
    p = nn.Parameter(torch.ones(2))
    optimizer = make([p])
    register = {"step_pre": optimizer.register_step_pre_hook, "step_post": optimizer.register_step_post_hook,
                "state_dict_post": optimizer.register_state_dict_post_hook}[where]
    handles = []
    handles.append(register(lambda *args: handles[0].remove()))
    handles.append(register(lambda *args: None))
    p.grad = torch.ones(2)
    try:
        with pytest.raises(RuntimeError, match="mutated during iteration"):
            optimizer.state_dict() if where == "state_dict_post" else optimizer.step()
    finally:
        for handle in handles:
            handle.remove()


@pytest.mark.parametrize("make", [lambda ps: torch.optim.Adam(ps, lr=0.1), lambda ps: torch.optim.RMSprop(ps)],
                         ids=["adam", "rmsprop"])
def test_deepcopy_drops_the_hooks_of_other_optimizers(make):
    p = nn.Parameter(torch.ones(2))
    optimizer = make([p])
    with optimizer.register_step_pre_hook(lambda *args: None), optimizer.register_state_dict_pre_hook(lambda o: None):
        duplicate = copy.deepcopy(optimizer)
        assert not hook_kind("optimizer_step_pre").hooks_of(duplicate)
        assert not hook_kind("optimizer_state_dict_pre").hooks_of(duplicate)
        assert hook_kind("optimizer_step_pre").hooks_of(optimizer)


@pytest.mark.parametrize("reentrant", [True, False], ids=["reentrant", "non_reentrant"])
@pytest.mark.parametrize("kind", ["forward_pre", "forward"])
def test_checkpointed_block_after_a_layer_with_parameters(kind, reentrant):
    """The atlas's checkpoint entries on a learner's model: a checkpointed block after a Linear (its input needs
    no requires_grad of its own), a hook that returns its value times 2."""
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(0)
    first, block = nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 4), nn.Tanh())
    x = torch.randn(2, 4)  # the data: no grad, as in a training loop
    expected = {key[1]: value for key, value in CHECKPOINT_FORWARD.items() if key[0] == kind}
    _, calls, _, _ = expected["checkpoint_reentrant" if reentrant else "checkpoint"]

    def run(double: bool) -> tuple[int, torch.Tensor]:
        count = []

        def hook(module, args, *output):
            count.append(1)
            if double:
                return (args[0] * 2,) if kind == "forward_pre" else output[0] * 2
            return None

        register = block.register_forward_pre_hook if kind == "forward_pre" else block.register_forward_hook
        block.zero_grad(set_to_none=True)
        with register(hook):
            checkpoint(block, first(x), use_reentrant=reentrant).sum().backward()
        return len(count), block[0].weight.grad.clone()

    plain_calls, plain_grad = run(double=False)
    doubled_calls, doubled_grad = run(double=True)
    assert plain_calls == doubled_calls == calls
    assert not torch.equal(plain_grad, doubled_grad), "the replacement (times 2, with its graph) changes the result"


# ------------------------------------------------------------------------------ where hooks run, what failure leaves
#: Where the first call of a hook ran (the runs_in column): on the CPU every hook runs on the thread that called the
#: trigger; backward-side hooks run with grad mode off unless backward(create_graph=True); forward hooks under
#: no_grad / inference_mode see that mode.
RUNS_IN = {
    ("forward", "plain"): "caller thread, grad on",
    ("forward", "no_grad"): "caller thread, grad off",
    ("forward", "inference_mode"): "caller thread, inference mode",
    ("backward", "plain"): "caller thread, grad off",
    ("backward", "create_graph"): "caller thread, grad on",
    ("tensor", "plain"): "caller thread, grad off",
    ("node", "plain"): "caller thread, grad off",
    ("forward", "checkpoint"): "caller thread, grad on",
    ("backward", "checkpoint"): "caller thread, grad off",
    ("optimizer_step_pre", "plain"): "caller thread, grad on",
}
#: What a hook raising halfway through its trigger left behind (the left column): a full backward hook raising
#: leaves the parameters' .grad set (the layer's own gradients were already accumulated) but the input's not; a
#: forward hook raising stops before any backward; a post-accumulate-grad hook raising on the first leaf leaves that
#: leaf's .grad set.
LEFT = {
    ("backward", "hook_raises"): ".grad set on 2 of 3 leaves",
    ("forward", "hook_raises"): ".grad set on 0 of 2 leaves",
    ("tensor", "hook_raises"): ".grad set on 0 of 2 leaves",
    ("post_accumulate_grad", "hook_raises"): ".grad set on 1 of 2 leaves",
    ("backward_legacy", "hook_raises"): ".grad set on 0 of 3 leaves",
    ("forward", "plain"): atlas.NOT_APPLICABLE,
}


def _where_and_left(entries: list[atlas.Entry]) -> tuple[dict, dict]:
    """The runs_in of the RUNS_IN keys and the left of the LEFT keys, as measured in ``entries``."""
    found = by_key(entries)
    return {key: found[key].runs_in for key in RUNS_IN}, {key: found[key].left for key in LEFT}


def test_where_hooks_run_and_what_failure_leaves(entries):
    assert _where_and_left(entries) == (RUNS_IN, LEFT)
    # fired hooks say where they ran; the others have nothing to say; only failures record what was left
    assert all((e.runs_in != atlas.NOT_APPLICABLE) == e.fires for e in entries if e.kind != "saved_tensors_disabled")
    assert all(e.left == atlas.NOT_APPLICABLE for e in entries if e.category != "failure")


@pytest.mark.parametrize("version", atlas.stored_versions())
def test_every_stored_snapshot_says_where_hooks_run(version):
    assert _where_and_left(atlas.load_snapshot(version)) == (RUNS_IN, LEFT), version


def test_where_hooks_run_rerun_by_hand():
    """The runs_in and left findings, measured again without the atlas's rigs."""
    import threading

    seen = []
    layer = nn.Linear(3, 3)
    with layer.register_full_backward_hook(
        lambda m, gi, go: seen.append((threading.get_ident(), torch.is_grad_enabled()))
    ):
        x = torch.randn(2, 3, requires_grad=True)
        layer(x).sum().backward()
        layer(x).sum().backward(create_graph=True)
    layer.zero_grad(set_to_none=True)  # create_graph=True ties each .grad to its graph: break that cycle
    x.grad = None
    assert seen == [(threading.get_ident(), False), (threading.get_ident(), True)]

    # a full backward hook that raises: the layer's parameters already hold their .grad, the input does not
    layer = nn.Linear(3, 3)

    def fail(m, gi, go):
        raise ValueError("raised by the hook")

    x = torch.randn(2, 3, requires_grad=True)
    with layer.register_full_backward_hook(fail), pytest.raises(ValueError):
        layer(x).sum().backward()
    assert layer.weight.grad is not None and layer.bias.grad is not None and x.grad is None


# ---------------------------------------------------------------------------------------------- issue 48
def test_the_snapshot_helpers_take_a_folder_as_a_str_too(tmp_path) -> None:
    """Defect 15: a str directory (even the real folder) failed with "unsupported operand type(s) for /"."""
    folder = str(atlas.SNAPSHOT_DIR)
    assert atlas.load_snapshot("2.13.0", folder) == atlas.load_snapshot("2.13.0")
    assert atlas.stored_versions(folder) == atlas.stored_versions()
    assert atlas.stored_version_for("2.13.1", folder) == "2.13.0"
    assert atlas.stored_versions(str(tmp_path)) == []
    with pytest.raises(FileNotFoundError, match=r"stored_versions: directory some/dir does not exist"):
        atlas.stored_versions("some/dir")  # a typo in the folder is said, not answered with "no atlas stored"
    with pytest.raises(TypeError, match=r"stored_versions: directory must be a folder path .*not 3"):
        atlas.stored_versions(3)
    (tmp_path / "atlas-torch-2.13.0.json").write_text("[not json", encoding="utf-8")
    with pytest.raises(ValueError, match=r"is not a stored atlas"):
        atlas.load_snapshot("2.13.0", tmp_path)
    with pytest.raises(ValueError, match=r"that is not a torch version such as"):
        atlas.load_snapshot("../../etc/passwd")
