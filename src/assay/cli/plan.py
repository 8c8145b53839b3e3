"""``assay plan``: parse the flags, call :func:`assay.api.plan`, print the plan."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from assay.cli.shared import options as o
from assay.cli.shared.common import user_errors, warn
from assay.errors import TaskFilesError


def plan(
    tasks: o.TaskArgs = None,
    sample: o.Sample = None,
    sample_per_stratum: o.PerStratum = None,
    split: o.Split = None,
    tags: o.Tags = None,
    exclude_tags: o.ExcludeTags = None,
    include_skipped: o.IncludeSkipped = False,
    skip_unsupported: o.SkipUnsupported = False,
    repeats: o.Repeats = None,
    rows: Annotated[int, typer.Option("--rows", min=0, help="Row-task ids to list per task.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
    jobs: o.Jobs = 4,  # checked as `run` checks it, so a run's command line plans unchanged
    prices: o.Prices = None,
    experiment: o.ExperimentOpt = None,
    set_: o.SetOpt = None,
    model: o.ModelOpt = None,
    store: o.StoreOpt = None,
    power: o.PowerOpt = None,
    alpha: o.AlphaOpt = 0.05,
    target_power: o.TargetPowerOpt = 0.8,
    baseline_run: o.BaselineRunOpt = None,
    correlation: o.CorrelationOpt = None,
    baseline_rate: o.BaselineRateOpt = None,
) -> None:
    """Show the expansion, the row selection, each variant's resolved configuration (with
    where each value came from) and the variables its programs receive (names only); run
    nothing. Exits 2 on invalid input, 1 when a docker image did not build."""
    from assay import api
    from assay.cli.shared.plan_render import print_plan
    from assay.reports.plan import plan_as_json
    from assay.results.output import redacted_output

    chosen = o.selection(sample, sample_per_stratum, split, tags, exclude_tags, include_skipped,
                       repeats, prices=prices, experiment=experiment, sets=set_, model=model,
                       store=store, skip_unsupported=skip_unsupported)  # fmt: skip
    with user_errors():
        try:
            built = api.plan(tasks, **chosen)
        except TaskFilesError as refused:  # the migration report as data, then the error
            if as_json:
                sys.stdout.write(json.dumps(refused.report(), indent=2, ensure_ascii=False) + "\n")
            raise
    with redacted_output(built.writer):  # agent.env values among the settings shown
        for warning in built.warnings:
            warn(warning)
        if as_json:
            text = json.dumps(plan_as_json(built), indent=2, ensure_ascii=False) + "\n"
            sys.stdout.write(built.writer.redact_json(text))
        else:
            print_plan(built, show_rows=rows)
    if power is not None:
        with user_errors():
            planned = built.tasks[0].expansion.row_tasks if built.tasks else []
            found = api.power(power, rows_planned=len(planned) or None, baseline_run=baseline_run,
                              suite=built.tasks[0].loaded.definition.task_id if built.tasks
                              else None, alpha=alpha, target_power=target_power,
                              correlation=correlation, baseline_rate=baseline_rate,
                              replicates=repeats or 1)  # fmt: skip
        sys.stdout.write("\n".join(found.lines()) + "\n")
    if built.build_failures:
        raise typer.Exit(1)
