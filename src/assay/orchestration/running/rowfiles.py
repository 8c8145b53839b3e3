"""A finished row's files: made where the row ran (:func:`row_files`), written into the run
folder by the one process that owns it (:func:`write_row`).

A row is done exactly when its ``task.json`` exists: ``response.txt``, ``trace.json``,
``task.log`` and a kept sandbox are written first, ``task.json`` last and atomically, so a
row whose files were cut off runs again on resume, whichever executor or machine ran it.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

from assay.agents.base import AgentOutcome
from assay.errors import SandboxError
from assay.results.io import LOG_BLOCK, Writer, dumps, make_dirs
from assay.results.printable import shown_controls
from assay.results.status import FinalStatus
from assay.results.task_result import EvaluationResult
from assay.results.trace import to_otlp_json
from assay.sandbox.archive import unpack
from assay.sandbox.tempdir import Sandbox
from assay.sandbox.trees import remove_tree

SANDBOX_DIR = "sandbox"
ATTEMPT_FILES = ("task.json", "response.txt", "trace.json")  # and every *.log, and sandbox/
UNWRITABLE = "the row's files could not be written"


@dataclass
class RowFiles:
    """The contents of one finished row's files.

    Attributes:
        result: ``task.json``.
        log: ``task.log``'s text.
        response: ``response.txt`` (``None``: the agent gave no response, no file).
        trace: ``trace.json``'s text (``None``: no spans beyond the row's own).
        sandbox: a kept sandbox packed by :func:`assay.sandbox.archive.pack` on the machine
            that ran the row (``None``: not kept, or kept in place by a local run).
        sandbox_origin: where that sandbox was when it was packed.
        logs: the output logs of the row's programs (``agent.stdout.log``...) packed on a
            node of a cluster (``None``: none, or written in place by a local run).
    """

    result: EvaluationResult
    log: str
    response: str | None = None
    trace: str | None = None
    sandbox: bytes | None = None
    sandbox_origin: str = ""
    logs: bytes | None = None


@dataclass
class FinishedRow:
    """A row as it ended, before its files are made (:meth:`files`, done off the event loop).

    Attributes:
        result: its ``task.json``.
        outcome: what its agent did (response, spans or a stored trace).
        log: ``task.log``'s lines.
        sandbox: a kept sandbox packed on the machine that ran the row, and where it was.
        logs: its output logs packed on a node of a cluster (:attr:`RowFiles.logs`).
    """

    result: EvaluationResult
    outcome: AgentOutcome
    log: list[str]
    sandbox: tuple[bytes, str] | None = None
    logs: bytes | None = None

    def files(self) -> RowFiles:
        """Everything the row writes, as text (the trace serialized as OTLP JSON)."""
        outcome, trace = self.outcome, None
        if outcome.stored_trace is not None:
            trace = dumps(outcome.stored_trace, compact=True)
        elif len(outcome.spans) > 1:
            trace = dumps(to_otlp_json(outcome.spans), compact=True)
        archive, origin = self.sandbox or (None, "")
        return RowFiles(self.result, "\n".join(self.log) + "\n", outcome.response, trace,
                        archive, origin, self.logs)  # fmt: skip


def made_files(finished: FinishedRow) -> RowFiles:
    """``finished``'s files; a row whose trace JSON refuses (a NaN, say) ends ``ERROR``
    with the reason instead, as when its files cannot be written."""
    try:
        return finished.files()
    except (ValueError, TypeError) as exc:
        return RowFiles(_unwritable(finished.result, exc), "\n".join(finished.log) + "\n")


def write_finished(directory: Path, finished: FinishedRow, writer: Writer) -> EvaluationResult:
    """:func:`write_row` of ``finished``'s files (made here, in the writer thread)."""
    return write_row(directory, made_files(finished), writer=writer)


def _unwritable(result: EvaluationResult, exc: Exception) -> EvaluationResult:
    return result.model_copy(update={
        "final_status": FinalStatus.ERROR,
        "error_message": f"{UNWRITABLE}: {exc}",
        "success_criteria_results": [], "weighted_score": None,
    })  # fmt: skip


def disk_full(result: EvaluationResult) -> bool:
    """The row's files could not be written because the run folder's disk is full (or its
    quota spent): every later row would fail the same way."""
    message = result.error_message or ""
    return message.startswith(UNWRITABLE) and any(
        f"[Errno {code}]" in message for code in (errno.ENOSPC, errno.EDQUOT)
    )


