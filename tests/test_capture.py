"""The capture core: what it records, and that it never leaves a hook or a graph behind."""

import gc
import tracemalloc
import weakref

import pytest
import torch
from torch import nn

import hookviz
from hookviz.capture import registered_keys


def small_cnn(inplace: bool = False) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.ReLU(inplace=inplace),
        nn.Conv2d(4, 2, 3, padding=1),
        nn.Flatten(),
        nn.Linear(2 * 8 * 8, 3),
    )


def hook_count(model: nn.Module) -> int:
    return len(hookviz.list_hooks(model, include_global=False))


def test_records_activation_and_output_gradient_matching_autograd():
    model = small_cnn()
    x = torch.randn(2, 1, 8, 8)
    with hookviz.capture(model, ["0", "2"]) as cap:
        out = model(x)
        out.pow(2).sum().backward()
    # independent computation of the same quantities, without hooks
    h0 = model[0](x)
    h2 = model[2](model[1](h0))
    loss = model[4](model[3](h2)).pow(2).sum()
    g0, g2 = torch.autograd.grad(loss, [h0, h2])
    torch.testing.assert_close(cap.activation("0"), h0.detach())
    torch.testing.assert_close(cap.gradient("0"), g0)
    torch.testing.assert_close(cap.gradient("2"), g2)
    assert not cap.activation("0").requires_grad
    assert cap.activation("0").device.type == "cpu"


def test_inplace_relu_after_layer_does_not_break_gradient_or_stored_activation():
    torch.manual_seed(0)
    model = small_cnn(inplace=True)
    x = torch.randn(2, 1, 8, 8)
    with hookviz.capture(model, "0") as cap:
        model(x).sum().backward()
    act = cap.activation("0")
    assert (act < 0).any(), "the stored copy must keep the values from before the in-place ReLU"
    reference = small_cnn(inplace=False)
    reference.load_state_dict(model.state_dict())
    h0 = reference[0](x)
    (g0,) = torch.autograd.grad(reference[4](reference[3](reference[2](reference[1](h0)))).sum(), [h0])
    torch.testing.assert_close(cap.gradient("0"), g0)


def test_every_call_of_a_reused_module_is_recorded_with_its_own_gradient():
    layer = nn.Linear(3, 3)
    model = nn.Sequential(layer, nn.Tanh(), layer)  # the same module twice
    x = torch.randn(4, 3)
    with hookviz.capture(model, "0") as cap:
        model(x).sum().backward()
    assert cap.records["0"].calls == 2
    first, second = cap.activations["0"]
    torch.testing.assert_close(first, layer(x).detach())
    torch.testing.assert_close(second, layer(torch.tanh(layer(x))).detach())
    # d(sum)/d(second output) is all ones; the first call's gradient flows through tanh and the layer
    torch.testing.assert_close(cap.gradient("0", call=1), torch.ones(4, 3))
    h = layer(x)
    (g,) = torch.autograd.grad(layer(torch.tanh(h)).sum(), [h])
    torch.testing.assert_close(cap.gradient("0", call=0), g)


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_hooks_are_removed_on_every_exit_path(error):
    model = small_cnn()
    assert hook_count(model) == 0
    with pytest.raises(type(error)):
        with hookviz.capture(model) as cap:
            assert hook_count(model) == 5
            raise error
    assert hook_count(model) == 0
    assert not cap.active
    assert registered_keys(model) == {}


def test_same_key_replaces_instead_of_stacking():
    model = small_cnn()
    for _ in range(3):  # a notebook cell run three times
        cap = hookviz.capture(model, ["0", "2"], key="explorer").start()
    assert hook_count(model) == 2
    assert registered_keys(model) == {"explorer": 2}
    model(torch.randn(1, 1, 8, 8))
    assert cap.records["0"].calls == 1
    cap.stop()
    assert hook_count(model) == 0


def test_register_replaces_a_keyed_hook():
    layer = nn.Linear(2, 2)
    calls = []
    for _ in range(3):
        hookviz.register(layer, "forward", lambda m, i, o: calls.append(1), key="printer")
    layer(torch.randn(1, 2))
    assert calls == [1]
    assert hookviz.remove_key(layer, "printer") == 1
    layer(torch.randn(1, 2))
    assert calls == [1]


def test_register_rejects_bad_input():
    with pytest.raises(ValueError, match="unknown hook kind"):
        hookviz.register(nn.Linear(1, 1), "sideways", print, key="k")
    with pytest.raises(TypeError, match="nn.Module"):
        hookviz.register(torch.zeros(1), "forward", print, key="k")


