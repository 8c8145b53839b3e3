"""``suite.md`` and ``run.md``.

``suite.md`` keeps Coder Eval's section layout (``reference/originals.md`` §1.5): title,
variant, rows, pass rate, average weighted score, criterion stats, one "Aggregate metrics"
section per criterion (denominator, metrics, thresholds, per-label breakdown, confusion
matrix), the suite gate, and the failed or errored samples with links to their
``task.json`` (relative to the ``suite.md`` itself). Undefined metrics show ``—`` and their
reason below the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from assay.metrics.clustered import MIN_CLUSTERS
from assay.metrics.paired import format_p, p_clause
from assay.reports.judge_md import judge_lines
from assay.reports.numbers import fmt, fmt_close
from assay.reports.rollup import FAILED_SAMPLE_LIMIT
from assay.results.experiment import (
    Comparison,
    Difference,
    Estimate,
    ExperimentResult,
    VariantSuite,
)
from assay.results.run import RunSummary
from assay.results.safe_text import md_text
from assay.results.suite import (
    CriterionAggregate,
    CriterionStat,
    DatasetRecord,
    IntervalRecord,
    SuiteRollup,
)


def fmt_metric(name: str, value: float | None) -> str:
    """A metric's value: counts (``count``, ``…_count``) as integers, the rest by :func:`fmt`."""
    if value is not None and (name == "count" or name.endswith("_count")) and value == int(value):
        return str(int(value))
    return fmt(value)


def code(text: str) -> str:
    """``text`` as a Markdown code span that survives backticks, table pipes and line breaks
    (each shown as ``⏎``: a newline would end the table row)."""
    text = text.replace("|", "\\|").replace("\r\n", "⏎").replace("\n", "⏎").replace("\r", "⏎")
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _percent(numerator: int, denominator: int) -> str:
    if not denominator:
        return "— (no graded rows)"
    return f"{100 * numerator / denominator:.1f}% ({numerator}/{denominator})"


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def render_suite(suite: SuiteRollup) -> str:
    """The Markdown report of one suite."""
    out = [f"# Suite Rollup: {md_text(suite.suite_id)}", ""]
    out.append(f"**Variant**: `{suite.variant_id}`")
    out.append(
        f"**Rows**: {suite.rows_total} total — {suite.rows_passed} passed, "
        f"{suite.rows_failed} failed, {suite.rows_error} errored"
        + (f", {suite.rows_refused} refused" if suite.rows_refused else "")
        + (f", {suite.rows_not_graded} not graded" if suite.rows_not_graded else "")
        + (f", {suite.rows_missing} never ran" if suite.rows_missing else "")
    )
    if suite.rows_missing:
        out.append(
            f"**Incomplete**: {suite.rows_missing} planned row(s) never ran (an interrupted "
            "run); the suite cannot pass until `assay run --resume` finishes them."
        )
    if suite.selection is not None and suite.selection.applied:
        out.append(
            f"**Selection**: {suite.selection.rows_selected} of "
            f"{suite.selection.rows_in_dataset} rows ({', '.join(suite.selection.applied)})"
        )
    out.append(f"**Pass rate**: {_percent(suite.rows_passed, suite.rows_graded)}"
               + _outside(suite))  # fmt: skip
    if "pass_rate" in suite.intervals:
        out.append(f"**Pass rate 95% CI**: {interval_text(suite.intervals['pass_rate'])}"
                   + _clustered_by(suite.cluster_field))  # fmt: skip
    out.append(
        f"**Refusal rate**: {_percent(suite.rows_refused, suite.rows_graded + suite.rows_refused)}"
        " of the rows answered"
    )
    out.append(f"**Average weighted score**: {fmt(suite.average_weighted_score)} (graded rows)")
    if suite.stopped_early:
        why = ", ".join(f"{reason} {count}" for reason, count in suite.stopped_early.items())
        out.append(f"**Stopped early**: {sum(suite.stopped_early.values())} row(s), graded as "
                   f"their agent left them ({why})")  # fmt: skip
    out += [f"**Warning**: {md_text(warning)}" for warning in suite.warnings]
    names = suite.criterion_names()
    out += ["", "## Criterion stats", ""]
    out += md_table(
        ["Criterion", "Rows graded", "Avg score", "Errors", "Refused"],
        [
            [code(_stat_name(s, names)), str(s.rows_evaluated), fmt(s.average_score),
             str(s.error_count), str(s.refused_count)]
            for s in suite.criterion_stats
        ],
    )  # fmt: skip
    for aggregate, name in zip(suite.criterion_aggregates, names, strict=True):
        out += ["", *_aggregate_section(aggregate, name)]
    if suite.per_replicate:
        out += ["", *_replicates_section(suite)]
    out += [
        "",
        f"**Suite gate**: {gate_text(suite)}",
        f"**Result**: {suite.verdict}"
        + (f" — {md_text('; '.join(suite.result_reasons))}" if suite.result_reasons else ""),
    ]
    if suite.failed_samples:
        out += ["", *_failed_section(suite)]
    return "\n".join(out) + "\n"


