"""assay: evaluate LLMs and coding agents on the datasets their users bring.

The Python API (:mod:`assay.api`) is exported here and imported on first use, so the
command line starts without it::

    import assay
    result = assay.run("tasks/", sample=50)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from assay.version import __version__

if TYPE_CHECKING:
    from assay.api import (
        Gate,
        RunResult,
        Store,
        SuiteResult,
        add_judge,
        add_run_to_dataset,
        add_traces_to_dataset,
        calibrate_judge,
        check_secrets,
        compare,
        evaluate,
        evaluate_async,
        evaluate_predictions,
        export_rows,
        load_task,
        plan,
        power,
        report,
        resume,
        resume_async,
        run,
        run_async,
        task,
        task_schema,
        view_runs,
        write_html_report,
    )
    from assay.api.tasks import TaskDefinition
    from assay.errors import AssayError, RunFailure, UserError

_EXPORTS = {
    "AssayError": "assay.errors",
    "Gate": "assay.api",
    "RunFailure": "assay.errors",
    "RunResult": "assay.api",
    "Store": "assay.api",
    "SuiteResult": "assay.api",
    "TaskDefinition": "assay.api.tasks",
    "UserError": "assay.errors",
    "add_judge": "assay.api",
    "add_run_to_dataset": "assay.api",
    "add_traces_to_dataset": "assay.api",
    "calibrate_judge": "assay.api",
    "check_secrets": "assay.api",
    "compare": "assay.api",
    "evaluate": "assay.api",
    "evaluate_async": "assay.api",
    "evaluate_predictions": "assay.api",
    "export_rows": "assay.api",
    "load_task": "assay.api",
    "plan": "assay.api",
    "power": "assay.api",
    "report": "assay.api",
    "resume": "assay.api",
    "resume_async": "assay.api",
    "run": "assay.api",
    "run_async": "assay.api",
    "task": "assay.api",
    "task_schema": "assay.api",
    "view_runs": "assay.api",
    "write_html_report": "assay.api",
}

__all__ = [
    "AssayError",
    "Gate",
    "RunFailure",
    "RunResult",
    "Store",
    "SuiteResult",
    "TaskDefinition",
    "UserError",
    "__version__",
    "add_judge",
    "add_run_to_dataset",
    "add_traces_to_dataset",
    "calibrate_judge",
    "check_secrets",
    "compare",
    "evaluate",
    "evaluate_async",
    "evaluate_predictions",
    "export_rows",
    "load_task",
    "plan",
    "power",
    "report",
    "resume",
    "resume_async",
    "run",
    "run_async",
    "task",
    "task_schema",
    "view_runs",
    "write_html_report",
]


def __getattr__(name: str) -> Any:
    """Import an exported name, or a subpackage (``assay.api``), on first use (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        try:
            return importlib.import_module(f"assay.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"assay.{name}":
                raise  # the subpackage exists; something it imports is missing
            raise AttributeError(f"module 'assay' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
