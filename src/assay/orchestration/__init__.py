"""Loading task files, expanding datasets, planning and running work items."""

from assay.orchestration.expand import expand_dataset
from assay.orchestration.plan import build_plan
from assay.orchestration.task_loader import load_task

__all__ = ["build_plan", "expand_dataset", "load_task"]
