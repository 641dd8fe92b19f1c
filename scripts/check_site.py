"""Check the built site (``_site/``): no broken link, no missing anchor, every course link on it, pages light.

``make site`` runs it after the build and fails when it finds anything:

- every internal ``href`` and ``src`` of every page (links, images, scripts, stylesheets) names a file of the
  site, and every ``#fragment`` of a link to a page is an ``id`` (or ``name``) on that page;
- every link that the course itself hands out, ``notebooks/NN_name.ipynb#anchor`` (the question index's
  ``proven_by``, ``hookviz.ask``'s sections and atlas entries, the hook doctor's links, the clinic's), and every
  ``<a id>`` anchor of every notebook of both editions, maps to a page of the site and an id on it
  (``scripts/build_site.py``'s ``site_link``);
- every page weighs less than :data:`PAGE_LIMIT` with its images (the search page with its language's search index),
  and the whole site less than :data:`SITE_LIMIT`.

It prints the figures the README quotes (pages per language, the heaviest page, the site's size).

    python scripts/check_site.py            # _site/
    python scripts/check_site.py path/to/site --no-course-links
"""

from __future__ import annotations

import argparse
import json
import posixpath
import re
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

REPO = Path(__file__).resolve().parents[1]
SITE = REPO / "_site"
PAGE_LIMIT = 2 * 1024 * 1024
SITE_LIMIT = 100 * 1024 * 1024
EXTERNAL = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//)")
#: Elements and the attributes that name another file.
LINKING = {"a": "href", "link": "href", "img": "src", "script": "src", "source": "src", "iframe": "src"}


@dataclass
class Parsed:
    """What one HTML page holds: its ids, and the files it names (tag, target)."""

    ids: set[str] = field(default_factory=set)
    links: list[tuple[str, str]] = field(default_factory=list)


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parsed = Parsed()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for name in ("id", "name") if tag in ("a", "span", "div") else ("id",):
            if values.get(name):
                self.parsed.ids.add(values[name])
        attribute = LINKING.get(tag)
        if attribute and values.get(attribute):
            if tag == "link" and values.get("rel") in ("canonical", "alternate"):
                return
            self.parsed.links.append((tag, values[attribute]))

    handle_startendtag = handle_starttag


def parse(path: Path) -> Parsed:
    parser = _Parser()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return parser.parsed


def resolve(page: str, target: str) -> tuple[str, str] | None:
    """The site file (posix path from the site's root) and fragment that ``target`` names from ``page``; None for an
    external link, a data: URL or a link to the page itself without a fragment."""
    if not target or EXTERNAL.match(target) or target.startswith(("data:", "javascript:", "mailto:")):
        return None
    parts = urlsplit(target)
    path = unquote(parts.path)
    fragment = unquote(parts.fragment)
    if not path:
        return page, fragment
    full = posixpath.normpath(posixpath.join(posixpath.dirname(page), path))
    if path.endswith("/"):
        full = posixpath.join(full, "index.html")
    return full, fragment


class SiteCheck:
    """Parses every page of a site once; answers which links break and which anchors are missing."""

    def __init__(self, site: Path) -> None:
        self.site = site
        self.pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))
        self._parsed: dict[str, Parsed] = {}

    def parsed(self, page: str) -> Parsed:
        if page not in self._parsed:
            self._parsed[page] = parse(self.site / page)
        return self._parsed[page]

    def problem(self, page: str, target: str) -> str | None:
        """Why ``target`` (an href or src on ``page``) is broken, or None."""
        found = resolve(page, target)
        if found is None:
            return None
        path, fragment = found
        file = self.site / path
        if path.startswith("../") or not file.is_file():
            if file.is_dir() and (file / "index.html").is_file():
                return self._anchor(posixpath.join(path, "index.html"), fragment, target)
            return f"{page}: broken link {target!r} (no {path})"
        return self._anchor(path, fragment, target) if path.endswith(".html") else None

    def _anchor(self, path: str, fragment: str, target: str) -> str | None:
        if fragment and fragment not in self.parsed(path).ids:
            return f"missing anchor {target!r}: {path} has no id {fragment!r}"
        return None

    def broken(self) -> list[str]:
        """Every broken link and missing anchor of the site."""
        problems = []
        for page in self.pages:
            for _, target in self.parsed(page).links:
                problem = self.problem(page, target)
                if problem:
                    problems.append(problem if problem.startswith(page) else f"{page}: {problem}")
        return problems

    def links_checked(self) -> int:
        return sum(1 for page in self.pages for _, t in self.parsed(page).links if resolve(page, t) is not None)

    def weight(self, page: str, assets: bool = False) -> int:
        """The bytes of a page with its images (``assets``: and its stylesheets and scripts)."""
        total = (self.site / page).stat().st_size
        seen = set()
        for tag, target in self.parsed(page).links:
            if tag == "img" or (assets and tag in ("link", "script")):
                found = resolve(page, target)
                if found and found[0] not in seen and (self.site / found[0]).is_file():
                    seen.add(found[0])
                    total += (self.site / found[0]).stat().st_size
        return total


