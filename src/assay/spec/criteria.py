"""Success criteria as users write them: one small model per ``type``.

The fields are exactly the YAML config of each criterion (Coder Eval's names,
``reference/originals.md`` §1.6–1.7). A criterion that reads text reads ``path`` (a file in
the sandbox) or, when ``path`` is omitted, the agent's final response (an assay extension).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr, field_validator, model_validator

from assay.spec.base import StrictModel, UnionInfo
from assay.spec.judge import (
    FewShotExample,
    JudgeAsset,
    JudgeDefinition,
    VerdictSpec,
    judge_reference,
    provider_model,
)


class CriterionSpec(StrictModel):
    """Fields every criterion has.

    ``weight`` 0 makes a criterion informational: it is recorded but never gates the row.
    ``pass_threshold`` is the score in [0, 1] a gating criterion needs for the row to pass.
    ``suite_thresholds`` maps an aggregated metric name to its minimum (a suite gate).
    """

    coder_eval_only: ClassVar[Mapping[str, str]] = {
        "stop_when": "the criterion is checked once, after the agent finishes",
        "stop_early": "the criterion is checked once, after the agent finishes",
        "read_only": "criteria run in the row's sandbox after the agent",
    }
    late_fields: ClassVar[frozenset[str]] = frozenset()
    """Fields that dataset expansion leaves as written: the criterion fills their
    ``${row.x}`` itself when it grades (in one pass with its own placeholders)."""

    type: str
    description: str = ""
    weight: float = Field(default=1.0, ge=0, le=1e6)
    pass_threshold: float = Field(default=0.9, ge=0, le=1)
    suite_thresholds: dict[str, float] | None = None

    @field_validator("suite_thresholds", mode="before")
    @classmethod
    def _numbers_only(cls, value: Any) -> Any:
        if isinstance(value, dict):
            for metric, minimum in value.items():
                if isinstance(minimum, bool) or not isinstance(minimum, int | float):
                    raise ValueError(f"suite_thresholds.{metric} must be a number, not {minimum!r}")
        return value

    @property
    def gating(self) -> bool:
        """True when the criterion decides the row's pass/fail (``weight > 0``)."""
        return self.weight > 0

    @property
    def reads_response(self) -> bool:
        """True when the criterion grades the agent's final response (a text criterion
        without ``path``)."""
        return "path" in type(self).model_fields and getattr(self, "path", None) is None

    @model_validator(mode="after")
    def _informational_has_no_gate(self) -> CriterionSpec:
        if self.weight == 0 and self.suite_thresholds:
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


class FileExists(CriterionSpec):
    """Score 1.0 when ``path`` exists in the sandbox, else 0.0."""

    type: Literal["file_exists"]
    path: StrictStr

    _path = field_validator("path")(check_relative_path)


class PatternCheck(StrictModel):
    """One regex of ``file_check``.

    ``flags`` takes the letters ``i``, ``m``, ``s``, ``x`` (``"im"``), flag names
    (``IGNORECASE``, ``re.M``; a list, or one string separated by ``|``, ``,`` or spaces), or
    Coder Eval's integer (``re.IGNORECASE`` = 2, ``re.MULTILINE`` = 8, ``re.DOTALL`` = 16).
    """

    pattern: StrictStr
    must_match: bool = True
    flags: StrictInt | StrictStr | list[StrictStr] | None = None

    @model_validator(mode="after")
    def _compiles(self) -> PatternCheck:
        try:
            re.compile(self.pattern, regex_flags(self.flags))
        except re.error as exc:
            raise ValueError(f"pattern {self.pattern!r} is not a valid regex: {exc}") from None
        return self


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


class FileCheck(CriterionSpec):
    """Substring and regex checks on a file (or the response when ``path`` is omitted).

    Each active category (includes, excludes, patterns) scores the fraction of its items
    satisfied; the criterion's score is the mean over the active categories. With no
    category it is an existence check, as in Coder Eval: 1.0 when the file (or response)
    exists.
    """

    type: Literal["file_check"]
    path: StrictStr | None = None
    includes: list[StrictStr] = Field(default_factory=list)
    excludes: list[StrictStr] = Field(default_factory=list)
    patterns: list[PatternCheck] = Field(default_factory=list)

    _path = field_validator("path")(check_relative_path)

    @model_validator(mode="after")
    def _no_empty_items(self) -> FileCheck:
        for name in ("includes", "excludes"):
            if any(not item for item in getattr(self, name)):
                raise ValueError(
                    f"{name} has an empty item, which every text contains "
                    "(a row whose value is empty or null?)"
                )
        return self