def test_unknown_layer_names_the_closest_matches():
    model = hookviz.DigitsCNN()
    with pytest.raises(KeyError, match=r"features\.4.*"):
        hookviz.capture(model, "feature.4")
    with pytest.raises(TypeError):
        hookviz.capture(model, [0])


def test_type_filter_and_default_selection():
    model = hookviz.DigitsCNN()
    assert list(hookviz.resolve_layers(model, types=nn.Conv2d)) == ["features.0", "features.4"]
    leaves = hookviz.resolve_layers(model)
    assert "features" not in leaves and "classifier.1" in leaves
    with pytest.raises(ValueError, match="no layers"):
        hookviz.resolve_layers(nn.Sequential(nn.Linear(2, 2)), types=nn.Conv2d)
    assert list(hookviz.resolve_layers(nn.Linear(2, 2))) == [""]


def test_tuple_outputs_are_captured_with_their_structure():
    lstm = nn.LSTM(3, 4, batch_first=True)
    model = nn.Sequential(lstm)
    with hookviz.capture(model, "0") as cap:
        out, (h, c) = model(torch.randn(2, 5, 3))
        out.sum().backward()
    act = cap.activation("0")
    assert isinstance(act, tuple) and act[0].shape == (2, 5, 4) and act[1][0].shape == (1, 2, 4)
    grad = cap.gradient("0")
    torch.testing.assert_close(grad[0], torch.ones(2, 5, 4))
    assert grad[1][0] is None  # h and c were not used by the loss: no gradient arrived for them


class ReturnsNothing(nn.Module):
    def forward(self, x):
        return None


def test_non_tensor_output_is_reported_not_crashed():
    model = nn.Sequential(ReturnsNothing())
    with hookviz.capture(model, "0") as cap:
        model(torch.randn(1))
    assert "holds no tensor" in cap.notes["0"][0]


def test_no_grad_gives_activations_and_says_no_gradient_exists():
    model = small_cnn()
    with torch.no_grad(), hookviz.capture(model, "0") as cap:
        model(torch.randn(1, 1, 8, 8))
    assert cap.activation("0").shape == (1, 4, 8, 8)
    with pytest.raises(LookupError, match="no_grad"):
        cap.gradient("0")


def test_gradient_before_backward_is_a_clear_error():
    model = small_cnn()
    with hookviz.capture(model, "0") as cap:
        model(torch.randn(1, 1, 8, 8))
    with pytest.raises(LookupError, match="no gradient captured"):
        cap.gradient("0")
    with pytest.raises(KeyError, match="was not captured"):
        cap.activation("4")


def test_nan_and_inf_are_kept_and_counted():
    layer = nn.Linear(2, 2)
    model = nn.Sequential(layer)
    x = torch.tensor([[float("nan"), 1.0], [float("inf"), 0.0]])
    with hookviz.capture(model, "0") as cap:
        model(x).sum().backward()
    counts = cap.nonfinite()["0"]
    assert counts["act_nan"] >= 2 and torch.isnan(cap.activation("0")).any()
    assert counts["grad_nan"] == 0


def test_reduce_stores_statistics_instead_of_tensors():
    model = small_cnn()
    with hookviz.capture(model, "0", reduce=lambda t: float(t.abs().mean())) as cap:
        model(torch.randn(2, 1, 8, 8)).sum().backward()
    assert isinstance(cap.activation("0"), float) and isinstance(cap.gradient("0"), float)


class Marker:
    """A plain object hung on an autograd node: it lives exactly as long as that node."""


