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

from assay.api.grading import compare, evaluate, evaluate_async, evaluate_predictions, report
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
from assay.api.tasks import load_task, task
from assay.store import Store

__all__ = [
    "Gate",
    "PlanKeywords",
    "ResumeKeywords",
    "RunKeywords",
    "RunResult",
    "SessionKeywords",
    "Store",
    "SuiteResult",
    "compare",
    "evaluate",
    "evaluate_async",
    "evaluate_predictions",
    "load_task",
    "plan",
    "report",
    "resume",
    "resume_async",
    "run",
    "run_async",
    "task",
]
