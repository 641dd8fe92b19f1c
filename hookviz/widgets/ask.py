"""The question box: type a question in your own words, get the sections of the course that answer it.

:class:`AskState` is the asking as plain state (the question, the :class:`~hookviz.search.Answers`, the status
line, the results as HTML), driven by tests without a browser; :class:`AskBox` is the thin ipywidgets view over it:
a text box, an *ask* button, a status line and the results list. Everything the widget itself says goes through
:func:`hookviz.i18n.tr`; the titles and summaries of the answers are the course's own text, in the language of
the edition searched (that of the question).
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets

from hookviz.i18n import get_language, tr
from hookviz.search import Answers, QuestionIndexError, ask, check_k, check_language, check_question, check_root
from hookviz.widgets.common import (
    WIDGET_CLASS,
    close_tree,
    previous_from_same_place,
    restart_notice,
    row,
    show_html,
    widget_bundle,
)

__all__ = ["AskBox", "AskState"]

#: What the status line says before the first question.
PROMPT = "Type a question in your own words, in English or Chinese, and press Enter."
#: What it says when the question box is empty (a blank question is not sent to hookviz.ask).
EMPTY = "The question is empty: type what you want to know first."


class AskState:
    """The question box's state, no widgets involved: :meth:`ask` a question, read :attr:`answers`,
    :meth:`status` and :meth:`to_html`.

    ``k`` and ``language`` are :func:`hookviz.ask`'s (checked here, so a bad one fails when the box is made, not
    at the first question); ``root`` is the course repository (default: the one holding this hookviz).
    """

    def __init__(self, k: int = 3, language: str | None = None, root: Any = None) -> None:
        self.k = check_k(k)
        self.language = check_language(language)
        self.root = check_root(root)
        self.question = ""
        self.answers: Answers | None = None
        self.error = ""  # why the last question could not be answered (the course is missing), in English

    def ask(self, question: str) -> Answers | None:
        """Search the course for ``question``; a blank question clears the answers (``None``) instead."""
        check_question(question)
        self.question, self.answers, self.error = question, None, ""
        if not question.strip():
            return None
        try:
            self.answers = ask(question, self.k, self.language, root=self.root)
        except (FileNotFoundError, QuestionIndexError) as exc:  # no course there, or a broken index: said in the box
            self.error = str(exc)
        return self.answers

    def status(self) -> str:
        """The status line in the learner's language: the prompt, a refusal, or how many sections answer."""
        if self.error:
            return tr(self.error)
        if self.answers is None:
            return tr(EMPTY if self.question else PROMPT)
        return self.answers.heading(get_language())

    def to_html(self) -> str:
        """The answers as a list of links (the learner's language for the labels), or ``""``."""
        if self.answers is None or not self.answers:
            return ""
        return self.answers.to_html(get_language(), heading=False)

    def __repr__(self) -> str:
        if self.answers is None:
            return f"AskState(question={self.question!r}, k={self.k})"
        top = f", top={self.answers[0].link!r}" if self.answers else ""
        return f"AskState(question={self.question!r}, answers={len(self.answers)}{top})"


class _Results(widgets.Output):
    """The answers, as an ``Output`` holding their HTML: JupyterLab renders an Output's HTML with the notebook's own
    renderer, whose link handler opens a link to another notebook inside the running JupyterLab (the link of an
    ``HTML`` widget would load the whole page again, and every open notebook would lose its outputs). ``value`` is
    the HTML shown (``""`` for none), as an ``HTML`` widget's would be."""

    def __init__(self) -> None:
        super().__init__()
        self.add_class("hookviz-answers")

    @property
    def value(self) -> str:
        return self.outputs[0]["data"]["text/html"] if self.outputs else ""


