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

from pydantic import Field, StrictBool, StrictStr, field_validator

from assay.spec.base import StrictModel
from assay.spec.experiment import PromptMutation

GROUP_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*(\.[A-Za-z0-9_\-]+)*$")


JUDGE_PLACEHOLDERS = (
    "question", "story", "correct_answers", "wrong_answers", "prompt_type", "response",
)  # fmt: skip
"""What a ``qa.judge.prompt`` may name as ``${name}``."""


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
    """

    model: StrictStr
    retries: int = Field(default=2, ge=0, le=10)
    include_story: StrictBool = False
    rules: StrictBool = True
    max_tokens: int = Field(default=200, ge=16, le=4096)
    base_url: StrictStr | None = None
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

    @field_validator("model")
    @classmethod
    def _provider_name(cls, value: str) -> str:
        if "/" not in value:
            raise ValueError(
                f"model '{value}' must be named provider/name, e.g. local/smollm2, "
                "openai/gpt-4o-mini, mock/judge"
            )
        return value


class QaConfig(StrictModel):
    """The ``qa:`` block (see the module docstring)."""

    dataset_name: StrictStr | None = Field(default=None, min_length=1)
    group_by: list[StrictStr] = Field(default_factory=list)
    judge: QaJudge | None = None
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
