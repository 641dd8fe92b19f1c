"""One case, run and classified: ``clear``, ``sane``, ``raw``, ``wrong``, ``changed``, ``leak`` or ``hang``.

A :class:`Case` is one call a user might make (one input), with what a right outcome is:

- ``expect=REFUSE``: the input is wrong; only a clear refusal is right (accepting it is ``wrong``);
- ``expect=ACCEPT``: the input is valid (a ``str`` where a ``Path`` goes, ``np.int64(3)`` for 3); it must work and
  give the right answer (refusing it is ``wrong``);
- ``expect=EITHER``: a clear refusal or the right answer.

:func:`run_case` takes the probes of :mod:`reliability.probes` before the call, runs it under a timeout, checks
the answer, closes what the call returned (a widget, a monitor), then compares. The outcome, worst first:

``hang``    no answer within the case's timeout;
``changed`` the user's model (modes, parameters, buffers, ``requires_grad``, ``.grad``, hooks, config) or the process
            (grad mode, language, RNG where the case says so, another library's lazily installed hooks that no
            longer work) differs afterwards;
``leak``    widgets left open, threads left running, figures left open, hooks left attached, a model left claimed;
``raw``     an error that is not a deliberate refusal: raised from inside torch / transformers / traitlets / numpy /
            the standard library, or by hookviz code but not by a ``raise`` statement (an ``AttributeError`` of a bug),
            or a message that does not name the argument; also an error printed later (``Exception ignored in``,
            an exception in a background thread);
``wrong``   accepted but the answer is wrong (the case's check fails, an invalid input was taken, a valid one
            refused);
``clear``   refused at once by a ``raise`` in hookviz (or by Python's own argument binding) with a message that names
            the argument;
``sane``    accepted, and the answer is right.
"""

from __future__ import annotations

import contextlib
import gc
import linecache
import os
import re
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import hookviz
from reliability.probes import CHANGED, LEAK, ModelProbe, TensorProbe, WorldProbe

CLEAR, SANE, RAW, WRONG, HANG = "clear", "sane", "raw", "wrong", "hang"
OUTCOMES = (CLEAR, SANE, RAW, WRONG, CHANGED, LEAK, HANG)
GOOD = (CLEAR, SANE)
REFUSE, ACCEPT, EITHER = "refuse", "accept", "either"

HOOKVIZ_DIR = os.path.dirname(os.path.abspath(hookviz.__file__))
HARNESS_DIR = os.path.dirname(os.path.abspath(__file__))
TESTS_DIR = os.path.dirname(HARNESS_DIR)
#: Exception types a deliberate refusal may have (besides any exception class hookviz defines).
REFUSAL_TYPES = (TypeError, ValueError, LookupError, RuntimeError, OSError, NotImplementedError, AssertionError)
#: Exception types that are never a deliberate refusal, wherever they come from.
BUG_TYPES = (AttributeError, NameError, ZeroDivisionError, RecursionError, UnboundLocalError, SystemError)


#: Whether :func:`frozen` is in force (``gc.get_freeze_count()`` walks the whole frozen set: too slow to ask).
FROZEN = False


@contextlib.contextmanager
def frozen() -> Iterator[None]:
    """Run many cases quickly: each case collects garbage several times (to see what it left behind), which with
    torch and transformers loaded takes a third of a second; frozen objects are not looked at. Undone on exit."""
    global FROZEN
    gc.collect()
    gc.freeze()
    FROZEN = True
    try:
        yield
    finally:
        FROZEN = False
        gc.unfreeze()


class Hang(BaseException):  # noqa: N818 - not an error of the code under test: the harness's timeout
    """Raised into the call when its time is up (a BaseException, so that ``except Exception`` cannot swallow it)."""


class Ctx(SimpleNamespace):
    """What a case's ``setup`` made: ``models`` and ``tensors`` are probed; anything else is the case's own."""

    models: list
    tensors: list


@dataclass
class Case:
    """One input to one public entry point, and what a right outcome is."""

    id: str
    entry: str
    call: Callable[[Ctx], Any]
    setup: Callable[[], Ctx] | None = None
    expect: str = EITHER
    names: tuple[str, ...] = ()  # words a refusal must contain (the argument); empty: any clear refusal
    check: Callable[[Any, Ctx], str | None] | None = None  # on an answer: None when right, else what is wrong
    accept_error: Callable[[BaseException, Ctx], bool] | None = None  # an error that is the right outcome
    after: Callable[[Ctx], str | None] | None = None  # after the call: None, or how the model no longer works
    cleanup: Callable[[Any, Ctx], None] | None = None  # stop what the answer runs (a monitor) before the probes
    mutates: frozenset[str] = frozenset()  # what the call may change on purpose: params, grads, hooks, modes
    keeps_rng: bool = False  # the global RNG must be left as found
    timeout: float = 20.0
    new: bool = True  # a new input (not one of an earlier review's)


