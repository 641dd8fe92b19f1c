"""Checkers for the notebooks' exercises: one module per notebook (``hookviz.exercises.nb01`` ...).

A checker takes what the learner wrote (a hook function, a class, a number), exercises it on a small
case and either prints a short confirmation or raises :class:`ExerciseNotSolved` with a message that
says what is wrong and gives a hint. Checkers never print the solution.

**Soft checks** (on in the student copies that ``make student`` writes): after :func:`soft_checks`, a
top-level call to a ``check_*`` function in a notebook cell that raises :class:`ExerciseNotSolved`
prints ``✗ <hint>`` instead, so the cell ends without an error and "Run All" goes on past an
exercise the learner skipped. Any other exception still stops the cell. :func:`strict_checks` turns it
off again and brings back full tracebacks (``%xmode Context``). It works through an IPython AST
transformer, so it only affects cells run by IPython.

**The learner's own errors.** Every checker is wrapped in :func:`checker`: when the learner's code
raises inside a check (a typo, a hook with the wrong signature, ``append`` on a dict...), the check
raises :class:`ExerciseNotSolved` instead, naming the learner's function, the line of their cell that
failed and the error, with a hint for the common mistakes. So the course's ``%xmode Minimal`` (one-line
errors, good for stored outputs) never hides where the learner's code failed, and "Run All" in a
student copy is not stopped by a raw error in a check.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
import sys
import sysconfig
import textwrap
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from hookviz.i18n import N_, get_language, tr

__all__ = [
    "ExerciseNotSolved",
    "ReturnRecorder",
    "has_no_return",
    "call_learner_code",
    "checker",
    "describe_learner_error",
    "expect",
    "learner_result",
    "learner_tracebacks",
    "missing_return",
    "missing_return_message",
    "passed",
    "raised_in_learner_code",
    "wrap_feedback",
    "report_not_solved",
    "short_traceback",
    "short_tracebacks",
    "soft_checks",
    "soft_checks_enabled",
    "strict_checks",
]

#: The first character of the line a soft check prints for an exercise that is not solved yet.
NOT_SOLVED_MARK = "✗"
_NOT_SOLVED_YET = "not solved yet: replace `raise NotImplementedError` in the exercise cell with your code"


class ExerciseNotSolved(AssertionError):
    """Raised by a check cell when the exercise above it is not solved yet (or not solved right).

    The message is shown in the learner's language (:func:`hookviz.i18n.tr`; English where no
    translation exists).
    """

    def __init__(self, message: str = "", *args: Any) -> None:
        super().__init__(tr(message) if isinstance(message, str) else message, *args)


def expect(condition: bool, message: str) -> None:
    """Raise :class:`ExerciseNotSolved` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise ExerciseNotSolved(message)


def passed(what: str) -> None:
    """Print the confirmation shown when a check succeeds."""
    print(f"✓ {tr(what)}")


