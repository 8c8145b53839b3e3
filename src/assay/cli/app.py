"""The ``assay`` command line (typer). Commands stay thin: parse flags, call a use case, print.

Exit codes (DESIGN.md): 0 every gate passed and every task without a dataset succeeded;
1 a gate or such a task failed; 2 invalid input (task file, dataset, flags); 130 interrupted.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape

from assay.cli.cache import cache_app
from assay.errors import UsageError, UserError

if TYPE_CHECKING:  # the rest is imported by the commands that use it (fast start-up)
    from assay.cli.running import ModelSettings, RunRequest
    from assay.orchestration.plan import Plan, PlanOptions
    from assay.orchestration.runner import Stage

EXIT_USAGE = 2

app = typer.Typer(
    name="assay",
    help="Evaluate LLMs and coding agents on your datasets: one task file fans out over every "
    "row, criteria grade each row, suite metrics gate CI.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
from assay.cli.qa import qa_app  # noqa: E402

app.add_typer(qa_app, name="qa")
from assay.cli.dataset import dataset_app  # noqa: E402

app.add_typer(dataset_app, name="dataset")

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
Repeats = Annotated[
    int | None, typer.Option("--repeats", min=1, help="Replicates per row-task (00, 01, ...).")
]
Jobs = Annotated[
    int, typer.Option("--max-parallel", "-j", min=1, help="Row-tasks running at once.")
]
RunsRoot = Annotated[
    Path, typer.Option("--run-dir", help="Folder that receives runs/<timestamp>/.")
]
Junit = Annotated[
    Path | None, typer.Option("--junit-xml", help="Also write JUnit XML here (one case per row).")
]
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
    str | None, typer.Option("--model", "-m", help="Use this model in every variant (agent.model).")
]
StoreOpt = Annotated[
    str | None,
    typer.Option("--store", help="Dataset store URL (default $ASSAY_STORE or .assay/store.db)."),
]
Prices = Annotated[
    Path | None, typer.Option("--prices", help="YAML of model → {input_per_mtok, output_per_mtok}.")
]


def _split_tags(value: str | None) -> tuple[str, ...]:
    return tuple(t.strip() for t in (value or "").split(",") if t.strip())


def _options(
    sample: int | None,
    per_stratum: int | None,
    split: str | None,
    tags: str | None,
    exclude_tags: str | None,
    include_skipped: bool,
    repeats: int | None,
    *,
    prices: Path | None = None,
    experiment: str | None = None,
    sets: list[str] | None = None,
    model: str | None = None,
    store: str | None = None,
) -> PlanOptions:
    from assay.orchestration.expand import Selectors
    from assay.orchestration.experiment import Override
    from assay.orchestration.plan import PlanOptions
    from assay.providers.pricing import PriceTable

    table = PriceTable()
    try:
        if prices is not None:
            table = table.extended(prices)
        overrides = [Override.parse(text) for text in sets or []]
    except UserError as exc:
        raise fail(exc) from None
    if model is not None:
        overrides.append(Override(("agent", "model"), model))
    return PlanOptions(
        experiment=experiment,
        overrides=tuple(overrides),
        store_url=store,
        selectors=Selectors(sample=sample, sample_per_stratum=per_stratum, split=split),
        tags=_split_tags(tags),
        exclude_tags=_split_tags(exclude_tags),
        include_skipped=include_skipped,
        repeats=repeats,
        prices=table,
    )


def _err() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


def fail(error: UserError) -> typer.Exit:
    """Print a user error and return the exit (code 2)."""
    _err().print(f"[bold red]error:[/] {escape(error.render())}", markup=True)
    return typer.Exit(EXIT_USAGE)


def _plan_or_exit(tasks: list[str] | None, options: PlanOptions) -> Plan:
    from assay.orchestration.plan import build_plan

    try:
        plan = build_plan(tasks or [], options)
    except UserError as exc:
        raise fail(exc) from None
    console = _err()
    for warning in plan.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}", markup=True)
    return plan


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


def _model_settings(
    max_retries: int, timeout: float | None, cache: bool, cache_expiry: str | None
) -> ModelSettings:
    from assay.cli.running import ModelSettings
    from assay.providers.cache import parse_duration

    try:
        expiry = parse_duration(cache_expiry) if cache_expiry else None
    except ValueError as exc:
        raise fail(UsageError(str(exc), field="--cache-expiry")) from None
    return ModelSettings(max_retries=max_retries, timeout=timeout, cache=cache or bool(expiry),
                         cache_expiry=expiry)  # fmt: skip


def _execute(
    stage: Stage,
    tasks: list[str] | None,
    options: PlanOptions,
    request: RunRequest,
    *,
    resume: str | None,
) -> None:
    from assay.cli.render import print_reports
    from assay.cli.running import resume_run, start_run

    store_url = options.store_url

    try:
        if resume is not None:
            if tasks:
                raise UsageError("--resume takes the task files from the run; give no tasks")
            run_dir = _existing_run(resume)
            check_outputs(run_dir.parent, request.junit_path)
            reports = resume_run(run_dir, request, prices=options.prices, store_url=store_url)
        else:
            plan = _plan_or_exit(tasks, options)
            check_outputs(request.runs_root, request.junit_path)
            run_dir, reports = start_run(plan, options, request)
    except UserError as exc:
        raise fail(exc) from None
    print_reports(run_dir, reports)
    raise typer.Exit(reports.exit_code)


def check_outputs(runs_root: Path, junit: Path | None) -> None:
    """Refuse output paths that cannot be written, before any row runs.

    Both are written by creating a file in their folder and renaming it, so each folder is
    probed with a temporary file.

    Raises:
        UsageError: ``--run-dir`` is a file, cannot be created or is not writable;
            ``--junit-xml`` is a directory, or its folder cannot be created or written.
    """
    if runs_root.exists() and not runs_root.is_dir():
        raise UsageError(f"--run-dir {runs_root} is a file, not a folder")
    try:
        runs_root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--run-dir {runs_root} cannot be created: {exc.strerror}") from None
    _probe(runs_root, f"--run-dir {runs_root}")
    if junit is None:
        return
    if junit.is_dir():
        raise UsageError(f"--junit-xml {junit} is a folder; give a file name")
    try:
        junit.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--junit-xml {junit}: its folder cannot be created: "
                         f"{exc.strerror}") from None  # fmt: skip
    _probe(junit.parent, f"--junit-xml {junit}")


def _probe(folder: Path, what: str) -> None:
    """Create and delete a temporary file in ``folder``.

    Raises:
        UsageError: the folder cannot be written.
    """
    import tempfile

    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".assay-probe-"):
            pass
    except OSError as exc:
        raise UsageError(f"{what}: cannot write in {folder}: {exc.strerror or exc}") from None


def _existing_run(argument: str) -> Path:
    path = Path(argument)
    if not path.is_dir():
        raise UsageError(f"run directory not found: {argument}")
    return path.resolve()


@app.command()
def run(
    tasks: TaskArgs = None,
    sample: Sample = None,
    sample_per_stratum: PerStratum = None,
    split: Split = None,
    tags: Tags = None,
    exclude_tags: ExcludeTags = None,
    include_skipped: IncludeSkipped = False,
    repeats: Repeats = None,
    jobs: Jobs = 4,
    run_dir: RunsRoot = Path("runs"),
    junit_xml: Junit = None,
    keep_sandboxes: Keep = False,
    quiet: Quiet = False,
    max_retries: MaxRetries = 4,
    timeout: Timeout = None,
    cache: Cache = False,
    cache_expiry: CacheExpiry = None,
    resume: Resume = None,
    retry_errors: RetryErrors = False,
    prices: Prices = None,
    experiment: ExperimentOpt = None,
    set_: SetOpt = None,
    model: ModelOpt = None,
    store: StoreOpt = None,
) -> None:
    """Run agents on every selected row, grade them, and write the reports."""
    options = _options(sample, sample_per_stratum, split, tags, exclude_tags, include_skipped,
                       repeats, prices=prices, experiment=experiment, sets=set_,
                       model=model, store=store)  # fmt: skip
    request = _request("run", run_dir, jobs=jobs, keep_sandboxes=keep_sandboxes, quiet=quiet,
                       models=_model_settings(max_retries, timeout, cache, cache_expiry),
                       retry_errors=retry_errors, junit_path=junit_xml)  # fmt: skip
    _execute("run", tasks, options, request, resume=resume)


def _request(
    stage: Stage,
    run_dir: Path,
    *,
    jobs: int,
    keep_sandboxes: bool,
    quiet: bool,
    models: ModelSettings,
    retry_errors: bool,
    junit_path: Path | None = None,
) -> RunRequest:
    """The request of ``assay run`` or ``assay execute``."""
    from assay.cli.running import RunRequest
    from assay.orchestration.runner import RunOptions
    from assay.reports.progress import make_progress

    return RunRequest(
        runs_root=run_dir,
        options=RunOptions(jobs=jobs, stage=stage, keep_sandboxes=keep_sandboxes),
        progress=make_progress(quiet=quiet),
        junit_path=junit_path,
        command=["assay", *sys.argv[1:]],
        models=models,
        retry_errors=retry_errors,
    )


@app.command()
def execute(
    tasks: TaskArgs = None,
    sample: Sample = None,
    sample_per_stratum: PerStratum = None,
    split: Split = None,
    tags: Tags = None,
    exclude_tags: ExcludeTags = None,
    include_skipped: IncludeSkipped = False,
    repeats: Repeats = None,
    jobs: Jobs = 4,
    run_dir: RunsRoot = Path("runs"),
    quiet: Quiet = False,
    max_retries: MaxRetries = 4,
    timeout: Timeout = None,
    cache: Cache = False,
    cache_expiry: CacheExpiry = None,
    resume: Resume = None,
    retry_errors: RetryErrors = False,
    prices: Prices = None,
    experiment: ExperimentOpt = None,
    set_: SetOpt = None,
    model: ModelOpt = None,
    store: StoreOpt = None,
) -> None:
    """Run agents only (rows NOT_GRADED, sandboxes kept); grade later with `assay evaluate`."""
    options = _options(sample, sample_per_stratum, split, tags, exclude_tags, include_skipped,
                       repeats, prices=prices, experiment=experiment, sets=set_,
                       model=model, store=store)  # fmt: skip
    request = _request("execute", run_dir, jobs=jobs, keep_sandboxes=True, quiet=quiet,
                       models=_model_settings(max_retries, timeout, cache, cache_expiry),
                       retry_errors=retry_errors)  # fmt: skip
    _execute("execute", tasks, options, request, resume=resume)


@app.command()
def plan(
    tasks: TaskArgs = None,
    sample: Sample = None,
    sample_per_stratum: PerStratum = None,
    split: Split = None,
    tags: Tags = None,
    exclude_tags: ExcludeTags = None,
    include_skipped: IncludeSkipped = False,
    repeats: Repeats = None,
    rows: Annotated[int, typer.Option("--rows", min=0, help="Row-task ids to list per task.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
    prices: Prices = None,
    experiment: ExperimentOpt = None,
    set_: SetOpt = None,
    model: ModelOpt = None,
    store: StoreOpt = None,
) -> None:
    """Show the expansion, the row selection and each variant's resolved configuration (with
    where each value came from); run nothing. Exits 2 on invalid input."""
    from assay.cli.render import plan_as_json, print_plan

    options = _options(sample, sample_per_stratum, split, tags, exclude_tags, include_skipped,
                       repeats, prices=prices, experiment=experiment, sets=set_,
                       model=model, store=store)  # fmt: skip
    built = _plan_or_exit(tasks, options)
    if as_json:
        sys.stdout.write(json.dumps(plan_as_json(built), indent=2, ensure_ascii=False) + "\n")
    else:
        print_plan(built, show_rows=rows)


RunDirArg = Annotated[str, typer.Argument(help="A run directory, e.g. runs/latest.")]


@app.command()
def evaluate(
    run_dir: Annotated[
        str, typer.Argument(help="A run directory (runs/latest) or a prediction.jsonl file.")
    ],
    jobs: Jobs = 4,
    junit_xml: Junit = None,
    task: Annotated[
        Path | None,
        typer.Option("--task", help="prediction.jsonl: grade with this task file's qa: block."),
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option("--judge", help="prediction.jsonl: judge model for open questions."),
    ] = None,
    judge_retries: Annotated[
        int | None, typer.Option("--judge-retries", min=0, max=10, help="Judge retries.")
    ] = None,
    include_story: Annotated[
        bool | None,
        typer.Option("--include-story/--no-include-story", help="Show the judge the story."),
    ] = None,
    group_by: Annotated[
        list[str] | None,
        typer.Option("--group-by", help="prediction.jsonl: group accuracy by this path."),
    ] = None,
    metrics_hook: Annotated[
        Path | None,
        typer.Option("--metrics-hook", help="prediction.jsonl: compute_metrics(...) file."),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="prediction.jsonl: where metrics.json goes."),
    ] = None,
) -> None:
    """Grade a finished run again without running agents, and rewrite its reports; or grade
    a QA prediction.jsonl file and write its metrics.json."""

    if Path(run_dir).is_file():
        from assay.cli.predictions import PredictionOptions, evaluate_predictions
        from assay.cli.render import print_prediction_report

        options = PredictionOptions(
            task=task, judge_model=judge, judge_retries=judge_retries,
            include_story=include_story, group_by=tuple(group_by or ()),
            metrics_hook=metrics_hook, output=output, jobs=jobs,
        )  # fmt: skip
        try:
            report = evaluate_predictions(Path(run_dir), options)
        except UserError as exc:
            raise fail(exc) from None
        print_prediction_report(report)
        raise typer.Exit(0)
    file_only = [task, judge, judge_retries, include_story, group_by, metrics_hook, output]
    if any(value not in (None, []) for value in file_only):
        raise fail(UsageError(
            "--task, --judge, --judge-retries, --include-story, --group-by, --metrics-hook "
            "and --output apply to a prediction.jsonl file; a run is graded with its own task",
        )) from None  # fmt: skip
    from assay.cli.regrade import evaluate_run, resolve_run_dir
    from assay.cli.render import print_reports

    try:
        folder = resolve_run_dir(run_dir)
        reports = evaluate_run(folder, jobs=jobs, junit_path=junit_xml)
    except UserError as exc:
        raise fail(exc) from None
    print_reports(folder, reports)
    raise typer.Exit(reports.exit_code)


@app.command()
def report(run_dir: RunDirArg, junit_xml: Junit = None) -> None:
    """Rebuild suite.json/md, run.json/md (and JUnit XML) from a run's task.json files."""
    from assay.cli.regrade import rebuild_reports, resolve_run_dir
    from assay.cli.render import print_reports

    try:
        folder = resolve_run_dir(run_dir)
        reports = rebuild_reports(folder, junit_path=junit_xml)
    except UserError as exc:
        raise fail(exc) from None
    print_reports(folder, reports)
    raise typer.Exit(reports.exit_code)


