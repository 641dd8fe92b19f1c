"""What a diagnosis reports: :class:`Finding`, :class:`Diagnosis` (a list that prints as a table) and the links."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass

from hookviz.guards import check_int, check_str, shown
from hookviz.i18n import N_, get_language, tr, translate
from hookviz.text import text_table

CLINIC = "notebooks/11_mistakes_clinic.ipynb"
SEVERITIES = (N_("error"), N_("warning"), N_("info"))

NOT_FIRING = "notebooks/10_faq.ipynb#faq-not-firing"
FROZEN = "notebooks/13_hooks_in_training_loops.ipynb#frozen-silent"
MEMORY = "notebooks/05_lifetime_and_global_hooks.ipynb#memory-detach"
HOOK_RAISES = "notebooks/05_lifetime_and_global_hooks.ipynb#hook-raises"
LEGACY = "notebooks/04_backward_hooks.ipynb#legacy-grad-input"
COMPILED = "notebooks/10_faq.ipynb#faq-compile-late"
IF_YOU_SEE = "notebooks/10_faq.ipynb#faq-if-you-see"
DO_NOT_MODIFY = "notebooks/01_tensor_hooks.ipynb#docs-do-not-modify"
RETURN_REPLACES = "notebooks/01_tensor_hooks.ipynb#return-replaces"
WHAT_CAN_CHANGE = "notebooks/04_backward_hooks.ipynb#what-can-change"
REPLACE_OUTPUT = "notebooks/02_forward_hooks.ipynb#replace-output"
RETURN_NEW_ARGS = "notebooks/03_forward_pre_hooks.ipynb#return-new-args"
PRE_HOOK_IN_PLACE = "notebooks/03_forward_pre_hooks.ipynb#in-place-trap"
CLONE_DETAIL = "notebooks/02_forward_hooks.ipynb#clone-detail"
POST_ACCUMULATE_RETURN = "notebooks/01_tensor_hooks.ipynb#post-accumulate-return"
SCRIPT_HOOKS = "notebooks/09_hooks_in_production.ipynb#script-hooks"
GLOBAL_EVERY_MODEL = "notebooks/05_lifetime_and_global_hooks.ipynb#global-every-model"
EVAL_NO_GRAD = "notebooks/05_lifetime_and_global_hooks.ipynb#eval-no-grad"


#: The clinic's mistakes are numbered from 1 to this.
CLINIC_MISTAKES = 36


def clinic(number: int) -> str:
    """The link to the clinic's section for mistake ``number`` (``notebooks/11_mistakes_clinic.ipynb#mistake-07``)."""
    number = check_int(number, "number", minimum=1, maximum=CLINIC_MISTAKES,
                       fix=N_(f"the clinic's mistakes are numbered 1 to {CLINIC_MISTAKES}, e.g. clinic(7)"))
    return f"{CLINIC}#mistake-{number:02d}"


class DiagnosisError(ValueError):
    """The diagnosis could not run: the message says why and how to fix it (in the current language when it
    prints: :func:`hookviz.i18n.tr`; ``args[0]`` keeps the English)."""

    def __str__(self) -> str:
        return tr(super().__str__())


@dataclass(frozen=True)
class Finding:
    """One pitfall the doctor found.

    Attributes:
        kind: the id of the rule that found it (``"hook-never-fires"``, ``"module-called-twice"`` ...).
        severity: ``"error"`` (will raise or corrupt), ``"warning"`` (silently wrong or missing
            numbers) or ``"info"`` (worth knowing).
        where: the module name (``"features.0"``, ``<root>`` for the model itself), ``param:<name>``
            for a parameter, ``<global>`` for global hooks, or ``backward`` for the backward pass.
        message: what will happen, in one or two sentences.
        fix: what to do instead.
        link: the clinic section or notebook that teaches it (a path relative to the course's root).
    """

    kind: str
    severity: str
    where: str
    message: str
    fix: str
    link: str

    @property
    def mistake(self) -> int | None:
        """The clinic's mistake number this finding is about, or ``None`` when it links elsewhere."""
        if self.link.startswith(f"{CLINIC}#mistake-"):
            return int(self.link.rsplit("-", 1)[1])
        return None


def shown_link(link: str, language: str | None = None) -> str:
    """The link as the learner's edition names it: the Chinese notebook (``notebooks/zh/...``) under zh."""
    if (language or get_language()) == "zh" and link.startswith("notebooks/") and not link.startswith("notebooks/zh/"):
        return "notebooks/zh/" + link.removeprefix("notebooks/")
    return link


def _text(rows: list[tuple[str, str, str, str, str, str]], language: str) -> str:
    """The printed report of ``rows`` (severity, kind, where, message, fix, link; all English) in ``language``."""
    if not rows:
        return translate(N_("no findings"), language)
    fix = "怎么改：" if language == "zh" else "fix: "
    cells = [
        (str(i), translate(severity, language), kind, where, shown_link(link, language))
        for i, (severity, kind, where, _, _, link) in enumerate(rows, 1)
    ]
    details = [
        f"{i}. {translate(message, language)}\n   {fix}{translate(fixed, language)}"
        for i, (_, _, _, message, fixed, _) in enumerate(rows, 1)
    ]
    table = text_table(tuple(translate(c, language) for c in Diagnosis.columns), cells)
    return table + "\n\n" + "\n".join(details)


