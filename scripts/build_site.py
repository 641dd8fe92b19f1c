"""Build the course's web site (``make site``): every notebook in English and Chinese, with its stored outputs.

The site is built from the committed files, nothing is executed: the outputs on it are the ones ``pytest --nbval``
checks. The tools are Sphinx with MyST-NB and the Sphinx Book Theme (pinned in ``site/requirements.txt``, installed
by ``make site`` in a venv of their own, ``.venv/site``), and Pagefind for the full-text index. Steps:

1. **Stage** (this script, with the course's Python): copy each page's source into ``build/site/<lang>/src`` as
   Sphinx reads it. Links are rewritten once, here, for the site: ``notebooks/04_backward_hooks.ipynb#first-layer``
   becomes the page's relative URL and anchor (``notebooks/04_backward_hooks.html#first-layer``), a link to a file
   that is not a page of the site (``scripts/colab_pins.txt``) becomes its GitHub URL. A live widget's view is
   replaced by its static picture, which the stored output already holds, and a one-line note that it is live when
   run. The README's learner part is the home page; the question index and the atlas get a page each.
2. **Sphinx**, once per language (both at once, one per core), into ``build/site/<lang>/html``; then both are put
   together in ``_site/`` (English at its root, Chinese under ``zh/``).
3. **Search**: ``hookviz.ask``'s own index (the same sections, questions, atlas entries, words and BM25 weights)
   is written to ``ask-index.json`` in each language and ranked in the browser by ``site/_static/hookviz-ask.js``,
   so that a question in a learner's own words finds the section that answers it, as ``ask`` does; Pagefind indexes
   every page for the full-text results below the answers.

Usage (``make site`` runs it with the course's venv and passes the site venv's tools)::

    python scripts/build_site.py --sphinx .venv/site/bin/sphinx-build --pagefind ".venv/site/bin/python -m pagefind"
    python scripts/build_site.py --stage-only      # stage the sources only (build/site/*/src), for a look
"""

from __future__ import annotations

import argparse
import html
import json
import os
import posixpath
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

REPO = Path(__file__).resolve().parents[1]
SITE = REPO / "_site"
WORK = REPO / "build" / "site"
CONF = REPO / "site"

#: The course's public repository and the places a page can be opened live (the same forms as the README's badges).
GITHUB = "https://github.com/hookviz/hookviz"
PAGES_URL = "https://hookviz.github.io/hookviz/"
BINDER = "https://mybinder.org/v2/gh/hookviz/hookviz/HEAD?urlpath=lab/tree/{path}"
COLAB = "https://colab.research.google.com/github/hookviz/hookviz/blob/main/{path}"

LANGUAGES = ("en", "zh")
#: The part of each README that is the learner's: its title and introduction, then these sections.
HOME_SECTIONS = {
    "en": ["## Start learning", "## Teaching a class", "## The notebooks"],
    "zh": ["## 开始学习", "## 教一个班", "## 笔记本", "## 给中国大陆读者"],
}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

