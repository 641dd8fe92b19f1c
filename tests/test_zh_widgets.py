"""The hook atlas and the widgets speak Chinese under ``hookviz.set_language("zh")``.

What a learner reads (the atlas table's headers, yes/no, counts, what a replacement changed and the situations'
questions; the widgets' options, captions and status lines; the words of their pictures where a Chinese font
is installed) is Chinese. Identifiers stay as written: hook kinds, situation names, layer names, module types,
shapes, Python types and errors. Every test here fails when the translation is removed (the language set to
``"en"``): the English forms have words that ``english_left`` or ``_english_words`` find.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Iterator
from typing import Any

import pytest
import torch
from test_i18n import english_left
from torch import nn

import hookviz
from hookviz import atlas, i18n, render
from hookviz.widgets import AttentionExplorer, HookTimeline, LayerExplorer, TrainingMonitor


@pytest.fixture(autouse=True)
def chinese() -> Iterator[None]:
    i18n.set_language("zh")
    yield
    i18n.set_language(None)


#: Words a Chinese learner reads as written: the names of things in code and of numbers' kinds.
ALLOWED = {"NaN", "Inf", "logit", "torch", "grad", "state_dict", "lr", "DDP", "step", "output"}


def _english_words(text: str, identifiers: Iterable[str] = ()) -> list[str]:
    """The English words left in a short label or caption once identifiers (layer names, types, shapes, code:
    anything with a dot, an underscore, a bracket or a digit in it) are taken out."""
    for identifier in sorted(set(identifiers), key=len, reverse=True):
        text = text.replace(identifier, " ")
    words = re.findall(r"[A-Za-z_][\w.'’()\[\]|/=-]*", text)
    return [w for w in words if re.fullmatch(r"[A-Za-z]{2,}", w) and w not in ALLOWED and not w.endswith("Error")]


def _assert_chinese(text: str, identifiers: Iterable[str] = ()) -> None:
    for identifier in sorted(set(identifiers), key=len, reverse=True):
        text = text.replace(identifier, "§")
    assert not english_left(text), f"English left: {english_left(text)} in {text[:300]!r}"
    assert not _english_words(text, identifiers), (
        f"English words: {_english_words(text, identifiers)} in {text[:300]!r}"
    )


# ---------------------------------------------------------------------------------------------- the atlas
def _table(**filters: Any) -> atlas.AtlasTable:
    stored = {version: atlas.load_snapshot(version) for version in atlas.stored_versions()}
    return atlas.AtlasTable(atlas.merge_versions(stored), teaches=atlas.teaching_links(), **filters)


def _identifiers(table: atlas.AtlasTable) -> set[str]:
    """What the atlas shows as written: kinds, situations, categories' names, what hooks receive, errors, links."""
    # the Entry fields after each header, and the code in the questions (method names, arguments)
    names = {"kind", "category", "situation", "fires", "calls", "receives", "returns", "error"}
    names |= {"None", "module", "params", "forward", "loss", "x"}
    for entry, _ in table.rows:
        names |= {entry.kind, entry.situation, entry.receives, entry.error}
    names |= {f"({link})" for link in table.teaches.values()} | {
        link.replace(".ipynb", "") for link in table.teaches.values()
    }
    return names - {""}


def _page_text(page: str) -> str:
    """What a learner reads in the HTML: the text between the tags and the tooltips."""
    titles = " ".join(html.unescape(t) for t in re.findall(r'title="([^"]*)"', page))
    return html.unescape(re.sub(r"<[^>]+>", " ", page)) + " " + titles


def test_the_atlas_table_is_chinese() -> None:
    table = _table()
    page = table.to_html(limit=80)
    text = _page_text(page)
    assert "共 606 行，显示 606 行" in text and "…… 另有 526 行未显示" in text
    assert "是否触发（fires）" in text and "最普通的情况：触发一次" in text and "生命周期" in text
    _assert_chinese(text, _identifiers(table))
    markdown = table.to_markdown()
    _assert_chinese(markdown.replace("|", " "), _identifiers(table))


def test_every_question_and_return_of_the_atlas_is_chinese() -> None:
    table = _table()
    for entry, versions in table.rows:
        question = i18n.tr(entry.question)
        assert question != entry.question or not english_left(question), entry.question
        _assert_chinese(question, _identifiers(table) | {"module", "params", "functional_call", "x"})
        for cell in table.shown_cells(entry, versions)[3:7:3]:  # fires, returns
            _assert_chinese(cell, _identifiers(table))


