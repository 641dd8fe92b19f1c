"""Find it by asking: :func:`ask` searches the course for the sections that answer a question in your own words.

A learner types a question as they would ask it in a forum (``"my hook runs twice after I re-run the cell"``,
or in Chinese, ``"为什么钩子被调用了两次"``) and gets the few best sections of the course, each with its link
(notebook path and anchor) and a one-line summary. What is searched, in the language of the question:

- the **question index** (``notebooks/questions.yml``): real questions people asked in public threads, with
  the short answer and the cell that proves it (English only);
- the **FAQ** (notebook 10) and the **mistakes clinic** (notebook 11), section by section;
- every other notebook's **sections**: the markdown from one ``<a id="...">`` anchor to the next, under its
  heading (the Chinese edition, ``notebooks/zh/``, has the same sections and anchors in Chinese);
- the **hook atlas** (:mod:`hookviz.atlas`): one entry per hook kind and situation, with what was measured,
  linked to the section that teaches it (or to the atlas table of notebook 16).

Ranking is Okapi BM25 from the ``rank-bm25`` package; this module only turns text into words. English is
lower-cased and split into words (an identifier such as ``register_forward_hook`` counts whole and as its
parts), with a light suffix rule so that ``hooks``/``hook`` and ``fires``/``firing`` meet and a short list of
the words learners use for the course's (``delete`` for ``remove``, ``layer`` for ``module``); Chinese is split
into single characters and pairs of neighbouring characters (no dictionary needed), and the course's glossary
terms also count as their English words, so ``删掉`` meets ``移除`` and ``remove()``. A section found by several
kinds of document (its text, its heading, a question of the index it proves, atlas entries it teaches) ranks
above one found by a single kind (:meth:`_Index.search`). The index is built
once per process, on first use, from the files of the course repository (no network). It needs the
notebooks, which live in the repository next to the ``hookviz`` package, not inside it: a ``hookviz``
installed on its own raises :class:`CourseNotFoundError`, which says so.

>>> answers = ask("my hook prints nothing when I call layer.forward(x)")  # doctest: +SKIP
>>> answers[0].link  # doctest: +SKIP
'notebooks/10_faq.ipynb#faq-not-firing'
"""

from __future__ import annotations

import html
import json
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

from hookviz.i18n import LANGUAGES, translate

__all__ = [
    "SOURCES",
    "Answer",
    "Answers",
    "CourseNotFoundError",
    "Document",
    "ask",
    "build_index",
    "check_k",
    "check_language",
    "course_root",
    "detect_language",
    "tokenize",
]

#: Where an answer comes from, as :attr:`Answer.source` names it.
SOURCES = ("question index", "FAQ", "clinic", "atlas", "section")

#: The notebooks whose sections are the FAQ and the mistakes clinic (by file name prefix).
_SOURCE_OF_NOTEBOOK = {"10_": "FAQ", "11_": "clinic"}

#: The atlas entries that no notebook teaches link to the atlas table itself.
_ATLAS_TABLE = "16_hook_atlas.ipynb#atlas-table"

LINK_STYLE = "color:#1565c0;text-decoration:underline"


class CourseNotFoundError(FileNotFoundError):
    """The course's notebooks are not next to this ``hookviz`` package (it was installed without the repository)."""


# ---------------------------------------------------------------------------------------------- words
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]+|[a-z0-9_]+(?:\.[a-z0-9_]+)*")
_HAS_CJK = re.compile(rf"[{_CJK}]")

#: English words that say nothing about the topic of a question.
_STOP_WORDS = frozenset(
    """a about after again all am an and any are as at be been being but by can could did do does doing done
    for from had has have having he her here his how i if in into is it its itself just me my myself no nor
    of on once or other our out over own same she should so some such than that the their them then there
    these they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours e g eg ie etc get got want wanted need please help anyone
    someone way ways thing things""".split()
)
#: Chinese characters that only carry grammar (particles, pronouns); pairs with them still count.
_STOP_CHARS = frozenset("的了吗呢吧啊么是我你他她它在和与及就都也还又把被这那哪个一有很")