def call_learner_code(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call the learner's function, turning the stub's ``NotImplementedError`` into a friendly failure."""
    try:
        return fn(*args, **kwargs)
    except NotImplementedError as exc:
        raise ExerciseNotSolved(_NOT_SOLVED_YET) from exc


# --------------------------------------------------------------------------- a forgotten `return`

_NO_RETURN = N_("`{}` has no `return` statement, so calling it gives None")
_RETURNED_NONE = N_("`{}` returned None")
_ONLY_RETURN_MISSING = (
    N_("If your code already computes the right value, only the `return` is missing: a value a function computes "
    "but does not return is lost. End the function with `return <that value>`.")
)


def _returns_a_value(fn: Any) -> bool | None:
    """Whether ``fn``'s own body has a ``return <value>`` (nested functions and classes not counted).

    ``None`` when it cannot be told: a lambda (it always returns its expression), a builtin, or code
    whose source is not available.
    """
    fn = inspect.unwrap(getattr(fn, "__func__", fn))
    if not inspect.isfunction(fn) or fn.__name__ == "<lambda>":
        return None
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    definition = tree.body[0] if tree.body else None
    if not isinstance(definition, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    pending: list[ast.AST] = list(definition.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(node, ast.Return) and node.value is not None:
            if not (isinstance(node.value, ast.Constant) and node.value.value is None):
                return True
        pending.extend(ast.iter_child_nodes(node))
    return False


def has_no_return(fn: Any) -> bool:
    """Whether the learner's ``fn`` certainly has no ``return <value>`` in its own body (so it gives None)."""
    return _returns_a_value(fn) is False


def missing_return_message(fn: Any, needed: str) -> str:
    """The hint for a learner's ``fn`` that gave None where ``needed`` says what it should have given.

    It names the slip (no ``return`` statement at all, or one path that returns None) before the
    exercise's own requirement, so a learner whose computation is right is not sent to redo it.
    """
    name = getattr(fn, "__name__", "") or "your function"
    if name == "<lambda>":
        name = "your lambda"
    returns = _returns_a_value(fn)
    what = tr(_NO_RETURN).format(name) if returns is False else tr(_RETURNED_NONE).format(name)
    if get_language() == "zh":  # full-width punctuation between the translated parts
        return f"{what}：{tr(needed)}。{tr(_ONLY_RETURN_MISSING)}"
    return f"{what}: {tr(needed)}. {tr(_ONLY_RETURN_MISSING)}"


def missing_return(fn: Any, result: Any, needed: str) -> None:
    """Raise :class:`ExerciseNotSolved` naming a forgotten ``return`` when the learner's ``fn`` gave None.

    ``needed`` says what ``fn`` should give back (``"return the dict of shapes"``); nothing happens when
    ``result`` is not None.
    """
    if result is None:
        raise ExerciseNotSolved(missing_return_message(fn, needed))


def learner_result(fn: Callable[..., Any], needed: str, *args: Any, **kwargs: Any) -> Any:
    """Call the learner's ``fn`` (like :func:`call_learner_code`) for a value that must not be None.

    A None result raises :class:`ExerciseNotSolved` that names the missing ``return``
    (:func:`missing_return_message`); ``needed`` says what ``fn`` should give back.
    """
    result = call_learner_code(fn, *args, **kwargs)
    missing_return(fn, result, needed)
    return result


class ReturnRecorder:
    """Wraps a learner's hook, passing every call through and recording what it returned.

    A checker registers the recorder in place of the hook; when the hook had to change something but
    the change never arrived, :attr:`only_none` tells a forgotten ``return`` from a wrong computation.
    """

    def __init__(self, hook: Callable[..., Any]) -> None:
        self.hook = hook
        self.results: list[Any] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        result = self.hook(*args, **kwargs)
        self.results.append(result)
        return result

    @property
    def only_none(self) -> bool:
        """Whether the hook ran and every call returned None."""
        return bool(self.results) and all(result is None for result in self.results)

    def expect_returned(self, needed: str) -> None:
        """Raise the missing-``return`` hint when the hook ran and only ever returned None."""
        if self.only_none:
            raise ExerciseNotSolved(missing_return_message(self.hook, needed))


# --------------------------------------------------------------------------- the learner's own errors

#: Folders whose frames are never the learner's: hookviz itself, installed packages, the standard library.
_NOT_LEARNER_DIRS = tuple(
    str(Path(folder).resolve())
    for folder in (
        Path(__file__).resolve().parent.parent,
        sysconfig.get_paths()["stdlib"],
        sysconfig.get_paths()["purelib"],
    )
)

#: Common mistakes, recognised by their error message: (pattern, hint); a hint's ``{}`` gets the match's group.
_HINTS: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"must be Tensor, not (tuple|list|dict|torch\.Size|Size|int|float|NoneType|str)"),
        N_(
            "a module received a {} where it wanted a tensor. A forward hook that returns something replaces the "
            "module's output (and a pre-hook's return value replaces its input): a hook that only records must "
            "return None."
        ),
    ),
    (
        re.compile(r"'dict' object has no attribute 'append'"),
        N_("`append` is a list method: a dict is filled with `store[key] = value`."),
    ),
    (
        re.compile(r"'list' object has no attribute '(update|items|keys|values|get)'|list indices must be integers"),
        N_("this is a list, not a dict: a list is filled with `.append(value)` and read by position."),
    ),
    (
        re.compile(r"Boolean value of Tensor with more than one (value|element) is ambiguous"),
        N_("Python's `if`, `and`/`or`, `min`, `max` or `sorted` on a tensor with several values needs one "
        "True/False: use tensor operations instead (`t.min()`, `torch.maximum(a, b)`, `(t > 0).any()`, `.all()`)."),
    ),
    (
        re.compile(r"takes (\d+) positional arguments? but (\d+) (were|was) given|missing \d+ required positional"),
        N_("the function's parameters do not match how it is called. PyTorch calls each hook kind with fixed "
        "arguments (a tensor hook `hook(grad)`, a forward hook `hook(module, args, output)`, a forward pre-hook "
        "`hook(module, args)`, a full backward hook `hook(module, grad_input, grad_output)`): compare your `def` "
        "line with the exercise text."),
    ),
    (
        re.compile(r"'tuple' object has no attribute"),
        N_(
            "that value is a tuple: a hook's `args` (and `grad_input`/`grad_output`) are tuples; the tensor is "
            "`args[0]`."
        ),
    ),
    (
        re.compile(r"'(torch\.Size|Size)' object has no attribute"),
        N_("that value is a shape (`torch.Size`), not a tensor: keep the tensor itself where a tensor is needed."),
    ),
    (
        re.compile(r"Can't call numpy\(\) on Tensor that requires grad"),
        N_("a tensor that is part of the autograd graph cannot become a NumPy array: `.detach()` it first."),
    ),
    (
        re.compile(
            r"modified by an inplace operation|leaf Variable that requires grad is being used in an in-place|"
            r"is a view and is being modified in-place|unsupported operation: more than one element of the written-to"
        ),
        N_("an in-place change (`*=`, `+=`, `.clamp_()`, `x[...] = ...`) hit a tensor that autograd still needs: "
        "build a new tensor and return it."),
    ),
    (
        re.compile(
            r"only one element tensors can be converted|a Tensor with \d+ elements cannot be converted to Scalar"
        ),
        N_("`.item()` and `float(...)` take a single value: reduce the tensor first (`.norm()`, `.sum()`, `.max()`)."),
    ),
    (
        re.compile(r"hook '.*' has changed the (size|type) of value"),
        N_("a gradient returned by a hook must keep the shape and dtype of the one it received."),
    ),
    (
        re.compile(r"cannot register a hook on a tensor that doesn't require gradient"),
        N_("a hook can only be registered on a tensor that requires grad, and this one does not: it was created "
        "without `requires_grad=True`, computed under `torch.no_grad()`, `.detach()`ed, or it is a frozen "
        "parameter. Register the hook on a tensor that is part of the autograd graph (or call "
        "`.requires_grad_()` on a leaf tensor first)."),
    ),
    (
        re.compile(
            r"'NoneType' object (has no attribute|is not (subscriptable|iterable|callable))|"
            r"cannot unpack non-iterable NoneType"
        ),
        N_("something is None where a value was expected: a function (or a hook factory) without `return` gives "
        "None. Check that each function you wrote ends with `return ...`."),
    ),
    (
        re.compile(r"^name '(\w+)' is not defined"),
        N_(
            "`{}` is not defined where your function runs: a typo, or a name from another cell (the checker "
            "calls your function on models of its own; use the arguments it receives)."
        ),
    ),
]


