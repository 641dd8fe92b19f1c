"""hookviz on any user's model: every public entry point driven with bad inputs and user-shaped models.

Each case below is one thing a learner might pass (a wrong shape or dtype, a list where a tensor goes,
a dict or tuple output, a shared module, a frozen or pruned model, a model on the meta device, a
silently coercible ``1.7``...). For every case the test asserts:

* the call either gives a correct result, or raises an error **raised by hookviz** (the innermost
  frame of its traceback is hookviz code, never a raw PyTorch / numpy traceback) whose message names
  what the case expects (the argument, and where it matters the layer and the fix);
* the model is left exactly as found: ``state_dict``, buffers, every submodule's mode,
  ``requires_grad`` and ``.grad``;
* no hook is left on it and no hookviz thread is left running;
* a widget made on it is collectable once closed.

``hypothesis`` is not among the course's pinned packages, so the cases are an explicit table
(``pytest.mark.parametrize``); :func:`test_the_table_covers_at_least_150_inputs` keeps it that large.
"""

from __future__ import annotations

import gc
import os
import threading
import time
import traceback
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.utils.prune as prune
from torch import Tensor, nn

import hookviz
from hookviz.summarize import StridedSample, prime_stride
from hookviz.transformer import TinyTransformer, make_tiny_batch
from hookviz.widgets import (
    AttentionExplorer,
    AttentionState,
    ExplorerState,
    HookTimeline,
    LayerExplorer,
    MonitorState,
    TimelineState,
    TrainingMonitor,
)

HOOKVIZ_DIR = os.path.dirname(os.path.abspath(hookviz.__file__))
X = torch.randn(6, 1, 8, 8, generator=torch.Generator().manual_seed(3))
Y = torch.tensor([0, 1, 2, 3, 4, 5])
TOKENS, TARGETS = make_tiny_batch(4, seed=5)

# --------------------------------------------------------------------------- user-shaped models


def cnn() -> nn.Module:
    """The course's CNN, trained a little (non-trivial BatchNorm statistics), left in train mode."""
    torch.manual_seed(0)
    model = hookviz.DigitsCNN()
    with torch.no_grad():
        for bn in (model.features[1], model.features[5]):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 1.5)
    return model


def cnn_frozen_bn() -> nn.Module:
    """Training, with its BatchNorm layers frozen in eval mode (a fine-tuned backbone)."""
    model = cnn().train()
    model.features[1].eval()
    model.features[5].eval()
    return model


def cnn_with_grads() -> nn.Module:
    """A CNN whose parameters hold gradients from an earlier step (they must survive untouched)."""
    model = cnn()
    nn.functional.cross_entropy(model(X), Y).backward()
    return model


def frozen_cnn() -> nn.Module:
    model = cnn().eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


class DictOut(nn.Module):
    """Returns ``{"aux": scalar, "logits": (N, 10)}``: the scalar comes first."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))

    def forward(self, x: Tensor) -> dict[str, Tensor]:
        logits = self.body(x)
        return {"aux": logits.pow(2).mean(), "logits": logits}


class TupleOut(nn.Module):
    """Returns ``(logits, features)``."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(256, 10))

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        features = self.conv(x).relu()
        return self.head(features), features


class ScalarOut(nn.Module):
    """Returns the mean of its logits: no tensor with the batch first."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(x).mean()


class NoneLayer(nn.Module):
    """A submodule that returns ``None`` (a logging layer), then the logits."""

    def __init__(self) -> None:
        super().__init__()
        self.log = LogNothing()
        self.fc = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))

    def forward(self, x: Tensor) -> Tensor:
        self.log(x)
        return self.fc(x)


class LogNothing(nn.Module):
    def forward(self, x: Tensor) -> None:
        return None


class Shared(nn.Module):
    """One Linear reachable as ``a`` and as ``b``."""

    def __init__(self) -> None:
        super().__init__()
        self.flat = nn.Flatten()
        self.a = nn.Linear(64, 64)
        self.b = self.a
        self.out = nn.Linear(64, 10)

    def forward(self, x: Tensor) -> Tensor:
        return self.out(self.b(self.a(self.flat(x))).relu())


class ComplexNet(nn.Module):
    """Complex weights: its output is complex."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(64, 10, dtype=torch.complex64)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(x.flatten(1).to(torch.complex64))


class Aliased(nn.Module):
    """Returns ``(h, h)``: the same tensor twice."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        h = self.fc(x)
        return h, h


class Dependent(nn.Module):
    """Returns ``(h, 2 * h)``: the second output is computed from the first."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        h = self.fc(x)
        return h, 2 * h


