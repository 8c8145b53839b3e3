"""``calibration.md``: a calibration report for people (the numbers of ``calibration.json``).

Sections: the judge and the dataset version measured; the rows (compared, unlabelled, judge
errors); agreement, κ (weighted κ, Spearman's ρ) with their 95% intervals or why there is
none; for binary judges the true-positive and true-negative rates with their lower bounds;
the confusion matrix (people in rows, the judge in columns); per-label precision and recall;
notes on what is undefined; every disagreement; every judge error.
"""

from __future__ import annotations

from typing import Any

from assay.results.safe_text import md_text


def _fmt(value: Any, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _cell(text: Any) -> str:
    flat = md_text(" ".join(str(text).split()))
    return flat if len(flat) <= 300 else flat[:299] + "…"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *["| " + " | ".join(row) + " |" for row in rows],
    ]


def _estimate_row(name: str, estimate: dict[str, Any] | None) -> list[str] | None:
    if estimate is None:
        return None
    if estimate.get("low") is None or estimate.get("high") is None:
        interval = "—"
    else:
        interval = f"[{_fmt(estimate['low'])}, {_fmt(estimate['high'])}]"
    why = " ".join(filter(None, [estimate.get("reason"), estimate.get("note")]))
    return [name, _fmt(estimate.get("value")), interval, _cell(why) if why else ""]


def render_calibration(report: dict[str, Any]) -> str:
    """The Markdown report of one calibration."""
    judge, dataset = report["judge"], report["dataset"]
    version = f"@{judge['version']}" if judge.get("version") is not None else ""
    out = [
        f"# Calibration: judge `{judge['name']}{version}` on `{dataset['name']}@"
        f"{dataset['version']}`",
        "",
    ]
    out.append(
        f"**Judge**: `{judge['name']}{version}` ({judge['source']}), model "
        f"`{judge['model']}`, verdict {judge['verdict']}, sha256 "
        f"`{judge['content_hash']}`"
    )
    out.append(
        f"**Dataset**: `{dataset['name']}@{dataset['version']}` (content hash "
        f"`{dataset['content_hash']}`), human label `{report['label_field']}`, output "
        f"from {report['output_source']}"
    )
    out.append(
        f"**Rows**: {report['rows_total']} — {report['rows_compared']} compared, "
        f"{report['rows_unlabelled']} without a label, {report['rows_judge_error']} "
        "judge error(s) (left out of every number below)"
    )
    out += ["", "## Agreement", ""]
    rows = [
        _estimate_row("agreement", report.get("agreement")),
        _estimate_row("Cohen's κ", report.get("kappa")),
        _estimate_row("quadratic-weighted κ", report.get("weighted_kappa")),
        _estimate_row("Spearman's ρ", report.get("spearman")),
        _estimate_row("true-positive rate (sensitivity)", report.get("tpr")),
        _estimate_row("true-negative rate (specificity)", report.get("tnr")),
    ]
    out += _table(["measure", "value", "95% interval", "note"], [r for r in rows if r])
    if report.get("mean_absolute_difference") is not None:
        out += ["", f"Mean absolute difference: {_fmt(report['mean_absolute_difference'])}"]
    counts = report.get("binary_counts")
    if counts:
        tpr, tnr = report["tpr"], report["tnr"]
        out += [
            "",
            f"True-positive rate {_fmt(tpr['value'])} ({counts['tp']}/"
            f"{counts['positives']}; 95% lower bound {_fmt(tpr['low'])}); true-negative "
            f"rate {_fmt(tnr['value'])} ({counts['tn']}/{counts['negatives']}; 95% lower "
            f"bound {_fmt(tnr['low'])}).",
        ]
    out += _confusion(report)
    if report.get("notes"):
        out += ["", "## Notes", "", *[f"- {md_text(note)}" for note in report["notes"]]]
    out += _disagreements(report)
    if report.get("judge_errors"):
        out += ["", f"## Judge errors ({len(report['judge_errors'])})", ""]
        out += _table(
            ["example", "error", "raw reply"],
            [
                [f"`{e['example_id']}`", _cell(e["error"]), _cell(e.get("raw") or "")]
                for e in report["judge_errors"]
            ],
        )
    return "\n".join(out) + "\n"


def _confusion(report: dict[str, Any]) -> list[str]:
    labels: list[str] = report.get("labels") or []
    if not labels or not report.get("rows_compared"):
        return []
    cells = {(c["human"], c["judge"]): c["count"] for c in report["confusion"]}
    out = ["", "## Confusion matrix (people → judge)", ""]
    out += _table(
        ["human \\\\ judge", *[f"`{label}`" for label in labels]],
        [[f"`{h}`", *[str(cells.get((h, j), 0)) for j in labels]] for h in labels],
    )
    out += ["", "## Per label", ""]
    out += _table(
        ["label", "precision", "recall", "f1", "human", "judge"],
        [
            [
                f"`{p['label']}`",
                _fmt(p["precision"]),
                _fmt(p["recall"]),
                _fmt(p["f1"]),
                str(p["support"]),
                str(p["judged"]),
            ]
            for p in report["per_label"]
        ],
    )
    return out


def _disagreements(report: dict[str, Any]) -> list[str]:
    items = report.get("disagreements") or []
    if not items:
        return []
    out = ["", f"## Disagreements ({len(items)})", ""]
    out += _table(
        ["example", "human", "judge", "judge's reason"],
        [
            [f"`{d['example_id']}`", _cell(d["human"]), _cell(d["judge"]), _cell(d["reason"])]
            for d in items
        ],
    )
    return out
