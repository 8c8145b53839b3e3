"""``assay.power``: rows per variant for a paired difference, from an earlier run or from
stated assumptions (``assay plan --power DELTA``)."""

from __future__ import annotations

from pathlib import Path

from assay.errors import UsageError
from assay.reports.power import PowerPlan, assumed_design, measured_design, power_plan


def power(
    delta: float,
    *,
    rows_planned: int | None = None,
    baseline_run: str | Path | None = None,
    suite: str | None = None,
    alpha: float = 0.05,
    target_power: float = 0.8,
    correlation: float | None = None,
    baseline_rate: float | None = None,
    cluster_size: float = 1.0,
    icc: float = 0.0,
    replicates: int = 1,
) -> PowerPlan:
    """Rows per variant to detect a paired difference ``delta`` in a suite's pass rate, and
    for ``rows_planned`` rows the achieved power and minimum detectable effect.

    Args:
        delta: the difference to detect, as a fraction (0.05 is five points).
        rows_planned: the rows per variant of the run as planned.
        baseline_run: an earlier run of the same task: its variances, pairing correlation
            (two variants) and clusters (its recorded ``cluster_field``) are measured.
        suite: the suite of ``baseline_run`` (needed when it has several).
        alpha: the two-sided level.
        target_power: the power wanted.
        correlation: the pairing correlation, when it is not measured (one variant, or no run).
        baseline_rate: without a run, the pass rate assumed in both arms.
        cluster_size: without a run, the rows per cluster.
        icc: without a run, the rows' intra-cluster correlation (design effect
            ``1 + (m - 1)·icc``).
        replicates: replicates per row planned.

    Raises:
        UsageError: neither a baseline run nor a baseline rate; a bad value (named).
    """
    from assay.results.run_folder import load_run_results, resolve_run_dir

    if replicates < 1:
        raise UsageError(f"replicates must be at least 1, got {replicates}")
    if not 0 < delta <= 1:
        raise UsageError(f"--power must be a pass-rate difference in (0, 1], got {delta:g}",
                         hint="0.05 is five points")  # fmt: skip
    try:
        if baseline_run is not None:
            folder = resolve_run_dir(baseline_run)
            results = load_run_results(folder)
            field = _cluster_field(folder, suite)
            design, source = measured_design(results, suite_id=suite, cluster_field=field,
                                             correlation=correlation, replicates=replicates,
                                             run_name=folder.name)  # fmt: skip
        elif baseline_rate is not None:
            design, source = assumed_design(rate=baseline_rate, correlation=correlation or 0.0,
                                            cluster_size=cluster_size, icc=icc)  # fmt: skip
        else:
            raise UsageError("--power needs a baseline: --baseline-run RUN_DIR (an earlier run "
                             "of the task) or --baseline-rate P (with --correlation)")  # fmt: skip
        return power_plan(delta, design, source=source, rows_planned=rows_planned, alpha=alpha,
                          power=target_power, replicates=replicates)  # fmt: skip
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def _cluster_field(folder: Path, suite: str | None) -> str | None:
    """The ``cluster_field`` the baseline run recorded for the suite (``None``: by row)."""
    from assay.results.run_file import read_summary

    path = folder / "run.json"
    if not path.is_file():
        return None
    summary = read_summary(path)
    chosen = [s for s in summary.selections if suite is None or s.task_id == suite]
    return chosen[0].dataset.cluster_field if len(chosen) == 1 else None
