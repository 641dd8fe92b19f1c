"""``hookviz.diagnose`` with bad or unusual inputs: a clear hookviz error or a right result, the model as found.

Every case is one input a user might give (the D01-D36 inputs of the reliability study of the newer
tools, and more). For each, the test asserts:

* either an error **raised by hookviz** (the innermost frame of its traceback is hookviz code) whose
  message names the argument and the fix, or a result that :attr:`Case.check` accepts;
* the model is left as found: ``state_dict``, buffers, every submodule's mode, ``requires_grad``, ``.grad``
  and every hook (module, parameter and global);
* no hookviz thread is left running.

The harness is the one of ``tests/test_reliability.py`` (imported). A model that a ``MonitorState``
is training is refused, and the training goes on undisturbed (:func:`test_a_model_under_training_is_refused`).
"""

from __future__ import annotations

import dataclasses
import re
import time
import tracemalloc
import warnings
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import torch
import torch.nn.modules.module as module_globals
import torch.nn.utils.prune as prune
from test_reliability import assert_hookviz_error, assert_unchanged, hookviz_threads, snapshot
from torch import nn
from torch.nn.utils import parametrizations

import hookviz
from hookviz.diagnose import Diagnosis, DiagnosisError, diagnose
from hookviz.llama import load_tiny_llama, make_copy_batch
from hookviz.widgets import MonitorState

X = torch.randn(4, 1, 8, 8, generator=torch.Generator().manual_seed(1))
V = torch.randn(4, 3, generator=torch.Generator().manual_seed(2))


@dataclass
class Case:
    """``action(model)`` on a fresh ``make()``: a hookviz error matching ``error``, or ``check(model, result)``."""

    name: str
    make: Callable[[], nn.Module]
    action: Callable[[nn.Module], Any]
    error: str | None = None
    check: Callable[[nn.Module, Any], None] | None = None
    initialises: bool = False  # the forward initialises lazy modules (as any first forward does)


CASES: list[Case] = []


def case(name: str, make: Callable[[], nn.Module], action: Callable[[nn.Module], Any], error: str | None = None,
         check: Callable[[nn.Module, Any], None] | None = None, initialises: bool = False) -> None:  # fmt: skip
    CASES.append(Case(name, make, action, error, check, initialises))


def kinds(*expected: str) -> Callable[[nn.Module, Any], None]:
    """A check: the diagnosis reports exactly these kinds (any number of each)."""

    def check(model: nn.Module, result: Any) -> None:
        assert isinstance(result, Diagnosis), result
        assert set(result.kinds()) == set(expected), f"expected {expected}:\n{result}"

    return check


CLEAN = kinds()


# ------------------------------------------------------------------------------------------- models


def cnn() -> nn.Module:
    torch.manual_seed(0)
    model = hookviz.DigitsCNN().train()
    with torch.no_grad():
        model.features[1].running_mean.uniform_(-0.5, 0.5)
    return model


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))


def with_hook(make: Callable[[], nn.Module], attach: Callable[[nn.Module], Any]) -> Callable[[], nn.Module]:
    """``make()`` with a hook attached (kept on the model for the case: the hooks are part of what it carries)."""

    def build() -> nn.Module:
        model = make()
        handles = attach(model)
        model._case_handles = handles if isinstance(handles, list) else [handles]  # removed after the comparison
        return model

    return build


class DictOut(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 4)

    def forward(self, x: torch.Tensor) -> dict[str, Any]:
        y = self.fc(x)
        return {"logits": y, "count": 3, "ids": y.argmax(-1)}


@dataclasses.dataclass
class Out:
    logits: torch.Tensor
    extra: Any = None


class DataclassOut(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 4)

    def forward(self, x: torch.Tensor) -> Out:
        return Out(self.fc(x), extra="note")


class ModelOutputLike(OrderedDict):
    pass


class ModelOutputOut(DataclassOut):
    def forward(self, x: torch.Tensor) -> Any:  # type: ignore[override]
        return ModelOutputLike(logits=self.fc(x))


class NestedOut(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 4)

    def forward(self, x: torch.Tensor) -> Any:
        h = self.fc(x)
        return [h * 2], [h, h]


