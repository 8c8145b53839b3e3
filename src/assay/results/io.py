"""Writing result files: atomically, as UTF-8, never with NaN in JSON, never with a secret.

A file is written to a temporary name in the same directory and renamed over the target, so
a reader (or a resumed run) sees either the old file or the complete new one, never half.
:func:`write_text` writes in place, for files that a later atomic file vouches for.

Every file goes through a :class:`Writer`, the one door out: it holds the known secrets
(a :class:`~assay.results.secrets.Redactor`) and redacts them on the way to the disk, here,
rather than each producer of a file (which names no secret and no redactor). A run has one
writer (``Plan.writer``); a command that writes outside a run makes its own from the
environment; :data:`PLAIN` writes what cannot hold a secret. JSON is redacted as data
(every string, keys included, then serialized again), so a redacted file is always valid
JSON; that slower path is taken only when the text holds a known value. The functions below
the writer (``write_text_atomic``, ``write_json_atomic``...) are its primitives.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from assay.errors import UsageError
from assay.results.secrets import Redactor, replace_spans, stream_cut, stream_spans

if TYPE_CHECKING:  # pydantic is imported when a file is first written: not to print help
    from pydantic import BaseModel

    from assay.results.secret_scan import SecretFinding

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def write_text_atomic(path: Path, text: str, *, redactor: Redactor | None) -> None:
    """Write ``text`` to ``path`` (UTF-8) by rename; creates parent directories.

    The temporary name carries the process and thread ids, so two writers never share one.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        write_text(tmp, text, redactor=redactor)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: Path, text: str, *, redactor: Redactor | None) -> None:
    """Write ``text`` to ``path`` (UTF-8, no newline translation; a lone surrogate is written
    as a backslash escape, a known secret as its marker), creating parent directories; not
    atomic (a JSON file holds U+FFFD in its place: :func:`without_surrogates`).

    For a row's files written before its ``task.json``, which alone marks the row finished:
    a kill mid-way leaves a row without ``task.json``, which a resumed run runs again. Plain
    ``os`` calls: three system calls (open, write, close), where ``open()`` makes six, and a
    writer thread gives up the GIL around each one.
    """
    if redactor is not None:
        text = redactor.redact(text)
    data = text.encode("utf-8", "backslashreplace")
    try:
        handle = os.open(path, _CREATE, 0o666)
    except FileNotFoundError:
        make_dirs(path.parent)
        handle = os.open(path, _CREATE, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(handle, view) :]
    finally:
        os.close(handle)


def make_dirs(directory: Path) -> None:
    """Create ``directory`` and missing parents (``mkdir -p``), in two system calls when
    only it and its parent are new (a row's ``<row_id>/<NN>``).

    Raises:
        OSError: a path on the way is a file, or the disk refuses.
    """
    for path in (directory.parent, directory):
        try:
            os.mkdir(path)
        except FileExistsError:
            continue
        except FileNotFoundError:
            os.makedirs(directory, exist_ok=True)
            return


def check_output_file(path: Path, option: str) -> None:
    """Refuse an output file that cannot be written, before anything is written: ``path`` a
    folder, its folder impossible to create (it is created when missing, as every writer
    here would) or not writable. ``option`` names it in the message (``--junit-xml``,
    ``-o``); every command-line option that names a file assay writes is checked here.

    Raises:
        UsageError: ``{option} {path} is a folder; give a file name``, or why its folder
            cannot be created or written.
    """
    if path.is_dir():
        raise UsageError(f"{option} {path} is a folder; give a file name")
    _check_creatable(path.parent, f"{option} {path}: its folder")


def check_output_folder(path: Path, option: str) -> None:
    """Refuse an output folder that cannot be written, before anything is written and
    without creating it (the writer does, so a command that fails first leaves nothing):
    ``path`` a file, impossible to create or not writable.

    Raises:
        UsageError: ``{option} {path} is a file, not a folder``, or why it cannot be created
            or written.
    """
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option} {path} is a file, not a folder")
    _check_creatable(path, f"{option} {path}")


def _check_creatable(folder: Path, what: str) -> None:
    """``folder`` exists and is writable, or its nearest existing ancestor is a writable
    folder (so ``mkdir -p`` would make it); nothing is created.

    Raises:
        UsageError: ``{what} cannot be created: A is a file``, or not writable.
    """
    existing = folder.absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"{what} cannot be created: {existing} is a file, not a folder")
    check_writable_folder(existing, what if existing == folder.absolute() else
                          f"{what} cannot be created")  # fmt: skip


