# ruff: noqa: E501 (a message and its translation stay on one line where they fit)
"""The old Python catalogue of hookviz's Chinese messages: empty, kept for a while so that work in progress that adds
entries here is not lost. :mod:`hookviz.i18n` merges whatever is listed here into the gettext catalogue
(``hookviz/locale/zh/LC_MESSAGES/hookviz.po``; an entry here wins); ``python scripts/i18n_catalog.py convert
--clear-legacy`` moves it into the ``.po`` file. New translations go into the ``.po`` file directly.
"""

from __future__ import annotations

MESSAGES: dict[str, str] = {}
NAMES: dict[str, str] = {}
STORED_OUTPUTS: dict[str, str] = {}