class KeepsResult(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l, self.unused = nn.Linear(3, 3), nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> None:
        self.l(self.l(x))


class Raises(nn.Module):
    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.error = error

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.fc(x)
        raise self.error


class KwargsOnly(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, *, x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        return self.fc(x) * scale


class ArgmaxOut(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x).argmax(-1)


class Counter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return self.fc(x)


class WithUnused(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc, self.unused = nn.Linear(3, 2), nn.Linear(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


def frozen() -> nn.Module:
    return mlp().requires_grad_(False)


def mixed_modes() -> nn.Module:
    model = cnn().eval()
    model.features[1].train()
    return nn.Sequential(model, nn.Dropout(0.5))


def with_grads() -> nn.Module:
    model = cnn()
    model(X).sum().backward()
    return model


def large() -> nn.Module:
    model = nn.Sequential(*[nn.Linear(256, 256) for _ in range(16)])  # about a million parameters
    for p in model.parameters():
        p.grad = torch.ones_like(p)
    return model


def deep() -> nn.Module:
    model = nn.Sequential(*[nn.Linear(3, 3) for _ in range(300)])
    for layer in model:
        layer.register_forward_hook(_record)
    return model


def _record(module: nn.Module, args: Any, output: torch.Tensor) -> None:
    module._seen = tuple(output.shape)


def same_hook_many_times() -> nn.Module:
    model = mlp()
    for _ in range(300):
        model[0].register_forward_hook(_record)
    return model


def meta_mlp() -> nn.Module:
    with torch.device("meta"):
        return mlp()


def lazy() -> nn.Module:
    return nn.Sequential(nn.LazyLinear(4), nn.ReLU(), nn.Linear(4, 2))


def reparametrized() -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3), nn.Linear(3, 3), nn.Linear(3, 3), nn.Linear(3, 2)).train()
    prune.l1_unstructured(model[0], "weight", amount=0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nn.utils.weight_norm(model[1])
    parametrizations.orthogonal(model[2])
    nn.utils.spectral_norm(model[3])
    return model


def built_in_inference_mode() -> nn.Module:
    with torch.inference_mode():
        return mlp()


def bf16() -> nn.Module:
    return mlp().to(torch.bfloat16)


def tiny() -> nn.Module:
    return hookviz.load_tiny_transformer()


# ------------------------------------------------------------------------------------------- actions


def fired_backward(model: nn.Module) -> list[Any]:
    fired: list[Any] = []
    first = next(m for m in model.modules() if isinstance(m, nn.Linear))
    model._case_handles = [first.register_full_backward_hook(lambda m, gi, go: fired.append(1))]
    return fired


def diag_and_fired(inputs: Any, **options: Any) -> Callable[[nn.Module], Any]:
    def action(model: nn.Module) -> Any:
        fired = fired_backward(model)
        return diagnose(model, inputs, **options), fired

    return action


def clean_and_fired(model: nn.Module, result: Any) -> None:
    diagnosis, fired = result
    assert list(diagnosis) == [], str(diagnosis)
    assert fired == [1], "the backward pass did not reach the hook"


def interrupted(action: Callable[[nn.Module], Any]) -> Callable[[nn.Module], Any]:
    def run(model: nn.Module) -> Any:
        try:
            action(model)
        except KeyboardInterrupt:
            return "interrupted"
        return "finished"

    return run


def was_interrupted(model: nn.Module, result: Any) -> None:
    assert result == "interrupted"


def raise_interrupt(*args: Any) -> None:
    raise KeyboardInterrupt


def in_inference_mode(model: nn.Module) -> Any:
    with torch.inference_mode():
        return diagnose(model, V)


def _inference_input() -> torch.Tensor:
    with torch.inference_mode():
        return V.clone()


def in_no_grad(model: nn.Module) -> Any:
    with torch.no_grad():
        return diagnose(model, V)


def repeated(model: nn.Module) -> Any:
    diagnose(model, X)
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(30):
            diagnose(model, X)
        return tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()


def flat(model: nn.Module, grown: Any) -> None:
    assert grown < 2_000_000, f"{grown} bytes kept after 30 diagnoses"


def inside_capture(model: nn.Module) -> Any:
    with hookviz.capture(model) as cap:
        result = diagnose(model, X)
    assert cap is not None
    return result


def callers_input_untouched(model: nn.Module) -> Any:
    x = V.clone()
    model._case_handles = [model[0].register_forward_pre_hook(_scale_input)]
    result = diagnose(model, x)
    assert torch.equal(x, V), "the caller's batch was edited"
    return result


def callers_input_gets_no_grad(model: nn.Module) -> Any:
    x = V.clone().requires_grad_(True)
    result = diagnose(model, x)
    assert x.grad is None
    return result


def _scale_input(module: nn.Module, args: Any) -> None:
    args[0].mul_(2)


def same_grad_objects(model: nn.Module) -> Any:
    grads = [p.grad for p in model.parameters()]
    result = diagnose(model, X)
    assert all(a is b for a, b in zip(grads, [p.grad for p in model.parameters()], strict=True))
    return result


def global_stores(model: nn.Module) -> Any:
    kept: list[Any] = []
    handle = module_globals.register_module_forward_hook(lambda m, a, o: kept.append(o))
    try:
        return diagnose(model, V)
    finally:
        handle.remove()


def self_removing(model: nn.Module) -> Any:
    handles: list[Any] = []
    handles.append(model[0].register_forward_hook(lambda m, a, o: handles[0].remove()))
    model._case_handles = handles
    return diagnose(model, V)


def adds_hooks(model: nn.Module) -> Any:
    added: list[Any] = []
    adder = lambda m, a, o: added.append(m.register_forward_hook(_record))  # noqa: E731
    model._case_handles = [model[0].register_forward_hook(adder)]
    try:
        return diagnose(model, V)
    finally:
        assert len(added) == 1
        added[0].remove()


def data_parallel(model: nn.Module) -> Any:
    wrapped = nn.DataParallel(model)
    model._case_handles = [model.unused.register_forward_hook(_record)]
    return diagnose(wrapped, V)


def _double_output(module: nn.Module, args: Any, output: torch.Tensor) -> None:
    output.mul_(2)


HOOKED_CNN = with_hook(cnn, lambda m: m.classifier[1].register_full_backward_hook(lambda *a: None))

# ------------------------------------------------------------------------------------------- the table

# D01-D05: the call itself
case("D01 no inputs", cnn, lambda m: diagnose(m), "needs `inputs`")
case("D02 inputs=None", cnn, lambda m: diagnose(m, None), r"needs `inputs`.*torch\.randn")
case("D03 3 channels for a 1-channel CNN", cnn, lambda m: diagnose(m, torch.randn(4, 3, 8, 8)),
     "shape, dtype and device")  # fmt: skip
case("D04 dict of keyword arguments", KwargsOnly, lambda m: diagnose(m, {"x": V}), check=CLEAN)
case("D04 tuple and kwargs=", KwargsOnly, lambda m: diagnose(m, (), kwargs={"x": V, "scale": 2.0}), check=CLEAN)
case("D04 kwargs= a list", KwargsOnly, lambda m: diagnose(m, V, kwargs=[("x", V)]), "`kwargs` must be a dict")
case("D05 numpy array", mlp, lambda m: diagnose(m, V.numpy()), r"torch\.as_tensor")
# D06-D10: outputs of every shape
case("D06 dict output", DictOut, diag_and_fired(V), check=clean_and_fired)
case("D07 dataclass output", DataclassOut, diag_and_fired(V), check=clean_and_fired)
case("D07 ModelOutput-like output", ModelOutputOut, diag_and_fired(V), check=clean_and_fired)
case("D08 LlamaForCausalLM (ModelOutput)", load_tiny_llama, diag_and_fired(make_copy_batch(4)[0]),
     check=clean_and_fired)  # fmt: skip
case("D09 ([y], [h, h]) output", NestedOut, diag_and_fired(V), check=clean_and_fired)
case("D10 forward returns None",
     with_hook(KeepsResult, lambda m: [m.l.register_forward_hook(_record), m.unused.register_forward_hook(_record)]),
     lambda m: diagnose(m, V),
     check=kinds("module-called-twice", "hook-never-fires", "no-backward-pass"))  # fmt: skip
# D11-D14: modes, frozen, meta, compiled
case("D11 eval model, one BN training, dropout", mixed_modes, lambda m: diagnose(m, X), check=CLEAN)
case("D12 everything frozen, backward and tensor hooks",
     with_hook(frozen, lambda m: m[0].register_full_backward_hook(lambda *a: None)),
     lambda m: (m._case_handles.append(m[2].register_full_backward_hook(lambda *a: None)), diagnose(m, V))[1],
     check=kinds("no-gradient-reaches"))  # fmt: skip
case("D13 meta model, meta input", meta_mlp, lambda m: diagnose(m, torch.randn(4, 3, device="meta")), check=CLEAN)
case("D13 meta model, CPU input", meta_mlp, lambda m: diagnose(m, V), "device")
case("D14 torch.compile wrapper", mlp, lambda m: diagnose(torch.compile(m), V), check=kinds("compiled-wrapper"))
# D15-D16: errors inside
case("D15 forward raises KeyError", lambda: Raises(KeyError("boom")), lambda m: diagnose(m, V), "forward failed")
case("D15 forward raises KeyboardInterrupt", lambda: Raises(KeyboardInterrupt()),
     interrupted(lambda m: diagnose(m, V)), check=was_interrupted)  # fmt: skip
case("D16 hook raises ZeroDivisionError", with_hook(mlp, lambda m: m[0].register_forward_hook(lambda *a: 1 / 0)),
     lambda m: diagnose(m, V), check=kinds("hook-raises"))  # fmt: skip
case("D16 hook raises AttributeError", with_hook(mlp, lambda m: m[2].register_forward_hook(lambda m_, a, o: o.nope)),
     lambda m: diagnose(m, V), check=kinds("hook-raises"))  # fmt: skip
case("D16 hook raises KeyboardInterrupt", with_hook(mlp, lambda m: m[0].register_forward_hook(raise_interrupt)),
     interrupted(lambda m: diagnose(m, V)), check=was_interrupted)  # fmt: skip
# D17-D19, D27: sizes and repetition
case("D17 a million parameters with .grad set", large, lambda m: diagnose(m, torch.randn(2, 256)), check=CLEAN)
case("D18 300 modules, one hook each", deep, lambda m: diagnose(m, V), check=CLEAN)
case("D19 one hook registered 300 times", same_hook_many_times, lambda m: diagnose(m, V),
     check=kinds("duplicate-hook"))  # fmt: skip
case("D27 30 diagnoses in a row", cnn, repeated, check=flat)
# D20-D23: scaler=
case("D20 scaler='amp'", cnn, lambda m: diagnose(m, X, scaler="amp"), r"scaler=.*GradScaler")
case("D21 scaler=an optimizer", cnn, lambda m: diagnose(m, X, scaler=torch.optim.SGD(m.parameters(), 0.1)),
     r"scaler=.*GradScaler")  # fmt: skip
case("D22 scaler=the GradScaler class", cnn, lambda m: diagnose(m, X, scaler=torch.amp.GradScaler),
     r"scaler=.*class GradScaler itself.*GradScaler\('cuda'\)")  # fmt: skip
case("D23 scaler=GradScaler('cpu')", HOOKED_CNN,
     lambda m: diagnose(m, X, scaler=torch.amp.GradScaler("cpu")), check=kinds("scaled-gradients"))  # fmt: skip
case("D23 scaler disabled", HOOKED_CNN,
     lambda m: diagnose(m, X, scaler=torch.amp.GradScaler("cpu", enabled=False)), check=CLEAN)  # fmt: skip
case("scaler=1", cnn, lambda m: diagnose(m, X, scaler=1), "scaler=")
# D24-D26: loss_fn=
SCALAR = "loss_fn must return a scalar"
case("D24 loss_fn returns the logits", cnn, lambda m: diagnose(m, X, loss_fn=lambda o: o), SCALAR)
case("D24 loss_fn returns a float", cnn, lambda m: diagnose(m, X, loss_fn=lambda o: 1.0), SCALAR)
case("D25 loss_fn argmax", HOOKED_CNN,
     lambda m: diagnose(m, X, loss_fn=lambda o: o.argmax().float()), check=kinds("loss-fn-cuts-graph"))  # fmt: skip
case("D25 loss_fn detach", HOOKED_CNN,
     lambda m: diagnose(m, X, loss_fn=lambda o: o.detach().sum()), check=kinds("loss-fn-cuts-graph"))  # fmt: skip
case("D26 loss_fn raises", cnn, lambda m: diagnose(m, X, loss_fn=lambda o: o[99]), "loss_fn failed")
case("loss_fn='mse'", cnn, lambda m: diagnose(m, X, loss_fn="mse"), "loss_fn must be a function")
# D29-D31: lazy modules, grad modes, the caller's tensors
case("D29 uninitialised LazyLinear", lazy, lambda m: diagnose(m, V), check=CLEAN, initialises=True)
case("D30 inside inference_mode", with_hook(mlp, lambda m: m[0].register_full_backward_hook(lambda *a: None)),
     in_inference_mode, r"inference_mode.*outside the `with torch\.inference_mode\(\):` block")  # fmt: skip
case("model built inside inference_mode", built_in_inference_mode, lambda m: diagnose(m, V),
     r"inference tensor.*outside the `with torch\.inference_mode\(\):` block")  # fmt: skip
case("input made inside inference_mode", mlp, lambda m: diagnose(m, _inference_input()), check=CLEAN)
case("D30 inside no_grad", with_hook(mlp, lambda m: m[2].weight.register_hook(lambda g: g.sum())), in_no_grad,
     check=kinds("bad-gradient-return"))  # fmt: skip
case("D31 input that requires grad", mlp, callers_input_gets_no_grad, check=CLEAN)
case("D31 input edited by a pre-hook", mlp, callers_input_untouched, check=kinds("input-edited-in-place"))
case("D31 .grad already set", with_grads, same_grad_objects, check=CLEAN)
# D32-D36: PyTorch's own hooks, other tools, not a model, wrappers, two planted pitfalls
case("D32 prune, weight_norm, orthogonal, spectral_norm", reparametrized, lambda m: diagnose(m, V), check=CLEAN)
case("D33 inside an active capture", cnn, inside_capture, check=CLEAN)
case("D34 a function", cnn, lambda m: diagnose(lambda x: x, X), r"nn\.Module")
case("D34 a state_dict", cnn, lambda m: diagnose(m.state_dict(), X), r"nn\.Module")
case("D35 nn.DataParallel (CPU)", WithUnused, data_parallel, check=kinds("hook-never-fires"))
case("D36 tensor hook returns the wrong shape", with_hook(mlp, lambda m: m[0].weight.register_hook(lambda g: g[0])),
     lambda m: diagnose(m, V), check=kinds("bad-gradient-return"))  # fmt: skip
case("D36 forward hook edits its output", with_hook(mlp, lambda m: m[0].register_forward_hook(_double_output)),
     lambda m: diagnose(m, V), check=kinds("output-edited-in-place"))  # fmt: skip
# more of our own
case("inputs=() for a model that needs one", mlp, lambda m: diagnose(m, ()), "forward failed")
case("int64 input for a Linear", mlp, lambda m: diagnose(m, torch.ones(4, 3, dtype=torch.long)), "dtype")
case("a list of floats", mlp, lambda m: diagnose(m, [1.0, 2.0, 3.0]), "forward failed")
case("a string", mlp, lambda m: diagnose(m, "x"), "give a tensor")
case("bfloat16 model and input", bf16, lambda m: diagnose(m, V.to(torch.bfloat16)), check=CLEAN)
case("empty batch", mlp, lambda m: diagnose(m, torch.randn(0, 3)), check=CLEAN)
case("keyword-only forward given a tensor", KwargsOnly, lambda m: diagnose(m, V), "forward failed")
case("unknown keyword", KwargsOnly, lambda m: diagnose(m, {"x": V, "nope": 1}), "forward failed")
case("integer output with a backward hook", ArgmaxOut, diag_and_fired(V),
     check=lambda m, r: kinds("no-gradient-reaches")(m, r[0]))  # fmt: skip
case("buffer changed by forward", Counter, lambda m: diagnose(m, V), check=CLEAN)
case("global hook stores the graph", mlp, global_stores, check=kinds("global-hook", "stored-graph"))
case("hook that removes itself", mlp, self_removing, check=CLEAN)
case("hook that adds a hook", mlp, adds_hooks, check=kinds("registers-hooks-every-call"))
case("tiny transformer, tokens", tiny, lambda m: diagnose(m, hookviz.make_tiny_batch(2, seed=0)[0]), check=CLEAN)
case("tiny transformer, float tokens", tiny, lambda m: diagnose(m, torch.rand(2, 10)), "forward failed")
case("Llama, out-of-vocabulary tokens", load_tiny_llama, lambda m: diagnose(m, torch.full((2, 5), 99)),
     "forward failed")  # fmt: skip
case("kwargs=None explicitly", mlp, lambda m: diagnose(m, V, kwargs=None), check=CLEAN)


@pytest.mark.parametrize("item", CASES, ids=[c.name for c in CASES])
def test_bad_or_unusual_input(item: Case) -> None:
    """One case: a hookviz error or a right result; the model as found; nothing left behind."""
    model = item.make()
    before = None if item.initialises else snapshot(model)
    hooks_before = [(r.where, r.kind, r.hook, r.hook_id) for r in hookviz.list_hooks(model)]
    grads_before = [p.grad for p in model.parameters()] if not item.initialises else []
    try:
        if item.error is not None:
            with pytest.raises(Exception) as raised:  # noqa: PT011 - the message is checked below
                item.action(model)
            assert_hookviz_error(raised.value, item.error)
            assert isinstance(raised.value, (DiagnosisError, TypeError)), type(raised.value)
        else:
            result = item.action(model)
            assert item.check is not None
            item.check(model, result)
        if before is not None:
            assert_unchanged(model, before)
            assert all(a is b for a, b in zip(grads_before, [p.grad for p in model.parameters()], strict=True))
        added = [h for h in getattr(model, "_case_handles", []) if h is not None]
        added_ids = {h.id for h in added if hasattr(h, "id")}
        if item.initialises:  # initialising removes the lazy modules' own hooks, as a first forward does
            hooks_before = [row for row in hooks_before if "Lazy" not in row[2]]
        after = [(r.where, r.kind, r.hook, r.hook_id) for r in hookviz.list_hooks(model) if r.hook_id not in added_ids]
        assert after == [row for row in hooks_before if row[3] not in added_ids], "the hooks changed"
    finally:
        for handle in getattr(model, "_case_handles", []):
            if handle is not None:
                handle.remove()
    assert not hookviz_threads()


def test_the_table_covers_at_least_fifty_inputs() -> None:
    names = [c.name for c in CASES]
    assert len(set(names)) == len(names), "case names must be unique"
    studied = {m.group(0) for n in names if (m := re.match(r"D\d\d", n))}
    missing = {f"D{i:02d}" for i in range(1, 37)} - studied - {"D28"}  # D28: the test below
    print(f"{len(CASES)} inputs, {len(studied) + 1} of the study's 36 cases")
    assert not missing, sorted(missing)
    assert len(CASES) >= 50, len(CASES)


def test_a_model_under_training_is_refused() -> None:
    """D28: a MonitorState trains the model in its thread; diagnose refuses, and the training is undisturbed."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
    last: list[Any] = [None]
    reverted: list[int] = []
    steps: list[int] = []

    def step() -> torch.Tensor:
        if last[0] is not None and not torch.equal(last[0], model[0].weight):
            reverted.append(1)  # someone else changed the weights between two steps
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        time.sleep(0.002)
        optimizer.step()
        last[0] = model[0].weight.detach().clone()
        steps.append(1)
        return loss

    monitor = MonitorState(model, step)
    monitor.start(10**6)
    try:
        deadline = time.monotonic() + 30
        while len(steps) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        refusals = []
        for target in (model, model[0]):
            for _ in range(10):
                with pytest.raises(DiagnosisError) as refused:
                    diagnose(target, torch.randn(4, 8))
                refusals.append(str(refused.value))
        assert monitor.running
        during = len(steps)
    finally:
        monitor.stop()
        assert monitor.wait(30)
    assert monitor.last_error is None, monitor.last_error
    assert during >= 3 and not reverted, (during, reverted)
    assert len(refusals) == 20
    assert all("diagnose()" in r and "monitor" in r and "stop it first" in r for r in refusals), refusals[0]
    assert not hookviz_threads()
    assert list(diagnose(model, torch.randn(4, 8))) == []  # once the training stopped, the diagnosis runs


def test_a_step_may_diagnose_its_own_model() -> None:
    """MN10: the monitor's step calls diagnose() every few steps, in the training thread: it runs, clean."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 8), torch.randint(0, 4, (16,))
    diagnoses: list[Diagnosis] = []
    count = [0]

    def step() -> torch.Tensor:
        count[0] += 1
        if count[0] % 3 == 0:
            diagnoses.append(diagnose(model, x[:4]))
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    monitor = MonitorState(model, step)
    monitor.start(9)
    assert monitor.wait(60)
    assert monitor.last_error is None, monitor.last_error
    assert len(diagnoses) == 3 and all(list(d) == [] for d in diagnoses), diagnoses
    assert not hookviz_threads()
