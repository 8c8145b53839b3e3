"""What this machine can do for assay, from Python (``assay doctor``)."""

from __future__ import annotations

import os

from assay.sandbox.doctor import DriverCheck, check_drivers


def sandbox_drivers(*, path_variable: str | None = None) -> list[DriverCheck]:
    """Which sandbox drivers work here (a bwrap sandbox is made and each container engine
    asked, for real), why the others do not with the fix for each, and which
    ``sandbox.limits`` fields each enforces here.

    Args:
        path_variable: the ``PATH`` rows get (default: this process's).
    """
    path = os.environ.get("PATH", "") if path_variable is None else path_variable
    return check_drivers(path_variable=path)