def test_the_stored_english_table_becomes_what_zh_shows() -> None:
    """``scripts/make_zh.py`` turns notebook 16's stored English table into the Chinese one the code shows."""
    table = _table()
    for limit in (None, 12):
        i18n.set_language("en")
        english = table.to_html(limit)
        i18n.set_language("zh")
        assert atlas.localise_html(english, "zh") == table.to_html(limit)
        assert atlas.localise_html(english, "en") == english
    assert atlas.localise_html("<p>other</p>", "zh") == "<p>other</p>"


def test_the_atlas_widget_is_chinese() -> None:
    table = _table()
    widget = atlas.atlas_widget(table, limit=20)
    try:
        labels = [
            widget.query.description,
            widget.query.placeholder,
            widget.kind.description,
            widget.category.description,
        ]
        labels += [label for label, _ in widget.kind.options[:1]] + [label for label, _ in widget.category.options]
        for label in labels:
            _assert_chinese(label, _identifiers(table) | {"deepcopy", "forward", *atlas.CATEGORIES})
        assert widget.category.options[1] == ("生命周期（lifecycle）", "lifecycle")
        widget.category.value = "timing"  # the values stay the names
        widget.query.value = "第一次调用"  # Chinese words search the Chinese questions
        assert table.visible() and all(e.category == "timing" for e, _ in table.visible())
        _assert_chinese(_page_text(widget.view.value), _identifiers(table))
    finally:
        widget.close()


# ---------------------------------------------------------------------------------------------- widgets
def _control_labels(widget: Any) -> list[str]:
    """Every description and option label of a widget's controls."""
    labels = []
    for control in widget.children if hasattr(widget, "children") else []:
        labels += _control_labels(control)
        description = getattr(control, "description", "")
        if description:
            labels.append(description)
        for option in getattr(control, "_options_labels", ()):
            labels.append(option)
    return labels


@pytest.fixture(scope="module")
def transformer() -> tuple[Any, Any]:
    model = hookviz.load_tiny_transformer()
    tokens, _ = hookviz.make_tiny_batch(8, seed=3)
    return model, tokens


@pytest.fixture(scope="module")
def decoder() -> tuple[Any, Any]:
    from hookviz.llama import load_tiny_llama, make_copy_batch

    prompts, answers = make_copy_batch(8, seed=3)
    return load_tiny_llama(), torch.cat([prompts, answers], dim=1)[:, :-1]


@pytest.mark.parametrize("which", ["transformer", "decoder"])
def test_the_attention_explorers_are_chinese(which: str, request: pytest.FixtureRequest) -> None:
    model, tokens = request.getfixturevalue(which)
    explorer = AttentionExplorer(model, tokens)
    try:
        names = explorer.state.layers
        assert [label for label, _ in explorer.head.options][:2] == ["各头的平均", "注意力头 0"]
        for label in _control_labels(explorer):
            _assert_chinese(label, names)
        explorer.head.value = "mean"
        explorer.sample.value = 3
        caption = html.unescape(re.sub(r"<[^>]+>", "", explorer.caption.value))
        assert "样本 3" in caption and "个查询（行）" in caption, caption
        _assert_chinese(caption, names)
        explorer.sample.value = 99  # refused, in Chinese
        refusal = html.unescape(re.sub(r"<[^>]+>", "", explorer.message.value))
        assert refusal.startswith("样本 99 超出范围：这批数据有 ") and explorer.sample.value == 3, refusal
        i18n.set_language("en")  # what a notebook prints and its repr stay English
        assert "queries (rows)" in explorer.state.caption() and "queries (rows)" in repr(explorer)
    finally:
        explorer.close()


def test_the_layer_explorer_is_chinese() -> None:
    model = hookviz.load_pretrained_cnn()
    images, labels = hookviz.load_digits("test")
    explorer = LayerExplorer(model, images[:8], labels[:8])
    try:
        state = explorer.state
        identifiers = [*state.layers, *state.types(), *(str(i.shape) for i in state.info.values())]
        for label in _control_labels(explorer):
            _assert_chinese(label, identifiers)
        for layer in state.layers:
            explorer.layer.value = layer
            for order in ("index", "topk"):
                explorer.order.value = order
                caption = html.unescape(re.sub(r"<[^>]+>", "", explorer.caption.value))
                _assert_chinese(caption, identifiers)
        assert "样本 0（标签" in caption, caption
        explorer.sample.value = 99  # a value the widget cannot take: refused, in Chinese
        refusal = html.unescape(re.sub(r"<[^>]+>", "", explorer.message.value))
        assert refusal == "已拒绝：样本 99 超出范围：这批数据有 8 个样本（0 到 7）", refusal
        assert explorer.sample.value == state.sample == 0
    finally:
        explorer.close()


