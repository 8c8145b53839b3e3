"""Markdown cells: text from datasets and models never breaks a suite.md table."""

from __future__ import annotations

import pytest

from assay.reports.markdown import _pass_k, code, md_table


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


@pytest.mark.parametrize(
    ("ran", "heading"),
    [((60, None), "60 rows"), ((11, 11), "11 of 60 rows"),
     ((4, 3), "4 with `good`, 3 with `bad`, of 60 rows")],
)  # fmt: skip
def test_an_experiment_suites_heading_counts_the_rows_each_variant_ran(
    ran: tuple[int | None, int | None], heading: str
) -> None:
    """The rows an experiment's suite table is over: all of them (an older report has no
    ``rows_ran``), the same number for both variants, or each variant's."""
    from assay.reports.markdown import _suite_rows
    from assay.results.experiment import VariantSuite

    arms = [VariantSuite(variant_id=name, suite_id="s", rows=60, rows_ran=count, replicates=1)
            for name, count in zip(("good", "bad"), ran, strict=True)]  # fmt: skip
    assert _suite_rows(arms) == heading


def test_pass_k_names_its_rows_when_the_k_are_over_different_rows() -> None:
    same = {"1": {"pass_at_k": 0.8, "pass_hat_k": 0.8, "rows": 5},
            "2": {"pass_at_k": 0.9, "pass_hat_k": 0.7, "rows": 5}}  # fmt: skip
    assert _pass_k(same) == "k=1: 0.800 / 0.800, k=2: 0.900 / 0.700"
    fewer = {"2": {"pass_at_k": 0.8, "pass_hat_k": 0.6, "rows": 5},
             "3": {"pass_at_k": 0.75, "pass_hat_k": 0.5, "rows": 4}}  # fmt: skip
    # pass@3 below pass@2 is not a fault of the estimator: a row with 2 graded replicates
    # is in k=2 only, and the line says so
    assert _pass_k(fewer) == "k=2: 0.800 / 0.600 (5 rows), k=3: 0.750 / 0.500 (4 rows)"