class RunCommand(CriterionSpec):
    """Run a shell command in the sandbox; score 1.0 when exit code (and stdout) match."""

    type: Literal["run_command"]
    command: StrictStr
    timeout: float = Field(default=30, gt=0)
    expected_exit_code: int = 0
    expected_stdout: StrictStr | None = None
    stdout_match: Literal["exact", "contains", "regex"] = "exact"

    @field_validator("command")
    @classmethod
    def _command_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("command is empty; a blank command always exits 0")
        if "\x00" in value:
            raise ValueError("command contains a NUL character, which a shell command cannot")
        return value

    @model_validator(mode="after")
    def _regex_compiles(self) -> RunCommand:
        if self.expected_stdout == "" and self.stdout_match != "exact":
            raise ValueError(
                f"expected_stdout is empty, which every output matches with stdout_match: "
                f"{self.stdout_match} (a row whose value is empty or null?); use stdout_match: "
                "exact to expect no output"
            )
        pattern = self.expected_stdout
        if self.stdout_match == "regex" and pattern is not None and "${" not in pattern:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(
                    f"expected_stdout {pattern!r} is not a valid regex: {exc}"
                ) from None
        return self


class ClassificationMatch(CriterionSpec):
    """Compare one label (file or response) with ``expected_label``.

    The text is stripped; unless ``case_sensitive``, it is matched to the casing in
    ``allowed_labels``. Empty or missing text is the label ``(none)``, text outside the
    allowed set is ``(other)`` (``reference/originals.md`` §1.6).
    """

    type: Literal["classification_match"]
    path: StrictStr | None = None
    expected_label: StrictStr
    allowed_labels: list[StrictStr] = Field(min_length=1)
    case_sensitive: bool = False

    _path = field_validator("path")(check_relative_path)


class ResponseMatch(CriterionSpec):
    """Match the final response (or ``path``) against ``expected``.

    ``match``: ``exact`` (after stripping both sides), ``contains`` or ``regex``
    (``re.search``). A list in ``expected`` passes when any item matches.
    """

    type: Literal["response_match"]
    expected: StrictStr | list[StrictStr]
    match: Literal["exact", "contains", "regex"] = "exact"
    case_sensitive: bool = False
    path: StrictStr | None = None

    _path = field_validator("path")(check_relative_path)

    @model_validator(mode="after")
    def _regex_compiles(self) -> ResponseMatch:
        if isinstance(self.expected, list) and not self.expected:
            raise ValueError("expected is an empty list; give at least one alternative")
        items = [self.expected] if isinstance(self.expected, str) else self.expected
        if self.match != "exact" and any(not item for item in items):
            raise ValueError(
                f"expected is empty, which every response matches with match: {self.match} "
                "(a row whose value is empty or null?); use match: exact to expect no answer"
            )
        if self.match == "regex":
            for pattern in [self.expected] if isinstance(self.expected, str) else self.expected:
                if "${" in pattern:
                    continue
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise ValueError(f"expected {pattern!r} is not a valid regex: {exc}") from None
        return self


class QaCriterion(CriterionSpec):
    """Grade a QA row (a task with a ``qa:`` block): choice questions by the extracted
    letter(s) mapped back through the shuffle, open questions by rules and then the judge
    (``assay.qa.grading``). Score 1.0 when correct; a judge that gives no verdict is a
    criterion error (``judge_error``), kept out of accuracy."""

    type: Literal["qa"]

    @property
    def reads_response(self) -> bool:
        """A QA row is graded on the response."""
        return True


_INLINE_FIELDS = ("prompt", "model", "verdict", "few_shot", "system_prompt", "samples",
                  "retries", "temperature", "max_tokens", "base_url", "api_key_env",
                  "request_timeout", "cache")  # fmt: skip


