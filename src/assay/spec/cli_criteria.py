"""``cli_called``: how often the row's programs called a recorded command line, as Coder Eval
writes it (``coder_eval_agents.md`` §2): the calls that ``sandbox.record_cli``'s shims
logged, counted by :mod:`assay.spec.cli_facets`' facets."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictStr, field_validator, model_validator

from assay.spec import cli_facets
from assay.spec.criterion_base import CriterionSpec, check_relative_path

FACET_FIELDS = ("tool", "verb", "verb_any_of", "positional", "flags", "value_flags",
                "ignore_flags")  # fmt: skip


class CliCalled(CriterionSpec):
    """Score 1.0 when the number of logged calls that have every facet is within
    ``min_count``..``max_count`` (``max_count`` unset: no upper bound), else 0.0. ``log`` is
    the shims' log in the sandbox. A log that is missing, holds unusable records, or whose
    recorder could not write or match cannot grade the row: the criterion's error."""

    type: Literal["cli_called"]
    log: StrictStr = "cli_mocks/calls.jsonl"
    tool: StrictStr | None = None
    verb: StrictStr | list[StrictStr] | None = None
    verb_any_of: list[StrictStr | list[StrictStr]] | None = None
    positional: list[StrictStr] | None = None
    flags: dict[str, Any] | None = None
    value_flags: list[StrictStr] = Field(
        default_factory=lambda: list(cli_facets.DEFAULT_VALUE_FLAGS)
    )
    ignore_flags: list[StrictStr] = Field(
        default_factory=lambda: list(cli_facets.DEFAULT_IGNORE_FLAGS)
    )
    min_count: int = Field(default=1, ge=0)
    max_count: int | None = Field(default=None, ge=0)

    _log = field_validator("log")(check_relative_path)

    def facets(self) -> dict[str, Any]:
        """The facets as :func:`assay.spec.cli_facets.matches` reads them."""
        return {
            name: getattr(self, name) for name in FACET_FIELDS if getattr(self, name) is not None
        }

    @model_validator(mode="after")
    def _sound(self) -> CliCalled:
        found = cli_facets.problems(self.facets())
        if self.max_count is not None and self.max_count < self.min_count:
            found.append(f"max_count ({self.max_count}) must be >= min_count ({self.min_count})")
        if found:
            raise ValueError("; ".join(found))
        return self


__all__ = ["FACET_FIELDS", "CliCalled"]
