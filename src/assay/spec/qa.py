"""The ``qa:`` block of a task file: a standardized QA suite (``reference/originals.md`` §2).

A task with ``qa:`` reads rows in the QA schema (``{story, question, answer:
{correct_answers, wrong_answers}, meta}``), builds each row's prompt from ``templates`` (no
``initial_prompt``), shuffles the options of choice questions per replicate, and grades with
the ``qa`` criterion (the default ``success_criteria``)::

    qa:
      dataset_name: cosmosqa       # seeds the option shuffle; default: the task_id
      group_by: [meta.ability]     # accuracy per value of these dotted paths
      judge:                       # for open questions the rules cannot decide
        model: local/smollm2
        retries: 2
        prompt_file: judge.txt     # optional: the suite's own judge prompt (or prompt: ...)
      # or a judge asset: a judge file or a store judge (calibrated), as llm_judge names one
      # judge: judges/open.yaml    # (also: judge: {judge: open-qa@2, rules: false})
      templates: {open: ..., choice: ...}   # assay.qa.prompts.QaTemplates fields
      shuffle: true
      as_open: false
      metrics_hook: metrics.py     # compute_metrics(records, per_sample_results)
      prompt_mutations: [{type: prefix, content: "Think step by step."}]

``prompt_mutations`` (the experiment file's prefix/suffix/replace/template) are applied in
order to every prompt the templates build; an experiment variant's ``prompt_mutations`` on a
``qa:`` task are appended here (defaults first), so they change each row's built prompt.
"""

from __future__ import annotations

import re
from string import Template
from typing import Any, ClassVar

from pydantic import Field, StrictBool, StrictStr, field_validator, model_validator

from assay.spec.base import BaseUrl, StrictModel
from assay.spec.experiment import PromptMutation
from assay.spec.judge import JudgeAsset, JudgeDefinition, judge_reference

GROUP_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*(\.[A-Za-z0-9_\-]+)*$")


JUDGE_PLACEHOLDERS = (
    "question", "story", "correct_answers", "wrong_answers", "prompt_type", "response",
)  # fmt: skip
"""What a ``qa.judge.prompt`` may name as ``${name}``."""

JUDGE_ROW_FIELDS = (*JUDGE_PLACEHOLDERS[:-1], "answer")
"""What a judge asset's rubric may name as ``${row.<field>}`` when it judges a QA answer
(the answer lists as JSON text; ``answer`` is the QA schema's ``{correct_answers,
wrong_answers}``, as a QA row keeps it, so a rubric written for it reads a QA run's rows
added to a dataset the same way)."""

ASSET_OWNED = (
    "model", "retries", "include_story", "max_tokens", "base_url", "api_key_env",
    "request_timeout", "cache", "prompt", "prompt_file",
)  # fmt: skip
"""The ``qa.judge`` fields a judge asset decides itself (its model, rubric and retries)."""


def check_judge_template(text: str) -> None:
    """Refuse a judge prompt that names an unknown placeholder, has a stray ``$``, or leaves
    out ``${response}``.

    Raises:
        ValueError: naming the placeholder and those allowed.
    """
    template = Template(text)
    if not template.is_valid():
        raise ValueError(
            "a '$' that starts no ${name} placeholder: write $$ for a dollar sign, or one of "
            + ", ".join("${" + n + "}" for n in JUDGE_PLACEHOLDERS)
        )
    unknown = [n for n in template.get_identifiers() if n not in JUDGE_PLACEHOLDERS]
    if unknown:
        raise ValueError(
            f"unknown placeholder ${{{unknown[0]}}}; the judge prompt can use "
            + ", ".join("${" + n + "}" for n in JUDGE_PLACEHOLDERS)
        )
    if "response" not in template.get_identifiers():
        raise ValueError("the judge prompt must show the response: put ${response} in it")