def _is_cell(filename: str) -> bool:
    """True for the pseudo file name IPython gives a notebook cell."""
    return filename.startswith("<ipython-input-") or re.search(r"ipykernel_\d+[/\\]\d+\.py$", filename) is not None


def _is_learner_file(filename: str) -> bool:
    """True for code the learner wrote: a notebook cell, or any file outside hookviz, packages and stdlib."""
    if _is_cell(filename):
        return True
    if filename.startswith("<"):  # <string>, <frozen ...>: not a cell
        return False
    resolved = str(Path(filename).resolve())
    return not any(resolved.startswith(folder) for folder in _NOT_LEARNER_DIRS)


def _learner_frame(error: BaseException) -> traceback.FrameSummary | None:
    """The innermost frame of the learner's own code in ``error``'s traceback (where it failed), if any."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if _is_learner_file(frame.filename)]
    return frames[-1] if frames else None


def raised_in_learner_code(error: BaseException) -> bool:
    """Whether ``error`` was raised by the learner's own code (its innermost frame is theirs), not by a library."""
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and _is_learner_file(frames[-1].filename)


def _hint_for(error: BaseException) -> str:
    """A hint for a common mistake, recognised by the error's message, in the learner's language ('' when
    none fits)."""
    message = str(error)
    for pattern, hint in _HINTS:
        match = pattern.search(message)
        if match:
            return tr(hint.format(*match.groups()))
    return ""


