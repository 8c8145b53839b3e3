"""``assay qa …``: standardized QA helpers. ``assay qa convert`` turns a dataset into the QA
schema (:mod:`assay.qa.convert` has the shapes and their default field mapping)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from assay.cli.shared.common import user_errors, warn
from assay.qa.convert import SHAPES

qa_app = typer.Typer(
    help="Standardized QA datasets: convert common shapes into the QA schema.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@qa_app.callback()
def qa() -> None:
    """Standardized QA datasets: convert common shapes into the QA schema."""


@qa_app.command()
def convert(
    input_path: Annotated[Path, typer.Argument(metavar="INPUT", help="CSV or JSONL file.")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="The QA JSONL to write (-: stdout).")
    ],
    shape: Annotated[
        str, typer.Option("--from", help=f"Input shape: {' | '.join(SHAPES)}.", metavar="SHAPE")
    ],
    story: Annotated[str | None, typer.Option(help="Story field.", metavar="FIELD")] = None,
    question: Annotated[str | None, typer.Option(help="Question field.", metavar="FIELD")] = None,
    answers: Annotated[
        str | None, typer.Option(help="Accepted answers field (list or text).", metavar="FIELD")
    ] = None,
    wrong: Annotated[
        str | None, typer.Option(help="Known wrong answers field.", metavar="FIELD")
    ] = None,
    choices: Annotated[
        str | None, typer.Option(help="Choice fields in order, comma-separated.", metavar="A,B")
    ] = None,
    choice_prefix: Annotated[
        str | None, typer.Option(help="Choice columns are PREFIX0..PREFIXn.", metavar="PREFIX")
    ] = None,
    label: Annotated[
        str | None, typer.Option(help="Index of the correct choice.", metavar="FIELD")
    ] = None,
    label_base: Annotated[
        int | None, typer.Option(min=0, max=1, help="Index of the first choice (0 or 1).")
    ] = None,
    id_field: Annotated[
        str | None, typer.Option("--id", help="Source id used as sample_id.", metavar="FIELD")
    ] = None,
    no_id: Annotated[
        bool, typer.Option("--no-id", help="Number the rows even if the shape has an id.")
    ] = False,
    id_prefix: Annotated[
        str | None, typer.Option(help="Prefix of numbered ids (default: INPUT's stem-).")
    ] = None,
    meta: Annotated[
        list[str] | None,
        typer.Option("--meta", help="Copy a source field into meta (repeatable).", metavar="FIELD"),
    ] = None,
    answer_after: Annotated[
        str | None,
        typer.Option(help="Keep the text after the last MARKER of each answer.", metavar="MARKER"),
    ] = None,
    unanswerable_if_empty: Annotated[
        bool | None,
        typer.Option(
            "--unanswerable-if-empty",
            help="A row without answers is unanswerable (meta.unanswerable) instead of an error.",
        ),
    ] = None,
    answer_separator: Annotated[
        str | None,
        typer.Option(help="Split an answers text on SEP, each one answer.", metavar="SEP"),
    ] = None,
    source: Annotated[
        str | None, typer.Option(help="meta.source label (default: INPUT's file name).")
    ] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Convert only the first N rows.")] = None,
    skip_invalid: Annotated[
        bool, typer.Option(help="Leave out rows that cannot be converted (each named).")
    ] = False,
) -> None:
    """Convert INPUT (CSV or JSONL: choices, answer lists, SQuAD, GSM8K) into the QA schema."""
    from assay.api.tools import convert_qa

    to_stdout = str(output) == "-"  # -o -: stdout, the convention of every Unix tool
    with user_errors():
        summary = convert_qa(
            input_path, sys.stdout.buffer if to_stdout else output, shape=shape,
            numbered_ids=no_id, source=source, id_prefix=id_prefix, limit=limit, story=story,
            question=question, answers=answers, wrong=wrong, choices=_split(choices),
            choice_prefix=choice_prefix, label=label, label_base=label_base, id=id_field,
            meta=tuple(meta) if meta else None, answer_after=answer_after,
            unanswerable_if_empty=unanswerable_if_empty, answer_separator=answer_separator,
            skip_invalid=skip_invalid,
        )  # fmt: skip
    kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(summary.by_prompt_type.items()))
    for text in summary.warnings:
        warn(text)
    if to_stdout:
        sys.stdout.buffer.flush()
        typer.echo(f"wrote {summary.rows} samples to stdout ({kinds or 'none'})", err=True)
        return
    typer.echo(f"wrote {summary.rows} samples to {output} ({kinds or 'none'})")


def _split(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    return tuple(part.strip() for part in value.split(",") if part.strip())
