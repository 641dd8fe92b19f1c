"""Standard bad inputs, generated per argument type, and the cases they make for one entry point.

An :class:`Arg` says what an argument is (``kind``) and gives one valid value; :func:`bad_values` generates the
inputs users really type for that kind - the wrong type, ``True`` for a count, ``np.int64(3)`` and
``torch.tensor(3)``, negative, zero, huge (``10**9``, ``10**18``), ``2.5`` for an int, NaN and infinities for a
number, empty strings and containers, full-width forms (``ｒｅｍｏｖｅ``, ``３``), CJK, a 20,000-character string,
``None``, a path that does not exist, a ``str`` where a ``Path`` goes (which must work) - each with what a right
outcome is (refuse / accept / either). :class:`Spec` turns them into :class:`~reliability.harness.Case` objects:
every other argument keeps its valid value, and an input that means the same as a valid one (``np.int64(3)`` for
``3``, a ``str`` path for a ``Path``) must give the same answer as the valid one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from reliability.harness import ACCEPT, EITHER, REFUSE, Case, Ctx, close_answer
from reliability.same import same

#: A path that exists nowhere.
MISSING_PATH = Path("/nonexistent/hookviz-reliability/does-not-exist")


def fullwidth(text: str) -> str:
    """``text`` as a Chinese input method types it in full-width mode: ``remove hook`` -> ``ｒｅｍｏｖｅ　ｈｏｏｋ``."""
    return "".join(
        "\u3000" if c == " " else chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text
    )


def long_text(n: int = 20_000) -> str:
    """``n`` characters of English-like text (a pasted log)."""
    words = ("hook", "forward", "backward", "grad", "tensor", "module", "register", "remove", "twice", "layer")
    out, i = [], 0
    while sum(map(len, out)) + len(out) < n:
        out.append(f"{words[i % len(words)]}{i}")
        i += 1
    return " ".join(out)[:n]


def long_cjk(n: int = 20_000) -> str:
    """``n`` distinct-looking CJK characters (a pasted Chinese document)."""
    return "".join(chr(0x4E00 + (i * 7919) % 20_000) for i in range(n))


class Fresh:
    """A valid value made anew for each case (a model, a tensor the call may touch)."""

    def __init__(self, make: Callable[[], Any], label: str = "fresh") -> None:
        self.make, self.label = make, label

    def __repr__(self) -> str:
        return self.label


class FromCtx:
    """A valid value that the spec's ``setup`` made (``ctx.<attr>``): a model or a tensor the probes watch."""

    def __init__(self, attr: str) -> None:
        self.attr = attr

    def __repr__(self) -> str:
        return f"ctx.{self.attr}"


def materialise(value: Any, ctx: Ctx | None = None) -> Any:
    if isinstance(value, Fresh):
        return value.make()
    if isinstance(value, FromCtx):
        return getattr(ctx, value.attr)
    return value


@dataclass
class Value:
    """One generated input: a stable label (part of the test id), the value, the right outcome, and (for an input
    that means the same as the valid one) the valid value whose answer it must give."""

    label: str
    value: Any
    expect: str
    same_as: Any = None
    has_same_as: bool = False


def _same(label: str, value: Any, canonical: Any, expect: str = ACCEPT) -> Value:
    return Value(label, value, expect, canonical, True)


@dataclass
class Arg:
    """One argument of an entry point.

    kind: ``count`` (an int with ``minimum``), ``int``, ``number`` (a float; ``positive``), ``text`` (free text),
    ``choice`` (one of a few strings), ``path`` (``exists``: must exist), ``version`` (a torch release),
    ``flag`` (a bool), ``tensor`` (``token`` tensors: integer tokens below ``vocab``), ``model``, ``callable``,
    ``mapping`` (a dict), ``sequence``, ``any``.
    """

    name: str
    kind: str
    valid: Any
    positional: bool = False
    minimum: int | None = None
    positive: bool = False
    none_ok: bool = False  # None is accepted (it means the default); the answer must be the default's
    default: Any = None  # the default None stands for (for none_ok)
    huge_ok: bool = True  # 10**9 / 10**18 may be tried (no allocation or work proportional to the value)
    exists: bool = True  # a path: must exist (a missing one is refused)
    vocab: int | None = None  # a token tensor's vocabulary size
    example: Any = None  # a concrete value like the valid one (when that is made by setup) to derive inputs from
    aliases: tuple[str, ...] = ()  # other words a refusal may name the argument by
    skip: tuple[str, ...] = ()  # labels not to generate (with the reason in the spec's comment)
    extra: list[Value] = field(default_factory=list)  # inputs of this argument beyond the standard ones

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


