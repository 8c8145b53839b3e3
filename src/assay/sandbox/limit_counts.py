"""What the kernel counted against a row's limits, and the sentence a row's error gives when
it reached one (the ``docker`` driver's programs say the same, see
:mod:`assay.sandbox.docker_exec`)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class LimitCounts:
    """Counts read from a row's control groups (cgroup v1).

    Attributes:
        oom_kills: the row's processes the kernel killed for memory (``memory.oom_control``'s
            ``oom_kill``).
        refused_forks: new processes or threads the kernel refused at the row's process
            limit (``pids.events``' ``max``).
    """

    oom_kills: int = 0
    refused_forks: int = 0


NOTHING_COUNTED = LimitCounts()


def limit_note(
    now: LimitCounts, *, since: LimitCounts, memory_mb: int | None, max_pids: int | None
) -> str | None:
    """The row's error when a count grew from ``since`` to ``now``: memory first (a kill
    ends a program; refused forks may follow from it), else the process limit; ``None``
    when neither grew (or its limit is not set)."""
    if memory_mb and now.oom_kills > since.oom_kills:
        return (f"killed for memory: the row's processes passed sandbox.limits.max_memory_mb "
                f"({memory_mb} MiB)")  # fmt: skip
    refused = now.refused_forks - since.refused_forks
    if max_pids and refused > 0:
        return (f"{refused} fork(s) refused: the row's processes reached "
                f"sandbox.limits.max_pids ({max_pids})")  # fmt: skip
    return None


LAUNCHER_NOTE = re.compile(r"^assay: (killed for memory: .*)$", re.MULTILINE)
"""The last line a ``docker`` row's program gets on stderr when the kernel killed one of its
processes for memory (:mod:`assay.sandbox.docker_exec`, which imports nothing of assay)."""


def launcher_notes(stderr: str) -> list[str]:
    """The memory kills the ``docker`` driver's launcher named on a program's ``stderr``
    (:data:`LAUNCHER_NOTE`), without their ``assay:`` prefix, in order."""
    return LAUNCHER_NOTE.findall(stderr)