class UsesPair(nn.Module):
    """``a.sum() + 2 * b.sum()`` of an inner module's two outputs."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: Tensor) -> Tensor:
        a, b = self.inner(x)
        return a.sum() + 2 * b.sum()


class LSTMNet(nn.Module):
    def __init__(self, batch_first: bool = True) -> None:
        super().__init__()
        self.lstm = nn.LSTM(8, 12, batch_first=batch_first)
        self.head = nn.Linear(12, 10)

    def forward(self, x: Tensor) -> Tensor:
        out, _ = self.lstm(x)
        return self.head(out[:, -1] if self.lstm.batch_first else out[-1])


def deep(layers: int = 2000) -> nn.Module:
    """A very deep MLP (2,000 layers)."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 4), *[nn.Linear(4, 4) for _ in range(layers - 2)])


def wide() -> nn.Module:
    """A 4,096-channel convolution."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4096, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4096, 10))


def pruned() -> nn.Module:
    model = cnn()
    prune.l1_unstructured(model.classifier[1], "weight", amount=0.5)
    return model


def weight_normed() -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 10))
    torch.nn.utils.parametrizations.weight_norm(model[1])
    return model


def meta_cnn() -> nn.Module:
    with torch.device("meta"):
        return hookviz.DigitsCNN()


def meta_tiny() -> nn.Module:
    with torch.device("meta"):
        return TinyTransformer()


def tiny() -> nn.Module:
    torch.manual_seed(0)
    return TinyTransformer().eval()


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 10))


def no_attention() -> nn.Module:
    return mlp()


# --------------------------------------------------------------------------- what "unchanged" means


@dataclass
class Snapshot:
    state: dict[str, Tensor]
    modes: list[bool]
    requires_grad: list[bool]
    grads: list[Tensor | None]


def snapshot(model: nn.Module) -> Snapshot:
    """Everything of ``model`` that hookviz must leave as found."""
    if any(t.is_meta for t in [*model.parameters(), *model.buffers()]):
        state = {k: v for k, v in model.state_dict(keep_vars=True).items()}
    else:
        state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return Snapshot(
        state,
        [m.training for m in model.modules()],
        [p.requires_grad for p in model.parameters()],
        [None if p.grad is None else p.grad.clone() for p in model.parameters()],
    )


def assert_unchanged(model: nn.Module, before: Snapshot) -> None:
    after = snapshot(model)
    assert after.modes == before.modes, "a submodule's train/eval mode changed"
    assert after.requires_grad == before.requires_grad, "requires_grad changed"
    for a, b in zip(after.grads, before.grads, strict=True):
        assert (a is None) == (b is None) and (a is None or torch.equal(a, b)), ".grad changed"
    assert after.state.keys() == before.state.keys()
    for key, value in after.state.items():
        if value.is_meta:
            continue
        assert torch.equal(value, before.state[key]), f"{key} changed"


def assert_hookviz_error(error: BaseException, expected: str) -> None:
    """``error`` was raised by hookviz code (not a raw traceback from PyTorch or numpy) and says ``expected``."""
    frames = traceback.extract_tb(error.__traceback__)
    assert frames, "no traceback"
    innermost = os.path.abspath(frames[-1].filename)
    assert innermost.startswith(HOOKVIZ_DIR + os.sep), (
        f"raw {type(error).__name__} from {innermost}:{frames[-1].lineno}: {error}"
    )
    message = str(error.args[0]) if error.args else str(error)
    assert message and __import__("re").search(expected, message), f"{message!r} does not say {expected!r}"


def hookviz_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("hookviz") and t.is_alive()]


# --------------------------------------------------------------------------- the table


@dataclass
class Case:
    """``action(model)`` on a fresh ``make()``: raise a hookviz error matching ``error``, or pass ``check``."""

    name: str
    make: Callable[[], nn.Module]
    action: Callable[[nn.Module], Any]
    error: str | None = None
    check: Callable[[nn.Module, Any], None] | None = None
    trains: bool = False  # the action trains the model on purpose (weights change)


def _show(value: Any) -> str:
    """A stable, short label for a case's argument (test ids must be the same in every xdist worker)."""
    if isinstance(value, torch.Tensor):
        label = f"tensor{tuple(value.shape)}:{str(value.dtype).removeprefix('torch.')}"
        # small integer tensors are deterministic: their values tell two such cases apart (random floats are not)
        exact = not value.is_floating_point() and value.numel() <= 8 and value.device.type != "meta"
        return f"{label}={value.tolist()}" if exact else label
    if isinstance(value, np.ndarray):
        return f"array{value.shape}:{value.dtype}"
    if type(value) is object:
        return "object()"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_show(v)}" for k, v in value.items()) + "}"
    return repr(value)[:40]


