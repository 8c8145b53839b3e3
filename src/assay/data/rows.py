"""Load a task's rows: inline ``rows`` or ``paths`` (JSONL, CSV, Parquet or Arrow), concatenated
in order.

Each row remembers where it came from (file and line, or the task file's ``dataset.rows[i]``)
so that every later error can point at it.
"""

from __future__ import annotations

import json
import os
import tempfile
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, overload

from assay.data.arrowrows import is_arrow_file, iter_arrow
from assay.data.csvrows import iter_csv
from assay.data.hashing import file_hash
from assay.data.jsonl import iter_jsonl
from assay.errors import DatasetError

CSV_SUFFIXES = (".csv",)


@dataclass
class RowSource:
    """One file (or the inline list) that contributed rows ``[start, start + count)``, and the
    ``sha256`` of the file's bytes (``None`` for inline rows and stored examples)."""

    name: str
    start: int
    lines: array[int] = field(default_factory=lambda: array("l"))
    sha256: str | None = None


Packed = bytes | dict[str, Any]


def pack_row(row: dict[str, Any]) -> Packed:
    """A row as compact JSON (UTF-8): a fifth of the memory of the dict it decodes to; a row
    JSON cannot give back exactly (a YAML date, a number as a key, a NaN) stays a dict."""
    try:
        data = json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError):
        return row
    return data if json.loads(data) == row else row


def unpack_row(data: Packed) -> dict[str, Any]:
    """The row :func:`pack_row` packed (a new dict each time)."""
    if isinstance(data, dict):
        return dict(data)
    row: dict[str, Any] = json.loads(data)
    return row


SPILL_BYTES = 1 << 20
READ_BYTES = 1 << 18


class RowList(Sequence[dict[str, Any]]):
    """A dataset's rows, each kept as compact JSON (:func:`pack_row`) and decoded when read.

    Up to ``spill_bytes`` of packed rows (1 MiB by default) stay in memory; beyond that every
    row is written to an anonymous temporary file (deleted when the list is, or when the
    process ends) and read back by offset (``os.pread``, safe from any thread), so a plan
    of a million rows holds 8 bytes a row instead of the row. Each read returns a new dict
    (change it freely; the list does not change). A pickled list carries its rows (a plan
    sent to another machine) and spills again there.
    """

    def __init__(self, rows: Iterable[dict[str, Any]] = (), *,
                 spill_bytes: int = SPILL_BYTES) -> None:  # fmt: skip
        self._spill_bytes = spill_bytes
        self._memory: list[Packed] = []  # every row, until the list spills
        self._held = 0  # bytes in _memory
        self._file: IO[bytes] | None = None
        self._offsets = array("q", [0])  # row i is file bytes [offsets[i], offsets[i + 1])
        self._dicts: dict[int, dict[str, Any]] = {}  # spilled rows JSON cannot hold (pack_row)
        self._dirty = False
        self.extend(rows)

    def append(self, row: dict[str, Any]) -> None:
        """Add a row at the end."""
        self._add(pack_row(row))

    def extend(self, rows: Iterable[dict[str, Any]]) -> None:
        """Add rows at the end."""
        for row in rows:
            self._add(pack_row(row))

    def _add(self, data: Packed) -> None:
        if self._file is None:
            self._memory.append(data)
            self._held += len(data) if isinstance(data, bytes) else 1024
            if self._held > self._spill_bytes:
                self._spill()
            return
        if isinstance(data, dict):
            self._dicts[len(self._offsets) - 1] = data
            data = b""
        self._file.write(data)
        self._offsets.append(self._offsets[-1] + len(data))
        self._dirty = True

    def _spill(self) -> None:
        """Move the rows held in memory to the temporary file."""
        held, self._memory, self._held = self._memory, [], 0
        self._file = tempfile.TemporaryFile(prefix="assay-rows-")  # noqa: SIM115 - kept open
        for data in held:
            self._add(data)

    def packed(self, index: int) -> Packed:
        """Row ``index`` as compact JSON (or the dict, see :func:`pack_row`).

        Raises:
            IndexError: no such row.
        """
        if self._file is None:
            return self._memory[index]
        count = len(self._offsets) - 1
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError(index)
        found = self._dicts.get(index)
        if found is not None:
            return found
        self._flush()
        start = self._offsets[index]
        return os.pread(self._file.fileno(), self._offsets[index + 1] - start, start)

    def _flush(self) -> None:
        if self._dirty and self._file is not None:
            self._file.flush()
            self._dirty = False

    def __len__(self) -> int:
        return len(self._memory) if self._file is None else len(self._offsets) - 1

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [unpack_row(self.packed(i)) for i in range(*index.indices(len(self)))]
        return unpack_row(self.packed(index))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for data in self.iter_packed(range(len(self))):
            yield unpack_row(data)

    def iter_packed(self, indexes: Iterable[int]) -> Iterator[Packed]:
        """The rows at ``indexes`` (ascending is fastest: a spilled list is then read in
        blocks of :data:`READ_BYTES`, not a system call a row), as :meth:`packed` gives
        them."""
        if self._file is None:
            yield from (self._memory[index] for index in indexes)
            return
        self._flush()
        fd, offsets = self._file.fileno(), self._offsets
        block, first = b"", 0  # file bytes [first, first + len(block))
        for index in indexes:
            found = self._dicts.get(index)
            if found is not None:
                yield found
                continue
            start, end = offsets[index], offsets[index + 1]
            if start < first or end > first + len(block):
                first = start
                block = os.pread(fd, max(READ_BYTES, end - start), start)
            yield block[start - first : end - first]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RowList | list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a mutable sequence, like a list

    def __getstate__(self) -> dict[str, Any]:
        return {"rows": [self.packed(i) for i in range(len(self))],
                "spill_bytes": self._spill_bytes}  # fmt: skip

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(spill_bytes=state["spill_bytes"])  # type: ignore[misc]
        for data in state["rows"]:
            self._add(data)


