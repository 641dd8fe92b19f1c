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
