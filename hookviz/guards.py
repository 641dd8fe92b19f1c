"""What every public entry point shares to keep its promise: refuse a bad argument at once, leave the model as found.

- :func:`check_int` / :func:`check_number`: an argument that must be a whole number / a number, refused with a
  message that names the argument and the fix, in the learner's language (``1.7``, ``"2"`` and ``True`` are never
  silently turned into ``1``, ``2`` and ``1``); :func:`check_seed`: a whole number torch's generator takes;
- :func:`check_flag`, :func:`check_str`, :func:`check_strings`: ``True`` / ``False``, a string, strings;
- :func:`check_png`: the bytes of a PNG picture;
- :func:`check_array`: numbers in an array (a numpy array, a tensor, a list of numbers), as a numpy array;
- :func:`check_module`: a model (an ``nn.Module`` instance: a class or a state dict is refused with what to do);
- :func:`check_path`: a file or folder path (a ``str`` or a path-like) that exists, when it must;
- :func:`run_mode`: run a model in train or eval mode, then put **every** submodule's own mode back;
- :func:`run_model`: run a model on what the user gave; an error inside it is raised again naming the argument and
  the layer (torch's own message alone names neither).

A bottom layer: it imports nothing from hookviz but :mod:`hookviz.i18n`, so that the helpers of every layer (the
search, the tiny Llama helpers, the releases table, the widgets) use the same checks. Each message is marked with
:func:`~hookviz.i18n.N_` (the catalogue has it) and shown through :func:`~hookviz.i18n.join_notes` with its fix.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from hookviz.i18n import N_, join_notes, tr

__all__ = [
    "check_array", "check_flag", "check_int", "check_module", "check_number", "check_path", "check_png", "check_seed",
    "check_str", "check_strings", "describe_value", "failing_layer", "run_mode", "run_model", "shown", "shown_array",
]

#: torch's random generators take seeds below this (``torch.manual_seed(2**63)`` overflows).
SEED_LIMIT = 2**63


def _with_fix(message: str, fix: str) -> str:
    """``message`` and its ``fix`` in the learner's language, joined with the language's separator."""
    return join_notes([message, fix] if fix else [message])


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` for a message, cut to ``limit`` characters (a pasted 20,000-character string stays short)."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not hide the refusal it is part of
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_int(value: Any, name: str, *, minimum: int | None = None, maximum: int | None = None, fix: str = "") -> int:
    """``value`` as an ``int`` when it is a whole number (an ``int`` or a numpy/torch integer), else a clear error.

    ``1.7``, ``"2"`` and ``True`` are refused rather than silently turned into ``1``, ``2`` and ``1``;
    with ``minimum`` (``maximum``), a smaller (larger) number is refused too. The message names the argument and
    the fix.
    """
    if isinstance(value, Tensor) and value.numel() == 1 and not value.is_floating_point() and not value.is_complex():
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(_with_fix(N_(f"{name} must be a whole number (an int), not {shown(value)}"), fix))
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(_with_fix(N_(f"{name} must be at least {minimum}, not {value}"), fix))
    if maximum is not None and value > maximum:
        raise ValueError(_with_fix(N_(f"{name} must be at most {maximum:,}, not {value:,}"), fix))
    return value


def check_seed(value: Any, name: str = "seed", *, fix: str = "") -> int:
    """``value`` as a seed for torch's random generator: a whole number from 0 to ``2**63 - 1``."""
    seed = check_int(value, name, minimum=0, fix=fix)
    if seed >= SEED_LIMIT:
        raise ValueError(_with_fix(N_(f"{name} must be below 2**63 (what torch's random generator takes), not {seed}"),
                                   fix))
    return seed