class MarkedDouble(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.marker = Marker()
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class MarkedLayer(nn.Module):
    def forward(self, x):
        return MarkedDouble.apply(x)


def test_captured_tensors_keep_no_autograd_graph_alive():
    model = nn.Sequential(nn.Linear(3, 3), MarkedLayer(), nn.Linear(3, 1))
    x = torch.randn(2, 3)
    with hookviz.capture(model) as cap:
        out = model(x)  # forward only: the graph lives as long as something references it
    marker = weakref.ref(model_graph_marker(out))
    assert marker() is not None
    del out
    gc.collect()
    assert marker() is None, "the capture must not keep the autograd graph of the forward alive"
    for acts in cap.activations.values():
        assert all(a.grad_fn is None and not a.requires_grad for a in acts)


def model_graph_marker(out: torch.Tensor) -> Marker:
    """Walk back from ``out`` to the MarkedDouble node and return its marker."""
    stack = [out.grad_fn]
    while stack:
        node = stack.pop()
        if node is None:
            continue
        if hasattr(node, "marker"):
            return node.marker
        stack.extend(fn for fn, _ in node.next_functions)
    raise AssertionError("no MarkedDouble node in the graph")


def test_one_hundred_captures_do_not_grow_memory():
    model = small_cnn()
    x = torch.randn(8, 1, 8, 8)

    def one_capture():
        with hookviz.capture(model, key="loop") as cap:
            model(x).sum().backward()
        return cap

    for _ in range(5):  # warm up allocator caches
        one_capture()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for _ in range(100):
        one_capture()
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    growth = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert growth < 200_000, f"python-side memory grew by {growth} bytes over 100 captures"
    assert hook_count(model) == 0 and registered_keys(model) == {}


def test_first_nonfinite_names_the_layer_where_nan_or_inf_appears_first():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1))
    with torch.no_grad():
        model[2].weight[0, 0] = float("inf")
    with hookviz.capture(model) as cap:
        model(torch.randn(4, 3)).sum().backward()
    assert cap.first_nonfinite() == ("2", 0)  # later layers are non-finite too, but layer 2 came first
    assert cap.forward_order == [(str(i), 0) for i in range(5)]
    assert cap.backward_order[0] == ("4", 0)
    assert cap.first_nonfinite("gradients") is not None
    clean = nn.Sequential(nn.Linear(3, 3))
    with hookviz.capture(clean) as cap:
        clean(torch.randn(2, 3)).sum().backward()
    assert cap.first_nonfinite() is None and cap.first_nonfinite("gradients") is None
    with pytest.raises(ValueError, match="where must be"):
        cap.first_nonfinite("inputs")


def test_a_stale_capture_never_touches_the_hooks_of_the_one_that_replaced_it():
    model = small_cnn()
    a = hookviz.capture(model, ["0", "2"], key="k").start()
    assert a.active
    b = hookviz.capture(model, ["0", "2"], key="k").start()
    assert not a.active, "a newer capture under the same key makes the older one inactive"
    assert b.active and hook_count(model) == 2
    a.stop()  # the stale owner stops: b keeps its hooks
    assert b.active and hook_count(model) == 2
    assert registered_keys(model) == {"k": 2}
    model(torch.randn(1, 1, 8, 8)).sum().backward()
    assert b.records["0"].calls == 1 and b.gradient("2") is not None
    assert a.records["0"].calls == 0, "the stale capture records nothing"
    b.stop()
    assert hook_count(model) == 0 and not b.active and registered_keys(model) == {}


def test_register_under_a_capture_key_replaces_the_capture_and_remove_key_deactivates():
    model = small_cnn()
    cap = hookviz.capture(model, "0", key="shared").start()
    hookviz.register(model, "forward", lambda *a: None, key="shared")
    assert not cap.active and hook_count(model) == 1
    cap.stop()
    assert hook_count(model) == 1, "stopping the replaced capture leaves register()'s hook alone"
    assert hookviz.remove_key(model, "shared") == 1
    other = hookviz.capture(model, "0", key="other").start()
    hookviz.remove_key(model, "other")
    assert not other.active and hook_count(model) == 0


def test_remove_all_hooks_makes_keyed_owners_inactive():
    model = small_cnn()
    cap = hookviz.capture(model, "0", key="k").start()
    hookviz.remove_all_hooks(model)
    assert not cap.active
    cap.stop()  # nothing left to remove, no error
    assert hook_count(model) == 0


def test_register_backward_is_the_full_hook_and_the_legacy_one_is_named_so():
    layer = nn.Linear(2, 2)
    hookviz.register(layer, "backward", noop_hook, key="b")
    assert layer._is_full_backward_hook is True
    assert [r.kind for r in hookviz.list_hooks(layer, include_global=False)] == ["backward"]
    hookviz.remove_key(layer, "b")
    hookviz.register(layer, "backward_pre", noop_hook, key="b")
    assert len(layer._backward_pre_hooks) == 1
    hookviz.remove_key(layer, "b")
    legacy = nn.Linear(2, 2)
    hookviz.register(legacy, "backward_legacy", noop_hook, key="b")
    assert legacy._is_full_backward_hook is False
    assert [r.kind for r in hookviz.list_hooks(legacy, include_global=False)] == ["backward_legacy"]
    hookviz.remove_key(legacy, "b")
    # the registration methods' own words are still understood
    hookviz.register(layer, "full_backward", noop_hook, key="b")
    assert layer._is_full_backward_hook is True and hookviz.remove_key(layer, "b") == 1