CASES: list[Case] = []


def case(name: str, make: Callable[[], nn.Module], action: Callable[[nn.Module], Any], error: str | None = None,
         check: Callable[[nn.Module, Any], None] | None = None, trains: bool = False) -> None:  # fmt: skip
    CASES.append(Case(name, make, action, error, check, trains))


def _explore(model: nn.Module, inputs: Any = X, labels: Any = None, **kwargs: Any) -> ExplorerState:
    return ExplorerState(model, inputs, labels, **kwargs)


def _ok_explorer(model: nn.Module, state: ExplorerState) -> None:
    assert state.layers and state.describe()["layer"] == state.layer
    state.static_png()


# -- capture(): arguments
for bad_layers, why in [
    (123, "layers must be a layer name or a list"),
    (1.5, "layers must be a layer name or a list"),
    ([1, 2], "layer names must be strings"),
    (["nope"], "no layer named 'nope'"),
    ("features.9", "no layer named 'features.9'"),
    (torch.tensor(1), "layers must be a layer name or a list"),
    (b"features.0", "layers must be a layer name or a list"),
    ([None], "layer names must be strings"),
]:
    case(f"capture layers={_show(bad_layers)}", cnn, lambda m, b=bad_layers: hookviz.capture(m, b), why)
for bad_types in ["Conv2d", (nn.Conv2d, 3), 3]:
    case(f"capture types={_show(bad_types)}", cnn, lambda m, t=bad_types: hookviz.capture(m, types=t), "types must be")
case("capture types without a match", cnn, lambda m: hookviz.capture(m, types=nn.LSTM), "no layers of type")
case("capture key=5", cnn, lambda m: hookviz.capture(m, key=5), "key must be a string")
case("capture reduce='mean'", cnn, lambda m: hookviz.capture(m, reduce="mean"), "reduce must be a function")
case("capture model=123", cnn, lambda m: hookviz.capture(123), "needs model to be an nn.Module")
case("capture model=None", cnn, lambda m: hookviz.capture(None), "needs model to be an nn.Module")
case("capture shared module by its second name", Shared, lambda m: hookviz.capture(m, ["b"]), "same module as 'a'")


def _capture_reads(model: nn.Module, read: Callable[[hookviz.Capture], Any], **kwargs: Any) -> Any:
    x = X.clone().requires_grad_(True)
    with hookviz.capture(model, ["features.0", "classifier.1"], **kwargs) as cap:
        torch.autograd.grad(model(x).sum(), x)
    return read(cap)


for what, read in [
    ("first_nonfinite", lambda c: c.first_nonfinite()),
    ("first_nonfinite gradients", lambda c: c.first_nonfinite("gradients")),
    ("nonfinite", lambda c: c.nonfinite()),
]:
    case(
        f"{what} with reduce=",
        frozen_cnn,
        lambda m, r=read: _capture_reads(m, r, reduce=lambda t: t.mean()),
        "reduce=None",
    )
case("first_nonfinite where='both'", frozen_cnn, lambda m: _capture_reads(m, lambda c: c.first_nonfinite("x")), "where")
case("gradient of call 5", frozen_cnn, lambda m: _capture_reads(m, lambda c: c.gradient("features.0", 5)), "no call 5")
case("activation of a typo", frozen_cnn, lambda m: _capture_reads(m, lambda c: c.activation("feat.0")), "not captured")
case(
    "first_nonfinite without reduce is right",
    frozen_cnn,
    lambda m: _capture_reads(m, lambda c: c.first_nonfinite()),
    check=lambda m, r: None if r is None else pytest.fail(f"found {r}"),
)


def _pair_grads(inner: nn.Module) -> Any:
    model = UsesPair(inner)
    x = torch.randn(2, 3)
    with hookviz.capture(model, ["inner"]) as cap:
        torch.autograd.grad(model(x), [p for p in model.parameters()])
    return cap.gradient("inner")


case("capture (h, h)", Aliased, lambda m: _pair_grads(m), "same tensor")
case("capture (h, 2h)", Dependent, lambda m: _pair_grads(m), "computed from output")

