"""Plan options from what a caller gives (the command line's flags, the Python API's keyword
arguments): row selectors, tag filters, repeats, experiment, overrides, store, prices."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.agents.base import Agent
from assay.criteria.base import Criterion
from assay.criteria.registry import CriterionRegistry, default_criteria
from assay.errors import UsageError
from assay.orchestration.loading.experiment import Override
from assay.orchestration.planning.expand import Selectors
from assay.orchestration.planning.plan import PlanOptions
from assay.providers.pricing import PriceTable

Overrides = Mapping[str, Any] | Sequence[str]


def plan_options(
    *,
    sample: int | None = None,
    sample_per_stratum: int | None = None,
    split: str | None = None,
    tags: Sequence[str] = (),
    exclude_tags: Sequence[str] = (),
    include_skipped: bool = False,
    skip_unsupported: bool = False,
    repeats: int | None = None,
    experiment: str | Path | None = None,
    overrides: Overrides | None = None,
    model: str | None = None,
    store: str | None = None,
    prices: str | Path | None = None,
    rows: Mapping[str, Sequence[str]] | None = None,
    stop_when_decided: bool = False,
    criteria: Sequence[type[Criterion]] = (),
    agents: Sequence[type[Agent[Any]]] = (),
) -> PlanOptions:
    """The options of a plan; see :func:`assay.run` for each one.

    Raises:
        UsageError: a count below 1, an override that is not ``path=value``, an unreadable
            price file.
        PluginError: a class of ``criteria`` is not a criterion, or one of ``agents`` not an
            agent, or its type is taken.
    """
    for name, value in (("sample", sample), ("sample_per_stratum", sample_per_stratum),
                        ("repeats", repeats)):  # fmt: skip
        if value is not None and value < 1:
            raise UsageError(f"{name} must be at least 1, got {value}")
    table = PriceTable()
    if prices is not None:
        table = table.extended(Path(prices))
    parsed = parse_overrides(overrides)
    if model is not None:
        parsed.append(Override(("agent", "model"), model, flag=f"--model {model}",
                               where_taken=True))  # fmt: skip
    return PlanOptions(
        experiment=str(experiment) if experiment is not None else None,
        stop_when_decided=stop_when_decided,
        overrides=tuple(parsed),
        store_url=store,
        selectors=Selectors(sample=sample, sample_per_stratum=sample_per_stratum, split=split),
        tags=tuple(tags),
        exclude_tags=tuple(exclude_tags),
        include_skipped=include_skipped,
        skip_unsupported=skip_unsupported,
        repeats=repeats,
        prices=table,
        fixed_rows={task: list(ids) for task, ids in (rows or {}).items()},
        criteria=criteria_registry(criteria, agents=agents),
    )


def criteria_registry(
    classes: Sequence[type[Criterion]], *, agents: Sequence[type[Agent[Any]]] = ()
) -> CriterionRegistry | None:
    """The built-in criteria and agent types (and installed plugins) plus ``classes`` and
    ``agents``; ``None`` without any.

    Raises:
        PluginError: a class is not a criterion (or an agent), or its type is taken.
    """
    if not classes and not agents:
        return None
    return default_criteria().with_classes(classes).with_agents(agents)


def parse_overrides(overrides: Overrides | None) -> list[Override]:
    """``{"agent.temperature": 0.7}`` (values as they are) or ``["agent.temperature=0.7"]``
    (values read as YAML, as ``-D``) → overrides, in order.

    Raises:
        UsageError: a text without ``=`` or an empty path.
    """
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        parsed = []
        for name, value in overrides.items():
            path = tuple(part for part in str(name).split(".") if part)
            if not path:
                raise UsageError(f"an override needs a field path, got {name!r}")
            parsed.append(Override(path, value))
        return parsed
    if isinstance(overrides, str):
        return [Override.parse(overrides)]
    return [Override.parse(text) for text in overrides]
