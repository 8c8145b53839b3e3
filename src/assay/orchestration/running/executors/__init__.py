"""Executors: what runs a run's rows (:mod:`.base` describes the seam)."""

from assay.orchestration.running.executors.base import (
    EXECUTORS,
    Execution,
    ExecutionContext,
    Executor,
    ExecutorChoice,
    ExecutorKind,
    PendingItems,
)
from assay.orchestration.running.executors.factory import make_executor

__all__ = [
    "EXECUTORS",
    "Execution",
    "ExecutionContext",
    "Executor",
    "ExecutorChoice",
    "ExecutorKind",
    "PendingItems",
    "make_executor",
]