# -- remove_all_hooks(): arguments and PyTorch's own hooks
for bad in [None, 3, "model", [nn.Linear(2, 2)]]:
    case(f"remove_all_hooks({_show(bad)})", cnn, lambda m, b=bad: hookviz.remove_all_hooks(b), "needs model to be an")
case("remove_all_hooks optimizer='sgd'", cnn, lambda m: hookviz.remove_all_hooks(m, optimizer="sgd"), "optimizer must")


def _remove_keeps_pytorch(model: nn.Module) -> Any:
    model.eval()
    out = model(X[:2])
    model.register_forward_hook(lambda *a: None)  # a user's hook: removed
    with pytest.warns(UserWarning, match="kept"):
        removed = hookviz.remove_all_hooks(model)
    assert removed == 1 and len(removed.kept) >= 1
    assert torch.allclose(model(X[:2]), out)
    model.train()
    return removed


case("remove_all_hooks on a pruned model", pruned, _remove_keeps_pytorch, check=lambda m, r: None)

# -- the layer explorer: inputs
for bad_inputs, why in [
    (torch.randn(6, 3, 8, 8), r"DigitsCNN failed on inputs .* in layer 'features.0'"),
    (torch.randn(6, 64), r"failed on inputs .*in layer 'features.0'"),
    (X.double(), r"failed on inputs .*float64.*in layer 'features.0'"),
    (X.long(), r"failed on inputs .*int64"),
    (X.half(), r"failed on inputs .*float16"),
    (torch.randn(0, 1, 8, 8), "at least one sample"),
    (torch.tensor(1.0), "at least one sample"),
    ("digits", "inputs must be a tensor"),
    (None, "inputs must be a tensor"),
    ({"x": X}, "inputs must be a tensor"),
    ([[1, "a"]], "inputs must be a tensor"),
    (torch.randn(6, 1, 2, 2), r"failed on inputs .* in layer"),
]:
    case(f"explorer inputs={_show(bad_inputs)}", cnn, lambda m, b=bad_inputs: _explore(m, b), why)
case("explorer inputs as numpy", cnn, lambda m: _explore(m, X.numpy()), check=_ok_explorer)
case("explorer inputs as a list of lists", mlp, lambda m: _explore(m, X.flatten(1).tolist()), check=_ok_explorer)

# -- the layer explorer: labels
for bad_labels, why in [
    (Y.float(), "labels must be integer class indices"),
    (Y[:3], "labels has 3 entries for 6 inputs"),
    (torch.tensor(3), "labels has a single number"),
    (torch.tensor([0, 1, 2, 3, 4, 10]), "labels must be class indices from 0 to 9"),
    (torch.tensor([0, 1, 2, 3, 4, -1]), "labels must be class indices from 0 to 9"),
    (torch.ones(6, 2, dtype=torch.long), "labels"),
    (np.array([0.5] * 6), "labels must be integer class indices"),
    (["a"] * 6, "labels must be a tensor"),
    (torch.ones(6, dtype=torch.bool), "labels must be integer class indices"),
    ("0 1 2 3 4 5", "labels must be a tensor"),
]:
    case(f"explorer labels={_show(bad_labels)}", cnn, lambda m, b=bad_labels: _explore(m, X, b), why)
case("explorer labels as a list", cnn, lambda m: _explore(m, X, Y.tolist()), check=_ok_explorer)
case("explorer labels as numpy", cnn, lambda m: _explore(m, X, Y.numpy()), check=_ok_explorer)

# -- the layer explorer: other arguments
for bad_target, why in [("foo", "target must be"), (10, "class 10 does not exist"), (-1, "class -1"),
                        (1.5, "target must be"), (True, "target must be"), ("loss", "needs labels")]:  # fmt: skip
    case(f"explorer target={_show(bad_target)}", cnn, lambda m, t=bad_target: _explore(m, target=t), why)
for bad_page in [0, -1, 2.5, "4"]:
    case(f"explorer page_size={_show(bad_page)}", cnn, lambda m, p=bad_page: _explore(m, page_size=p), "page_size")
for bad_layers, why in [([1], "layers must be a list of layer names"), (["nope"], "no layer named 'nope'"),
                        (5, "layers must be a list of layer names")]:  # fmt: skip
    case(f"explorer layers={_show(bad_layers)}", cnn, lambda m, b=bad_layers: _explore(m, layers=b), why)
case("explorer model=None", cnn, lambda m: _explore(None), "needs model to be an nn.Module")
case("explorer model is a function", cnn, lambda m: _explore(lambda x: x), "needs model to be an nn.Module")