def check_number(value: Any, name: str, *, minimum: float | None = None, above: float | None = None,
                 maximum: float | None = None, finite: bool = True, fix: str = "") -> float:
    """``value`` as a ``float`` when it is a finite real number (an int, a float, a numpy/torch scalar), else a
    clear error; with ``minimum`` a smaller number is refused, with ``above`` that number and smaller ones.
    ``"0.5"`` and ``True`` are refused; with ``finite=False`` NaN and the infinities are taken (and not compared
    with ``minimum``, ``above``, ``maximum``)."""
    if isinstance(value, Tensor) and value.numel() == 1 and not value.is_complex():
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(_with_fix(N_(f"{name} must be a number, not {shown(value)}"), fix))
    value = float(value)
    if not math.isfinite(value):
        if not finite:
            return value
        raise ValueError(_with_fix(N_(f"{name} must be a finite number, not {value!r}"), fix))
    if minimum is not None and value < minimum:
        raise ValueError(_with_fix(N_(f"{name} must be at least {minimum:g}, not {value:g}"), fix))
    if above is not None and value <= above:
        raise ValueError(_with_fix(N_(f"{name} must be above {above:g}, not {value:g}"), fix))
    if maximum is not None and value > maximum:
        raise ValueError(_with_fix(N_(f"{name} must be at most {maximum:g}, not {value:g}"), fix))
    return value


def check_array(value: Any, name: str, *, ndim: int | tuple[int, ...] | None = None, fix: str = "") -> np.ndarray:
    """``value`` as a numpy array of real numbers: a numpy array, a tensor (detached, on the CPU; float16 and
    bfloat16 become float32) or a list of numbers. A string, ``None``, a complex array, an array of objects and a
    tensor with no data (on the ``meta`` device) are refused; with ``ndim``, an array of another number of
    dimensions too (``ValueError``, naming its shape)."""
    if isinstance(value, Tensor):
        if value.is_meta:
            raise ValueError(_with_fix(N_(f"{name} is a tensor on the meta device: it has no values to read"), fix))
        if value.is_complex():
            raise TypeError(_with_fix(N_(f"{name} must hold real numbers, not complex ({value.dtype})"), fix))
        value = value.detach()
        if value.dtype in (torch.float16, torch.bfloat16):
            value = value.float()
        array = value.cpu().numpy()
    elif value is None or isinstance(value, (str, bytes, dict)):
        raise TypeError(_with_fix(N_(f"{name} must be an array of numbers, not {shown(value)}"), fix))
    else:
        try:
            array = np.asarray(value)
        except (ValueError, TypeError) as error:  # a ragged list
            raise ValueError(_with_fix(N_(f"{name} must be an array of numbers: {error}"), fix)) from None
    if array.dtype.kind == "c":
        raise TypeError(_with_fix(N_(f"{name} must hold real numbers, not complex ({array.dtype})"), fix))
    if array.dtype.kind not in "biuf":
        raise TypeError(_with_fix(N_(f"{name} must be an array of numbers, not {shown(value)}"), fix))
    dims = (ndim,) if isinstance(ndim, int) else ndim
    if dims is not None and array.ndim not in dims:
        wanted = " or ".join(f"{d}-D" for d in dims)
        raise ValueError(_with_fix(N_(f"{name} must be a {wanted} array, not of shape {tuple(array.shape)}"), fix))
    return array