def describe_learner_error(error: BaseException) -> str:
    """Say what went wrong and where: the error, the learner's function and cell line, and a hint.

    The learner's frame is the innermost one of the traceback whose file is not part of hookviz, an
    installed package (torch...) or the standard library: a notebook cell (``<ipython-input-...>`` or
    ``.../ipykernel_*/....py``) or a file of the learner's own. Every sentence is in the learner's
    language (:func:`~hookviz.i18n.tr`); the error itself (``NameError: name 'x' is not defined``) is
    quoted as Python printed it, so that it can be searched for.
    """
    what = f"{type(error).__name__}: {error}".strip().rstrip(":")
    frame = _learner_frame(error)
    if frame is None:
        text = tr(
            f"the check could not use what your code gave it ({what}). Compare what your function returns "
            "(and what your hook returns) with what the exercise asks for."
        )
    else:
        code, name, line, file = (frame.line or "").strip(), frame.name, frame.lineno, Path(frame.filename).name
        in_cell = _is_cell(frame.filename)
        if name != "<module>" and in_cell:
            where = tr(
                f"in `{name}`, line {line} of its cell: `{code}`" if code else f"in `{name}`, line {line} of its cell"
            )
        elif name != "<module>":
            where = tr(
                f"in `{name}`, line {line} of {file}: `{code}`" if code else f"in `{name}`, line {line} of {file}"
            )
        elif in_cell:
            where = tr(f"at line {line} of its cell: `{code}`" if code else f"at line {line} of its cell")
        else:
            where = tr(f"at line {line} of {file}: `{code}`" if code else f"at line {line} of {file}")
        text = tr(f"your code raised {what}") + "\n  " + where
    hint = _hint_for(error)
    return text + ("\n  " + tr(f"hint: {hint}") if hint else "")


_Check = TypeVar("_Check", bound=Callable[..., None])


def checker(check: _Check) -> _Check:
    """Decorate a ``check_*`` function: the learner's own errors become :class:`ExerciseNotSolved` hints.

    A stub's ``NotImplementedError`` says "not solved yet"; any other exception (raised by the learner's
    code, or by the check choking on what that code returned) becomes an ``ExerciseNotSolved`` whose
    message names the error, the learner's function and line (:func:`describe_learner_error`). So a
    check never stops "Run All" with a raw error, and ``%xmode Minimal`` never hides the location.
    """

    @functools.wraps(check)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        try:
            return check(*args, **kwargs)
        except ExerciseNotSolved:
            raise
        except NotImplementedError as exc:
            raise ExerciseNotSolved(_NOT_SOLVED_YET) from exc
        except Exception as exc:  # noqa: BLE001 - every learner mistake becomes a hint
            raise ExerciseNotSolved(describe_learner_error(exc)) from exc

    return wrapper  # type: ignore[return-value]


def learner_tracebacks(source: str) -> str:
    """Leave the course's ``%xmode Minimal`` out of one cell's source (student copies).

    The teacher notebooks use ``Minimal`` so that stored errors hold no file paths. A student copy shows
    errors as short tracebacks instead (:func:`short_tracebacks`, turned on by the cell the copy adds at
    its top, whose note says so): the ``%xmode`` line would only print an unexplained
    ``Exception reporting mode: ...`` line. A full-line comment right above it that talks about errors or
    tracebacks goes with it. Other lines are unchanged. (``scripts/make_student.py``'s ``learner_code``
    makes the same change; a test keeps the two equal.)
    """
    lines = source.split("\n")
    kept: list[str] = []
    for line in lines:
        if _XMODE_MINIMAL.match(line):
            if kept and kept[-1].lstrip().startswith("#") and _ABOUT_ERRORS.search(kept[-1]):
                kept.pop()
            continue
        kept.append(line)
    return "\n".join(kept).strip("\n") if len(kept) != len(lines) else source