#: What the site says around the notebooks, in each language.
STRINGS = {
    "en": {
        "title": "hookviz: learn every PyTorch hook, live",
        "course": "The course, in learning order",
        "answers": "Find an answer",
        "teachers": "Teachers and setup",
        "workshop": "Workshop kit",
        "other": "中文",
        "other_title": "这一页的中文版",
        "binder": "Run on Binder",
        "binder_title": "Open this notebook live on mybinder.org: your own student copy (solutions removed, outputs "
        "cleared)",
        "colab": "Open in Colab",
        "colab_title": "Open this notebook on Google Colab (the teacher copy, solutions and outputs included)",
        "live": "Live when run: this is the picture of the widget that the notebook stored. Open the notebook on "
        "Binder or Colab (the links at the top of the page), or on your computer, to use it.",
        "live_ask": "Live when run: in the notebook this is a question box. On this site, ask the same question in the "
        "search box (Ctrl+K), which ranks the course's sections as hookviz.ask does.",
        "live_atlas": "Live when run: in the notebook this is a search box over the atlas. On this site, the table "
        "below and the {atlas} page can be filtered and sorted.",
        "atlas_page": "atlas",
        "questions_title": "Questions people really ask",
        "questions_intro": "{n} real questions about PyTorch hooks, asked in public threads, each with its short "
        "answer and a link to the cell of the course whose stored output proves it ({proven} of them; the others "
        "are not answered by a cell yet). The list is `notebooks/questions.yml`; `hookviz.ask` and this site's search "
        "search it.",
        "answered_in": "answered in",
        "asked_in": "asked in",
        "not_yet": "not answered by a cell yet",
        "atlas_title": "The hook atlas, as a table",
        "atlas_intro": "Every entry of the hook atlas of {nb}: each hook kind in each situation, measured on every "
        "minor PyTorch release from 2.8 to 2.14. Type in the box to filter the rows (every word must appear in the "
        "row) and click a column's heading to sort by it. The notebook explains how it was measured.",
        "filter": "Filter the rows: deepcopy, no_grad backward, RuntimeError ...",
        "search_title": "Search",
        "search_intro": "Ask in your own words (English or Chinese): the answers are the sections of the course that "
        "answer it, ranked as `hookviz.ask` ranks them; below them, every page with the words you typed.",
        "search_answers": "Sections that answer it",
        "search_pages": "Pages with these words",
        "search_none": "No section of the course matches. Try other words: the hook's name, the error message, what "
        "you expected to happen.",
        "search_no_pages": "No page has every one of these words: for this list, type a few key words (a hook's "
        "name, a word of the error message).",
        "sources": {"question index": "question index", "FAQ": "FAQ", "clinic": "clinic", "atlas": "atlas",
                    "section": "section"},
    },
    "zh": {
        "title": "hookviz：边运行边学会 PyTorch 的每一种钩子",
        "course": "课程（按学习顺序）",
        "answers": "查找答案",
        "teachers": "教师与安装",
        "workshop": "工作坊材料",
        "other": "English",
        "other_title": "The English version of this page",
        "binder": "在 Binder 上运行",
        "binder_title": "在 mybinder.org 上实时打开这个笔记本：你自己的学生副本（没有答案，输出已清空）",
        "colab": "在 Colab 中打开",
        "colab_title": "在 Google Colab 上打开这个笔记本（教师副本，含答案与输出）",
        "live": "运行时是可交互的：这里是笔记本保存下来的部件图片。在 Binder 或 Colab（页面顶部的链接）或你自己的电脑上"
        "打开这个笔记本，就能操作它。",
        "live_ask": "运行时是可交互的：在笔记本里这是一个提问框。在本网站上，请在搜索框（Ctrl+K）里提同样的问题，"
        "它像 hookviz.ask 一样为课程的各个小节排序。",
        "live_atlas": "运行时是可交互的：在笔记本里这是图谱的搜索框。在本网站上，下面的表格和{atlas}页面"
        "都可以筛选和排序。",
        "atlas_page": "图谱",
        "questions_title": "大家真正会问的问题",
        "questions_intro": "{n} 个关于 PyTorch 钩子的真实问题，来自公开讨论，每个都附有简短回答，并链接到课程中"
        "用保存的输出证明它的单元格（其中 {proven} 个；其余的还没有单元格证明）。问题和回答保持英文原文"
        "（`notebooks/questions.yml`）；链接打开中文版的小节。`hookviz.ask` 和本网站的搜索都会搜索它们。",
        "answered_in": "答案见",
        "asked_in": "提问出处",
        "not_yet": "还没有单元格回答",
        "atlas_title": "钩子图谱（表格）",
        "atlas_intro": "{nb}的钩子图谱的全部条目：每一种钩子在每一种情形下的表现，在 PyTorch 2.8 到 2.14 的"
        "每个小版本上测得。在框里输入文字来筛选行（每个词都必须出现在该行中），点击列标题按该列排序。测量方法见笔记本。",
        "filter": "筛选行：deepcopy、no_grad backward、RuntimeError ……",
        "search_title": "搜索",
        "search_intro": "用你自己的话提问（中文或英文）：先列出回答它的课程小节，排序与 `hookviz.ask` 相同；"
        "下面是包含你输入的词的所有页面。",
        "search_answers": "回答这个问题的小节",
        "search_pages": "包含这些词的页面",
        "search_none": "课程中没有小节与之匹配。换个说法试试：钩子的名字、错误信息、你预期会发生什么。",
        "search_no_pages": "没有页面包含所有这些词：这个列表请只输入几个关键词（钩子的名字、错误信息中的一个词）。",
        "sources": {"question index": "问题索引", "FAQ": "常见问题", "clinic": "错误诊所", "atlas": "图谱",
                    "section": "小节"},
    },
}