class AskBox(widgets.VBox):
    """Ask the course a question: type it, press Enter (or *ask*), read the sections that answer it, click one.

    ``question`` is asked at once when given. ``k`` (how many sections) and ``language`` (``"en"``, ``"zh"`` or
    ``None``: found from each question) are :func:`hookviz.ask`'s. A test drives it without a browser through
    :meth:`ask` (or ``box.question.value = ...``) and reads ``box.status.value`` / ``box.results.value``, or uses
    :attr:`state` directly. Shown in a notebook, its plain-text form is one line (its repr).
    """

    def __init__(self, question: str = "", k: int = 3, language: str | None = None, *, state: AskState | None = None):
        self._hookviz_closed = False  # first: ipywidgets' __del__ calls close() even on a box refused below
        # Every argument is checked before a widget is made: a refused box leaves nothing open.
        check_question(question)
        if state is not None and not isinstance(state, AskState):
            raise TypeError(tr(
                f"state must be an AskState (or None, to make one from k and language), not {type(state).__name__}"
            ))
        self.state = state if state is not None else AskState(k, language)
        self.question = widgets.Text(
            value="",
            placeholder=tr("e.g. why does my hook fire twice?"),
            description=tr("question"),
            continuous_update=False,  # asks on Enter (or when the box loses focus), not on every key
            layout={"width": "min(640px, 100%)"},
        )
        self.button = widgets.Button(description=tr("ask"), button_style="primary", layout={"width": "auto"})
        self.status = widgets.HTML()
        self.results = _Results()
        super().__init__([restart_notice(), row(self.question, self.button), self.status, self.results])
        self.add_class(WIDGET_CLASS)
        self.question.observe(self._typed, names="value")
        self.button.on_click(self._clicked)
        if question:
            self.ask(question)
        else:
            self.refresh()
        previous = previous_from_same_place("AskBox", self, outside_ipython=False)
        if previous is not None:  # the same notebook cell run again: its earlier box is closed
            previous.close()

    def ask(self, question: str) -> Answers | None:
        """Put ``question`` in the text box, search the course and show the answers (what Enter does)."""
        if self.closed:
            return None
        self.question.unobserve(self._typed, names="value")
        try:
            self.question.value = question
        finally:
            self.question.observe(self._typed, names="value")
        answers = self.state.ask(question)
        self.refresh()
        return answers

    def refresh(self) -> None:
        """Show the state's status line and answers."""
        if self.closed:
            return
        colour = "#b00020" if self.state.error or (self.state.question and self.state.answers is None) else "#333"
        self.status.value = f"<div style='color:{colour};white-space:normal'>{html.escape(self.state.status())}</div>"
        shown = self.state.to_html()
        if shown:
            show_html(self.results, shown, self.state.answers.to_text(get_language()))  # type: ignore[union-attr]
        else:
            self.results.outputs = ()

    def _typed(self, change: dict[str, Any]) -> None:
        self.state.ask(change["new"])
        self.refresh()

    def _clicked(self, _: Any) -> None:
        self.state.ask(self.question.value)
        self.refresh()

    def close(self) -> None:
        """Close the box and every widget in it, and let go of its state. Safe to call twice."""
        if getattr(self, "_hookviz_closed", False):
            return
        self._hookviz_closed = True
        if not isinstance(getattr(self, "question", None), widgets.Text):  # refused before a widget was made
            return
        self.question.unobserve(self._typed, names="value")
        self.button.on_click(self._clicked, remove=True)
        self.results.outputs = ()
        close_tree(self)
        self.__dict__.pop("_repr_mimebundle_", None)  # close() hid the method; a closed box shows its repr
        self.state = None  # type: ignore[assignment]

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._hookviz_closed

    def __repr__(self) -> str:
        if self.closed:
            return "AskBox(closed)"
        return repr(self.state).replace("AskState(", "AskBox(", 1)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """The live view and its one-line text (what a viewer without widgets shows); under ipywidgets 7 and 8."""
        if self.closed:
            return {"text/plain": repr(self)}
        return widget_bundle(self, repr(self))

    def _ipython_display_(self, **kwargs: Any) -> None:
        """Display :meth:`_repr_mimebundle_` (ipywidgets 7 calls this, not the bundle method)."""
        from IPython.display import display

        display(self._repr_mimebundle_(), raw=True)
