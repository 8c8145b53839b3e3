"""Experiment files: variants of a task that run on the identical rows (Coder Eval's A/B format,
``reference/originals.md`` §1.8).

An experiment names ``variants[]`` (unique ``variant_id``), each overriding parts of the task:
the agent (model, system prompt, temperature, ...), ``run_limits``, ``repeats``, the
sandbox's ``template_sources``, and the prompt, by exactly one of ``initial_prompt``,
``initial_prompt_file`` or ``prompt_mutations``. ``defaults`` applies to every variant before
the task's own values. A variant cannot change the dataset: every arm sees the same rows.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, StrictStr, field_validator, model_validator

from assay.spec.base import StrictModel, UnionInfo
from assay.spec.run_names import RUN_FILES

_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
RESERVED_VARIANT_IDS = RUN_FILES  # a variant's folder sits beside the run's files


class Prefix(StrictModel):
    """Put ``content`` before the prompt, joined by ``separator``."""

    type: Literal["prefix"]
    content: StrictStr
    separator: StrictStr = "\n\n"

    def apply(self, prompt: str) -> str:
        """The mutated prompt."""
        return self.content + self.separator + prompt


class Suffix(StrictModel):
    """Put ``content`` after the prompt, joined by ``separator``."""

    type: Literal["suffix"]
    content: StrictStr
    separator: StrictStr = "\n\n"

    def apply(self, prompt: str) -> str:
        """The mutated prompt."""
        return prompt + self.separator + self.content


class Replace(StrictModel):
    """Replace ``pattern`` (literal text, or a regex with ``regex: true``) by ``replacement``."""

    type: Literal["replace"]
    pattern: StrictStr
    replacement: StrictStr = ""
    regex: bool = False

    @model_validator(mode="after")
    def _compiles(self) -> Replace:
        if self.regex:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"pattern {self.pattern!r} is not a valid regex: {exc}") from None
        return self

    def apply(self, prompt: str) -> str:
        """The mutated prompt (a regex replacement is inserted literally, no ``\\1``)."""
        if self.regex:
            replacement = self.replacement
            return re.sub(self.pattern, lambda _match: replacement, prompt)
        return prompt.replace(self.pattern, self.replacement)


class Template(StrictModel):
    """Replace each literal ``{name}`` by ``variables[name]``; an unknown ``{x}`` stays."""

    type: Literal["template"]
    variables: dict[StrictStr, StrictStr]

    def apply(self, prompt: str) -> str:
        """The mutated prompt."""
        for name, value in self.variables.items():
            prompt = prompt.replace("{" + name + "}", value)
        return prompt


PromptMutation = Annotated[
    Prefix | Suffix | Replace | Template,
    Field(discriminator="type"),
    UnionInfo(noun="prompt mutation"),
]


class VariantDefaults(StrictModel):
    """What every variant starts from (below the task's own values)."""

    agent: dict[str, Any] | None = None
    run_limits: dict[str, Any] | None = None
    repeats: int | None = Field(default=None, ge=1)
    pre_run: list[dict[str, Any]] | None = None
    post_run: list[dict[str, Any]] | None = None
    prompt_mutations: list[PromptMutation] = Field(default_factory=list)


class Variant(StrictModel):
    """One arm of the experiment."""

    variant_id: StrictStr
    description: StrictStr = ""
    agent: dict[str, Any] | None = None
    run_limits: dict[str, Any] | None = None
    repeats: int | None = Field(default=None, ge=1)
    template_sources: list[dict[str, Any]] | None = None
    initial_prompt: StrictStr | None = None
    initial_prompt_file: StrictStr | None = None
    prompt_mutations: list[PromptMutation] | None = None
    driver: Literal["tempdir", "bwrap"] | None = None
    dataset: Any = None
    simulation: dict[str, Any] | None = None
    """A partial ``simulation:`` block merged over the task's (Coder Eval's shallow merge:
    the fields it sets replace the task's)."""

    @field_validator("variant_id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not _ID.fullmatch(value):
            raise ValueError(f"variant_id {value!r} must match {_ID.pattern}")
        if value in RESERVED_VARIANT_IDS:
            raise ValueError(f"variant_id {value!r} is the name of a run file; choose another")
        return value

    @model_validator(mode="after")
    def _rules(self) -> Variant:
        if self.dataset is not None:
            raise ValueError(
                "a variant cannot change the dataset: every variant runs on the identical rows "
                "(move the dataset to the task file)"
            )
        chosen = [
            name
            for name in ("initial_prompt", "initial_prompt_file", "prompt_mutations")
            if getattr(self, name) is not None
        ]
        if len(chosen) > 1:
            raise ValueError(f"set only one of {', '.join(chosen)} in a variant")
        return self


class StopRule(StrictModel):
    """``stop:``: stop scheduling rows once the experiment is decided.

    Rows run in a seeded random order, both variants of a row together; after each row the
    anytime-valid betting test of the paired difference of its pass rate
    (:mod:`assay.metrics.sequential`) is updated, and no new row starts once it rejects 0
    (one variant is better) or, with ``delta``, every difference of ``delta`` or more (no
    difference that matters). Needs exactly two variants.
    """

    metric: Literal["pass_rate"] = "pass_rate"
    delta: float | None = Field(default=None, gt=0, lt=1)
    alpha: float = Field(default=0.05, gt=0, lt=1)
    seed: int = 20261204


class Experiment(StrictModel):
    """One experiment file."""

    experiment_id: StrictStr
    description: StrictStr = ""
    defaults: VariantDefaults = Field(default_factory=VariantDefaults)
    variants: list[Variant] = Field(min_length=1)
    stop: StopRule | None = None

    @model_validator(mode="after")
    def _stop_needs_two_variants(self) -> Experiment:
        if self.stop is not None and len(self.variants) != 2:
            raise ValueError(f"stop compares two variants, and this experiment has "
                             f"{len(self.variants)}; remove stop or keep two variants")  # fmt: skip
        return self

    @field_validator("experiment_id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not _ID.fullmatch(value):
            raise ValueError(f"experiment_id {value!r} must match {_ID.pattern}")
        return value

    @model_validator(mode="after")
    def _unique(self) -> Experiment:
        seen: set[str] = set()
        for variant in self.variants:
            if variant.variant_id in seen:
                raise ValueError(f"variant_id '{variant.variant_id}' appears twice")
            seen.add(variant.variant_id)
        return self