#: Words a learner uses for what the course says another way (after :func:`_stem`): each maps to the course's word.
_SYNONYMS = {
    # a hook runs
    "run": "fir", "ran": "fir", "call": "fir", "trigger": "fir", "execut": "fir", "invok": "fir",
    # taking a hook off
    "delet": "remov", "unregister": "remov", "eras": "remov", "clear": "remov",
    # changing a value
    "modify": "chang", "alter": "chang", "edit": "chang", "rewrit": "chang", "tweak": "chang",
    # errors
    "throw": "rais", "thrown": "rais", "crash": "fail", "break": "fail", "broken": "fail",
    # the rest
    "pickl": "sav", "serializ": "sav", "serialis": "sav", "gradient": "grad", "argument": "arg",
    "layer": "modul", "param": "parameter",
}
#: Phrases a learner writes for one word of the course's.
_PHRASES = {"get rid of": "remove", "take off": "remove", "two times": "twice", "2 times": "twice",
            "deep copy": "deepcopy", "deep-copy": "deepcopy"}
_PHRASE = re.compile(r"\b(" + "|".join(re.escape(p) for p in _PHRASES) + r")\b")
#: Chinese words of the course (its glossary, i18n/zh/glossary.md) and the English word each stands for: a Chinese
#: question then also meets the identifiers that Chinese sections keep in English (``remove()``, ``register_*``),
#: and the Chinese words a learner uses for the course's ones (删掉 for 移除).
_TERMS_ZH = {
    "钩子": "hook", "前向": "forward", "反向": "backward", "梯度": "gradient", "张量": "tensor", "模块": "module",
    "层": "layer", "句柄": "handle", "注册": "register", "输出": "output", "输入": "input", "参数": "argument",
    "移除": "remove", "删掉": "remove", "删除": "remove", "去掉": "remove", "取下": "remove", "注销": "remove",
    "卸载": "remove", "触发": "fire", "运行": "run", "调用": "call", "执行": "run", "修改": "change",
    "改变": "change", "更改": "change", "替换": "replace", "复制": "copy", "拷贝": "copy", "副本": "copy",
    "保存": "save", "错误": "error", "报错": "error", "出错": "error", "异常": "exception", "两次": "twice",
    "冻结": "frozen", "注意力": "attention", "优化器": "optimizer", "叶子": "leaf", "激活": "activation",
    "编译": "compile", "全局": "global", "返回": "return", "元组": "tuple", "原地": "inplace", "权重": "weight",
    "深拷贝": "deepcopy", "深复制": "deepcopy",
}
_TERM_ZH = re.compile("|".join(sorted(_TERMS_ZH, key=len, reverse=True)))
_DOUBLED = re.compile(r"([b-df-hj-np-tv-z])\1$")


