"""hookviz.ask and its helpers (hookviz.search), AskState, AskBox and the Answers they give."""

from __future__ import annotations

import atexit
import shutil
import tempfile
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np
import torch

import hookviz
from hookviz import AskBox, AskState, search
from hookviz.search import Answers, build_index, check_k, check_language, course_root, detect_language, tokenize
from reliability.harness import ACCEPT, EITHER, REFUSE, Case
from reliability.inputs import MISSING_PATH, Arg, Spec, Value, fullwidth
from reliability.same import same

QUESTION = "why does my hook fire twice?"
FAQ_TWICE = "notebooks/10_faq.ipynb#faq-twice"
ROOT = Path(hookviz.__file__).resolve().parent.parent
ASK_TIMEOUT = 10.0  # a question box that takes longer than this is stuck, for a learner
LANGUAGE_WORDS = ("language",)
ROOT_WORDS = ("root", "repository", "course")


def _check_answers(answer: Any, args: dict[str, Any]) -> str | None:
    if not isinstance(answer, Answers):
        return f"not Answers: {type(answer).__name__}"
    k = args.get("k", 3)
    k = int(k) if isinstance(k, (int, np.integer, torch.Tensor)) and not isinstance(k, bool) else 3
    if len(answer) > k:
        return f"{len(answer)} answers for k={k}"
    for a in answer:
        if not a.link.startswith("notebooks/") or (answer.language == "zh") != a.link.startswith("notebooks/zh/"):
            return f"answer link {a.link!r} is not in the {answer.language} edition"
    str(answer), answer.to_html()  # both must render
    question = args.get("question")
    if isinstance(question, str) and len(question) < 200 and "twice" in question.lower() and k >= 3:
        wanted = FAQ_TWICE.replace("notebooks/", "notebooks/zh/") if answer.language == "zh" else FAQ_TWICE
        if wanted not in answer.links:
            return f"{wanted} is not among the answers {answer.links}"
    return None


def _question(**kw: Any) -> Arg:
    return Arg("question", "text", QUESTION, positional=True, **kw)


def _k(**kw: Any) -> Arg:
    return Arg("k", "count", 3, minimum=1, **kw)


def _language(**kw: Any) -> Arg:
    extra = [
        Value("zh", "zh", ACCEPT),
        Value("zh-CN", "zh-CN", ACCEPT),
        Value("fr", "fr", REFUSE),
        Value("en_US.UTF-8", "en_US.UTF-8", EITHER),
    ]
    return Arg("language", "choice", "en", none_ok=True, default=None, aliases=LANGUAGE_WORDS, extra=extra, **kw)


def _root_dirs(lenient: bool = False) -> list[Value]:
    """Course folders that are not one: an empty folder, a malformed questions.yml, a plain-sentence questions.yml."""
    base = Path(tempfile.mkdtemp(prefix="hookviz-reliability-"))
    atexit.register(shutil.rmtree, base, ignore_errors=True)
    empty = base / "empty"
    empty.mkdir()
    broken = base / "broken"
    (broken / "notebooks").mkdir(parents=True)
    (broken / "notebooks" / "questions.yml").write_text("- question: [unclosed\n  answer: x\n", encoding="utf-8")
    sentence = base / "sentence"
    (sentence / "notebooks").mkdir(parents=True)
    (sentence / "notebooks" / "questions.yml").write_text("just a sentence\n", encoding="utf-8")
    a_file = base / "file.txt"
    a_file.write_text("x", encoding="utf-8")
    later = EITHER if lenient else REFUSE  # a state may say so when asked (its status line) instead of refusing
    return [
        Value("empty-folder", empty, later),
        Value("malformed-questions-yml", broken, later),
        Value("sentence-questions-yml", sentence, later),
        Value("a-file", a_file, later),
    ]


def _root(lenient: bool = False, **kw: Any) -> Arg:
    return Arg("root", "path", ROOT, none_ok=True, default=None, aliases=ROOT_WORDS, extra=_root_dirs(lenient), **kw)


def _blank_ok(name: str = "question", **kw: Any) -> Arg:
    """A question where a blank one is allowed (the box and its state show "the question is empty")."""
    extra = [Value("empty-ok", "", ACCEPT), Value("blank-ok", " \t\n ", ACCEPT)]
    return Arg(name, "text", QUESTION, positional=True, skip=("empty", "blank", "None", *kw.pop("skip", ())),
               extra=extra + kw.pop("extra", []), **kw)


def _check_state(answer: Any, args: dict[str, Any]) -> str | None:
    if not isinstance(answer, AskState):
        return f"not an AskState: {type(answer).__name__}"
    if type(answer.k) is not int:
        return f"state.k is {answer.k!r} ({type(answer.k).__name__}), not an int"
    try:
        found = answer.ask(QUESTION)
    except Exception as error:  # noqa: BLE001 - a clear error when asked, naming the folder, is fine too
        root = args.get("root")
        named = str(root) in str(error) or "root" in str(error) or "questions.yml" in str(error)
        hookviz_error = type(error).__module__.startswith("hookviz") or isinstance(error, (TypeError, ValueError))
        return None if named and hookviz_error else f"ask() then fails: {type(error).__name__}: {error}"
    if found is None:  # the course is not at root: the box must say so (its status line), naming the folder
        said = answer.status()
        root = args.get("root")
        return None if answer.error and str(root) in said else f"no answers, and the status says {said!r}"
    return _check_answers(found, {"k": answer.k, "question": QUESTION})