# -- the layer explorer: choices after the pass
for choice, why in [
    ({"sample": 1.7}, "sample must be a whole number"),
    ({"sample": "2"}, "sample must be a whole number"),
    ({"sample": True}, "sample must be a whole number"),
    ({"sample": -1}, "sample -1 is out of range"),
    ({"sample": 6}, "sample 6 is out of range"),
    ({"page": 1.5}, "page must be a whole number"),
    ({"page": 99}, "page 100 does not exist"),
    ({"layer": 123}, "layer must be a layer name"),
    ({"layer": "nope"}, "no layer named 'nope'"),
    ({"layer": "features"}, None),
    ({"order": "x"}, "order must be"),
]:
    if why is None:
        case(f"explorer select {choice}", cnn, lambda m, c=choice: _explore(m).select(**c), check=_ok_explorer)
    else:
        case(f"explorer select {choice}", cnn, lambda m, c=choice: _explore(m).select(**c), why)
case("explorer select(numpy int)", cnn, lambda m: _explore(m).select(sample=np.int64(2)), check=_ok_explorer)
case("explorer set_target(12)", cnn, lambda m: _explore(m).set_target(12), "class 12 does not exist")

# -- the layer explorer: user-shaped models


def _dict_check(model: nn.Module, state: ExplorerState) -> None:
    assert "showing key 'logits'" in state.output_note and state.n_outputs == 10


case("explorer dict output, scalar first", DictOut, lambda m: _explore(m, X, Y), check=_dict_check)
case("explorer tuple output", TupleOut, lambda m: _explore(m, X, Y), check=_ok_explorer)
case("explorer scalar output", ScalarOut, lambda m: _explore(m), "holds only single numbers")
case("explorer a layer returning None", NoneLayer, lambda m: _explore(m), check=_ok_explorer)
case("explorer complex model", ComplexNet, lambda m: _explore(m), "complex")
case("explorer meta model", meta_cnn, lambda m: _explore(m), "meta device")
case("explorer frozen model", frozen_cnn, lambda m: _explore(m, X, Y), check=_ok_explorer)
case("explorer frozen BatchNorm in a training model", cnn_frozen_bn, lambda m: _explore(m, X, Y), check=_ok_explorer)
case("explorer train_mode on a frozen-BN model", cnn_frozen_bn, lambda m: _explore(m, train_mode=True),
     check=_ok_explorer)  # fmt: skip
case("explorer with .grad present", cnn_with_grads, lambda m: _explore(m, X, Y), check=_ok_explorer)
case("explorer shared module's second name", Shared, lambda m: _explore(m).select(layer="b"), "same module as 'a'")
case("explorer LSTM", LSTMNet, lambda m: _explore(m, torch.randn(3, 5, 8)), check=_ok_explorer)
case("explorer LSTM batch_first=False", lambda: LSTMNet(False), lambda m: _explore(m, torch.randn(5, 3, 8)),
     check=lambda m, s: None)  # fmt: skip
case("explorer LSTM on 2-D input", LSTMNet, lambda m: _explore(m, torch.randn(3, 8)), "failed on inputs")
case("explorer 2,000 layers", deep, lambda m: _explore(m, X[:2]), check=_ok_explorer)
case("explorer 4,096 channels", wide, lambda m: _explore(m, X[:2]), check=lambda m, s: s.select(page=63))
case("explorer pruned model", pruned, lambda m: _explore(m, X, Y), check=_ok_explorer)
case("explorer weight-normed model", weight_normed, lambda m: _explore(m, X, Y), check=_ok_explorer)
case("explorer transformer tokens", tiny, lambda m: _explore(m, TOKENS, TARGETS), check=_ok_explorer)
case("explorer transformer float tokens", tiny, lambda m: _explore(m, TOKENS.float()), "token ids")
case("explorer transformer 1-D tokens", tiny, lambda m: _explore(m, TOKENS[0]), r"\(N, L\)")
case("explorer transformer labels out of range", tiny, lambda m: _explore(m, TOKENS, TARGETS + 10), "labels must")

# -- the training monitor: arguments


def _quiet_step(model: nn.Module, value: Any = 0.5) -> Callable[[], Any]:
    """A step that runs the model without changing it and returns ``value``."""

    def step() -> Any:
        modes = [(m, m.training) for m in model.modules()]
        model.eval()  # no BatchNorm statistics update: the step changes nothing
        with torch.no_grad():
            model(X[:2])
        for m, mode in modes:
            m.training = mode
        return value

    return step