def _stem(word: str) -> str:
    """A light English stemmer, then :data:`_SYNONYMS`: plural, -ed and -ing endings and a final e go
    (``fires``, ``firing`` -> ``fir``), a doubled last consonant is made single (``running`` -> ``run``)."""
    if len(word) > 3 and word.isalpha():
        for suffix, replacement in (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                if suffix == "s" and word.endswith(("ss", "us", "is")):
                    break
                word = word[: -len(suffix)] + replacement
                if suffix in ("ing", "ed") and _DOUBLED.search(word) and not word.endswith(("ll", "ss", "zz")):
                    word = word[:-1]
                break
        if word.endswith("e") and len(word) > 3:
            word = word[:-1]
    return _SYNONYMS.get(word, word)


def tokenize(text: str) -> list[str]:
    """The words BM25 compares: English words (lower-cased, lightly stemmed, identifiers whole and in parts),
    and for Chinese the English words of its glossary terms, then every character and every pair of neighbouring
    characters.

    >>> tokenize("Hooks fire twice in register_forward_hook")
    ['hook', 'fir', 'twic', 'register_forward_hook', 'register', 'forward', 'hook']
    >>> tokenize("钩子触发两次")
    ['hook', 'fir', 'twic', '钩', '钩子', '子', '子触', '触', '触发', '发', '发两', '两', '两次', '次']
    """
    words: list[str] = []
    text = _PHRASE.sub(lambda m: _PHRASES[m.group()], text.lower())
    for match in _TOKEN.finditer(text):
        token = match.group()
        if _HAS_CJK.match(token):
            words.extend(_stem(_TERMS_ZH[term]) for term in _TERM_ZH.findall(token))
            for i, char in enumerate(token):
                if char not in _STOP_CHARS:
                    words.append(char)
                if i + 1 < len(token):
                    words.append(token[i : i + 2])
            continue
        parts = [p for p in re.split(r"[_.]+", token) if p]
        stems = [_stem(p) for p in parts]
        if len(parts) > 1:  # an identifier whole, parts stemmed (layer.forward meets module.forward); then the parts
            words.append("_".join(stems))
        kept = zip(parts, stems, strict=True)
        words.extend(stem for part, stem in kept if part not in _STOP_WORDS and len(part) > 1 and not part.isdigit())
    return words


def detect_language(question: str) -> str:
    """``"zh"`` when ``question`` has a Chinese character, else ``"en"``."""
    return "zh" if _HAS_CJK.search(question) else "en"


# ---------------------------------------------------------------------------------------------- documents
@dataclass(frozen=True)
class Document:
    """One searchable piece of the course: a question of the index, a notebook section or an atlas entry.

    ``link`` is the notebook path from the repository root with the anchor (``notebooks/10_faq.ipynb#faq-copy``;
    no anchor for a notebook's introduction); ``text`` is what is searched; ``title`` and ``summary`` are shown.
    """

    source: str
    language: str
    title: str
    summary: str
    link: str
    text: str


_ANCHOR = re.compile(r"""<a\s+(?:id|name)=["']([^"']+)["']\s*>\s*</a>""")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_TAG = re.compile(r"<[^>]+>")
_FENCE = re.compile(r"```.*?```", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\"“(\[])|(?<=[。！？])")
_SUMMARY_LENGTH = 180


def _plain(markdown: str) -> str:
    """Markdown as plain text: no tags, link targets, emphasis or code marks (a ``*`` inside code stays)."""
    text = _TAG.sub("", _LINK.sub(r"\1", markdown))
    pieces = re.split(r"(`[^`\n]+`)", text)
    return "".join(p[1:-1] if p.startswith("`") else re.sub(r"\*+", "", p) for p in pieces).strip()


def _shorten(text: str, length: int = _SUMMARY_LENGTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= length else text[: length - 1].rstrip() + "…"


def _first_sentence(markdown: str) -> str:
    """The first sentence of the first paragraph of prose (not a heading, table, list marker or code)."""
    for paragraph in re.split(r"\n\s*\n", _FENCE.sub("", markdown)):
        lines = [line for line in paragraph.strip().splitlines() if not _HEADING.match(line)]
        text = " ".join(line.strip() for line in lines)
        text = re.sub(r"^(>\s*)?(([-*+]|\d+\.)\s+)?", "", text)
        if not text or text.startswith("|") or not _plain(text):
            continue
        plain = _plain(text)
        return _shorten(_SENTENCE_END.split(plain, maxsplit=1)[0])
    return ""


def _source_text(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


@dataclass
class _Section:
    anchor: str
    heading: str  # the section's first heading, else the heading it stands under
    own_heading: bool
    parts: list[str]


def notebook_documents(
    path: Path, root: Path, language: str, asked: dict[str, list[str]] | None = None
) -> list[Document]:
    """The sections of one notebook: its introduction (the text before the first anchor, linked without an
    anchor) and every ``<a id>`` anchor's markdown up to the next anchor, titled by its first heading (or, for
    an anchor without one, by the heading it stands under). ``asked`` maps a link to the questions of the index
    that it answers: they join the section's text, so that the words learners use find it too."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    link = path.relative_to(root).as_posix()
    source = next((s for prefix, s in _SOURCE_OF_NOTEBOOK.items() if path.name.startswith(prefix)), "section")
    sections = [_Section("", "", False, [])]
    heading = ""
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "markdown":  # code says little in a learner's words; its identifiers misled
            continue
        pieces = _ANCHOR.split(_source_text(cell))  # [before, anchor, after, anchor, after, ...]
        for i, piece in enumerate(pieces):
            if i % 2 == 1:
                sections.append(_Section(piece, heading, False, []))
                continue
            found = [_plain(text) for _, text in _HEADING.findall(piece)]
            if found and not sections[-1].own_heading:
                sections[-1].heading, sections[-1].own_heading = found[0], True
            if found:
                heading = found[-1]
            sections[-1].parts.append(piece)
    title = sections[0].heading or path.stem
    documents = []
    for section in sections:
        body = "\n".join(section.parts)
        if not body.strip() and not section.anchor:
            continue
        name = section.heading or title
        target = f"{link}#{section.anchor}" if section.anchor else link
        summary = _first_sentence(body) or name
        text = "\n".join([name, _plain(body), *(asked or {}).get(target, [])])
        documents.append(Document(source, language, name, summary, target, text))
        if section.own_heading:  # the heading alone: a question that is a section's title finds it
            documents.append(Document(source, language, name, summary, target, name))
    return documents


def question_documents(path: Path) -> list[Document]:
    """The question index's entries that a cell proves (``proven_by``), each linked to that cell's section."""
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - PyYAML comes with the course's pins
        raise ImportError("hookviz.ask reads notebooks/questions.yml with PyYAML: pip install pyyaml") from exc
    entries = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    documents = []
    for entry in entries:
        target = entry.get("proven_by")
        if not target:
            continue
        question, answer = str(entry.get("question", "")), str(entry.get("answer", ""))
        topic = str(entry.get("topic", "")).replace("-", " ")
        summary = _shorten(_SENTENCE_END.split(answer, maxsplit=1)[0]) if answer else question
        # the question and its answer's first sentence: the rest of a long answer (what was not run, the release
        # it was checked on) would make the entry match questions about other things
        documents.append(Document("question index", "en", question, summary, target,
                                  f"{question}\n{summary}\n{topic}"))
    return documents


def _registration(kind: str) -> str:
    """How an atlas kind is registered, short: ``Module.register_forward_hook``, ``register_module_forward_hook``."""
    from hookviz.catalogue import hook_kind

    parts = hook_kind(kind).register.split(".")
    return ".".join(parts[-2:]) if len(parts) > 1 and parts[-2][:1].isupper() else parts[-1]


def atlas_documents(language: str) -> list[Document]:
    """The hook atlas (as notebook 16's table merges the stored releases). An entry that a section teaches is one
    document (the kind, the situation's question, what was measured), linked to that section; the entries no
    section teaches are one document per situation, listing its kinds, linked to the atlas table: hundreds of
    near-identical entries would otherwise make the situations' words ("twice", "removed") look common."""
    from hookviz import atlas

    stored = {version: atlas.load_snapshot(version) for version in atlas.stored_versions()}
    table = atlas.AtlasTable(atlas.merge_versions(stored), teaches=atlas.teaching_links())
    folder = "notebooks" if language == "en" else f"notebooks/{language}"
    fields = ("fires", "calls", "runs in", "returns", "error", "left")
    documents = []
    untaught: dict[str, list[atlas.Entry]] = {}
    for entry, versions in table.rows:
        if not table.link(entry):
            untaught.setdefault(entry.situation, []).append(entry)
            continue
        cells = dict(zip(atlas.COLUMNS, table.shown_cells(entry, versions, language), strict=True))
        question = translate(entry.question, language)
        method = _registration(entry.kind)
        summary = "; ".join(f"{translate(f, language)}: {cells[f]}" for f in fields if cells[f] != atlas.NOT_APPLICABLE)
        summary += f"; torch {cells['measured on']}"
        category = translate(entry.category, language)
        words = f"{method} {entry.kind} hook {entry.situation} {question} {category} {entry.error}"
        documents.append(Document("atlas", language, f"{method} · {question}", summary,
                                  f"{folder}/{table.link(entry)}", words))
    for situation, entries in untaught.items():
        question = translate(entries[0].question, language)
        methods = [_registration(e.kind) for e in entries]
        summary = _shorten(", ".join(methods), 120) + f" ({len(methods)})"
        category = translate(entries[0].category, language)
        errors = " ".join(sorted({e.error for e in entries if e.error}))
        words = f"{question} {situation} {category} hook {' '.join(methods)} {errors}"
        documents.append(Document("atlas", language, question, summary, f"{folder}/{_ATLAS_TABLE}", words))
    return documents


# ---------------------------------------------------------------------------------------------- the index
def course_root() -> Path:
    """The course repository holding this ``hookviz`` (its ``notebooks/questions.yml``), or a clear error."""
    package = Path(__file__).resolve().parent
    root = package.parent
    if not (root / "notebooks" / "questions.yml").is_file():
        raise CourseNotFoundError(
            f"hookviz.ask searches the course's notebooks, and there are none next to this hookviz ({package}): "
            "it was installed without the course repository. Clone the course and install it from there "
            "(pip install -e .), or pass root= the repository's folder to hookviz.search.build_index."
        )
    return root


#: How much the other kinds of evidence for a section add to its best one (see :meth:`_Index.search`); chosen on
#: reworded questions of the index (tests/test_ask.py) and on others kept apart from them.
_AGREEMENT = 0.3
#: How much a match counts, by the source of the document, against a match with a section's own text (1): the index's
#: questions are real ones in learners' words, the FAQ and the clinic answer the most common ones; without the weight a
#: section written for one narrow question outranks them on the common words ("twice", "copy", "remove").
_SOURCE_WEIGHTS = {"question index": 1.5, "FAQ": 1.5, "clinic": 1.5}


class _Index:
    """The documents of one language and their BM25 ranker (``rank_bm25.BM25Okapi``, its default k1 and b)."""

    def __init__(self, documents: list[Document]) -> None:
        import numpy as np
        from rank_bm25 import BM25Okapi  # not with `import hookviz`: numpy only, but loaded when first asked

        if not documents:
            raise CourseNotFoundError("the course has nothing to search: no notebooks, no question index")
        self.documents = documents
        self.bm25 = BM25Okapi([tokenize(d.text) for d in documents])
        self.weights = np.asarray([_SOURCE_WEIGHTS.get(d.source, 1.0) for d in documents])

    def search(self, words: list[str], k: int) -> list[tuple[Document, float]]:
        """The ``k`` best sections for ``words``, each with the document that matched best and its score.

        A section (a link) can be matched by several documents: its own text (and its heading alone, one more
        document of the same kind), a question of the index that it proves, atlas entries that it teaches. Its
        score is the best document's score plus :data:`_AGREEMENT` times the best score of each *other* kind
        (source) of document: sections that the index, the atlas and their own words agree on come first, while
        many atlas entries sharing one link count once. Each document's BM25 score is first multiplied by its
        source's weight (:data:`_SOURCE_WEIGHTS`). Only scores above zero count.
        """
        import numpy as np

        if not words:
            return []
        scores = self.bm25.get_scores(list(dict.fromkeys(words))) * self.weights
        by_link: dict[str, dict[str, tuple[Document, float]]] = {}
        for i in np.argsort(-scores, kind="stable"):
            if scores[i] <= 0:
                break
            document = self.documents[i]
            by_link.setdefault(document.link, {}).setdefault(document.source, (document, float(scores[i])))
        ranked = []
        for order, best in enumerate(by_link.values()):  # dicts keep the order of the best document's score
            (document, top), *others = sorted(best.values(), key=lambda item: -item[1])
            ranked.append((top + _AGREEMENT * sum(score for _, score in others), order, document))
        ranked.sort(key=lambda item: (-item[0], item[1]))
        return [(document, score) for score, _, document in ranked[:k]]


_BUILT: dict[Path, dict[str, _Index]] = {}
_LOCK = threading.Lock()


def course_documents(root: Path) -> dict[str, list[Document]]:
    """The documents the course's files give, by language (the atlas's come from the package itself)."""
    notebooks = root / "notebooks"
    if not (notebooks / "questions.yml").is_file():
        raise CourseNotFoundError(f"{root} is not the course repository: it has no notebooks/questions.yml")
    english = question_documents(notebooks / "questions.yml")
    asked: dict[str, list[str]] = {}
    for question in english:
        asked.setdefault(question.link, []).append(question.title)
    for path in sorted(notebooks.glob("[0-9][0-9]_*.ipynb")):
        english += notebook_documents(path, root, "en", asked)
    chinese = []
    for path in sorted((notebooks / "zh").glob("[0-9][0-9]_*.ipynb")):
        chinese += notebook_documents(path, root, "zh")
    return {"en": english, "zh": chinese}


#: The course's documents, shipped inside the package (``scripts/make_zh.py`` rewrites it from the notebooks; a
#: test fails when it is stale), so that ``hookviz.ask`` works where hookviz is installed without the course's
#: notebooks, as on Google Colab.
PACKAGED_DOCUMENTS = Path(__file__).resolve().parent / "assets" / "course_index.json.gz"


def packaged_documents_text(root: Path) -> bytes:
    """What :data:`PACKAGED_DOCUMENTS` holds for the course at ``root`` (gzip with a fixed time: the same bytes on
    every machine)."""
    import dataclasses
    import gzip

    payload = {language: [dataclasses.asdict(d) for d in documents]
               for language, documents in course_documents(root).items()}
    text = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return gzip.compress(text, compresslevel=9, mtime=0)


def write_packaged_documents(root: Path) -> Path:
    """Rewrite :data:`PACKAGED_DOCUMENTS` from the course at ``root``; returns its path."""
    PACKAGED_DOCUMENTS.write_bytes(packaged_documents_text(root))
    return PACKAGED_DOCUMENTS


def _packaged_documents() -> dict[str, list[Document]]:
    import gzip

    payload = json.loads(gzip.decompress(PACKAGED_DOCUMENTS.read_bytes()).decode("utf-8"))
    return {language: [Document(**fields) for fields in documents] for language, documents in payload.items()}


_BUILT: dict[Path | None, dict[str, _Index]] = {}
_LOCK = threading.Lock()


def build_index(root: Path | str | None = None) -> dict[str, _Index]:
    """The search index of each language (``{"en": ..., "zh": ...}``), built on first use and kept for the rest of
    the process. From the course at ``root`` (default: :func:`course_root`); where hookviz runs without the
    course's files (Colab), from the copy shipped in the package. Reads files only."""
    if root is None:
        try:
            root = course_root()
        except CourseNotFoundError:
            if not PACKAGED_DOCUMENTS.is_file():
                raise
            root = None
    else:
        root = Path(root).resolve()
    with _LOCK:
        if root not in _BUILT:
            documents = _packaged_documents() if root is None else course_documents(root)
            _BUILT[root] = {
                "en": _Index(documents["en"] + atlas_documents("en")),
                "zh": _Index(documents["zh"] + atlas_documents("zh")),
            }
        return _BUILT[root]


# ---------------------------------------------------------------------------------------------- answers
#: How a source is named to the learner (the key is the English name; hookviz.i18n translates it).
_SOURCE_LABELS = {source: source for source in SOURCES}


@dataclass(frozen=True)
class Answer:
    """One section of the course that answers the question.

    ``title``: what matched (a section's heading, a question as it was asked, an atlas entry); ``link``: the
    notebook path from the repository root and the anchor (``notebooks/10_faq.ipynb#faq-copy``); ``source``:
    one of :data:`SOURCES`; ``score``: the BM25 score (higher is better, comparable within one question only);
    ``summary``: one line; ``language``: the edition the link points into.
    """

    title: str
    link: str
    source: str
    score: float
    summary: str
    language: str

    @property
    def notebook(self) -> str:
        """The notebook's path from the repository root (``notebooks/10_faq.ipynb``)."""
        return self.link.split("#", 1)[0]

    @property
    def anchor(self) -> str:
        """The anchor in the notebook (``faq-copy``; ``""`` for a notebook's introduction)."""
        return self.link.split("#", 1)[1] if "#" in self.link else ""

    @property
    def href(self) -> str:
        """The link relative to its edition's notebook folder (``10_faq.ipynb#faq-copy``): clicked in a notebook
        of that edition, it opens the section (the anchors are the same in both editions)."""
        folder = "notebooks/" if self.language == "en" else f"notebooks/{self.language}/"
        return self.link.removeprefix(folder)

    def __str__(self) -> str:
        return f"{self.title}  [{self.source}]\n   {self.link}\n   {self.summary}"


class Answers(Sequence[Answer]):
    """The sections :func:`ask` found, best first: a read-only list of :class:`Answer`.

    Shown in a notebook as a numbered list of clickable links (``_repr_html_``), in plain text as the titles, links
    and summaries. The labels are in the language of the answers (that of the question, or ``language=``).
    """

    def __init__(self, question: str, language: str, answers: Sequence[Answer]) -> None:
        self.question = question
        self.language = language
        self._answers = tuple(answers)

    @overload
    def __getitem__(self, index: int) -> Answer: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Answer]: ...

    def __getitem__(self, index: int | slice) -> Answer | Sequence[Answer]:
        return self._answers[index]

    def __len__(self) -> int:
        return len(self._answers)

    def __iter__(self) -> Iterator[Answer]:
        return iter(self._answers)

    @property
    def links(self) -> list[str]:
        """The answers' links, best first."""
        return [a.link for a in self._answers]

    def heading(self, language: str | None = None) -> str:
        """``3 answers to “...”`` (or that no section matched), in ``language`` (default: the answers')."""
        language = language or self.language
        if not self._answers:
            return translate(f"No section of the course matches “{self.question}”. Try other words: the hook's "
                             "name, the error message, what you expected to happen.", language)
        count = len(self._answers)
        return translate(f"{count} answer{'s' if count != 1 else ''} to “{self.question}”", language)

    def source_label(self, answer: Answer, language: str | None = None) -> str:
        """``answer.source`` as the learner reads it in ``language`` (default: the answers')."""
        return translate(_SOURCE_LABELS[answer.source], language or self.language)

    def to_text(self, language: str | None = None) -> str:
        """The answers as plain text: heading, then each title, source, link and summary."""
        lines = [self.heading(language)]
        for number, answer in enumerate(self._answers, 1):
            lines.append(f"{number}. {answer.title}  [{self.source_label(answer, language)}]")
            lines.append(f"   {answer.link}")
            lines.append(f"   {answer.summary}")
        return "\n".join(lines)

    def to_html(self, language: str | None = None, heading: bool = True) -> str:
        """The answers as an HTML list of links relative to the notebook folder, with source and summary (after
        :meth:`heading`, unless ``heading=False``); the labels in ``language`` (default: the answers')."""
        head = f"<div style='margin:2px 0'>{html.escape(self.heading(language))}</div>" if heading else ""
        items = []
        for answer in self._answers:
            href, label = html.escape(answer.href, quote=True), html.escape(self.source_label(answer, language))
            items.append(
                f"<li style='margin:4px 0'><a href=\"{href}\" style=\"{LINK_STYLE}\">{html.escape(answer.title)}</a>"
                f" <span style='color:#555'>· {label} · <code>{href}</code></span><br>"
                f"<span>{html.escape(answer.summary)}</span></li>"
            )
        body = f"<ol style='margin:0;padding-left:1.6em'>{''.join(items)}</ol>" if items else ""
        return f"<div class='hookviz-answers' style='line-height:1.4;white-space:normal'>{head}{body}</div>"

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:
        return self.to_html()


# ---------------------------------------------------------------------------------------------- ask
def check_language(language: Any) -> str | None:
    """``language`` as :func:`ask` takes it: ``"en"``, ``"zh"`` (``"zh-CN"`` and the like too) or ``None``."""
    if language is None:
        return None
    if not isinstance(language, str):
        raise TypeError(f"language must be 'en', 'zh' or None (found from the question), not {language!r}")
    code = re.split(r"[-_.@]", language.strip().lower(), maxsplit=1)[0]
    if code not in LANGUAGES:
        raise ValueError(
            f"language={language!r} is not a language the course is written in: use one of "
            f"{', '.join(repr(x) for x in LANGUAGES)}, or None to find it from the question"
        )
    return code


def check_k(k: Any) -> int:
    """``k`` as :func:`ask` takes it: a whole number, at least 1."""
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"k must be a whole number (how many sections to show), not {k!r}; e.g. k=3")
    if k < 1:
        raise ValueError(f"k must be at least 1 (how many sections to show), not {k}; e.g. k=3")
    return k


def ask(question: str, k: int = 3, language: str | None = None, *, root: Path | str | None = None) -> Answers:
    """The ``k`` sections of the course that best answer ``question``, asked in your own words.

    ``question`` may be English or Chinese; ``language`` (``"en"``, ``"zh"`` or ``None``: Chinese when the
    question has a Chinese character) chooses the edition searched and linked (``notebooks/`` or
    ``notebooks/zh/``). Each :class:`Answer` has a ``title``, a ``link`` (notebook path and anchor), its
    ``source`` (question index, FAQ, clinic, atlas or section), a ``score`` and a one-line ``summary``; shown
    in a notebook, the links are clickable. Fewer than ``k`` come back when fewer sections share a word with
    the question. The course's index is built on the first call (a second or two) and kept.

    >>> hookviz.ask("why does my hook fire twice?")[0].link  # doctest: +SKIP
    'notebooks/10_faq.ipynb#faq-twice'
    """
    if not isinstance(question, str):
        raise TypeError(
            f"question must be a string (your question in your own words), not {type(question).__name__}; "
            "e.g. hookviz.ask('why does my hook fire twice?')"
        )
    if not question.strip():
        raise ValueError(
            "question is empty: type what you want to know, in English or Chinese, e.g. "
            "hookviz.ask('why does my hook fire twice?')"
        )
    k = check_k(k)
    chosen = check_language(language) or detect_language(question)
    index = build_index(root)[chosen]
    found = index.search(tokenize(question), k)
    answers = [Answer(d.title, d.link, d.source, score, d.summary, d.language) for d, score in found]
    return Answers(question.strip(), chosen, answers)
