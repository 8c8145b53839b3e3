"""Per-dataset metrics hooks: ``compute_metrics(records, per_sample_results)`` in a Python file.

As in ToMEval (``tasks/<DS>/metrics.py``), a dataset may add its own metrics. The task file
names the file (``qa.metrics_hook: metrics.py``, relative to the task's folder); it must
define ``compute_metrics(records, per_sample_results) -> dict``, called once per replicate
with the replicate's ``prediction.jsonl`` records and grades as plain dicts, in sample order
(each grade names its replicate both as ``replicate`` and as ToMEval's ``repeat``).
The returned dict must contain ``accuracy``, ``correct``, ``total`` and ``per_sample_results``
(ToMEval's contract); ToMEval's own ``metrics.py`` files therefore work unchanged once their
helpers come from assay: ``from assay.qa import base_metric_payload, generic_group_metrics,
first_value`` (ToMEval's ``src.evaluation.task_metrics``), which, like ``base_metrics`` and
``group_metrics``, take the plain dicts a hook receives.

The file is imported from its path (``importlib``), under a private module name that is
registered in ``sys.modules`` only while the file executes (so ``dataclasses`` work) and
removed afterwards: loading a hook leaves no process-wide state behind. Errors name the file
(``TaskFileError``):

- ``metrics hook not found: {path}``
- ``metrics hook {path} failed to import: {error}``
- ``{path}: must define compute_metrics(records, per_sample_results).``
- ``{path}: compute_metrics raised {error}`` (``SystemExit`` included)
- ``{path}: compute_metrics must return a dict, not {type}``
- ``{path}: compute_metrics returned a dict without {keys}`` (the missing required keys)
- ``{path}: compute_metrics returned {key}={value!r} (expected …); …``: ``correct``,
  ``total`` (and ``graded`` when given) non-negative integers with ``correct`` at most
  ``graded`` (else ``total``), ``accuracy`` from 0 to 1 or null, every value finite JSON
  (no NaN, no infinity, no Python objects).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from assay.errors import TaskFileError

MetricsHook = Callable[[list[dict[str, Any]], list[dict[str, Any]]], Mapping[str, Any]]

REQUIRED_KEYS = ("accuracy", "correct", "total", "per_sample_results")
HOOK_FUNCTION = "compute_metrics"


def load_metrics_hook(path: Path) -> MetricsHook:
    """Import ``compute_metrics`` from the Python file ``path``.

    Raises:
        TaskFileError: the file is missing, fails to import, or lacks the function.
    """
    if not path.is_file():
        raise TaskFileError(f"metrics hook not found: {path}", file=path, field="qa.metrics_hook")
    name = "_assay_metrics_hook_" + hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TaskFileError(f"metrics hook {path} is not a Python file", file=path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise TaskFileError(
            f"metrics hook {path} failed to import: {type(exc).__name__}: {exc}", file=path
        ) from exc
    finally:
        sys.modules.pop(name, None)
    function = getattr(module, HOOK_FUNCTION, None)
    if not callable(function):
        raise TaskFileError("must define compute_metrics(records, per_sample_results).", file=path)
    hook: MetricsHook = function
    return hook


def call_hook(
    hook: MetricsHook,
    records: list[dict[str, Any]],
    per_sample_results: list[dict[str, Any]],
    *,
    file: str | Path,
) -> dict[str, Any]:
    """Call ``hook`` and check its result (:func:`check_hook_result`).

    Raises:
        TaskFileError: the hook raised, or returned an invalid result (naming ``file``).
    """
    try:
        result = hook(records, per_sample_results)
    except (Exception, SystemExit) as exc:  # a hook's sys.exit() must not end assay silently
        raise TaskFileError(
            f"compute_metrics raised {type(exc).__name__}: {exc}{_where(exc, file)}", file=file
        ) from exc
    return check_hook_result(result, file=file)


def _where(exc: BaseException, file: str | Path) -> str:
    """`` (at line N)`` of the hook file's deepest frame in the traceback, or ``""``."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == Path(file)]
    return f" (at line {frames[-1].lineno})" if frames else ""


def check_hook_result(result: Any, *, file: str | Path) -> dict[str, Any]:
    """Return ``result`` as a dict if it holds the required keys with sensible types.

    Raises:
        TaskFileError: not a dict, a missing key, or ``correct``/``total`` not integers,
            ``accuracy`` not a number or null, ``per_sample_results`` not a list.
    """
    if not isinstance(result, Mapping):
        raise TaskFileError(
            f"compute_metrics must return a dict, not {type(result).__name__}", file=file
        )
    missing = [key for key in REQUIRED_KEYS if key not in result]
    if missing:
        raise TaskFileError(
            f"compute_metrics returned a dict without {', '.join(missing)}",
            file=file,
            hint="return at least accuracy, correct, total and per_sample_results",
        )
    problems = _type_problems(result)
    if problems:
        raise TaskFileError(f"compute_metrics returned {'; '.join(problems)}", file=file)
    return dict(result)


def _type_problems(result: Mapping[str, Any]) -> list[str]:
    problems = []
    for key in ("correct", "total", "graded"):
        value = result.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            problems.append(f"{key}={value!r} (expected a non-negative integer)")
    if not problems and result["correct"] > result.get("graded", result["total"]):
        denominator = "graded" if "graded" in result else "total"
        problems.append(f"correct={result['correct']} greater than {denominator}="
                        f"{result[denominator]}")  # fmt: skip
    accuracy = result["accuracy"]
    number = isinstance(accuracy, int | float) and not isinstance(accuracy, bool)
    if accuracy is not None and not (number and 0 <= accuracy <= 1):
        problems.append(f"accuracy={accuracy!r} (expected a number from 0 to 1, or null)")
    if not isinstance(result["per_sample_results"], list):
        problems.append("per_sample_results that is not a list")
    for key, value in result.items():
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            problems.append(f"{key} that cannot be written as JSON ({exc})")
    return problems
