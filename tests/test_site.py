"""The course on the web (``make site``): how pages, links and anchors map, and the checker that guards them.

Fast tests of ``scripts/build_site.py`` and ``scripts/check_site.py``, without the site's tools: every notebook of
both editions is a page, every link the course hands out (``notebooks/NN_name.ipynb#anchor``) maps to a page and
an anchor, links are rewritten once for the site, live widgets become their stored pictures with a note, the launch
links are the README's, and the checker finds a broken link, a missing anchor and a missing image on a tiny site.
The built site itself is checked by ``make site`` (``check_site.py`` over ``_site/``) and read in Chromium by
``tests/browser/test_site_browser.py``.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


build_site = _script("build_site")
check_site = _script("check_site")
PAGES = build_site.pages(REPO)


def _page(language: str, docname: str):
    return next(p for p in PAGES if p.language == language and p.docname == docname)


# ---------------------------------------------------------------------------------------------- pages
def test_every_notebook_of_both_editions_is_a_page_in_learning_order() -> None:
    for language, folder in (("en", "notebooks"), ("zh", "notebooks/zh")):
        notebooks = sorted(p.relative_to(REPO).as_posix() for p in (REPO / folder).glob("[0-9][0-9]_*.ipynb"))
        pages = [p.source for p in PAGES if p.language == language and p.kind == "notebook"]
        assert pages == notebooks and len(pages) >= 17
    names = [(p.language, p.docname) for p in PAGES]
    assert len(names) == len(set(names))
    assert {p.site_path for p in PAGES if p.kind == "home"} == {"index.html", "zh/index.html"}


def test_every_course_document_is_a_page() -> None:
    sources = {p.source for p in PAGES}
    for document in ["README.md", "README.zh.md", "SETUP.md", "TEACHING.md", "notebooks/article_verdicts.md",
                     "notebooks/zh/article_verdicts.md", "notebooks/questions.yml", "workshop/README.md",
                     "workshop/cheatsheet.md", "workshop/zh/agenda.md", "workshop/practitioners/agenda.md"]:
        assert document in sources, document
    assert {p.kind for p in PAGES} >= {"home", "notebook", "doc", "questions", "atlas", "search"}


def test_course_links_map_to_a_page_and_an_anchor() -> None:
    assert build_site.site_link("notebooks/10_faq.ipynb#faq-copy") == "notebooks/10_faq.html#faq-copy"
    assert build_site.site_link("notebooks/zh/01_tensor_hooks.ipynb#non-leaf-gradient") == (
        "zh/notebooks/01_tensor_hooks.html#non-leaf-gradient")
    assert build_site.site_link("notebooks/16_hook_atlas.ipynb") == "notebooks/16_hook_atlas.html"
    with pytest.raises(KeyError):
        build_site.site_link("notebooks/99_missing.ipynb#x")


def test_every_link_the_course_hands_out_is_on_a_page() -> None:
    """The question index, hookviz.ask, the hook doctor, the clinic and every notebook anchor: each maps to a page
    (``check_site.py`` then proves the anchor is an id on the built page)."""
    named = check_site.course_links(REPO)
    assert set(named) == {"question index", "hookviz.ask", "hook doctor", "clinic", "every notebook anchor"}
    assert len(named["question index"]) > 100 and len(named["hook doctor"]) > 20 and len(named["clinic"]) > 30
    for who, links in named.items():
        for link in links:
            path, _, anchor = build_site.site_link(link, PAGES).partition("#")
            assert path.endswith(".html") and (anchor or "#" not in link), (who, link)


def test_twins_and_launch_links() -> None:
    english = _page("en", "notebooks/06_hookviz_explorer")
    chinese = build_site.twin(english, PAGES)
    assert chinese.site_path == "zh/notebooks/06_hookviz_explorer.html" and build_site.twin(chinese, PAGES) == english
    assert build_site.twin(_page("en", "SETUP"), PAGES).site_path == "zh/index.html"  # no Chinese SETUP.md
    links = build_site.launch_links(english)
    # the same links as the README's Binder badge (the student copy) and Colab badges (the committed notebook)
    readme, readme_zh = (REPO / "README.md").read_text(encoding="utf-8"), (REPO / "README.zh.md").read_text("utf-8")
    assert build_site.launch_links(_page("en", "notebooks/00_start_here"))["binder"] in readme
    assert build_site.launch_links(_page("zh", "notebooks/00_start_here"))["binder"] in readme_zh
    assert links["binder"].endswith("?urlpath=lab/tree/student/06_hookviz_explorer.ipynb")
    assert links["colab"] in readme
    assert build_site.launch_links(chinese)["colab"].endswith("/blob/main/notebooks/zh/06_hookviz_explorer.ipynb")
    assert build_site.launch_links(_page("en", "SETUP")) == {}


def test_relative_urls() -> None:
    rel = build_site.relative_url
    assert rel("notebooks/01_a.html", "notebooks/02_b.html#x") == "02_b.html#x"
    assert rel("index.html", "zh/notebooks/02_b.html") == "zh/notebooks/02_b.html"
    assert rel("zh/notebooks/02_b.html", "notebooks/02_b.html") == "../../notebooks/02_b.html"
    assert rel("zh/search.html", "zh/notebooks/02_b.html#y") == "notebooks/02_b.html#y"


# ---------------------------------------------------------------------------------------------- links
def _rewriter(language: str, docname: str):
    homes = {p.language: build_site.home_markdown((REPO / p.source).read_text(encoding="utf-8"),
                                                  build_site.HOME_SECTIONS[p.language])[1]
             for p in PAGES if p.kind == "home"}
    return build_site.LinkRewriter(_page(language, docname), PAGES, REPO, homes)


def test_links_are_rewritten_for_the_site() -> None:
    notebook = _rewriter("en", "notebooks/11_mistakes_clinic")
    assert notebook.target("04_backward_hooks.ipynb#relu-inplace") == "04_backward_hooks.html#relu-inplace"
    assert notebook.target("#mistake-03") == "#mistake-03"
    assert notebook.target("article_verdicts.md#claim-A1") == "article_verdicts.html#claim-A1"
    assert notebook.target("https://pytorch.org/docs") == "https://pytorch.org/docs"
    assert notebook.target("../hookviz/diagnose/rules") == f"{build_site.GITHUB}/tree/main/hookviz/diagnose/rules"
    chinese = _rewriter("zh", "notebooks/11_mistakes_clinic")
    assert chinese.target("04_backward_hooks.ipynb#relu-inplace") == "04_backward_hooks.html#relu-inplace"
    assert chinese.target("../../SETUP.md") == "../../SETUP.html"  # no Chinese twin: the English page
    home = _rewriter("en", "index")
    assert home.target("notebooks/02_forward_hooks.ipynb") == "notebooks/02_forward_hooks.html"
    assert home.target("scripts/colab_pins.txt") == f"{build_site.GITHUB}/blob/main/scripts/colab_pins.txt"
    assert home.target("workshop/") == "workshop/README.html" and home.target("notebooks/zh/") == "zh/index.html"
    assert home.target("#the-notebooks") == "#the-notebooks"  # a section the home page keeps
    assert home.target("#a-class-on-one-jupyterhub") == (  # one it does not: the README on GitHub
        f"{build_site.GITHUB}/blob/main/README.md#a-class-on-one-jupyterhub")
    text = home.markdown('[x](TEACHING.md#hosting) and <a href="SETUP.md#2-start">y</a> [![b](https://b/x.svg)](SETUP.md)')
    assert text == '[x](TEACHING.html#hosting) and <a href="SETUP.html#2-start">y</a> [![b](https://b/x.svg)](SETUP.html)'


def test_home_page_is_the_readme_learner_part() -> None:
    text, anchors = build_site.home_markdown((REPO / "README.md").read_text(encoding="utf-8"),
                                             build_site.HOME_SECTIONS["en"])
    assert text.startswith("# hookviz") and "## Start learning" in text and "## The notebooks" in text
    assert "## How the tests run" not in text and "## Speed and memory" not in text
    assert {"start-learning", "the-notebooks", "teaching-a-class"} <= anchors
    assert build_site.github_slug("Check that every notebook still tells the truth: `pytest --nbval`") == (
        "check-that-every-notebook-still-tells-the-truth-pytest---nbval")


# ---------------------------------------------------------------------------------------------- notebooks
def test_live_widgets_become_their_stored_pictures_with_a_note() -> None:
    page = _page("en", "notebooks/06_hookviz_explorer")
    staged = build_site.stage_notebook(page, REPO, _rewriter("en", page.docname))
    original = json.loads((REPO / page.source).read_text(encoding="utf-8"))
    assert "widgets" in original["metadata"] and "widgets" not in staged["metadata"]
    outputs = [o for c in staged["cells"] for o in c.get("outputs", [])]
    assert not [o for o in outputs if build_site.WIDGET_VIEW in o.get("data", {})]
    notes = [i for i, o in enumerate(outputs) if "hv-live-note" in "".join(o.get("data", {}).get("text/html", ""))]
    assert len(notes) == 3  # the explorer, the timeline and the monitor
    assert all("image/png" in outputs[i - 1]["data"] for i in notes)  # each right after its stored picture
    pictures = sum("image/png" in o.get("data", {}) for c in original["cells"] for o in c.get("outputs", []))
    assert sum("image/png" in o.get("data", {}) for o in outputs) == pictures


def test_a_widget_without_a_picture_gets_a_note_that_points_on() -> None:
    page = _page("zh", "notebooks/10_faq")
    staged = build_site.stage_notebook(page, REPO, _rewriter("zh", page.docname))
    notes = ["".join(o["data"]["text/html"]) for c in staged["cells"] for o in c.get("outputs", [])
             if "hv-live-note" in "".join(o.get("data", {}).get("text/html", ""))]
    assert notes == [f'<p class="hv-live-note">{build_site.STRINGS["zh"]["live_ask"]}</p>']
    atlas = build_site.stage_notebook(_page("en", "notebooks/16_hook_atlas"), REPO,
                                      _rewriter("en", "notebooks/16_hook_atlas"))
    text = json.dumps(atlas)
    assert 'href=\\"../atlas.html\\"' in text and ".ipynb#" not in re.sub(r"<code>.*?</code>", "", text.replace(
        "https://colab", ""))


def test_question_and_atlas_pages() -> None:
    import yaml

    entries = yaml.safe_load((REPO / "notebooks" / "questions.yml").read_text(encoding="utf-8"))
    for language in ("en", "zh"):
        questions = build_site.questions_markdown(language, REPO, _rewriter(language, "questions"))
        found = re.findall(r'class="hv-question" id="(q\d{3})"', questions)
        assert sorted(found) == sorted(e["id"] for e in entries) and len(entries) >= 150
        assert 'href="notebooks/10_faq.html#faq-copy"' in questions
        atlas = build_site.atlas_markdown(language, REPO, _rewriter(language, "atlas"))
        assert atlas.count("<tr>") > 600 and 'href="notebooks/01_tensor_hooks.html#' in atlas
        assert ".ipynb" not in re.sub(r"\]\([^)]*\)", "", atlas)


def test_the_search_index_is_hookviz_asks() -> None:
    """ask-index.json holds ask's documents and BM25 numbers (the browser test proves that the page ranks them as
    ask does); every link is a page of the site, relative to the language's search page."""
    from hookviz import search

    data = build_site.ask_index("zh", REPO)
    index = search.build_index(REPO)["zh"]
    assert len(data["documents"]) == len(index.documents) and data["avgdl"] == index.bm25.avgdl
    assert {link for link, _ in data["links"]} == {d.link for d in index.documents}
    assert all(url.startswith("notebooks/") and url.endswith(tuple("abcdefghijklmnopqrstuvwxyz0123456789l"))
               for _, url in data["links"])
    words = len(data["vocabulary"])
    first = index.bm25.doc_freqs[0]
    number = {w: i for i, w in enumerate(data["vocabulary"])}
    assert build_site.decode_counts(data["documents"][0][6]) == {number[w]: c for w, c in first.items()}
    assert all(0 <= n < words for doc in data["documents"] for n in build_site.decode_counts(doc[6]))
    assert build_site.encode_counts({3: 1, 10: 2}) == "6,f,2" and build_site.decode_counts("6,f,2") == {3: 1, 10: 2}
    assert build_site.decode_counts(build_site.encode_counts({0: 5, 70000: 1})) == {0: 5, 70000: 1}
    # what ask reads a question with and ranks by, through its public table (JSON values only: the page reads them)
    assert data["tokenizer"] == json.loads(json.dumps(search.ranking_tables(), ensure_ascii=False))
    assert data["tokenizer"]["terms_zh"][0] == list(next(iter(search._TERMS_ZH.items())))
    assert data["average_idf"] == index.bm25.average_idf


