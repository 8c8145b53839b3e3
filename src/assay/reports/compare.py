"""Two runs over the same rows, compared row by row (``assay compare RUN_A RUN_B``,
:func:`assay.compare`).

Every suite present in both runs is compared (each run's single variant; with several
variants, ``--variant-a``/``--variant-b`` choose). The row ids must be the same in both:
otherwise the comparison is refused, naming the ids that differ and why the selections differ
(sample sizes, splits, seeds, dataset versions). The report is an experiment's comparison
(intervals, paired differences, McNemar's exact test, flipped rows) and states each side's
dataset (version and content hash); a row whose content differs between the runs (a gold label
edited between them, say) is flagged and left out of every paired statistic, never silently
paired (:func:`assay.reports.experiment.build_experiment`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from assay.errors import UsageError
from assay.reports.experiment import build_experiment
from assay.reports.judged import add_judged_differences
from assay.reports.markdown import render_experiment
from assay.reports.writer import task_json_relpath
from assay.results.experiment import ArmDataset, ExperimentResult
from assay.results.io import Writer, read_json
from assay.results.plan_record import PLAN_FILE, PlanRecord
from assay.results.run import TaskSelection
from assay.results.run_file import read_summary
from assay.results.selection_file import listed_tasks
from assay.results.task_result import EvaluationResult, JudgeCriterionResult

SHOWN_IDS = 10


def recorded_selections(run_dir: Path) -> dict[str, TaskSelection]:
    """Task id → the dataset and selection the run recorded (``run.json``, else
    ``plan.json``); empty when neither can be read."""
    for name in ("run.json", PLAN_FILE):
        path = run_dir / name
        if not path.is_file():
            continue
        try:
            chosen = (read_summary(path).selections if name == "run.json"  # without its rows
                      else PlanRecord.model_validate(read_json(path)).selections())  # fmt: skip
        except (ValueError, OSError):
            continue
        return listed_tasks(run_dir, chosen)
    return {}


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


def selection_difference(a: TaskSelection | None, b: TaskSelection | None) -> str | None:
    """Why two runs selected different rows, from what they recorded (``None``: unknown)."""
    if a is None or b is None:
        return None
    sa, sb = a.selection, b.selection
    facts = [
        ("--sample", sa.sample, sb.sample),
        ("the stratified sample", sa.sample_per_stratum, sb.sample_per_stratum),
        ("--split", sa.split, sb.split),
        ("the stratified seed", sa.stratified_seed, sb.stratified_seed),
        ("the dataset version", a.dataset.version, b.dataset.version),
        ("the dataset's content hash", a.dataset.content_hash, b.dataset.content_hash),
        ("rows in the dataset", sa.rows_in_dataset, sb.rows_in_dataset),
    ]
    found = [f"{name}: A {va}, B {vb}" for name, va, vb in facts if va != vb]
    if not found:
        return None
    unseeded = [side for side, s in (("A", sa), ("B", sb)) if s.seed_was_drawn]
    if unseeded:
        found.append(f"{' and '.join(unseeded)} drew an unseeded stratified sample "
                     "(pin dataset.sample_seed)")  # fmt: skip
    return "; ".join(found)


def check_same_rows(
    a: dict[str, set[str]],
    b: dict[str, set[str]],
    selections: tuple[dict[str, TaskSelection], dict[str, TaskSelection]] = ({}, {}),
) -> list[str]:
    """The suites both runs share, after checking they cover identical rows.

    Raises:
        UsageError: no suite in common, or a shared suite whose row ids differ (the first
            ids that differ are named, and what differs in the recorded selections).
    """
    shared = sorted(set(a) & set(b))
    if not shared:
        raise UsageError("the two runs have no suite in common")
    for suite in shared:
        only_a, only_b = sorted(a[suite] - b[suite]), sorted(b[suite] - a[suite])
        if only_a or only_b:
            why = selection_difference(selections[0].get(suite), selections[1].get(suite))
            raise UsageError(
                f"suite '{suite}' has different rows in the two runs: only in A "
                f"{only_a[:SHOWN_IDS]} ({len(only_a)}), only in B {only_b[:SHOWN_IDS]} "
                f"({len(only_b)}); a comparison needs the same rows",
                hint=f"the runs' selections differ in {why}" if why else _same_selection(
                    only_a, only_b, recorded=suite in selections[0] and suite in selections[1]),
            )  # fmt: skip
    return shared


def _same_selection(only_a: list[str], only_b: list[str], *, recorded: bool) -> str:
    """What to do when the rows differ but the recorded selections do not: one run did not
    finish (interrupted, or rows that could not be saved)."""
    if recorded and not (only_a and only_b):
        short = "A" if only_b else "B"
        return (
            f"both selected the same rows, so run {short} did not finish them: `assay "
            f"run --resume {short}_RUN_DIR` runs the rest"
        )
    return (
        "run both on the same selection (the same --sample, --split and sample_seed, on "
        "the same dataset version)"
    )


def _label(side: str, run: Path, variant: str, *, same_run: bool, chosen: bool) -> str:
    """``A:<run>``, or ``A:<run>/<variant>`` when the variant tells the sides apart."""
    return f"{side}:{run.name}/{variant}" if same_run or chosen else f"{side}:{run.name}"


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
    recorded = (recorded_selections(run_a), recorded_selections(run_b))
    shared = check_same_rows(_rows(kept_a), _rows(kept_b), recorded)
    same_run = run_a.resolve() == run_b.resolve()
    name_a = _label("A", run_a, va, same_run=same_run, chosen=variant_a is not None)
    name_b = _label("B", run_b, vb, same_run=same_run, chosen=variant_b is not None)
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
    judges = judge_difference(kept_a, kept_b)
    row_ids = {s: sorted(_rows(kept_a)[s], key=lambda i: (order.get(i, 0), i)) for s in shared}
    datasets = [
        ArmDataset(variant_id=name, suite_id=suite,
                   dataset=selections[suite].dataset if suite in selections else None)
        for name, selections in ((name_a, recorded[0]), (name_b, recorded[1]))
        for suite in shared
    ]  # fmt: skip
    report = build_experiment(arms, paths, experiment_id=f"{run_b.name} vs {run_a.name}",
                              description=f"A = {run_a}, B = {run_b}" + judges,
                              variant_ids=[name_a, name_b], row_ids=row_ids,
                              datasets=datasets,
                              cluster_fields=_cluster_fields(datasets))  # fmt: skip
    sides = {name_a: (run_a, va), name_b: (run_b, vb)}

    def suite_file(name: str, suite: str) -> Path:
        run, variant = sides[name]
        return run / variant / suite / "suite.json"

    add_judged_differences(report, suite_file)
    return report


def _cluster_fields(datasets: Sequence[ArmDataset]) -> dict[str, str | None]:
    """Suite → the field that clusters its rows (run A's record first, else run B's)."""
    fields: dict[str, str | None] = {}
    for arm in datasets:
        if arm.dataset is not None and fields.get(arm.suite_id) is None:
            fields[arm.suite_id] = arm.dataset.cluster_field
    return fields


def _judges(results: Sequence[EvaluationResult]) -> set[str]:
    return {f"{item.judge.name}{'@' + str(item.judge.version) if item.judge.version else ''} "
            f"(sha256 {item.judge.content_hash[:12]})"
            for r in results for item in r.success_criteria_results
            if isinstance(item, JudgeCriterionResult)}  # fmt: skip


def judge_difference(a: Sequence[EvaluationResult], b: Sequence[EvaluationResult]) -> str:
    """A warning when the two runs were graded by different judges (a changed rubric, model
    or verdict is a different judge, so its numbers are not the old one's), else ``""``."""
    judges_a, judges_b = _judges(a), _judges(b)
    if judges_a == judges_b:
        return ""
    return (". WARNING: the runs were graded by different judges (A: "
            f"{', '.join(sorted(judges_a)) or 'none'}; B: {', '.join(sorted(judges_b)) or 'none'})"
            ": differences may come from the judge, not from what was judged")  # fmt: skip


def render_comparison(report: ExperimentResult) -> str:
    """The comparison as Markdown (links are paths from the working directory)."""
    return render_experiment(report).replace("](./", "](")


def write_comparison(folder: Path, report: ExperimentResult, *, writer: Writer) -> None:
    """Write ``compare.json`` and ``compare.md`` into ``folder`` (created if needed), through
    ``writer`` (its secrets redacted)."""
    writer.json(folder / "compare.json", report)
    writer.text(folder / "compare.md", render_comparison(report))


__all__ = [
    "check_same_rows",
    "compare_runs",
    "recorded_selections",
    "render_comparison",
    "write_comparison",
]