def interval_text(found: IntervalRecord) -> str:
    """``[0.41, 0.72] (cluster exact, 24 values in 12 clusters)``, or why there is none."""
    if found.value is None:
        return f"— ({md_text(found.reason or 'no value')})"
    where = f"{found.observations} values in {found.clusters} clusters"
    if found.low is None or found.high is None:
        return f"none ({md_text(found.reason or 'no interval')}; {where})"
    return f"[{fmt(found.low)}, {fmt(found.high)}] ({found.method}, {where})"


def _clustered_by(cluster_field: str | None) -> str:
    if cluster_field is None:
        return "; each row with its replicates is one cluster"
    return f"; rows clustered by {code(cluster_field)}, a row's replicates together"


def gate_text(suite: SuiteRollup) -> str:
    """``PASSED``, ``FAILED``, or ``no gate (no suite_thresholds)``."""
    if suite.gate == "none":
        return "no gate (no suite_thresholds: every row must succeed)"
    return suite.gate.upper()


def _outside(suite: SuiteRollup) -> str:
    """What the pass rate leaves out, said next to it."""
    parts = [f"{suite.rows_error} errored"] if suite.rows_error else []
    parts += [f"{suite.rows_refused} refused"] if suite.rows_refused else []
    parts += [f"{suite.rows_not_graded} not graded"] if suite.rows_not_graded else []
    parts += [f"{suite.rows_missing} never ran"] if suite.rows_missing else []
    return f"; outside it: {', '.join(parts)}" if parts else ""


def _replicates_section(suite: SuiteRollup) -> list[str]:
    """Each replicate's counts and metrics, then pass@k / pass^k over rows."""
    kinds = suite.criterion_names()
    first = suite.per_replicate[0].criterion_metrics
    columns = [(i, name) for i, metrics in enumerate(first) for name in metrics]
    header = [
        "replicate",
        "passed / graded",
        "pass rate",
        *[f"{kinds[i] if i < len(kinds) else i} {name}" for i, name in columns],
    ]
    rows = [[f"{r.replicate_index:02d}", f"{r.rows_passed} / {r.rows_graded}", fmt(r.pass_rate),
             *[fmt(r.criterion_metrics[i].get(name)) if i < len(r.criterion_metrics) else "—"
               for i, name in columns]]
            for r in suite.per_replicate]  # fmt: skip
    out = [f"## Replicates ({suite.replicates})", "", *md_table(header, rows)]
    if suite.pass_k:
        out += [
            "",
            "pass@k / pass^k (Chen et al. 2021; rows with at least k graded "
            "replicates): " + _pass_k(suite.pass_k),
        ]
        out += _uneven_note(suite)
    return out


def _uneven_note(suite: SuiteRollup) -> list[str]:
    """Why the pass rate and pass@1 differ: replicates graded unevenly across rows."""
    first = suite.pass_k.get("1", {}).get("pass_at_k")
    if first is None or suite.pass_rate is None or abs(first - suite.pass_rate) < 1e-9:
        return []
    return ["", f"The pass rate ({fmt(suite.pass_rate)}) pools every graded replicate, so a row "
            f"with more graded replicates weighs more; pass@1 ({fmt(first)}) is the mean of the "
            "rows' pass fractions, each row once. They differ because rows lost different "
            "numbers of replicates to errors or refusals."]  # fmt: skip


