"""The training monitor, without a kernel: statistics, bounded history, stop/resume, no hooks left behind."""

import base64
import threading
import time

import numpy as np
import pytest
import torch
from torch import nn

import hookviz
from hookviz.widgets import MonitorState, TrainingMonitor, digits_step_fn


def test_monitor_trains_and_records() -> None:
    model = hookviz.DigitsCNN()
    mon = TrainingMonitor(model, every=10, min_interval=0.0)
    assert mon.out.outputs[0]["text"].startswith("no steps yet")
    mon.run(60)
    s = mon.state
    assert s.step == 60 and len(s.history) == 60
    assert s.layer_names == ["features.0", "features.1", "features.4", "features.5", "classifier.1"]
    assert s.losses()[-5:].mean() < s.losses()[:5].mean()
    assert s.act_mean().shape == (60, 5) and s.colorful_dimension("features.0").shape == (60, 40)
    assert s.colorful_dimension("features.0").sum(axis=1).min() > 0
    assert np.all(s.grad_by_depth() > 0)
    assert s.draws >= 2  # throttled redraws plus the final one
    (item,) = mon.out.outputs
    assert base64.b64decode(item["data"]["image/png"]).startswith(b"\x89PNG")
    assert repr(mon) == "TrainingMonitor(step=60, layers=5, history=60/500)"
    assert "loss: first" in s.summary()
    assert not hookviz.list_hooks(model)
    mon.layer.value = "features.0"  # changing the panel's layer redraws without training
    assert s.step == 60


def test_history_is_bounded_and_resume_continues() -> None:
    model = hookviz.DigitsCNN()
    state = MonitorState(model, digits_step_fn(model), history=25, stats_every=7)
    state.run(40)
    state.run(10)  # resume
    assert state.step == 50 and len(state.history) == 25
    assert state.steps().tolist() == list(range(26, 51))


def test_capture_every_skips_hooks_in_between() -> None:
    model = hookviz.DigitsCNN()
    state = MonitorState(model, digits_step_fn(model), capture_every=3)
    state.run(12)
    assert state.steps().tolist() == [3, 6, 9, 12]
    assert not hookviz.list_hooks(model)


def test_keyboard_interrupt_leaves_no_hooks() -> None:
    model = hookviz.DigitsCNN()
    step = digits_step_fn(model)
    calls = []

    def flaky() -> torch.Tensor:
        calls.append(1)
        if len(calls) == 7:
            assert hookviz.list_hooks(model, include_global=False)  # hooks are on while training
            raise KeyboardInterrupt
        return step()

    state = MonitorState(model, flaky)
    with pytest.raises(KeyboardInterrupt):
        state.run(100)
    assert not hookviz.list_hooks(model) and not hookviz.registered_keys(model)
    assert len(state.history) == 6 and not state.running  # what was recorded is kept


def test_stop_button_in_background_thread() -> None:
    model = hookviz.DigitsCNN()
    inner = digits_step_fn(model)
    started = threading.Event()

    def slow_step() -> torch.Tensor:
        started.set()
        time.sleep(0.002)
        return inner()

    mon = TrainingMonitor(model, slow_step, every=1000)
    thread = mon.start(100_000)
    assert started.wait(10)
    assert mon.stop_button.disabled is False and mon.train_button.disabled is True
    mon.stop_button.click()
    thread.join(20)
    assert not thread.is_alive()
    assert 0 < mon.state.step < 100_000
    assert not hookviz.list_hooks(model)
    assert mon.train_button.disabled is False and "stopped" in mon.status.value


def test_recreating_replaces_old_hooks() -> None:
    model = hookviz.DigitsCNN()
    # an old monitor's capture left running (e.g. a cell interrupted in a way that skipped cleanup)
    old = hookviz.capture(model, ["features.0"], key="hookviz.monitor").start()
    assert hookviz.registered_keys(model) == {"hookviz.monitor": 1}
    MonitorState(model, digits_step_fn(model)).run(3)  # same key: replaces, then removes on exit
    assert not hookviz.list_hooks(model)
    assert not old.active or not hookviz.registered_keys(model)


def test_nan_loss_is_counted_not_fatal() -> None:
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))
    x, y = hookviz.load_digits("train")

    def step() -> torch.Tensor:
        out = model(x[:16] * float("nan"))
        loss = nn.functional.cross_entropy(out, y[:16])
        loss.backward()
        return loss

    state = MonitorState(model, step)
    state.run(3)
    assert state.nonfinite()["activations"] > 0 and np.isnan(state.losses()).all()
    state.figure()  # draws, even with nothing finite


def test_static_fallback() -> None:
    model = hookviz.DigitsCNN()
    mon = TrainingMonitor(model)
    mon.run(5)
    bundle = mon._repr_mimebundle_()
    assert bundle["text/plain"] == "TrainingMonitor(step=5, layers=5, history=5/500)"
    assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")


def test_recreating_while_training_in_background_stops_the_old_one() -> None:
    model = hookviz.DigitsCNN()
    inner = digits_step_fn(model)

    def slow_step() -> torch.Tensor:
        time.sleep(0.002)
        return inner()

    old = TrainingMonitor(model, slow_step, every=1000)
    thread = old.start(100_000)
    while old.state.step < 3:
        time.sleep(0.01)
    new = TrainingMonitor(model, slow_step)  # the re-run cell
    thread.join(20)
    assert not thread.is_alive() and not old.state.running
    new.run(3)
    assert new.state.step == 3
    assert not hookviz.list_hooks(model)