def check_flag(value: Any, name: str, *, fix: str = "") -> bool:
    """``value`` as a ``bool`` when it is ``True`` or ``False`` (a numpy bool too); ``"no"``, ``0`` and ``None`` are
    refused (``"False"`` is a true value in Python: taking it would do the opposite of what was asked)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(_with_fix(N_(f"{name} must be True or False, not {shown(value)}"), fix))


def check_str(value: Any, name: str, *, empty: bool = True, fix: str = "") -> str:
    """``value`` when it is a string, else a clear ``TypeError`` (bytes, a number, a list of strings, ``None``);
    with ``empty=False`` a string of nothing but white space is refused too (``ValueError``)."""
    if not isinstance(value, str):
        raise TypeError(_with_fix(N_(f"{name} must be a string, not {shown(value)}"), fix))
    if not empty and not value.strip():
        raise ValueError(_with_fix(N_(f"{name} is empty ({shown(value)})"), fix))
    return value


def check_strings(value: Any, name: str, *, fix: str = "") -> list[str]:
    """``value`` as a list of strings: a list, tuple, set or other collection of strings (a dict: its keys). A string
    on its own is refused (it would be read letter by letter), and so is an item that is not a string."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(_with_fix(N_(f"{name} must be a list of strings, not {shown(value)}"), fix))
    items = list(value)
    for item in items:
        if not isinstance(item, str):
            raise TypeError(_with_fix(N_(f"{name} must be a list of strings; it holds {shown(item)}"), fix))
    return items


#: The first bytes of every PNG file.
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def check_png(value: Any, name: str, *, fix: str = "") -> bytes:
    """``value`` as ``bytes`` when it is a PNG picture (``bytes`` or a ``bytearray`` that starts with the PNG
    signature), else a clear error: a ``TypeError`` for what is not bytes, a ``ValueError`` for other bytes."""
    if not isinstance(value, (bytes, bytearray)):
        raise TypeError(_with_fix(N_(f"{name} must be the bytes of a PNG picture, not {shown(value)}"), fix))
    if not value.startswith(PNG_SIGNATURE):
        raise ValueError(_with_fix(N_(f"{name} is not a PNG picture (its bytes start with {shown(bytes(value[:8]))})"),
                                   fix))
    return bytes(value)


def check_module(value: Any, name: str = "model", *, fix: str = "") -> nn.Module:
    """``value`` when it is a model (an ``nn.Module`` instance), else a ``TypeError`` that says what to do with what
    was given (a model class: make one; a state dict: load it into a model)."""
    if isinstance(value, nn.Module):
        return value
    if not fix and isinstance(value, type) and issubclass(value, nn.Module):
        fix = N_(f"{value.__name__} is a class: make a model first, e.g. {value.__name__}(...)")
    elif not fix and isinstance(value, dict):
        fix = N_("a dict of weights (a state dict) is not a model: make the model, then model.load_state_dict(...)")
    raise TypeError(_with_fix(N_(f"{name} must be a torch.nn.Module (a model or a layer), not {shown(value)}"), fix))


def check_path(value: Any, name: str, *, kind: str | None = None, fix: str = "") -> Path:
    """``value`` as a :class:`~pathlib.Path` (a ``str`` or a path-like; ``~`` is the home folder). ``kind="file"`` /
    ``"folder"``: it must exist and be one (``FileNotFoundError`` when it does not exist, ``ValueError`` when it
    is the other kind); ``None``: it need not exist, but must be a name the file system can hold."""
    text = os.fspath(value) if isinstance(value, (str, os.PathLike)) else None
    if not isinstance(text, str):
        raise TypeError(_with_fix(N_(f"{name} must be a path (a str or a pathlib.Path), not {shown(value)}"), fix))
    if not text.strip():
        raise ValueError(_with_fix(N_(f"{name} is empty ({shown(value)}): give a path"), fix))
    path = Path(value).expanduser()
    try:
        exists = path.exists()
        is_dir = path.is_dir()
    except OSError as error:  # a name too long for the file system, a character it refuses
        reason = error.strerror or (errno.errorcode.get(error.errno or 0, "") if error.errno else str(error))
        raise ValueError(_with_fix(N_(f"{name} {shown(str(value))} cannot be a path: {reason}"), fix)) from None
    if kind is None:
        return path
    if not exists:
        raise FileNotFoundError(_with_fix(N_(f"{name}: no {kind} {shown(str(path))}"), fix))
    if kind == "folder" and not is_dir:
        raise ValueError(_with_fix(N_(f"{name} must be a folder, and {shown(str(path))} is a file"), fix))
    if kind == "file" and is_dir:
        raise ValueError(_with_fix(N_(f"{name} must be a file, and {shown(str(path))} is a folder"), fix))
    return path


