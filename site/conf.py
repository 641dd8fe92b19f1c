"""Sphinx configuration of the course's web site, one build per language (``scripts/build_site.py`` runs it).

The build script stages each language's sources and writes a manifest (``HOOKVIZ_SITE_MANIFEST``): the language,
its strings, and for every page its twin in the other language, its launch links and its source on GitHub. Nothing
is executed (``nb_execution_mode = "off"``): the pages show the notebooks' stored outputs. Sphinx's own search is
off: the site's search page (``_templates/hv-search.html``) ranks the course's sections as ``hookviz.ask`` does and
adds Pagefind's full-text results.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path

MANIFEST = json.loads(Path(os.environ["HOOKVIZ_SITE_MANIFEST"]).read_text(encoding="utf-8"))
LANG = MANIFEST["language"]
STRINGS = MANIFEST["strings"]

project = "hookviz"
author = "the hookviz authors"
copyright = "the hookviz authors, MIT License"  # noqa: A001 - Sphinx's name
language = "zh_CN" if LANG == "zh" else "en"
html_title = MANIFEST["title"]
html_baseurl = MANIFEST["base_url"]

extensions = ["myst_nb"]
# The stored outputs, as pytest --nbval checks them: never executed here.
nb_execution_mode = "off"
# No widget front end is loaded (the live widgets are shown as their static pictures), so no script from a CDN.
nb_ipywidgets_js: dict = {}
nb_merge_streams = True
myst_enable_extensions = ["dollarmath"]
# Links were rewritten for the site when the sources were staged (scripts/build_site.py): keep them as they are.
myst_all_links_external = True
# The headings get GitHub's anchors, so that README links such as #the-notebooks keep working.
myst_heading_anchors = 6
myst_heading_slug_func = "github"
suppress_warnings = ["myst.header", "misc.highlighting_failure", "mystnb.unknown_mime_type"]

templates_path = ["_templates"]
html_static_path = ["_static"]
html_css_files = ["hookviz-site.css"]
html_js_files = ["hookviz-site.js"]
html_copy_source = False
html_use_index = False
html_favicon = "_static/hookviz-icon.svg"
html_show_sourcelink = False
html_last_updated_fmt = None
html_additional_pages = {"search": "hv-search.html"}
# The theme reads its colour mode from the context (light or dark as the reader's system prefers).
html_context = {"default_mode": "auto"}
html_theme = "sphinx_book_theme"
html_theme_options = {
    "repository_url": MANIFEST["github"],
    "repository_branch": "main",
    "use_repository_button": True,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "home_page_in_toc": True,
    "show_navbar_depth": 1,
    "article_header_end": ["hv-bar.html", "article-header-buttons.html"],
    "search_bar_text": STRINGS["search_title"] + " …",
}


def _bar(pagename: str) -> str:
    """The language switch and, on a notebook's page, the links that open it live."""
    page = MANIFEST["pages"].get(pagename)
    if page is None:
        return ""
    s = STRINGS
    other = "zh-CN" if LANG == "en" else "en"
    links = [
        f'<a class="hv-lang" hreflang="{other}" lang="{other}" href="{html.escape(page["twin"])}" '
        f'title="{html.escape(s["other_title"])}">{html.escape(s["other"])}</a>'
    ]
    for key in ("binder", "colab"):
        if key in page:
            links.append(
                f'<a class="hv-launch hv-{key}" href="{html.escape(page[key])}" target="_blank" rel="noopener" '
                f'title="{html.escape(s[key + "_title"])}">{html.escape(s[key])}</a>'
            )
    return "".join(links)


def _page_context(app, pagename, templatename, context, doctree) -> None:  # noqa: ANN001 - Sphinx's signature
    context["hv_bar"] = _bar(pagename)
    context["hv_strings"] = STRINGS
    context["hv_language"] = LANG


def _no_sphinx_search(app) -> None:  # noqa: ANN001
    # Sphinx's own index would be loaded by every page of the theme: the site's search replaces it.
    app.builder.search = False


def setup(app) -> dict:  # noqa: ANN001
    app.connect("builder-inited", _no_sphinx_search)
    app.connect("html-page-context", _page_context)
    return {"parallel_read_safe": True}
