"""A fast start: ``assay --help`` and a command's ``--help`` import that command's modules
alone (an import budget, not a time), every group lists its commands from summaries that
match the commands' own help, and no help text loses words to rich's markup."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from rich.text import Text
from typer.testing import CliRunner

from assay.cli.app import app
from assay.cli.shared.lazy import LazyGroup

# Libraries that only running a command needs; none is imported to print help.
HEAVY = ("httpx", "jsonschema", "tenacity", "scipy", "sqlalchemy", "starlette", "uvicorn",
         "jinja2", "numpy", "anyio", "assay.api", "assay.spec.task", "assay.results.task_result",
         "assay.providers.pool", "assay.orchestration.running.runner",
         "detect_secrets")  # fmt: skip
# The assay modules ``--help`` may import: the entry, the app, the lazy groups, the
# command-line redactor's few modules and, for a command's help, that command's module
# and what its options need. Measured at 13 for ``assay --help`` (71 before lazy commands),
# 17 since the redactor recognises token shapes (results.token_shapes) and orchestration
# stands in floors (the loading package) with its exports imported by assay.lazy, 18 since
# what is printed and what is written are redacted by one writer (results.io, its pydantic
# imported when a file is first written), 19 since the process's temporary files lie in
# one scratch folder (cli.shared.scratch), 20 since SIGTERM, SIGHUP and a background SIGINT
# interrupt a command from its first line (assay.interrupts).
BUDGET = {(): 20, ("run",): 23, ("qa", "convert"): 31, ("dataset", "add"): 27,
          ("judge", "calibrate"): 27, ("view",): 23, ("cache", "stats"): 27}  # fmt: skip


def imported_modules(arguments: tuple[str, ...]) -> set[str]:
    """Every module ``python -m assay ARGUMENTS --help`` imports (``-X importtime``), in a
    temporary folder of its own: the start-up sweep of old scratch folders imports
    ``assay.sandbox.trees`` only when it finds one to remove."""
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "assay", *arguments, "--help"],
            capture_output=True, text=True,
            env={**os.environ, "COLUMNS": "100", "TMPDIR": scratch},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return {m.group(1) for m in re.finditer(r"^import time:.*\|\s+(\S+)$", done.stderr, re.M)}


@pytest.mark.parametrize("arguments", list(BUDGET), ids=lambda a: " ".join(a) or "assay")
def test_help_imports_no_heavy_library_and_few_assay_modules(arguments: tuple[str, ...]) -> None:
    modules = imported_modules(arguments)
    assert sorted(m for m in modules if m.startswith(tuple(f"{h}." for h in HEAVY))
                  or m in HEAVY) == []  # a heavy package, or any module of it  # fmt: skip
    own = sorted(m for m in modules if m == "assay" or m.startswith("assay."))
    assert len(own) <= BUDGET[arguments], own


def commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """``(path, click command)`` of every command under ``group``, groups included."""
    context = typer.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        yield (*path, name), command
        if hasattr(command, "list_commands"):
            yield from commands(command, (*path, name))


def first_paragraph(text: str | None) -> str:
    return " ".join((text or "").split("\n\n")[0].split())


def test_every_listed_summary_is_the_first_paragraph_of_the_commands_help() -> None:
    root = typer.main.get_command(app)
    groups = [("assay",), *(p for p, c in commands(root) if hasattr(c, "list_commands"))]
    checked = 0
    for path, command in commands(root):
        parent = root
        for name in path[:-1]:
            parent = parent.get_command(typer.Context(parent), name)
        if isinstance(parent, LazyGroup) and path[-1] in parent.lazy:
            assert parent.lazy[path[-1]].summary == first_paragraph(command.help), path
            checked += 1
    assert len(groups) == 5 and checked == 13 + 12 + 5  # assay, dataset, judge tables


def test_no_help_text_loses_words_to_markup() -> None:
    """rich reads ``[...]`` as a style tag and drops it (``pip install 'assay[ray]'`` showed
    as ``pip install 'assay'``); a bracket meant as text is written ``\\[``."""
    lost = []
    for path, command in commands(typer.main.get_command(app)):
        texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
        for text in texts:
            if Text.from_markup(text).plain != text.replace("\\[", "["):
                lost.append((path, text))
    assert lost == []


@pytest.mark.parametrize("group", [(), ("dataset",), ("judge",), ("qa",), ("cache",)])
def test_each_listed_command_shows_its_whole_summary_on_one_line(group: tuple[str, ...]) -> None:
    """A docstring's line breaks once cut the listing mid-sentence ("configuration (with")."""
    done = subprocess.run([sys.executable, "-m", "assay", *group, "--help"], capture_output=True,
                          text=True, env={**os.environ, "COLUMNS": "400"})  # fmt: skip
    root: Any = typer.main.get_command(app)
    for name in group:
        root = root.get_command(typer.Context(root), name)
    lines = done.stdout.splitlines()
    for name in root.list_commands(typer.Context(root)):
        command = root.get_command(typer.Context(root), name)
        row = next(line for line in lines if line.startswith(f"│ {name} "))
        assert first_paragraph(command.help) in row, (name, row)


@pytest.mark.parametrize(
    ("arguments", "suggested"),
    [(["rn"], "'run'"), (["evaluat"], "'evaluate'"), (["dataset", "lst"], "'list'"),
     (["judge", "calibrat"], "'calibrate'")],
)  # fmt: skip
def test_a_mistyped_command_is_told_the_commands_not_yet_imported(
    arguments: list[str], suggested: str
) -> None:
    done = CliRunner().invoke(app, arguments)
    assert done.exit_code == 2
    assert f"Did you mean {suggested}?" in done.output