@dataclass
class Result:
    """What :func:`run_case` saw."""

    outcome: str
    detail: str
    problems: list[tuple[str, str]] = field(default_factory=list)


# --------------------------------------------------------------------------- timeout


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`Hang` into the block after ``seconds`` (main thread: a timer signal)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield  # no timer outside the main thread: the case then runs unbounded
        return

    def ring(signum: int, frame: Any) -> None:
        raise Hang(f"no answer within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --------------------------------------------------------------------------- errors printed later


@contextlib.contextmanager
def later_errors() -> Iterator[list[str]]:
    """Collect errors Python would print later: ``Exception ignored in ...`` and exceptions in threads."""
    found: list[str] = []
    old_unraisable, old_thread = sys.unraisablehook, threading.excepthook

    def unraisable(info: Any) -> None:
        if info.exc_type is not None and not issubclass(info.exc_type, Hang):
            found.append(f"Exception ignored in {info.object!r}: {info.exc_type.__name__}: {info.exc_value}")

    def in_thread(args: Any) -> None:
        if not issubclass(args.exc_type, Hang):
            found.append(f"exception in thread {args.thread.name if args.thread else '?'}: "
                         f"{args.exc_type.__name__}: {args.exc_value}")

    sys.unraisablehook, threading.excepthook = unraisable, in_thread
    try:
        yield found
    finally:
        gc.collect()
        sys.unraisablehook, threading.excepthook = old_unraisable, old_thread


# --------------------------------------------------------------------------- was it a deliberate refusal?


def _innermost(error: BaseException) -> traceback.FrameSummary | None:
    frames = traceback.extract_tb(error.__traceback__)
    return frames[-1] if frames else None


def origin(error: BaseException) -> str:
    """``hookviz`` (a ``raise`` statement in hookviz), ``binding`` (Python refused the call's arguments at the call
    site), ``hookviz-bug`` (hookviz code, but not a ``raise``: an operation failed) or the library it came from."""
    frame = _innermost(error)
    if frame is None:
        return "unknown"
    path = os.path.abspath(frame.filename)
    if path.startswith(HOOKVIZ_DIR + os.sep):
        line = (linecache.getline(frame.filename, frame.lineno or 0) or frame.line or "").strip()
        return "hookviz" if line.startswith("raise") else "hookviz-bug"
    if path.startswith(TESTS_DIR + os.sep):
        # the innermost frame is the case's own code: Python's binding of the arguments failed at the call
        # ("got an unexpected keyword argument", "takes 0 positional arguments") - or the case's own block raised
        return "binding" if isinstance(error, TypeError) else "caller"
    parts = path.split(os.sep)
    for library in ("torch", "transformers", "traitlets", "ipywidgets", "numpy", "matplotlib", "PIL", "rank_bm25",
                    "yaml", "safetensors", "huggingface_hub", "tokenizers"):
        if library in parts:
            return library
    return "python" if "python3" in path or "lib" in parts else path


def _message(error: BaseException) -> str:
    if isinstance(error, KeyError) and error.args:
        return str(error.args[0])
    return str(error)


def names_argument(error: BaseException, names: tuple[str, ...]) -> bool:
    """The message names one of ``names`` (a whole word, any case); with no names, any message will do."""
    message = _message(error)
    if not message.strip():
        return False
    if not names:
        return True
    return any(re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", message, re.IGNORECASE) for n in names)


def classify_error(error: BaseException, case: Case, ctx: Ctx) -> tuple[str, str]:
    """``(clear | raw | wrong, detail)`` for an error raised by the call."""
    kind = f"{type(error).__name__}: {_message(error).strip().splitlines()[0][:300] if _message(error).strip() else ''}"
    if case.accept_error is not None:
        try:
            if case.accept_error(error, ctx):
                return CLEAR, f"the right error: {kind}"
        except Exception as exc:  # noqa: BLE001 - a broken predicate reads as "not the right error"
            return RAW, f"{kind} (and accept_error failed: {exc!r})"
    where = origin(error)
    hookviz_class = type(error).__module__.startswith("hookviz")
    deliberate = where in ("hookviz", "binding") and not isinstance(error, BUG_TYPES)
    deliberate = deliberate and (hookviz_class or isinstance(error, REFUSAL_TYPES))
    if not deliberate:
        frame = _innermost(error)
        place = f"{os.path.basename(frame.filename)}:{frame.lineno}" if frame else "?"
        return RAW, f"raw {kind} (from {where}, {place})"
    if not names_argument(error, case.names):
        return RAW, f"{kind} (does not name {' / '.join(case.names)})"
    if case.expect == ACCEPT:
        return WRONG, f"a valid input was refused: {kind}"
    return CLEAR, kind


# --------------------------------------------------------------------------- running one case


def close_answer(value: Any, depth: int = 0) -> None:
    """Close what the call returned and the user would close: widgets, monitors (stopped first)."""
    if depth > 2 or value is None:
        return
    if isinstance(value, (list, tuple)):
        for item in value[:20]:
            close_answer(item, depth + 1)
        return
    state = getattr(value, "stop", None)
    if callable(state) and hasattr(value, "wait"):
        with contextlib.suppress(Exception):
            value.stop()
            value.wait(30)
    close = getattr(value, "close", None)
    if callable(close) and not isinstance(value, type):
        with contextlib.suppress(Exception):
            close()


def run_case(case: Case) -> Result:
    """Run ``case`` between the probes; return its outcome (see the module docstring for the order)."""
    world = WorldProbe.take(rng=case.keeps_rng)
    problems: list[tuple[str, str]] = []
    result: Any = None
    error: BaseException | None = None
    verdict: tuple[str, str] | None = None
    ctx = Ctx(models=[], tensors=[])
    with later_errors() as printed:
        try:
            with time_limit(case.timeout):
                made = case.setup() if case.setup is not None else None
                if made is not None:
                    ctx = made
                    ctx.models = list(getattr(ctx, "models", []))
                    ctx.tensors = list(getattr(ctx, "tensors", []))
        except Hang:
            return Result(HANG, f"setup took longer than {case.timeout:g} s")
        if case.keeps_rng:  # setup may draw random numbers: the call is what must leave the RNG alone
            world.rng = __import__("torch").random.get_rng_state()
        models = [ModelProbe.take(m, f"model{i}" if i else "model") for i, m in enumerate(ctx.models)]
        tensors = [TensorProbe.take(f"input{i}", t) for i, t in enumerate(ctx.tensors)]
        try:
            with time_limit(case.timeout):
                try:
                    result = case.call(ctx)
                except Hang:
                    raise
                except BaseException as exc:  # noqa: BLE001 - SystemExit / KeyboardInterrupt are outcomes too
                    error = exc
                if error is None and case.check is not None:
                    try:
                        wrong = case.check(result, ctx)
                    except Hang:
                        raise
                    except Exception as exc:  # noqa: BLE001
                        wrong = f"the answer could not be checked: {type(exc).__name__}: {exc}"
                    if wrong:
                        verdict = (WRONG, str(wrong))
        except Hang as exc:
            verdict = (HANG, str(exc))
        refused = classify_error(error, case, ctx) if error is not None and verdict is None else None
        try:
            with time_limit(60):
                if case.cleanup is not None:
                    case.cleanup(result, ctx)
                close_answer(result)
        except Hang:
            problems.append((LEAK, "cleanup did not finish within 60 s"))
        except Exception as exc:  # noqa: BLE001
            problems.append((LEAK, f"cleanup failed: {type(exc).__name__}: {exc}"))
        result = error = None
        mutates = case.mutates
        for model_probe in models:
            problems += model_probe.diff(
                params="params" not in mutates, grads="grads" not in mutates, hooks="hooks" not in mutates,
                modes="modes" not in mutates,
            )
        for tensor_probe in tensors:
            problems += tensor_probe.diff(values="inputs" not in mutates, grads="grads" not in mutates)
        if case.after is not None and (verdict is None or verdict[0] != HANG):
            try:
                with time_limit(case.timeout):
                    broken = case.after(ctx)
            except Hang:
                broken = "the after-check took too long"
            except Exception as exc:  # noqa: BLE001
                broken = f"{type(exc).__name__}: {exc}"
            if broken:
                problems.append((CHANGED, f"afterwards: {broken}"))
        # nothing of the case may stay referenced from here: what it made must be collectable, to see what it left
        models = tensors = made = model_probe = tensor_probe = ctx = None  # noqa: F841
        problems += world.diff()
        world.cleanup()
        if FROZEN:  # the caller froze what existed (see frozen()): what lives on after a case is a cache,
            gc.freeze()  # frozen too, so that the next case's collections look at that case's objects only
    problems += [(RAW, text) for text in printed]
    if verdict is not None and verdict[0] == HANG:
        return Result(HANG, verdict[1], problems)
    for outcome in (CHANGED, LEAK):
        found = [text for kind, text in problems if kind == outcome]
        if found:
            return Result(outcome, "; ".join(found[:4]), problems)
    if refused is not None:
        outcome, detail = refused
        if outcome != RAW and printed:
            outcome, detail = RAW, f"{detail}; printed later: {printed[0]}"
        return Result(outcome, detail, problems)
    if printed:
        return Result(RAW, f"printed later: {printed[0]}", problems)
    if case.expect == REFUSE:
        why = f" ({verdict[1]})" if verdict else ""
        return Result(WRONG, f"an invalid input was accepted silently{why}", problems)
    if verdict is not None:
        return Result(*verdict, problems)
    return Result(SANE, "accepted; the answer is right", problems)
