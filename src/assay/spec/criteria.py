"""The configs of the built-in criteria: one small model per ``type``.

Each is the base of its criterion class in :mod:`assay.criteria` (which adds how it grades
and what it can do); the task file's union of criteria is built by the registry
(:class:`assay.criteria.registry.CriterionRegistry`) from those classes.

The fields are exactly the YAML config of each criterion (Coder Eval's names,
``reference/originals.md`` §1.6–1.7). A criterion that reads text reads ``path`` (a file in
the sandbox) or, when ``path`` is omitted, the agent's final response (an assay extension).
"""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import Field, StrictInt, StrictStr, field_validator, model_validator

from assay.spec.agent_criteria import CommandExecuted as CommandExecuted
from assay.spec.agent_criteria import CommandsEfficiency as CommandsEfficiency
from assay.spec.agent_criteria import SkillTriggered as SkillTriggered
from assay.spec.agent_criteria import ToolCalled as ToolCalled
from assay.spec.base import StrictModel
from assay.spec.cli_criteria import CliCalled as CliCalled
from assay.spec.code_criteria import ImportCheck as ImportCheck
from assay.spec.code_criteria import PylintScore as PylintScore
from assay.spec.code_criteria import ReferenceComparison as ReferenceComparison
from assay.spec.code_criteria import UipathEval as UipathEval
from assay.spec.criterion_base import CriterionSpec as CriterionSpec
from assay.spec.criterion_base import check_relative_path as check_relative_path
from assay.spec.criterion_base import regex_flags as regex_flags
from assay.spec.file_criteria import FileContains as FileContains
from assay.spec.file_criteria import FileMatchesRegex as FileMatchesRegex
from assay.spec.file_criteria import JsonCheck as JsonCheck
from assay.spec.file_criteria import PytestCheck as PytestCheck
from assay.spec.judge_criteria import LlmJudge as LlmJudge


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
    """Run a shell command in the sandbox; score 1.0 when exit code (and stdout) match.

    With ``score_from_stdout`` the first line of stdout is the score (a float, clamped to
    [0, 1]; the other lines are details); a command that exits with another code than
    ``expected_exit_code``, prints nothing or no number cannot give a score: the criterion's
    error.
    """

    runs_agent_code: ClassVar[bool] = True
    shell_fields: ClassVar[frozenset[str]] = frozenset({"command"})

    type: Literal["run_command"]
    command: StrictStr
    timeout: float = Field(default=30, gt=0)
    expected_exit_code: int = 0
    expected_stdout: StrictStr | None = None
    stdout_match: Literal["exact", "contains", "regex"] = "exact"
    score_from_stdout: bool = False

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
        if self.score_from_stdout and self.expected_stdout is not None:
            raise ValueError(
                "'score_from_stdout' and 'expected_stdout' are mutually exclusive. Use "
                "'score_from_stdout: true' for continuous float scoring, or 'expected_stdout' "
                "for exact/contains/regex string matching."
            )
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
