"""Per-row working directories and the processes run in them.

``Sandbox`` and ``SandboxEscape`` (:mod:`assay.sandbox.tempdir`) are imported when first
used, so a light module of the package (:mod:`assay.sandbox.trees`, which every command's
start-up sweep of old scratch folders uses) does not bring in the task model with them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.sandbox.tempdir import Sandbox, SandboxEscape


def __getattr__(name: str) -> Any:
    if name in ("Sandbox", "SandboxEscape"):
        from assay.sandbox import tempdir

        return getattr(tempdir, name)
    raise AttributeError(f"module 'assay.sandbox' has no attribute {name!r}")


__all__ = ["Sandbox", "SandboxEscape"]
