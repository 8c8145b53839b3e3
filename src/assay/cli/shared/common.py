"""What every command shares: printing a user error (exit 2), a warning, and the secrets a
scan found."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console
from rich.markup import escape

from assay.errors import UserError
from assay.results.printable import shown_controls

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def err() -> Console:
    """Standard error, without highlighting or hard wrapping."""
    return Console(stderr=True, highlight=False, soft_wrap=True)


def fail(error: UserError) -> typer.Exit:
    """Print a user error and return the exit (code 2)."""
    err().print(f"[bold red]error:[/] {escape(error.render())}", markup=True)
    return typer.Exit(EXIT_USAGE)


def warn(text: str) -> None:
    """Print one warning on standard error."""
    err().print(f"[yellow]warning:[/] {escape(text)}", markup=True)


def secret_findings(run_dir: str, findings: list[str], *, clean_too: bool = False) -> None:
    """Each secret found in the run folder (``file:line: kind``, to stderr), or, with
    ``clean_too``, that there is none (to stdout)."""
    if not findings:
        if clean_too:
            Console(highlight=False, soft_wrap=True).print(f"no secret found in {escape(run_dir)}")
        return
    for finding in findings:
        err().print(f"[bold red]secret found:[/] {escape(finding)}", markup=True)
    many = f"{len(findings)} secret" + ("s" if len(findings) != 1 else "")
    err().print(f"[bold red]error:[/] {many} found in {escape(run_dir)}: remove them before "
                "sharing the folder (exit code 1)", markup=True)  # fmt: skip


@contextmanager
def user_errors() -> Iterator[None]:
    """Print a :class:`UserError` raised in the block and exit 2; an interruption (Ctrl-C,
    SIGTERM, SIGHUP: :func:`assay.orchestration.running.signals.interrupting_signals`) says
    what it kept, if anything (:class:`~assay.errors.Interrupted`), and exits 130."""
    try:
        yield
    except UserError as exc:
        raise fail(exc) from None
    except KeyboardInterrupt as exc:
        err().print(f"interrupted{': ' + str(exc) if str(exc) else ''}", markup=False)
        raise typer.Exit(EXIT_INTERRUPTED) from None


def for_terminal(text: str) -> str:
    """``text`` with its control characters but tab, line feed and carriage return shown as
    ``\\x1b`` and the like (:func:`~assay.results.printable.shown_controls`)."""
    return shown_controls(text)
