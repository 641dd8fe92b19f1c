"""``same(a, b)``: do two answers agree? (tensors bitwise, models by their weights, answers of ask by links ...)."""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

import numpy as np
import torch
from torch import nn

_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def same(a: Any, b: Any) -> bool:
    """Whether two answers of one entry point agree (the answer to an equivalent input must be the same)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a.nan_to_num(), b.nan_to_num()))
    if isinstance(a, nn.Module) or isinstance(b, nn.Module):
        if type(a) is not type(b):
            return False
        sa, sb = a.state_dict(), b.state_dict()
        return sa.keys() == sb.keys() and all(same(sa[k], sb[k]) for k in sa)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=np.asarray(a).dtype.kind == "f"))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if hasattr(a, "links") and hasattr(b, "links"):  # hookviz.search.Answers
        return list(a.links) == list(b.links) and getattr(a, "language", None) == getattr(b, "language", None)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b) and not isinstance(a, type):
        return type(a) is type(b) and same(dataclasses.asdict(a), dataclasses.asdict(b))
    if hasattr(a, "to_dict") and hasattr(b, "to_dict"):  # a transformers config
        return same(a.to_dict(), b.to_dict())
    try:
        equal = a == b
        if isinstance(equal, bool) and (equal or type(a).__eq__ is not object.__eq__):
            return equal
    except Exception:  # noqa: BLE001, S110 - fall back to the text
        pass
    return _ADDRESS.sub("", repr(a)) == _ADDRESS.sub("", repr(b))