_DETAIL = re.compile(r"^(\d+)\. (.*?)\n   fix: (.*?)(?=\n\d+\. |\Z)", re.DOTALL | re.MULTILINE)


def localise(printed: str, language: str) -> str:
    """An English printout of a :class:`Diagnosis` (``str(diagnosis)``, as a notebook stored it) as it prints
    in ``language``; text that is not such a printout comes back unchanged (``scripts/make_zh.py`` uses it)."""
    ending = printed[len(printed.rstrip("\n")) :]
    body = printed.rstrip("\n")
    if body == "no findings":
        return translate(body, language) + ending
    lines = body.split("\n")
    if len(lines) < 4 or lines[0].split() != list(Diagnosis.columns) or set(lines[1].replace(" ", "")) != {"-"}:
        return printed
    starts = [i for i, char in enumerate(lines[1]) if char == "-" and (i == 0 or lines[1][i - 1] == " ")]
    table = []
    for line in lines[2:]:
        if not line:
            break
        table.append([line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)])
    details = {int(m[1]): (m[2], m[3]) for m in _DETAIL.finditer(body.split("\n\n", 1)[1])}
    if [int(row[0]) for row in table] != sorted(details):
        return printed
    rows = [(sev, kind, where, *details[int(number)], link) for number, sev, kind, where, link in table]
    return _text(rows, language) + ending


class Diagnosis(list[Finding]):
    """The findings of one diagnosis: a list that prints as a text table and shows as HTML in a notebook.

    What a person reads (the headers, the severities, each finding's message and fix, ``no findings``) is
    shown in the current language (:func:`hookviz.i18n.tr`); kind ids, module names, hook names, code and
    Python's own error text stay as written. The findings themselves keep their English text.
    """

    columns = ("#", N_("severity"), N_("kind"), N_("where"), N_("see"))

    def __init__(self, findings: Iterable[Finding] = ()) -> None:
        findings = list(findings)
        for item in findings:
            if not isinstance(item, Finding):
                raise TypeError(tr(f"a Diagnosis holds Finding objects (what diagnose() returns), not {shown(item)}"))
        super().__init__(findings)
    html_columns = ("#", N_("severity"), N_("kind"), N_("where"), N_("what happens"), N_("fix"), N_("see"))

    def __str__(self) -> str:
        return _text([(f.severity, f.kind, f.where, f.message, f.fix, f.link) for f in self], get_language())

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        if not self:
            return f"<p>{html.escape(tr(N_('no findings')))}</p>"
        head = "".join(f"<th>{html.escape(tr(c))}</th>" for c in self.html_columns)
        rows = []
        for i, f in enumerate(self, 1):
            href = f.link.removeprefix("notebooks/")
            cells = (str(i), tr(f.severity), f.kind, f.where, tr(f.message), tr(f.fix))
            link = f'<a href="{html.escape(href)}">{html.escape(f.link.rsplit("/", 1)[-1])}</a>'
            rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + f"<td>{link}</td></tr>")
        return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"

    def kinds(self) -> dict[str, int]:
        """How many findings of each kind."""
        result: dict[str, int] = {}
        for finding in self:
            result[finding.kind] = result.get(finding.kind, 0) + 1
        return result

    def mistakes(self) -> list[int]:
        """The clinic mistake numbers found, sorted, each once."""
        return sorted({f.mistake for f in self if f.mistake is not None})

    def at(self, where: str) -> Diagnosis:
        """The findings whose ``where`` names ``where`` (exactly, or as one of a comma-separated list)."""
        check_str(where, "where", fix=N_("a module's name as the findings show it, e.g. diagnosis.at('features.0')"))
        return Diagnosis(f for f in self if where in f.where.split(", "))


def ordered(findings: list[Finding]) -> list[Finding]:
    """Errors first, then warnings, then notes; in the order found within each."""
    return sorted(findings, key=lambda f: SEVERITIES.index(f.severity))


_ROW = re.compile(r"<tr>(.*?)</tr>")
_CELL = re.compile(r"<(td|th)>([^<]*)</\1>")
#: The cells of a row a person reads (severity, what happens, fix); the others are the number, ids and the link.
_READ = (1, 4, 5)


def localise_html(page: str, language: str) -> str:
    """The HTML of an English :class:`Diagnosis` (as a notebook stored it) in ``language``: the headers, the
    severities, messages and fixes translated; the kinds, places and links stay."""
    if page == "<p>no findings</p>":
        return f"<p>{html.escape(translate('no findings', language))}</p>"
    if not page.startswith("<table><thead><tr><th>#</th><th>severity</th>"):
        return page

    def cell(match: re.Match[str], read: bool) -> str:
        text = translate(html.unescape(match[2]), language) if read else html.unescape(match[2])
        return f"<{match[1]}>{html.escape(text)}</{match[1]}>"

    def row(match: re.Match[str]) -> str:
        cells = list(_CELL.finditer(match[1]))
        header = bool(cells) and cells[0][1] == "th"
        out, last = [], 0
        for index, found in enumerate(cells):
            out += [match[1][last : found.start()], cell(found, header or index in _READ)]
            last = found.end()
        return "<tr>" + "".join(out) + match[1][last:] + "</tr>"

    return _ROW.sub(row, page)
