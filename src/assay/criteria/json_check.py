"""``json_check``: the text parses as JSON, matches a JSON Schema, and passes JMESPath
assertions (Coder Eval's scoring and details, ``reference/coder_eval_agents.md`` §2).

Order: a missing file or text that is not JSON scores 0.0 (``Invalid JSON in '<path>':
<reason>``); with neither schema nor assertion, JSON scores 1.0 (``'<path>' is valid
JSON``); a schema that rejects the data scores 0.0 overall and the assertions are skipped;
else the score is the mean of the schema (1.0) and the fraction of assertions that pass. An
assertion whose evaluation raises (comparing a string with a number) fails alone. A schema
that cannot be used (its file is missing or is not a valid schema) cannot grade the row: the
criterion's error. The schema's draft comes from its ``$schema`` (default 2020-12); a
``$ref`` to another document is not fetched.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, ClassVar

from assay.criteria import patterns
from assay.criteria.base import (
    Criterion,
    CriterionError,
    EvidenceError,
    GradingContext,
    Text,
    basic_result,
    read_text,
)
from assay.results.task_result import CriterionResult
from assay.spec.file_criteria import JsonAssertion, JsonCheck

_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(.*?)\n\s*```\s*$", re.DOTALL)
_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str, "number": (int, float), "boolean": bool, "array": list, "object": dict,
    "null": type(None),
}  # fmt: skip


def _is_type(actual: Any, expected: Any) -> bool:
    if isinstance(actual, bool):
        return bool(expected == "boolean")
    return expected in _TYPES and isinstance(actual, _TYPES[expected])


OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "equals": lambda actual, expected: bool(actual == expected),
    "not_equals": lambda actual, expected: bool(actual != expected),
    "contains": lambda actual, expected: expected in actual,
    "gt": lambda actual, expected: bool(actual > expected),
    "gte": lambda actual, expected: bool(actual >= expected),
    "lt": lambda actual, expected: bool(actual < expected),
    "lte": lambda actual, expected: bool(actual <= expected),
    "type": _is_type,
    "regex": lambda actual, expected: patterns.search(expected, actual) is not None,
    "exists": lambda actual, _: actual is not None,
}
"""Each operator as a predicate on ``(actual, expected)``."""


class JsonCheckCriterion(JsonCheck, Criterion):
    """Grades ``json_check``; see the module docstring."""

    graded_after_crash: ClassVar[bool] = True

    async def check(self, context: GradingContext) -> CriterionResult:
        """Parse, validate, assert; JSON nested deeper than Python's recursion allows (the
        agent's to write) scores 0.0, never an error of assay's."""
        text = read_text(self.path, context, utf8=True)
        if text.value is None:
            what = f"File {text.source}" if self.path else "The final response"
            return basic_result(self, 0.0, f"{what} does not exist")
        try:
            return self._graded(text, context)
        except RecursionError:
            return basic_result(self, 0.0, f"{text.source} nests too deep to read or check "
                                "(past Python's recursion limit)")  # fmt: skip

    def _graded(self, text: Text, context: GradingContext) -> CriterionResult:
        assert text.value is not None  # the caller scored an absent one
        try:
            data = _parse(text.value, fenced=self.path is None)
        except ValueError as exc:
            return basic_result(self, 0.0, f"Invalid JSON in {text.source}: {exc}")
        if self.json_schema is None and not self.assertions:
            return basic_result(self, 1.0, f"{text.source} is valid JSON")
        scores: list[float] = []
        parts: list[str] = []
        if self.json_schema is not None:
            valid, detail = check_against(_schema(self.json_schema, context), data)
            scores.append(1.0 if valid else 0.0)
            parts.append(detail)
            if not valid and self.assertions:
                parts += ["Assertions: skipped (schema failed)", "Score: 0.00"]
                return basic_result(self, 0.0, "; ".join(parts))
        if self.assertions:
            fraction, detail = run_assertions(self.assertions, data)
            scores.append(fraction)
            parts.append(detail)
        score = sum(scores) / len(scores)
        parts.append(f"Score: {score:.2f}")
        return basic_result(self, score, "; ".join(parts))


def _parse(text: str, *, fenced: bool) -> Any:
    """JSON from ``text``; a response wrapped in a Markdown code fence is read inside it.

    Raises:
        ValueError: not JSON.
    """
    try:
        return json.loads(text)
    except ValueError:
        found = _FENCE.match(text) if fenced else None
        if found is None:
            raise
        return json.loads(found.group(1))


def _schema(source: str | dict[str, Any], context: GradingContext) -> dict[str, Any]:
    """The schema: inline, or read from its file in the sandbox.

    Raises:
        EvidenceError: the file (in the sandbox, where the agent could change it) is missing,
            is not JSON, or is not an object.
    """
    if isinstance(source, dict):
        return source
    text = read_text(source, context)
    if text.value is None:
        raise EvidenceError(f"Schema file '{source}' not found")
    try:
        schema = json.loads(text.value)
    except ValueError as exc:
        raise EvidenceError(f"Invalid JSON in schema file '{source}': {exc}") from None
    if not isinstance(schema, dict):
        raise EvidenceError(f"Schema: malformed schema — '{source}' is not an object")
    from jsonschema import SchemaError  # on use: a run without json_check does not load it
    from jsonschema.validators import Draft202012Validator, validator_for

    try:
        validator_for(schema, default=Draft202012Validator).check_schema(schema)
    except SchemaError as exc:  # (an inline schema was checked when the task loaded)
        raise EvidenceError(f"Schema: malformed schema — {exc.message}") from None
    return schema


def check_against(schema: dict[str, Any], data: Any) -> tuple[bool, str]:
    """Validate ``data``: ``(valid, "Schema: valid" | "Schema: invalid — <why> (at <path>)")``.

    Raises:
        CriterionError: the schema refers to a document assay does not fetch.
    """
    from jsonschema.exceptions import best_match
    from jsonschema.validators import Draft202012Validator, validator_for
    from referencing.exceptions import Unresolvable

    validator = validator_for(schema, default=Draft202012Validator)(schema)
    try:
        error = best_match(validator.iter_errors(data))
    except Unresolvable as exc:
        raise CriterionError(f"Schema: malformed schema — cannot resolve {exc}") from None
    if error is None:
        return True, "Schema: valid"
    where = "/" + "/".join(str(p) for p in error.absolute_path)
    return False, f"Schema: invalid — {error.message} (at {where})"


def run_assertions(assertions: list[JsonAssertion], data: Any) -> tuple[float, str]:
    """``(passed / total, "Assertions: k/n passed (<failures>)")``."""
    import jmespath

    passed = 0
    failures: list[str] = []
    for item in assertions:
        try:
            actual = jmespath.search(item.expression, data)
            if OPERATORS[item.operator](actual, item.expected):
                passed += 1
                continue
            if item.operator == "exists":  # (no expected value to show)
                failures.append(f"'{item.expression}' exists: nothing there (missing or null)")
            else:
                failures.append(f"'{item.expression}' {item.operator}: expected "
                                f"{item.expected!r}, got {actual!r}")  # fmt: skip
        except Exception as exc:  # one assertion's failure: a type clash, a bad regex
            failures.append(f"'{item.expression}': error — {type(exc).__name__}: {exc}")
    detail = f"Assertions: {passed}/{len(assertions)} passed"
    if failures:
        detail += f" ({'; '.join(failures)})"
    return passed / len(assertions), detail
