"""hookviz's learner-facing messages in Chinese: the switch, the catalogue, and how much of it is covered.

One mechanism (:mod:`hookviz.i18n`): messages are written in English and shown through ``tr``; the
language comes from ``set_language`` (the zh notebooks call it), else ``HOOKVIZ_LANG``, else English.
"""

from __future__ import annotations

import ast
import gc
import importlib
import inspect
import pkgutil
import re
import string
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

import hookviz
import hookviz.exercises
from hookviz import i18n
from hookviz.exercises import ExerciseNotSolved, nb01, passed, report_not_solved

MESSAGES = i18n.catalogue("zh").messages

CHECKERS = sorted((Path(hookviz.__file__).parent / "exercises").glob("nb*.py"))


@pytest.fixture(autouse=True)
def _english_afterwards(monkeypatch: pytest.MonkeyPatch):
    """Every test starts with no language chosen and no HOOKVIZ_LANG, and leaves it so."""
    monkeypatch.delenv("HOOKVIZ_LANG", raising=False)
    i18n.set_language(None)
    yield
    i18n.set_language(None)


def test_english_is_the_default_and_the_fallback() -> None:
    assert i18n.get_language() == "en"
    assert i18n.tr("the model should still return logits") == "the model should still return logits"
    i18n.set_language("zh")
    assert i18n.tr("a message nobody has translated") == "a message nobody has translated"


def test_set_language_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOOKVIZ_LANG", "zh_CN.UTF-8")
    assert i18n.get_language() == "zh"
    i18n.set_language("en")
    assert i18n.get_language() == "en"
    i18n.set_language(None)
    assert i18n.get_language() == "zh"
    monkeypatch.setenv("HOOKVIZ_LANG", "klingon")
    assert i18n.get_language() == "en"  # a stray setting never breaks a notebook
    with pytest.raises(ValueError, match="unknown language 'fr'"):
        i18n.set_language("fr")
    assert hookviz.set_language is i18n.set_language


def test_fields_are_matched_and_put_back() -> None:
    i18n.set_language("zh-CN")
    assert i18n.tr("after the first backward fn should have run once, it ran 3 times") == (
        "第一次反向传播之后 fn 应运行一次，实际运行了 3 次"
    )
    # {1}/{0}: a translation may put the values in another order.
    assert i18n.tr("channel 3 of features.4 has the highest mean activation for sample 0") == (
        "对样本 0，features.4 的通道 3 平均激活值最高"
    )
    assert i18n.tr("the answer is a set of names, e.g. {'save_model'}") == "答案是由名字组成的集合，例如 {'save_model'}"


def test_checkers_print_and_raise_in_the_chosen_language(capsys: pytest.CaptureFixture) -> None:
    i18n.set_language("zh")
    passed("one shape per layer, each under its own name")
    error = ExerciseNotSolved("not solved yet: set `answer` in the exercise cell")
    report_not_solved(error)
    assert capsys.readouterr().out == (
        "✓ 每层一个形状，各自记在自己的名字下\n✗ 还没有完成：在练习单元格中给 `answer` 赋值\n"
    )
    i18n.set_language("en")
    passed("one shape per layer, each under its own name")
    assert capsys.readouterr().out == "✓ one shape per layer, each under its own name\n"


def _fields(text: str) -> list[str]:
    return [field for _, field, _, _ in string.Formatter().parse(text) if field is not None]


@pytest.mark.parametrize("key", list(MESSAGES), ids=lambda k: k[:40])
def test_each_translation_keeps_the_fields_of_its_key(key: str) -> None:
    """As many ``{}`` in the translation as in the key (numbered ``{0}`` ... when reordered), and no
    English sentence left untranslated."""
    english, chinese = _fields(key), _fields(MESSAGES[key])
    assert all(field == "" for field in english), key
    if all(field == "" for field in chinese):
        assert len(chinese) == len(english), key
    else:
        assert sorted(int(field) for field in chinese) == list(range(len(english))), key
    chinese = MESSAGES[key]
    if not any("\u4e00" <= char <= "\u9fff" for char in chinese):  # only code and numbers: punctuation is all
        ascii_form = re.sub(r"\{\d+\}", "{}", chinese).replace("：", ":").replace("，", ",")
        assert ascii_form == key, f"{key!r} -> {chinese!r}: no Chinese in the translation"


