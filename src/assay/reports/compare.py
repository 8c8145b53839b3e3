"""Two runs over the same rows, compared row by row (``assay compare RUN_A RUN_B``,
:func:`assay.compare`).

Every suite present in both runs is compared (each run's single variant; with several
variants, pass ``--variant``). The rows must be the same in both: otherwise the comparison is
refused, naming the ids that differ. The report is the same as an experiment's comparison
(intervals, paired differences, McNemar's exact test, flipped rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from assay.errors import UsageError
from assay.reports.experiment import build_experiment
from assay.reports.markdown import render_experiment
from assay.reports.writer import task_json_relpath
from assay.results.experiment import ExperimentResult
from assay.results.io import write_json_atomic, write_text_atomic
from assay.results.task_result import EvaluationResult

SHOWN_IDS = 10


def _only_variant(
    results: Sequence[EvaluationResult], run: Path, variant: str | None, flag: str
) -> str:
    variants = sorted({r.variant_id for r in results})
    if variant is not None:
        if variant not in variants:
            raise UsageError(f"{run} has no variant '{variant}'; it has {variants}")
        return variant
    if len(variants) != 1:
        raise UsageError(f"{run} has variants {variants}; choose one with {flag} NAME")
    return variants[0]


def _rows(results: Sequence[EvaluationResult]) -> dict[str, set[str]]:
    rows: dict[str, set[str]] = {}
    for result in results:
        if result.suite_id is not None and result.row_id is not None:
            rows.setdefault(result.suite_id, set()).add(result.row_id)
    return rows


def check_same_rows(a: dict[str, set[str]], b: dict[str, set[str]]) -> list[str]:
    """The suites both runs share, after checking they cover identical rows.

    Raises:
        UsageError: no suite in common, or a shared suite whose row ids differ (the first
            ids that differ are named).
    """
    shared = sorted(set(a) & set(b))
    if not shared:
        raise UsageError("the two runs have no suite in common")
    for suite in shared:
        only_a, only_b = sorted(a[suite] - b[suite]), sorted(b[suite] - a[suite])
        if only_a or only_b:
            raise UsageError(
                f"suite '{suite}' has different rows in the two runs: only in A "
                f"{only_a[:SHOWN_IDS]} ({len(only_a)}), only in B {only_b[:SHOWN_IDS]} "
                f"({len(only_b)}); a comparison needs the same rows",
                hint="run both on the same selection (--sample is seeded; pin sample_seed)",
            )
    return shared


def compare_runs(
    run_a: Path,
    results_a: Sequence[EvaluationResult],
    run_b: Path,
    results_b: Sequence[EvaluationResult],
    *,
    variant_a: str | None = None,
    variant_b: str | None = None,
) -> ExperimentResult:
    """Compare run B with run A; see the module docstring.

    Raises:
        UsageError: an ambiguous or unknown variant, no shared suite, or different rows.
    """
    va = _only_variant(results_a, run_a, variant_a, "--variant-a")
    vb = _only_variant(results_b, run_b, variant_b, "--variant-b")
    kept_a = [r for r in results_a if r.variant_id == va and r.suite_id is not None]
    kept_b = [r for r in results_b if r.variant_id == vb and r.suite_id is not None]
    shared = check_same_rows(_rows(kept_a), _rows(kept_b))
    name_a = f"A:{run_a.name}"
    name_b = f"B:{run_b.name}"
    arms: list[EvaluationResult] = []
    paths: dict[int, str] = {}
    for run, kept, name in ((run_a, kept_a, name_a), (run_b, kept_b, name_b)):
        for result in kept:
            if result.suite_id not in shared:
                continue
            copy = result.model_copy(update={"variant_id": name})
            paths[id(copy)] = (run / task_json_relpath(result)).as_posix()
            arms.append(copy)
    order = {r.row_id: (r.row_index or 0) for r in kept_a}
    row_ids = {s: sorted(_rows(kept_a)[s], key=lambda i: (order.get(i, 0), i)) for s in shared}
    return build_experiment(arms, paths, experiment_id=f"{run_b.name} vs {run_a.name}",
                            description=f"A = {run_a}, B = {run_b}",
                            variant_ids=[name_a, name_b], row_ids=row_ids)  # fmt: skip


def render_comparison(report: ExperimentResult) -> str:
    """The comparison as Markdown (links are paths from the working directory)."""
    return render_experiment(report).replace("](./", "](")


def write_comparison(folder: Path, report: ExperimentResult) -> None:
    """Write ``compare.json`` and ``compare.md`` into ``folder`` (created if needed)."""
    write_json_atomic(folder / "compare.json", report)
    write_text_atomic(folder / "compare.md", render_comparison(report))
