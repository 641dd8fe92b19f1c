"""The tools a Chinese learner runs speak Chinese: the hook doctor (``hookviz.diagnose``) and the setup check.

Under ``hookviz.set_language("zh")`` every word a person reads is Chinese: the headers, the severities, each
finding's message and fix, ``no findings``, READY / NOT READY and the fixes of the setup check. Kind ids,
module and hook names, code and Python's own error text stay as written (the same rule as the checkers'
test in ``tests/test_i18n.py``).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from typing import Any

import pytest
import test_diagnose_planted as planted
import test_diagnose_rules as rules
from test_i18n import english_left

import hookviz
from hookviz import i18n
from hookviz.diagnose import Diagnosis, diagnose
from hookviz.i18n import tr

doctor = importlib.import_module("hookviz.doctor")


@pytest.fixture(autouse=True)
def chinese() -> Iterator[None]:
    i18n.set_language("zh")
    yield
    i18n.set_language(None)


def _read(diagnosis: Diagnosis) -> str:
    """What a learner reads in the printed report, less the identifiers: kind ids, places and links."""
    text = str(diagnosis)
    for finding in diagnosis:
        for identifier in (finding.kind, finding.where, finding.link.removeprefix("notebooks/")):
            text = text.replace(identifier, "§")
    return text


def _assert_chinese(diagnosis: Diagnosis) -> None:
    assert diagnosis, "the case should give a finding"
    for finding in diagnosis:
        assert tr(finding.message) != finding.message, f"no Chinese for the message {finding.message!r}"
        assert tr(finding.fix) != finding.fix, f"no Chinese for the fix {finding.fix!r}"
    text = _read(diagnosis)
    assert not english_left(text), f"English left: {english_left(text)}\n{text}"
    page = re.sub(r"<[^>]+>", " ", diagnosis._repr_html_())
    for finding in diagnosis:
        page = page.replace(finding.kind, "§").replace(finding.where, "§")
    assert not english_left(page), f"English left in the HTML: {english_left(page)}"


@pytest.mark.parametrize("kind", sorted(rules.POSITIVE))
def test_every_rule_reports_in_chinese(kind: str) -> None:
    diagnosis = rules._diagnose(rules.POSITIVE[kind])
    assert kind in diagnosis.kinds(), str(diagnosis)
    _assert_chinese(diagnosis)


@pytest.mark.parametrize(("name", "kind", "build"), planted.VARIANTS, ids=planted.IDS)
def test_planted_pitfalls_report_in_chinese(name: str, kind: str, build: Any) -> None:
    model, inputs, handles = build()
    try:
        diagnosis = diagnose(model, inputs)
    finally:
        for handle in handles:
            handle.remove()
    _assert_chinese(diagnosis)


def test_the_report_words_and_links_are_chinese() -> None:
    diagnosis = rules._diagnose(rules.POSITIVE["inplace-after-backward-hook"])
    text = str(diagnosis)
    assert "严重程度" in text and "怎么改：" in text and "错误" in text
    assert "notebooks/zh/11_mistakes_clinic.ipynb#mistake-24" in text
    assert "`Output 0 of BackwardHookFunction is a view" in text  # PyTorch's message, quoted as printed
    assert str(Diagnosis()) == "没有发现问题"
    i18n.set_language("en")
    assert "fix: take the gradient" in str(diagnosis) and str(Diagnosis()) == "no findings"


def _verdicts() -> list[tuple[dict[str, str | None], bool]]:
    ok = {name: "1.0" for name in doctor.PACKAGES} | {"python": "3.12.1", "widget front end": "x"}
    ok["torch"] = doctor.OUTPUTS_TORCH
    broken = ok | {"python": "3.10.2", "torch": None, "ipywidgets": None, "widget front end": None}
    return [(ok, False), (ok, True), (broken, False), (broken, True)]


@pytest.mark.parametrize(("report", "colab"), _verdicts())
def test_the_setup_verdict_is_chinese(report: dict[str, str | None], colab: bool,
                                      capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    verdict = doctor.check(report, colab=colab)
    doctor._print_verdict(verdict)
    out = capsys.readouterr().out
    assert ("就绪（READY）" in out) == verdict.ready and ("未就绪（NOT READY）" in out) != verdict.ready
    assert not english_left(out.replace("READY", "").replace("WARNING", "")), out


def test_check_setup_prints_chinese(capsys: pytest.CaptureFixture[str]) -> None:
    report = hookviz.check_setup()
    out = capsys.readouterr().out.replace(report.get("Chinese font") or "§", "§")  # a font's name is a name
    assert "READY" in out and ("就绪" in out)
    assert not english_left(out.replace("NOT READY", "").replace("READY", "").replace("WARNING", "")), out


@pytest.mark.parametrize("kind", sorted(rules.POSITIVE))
def test_a_stored_english_report_becomes_what_zh_prints(kind: str) -> None:
    """``scripts/make_zh.py`` turns a notebook's stored English report into the Chinese one the code prints."""
    from hookviz.diagnose.report import localise, localise_html

    diagnosis = rules._diagnose(rules.POSITIVE[kind])
    i18n.set_language("en")
    printed, page = str(diagnosis) + "\n", diagnosis._repr_html_()
    i18n.set_language("zh")
    assert localise(printed, "zh") == str(diagnosis) + "\n"
    assert localise_html(page, "zh") == diagnosis._repr_html_()
    assert localise("no findings\n", "zh") == "没有发现问题\n" and localise("other\n", "zh") == "other\n"


