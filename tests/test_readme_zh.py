"""README.zh.md is the Chinese twin of README.md, kept in step like the notebooks.

Checked mechanically, section by section: the same headings (through the mapping below: a new English
heading fails until it is mapped), the same code blocks (comments may be translated), every inline
command and every figure of the English section, the same links and badges (pointing to the Chinese
notebooks and student copies where a Chinese one exists), the same notebook list, and no line break
between two Chinese characters (Markdown renders it as a stray space).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ENGLISH = (REPO / "README.md").read_text(encoding="utf-8")
CHINESE = (REPO / "README.zh.md").read_text(encoding="utf-8")

#: Every heading of README.md (level and text) and its Chinese form in README.zh.md.
HEADINGS = {
    "# hookviz — learn every PyTorch hook, live": "# hookviz：边运行边学会 PyTorch 的每一种钩子",
    "## Start learning": "## 开始学习",
    "## Teaching a class": "## 教一个班",
    "## Set up and test": "## 安装与测试",
    "## Check that every notebook still tells the truth: `pytest --nbval`": (
        "## 检查每个笔记本说的是否仍然属实：`pytest --nbval`"
    ),
    "## The notebooks": "## 笔记本",
    "## What ships": "## 随附的内容",
    "## The `hookviz` package": "## `hookviz` 工具包",
    "## How the tests run": "## 测试如何运行",
    "## Speed and memory": "## 速度与内存",
    "## Binder": "## Binder",
    "## A class on one JupyterHub": "## 一个班级共用一台 JupyterHub",
}
#: Sections only the Chinese README has (at its end, after the twin of every English section).
ZH_ONLY = ["## 给中国大陆读者", "## 中文版是怎样生成的"]

HEADING = re.compile(r"^(#{1,6} .+)$", re.MULTILINE)
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"\]\(([^)\s]+)\)")
HAN = "\u3400-\u9fff"
CJK = HAN + "\u3000-\u303f\uff00-\uffef"
NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*")


def _headings(text: str) -> list[str]:
    return HEADING.findall(FENCE.sub("", text))


def _sections(text: str) -> dict[str, str]:
    """Heading → the text under it (up to the next heading of any level), code blocks included."""
    blank = FENCE.sub(lambda m: "\0" * len(m.group(0)), text)  # headings inside code blocks do not count
    starts = [(m.start(), m.group(1)) for m in HEADING.finditer(blank)]
    return {
        heading: text[start : (starts[i + 1][0] if i + 1 < len(starts) else len(text))]
        for i, (start, heading) in enumerate(starts)
    }


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: ``## A class on one JupyterHub`` -> ``a-class-on-one-jupyterhub``."""
    return re.sub(r"[^\w\- ]", "", heading.lstrip("#").strip().lower()).replace(" ", "-")


def zh_target(target: str) -> str:
    """Where the Chinese README should point for an English link: the zh notebook or student copy."""
    if target == "README.zh.md":
        return "README.md"
    if target.startswith("#"):  # a section of the README: the same section of the Chinese one
        for english, chinese in HEADINGS.items():
            if _slug(english) == target[1:]:
                return "#" + _slug(chinese)
        return target
    return re.sub(r"(?<![\w/])((?:\S*/)?(?:notebooks|student))/(?!zh/)(?=[\w.]+\.(?:ipynb|md)\b)", r"\1/zh/", target)


def _strip_comment(line: str) -> str:
    """A code line without its trailing ``# comment`` (comments are translated), spaces normalised."""
    return re.sub(r"\s+#.*$", "", line).strip() if not line.lstrip().startswith("#") else ""


def _code_blocks(section: str) -> list[list[str]]:
    return [[s for s in map(_strip_comment, block.splitlines()) if s] for block in FENCE.findall(section)]


def test_headings_are_the_mapped_english_headings_in_order() -> None:
    english = _headings(ENGLISH)
    unmapped = [h for h in english if h not in HEADINGS]
    assert not unmapped, f"README.md has headings README.zh.md does not map yet: {unmapped}"
    assert _headings(CHINESE) == [HEADINGS[h] for h in english] + ZH_ONLY


SECTIONS = [h for h in HEADINGS if h in _headings(ENGLISH)]