def _state_ask(question: Any) -> Any:
    state = AskState()
    return state.ask(question), state


def _check_state_ask(answer: Any, args: dict[str, Any]) -> str | None:
    found, state = answer
    if found is None:
        return None if not args["question"].strip() and state.status() else "no answers for a question"
    if state.question != args["question"] or state.answers is not found:
        return "the state does not hold the question and its answers"
    return _check_answers(found, {"question": args["question"]})


def _same_state(a: AskState, b: AskState) -> bool:
    return (a.k, a.language) == (b.k, b.language)


def _same_asked(a: Any, b: Any) -> bool:
    return same(a[0], b[0])


def _same_box(a: AskBox, b: AskBox) -> bool:
    return same(a.state.answers, b.state.answers) and (a.state.k, a.state.language) == (b.state.k, b.state.language)


def _check_box(answer: Any, args: dict[str, Any]) -> str | None:
    if not isinstance(answer, AskBox):
        return f"not an AskBox: {type(answer).__name__}"
    question = args.get("question", "")
    if isinstance(question, str) and "twice" in question.lower() and len(question) < 200:  # a question it answers
        if answer.state.answers is None or not answer.results.value:
            return "the question was not answered in the box"
    return None


def _box(question: Any = "", k: Any = 3, language: Any = None, state: Any = None) -> AskBox:
    return AskBox(question, k, language, state=state)


def _heading(answers_language: str, method: str) -> Any:
    def call(language: Any = None) -> Any:
        found = hookviz.ask(QUESTION, language=answers_language)
        return getattr(found, method)(language)

    return call


def _check_text(answer: Any, args: dict[str, Any]) -> str | None:
    return None if isinstance(answer, str) and answer.strip() else f"not a text: {answer!r}"


def specs() -> list[Spec]:
    long_cjk_only_once = ("long-20000-cjk",)
    return [
        Spec("hookviz.ask", hookviz.ask, [_question(), _k(), _language(), _root()], check=_check_answers,
             timeout=ASK_TIMEOUT),
        Spec("hookviz.AskState", AskState, [_k(positional=True), _language(), _root(lenient=True, exists=False)],
             check=_check_state,
             timeout=ASK_TIMEOUT, short="AskState", compare=_same_state),
        Spec("hookviz.AskState", _state_ask, [_blank_ok(skip=long_cjk_only_once)], check=_check_state_ask,
             timeout=ASK_TIMEOUT, keywords=False, short="AskState.ask", compare=_same_asked),
        Spec(
            "hookviz.AskBox",
            _box,
            [
                _blank_ok(skip=long_cjk_only_once, extra=[Value("None", None, EITHER)]),
                _k(skip=("1e9", "1e18")),
                _language(skip=("long-20000", "en_US.UTF-8")),
                Arg("state", "any", None, extra=[
                    Value("str", "state", REFUSE), Value("dict", {"k": 3}, REFUSE),
                    Value("AskState", AskState(), ACCEPT), Value("class", AskState, REFUSE),
                ]),
            ],
            check=_check_box,
            timeout=ASK_TIMEOUT,
            keywords=False,
            short="AskBox",
            compare=_same_box,
        ),
        Spec("hookviz.search.Answers", _heading("en", "heading"),
             [Arg("language", "choice", "zh", none_ok=True, default=None, aliases=LANGUAGE_WORDS)],
             check=_check_text, keywords=False, short="Answers.heading"),
        Spec("hookviz.search.Answers", _heading("zh", "to_text"),
             [Arg("language", "choice", "en", none_ok=True, default=None, aliases=LANGUAGE_WORDS,
                  skip=("long-20000",))],
             check=_check_text, keywords=False, short="Answers.to_text"),
        Spec("hookviz.search.Answers", _heading("en", "to_html"),
             [Arg("language", "choice", "zh", none_ok=True, default=None, aliases=LANGUAGE_WORDS,
                  skip=("long-20000", "cjk", "bytes"))],
             check=_check_text, keywords=False, short="Answers.to_html"),
        Spec("hookviz.search.check_k", check_k, [_k(positional=True)],
             check=lambda answer, args: None if type(answer) is int and answer == int(args["k"]) else f"{answer!r}"),
        Spec("hookviz.search.check_language", check_language,
             [Arg("language", "choice", "zh", positional=True, none_ok=True, default=None, aliases=LANGUAGE_WORDS,
                  extra=[Value("zh-CN", "zh-CN", ACCEPT), Value("fr", "fr", REFUSE)])],
             check=lambda answer, args: None if answer in ("en", "zh", None) else f"{answer!r}"),
        Spec("hookviz.search.detect_language", detect_language,
             [_blank_ok(skip=("padded", "upper", "fullwidth"), extra=[Value("None", None, REFUSE)])],
             check=lambda answer, args: None if answer in ("en", "zh") else f"{answer!r}"),
        Spec("hookviz.search.tokenize", tokenize,
             [Arg("text", "text", "Hooks fire twice in register_forward_hook", positional=True,
                  skip=("empty", "blank", "padded"), extra=[Value("empty-ok", "", EITHER)])],
             check=lambda answer, args: None if isinstance(answer, list) and all(isinstance(w, str) for w in answer)
             else f"{answer!r}"),
        Spec("hookviz.search.check_question", search.check_question,
             [_blank_ok(extra=[Value("None", None, REFUSE)], skip=("upper", "fullwidth", "padded"))],
             check=lambda answer, args: None if answer == args["question"] else f"{answer!r}"),
        Spec("hookviz.search.check_root", search.check_root, [_root(positional=True, lenient=True, exists=False)],
             check=lambda answer, args: None if answer is None or isinstance(answer, Path) else f"{answer!r}"),
        Spec("hookviz.search.normalize", search.normalize,
             [Arg("text", "text", "why does my hook fire twice?", positional=True,
                  skip=("empty", "blank", "padded", "upper", "None"),
                  extra=[Value("empty-ok", "", ACCEPT), Value("None", None, REFUSE)])],
             check=lambda answer, args: None if answer == unicodedata.normalize("NFKC", args["text"])
             else f"{str(answer)[:60]!r}"),
        Spec("hookviz.search.build_index", build_index, [_root(positional=True)],
             check=lambda answer, args: None if set(answer) == {"en", "zh"} else f"{sorted(answer)}",
             timeout=ASK_TIMEOUT),
    ]