def _pass_k(values: Mapping[str, Mapping[str, Any]]) -> str:
    """``k=1: 0.800 / 0.800, …``; each k's row count too when they differ (a row with fewer
    graded replicates than k is left out of that k, so the k are over different rows)."""
    counts = {v.get("rows") for v in values.values()}
    return ", ".join(
        f"k={k}: {fmt(v['pass_at_k'])} / {fmt(v['pass_hat_k'])}"
        + (f" ({v.get('rows')} rows)" if len(counts) > 1 else "")
        for k, v in values.items()
    )


def _stat_name(stat: CriterionStat, names: Sequence[str]) -> str:
    """A ``criterion_stats`` line's name (:meth:`SuiteRollup.criterion_names`)."""
    index = stat.criterion_index
    return names[index] if index < len(names) else stat.criterion_type


def _aggregate_section(agg: CriterionAggregate, name: str) -> list[str]:
    state = ("PASSED" if agg.passed else "FAILED") if agg.threshold_checks else "no thresholds"
    out = [f"## Aggregate metrics — {code(name)} ({state})", ""]
    if agg.description:
        out += [f"_{agg.description}_", ""]
    if agg.rows_excluded:
        used = agg.rows_total - agg.rows_excluded
        counted = [f"{agg.details[k]} {what}" for k, what in
                   (("criterion_errors", "criterion error(s)"), ("refused", "refused"))
                   if agg.details.get(k)]  # fmt: skip
        out += [
            f"_Denominator: {used}/{agg.rows_total} rows ({agg.rows_excluded} excluded: "
            "errored, refused, not graded, not run, or the criterion could not evaluate"
            + (f"; {', '.join(counted)}" if counted else "")
            + ")_",
            "",
        ]
    if agg.error:
        out += [f"**Error**: {md_text(agg.error)}", ""]
    out += md_table(["metric", "value"],
                    [[code(k), fmt_metric(k, v)] for k, v in agg.metrics.items()])  # fmt: skip
    if agg.intervals:
        out += ["", "95% intervals (each names its method): " + "; ".join(
            f"{code(k)} {interval_text(v)}" for k, v in agg.intervals.items())]  # fmt: skip
    if agg.undefined_metrics:
        out += ["", "Undefined (—):"]
        out += [f"- {code(k)}: {md_text(why)}" for k, why in agg.undefined_metrics.items()]
    if agg.threshold_checks:
        out += ["", "### Thresholds", ""]
        out += md_table(
            ["metric", "minimum", "actual", "passed"],
            [
                [code(c.metric) + ("" if c.bound == "point" else " (95% lower bound)"),
                 _threshold(c.metric, c.min_value, c.actual_value),
                 _threshold(c.metric, c.actual_value, c.min_value), "✓" if c.passed else "✗"]
                for c in agg.threshold_checks
            ],
        )  # fmt: skip
        notes = [f"- {code(c.name)}: {md_text(c.note)}" for c in agg.threshold_checks if c.note]
        out += ["", *notes] if notes else []
    rate = agg.intervals.get("pass_rate")
    out += judge_lines(agg, interval=interval_text(rate) if rate is not None else "", rate=rate)
    out += _classification_sections(agg.details)
    return out


def _threshold(metric: str, value: float | None, other: float | None) -> str:
    if metric == "count":
        return fmt_metric(metric, value)
    return fmt_close(value, other)


def _classification_sections(details: dict[str, Any]) -> list[str]:
    if "per_label" not in details:
        return []
    out = ["", "### Per-label breakdown", ""]
    out += md_table(
        ["label", "precision", "recall", "f1", "support"],
        [
            [code(p["label"]), fmt(p["precision"]), fmt(p["recall"]), fmt(p["f1"]),
             str(p["support"])]
            for p in details["per_label"]
        ],
    )  # fmt: skip
    labels: list[str] = details["labels"]
    cells = {(c["expected"], c["observed"]): c["count"] for c in details["confusion"]}
    out += ["", "### Confusion matrix", ""]
    out += md_table(
        ["expected \\\\ observed", *[code(label) for label in labels]],
        [[code(e), *[str(cells.get((e, o), 0)) for o in labels]] for e in labels],
    )
    return out


