"""Text from rows (a model's answer, a failure reason, an error message) made safe for the
report files assay writes, which other programs render or open:

- :func:`md_text`: for Markdown (``suite.md``, ``run.md``, experiment and compare reports,
  calibration reports), which GitHub and IDE previews render with the HTML inside it: ``&``,
  ``<`` and ``>`` become entities, so ``<img src=x onerror=…>`` or ``<details>`` shows as
  text; a table's ``|`` is escaped and line breaks show as ``⏎``, so a table row stays one
  row.
- :func:`csv_cell`: for CSV, which spreadsheets open: a cell starting with ``=``, ``+``,
  ``-``, ``@``, a tab or a carriage return would run as a formula (OWASP "CSV injection"), so
  it gets a leading ``'``; a plain number (``-1.5``, ``+3``) is left as it is. A cell that
  starts with ``'`` gets one more, so :func:`csv_value` (the store's CSV import) gives back
  exactly the text exported.
"""

from __future__ import annotations

import re

_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def md_text(text: object) -> str:
    """``text`` (as ``str``) safe inside Markdown prose or a table cell; see the module
    docstring. Not for code spans (inside backticks entities would show literally)."""
    flat = str(text).replace("\r\n", "\n").replace("\r", "\n")
    escaped = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return escaped.replace("|", "\\|").replace("\n", "⏎")


def csv_cell(value: str) -> str:
    """``value`` as a CSV cell no spreadsheet runs as a formula; see the module docstring."""
    if value.startswith("'") or (value.startswith(_FORMULA_STARTS)
                                 and not _NUMBER.fullmatch(value)):  # fmt: skip
        return "'" + value
    return value


def csv_value(cell: str) -> str:
    """The text :func:`csv_cell` made ``cell`` from: one leading ``'`` dropped when a formula
    character or another ``'`` follows it."""
    if cell.startswith("'") and cell[1:].startswith(("'", *_FORMULA_STARTS)):
        return cell[1:]
    return cell