def test_the_hook_timeline_is_chinese() -> None:
    timeline = HookTimeline()
    try:
        places = timeline.state.places()
        kinds = list(timeline.kinds.options)
        for label in _control_labels(timeline):
            _assert_chinese(label, [*places, *kinds])
        timeline.phase.value = "backward"
        count = html.unescape(re.sub(r"<[^>]+>", "", timeline.count.value))
        assert re.fullmatch(r"共 \d+ 次钩子调用，显示 \d+ 次", count), count
    finally:
        timeline.close()


def test_the_training_monitor_is_chinese() -> None:
    model = hookviz.DigitsCNN()
    monitor = TrainingMonitor(model, interval=0.0)
    try:
        names = monitor.state.layer_names
        assert monitor.out.outputs[0]["text"].startswith("还没有训练步"), monitor.out.outputs
        for label in [*_control_labels(monitor), monitor.out.outputs[0]["text"]]:
            _assert_chinese(label, names)
        monitor.run(3)
        status = html.unescape(re.sub(r"<[^>]+>", "", monitor.status.value))
        assert status.startswith("第 3 步 · 损失 ") and status.endswith("已停止"), status
        _assert_chinese(status, names)
        monitor.steps.value = 0
        monitor._on_train()  # a refused number of steps says why in Chinese
        _assert_chinese(html.unescape(re.sub(r"<[^>]+>", "", monitor.message.value)), names)
    finally:
        monitor.close()


# ---------------------------------------------------------------------------------------------- pictures
def test_pictures_are_english_only_if_hookviz_chinese_font_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    assert render.figure_text("firing order") == "触发顺序"  # the shipped font draws it (tests/test_zh_font.py)
    monkeypatch.setattr(render, "cjk_font", lambda: None)
    assert render.figure_text("firing order") == "firing order"  # never boxes instead of characters