def test_register_explains_names_it_does_not_take():
    layer = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="called 'backward_legacy'"):
        hookviz.register(layer, "register_backward_hook", noop_hook, key="k")
    with pytest.raises(ValueError, match="closest: 'forward'"):
        hookviz.register(layer, "forwrd", noop_hook, key="k")
    with pytest.raises(ValueError, match="tensor hook"):
        hookviz.register(layer, "tensor", noop_hook, key="k")
    assert hook_count(layer) == 0 and registered_keys(layer) == {}


def noop_hook(*args):
    return None


def test_hook_group_owns_hooks_of_every_kind_and_removes_exactly_those():
    import torch.nn.modules.module as module_hooks

    model = nn.Sequential(nn.Linear(2, 2))
    model[0].register_forward_pre_hook(noop_hook)  # the user's own hook: never touched
    fired = []
    with hookviz.HookGroup(model, key="probe") as hooks:
        hooks.register(model[0], "forward", lambda *a: fired.append("forward"))
        hooks.register(model[0].weight, "tensor", lambda g: fired.append("tensor"))
        hooks.register(None, "global_forward", lambda *a: fired.append("global"))
        model(torch.ones(1, 2)).sum().backward()
        assert len(hooks) == 3 and hooks.active
    assert sorted(fired) == ["forward", "global", "global", "tensor"]
    assert not hooks.active and not module_hooks._global_forward_hooks
    assert [r.kind for r in hookviz.list_hooks(model, include_global=False)] == ["forward_pre"]
    with pytest.raises(TypeError, match="attach to a tensor"):
        hookviz.HookGroup().register(model, "tensor", noop_hook)
    with pytest.raises(ValueError, match="no handle"):
        hookviz.HookGroup().register(None, "saved_tensors", noop_hook)
    model[0]._forward_pre_hooks.clear()


def test_hook_group_keeps_no_model_alive():
    model = small_cnn()
    hookviz.capture(model, "0", key="k").start()
    ref = weakref.ref(model)
    del model
    gc.collect()
    assert ref() is None


# --------------------------------------------------------------------------- outputs that alias or depend on each other


class _Pair(nn.Module):
    """Two outputs of one Linear: ``(h, h)`` (aliased) or ``(h, 2 * h)`` (the second computed from the first)."""

    def __init__(self, aliased: bool) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.aliased = aliased

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.fc(x)
        return (h, h) if self.aliased else (h, 2 * h)


class _UsesPair(nn.Module):
    def __init__(self, aliased: bool) -> None:
        super().__init__()
        self.pair = _Pair(aliased)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self.pair(x)
        return a.sum() + 2 * b.sum()


def test_aliased_outputs_are_refused_not_summed() -> None:
    """(h, h) used as a.sum() + 2 * b.sum(): a tensor hook would report 3 for both; per output they are 1 and 2."""
    model = _UsesPair(aliased=True)
    with hookviz.capture(model, ["pair"]) as cap:
        model(torch.randn(2, 3)).backward()
    with pytest.raises(LookupError, match=r"outputs \[0\] and \[1\] are the same tensor"):
        cap.gradient("pair")
    assert any("same tensor" in note for note in cap.notes["pair"])
    assert cap.gradients["pair"][0] is None  # no summed gradient stored anywhere


def test_an_output_computed_from_another_is_refused_and_the_other_is_right() -> None:
    model = _UsesPair(aliased=False)
    with hookviz.capture(model, ["pair"]) as cap:
        model(torch.randn(2, 3)).backward()
    with pytest.raises(LookupError, match=r"output \[1\] is computed from output \[0\]"):
        cap.gradient("pair")
    raw = cap.gradients["pair"][0]
    assert raw[0] is None and torch.equal(raw[1], torch.full((2, 3), 2.0))  # b's own gradient: 2


def test_sibling_outputs_of_one_op_keep_their_gradients() -> None:
    """An LSTM's output and (h, c) come from one autograd node: independent, so every gradient is kept."""
    lstm = nn.LSTM(2, 3, batch_first=True)
    with hookviz.capture(lstm, [""]) as cap:
        out, (h, c) = lstm(torch.randn(1, 4, 2))
        (out.sum() + 2 * h.sum()).backward()
    grad = cap.gradient("")
    assert torch.equal(grad[0], torch.ones(1, 4, 3)) and torch.equal(grad[1][0], torch.full((1, 1, 3), 2.0))
    assert not cap.notes