def unwritten(result: EvaluationResult, directory: Path) -> bool:
    """The row ended without any file (not even its ``task.json`` saying why): the reports
    take it from memory, and a resumed run runs it again."""
    message = result.error_message or ""
    return message.startswith(UNWRITABLE) and not (directory / "task.json").is_file()


def clear_attempt(directory: Path) -> None:
    """Remove what an earlier attempt of this row left in its folder (a row run again by
    ``--resume``, ``--retry-errors`` or ``--rerun-changed``), so the folder holds only the new
    attempt's files: ``task.json`` first (a row cut off here is one that never finished),
    then ``response.txt``, ``trace.json``, ``task.log``, every output log (``agent.stdout.log``,
    ``pre_run-1.stderr.log``, ``command-2.stdout.log``...) and the kept ``sandbox/``. Only
    those: a folder of another row that lies inside this one (a row id with ``/``) and any
    other file stay. A missing folder is left missing."""
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name != "task.json")
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        if entry.name == SANDBOX_DIR and entry.is_dir(follow_symlinks=False):
            remove_tree(entry.path)
        elif entry.is_symlink() or not entry.is_file(follow_symlinks=False):
            continue
        elif entry.name in ATTEMPT_FILES or entry.name.endswith(".log"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)


def write_row(directory: Path, files: RowFiles, *, writer: Writer) -> EvaluationResult:
    """Write a finished row's files through ``writer`` (the run's) and return its result;
    safe to call from a writer thread.

    A row whose files cannot be written (a full disk, a file where its folder should be, a
    value JSON refuses) ends ``ERROR`` with the reason, written in their place when that
    is possible; when even that fails the row is reported without files (a resumed run
    runs it again), and the run goes on (unless the disk is full: :func:`disk_full`, and
    the runner starts no more rows).
    """
    try:
        write_row_files(directory, files, writer=writer)
    except Exception as exc:  # one row's files never end the run, a bug included
        result = _unwritable(files.result, exc)
        with contextlib.suppress(Exception):
            write_row_files(directory, RowFiles(result, files.log), writer=writer)
        return result
    return files.result


def write_row_files(directory: Path, files: RowFiles, *, writer: Writer) -> None:
    """Write a row's files; ``task.json`` last, atomically, so it alone marks a finished row
    (the files before it are written in place: a row without ``task.json`` runs again).

    Every file goes through ``writer``, and so do the files of the row's sandbox when
    it is kept in the run folder (so ``assay evaluate`` grades the redacted files): every
    file of it, whatever times the row gave them (:meth:`Sandbox.redact
    <assay.sandbox.tempdir.Sandbox.redact>`)."""
    make_dirs(directory)
    if files.response is not None:
        writer.text(directory / "response.txt", files.response, atomic=False)
    if files.trace is not None:
        writer.json_lines(directory / "trace.json", files.trace, atomic=False)
    # read in a terminal (cat, tail): the agent's escape sequences are shown, not obeyed
    writer.text(directory / "task.log", shown_controls(files.log, keep="\t\n"), atomic=False)
    if files.logs is not None:
        write_logs(files.logs, directory, writer=writer)
    kept = directory / SANDBOX_DIR
    if files.sandbox is not None:
        if kept.exists():  # a resumed row ran again from scratch
            shutil.rmtree(kept)
        unpack(files.sandbox, kept, origin=files.sandbox_origin)
    if files.result.sandbox_path is not None and writer.redacts:
        Sandbox(kept).redact(writer)
    writer.model(directory / "task.json", files.result)


def write_logs(data: bytes, directory: Path, *, writer: Writer) -> None:
    """Write output logs packed on a node of a cluster (:func:`~assay.sandbox.archive.pack`
    of its log folder) into the row's ``directory``, each streamed through a
    :class:`~assay.results.io.StreamLog`: every secret this process knows is redacted (a
    node is not given them all), and no log is held in memory twice.

    Raises:
        SandboxError: the archive is damaged, or a member is not a plain file of the folder.
    """
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r") as archive:
            for member in archive:
                source = archive.extractfile(member) if member.isfile() else None
                name = member.name
                if source is None or Path(name).name != name or name.startswith("."):
                    raise SandboxError(f"the row's packed logs hold {name!r}, not a log")
                log = writer.stream(directory / name, max_bytes=member.size)
                try:
                    while chunk := source.read(LOG_BLOCK):
                        log.write(chunk)
                finally:
                    log.close()
    except tarfile.TarError as exc:
        raise SandboxError(f"cannot read the row's packed logs: {exc}") from exc
