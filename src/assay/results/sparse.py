"""Files with holes (sparse files): where their data lies, so a secret scan, a redacted
rewrite or a copy reads only that.

A hole reads as zeros and is stored as nothing (``truncate -s 1G big`` makes a 1 GiB file of
one hole); ``lseek(2)`` with ``SEEK_DATA`` / ``SEEK_HOLE`` (Linux 3.1, on ext4, XFS, Btrfs,
tmpfs and overlayfs) tells where each stretch of data starts and ends. A file system that
cannot tell reports the whole file as data. Zeros hold no secret, no newline and no text, so
leaving a hole out changes neither what a scan finds nor the line it names.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

Extent = tuple[int, int]
"""``(start, end)``: byte offsets of one stretch of a file's data, ``end`` excluded."""


SMALL_HOLE = 1 << 20
"""A hole shorter than this (bytes) is read as the zeros it holds, with the data on either
side: a file of a byte every 8 KiB is thousands of stretches, each read and scanned alone
cost far more than reading it whole (a break-test: a secret scan of 100 MB took 73 s, and
5 s read whole)."""


def data_extents(fd: int, size: int) -> list[Extent]:
    """The stretches of data of the open file ``fd`` within its first ``size`` bytes, in
    order, two apart by less than :data:`SMALL_HOLE` taken as one (empty for a file that is
    all hole); ``[(0, size)]`` where the file system does not tell holes apart.

    Raises:
        OSError: the file cannot be read (not a hole's ``ENXIO``, which ends the data).
    """
    extents: list[Extent] = []
    offset = 0
    while offset < size:
        try:
            start = os.lseek(fd, offset, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # only a hole is left
                break
            if exc.errno == errno.EINVAL and not extents:  # no hole support here
                return [(0, size)]
            raise
        if start >= size:
            break
        end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
        if extents and start - extents[-1][1] < SMALL_HOLE:
            extents[-1] = (extents[-1][0], end)
        else:
            extents.append((start, end))
        offset = end
    return extents


def read_range(fd: int, start: int, end: int) -> bytes:
    """Bytes ``start`` to ``end`` of the open file ``fd`` (fewer when it ends sooner)."""
    parts, offset = [], start
    while offset < end:
        part = os.pread(fd, end - offset, offset)
        if not part:
            break
        parts.append(part)
        offset += len(part)
    return b"".join(parts)


def data_blocks(handle: BinaryIO, block: int) -> Iterator[bytes]:
    """The data of the open file ``handle`` in blocks of at most ``block`` bytes, its holes
    left out, a single NUL byte in place of each hole between two stretches of data (so the
    bytes on either side are never read as one run of text).

    Raises:
        OSError: the file cannot be read.
    """
    fd = handle.fileno()
    for index, (start, end) in enumerate(data_extents(fd, os.fstat(fd).st_size)):
        if index:
            yield b"\0"
        for offset in range(start, end, block):
            data = read_range(fd, offset, min(end, offset + block))
            if not data:
                return
            yield data


COPY_CHUNK = 8 << 20
"""Bytes read and written at a time when a sparse file's data is copied."""


def copy_file(source: str | Path, target: str | Path) -> str | Path:
    """Copy the file ``source`` to ``target`` with its mode and times, as
    :func:`shutil.copy2` does, but its holes kept holes: only its data is read and written
    (``copy2`` writes a 1 GiB file of one hole out as 1 GiB of zeros). ``target``, so it
    serves as :func:`shutil.copytree`'s ``copy_function``.

    Raises:
        OSError: ``source`` cannot be read or ``target`` written (``shutil.SpecialFileError``
            for a named pipe, as ``copy2``: opening one would block).
    """
    if not stat.S_ISREG(os.stat(source).st_mode):
        return shutil.copy2(source, target)
    with open(source, "rb") as reader:
        fd = reader.fileno()
        size = os.fstat(fd).st_size
        extents = data_extents(fd, size)
        if extents == [(0, size)]:  # no hole: the system's own fast copy
            reader.close()
            return shutil.copy2(source, target)
        with open(target, "wb") as writer:
            for start, end in extents:
                for offset in range(start, end, COPY_CHUNK):
                    data = read_range(fd, offset, min(end, offset + COPY_CHUNK))
                    os.pwrite(writer.fileno(), data, offset)
            writer.truncate(size)
    shutil.copystat(source, target)
    return target
