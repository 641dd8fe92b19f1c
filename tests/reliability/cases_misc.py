"""The rest of hookviz's public names: models and data helpers, capture helpers, the catalogue, the hooks table's
helpers, i18n and its extractor, render, summarize, text, guards, the transformer helpers and the demos' small
helpers. Pure functions mostly: a few standard bad inputs each (generated where the argument has a kind), and the
right answer where there is one."""

from __future__ import annotations

import ast
import atexit
import contextlib
import functools
import io
import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

import hookviz
import hookviz.widgets
from hookviz import catalogue, guards, hooks_table, i18n, render, summarize, text, transformer
from reliability import models, registry
from reliability.harness import ACCEPT, EITHER, REFUSE, Case, Ctx
from reliability.inputs import Arg, FromCtx, Spec, Value

_BASE = Path(tempfile.mkdtemp(prefix="hookviz-reliability-misc-"))
atexit.register(shutil.rmtree, _BASE, ignore_errors=True)
ROOT = Path(hookviz.__file__).resolve().parent.parent


def quick(entry: str, call: Any, inputs: list[tuple[str, Any, str, tuple[str, ...]]], check: Any = None,
          setup: Any = None, short: str = "", mutates: frozenset[str] = frozenset(), cleanup: Any = None,
          after: Any = None, timeout: float = 20.0) -> list[Case]:
    """Hand-picked inputs: ``(label, value, expect, names)``; ``call(ctx, value)`` makes the call."""
    name = short or entry.removeprefix("hookviz.")
    out = []
    for label, value, expect, names in inputs:
        out.append(Case(
            f"{name}:{label}", entry, lambda ctx, v=value: call(ctx, v), setup, expect, names,
            (lambda a, ctx, v=value: check(a, v)) if check is not None else None,
            mutates=mutates, cleanup=cleanup, after=after, keeps_rng=True, timeout=timeout,
        ))
    return out


def _model_setup() -> Ctx:
    model = models.mlp()
    x = models.mlp_input()
    return Ctx(models=[model], tensors=[x], model=model, x=x)


@functools.lru_cache(maxsize=1)
def _digits() -> tuple[torch.Tensor, torch.Tensor]:
    images, labels = hookviz.load_digits("test")
    return images[:16].clone(), labels[:16].clone()


