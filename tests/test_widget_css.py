"""The CSS that hookviz ships inside its widgets parses: every rule closed once, nothing stray.

A stray ``}`` ends the rule before it early, and the browser then drops the rule after it (it did: the
restart notice's "hide the pseudo-element" rule was silently lost)."""

from __future__ import annotations

import re

from hookviz.widgets.common import restart_notice


def _rules(css: str) -> list[str]:
    depth, start, rules = 0, 0, []
    for i, char in enumerate(css):
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            assert depth >= 0, f"stray '}}' at {i}: {css[max(0, i - 40) : i + 1]!r}"
            if depth == 0:
                rules.append(css[start : i + 1].strip())
                start = i + 1
    assert depth == 0, "a rule is not closed"
    assert not css[start:].strip(), f"text after the last rule: {css[start:]!r}"
    return rules


def test_restart_notice_css_has_three_whole_rules():
    css = re.search(r"<style>(.*?)</style>", restart_notice().value, re.S).group(1)
    rules = _rules(css)
    assert len(rules) == 3, rules
    assert all(re.fullmatch(r"[^{}]+\{[^{}]+\}", rule) for rule in rules), rules
    assert rules[-1].endswith("::before{display:none!important}")


def test_the_rule_checker_finds_a_stray_brace():
    try:
        _rules(".a{color:red}}.b{color:blue}")
    except AssertionError as error:
        assert "stray" in str(error)
    else:
        raise AssertionError("a stray brace went unnoticed")
