"""The question box (``hookviz.AskBox``) speaks Chinese under ``hookviz.set_language("zh")``.

What the box itself says (its label, placeholder, button, status line and the answers' source labels) goes through
``hookviz.i18n.tr``; the answers' titles and summaries are the course's own text in the edition searched, so a
Chinese question gets Chinese sections. Each test fails when the translation is removed (the language set to
``"en"``): the English forms have words that ``english_left`` finds.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_i18n import english_left

import hookviz
from hookviz import i18n
from hookviz.widgets.ask import AskBox


@pytest.fixture(autouse=True)
def chinese() -> Iterator[None]:
    i18n.set_language("zh")
    yield
    i18n.set_language(None)


def _words(text: str) -> list[str]:
    """English words of two letters or more left in ``text`` (identifiers have a dot, underscore or digit)."""
    return [w for w in re.findall(r"[A-Za-z_][\w.]*", text) if re.fullmatch(r"[A-Za-z]{2,}", w)]


def _assert_chinese(text: str) -> None:
    assert not english_left(text), f"English left: {english_left(text)} in {text!r}"
    assert not _words(text), f"English words: {_words(text)} in {text!r}"


def _shown(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def _labels(box: AskBox) -> str:
    """What the results list shows besides the answers' own text (titles, summaries, links): their labels."""
    text = _shown(box.results.value)
    for answer in box.state.answers:
        for part in (answer.title, answer.summary, answer.href):
            text = text.replace(part, " ")
    return text


def test_the_box_and_its_status_are_chinese() -> None:
    box = AskBox()
    try:
        for label in (box.question.description, box.question.placeholder, box.button.description):
            _assert_chinese(label)
        assert (box.question.description, box.button.description) == ("问题", "提问")
        _assert_chinese(_shown(box.status.value))
        box.question.value = "   "
        _assert_chinese(_shown(box.status.value))
        assert "问题是空的" in _shown(box.status.value)
    finally:
        box.close()


def test_a_chinese_question_gets_chinese_sections_and_labels() -> None:
    box = AskBox("为什么钩子被调用了两次")
    try:
        assert all(a.link.startswith("notebooks/zh/") for a in box.state.answers)
        assert _shown(box.status.value).strip() == "关于“为什么钩子被调用了两次”的 3 个回答"
        assert "常见问题" in _labels(box)
        _assert_chinese(_labels(box))
        _assert_chinese(box.state.answers[0].title.replace("7.", ""))
    finally:
        box.close()


def test_an_english_question_in_the_chinese_box_keeps_chinese_labels() -> None:
    box = AskBox("how do I remove every hook at once?")
    try:
        assert box.state.answers[0].link == "notebooks/10_faq.ipynb#faq-remove-all"  # the edition of the question
        _assert_chinese(_shown(box.status.value).replace("how do I remove every hook at once?", "§"))
        _assert_chinese(_labels(box))
        # hookviz.ask's own display stays in the language of its answers (the notebooks' stored outputs)
        assert str(box.state.answers).startswith("3 answers to")
    finally:
        box.close()


def test_no_match_and_a_missing_course_are_said_in_chinese(tmp_path) -> None:
    assert hookviz.ask("how do I?").heading("zh").startswith("课程中没有与“how do I?”匹配的章节")
    box = AskBox(state=hookviz.AskState(root=tmp_path))
    try:
        box.ask("钩子")
        status = _shown(box.status.value)
        assert "不是课程仓库" in status
        _assert_chinese(status.replace(str(tmp_path), "§").replace("notebooks/questions.yml", "§"))
    finally:
        box.close()


