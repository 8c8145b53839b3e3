"""What every criterion shares: the common fields, sandbox-relative paths and regex flags.

Kept apart from :mod:`assay.spec.criteria` (the union of every criterion type) so that the
modules defining criterion types (:mod:`assay.spec.agent_criteria`,
:mod:`assay.spec.file_criteria`) can derive from :class:`CriterionSpec` without an import
cycle.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import Field, WithJsonSchema, field_validator, model_validator

from assay.spec.base import StrictModel

if TYPE_CHECKING:
    from assay.spec.agent_base import AgentSpec

_NUMBER = {"type": "number"}
_GATES_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"type": "object", "additionalProperties": {"anyOf": [_NUMBER, {
            "type": "object", "properties": {"min": _NUMBER, "lower": _NUMBER},
            "additionalProperties": False, "minProperties": 1}]}},
        {"type": "null"},
    ],
    "description": "metric → its minimum (the point estimate), or {min: X, lower: Y} (lower: "
    "the minimum of the lower bound of its 95% interval)",
}  # fmt: skip
"""How a task file writes ``suite_thresholds`` (what :meth:`CriterionSpec._split_bound_gates`
reads), for the task file's JSON Schema."""


class CriterionSpec(StrictModel):
    """Fields every criterion has.

    ``weight`` 0 makes a criterion informational: it is recorded but never gates the row.
    ``pass_threshold`` is the score in [0, 1] a gating criterion needs for the row to pass.
    ``suite_thresholds`` maps an aggregated metric name to its minimum (a suite gate), or
    ★ to ``{min: X, lower: Y}``: ``min`` gates the point estimate, ``lower`` the lower bound
    of the metric's cluster-robust 95% interval (``mean``, ``accuracy``). The ``lower``
    minimums are kept apart, in ``suite_lower_bounds``.
    """

    coder_eval_only: ClassVar[Mapping[str, str]] = {
        "stop_when": "the criterion is checked once, after the agent finishes",
        "stop_early": "the criterion is checked once, after the agent finishes",
        "read_only": "criteria run in the row's sandbox after the agent",
    }
    late_fields: ClassVar[frozenset[str]] = frozenset()
    """Fields that dataset expansion leaves as written: the criterion fills their
    ``${row.x}`` itself when it grades (in one pass with its own placeholders)."""
    value_keys: ClassVar[frozenset[str]] = frozenset()
    """Keys (at any depth of the criterion's fields) whose value, when it is one whole
    ``${row.x}``, takes the row's JSON value as it is, not its text: ``json_check``'s
    ``expected``, so ``5`` compares with ``5`` (:func:`assay.data.substitute.substitute_tree`)."""
    reads_sandbox: ClassVar[bool] = False
    """Capability: the criterion reads the row's sandbox even without ``path`` (a program
    run in it, a file it names); a ``path`` makes any criterion read it (:meth:`needs_sandbox`)."""
    graded_after_crash: ClassVar[bool] = False
    """Capability: the criterion only reads what the agent left (no program, no model), so
    it is graded even after the agent crashed (``post_failure_criteria_results``)."""
    reads_transcript: ClassVar[bool] = False
    """Capability: the criterion reads what the agent did (its transcript)."""
    has_labels: ClassVar[bool] = False
    """Capability: its results carry labels and roll up with classification metrics."""
    runs_agent_code: ClassVar[bool] = False
    """Capability: it runs a program the agent's files can steer (a command, the agent's
    own project), so ``sandbox.docker.agent_isolation`` refuses it beside a coding agent."""
    shell_fields: ClassVar[frozenset[str]] = frozenset()
    """Fields a shell runs as written (a ``${row.x}`` pasted into one is shell text: the
    loader warns and names ``$ASSAY_FIELD_x``)."""
    unbounded_metrics: ClassVar[frozenset[str]] = frozenset({"count"})
    """Its suite metrics that are not shares in [0, 1] (a count, a total): a
    ``suite_thresholds`` minimum on them may be any number (on the others it must be in
    [0, 1]; judges' ``verdict_*`` counts too)."""
    check_seconds: ClassVar[float | None] = 600.0
    """The longest one row's check may take (seconds) before it is ended as the criterion's
    error; ``None``: it bounds itself (its own ``timeout``, a judge's request timeouts)."""

    type: str
    description: str = ""
    weight: float = Field(default=1.0, ge=0, le=1e6)
    pass_threshold: float = Field(default=0.9, ge=0, le=1)
    suite_thresholds: Annotated[dict[str, float] | None, WithJsonSchema(_GATES_SCHEMA)] = None
    suite_lower_bounds: dict[str, float] | None = None

    @model_validator(mode="before")
    @classmethod
    def _split_bound_gates(cls, data: Any) -> Any:
        """``{metric: {min: X, lower: Y}}`` → ``suite_thresholds[metric] = X`` and
        ``suite_lower_bounds[metric] = Y``."""
        if not isinstance(data, dict) or not isinstance(data.get("suite_thresholds"), dict):
            return data
        points: dict[str, Any] = {}
        bounds: dict[str, Any] = dict(data.get("suite_lower_bounds") or {})
        for metric, gate in data["suite_thresholds"].items():
            if not isinstance(gate, dict):
                points[metric] = gate
                continue
            unknown = sorted(set(gate) - {"min", "lower"})
            if unknown or not gate:
                raise ValueError(bound_gate_error(metric, unknown))
            for key, value in gate.items():
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise ValueError(f"suite_thresholds.{metric}.{key} must be a number, "
                                     f"not {value!r}")  # fmt: skip
            if "min" in gate:
                points[metric] = gate["min"]
            if "lower" in gate:
                bounds[metric] = gate["lower"]
        return {**data, "suite_thresholds": points or None, "suite_lower_bounds": bounds or None}

    @property
    def gates(self) -> bool:
        """True when the criterion sets any suite gate (on a point estimate or a bound)."""
        return bool(self.suite_thresholds or self.suite_lower_bounds)

    @field_validator("suite_thresholds", mode="before")
    @classmethod
    def _numbers_only(cls, value: Any) -> Any:
        if isinstance(value, dict):
            for metric, minimum in value.items():
                if isinstance(minimum, bool) or not isinstance(minimum, int | float):
                    raise ValueError(f"suite_thresholds.{metric} must be a number, not {minimum!r}")
        return value

    def agent_problem(self, agent: AgentSpec) -> tuple[str, str] | None:
        """``(field, why)`` when this criterion cannot be checked on ``agent`` (an agent
        config, read through its capabilities), else ``None``; the loader refuses it at the
        field's line."""
        return None

    @property
    def gating(self) -> bool:
        """True when the criterion decides the row's pass/fail (``weight > 0``)."""
        return self.weight > 0

    @property
    def reads_response(self) -> bool:
        """True when the criterion grades the agent's final response (a text criterion
        without ``path``)."""
        return "path" in type(self).model_fields and getattr(self, "path", None) is None

    def needs_sandbox(self) -> bool:
        """True when the criterion reads the sandbox: it declares so, or it reads a
        ``path``."""
        return self.reads_sandbox or getattr(self, "path", None) is not None

    def graders(self) -> list[AgentSpec]:
        """Capability: the coding agents the criterion runs to grade a row (an
        ``agent_judge``'s judge): the run starts their models with its own and serves the
        model bridge for them; none by default."""
        return []

    @model_validator(mode="after")
    def _informational_has_no_gate(self) -> CriterionSpec:
        if self.weight == 0 and self.gates:
            raise ValueError(
                "a criterion with weight 0 is informational and may not set suite_thresholds"
            )
        return self