def _failed_section(suite: SuiteRollup) -> list[str]:
    out = [f"## Failed/errored samples (up to {FAILED_SAMPLE_LIMIT})"]
    if suite.failed_samples_total > len(suite.failed_samples):
        out.append(f"_{len(suite.failed_samples)} of {suite.failed_samples_total} shown._")
    prefix = f"{suite.variant_id}/{suite.suite_id}/"
    for sample in suite.failed_samples:
        out += ["", f"### `{sample.task_id}` — {sample.final_status}"]
        out.append(f"- score: {fmt(sample.weighted_score)}")
        if sample.error_message:
            out.append(f"- error: {md_text(sample.error_message)}")
        out += [f"- {md_text(reason)}" for reason in sample.failure_reasons]
        if sample.answer is not None:
            out.append(f"- answered: {code(sample.answer)}")
        if sample.expected is not None:
            out.append(f"- expected: {code(sample.expected)}")
        link = sample.task_json_relpath.removeprefix(prefix)
        out.append(f"- [task.json](./{link})")
    return out


def render_run(summary: RunSummary) -> str:
    """The Markdown summary of one run."""
    out = [f"# Run {summary.run_id}", ""]
    out.append(f"**Stage**: {summary.stage} · **Duration**: {summary.total_duration_seconds:.1f} s"
               f" · **Parallel**: {summary.max_parallel}")  # fmt: skip
    out.append(
        f"**Rows**: {summary.tasks_run} run — {summary.tasks_succeeded} passed, "
        f"{summary.tasks_failed} failed, {summary.tasks_error} errored"
        + (f", {summary.tasks_refused} refused" if summary.tasks_refused else "")
        + (f", {summary.tasks_not_graded} not graded" if summary.tasks_not_graded else "")
    )
    out.append(
        f"**Pass rate**: {fmt(summary.pass_rate)} micro (passed / graded, rows pooled over "
        f"every suite) · {fmt(summary.pass_rate_macro)} macro (mean of the suites' pass rates"
        + _left_out(summary.pass_rate_macro_left_out)
        + ")"
    )
    if summary.interrupted:
        out.append("**Interrupted**: the run stopped early; finished rows are kept.")
    out += _usage_lines(summary)
    out.append(f"**Exit code**: {summary.exit_code}")
    if summary.suites:
        out += ["", "## Suites", ""]
        out += md_table(
            ["variant", "suite", "gate", "result", "why", "report"],
            [
                [f"`{s.variant_id}`", f"`{s.suite_id}`",
                 "no gate" if s.gate == "none" else s.gate.upper(),
                 s.verdict, md_text("; ".join(s.reasons)) or "—",
                 f"[suite.md](./{s.suite_json[:-4]}md)"]
                for s in summary.suites
            ],
        )  # fmt: skip
    if summary.judges:
        out += ["", "**Judges**: " + ", ".join(
            f"`{j['name']}{'@' + str(j['version']) if j.get('version') is not None else ''}` "
            f"(sha256 `{str(j['content_hash'])[:12]}`)" for j in summary.judges)]  # fmt: skip
    standalone = [t for t in summary.task_results if t.suite_id is None]
    if standalone:
        out += ["", "## Tasks without a dataset", ""]
        out += md_table(
            ["task", "variant", "status", "score"],
            [[f"`{t.task_id}`", f"`{t.variant_id}`", t.final_status, fmt(t.weighted_score)]
             for t in standalone],
        )  # fmt: skip
    if summary.skipped_tasks:
        out += ["", "## Skipped", ""]
        out += [f"- `{s.path}`: {md_text(s.reason)}" for s in summary.skipped_tasks]
    if summary.warnings:
        out += ["", "## Warnings", ""]
        out += [f"- {w}" for w in summary.warnings]
    if summary.secret_findings:
        out += ["", "## Secrets found", "",
                "Remove these files (or the secret in them) before sharing this folder; "
                "the run exits 1.", ""]  # fmt: skip
        out += [f"- `{f.render().partition(': ')[0]}`: {f.kind}" for f in summary.secret_findings]
    return "\n".join(out) + "\n"


