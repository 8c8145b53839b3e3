"""The plan as data: each variant's settings with where each value came from, the variable
names its programs receive, and the whole plan as JSON (``assay plan --json``)."""

from __future__ import annotations

import json
import os
from typing import Any

from assay.orchestration.loading.experiment import ResolvedVariant
from assay.orchestration.planning.plan import Plan
from assay.orchestration.running.environment import AgentVariables, agent_variables
from assay.results.secrets import clip_head
from assay.spec.simulation import SimulationConfig


def variant_settings(
    variant: ResolvedVariant, *, repeats: int | None = None
) -> list[tuple[str, str, str]]:
    """``(field, value, source)`` for every setting of a variant except its criteria and
    dataset, source being ``default``, ``experiment-defaults``, ``task``, ``variant`` or
    ``cli``; ``repeats``: ``--repeats``, which overrides every variant's."""
    data = variant.definition.model_dump(
        mode="json", exclude={"success_criteria", "dataset", "suite_id", "row_id"}
    )
    data["sandbox"]["driver"] = variant.definition.sandbox_driver  # the default made explicit
    rows: list[tuple[str, str, str]] = []
    _leaves(data, "", rows, variant.provenance)
    if repeats is not None:
        rows = [("repeats", str(repeats), "cli") if name == "repeats" else (name, value, source)
                for name, value, source in rows]  # fmt: skip
    return rows


def _leaves(value: Any, path: str, rows: list[tuple[str, str, str]], where: dict[str, str]) -> None:
    if isinstance(value, dict) and value:
        for key, inner in value.items():
            _leaves(inner, f"{path}.{key}" if path else key, rows, where)
        return
    text = clip_head(json.dumps(value, ensure_ascii=False), 70, "...")
    rows.append((path, text, _source(path, where)))


def _source(path: str, where: dict[str, str]) -> str:
    while path:
        if path in where:
            return where[path]
        path = path.rpartition(".")[0]
    return "default"


def variables_of(variant: ResolvedVariant, plan: Plan) -> AgentVariables:
    """The variable names ``variant``'s programs receive in this process's environment."""
    return agent_variables(variant.definition, os.environ, hidden=plan.writer.withheld)


def dialog_text(config: SimulationConfig) -> str:
    """``assay plan``'s account of a task's dialog mode (``simulation:``): the simulated
    user's model, the most exchanges, the stop token, when the criteria run, and the
    budget and trials where set."""
    parts = [
        f"simulated user {config.simulator_model}",
        f"up to {config.max_turns} exchange(s)",
        f"stop token {config.stop_token!r}",
        f"criteria checked {config.check_criteria}",
    ]
    if config.stop_on_criteria_pass:
        parts.append("stops when they pass")
    if config.max_total_tokens is not None:
        parts.append(f"max_total_tokens {config.max_total_tokens}")
    if config.n_trials > 1:
        parts.append(f"{config.n_trials} trials a row-task")
    return ", ".join(parts)


def _dialog_json(config: SimulationConfig | None) -> dict[str, Any] | None:
    if config is None:
        return None
    return {**config.model_dump(mode="json", exclude={"enabled"}),
            "model": config.simulator_model}  # fmt: skip


def environment_lines(names: AgentVariables, indent: str) -> list[str]:
    """Two lines for ``assay plan``: the names received, then the secrets withheld and
    those passed on purpose (``(not set)`` when the host has none)."""
    host = names.host
    agent = f", {', '.join(names.agent)} (agent)" if names.agent else ""
    received = f"{', '.join(host.received) or 'none'} ({len(host.received)} from the host)"
    lines = [f"{indent}environment: receives {received}, {', '.join(names.assay)} (assay){agent}"]
    secrets = [f"withheld {', '.join(host.withheld)}" if host.withheld else "none withheld"]
    if host.passed_on_purpose:
        shown = [n + (" (not set)" if n in host.missing else "") for n in host.passed_on_purpose]
        secrets.append("passed on purpose " + ", ".join(shown))
    lines.append(f"{indent}secrets: {'; '.join(secrets)}")
    return lines


def _environment_json(names: AgentVariables) -> dict[str, list[str]]:
    return {
        "host": names.host.received,
        "withheld": names.host.withheld,
        "passed_on_purpose": names.host.passed_on_purpose,
        "not_set": names.host.missing,
        "assay": names.assay,
        "agent": names.agent,
    }


def plan_as_json(plan: Plan) -> dict[str, Any]:
    """The plan as JSON data (``assay plan --json``)."""
    tasks = []
    for planned in plan.tasks:
        selection = planned.selection()
        tasks.append(
            {
                "task_id": planned.loaded.definition.task_id,
                "file": planned.loaded.display,
                "row_tasks": len(planned.expansion.row_tasks),
                "repeats": planned.loaded.definition.replicates(plan.repeats_override),
                "selection": selection.selection.model_dump(mode="json") if selection else None,
                "task_ids": [t.task_id for t in planned.expansion.row_tasks],
                "dialog": _dialog_json(planned.loaded.definition.dialog),
                "variants": [
                    {
                        "variant_id": v.variant_id,
                        "environment": _environment_json(variables_of(v, plan)),
                        "settings": [
                            {
                                "field": f,
                                "value": json.loads(val) if not val.endswith("...") else val,
                                "source": src,
                            }
                            for f, val, src in variant_settings(v, repeats=plan.repeats_override)
                        ],
                    }
                    for v in planned.variants
                ],
            }
        )
    return {
        "tasks": tasks,
        "skipped": [s.model_dump() for s in plan.skipped],
        "variants": list(plan.variants),
        "work_items": plan.work_item_count(),
        "warnings": plan.warnings,
    }
