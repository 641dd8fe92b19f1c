"""Find it by asking: ``hookviz.ask`` finds the section of the course that answers a question in a learner's words.

The main check takes 30 questions of the question index (``notebooks/questions.yml``) that a cell proves, reworded by
hand as a learner would type them (other words, no copied phrases; five in Chinese, which must find the Chinese
edition's section), and requires the proving section among the top three answers for at least 27 of them; it prints
the ones that miss. The rest: what ``ask`` refuses and how it says so, the answers' links, the lazy index built
from files only (no network), a hookviz without the course, and the question box (``AskState`` / ``AskBox``)
driven without a browser.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import rank_bm25

import hookviz
from hookviz import i18n, search
from hookviz.widgets.ask import EMPTY, PROMPT, AskBox, AskState

REPO = Path(__file__).resolve().parents[1]

#: (question id, the question reworded as a learner would ask it, the section that proves the answer)
REWORDED = [
    ("q004", "nothing gets printed by my hook when I run layer.forward(inputs) myself",
     "notebooks/10_faq.ipynb#faq-not-firing"),
    ("q006", "old style backward hook versus the full one, which should I use and how do they differ",
     "notebooks/04_backward_hooks.ipynb#full-backward"),
    ("q010", "my tensor hook is skipped when I compute gradients with torch.autograd.grad instead of calling backward",
     "notebooks/13_hooks_in_training_loops.ipynb#autograd-grad"),
    ("q019", "I attached a hook to the layer after compiling the model and it is silently ignored",
     "notebooks/09_hooks_in_production.ipynb#late-module-hook"),
    ("q023", "can a pre hook rewrite the input tensors before the layer sees them",
     "notebooks/03_forward_pre_hooks.ipynb#return-new-args"),
    ("q025", "my hook only receives positional args, where are the keyword arguments passed to forward",
     "notebooks/03_forward_pre_hooks.ipynb#with-kwargs"),
    ("q026", "pre-hook gives back a bare tensor instead of a tuple, does pytorch wrap it",
     "notebooks/03_forward_pre_hooks.ipynb#tuple-or-bare"),
    ("q028", "error about a view modified inplace when my network uses ReLU(inplace=True) together with a full "
     "backward hook", "notebooks/04_backward_hooks.ipynb#relu-inplace"),
    ("q031", "frozen layer: registering a gradient hook on a parameter with requires_grad False throws",
     "notebooks/11_mistakes_clinic.ipynb#mistake-14"),
    ("q042", "how can I see the attention map of nn.TransformerEncoderLayer",
     "notebooks/12_transformer_hooks.ipynb#need-weights-prehook"),
    ("q043", "what arrives in the output argument when I hook an LSTM layer",
     "notebooks/02_forward_hooks.ipynb#tuple-output"),
    ("q050", "executing my gradcam cell a second time attaches the hooks again and they pile up",
     "notebooks/05_lifetime_and_global_hooks.ipynb#rerun-stacks"),
    ("q063", "saving the entire model with torch.save breaks because of the function I used as a hook",
     "notebooks/10_faq.ipynb#faq-copy"),
    ("q065", "run some code on a parameter only after its gradient has been completely accumulated",
     "notebooks/01_tensor_hooks.ipynb#post-accumulate"),
    ("q071", "register_forward_hook raises an error on my torch.jit.script model",
     "notebooks/09_hooks_in_production.ipynb#script-refuses-hooks"),
    ("q096", "hook placed on out_proj inside nn.MultiheadAttention never runs",
     "notebooks/12_transformer_hooks.ipynb#out-proj-never-called"),
    ("q098", "looping over model.named_modules() to add hooks fails: tuple has no attribute",
     "notebooks/11_mistakes_clinic.ipynb#mistake-02"),
    ("q103", "attach a callback that runs before a grad_fn node computes its gradients",
     "notebooks/07_autograd_hooks.ipynb#node-hooks-return"),
    ("q104", "call one function only when the gradients of several tensors are all ready",
     "notebooks/07_autograd_hooks.ipynb#multi-grad-hook"),
    ("q106", "run my own code right before or after optimizer.step without editing the training loop",
     "notebooks/07_autograd_hooks.ipynb#optimizer-hooks"),
    ("q107", "hooks on the encoder's self-attention stop firing in eval mode under no_grad",
     "notebooks/12_transformer_hooks.ipynb#global-hooks-miss"),
    ("q117", "is it possible to hook a functional op like torch.cat or F.relu",
     "notebooks/08_applications.ipynb#fx-non-module"),
    ("q128", "grad_input is None in the backward hook of the first conv layer of my network",
     "notebooks/04_backward_hooks.ipynb#first-layer"),
    ("q136", "returning a single tensor from an old register_backward_hook complains about an incorrect number of "
     "values", "notebooks/04_backward_hooks.ipynb#pitfall-bare-tensor"),
    ("q143", "strip every hook off a model when I no longer have the handles",
     "notebooks/10_faq.ipynb#faq-remove-all"),
    # in Chinese: the Chinese edition's section
    ("q016", "用 DataParallel 包装模型以后，子模块上的钩子还会执行吗？", "notebooks/zh/10_faq.ipynb#faq-data-parallel"),
    ("q068", "非叶子张量的 .grad 是 None，怎样才能拿到它的梯度？",
     "notebooks/zh/01_tensor_hooks.ipynb#non-leaf-gradient"),
    ("q100", "同一个模块在 forward 里用了两次，保存下来的激活值被后一次覆盖了",
     "notebooks/zh/11_mistakes_clinic.ipynb#mistake-16"),
    ("q142", "前向钩子加上去以后怎么删掉？", "notebooks/zh/05_lifetime_and_global_hooks.ipynb#handles"),
    ("q024", "想在钩子里改掉某一层的输出，直接给 output 赋值为什么没用？",
     "notebooks/zh/02_forward_hooks.ipynb#replace-output"),
]


@pytest.fixture(autouse=True)
def _english_afterwards() -> Iterator[None]:
    i18n.set_language(None)
    yield
    i18n.set_language(None)


def _questions() -> dict[str, dict]:
    import yaml

    return {e["id"]: e for e in yaml.safe_load((REPO / "notebooks" / "questions.yml").read_text(encoding="utf-8"))}


# ---------------------------------------------------------------------------------------------- finding
def test_the_reworded_questions_are_real_entries_and_their_sections() -> None:
    entries = _questions()
    assert len(REWORDED) == 30 and len({qid for qid, _, _ in REWORDED}) == 30
    assert sum(bool(re.search("[\u4e00-\u9fff]", q)) for _, q, _ in REWORDED) >= 3
    for qid, question, expected in REWORDED:
        entry = entries[qid]
        assert entry["proven_by"] == expected.replace("notebooks/zh/", "notebooks/"), qid
        assert question.lower() != entry["question"].lower(), f"{qid} is not reworded"


#: Ten more questions of the index, reworded by hand before the ranking was last tuned and never used to tune it:
#: questions whose proving cells came with the "Asked in public threads" sections.
HELD_OUT = [
    ("q027", "my forward hook on an inplace ReLU sees an input that is already rectified",
     "notebooks/02_forward_hooks.ipynb#q-inplace-relu-input"),
    ("q097", "inside a hook, how can I know which layer called it (its name)?",
     "notebooks/02_forward_hooks.ipynb#q-layer-name"),
    ("q113", "hook registered on a tensor also fires for its clone, how do I only hook one branch",
     "notebooks/01_tensor_hooks.ipynb#q-clone-path"),
    ("q035", "module with a hook method referencing self is never garbage collected",
     "notebooks/05_lifetime_and_global_hooks.ipynb#q-self-cycle"),
    ("q118", "context manager that adds activation hooks and cleans them up afterwards",
     "notebooks/08_applications.ipynb#q-collect-context"),
    ("q099", "with torch.compile only a few layers' forward hooks get captured",
     "notebooks/15_compiled_and_sharded_training.ipynb#q-compile-late-hooks"),
    ("q150", "my steering hook overwrites the attention output rather than adding the vector",
     "notebooks/12_transformer_hooks.ipynb#q-steering-add-not-replace"),
    ("q032", "deepcopy of my model fails after hooks stored activations: only leaf tensors support deepcopy",
     "notebooks/13_hooks_in_training_loops.ipynb#q-deepcopy-saved-tensors"),
    ("q081", "is zeroing gradients with a hook equivalent to freezing params with requires_grad=False",
     "notebooks/08_applications.ipynb#q-mask-vs-freeze"),
    ("q003", "forward pre-hook gets called again during backward with checkpointing",
     "notebooks/04_backward_hooks.ipynb#q-checkpoint-rerun"),
]


def test_held_out_questions_are_reworded_index_questions() -> None:
    import yaml

    entries = {e["id"]: e for e in yaml.safe_load((REPO / "notebooks" / "questions.yml").read_text(encoding="utf-8"))}
    assert not {qid for qid, _, _ in HELD_OUT} & {qid for qid, _, _ in REWORDED}
    for qid, question, expected in HELD_OUT:
        assert entries[qid]["proven_by"] == expected, qid
        assert question.lower() != entries[qid]["question"].lower(), f"{qid} is not reworded"


def test_held_out_questions_find_their_section_in_the_top_three() -> None:
    missed = [f"{qid}: {question!r} -> {hookviz.ask(question).links} (expected {expected})"
              for qid, question, expected in HELD_OUT if expected not in hookviz.ask(question).links]
    assert len(missed) <= 1, "\n".join(missed)


def test_reworded_questions_find_their_section_in_the_top_three() -> None:
    missed = []
    for qid, question, expected in REWORDED:
        answers = hookviz.ask(question)
        if expected not in answers.links:
            missed.append(f"{qid}: {question!r} -> {answers.links} (expected {expected})")
    print(f"\n{len(REWORDED) - len(missed)}/{len(REWORDED)} reworded questions found their section in the top 3")
    for line in missed:
        print("  missed", line)
    assert len(missed) <= 3, "\n".join(missed)


def test_a_chinese_question_finds_chinese_sections() -> None:
    answers = hookviz.ask("为什么钩子被调用了两次")
    assert answers.language == "zh" and answers[0].link == "notebooks/zh/10_faq.ipynb#faq-twice"
    assert all(a.link.startswith("notebooks/zh/") and a.language == "zh" for a in answers)
    assert "被调用了两次" in answers[0].title
    english = hookviz.ask("为什么钩子被调用了两次", language="en")  # the English edition, asked for
    assert all(not a.link.startswith("notebooks/zh/") for a in english)
    chinese = hookviz.ask("register_forward_hook", language="zh-CN")
    assert chinese.language == "zh" and all(a.link.startswith("notebooks/zh/") for a in chinese)


def test_every_source_answers_something() -> None:
    """The question index, the FAQ, the clinic, the atlas and the other sections each give an answer."""
    seen = {
        hookviz.ask("is there any way to visualize the feature maps during training", k=1)[0].source,
        hookviz.ask("do hooks slow training down", k=1)[0].source,
        hookviz.ask("hook on nn.ModuleList never fires", k=1)[0].source,
        hookviz.ask("register_module_buffer_registration_hook the trigger runs twice", k=1)[0].source,
        hookviz.ask("what does the layer explorer show", k=1)[0].source,
    }
    assert seen == set(search.SOURCES), seen


def test_answers_are_a_list_with_links_and_summaries() -> None:
    answers = hookviz.ask("my hook stopped working after I copied the model", k=2)
    assert len(answers) == 2 and answers[0] is list(answers)[0] and answers[-1] == answers[1]
    top = answers[0]
    assert (top.link, top.source, top.notebook, top.anchor) == (
        "notebooks/10_faq.ipynb#faq-copy", "FAQ", "notebooks/10_faq.ipynb", "faq-copy")
    assert top.score > answers[1].score > 0 and top.summary and "\n" not in top.summary
    assert top.href == "10_faq.ipynb#faq-copy"  # relative to the notebook folder
    text = str(answers)
    assert text.startswith("2 answers to “my hook stopped working after I copied the model”")
    assert "notebooks/10_faq.ipynb#faq-copy" in text and "[FAQ]" in text and top.title in text
    page = answers._repr_html_()
    assert '<a href="10_faq.ipynb#faq-copy"' in page and ">FAQ<" not in page and "· FAQ ·" in page
    assert repr(answers) == text


def test_fewer_answers_when_few_sections_match_and_none_for_no_words() -> None:
    sections = {d.link for d in search.build_index()["en"].documents}
    assert len(hookviz.ask("register_module_buffer_registration_hook", k=5000)) < len(sections)
    nothing = hookviz.ask("how do I ... ?")  # only words that say nothing about a topic
    assert len(nothing) == 0 and list(nothing) == []
    assert str(nothing).startswith("No section of the course matches “how do I ... ?”. Try other words")


def test_links_lead_to_anchors_that_exist() -> None:
    """Every link the index can answer with names a notebook and an anchor that notebook has."""
    index = search.build_index()
    anchors: dict[str, set[str]] = {}
    for language in ("en", "zh"):
        for document in index[language].documents:
            notebook, _, anchor = document.link.partition("#")
            if notebook not in anchors:
                text = (REPO / notebook).read_text(encoding="utf-8")
                anchors[notebook] = set(re.findall(r'<a id=\\"([^"\\]+)\\"', text))
            assert not anchor or anchor in anchors[notebook], document.link
            assert (notebook.startswith("notebooks/zh/")) == (language == "zh"), document.link


def test_the_ranking_is_rank_bm25s_and_the_words_are_ours() -> None:
    index = search.build_index()
    assert isinstance(index["en"].bm25, rank_bm25.BM25Okapi) and isinstance(index["zh"].bm25, rank_bm25.BM25Okapi)
    assert search.tokenize("Hooks fired; layer.forward") == ["hook", "fir", "modul_forward", "modul", "forward"]
    # a learner's word becomes the course's before the characters are cut (删掉 -> 移除, see _SYNONYMS_ZH)
    assert search.tokenize("删掉钩子") == ["remov", "hook", "移", "移除", "除", "除钩", "钩", "钩子", "子"]
    assert search.tokenize("the a of") == [] and search.detect_language("钩子 hook") == "zh"


# ---------------------------------------------------------------------------------------------- refusals
@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"question": ""}, ValueError, ["question is empty", "hookviz.ask('why does my hook fire twice?')"]),
        ({"question": "   \n"}, ValueError, ["question is empty"]),
        ({"question": None}, TypeError, ["question must be a string", "not NoneType"]),
        ({"question": "hook", "k": 0}, ValueError, ["k must be at least 1", "not 0", "k=3"]),
        ({"question": "hook", "k": -2}, ValueError, ["k must be at least 1"]),
        ({"question": "hook", "k": 2.5}, TypeError, ["k must be a whole number", "2.5"]),
        ({"question": "hook", "k": True}, TypeError, ["k must be a whole number", "True"]),
        ({"question": "hook", "language": "fr"}, ValueError, ["language='fr'", "'en', 'zh'", "None"]),
        ({"question": "hook", "language": 3}, TypeError, ["language must be 'en', 'zh' or None"]),
    ],
)
def test_bad_input_is_refused_with_the_argument_and_the_fix(kwargs: dict, error: type, words: list[str]) -> None:
    with pytest.raises(error) as info:
        hookviz.ask(**kwargs)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


# ---------------------------------------------------------------------------------------------- the index
def test_the_index_is_built_once_from_files_without_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("hookviz.ask must not touch the network")

    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(search, "_BUILT", {})  # a fresh build; the cached one comes back afterwards
    first = search.build_index()
    assert search.build_index() is first and search.build_index(REPO) is first  # once per process (per course)
    assert {len(first["en"].documents) > 500, len(first["zh"].documents) > 500} == {True}
    assert "notebooks/10_faq.ipynb#faq-twice" in hookviz.ask("why is my hook called twice").links


def test_without_the_course_it_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(search.CourseNotFoundError, match="is not the course repository"):
        search.build_index(tmp_path)
    installed = tmp_path / "site-packages" / "hookviz" / "search.py"  # hookviz installed on its own
    monkeypatch.setattr(search, "__file__", str(installed))
    # ... and without the packaged copy of the course either (it ships one: see the test below this one)
    monkeypatch.setattr(search, "PACKAGED_DOCUMENTS", tmp_path / "missing.json.gz")
    with pytest.raises(search.CourseNotFoundError) as info:
        hookviz.ask("why does my hook fire twice?")
    message = str(info.value)
    assert "installed without the course repository" in message and "pip install -e ." in message
    assert isinstance(info.value, FileNotFoundError)


def test_the_notebooks_documents_come_from_sections(tmp_path: Path) -> None:
    notebook = {"cells": [
        {"cell_type": "markdown", "source": "# 99 · Title\n\nIntro text. More."},
        {"cell_type": "markdown", "source": ["## Part\n\n<a id=\"one\"></a>\n", "### 1. First\n\n**Short:** a *b* c."]},
        {"cell_type": "code", "source": "x = 1"},
        {"cell_type": "markdown", "source": "<a id=\"two\"></a>\nNo heading here, `register_*_hook` kept."},
    ]}
    path = tmp_path / "notebooks" / "99_x.ipynb"
    path.parent.mkdir()
    path.write_text(json.dumps(notebook), encoding="utf-8")
    found = search.notebook_documents(path, tmp_path, "en")
    documents = [d for d in found if d.text != d.title]  # not the headings alone
    assert [d.title for d in found if d.text == d.title] == ["99 · Title", "1. First"]
    assert [(d.link, d.title, d.summary) for d in documents] == [
        ("notebooks/99_x.ipynb", "99 · Title", "Intro text."),
        ("notebooks/99_x.ipynb#one", "1. First", "Short: a b c."),
        ("notebooks/99_x.ipynb#two", "1. First", "No heading here, register_*_hook kept."),
    ]


# ---------------------------------------------------------------------------------------------- the question box
def test_the_state_asks_refuses_blank_and_reports() -> None:
    state = AskState(k=2)
    assert state.answers is None and state.status() == PROMPT and state.to_html() == ""
    answers = state.ask("how do I remove every hook at once")
    assert answers is state.answers and len(answers) == 2
    assert state.answers[0].link == "notebooks/10_faq.ipynb#faq-remove-all"
    assert state.status() == "2 answers to “how do I remove every hook at once”"
    assert 'href="10_faq.ipynb#faq-remove-all"' in state.to_html() and "answers to" not in state.to_html()
    assert state.ask("   ") is None and state.status() == EMPTY and state.to_html() == ""
    assert repr(state) == "AskState(question='   ', k=2)"
    with pytest.raises(TypeError, match="question must be a string"):
        state.ask(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="k must be at least 1"):
        AskState(k=0)
    with pytest.raises(ValueError, match="language='de'"):
        AskState(language="de")


def test_the_state_says_when_the_course_is_missing(tmp_path: Path) -> None:
    state = AskState(root=tmp_path)
    assert state.ask("why does my hook fire twice?") is None
    assert "is not the course repository" in state.status()


def test_the_box_is_driven_without_a_browser() -> None:
    box = AskBox()
    try:
        assert box.status.value.count(PROMPT) == 1 and box.results.value == ""
        assert box.question.continuous_update is False  # asks on Enter, not on every key
        box.question.value = "why is my hook called twice"  # what pressing Enter does
        assert "notebooks/10_faq.ipynb#faq-twice" in box.state.answers.links
        assert "3 answers to" in box.status.value and 'href="10_faq.ipynb#faq-twice"' in box.results.value
        box.question.value = "  "
        assert box.state.answers is None and "empty" in box.status.value and box.results.value == ""
        box.question.value = ""
        assert box.status.value.count(PROMPT) == 1
        box.question.value = "复制模型以后钩子还在吗？"
        box.button.click()  # the button asks what the box holds
        assert box.state.answers[0].link == "notebooks/zh/10_faq.ipynb#faq-copy"
        answers = box.ask("hook on nn.ModuleList never fires")
        assert box.question.value == "hook on nn.ModuleList never fires" and answers is box.state.answers
        assert repr(box) == (
            "AskBox(question='hook on nn.ModuleList never fires', answers=3, "
            "top='notebooks/11_mistakes_clinic.ipynb#mistake-17')"
        )
        bundle = box._repr_mimebundle_()
        assert bundle["text/plain"] == repr(box) and "application/vnd.jupyter.widget-view+json" in bundle
    finally:
        box.close()
    assert box.closed and repr(box) == "AskBox(closed)" and box._repr_mimebundle_() == {"text/plain": "AskBox(closed)"}
    box.close()  # twice is harmless
    assert box.ask("anything") is None


def test_the_box_asks_its_first_question_at_once_and_is_exported() -> None:
    box = hookviz.AskBox("how do I remove every hook at once?", k=1)
    try:
        assert hookviz.AskBox is AskBox and hookviz.ask is search.ask
        assert [a.link for a in box.state.answers] == ["notebooks/10_faq.ipynb#faq-remove-all"]
        assert box.question.value == "how do I remove every hook at once?"
    finally:
        box.close()


def test_the_packaged_copy_of_the_course_is_current() -> None:
    """hookviz ships the course's sections (for Colab, where the notebooks are not around): the copy is what the
    notebooks hold now (`python scripts/make_zh.py` rewrites it)."""
    from pathlib import Path

    from hookviz import search

    root = Path(__file__).resolve().parents[1]
    assert search.PACKAGED_DOCUMENTS.read_bytes() == search.packaged_documents_text(root), (
        "hookviz/assets/course_index.json.gz is out of date: run `python scripts/make_zh.py`"
    )


def test_ask_works_without_the_course_folder(monkeypatch) -> None:
    """Installed alone (Colab's `pip install --no-deps`), hookviz.ask answers from the copy in the package."""
    from hookviz import search

    def no_course():
        raise search.CourseNotFoundError("no course here")

    monkeypatch.setattr(search, "course_root", no_course)
    monkeypatch.setattr(search, "_BUILT", {})
    answers = search.ask("my hook stopped working after I copied the model", k=3)
    assert "notebooks/10_faq.ipynb#faq-copy" in [a.link for a in answers]
    assert None in search._BUILT  # built from the packaged copy, not from a folder


# ---------------------------------------------------------------------------------------------- issue 48
def test_a_question_typed_in_full_width_letters_is_found() -> None:
    """Defect 5: a Chinese input method in full-width mode types ｈｏｏｋ; NFKC makes it hook."""
    plain = hookviz.ask("why does my hook fire twice").links
    assert hookviz.ask("ｗｈｙ ｄｏｅｓ ｍｙ ｈｏｏｋ ｆｉｒｅ ｔｗｉｃｅ").links == plain
    wide = hookviz.ask("ｇｒａｄ＿ｉｎｐｕｔ 为什么是 Ｎｏｎｅ？")
    assert wide.links == hookviz.ask("grad_input 为什么是 None？").links


def test_the_documented_examples_hold() -> None:
    """Defect 6: the examples of the module's and ask()'s docstrings (and tokenize's) are run, not skipped."""
    import doctest

    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = [t for t in finder.find(search, globs={**vars(search), "hookviz": hookviz}) if t.examples]
    assert {t.name.rsplit(".", 1)[-1] for t in tests} >= {"search", "ask", "tokenize"}
    for test in tests:
        assert "+SKIP" not in "".join(e.source + str(e.options) for e in test.examples)
        runner.run(test)
    assert runner.failures == 0 and runner.tries >= 8


@pytest.mark.parametrize("question", [
    "zzqqxx 无关", "zzqqxx", "今天天气怎么样", "你好", "what time is it", "how do I bake bread", "股票会涨吗",
    "asdf jkl qwerty", "hook qwertyuiop asdfghjkl zxcvbnm poiuytrewq", "的了吗呢", "推荐一部电影",
])
def test_nonsense_gets_no_match_instead_of_three_answers(question: str) -> None:
    answers = hookviz.ask(question)
    assert len(answers) == 0, answers.links
    assert answers.heading("en").startswith("No section of the course matches")


def test_short_real_questions_still_match() -> None:
    for question in ("hooks", "钩子", "gradcam", "register_forward_hook", "torch.compile", "deepcopy",
                     "显存一直涨怎么办"):
        assert len(hookviz.ask(question)) > 0, question


def test_a_pasted_page_costs_little_and_says_it_was_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 20,000-character question took 15 s (rank-bm25 scores every document once per distinct word)."""
    import random
    import time

    random.seed(0)
    page = "".join(chr(random.randint(0x4E00, 0x9FFF)) for _ in range(20_000))
    english = " ".join(f"word{i} hook" for i in range(5_000))
    searched: list[int] = []
    real = search._Index.search

    def counting(self, words, k, question=None):  # noqa: ANN001, ANN202
        searched.append(len(words))
        return real(self, words, k, question)

    monkeypatch.setattr(search._Index, "search", counting)
    hookviz.ask("hook")  # the index is built before the clock starts
    start = time.perf_counter()
    for question in (page, english):
        answers = hookviz.ask(question)
        assert "A long question" in answers.heading("en") and "most telling words searched" in answers.heading("en")
    assert time.perf_counter() - start < 5.0  # 15 s before; about 0.4 s here
    assert max(searched) <= search.MAX_WORDS
    assert len(hookviz.ask(page).heading()) < 400  # the pasted page is not repeated whole


def test_k_may_be_a_numpy_or_torch_integer() -> None:
    import numpy as np
    import torch

    expected = hookviz.ask("why is my hook called twice", k=3).links
    assert hookviz.ask("why is my hook called twice", k=np.int64(3)).links == expected
    assert hookviz.ask("why is my hook called twice", k=torch.tensor(3)).links == expected


def test_a_bad_root_or_question_index_is_named(tmp_path: Path) -> None:
    """Defect 12: root=123 gave pathlib's TypeError; a broken questions.yml never named the file."""
    with pytest.raises(TypeError, match=r"root must be the course repository's folder .*not 123"):
        hookviz.ask("hook", root=123)
    with pytest.raises(TypeError, match="root must be"):
        AskState(root=123)
    with pytest.raises(ValueError, match="cannot be a folder"):
        AskState(root="d" * 20_000)  # a name too long for the file system
    for call in (lambda: search.tokenize(3), lambda: search.normalize(None), lambda: search.detect_language([])):
        with pytest.raises(TypeError, match="(text|question) must be a string"):
            call()
    with pytest.raises(ValueError, match="language=''"):
        hookviz.ask("hook").heading("")
    (tmp_path / "notebooks").mkdir()
    index = tmp_path / "notebooks" / "questions.yml"
    index.write_text("- question: [unclosed\n  answer: x\n", encoding="utf-8")
    with pytest.raises(search.QuestionIndexError, match=r"questions\.yml is not valid YAML at line \d"):
        hookviz.ask("hook", root=tmp_path)
    index.write_text("just a sentence\n", encoding="utf-8")
    with pytest.raises(search.QuestionIndexError, match=r"questions\.yml must be a YAML list of entries"):
        hookviz.ask("hook", root=tmp_path)
    state = AskState(root=tmp_path)  # the box says it in its status line instead of raising
    assert state.ask("hook") is None and "must be a YAML list" in state.status()


def test_the_chinese_index_holds_the_index_questions_in_chinese() -> None:
    index = search.build_index()["zh"]
    questions = [d for d in index.documents if d.source == "question index"]
    assert len(questions) >= 150 and all(d.link.startswith("notebooks/zh/") for d in questions)
    assert all(re.search("[\u4e00-\u9fff]", d.title) and re.search("[\u4e00-\u9fff]", d.summary) for d in questions)
    answers = hookviz.ask("用 DataParallel 包装以后子模块上的钩子还会被调用吗", k=5)
    assert "question index" in {a.source for a in answers}


@pytest.mark.parametrize(("colloquial", "course"), [
    ("怎么删除钩子", "如何移除钩子"), ("钩子咋删", "钩子如何移除"), ("hook 怎么取消注册", "hook 如何移除"),
    ("注销钩子", "移除钩子"), ("显存一直涨", "内存一直增长"), ("为啥没被调用", "为什么不触发"),
])
def test_chinese_colloquial_words_meet_the_courses(colloquial: str, course: str) -> None:
    assert search.tokenize(colloquial) == search.tokenize(course)


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize(("kwargs", "error", "words"), [
    ({"question": 123}, TypeError, ["question must be a string", "int"]),
    ({"question": b"hook"}, TypeError, ["question must be a string", "bytes"]),
    ({"question": ["x"]}, TypeError, ["question must be a string", "list"]),
    ({"state": "x"}, TypeError, ["state must be an AskState", "str"]),
    ({"k": 0}, ValueError, ["k must be at least 1"]),
    ({"language": "fr"}, ValueError, ["language='fr'"]),
])
def test_a_refused_box_leaves_no_widget_open_and_nothing_to_print_later(kwargs: dict, error: type, words: list,
                                                                         capfd: pytest.CaptureFixture) -> None:
    """Defects 9 and 11: a bad question or state left 19 widgets open (and a traitlets message); a refused k or
    language printed an AttributeError from ipywidgets' __del__ later."""
    import gc

    import ipywidgets.widgets.widget as ww

    gc.collect()
    before = len(ww._instances)
    with pytest.raises(error) as info:
        AskBox(**kwargs)
    for word in words:
        assert word in str(info.value), (word, str(info.value))
    info = None  # the traceback holds the half-made box
    gc.collect()
    assert len(ww._instances) == before
    assert "Exception ignored" not in capfd.readouterr().err


def test_the_box_shows_its_answers_through_the_notebooks_renderer() -> None:
    """The answers are an Output's HTML (JupyterLab's link handler opens them inside the running JupyterLab)."""
    box = AskBox("why is my hook called twice")
    try:
        (output,) = box.results.outputs
        assert output["output_type"] == "display_data"
        assert 'href="10_faq.ipynb#faq-twice"' in output["data"]["text/html"]
        assert output["data"]["text/plain"].startswith("3 answers to")
        assert box.results.value == output["data"]["text/html"]
        box.ask("   ")
        assert box.results.outputs == () and box.results.value == ""
    finally:
        box.close()
