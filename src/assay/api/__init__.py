"""The public Python API: every ``assay`` command is one of these calls, and the command line
and the pytest plugin call only these. ``import assay`` exports them (``docs/api.md`` lists
the whole surface).

```python
import assay

result = assay.run("examples/sentiment/sentiment_classification.yaml", jobs=8)
suite = result.suite("sentiment-classification")
print(result.exit_code, suite.metrics["accuracy"], [g.passed for g in suite.gates])
for row in suite.rows():                # read from the task.json files as you go
    print(row.row_id, row.final_status)
```

Errors are the exception tree of :mod:`assay.errors` (``UserError`` for bad input,
``RunFailure`` for what failed while running), never ``SystemExit``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay.lazy import lazy_exports

if TYPE_CHECKING:
    from assay.api.grading import (
        check_secrets,
        compare,
        evaluate,
        evaluate_async,
        evaluate_predictions,
        report,
    )
    from assay.api.judges import calibrate_judge
    from assay.api.machine import agent_clis, criterion_programs, sandbox_drivers
    from assay.api.options import Execution, ModelCalls, Outputs, Selection
    from assay.api.power import power
    from assay.api.result import Gate, RunResult, SuiteResult
    from assay.api.runs import (
        PlanKeywords,
        ResumeKeywords,
        RunKeywords,
        SessionKeywords,
        plan,
        resume,
        resume_async,
        run,
        run_async,
    )
    from assay.api.tasks import load_task, task, task_schema
    from assay.api.tools import cache_stats, clear_cache, convert_qa
    from assay.judges import add_judge
    from assay.orchestration.loading.task_loader import LoadedTask
    from assay.orchestration.planning.plan import Plan
    from assay.store import Store, add_run_to_dataset, add_traces_to_dataset
    from assay.view import export_rows, view_runs, write_html_report

_MODULES = {
    "assay.api.grading": (
        "check_secrets",
        "compare",
        "evaluate",
        "evaluate_async",
        "evaluate_predictions",
        "report",
    ),
    "assay.api.result": ("Gate", "RunResult", "SuiteResult"),
    "assay.api.options": ("Execution", "ModelCalls", "Outputs", "Selection"),
    "assay.api.runs": (
        "PlanKeywords",
        "ResumeKeywords",
        "RunKeywords",
        "SessionKeywords",
        "plan",
        "resume",
        "resume_async",
        "run",
        "run_async",
    ),
    "assay.api.judges": ("calibrate_judge",),
    "assay.judges": ("add_judge",),
    "assay.orchestration.loading.task_loader": ("LoadedTask",),
    "assay.orchestration.planning.plan": ("Plan",),
    "assay.api.machine": ("agent_clis", "criterion_programs", "sandbox_drivers"),
    "assay.api.power": ("power",),
    "assay.api.tasks": ("load_task", "task", "task_schema"),
    "assay.api.tools": ("cache_stats", "clear_cache", "convert_qa"),
    "assay.view": ("export_rows", "view_runs", "write_html_report"),
    "assay.store": ("Store", "add_run_to_dataset", "add_traces_to_dataset"),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}

__all__ = [
    "Execution",
    "Gate",
    "LoadedTask",
    "ModelCalls",
    "Outputs",
    "Plan",
    "PlanKeywords",
    "ResumeKeywords",
    "RunKeywords",
    "RunResult",
    "Selection",
    "SessionKeywords",
    "Store",
    "SuiteResult",
    "add_judge",
    "add_run_to_dataset",
    "add_traces_to_dataset",
    "agent_clis",
    "cache_stats",
    "calibrate_judge",
    "check_secrets",
    "clear_cache",
    "compare",
    "convert_qa",
    "criterion_programs",
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
    "sandbox_drivers",
    "task",
    "task_schema",
    "view_runs",
    "write_html_report",
]


# each name imported on first use (PEP 562), so a command imports only what it calls (the
# store's SQLAlchemy only for the store, …), and kept in this namespace once imported
__getattr__ = lazy_exports("assay.api", _HOME, keep=globals())


def __dir__() -> list[str]:
    return sorted(__all__)