@dataclass
class Rows:
    """The rows of a dataset, in order, with their origins.

    Attributes:
        items: the row objects (JSON objects, or CSV records as ``dict[str, str]``), kept
            compact (:class:`RowList`).
        sources: one :class:`RowSource` per file, in order.
    """

    items: RowList = field(default_factory=RowList)
    sources: list[RowSource] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.items)

    def origin(self, index: int) -> tuple[str, int | None]:
        """Return ``(file name, line)`` of row ``index``; line is ``None`` for inline rows."""
        for source in reversed(self.sources):
            if index >= source.start:
                offset = index - source.start
                line = source.lines[offset] if offset < len(source.lines) else None
                return source.name, line
        raise IndexError(index)  # pragma: no cover - every index has a source


def read_rows_file(path: Path, *, display: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line, row)`` from a file: CSV when the name ends in .csv, Parquet or Arrow
    (``.parquet``/``.pq``/``.arrow``/``.feather``/``.ipc``, the line being the row number),
    else JSONL."""
    if path.suffix.lower() in CSV_SUFFIXES:
        yield from iter_csv(path, display=display)
    elif is_arrow_file(path):
        yield from iter_arrow(path, display=display)
    else:
        yield from iter_jsonl(path, display=display)


def load_rows(
    *,
    inline: list[dict[str, Any]] | None,
    paths: list[str] | None,
    base_dir: Path,
    task_file: str,
) -> Rows:
    """Read the rows named by a ``dataset:`` block.

    Args:
        inline: ``dataset.rows`` as written in the task file, or ``None``.
        paths: ``dataset.paths``, relative to ``base_dir`` unless absolute, or ``None``.
        base_dir: the task file's directory.
        task_file: the task file's name, for inline rows' origins.

    Raises:
        DatasetError: a file cannot be read or a line is invalid (see the readers).
    """
    rows = Rows()
    if inline is not None:
        rows.sources.append(RowSource(f"{task_file} (dataset.rows)", 0))
        rows.items.extend(dict(row) for row in inline)
        return rows
    for raw, path, display in dataset_files(paths, base_dir=base_dir):
        source = RowSource(raw if not Path(raw).is_absolute() else str(path), len(rows.items))
        rows.sources.append(source)
        for line, row in read_rows_file(path, display=display):
            rows.items.append(row)
            source.lines.append(line)
        source.name = display
        source.sha256 = file_hash(path)
    return rows


def dataset_files(paths: list[str] | None, *, base_dir: Path) -> list[tuple[str, Path, str]]:
    """``(as written, path, as shown)`` of each of ``dataset.paths``: relative to
    ``base_dir`` unless absolute, shown relative to the working directory when inside it."""
    found = []
    for raw in paths or []:
        path = Path(raw) if Path(raw).is_absolute() else base_dir / raw
        found.append((raw, path, str(path) if Path(raw).is_absolute() else _display(path)))
    return found


def iter_dataset(
    *, inline: list[dict[str, Any]] | None, paths: list[str] | None, base_dir: Path
) -> Iterator[dict[str, Any]]:
    """The rows of a ``dataset:`` block one at a time, in order (what :func:`load_rows`
    reads, without keeping them).

    Raises:
        DatasetError: a file cannot be read or a line is invalid (see the readers).
    """
    if inline is not None:
        yield from (dict(row) for row in inline)
        return
    for _, path, display in dataset_files(paths, base_dir=base_dir):
        yield from (row for _, row in read_rows_file(path, display=display))


def _display(path: Path) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def check_inline_rows(inline: list[Any], task_file: str) -> None:
    """Inline rows must be objects (mappings).

    Raises:
        DatasetError: naming the index of the first row that is not a mapping.
    """
    for index, row in enumerate(inline):
        if not isinstance(row, dict):
            raise DatasetError(
                f"dataset.rows[{index}] is not an object: {row!r}",
                file=task_file,
                field=f"dataset.rows[{index}]",
            )
