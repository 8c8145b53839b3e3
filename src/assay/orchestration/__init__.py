"""Loading task files, expanding datasets, planning and running work items."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from assay.lazy import lazy_exports

if TYPE_CHECKING:
    from assay.orchestration.loading.task_loader import load_task
    from assay.orchestration.planning.expand import expand_dataset
    from assay.orchestration.planning.plan import build_plan

# each name's module, imported on first use (PEP 562): importing the package, as the
# command line does for one of its modules, imports none of them
_EXPORTS = MappingProxyType(
    {
        "expand_dataset": "assay.orchestration.planning.expand",
        "build_plan": "assay.orchestration.planning.plan",
        "load_task": "assay.orchestration.loading.task_loader",
    }
)

__all__ = ["build_plan", "expand_dataset", "load_task"]


__getattr__ = lazy_exports("assay.orchestration", _EXPORTS)