def course_links(repo: Path = REPO) -> dict[str, set[str]]:
    """The links the course hands out, by who hands them out: ``notebooks/NN_name.ipynb#anchor``."""
    sys.path.insert(0, str(repo))
    import yaml

    from hookviz import search

    named: dict[str, set[str]] = {}
    entries = yaml.safe_load((repo / "notebooks" / "questions.yml").read_text(encoding="utf-8"))
    named["question index"] = {e["proven_by"] for e in entries if e.get("proven_by")}
    named["hookviz.ask"] = {d.link for index in search.build_index(repo).values() for d in index.documents}
    report = sys.modules.get("hookviz.diagnose.report") or __import__("hookviz.diagnose.report", fromlist=["x"])
    from hookviz.diagnose.rules import RULES

    doctor = {v for k, v in vars(report).items() if k.isupper() and isinstance(v, str) and v.startswith("notebooks/")}
    doctor |= {rule.link for rule in RULES}
    named["hook doctor"] = {link for link in doctor if ".ipynb" in link}
    clinic = repo / "notebooks" / "11_mistakes_clinic.ipynb"
    text = "".join("".join(c["source"]) for c in json.loads(clinic.read_text(encoding="utf-8"))["cells"])
    named["clinic"] = {f"notebooks/{m}" if not m.startswith("notebooks/") else m
                       for m in re.findall(r"\]\(((?:notebooks/)?\d\d_[a-z0-9_]+\.ipynb#[^)\s]+)\)", text)}
    named["clinic"] |= {f"notebooks/11_mistakes_clinic.ipynb#{m}" for m in re.findall(r"\]\(#(mistake-\d+)\)", text)}
    anchors = set()
    for notebook in sorted((repo / "notebooks").glob("**/[0-9][0-9]_*.ipynb")):
        source = "".join("".join(c["source"]) for c in json.loads(notebook.read_text(encoding="utf-8"))["cells"]
                         if c["cell_type"] == "markdown")
        rel = notebook.relative_to(repo).as_posix()
        anchors |= {f"{rel}#{a}" for a in re.findall(r"""<a\s+(?:id|name)=["']([^"']+)["']""", source)}
    named["every notebook anchor"] = anchors
    return named


def missing_course_links(check: SiteCheck, repo: Path = REPO) -> list[str]:
    """The course links that do not reach a page and an id of the site."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import build_site

    all_pages = build_site.pages(repo)
    problems = []
    for who, links in course_links(repo).items():
        for link in sorted(links):
            try:
                target = build_site.site_link(link, all_pages)
            except KeyError:
                problems.append(f"{who}: {link} is on no page of the site")
                continue
            problem = check.problem("index.html", target)
            if problem:
                problems.append(f"{who}: {link} -> {problem}")
    return problems


def figures(site: Path = SITE) -> dict:
    """Pages per language, the heaviest page (with its images; and with its stylesheets and scripts too), and the
    size of the whole site."""
    check = SiteCheck(site)
    by_language = {"en": 0, "zh": 0}
    for page in check.pages:
        by_language["zh" if page.startswith("zh/") else "en"] += 1
    weights = {page: check.weight(page) for page in check.pages}
    heaviest = max(weights, key=weights.get)
    size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
    return {
        "pages_en": by_language["en"],
        "pages_zh": by_language["zh"],
        "heaviest_page": heaviest,
        "heaviest_page_bytes": weights[heaviest],
        "heaviest_page_with_assets_bytes": check.weight(heaviest, assets=True),
        "site_bytes": size,
        "files": sum(1 for p in site.rglob("*") if p.is_file()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", nargs="?", type=Path, default=SITE)
    parser.add_argument("--no-course-links", action="store_true", help="skip the check of the course's own links")
    args = parser.parse_args(argv)
    if not (args.site / "index.html").is_file():
        print(f"no site at {args.site}: build it with `make site`", file=sys.stderr)
        return 2
    check = SiteCheck(args.site)
    problems = check.broken()
    if not args.no_course_links:
        problems += missing_course_links(check)
    weights = {p: check.weight(p) for p in check.pages}
    for index in args.site.glob("**/ask-index.json"):  # the search page loads its language's index too
        search = index.parent.relative_to(args.site).as_posix().removeprefix(".") + "/search.html"
        weights[search.lstrip("/")] = weights.get(search.lstrip("/"), 0) + index.stat().st_size
    heavy = [(p, w) for p, w in weights.items() if w >= PAGE_LIMIT]
    problems += [f"{p}: {w / 2**20:.2f} MiB with its images or search index (limit {PAGE_LIMIT / 2**20:.0f} MiB)"
                 for p, w in heavy]
    numbers = figures(args.site)
    if numbers["site_bytes"] >= SITE_LIMIT:
        problems.append(f"the site is {numbers['site_bytes'] / 2**20:.1f} MiB (limit {SITE_LIMIT / 2**20:.0f} MiB)")
    for problem in problems:
        print(problem)
    print(
        f"{len(check.pages)} pages ({numbers['pages_en']} English, {numbers['pages_zh']} Chinese), "
        f"{check.links_checked()} internal links checked: {len(problems)} problems. Heaviest page "
        f"{numbers['heaviest_page']}: {numbers['heaviest_page_bytes'] / 2**20:.2f} MiB with its images "
        f"({numbers['heaviest_page_with_assets_bytes'] / 2**20:.2f} MiB with stylesheets and scripts); site "
        f"{numbers['site_bytes'] / 2**20:.1f} MiB in {numbers['files']} files."
    )
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