def _usage_lines(summary: RunSummary) -> list[str]:
    """Tokens and cost, and where usage was not counted by assay itself."""
    usage = summary.total_token_usage
    cached = ([f"**Cache**: {summary.rows_from_cache} row(s) got answers from the response "
               "cache (no model call made for those; their tokens and cost are the cached "
               "calls')"]
              if summary.rows_from_cache else [])  # fmt: skip
    unknown = ([f"**Usage unknown**: {summary.rows_usage_unknown} row(s) were answered "
                "without the model reporting its usage: their tokens and cost are not in the "
                "totals"] if summary.rows_usage_unknown else [])  # fmt: skip
    judges = [_judges_line(summary)] if summary.judge_tokens else []
    if usage is None or not usage.total_tokens:
        return cached + unknown + judges
    cost = "—" if summary.total_cost_usd is None else f"${summary.total_cost_usd:.4f}"
    lines = [f"**Tokens**: {usage.total_tokens:,} ({usage.input_tokens:,} in, "
             f"{usage.output_tokens:,} out) · **Cost**: {cost}"
             + ("" if summary.cost_complete else " (some rows could not be priced)")]  # fmt: skip
    lines += unknown + judges
    simulated = summary.simulator_input_tokens + summary.simulator_output_tokens
    if simulated:
        paid = ("—" if summary.simulator_cost_usd is None
                else f"${summary.simulator_cost_usd:.4f}")  # fmt: skip
        lines.append(f"**Simulated users** (dialog mode, apart from the above): {simulated:,} "
                     f"tokens ({summary.simulator_input_tokens:,} in, "
                     f"{summary.simulator_output_tokens:,} out) · **Cost**: {paid}")  # fmt: skip
    if summary.rows_usage_from_cli:
        lines.append(f"**Usage source**: for {summary.rows_usage_from_cli} row(s) the coding "
                     "agent ran with route: direct, so their tokens and cost are what the CLI "
                     "reported, not counted by assay's model bridge.")  # fmt: skip
    return lines + cached


def _judges_line(summary: RunSummary) -> str:
    """The LLM and agent judges' tokens and cost, apart from the agents'."""
    cost = "—" if summary.judge_cost_usd is None else f"${summary.judge_cost_usd:.4f}"
    unpriced = summary.judge_results_unpriced
    return (f"**Judges** (apart from the above): {summary.judge_tokens:,} tokens · **Cost**: "
            f"{cost}" + (f" ({unpriced} verdict(s) of a judge model without a price are not "
                         "in it)" if unpriced else ""))  # fmt: skip


def _estimate(value: Estimate | None) -> str:
    if value is None:
        return "—"
    if value.low is None or value.high is None:
        return fmt(value.value) + (f" ({md_text(value.reason)})" if value.reason else "")
    return f"{fmt(value.value)} [{fmt(value.low)}, {fmt(value.high)}]{_clusters(value.clusters)}"


def _clusters(count: int | None) -> str:
    return "" if count is None else f" ({count} clusters)"


def _difference(diff: Difference) -> str:
    if diff.difference is None:
        return "—"
    sign = "+" if diff.difference >= 0 else ""
    if diff.low is None or diff.high is None:
        return f"{sign}{fmt(diff.difference)} ({md_text(diff.reason or 'no interval')})"
    return (f"{sign}{fmt(diff.difference)} [{fmt(diff.low)}, {fmt(diff.high)}]"
            f"{_clusters(diff.clusters)}")  # fmt: skip


def render_experiment(report: ExperimentResult) -> str:
    """The Markdown report of an experiment (or of ``assay compare``)."""
    out = [f"# Experiment {report.experiment_id}", ""]
    if report.description:
        out += [report.description, ""]
    out.append("Variants: " + ", ".join(f"`{v}`" for v in report.variant_ids))
    stopped = bool(report.stopping and report.stopping.get("stopped"))
    out.append(("This run stopped when decided: the decision and its confidence sequence "
                "below hold; the tables' intervals are fixed-sample ones, for reference. "
                if stopped else "")
               + "Intervals are 95% and cluster-robust (a row's replicates are one cluster, and "
               "so are the rows that share the dataset's `cluster_field`): CR1 standard errors "
               "with a t interval on clusters − 1 degrees of freedom (`cluster t`); a rate on "
               f"fewer than {MIN_CLUSTERS} clusters gets the exact Korn–Graubard interval "
               "(`cluster exact`); F1 a bootstrap over clusters.")  # fmt: skip
    if report.stopping is not None:
        out += ["", *_stopping_lines(report.stopping)]
    suites = list(dict.fromkeys(v.suite_id for v in report.variants))
    for suite in suites:
        arms = [v for v in report.variants if v.suite_id == suite]
        out += ["", f"## Suite `{suite}` ({_suite_rows(arms)})", ""]
        out += _datasets_lines(report, suite)
        names = list(dict.fromkeys(m for arm in arms for m in arm.metrics))
        out += md_table(
            ["metric", *[f"`{a.variant_id}`" for a in arms]],
            [[f"`{n}`", *[_estimate(a.metrics.get(n)) for a in arms]] for n in names],
        )
        for arm in arms:
            if arm.pass_k:
                out += [
                    "",
                    f"pass@k / pass^k for `{arm.variant_id}` ({arm.replicates} "
                    "replicates): " + _pass_k(arm.pass_k),
                ]
        replicates = max(a.replicates for a in arms)
        stopped = bool(report.stopping and report.stopping.get("stopped"))
        for comparison in (c for c in report.comparisons if c.suite_id == suite):
            out += ["", *_comparison_section(comparison, replicates, report.adjustment,
                                             report.alpha, stopped=stopped)]  # fmt: skip
    return "\n".join(out) + "\n"


