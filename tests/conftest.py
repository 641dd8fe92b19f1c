"""Shared test setup: a non-interactive matplotlib backend and a clean hook state per test."""

import matplotlib
import pytest
import torch

matplotlib.use("Agg")


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)
