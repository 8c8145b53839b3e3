"""The secrets a run knows, gathered into its :class:`~assay.results.secrets.Redactor`.

A run knows: every secret variable of the environment it runs in (by name, plus the
variables its tasks name in ``agent.api_key_env`` / ``qa.judge.api_key_env`` / an
``llm_judge``'s ``api_key_env``), the password of every URL with credentials in that
environment or given as ``--store``, and the values of secret-named entries of ``agent.env``
in its tasks. ``assay evaluate`` and ``assay report``
gather the same from the rows' recorded task configurations.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from assay.results.secrets import MIN_SECRET_LENGTH, Redactor, is_secret_name, url_passwords
from assay.results.task_result import EvaluationResult
from assay.spec.task import TaskDefinition

STORE_OPTION = "ASSAY_STORE"
"""The name a ``--store`` URL's password is redacted as (the variable it could come from)."""


def run_redactor(
    tasks: Iterable[TaskDefinition],
    environ: Mapping[str, str],
    *,
    store_url: str | None = None,
) -> Redactor:
    """The redactor of a run of ``tasks`` (every variant's definition) under ``environ``."""
    definitions = list(tasks)
    names = set().union(*(t.credential_variables for t in definitions))
    redactor = Redactor.from_environment(environ, names=names)
    for task in definitions:
        env = getattr(task.agent, "env", None)  # command and coding agents
        if isinstance(env, dict):
            _add_agent_env(redactor, env, names)
    for password in url_passwords(store_url or ""):
        redactor.add(STORE_OPTION, password, whole=False)
    return redactor


def results_redactor(results: Iterable[EvaluationResult], environ: Mapping[str, str]) -> Redactor:
    """The redactor of ``assay evaluate`` / ``assay report`` over a run's rows: the secrets of
    ``environ`` and of the rows' recorded task configurations (already-redacted values are
    ignored)."""
    names: set[str] = set()
    envs: list[Mapping[str, Any]] = []
    for result in results:
        resolved = result.task_config.resolved
        agent = resolved.get("agent") or {}
        judge = (resolved.get("qa") or {}).get("judge") or {}
        names.update(n for n in (agent.get("api_key_env"), judge.get("api_key_env")) if n)
        names.update(_judge_credentials(resolved.get("success_criteria") or []))
        if isinstance(agent.get("env"), dict):
            envs.append(agent["env"])
    redactor = Redactor.from_environment(environ, names=names)
    for env in envs:
        _add_agent_env(redactor, env, names)
    return redactor


def _judge_credentials(criteria: Iterable[Any]) -> set[str]:
    """The ``api_key_env`` of each recorded ``llm_judge`` (inline, or its resolved judge's)."""
    names: set[str] = set()
    for criterion in criteria:
        if not isinstance(criterion, dict) or criterion.get("type") != "llm_judge":
            continue
        definition = (criterion.get("asset") or {}).get("definition") or {}
        name = definition.get("api_key_env") or criterion.get("api_key_env")
        if isinstance(name, str) and name:
            names.add(name)
    return names


def _add_agent_env(redactor: Redactor, env: Mapping[str, Any], names: set[str]) -> None:
    for name, value in env.items():
        if isinstance(value, str) and (is_secret_name(name) or name in names):
            redactor.add(name, value)


def short_secret_warnings(redactor: Redactor) -> list[str]:
    """One warning per secret too short to redact (names only)."""
    return [
        f"the secret in {name} is shorter than {MIN_SECRET_LENGTH} characters, so it is not "
        "redacted from the files assay writes or what it prints; use a longer value"
        for name in redactor.short_names
    ]
