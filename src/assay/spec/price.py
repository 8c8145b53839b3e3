"""A model's price as a task file gives it (``agent.price``)."""

from __future__ import annotations

from pydantic import Field

from assay.spec.base import StrictModel


class ModelPrice(StrictModel):
    """US dollars per million tokens, overriding the price table for this agent's model."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cache_read_per_mtok: float | None = Field(default=None, ge=0)
    cache_write_per_mtok: float | None = Field(default=None, ge=0)
