"""The ``assay`` command line (typer): every command named by where it lives, imported only
when it runs (:mod:`assay.cli.shared.lazy`), so ``assay --help`` and a command's start import
that command's modules alone.

Each command parses its flags, calls the Python API (:mod:`assay.api`) and prints; the
commands' modules import no other command module, only the package that holds no command,
:mod:`assay.cli.shared` (``common``, ``options``, ``render``, ``dataset_support``).

Exit codes (docs/suites-and-gates.md): 0 every gate passed and every task without a dataset
succeeded; 1 a gate or such a task failed; 2 invalid input (task file, dataset, flags); 130
interrupted.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Annotated

import typer

from assay.cli.shared.lazy import Lazy, lazy_app

DATASET_COMMANDS = {
    "create": Lazy("assay.cli.dataset:create",
                   "Create an empty dataset with a schema (no version until the first add)."),
    "add": Lazy("assay.cli.dataset:add", "Add the rows of FILES as one new version."),
    "remove": Lazy("assay.cli.dataset:remove",
                   "Remove examples from the latest version, as one new version."),
    "list": Lazy("assay.cli.dataset_read:list_datasets", "List the datasets of the store."),
    "versions": Lazy("assay.cli.dataset_read:versions",
                     "List the versions of a dataset, oldest first."),
    "show": Lazy("assay.cli.dataset_read:show",
                 "Show a version (default: the latest) and its first examples."),
    "diff": Lazy("assay.cli.dataset_read:diff",
                 "Show the examples added, removed and changed (by id) between two versions."),
    "export": Lazy("assay.cli.dataset_read:export",
                   "Export a version (default: the latest) as JSONL, CSV or Parquet."),
    "import": Lazy("assay.cli.dataset:import_file", "Create a dataset from a file: its schema "
                   "(given or inferred) and its rows as v1."),
    "schema": Lazy("assay.cli.dataset:schema_command", "Print a dataset's schema, or replace it "
                   "with --set FILE while it has no examples."),
    "add-run": Lazy("assay.cli.dataset_capture:add_run", "Add a run's row-tasks (response, "
                    "trace, row fields) as one new version."),
    "add-traces": Lazy("assay.cli.dataset_capture:add_traces", "Add the traces of a file (one "
                       "example per trace, or per session) as one new version."),
}  # fmt: skip
JUDGE_COMMANDS = {
    "add": Lazy("assay.cli.judge:add", "Store a judge file as the judge's next version "
                "(unchanged content adds nothing)."),
    "list": Lazy("assay.cli.judge:list_judges", "List the judges of the store (latest versions)."),
    "show": Lazy("assay.cli.judge:show", "Show a judge (its definition, name, version, content "
                 "hash) and its calibrations."),
    "versions": Lazy("assay.cli.judge:versions", "List every version of a judge, oldest first."),
    "calibrate": Lazy("assay.cli.judge_calibrate:calibrate", "Measure how a judge agrees with "
                      "human labels on a store dataset, and store it."),
}  # fmt: skip
DATASET_HELP = (
    "The versioned, schema-typed dataset store: create, add, remove, list, versions, show, "
    "diff, export, import, schema, add-run, add-traces."
)
JUDGE_HELP = (
    "Judges as versioned assets: add, list, show, versions, calibrate (against human labels "
    "in a store dataset)."
)
dataset_app = lazy_app(name="dataset", help=DATASET_HELP, commands=DATASET_COMMANDS)
judge_app = lazy_app(name="judge", help=JUDGE_HELP, commands=JUDGE_COMMANDS)
COMMANDS = {
    "run": Lazy("assay.cli.run:run",
                "Run agents on every selected row, grade them, and write the reports."),
    "execute": Lazy("assay.cli.run:execute", "Run agents only (rows NOT_GRADED, sandboxes kept); "
                    "grade later with `assay evaluate`."),
    "plan": Lazy("assay.cli.plan:plan", "Show the expansion, the row selection, each variant's "
                 "resolved configuration (with where each value came from) and the variables "
                 "its programs receive (names only); run nothing. Exits 2 on invalid input, "
                 "1 when a docker image did not build."),
    "evaluate": Lazy("assay.cli.grading:evaluate", "Grade a finished run again without running "
                     "agents, and rewrite its reports; or grade a QA prediction.jsonl file and "
                     "write its metrics.json."),
    "report": Lazy("assay.cli.grading:report", "Rebuild suite.json/md, run.json/md (and JUnit "
                   "XML, report.html) from a run's task.json files (then scan the folder for "
                   "secrets); with --check-secrets, only scan it; with --rows, only print "
                   "the rows a filter selects as CSV or JSONL."),
    "compare": Lazy("assay.cli.grading:compare", "Compare two runs over the same rows: "
                    "intervals, paired differences, McNemar, flips."),
    "view": Lazy("assay.cli.view:view", "Browse runs in a local web viewer: metrics and figures, "
                 "rows filtered on the server, a row's transcript, two runs row by row. Reads "
                 "run folders; never writes into them."),
    "schema": Lazy("assay.cli.schema:schema", "Print the task file's JSON Schema, for editors."),
    "doctor": Lazy("assay.cli.doctor:doctor", "Show which sandbox drivers work here (each tried "
                   "for real) and which sandbox.limits each enforces, which agent CLIs and "
                   "criterion programs are found, and the fix for what is missing."),
    "qa": Lazy("assay.cli.qa:qa_app",
               "Standardized QA datasets: convert common shapes into the QA schema."),
    "dataset": Lazy("assay.cli.app:dataset_app", DATASET_HELP),
    "judge": Lazy("assay.cli.app:judge_app", JUDGE_HELP),
    "cache": Lazy("assay.cli.cache:cache_app", "Inspect or empty the response cache."),
}  # fmt: skip


def _show_version(asked: bool) -> None:
    if asked:
        from assay.version import __version__

        sys.stdout.write(f"assay {__version__}\n")
        raise SystemExit(0)


def _root_options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_show_version,
            help="Print assay's version and exit.",
        ),
    ] = False,
) -> None:
    """``assay --version``; the commands do the rest."""


app = lazy_app(
    name="assay",
    help="Evaluate LLMs and coding agents on your datasets: one task file fans out over every "
    "row, criteria grade each row, suite metrics gate CI.",
    commands=COMMANDS,
    callback=_root_options,
)


def main() -> None:
    """Console-script entry point; Ctrl-C (or SIGTERM, SIGHUP) outside a run's rows exits 130
    without a traceback, saying what was kept.

    Everything printed, a crash's traceback included, goes through streams that redact the
    secrets of the environment and of the command line's ``-D`` and ``--store`` values
    (:func:`assay.results.output.redacted_output`); a run adds its
    own (``agent.env`` values, model credentials, row credentials) while it runs. The
    process's temporary files lie in one scratch folder, removed at the end or, after a kill,
    by the next command (:mod:`assay.cli.shared.scratch`).
    """
    from assay.cli.shared.scratch import process_scratch
    from assay.interrupts import interrupting_signals
    from assay.orchestration.loading.secrets import command_line_writer
    from assay.results.output import redacted_output

    _help_width(sys.argv[1:])
    with redacted_output(command_line_writer(sys.argv[1:], os.environ)), process_scratch():
        try:
            with interrupting_signals():
                app()
        except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP: what is kept, if anything
            sys.stderr.write(f"interrupted{f': {exc}' if str(exc) else ''}\n")
            raise SystemExit(130) from None
        except Exception:  # a bug: its traceback, redacted, then exit 1 as Python would
            traceback.print_exc()
            raise SystemExit(1) from None


HELP_WIDTH = 120
"""Columns of help written to a file or a pipe (``assay run --help | less``, a CI log): at
rich's 80 the option tables cut long words (``dataset.stratify_fie…``)."""


def _help_width(argv: list[str]) -> None:
    """Help asked for off a terminal is laid out :data:`HELP_WIDTH` wide, unless
    ``TERMINAL_WIDTH`` or ``COLUMNS`` says otherwise (typer's own setting, read when it was
    imported)."""
    asked = any(arg in ("--help", "-h") for arg in argv) or not argv
    if (
        not asked
        or sys.stdout.isatty()
        or os.environ.get("TERMINAL_WIDTH")
        or (os.environ.get("COLUMNS"))
    ):
        return
    import typer.rich_utils

    typer.rich_utils.MAX_WIDTH = HELP_WIDTH
