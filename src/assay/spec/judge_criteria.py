"""The ``llm_judge`` criterion as users write it (Coder Eval's fields, ``reference/
coder_eval_agents.md``, plus judge files and store judges, :mod:`assay.spec.judge`).

Kept apart from :mod:`assay.spec.criteria` (the union of every criterion type), like the
file and transcript criteria.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, StrictBool, StrictStr, field_validator, model_validator

from assay.spec.base import BaseUrl
from assay.spec.criterion_base import CriterionSpec, check_relative_path
from assay.spec.judge import (
    FewShotExample,
    JudgeAsset,
    JudgeDefinition,
    VerdictSpec,
    check_rubric,
    judge_reference,
    provider_model,
)

TASK_DIR_PREFIXES = ("$TASK_DIR/", "${TASK_DIR}/")
REFERENCE_DIR_PREFIXES = ("$REFERENCE_DIR/", "${REFERENCE_DIR}/")
HOST_PREFIXES = TASK_DIR_PREFIXES + REFERENCE_DIR_PREFIXES
"""``files`` entries read from the host: the task's folder and its ``reference`` folder."""
"""A ``files`` entry with one of these prefixes is read from the task's folder."""

_INLINE_FIELDS = ("prompt", "model", "verdict", "few_shot", "system_prompt", "samples",
                  "retries", "temperature", "max_tokens", "base_url", "api_key_env",
                  "request_timeout", "cache")  # fmt: skip


class LlmJudge(CriterionSpec):
    """``llm_judge``: an LLM grades the row against a rubric.

    Either ``judge`` (★ a judge file ``judges/x.yaml``, or ``name`` / ``name@N`` in the store)
    or an inline judge: ``prompt`` (the rubric) and ``model`` (default ``local/smollm2``),
    with a ``verdict`` (default: Coder Eval's score, a scale from 0 to 1). The judge sees the
    rubric (``${row.x}``, ``${response}``, ``${files}``, ``${transcript}``, ``${dialog}``
    filled in), then, unless the rubric placed them, the agent's response
    (``include_agent_output``, on by default ★), the ``files`` (sandbox-relative, or
    ``$TASK_DIR/…``), with ``include_tool_calls`` the transcript summary and, with
    ``include_dialog`` (dialog mode), the conversation, its user turns marked as untrusted
    text of a simulated user. ``expected_label`` (labels verdicts) gives the row's true
    label, for accuracy and a confusion matrix. ``enabled: false``
    records the criterion as skipped (outside every average). A verdict that cannot be read
    after the retries is a ``judge_error``: not graded, counted apart.
    """

    coder_eval_only: ClassVar[Mapping[str, str]] = {
        **CriterionSpec.coder_eval_only,
        "include_reference": "tasks have no reference directory in assay",
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
    base_url: BaseUrl | None = None
    api_key_env: StrictStr | None = None
    request_timeout: float | None = Field(default=None, gt=0)
    cache: StrictBool | None = None
    files: list[StrictStr] = Field(default_factory=list)
    include_agent_output: StrictBool = True
    include_tool_calls: StrictBool = False
    max_file_chars: int = Field(default=20000, ge=100)
    max_transcript_chars: int = Field(default=100000, ge=100)
    include_dialog: StrictBool = False
    max_dialog_chars: int = Field(default=100000, ge=100)
    expected_label: StrictStr | None = None
    enabled: StrictBool = True
    asset: JudgeAsset | None = None

    def needs_sandbox(self) -> bool:
        """True when the judge is shown a sandbox file (not one under ``$TASK_DIR``)."""
        return any(not f.startswith(HOST_PREFIXES) for f in self.files)

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
        return self

    @field_validator("prompt")
    @classmethod
    def _rubric(cls, value: str | None) -> str | None:
        return check_rubric(value) if value is not None else None

    @field_validator("files")
    @classmethod
    def _inside(cls, value: list[str]) -> list[str]:
        for path in value:
            if not path.strip():
                raise ValueError("files has an empty path")
            prefix = next((p for p in HOST_PREFIXES if path.startswith(p)), None)
            if prefix is None:
                check_relative_path(path)
                continue
            inner = path[len(prefix) :]
            if ".." in re.split(r"[\\/]+", inner) or inner.startswith(("/", "\\")):
                folder = "task" if prefix in TASK_DIR_PREFIXES else "reference"
                raise ValueError(f"files: '{path}' leaves the {folder} folder; use a path "
                                 "inside it")  # fmt: skip
        return value

    @property
    def credential_variable(self) -> str | None:
        """The variable holding the judge's API key (``api_key_env``, inline or of the
        resolved judge), or ``None``."""
        if self.asset is not None:
            return self.asset.definition.api_key_env
        return self.api_key_env

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


SYSTEM_ONE_MODEL = "openai/jev-latest"
SYSTEM_ONE_BASE_URL = "https://api.typesafe.ai/v1"
SYSTEM_ONE_KEY = "TYPESAFE_API_KEY"


class SystemOneJudge(LlmJudge):
    """``system_one_judge`` (Coder Eval v0.12.5): a typed-rubric judge on System One's
    OpenAI-compatible endpoint, graded and reported exactly as an inline ``llm_judge``. Its
    defaults are Coder Eval's: model ``jev-latest`` (``openai/jev-latest``), base URL
    ``https://api.typesafe.ai/v1``, key in ``TYPESAFE_API_KEY``; each can be set (another
    OpenAI-compatible endpoint, another model). The rubric is ``prompt``; a stored or file
    judge (``judge:``) is not taken (use ``llm_judge`` for those)."""

    type: Literal["system_one_judge"]  # type: ignore[assignment]

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        if data.get("judge") is not None:
            raise ValueError("system_one_judge takes its rubric inline (prompt); for a judge "
                             "file or a store judge, use type: llm_judge")  # fmt: skip
        return {"model": SYSTEM_ONE_MODEL, "base_url": SYSTEM_ONE_BASE_URL,
                "api_key_env": SYSTEM_ONE_KEY, **data}  # fmt: skip
