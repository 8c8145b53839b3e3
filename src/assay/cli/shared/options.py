"""The options ``run``, ``execute`` and ``plan`` share, as typer annotations, and the plan
keywords they make."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

TaskArgs = Annotated[
    list[str] | None,
    typer.Argument(help="Task files, folders (searched recursively) or globs. Default: tasks/."),
]
Sample = Annotated[
    int | None,
    typer.Option("--sample", min=1, help="Run a uniform sample of N rows (fixed seed 0)."),
]
PerStratum = Annotated[
    int | None,
    typer.Option("--sample-per-stratum", min=1,
                 help="Keep up to N rows per stratum (dataset.stratify_field)."),
]  # fmt: skip
Split = Annotated[
    str | None, typer.Option("--split", help="Keep only rows whose split_field equals NAME.")
]
Tags = Annotated[
    str | None, typer.Option("--tags", "-t", help="Run tasks with any of these tags (a,b).")
]
ExcludeTags = Annotated[
    str | None, typer.Option("--exclude-tags", help="Skip tasks with any of these tags.")
]
IncludeSkipped = Annotated[
    bool, typer.Option("--include-skipped", help="Also run tasks marked skip: true.")
]
SkipUnsupported = Annotated[
    bool,
    typer.Option("--skip-unsupported", help="Leave out the criteria of a type assay does not have "
                 "(a newer Coder Eval's, a plugin not installed; each is named in a warning) "
                 "instead of refusing the file."),
]  # fmt: skip
Repeats = Annotated[
    int | None, typer.Option("--repeats", min=1, help="Replicates per row-task (00, 01, ...).")
]
Jobs = Annotated[
    int, typer.Option("--max-parallel", "-j", min=1, help="Row-tasks running at once.")
]
RunJobs = Annotated[
    int | None,
    typer.Option("--max-parallel", "-j", min=1, show_default=False,
                 help="Row-tasks running at once (default 4; with --resume, the run's own)."),
]  # fmt: skip
RunsRoot = Annotated[
    Path, typer.Option("--run-dir", help="Folder that receives runs/<timestamp>/.")
]
Junit = Annotated[
    Path | None, typer.Option("--junit-xml", help="Also write JUnit XML here (one case per row).")
]
Html = Annotated[
    bool,
    typer.Option("--html", help="Also write report.html: the run's figures and failed rows in "
                 "one file that opens with no server and no network."),
]  # fmt: skip
Keep = Annotated[
    bool,
    typer.Option("--keep-sandboxes",
                 help="Keep each row's sandbox in its run folder (for assay evaluate)."),
]  # fmt: skip
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress display.")]
ExperimentOpt = Annotated[
    str | None,
    typer.Option("--experiment", "-e", help="Experiment file, or NAME for experiments/NAME.yaml."),
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set", "-D", help="Override a task field: -D agent.temperature=0.7 (repeatable)."
    ),
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        help="Use this model in every variant whose agent takes one "
        "(agent.model; others are left as written, with a warning).",
    ),
]
StoreOpt = Annotated[
    str | None,
    typer.Option("--store", help="Dataset store URL (default $ASSAY_STORE or .assay/store.db)."),
]
Prices = Annotated[
    Path | None, typer.Option("--prices", help="YAML of model → {input_per_mtok, output_per_mtok}.")
]
MaxRetries = Annotated[
    int, typer.Option("--max-retries", min=0, help="Retries per model call (0 = none).")
]
Timeout = Annotated[
    float | None, typer.Option("--timeout", min=0.001, help="Seconds per model request.")
]
Cache = Annotated[bool, typer.Option("--cache", help="Cache model answers (.assay/cache.db).")]
CacheExpiry = Annotated[
    str | None, typer.Option("--cache-expiry", help="Ignore cached answers older than this (7d).")
]
Resume = Annotated[
    str | None,
    typer.Option("--resume", help="Finish an interrupted run (e.g. runs/latest); no task args."),
]
RetryErrors = Annotated[
    bool, typer.Option("--retry-errors", help="With --resume: run the rows that ended ERROR again.")
]
RerunChanged = Annotated[
    bool,
    typer.Option("--rerun-changed",
                 help="With --resume: run again exactly the rows whose dataset content changed."),
]  # fmt: skip
ExecutorOpt = Annotated[
    str,
    typer.Option("--executor", help="What runs the rows: local (this process) or ray (the "
                 "nodes of a Ray cluster, with the extra 'distributed')."),
]  # fmt: skip
RayAddress = Annotated[
    str | None,
    typer.Option("--ray-address", help="The Ray cluster (host:port or auto); default: a local "
                 "Ray instance started for the run."),
]  # fmt: skip
RayFiles = Annotated[
    str,
    typer.Option("--ray-files", help="ship (send the task folders to every node) or shared "
                 "(every node sees them at the same paths)."),
]  # fmt: skip
MaxConnections = Annotated[
    int | None,
    typer.Option("--max-connections", min=1, help="Calls in flight per model server across "
                 "the whole run (every node). Default: only -j."),
]  # fmt: skip
MaxRate = Annotated[
    float | None,
    typer.Option("--max-rate", min=0.001, help="Calls per second per model server across the "
                 "whole run (every node)."),
]  # fmt: skip
RunDirArg = Annotated[str, typer.Argument(help="A run directory, e.g. runs/latest.")]


def selection(
    sample: int | None,
    per_stratum: int | None,
    split: str | None,
    tags: str | None,
    exclude_tags: str | None,
    include_skipped: bool,
    repeats: int | None,
    *,
    prices: Path | None,
    experiment: str | None,
    sets: list[str] | None,
    model: str | None,
    store: str | None,
    skip_unsupported: bool = False,
) -> dict[str, Any]:
    """The plan keywords (:class:`assay.api.PlanKeywords`) of the shared flags."""
    return {"sample": sample, "sample_per_stratum": per_stratum, "split": split,
            "tags": tags or (), "exclude_tags": exclude_tags or (),  # "a, b": the API splits
            "include_skipped": include_skipped, "repeats": repeats, "prices": prices,
            "experiment": experiment, "overrides": list(sets or []), "model": model,
            "store": store, "skip_unsupported": skip_unsupported}  # fmt: skip


PowerOpt = Annotated[
    float | None,
    typer.Option(
        "--power", help="Rows per variant to detect this paired difference (0.05: five points)."
    ),
]
AlphaOpt = Annotated[float, typer.Option("--alpha", help="Two-sided level for --power.")]
TargetPowerOpt = Annotated[float, typer.Option("--target-power", help="Power for --power.")]
BaselineRunOpt = Annotated[
    str | None,
    typer.Option(
        "--baseline-run", help="An earlier run of the task: its variances, pairing and clusters."
    ),
]
CorrelationOpt = Annotated[
    float | None,
    typer.Option("--correlation", help="Pairing correlation, when the baseline cannot measure it."),
]
BaselineRateOpt = Annotated[
    float | None,
    typer.Option(
        "--baseline-rate", help="Without --baseline-run: the pass rate assumed in both arms."
    ),
]
StopWhenDecided = Annotated[
    bool,
    typer.Option(
        "--stop-when-decided", help="Stop scheduling rows once the experiment is decided."
    ),
]