#: The question index's topics (notebooks/questions.yml) in Chinese.
TOPICS_ZH = {
    "tensor-hooks": "张量钩子", "forward-hooks": "前向钩子", "pre-hooks": "前向预钩子", "backward-hooks": "反向钩子",
    "lifetime-removal": "生命周期与移除", "global-hooks": "全局钩子", "autograd-graph": "autograd 计算图",
    "state-dict-load": "state_dict 与加载", "compile-export": "编译与导出", "distributed": "分布式",
    "transformers": "Transformer", "memory": "内存", "performance": "性能", "errors": "错误",
    "applications": "应用",
}


# ---------------------------------------------------------------------------------------------- pages
@dataclass(frozen=True)
class Page:
    """One page of the site: where its text comes from, its language and its name in that language's build."""

    source: str  # the file in the repository (posix path); "" for a page made here (questions, atlas)
    language: str
    docname: str  # Sphinx's name for it in its language's build: "index", "notebooks/00_start_here"
    kind: str  # "home", "notebook", "doc", "questions", "atlas", "search"
    caption: str = ""  # the navigation group it is listed under ("" for none)

    @property
    def site_path(self) -> str:
        """Its file in ``_site/``: ``notebooks/00_start_here.html``, ``zh/notebooks/00_start_here.html``."""
        return ("" if self.language == "en" else f"{self.language}/") + self.docname + ".html"

    @property
    def suffix(self) -> str:
        """The staged source's suffix: a notebook stays a notebook, every other page is MyST Markdown."""
        return ".ipynb" if self.kind == "notebook" else ".md"


def _notebooks(repo: Path, folder: str) -> list[str]:
    return sorted(p.relative_to(repo).as_posix() for p in (repo / folder).glob("[0-9][0-9]_*.ipynb"))


#: The workshop documents of the English kit, in the order a teacher reads them (the rest follow by name).
WORKSHOP_ORDER = ["README", "agenda", "cheatsheet", "slides", "checklist", "helper_sheet", "exit_ticket",
                  "exit_ticket_key"]


def _workshop(repo: Path, folder: str) -> list[str]:
    found = [p.relative_to(repo).as_posix() for p in (repo / folder).rglob("*.md")]
    if folder == "workshop":
        found = [f for f in found if not f.startswith("workshop/zh/")]

    def order(path: str) -> tuple:
        rest = path.removeprefix(folder + "/")
        stem = Path(rest).stem
        return (rest.count("/"), WORKSHOP_ORDER.index(stem) if stem in WORKSHOP_ORDER else 99, rest)

    return sorted(found, key=order)


def pages(repo: Path = REPO) -> list[Page]:
    """Every page of the site, in the order of its navigation, English first."""
    s_en, s_zh = STRINGS["en"], STRINGS["zh"]
    result = [Page("README.md", "en", "index", "home")]
    result += [Page(p, "en", p.removesuffix(".ipynb"), "notebook", s_en["course"])
               for p in _notebooks(repo, "notebooks")]
    result += [
        Page("notebooks/questions.yml", "en", "questions", "questions", s_en["answers"]),
        Page("", "en", "atlas", "atlas", s_en["answers"]),
        Page("notebooks/article_verdicts.md", "en", "notebooks/article_verdicts", "doc", s_en["answers"]),
        Page("SETUP.md", "en", "SETUP", "doc", s_en["teachers"]),
        Page("TEACHING.md", "en", "TEACHING", "doc", s_en["teachers"]),
    ]
    result += [Page(p, "en", p.removesuffix(".md"), "doc", s_en["workshop"]) for p in _workshop(repo, "workshop")]
    result.append(Page("", "en", "search", "search"))
    result.append(Page("README.zh.md", "zh", "index", "home"))
    result += [
        Page(p, "zh", p.removeprefix("notebooks/zh/").removesuffix(".ipynb").join(["notebooks/", ""]), "notebook",
             s_zh["course"])
        for p in _notebooks(repo, "notebooks/zh")
    ]
    result += [
        Page("notebooks/questions.yml", "zh", "questions", "questions", s_zh["answers"]),
        Page("", "zh", "atlas", "atlas", s_zh["answers"]),
        Page("notebooks/zh/article_verdicts.md", "zh", "notebooks/article_verdicts", "doc", s_zh["answers"]),
    ]
    result += [
        Page(p, "zh", "workshop/" + p.removeprefix("workshop/zh/").removesuffix(".md"), "doc", s_zh["workshop"])
        for p in _workshop(repo, "workshop/zh")
    ]
    result.append(Page("", "zh", "search", "search"))
    return result