@app.command()
def compare(
    run_a: RunDirArg,
    run_b: RunDirArg,
    variant_a: Annotated[str | None, typer.Option("--variant-a", help="A's variant.")] = None,
    variant_b: Annotated[str | None, typer.Option("--variant-b", help="B's variant.")] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write compare.json and compare.md here.")
    ] = None,
) -> None:
    """Compare two runs over the same rows: intervals, paired differences, McNemar, flips."""
    from assay.cli.compare import compare_runs, render_comparison
    from assay.cli.regrade import load_run_results, resolve_run_dir
    from assay.results.io import write_json_atomic, write_text_atomic

    try:
        folder_a, folder_b = resolve_run_dir(run_a), resolve_run_dir(run_b)
        report = compare_runs(folder_a, load_run_results(folder_a), folder_b,
                              load_run_results(folder_b), variant_a=variant_a,
                              variant_b=variant_b)  # fmt: skip
    except UserError as exc:
        raise fail(exc) from None
    text = render_comparison(report)
    if output is not None:
        write_json_atomic(output / "compare.json", report)
        write_text_atomic(output / "compare.md", text)
    sys.stdout.write(text)


app.add_typer(cache_app, name="cache")


def main() -> None:
    """Console-script entry point; Ctrl-C before a run starts exits 130 without a traceback."""
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        raise SystemExit(130) from None
