"""The ``assay`` command line (typer): the commands of each module registered on one app.

Each command parses its flags, calls the Python API (:mod:`assay.api`) and prints; the
commands' modules import no other command module, only the package that holds no command,
:mod:`assay.cli.shared` (``common``, ``options``, ``render``, ``dataset_support``).

Exit codes (DESIGN.md): 0 every gate passed and every task without a dataset succeeded;
1 a gate or such a task failed; 2 invalid input (task file, dataset, flags); 130 interrupted.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable

import typer

from assay.cli import dataset, dataset_capture, dataset_read, grading, judge, plan, run, view
from assay.cli.cache import cache_app
from assay.cli.qa import qa_app

app = typer.Typer(
    name="assay",
    help="Evaluate LLMs and coding agents on your datasets: one task file fans out over every "
    "row, criteria grade each row, suite metrics gate CI.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
dataset_app = typer.Typer(
    name="dataset",
    help="The versioned, schema-typed dataset store: create, add, remove, list, versions, "
    "show, diff, export, import, schema, add-run, add-traces.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
DATASET_COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("create", dataset.create),
    ("add", dataset.add),
    ("remove", dataset.remove),
    ("list", dataset_read.list_datasets),
    ("versions", dataset_read.versions),
    ("show", dataset_read.show),
    ("diff", dataset_read.diff),
    ("export", dataset_read.export),
    ("import", dataset.import_file),
    ("schema", dataset.schema_command),
    ("add-run", dataset_capture.add_run),
    ("add-traces", dataset_capture.add_traces),
)
judge_app = typer.Typer(
    name="judge",
    help="Judges as versioned assets: add, list, show, versions, calibrate (against human "
    "labels in a store dataset).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
JUDGE_COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("add", judge.add),
    ("list", judge.list_judges),
    ("show", judge.show),
    ("versions", judge.versions),
    ("calibrate", judge.calibrate),
)
COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("run", run.run),
    ("execute", run.execute),
    ("plan", plan.plan),
    ("evaluate", grading.evaluate),
    ("report", grading.report),
    ("compare", grading.compare),
    ("view", view.view),
)
for name, command in DATASET_COMMANDS:
    dataset_app.command(name)(command)
for name, command in JUDGE_COMMANDS:
    judge_app.command(name)(command)

app.add_typer(qa_app, name="qa")
app.add_typer(dataset_app, name="dataset")
app.add_typer(judge_app, name="judge")
for name, command in COMMANDS:
    app.command(name)(command)
app.add_typer(cache_app, name="cache")


def main() -> None:
    """Console-script entry point; Ctrl-C before a run starts exits 130 without a traceback.

    Everything printed, a crash's traceback included, goes through streams that redact the
    secrets of the environment and of the command line's ``-D`` and ``--store`` values
    (:func:`assay.results.output.redacted_output`); a run adds its
    own (``agent.env`` values, model credentials, row credentials) while it runs.
    """
    from assay.orchestration.secrets import command_line_redactor
    from assay.results.output import redacted_output

    with redacted_output(command_line_redactor(sys.argv[1:], os.environ)):
        try:
            app()
        except KeyboardInterrupt:
            sys.stderr.write("interrupted\n")
            raise SystemExit(130) from None
        except Exception:  # a bug: its traceback, redacted, then exit 1 as Python would
            traceback.print_exc()
            raise SystemExit(1) from None