def page_of_source(repo_path: str, language: str | None = None, all_pages: Iterable[Page] | None = None) -> Page | None:
    """The page made from the file ``repo_path`` (the page of ``language`` for a file that two pages share)."""
    found = [p for p in (all_pages or pages()) if p.source == repo_path and p.source]
    if language:
        found = [p for p in found if p.language == language] or found
    return found[0] if found else None


def twin(page: Page, all_pages: Iterable[Page] | None = None) -> Page:
    """The same page in the other language, or that language's home page where it has none."""
    all_pages = list(all_pages or pages())
    other = "zh" if page.language == "en" else "en"
    for candidate in all_pages:
        if candidate.language == other and candidate.docname == page.docname:
            return candidate
    return next(p for p in all_pages if p.language == other and p.kind == "home")


def site_link(link: str, all_pages: Iterable[Page] | None = None) -> str:
    """Where a course link (``notebooks/10_faq.ipynb#faq-copy``, as the question index, ``hookviz.ask``, the hook
    doctor and the clinic write them) is on the site: ``notebooks/10_faq.html#faq-copy`` (from the site's root)."""
    path, _, fragment = link.partition("#")
    page = page_of_source(path, None, all_pages)
    if page is None:
        raise KeyError(f"{path} is not a page of the site")
    return page.site_path + (f"#{fragment}" if fragment else "")


def relative_url(from_site_path: str, to_site_path: str) -> str:
    """The URL of ``to_site_path`` relative to the page at ``from_site_path`` (both from the site's root)."""
    path, _, fragment = to_site_path.partition("#")
    rel = posixpath.relpath(path, posixpath.dirname(from_site_path) or ".")
    return rel + (f"#{fragment}" if fragment else "")


def launch_links(page: Page) -> dict[str, str]:
    """The Binder link (the learner's student copy, as the README's badge opens it) and the Colab link (the
    committed notebook) of a notebook page; empty for other pages."""
    if page.kind != "notebook":
        return {}
    name = Path(page.source).name
    student = f"student/{name}" if page.language == "en" else f"student/{page.language}/{name}"
    return {"binder": BINDER.format(path=student), "colab": COLAB.format(path=page.source)}


def github_url(repo_path: str, repo: Path = REPO) -> str:
    kind = "tree" if (repo / repo_path).is_dir() else "blob"
    return f"{GITHUB}/{kind}/main/{repo_path}".rstrip("/")


# ---------------------------------------------------------------------------------------------- links
EXTERNAL = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//)")
MD_TARGET = re.compile(r"(\]\()(<[^>\n]+>|[^)\s]+)")
HTML_TARGET = re.compile(r"""(\b(?:href|src)=)(["'])(.*?)\2""")


class LinkRewriter:
    """Rewrites the links of one page's source for the site (see the module's docstring).

    ``home_anchors`` holds, for each language, the anchors of the README headings that its home page keeps: a link
    to another part of the README goes to the README on GitHub. ``base`` is the folder the links are relative to
    (default: the page's source file's).
    """

    def __init__(self, page: Page, all_pages: list[Page], repo: Path = REPO,
                 home_anchors: dict[str, set[str]] | None = None, base: str | None = None) -> None:
        self.page = page
        self.pages = all_pages
        self.repo = repo
        self.home_anchors = home_anchors or {}
        self.base = posixpath.dirname(page.source) if base is None else base

    def _home(self, home: Page, fragment: str) -> str | None:
        """A README anchor that the home page does not keep: the README on GitHub."""
        anchors = self.home_anchors.get(home.language)
        if anchors is not None and fragment not in anchors:
            return f"{GITHUB}/blob/main/{home.source}#{fragment}"
        return None

    def _folder_page(self, repo_path: str) -> Page | None:
        """The page a folder stands for: its README's (``workshop/``), or the Chinese home (``notebooks/zh/``)."""
        if not (self.repo / repo_path).is_dir():
            return None
        for language in LANGUAGES[1:]:
            if repo_path == f"notebooks/{language}":
                return next(p for p in self.pages if p.language == language and p.kind == "home")
        return page_of_source(f"{repo_path}/README.md", self.page.language, self.pages)

    def target(self, target: str) -> str:
        """One link target, rewritten."""
        if not target or EXTERNAL.match(target):
            return target
        if target.startswith("#"):
            if self.page.kind == "home":
                return self._home(self.page, target[1:]) or target
            return target
        path, hash_, fragment = target.partition("#")
        repo_path = posixpath.normpath(posixpath.join(self.base, unquote(path)))
        if repo_path.startswith("../"):
            return target
        page = page_of_source(repo_path, self.page.language, self.pages) or self._folder_page(repo_path)
        if page is not None:
            if page.kind == "home" and fragment and (elsewhere := self._home(page, fragment)):
                return elsewhere
            return relative_url(self.page.site_path, page.site_path) + hash_ + fragment
        if (self.repo / repo_path).exists():
            return github_url(repo_path, self.repo) + hash_ + fragment
        return target

    def markdown(self, text: str) -> str:
        """Markdown's link targets (``](...)``) and its raw HTML's ``href``/``src``."""

        def one(match: re.Match[str]) -> str:
            target = match.group(2)
            bracketed = target.startswith("<")
            new = self.target(target[1:-1] if bracketed else target)
            return match.group(1) + (f"<{new}>" if bracketed else new)

        return self.html(MD_TARGET.sub(one, text))

    def html(self, text: str) -> str:
        """HTML's ``href`` and ``src`` targets."""

        def one(match: re.Match[str]) -> str:
            attribute, quote, target = match.groups()
            return f"{attribute}{quote}{html.escape(self.target(html.unescape(target)), quote=True)}{quote}"

        return HTML_TARGET.sub(one, text)


