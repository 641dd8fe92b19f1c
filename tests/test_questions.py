"""The index of real learner questions, notebooks/questions.yml, is well formed.

Each entry cites at least one https thread, has a unique id and a distinct question, uses a topic
declared in the file's header comment, and, where it claims a proof (`proven_by`), points at an
explicit `<a id="...">` anchor of an existing notebook whose first code cell from the anchor on has a
stored output. An entry with a proof must also have an answer, and the prose of that section must say
it: at least half of the answer's key words appear in the section's markdown. Every entry must be
proven (no question of the index is left without its cell). No kernel is started.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import nbformat
import pytest
import yaml
from notebook_tools import REPO
from test_recaps import ANCHOR, anchors

QUESTIONS = REPO / "notebooks" / "questions.yml"
MIN_ENTRIES = 150
TOPIC_LINE = re.compile(r"^#\s{2,}([a-z][a-z0-9-]*)\s{2,}\S")
ID = re.compile(r"^q\d{3}$")
# The share of an answer's key words that the prose of its section must contain.
KEY_WORD_SHARE = 0.5
# Short words that carry no content; a key word is any other word of five letters or more.
STOP_WORDS = frozenset(
    """about above after again against also although always among another anything around because been
    before being below between both cannot could does doing done down during each either every first from
    further given gives have having here however into itself just later like longer makes many might more
    most much must never nothing once only other otherwise over same should since some still such than that
    their them then there these they this those through thus under until upon very what when where whether
    which while whose will with within without would your yours yourself instead rather really exactly""".split()
)
TOKEN = re.compile(r"[a-z0-9_]+")


def declared_topics(text: str) -> set[str]:
    """The topic names listed under the '# Topics:' line of the header comment."""
    topics: set[str] = set()
    in_topics = False
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        if line.strip() == "# Topics:":
            in_topics = True
        elif in_topics:
            match = TOPIC_LINE.match(line)
            if match:
                topics.add(match.group(1))
            elif line.strip() != "#":
                in_topics = False
    return topics


def first_code_cell_from(path: Path, anchor: str):
    """The first code cell at or after the markdown cell that defines `anchor` (None if there is none)."""
    cells = nbformat.read(path, as_version=4).cells
    for index, cell in enumerate(cells):
        if cell.cell_type == "markdown" and anchor in ANCHOR.findall(cell.source):
            return next((c for c in cells[index + 1 :] if c.cell_type == "code"), None)
    return None


@cache
def notebook_anchors(path: Path) -> frozenset[str]:
    return frozenset(anchors(path))


def stem(word: str) -> str:
    """A word's first five letters (identifiers with an underscore stay whole): `hooks` and `hooked` match."""
    return word if "_" in word else word[:5]


def key_words(text: str) -> set[str]:
    """The stems of the words of five letters or more in `text` that are not stop words."""
    return {stem(w) for w in TOKEN.findall(text.lower()) if len(w) >= 5 and w not in STOP_WORDS}


def section_prose(path: Path, anchor: str) -> str:
    """The markdown of the section that `anchor` opens: its cell and the markdown cells after it, up to the
    next markdown cell that defines an anchor of its own."""
    cells = nbformat.read(path, as_version=4).cells
    for index, cell in enumerate(cells):
        if cell.cell_type == "markdown" and anchor in ANCHOR.findall(cell.source):
            prose = [cell.source]
            for later in cells[index + 1 :]:
                if later.cell_type == "markdown":
                    if ANCHOR.findall(later.source):
                        break
                    prose.append(later.source)
            return "\n".join(prose)
    return ""


def missing_key_words(answer: str, prose: str) -> set[str]:
    """The answer's key words the prose lacks, when it lacks more than `KEY_WORD_SHARE` of them (else empty)."""
    wanted = key_words(answer)
    said = {stem(w) for w in TOKEN.findall(prose.lower())}
    missing = wanted - said
    return missing if wanted and len(missing) > (1 - KEY_WORD_SHARE) * len(wanted) else set()


def normalized(question: str) -> str:
    return " ".join(question.lower().split())


def proof_problems(entry: dict, root: Path) -> list[str]:
    """Why an entry's `proven_by` does not hold (empty when it holds or is null)."""
    target = entry.get("proven_by")
    if target is None:
        # no statement about PyTorch without the cell that proves it
        return ["has an answer but no proven_by"] if str(entry.get("answer") or "").strip() else []
    problems = []
    if not str(entry.get("answer") or "").strip():
        problems.append("has proven_by but no answer")
    notebook, _, anchor = str(target).partition("#")
    path = root / notebook
    if not notebook.startswith("notebooks/") or not notebook.endswith(".ipynb") or not anchor:
        problems.append(f"proven_by {target!r} is not notebooks/NN_name.ipynb#anchor")
    elif not path.is_file():
        problems.append(f"proven_by names a missing notebook {notebook}")
    elif anchor not in notebook_anchors(path):
        problems.append(f"proven_by anchor #{anchor} is not defined in {notebook}")
    else:
        cell = first_code_cell_from(path, anchor)
        if cell is None or not cell.get("outputs"):
            problems.append(f"{target}: the first code cell from the anchor has no stored output")
        missing = missing_key_words(str(entry.get("answer") or ""), section_prose(path, anchor))
        if missing:
            problems.append(f"{target}: the section's prose does not say the answer (missing {sorted(missing)})")
    return problems


@pytest.fixture(scope="module")
def text() -> str:
    return QUESTIONS.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def entries(text: str) -> list[dict]:
    data = yaml.safe_load(text)
    assert isinstance(data, list), "questions.yml must be a YAML list of entries"
    return data


def test_enough_entries(entries):
    assert len(entries) >= MIN_ENTRIES, f"{len(entries)} entries, want at least {MIN_ENTRIES}"