@pytest.mark.parametrize("read", ["nonfinite", "first_nonfinite"])
def test_nonfinite_queries_refuse_a_reduced_capture(read: str) -> None:
    """A NaN mean would read as "no NaN" through reduce=: the combination is refused."""
    model = nn.Linear(2, 2)
    with hookviz.capture(model, reduce=lambda t: t.mean()) as cap:
        model(torch.tensor([[float("nan"), 1.0]])).sum().backward()
    with pytest.raises(ValueError, match="reduce=None"):
        getattr(cap, read)()


@pytest.mark.parametrize(
    ("layers", "message"),
    [(123, "layers must be a layer name or a list"), (["b"], "same module as 'a'"), ("b", "use 'a'")],
)
def test_bad_layer_choices_name_the_argument_and_the_fix(layers: object, message: str) -> None:
    model = nn.Sequential()
    model.a = nn.Linear(2, 2)
    model.b = model.a  # one module, two names
    with pytest.raises((TypeError, KeyError), match=message):
        hookviz.capture(model, layers)


def test_a_meta_device_model_is_refused_clearly():
    with torch.device("meta"):
        model = small_cnn()
    with pytest.raises(ValueError, match=r"'0\.weight' of Sequential is on the meta device.*to_empty"):
        hookviz.capture(model)
    assert hook_count(model) == 0


def test_a_meta_output_without_weights_is_refused_clearly():
    model = nn.Sequential(nn.ReLU(), nn.Flatten())  # nothing to materialise: the input is on the meta device
    with hookviz.capture(model) as cap, pytest.raises(ValueError, match="on the meta device.*pass real inputs"):
        model(torch.randn(2, 3, device="meta"))
    assert not cap.active and hook_count(model) == 0
    with hookviz.capture(model, reduce=lambda t: tuple(t.shape)) as cap:  # a reducer may keep shapes only
        model(torch.randn(2, 3, device="meta"))
    assert cap.activation("0") == (2, 3)


class SecondHalf(nn.Module):
    """Returns one of two outputs of one autograd node (``chunk``): the gradient is that output's only."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.chunk(2, dim=1)[1]


class PassThrough(nn.Module):
    """Returns its input unchanged: with a leaf input, the output has no autograd node to hook."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


def test_gradient_of_one_output_of_a_multi_output_node_and_of_a_leaf_output():
    model = nn.Sequential(PassThrough(), nn.Linear(4, 4), SecondHalf(), nn.Linear(2, 1))
    x = torch.randn(3, 4, requires_grad=True)
    with hookviz.capture(model, ["0", "2"]) as cap:
        model(x).pow(2).sum().backward()
    hidden = model[1](x)
    half = hidden.chunk(2, dim=1)[1]
    g_x, g_half = torch.autograd.grad(model[3](half).pow(2).sum(), [x, half])
    torch.testing.assert_close(cap.gradient("0"), g_x)  # the leaf: a tensor hook
    torch.testing.assert_close(cap.gradient("2"), g_half)  # output 1 of chunk's node, not output 0
    assert cap.backward_order == [("2", 0), ("0", 0)]
    assert hook_count(model) == 0


@pytest.mark.parametrize("capture_first", [False, True])
@pytest.mark.parametrize("structured", [False, True])
def test_capture_stores_the_gradient_the_layer_receives_after_a_users_tensor_hook(capture_first, structured):
    """Whichever was registered first, a user's tensor hook that doubles the gradient runs, and capture stores
    the doubled gradient: the one the layer's backward gets (for one tensor and for a tuple output)."""
    model = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 1))
    seen = []

    def double(module, args, output):  # noqa: ANN001, ANN202 - the user's own hook
        output.register_hook(lambda g: seen.append(g.clone()) or g * 2)

    def as_tuple(module, args, output):  # noqa: ANN001, ANN202
        return (output, output.detach())

    def first_of(module, args):  # noqa: ANN001, ANN202
        return args[0][0] if isinstance(args[0], tuple) else None

    handles = []
    if structured:
        handles += [model[0].register_forward_hook(as_tuple), model[1].register_forward_pre_hook(first_of)]
    cap = hookviz.capture(model, ["0"])
    if capture_first:
        cap.start()
    handles.append(model[0].register_forward_hook(double if not structured else lambda m, a, o: double(m, a, o[0])))
    if not capture_first:
        cap.start()
    try:
        model(torch.randn(2, 3)).sum().backward()
    finally:
        cap.stop()
        for handle in handles:
            handle.remove()
    assert len(seen) == 1
    stored = cap.gradient("0")[0] if structured else cap.gradient("0")
    torch.testing.assert_close(stored, seen[0] * 2)
    assert hook_count(model) == 0