# ---------------------------------------------------------------------------------------------- markdown pages
HEADING = re.compile(r"^(#{1,6}) (.+?)\s*$", re.MULTILINE)
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def github_slug(heading: str) -> str:
    """The anchor GitHub (and MyST's ``github`` slugs) give a heading: lower case, punctuation dropped, spaces to -."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def home_markdown(readme: str, sections: list[str]) -> tuple[str, set[str]]:
    """The learner part of a README: its title and introduction, then the named sections; and the anchors of the
    headings it keeps."""
    blank = FENCE.sub(lambda m: "\0" * len(m.group(0)), readme)
    starts = [(m.start(), m.group(0).strip()) for m in HEADING.finditer(blank) if m.group(1) == "##"]
    first = starts[0][0] if starts else len(readme)
    parts = [readme[:first].rstrip() + "\n"]
    kept = {github_slug(HEADING.match(readme[: readme.index("\n")]).group(2))} if readme.startswith("#") else set()
    for i, (start, heading) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(readme)
        if heading in sections:
            parts.append(readme[start:end].rstrip() + "\n")
    text = "\n".join(parts)
    for match in HEADING.finditer(FENCE.sub(lambda m: "\0" * len(m.group(0)), text)):
        kept.add(github_slug(match.group(2)))
    return text, kept


def toctree(caption: str, docnames: list[str]) -> str:
    entries = "\n".join(docnames)
    return f"\n```{{toctree}}\n:hidden:\n:maxdepth: 1\n:caption: {caption}\n\n{entries}\n```\n"


def _code(text: str) -> str:
    """Plain text with `code` spans as HTML."""
    parts = re.split(r"(`[^`\n]+`)", html.escape(text, quote=False))
    return "".join(f"<code>{p[1:-1]}</code>" if p.startswith("`") and p.endswith("`") else p for p in parts)


def questions_markdown(language: str, repo: Path, rewriter: LinkRewriter) -> str:
    """The question index as a page: the questions by topic, each with its answer and the link to its proof."""
    import yaml

    s = STRINGS[language]
    entries = yaml.safe_load((repo / "notebooks" / "questions.yml").read_text(encoding="utf-8"))
    proven = sum(1 for e in entries if e.get("proven_by"))
    lines = [f"# {s['questions_title']}", "", s["questions_intro"].format(n=len(entries), proven=proven), ""]
    topics: dict[str, list[dict]] = {}
    for entry in entries:
        topics.setdefault(entry.get("topic", "other"), []).append(entry)
    folder = "notebooks/" if language == "en" else f"notebooks/{language}/"
    from_root = LinkRewriter(rewriter.page, rewriter.pages, repo, rewriter.home_anchors, base="")
    for topic, group in topics.items():
        name = TOPICS_ZH.get(topic, topic) if language == "zh" else topic.replace("-", " ").capitalize()
        lines += [f"## {name}", ""]
        items = []
        for entry in group:
            link = entry.get("proven_by")
            question = _code(str(entry["question"]))
            if link:
                target = from_root.target(link.replace("notebooks/", folder, 1))
                head = f'<a href="{html.escape(target)}">{question}</a>'
                where = f'{s["answered_in"]} <a href="{html.escape(target)}"><code>{html.escape(link)}</code></a>'
            else:
                head, where = question, s["not_yet"]
            answer = _code(str(entry.get("answer") or ""))
            sources = ", ".join(
                f'<a href="{html.escape(u)}">{html.escape(re.sub(r"^https?://(www.)?", "", u)[:60])}</a>'
                for u in entry.get("sources") or []
            )
            items.append(
                f'<div class="hv-question" id="{entry["id"]}"><p class="hv-question-text">'
                f'<span class="hv-qid">{entry["id"]}</span> {head}</p>'
                + (f"<p>{answer}</p>" if answer else "")
                + f'<p class="hv-question-where">{where} · {s["asked_in"]}: {sources}</p></div>'
            )
        lines += ["<div class=\"hv-questions\">", *items, "</div>", ""]
    return "\n".join(lines)


def atlas_markdown(language: str, repo: Path, rewriter: LinkRewriter) -> str:
    """The hook atlas as a page: the full table that notebook 16 stores, filterable and sortable."""
    s = STRINGS[language]
    source = "notebooks/16_hook_atlas.ipynb" if language == "en" else f"notebooks/{language}/16_hook_atlas.ipynb"
    notebook = json.loads((repo / source).read_text(encoding="utf-8"))
    tables = [
        "".join(out["data"]["text/html"])
        for cell in notebook["cells"] if cell["cell_type"] == "code"
        for out in cell.get("outputs", []) if "text/html" in out.get("data", {})
    ]
    table = max(tables, key=lambda t: t.count("<tr"))
    # the stored table's links are relative to the notebook's folder
    table = LinkRewriter(rewriter.page, rewriter.pages, repo, rewriter.home_anchors,
                         base=posixpath.dirname(source)).html(table)
    link = rewriter.target(source)
    intro = s["atlas_intro"].format(nb=f"[notebook 16]({link})" if language == "en" else f"[笔记本 16]({link})")
    return "\n".join([
        f"# {s['atlas_title']}", "", intro, "",
        f'<div class="hv-atlas hv-filterable" data-placeholder="{html.escape(s["filter"], quote=True)}">',
        table, "</div>", "",
    ])


# ---------------------------------------------------------------------------------------------- notebooks
def _live_note(language: str, kind: str, rewriter: LinkRewriter) -> dict:
    s = STRINGS[language]
    if kind == "atlas":
        atlas = relative_url(rewriter.page.site_path, ("" if language == "en" else f"{language}/") + "atlas.html")
        text = s["live_atlas"].format(atlas=f'<a href="{atlas}">{s["atlas_page"]}</a>')
    else:
        text = s["live_ask" if kind == "ask" else "live"]
    plain = re.sub(r"<[^>]+>", "", text)
    return {
        "output_type": "display_data",
        "metadata": {},
        "data": {"text/html": f'<p class="hv-live-note">{text}</p>', "text/plain": plain},
    }


def stage_notebook(page: Page, repo: Path, rewriter: LinkRewriter) -> dict:
    """The notebook as the site shows it: links rewritten, each live widget shown as its static picture with a
    note, the saved widget state (used by nothing on the site) dropped."""
    notebook = json.loads((repo / page.source).read_text(encoding="utf-8"))
    notebook.get("metadata", {}).pop("widgets", None)
    for cell in notebook["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] == "markdown":
            cell["source"] = rewriter.markdown(source)
            continue
        if cell["cell_type"] != "code":
            continue
        outputs = []
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "text/html" in data:
                data["text/html"] = rewriter.html("".join(data["text/html"]))
            outputs.append(output)
            if WIDGET_VIEW in data:
                del data[WIDGET_VIEW]
                plain = "".join(data.get("text/plain", ""))
                kind = "ask" if plain.startswith("AskBox") else "atlas" if plain.startswith("AtlasWidget") else ""
                if "image/png" in data:
                    kind = ""
                outputs.append(_live_note(page.language, kind, rewriter))
        cell["outputs"] = outputs
    return notebook


# ---------------------------------------------------------------------------------------------- staging
def stage(repo: Path = REPO, work: Path = WORK) -> dict[str, Path]:
    """Write each language's Sphinx sources and its manifest; returns the source folder of each language."""
    all_pages = pages(repo)
    homes = {p.language: home_markdown((repo / p.source).read_text(encoding="utf-8"), HOME_SECTIONS[p.language])
             for p in all_pages if p.kind == "home"}
    anchors = {language: kept for language, (_, kept) in homes.items()}
    folders = {}
    for language in LANGUAGES:
        src = work / language / "src"
        if src.exists():
            shutil.rmtree(src)
        src.mkdir(parents=True)
        s = STRINGS[language]
        manifest: dict = {"language": language, "title": s["title"], "strings": s, "pages": {},
                          "base_url": PAGES_URL + ("" if language == "en" else f"{language}/"), "github": GITHUB}
        mine = [p for p in all_pages if p.language == language]
        for page in mine:
            rewriter = LinkRewriter(page, all_pages, repo, anchors)
            dest = src / (page.docname + page.suffix)
            dest.parent.mkdir(parents=True, exist_ok=True)
            if page.kind == "home":
                text = homes[language][0]
                captions: dict[str, list[str]] = {}
                for other in mine:
                    if other.caption:
                        captions.setdefault(other.caption, []).append(other.docname)
                text = rewriter.markdown(text) + "".join(toctree(c, d) for c, d in captions.items())
                dest.write_text(text, encoding="utf-8")
            elif page.kind == "notebook":
                dest.write_text(json.dumps(stage_notebook(page, repo, rewriter), ensure_ascii=False),
                                encoding="utf-8")
            elif page.kind == "questions":
                dest.write_text(questions_markdown(language, repo, rewriter), encoding="utf-8")
            elif page.kind == "atlas":
                dest.write_text(atlas_markdown(language, repo, rewriter), encoding="utf-8")
            elif page.kind == "doc":
                dest.write_text(rewriter.markdown((repo / page.source).read_text(encoding="utf-8")),
                                encoding="utf-8")
            elif page.kind == "search":
                continue  # made by the theme's template (site/_templates/hv-search.html)
            other = twin(page, all_pages)
            entry = {
                "kind": page.kind,
                "twin": relative_url(page.site_path, other.site_path),
                "source": github_url(page.source, repo) if page.source else "",
            }
            entry.update(launch_links(page))
            manifest["pages"][page.docname] = entry
        (work / language / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1),
                                                         encoding="utf-8")
        folders[language] = src
    return folders