def _seeded(make: Any) -> Any:
    """``make()`` with weights from seed 0, the caller's random state left alone (a reference answer needs the
    same model)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return make()


def _cnn_setup() -> Ctx:
    model = _seeded(hookviz.DigitsCNN).train()
    model.features[1].eval()
    images, labels = _digits()
    return Ctx(models=[model], tensors=[images, labels], model=model, images=images, labels=labels)


def _fraction(a: Any, args: Any = None) -> str | None:
    return None if isinstance(a, float) and 0.0 <= a <= 1.0 else f"not a fraction: {a!r}"


def models_cases() -> list[Case]:
    out = []
    out += Spec("hookviz.accuracy", hookviz.accuracy, [
        Arg("model", "model", FromCtx("model"), positional=True),
        Arg("images", "any", FromCtx("images"), positional=True, extra=[
            Value("numpy", np.zeros((4, 1, 8, 8), np.float32), EITHER),
            Value("wrong-shape", torch.zeros(4, 64), REFUSE),
            Value("None", None, REFUSE)]),
        Arg("labels", "any", FromCtx("labels"), positional=True, extra=[
            Value("fewer", torch.zeros(3, dtype=torch.long), REFUSE), Value("float", torch.zeros(16), REFUSE),
            Value("None", None, REFUSE)]),
    ], check=_fraction, setup=_cnn_setup, keywords=False).cases()
    out += Spec("hookviz.make_digits_step", hookviz.make_digits_step, [
        Arg("model", "model", FromCtx("model"), positional=True),
        Arg("batch_size", "count", 8, minimum=1, skip=("1e9", "1e18")),
        Arg("lr", "number", 0.003, positive=True),
        Arg("seed", "int", 0, minimum=0),
    ], check=lambda a, args: None if callable(a) else f"{a!r}", setup=_cnn_setup).cases()
    out += Spec("hookviz.digits_step_fn", hookviz.digits_step_fn, [
        Arg("model", "model", FromCtx("model"), positional=True),
        Arg("batch_size", "count", 8, minimum=1, skip=("1e9", "1e18")),
    ], check=lambda a, args: None if callable(a) else f"{a!r}", setup=_cnn_setup, keywords=False).cases()
    out += quick("hookviz.load_pretrained_cnn", lambda ctx, v: hookviz.load_pretrained_cnn(*v), [
        ("valid", (), ACCEPT, ()), ("an-argument", ("cpu",), REFUSE, ("positional", "argument"))],
        check=lambda a, v: None if isinstance(a, hookviz.DigitsCNN) and not a.training else f"{a!r}")
    out += quick("hookviz.train_digits_cnn", lambda ctx, v: hookviz.train_digits_cnn(**v), [
        ("epochs=0", {"epochs": 0}, EITHER, ("epochs",)), ("epochs=-1", {"epochs": -1}, REFUSE, ("epochs",)),
        ("epochs=2.5", {"epochs": 2.5}, REFUSE, ("epochs",)), ("epochs=str", {"epochs": "1"}, REFUSE, ("epochs",)),
        ("batch_size=0", {"epochs": 1, "batch_size": 0}, REFUSE, ("batch_size",)),
        ("lr=nan", {"epochs": 1, "lr": math.nan}, REFUSE, ("lr",)),
        ("seed=-1", {"epochs": 0, "seed": -1}, REFUSE, ("seed",)),
    ], check=lambda a, v: None if isinstance(a, hookviz.DigitsCNN) else f"{a!r}", timeout=30)
    out += quick("hookviz.transformer.train_tiny_transformer", lambda ctx, v: transformer.train_tiny_transformer(**v), [
        ("valid", {"steps": 1, "batch_size": 4}, ACCEPT, ()),
        ("steps=-1", {"steps": -1}, REFUSE, ("steps",)), ("steps=2.5", {"steps": 2.5}, REFUSE, ("steps",)),
        ("batch_size=0", {"steps": 1, "batch_size": 0}, REFUSE, ("batch_size",)),
        ("lr=inf", {"steps": 1, "batch_size": 4, "lr": math.inf}, REFUSE, ("lr",)),
        ("seed=None", {"steps": 1, "batch_size": 4, "seed": None}, REFUSE, ("seed",)),
    ], check=lambda a, v: None if isinstance(a, hookviz.TinyTransformer) else f"{a!r}", timeout=30)
    out += Spec("hookviz.DigitsCNN", hookviz.DigitsCNN, [
        Arg("channels", "any", (8, 16), extra=[
            Value("zero", (0, 16), REFUSE), Value("negative", (8, -1), REFUSE), Value("float", (8.5, 16), REFUSE),
            Value("one-int", 8, REFUSE), Value("three", (8, 16, 32), REFUSE), Value("str", "8,16", REFUSE),
            Value("np.int64", (np.int64(8), np.int64(16)), ACCEPT), Value("list", [8, 16], ACCEPT)]),
        Arg("n_classes", "count", 10, minimum=1, skip=("1e9", "1e18")),
    ], check=lambda a, args: None if isinstance(a, hookviz.DigitsCNN) else f"{a!r}",
        compare=lambda a, b: [p.shape for p in a.parameters()] == [p.shape for p in b.parameters()]).cases()
    out += quick("hookviz.load_tiny_transformer", lambda ctx, v: hookviz.load_tiny_transformer(*v), [
        ("valid", (), ACCEPT, ()), ("an-argument", ("cpu",), REFUSE, ("positional", "argument"))],
        check=lambda a, v: None if isinstance(a, hookviz.TinyTransformer) and not a.training else f"{a!r}")
    out += Spec("hookviz.make_tiny_batch", hookviz.make_tiny_batch, [
        Arg("n", "count", 4, positional=True, minimum=1),
        Arg("seed", "int", 1, minimum=0),
        Arg("seq_len", "count", 8, minimum=1),
        Arg("vocab_size", "count", 10, minimum=1, skip=("1e9", "1e18")),
    ], check=lambda a, args: None if isinstance(a, tuple) and a[0].shape[0] == int(args.get("n", 4))
        and torch.equal(a[1], a[0].flip(-1)) else f"{a!r}").cases()
    tokens, targets = hookviz.make_tiny_batch(4, seed=1)
    out += Spec("hookviz.transformer.reverse_targets", transformer.reverse_targets, [
        Arg("tokens", "tensor", tokens, positional=True)],
        check=lambda a, args: None if isinstance(a, torch.Tensor) and torch.equal(
            a, torch.as_tensor(args["tokens"]).flip(-1)) else f"{a!r}").cases()

    def tiny_setup() -> Ctx:
        model = _seeded(transformer.TinyTransformer).train()
        return Ctx(models=[model], tensors=[tokens, targets], model=model, tokens=tokens, targets=targets)

    out += Spec("hookviz.transformer.tiny_accuracy", transformer.tiny_accuracy, [
        Arg("model", "model", FromCtx("model"), positional=True),
        Arg("tokens", "tensor", FromCtx("tokens"), positional=True, vocab=10, example=tokens),
        Arg("targets", "tensor", FromCtx("targets"), positional=True, example=targets,
            extra=[Value("fewer-rows", targets[:2], REFUSE)]),
    ], check=_fraction, setup=tiny_setup, keywords=False).cases()
    return out


# --------------------------------------------------------------------------- capture helpers, catalogue, hooks table


def capture_cases() -> list[Case]:
    capture_mod = registry.module("hookviz.capture")  # `hookviz.capture` is the function of the same name
    nested = {"a": (torch.zeros(1), [torch.ones(2)]), "b": 3}
    out = quick("hookviz.capture.iter_tensors", lambda ctx, v: list(capture_mod.iter_tensors(v)), [
        ("nested", nested, ACCEPT, ()), ("tensor", torch.zeros(2), ACCEPT, ()), ("None", None, ACCEPT, ()),
        ("int", 3, ACCEPT, ()), ("str", "abc", ACCEPT, ()), ("recursive", _recursive(), EITHER, ("value",)),
        ("generator", (t for t in [torch.zeros(1)]), EITHER, ("value",)),
    ], check=lambda a, v: None if isinstance(a, list) else f"{a!r}")
    out += quick("hookviz.capture.value_at", lambda ctx, v: capture_mod.value_at(nested, v), [
        ("valid", ("a", 1, 0), ACCEPT, ()), ("absent", ("z",), ACCEPT, ()), ("empty", (), ACCEPT, ()),
        ("str-path", "a", REFUSE, ("path",)), ("int-path", 0, REFUSE, ("path",)), ("None", None, REFUSE, ("path",)),
    ], check=lambda a, v: None if v != ("a", 1, 0) or torch.equal(a, torch.ones(2)) else f"{a!r}")
    out += quick("hookviz.registered_keys", lambda ctx, v: hookviz.registered_keys(v if v != "model" else ctx.model), [
        ("valid", "model", ACCEPT, ()), ("None", None, REFUSE, ("owner", "model")),
        ("str", "model0", REFUSE, ("owner", "model")),
        ("state-dict", {"w": torch.zeros(1)}, REFUSE, ("owner", "model")),
    ], check=lambda a, v: None if a == {} else f"{a!r}", setup=_model_setup)
    out += quick("hookviz.resolve_layers", lambda ctx, v: hookviz.resolve_layers(ctx.model, **v), [
        ("valid", {"layers": ["0", "2"]}, ACCEPT, ()), ("None", {}, ACCEPT, ()),
        ("typo", {"layers": ["O"]}, REFUSE, ("layers", "layer", "'O'")),
        ("int", {"layers": 0}, REFUSE, ("layers",)), ("fullwidth", {"layers": "０"}, REFUSE, ("layers", "layer")),
        ("types-str", {"types": "Linear"}, REFUSE, ("types",)), ("empty-list", {"layers": []}, EITHER, ("layers",)),
        ("duplicate", {"layers": ["0", "0"]}, EITHER, ("layers",)),
    ], check=lambda a, v: None if isinstance(a, dict) and all(isinstance(m, nn.Module) for m in a.values())
        else f"{a!r}", setup=_model_setup)
    out += quick("hookviz.catalogue.hook_kind", lambda ctx, v: catalogue.hook_kind(v), [
        ("valid", "forward", ACCEPT, ()), ("typo", "forwrd", REFUSE, ("forwrd", "name")),
        ("fullwidth", "ｆｏｒｗａｒｄ", EITHER, ("name", "kind")), ("int", 3, REFUSE, ("name",)),
        ("None", None, REFUSE, ("name",)), ("cjk", "前向", REFUSE, ("name", "kind")),
    ], check=lambda a, v: None if isinstance(a, catalogue.HookKind) else f"{a!r}")
    out += quick("hookviz.catalogue.kinds", lambda ctx, v: catalogue.kinds(**v), [
        ("valid", {"target": "module"}, ACCEPT, ()), ("all", {}, ACCEPT, ()),
        ("typo-target", {"target": "modul"}, REFUSE, ("target",)), ("typo-phase", {"phase": "fwd"}, REFUSE, ("phase",)),
        ("deprecated-str", {"deprecated": "no"}, REFUSE, ("deprecated",)),
        ("positional", "module", REFUSE, ("positional", "argument")),
    ], check=lambda a, v: None if isinstance(a, list) and a else f"{a!r}")
    out[-1].call = lambda ctx: catalogue.kinds("module")
    out += quick("hookviz.catalogue.catalogue_table", lambda ctx, v: catalogue.catalogue_table(**v), [
        ("valid", {"target": "tensor"}, ACCEPT, ()), ("bad-column", {"columns": ("name", "colour")}, REFUSE,
                                                        ("columns", "colour")),
        ("columns-str", {"columns": "name"}, REFUSE, ("columns",)), ("typo-target", {"target": "tensr"}, REFUSE,
                                                                      ("target",)),
    ], check=lambda a, v: None if isinstance(a, str) and a else f"{a!r}")
    out += quick("hookviz.HookTable", lambda ctx, v: v(ctx), [
        ("text", lambda ctx: str(hookviz.list_hooks(ctx.model)), ACCEPT, ()),
        ("html", lambda ctx: hookviz.list_hooks(ctx.model)._repr_html_(), ACCEPT, ()),
        ("kinds", lambda ctx: hookviz.list_hooks(ctx.model).kinds(), ACCEPT, ()),
        ("rows-not-HookRow", lambda ctx: str(hookviz.HookTable([1, "x"])), REFUSE, ("row", "rows", "HookRow")),
        ("a-string", lambda ctx: str(hookviz.HookTable("rows")), REFUSE, ("row", "rows", "HookRow")),
    ], setup=_model_setup, short="HookTable")
    out += quick("hookviz.hooks_table.list_global_hooks", lambda ctx, v: hooks_table.list_global_hooks(**v), [
        ("valid", {}, ACCEPT, ()), ("optimizer=False", {"optimizer": False}, ACCEPT, ()),
        ("optimizer-str", {"optimizer": "no"}, REFUSE, ("optimizer",)),
    ], check=lambda a, v: None if isinstance(a, hooks_table.HookTable) else f"{a!r}")
    for fn, entry in ((hooks_table.library_owned, "library_owned"), (hooks_table.owning_library, "owning_library"),
                      (hooks_table.pytorch_owned, "pytorch_owned")):
        out += quick(f"hookviz.hooks_table.{entry}", lambda ctx, v, fn=fn: fn(v), [
            ("a-function", print, ACCEPT, ()), ("a-lambda", lambda *a: None, ACCEPT, ()),
            ("a-partial", __import__("functools").partial(print, 1), ACCEPT, ()),
            ("None", None, EITHER, ("fn",)), ("int", 3, EITHER, ("fn",)),
        ], check=lambda a, v: None if a in (True, False, None) or isinstance(a, str) else f"{a!r}")
    out += quick("hookviz.hooks_table.RemovedHooks", lambda ctx, v: hooks_table.RemovedHooks(*v), [
        ("valid", (2, hooks_table.HookTable()), ACCEPT, ()), ("negative", (-1, hooks_table.HookTable()), REFUSE,
                                                                ("removed",)),
        ("str", ("2", hooks_table.HookTable()), REFUSE, ("removed",)),
    ], check=lambda a, v: None if int(a) == int(v[0]) else f"{a!r}")
    return out


def _recursive() -> list[Any]:
    value: list[Any] = [torch.zeros(1)]
    value.append(value)
    return value


# --------------------------------------------------------------------------- i18n and its extractor


def _language_setup() -> Ctx:
    return Ctx(models=[], tensors=[], previous=i18n.get_language())


def _restore_language(answer: Any, ctx: Ctx) -> None:
    i18n.set_language(ctx.previous)


def i18n_cases() -> list[Case]:
    language = Arg("language", "choice", "zh", none_ok=True, default=None, aliases=("language",),
                   skip=("upper", "padded"), extra=[Value("zh-CN", "zh-CN", EITHER)])
    out = Spec("hookviz.set_language", hookviz.set_language,
               [Arg("language", "choice", "zh", positional=True, none_ok=True, default=None, aliases=("language",),
                    extra=[Value("zh-CN", "zh-CN", ACCEPT), Value("fr", "fr", REFUSE)])],
               check=lambda a, args: None, setup=_language_setup, cleanup=_restore_language).cases()
    out += quick("hookviz.get_language", lambda ctx, v: hookviz.get_language(*v), [
        ("valid", (), ACCEPT, ()), ("an-argument", ("zh",), REFUSE, ("positional", "argument"))],
        check=lambda a, v: None if a in ("en", "zh") else f"{a!r}")
    message = "the layer is not in the model"
    same_text = ("fullwidth", "padded", "upper")  # a translation of other text is other text: nothing to compare
    out += Spec("hookviz.tr", hookviz.tr, [Arg("text", "text", message, positional=True,
                                                skip=("empty", "blank", *same_text),
                                                extra=[Value("empty-ok", "", ACCEPT)])],
                check=lambda a, args: None if isinstance(a, str) else f"{a!r}").cases()
    out += Spec("hookviz.i18n.translate", i18n.translate, [
        Arg("text", "text", message, positional=True, skip=("empty", "blank", *same_text)),
        Arg("language", "choice", "zh", positional=True, aliases=("language",), skip=("upper", "padded")),
    ], check=lambda a, args: None if isinstance(a, str) else f"{a!r}").cases()
    for name, fn in (("tr_caption", i18n.tr_caption), ("tr_joined", i18n.tr_joined)):
        out += Spec(f"hookviz.i18n.{name}", fn, [
            Arg("text", "text", "sample 0 · label 6", positional=True,
                skip=("empty", "blank", "long-20000-cjk", *same_text)),
            language,
        ], check=lambda a, args: None if isinstance(a, str) else f"{a!r}").cases()
    out += Spec("hookviz.i18n.join_notes", i18n.join_notes, [
        Arg("notes", "sequence", ["one note", "another"], positional=True,
            extra=[Value("list-of-int", [1, 2], REFUSE)]),
        language,
    ], check=lambda a, args: None if isinstance(a, str) else f"{a!r}").cases()
    out += Spec("hookviz.i18n.note_separator", i18n.note_separator, [language],
                check=lambda a, args: None if isinstance(a, str) and a else f"{a!r}").cases()
    out += Spec("hookviz.i18n.catalogue", i18n.catalogue,
                [Arg("language", "choice", "zh", positional=True, aliases=("language",), skip=("upper", "padded"))],
                check=lambda a, args: None if a is not None else "no catalogue").cases()
    out += Spec("hookviz.i18n.stored_outputs", i18n.stored_outputs,
                [Arg("language", "choice", "zh", positional=True, aliases=("language",), skip=("upper", "padded"))],
                check=lambda a, args: None if isinstance(a, tuple) else f"{a!r}").cases()
    out += Spec("hookviz.i18n.display_width", i18n.display_width,
                [Arg("text", "text", "钩子 hook", positional=True,
                     skip=("empty", "blank", "padded", "upper", "fullwidth"),
                     extra=[Value("empty-ok", "", ACCEPT)])],
                check=lambda a, args: None if isinstance(a, int) and a >= len(args["text"]) else f"{a!r}").cases()
    if hasattr(hookviz, "ljust"):
        out += Spec("hookviz.ljust", hookviz.ljust, [
            Arg("text", "text", "位置", positional=True, skip=("empty", "blank", "padded", "upper", "fullwidth"),
                extra=[Value("empty-ok", "", ACCEPT)]),
            Arg("width", "int", 8, positional=True, minimum=0, huge_ok=False),  # 10**9 columns: a 1 GB string, as asked
        ], check=lambda a, args: None if isinstance(a, str) and a.startswith(args["text"])
            and i18n.display_width(a) >= min(int(args["width"]), 10**6) else f"{a[:40]!r}").cases()
    po = 'msgid ""\nmsgstr ""\n\nmsgid "hook"\nmsgstr "钩子"\n'
    out += Spec("hookviz.i18n.read_po", i18n.read_po,
                [Arg("text", "text", po, positional=True, skip=("padded", "upper", "fullwidth", "empty", "blank"),
                     extra=[Value("empty-ok", "", ACCEPT), Value("unclosed-quote", 'msgid "hook\nmsgstr "x"\n', REFUSE),
                            Value("plural", 'msgid "a"\nmsgid_plural "as"\nmsgstr[0] "x"\n', REFUSE)])],
                check=lambda a, args: None if isinstance(a, list) else f"{a!r}").cases()

    def listener_after(ctx: Ctx) -> str | None:
        bad = [x for x in i18n._listeners if not callable(x)]
        for x in bad:
            i18n._listeners.remove(x)
        return f"a listener that is not callable was kept: {bad}" if bad else None

    def listener_cleanup(answer: Any, ctx: Ctx) -> None:
        with contextlib.suppress(ValueError):
            i18n._listeners.remove(ctx.listener)

    def listen(ctx: Ctx, v: Any) -> Any:
        ctx.listener = v
        return i18n.on_language_change(v)

    out += quick("hookviz.i18n.on_language_change", listen, [
        ("a-function", lambda language: None, ACCEPT, ()), ("int", 3, REFUSE, ("listener",)),
        ("str", "print", REFUSE, ("listener",)), ("None", None, REFUSE, ("listener",)),
    ], cleanup=listener_cleanup, after=listener_after)
    for marker in ("N_", "N_name"):
        fn = getattr(hookviz, marker)
        out += quick(f"hookviz.{marker}", lambda ctx, v, fn=fn: fn(v), [
            ("valid", "a message", ACCEPT, ()), ("empty", "", ACCEPT, ()), ("int", 3, REFUSE, ("text",)),
            ("None", None, REFUSE, ("text",)), ("bytes", b"x", REFUSE, ("text",)),
        ], check=lambda a, v: None if a == v else f"{a!r}")
    return out


def extract_cases() -> list[Case]:
    ex = registry.module("hookviz.i18n_extract")
    py = _BASE / "messages.py"
    py.write_text('from hookviz.i18n import tr\nprint(tr("hello"))\n', encoding="utf-8")
    broken = _BASE / "broken.py"
    broken.write_text("def (:\n", encoding="utf-8")
    notebook = ROOT / "notebooks" / "00_start_here.ipynb"
    found_list = lambda a, args: None if isinstance(a, list) else f"{a!r}"  # noqa: E731
    out = Spec("hookviz.i18n_extract.extract_source", ex.extract_source, [
        Arg("source", "text", 'tr("hello")', positional=True, skip=("empty", "blank", "fullwidth", "upper", "padded"),
            extra=[Value("syntax-error", "def (:", EITHER), Value("magic-line", '%time tr("x")', ACCEPT),
                   Value("empty-ok", "", ACCEPT)])], check=found_list).cases()
    out += Spec("hookviz.i18n_extract.extract_file", ex.extract_file, [
        Arg("path", "path", py, positional=True, aliases=("path", "file"),
            extra=[Value("syntax-error", broken, EITHER), Value("a-folder", _BASE, REFUSE)])],
        check=found_list).cases()
    out += Spec("hookviz.i18n_extract.extract_notebook", ex.extract_notebook, [
        Arg("path", "path", notebook, positional=True, aliases=("path", "notebook"),
            extra=[Value("a-python-file", py, REFUSE)])], check=found_list, timeout=30).cases()
    out += Spec("hookviz.i18n_extract.literal_templates", ex.literal_templates, [
        Arg("source", "text", 'x = f"ran {n} times"', positional=True,
            skip=("empty", "blank", "fullwidth", "upper", "padded"),
            extra=[Value("syntax-error", "def (:", EITHER)])],
        check=lambda a, args: None if isinstance(a, set) else f"{a!r}").cases()
    out += quick("hookviz.i18n_extract.template", lambda ctx, v: ex.template(v), [
        ("a-string", ast.parse('"x"', mode="eval").body, ACCEPT, ()),
        ("an-fstring", ast.parse('f"ran {n} times"', mode="eval").body, ACCEPT, ()),
        ("a-name", ast.parse("x", mode="eval").body, ACCEPT, ()),
        ("str", "x", REFUSE, ("node",)), ("None", None, REFUSE, ("node",)),
    ], check=lambda a, v: None if a is None or isinstance(a, list) else f"{a!r}")
    out += quick("hookviz.i18n_extract.extract",
                 lambda ctx, v: list(ex.extract(io.BytesIO(v), ex.KEYWORDS, [], {})), [
                     ("valid", b'tr("hello")\n', ACCEPT, ()), ("latin-1", 'tr("h\xe9")\n'.encode("latin-1"), EITHER,
                                                               ("encoding", "utf-8", "fileobj")),
                     ("syntax-error", b"def (:\n", EITHER, ("fileobj", "syntax")),
                 ], check=lambda a, v: None if isinstance(a, list) else f"{a!r}")
    return out


# --------------------------------------------------------------------------- render and summarize


def _png(a: Any, args: Any = None) -> str | None:
    return None if isinstance(a, bytes) and a.startswith(b"\x89PNG") else f"not a PNG: {type(a).__name__}"


MAPS = np.random.default_rng(0).normal(size=(4, 5, 5)).astype(np.float32)


def render_cases() -> list[Case]:
    nan_maps = MAPS.copy()
    nan_maps[0, 0, 0] = np.nan
    arrays = [
        ("valid", MAPS, ACCEPT, ()), ("with-nan", nan_maps, ACCEPT, ()),
        ("all-nan", np.full((2, 3, 3), np.nan), ACCEPT, ()),
        ("empty", np.zeros((0, 3, 3)), EITHER, ("maps", "values", "array", "empty")),
        ("tensor", torch.as_tensor(MAPS), EITHER, ("maps", "values", "array")),
        ("list", MAPS.tolist(), EITHER, ("maps", "values", "array")),
        ("str", "maps", REFUSE, ("maps", "values", "array")), ("None", None, REFUSE, ("maps", "values", "array")),
        ("1-D", MAPS.ravel(), EITHER, ("maps", "values", "shape")),
        ("complex", MAPS.astype(np.complex64), REFUSE, ("maps", "values", "complex")),
    ]
    out = quick("hookviz.render.mosaic_png", lambda ctx, v: render.mosaic_png(v), arrays, check=_png)
    out += quick("hookviz.render.mosaic", lambda ctx, v: render.mosaic(v), arrays,
                 check=lambda a, v: None if isinstance(a, np.ndarray) else f"{a!r}")
    out += quick("hookviz.render.colorize", lambda ctx, v: render.colorize(v), arrays,
                 check=lambda a, v: None if isinstance(a, np.ndarray) and a.dtype == np.uint8 else f"{a!r}")
    out += quick("hookviz.render.finite_range", lambda ctx, v: render.finite_range(v), arrays,
                 check=lambda a, v: None if isinstance(a, tuple) and all(math.isfinite(x) for x in a) else f"{a!r}")
    out += quick("hookviz.render.feature_panel_png", lambda ctx, v: render.feature_panel_png(v), arrays, check=_png)
    out += quick("hookviz.render.heatmap_panel_png", lambda ctx, v: render.heatmap_panel_png(v),
                 [("valid", MAPS[0], ACCEPT, ()), ("3-D", MAPS, EITHER, ("values", "shape")),
                  ("str", "x", REFUSE, ("values",)), ("huge-rows", np.zeros((5000, 3)), ACCEPT, ())], check=_png)
    out += quick("hookviz.render.block_mean", lambda ctx, v: render.block_mean(MAPS[0], *v), [
        ("valid", (2, 2), ACCEPT, ()), ("zero", (0, 2), REFUSE, ("max_rows",)),
        ("float", (2.5, 2), REFUSE, ("max_rows",)),
        ("negative", (2, -1), REFUSE, ("max_cols",))],
        check=lambda a, v: None if isinstance(a, tuple) and len(a) == 3 else f"{a!r}")
    vector = np.arange(10, dtype=np.float32)
    out += quick("hookviz.render.heat_strip", lambda ctx, v: render.heat_strip(vector, v), [
        ("valid", 4, ACCEPT, ()), ("zero", 0, REFUSE, ("width",)), ("negative", -1, REFUSE, ("width",)),
        ("float", 2.5, REFUSE, ("width",)), ("str", "4", REFUSE, ("width",))],
        check=lambda a, v: None if isinstance(a, np.ndarray) and a.shape[1] == v else f"{a!r}")
    out += quick("hookviz.render.strip_png", lambda ctx, v: render.strip_png(vector, width=v), [
        ("valid", 4, ACCEPT, ()), ("zero", 0, REFUSE, ("width",)), ("True", True, REFUSE, ("width",))], check=_png)
    hist = summarize.histogram(torch.randn(100, generator=torch.Generator().manual_seed(0)))
    out += quick("hookviz.render.histogram_png", lambda ctx, v: render.histogram_png(*v), [
        ("valid", (hist,), ACCEPT, ()), ("an-array", (np.zeros(3),), REFUSE, ("hist", "Histogram")),
        ("size-zero", (hist, "", False, (0, 0)), REFUSE, ("size",)), ("size-str", (hist, "", False, "big"), REFUSE,
                                                                        ("size",))], check=_png)
    out += quick("hookviz.render.message_png", lambda ctx, v: render.message_png(*v), [
        ("valid", ("nothing to draw",), ACCEPT, ()), ("cjk", ("没有可画的",), ACCEPT, ()),
        ("long-20000", ("x " * 10_000,), ACCEPT, ()), ("int", (3,), REFUSE, ("text",)),
        ("size-negative", ("x", (-5, 10)), REFUSE, ("size",))], check=_png)
    png = render.message_png("a")
    out += quick("hookviz.render.join_png", lambda ctx, v: render.join_png(v), [
        ("valid", [png, png], ACCEPT, ()), ("one", [png], ACCEPT, ()), ("empty", [], REFUSE, ("pngs",)),
        ("not-png", [b"abc"], REFUSE, ("pngs", "PNG")), ("bytes", png, REFUSE, ("pngs",))], check=_png)
    out += quick("hookviz.render.stack_png", lambda ctx, v: render.stack_png(v), [
        ("valid", [png, png], ACCEPT, ()), ("empty", [], REFUSE, ("pngs",)),
        ("not-png", [b"abc"], REFUSE, ("pngs", "PNG"))], check=_png)
    out += quick("hookviz.render.png_bytes", lambda ctx, v: render.png_bytes(v), [
        ("valid", np.zeros((4, 4, 3), np.uint8), ACCEPT, ()), ("float", np.zeros((4, 4, 3)), EITHER, ("rgb", "uint8")),
        ("2-D", np.zeros((4, 4), np.uint8), EITHER, ("rgb", "shape")), ("list", [[0]], REFUSE, ("rgb",))], check=_png)
    out += quick("hookviz.render.upscale", lambda ctx, v: render.upscale(np.zeros((4, 4, 3), np.uint8), *v), [
        ("valid", (64,), ACCEPT, ()), ("zero", (0,), EITHER, ("min_width",)), ("max_scale-zero", (64, 0), REFUSE,
                                                                                ("max_scale",)),
        ("str", ("64",), REFUSE, ("min_width",))], check=lambda a, v: None if isinstance(a, np.ndarray) else f"{a!r}")
    out += quick("hookviz.render.nice_ticks", lambda ctx, v: render.nice_ticks(*v), [
        ("valid", (0.0, 1.0), ACCEPT, ()), ("reversed", (1.0, 0.0), EITHER, ("lo", "hi")),
        ("equal", (1.0, 1.0), ACCEPT, ()), ("nan", (math.nan, 1.0), REFUSE, ("lo",)), ("inf", (0.0, math.inf), REFUSE,
                                                                                     ("hi",)),
        ("most-zero", (0.0, 1.0, 0), REFUSE, ("most",))],
        # two ticks at least, or the one value of an empty range (the docstring's promise)
        check=lambda a, v: None if isinstance(a, list) and (len(a) >= 2 or (v[0] == v[1] and a == [v[0]]))
        else f"{a!r}")
    out += quick("hookviz.render.step_label", lambda ctx, v: render.step_label(v), [
        ("valid", 1500, ACCEPT, ()), ("zero", 0, ACCEPT, ()), ("huge", 10**18, ACCEPT, ()), ("nan", math.nan, EITHER,
                                                                                             ("value",)),
        ("negative", -5, EITHER, ("value",)), ("str", "1500", REFUSE, ("value",))],
        check=lambda a, v: None if isinstance(a, str) and a and len(a) <= 8 else f"{a!r}")

    def figure(ctx: Ctx, v: Any) -> Any:
        from matplotlib.figure import Figure

        return v(Figure())

    out += quick("hookviz.render.figure_png", figure, [
        ("valid", lambda fig: render.figure_png(fig), ACCEPT, ()),
        ("dpi-zero", lambda fig: render.figure_png(fig, dpi=0), REFUSE, ("dpi",)),
        ("dpi-str", lambda fig: render.figure_png(fig, dpi="72"), REFUSE, ("dpi",)),
        ("not-a-figure", lambda fig: render.figure_png("fig"), REFUSE, ("fig", "Figure"))], check=_png)
    out += quick("hookviz.render.text_sizes_px", figure, [
        ("valid", lambda fig: render.text_sizes_px(fig), ACCEPT, ()),
        ("not-a-figure", lambda fig: render.text_sizes_px(None), REFUSE, ("fig", "Figure"))],
        check=lambda a, v: None if isinstance(a, list) else f"{a!r}")
    out += quick("hookviz.render.timeline_figure", figure, [
        ("valid", lambda fig: render.timeline_figure(fig, [(0, "forward", "forward", "0")], ["forward"]), ACCEPT, ()),
        ("no-events", lambda fig: render.timeline_figure(fig, [], ["forward"]), ACCEPT, ()),
        ("bad-event", lambda fig: render.timeline_figure(fig, [(0, "forward")], ["forward"]), REFUSE, ("events",)),
        ("events-str", lambda fig: render.timeline_figure(fig, "events", ["forward"]), REFUSE, ("events",))],
        check=lambda a, v: None if a is not None else "no figure")
    def chart(fig: Any, **changes: Any) -> Any:
        args = dict(fig=fig, steps=steps, loss=steps.copy(), layer_names=["a"], act_mean=np.ones((5, 1)),
                    act_std=np.ones((5, 1)), colorful=np.ones((5, 4)), colorful_limit=1.0, grad_hist=np.ones(4),
                    grad_edges=np.linspace(-10, 0, 5), grad_by_depth=np.ones(1), selected="a")
        args.update(changes)
        return render.monitor_figure(**args)

    out += quick("hookviz.render.monitor_figure", figure, [
        ("valid", lambda fig: chart(fig), EITHER, ("steps",)),
        ("not-a-figure", lambda fig: chart(None), REFUSE, ("fig", "Figure")),
        ("steps-str", lambda fig: chart(fig, steps="steps"), REFUSE, ("steps",)),
        ("selected-unknown", lambda fig: chart(fig, selected="zz"), REFUSE, ("selected", "zz"))])
    steps = np.arange(1, 6, dtype=np.float64)
    out += quick("hookviz.render.pace_png", lambda ctx, v: render.pace_png(*v), [
        ("valid", (steps, steps[::-1].copy(), ["a"], np.ones(1)), ACCEPT, ()),
        ("no-steps", (np.zeros(0), np.zeros(0), ["a"], np.full(1, np.nan)), ACCEPT, ()),
        ("nan-loss", (steps, np.full(5, np.nan), ["a"], np.ones(1)), ACCEPT, ()),
        ("mismatched", (steps, steps[:3], ["a"], np.ones(1)), REFUSE, ("loss", "steps")),
        ("names-str", (steps, steps, "ab", np.ones(1)), REFUSE, ("layer_names",)),
        ("depth-2d", (steps, steps, ["a"], np.ones((5, 1))), REFUSE, ("grad_by_depth",))], check=_png)
    out += quick("hookviz.render.figure_text", lambda ctx, v: render.figure_text(v), [
        ("valid", "loss", ACCEPT, ()), ("int", 3, REFUSE, ("text",)), ("None", None, REFUSE, ("text",))],
        check=lambda a, v: None if isinstance(a, str) else f"{a!r}")
    for name in ("cjk_font", "panel_font", "use_cjk_font"):
        fn = getattr(render, name)
        out += quick(f"hookviz.render.{name}", lambda ctx, v, fn=fn: fn(*v), [
            ("valid", (), ACCEPT, ()), ("an-argument", ("zh",), REFUSE, ("positional", "argument"))])
    return out


def summarize_cases() -> list[Case]:
    values = torch.randn(50, generator=torch.Generator().manual_seed(0))
    out = Spec("hookviz.summarize.histogram", summarize.histogram, [
        Arg("values", "any", values, positional=True, extra=[
            Value("numpy", values.numpy(), EITHER), Value("all-nan", torch.full((5,), math.nan), ACCEPT),
            Value("empty", torch.zeros(0), ACCEPT), Value("int-tensor", torch.arange(5), ACCEPT),
            Value("str", "values", REFUSE), Value("None", None, REFUSE)]),
        Arg("bins", "count", 10, minimum=1, skip=("1e9", "1e18")),
    ], check=lambda a, args: None if isinstance(a, summarize.Histogram) else f"{a!r}").cases()
    samples = [torch.randn(6, generator=torch.Generator().manual_seed(1)), torch.zeros(3)]
    sample_inputs = [
        ("valid", samples, ACCEPT, ()), ("empty-list", [], EITHER, ("samples",)),
        ("one-empty-sample", [torch.zeros(0)], ACCEPT, ()), ("str", "abc", REFUSE, ("samples",)),
        ("None", None, REFUSE, ("samples",)), ("numpy", [np.ones(3)], ACCEPT, ()),
        ("nan", [torch.tensor([math.nan, 1.0])], ACCEPT, ()),
    ]
    out += quick("hookviz.summarize.pad_samples", lambda ctx, v: summarize.pad_samples(v), sample_inputs,
                 check=lambda a, v: None if isinstance(a, summarize.Padded) else f"{a!r}")
    out += quick("hookviz.summarize.sample_stats", lambda ctx, v: summarize.sample_stats(v), sample_inputs,
                 check=lambda a, v: None if isinstance(a, dict) else f"{a!r}")
    out += quick("hookviz.summarize.log_histograms", lambda ctx, v: summarize.log_histograms(v), sample_inputs,
                 check=lambda a, v: None if isinstance(a, tuple) else f"{a!r}")
    out += quick("hookviz.summarize.abs_histograms",
                 lambda ctx, v: summarize.abs_histograms(v, [1.0] * (len(v) if isinstance(v, list) else 1)),
                 sample_inputs, check=lambda a, v: None if isinstance(a, np.ndarray) else f"{a!r}")
    out += quick("hookviz.summarize.log_histograms", lambda ctx, v: summarize.log_histograms(samples, *v), [
        ("lo-above-hi", (0.0, -10.0), REFUSE, ("lo", "hi")), ("bins-zero", (-10.0, 0.0, 0), REFUSE, ("bins",)),
        ("nan-lo", (math.nan, 0.0), REFUSE, ("lo",))], short="summarize.log_histograms-range")
    out += quick("hookviz.summarize.abs_histograms", lambda ctx, v: summarize.abs_histograms(samples, v), [
        ("limits-too-few", [1.0], REFUSE, ("limits",)), ("limits-negative", [-1.0, 1.0], REFUSE, ("limits",)),
        ("limits-nan", [math.nan, 1.0], EITHER, ("limits",))], short="summarize.abs_histograms-limits")
    out += quick("hookviz.summarize.as_numpy", lambda ctx, v: summarize.as_numpy(v), [
        ("tensor", torch.ones(2, requires_grad=True), ACCEPT, ()), ("bfloat16", torch.ones(2, dtype=torch.bfloat16),
                                                                     ACCEPT, ()),
        ("numpy", np.ones(2), ACCEPT, ()), ("list", [1.0, 2.0], EITHER, ("value",)), ("str", "x", REFUSE, ("value",)),
        ("None", None, REFUSE, ("value",)), ("meta", torch.empty(2, device="meta"), REFUSE, ("value", "meta"))],
        check=lambda a, v: None if isinstance(a, np.ndarray) and a.dtype.kind == "f" else f"{a!r}")
    out += quick("hookviz.summarize.nice_limit", lambda ctx, v: summarize.nice_limit(v), [
        ("valid", 0.37, ACCEPT, ()), ("zero", 0.0, ACCEPT, ()), ("nan", math.nan, ACCEPT, ()),
        ("negative", -3.0, EITHER, ("value",)), ("str", "1", REFUSE, ("value",)), ("huge", 1e300, ACCEPT, ())],
        check=lambda a, v: None if isinstance(a, float) and math.isfinite(a) and a > 0 else f"{a!r}")
    out += Spec("hookviz.summarize.RunHistory", summarize.RunHistory, [
        Arg("capacity", "count", 8, minimum=2, skip=("1e18",), extra=[Value("odd", 3, REFUSE)])],
        check=lambda a, args: None if isinstance(a, summarize.RunHistory) else f"{a!r}", keywords=False).cases()
    padded = summarize.pad_samples(samples)
    out += quick("hookviz.summarize.Padded", lambda ctx, v: summarize.Padded(*v), [
        ("valid", (padded.values, padded.mask, padded.lengths), ACCEPT, ()),
        ("mismatched", (padded.values, padded.mask[:1], padded.lengths), REFUSE, ("mask", "values")),
        ("lists", ([[1.0]], [[True]], [1]), EITHER, ("values",))])
    return out


def text_cases() -> list[Case]:
    names = ["features.0", "features.4", "classifier.1"]
    out = []
    for name, fn in (("closest_names", text.closest_names), ("closest_hint", text.closest_hint)):
        out += Spec(f"hookviz.text.{name}", fn, [
            Arg("name", "text", "feature.0", positional=True, skip=("empty", "blank", "upper", "padded", "fullwidth"),
                extra=[Value("empty-ok", "", ACCEPT)]),
            Arg("candidates", "sequence", names, positional=True, extra=[Value("str", "features.0", REFUSE)]),
            Arg("n", "count", 2, minimum=1),
        ], check=lambda a, args: None if isinstance(a, (list, str)) else f"{a!r}").cases()
    out += Spec("hookviz.text.display_width", text.display_width, [
        Arg("text", "text", "位置 where", positional=True, skip=("empty", "blank", "padded", "upper", "fullwidth"),
            extra=[Value("empty-ok", "", ACCEPT), Value("combining", "e\u0301", ACCEPT)])],
        check=lambda a, args: None if isinstance(a, int) and 0 <= a <= 2 * len(args["text"]) else f"{a!r}").cases()
    out += Spec("hookviz.text.text_table", text.text_table, [
        Arg("headers", "sequence", ["a", "b"], positional=True),
        Arg("rows", "sequence", [[1, 2], ["x", "钩子"]], positional=True,
            extra=[Value("ragged", [[1], [1, 2, 3]], REFUSE), Value("str", "rows", REFUSE)]),
    ], check=lambda a, args: None if isinstance(a, str) else f"{a!r}").cases()
    return out


def guards_cases() -> list[Case]:
    out = Spec("hookviz.guards.check_int", lambda value: guards.check_int(value, "steps", minimum=1), [
        Arg("value", "count", 3, positional=True, minimum=1, aliases=("steps",))],
        check=lambda a, args: None if type(a) is int and a == int(args["value"]) else f"{a!r}", keywords=False,
        short="guards.check_int").cases()
    out += Spec("hookviz.guards.check_number", lambda value: guards.check_number(value, "lr", above=0.0), [
        Arg("value", "number", 0.5, positional=True, positive=True, aliases=("lr",))],
        check=lambda a, args: None if type(a) is float else f"{a!r}", keywords=False,
        short="guards.check_number").cases()

    def modes(ctx: Ctx, v: Any) -> Any:
        with guards.run_mode(ctx.model, v):
            ctx.model(ctx.x)
        return ctx.model.training

    out += quick("hookviz.guards.run_mode", modes, [
        ("eval", False, ACCEPT, ()), ("train", True, ACCEPT, ()), ("str", "eval", REFUSE, ("training",)),
        ("None", None, REFUSE, ("training",))], setup=_model_setup)
    out += quick("hookviz.guards.run_mode", lambda ctx, v: _enter(guards.run_mode(v, False)), [
        ("not-a-model", "model", REFUSE, ("model",))], short="guards.run_mode-model")
    out += quick("hookviz.guards.shown_array", lambda ctx, v: guards.shown_array(v), [
        ("tensor", torch.zeros(2, 3), ACCEPT, ()), ("numpy", np.zeros((400, 3), np.float32), ACCEPT, ()),
        ("None", None, ACCEPT, ()), ("long-str", "x" * 20_000, ACCEPT, ()), ("list", [[1, 2]] * 500, ACCEPT, ())],
        check=lambda a, v: None if isinstance(a, str) and "\n" not in a and len(a) <= 80 else f"{a!r}")
    out += quick("hookviz.guards.check_array", lambda ctx, v: guards.check_array(v, "values", ndim=(1, 2)), [
        ("numpy", np.ones((2, 3)), ACCEPT, ()), ("list", [1.0, 2.0], ACCEPT, ()),
        ("tensor", torch.ones(3, requires_grad=True), ACCEPT, ()), ("bfloat16", torch.ones(2, dtype=torch.bfloat16),
                                                                       ACCEPT, ()),
        ("str", "values", REFUSE, ("values",)), ("None", None, REFUSE, ("values",)),
        ("complex", np.ones(2, np.complex64), REFUSE, ("values",)), ("meta", torch.empty(2, device="meta"), REFUSE,
                                                                     ("values",)),
        ("ragged", [[1.0], [1.0, 2.0]], REFUSE, ("values",)), ("objects", np.array([object()]), REFUSE, ("values",)),
        ("3-D", np.zeros((2, 2, 2)), REFUSE, ("values",))],
        check=lambda a, v: None if isinstance(a, np.ndarray) and a.dtype.kind in "biuf" else f"{a!r}")
    png = render.message_png("x")
    out += quick("hookviz.guards.check_png", lambda ctx, v: guards.check_png(v, "png"), [
        ("png", png, ACCEPT, ()), ("bytearray", bytearray(png), ACCEPT, ()), ("str", "png", REFUSE, ("png",)),
        ("not-png", b"GIF89a", REFUSE, ("png",)), ("None", None, REFUSE, ("png",))],
        check=lambda a, v: None if isinstance(a, bytes) and a == bytes(v) else f"{a!r}")
    return out + _more_guards_cases()


def _more_guards_cases() -> list[Case]:
    """The rest of hookviz.guards: the flag, text, model, path and seed checks, and the model runner's helpers."""
    out = quick("hookviz.guards.check_flag", lambda ctx, v: guards.check_flag(v, "grads"), [
        ("True", True, ACCEPT, ()), ("np.bool_", np.bool_(False), ACCEPT, ()),
        ("str-False", "False", REFUSE, ("grads",)), ("int-1", 1, REFUSE, ("grads",)),
        ("None", None, REFUSE, ("grads",))],
        check=lambda a, v: None if a is bool(v) else f"{a!r}")
    out += quick("hookviz.guards.check_str", lambda ctx, v: guards.check_str(v, "key", empty=False), [
        ("valid", "show-fc", ACCEPT, ()), ("cjk", "钩子", ACCEPT, ()), ("blank", " \t", REFUSE, ("key",)),
        ("bytes", b"key", REFUSE, ("key",)), ("None", None, REFUSE, ("key",)), ("list", ["key"], REFUSE, ("key",))],
        check=lambda a, v: None if a == v else f"{a!r}")
    out += quick("hookviz.guards.check_strings", lambda ctx, v: guards.check_strings(v, "layers"), [
        ("list", ["0", "2"], ACCEPT, ()), ("tuple", ("0",), ACCEPT, ()), ("empty", [], ACCEPT, ()),
        ("a-string", "0", REFUSE, ("layers",)), ("ints", [0, 2], REFUSE, ("layers",)), ("None", None, REFUSE,
                                                                                     ("layers",))],
        check=lambda a, v: None if a == list(v) else f"{a!r}")
    out += quick("hookviz.guards.check_module", lambda ctx, v: guards.check_module(v(ctx), "model"), [
        ("a-model", lambda ctx: ctx.model, ACCEPT, ()), ("a-class", lambda ctx: nn.Linear, REFUSE, ("model",)),
        ("state-dict", lambda ctx: ctx.model.state_dict(), REFUSE, ("model",)),
        ("None", lambda ctx: None, REFUSE, ("model",))],
        check=lambda a, v: None if isinstance(a, nn.Module) else f"{a!r}", setup=_model_setup)
    out += quick("hookviz.guards.check_path", lambda ctx, v: guards.check_path(v, "directory", kind="folder"), [
        ("a-folder", _BASE, ACCEPT, ()), ("str", str(_BASE), ACCEPT, ()),
        ("missing", _BASE / "missing", REFUSE, ("directory",)), ("empty", "", REFUSE, ("directory",)),
        ("long-20000", "d" * 20_000, REFUSE, ("directory",)), ("int", 3, REFUSE, ("directory",))],
        check=lambda a, v: None if isinstance(a, Path) and a.is_dir() else f"{a!r}")
    out += quick("hookviz.guards.check_seed", lambda ctx, v: guards.check_seed(v), [
        ("zero", 0, ACCEPT, ()), ("np.int64", np.int64(7), ACCEPT, ()), ("negative", -1, REFUSE, ("seed",)),
        ("2**63", 2**63, REFUSE, ("seed",)), ("float", 1.5, REFUSE, ("seed",)), ("None", None, REFUSE, ("seed",))],
        check=lambda a, v: None if type(a) is int and a == int(v) else f"{a!r}")
    out += quick("hookviz.guards.shown", lambda ctx, v: guards.shown(v), [
        ("long-str", "x" * 20_000, ACCEPT, ()), ("None", None, ACCEPT, ()),
        ("broken-repr", type("Broken", (), {"__repr__": lambda self: 1 / 0})(), ACCEPT, ())],
        check=lambda a, v: None if isinstance(a, str) and len(a) <= 60 else f"{a!r}")
    out += quick("hookviz.guards.describe_value", lambda ctx, v: guards.describe_value(v), [
        ("tensor", torch.zeros(8, 1, 8, 8), ACCEPT, ()), ("list", [1, 2, 3], ACCEPT, ()), ("None", None, ACCEPT, ())],
        check=lambda a, v: None if isinstance(a, str) and a else f"{a!r}")

    def failing(ctx: Ctx, v: Any) -> Any:
        try:
            ctx.model(v)
        except RuntimeError as error:
            return guards.failing_layer(ctx.model, error)
        return "no error"

    out += quick("hookviz.guards.failing_layer", failing, [
        ("wrong-width", torch.zeros(2, 3), ACCEPT, ())],
        check=lambda a, v: None if a == "0" else f"{a!r}", setup=_model_setup)
    out += quick("hookviz.guards.run_model", lambda ctx, v: guards.run_model(ctx.model, v(ctx), "capture()"), [
        ("valid", lambda ctx: ctx.x, ACCEPT, ()), ("wrong-width", lambda ctx: torch.zeros(2, 3), REFUSE,
                                                   ("inputs", "layer")),
        ("str", lambda ctx: "x", REFUSE, ("inputs",))], setup=_model_setup)
    return out