def test_the_short_traceback_header_is_chinese() -> None:
    from hookviz.exercises import short_traceback

    try:
        import torch

        torch.nn.Linear(3, 3)(torch.zeros(2))
    except RuntimeError as error:
        lines = short_traceback(error)
    assert lines[0] == "回溯（只列出你的代码；库内部的调用帧已折叠）：", lines
    assert any(re.fullmatch(r"  … torch 内部的 \d+ 个调用帧 …", line) for line in lines), lines
    assert lines[-1].startswith("RuntimeError: ")  # Python's own error stays as printed
    for line in lines[:-1]:
        if not line.startswith("    "):  # the learner's source lines are code
            assert not english_left(line.replace(__file__, "§")), line


def test_the_chinese_student_copies_have_a_chinese_readme(tmp_path: Any) -> None:
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "scripts"))
    import make_student

    text = make_student.STUDENT_README_ZH
    assert "make reset NB=zh/03" in text and "00_start_here.ipynb" in text
    code_free = re.sub(r"\*\*[^*]*▸[^*]*\*\*", "§", text)  # JupyterLab's menu names, glossed in Chinese
    code_free = re.sub(r"(`+).+?\1", "§", code_free).replace("*No Kernel*", "§")
    assert not english_left(code_free), english_left(code_free)
    assert "zh/README.md" in make_student.STUDENT_README


# --------------------------------------------------------------------------- the Chinese workshop kits

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]
ZH_KITS = sorted((ROOT / "workshop" / "zh").rglob("*.md"))
_CJK = "\u3000-\u303f\u4e00-\u9fff\uff00-\uffef"


@pytest.mark.parametrize("path", ZH_KITS, ids=lambda p: str(p.relative_to(ROOT)))
def test_zh_kits_reset_the_chinese_copy(path: Any) -> None:
    """``--reset 14`` resets the English copy; a Chinese kit says ``--reset zh/14`` (and ``NB=zh/14``)."""
    text = path.read_text()
    assert not re.findall(r"--reset (?!zh/)\S+", text), re.findall(r"--reset (?!zh/)\S+", text)
    assert not re.findall(r"make reset NB=(?!zh/)\S+", text)


@pytest.mark.parametrize("path", ZH_KITS, ids=lambda p: str(p.relative_to(ROOT)))
def test_zh_kits_have_no_line_break_between_chinese_characters(path: Any) -> None:
    """A line break between two Chinese characters renders as a stray space in a browser."""
    found = re.findall(f"[{_CJK}]\n[ \t]*[{_CJK}]", path.read_text())
    assert not found, found


def test_the_zh_agendas_send_learners_to_the_chinese_copies() -> None:
    for path in (ROOT / "workshop/zh/agenda.md", ROOT / "workshop/zh/practitioners/agenda.md"):
        text = path.read_text()
        assert "student/zh/" in text and "urlpath=lab/tree/student/zh/" in text, path