for name, bad in [("bins", 0), ("bins", -3), ("bins", 2.5), ("stats_every", 0), ("capture_every", -2),
                  ("capture_every", 0), ("history", 1), ("sample", 0), ("sample", "256"), ("probe_label", "3"),
                  ("key", 5), ("stats_every", 1.5)]:  # fmt: skip
    case(f"monitor {name}={_show(bad)}", cnn, lambda m, n=name, b=bad: MonitorState(m, _quiet_step(m), **{n: b}), name)
for bad_probe, why in [(X.double(), "probe is float64"), (torch.tensor(1.0), "probe must be a batch"),
                       ("digit", "probe must be a tensor"), (X[:0], "probe must be a batch")]:  # fmt: skip
    case(f"monitor probe={_show(bad_probe)}", cnn, lambda m, p=bad_probe: MonitorState(m, _quiet_step(m), probe=p), why)
case("monitor probe as numpy", cnn, lambda m: MonitorState(m, _quiet_step(m), probe=X[:1].numpy()).run_probe(),
     check=lambda m, maps: None if maps else pytest.fail("no probe maps"))  # fmt: skip
case("monitor step_fn=3", cnn, lambda m: MonitorState(m, 3), "step_fn must be a function")
case("monitor model=None", cnn, lambda m: MonitorState(None, _quiet_step(m)), "needs model to be an nn.Module")
case("monitor meta model", meta_cnn, lambda m: MonitorState(m, lambda: 0.0), "meta device")
for bad_return, why in [("0.5", "returned a str"), ({"loss": 0.5}, "returned a dict with keys 'loss'"),
                        (torch.ones(3), r"a tensor of shape \(3,\)"), (object(), "returned a object"),
                        (torch.ones(2, 2), r"a tensor of shape \(2, 2\)"), ([0.5], "returned a list")]:  # fmt: skip
    case(f"monitor step returns {_show(bad_return)}", cnn,
         lambda m, r=bad_return: MonitorState(m, _quiet_step(m, r)).run(2), why)  # fmt: skip
for bad_steps, why in [(2.5, "steps must be a whole number"), ("3", "steps must be a whole number"),
                       (-1, "steps must be at least 0"), (None, "steps must be a whole number")]:  # fmt: skip
    case(f"monitor run({_show(bad_steps)})", cnn, lambda m, s=bad_steps: MonitorState(m, _quiet_step(m)).run(s), why)
    case(f"monitor start({_show(bad_steps)})", cnn,
         lambda m, s=bad_steps: MonitorState(m, _quiet_step(m)).start(s), why)  # fmt: skip
case("monitor run(2.5) on the widget", cnn, lambda m: TrainingMonitor(m, _quiet_step(m)).run(2.5), "steps must be")
case("monitor data=[]", cnn, lambda m: MonitorState(m, lambda b: 0.0, data=[]).run(2), "no batch")
case("monitor step returns numpy float", cnn, lambda m: MonitorState(m, _quiet_step(m, np.float32(0.25))).run(2),
     check=lambda m, s: None if s.losses()[-1] == 0.25 else pytest.fail("loss"))  # fmt: skip
case("monitor step returns None", cnn, lambda m: MonitorState(m, _quiet_step(m, None)).run(2),
     check=lambda m, s: None if np.isnan(s.losses()).all() else pytest.fail("loss"))  # fmt: skip
case("monitor layers=123", cnn, lambda m: MonitorState(m, _quiet_step(m), layers=123), "layers must be")
case("monitor layers=['b'] on a shared module", Shared, lambda m: MonitorState(m, _quiet_step(m), layers=["b"]),
     "same module as 'a'")  # fmt: skip


def _train(model: nn.Module, steps: int = 3, **kwargs: Any) -> MonitorState:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def step() -> Tensor:
        optimizer.zero_grad()
        out = model(X)
        logits = out["logits"] if isinstance(out, dict) else out[0] if isinstance(out, tuple) else out
        loss = nn.functional.cross_entropy(logits, Y)
        loss.backward()
        optimizer.step()
        return loss

    return MonitorState(model, step, probe=X[:1], **kwargs).run(steps, on_update=lambda s: None)


def _trained(model: nn.Module, state: MonitorState) -> None:
    assert state.step == 3 and np.isfinite(state.losses()).all()
    state.figure()


for make in (cnn, DictOut, TupleOut, NoneLayer, pruned, weight_normed, cnn_frozen_bn):
    case(f"monitor trains {make.__name__}", make, _train, check=_trained, trains=True)
