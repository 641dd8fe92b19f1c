"""The notes a recomputed (Llama-style) attention pattern can carry are Chinese under zh, one by one."""

from __future__ import annotations

import re

import pytest
import torch
from test_i18n import english_left

from hookviz import i18n
from hookviz.widgets.decoder_attention import _FAILED, _decide

HEAD_DIM = 4


@pytest.fixture
def chinese():
    before = i18n.get_language()
    i18n.set_language("zh")
    yield
    i18n.set_language(before)


def _call(q_width: int = 8, attended: bool = True, v: bool = True, bad_attended: bool = False) -> dict:
    torch.manual_seed(0)
    got = {"q": torch.randn(1, 3, q_width), "k": torch.randn(1, 3, 8), "rotary": None}
    if v:
        got["v"] = torch.randn(1, 3, 8)
    if attended:
        got["attended"] = torch.randn(1, 3, 7 if bad_attended else 8)
    return got


def _notes() -> list[str]:
    """Every kind of note _decide writes, for a layer named "model.layers.0.self_attn"."""
    name = "model.layers.0.self_attn"
    notes = [
        _decide(name, _call(v=False), HEAD_DIM)[1].note,  # v_proj not called: not checked
        _decide(name, _call(bad_attended=True), HEAD_DIM)[1].note,  # o_proj's input of another width
        _decide(name, _call(), HEAD_DIM)[1].note,  # random values: nothing reproduces o_proj's input
        _decide(name, _call(q_width=7), HEAD_DIM)[1].note,  # q does not split into heads of 4
        _FAILED.format(layer=name, error=0.5),
    ]
    return [note.removeprefix(name + ": ") for note in notes if note]


def test_every_pattern_note_is_chinese(chinese: None) -> None:
    notes = _notes()
    assert len(notes) == 5
    for note in notes:
        shown = i18n.tr(note)
        assert shown != note, f"no Chinese for: {note}"
        left = english_left(re.sub(r"（\w+Error：.*）", "", shown))  # a quoted Python error stays as Python says it
        assert not left, f"English left in {shown!r}: {left}"


def test_a_widget_arguments_number_refusal_is_chinese(chinese: None) -> None:
    """check_int's refusals (a widget argument that must be a whole number) read in Chinese, fix included."""
    from hookviz.widgets.common import check_int

    for value, minimum, fix in (("x", None, "None shows the mean of the heads"), (1, 2, "the default is 512"),
                                (1.5, None, "")):
        with pytest.raises((TypeError, ValueError)) as info:
            check_int(value, "head", minimum=minimum, fix=fix)
        message = str(info.value)
        assert "head" in message and not english_left(message.replace("head", "")), message


def test_the_attention_explorers_repr_is_its_caption_in_chinese(chinese: None) -> None:
    """An AttentionExplorer's repr (and its static view's text) is the caption in the learner's language."""
    from hookviz.llama import load_tiny_llama, make_copy_batch
    from hookviz.widgets import AttentionExplorer

    prompts, _ = make_copy_batch(2)
    explorer = AttentionExplorer(load_tiny_llama(), prompts)
    try:
        shown = repr(explorer)
        inner = shown.removeprefix("AttentionExplorer(").removesuffix(")").replace(explorer.state.layer, "")
        assert not english_left(inner), shown
        i18n.set_language("en")
        assert repr(explorer) == f"AttentionExplorer({explorer.state.caption()})"  # English as notebooks print it
    finally:
        explorer.close()