def _template(node: ast.expr) -> str | None:
    """An English message in a checker as a catalogue key: computed parts become ``{}``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.replace("{", "{{").replace("}", "}}")
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value.replace("{", "{{").replace("}", "}}") if isinstance(v, ast.Constant) else "{}"
            for v in node.values
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _template(node.left), _template(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.IfExp):
        return "{}"
    return None


def checker_messages() -> dict[str, str]:
    """Every message a checker passes to ``expect``, ``passed`` or ``ExerciseNotSolved``: key → where."""
    found = {}
    for path in CHECKERS:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            position = {"expect": 1, "passed": 0, "ExerciseNotSolved": 0}.get(name)
            if position is None or len(node.args) <= position:
                continue
            template = _template(node.args[position])
            if template is not None:
                found.setdefault(template, f"{path.stem}:{node.lineno}")
    return found


def _translated(template: str) -> bool:
    """Whether a message made from ``template`` (its fields filled with a sample value) has a translation."""
    sample = template.replace("{}", "X").replace("{{", "{").replace("}}", "}")
    return i18n.translate(sample, "zh") != sample


def test_coverage_of_the_checkers_messages(capsys: pytest.CaptureFixture) -> None:
    """Lists the checker messages that have no Chinese yet (they are shown in English); every ✓ message a
    teacher notebook shows must be translated, and most hints should be."""
    messages = checker_messages()
    missing = sorted(f"{where}: {template}" for template, where in messages.items() if not _translated(template))
    with capsys.disabled():
        print(f"\nzh catalogue: {len(messages) - len(missing)} of {len(messages)} checker messages translated")
        for line in missing:
            print("  untranslated:", line)
    assert len(missing) <= len(messages) // 3, "most checker messages should have a Chinese form"


def test_widget_controls_are_labelled_in_the_chosen_language() -> None:
    """The explorer's controls carry Chinese labels in a zh notebook and English ones otherwise."""
    import torch

    from hookviz.widgets.explorer import LayerExplorer

    model = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.ReLU())
    inputs = torch.randn(2, 1, 8, 8)
    i18n.set_language("zh")
    chinese = LayerExplorer(model, inputs)
    i18n.set_language("en")
    english = LayerExplorer(model, inputs)
    assert chinese.layer.description == "层" and english.layer.description == "layer"
    assert chinese.sample.description == "样本" and english.sample.description == "sample"


# --------------------------------------------------------------------------- what learners actually see

#: Inline code (the learner's line, Python's own error message, API names) keeps its English.
_CODE = re.compile(r"(`+).+?\1", re.DOTALL)
#: Three or more English words in a row: a sentence (or a piece of one) left untranslated.
_ENGLISH_RUN = re.compile(r"[A-Za-z][A-Za-z'’]+(?:[ ,;:]+[A-Za-z][A-Za-z'’]+){2,}")


def english_left(message: str) -> list[str]:
    """The runs of English words a Chinese learner would read in ``message`` (code spans excepted)."""
    return _ENGLISH_RUN.findall(_CODE.sub("§", message))


def test_english_left_finds_sentences_and_spares_code() -> None:
    assert english_left("你的代码抛出了 `NameError: name 'x' is not defined`") == []
    assert english_left("对于课程自带的小型 Transformer，第 0 层：logit lens 的结果") == []
    assert english_left("提示：the function's parameters do not match") == ["the function's parameters do not match"]


