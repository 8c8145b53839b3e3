"""``assay schema``: print the JSON Schema of the task file (:func:`assay.api.task_schema`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from assay.cli.shared.common import user_errors
from assay.results.io import check_output_file


def schema(
    plugins: Annotated[
        bool,
        typer.Option(
            "--plugins",
            help="Include the criteria and agent types of the installed plugins "
            "(entry-point groups assay.criteria and assay.agents).",
        ),
    ] = False,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="Write the schema to this file instead of printing it."
        ),
    ] = None,
) -> None:
    """Print the task file's JSON Schema, for editors.

    Point the YAML language server at it with a task file's first line
    `# yaml-language-server: $schema=<file>`."""
    from assay import api

    with user_errors():
        if output is not None:
            check_output_file(output, "--output")
        found = api.task_schema(plugins=plugins)
    text = json.dumps(found, indent=2, ensure_ascii=False) + "\n"
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
        sys.stderr.write(f"wrote {output}\n")
