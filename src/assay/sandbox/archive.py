"""A sandbox as bytes: how a kept sandbox made on another machine reaches the run folder.

:func:`pack` makes an uncompressed tar of a sandbox (symlinks kept as symlinks, file modes
and times kept); :func:`unpack` recreates it at a new path. As :meth:`Sandbox.copy_to` does,
an absolute symlink that pointed inside the packed sandbox points to the same place inside
the new one; every other link is kept as it was. Members that would land outside the
destination (absolute names, ``..``) and device files are refused (``tarfile``'s ``tar``
filter, Python's extraction safety rules).
"""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

from assay.errors import SandboxError


def pack(root: Path) -> bytes:
    """The tar archive of the folder ``root``'s contents (member names relative to it).

    Raises:
        SandboxError: a file cannot be read.
    """
    buffer = io.BytesIO()
    try:
        with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
            for entry in sorted(os.listdir(root)):
                archive.add(root / entry, arcname=entry, recursive=True)
    except OSError as exc:
        raise SandboxError(f"cannot pack the sandbox {root}: {exc}") from exc
    return buffer.getvalue()


def unpack(data: bytes, destination: Path, *, origin: str) -> None:
    """Recreate a packed sandbox at ``destination`` (a new folder).

    Args:
        data: what :func:`pack` returned.
        destination: the folder to create.
        origin: where the sandbox was when it was packed (its absolute symlinks into itself
            are pointed into ``destination``).

    Raises:
        SandboxError: ``destination`` exists or cannot be made, or a member is unsafe.
    """
    real_origin = origin.rstrip("/")

    def relocate(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
        if member.issym() and os.path.isabs(member.linkname):
            target = member.linkname
            if target == real_origin or target.startswith(real_origin + "/"):
                member = member.replace(
                    linkname=str(destination) + target[len(real_origin) :], deep=False
                )
        return tarfile.tar_filter(member, path)

    try:
        destination.mkdir(parents=True)
        with tarfile.open(fileobj=io.BytesIO(data), mode="r") as archive:
            archive.extractall(destination, filter=relocate)
    except (OSError, tarfile.TarError) as exc:
        raise SandboxError(f"cannot unpack the sandbox into {destination}: {exc}") from exc
