"""The viewer shows a point gate and a lower-bound gate on the same metric as two lines."""

from __future__ import annotations

from assay.results.suite import CriterionAggregate, ThresholdCheck
from assay.view.suite_view import _criterion


def test_point_and_bound_gates_of_one_metric_have_their_own_lines() -> None:
    aggregate = CriterionAggregate(
        criterion_type="classification_match", rows_total=10, rows_excluded=0,
        metrics={"accuracy": 0.7, "mean": 0.7},
        threshold_checks=[
            ThresholdCheck(metric="accuracy", min_value=0.6, actual_value=0.7, passed=True),
            ThresholdCheck(metric="accuracy", min_value=0.6, actual_value=0.41, passed=False,
                           bound="lower", interval=[0.41, 0.9]),
        ],
    )  # fmt: skip
    view = _criterion(0, aggregate, [], 1)
    gated = {line.name: line.gate for line in view.metrics if line.gate is not None}
    assert gated["accuracy"] is not None and gated["accuracy"].bound == "point"
    bound = gated["accuracy (95% lower bound)"]
    assert bound is not None and bound.actual_value == 0.41 and not bound.passed
