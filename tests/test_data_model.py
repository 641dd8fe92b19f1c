"""The bundled digits and the committed CNN weights: shapes, split, and the accuracy README states."""

import io
import re
from pathlib import Path

import pytest
import torch

import hookviz

README = Path(__file__).resolve().parents[1] / "README.md"


def test_digits_splits_are_fixed_and_disjoint():
    x_all, y_all = hookviz.load_digits("all")
    x_train, y_train = hookviz.load_digits("train")
    x_test, y_test = hookviz.load_digits("test")
    assert x_all.shape == (1797, 1, 8, 8) and x_all.dtype == torch.float32
    assert float(x_all.min()) == 0.0 and float(x_all.max()) == 1.0
    assert len(y_train) == 1437 and len(y_test) == 360
    assert set(y_test.tolist()) == set(range(10))
    # the same images, split without overlap
    assert torch.equal(torch.cat([x_train, x_test]).sum(0), x_all.sum(0))
    again, _ = hookviz.load_digits("test")
    assert torch.equal(again, x_test)


def test_bad_split_is_a_clear_error():
    with pytest.raises(ValueError, match="split must be"):
        hookviz.load_digits("validation")


def test_committed_weights_reach_the_accuracy_readme_states():
    stated = re.search(r"held-out accuracy of \*\*(\d+\.\d)%\*\*", README.read_text())
    assert stated, "README must state the bundled CNN's held-out accuracy"
    model = hookviz.load_pretrained_cnn()
    x_test, y_test = hookviz.load_digits("test")
    acc = hookviz.accuracy(model, x_test, y_test)
    assert acc * 100 >= float(stated.group(1)) - 0.05
    assert not model.training


def test_weights_file_is_small_and_loads_with_weights_only():
    from importlib import resources

    path = resources.files("hookviz").joinpath("assets/digits_cnn.pt")
    with path.open("rb") as f:
        raw = f.read()
    assert len(raw) < 1_000_000
    state = torch.load(io.BytesIO(raw), weights_only=True)
    assert set(state) == set(hookviz.DigitsCNN().state_dict())


@pytest.mark.slow
def test_training_script_reproduces_a_good_model_quickly():
    import time

    start = time.perf_counter()
    model = hookviz.train_digits_cnn(epochs=3)
    assert time.perf_counter() - start < 120
    x_test, y_test = hookviz.load_digits("test")
    assert hookviz.accuracy(model, x_test, y_test) > 0.9


def test_doctor_reports_versions(capsys):
    report = hookviz.doctor()
    assert report["torch"].startswith("2.13.0")
    assert "torch" in capsys.readouterr().out
