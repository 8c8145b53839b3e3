"""assay: evaluate LLMs and coding agents on the datasets their users bring.

The top level holds the run verbs and their result types, imported on first use so the
command line starts without them::

    import assay
    result = assay.run("tasks/", sample=50)
    result = assay.run("tasks/", selection=assay.Selection(sample=50),
                       execution=assay.Execution(jobs=8))

The other verbs live with what they serve: the store's in :mod:`assay.store` (``Store``,
``add_run_to_dataset``, ``add_traces_to_dataset``), the judges' in :mod:`assay.judges`
(``add_judge``), the viewer's in :mod:`assay.view` (``view_runs``, ``export_rows``,
``write_html_report``), and every verb in :mod:`assay.api` (``calibrate_judge``, whose agent
judges run agents, ``convert_qa``, …). Their old names at the top still work, with a
``DeprecationWarning`` naming the new place.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

from assay.version import __version__

if TYPE_CHECKING:
    from assay.api import (
        Execution,
        Gate,
        LoadedTask,
        ModelCalls,
        Outputs,
        Plan,
        RunResult,
        Selection,
        SuiteResult,
        check_secrets,
        compare,
        evaluate,
        evaluate_async,
        evaluate_predictions,
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
    )
    from assay.api.tasks import TaskDefinition
    from assay.errors import AssayError, RunFailure, UserError

__all__ = [
    "AssayError",
    "Execution",
    "Gate",
    "LoadedTask",
    "ModelCalls",
    "Outputs",
    "Plan",
    "RunFailure",
    "RunResult",
    "Selection",
    "SuiteResult",
    "TaskDefinition",
    "UserError",
    "__version__",
    "check_secrets",
    "compare",
    "evaluate",
    "evaluate_async",
    "evaluate_predictions",
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
]
_HOMES = {"AssayError": "assay.errors", "RunFailure": "assay.errors",
          "UserError": "assay.errors", "TaskDefinition": "assay.api.tasks"}  # fmt: skip
_EXPORTS = {name: _HOMES.get(name, "assay.api") for name in __all__ if name != "__version__"}
_MOVED = {
    "Store": "assay.store", "add_traces_to_dataset": "assay.store", "add_judge": "assay.judges",
    "view_runs": "assay.view", "export_rows": "assay.view", "write_html_report": "assay.view",
    "calibrate_judge": "assay.api", "add_run_to_dataset": "assay.store",
}  # fmt: skip
"""Names the top level exported before they moved to the package they serve."""


def __getattr__(name: str) -> Any:
    """Import an exported name, or a subpackage (``assay.api``), on first use (PEP 562); a
    moved name (:data:`_MOVED`) with a ``DeprecationWarning``."""
    module = _EXPORTS.get(name)
    if module is None and name in _MOVED:
        warnings.warn(f"assay.{name} is {_MOVED[name]}.{name} now; the top level keeps the "
                      "run verbs", DeprecationWarning, stacklevel=2)  # fmt: skip
        return getattr(importlib.import_module(_MOVED[name]), name)
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


SUBPACKAGES = ("api", "errors", "judges", "qa", "store", "view")
"""The packages beside the run verbs that ``dir(assay)`` lists (tab completion finds the
verbs that moved there)."""


def __dir__() -> list[str]:
    return sorted([*__all__, *SUBPACKAGES])