case("monitor capture_every=2", cnn, lambda m: _train(m, capture_every=2), check=_trained, trains=True)
case("monitor stats_every=1", cnn, lambda m: _train(m, stats_every=1), check=_trained, trains=True)

# -- the hook timeline


def _timeline(model: nn.Module, inputs: Any = None, **kwargs: Any) -> TimelineState:
    return TimelineState(model, X[:2] if inputs is None else inputs, **kwargs)


def _fired(model: nn.Module, state: TimelineState) -> None:
    assert any(e.phase == "backward" for e in state.events) and any(e.phase == "forward" for e in state.events)


case("timeline tuple output", TupleOut, _timeline, check=_fired)
case("timeline dict output", DictOut, _timeline, check=_fired)
case("timeline integer tokens", tiny, lambda m: _timeline(m, TOKENS), check=_fired)
case("timeline frozen model, float input", frozen_cnn, _timeline, check=_fired)
case("timeline frozen model, no input grad", frozen_cnn, lambda m: _timeline(m, input_requires_grad=False),
     "does not require grad")  # fmt: skip
case("timeline frozen transformer, tokens", lambda: tiny().requires_grad_(False), lambda m: _timeline(m, TOKENS),
     "does not require grad")  # fmt: skip
case("timeline loss_fn returns a vector", cnn, lambda m: _timeline(m, loss_fn=lambda o: o.sum(1)), "one-element")
case("timeline loss_fn=3", cnn, lambda m: _timeline(m, loss_fn=3), "loss_fn must be a function")
case("timeline loss_fn fails", cnn, lambda m: _timeline(m, loss_fn=lambda o: o["x"]), "loss_fn failed")
case("timeline wrong input shape", cnn, lambda m: _timeline(m, torch.randn(2, 3)), r"in layer 'features.0'")
case("timeline input as a list", mlp, lambda m: _timeline(m, X[:2].flatten(1).tolist()), check=_fired)
case("timeline input 'x'", cnn, lambda m: _timeline(m, "x"), "inputs must be a tensor")
case("timeline frozen BatchNorm in a training model", cnn_frozen_bn, _timeline, check=_fired)
case("timeline with .grad present", cnn_with_grads, _timeline, check=_fired)
case("timeline meta model", meta_cnn, _timeline, "meta device")
case("timeline scalar-only output", lambda: LogNothing(), _timeline, "no floating-point tensor")
case("timeline pruned model", pruned, _timeline, check=_fired)

# -- the attention explorer


def _attention(model: nn.Module, inputs: Any = TOKENS, **kwargs: Any) -> AttentionState:
    return AttentionState(model, inputs, **kwargs)


def _patterns(model: nn.Module, state: AttentionState) -> None:
    assert state.patterns and state.pattern().shape == (8, 8)


case("attention tokens", tiny, _attention, check=_patterns)
case("attention empty batch", tiny, lambda m: _attention(m, TOKENS[:0]), "at least one sample")
case("attention 1-D tokens", tiny, lambda m: _attention(m, TOKENS[0]), r"for one row pass tokens\[None\]")
case("attention float tokens", tiny, lambda m: _attention(m, TOKENS.float()), "integer token ids")
case("attention tokens out of vocab", tiny, lambda m: _attention(m, TOKENS + 10), "token ids must be from 0 to 9")
case("attention rows too long", tiny, lambda m: _attention(m, torch.zeros(2, 12, dtype=torch.long)), "longer than")
case("attention no attention layer", no_attention, lambda m: _attention(m, X), "no nn.MultiheadAttention")
case("attention model_kwargs=3", tiny, lambda m: _attention(m, model_kwargs=3), "model_kwargs must be a dict")
case("attention layers=['nope']", tiny, lambda m: _attention(m, layers=["nope"]), "no nn.MultiheadAttention named")
case("attention meta model", meta_tiny, _attention, "meta device")
for choice, why in [({"head": 1.5}, "head must be a whole number"), ({"head": "2"}, "head must be a whole number"),
                    ({"head": -1}, "head -1 does not exist"), ({"head": 99}, "head 99 does not exist"),
                    ({"sample": 1.7}, "sample must be a whole number"), ({"sample": 9}, "out of range"),
                    ({"layer": "nope"}, "no attention layer named")]:  # fmt: skip
    case(f"attention select {choice}", tiny, lambda m, c=choice: _attention(m).select(**c), why)
case("attention select head=None (mean)", tiny, lambda m: _attention(m).select(head=None), check=_patterns)

