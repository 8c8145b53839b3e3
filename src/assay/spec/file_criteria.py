"""Criteria over the files and programs a coding task leaves, as users write them.

Coder Eval's ``file_contains``, ``file_matches_regex``, ``json_check`` and ``pytest``
(``reference/coder_eval_agents.md`` §2: fields, defaults and load-time messages as there).
As every text criterion of assay, the first three read ``path`` in the sandbox or, when
``path`` is omitted, the agent's final response. Everything that can be checked before a row
runs is checked when the task is loaded: regexes, JMESPath expressions, an inline JSON
Schema, operators and their ``expected`` values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, StrictInt, StrictStr, field_validator, model_validator

from assay.spec.base import StrictModel
from assay.spec.criterion_base import CriterionSpec, check_relative_path, regex_flags

JSON_TYPES = ("string", "number", "boolean", "array", "object", "null")
OPERATORS = ("equals", "not_equals", "contains", "gt", "gte", "lt", "lte", "type", "regex",
             "exists")  # fmt: skip
MIN_CONTAINS_LITERAL = 8
"""A string ``contains`` literal needs this many non-blank characters (Coder Eval's rule)."""


class FileContains(CriterionSpec):
    """Strings that must (``includes``) and must not (``excludes``) be in the text.

    Score: the mean of the active parts, ``found / len(includes)`` and ``1 − present /
    len(excludes)``; a missing file scores 0.0.
    """

    type: Literal["file_contains"]
    path: StrictStr | None = None
    includes: list[StrictStr]
    excludes: list[StrictStr] | None = None

    _path = field_validator("path")(check_relative_path)

    @model_validator(mode="after")
    def _no_empty_items(self) -> FileContains:
        for name in ("includes", "excludes"):
            if any(not item for item in getattr(self, name) or []):
                raise ValueError(
                    f"{name} has an empty item, which every text contains "
                    "(a row whose value is empty or null?)"
                )
        return self


class FileMatchesRegex(CriterionSpec):
    """1.0 when ``re.search(pattern)`` finds a match (``must_match``) or finds none
    (``must_match: false``). ``flags``: Coder Eval's integer (``re.IGNORECASE`` 2,
    ``re.MULTILINE`` 8, ``re.DOTALL`` 16), or letters and names as in ``file_check``."""

    type: Literal["file_matches_regex"]
    path: StrictStr | None = None
    pattern: StrictStr
    must_match: bool = True
    flags: StrictInt | StrictStr | list[StrictStr] | None = 0

    _path = field_validator("path")(check_relative_path)

    @model_validator(mode="after")
    def _compiles(self) -> FileMatchesRegex:
        if "${" in self.pattern:
            return self
        try:
            re.compile(self.pattern, regex_flags(self.flags))
        except re.error as exc:
            raise ValueError(f"Invalid regex pattern: {exc} (pattern {self.pattern!r})") from None
        return self


class JsonAssertion(StrictModel):
    """One JMESPath assertion: ``expression`` evaluated on the JSON, compared by ``operator``
    with ``expected`` (not needed by ``exists``; an explicit ``null`` counts as given).

    ``type`` takes a JSON type name (a boolean is not a number); ``regex`` is ``re.search``
    on the value; ``exists`` passes when the value is not null (JMESPath cannot tell a null
    from a missing key).
    """

    expression: StrictStr
    operator: Literal[
        "equals", "not_equals", "contains", "gt", "gte", "lt", "lte", "type", "regex", "exists"
    ] = "equals"
    expected: Any = None

    @model_validator(mode="after")
    def _checks(self) -> JsonAssertion:
        if self.operator != "exists" and "expected" not in self.model_fields_set:
            raise ValueError(f"'expected' is required when operator is '{self.operator}'")
        if "${" not in self.expression:
            import jmespath  # on use: a task without json_check does not load it
            from jmespath.exceptions import JMESPathError

            try:
                parsed = jmespath.compile(self.expression)
            except JMESPathError as exc:
                reason = " ".join(str(exc).split())
                raise ValueError(
                    f"expression {self.expression!r} is not valid JMESPath: {reason}"
                ) from None
            _check_functions(self.expression, parsed.parsed)
        expected = self.expected
        if self.operator == "contains" and isinstance(expected, str):
            length = len(expected.strip())
            if length < MIN_CONTAINS_LITERAL:
                raise ValueError(
                    f"Brittle 'contains' assertion: expected literal {expected!r} has {length} "
                    "non-whitespace characters; short substrings of paraphrased JSON values "
                    "flake when agent wording varies. Use operator='regex' with an anchored "
                    "pattern, or operator='equals' with a canonical machine name."
                )
        if self.operator in ("gt", "gte", "lt", "lte"):
            _check_ordered(self.operator, expected)
        if self.operator == "type" and expected not in JSON_TYPES:
            raise ValueError(
                f"operator 'type' takes a JSON type name ({', '.join(JSON_TYPES)}), not "
                f"{expected!r}"
            )
        if self.operator == "regex":
            if not isinstance(expected, str):
                raise ValueError(f"operator 'regex' needs a pattern (text), not {expected!r}")
            if "${" not in expected:
                try:
                    re.compile(expected)
                except re.error as exc:
                    raise ValueError(f"expected {expected!r} is not a valid regex: {exc}") from None
        return self


def _check_functions(expression: str, node: Mapping[str, Any]) -> None:
    """Every function an expression calls is one of JMESPath's, with as many arguments as
    its signature takes (the library checks both only when it evaluates, on every row)."""
    if node.get("type") == "function_expression":
        name, given = node["value"], len(node["children"])
        from jmespath.functions import Functions

        table = Functions.FUNCTION_TABLE
        if name not in table:
            raise ValueError(f"expression {expression!r} calls {name}(), which is not a JMESPath "
                             f"function ({', '.join(sorted(table))})")  # fmt: skip
        signature = table[name]["signature"]
        variadic = bool(signature) and signature[-1].get("variadic", False)
        if given < len(signature) or (given > len(signature) and not variadic):
            wanted = f"at least {len(signature)}" if variadic else str(len(signature))
            raise ValueError(f"expression {expression!r} calls {name}() with {given} "
                             f"argument(s); it takes {wanted}")  # fmt: skip
    for child in node.get("children", []):
        if isinstance(child, dict):
            _check_functions(expression, child)


def _check_ordered(operator: str, expected: Any) -> None:
    """``gt``/``gte``/``lt``/``lte`` compare with a number or a text (texts in code-point
    order, as ISO dates sort); a number written as text would never compare with a JSON
    number, so it is refused with the fix."""
    if isinstance(expected, bool) or not isinstance(expected, int | float | str):
        raise ValueError(f"operator '{operator}' compares with a number or a text, not "
                         f"{expected!r}")  # fmt: skip
    if isinstance(expected, str) and "${" not in expected:
        try:
            float(expected)
        except ValueError:
            return
        raise ValueError(f"operator '{operator}' has expected {expected!r}, a number written as "
                         f"text: write it without quotes (expected: {expected}) to compare "
                         "with JSON numbers")  # fmt: skip


class JsonCheck(CriterionSpec):
    """Validate JSON: it parses, matches ``json_schema``, and passes ``assertions``.

    ``json_schema`` is a schema file in the sandbox (Coder Eval's form) or, assay's
    extension, the schema itself as a mapping (checked when the task is loaded). The draft
    comes from the schema's ``$schema`` (default 2020-12). Score: a missing file or text
    that is not JSON scores 0.0; with no schema and no assertion, valid JSON scores 1.0; a
    failed schema scores 0.0 overall (assertions skipped); else the mean of the schema
    (1.0) and ``passed / total`` of the assertions. An assertion's ``expected`` that is one
    whole ``${row.x}`` takes the row's JSON value (``5``, ``true``, a list), not its text.
    """

    value_keys: ClassVar[frozenset[str]] = frozenset({"expected"})

    type: Literal["json_check"]
    path: StrictStr | None = None
    json_schema: StrictStr | dict[str, Any] | None = None
    assertions: list[JsonAssertion] = Field(default_factory=list)

    _path = field_validator("path")(check_relative_path)

    @field_validator("json_schema")
    @classmethod
    def _schema(cls, value: str | dict[str, Any] | None) -> str | dict[str, Any] | None:
        if isinstance(value, str):
            return check_relative_path(value)
        if isinstance(value, dict):
            check_schema(value)
        return value


def check_schema(schema: dict[str, Any]) -> None:
    """Check a JSON Schema against its metaschema (the draft its ``$schema`` names).

    Raises:
        ValueError: ``json_schema is not a valid JSON Schema: <reason> (at <path>)``.
    """
    from jsonschema import SchemaError  # on use, as jmespath above
    from jsonschema.validators import validator_for

    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "the top"
        raise ValueError(f"json_schema is not a valid JSON Schema: {exc.message} (at {where})") \
            from None  # fmt: skip


class PytestCheck(CriterionSpec):
    """Run ``pytest <path> <args>`` in the sandbox; score ``passed / collected``, read from
    pytest's JUnit XML report. No test collected scores 0.0; a perfect ratio from a pytest
    that exited non-zero is capped at 0.99 (Coder Eval's rule). A pytest that cannot run
    (not installed, a usage error, no report) is the criterion's error."""

    type: Literal["pytest"]
    path: StrictStr = "."
    args: list[StrictStr] = Field(default_factory=list)
    timeout: float = Field(default=60, gt=0)

    _path = field_validator("path")(check_relative_path)

    @field_validator("args")
    @classmethod
    def _own_report(cls, value: list[str]) -> list[str]:
        for arg in value:
            if arg.startswith(("--junitxml", "--junit-xml")):
                raise ValueError(
                    f"args {arg!r}: assay writes pytest's JUnit XML report itself (it reads "
                    "the score from it); remove the option"
                )
        return value


FILE_TYPES = frozenset({"file_contains", "file_matches_regex", "json_check", "pytest"})

__all__ = [
    "FILE_TYPES",
    "OPERATORS",
    "FileContains",
    "FileMatchesRegex",
    "JsonAssertion",
    "JsonCheck",
    "PytestCheck",
]
