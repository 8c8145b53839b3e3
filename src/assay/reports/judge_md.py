"""The judge lines of a ``suite.md`` aggregate section (an ``llm_judge`` criterion).

Which judge graded (name, version, content hash, source, model, verdict kind); how many rows
it could not grade (``judge_error``, left out of every number); the pass rate with its
clustered 95% interval and, for a calibrated binary judge, the pass rate corrected for its
measured error rates with the calibration it rests on (or why there is none); the label
counts of a labels judge; the histogram of a scale judge.
"""

from __future__ import annotations

from typing import Any

from assay.results.safe_text import md_text
from assay.results.suite import CriterionAggregate, IntervalRecord


def _fmt(value: Any) -> str:
    return "—" if value is None else f"{value:.3f}"


def _interval(data: dict[str, Any] | None) -> str:
    if not data or data.get("low") is None or data.get("high") is None:
        return ""
    return f" [{_fmt(data['low'])}, {_fmt(data['high'])}]"


def judge_lines(
    agg: CriterionAggregate, *, interval: str = "", rate: IntervalRecord | None = None
) -> list[str]:
    """Markdown lines for a judge's aggregate (empty for other criteria); ``rate``: its pass
    rate's clustered interval, ``interval`` that interval as rendered."""
    details = agg.details
    if "judges" not in details:
        return []
    out = [""]
    for judge in details["judges"]:
        version = f"@{judge['version']}" if judge.get("version") is not None else ""
        out.append(
            f"**Judge**: `{judge['name']}{version}` ({judge['source']}), model "
            f"`{judge['model']}`, verdict {details.get('verdict', '?')}, sha256 "
            f"`{judge['content_hash']}`"
        )
    errors = details.get("judge_errors", 0)
    if errors:
        out.append(
            f"**Judge errors**: {errors} row(s) got no readable verdict: not graded, "
            "left out of every number here and counted apart"
        )
    out.append(f"**Pass rate**: {_fmt(agg.metrics.get('pass_rate'))} {interval}".rstrip()
               + f" over {details.get('graded', 0)} verdict(s)")  # fmt: skip
    corrected = details.get("corrected_pass_rate")
    if corrected is not None:
        out.append(_corrected_line(corrected))
    if (
        corrected is not None
        and "calibration_id" in corrected
        and rate is not None
        and (rate.clusters < rate.observations)
    ):
        out.append(f"The corrected pass rate's interval takes the {rate.observations} verdicts "
                   f"as independent, and they fall in {rate.clusters} clusters (a row's "
                   "replicates, `cluster_field`): it is too narrow; the pass rate's interval "
                   "above is clustered.")  # fmt: skip
    counts = details.get("label_counts")
    if counts:
        out.append("**Labels**: " + ", ".join(f"`{k}` {v}" for k, v in counts.items()))
    histogram = details.get("histogram")
    if histogram:
        out += ["", "| score | rows |", "|---|---|"]
        for item in histogram:
            label = (
                str(item["value"]) if "value" in item else f"{item['low']:.2f}–{item['high']:.2f}"
            )
            out.append(f"| {label} | {item['count']} |")
    return out


def _corrected_line(corrected: dict[str, Any]) -> str:
    if "calibration_id" not in corrected:
        return f"**Corrected pass rate**: — ({corrected.get('reason', 'no calibration')})"
    value = _fmt(corrected.get("value"))
    where = (
        f"calibration {corrected['calibration_id'][:12]} on "
        f"{corrected['calibrated_on']}: sensitivity {_fmt(corrected.get('sensitivity'))}, "
        f"specificity {_fmt(corrected.get('specificity'))}"
    )
    why = [text for text in (corrected.get("reason"), corrected.get("note")) if text]
    note = "".join(f"; {md_text(text)}" for text in why)
    return f"**Corrected pass rate** (Rogan–Gladen): {value}{_interval(corrected)} ({where}{note})"
