"""The READMEs quote the doctor's figures on the blind evaluation set (tests/doctor_blind): they must be today's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from doctor_blind.score import score_all

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def figures() -> dict[str, int]:
    results = score_all()
    planted = [r for r in results if r.planted]
    return {
        "planted": len(planted),
        "found": sum(r.outcome == "found" for r in planted),
        "clean": sum(not r.planted for r in results),
        "false_alarms": sum(r.outcome == "false-alarm" for r in results if not r.planted),
    }


def test_the_english_readme_quotes_the_blind_set_figures(figures: dict[str, int]) -> None:
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"**{figures['found']} of {figures['planted']}**" in text
    assert f"{figures['planted']} planted variants in nine families and {figures['clean']} clean models" in text
    assert figures["false_alarms"] == 0 and f"**no** false alarm on the {figures['clean']} clean models" in text


def test_the_chinese_readme_quotes_the_same_figures(figures: dict[str, int]) -> None:
    text = (ROOT / "README.zh.md").read_text(encoding="utf-8")
    assert f"**{figures['planted']} 个中的 {figures['found']} 个**" in text
    assert re.search(rf"{figures['planted']} 个植入的陷阱变体和 {figures['clean']} 个没有问题的模型", text)