def scenario_cases() -> list[Case]:
    out = []

    def first_is(question: str, link: str, label: str) -> Case:
        return Case(
            f"ask:docstring-{label}", "hookviz.ask", lambda ctx: hookviz.ask(question), expect=ACCEPT,
            check=lambda answer, ctx: None if answer.links[:1] == [link] else f"first answer {answer.links[:1]}",
            keeps_rng=True,
        )

    out.append(first_is(QUESTION, FAQ_TWICE, "fire-twice-first"))
    out.append(first_is("my hook prints nothing when I call layer.forward(x)",
                        "notebooks/10_faq.ipynb#faq-not-firing", "prints-nothing-first"))
    out.append(Case(
        "ask:fullwidth-inside-chinese", "hookviz.ask",
        lambda ctx: hookviz.ask(f"为什么我的 {fullwidth('hook')} 触发两次"),
        expect=ACCEPT, check=lambda a, ctx: None if a.language == "zh" and len(a) else f"{a.links}", keeps_rng=True,
    ))
    out.append(Case(
        "ask:same-question-twice-same-answers", "hookviz.ask",
        lambda ctx: (hookviz.ask("remove a hook"), hookviz.ask("remove a hook")), expect=ACCEPT,
        check=lambda a, ctx: None if a[0].links == a[1].links else "two calls disagree", keeps_rng=True,
    ))
    out.append(Case(
        "ask:fullwidth-remove-hook", "hookviz.ask", lambda ctx: hookviz.ask(fullwidth("remove hook")), expect=ACCEPT,
        check=lambda a, ctx: None if a.links == hookviz.ask("remove hook").links else f"{a.links}", keeps_rng=True,
    ))
    out.append(Case(
        "ask:fullwidth-digit-k", "hookviz.ask", lambda ctx: hookviz.ask(QUESTION, k="３"), expect=REFUSE, names=("k",),
        keeps_rng=True,
    ))
    out.append(Case(
        "AskBox:typed-after-close", "hookviz.AskBox",
        lambda ctx: _typed_after_close(), expect=ACCEPT, check=lambda a, ctx: a, keeps_rng=True,
    ))
    out.append(Case(
        "AskState:root-missing-is-said-not-raised", "hookviz.AskState",
        lambda ctx: AskState(root=MISSING_PATH).ask(QUESTION), expect=EITHER, names=ROOT_WORDS, keeps_rng=True,
    ))
    out.append(Case("search.course_root:valid", "hookviz.search.course_root", lambda ctx: course_root(),
                    expect=ACCEPT, check=lambda a, ctx: None if (a / "notebooks" / "questions.yml").is_file() else a,
                    keeps_rng=True))
    out.append(Case("search.course_root:an-argument", "hookviz.search.course_root", lambda ctx: course_root(ROOT),
                    expect=REFUSE, names=("positional", "argument"), keeps_rng=True))
    return out


def _typed_after_close() -> str | None:
    box = AskBox()
    box.close()
    box.ask(QUESTION)  # a closed box does nothing, and says nothing
    box.question.value = "remove hook"
    return None if box.closed else "the box is not closed"


def cases() -> list[Case]:
    out = [c for spec in specs() for c in spec.cases()]
    for case in out:
        case.keeps_rng = True
    return out + scenario_cases()
