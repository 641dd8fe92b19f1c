"""hookviz.releases: minor, in_range, expected, show, sections_that_differ, differ and expect_error."""

from __future__ import annotations

import contextlib
import io
import re
import unicodedata
from typing import Any

import torch

from hookviz import releases
from reliability.harness import ACCEPT, EITHER, REFUSE, Case, Ctx
from reliability.inputs import Arg, Spec, Value, fullwidth

KEY = "backward-pre-hook-doc-bare-tensor"  # False up to 2.9, True from 2.10
VERSION_WORDS = ("release", "torch")


def _parse(version: Any) -> tuple[int, int] | None:
    """What a careful reader takes ``version`` to mean: ``(major, minor)``, or ``None`` when it is not one."""
    if version is None:
        version = torch.__version__
    if isinstance(version, float):
        version = repr(version)
    if not isinstance(version, str):
        return None
    match = re.match(r"^\s*v?(\d+)\.(\d+)(?:[.+]|$|\s)", unicodedata.normalize("NFKC", version))
    return (int(match[1]), int(match[2])) if match else None


def _check_minor(answer: Any, args: dict[str, Any]) -> str | None:
    if not (isinstance(answer, tuple) and len(answer) == 2 and all(type(x) is int and x >= 0 for x in answer)):
        return f"not a (major, minor) pair of whole numbers: {answer!r}"
    want = _parse(args.get("version"))
    if want is not None and answer != want:
        return f"{args.get('version')!r} read as {answer}, not {want}"
    return None


def _in_range(version: Any) -> bool | None:
    parsed = _parse(version)
    if parsed is None:
        return None
    return _parse(releases.OLDEST) <= parsed <= _parse(releases.NEWEST)


def _check_in_range(answer: Any, args: dict[str, Any]) -> str | None:
    if not isinstance(answer, bool):
        return f"not a bool: {answer!r}"
    want = _in_range(args.get("version"))
    if want is not None and answer != want:
        return f"in_range({args.get('version')!r}) is {answer}, not {want}"
    return None


def _value_for(key: str, version: Any) -> Any:
    parsed = _parse(version)
    rows = releases.DIFFERENCES[key].rows
    found = rows[0]
    for row in rows:
        if parsed is not None and parsed >= _parse(row[0]):
            found = row
    return found[2]


def _check_expected(answer: Any, args: dict[str, Any]) -> str | None:
    key = unicodedata.normalize("NFKC", args["key"]).strip() if isinstance(args.get("key"), str) else None
    if key not in releases.DIFFERENCES:
        return None
    want = _value_for(key, args.get("version"))
    return None if answer == want else f"expected({key!r}, {args.get('version')!r}) is {answer!r}, not {want!r}"


def _check_sections(answer: Any, args: dict[str, Any]) -> str | None:
    if not isinstance(answer, list) or not all(isinstance(d, releases.Difference) for d in answer):
        return f"not a list of Difference: {answer!r}"
    version, reference = args.get("version"), args.get("reference", releases.PINNED)
    want = [d.key for d in releases.DIFFERENCES.values() if _value_for(d.key, version) != _value_for(d.key, reference)]
    got = [d.key for d in answer]
    return None if got == want else f"sections {got}, not {want}"