def _checkers() -> list[Callable[..., None]]:
    """Every ``check_*`` of every notebook's checker module."""
    found = []
    for info in sorted(pkgutil.iter_modules(hookviz.exercises.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"hookviz.exercises.{info.name}")
        found += [getattr(module, name) for name in getattr(module, "__all__", []) if name.startswith("check_")]
    return found


def _takes_code_only(check: Callable[..., None]) -> bool:
    """Whether every argument of ``check`` is the learner's code (a function or class), not an answer or a state."""
    names = list(inspect.signature(check).parameters)
    return not any(name in ("state", "answer", "layer", "sample") for name in names)


def _check_id(check: Callable[..., None]) -> str:
    return f"{check.__module__.rsplit('.', 1)[-1]}.{check.__name__}"


def _typo(*args: object, **kwargs: object) -> object:
    """A learner's function with a typo: it uses a name that exists nowhere."""
    return ouptut  # noqa: F821 - the learner's typo


CODE_CHECKERS = [check for check in _checkers() if _takes_code_only(check)]


@pytest.mark.parametrize("check", CODE_CHECKERS, ids=_check_id)
def test_every_checker_reports_a_learners_own_error_in_chinese(check: Callable[..., None]) -> None:
    """The learner's code raises inside the check: every word around the quoted error is Chinese."""
    i18n.set_language("zh")
    arguments = [_typo] * len(inspect.signature(check).parameters)
    with pytest.raises(ExerciseNotSolved) as info:
        check(*arguments)
    message = str(info.value)
    del info
    gc.collect()
    assert "`NameError: name 'ouptut' is not defined`" in message, message  # quoted as Python printed it
    if message.startswith("你的代码抛出了"):  # the @checker wrapper's report (a few checkers word their own)
        assert re.search(r"出错位置：函数 `_typo`，文件 test_i18n\.py 第 \d+ 行：`return ouptut", message), message
        assert "提示：`ouptut` 在你的函数运行的地方没有定义" in message, message
    assert not english_left(message), f"English left in {message!r}: {english_left(message)}"


def _wrong_answers() -> list[tuple[Callable[..., None], tuple[object, ...]]]:
    """Wrong answers learners type (from the wrong-answer tests): one per checker of 00-08, and those of 12, 13."""
    import test_nb12_checkers as nb12_cases
    import test_nb13_exercises as nb13_cases
    import test_wrong_answers

    from hookviz.exercises import nb12, nb13

    cases, seen = [], set()
    for check, answers, _ in test_wrong_answers.CASES:
        if check not in seen:
            seen.add(check)
            cases.append((check, answers))
    cases += [
        (nb12.check_attention_weights, (nb12_cases._weights(average=True),)),
        (nb12.check_attention_weights, (nb12_cases._weights(average=False, ask=False),)),
        (nb12.check_attention_weights, (nb12_cases._weights(average=False, remove=False),)),
        (nb12.check_patch_position, (nb12_cases._patch(position_only=False, returns=True),)),
        (nb12.check_logit_lens, (nb12_cases._lens(norm=False),)),
        (nb13.check_true_norm_logger, (nb13_cases.parameter_hook_logger,)),
    ]
    return cases


WRONG_ANSWERS = _wrong_answers()


@pytest.mark.parametrize(
    ("check", "answers"), WRONG_ANSWERS, ids=[f"{_check_id(c)}-{a[0].__name__}" for c, a in WRONG_ANSWERS]
)
def test_wrong_answers_are_refused_in_chinese(check: Callable[..., None], answers: tuple[object, ...]) -> None:
    """The hint a learner reads for a wrong answer, model names inside it included, has no English sentence."""
    i18n.set_language("zh")
    with pytest.raises(ExerciseNotSolved) as info:
        check(*answers)
    message = str(info.value)
    del info
    gc.collect()
    assert re.search("[\u4e00-\u9fff]", message), message
    assert not english_left(message), f"English left in {message!r}: {english_left(message)}"


def test_model_names_inside_messages_are_translated() -> None:
    import test_nb12_checkers as nb12_cases

    from hookviz.exercises import nb12

    i18n.set_language("zh")
    with pytest.raises(ExerciseNotSolved, match="对于课程自带的小型 Transformer，第 0 层") as info:
        nb12.check_logit_lens(_lens_of_the_wrong_layer(nb12_cases))
    assert "tiny transformer" not in str(info.value)


def _lens_of_the_wrong_layer(cases: object) -> Callable[..., list[torch.Tensor]]:
    """A logit lens that decodes every layer's *input* instead of its output (right shape, wrong numbers)."""

    def logit_lens(model, tokens):  # noqa: ANN001, ANN202
        kept = []
        handles = [layer.register_forward_pre_hook(lambda m, a: kept.append(a[0])) for layer in model.encoder.layers]
        try:
            with torch.no_grad():
                model(tokens)
        finally:
            for handle in handles:
                handle.remove()
        return [model.head(model.encoder.norm(x)) for x in kept]

    return logit_lens


def _register_on_a_tensor_without_grad(tensor: torch.Tensor, fn: Callable[..., object]) -> object:
    return tensor.detach().register_hook(fn)  # the learner's slip: a detached copy needs no grad


@pytest.mark.parametrize(
    ("language", "hint"),
    [
        ("en", "a hook can only be registered on a tensor that requires grad, and this one does not"),
        ("zh", "提示：只能在需要梯度的张量上注册钩子，而这个张量不需要梯度"),
    ],
)
def test_a_hook_on_a_tensor_that_needs_no_grad_gets_a_hint(language: str, hint: str) -> None:
    i18n.set_language(language)
    with pytest.raises(ExerciseNotSolved) as info:
        nb01.check_register_once(_register_on_a_tensor_without_grad)
    message = str(info.value)
    assert "RuntimeError: cannot register a hook on a tensor that doesn't require gradient" in message, message
    assert hint in message, message
    if language == "zh":
        assert not english_left(message), message


def test_names_put_into_messages_are_the_checkers_own_and_translated() -> None:
    """Every entry of the ``name`` context is a phrase the code marks with N_name (a checker's model name, a case
    label, a row label a notebook prints), in Chinese."""
    from hookviz.i18n_extract import CONTEXT_NAME, extract_file, extract_notebook

    NAMES = i18n.catalogue("zh").names  # noqa: N806
    root = Path(hookviz.__file__).parent
    marked = {f.key for path in root.rglob("*.py") for f in extract_file(path) if f.context == CONTEXT_NAME}
    marked |= {
        f.key
        for path in (root.parent / "notebooks").glob("[0-9][0-9]_*.ipynb")
        for f in extract_notebook(path)
        if f.context == CONTEXT_NAME
    }
    for english, chinese in NAMES.items():
        assert english in marked, english
        assert re.search("[\u4e00-\u9fff]", chinese), english
    i18n.set_language("zh")
    message = "inf weight in features.4: the error names 'features', but 'features.4' produced the first non-finite "
    assert i18n.tr(message + "output") == (
        "features.4 中有一个 inf 权重：错误指出的是 'features'，但第一个产生非有限输出的是 'features.4'"
    )


def test_the_most_specific_key_wins() -> None:
    """A learner's cell and a file of theirs read differently, whatever the catalogue's order."""
    i18n.set_language("zh")
    in_cell = i18n.tr("in `hook`, line 3 of its cell: `x = y`")
    assert in_cell == "出错位置：函数 `hook`，所在单元格第 3 行：`x = y`"
    in_file = i18n.tr("in `hook`, line 3 of my_hooks.py: `x = y`")
    assert in_file == "出错位置：函数 `hook`，文件 my_hooks.py 第 3 行：`x = y`"
    assert i18n.tr("at line 7 of its cell") == "出错位置：所在单元格第 7 行"


def test_a_learners_typo_in_a_zh_student_copy_reads_in_chinese(shell, capsys: pytest.CaptureFixture) -> None:
    """The whole line a soft check prints in a Chinese student copy for a typo in the learner's hook."""
    shell.run_cell("%xmode Minimal")
    shell.run_cell("import hookviz\nimport hookviz.exercises\n\nhookviz.set_language('zh')")
    shell.run_cell("hookviz.exercises.soft_checks()")
    shell.run_cell(
        "def make_hook(store, name):\n"
        "    def hook(module, args, output):\n"
        "        store[name] = outptu.detach()\n"
        "\n"
        "    return hook\n"
    )
    capsys.readouterr()
    result = shell.run_cell("from hookviz.exercises import nb02\n\nnb02.check_feature_hook(make_hook)")
    assert not result.error_in_exec, "a soft check never stops the cell"
    printed = capsys.readouterr().out
    assert printed == (
        "✗ 你的代码抛出了 `NameError: name 'outptu' is not defined`\n"
        "  出错位置：函数 `hook`，所在单元格第 3 行：`store[name] = outptu.detach()`\n"
        "  提示：`outptu` 在你的函数运行的地方没有定义：可能是拼写错误，"
        "也可能用了另一个单元格里的名字（检\n"
        "    查程序会在它自己的模型上调用你的函数；请使用函数收到的参数）。\n"
    ), printed  # wrapped at 96 display columns (a Chinese character takes two), never right after （
    assert not english_left(printed)


def test_chinese_feedback_wraps_by_display_width_and_keeps_code_whole() -> None:
    """A Chinese hint is wrapped at 96 columns counting each Chinese character as two; code and English
    words are never split, and no line starts with closing punctuation or ends with opening punctuation."""
    from hookviz.exercises import FEEDBACK_WIDTH, wrap_feedback
    from hookviz.exercises import _columns as columns

    hint = "只能在需要梯度的张量上注册钩子，" * 4 + "请调用 `tensor.requires_grad_()`，"
    line = "  提示：" + hint + "或者检查它是否被冻结。" * 3
    wrapped = wrap_feedback(line).split("\n")
    assert len(wrapped) > 1
    assert all(columns(part) <= FEEDBACK_WIDTH for part in wrapped), wrapped
    assert "`tensor.requires_grad_()`" in "".join(part.strip() for part in wrapped)
    assert all(part.startswith("    ") for part in wrapped[1:])  # the line's indent plus two spaces
    assert not any(part.strip()[0] in "，。）" for part in wrapped[1:])
    assert not any(part.rstrip().endswith("（") for part in wrapped)
    short = "✓ 全部正确"
    assert wrap_feedback(short) == short
