"""Which executor runs a run's rows: the factory over :mod:`.base`'s seam.

Kept apart from :mod:`.base` so that the seam does not import its implementations
(they import the seam), and Ray is imported only when ``ray`` is chosen.
"""

from __future__ import annotations

from assay.errors import UsageError
from assay.orchestration.running.executors.base import EXECUTORS, Executor, ExecutorChoice


def make_executor(choice: ExecutorChoice) -> Executor:
    """The executor ``choice`` names (Ray is imported only for ``ray``).

    Raises:
        UsageError: an unknown kind.
    """
    if choice.kind not in EXECUTORS:
        raise UsageError(f"unknown executor {choice.kind!r}; choose one of {', '.join(EXECUTORS)}")
    if choice.kind == "ray":
        from assay.orchestration.running.executors.ray_executor import RayExecutor

        return RayExecutor(address=choice.address, files=choice.files)
    from assay.orchestration.running.executors.local import LocalExecutor

    return LocalExecutor()