def _show(key: Any) -> tuple[Any, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        value = releases.show(key)
    return value, out.getvalue()


def _check_show(answer: Any, args: dict[str, Any]) -> str | None:
    value, printed = answer
    key = args["key"]
    if value != releases.expected(KEY) or releases.DIFFERENCES[KEY].table() not in printed:
        return f"show({key!r}) returned {value!r} / printed {printed[:80]!r}"
    return None


def _version_arg(**kw: Any) -> Arg:
    return Arg("version", "version", "2.10", positional=True, none_ok=True, default=None, aliases=VERSION_WORDS, **kw)


def specs() -> list[Spec]:
    outside = [Value("outside-range-1.0", "1.0", REFUSE), Value("outside-range-3.0", "3.0", REFUSE)]
    return [
        Spec("hookviz.releases.minor", releases.minor, [_version_arg()], check=_check_minor),
        Spec("hookviz.releases.in_range", releases.in_range, [_version_arg()], check=_check_in_range),
        Spec(
            "hookviz.releases.expected",
            releases.expected,
            [
                Arg("key", "choice", KEY, positional=True, aliases=("difference",)),
                Arg("version", "version", "2.10", none_ok=True, default=None, aliases=VERSION_WORDS,
                    skip=("padded", "v-prefix"), extra=outside),
            ],
            check=_check_expected,
        ),
        Spec(
            "hookviz.releases.show",
            lambda key: _show(key),
            [Arg("key", "choice", KEY, positional=True, aliases=("difference",), skip=("upper",))],
            check=_check_show,
            keywords=False,
            short="releases.show",
        ),
        Spec(
            "hookviz.releases.sections_that_differ",
            releases.sections_that_differ,
            [
                Arg("version", "version", "2.10", positional=True, none_ok=True, default=None, aliases=VERSION_WORDS,
                    skip=("padded", "v-prefix", "fullwidth"), extra=outside[:1]),
                Arg("reference", "version", "2.13", none_ok=True, default=releases.PINNED, aliases=VERSION_WORDS,
                    skip=("padded", "v-prefix", "fullwidth", "long-20000", "local", "np.float64", "cjk", "letters")),
            ],
            check=_check_sections,
        ),
    ]


# --------------------------------------------------------------------------- expect_error


def _block(kind: Any, fragment: Any, raises: BaseException | None, ran: list[bool]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        with releases.expect_error(kind, fragment):
            ran.append(True)
            if raises is not None:
                raise raises
    return out.getvalue()


def _expect_error(cid: str, kind: Any, fragment: Any, raises: BaseException | None, expect: str,
                  names: tuple[str, ...] = (), printed: str | tuple[str, ...] | None = None,
                  right_error: Any = None) -> Case:
    def setup() -> Ctx:
        return Ctx(models=[], tensors=[], ran=[])

    def call(ctx: Ctx) -> str:
        try:
            return _block(kind, fragment, raises, ctx.ran)
        except BaseException as error:
            if expect == REFUSE and ctx.ran:  # a refusal must come before the block runs
                raise RuntimeError(f"the block ran before the refusal {error!r}") from None
            raise

    def check(answer: Any, ctx: Ctx) -> str | None:
        if printed is not None and answer not in ((printed,) if isinstance(printed, str) else printed):
            return f"printed {answer!r}, not {printed!r}"
        return None

    def accept(error: BaseException, ctx: Ctx) -> bool:
        return bool(right_error(error))

    return Case(f"expect_error:{cid}", "hookviz.expect_error", call, setup, expect, names, check,
                accept if right_error is not None else None, keeps_rng=True)


def _lacks(fragment_words: tuple[str, ...]) -> Any:
    def right(error: BaseException) -> bool:
        return isinstance(error, AssertionError) and all(w in str(error) for w in fragment_words)

    return right


def expect_error_cases() -> list[Case]:
    bad = ValueError("a bad value")
    return [
        _expect_error("valid", ValueError, "bad", bad, ACCEPT, printed="ValueError: ...bad...\n"),
        _expect_error("kind=str", "ValueError", "bad", bad, REFUSE, ("kind",)),
        _expect_error("kind=instance", ValueError("x"), "bad", bad, REFUSE, ("kind",)),
        _expect_error("kind=None", None, "bad", bad, REFUSE, ("kind",)),
        _expect_error("kind=int-class", int, "bad", bad, REFUSE, ("kind",)),
        _expect_error("kind=list", [ValueError], "bad", bad, REFUSE, ("kind",)),
        _expect_error("kind=tuple", (KeyError, ValueError), "bad", bad, ACCEPT, printed="ValueError: ...bad...\n"),
        _expect_error("kind=Exception", Exception, "bad", bad, ACCEPT,
                      printed=("ValueError: ...bad...\n", "Exception: ...bad...\n")),
        _expect_error("fragment=None", ValueError, None, bad, REFUSE, ("fragment",)),
        _expect_error("fragment=int", ValueError, 3, bad, REFUSE, ("fragment",)),
        _expect_error("fragment=bytes", ValueError, b"bad", bad, REFUSE, ("fragment",)),
        _expect_error("fragment=empty", ValueError, "", bad, EITHER, ("fragment",)),
        _expect_error("fragment=fullwidth", ValueError, fullwidth("bad"), bad, EITHER,
                      right_error=_lacks((fullwidth("bad"),))),
        _expect_error("block-raises-nothing", ValueError, "bad", None, EITHER, right_error=_lacks(("raised nothing",))),
        _expect_error("block-raises-other-kind", KeyError, "bad", bad, EITHER,
                      right_error=lambda e: e is bad or (isinstance(e, AssertionError) and "ValueError" in str(e))),
        _expect_error("keyboard-interrupt-passes", Exception, "bad", KeyboardInterrupt("bad"), EITHER,
                      right_error=lambda e: isinstance(e, KeyboardInterrupt)),
        _expect_error("kind=BaseException-systemexit", BaseException, "bad", SystemExit("bad exit"), ACCEPT,
                      printed=("SystemExit: ...bad...\n", "BaseException: ...bad...\n")),
        _expect_error("keyerror-quotes", KeyError, "bad key", KeyError("bad key"), ACCEPT,
                      printed="KeyError: ...bad key...\n"),
        _expect_error("fragment=long-20000", ValueError, "x" * 20_000, ValueError("x" * 20_001), ACCEPT),
        _expect_error("fragment=cjk", ValueError, "错误", ValueError("一个错误"), ACCEPT,
                      printed="ValueError: ...错误...\n"),
    ]


# --------------------------------------------------------------------------- differ


def _differ(cid: str, args: tuple[Any, ...], expect: str, names: tuple[str, ...]) -> Case:
    def setup() -> Ctx:
        return Ctx(models=[], tensors=[], before=dict(releases.DIFFERENCES))

    def call(ctx: Ctx) -> Any:
        try:
            return releases.differ(*args)
        except Exception:
            ctx.refused = True
            raise

    def check(answer: Any, ctx: Ctx) -> str | None:
        key = args[0]
        if not isinstance(answer, releases.Difference) or releases.DIFFERENCES.get(key) is not answer:
            return "the difference was not recorded"
        if answer.value("2.8.0") != args[3][2]:
            return f"its value on 2.8 is {answer.value('2.8.0')!r}"
        return None

    def after(ctx: Ctx) -> str | None:
        added = [k for k in releases.DIFFERENCES if k not in ctx.before]
        replaced = [k for k in ctx.before if releases.DIFFERENCES.get(k) is not ctx.before[k]]
        releases.DIFFERENCES.clear()
        releases.DIFFERENCES.update(ctx.before)
        if replaced:
            return f"recorded differences replaced: {replaced}"
        if getattr(ctx, "refused", False) and added:
            return f"a refused difference was recorded anyway: {added}"
        return None

    return Case(f"releases.differ:{cid}", "hookviz.releases.differ", call, setup, expect, names, check, after=after,
                keeps_rng=True)


def differ_cases() -> list[Case]:
    row = ("2.8", "what happens", 1)
    return [
        _differ("valid", ("reliability-demo", "04_backward_hooks#x", "?", row, ("2.10", "then", 2)), ACCEPT, ()),
        _differ("no-rows", ("reliability-demo", "04_backward_hooks#x", "?"), REFUSE, ("row", "rows")),
        _differ("late-first-row", ("reliability-demo", "04_backward_hooks#x", "?", ("2.9", "a", 1)), REFUSE,
                ("row", "oldest")),
        _differ("twice", (KEY, "04_backward_hooks#x", "?", row), REFUSE, (KEY,)),
        _differ("key=int", (123, "04_backward_hooks#x", "?", row), REFUSE, ("key",)),
        _differ("section-without-anchor", ("reliability-demo", "04_backward_hooks", "?", row), REFUSE, ("section",)),
        _differ("rows-out-of-order", ("reliability-demo", "04#x", "?", row, ("2.12", "b", 2), ("2.10", "c", 3)),
                REFUSE, ("row", "rows", "order")),
        _differ("row-since-float", ("reliability-demo", "04#x", "?", (2.8, "a", 1)), REFUSE, ("row", "since")),
        _differ("row-of-two", ("reliability-demo", "04#x", "?", ("2.8", "a")), REFUSE, ("row",)),
        _differ("row-outside-range", ("reliability-demo", "04#x", "?", row, ("2.99", "b", 2)), REFUSE,
                ("row", "range", "2.99")),
    ]


def cases() -> list[Case]:
    out = [c for spec in specs() for c in spec.cases()]
    return out + expect_error_cases() + differ_cases()