class LlmJudge(CriterionSpec):
    """``llm_judge``: an LLM grades the row against a rubric.

    Either ``judge`` (★ a judge file ``judges/x.yaml``, or ``name`` / ``name@N`` in the store)
    or an inline judge: ``prompt`` (the rubric) and ``model`` (default ``local/smollm2``),
    with a ``verdict`` (default: Coder Eval's score, a scale from 0 to 1). The judge sees the
    rubric (``${row.x}``, ``${response}``, ``${files}``, ``${transcript}`` filled in), then,
    unless the rubric placed them, the agent's response (``include_agent_output``, on by
    default ★), the ``files`` (sandbox-relative, or ``$TASK_DIR/…``) and, with
    ``include_tool_calls``, the transcript summary. ``expected_label`` (labels verdicts)
    gives the row's true label, for accuracy and a confusion matrix. ``enabled: false``
    records the criterion as skipped (outside every average). A verdict that cannot be read
    after the retries is a ``judge_error``: not graded, counted apart.
    """

    coder_eval_only: ClassVar[Mapping[str, str]] = {
        **CriterionSpec.coder_eval_only,
        "include_reference": "tasks have no reference directory in assay",
        "include_dialog": "assay has no dialog mode",
        "max_dialog_chars": "assay has no dialog mode",
        "capture_transcript": "the judge's reply and reason are always kept in task.json",
    }
    refused_fields: ClassVar[Mapping[str, str]] = {
        "verdict_channel": "verdict_channel field was removed on 2026-05-21; the "
        "submit_verdict tool channel is the only path. Delete this field from your task YAML.",
    }
    writer_only: ClassVar[frozenset[str]] = frozenset({"asset"})
    late_fields: ClassVar[frozenset[str]] = frozenset({"prompt", "asset"})

    type: Literal["llm_judge"]
    pass_threshold: float = Field(default=0.7, ge=0, le=1)
    judge: StrictStr | None = None
    prompt: StrictStr | None = None
    model: StrictStr | None = None
    verdict: VerdictSpec | None = None
    few_shot: list[FewShotExample] | None = None
    system_prompt: StrictStr | None = None
    samples: int | None = Field(default=None, ge=1, le=25)
    retries: int | None = Field(default=None, ge=0, le=10)
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=16, le=32768)
    base_url: StrictStr | None = None
    api_key_env: StrictStr | None = None
    request_timeout: float | None = Field(default=None, gt=0)
    cache: StrictBool | None = None
    files: list[StrictStr] = Field(default_factory=list)
    include_agent_output: StrictBool = True
    include_tool_calls: StrictBool = False
    max_file_chars: int = Field(default=20000, ge=100)
    max_transcript_chars: int = Field(default=100000, ge=100)
    expected_label: StrictStr | None = None
    enabled: StrictBool = True
    asset: JudgeAsset | None = None

    @field_validator("model")
    @classmethod
    def _provider_name(cls, value: str | None) -> str | None:
        return provider_model(value) if value is not None else None

    @model_validator(mode="after")
    def _one_judge(self) -> LlmJudge:
        inline = [f for f in _INLINE_FIELDS if getattr(self, f) is not None]
        if self.judge is not None and inline:
            raise ValueError(
                f"judge: {self.judge} defines the judge, so {', '.join(inline)} cannot be set "
                "here; change the judge (a new version), or write the judge inline instead"
            )
        if self.judge is None and self.prompt is None and self.asset is None:
            raise ValueError("llm_judge needs a judge (judge: judges/x.yaml or judge: name@N) "
                             "or an inline prompt (the rubric)")  # fmt: skip
        if self.judge is not None:
            judge_reference(self.judge)
        for path in self.files:
            if not path.strip():
                raise ValueError("files has an empty path")
        return self

    @property
    def reads_response(self) -> bool:
        """The judge is shown the agent's final response."""
        rubric = self.prompt if self.asset is None else self.asset.definition.rubric
        return self.include_agent_output or "${response}" in (rubric or "")

    def inline_definition(self) -> JudgeDefinition:
        """The inline judge (``prompt``, ``model``, …) as a :class:`JudgeDefinition`.

        Raises:
            ValueError: no ``prompt``, or invalid values.
        """
        if self.prompt is None:
            raise ValueError("an inline llm_judge needs prompt")
        fields: dict[str, Any] = {"rubric": self.prompt}
        for name in _INLINE_FIELDS[1:]:
            value = getattr(self, name)
            if value is not None:
                fields[name] = value
        fields.setdefault("verdict", VerdictSpec(kind="scale", min=0.0, max=1.0))
        fields.setdefault("max_tokens", 2000)
        return JudgeDefinition.model_validate(fields)


_LATER = "assay implements: " + ", ".join(
    [
        "file_exists",
        "file_check",
        "run_command",
        "classification_match",
        "response_match",
        "qa",
        "llm_judge",
    ]
)
CODER_EVAL_CRITERIA_NOT_YET = {
    name: _LATER
    for name in [
        "file_contains",
        "file_matches_regex",
        "json_check",
        "skill_triggered",
        "command_executed",
        "commands_efficiency",
        "reference_comparison",
        "agent_judge",
        "uipath_eval",
        "cli_called",
        "pytest",
        "pylint_score",
        "import_check",
        "system_one_judge",
    ]
}

Criterion = Annotated[
    FileExists
    | FileCheck
    | RunCommand
    | ClassificationMatch
    | ResponseMatch
    | QaCriterion
    | LlmJudge,
    Field(discriminator="type"),
    UnionInfo(noun="criterion", not_yet=CODER_EVAL_CRITERIA_NOT_YET),
]
"""Any criterion, chosen by its ``type``."""

CLASSIFICATION_TYPES = frozenset({"classification_match"})