def check_writable_folder(folder: Path, what: str) -> None:
    """Create and delete a temporary file in ``folder`` (what a writer that renames does).

    Raises:
        UsageError: ``{what}: cannot write in {folder}: ...``.
    """
    import tempfile

    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".assay-probe-"):
            pass
    except OSError as exc:
        raise UsageError(f"{what}: cannot write in {folder}: {exc.strerror or exc}") from None


def without_surrogates(data: Any) -> Any:
    """``data`` (JSON data) with every lone surrogate in its strings and keys replaced by
    U+FFFD: a model's reply cut inside an emoji (``"\\ud800"``, valid JSON) that UTF-8, and so
    every JSON file, cannot hold."""
    if isinstance(data, str):
        return _LONE_SURROGATE.sub("\ufffd", data)
    if isinstance(data, dict):
        return {without_surrogates(k): without_surrogates(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [without_surrogates(v) for v in data]
    return data


def dumps(data: Any, *, compact: bool = False) -> str:
    """JSON text with two-space indent (or compact) and a newline.

    Indented text comes from pydantic-core's compiled serializer: the standard library
    indents in pure Python, about 15 times slower (6.5 s for a 100,000-sample
    ``metrics.json``). NaN and infinities are refused either way: the serializer writes them
    as bare ``NaN``/``Infinity`` tokens, so text without those letters holds none, and text
    with them (an answer that says "NaN") is checked exactly by the standard encoder.

    Raises:
        ValueError: ``data`` contains NaN or an infinity (``allow_nan=False``).
    """
    if compact:
        return json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n"
    import pydantic_core

    try:
        text = pydantic_core.to_json(data, indent=2, inf_nan_mode="constants").decode("utf-8")
    except pydantic_core.PydanticSerializationError:  # a lone surrogate: U+FFFD in its place
        data = without_surrogates(data)
        text = pydantic_core.to_json(data, indent=2, inf_nan_mode="constants").decode("utf-8")
    if "NaN" in text or "Infinity" in text:
        json.dumps(data, allow_nan=False)  # raises ValueError on a real NaN or infinity
    return text + "\n"


def redact_json(text: str, redactor: Redactor | None, *, compact: bool = False) -> str:
    """JSON ``text`` (one document, or JSON Lines when ``compact``) with every known secret
    replaced in its strings; ``text`` itself when it holds none."""
    if redactor is None or not redactor.contains(text):
        return text
    if compact and text.count("\n") > 1:
        return "".join(redact_json(line + "\n", redactor, compact=True)
                       for line in text.splitlines() if line)  # fmt: skip
    return dumps(redactor.redact_data(json.loads(text)), compact=compact)


def write_json_atomic(
    path: Path, data: Any, *, compact: bool = False, redactor: Redactor | None
) -> None:
    """Write ``data`` (a pydantic model or plain JSON data) to ``path`` atomically."""
    from pydantic import BaseModel

    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json")
    text = redact_json(dumps(data, compact=compact), redactor, compact=compact)
    write_text_atomic(path, text, redactor=None)  # redacted as data above


def write_model_atomic(path: Path, model: BaseModel, *, redactor: Redactor | None) -> None:
    """Write a result model with pydantic's own (compiled) serializer, for per-row files.

    Result models reject NaN and infinities when built (``allow_inf_nan=False``), so the
    output never holds them.
    """
    from pydantic_core import PydanticSerializationError

    try:
        text = model.model_dump_json(indent=2) + "\n"
    except PydanticSerializationError:  # a lone surrogate (see without_surrogates)
        text = dumps(without_surrogates(model.model_dump(mode="json")))
    write_text_atomic(path, redact_json(text, redactor), redactor=None)  # redacted as data


@dataclass(frozen=True)
class Writer:
    """The one way assay writes a file: every file of a run, a report, a store export or a
    calibration goes through a writer, which redacts ``secrets`` on the way to the disk, so
    no producer of a file names a secret or a redactor.

    A run has one writer (its plan's secrets: the environment's, its models' credentials,
    secret ``agent.env`` values, the bridge credentials' shape; more may join while it
    runs); a command that writes outside a run makes its own from the environment's secrets
    (:meth:`from_environment`); :data:`PLAIN` writes what cannot hold a secret (a test's
    fixture, a default where the caller knows none). Text is redacted as text, JSON as data
    (every string, keys included, then serialized again: a redacted file is valid JSON).

    Attributes:
        secrets: the known secrets (``None``: nothing is redacted, not even token shapes).
    """

    secrets: Redactor | None = None

    @classmethod
    def from_environment(cls, environ: Mapping[str, str], *, names: Iterable[str] = ()) -> Writer:
        """A writer of the secrets of ``environ`` (and of the variables ``names``)."""
        return cls(Redactor.from_environment(environ, names=names))

    @classmethod
    def shapes_only(cls) -> Writer:
        """A writer that knows no secret but still redacts the well-known token shapes."""
        return cls(Redactor())

    def text(self, path: Path, text: str, *, atomic: bool = True) -> None:
        """Write ``text`` to ``path`` (UTF-8), by rename unless ``atomic`` is false (a row's
        files written before the ``task.json`` that vouches for them)."""
        (write_text_atomic if atomic else write_text)(path, text, redactor=self.secrets)

    def json(self, path: Path, data: Any, *, compact: bool = False) -> None:
        """Write ``data`` (a pydantic model or JSON data) to ``path`` atomically.

        Raises:
            ValueError: ``data`` holds NaN or an infinity.
        """
        write_json_atomic(path, data, compact=compact, redactor=self.secrets)

    def model(self, path: Path, model: BaseModel) -> None:
        """Write a result model with pydantic's own serializer, atomically."""
        write_model_atomic(path, model, redactor=self.secrets)

    def json_lines(self, path: Path, lines: str, *, atomic: bool = True) -> None:
        """Write JSON Lines text (each line redacted as data) to ``path``."""
        text = redact_json(lines, self.secrets, compact=True)
        (write_text_atomic if atomic else write_text)(path, text, redactor=None)

    def append(self, path: Path, text: str) -> None:
        """Append ``text`` to ``path`` (created when missing; not atomic: a log)."""
        with path.open("a", encoding="utf-8") as handle:
            handle.write(self.redact(text))

    @contextlib.contextmanager
    def open(self, path: Path) -> Iterator[WrittenFile]:
        """A file written piece by piece and put in place by rename when the block ends (a
        reader never sees half of it; an exception leaves the old file or none); its
        folder is made when missing.

        Raises:
            OSError: the file cannot be created or written.
        """
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        make_dirs(path.parent)
        try:
            with tmp.open("w", encoding="utf-8") as handle:
                yield WrittenFile(handle, self)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def redact(self, text: str) -> str:
        """``text`` as this writer writes it (for a file written piece by piece)."""
        return self.secrets.redact(text) if self.secrets is not None else text

    def redact_data(self, data: Any) -> Any:
        """JSON data as this writer stores it (every string redacted; a store's rows)."""
        return self.secrets.redact_data(data) if self.secrets is not None else data

    def finds_secret(self, data: bytes) -> bool:
        """Whether ``data`` holds one of this writer's known secrets (not a token shape:
        :meth:`Redactor.find_bytes <assay.results.secrets.Redactor.find_bytes>`)."""
        return self.secrets is not None and bool(self.secrets.find_bytes(data))

    def redact_bytes(self, data: bytes) -> bytes:
        """``data`` as this writer writes it; ``data`` itself when nothing is redacted."""
        return self.secrets.redact_bytes(data) if self.secrets is not None else data

    def spans(self, data: bytes) -> list[tuple[int, int, str]]:
        """``(start, end, marker)`` of what this writer would replace in ``data`` (a known
        secret, or a token shape even when it knows no secret): where a stream kept in part
        must not be cut (:func:`~assay.results.secrets.stream_cut`)."""
        return stream_spans(data, self.secrets)

    @property
    def withheld(self) -> frozenset[str]:
        """The variables whose whole value this writer redacts: a row's programs are not
        given them (:attr:`Redactor.names <assay.results.secrets.Redactor.names>`)."""
        return self.secrets.names if self.secrets is not None else frozenset()

    @property
    def redacts(self) -> bool:
        """Whether this writer redacts anything (a known secret, or the token shapes)."""
        return bool(self.secrets)

    def redact_json(self, text: str, *, compact: bool = False) -> str:
        """JSON ``text`` as this writer writes it (see :func:`redact_json`)."""
        return redact_json(text, self.secrets, compact=compact)

    def scan(self, folder: Path, *, extra_files: Iterable[Path] = ()) -> list[SecretFinding]:
        """What :func:`~assay.results.secret_scan.scan_run` finds in ``folder`` (and
        ``extra_files``) after writing: a known secret or a token shape still on disk."""
        from assay.results.secret_scan import scan_run

        return scan_run(folder, self.secrets or Redactor(), extra_files=list(extra_files))

    def stream(self, path: Path, *, max_bytes: int) -> StreamLog:
        """A :class:`StreamLog` of one program's stream at ``path``, redacted by this writer.

        Raises:
            OSError: the file cannot be created.
        """
        return StreamLog(path, redactor=self.secrets, max_bytes=max_bytes)

    def logs(self, folder: Path, max_bytes: int) -> LogFolder:
        """The :class:`LogFolder` of a row's programs in ``folder``, redacted by this writer."""
        return LogFolder(folder, self, max_bytes)


@dataclass(frozen=True)
class WrittenFile:
    """A file :meth:`Writer.open` writes: each piece redacted by its writer."""

    handle: TextIO
    writer: Writer

    def write(self, text: str) -> None:
        """Write ``text``, redacted as text."""
        self.handle.write(self.writer.redact(text))

    def write_json(self, text: str) -> None:
        """Write compact JSON (or JSON Lines) ``text``, redacted as data; it ends in a
        newline only when ``text`` does."""
        shown = self.writer.redact_json(text, compact=True)
        self.handle.write(shown if text.endswith("\n") else shown.rstrip("\n"))


PLAIN = Writer()
"""The writer of files that cannot hold a secret (nothing is redacted)."""


def read_text_as_written(path: Path) -> str | None:
    """A UTF-8 text file assay wrote (``response.txt``), its line endings as written
    (``\r\n`` and ``\r`` kept: a response is graded, stored and exported as it was);
    ``None`` when there is none."""
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            return handle.read()
    except (FileNotFoundError, IsADirectoryError):
        return None


def read_json(path: Path) -> Any:
    """Read a JSON file written by assay."""
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


ModelT = TypeVar("ModelT", bound="BaseModel")


def read_model(path: Path, model: type[ModelT]) -> ModelT | None:
    """``path`` read as ``model`` (a ``run.json``, a ``plan.json``), or ``None`` when the file
    is missing or is not valid JSON of that model."""
    if not path.is_file():
        return None
    try:
        return model.model_validate(read_json(path))
    except (ValueError, OSError):
        return None


REDACT_WINDOW = 1 << 16
"""Bytes of a stream a :class:`StreamLog` holds back before writing: a secret or token
shorter than this that arrives split across two chunks is still redacted whole."""
LOG_BLOCK = 1 << 20
"""Bytes a :class:`StreamLog` gathers before it redacts and writes them (one search of the
secrets and token shapes per block, not per 64 KiB chunk of a pipe)."""


class StreamLog:
    """One output stream of a program, written to ``path`` as it arrives: redacted like every
    file assay writes, and cut at ``max_bytes`` of the stream with a last line saying so.

    At most ``block`` bytes (:data:`LOG_BLOCK`) plus ``window`` (:data:`REDACT_WINDOW`) are
    held in memory: each block is redacted and written but for its last ``window`` bytes,
    which are searched again with the next block, and the cut never splits a secret or a
    token (:meth:`Redactor.spans_bytes`). A file that cannot be written (a full disk) stops
    being written; :attr:`error` says why.

    Attributes:
        received: bytes of the stream given to :meth:`write`.
        written: bytes of the stream written (before redaction), at most ``max_bytes``.
        error: why the file could not be written (``None``: it was).

    Raises:
        OSError: from the constructor, when the file cannot be created.
    """

    def __init__(
        self,
        path: Path,
        *,
        redactor: Redactor | None,
        max_bytes: int,
        window: int = REDACT_WINDOW,
        block: int = LOG_BLOCK,
    ) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.received = 0
        self.written = 0
        self.error: str | None = None
        self._redactor = redactor
        self._window = window
        self._block = block
        self._carry = b""
        self._ahead = b""  # the stream's first bytes past max_bytes, to see a split secret
        self._pending: list[bytes] = []
        self._size = 0
        try:
            self._handle: int | None = os.open(path, _CREATE, 0o666)
        except FileNotFoundError:
            make_dirs(path.parent)
            self._handle = os.open(path, _CREATE, 0o666)

    @property
    def dropped(self) -> int:
        """Bytes of the stream past ``max_bytes``, not written."""
        return self.received - self.written

    def write(self, chunk: bytes) -> None:
        """Take the next ``chunk`` of the stream."""
        self.received += len(chunk)
        room = self.max_bytes - self.written
        if room < len(chunk) and len(self._ahead) < self._window:
            self._ahead += chunk[max(room, 0) :][: self._window - len(self._ahead)]
        if room <= 0 or not chunk:
            return
        chunk = chunk[:room]
        self.written += len(chunk)
        self._pending.append(chunk)
        self._size += len(chunk)
        if self._size >= self._block:
            self._flush(final=False)

    def _flush(self, *, final: bool) -> None:
        """Redact and write what is gathered: all of it when ``final`` (up to where
        :func:`~assay.results.secrets.stream_cut` ends it when the stream passed
        ``max_bytes``), else all but the last ``window`` bytes (moved back to the start of a
        secret or token they would split, or for one longer than the window, on to its
        end)."""
        data = b"".join([self._carry, *self._pending])
        self._pending, self._size = [], 0
        if final and self._ahead:  # cut at max_bytes: keep no secret or token in part
            seen = data + self._ahead
            spans = stream_spans(seen, self._redactor)
            cut = stream_cut(seen, len(data), spans)
            self.written -= len(data) - cut
            spans = spans if self._redactor is not None else []
        else:
            cut = len(data) if final else max(0, len(data) - self._window)
            spans = self._redactor.spans_bytes(data) if self._redactor is not None else []
            for start, end, _ in sorted(spans, reverse=True):
                if start < cut < end:
                    cut = start if len(data) - start <= 2 * self._window else end
        self._emit(replace_spans(data[:cut], [s for s in spans if s[1] <= cut]))
        self._carry = data[cut:]

    def _emit(self, data: bytes) -> None:
        if self._handle is None or not data:
            return
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._handle, view) :]
        except OSError as exc:
            self.error = exc.strerror or type(exc).__name__
            self._close_handle()

    def close(self) -> None:
        """Write what is held back, and the cut's line when the stream passed ``max_bytes``."""
        self._flush(final=True)
        if self.dropped:
            cut = (f"\n[assay: log cut after {self.written} bytes (sandbox.limits."
                   f"max_log_mb); {self.dropped} more bytes not written]\n")  # fmt: skip
            self._emit(cut.encode())
        self._close_handle()

    def _close_handle(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(OSError):
                os.close(self._handle)
            self._handle = None


@dataclass(frozen=True)
class OutputLogs:
    """Where one program's output streams go once one passes what is kept of it in memory:
    ``<folder>/<name>.stdout.log`` and ``<name>.stderr.log``, each cut at ``max_bytes``."""

    folder: Path
    name: str
    writer: Writer
    max_bytes: int

    def path(self, stream: str) -> Path:
        """The file of ``stream`` (``stdout`` or ``stderr``)."""
        return self.folder / f"{self.name}.{stream}.log"

    def open(self, stream: str) -> StreamLog:
        """A new :class:`StreamLog` of ``stream``.

        Raises:
            OSError: the file cannot be created.
        """
        return self.writer.stream(self.path(stream), max_bytes=self.max_bytes)


@dataclass
class LogFolder:
    """A row's folder, where the output of each program it runs is written whole
    (:class:`OutputLogs`) once a stream passes ``sandbox.limits.max_output_mb``; each
    program gets its own name (``agent``, ``pre_run-1``, ``command-2``...).

    Attributes:
        path: the row's folder (made when the first file is written).
        writer: the run's writer.
        max_bytes: what each file holds at most (``sandbox.limits.max_log_mb``).
    """

    path: Path
    writer: Writer
    max_bytes: int
    taken: set[str] = field(default_factory=set)

    def logs(self, name: str | None = None) -> OutputLogs:
        """The logs of the next program: ``name`` (``command-N`` when ``None``), made unique
        within the row by a number."""
        base = name or "command"
        chosen, number = (base, 1) if name else (f"{base}-1", 1)
        while chosen in self.taken:
            number += 1
            chosen = f"{base}-{number}"
        self.taken.add(chosen)
        return OutputLogs(self.path, chosen, self.writer, self.max_bytes)