# -- the tiny transformer and the summaries
for bad_tokens, why in [(TOKENS[0], r"tokens\[None\]"), (TOKENS.float(), "tokens.long"), (TOKENS[None], r"\(N, L\)"),
                        (torch.zeros(1, 9, dtype=torch.long), "at most 8"), (TOKENS - 1, "from 0 to 9"),
                        ([[1, 2]], "must be an int64 tensor")]:  # fmt: skip
    case(f"TinyTransformer({_show(bad_tokens)})", tiny, lambda m, t=bad_tokens: m(t), why)
for bad_n in [0, -1, 2.5, "3"]:
    case(f"StridedSample({_show(bad_n)})", mlp, lambda m, n=bad_n: StridedSample(n), "sample size must be")


@pytest.mark.parametrize("item", CASES, ids=[c.name for c in CASES])
def test_bad_input_or_user_model(item: Case) -> None:
    """One case of the table: a hookviz error or a right result; the model as found; nothing left behind."""
    model = item.make()
    before = snapshot(model)
    hooks_before = [(r.where, r.kind, r.hook) for r in hookviz.list_hooks(model)]  # a pruned model has PyTorch's
    result: Any = None
    try:
        if item.error is not None:
            with pytest.raises(Exception) as raised:  # noqa: PT011 - the message is checked below
                result = item.action(model)
            assert_hookviz_error(raised.value, item.error)
        else:
            result = item.action(model)
            assert item.check is not None
            item.check(model, result)
    finally:
        if isinstance(result, (MonitorState,)):
            result.stop()
            assert result.wait(30)
        if hasattr(result, "close"):
            result.close()
    if not item.trains:
        assert_unchanged(model, before)
    else:
        assert [m.training for m in model.modules()] == before.modes
    assert [(r.where, r.kind, r.hook) for r in hookviz.list_hooks(model)] == hooks_before
    assert not hookviz_threads()


def test_the_table_covers_at_least_150_inputs() -> None:
    assert len(CASES) >= 150, len(CASES)
    assert len({c.name for c in CASES}) == len(CASES), "case names must be unique"


# --------------------------------------------------------------------------- collectable after close()


def _make_widget(kind: str, model: nn.Module) -> Any:
    if kind == "explorer":
        return LayerExplorer(model, X if not isinstance(model, TinyTransformer) else TOKENS)
    if kind == "timeline":
        return HookTimeline(model, X[:2] if not isinstance(model, TinyTransformer) else TOKENS)
    if kind == "attention":
        return AttentionExplorer(model, TOKENS)
    monitor = TrainingMonitor(model, _quiet_step(model) if not isinstance(model, TinyTransformer) else lambda: 0.0)
    monitor.run(2)
    return monitor


@pytest.mark.parametrize(
    ("kind", "make"),
    [
        ("explorer", cnn),
        ("explorer", DictOut),
        ("explorer", tiny),
        ("timeline", cnn),
        ("timeline", tiny),
        ("attention", tiny),
        ("monitor", cnn),
        ("monitor", tiny),
    ],
)
def test_a_closed_widget_lets_its_model_go(kind: str, make: Callable[[], nn.Module]) -> None:
    from ipywidgets.widgets.widget import _instances

    open_before = set(_instances)
    model = make()
    ref = weakref.ref(model)
    widget = _make_widget(kind, model)
    assert set(_instances) - open_before  # it made widgets
    widget.close()
    assert set(_instances) == open_before, "closed widgets stay in ipywidgets' registry"
    assert repr(widget).endswith("(closed)")
    widget.close()  # twice is fine
    del widget, model
    gc.collect()
    assert ref() is None, "the model is still referenced after close()"


def test_a_started_monitor_is_stopped_by_close() -> None:
    model = cnn()
    monitor = TrainingMonitor(model, _quiet_step(model))
    thread = monitor.start(10**6)
    while monitor.state.step < 2:
        time.sleep(0.01)
    monitor.close()
    thread.join(30)
    assert not thread.is_alive() and not hookviz_threads()
    assert not hookviz.list_hooks(model)


def test_the_strided_sample_cache_is_bounded() -> None:
    """A batch size that changes every step (4,000 steps, 3,000 sizes) keeps at most CACHE_SIZE index tensors."""
    reducer = StridedSample(256)
    for step in range(4000):
        batch = 1 + step % 3000
        sample = reducer(torch.ones(batch, 7))
        assert len(sample) <= 256 + 1
    assert len(reducer._index) <= StridedSample.CACHE_SIZE
    x = torch.arange(3000.0)
    assert torch.equal(reducer(x), x[:: prime_stride(3000, 256)])  # still right after evictions