# ---------------------------------------------------------------------------------------------- the checker
def _tiny_site(root: Path) -> Path:
    (root / "notebooks").mkdir(parents=True)
    (root / "_static").mkdir()
    (root / "_static" / "a.css").write_text("body{}")
    (root / "pic.png").write_bytes(b"\x89PNG" + b"0" * 100)
    (root / "index.html").write_text(
        '<html><head><link rel="stylesheet" href="_static/a.css"></head><body id="top">'
        '<a href="notebooks/01.html#sec">ok</a> <a href="notebooks/01.html#nope">missing anchor</a>'
        '<a href="notebooks/02.html">missing page</a> <a href="https://example.org/x">external</a>'
        '<a href="#top">self</a> <img src="pic.png"> <img src="gone.png"> <a href="notebooks/">folder</a>'
        "</body></html>"
    )
    (root / "notebooks" / "01.html").write_text(
        '<html><body><a id="sec"></a><h2 id="h">x</h2><a href="../index.html#top">up</a></body></html>')
    (root / "notebooks" / "index.html").write_text("<html><body></body></html>")
    return root


def test_the_checker_finds_broken_links_missing_anchors_and_images(tmp_path: Path) -> None:
    site = _tiny_site(tmp_path / "site")
    check = check_site.SiteCheck(site)
    assert sorted(check.broken()) == sorted([
        "index.html: missing anchor 'notebooks/01.html#nope': notebooks/01.html has no id 'nope'",
        "index.html: broken link 'notebooks/02.html' (no notebooks/02.html)",
        "index.html: broken link 'gone.png' (no gone.png)",
    ])
    assert check.links_checked() == 9
    assert check.weight("index.html") == (site / "index.html").stat().st_size + 104
    assert check.weight("index.html", assets=True) == check.weight("index.html") + 6
    assert check.problem("index.html", "notebooks/01.html#h") is None
    assert check_site.resolve("zh/a.html", "../b.html#x") == ("b.html", "x")
    assert check_site.resolve("a.html", "mailto:x@y") is None
    figures = check_site.figures(site)
    assert (figures["pages_en"], figures["pages_zh"], figures["heaviest_page"]) == (3, 0, "index.html")


