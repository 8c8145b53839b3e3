"""The exceptions assay raises, in one tree.

```
AssayError                 root: everything assay raises on purpose
├── UserError              bad input; the CLI exits 2 and prints where and how to fix it
│   ├── TaskFileError      a task file: YAML syntax, unknown or invalid field
│   ├── DatasetError       a dataset: unreadable file, bad JSONL/CSV line, row id, placeholder
│   ├── SelectionError     a row selector that leaves nothing (e.g. ``--split`` names no split)
│   ├── StoreError         the dataset store: bad schema, example, version, trace or store URL
│   ├── PluginError        a plugin (an entry point, a class passed to the API) is not usable
│   └── UsageError         command-line flags and arguments
│       └── MissingKeyError  a model's API key is not in the environment
└── RunFailure             something failed while running; the row ends ``ERROR``, never ``FAILURE``
    ├── ModelError         a model endpoint failed (connection, HTTP status, unparseable reply)
    ├── AgentError         an agent could not run (program not found, crashed before answering)
    └── SandboxError       a sandbox could not be prepared (template missing, pre_run failed)
```

A ``UserError`` carries where the problem is (``file``, ``line``, ``field``, ``row_id``) and a
``hint`` that says what would fix it; ``str(error)`` renders all of them on one or two lines,
for example::

    tasks/sentiment.yaml:12: success_criteria[0].expeced_label: unknown field
      hint: did you mean 'expected_label'?

A ``RunFailure`` is recorded in the row's ``task.json`` (``error_message``) and never stops
the other rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


class AssayError(Exception):
    """Root of every exception assay raises on purpose."""


class UserError(AssayError):
    """Bad input: a task file, a dataset, a flag. The CLI exits with code 2.

    Args:
        message: what is wrong, in one sentence.
        file: the file the input came from, if any.
        line: the 1-based line in ``file``, where the parser gives one.
        field: the dotted field path inside the file, e.g. ``success_criteria[0].path``.
        row_id: the dataset row concerned, if any.
        hint: what would fix it.
        located: the message already names file and line (Coder Eval's message shapes), so
            they are not repeated in front of it.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
        row_id: str | None = None,
        hint: str | None = None,
        located: bool = False,
    ) -> None:
        self.message = message
        self.located = located
        self.file = str(file) if file is not None else None
        self.line = line
        self.field = field
        self.row_id = row_id
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        """Return ``file:line: field: [row id] message`` plus an indented ``hint:`` line."""
        where = ""
        if self.located:
            where = ""
        elif self.file:
            where = self.file + (f":{self.line}" if self.line else "") + ": "
        elif self.line:
            where = f"line {self.line}: "
        field = f"{self.field}: " if self.field else ""
        row = f"[row {self.row_id}] " if self.row_id else ""
        text = f"{where}{field}{row}{self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class TaskFileError(UserError):
    """A task file cannot be read or does not validate."""


class PluginError(UserError):
    """A plugin cannot be used: its entry point does not import, it is not the kind of class
    its group takes, or its name is already taken (``assay.plugins``)."""