def _enter(manager: Any) -> None:
    with manager:
        pass


def _hooked_setup() -> Ctx:
    ctx = _model_setup()
    ctx.handle = ctx.model[0].register_forward_hook(lambda module, args, output: output.mul_(2))  # a finding
    return ctx


def _diagnosis(ctx: Ctx) -> Any:
    return hookviz.diagnose(ctx.model, ctx.x)


def diagnosis_cases() -> list[Case]:
    def run(ctx: Ctx, v: Any) -> Any:
        return v(_diagnosis(ctx))

    return quick("hookviz.Diagnosis", run, [
        ("text", str, ACCEPT, ()), ("html", lambda d: d._repr_html_(), ACCEPT, ()),
        ("kinds", lambda d: d.kinds(), ACCEPT, ()),
        ("mistakes", lambda d: d.mistakes(), ACCEPT, ()), ("at-a-layer", lambda d: d.at("0"), ACCEPT, ()),
        ("at-unknown-layer", lambda d: d.at("zz"), EITHER, ("where", "zz")), ("at-int", lambda d: d.at(0), REFUSE,
                                                                             ("where",)),
        ("at-None", lambda d: d.at(None), REFUSE, ("where",)),
        ("made-from-ints", lambda d: str(type(d)([1, 2])), REFUSE, ("Finding", "finding")),
    ], setup=_hooked_setup, short="Diagnosis")