_XMODE_MINIMAL = re.compile(r"^\s*%xmode\s+Minimal\s*$")
_ABOUT_ERRORS = re.compile(r"error|traceback|fail|报错|错误", re.IGNORECASE)


#: Feedback lines are wrapped here, at spaces: JupyterLab wraps a long stream line anywhere, even mid-word.
FEEDBACK_WIDTH = 96


# Chinese characters and full-width punctuation: each is two columns wide, and a line may break between any
# two of them (Chinese has no spaces), but never before closing punctuation.
_WIDE = "\u2e80-\u9fff\u3000-\u303f\uff00-\uffef"
_WIDE_CHAR = re.compile(f"[{_WIDE}]")
_WRAP_TOKEN = re.compile(f"[{_WIDE}]|[^\\s{_WIDE}]+|\\s+")
_NO_BREAK_BEFORE = set("，。、：；！？）》」』”’…")
_NO_BREAK_AFTER = set("（《「『“‘")


def _columns(text: str) -> int:
    """How many terminal columns ``text`` takes (a Chinese character takes two)."""
    return len(text) + len(_WIDE_CHAR.findall(text))


def _wrap_wide(line: str, width: int, indent: str) -> list[str]:
    """Break a line holding Chinese text by display width: between Chinese characters or at spaces,
    never inside an ASCII word or name, never before closing or after opening punctuation."""
    lines: list[str] = []
    current = ""
    for token in _WRAP_TOKEN.findall(line):
        fits = _columns(current.rstrip() + token) <= width
        glued = token in _NO_BREAK_BEFORE or current.rstrip()[-1:] in _NO_BREAK_AFTER
        if fits or not current.strip() or token.isspace() or glued:
            current += token
            continue
        lines.append(current.rstrip())
        current = indent + "  " + token
    lines.append(current.rstrip())
    return lines


def wrap_feedback(text: str, width: int = FEEDBACK_WIDTH) -> str:
    """``text`` with every line longer than ``width`` columns broken at spaces (never inside a word or a
    name); continuation lines keep the line's indentation plus two spaces. A line with Chinese text is
    measured in display columns and may also break between two Chinese characters."""
    out: list[str] = []
    for line in text.split("\n"):
        indent = line[: len(line) - len(line.lstrip())]
        if _WIDE_CHAR.search(line):
            out.extend(_wrap_wide(line, width, indent) if _columns(line) > width else [line])
            continue
        out.extend(
            textwrap.wrap(
                line,
                width,
                subsequent_indent=indent + "  ",
                break_long_words=False,
                break_on_hyphens=False,
            )
            or [line]
        )
    return "\n".join(out)


def report_not_solved(error: ExerciseNotSolved) -> None:
    """Print the line a soft check shows instead of raising: ``✗`` and the checker's hint (wrapped at spaces)."""
    print(wrap_feedback(f"{NOT_SOLVED_MARK} {error}"))


# The statement a soft check wraps around a top-level `check_...(...)` call. `__import__` keeps it
# independent of the names the learner's notebook happens to define.
_SOFT_TEMPLATE = """
try:
    pass
except __import__("hookviz.exercises", fromlist=["_"]).ExerciseNotSolved as _hookviz_not_solved:
    __import__("hookviz.exercises", fromlist=["_"]).report_not_solved(_hookviz_not_solved)
"""


def _is_check_call(statement: ast.stmt) -> bool:
    """True for a top-level expression statement ``check_x(...)`` or ``module.check_x(...)``."""
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return False
    func = statement.value.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return name.startswith("check_")


class _SoftCheckTransformer(ast.NodeTransformer):
    """Wraps every top-level ``check_*(...)`` call of a cell in ``try/except ExerciseNotSolved``."""

    def visit_Module(self, node: ast.Module) -> ast.Module:
        body: list[ast.stmt] = []
        for statement in node.body:
            if _is_check_call(statement):
                wrapper = ast.parse(_SOFT_TEMPLATE).body[0]
                wrapper.body = [statement]
                body.append(ast.copy_location(wrapper, statement))
            else:
                body.append(statement)
        node.body = body
        return ast.fix_missing_locations(node)


def _shell() -> Any:
    """The running IPython shell, or None outside IPython."""
    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None else None


