"""Criteria over the code a coding task leaves: Coder Eval's ``import_check``,
``pylint_score``, ``reference_comparison`` and ``uipath_eval`` (``reference/coder_eval_agents.md``
§2: fields and defaults as there).

``import_check``, ``pylint_score`` and ``uipath_eval`` run a program in the row's sandbox (the
``python3`` or ``uipath`` on the row's ``PATH``), so each is graded after the agent and never
on a crashed row's leftovers; ``reference_comparison`` only reads a file the agent left and
one of the task's reference.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

from pydantic import Field, StrictFloat, StrictStr, field_validator, model_validator

from assay.spec.base import StrictModel
from assay.spec.criterion_base import CriterionSpec, check_relative_path


class ImportCheck(CriterionSpec):
    """Score: the share of the absolute imports of ``path`` (a Python file in the sandbox)
    that the sandbox's interpreter resolves (``importlib.util.find_spec``). A file without
    imports scores 1.0; a file that does not parse, or is missing, scores 0.0."""

    type: Literal["import_check"]
    path: StrictStr
    timeout: float = Field(default=30, gt=0)

    _path = field_validator("path")(check_relative_path)


class PylintScore(CriterionSpec):
    """Score: the score pylint gives ``path`` (a file or package in the sandbox), divided by
    10 (a negative score counts as 0). ``min_score`` (0 to 10) sets the row's pass threshold
    to ``min_score / 10``; ``fail_under`` is passed to pylint (its ``--fail-under``) and,
    without ``min_score``, sets the threshold the same way. ``args`` are more pylint options;
    ``rcfile`` a configuration file in the sandbox (a ``pass_threshold`` that disagrees with
    ``min_score`` or ``fail_under`` is refused). A pylint that is not installed, crashes
    or rejects its options cannot grade the row: the criterion's error."""

    type: Literal["pylint_score"]
    path: StrictStr
    min_score: float | None = Field(default=None, ge=0, le=10)
    fail_under: float | None = Field(default=None, le=10)
    args: list[StrictStr] = Field(default_factory=list)
    rcfile: StrictStr | None = None
    timeout: float = Field(default=120, gt=0)

    _paths = field_validator("path", "rcfile")(check_relative_path)

    @field_validator("args")
    @classmethod
    def _own_output(cls, value: list[str]) -> list[str]:
        for arg in value:
            if arg.startswith(("--output-format", "-f", "--output=", "--rcfile")):
                raise ValueError(
                    f"args {arg!r}: assay sets pylint's output format (it reads the score "
                    "from it); use the rcfile field for a configuration file"
                )
        return value

    @model_validator(mode="after")
    def _threshold(self) -> PylintScore:
        chosen = self.min_score if self.min_score is not None else self.fail_under
        if chosen is None:
            return self
        if "pass_threshold" in self.model_fields_set and self.pass_threshold != chosen / 10:
            name = "min_score" if self.min_score is not None else "fail_under"
            raise ValueError(
                f"{name} {chosen:g} sets the pass threshold to {chosen / 10:g}, and "
                f"pass_threshold says {self.pass_threshold:g}: give one of them"
            )
        self.pass_threshold = max(0.0, chosen) / 10
        return self


class ReferenceComparison(CriterionSpec):
    """Score: how alike ``agent_file`` (in the sandbox) is to ``reference_file`` (in the
    task's ``reference.directory``), by ``comparison_method`` (``ast``: syntax-node
    structure; ``token``: tokens; ``complexity``: cyclomatic complexity; see
    :mod:`assay.criteria.code_similarity`). ``similarity_threshold`` is the row's pass
    threshold (Coder Eval's rule; a ``pass_threshold`` that disagrees is refused). The task
    must have a ``reference``."""

    type: Literal["reference_comparison"]
    agent_file: StrictStr
    reference_file: StrictStr
    comparison_method: Literal["ast", "token", "complexity"] = "ast"
    similarity_threshold: float = Field(default=0.8, ge=0, le=1)

    _paths = field_validator("agent_file", "reference_file")(check_relative_path)

    @model_validator(mode="after")
    def _threshold(self) -> ReferenceComparison:
        chosen = self.similarity_threshold
        if "pass_threshold" in self.model_fields_set and self.pass_threshold != chosen:
            raise ValueError(
                f"similarity_threshold {chosen:g} is the pass threshold of a "
                f"reference_comparison, and pass_threshold says {self.pass_threshold:g}: "
                "give one of them"
            )
        self.pass_threshold = chosen
        return self


class UipathEval(CriterionSpec):
    """Score: the share of ``thresholds`` (metric → minimum; a metric passes when it is at
    least its minimum) that UiPath's ``uipath eval`` meets when it runs the agent's UiPath
    project in the sandbox on ``eval_set``; no thresholds score 1.0. ``agent_name`` is the
    entrypoint of the project's ``uipath.json``; ``eval_set`` a file of the task's folder
    (its evaluators beside it, as ``uipath`` lays them out: ``…/eval-sets/x.json`` and
    ``…/evaluators/``), else a path or name in the sandbox. The metrics are each evaluator's
    mean score over the set's evaluations, by evaluator id, and ``*`` their mean
    (:mod:`assay.criteria.uipath_metrics`). The CLI not installed, an eval set that is wrong
    or missing, or an evaluator that could not score (an LLM evaluator without UiPath's
    platform, offline) is the criterion's error, not a score; a threshold on an evaluator
    the task's eval set does not name is refused when it grades. A project the CLI cannot
    evaluate (no ``uipath.json``, no such entrypoint) scores 0, as in Coder Eval."""

    runs_agent_code: ClassVar[bool] = True

    type: Literal["uipath_eval"]
    agent_name: StrictStr = Field(min_length=1)
    eval_set: StrictStr = Field(min_length=1)
    thresholds: dict[StrictStr, StrictFloat]
    timeout: float = Field(default=600, gt=0)

    @field_validator("agent_name")
    @classmethod
    def _not_an_option(cls, value: str) -> str:
        if value.startswith("-"):
            raise ValueError(
                f"agent_name {value!r} would be read by uipath as an option; "
                "give the entrypoint's name (a key of uipath.json's functions)"
            )
        return value


class ReferenceSpec(StrictModel):
    """The task's ``reference:``: ``directory``, the folder of the reference solution
    (relative to the task file). ``reference_comparison`` reads its files, and the commands
    of criteria get its absolute path as ``REFERENCE_DIR``; the agent is not told of it."""

    refused_fields: ClassVar[Mapping[str, str]] = {
        name: "Coder Eval removed reference.file and reference.code; give reference: "
        "{directory: <the folder of the reference solution>}"
        for name in ("file", "code")
    }

    directory: StrictStr


__all__ = ["ImportCheck", "PylintScore", "ReferenceComparison", "ReferenceSpec", "UipathEval"]
