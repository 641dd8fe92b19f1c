"""The course on the web, read in headless Chromium as a learner reads it (``_site/``, built by ``make site``).

One reading of the site: the home page and its navigation in learning order, an English notebook page with its
widgets' static pictures, its launch link (the Binder URL of the student copy opens), the language switch to the
Chinese page (its Chinese characters drawn with a font that has them, not as boxes), a question of the question
index followed to the anchor of its answer, and a question asked in the search box, whose answer is clicked.
No page may raise a JavaScript error or log one. The site is served from ``_site/`` on a loopback port, and every
request to another host (the README's badges, the launch links) is answered here with a blank picture: the test
never leaves the machine.

The search itself: the site ranks the course's sections in the browser from ``ask-index.json``; for the reworded
questions of ``tests/test_ask.py`` (English and Chinese) its top three must be ``hookviz.ask``'s, and at least 27
of the 30 must find their section, as ``test_ask.py`` requires of ``hookviz.ask``.
"""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
SITE = REPO / "_site"
sys.path.insert(0, str(REPO / "scripts"))
import build_site  # noqa: E402

BLANK = b'<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>'
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


def _questions(name: str) -> list[tuple[str, str, str]]:
    source = (REPO / "tests" / "test_ask.py").read_text(encoding="utf-8")
    return ast.literal_eval(re.search(rf"^{name} = (\[.*?^\])", source, re.MULTILINE | re.DOTALL).group(1))


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``_site/`` on a loopback port, under ``/hookviz/`` as GitHub Pages serves it (a link that starts at the
    server's root breaks there); its URL."""
    if not (SITE / "index.html").is_file():
        pytest.fail("no _site/: build it first with `make site` (`make test-browser` does)")
    served = tmp_path_factory.mktemp("pages")
    (served / "hookviz").symlink_to(SITE, target_is_directory=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(served)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/hookviz/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def reader(page: Any, site: str) -> tuple[Any, list[str]]:
    """The browser page, kept on this machine, and the list of JavaScript errors it saw."""
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
    page.on("console", lambda m: errors.append(f"console.error: {m.text} at {m.location.get('url')}")
            if m.type == "error" else None)

    def route(request_route: Any) -> None:
        if request_route.request.url.startswith(site):
            request_route.continue_()
        else:
            request_route.fulfill(status=200, content_type="image/svg+xml", body=BLANK)

    page.context.route("**/*", route)
    page.set_default_timeout(30_000)
    return page, errors


def _zh_families() -> set[str]:
    """The font families this machine has with Chinese glyphs (fontconfig's own list)."""
    try:
        out = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True).stdout
    except FileNotFoundError:
        return set()
    return {name.strip() for line in out.splitlines() for name in line.split(",") if name.strip()}


def _fonts_drawing(page: Any, selector: str) -> list[dict]:
    """The fonts Chromium drew the text of ``selector`` with (DevTools: CSS.getPlatformFontsForNode)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument")["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    return cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]


def _own_text(page: Any, selector: str) -> str:
    return page.eval_on_selector(
        selector, "e => [...e.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join('')")


def _images_drawn(page: Any) -> tuple[int, list[str]]:
    """How many of the page's images are from the site, and which of them did not load."""
    return page.evaluate("""() => {
        const own = [...document.images].filter(i => i.src.startsWith(location.origin));
        return [own.length, own.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)];
    }""")


def test_a_learner_reads_the_course_on_the_site(reader: tuple[Any, list[str]], site: str) -> None:
    page, errors = reader
    # the home page: the README's learner part, the notebooks in learning order in the navigation
    page.goto(site)
    assert page.locator("h1").first.inner_text().startswith("hookviz")
    nav = page.locator("nav.bd-docs-nav a.reference").all_inner_texts()
    numbered = [t for t in nav if re.match(r"^\d\d ·", t)]
    expected = sorted(p.name[:2] for p in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert [t[:2] for t in numbered] == expected, nav

    # an English notebook page, from the navigation: its widgets' stored pictures, each with its note
    page.locator("nav.bd-docs-nav a.reference", has_text="06 ·").first.click()
    page.wait_for_url("**/notebooks/06_hookviz_explorer.html")
    assert page.locator(".hv-live-note").count() == 3
    own, broken = _images_drawn(page)
    assert own >= 3 and not broken, broken
    note = page.locator(".hv-live-note").first
    assert note.evaluate("e => e.closest('.cell_output').querySelector('img') !== null")

    # the launch links: Binder opens the student copy, Colab the committed notebook
    binder = page.locator(".hv-bar a.hv-binder")
    expected_binder = build_site.BINDER.format(path="student/06_hookviz_explorer.ipynb")
    assert binder.get_attribute("href") == expected_binder
    assert page.locator(".hv-bar a.hv-colab").get_attribute("href") == build_site.COLAB.format(
        path="notebooks/06_hookviz_explorer.ipynb")
    with page.context.expect_page() as opened:
        binder.click()
    launched = opened.value
    launched.wait_for_load_state()
    assert launched.url == expected_binder
    launched.close()

    # the language switch: the same notebook in Chinese, drawn with a font that has the characters
    page.locator(".hv-bar a.hv-lang").click()
    page.wait_for_url("**/zh/notebooks/06_hookviz_explorer.html")
    assert page.evaluate("document.documentElement.lang") == "zh-CN"
    heading = page.locator("article h1").first.inner_text()
    assert HAN.search(heading), heading
    assert page.locator(".hv-live-note").first.inner_text().startswith("运行时是可交互的")
    own, broken = _images_drawn(page)
    assert own >= 3 and not broken, broken
    families = _zh_families()
    assert families, "no font with Chinese glyphs on this machine: apt-get install fonts-noto-cjk"
    page.evaluate("document.fonts.ready")
    han = len(HAN.findall(_own_text(page, "article h1")))
    fonts = _fonts_drawing(page, "article h1")
    drawn = sum(f["glyphCount"] for f in fonts if f["familyName"] in families)
    assert drawn >= han > 0, f"{han} Chinese characters, drawn by {fonts} (fonts with Chinese glyphs: {families})"
    page.locator(".hv-bar a.hv-lang").click()
    page.wait_for_url("**/notebooks/06_hookviz_explorer.html")
    assert "/zh/" not in page.url

    # the question index: a question's link opens the answering section, at its anchor
    page.goto(site + "questions.html#q042")
    link = page.locator("#q042 .hv-question-text a")
    target = link.get_attribute("href")
    assert target == "notebooks/12_transformer_hooks.html#need-weights-prehook"
    link.click()
    page.wait_for_url("**/notebooks/12_transformer_hooks.html#need-weights-prehook")
    top = page.evaluate("document.getElementById('need-weights-prehook').getBoundingClientRect().top")
    assert 0 <= top < 300, f"the anchor is not at the top of the window: {top}px"

    # the search, from the theme's search box (Ctrl+K): a learner's reworded question, its answer clicked
    qid, question, link = next(q for q in _questions("REWORDED") if not HAN.search(q[1]) and q[0] == "q063")
    page.goto(site)
    page.keyboard.press("Control+k")
    box = page.locator(".search-button__search-container input[name=q], .bd-search input[name=q]").locator(
        "visible=true").first
    box.fill(question)
    box.press("Enter")
    page.wait_for_url("**/search.html?q=*")
    page.wait_for_selector("#hv-search[data-done]")
    answers = page.locator("#hv-answers li.hv-answer")
    top3 = [answers.nth(i).get_attribute("data-link") for i in range(min(3, answers.count()))]
    assert link in top3, (qid, top3)
    answers.nth(top3.index(link)).locator("a").click()
    page.wait_for_url("**/" + build_site.site_link(link))

    # key words: Pagefind's full-text results list the pages that have them all, below the answers
    page.goto(site + "search.html?q=register_module_forward_hook")
    page.wait_for_selector("#hv-search[data-done]")
    pages = page.locator("#hv-pages li.hv-page a")
    assert pages.count() > 0 and page.locator("#hv-pages mark").count() > 0
    href = pages.first.get_attribute("href")
    with page.expect_navigation() as navigation:
        pages.first.click()
    assert navigation.value.status == 200 and navigation.value.url.startswith(site + "notebooks/"), href
    page.goto(site + "zh/search.html?q=深拷贝")
    page.wait_for_selector("#hv-search[data-done]")
    pages = page.locator("#hv-pages li.hv-page a")
    assert pages.count() > 0
    with page.expect_navigation() as navigation:
        pages.first.click()
    assert navigation.value.status == 200 and navigation.value.url.startswith(site + "zh/notebooks/")

    # and a Chinese question on the Chinese search page
    page.goto(site + "zh/search.html?q=" + "非叶子张量的 .grad 是 None，怎样才能拿到它的梯度？")
    page.wait_for_selector("#hv-search[data-done]")
    first = page.locator("#hv-answers li.hv-answer a").first
    first.click()
    page.wait_for_url("**/zh/notebooks/**")
    assert page.evaluate("document.documentElement.lang") == "zh-CN"
    assert not errors, "\n".join(errors)


def test_the_site_search_ranks_as_hookviz_ask_and_finds_the_reworded_questions(
    reader: tuple[Any, list[str]], site: str
) -> None:
    import hookviz

    page, errors = reader
    page.goto(site + "search.html")
    page.wait_for_function("window.hookvizAsk !== undefined")
    hits = {"en": 0, "zh": 0}
    counts = {"en": 0, "zh": 0}
    differ = []
    for name in ("REWORDED", "HELD_OUT"):
        for qid, question, expected in _questions(name):
            language = "zh" if HAN.search(question) else "en"
            index = "zh/ask-index.json" if language == "zh" else "ask-index.json"
            found = page.evaluate(
                "async ([q, url]) => (await window.hookvizAsk.load(url)).search(q, 3).map(a => a.link)",
                [question, index])
            if found != hookviz.ask(question).links:
                differ.append(f"{qid}: site {found}, hookviz.ask {hookviz.ask(question).links}")
            if name == "REWORDED":
                counts[language] += 1
                hits[language] += expected in found
    print(f"\nsite search, reworded questions found in the top 3: {hits['en']}/{counts['en']} English, "
          f"{hits['zh']}/{counts['zh']} Chinese, {hits['en'] + hits['zh']}/{counts['en'] + counts['zh']} in all")
    assert not differ, "\n".join(differ)
    assert hits["en"] + hits["zh"] >= 27 and counts["zh"] >= 5
    assert not errors, "\n".join(errors)
