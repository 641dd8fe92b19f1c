"""What a diagnosis reports: :class:`Finding`, :class:`Diagnosis` (a list that prints as a table) and the links."""

from __future__ import annotations

import html
from dataclasses import dataclass

from hookviz.text import text_table

CLINIC = "notebooks/11_mistakes_clinic.ipynb"
SEVERITIES = ("error", "warning", "info")

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


def clinic(number: int) -> str:
    """The link to the clinic's section for mistake ``number`` (``notebooks/11_mistakes_clinic.ipynb#mistake-07``)."""
    return f"{CLINIC}#mistake-{number:02d}"


class DiagnosisError(ValueError):
    """The diagnosis could not run: the message says why and how to fix it."""


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


class Diagnosis(list[Finding]):
    """The findings of one diagnosis: a list that prints as a text table and shows as HTML in a notebook."""

    columns = ("#", "severity", "kind", "where", "see")

    def _cells(self) -> list[tuple[str, ...]]:
        return [(str(i), f.severity, f.kind, f.where, f.link) for i, f in enumerate(self, 1)]

    def __str__(self) -> str:
        if not self:
            return "no findings"
        details = [f"{i}. {f.message}\n   fix: {f.fix}" for i, f in enumerate(self, 1)]
        return text_table(self.columns, self._cells()) + "\n\n" + "\n".join(details)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        if not self:
            return "<p>no findings</p>"
        head = "".join(f"<th>{c}</th>" for c in ("#", "severity", "kind", "where", "what happens", "fix", "see"))
        rows = []
        for i, f in enumerate(self, 1):
            href = f.link.removeprefix("notebooks/")
            cells = (str(i), f.severity, f.kind, f.where, f.message, f.fix)
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
        return Diagnosis(f for f in self if where in f.where.split(", "))


def ordered(findings: list[Finding]) -> list[Finding]:
    """Errors first, then warnings, then notes; in the order found within each."""
    return sorted(findings, key=lambda f: SEVERITIES.index(f.severity))
