"""``assay evaluate``, ``assay report`` and ``assay compare``: parse, call the API
(:func:`assay.api.evaluate`, :func:`~assay.api.evaluate_predictions`,
:func:`~assay.api.report`, :func:`~assay.api.compare`), print."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from assay.cli.shared import options as o
from assay.cli.shared.common import fail, for_terminal, secret_findings, user_errors
from assay.errors import UsageError

FILE_ONLY = (
    "--task, --judge, --judge-retries, --include-story, --group-by, --metrics-hook, "
    "--output and --store apply to a prediction.jsonl file; a run is graded with its own task"
)


def evaluate(
    run_dir: Annotated[
        str, typer.Argument(help="A run directory (runs/latest) or a prediction.jsonl file.")
    ],
    jobs: o.Jobs = 4,
    junit_xml: o.Junit = None,
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
    store: o.StoreOpt = None,
) -> None:
    """Grade a finished run again without running agents, and rewrite its reports; or grade
    a QA prediction.jsonl file and write its metrics.json.

    A run's criteria run the commands its task.json recorded: evaluate run folders you trust.
    """
    from assay import api
    from assay.cli.shared.render import print_prediction_report, print_reports

    if Path(run_dir).is_file() or Path(run_dir).suffix == ".jsonl":  # a prediction file
        with user_errors():
            report = api.evaluate_predictions(
                run_dir, task=task, judge=judge, judge_retries=judge_retries,
                include_story=include_story, group_by=group_by or (),
                metrics_hook=metrics_hook, output=output, jobs=jobs, store=store,
            )  # fmt: skip
        print_prediction_report(report)
        raise typer.Exit(report.exit_code)
    file_only = [task, judge, judge_retries, include_story, group_by, metrics_hook, output, store]
    if any(value not in (None, []) for value in file_only):
        raise fail(UsageError(FILE_ONLY))
    with user_errors():
        result = api.evaluate(run_dir, jobs=jobs, junit_xml=junit_xml, stop_on_sigterm=True)
    print_reports(result)
    raise typer.Exit(result.exit_code)


CheckSecrets = Annotated[
    bool,
    typer.Option("--check-secrets",
                 help="Only scan the run folder for secrets (known values, key-shaped "
                      "strings); exit 1 naming file and line if one is found."),
]  # fmt: skip


Rows = Annotated[
    str | None,
    typer.Option("--rows", metavar="FILTER",
                 help="Only print the rows this filter selects, as CSV or JSONL (--format), "
                      "and write nothing: the viewer's rows-page query, e.g. "
                      "'status=FAILURE&q=love' ('' for every row)."),
]  # fmt: skip
RowsFormat = Annotated[
    str | None,
    typer.Option("--format", metavar="csv|jsonl",
                 help="With --rows: csv (default; formula cells neutralised) or jsonl."),
]  # fmt: skip


def report(
    run_dir: o.RunDirArg,
    junit_xml: o.Junit = None,
    html: o.Html = False,
    check_secrets: CheckSecrets = False,
    rows: Rows = None,
    rows_format: RowsFormat = None,
) -> None:
    """Rebuild suite.json/md, run.json/md (and JUnit XML, report.html) from a run's
    task.json files (then scan the folder for secrets); with --check-secrets, only scan it;
    with --rows, only print the rows a filter selects as CSV or JSONL."""
    from assay import api
    from assay.cli.shared.render import print_reports

    if rows is not None or rows_format is not None:
        with user_errors():
            if rows is None:
                raise UsageError("--format goes with --rows FILTER (use --rows '' for every row)")
            if junit_xml is not None or html or check_secrets:
                raise UsageError("--rows prints rows and writes nothing; drop --junit-xml, "
                                 "--html and --check-secrets")  # fmt: skip
            lines = api.export_rows(run_dir, rows=rows, format=rows_format or "csv")
            terminal = sys.stdout.isatty()  # a file or a pipe gets the data whole
            for line in lines:
                sys.stdout.write(for_terminal(line) if terminal else line)
        sys.stdout.flush()
        raise typer.Exit(0)
    if check_secrets:
        with user_errors():
            if junit_xml is not None or html:
                raise UsageError("--check-secrets scans the run folder and writes nothing; "
                                 "drop --junit-xml and --html")  # fmt: skip
            findings = api.check_secrets(run_dir)
        shown = [f.render() for f in findings]
        secret_findings(str(Path(run_dir).resolve()), shown, clean_too=True)
        raise typer.Exit(1 if findings else 0)
    with user_errors():
        result = api.report(run_dir, junit_xml=junit_xml, html=html)
    print_reports(result)
    raise typer.Exit(result.exit_code)


def compare(
    run_a: o.RunDirArg,
    run_b: o.RunDirArg,
    variant_a: Annotated[str | None, typer.Option("--variant-a", help="A's variant.")] = None,
    variant_b: Annotated[str | None, typer.Option("--variant-b", help="B's variant.")] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write compare.json and compare.md here.")
    ] = None,
) -> None:
    """Compare two runs over the same rows: intervals, paired differences, McNemar, flips."""
    from assay import api
    from assay.reports.compare import render_comparison

    with user_errors():
        result = api.compare(run_a, run_b, variant_a=variant_a, variant_b=variant_b,
                             output=output)  # fmt: skip
    sys.stdout.write(render_comparison(result))