def test_the_checker_fails_on_a_broken_site(tmp_path: Path) -> None:
    site = _tiny_site(tmp_path / "site")
    run = subprocess.run([sys.executable, str(REPO / "scripts" / "check_site.py"), str(site), "--no-course-links"],
                         capture_output=True, text=True)
    assert run.returncode == 1 and "3 problems" in run.stdout
    for name in ("notebooks/02.html", "gone.png"):
        (site / name).write_text("<html><body></body></html>")
    (site / "notebooks" / "01.html").write_text('<html><body><a id="sec"></a><a name="nope"></a></body></html>')
    run = subprocess.run([sys.executable, str(REPO / "scripts" / "check_site.py"), str(site), "--no-course-links"],
                         capture_output=True, text=True)
    assert run.returncode == 0 and "0 problems" in run.stdout, run.stdout


# ---------------------------------------------------------------------------------------------- wiring
def test_make_site_uses_its_own_pinned_venv_and_checks_what_it_built() -> None:
    requirements = (REPO / "site" / "requirements.txt").read_text(encoding="utf-8")
    pins = [line for line in requirements.splitlines() if line and not line.startswith("#")]
    assert pins and all(re.fullmatch(r"[A-Za-z0-9_.-]+==[\w.]+", line) for line in pins), pins
    assert {"myst-nb", "sphinx-book-theme", "pagefind", "pagefind_bin_extended", "Sphinx"} <= {
        line.split("==")[0] for line in pins}
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert "SITE_VENV := $(VENV)/site" in makefile and "-r site/requirements.txt" in makefile
    assert re.search(r"^test:.* site test-browser$", makefile, re.MULTILINE)
    assert "$(PY) scripts/check_site.py" in makefile
    assert "_site/" in (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
    workflow = (REPO / ".github" / "workflows" / "pages.yml").read_text(encoding="utf-8")
    for step in ("make site", "actions/upload-pages-artifact", "path: _site", "actions/deploy-pages"):
        assert step in workflow