def test_entries_have_the_fields(entries):
    fields = {"id", "question", "question_zh", "sources", "topic", "answer", "proven_by"}
    bad = [e.get("id", e) for e in entries if not isinstance(e, dict) or set(e) != fields]
    assert not bad, f"entries without exactly the fields {sorted(fields)}: {bad[:5]}"
    bad = [e["id"] for e in entries if not isinstance(e["answer"], str) or not str(e["question"]).strip()]
    assert not bad, f"entries with an empty question or a non-string answer: {bad[:5]}"


def test_ids_unique_and_well_formed(entries):
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids)), "duplicate ids"
    assert all(ID.match(str(i)) for i in ids), [i for i in ids if not ID.match(str(i))][:5]


def test_questions_distinct(entries):
    seen: dict[str, str] = {}
    duplicates = []
    for entry in entries:
        key = normalized(entry["question"])
        if key in seen:
            duplicates.append((seen[key], entry["id"]))
        seen[key] = entry["id"]
    assert not duplicates, f"same question twice: {duplicates}"


def test_every_entry_has_https_sources(entries):
    bad = [
        e["id"]
        for e in entries
        if not isinstance(e["sources"], list)
        or not e["sources"]
        or not all(isinstance(u, str) and u.startswith("https://") and " " not in u for u in e["sources"])
    ]
    assert not bad, f"entries without https sources: {bad}"


def test_topics_are_declared(text, entries):
    topics = declared_topics(text)
    assert len(topics) >= 5, f"the header declares too few topics: {sorted(topics)}"
    bad = [(e["id"], e["topic"]) for e in entries if e["topic"] not in topics]
    assert not bad, f"topics not declared in the header: {bad}"


def test_proven_by_resolves_to_a_cell_with_output(entries):
    problems = [f"{e['id']}: {p}" for e in entries for p in proof_problems(e, REPO)]
    assert not problems, "\n".join(problems)


def test_every_question_is_answered(entries):
    unanswered = [e["id"] for e in entries if e.get("proven_by") is None]
    assert not unanswered, f"{len(unanswered)} questions have no proving cell yet: {unanswered}"


def test_the_checks_bite(tmp_path):
    """A missing anchor, a cell without output, a proof without an answer and an undeclared topic are caught."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell('<a id="proof"></a>\n## Shown: yes, hooks fire'),
        nbformat.v4.new_code_cell("print(1)", outputs=[nbformat.v4.new_output("stream", text="1\n")]),
        nbformat.v4.new_markdown_cell('<a id="silent"></a>\n## Not shown'),
        nbformat.v4.new_code_cell("x = 1"),
    ]
    (tmp_path / "notebooks").mkdir()
    nbformat.write(nb, tmp_path / "notebooks" / "99_probe.ipynb")

    def entry(proven_by, answer="yes, hooks fire"):
        return {"id": "q001", "answer": answer, "proven_by": proven_by}

    assert proof_problems(entry("notebooks/99_probe.ipynb#proof"), tmp_path) == []
    assert proof_problems(entry(None, answer=""), tmp_path) == []
    assert proof_problems(entry(None, answer="an unproven statement"), tmp_path) == ["has an answer but no proven_by"]
    assert proof_problems(entry("notebooks/99_probe.ipynb#nowhere"), tmp_path)
    assert proof_problems(entry("notebooks/99_probe.ipynb#silent"), tmp_path)
    assert proof_problems(entry("notebooks/98_missing.ipynb#proof"), tmp_path)
    assert proof_problems(entry("notebooks/99_probe.ipynb#proof", answer=""), tmp_path)
    # the prose must say the answer: "hooks fire" is there, "gradients vanish" is not
    assert proof_problems(entry("notebooks/99_probe.ipynb#proof", answer="the hooks fire"), tmp_path) == []
    assert proof_problems(entry("notebooks/99_probe.ipynb#proof", answer="gradients vanish quietly"), tmp_path)
    assert declared_topics("# Topics:\n#   alpha   one\n#   beta    two\n\n- id: q001\n") == {"alpha", "beta"}


def project_of(url: str) -> str:
    """The GitHub project (owner/name) a thread belongs to, or the site for any other page."""
    match = re.match(r"https://github\.com/([^/]+/[^/]+)/", url)
    return match.group(1) if match else url.split("/")[2]


def test_the_readme_figures_are_the_index_s(entries):
    """README.md's paragraph about the index states its counts: questions, threads, projects."""
    threads = {url for e in entries for url in e["sources"]}
    projects = {project_of(url) for url in threads}
    on_pytorch = sum(project_of(url) == "pytorch/pytorch" for url in threads)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    said = re.search(r"holds (\d+) real questions about\s+hooks from (\d+) public threads \((\d+) of them on "
                     r"pytorch/pytorch, the rest across (\d+) other projects\)", readme)
    assert said, "README.md lost its paragraph about notebooks/questions.yml"
    assert tuple(map(int, said.groups())) == (len(entries), len(threads), on_pytorch, len(projects) - 1)


def test_every_question_has_its_chinese_title(entries):
    """``question_zh``: the question in Chinese, as a learner would type it; hookviz.ask's Chinese index searches it."""
    cjk = re.compile("[\u4e00-\u9fff]")
    bad = [e["id"] for e in entries if not isinstance(e.get("question_zh"), str) or not cjk.search(e["question_zh"])]
    assert not bad, f"entries without a Chinese question: {bad}"
    seen: dict[str, str] = {}
    duplicates = []
    for entry in entries:
        first = seen.setdefault(normalized(entry["question_zh"]), entry["id"])
        if first != entry["id"]:
            duplicates.append((first, entry["id"]))
    assert not duplicates, f"same Chinese question twice: {duplicates}"