def check_relative_path(value: str | None) -> str | None:
    """Reject a path that could leave the sandbox before any row runs."""
    if value is None or "${" in value:
        return value
    if "\x00" in value:
        raise ValueError("path contains a NUL character, which no file name can hold")
    if value.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:[\\/]", value):
        raise ValueError(f"path '{value}' is absolute; use a path inside the sandbox")
    parts = re.split(r"[\\/]+", value)
    if ".." in parts:
        raise ValueError(f"path '{value}' leaves the sandbox ('..'); use a path inside it")
    if not value.strip():
        raise ValueError("path is empty (a criterion without path reads the final response)")
    return value


_FLAG_LETTERS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}
_FLAG_NAMES = {
    "IGNORECASE": re.IGNORECASE,
    "MULTILINE": re.MULTILINE,
    "DOTALL": re.DOTALL,
    "VERBOSE": re.VERBOSE,
    "I": re.IGNORECASE,
    "M": re.MULTILINE,
    "S": re.DOTALL,
    "X": re.VERBOSE,
}
_FLAG_BITS = re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE | re.ASCII | re.UNICODE
"""The integer flags a ``str`` pattern accepts (Coder Eval passes the integer to ``re``)."""


def regex_flags(flags: int | str | list[str] | None) -> int:
    """Turn ``"im"``, ``"IGNORECASE|MULTILINE"``, ``["i", "re.M"]`` or ``10`` into ``re`` flags.

    Raises:
        ValueError: an unknown letter, name or integer bit.
    """
    if not flags:
        return 0
    if isinstance(flags, int):
        if flags < 0 or flags & ~_FLAG_BITS:
            raise ValueError(
                f"unknown regex flag {flags!r}; an integer combines re.IGNORECASE (2), "
                "re.MULTILINE (8), re.DOTALL (16), re.VERBOSE (64), re.ASCII (256)"
            )
        return flags
    items = [flags] if isinstance(flags, str) else flags
    value = 0
    for item in items:
        for key in re.split(r"[\s,|+]+", item.strip()):
            name = key.upper().removeprefix("RE.")
            if name in _FLAG_NAMES:
                value |= _FLAG_NAMES[name]
            elif key and all(letter in _FLAG_LETTERS for letter in key):
                for letter in key:
                    value |= _FLAG_LETTERS[letter]
            elif key:
                raise ValueError(f"unknown regex flag {key!r}; use i, m, s, x")
    return value


def bound_gate_error(metric: str, unknown: list[str]) -> str:
    """The refusal of a gate mapping with keys other than ``min`` and ``lower``."""
    named = f"'{unknown[0]}'" if unknown else "nothing"
    upper = (" (every gated metric is higher-is-better, so a gate is a minimum: an upper "
             "bound cannot be gated)") if "upper" in unknown else ""  # fmt: skip
    return (
        f"suite_thresholds.{metric} gives {named}{upper}; write a number (the point "
        f"estimate's minimum) or a mapping of min: (the point estimate's minimum) and/or "
        f"lower: (the minimum of its 95% interval's lower bound), e.g. "
        f"{{{metric}: {{lower: 0.8}}}}"
    )