#: Colloquial Chinese questions as learners type them (怎么/咋/为啥, 删/取消注册, 显存 ...), each with the sections
#: that answer it (a fragment of the link is enough): issue 45 and the second Chinese review's §2.3 examples.
COLLOQUIAL = [
    ("怎么删除一个 hook？", ["faq-remove", "05_lifetime_and_global_hooks.ipynb#handles"]),
    ("如何移除一个钩子", ["faq-remove"]),
    ("钩子怎么删", ["faq-remove", "#handles"]),
    ("hook 怎么取消注册", ["faq-remove", "#handles"]),
    ("注销钩子要怎么写", ["faq-remove", "#handles"]),
    ("为什么我的钩子被调用了两次？", ["faq-twice"]),
    ("为啥钩子跑了两遍", ["faq-twice", "rerun-stacks"]),
    ("怎么拿到中间层的输出（特征图）？", ["02_forward_hooks.ipynb#first-forward-hook"]),
    ("如何获取中间层的输出", ["02_forward_hooks.ipynb#first-forward-hook"]),
    ("full backward hook 里 grad_input 为什么是 None？", ["faq-grad-input-none", "#first-layer"]),
    ("用了 torch.compile 以后 hook 还会执行吗？", ["faq-compile-late", "#late-module-hook", "compile"]),
    ("模型 deepcopy 之后钩子还在吗？", ["faq-copy"]),
    ("训练时挂了钩子，显存一直涨怎么办", ["q-no-grad-store", "q-dummy-vs-storing", "why-detach", "#memory"]),
    ("在钩子里修改梯度的正确写法是什么", ["claim-B1", "01_tensor_hooks.ipynb#"]),
    ("怎么一次性移除模型上所有的钩子", ["faq-remove-all"]),
    ("Hugging Face 模型的注意力权重怎么用钩子拿到", ["q-sdpa-weights", "eager-weights", "need-weights"]),
    ("为什么我的钩子没有被调用", ["faq-not-firing"]),
    ("我的钩子咋不执行呢", ["faq-not-firing"]),
    ("钩子会让训练变慢吗", ["faq-speed"]),
    ("能注册多少个钩子", ["faq-how-many"]),
    ("钩子在 GPU 上能用吗", ["faq-gpu"]),
    ("中间层的梯度怎么拿", ["faq-intermediate-grad", "non-leaf-gradient"]),
    ("no_grad 下钩子还触发吗", ["faq-no-grad", "eval-no-grad"]),
    ("DataParallel 下钩子会怎样", ["faq-data-parallel", "q-data-parallel"]),
    ("钩子里怎么知道是哪一层调用的", ["q-layer-name"]),
    ("重复运行单元格钩子越挂越多", ["rerun-stacks"]),
    ("反向钩子返回元组会怎样", ["what-can-change"]),
    ("怎么在优化器 step 之后执行代码", ["optimizer-hooks", "recipe-ema"]),
    ("注意力层的钩子为什么不触发",
     ["q-forward-not-hooked", "out-proj-never-called", "pitfall-kwargs", "global-hooks-miss"]),
    ("存下来的激活值把内存撑爆了",
     ["q-no-grad-store", "q-dummy-vs-storing", "why-detach", "#memory", "q-remove-keeps"]),
]


def test_colloquial_chinese_questions_find_an_answering_section_in_the_top_three() -> None:
    """Issue 45: 怎么/咋 meet 如何, 删/取消注册/注销 meet 移除, 显存 meets 内存; at least 90 % in the top 3."""
    missed = []
    for question, wanted in COLLOQUIAL:
        links = hookviz.ask(question).links
        if not any(fragment in link for link in links for fragment in wanted):
            missed.append(f"{question!r} -> {links}")
    print(f"\n{len(COLLOQUIAL) - len(missed)}/{len(COLLOQUIAL)} colloquial Chinese questions answered in the top 3")
    assert len(COLLOQUIAL) >= 30 and len(missed) <= len(COLLOQUIAL) // 10, "\n".join(missed)
    assert "notebooks/zh/10_faq.ipynb#faq-remove" in hookviz.ask("怎么删除一个 hook？").links  # the brief's own


def test_the_chinese_development_set_is_answered_and_other_subjects_are_not() -> None:
    """tests/ask_zh_dev.yml, the questions hookviz/search.py's Chinese side is tuned on: at least 85 % find a section
    that answers them in the top 3 (a guard against a change that loses what tuning won), and the questions about
    other things (the weather, a phone's 内存, a fishing 鱼钩) get no answer."""
    import yaml

    entries = yaml.safe_load((Path(__file__).parent / "ask_zh_dev.yml").read_text(encoding="utf-8"))
    answered = [e for e in entries if e.get("expect") != "no-match"]
    missed = []
    for entry in answered:
        wanted = {a.replace("notebooks/", "notebooks/zh/", 1) for a in entry["answers"]}
        if not wanted & set(hookviz.ask(entry["question"]).links):
            missed.append(entry["question"])
    print(f"\n{len(answered) - len(missed)}/{len(answered)} development questions answered in the top 3")
    assert len(answered) >= 180 and len(missed) <= len(answered) * 0.15, "\n".join(missed)
    answers = {e["question"]: hookviz.ask(e["question"]).links for e in entries if e.get("expect") == "no-match"}
    assert len(answers) >= 25 and not {q: links for q, links in answers.items() if links}