# ---------------------------------------------------------------------------------------------- search index
def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while True:
        number, digit = divmod(number, 36)
        text = digits[digit] + text
        if not number:
            return text


def encode_counts(counts: dict[int, int]) -> str:
    """A document's words (their numbers in the vocabulary) and counts, small: in increasing order, each word as the
    step from the one before, times 2, plus 1 when its count (which then follows) is not 1; in base 36, comma-separated.
    ``{3: 1, 10: 2}`` is ``"6,f,2"``. ``hookviz-ask.js`` reads it back (:func:`decode_counts` here)."""
    parts, previous = [], 0
    for word in sorted(counts):
        count = counts[word]
        parts.append(_base36((word - previous) * 2 + (count != 1)))
        if count != 1:
            parts.append(_base36(count))
        previous = word
    return ",".join(parts)


def decode_counts(text: str) -> dict[int, int]:
    """The inverse of :func:`encode_counts`."""
    counts, previous = {}, 0
    values = iter(int(part, 36) for part in text.split(",") if part)
    for value in values:
        previous += value // 2
        counts[previous] = next(values) if value % 2 else 1
    return counts


def ask_index(language: str, repo: Path = REPO) -> dict:
    """``hookviz.ask``'s index of one language, for the browser (``site/_static/hookviz-ask.js``): its documents
    (link, source, title, summary, length, weight, words with their counts, kind of evidence), BM25's idf and
    parameters, and what it reads a question with and ranks by (``hookviz.search.ranking_tables``: Python's own
    regular expressions, word lists, weights and limits)."""
    sys.path.insert(0, str(repo))
    from hookviz import search

    index = search.build_index(repo)[language]
    bm25 = index.bm25
    vocabulary = sorted(bm25.idf)
    number = {word: i for i, word in enumerate(vocabulary)}
    all_pages = pages(repo)
    root = "" if language == "en" else f"{language}/"  # the URLs are relative to the language's search page
    links: dict[str, int] = {}
    kinds: dict[str, int] = {}
    documents = []
    for i, (document, counts, length) in enumerate(zip(index.documents, bm25.doc_freqs, bm25.doc_len, strict=True)):
        links.setdefault(document.link, len(links))
        kinds.setdefault(index.kinds[i], len(kinds))
        documents.append([links[document.link], search.SOURCES.index(document.source), document.title,
                          document.summary, length, float(index.weights[i]),
                          encode_counts({number[w]: c for w, c in counts.items()}), kinds[index.kinds[i]]])
    return {
        "language": language,
        "links": [[link, relative_url(f"{root}search.html", site_link(link, all_pages))] for link in links],
        "sources": list(search.SOURCES),
        "vocabulary": vocabulary,
        "idf": [bm25.idf[w] for w in vocabulary],
        "k1": bm25.k1,
        "b": bm25.b,
        "avgdl": bm25.avgdl,
        "average_idf": bm25.average_idf,
        "documents": documents,
        "tokenizer": search.ranking_tables(),
    }