@contextlib.contextmanager
def run_mode(model: nn.Module, training: bool) -> Iterator[None]:
    """Run ``model`` in train or eval mode, then put **every** submodule's own mode back.

    ``model.train(was_training)`` would not do: a model that is training with some parts frozen in
    eval mode (BatchNorm layers of a fine-tuned backbone, say) would come back with those parts
    training. cuDNN's RNN kernels refuse backward in eval mode, so while an ``nn.RNNBase`` (LSTM, GRU,
    RNN) runs on a GPU in eval mode here, cuDNN is switched off (PyTorch's own kernels are used).
    """
    check_module(model, "model")
    training = check_flag(training, "training", fix=N_("True runs the model in train mode, False in eval mode"))
    modes = [(module, module.training) for module in model.modules()]
    recurrent_on_gpu = not training and any(
        isinstance(m, nn.RNNBase) and any(p.is_cuda for p in m.parameters()) for m, _ in modes
    )
    cudnn = torch.backends.cudnn.enabled
    model.train(training)
    try:
        if recurrent_on_gpu:
            torch.backends.cudnn.enabled = False  # only this flag: benchmark/deterministic stay as they are
        yield
    finally:
        torch.backends.cudnn.enabled = cudnn
        for module, mode in modes:
            module.training = mode


def failing_layer(model: nn.Module, exc: BaseException) -> str | None:
    """The qualified name of the innermost submodule of ``model`` whose code was running when ``exc`` was raised."""
    names = {id(m): (n or "<root>") for n, m in model.named_modules(remove_duplicate=False)}
    found = None
    tb = exc.__traceback__
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if isinstance(owner, nn.Module) and id(owner) in names:
            found = names[id(owner)]
        tb = tb.tb_next
    return found


def describe_value(value: Any) -> str:
    """A short description of a model input: ``tensor (8, 1, 8, 8) float32``, ``list of 3``..."""
    if isinstance(value, Tensor):
        return f"tensor {tuple(value.shape)} {str(value.dtype).removeprefix('torch.')}"
    if isinstance(value, (list, tuple, dict)):
        return f"{type(value).__name__} of {len(value)}"
    return type(value).__name__


def run_model(model: nn.Module, inputs: Any, who: str, arg: str = "inputs", **kwargs: Any) -> Any:
    """``model(inputs, **kwargs)``; an error inside the model is raised again naming who, the argument, the layer."""
    try:
        return model(inputs, **kwargs)
    except (RuntimeError, ValueError, TypeError, IndexError, AssertionError) as exc:
        layer = failing_layer(model, exc)
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        given, kind = describe_value(inputs), type(exc).__name__
        message = tr(
            f"{who}: {type(model).__name__} failed on {arg} ({given}) in layer {layer!r}: {kind}: {first_line}. "
            f"Pass {arg} the model accepts (first dimension = samples; the dtype and device of its weights)"
            if layer else
            f"{who}: {type(model).__name__} failed on {arg} ({given}): {kind}: {first_line}. "
            f"Pass {arg} the model accepts (first dimension = samples; the dtype and device of its weights)"
        )
        try:
            error = type(exc)(message)
        except Exception:  # an exception class with another signature
            error = RuntimeError(message)
        raise error from exc


def shown_array(value: Any) -> str:
    """What a wrong tensor-like argument is, for a message: a tensor's or an array's dtype and shape (their reprs run
    over many lines), anything else as :func:`shown` gives it."""
    if isinstance(value, Tensor):
        return f"a {str(value.dtype).removeprefix('torch.')} tensor of shape {tuple(value.shape)}"
    if isinstance(value, np.ndarray):
        return f"a {value.dtype} numpy array of shape {value.shape}"
    return shown(value)