def bad_values(arg: Arg) -> list[Value]:
    """The standard bad (and equivalent) inputs for ``arg``'s kind, then ``arg.extra`` (an extra input with the label
    of a standard one takes its place)."""
    extra = {v.label: v for v in arg.extra}
    standard = [extra.pop(v.label, v) for v in _standard_values(arg)]
    return standard + list(extra.values())


def _standard_values(arg: Arg) -> Iterator[Value]:
    v = arg.valid
    kind = arg.kind
    none = _same("None", None, arg.default) if arg.none_ok else Value("None", None, REFUSE)
    if kind in ("count", "int"):
        m = arg.minimum
        yield Value("True", True, REFUSE)
        yield Value(f"str-{v}", str(v), REFUSE)
        yield Value("fullwidth-str", fullwidth(str(v)), REFUSE)
        yield Value("float-2.5", 2.5, REFUSE)
        yield _same(f"float-{v}.0", float(v), v, EITHER)
        yield _same("np.int64", np.int64(v), v)
        yield _same("torch.tensor", torch.tensor(v), v)
        yield Value("np.float64-2.5", np.float64(2.5), REFUSE)
        yield Value("negative", -1, REFUSE if m is not None and m > -1 else EITHER)
        yield Value("zero", 0, REFUSE if m is not None and m > 0 else EITHER)
        if arg.huge_ok:
            yield Value("1e9", 10**9, EITHER)
            yield Value("1e18", 10**18, EITHER)
        yield Value("nan", math.nan, REFUSE)
        yield Value("list", [v], REFUSE)
        yield none
    elif kind == "number":
        yield Value("True", True, REFUSE)
        yield Value("str", str(v), REFUSE)
        yield Value("nan", math.nan, REFUSE)
        yield Value("inf", math.inf, REFUSE if arg.huge_ok is False else EITHER)
        yield Value("-inf", -math.inf, REFUSE)
        yield Value("negative", -abs(v) if v else -1.0, REFUSE if arg.positive else EITHER)
        yield Value("zero", 0.0, REFUSE if arg.positive else EITHER)
        yield _same("np.float64", np.float64(v), v)
        yield _same("torch.tensor", torch.tensor(float(v), dtype=torch.float64), v)
        if float(v).is_integer():
            yield _same("int", int(v), v)
        yield Value("huge-1e300", 1e300, EITHER)
        yield Value("complex", complex(v, 1), REFUSE)
        yield none
    elif kind == "text":
        yield Value("empty", "", REFUSE)
        yield Value("blank", " \t\n ", REFUSE)
        yield Value("int", 123, REFUSE)
        yield Value("bytes", str(v).encode(), REFUSE)
        yield Value("list", [v], REFUSE)
        yield _same("fullwidth", fullwidth(v), v)
        yield _same("padded", f"  {v}  \n", v)
        yield _same("upper", v.upper(), v, EITHER)
        yield Value("cjk", "为什么我的钩子没有触发", EITHER)
        yield Value("emoji-control", f"\x00{v}\x1b[31m 🔥", EITHER)
        yield Value("lone-surrogate", "hook \ud800 grad", EITHER)
        yield Value("long-20000", long_text(), EITHER)
        yield Value("long-20000-cjk", long_cjk(), EITHER)
        yield none
    elif kind == "choice":
        yield Value("int", 123, REFUSE)
        yield Value("bytes", str(v).encode(), REFUSE)
        yield Value("empty", "", REFUSE)
        yield Value("unknown", "nonexistent", REFUSE)
        yield Value("typo", str(v)[:-1] if len(str(v)) > 2 else str(v) + "x", REFUSE)
        yield _same("upper", str(v).upper(), v, EITHER)
        yield _same("padded", f" {v} ", v, EITHER)
        yield _same("fullwidth", fullwidth(str(v)), v, EITHER)
        yield Value("cjk", "钩子", REFUSE)
        yield Value("long-20000", "x" * 20_000, REFUSE)
        yield Value("list", [v], REFUSE)
        yield none
    elif kind == "path":
        yield _same("str", str(v), v)
        yield Value("missing", MISSING_PATH, REFUSE if arg.exists else EITHER)
        yield Value("missing-str", str(MISSING_PATH), REFUSE if arg.exists else EITHER)
        yield Value("fullwidth-missing", Path(fullwidth("atlas")), REFUSE if arg.exists else EITHER)
        yield Value("int", 123, REFUSE)
        yield Value("empty-str", "", REFUSE if arg.exists else EITHER)
        yield Value("long-20000", "d" * 20_000, REFUSE)
        yield Value("list", [str(v)], REFUSE)
        yield none
    elif kind == "version":
        major, minor = (int(x) for x in str(v).split(".")[:2])
        yield _same("patch", f"{v}.0", v)
        yield _same("local", f"{v}.0+cu121", v)
        yield _same("padded", f" {v} ", v, EITHER)
        yield _same("fullwidth", fullwidth(str(v)), v, EITHER)
        yield _same("v-prefix", f"v{v}", v, EITHER)
        yield Value(f"float-{major}.{minor}", float(f"{major}.{minor}"), REFUSE if minor % 10 == 0 else EITHER)
        yield Value("int", major, REFUSE)
        yield Value("major-only", str(major), REFUSE)
        yield Value("empty", "", REFUSE)
        yield Value("negative-minor", f"{major}.-1", REFUSE)
        yield Value("letters", f"{major}.x", REFUSE)
        yield Value("double-dot", f"{major}..{minor}", REFUSE)
        yield Value("bytes", str(v).encode(), REFUSE)
        yield Value("np.float64", np.float64(f"{major}.{minor}"), REFUSE if minor % 10 == 0 else EITHER)
        yield Value("long-20000", f"{major}." + "1" * 20_000, EITHER)
        yield Value("cjk", "二点十", REFUSE)
        yield none
    elif kind == "flag":
        yield Value("str-yes", "yes", REFUSE)
        yield Value("str-False", "False", REFUSE)
        yield _same("np.bool_", np.bool_(v), v, EITHER)
        yield Value("int-2", 2, REFUSE)
        yield none
    elif kind == "tensor":
        vocab = arg.vocab
        t = arg.example if arg.example is not None else v.make() if isinstance(v, Fresh) else v
        yield Value("float", t.float(), REFUSE if vocab else EITHER)
        yield Value("1-D", t[0], EITHER)
        yield Value("empty-batch", t[:0], EITHER)
        yield Value("empty-seq", t[:, :0], EITHER)
        yield _same("numpy", t.numpy(), v, EITHER)
        yield _same("list", t.tolist(), v, EITHER)
        if vocab:
            yield Value("out-of-vocab", torch.full_like(t, vocab + 5), REFUSE)
            yield Value("negative-token", torch.full_like(t, -1), REFUSE)
        yield Value("str", "1 2 3", REFUSE)
        yield none
    elif kind == "model":
        yield Value("str", "model", REFUSE)
        yield Value("state-dict", {"weight": torch.zeros(2, 2)}, REFUSE)
        yield Value("class", torch.nn.Linear, REFUSE)
        yield none
    elif kind == "callable":
        yield Value("int", 3, REFUSE)
        yield Value("str", "f", REFUSE)
        yield none
    elif kind == "mapping":
        yield Value("list", [("a", 1)], REFUSE)
        yield Value("str", "a=1", REFUSE)
        yield Value("empty", {}, EITHER)
        yield none
    elif kind == "sequence":
        yield Value("str", "abc", REFUSE)
        yield Value("int", 3, REFUSE)
        yield Value("empty", [], EITHER)
        yield none
    elif kind == "any":
        pass
    else:  # pragma: no cover - a spec's mistake
        raise ValueError(f"unknown argument kind {kind!r}")