def _place_of(shell: Any, filename: str) -> str:
    """``Cell In[3]`` for a notebook cell (as IPython names it), else the file's name."""
    named = shell.compile.format_code_name(filename) if shell is not None and hasattr(shell, "compile") else None
    return " ".join(named) if named else Path(filename).name


def _library_of(filename: str) -> str:
    """The package a library frame belongs to (``torch``, ``hookviz``), or ``Python`` for the standard library."""
    parts = Path(filename).parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts and parts.index(marker) + 1 < len(parts):
            return parts[parts.index(marker) + 1].removesuffix(".py")
    if "hookviz" in parts:
        return "hookviz"
    return "Python"


def short_traceback(error: BaseException, shell: Any = None) -> list[str]:
    """The lines of a short traceback of ``error``: the learner's own frames with their code, library frames
    folded into one line each run (``… 7 frames inside torch …``), then ``Type: message``. The header and
    the folded lines are in the current language (:func:`hookviz.i18n.tr`); the frames and the error stay
    as Python prints them."""
    lines = [tr("Traceback (your code; frames inside libraries folded):")]
    folded: list[str] = []

    def fold() -> None:
        if folded:
            libraries = ", ".join(dict.fromkeys(folded))
            count = len(folded)
            text = tr(f"{count} frames inside {libraries}" if count > 1 else f"{count} frame inside {libraries}")
            lines.append(f"  … {text} …")
            folded.clear()

    for frame in traceback.extract_tb(error.__traceback__):
        if _is_learner_file(frame.filename):
            fold()
            where = f"in {frame.name}" if frame.name != "<module>" else ""
            lines.append(f"  {_place_of(shell, frame.filename)}, line {frame.lineno} {where}".rstrip())
            if frame.line:
                lines.append(f"    {frame.line.strip()}")
        elif len(lines) > 1 or _library_of(frame.filename) != "IPython":  # IPython's own call into the cell: left out
            folded.append(_library_of(frame.filename))
    fold()
    lines.append(f"{type(error).__name__}: {error}".rstrip().rstrip(":"))
    return lines


def _short_handler(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: int | None = None) -> list[str]:
    """IPython's custom exception handler: show :func:`short_traceback` as the cell's error."""
    stb = short_traceback(value, shell)
    shell._showtraceback(etype, value, stb)
    return stb


def short_tracebacks(on: bool = True) -> None:
    """Show errors as short tracebacks from the next cell on (``on=False``: IPython's own again).

    A short traceback keeps the lines of the learner's own cells that led to the error and folds the
    frames inside PyTorch and other libraries into one line, so a pitfall cell meant to fail shows a
    few lines, not fifty. Outside IPython it does nothing.
    """
    shell = _shell()
    if shell is None:
        return
    if on:
        shell.set_custom_exc((Exception,), _short_handler)
    else:
        shell.set_custom_exc((), None)


def soft_checks_enabled() -> bool:
    """Whether soft checks are on in the running IPython kernel."""
    shell = _shell()
    return shell is not None and any(isinstance(t, _SoftCheckTransformer) for t in shell.ast_transformers)


def _remove_soft_transformer(shell: Any) -> None:
    shell.ast_transformers[:] = [t for t in shell.ast_transformers if not isinstance(t, _SoftCheckTransformer)]


def strict_checks() -> None:
    """Turn soft checks off and show full tracebacks again, from the next cell on.

    A check that is not solved raises :class:`ExerciseNotSolved` again, and every error shows its
    traceback with the lines around each frame (``%xmode Context``, IPython's default), undoing the
    one-line ``%xmode Minimal`` the notebooks set for their stored outputs.
    """
    shell = _shell()
    if shell is not None:
        _remove_soft_transformer(shell)
        short_tracebacks(False)
        shell.run_line_magic("xmode", "Context")


def soft_checks() -> bool:
    """Make unsolved check cells print ``✗ <hint>`` instead of stopping "Run All"; return whether it is on.

    Safe to call again (it is never installed twice). Outside IPython (a plain script) there are no
    cells to soften: it returns ``False`` and checks keep raising.
    """
    shell = _shell()
    if shell is None:
        return False
    _remove_soft_transformer(shell)
    shell.ast_transformers.append(_SoftCheckTransformer())
    return True