_LINK = re.compile(r"\]\((?!https?:|#|mailto:)([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize(
    "path",
    [ROOT / "TEACHING.md", ROOT / "workshop/README.md", *sorted((ROOT / "workshop").rglob("*.md"))],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_every_kit_file_a_document_names_exists(path: Any) -> None:
    """Each file a README, TEACHING.md or a kit links to is there (no Chinese slides that do not exist)."""
    missing = [link for link in _LINK.findall(path.read_text()) if not (path.parent / link).exists()]
    assert not missing, missing


def test_both_workshops_are_listed() -> None:
    for path in (ROOT / "TEACHING.md", ROOT / "workshop/README.md"):
        text = path.read_text()
        assert "practitioners/agenda.md" in text and "zh/practitioners/agenda.md" in text, path


def test_reset_zh_resets_the_chinese_copy(tmp_path: Any) -> None:
    """Run the command the Chinese kits give: ``--reset zh/14`` replaces ``student/zh/14_…`` (the learner's
    version backed up as ``zh-14_…``); ``--reset 14`` writes the English copy and leaves the Chinese one."""
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    import make_student

    student = tmp_path / "student"
    (student / "zh").mkdir(parents=True)
    broken = student / "zh" / "14_decoder_hooks.ipynb"
    broken.write_text('{"broken": true}')
    make_student.main([str(ROOT / "notebooks"), str(student), "--reset", "14"])
    assert broken.read_text() == '{"broken": true}' and (student / "14_decoder_hooks.ipynb").exists()
    make_student.main([str(ROOT / "notebooks"), str(student), "--reset", "zh/14"])
    assert broken.read_text() != '{"broken": true}'
    assert [p.name.split(".")[0] for p in (student / "backups").iterdir()] == ["zh-14_decoder_hooks"]


@pytest.mark.parametrize(
    "call",
    [
        lambda: diagnose(1, None),  # type: ignore[arg-type]
        lambda: diagnose(__import__("torch").nn.Linear(2, 2), None),
        lambda: diagnose(__import__("torch").nn.Linear(2, 2), "x"),
        lambda: diagnose(__import__("torch").nn.Linear(2, 2), __import__("torch").zeros(1, 2), kwargs=[1]),
        lambda: diagnose(__import__("torch").nn.Linear(2, 2), __import__("torch").zeros(1, 2), loss_fn=3),
    ],
    ids=["model", "no-inputs", "inputs-type", "kwargs", "loss-fn"],
)
def test_the_doctor_refuses_in_chinese(call: Any) -> None:
    from hookviz.diagnose import DiagnosisError

    with pytest.raises(DiagnosisError) as info:
        call()
    message = str(info.value)
    assert re.search("[\u4e00-\u9fff]", message) and not english_left(message), message
    assert re.search("[A-Za-z]{4} ", info.value.args[0])  # the English stays in args


@pytest.mark.parametrize("version", ["2.8.0", "2.9.1", "2.11.0", "2.12.1", "2.14.1", "2.6.0"])
def test_the_release_warning_is_chinese_down_to_each_difference(version: str) -> None:
    """Every line of the warning about another torch release, the differences' descriptions and results included."""
    from hookviz import releases

    text = doctor.release_warning(version)
    for difference in releases.DIFFERENCES.values():
        text = text.replace(difference.section, "§")
    text = re.sub(r"'[^']*'", "§", text)  # quoted PyTorch messages and signatures stay as PyTorch writes them
    assert not english_left(text), f"English left: {english_left(text)}\n{text}"
    for difference in releases.DIFFERENCES.values():
        for _, result, _ in difference.rows:
            if re.search(r"[a-z]{3,} [a-z]{3,}", result) and not result.startswith("'"):  # prose, not a quote or a name
                assert tr(result) != result, f"no Chinese for {result!r}"
        assert tr(difference.what) != difference.what, f"no Chinese for {difference.what!r}"


def test_make_zh_converts_a_widget_refusal_and_leaves_a_notebooks_own_refused_text() -> None:
    """zh 06 prints what the explorer's refusal says: make_zh stores it as the widget shows it under zh."""
    from notebook_tools import load_script

    from hookviz.widgets.common import refusal

    make_zh = load_script("make_zh")

    why = "sample 99 is out of range: the batch has 64 samples (0 to 63)"
    stored = f"typed sample 99 -> refused: {why} | sample box: 7\n"
    assert make_zh.localise_text(stored) == f"typed sample 99 -> {refusal(why)} | sample box: 7\n"
    own = "still refused: Tensor post accumulate grad hooks should return None.\n"
    assert make_zh.localise_text(own) == own  # printed by the notebook itself, in English under zh too