def _suite_rows(arms: list[VariantSuite]) -> str:
    """``60 rows``, or the rows that ran when some did not: ``11 of 60 rows`` (every variant
    the same) or ``4 with `good`, 3 with `bad`, of 60 rows``."""
    total = arms[0].rows
    ran = [total if a.rows_ran is None else a.rows_ran for a in arms]
    if all(n == total for n in ran):
        return f"{total} rows"
    if len(set(ran)) == 1:
        return f"{ran[0]} of {total} rows"
    each = ", ".join(f"{n} with `{a.variant_id}`" for n, a in zip(ran, arms, strict=True))
    return f"{each}, of {total} rows"


def _stopping_lines(stop: dict[str, Any]) -> list[str]:
    """The "Stopped when decided" section of an experiment run with ``experiment.stop``."""
    head = "Stopped when decided" if stop.get("stopped") else "Ran every row (never decided)"
    items, planned = stop.get("items_scheduled", 0), stop.get("items_planned", 0)
    saved = f" ({1 - items / planned:.0%} fewer)" if planned and stop.get("stopped") else ""
    return [
        f"## {head}", "",
        f"{md_text(str(stop.get('reason', '')))}.",
        f"Rows scheduled: {stop.get('rows_scheduled')} of {stop.get('rows_planned')}; items "
        f"(row × variant × replicate) {items} of {planned}{saved}; model calls "
        f"{stop.get('model_calls')}. The fixed design would have run all {planned} items.",
    ]  # fmt: skip


def dataset_text(record: DatasetRecord | None) -> str:
    """``sst2@3 (hash 1a2b3c4d5e6f)``, ``rows.jsonl (hash …)`` or ``unknown``."""
    if record is None:
        return "unknown (not recorded)"
    if record.store is not None:
        name = f"store {record.store}@{record.version}"
    elif record.paths:
        name = ", ".join(record.paths)
    else:
        name = "inline rows"
    digest = f" (hash {record.content_hash[:12]})" if record.content_hash else " (no hash recorded)"
    return name + digest


def _datasets_lines(report: ExperimentResult, suite: str) -> list[str]:
    """What each arm read, and the rows left out because their content differs."""
    out = []
    arms = [d for d in report.datasets if d.suite_id == suite]
    if arms:
        out += [f"Dataset of `{d.variant_id}`: {dataset_text(d.dataset)}" for d in arms]
        hashes = {d.dataset.content_hash if d.dataset else None for d in arms}
        if len(hashes) > 1:
            out.append("**The arms read different datasets**: only rows whose content is the "
                       "same in both are compared.")  # fmt: skip
    excluded = report.excluded_rows.get(suite, [])
    if excluded:
        shown = ", ".join(f"`{i}`" for i in excluded[:20])
        more = f" and {len(excluded) - 20} more" if len(excluded) > 20 else ""
        out.append(f"**{len(excluded)} row(s) left out of every metric and paired statistic**: "
                   f"their content differs between the arms ({shown}{more}).")  # fmt: skip
    return [*out, ""] if out else []


def _p_text(p_value: float | None, adjusted: float | None, survives: bool | None) -> str:
    if p_value is None:
        return "—"
    return format_p(p_value) + _p_after(adjusted, survives)