def demo_cases() -> list[Case]:
    ddp = registry.module("hookviz.ddp_demo")
    fsdp = registry.module("hookviz.fsdp_demo")
    out = quick("hookviz.ddp_demo.free_port", lambda ctx, v: ddp.free_port(*v), [
        ("valid", (), ACCEPT, ()), ("an-argument", (0,), REFUSE, ("positional", "argument"))],
        check=lambda a, v: None if isinstance(a, int) and 0 < a < 65536 else f"{a!r}")
    out += quick("hookviz.ddp_demo.counting_hook", lambda ctx, v: ddp.counting_hook(*v), [
        ("state-not-list", ("state", None), REFUSE, ("state",)), ("bucket-None", ([], None), REFUSE, ("bucket",))])
    out += Spec("hookviz.fsdp_demo.probe_batch", fsdp.probe_batch, [
        Arg("batch_size", "count", 4, minimum=1, skip=("1e9", "1e18")), Arg("seed", "int", 1, minimum=0)],
        check=lambda a, args: None if isinstance(a, torch.Tensor) and a.shape[0] == int(args.get("batch_size", 4))
        else f"{a!r}").cases()
    out += Spec("hookviz.fsdp_demo.probe_model", fsdp.probe_model, [Arg("seed", "int", 0, minimum=0)],
                check=lambda a, args: None if isinstance(a, nn.Module) else f"{a!r}", keeps_rng=True).cases()
    out += quick("hookviz.widgets.small_model", lambda ctx, v: hookviz.widgets.small_model(*v), [
        ("valid", (), ACCEPT, ()), ("an-argument", (3,), REFUSE, ("positional", "argument"))],
        check=lambda a, v: None if isinstance(a, nn.Sequential) else f"{a!r}")
    out += quick("hookviz.widgets.StaticPicture", lambda ctx, v: hookviz.widgets.StaticPicture(*v), [
        ("valid", (render.message_png("x"), "caption"), ACCEPT, ()),
        ("png-str", ("not png", "caption"), REFUSE, ("png",)), ("caption-None", (b"\x89PNG", None), REFUSE,
                                                                ("caption",))],
        check=lambda a, v: None if repr(a) == v[1] else f"{a!r}")
    out += quick("hookviz.diagnose.clinic", lambda ctx, v: registry.module("hookviz.diagnose").clinic(v), [
        ("valid", 7, ACCEPT, ()), ("zero", 0, REFUSE, ("number",)), ("out-of-range", 999, REFUSE, ("number",)),
        ("str", "7", REFUSE, ("number",)), ("float", 7.5, REFUSE, ("number",)), ("np.int64", np.int64(7), ACCEPT, ())],
        check=lambda a, v: None if isinstance(a, str) and a.endswith("mistake-07") else f"{a!r}")
    rule = registry.module("hookviz.diagnose").Rule
    out += quick("hookviz.diagnose.Rule", lambda ctx, v: v(), [
        ("subclass-without-id", lambda: type("NoId", (rule,), {}), EITHER, ("id",))])
    return out


def cases() -> list[Case]:
    out = (models_cases() + diagnosis_cases() + capture_cases() + i18n_cases() + extract_cases() + render_cases()
           + summarize_cases() + text_cases() + guards_cases() + demo_cases())
    for case in out:
        case.timeout = min(case.timeout, 8.0 if "train" not in case.entry else case.timeout)
    makes_models = ("DigitsCNN", "train_digits_cnn", "train_tiny_transformer", "load_pretrained_cnn", "small_model",
                    "probe_model", "probe_batch", "make_digits_step", "digits_step_fn", "load_tiny_transformer")
    for case in out:  # building a model draws its initial weights from the global generator, as torch's layers do
        case.keeps_rng = case.keeps_rng and not case.entry.endswith(makes_models)
    return out