@pytest.mark.parametrize("heading", SECTIONS)
def test_each_section_has_the_same_code_blocks(heading: str) -> None:
    english = _sections(ENGLISH)[heading]
    chinese = _sections(CHINESE)[HEADINGS[heading]]
    assert _code_blocks(chinese) == _code_blocks(english)


@pytest.mark.parametrize("heading", SECTIONS)
def test_each_section_keeps_every_inline_command(heading: str) -> None:
    english = FENCE.sub("", _sections(ENGLISH)[heading])
    chinese = FENCE.sub("", _sections(CHINESE)[HEADINGS[heading]])
    zh_spans = {m.group(2) for m in CODE_SPAN.finditer(chinese)}
    missing = [
        span
        for span in dict.fromkeys(m.group(2) for m in CODE_SPAN.finditer(english))
        if span not in zh_spans and zh_target(span) not in zh_spans
    ]
    assert not missing, f"{heading}: inline code missing from README.zh.md: {missing}"


@pytest.mark.parametrize("heading", SECTIONS)
def test_each_section_keeps_every_figure(heading: str) -> None:
    """Every number of the English section (a version, a measured figure, a count) is in its twin."""

    def numbers(text: str) -> Counter:
        text = LINK.sub("]()", CODE_SPAN.sub("", FENCE.sub("", text)))
        return Counter(NUMBER.findall(text))

    missing = numbers(_sections(ENGLISH)[heading]) - numbers(_sections(CHINESE)[HEADINGS[heading]])
    assert not missing, f"{heading}: figures missing from README.zh.md: {sorted(missing)}"


def test_links_and_badges_point_to_the_chinese_editions() -> None:
    english = {zh_target(t) for t in LINK.findall(ENGLISH)}
    chinese = set(LINK.findall(CHINESE))
    missing = english - chinese
    assert not missing, f"links of README.md with no Chinese counterpart: {sorted(missing)}"
    assert "https://mybinder.org/v2/gh/hookviz/hookviz/HEAD?urlpath=lab/tree/student/zh/00_start_here.ipynb" in (
        chinese
    ), "the Binder badge opens the Chinese student copy"


def test_the_notebook_list_is_the_same() -> None:
    def rows(text: str, heading: str) -> list[tuple[str, str]]:
        table = [line for line in _sections(text)[heading].splitlines() if re.match(r"^\| (\d\d|—) \|", line)]
        return [(row.split("|")[1].strip(), LINK.search(row).group(1)) for row in table]

    english = rows(ENGLISH, "## The notebooks")
    chinese = rows(CHINESE, HEADINGS["## The notebooks"])
    assert chinese == [(number, zh_target(target)) for number, target in english]


def test_the_mainland_section_gives_a_mirror_and_the_torch_caveat() -> None:
    section = _sections(CHINESE)["## 给中国大陆读者"]
    assert "pip config set global.index-url https://pypi.tuna.tsinghua.edu.cn/simple" in section
    assert "make lab TORCH_INDEX=https://download.pytorch.org/whl/cpu" in section
    assert "Colab" in section and "Binder" in section and "make lab" in section


def test_no_line_break_between_chinese_characters() -> None:
    """A line break inside Chinese prose renders as a stray space: write each paragraph on one line (or break
    after ASCII text)."""
    prose = FENCE.sub("", CHINESE)
    breaks = [m.group(0).replace("\n", "⏎") for m in re.finditer(f"[{CJK}]\n[{CJK}]", prose)]
    assert not breaks, f"line breaks between Chinese characters: {breaks}"


def test_zh_target_maps_notebooks_and_student_copies() -> None:
    assert zh_target("notebooks/04_backward_hooks.ipynb") == "notebooks/zh/04_backward_hooks.ipynb"
    assert zh_target("notebooks/zh/") == "notebooks/zh/"
    assert zh_target("#the-notebooks") == "#笔记本"
    assert zh_target("#a-class-on-one-jupyterhub") == "#一个班级共用一台-jupyterhub"
    badge = "https://x/HEAD?urlpath=lab/tree/student/00_start_here.ipynb"
    assert zh_target(badge).endswith("student/zh/00_start_here.ipynb")
    assert zh_target("TEACHING.md") == "TEACHING.md"