def _p_after(adjusted: float | None, survives: bool | None) -> str:
    after = "" if adjusted is None else f" → {format_p(adjusted)}"
    verdict = "" if survives is None else (" ✓ survives" if survives else " ✗")
    return after + verdict


def _comparison_section(
    c: Comparison,
    replicates: int,
    adjustment: str = "holm",
    alpha: float = 0.05,
    *,
    stopped: bool = False,
) -> list[str]:
    out = [f"### `{c.variant_b}` vs `{c.variant_a}`", ""]
    out += md_table(
        ["metric", f"`{c.variant_a}`", f"`{c.variant_b}`", "difference [95% CI]",
         f"p → {adjustment}-adjusted"],
        [[f"`{n}`", fmt(d.a), fmt(d.b), _difference(d), _p_text(d.p_value, d.p_adjusted,
                                                                   d.survives)]
         for n, d in c.metrics.items()],
    )  # fmt: skip
    notes = [f"- `{n}`: {md_text(d.note)}" for n, d in c.metrics.items() if d.note]
    out += ["", *notes] if notes else []
    test = c.mcnemar
    out += [
        "",
        f"McNemar (exact, per-row pass/fail): {test.a_only} row(s) pass only with "
        f"`{c.variant_a}`, {test.b_only} only with `{c.variant_b}`; "
        + p_clause(test.p_value)
        + _p_after(test.p_adjusted, test.survives),
        "",
        f"p-values: the clustered t test of each difference; adjusted ({adjustment}) over "
        f"every difference of this suite's pairs of variants and metrics (McNemar's over its "
        f"pairs); a difference survives when the adjusted p is at most {alpha:g}."
        if not stopped else
        "This run stopped when decided: its rows ran until the test decided, so these "
        "fixed-sample intervals and p-values do not hold (shown for reference, no verdict); "
        "the decision and its confidence sequence above do.",
    ]  # fmt: skip
    if c.sequential is not None and not stopped:  # a stopped run states its own decision
        seq = c.sequential
        saved = ("; it would not have stopped early" if seq.decision == "undecided" else
                 f"; a run that stops when decided would have run {seq.rows} of {seq.of_rows} "
                 f"{seq.unit} ({1 - seq.rows / seq.of_rows:.0%} fewer)")  # fmt: skip
        out += ["", f"Anytime-valid replay ({seq.unit} in a seeded random order, betting test "
                f"at {seq.alpha:g}): {md_text(seq.reason)}{saved}."]  # fmt: skip
    rate = c.metrics.get("pass_rate")
    if stopped:  # rows ran until decided: a fixed design's power says nothing of them
        rate = None
    if rate is not None and rate.detectable is not None and rate.detectable > 1:
        out += ["", f"Achieved power: these {c.rows} rows ({rate.clusters} clusters) are too "
                "few to detect any pass-rate difference with 80% power at 0.05 (the smallest "
                f"detectable, {fmt(rate.detectable)}, is more than a difference of rates can "
                "be; `assay plan --power` plans the rows)."]  # fmt: skip
    elif rate is not None and rate.detectable is not None:
        out += ["", f"Achieved power: these {c.rows} rows ({rate.clusters} clusters) detect a "
                f"pass-rate difference of {fmt(rate.detectable)} or more with 80% power at "
                "0.05 (`assay plan --power` plans the rows for a smaller one)."]  # fmt: skip
    if replicates > 1:
        out += ["", "With replicates, a row passes when more than half of its graded "
                "replicates passed; the links go to its first replicate."]  # fmt: skip
    groups = [
        ("became passes", c.became_pass, c.became_pass_total),
        ("became failures", c.became_fail, c.became_fail_total),
    ]
    for title, rows, total in groups:
        if rows:
            shown = f" (first {len(rows)} of {total})" if total > len(rows) else ""
            out += ["", f"Rows that {title} with `{c.variant_b}`{shown}:"]
            out += [f"- `{r.row_id}`: [{c.variant_a}](./{r.a_task_json}), "
                    f"[{c.variant_b}](./{r.b_task_json})" for r in rows]  # fmt: skip
    return out


def _left_out(names: list[str]) -> str:
    """Which suites a macro pass rate left out (they graded no row), or nothing."""
    if not names:
        return ""
    shown = ", ".join(f"`{n}`" for n in names)
    return f"; left out, no graded row: {shown}"