def _figure_texts(fig: Any) -> list[str]:
    from matplotlib.text import Text

    return [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


@pytest.mark.filterwarnings("error:Glyph .* missing from font")
def test_the_charts_are_chinese_and_every_glyph_is_in_the_font() -> None:
    from matplotlib.figure import Figure

    assert render.figure_text("key position") == "键的位置"  # notebook 14's figure labels
    assert render.figure_text("block 1") == "块 1" and render.figure_text("layer 1 · head 0 (batch mean)") != ""
    timeline = HookTimeline()
    try:
        fig = render.timeline_figure(Figure(), [(e.order, e.phase, e.kind, e.where) for e in timeline.shown()],
                                     list(timeline.kinds.options))  # fmt: skip
        words = " ".join(_figure_texts(fig))
        assert "触发顺序" in words and "反向" in words
        _assert_chinese(words, [*timeline.state.places(), *timeline.kinds.options])
    finally:
        timeline.close()
    model = hookviz.DigitsCNN()
    monitor = TrainingMonitor(model, interval=0.0)
    try:
        monitor.run(3)
        fig = monitor.state.figure(monitor.state.layer_names[0], Figure())
        words = " ".join(_figure_texts(fig))
        assert "损失" in words and "激活均值" in words
        _assert_chinese(words, [*monitor.state.layer_names, "log10"])
    finally:
        monitor.close()


# ---------------------------------------------------------------------------------------------- notes and refusals
class _Table(nn.Module):
    """A learned table that does not depend on the batch: its output has no batch dimension."""

    def __init__(self) -> None:
        super().__init__()
        self.table = nn.Parameter(torch.randn(4, 3))

    def forward(self) -> torch.Tensor:
        return self.table


class _Noted(nn.Module):
    """Every kind of layer the explorer notes something about: a tuple output of a layer called twice, an output
    without a batch dimension, a container that is never called, and a layer run without gradient."""

    def __init__(self) -> None:
        super().__init__()
        self.pos = _Table()
        self.lstm = nn.LSTM(3, 3, batch_first=True)
        self.blocks = nn.ModuleList([nn.Linear(3, 3)])
        self.frozen = nn.Linear(3, 3)
        self.head = nn.Linear(3, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x + self.pos())
        out, _ = self.lstm(out)  # called twice
        for block in self.blocks:
            out = block(out)
        with torch.no_grad():
            extra = self.frozen(out)
        return self.head(out + extra).mean(dim=1)


def _noted_state() -> tuple[Any, list[str]]:
    from hookviz.widgets import ExplorerState

    _ = torch.manual_seed(0)
    state = ExplorerState(_Noted(), torch.randn(6, 4, 3), torch.tensor([0, 1, 0, 1, 0, 1]))
    identifiers = [*state.info, *(i.type for i in state.info.values()), "ModuleList", "Tensor", "tuple", "(4, 3)"]
    return state, identifiers


def test_the_explorers_notes_are_chinese_one_by_one() -> None:
    """Notes joined with "; " in the captured data are translated one by one and joined with "；"."""
    state, identifiers = _noted_state()
    notes = {name: info.note for name, info in state.info.items()}
    assert "; called 2 times; showing the last call" in notes["lstm"], notes  # joined English notes
    assert notes["pos"].startswith("cannot show: shape (4, 3) has no batch dimension of 6 first"), notes
    assert notes["blocks"].startswith("not called: a ModuleList"), notes
    for note in notes.values():
        if note:
            _assert_chinese(i18n.tr_joined(note), identifiers)
    assert i18n.tr_joined(notes["lstm"]).count("；") >= 2
    caption = state.select(layer="lstm").caption(translated=True)
    assert "被调用了 2 次；显示最后一次调用" in caption, caption
    _assert_chinese(caption, identifiers)
    state.select(layer="frozen")
    assert state.gradient() is None
    _assert_chinese(state.grad_message(), identifiers)  # the gradient panel's picture says why, in Chinese
    i18n.set_language("en")  # what a notebook prints stays English
    assert "; called 2 times; showing the last call" in state.select(layer="lstm").caption()


def test_the_explorers_refusals_are_chinese() -> None:
    """What ExplorerState.select raises (a notebook prints it, the widget shows it) is in the learner's language."""
    state, identifiers = _noted_state()
    choices = [{"layer": "blocks"}, {"layer": "lstmm"}, {"layer": "pos"}, {"sample": 99}, {"page": 5}, {"order": "x"}]
    for choice in choices:
        with pytest.raises((KeyError, IndexError, ValueError)) as raised:
            state.select(**choice)
        _assert_chinese(str(raised.value.args[0]), [*identifiers, "'lstm'", "'index'", "'topk'", "'x'", "order"])
    with pytest.raises(KeyError, match="_Noted 中没有名为 'lstmm' 的层；最接近的是：'lstm'"):
        state.select(layer="lstmm")
    with pytest.raises(KeyError, match="没有名为 'nope' 的层"):  # hookviz.capture refuses a name the same way
        with hookviz.capture(_Noted(), ["nope"]):
            pass


def test_the_attention_explorers_refusals_are_chinese(transformer: tuple[Any, Any]) -> None:
    from hookviz.widgets import AttentionState

    model, tokens = transformer
    state = AttentionState(model, tokens)
    for choice in ({"layer": "nope"}, {"head": 9}, {"sample": 99}):
        with pytest.raises((KeyError, IndexError)) as raised:
            state.select(**choice)
        _assert_chinese(str(raised.value.args[0]), [*state.layers, "'nope'"])


def test_a_static_pictures_text_is_chinese() -> None:
    model = hookviz.load_pretrained_cnn()
    images, labels = hookviz.load_digits("test")
    explorer = LayerExplorer(model, images[:8], labels[:8])
    try:
        text = repr(explorer.show_static())
        assert text == f"静态视图：{explorer!r}", text
        i18n.set_language("en")
        assert repr(explorer.show_static()) == f"static view of {explorer!r}"
    finally:
        explorer.close()


def test_make_zh_stores_hookviz_exceptions_as_the_code_raises_them_under_zh() -> None:
    """zh 06 prints ExplorerState's refusal of page 3 and raises its KeyError for a missing layer; the static
    pictures' text is stored as a cell's result: make_zh stores each as the code gives it under zh."""
    from notebook_tools import load_script

    from hookviz.widgets import ExplorerState

    make_zh = load_script("make_zh")
    wide = ExplorerState(nn.Sequential(nn.Conv2d(1, 100, 3, padding=1), nn.ReLU()), torch.randn(2, 1, 4, 4))
    stored, shown = {}, {}
    for language, seen in (("en", stored), ("zh", shown)):
        i18n.set_language(language)
        with pytest.raises(IndexError) as page:
            wide.select(page=2)
        with pytest.raises(KeyError) as layer:
            wide.select(layer="2")
        seen["page"] = f"page 3 -> {page.value}\n"
        seen["layer"] = str(layer.value)  # a KeyError's evalue: its message quoted
        seen["static"] = i18n.tr("static view of LayerExplorer(layer='0')")
    assert make_zh.localise_text(stored["page"]) == shown["page"] != stored["page"]
    error = {"output_type": "error", "ename": "KeyError", "evalue": stored["layer"], "traceback": [stored["layer"]]}
    make_zh.localise_outputs([error])
    assert error["evalue"] == shown["layer"] != stored["layer"] and error["traceback"] == [shown["layer"]]
    result = {"output_type": "execute_result", "data": {"text/plain": stored["static"]}}
    make_zh.localise_outputs([result])
    assert result["data"]["text/plain"] == shown["static"] == "静态视图：LayerExplorer(layer='0')"
    own = "page 3 -> the notebook's own words\n"
    assert make_zh.localise_text(own) == own