@dataclass
class Spec:
    """An entry point, its arguments and what its right answer is; :meth:`cases` generates its inputs.

    ``fn`` is called as ``fn(*positional, **keywords)`` with each argument's valid value except the one under test.
    ``check(answer, args)`` says what is wrong with an answer (``None``: right); ``setup`` makes the models and
    tensors the call uses (probed before and after: they must come back unchanged).
    """

    entry: str
    fn: Callable[..., Any]
    args: list[Arg] = field(default_factory=list)
    check: Callable[[Any, dict[str, Any]], str | None] | None = None
    setup: Callable[[], Ctx] | None = None  # makes ctx.models / ctx.tensors; args may read ctx (see Fresh)
    keywords: bool = True  # also try an unknown keyword and a near-miss of the real ones
    kwargs_name: str | None = None  # the function takes **kwargs: an unknown keyword must still be refused
    mutates: frozenset[str] = frozenset()
    keeps_rng: bool = True
    timeout: float = 20.0
    cleanup: Callable[[Any, Ctx], None] | None = None
    after: Callable[[Ctx], str | None] | None = None
    short: str = ""
    compare: Callable[[Any, Any], bool] = same  # do two answers agree (an equivalent input's and the valid one's)?

    def _name(self) -> str:
        return self.short or self.entry.removeprefix("hookviz.")

    def _invoke(self, ctx: Ctx, values: dict[str, Any]) -> Any:
        values = {k: materialise(v, ctx) for k, v in values.items()}
        ctx.args = dict(values)
        positional = [values.pop(a.name) for a in self.args if a.positional and a.name in values]
        return self.fn(*positional, **values)

    def _valid(self) -> dict[str, Any]:
        return {a.name: a.valid for a in self.args}

    def _case(self, label: str, values: dict[str, Any], expect: str, names: tuple[str, ...], same_as: Any = None,
              has_same_as: bool = False, arg: str | None = None) -> Case:
        spec = self

        def call(ctx: Ctx) -> Any:
            return spec._invoke(ctx, dict(values))

        def check(answer: Any, ctx: Ctx) -> str | None:
            if spec.check is not None:
                wrong = spec.check(answer, ctx.args)
                if wrong:
                    return wrong
            if has_same_as:
                reference_values = dict(values)
                reference_values[arg] = same_as
                with torch.random.fork_rng(devices=[]):  # the reference's model must not count as the call's draw
                    fresh = spec.setup() if spec.setup is not None else Ctx(models=[], tensors=[])
                    reference = spec._invoke(fresh, reference_values)
                try:
                    if not spec.compare(answer, reference):
                        return f"not the answer of {arg}={same_as!r}"
                finally:
                    close_answer(reference)
            return None

        return Case(
            id=f"{self._name()}:{label}",
            entry=self.entry,
            call=call,
            setup=self.setup,
            expect=expect,
            names=names,
            check=check,
            mutates=self.mutates,
            keeps_rng=self.keeps_rng,
            timeout=self.timeout,
            cleanup=self.cleanup,
            after=self.after,
        )

    def cases(self) -> list[Case]:
        """The valid call, every standard bad input of every argument, and an unknown keyword."""
        out = [self._case("valid", self._valid(), ACCEPT, ())]
        for arg in self.args:
            for value in bad_values(arg):
                if value.label in arg.skip:
                    continue
                values = self._valid()
                values[arg.name] = value.value
                out.append(
                    self._case(f"{arg.name}={value.label}", values, value.expect, arg.names, value.same_as,
                               value.has_same_as, arg.name)
                )
        if self.keywords:
            values = self._valid()
            values["colour_map"] = "viridis"
            out.append(self._case("unknown-keyword", values, REFUSE, ("colour_map",)))
            named = [a.name for a in self.args if not a.positional and len(a.name) > 2]
            if named:
                typo = named[0] + "s" if not named[0].endswith("s") else named[0][:-1]
                values = self._valid()
                values.pop(named[0])
                values[typo] = self._valid()[named[0]]
                out.append(self._case(f"keyword-typo-{typo}", values, REFUSE, (typo,)))
        return out