class QaJudge(StrictModel):
    """The LLM judge of open answers (``assay.qa.judge``).

    ``retries``: extra attempts after an unparseable verdict or a failed call, after which the
    sample is a ``judge_error`` (kept out of accuracy). ``include_story`` shows the passage to
    the judge. ``rules: false`` sends every open response to the judge (no exact-match rules
    first). ``max_tokens`` bounds each verdict (tokens); ``request_timeout`` each call (seconds).
    ``check``: before grading, ask the judge four obvious cases (``assay.qa.check_judge``) and
    warn when it gets one wrong. ``prompt``: the judge's own prompt, a template whose
    ``${question}``, ``${story}``, ``${correct_answers}``, ``${wrong_answers}`` (JSON lists),
    ``${prompt_type}`` and ``${response}`` (required) are filled in (``$$`` is a ``$``), as
    ToMEval's per-dataset judge prompts are; ``prompt_file`` in the task file is read into it
    (relative to the task file). Without ``is_correct`` in it, the reply format is appended.

    ``judge``: instead of a model and prompt, a judge asset (``assay.judges.assets``): a
    judge file relative to the task file, or a store judge ``name``/``name@N`` (with
    ``#calibration``), whose rubric sees the item as ``${row.question}``, ``${row.story}``,
    ``${row.correct_answers}``, ``${row.wrong_answers}`` (JSON lists), ``${row.answer}``
    (both, as the QA schema's mapping), ``${row.prompt_type}`` and the answer as
    ``${response}``; a binary verdict ``true``, or a label among its
    ``pass_labels``, marks the answer correct. Its model, rubric and retries are the asset's
    (:data:`ASSET_OWNED` beside it is refused); ``rules`` and ``check`` still apply. The plan
    resolves it into ``asset``, recorded in ``task.json``. ``qa: {judge: NAME}`` is short for
    ``{judge: {judge: NAME}}``.
    """

    writer_only: ClassVar[frozenset[str]] = frozenset({"asset"})

    model: StrictStr | None = None
    judge: StrictStr | None = Field(default=None, min_length=1)
    asset: JudgeAsset | None = None
    retries: int = Field(default=2, ge=0, le=10)
    include_story: StrictBool = False
    rules: StrictBool = True
    max_tokens: int = Field(default=200, ge=16, le=4096)
    base_url: BaseUrl | None = None
    api_key_env: StrictStr | None = None
    request_timeout: float = Field(default=120, gt=0)
    cache: StrictBool = False
    check: StrictBool = True
    prompt: StrictStr | None = Field(default=None, min_length=1)
    prompt_file: StrictStr | None = Field(default=None, min_length=1)

    @field_validator("prompt")
    @classmethod
    def _template(cls, value: str | None) -> str | None:
        if value is not None:
            check_judge_template(value)
        return value

    @model_validator(mode="before")
    @classmethod
    def _named(cls, data: Any) -> Any:
        return {"judge": data} if isinstance(data, str) else data

    @model_validator(mode="after")
    def _model_or_asset(self) -> QaJudge:
        if self.judge is None:
            if self.model is None:
                raise ValueError(
                    "qa.judge needs a model (e.g. model: local/smollm2) or a judge asset "
                    "(judge: judges/open.yaml, or a store judge's name)"
                )
            return self
        if self.asset is not None:
            return self  # resolved by a plan and recorded: written by assay, not by a user
        owned = [name for name in ASSET_OWNED if name in self.model_fields_set]
        if owned:
            raise ValueError(
                f"qa.judge names the judge {self.judge!r}, whose {owned[0]} is its own: remove "
                f"{', '.join(owned)} (or remove judge and keep them)"
            )
        return self

    @property
    def display(self) -> str:
        """The judge as reports and warnings name it: its model, or a judge asset's
        ``name@version (sha256 …) on MODEL`` (its reference before it is resolved)."""
        if self.asset is not None:
            return f"{self.asset.label} on {self.asset.definition.model}"
        return str(self.model if self.judge is None else self.judge)

    @field_validator("judge")
    @classmethod
    def _reference(cls, value: str | None) -> str | None:
        if value is not None:
            judge_reference(value)  # a file name, or name[@N], with a calibration pin
        return value

    @property
    def endpoint(self) -> QaJudge | JudgeDefinition | None:
        """What holds the judge's model, URL, key variable, timeout and cache: this block,
        the resolved asset's definition, or ``None`` for a judge asset not resolved yet."""
        if self.judge is None:
            return self
        return self.asset.definition if self.asset is not None else None

    @field_validator("model")
    @classmethod
    def _provider_name(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if "/" not in value:
            raise ValueError(
                f"model '{value}' must be named provider/name, e.g. local/smollm2, "
                "openai/gpt-4o-mini, mock/judge"
            )
        return value


def _name_in_schema(schema: dict[str, Any]) -> None:
    """``qa.judge`` may also be a judge asset's name (a file or a store judge)."""
    schema["anyOf"].insert(0, {"type": "string", "description": "a judge file or store judge"})


class QaConfig(StrictModel):
    """The ``qa:`` block (see the module docstring)."""

    dataset_name: StrictStr | None = Field(default=None, min_length=1)
    group_by: list[StrictStr] = Field(default_factory=list)
    judge: QaJudge | None = Field(default=None, json_schema_extra=_name_in_schema)
    templates: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    shuffle: StrictBool = True
    as_open: StrictBool = False
    metrics_hook: StrictStr | None = None
    prompt_mutations: list[PromptMutation] = Field(default_factory=list)

    @field_validator("group_by")
    @classmethod
    def _paths(cls, value: list[str]) -> list[str]:
        for path in value:
            if not GROUP_PATH.fullmatch(path):
                raise ValueError(
                    f"group_by path {path!r} must be dotted field names, e.g. meta.ability"
                )
        if len(set(value)) != len(value):
            raise ValueError("group_by lists a path twice")
        return value


__all__ = ["QaConfig", "QaJudge"]
