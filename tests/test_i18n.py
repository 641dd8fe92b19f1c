"""hookviz's learner-facing messages in Chinese: the switch, the catalogue, and how much of it is covered.

One mechanism (:mod:`hookviz.i18n`): messages are written in English and shown through ``tr``; the
language comes from ``set_language`` (the zh notebooks call it), else ``HOOKVIZ_LANG``, else English.
"""

from __future__ import annotations

import ast
import string
from pathlib import Path

import pytest

import hookviz
from hookviz import i18n
from hookviz.exercises import ExerciseNotSolved, passed, report_not_solved
from hookviz.i18n_zh import MESSAGES

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
        "✓ 每层一个形状，各自记在自己的名字下\n✗ 还没有完成：在练习单元中给 `answer` 赋值\n"
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
    assert any("\u4e00" <= char <= "\u9fff" for char in MESSAGES[key]), key


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