# ---------------------------------------------------------------------------------------------- build
def run_sphinx(sphinx: list[str], folders: dict[str, Path], work: Path = WORK) -> dict[str, Path]:
    """Both languages at once (one per core); returns each language's HTML folder."""
    processes = {}
    outputs = {}
    for language, src in folders.items():
        out = work / language / "html"
        if out.exists():
            shutil.rmtree(out)
        env = dict(os.environ, HOOKVIZ_SITE_MANIFEST=str(work / language / "manifest.json"))
        log = open(work / language / "sphinx.log", "w")  # noqa: SIM115 - closed below
        cmd = [*sphinx, "-b", "html", "-q", "-c", str(CONF), "-d", str(work / language / "doctrees"),
               str(src), str(out)]
        processes[language] = (subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT), log)
        outputs[language] = out
    failed = []
    for language, (process, log) in processes.items():
        process.wait()
        log.close()
        text = (work / language / "sphinx.log").read_text(encoding="utf-8")
        if text.strip():
            print(f"--- sphinx ({language}) said:\n{text.strip()}")
        if process.returncode:
            failed.append(language)
    if failed:
        raise SystemExit(f"sphinx failed for {failed}: see build/site/<language>/sphinx.log")
    return outputs


def assemble(outputs: dict[str, Path], site: Path = SITE, repo: Path = REPO) -> None:
    """English at the root of ``_site/``, each other language in its folder; the search indexes beside them."""
    if site.exists():
        shutil.rmtree(site)
    shutil.copytree(outputs["en"], site, ignore=shutil.ignore_patterns(".buildinfo", ".doctrees", "objects.inv"))
    for language, out in outputs.items():
        target = site if language == "en" else site / language
        if language != "en":
            shutil.copytree(out, target, ignore=shutil.ignore_patterns(".buildinfo", ".doctrees", "objects.inv"))
        (target / "ask-index.json").write_text(
            json.dumps(ask_index(language, repo), ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    for junk in [*site.glob("**/_static/*.html"), *site.glob("**/_static/**/*.map")]:
        junk.unlink()  # the theme's Jinja macros (copied as if they were static files) and its JavaScript source maps
    (site / ".nojekyll").write_text("")  # GitHub Pages: serve _static/ and _images/ as they are


def run_pagefind(pagefind: list[str], site: Path = SITE) -> None:
    """Pagefind's full-text index of every page (one index per language, from each page's ``lang``)."""
    cmd = [*pagefind, "--site", str(site), "--root-selector", "article.bd-article", "--quiet"]
    for ignored in (".hv-bar", ".hv-live-note", ".headerlink"):  # the page's buttons, the widget notes, the "#" links
        cmd += ["--exclude-selectors", ignored]
    subprocess.run(cmd, check=True)


def report(site: Path = SITE) -> dict:
    """The figures the README quotes: pages per language, the heaviest page (with its images), the site's size."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import check_site

    return check_site.figures(site)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sphinx", default=f"{sys.executable} -m sphinx", help="the sphinx-build command")
    parser.add_argument("--pagefind", default=f"{sys.executable} -m pagefind", help="the pagefind command")
    parser.add_argument("--stage-only", action="store_true", help="stage the sources only")
    args = parser.parse_args(argv)
    started = time.monotonic()
    folders = stage()
    print(f"staged {sum(1 for _ in WORK.glob('*/src/**/*.*'))} files in {time.monotonic() - started:.1f} s")
    if args.stage_only:
        return 0
    outputs = run_sphinx(shlex.split(args.sphinx), folders)
    print(f"sphinx done at {time.monotonic() - started:.0f} s")
    assemble(outputs)
    run_pagefind(shlex.split(args.pagefind))
    figures = report()
    figures["build_seconds"] = round(time.monotonic() - started)
    (WORK / "figures.json").write_text(json.dumps(figures, indent=1), encoding="utf-8")
    print(f"built _site/ in {figures['build_seconds']} s: " + ", ".join(f"{k} {v}" for k, v in figures.items()
                                                                       if k != "build_seconds"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
