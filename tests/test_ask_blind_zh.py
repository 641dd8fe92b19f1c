"""Blind evaluation of ``hookviz.ask`` on colloquial Chinese questions (``tests/ask_blind_zh.yml``).

The question set was written without reading the search code: see the header of the YAML file. For each
answerable question the file lists every course section that answers it; a question counts as a hit when any of
the tool's top 3 links is in that list (the ``notebooks/zh/`` prefix of a Chinese link is ignored). For each
nonsense question the tool should say that nothing matches, i.e. return no result.

- ``test_blind_links_exist``: the file is well formed and every listed link names an English notebook and an
  anchor ``<a id="..."></a>`` present in one of its markdown cells.
- ``test_blind_zh_hits_at_3``: hits@3 on the answerable questions does not fall below today's measured figure
  (:data:`MIN_HITS_AT_3`, 62 of 72 = 86.1 %); the target of issue 45 is 90 % (:data:`TARGET_HITS_AT_3`), not met yet.
- ``test_blind_zh_nonsense_no_match``: every nonsense question gets no result.

For the developer, ``python tests/test_ask_blind_zh.py`` (or ``score()``) prints every question's result.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "ask_blind_zh.yml"
K = 3
#: The goal (90 % of the answerable questions with an answering section in the top 3): not reached yet.
TARGET_HITS_AT_3 = 0.90
#: What ``ask`` reaches today (62 of 72, measured 2026-12-07): a change that ranks worse fails here. Raise it with
#: the next improvement, never lower it; and never tune the search on this file's questions (tests/ask_zh_dev.yml is
#: the development set).
MIN_HITS_AT_3 = 62 / 72

LINK = re.compile(r"^notebooks/(\d\d_[a-z0-9_]+\.ipynb)#([A-Za-z0-9_-]+)$")
ANCHOR = re.compile(r'<a id="([^"]+)"></a>')
HAN = re.compile(r"[\u4e00-\u9fff]")


def load_entries() -> list[dict]:
    return yaml.safe_load(DATA.read_text(encoding="utf-8"))


@functools.cache
def notebook_anchors(name: str) -> frozenset[str]:
    """The anchors ``<a id="..."></a>`` in the markdown cells of the English notebook ``notebooks/<name>``."""
    notebook = json.loads((ROOT / "notebooks" / name).read_text(encoding="utf-8"))
    found: set[str] = set()
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            found.update(ANCHOR.findall("".join(cell["source"])))
    return frozenset(found)


def normalise(link: str) -> str:
    """A link of either edition as the English one: ``notebooks/zh/x.ipynb#a`` -> ``notebooks/x.ipynb#a``."""
    return link.replace("notebooks/zh/", "notebooks/", 1)


@dataclass
class Result:
    id: str
    question: str
    links: list[str]  # the tool's links, normalised, best first
    expected: list[str] | None  # None: a no-match question

    @property
    def hit(self) -> bool:
        if self.expected is None:
            return not self.links
        return any(link in self.expected for link in self.links[:K])


@functools.cache
def _run() -> tuple[Result, ...]:
    import hookviz
    from hookviz import i18n

    before = i18n.get_language()
    hookviz.set_language("zh")
    try:
        results = []
        for entry in load_entries():
            answers = hookviz.ask(entry["question"], k=K)
            links = [normalise(answer.link) for answer in answers]
            results.append(Result(entry["id"], entry["question"], links, entry.get("answers")))
        return tuple(results)
    finally:
        hookviz.set_language(before)


def figures(results: tuple[Result, ...]) -> tuple[float, int, int, int, int]:
    """(hits@3, hits, answerable, nonsense with no result, nonsense)."""
    answerable = [r for r in results if r.expected is not None]
    nonsense = [r for r in results if r.expected is None]
    hits = sum(r.hit for r in answerable)
    quiet = sum(r.hit for r in nonsense)
    return hits / len(answerable), hits, len(answerable), quiet, len(nonsense)


def summary(results: tuple[Result, ...]) -> str:
    rate, hits, answerable, quiet, nonsense = figures(results)
    return (
        f"hits@{K}: {hits}/{answerable} = {rate:.1%} (need {MIN_HITS_AT_3:.0%}); "
        f"nonsense with no result: {quiet}/{nonsense}"
    )


def score() -> tuple[Result, ...]:
    """Run every question and print its result, then the figures."""
    results = _run()
    for r in results:
        mark = "ok  " if r.hit else "MISS"
        kind = "no-match" if r.expected is None else "answer"
        print(f"{mark} {r.id} [{kind}] {r.question}")
        for link in r.links:
            print(f"       {'*' if r.expected and link in r.expected else ' '} {link}")
        if not r.links:
            print("         (no result)")
        if r.expected is not None and not r.hit:
            print("       expected one of: " + ", ".join(r.expected))
    print(summary(results))
    return results


def test_blind_links_exist() -> None:
    entries = load_entries()
    ids = [entry["id"] for entry in entries]
    assert len(ids) == len(set(ids)), "duplicate ids"
    answerable = [entry for entry in entries if "answers" in entry]
    nonsense = [entry for entry in entries if entry.get("expect") == "no-match"]
    assert len(answerable) + len(nonsense) == len(entries), "each entry has answers or expect: no-match"
    assert len(entries) >= 40 and len(answerable) >= 30 and len(nonsense) >= 8
    problems = []
    for entry in entries:
        if not HAN.search(entry["question"]):
            problems.append(f"{entry['id']}: no Chinese character in the question")
        for link in entry.get("answers", []):
            match = LINK.match(link)
            if not match:
                problems.append(f"{entry['id']}: malformed link {link}")
                continue
            name, anchor = match.groups()
            if not (ROOT / "notebooks" / name).is_file():
                problems.append(f"{entry['id']}: no notebook {name}")
            elif anchor not in notebook_anchors(name):
                problems.append(f"{entry['id']}: no anchor #{anchor} in {name}")
        if "answers" in entry and len(entry["answers"]) != len(set(entry["answers"])):
            problems.append(f"{entry['id']}: a link listed twice")
    assert not problems, "\n".join(problems)


def test_blind_zh_hits_at_3() -> None:
    results = _run()
    print(summary(results))
    rate = figures(results)[0]
    misses = [f"{r.id} {r.question} -> {r.links}" for r in results if r.expected is not None and not r.hit]
    assert rate >= MIN_HITS_AT_3, summary(results) + "\nmissed:\n  " + "\n  ".join(misses)


def test_blind_zh_nonsense_no_match() -> None:
    results = _run()
    print(summary(results))
    answered = [f"{r.id} {r.question} -> {r.links}" for r in results if r.expected is None and not r.hit]
    assert not answered, summary(results) + "\nnonsense questions that got results:\n  " + "\n  ".join(answered)


if __name__ == "__main__":
    score()
