"""Markdown cells: text from datasets and models never breaks a suite.md table."""

from __future__ import annotations

import pytest

from assay.reports.markdown import code, md_table


@pytest.mark.parametrize(
    ("text", "cell"),
    [
        ("plain", "`plain`"),
        ("a|b", "`a\\|b`"),
        ("two\nlines", "`two⏎lines`"),
        ("crlf\r\nend", "`crlf⏎end`"),
        ("`tick`", "`` `tick` ``"),
    ],
)
def test_code_cells_stay_on_one_line(text: str, cell: str) -> None:
    assert code(text) == cell
    (row,) = md_table(["value"], [[code(text)]])[2:]
    assert "\n" not in row and "\r" not in row