class TaskFilesError(TaskFileError):
    """Several task files were read and some cannot run: each one's error, and which of the
    others run as written or with warnings (Coder Eval migration: every file is judged,
    not only the first that fails).

    Args:
        refused: each refused file's error, in order (a task file's; a dataset's or a
            selection's, naming the task file when it names no other file).
        as_written: the files that load without a warning (as they are named).
        warned: the files that load with warnings → their warnings.
        skipped: the files left out (``skip: true``, ``--tags``), which neither run nor fail.
        files: how many files were refused, when one file has several errors (each variant
            of an experiment that cannot run); ``None``: one error per refused file.
    """

    def __init__(
        self,
        refused: Sequence[UserError],
        *,
        as_written: list[str],
        warned: dict[str, list[str]],
        skipped: Sequence[str] = (),
        files: int | None = None,
    ) -> None:
        self.refused = list(refused)
        count = len(self.refused) if files is None else files
        self.as_written = as_written
        self.warned = warned
        self.skipped = list(skipped)
        total = count + len(as_written) + len(warned)
        left_out = f", {len(self.skipped)} skipped" if self.skipped else ""
        lines = [f"{count} of {total} task files cannot run ({len(as_written)} run "
                 f"as written, {len(warned)} with warnings{left_out}):"]  # fmt: skip
        for text in _merged(self.refused):
            lines += ["  " + line for line in text.splitlines()]
        if as_written:
            lines.append("  runs as written: " + ", ".join(as_written))
        for name, warnings in warned.items():
            lines.append(f"  runs with {len(warnings)} warning(s): {name}")
            lines += [f"    warning: {text}" for text in warnings]
        if self.skipped:
            lines.append("  skipped: " + ", ".join(self.skipped))
        super().__init__("\n".join(lines), hint="fix the refused files, or leave them out")

    def report(self) -> dict[str, Any]:
        """Each file's verdict as data (``assay plan --json`` on a folder that cannot run):
        ``refused`` (each error's ``file``, ``line``, ``field``, ``row_id``, ``message``,
        ``hint``), ``runs_as_written``, ``runs_with_warnings`` (file → its warnings),
        ``skipped``."""
        return {
            "refused": [{"file": str(e.file) if e.file is not None else None, "line": e.line,
                         "field": e.field, "row_id": e.row_id, "message": e.message,
                         "hint": e.hint} for e in self.refused],
            "runs_as_written": self.as_written,
            "runs_with_warnings": self.warned,
            "skipped": self.skipped,
        }  # fmt: skip


def _merged(errors: Sequence[UserError]) -> list[str]:
    """Each error rendered once; errors that differ only in their file (one ``--model`` or
    ``-D`` value that fails every task file) are one entry naming every file, and the same
    error without a file (an experiment variant's, for each task file) is listed once."""
    groups: dict[tuple[object, ...], list[UserError]] = {}
    for error in errors:
        same = (type(error), error.field, error.row_id, error.message, error.hint)
        key = (id(error),) if error.located else (*same, error.file is None)
        groups.setdefault(key, []).append(error)
    texts = []
    for group in groups.values():
        first = group[0]
        if len(group) == 1 or first.file is None:
            texts.append(first.render())
            continue
        places = (e.file + (f":{e.line}" if e.line else "") for e in group if e.file)
        where = ", ".join(dict.fromkeys(places))
        texts.append(UserError(first.message, file=where, field=first.field,
                               row_id=first.row_id, hint=first.hint).render())  # fmt: skip
    return texts


class DatasetError(UserError):
    """A dataset cannot be read, or one of its rows is invalid."""


class SelectionError(UserError):
    """A row selector (``--split``, sampling) cannot be applied as asked."""


class StoreError(UserError):
    """Bad input to the dataset store: a schema, an example, a version, a trace, a store URL."""


class UsageError(UserError):
    """A command-line flag or argument is invalid."""


class MissingKeyError(UsageError):
    """A model's API key is not in the environment. Its hint speaks of the block that names
    the model (``base_url``, ``api_key_env`` beside it), which a caller whose block has
    neither (a simulated user) replaces."""


class RunFailure(AssayError):
    """Something failed while running a row; the row ends ``ERROR`` with this message."""


class ModelError(RunFailure):
    """A model endpoint failed: connection refused, HTTP error, or an unusable reply.

    ``usage``: what the refused reply cost, when the server answered and billed it (a label
    outside the constraint, a reply cut at ``max_tokens``): the row counts it."""

    usage: object | None = None


class AgentError(RunFailure):
    """An agent could not run: its program is missing or it crashed before answering."""


class SandboxError(RunFailure):
    """A sandbox could not be prepared: a template is missing or ``pre_run`` failed."""


class BuildFailed(SandboxError):
    """A ``docker`` task's image did not build from its Dockerfile (the build's last lines):
    that task's rows end ``ERROR`` with it, the other tasks run (Coder Eval's
    ``BUILD_FAILED``)."""


class Interrupted(KeyboardInterrupt):
    """A command stopped by Ctrl-C or a signal after some of its work was kept: the message
    says what is kept and what finishes it (the command line prints it and exits 130)."""
