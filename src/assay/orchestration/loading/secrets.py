"""The secrets a run knows, gathered into its :class:`~assay.results.secrets.Redactor`.

A run knows: every secret variable of the environment it runs in (by name, plus the
variables its tasks name in ``agent.api_key_env`` / ``qa.judge.api_key_env`` / an
``llm_judge``'s ``api_key_env``), the password of every URL with credentials in that
environment or given as ``--store``, the values of secret-named entries of ``agent.env`` in
its tasks and the URL passwords in its other entries, and likewise the secret-named entries
of any free-form mapping of its agent and criteria (``extra_body: {api_key: …}``). ``assay
evaluate`` and ``assay report`` gather the same from the rows' recorded task configurations.
"""

from __future__ import annotations

import contextlib
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.errors import UsageError
from assay.orchestration.loading.overrides import Override
from assay.results.io import Writer
from assay.results.secrets import MIN_SECRET_LENGTH, Redactor, url_secrets

if TYPE_CHECKING:  # annotations only: the command line's redactor needs neither model
    from pydantic import BaseModel

    from assay.results.task_result import EvaluationResult
    from assay.spec.task import TaskDefinition

STORE_OPTION = "ASSAY_STORE"
"""The name a ``--store`` URL's password is redacted as (the variable it could come from)."""


def run_redactor(
    tasks: Iterable[TaskDefinition],
    environ: Mapping[str, str],
    *,
    store_url: str | None = None,
    overrides: Iterable[Override] = (),
) -> Redactor:
    """The redactor of a run of ``tasks`` (every variant's definition) under ``environ``,
    with the secrets of its ``-D`` ``overrides`` (:meth:`Redactor.add_setting`) and the URL
    secrets (:func:`url_secrets`) of its agents' and judges' ``base_url``."""
    definitions = list(tasks)
    names = set().union(*(t.credential_variables for t in definitions))
    redactor = Redactor.from_environment(environ, names=names)
    for task in definitions:
        _add_agent_env(redactor, task.agent.program_env, names)
        for config in [task.agent, *task.success_criteria]:
            _add_free_form(redactor, config)
        for url in _base_urls(task):
            redactor.add_variable("base_url", url)
    for override in overrides:
        redactor.add_setting(override.path[-1] if override.path else "", override.value)
    for password in url_secrets(store_url or ""):
        redactor.add(STORE_OPTION, password, whole=False)
    if any(config.uses_bridge for task in definitions
           for config in [task.agent, *task.agent_graders()]):  # fmt: skip
        add_bridge_keys(redactor)
    return redactor


def add_bridge_keys(redactor: Redactor) -> None:
    """Redact every row's model-bridge credential (one pattern for all: a coding agent's
    CLI, or one an ``agent_judge`` runs, may print the key it was given)."""
    from assay.bridge.session import BRIDGE_KEY_NAME, TOKEN_PATTERN

    redactor.add_pattern(BRIDGE_KEY_NAME, TOKEN_PATTERN)


def _base_urls(task: TaskDefinition) -> list[str]:
    """The ``base_url`` of ``task``'s agent, QA judge and inline ``llm_judge`` criteria."""
    judge = task.qa.judge.endpoint if task.qa is not None and task.qa.judge else None
    holders = [judge, *task.success_criteria]
    urls = [url for h in holders if isinstance(url := getattr(h, "base_url", None), str)]
    return [task.agent.route_base_url, *urls] if task.agent.route_base_url else urls


def command_line_redactor(arguments: Sequence[str], environ: Mapping[str, str]) -> Redactor:
    """The redactor of what the command line prints before a run knows its secrets (a task
    file's load error): ``environ``'s, the secrets of its ``-D``/``--set`` values (a
    secret-named field, a URL's password), and a ``--store`` URL's password."""
    redactor = Redactor.from_environment(environ)
    given = iter(arguments)
    for argument in given:
        flag, _, attached = argument.partition("=") if argument.startswith("--") else (
            argument[:2], "", argument[2:])  # fmt: skip
        if flag not in ("-D", "--set", "--store"):
            continue
        value = attached or next(given, "")
        if flag == "--store":
            for password in url_secrets(value):
                redactor.add(STORE_OPTION, password, whole=False)
            continue
        with contextlib.suppress(UsageError):
            override = Override.parse(value)
            redactor.add_setting(override.path[-1], override.value)
    return redactor


def results_writer(
    results: Iterable[EvaluationResult], environ: Mapping[str, str], *, run_dir: Path | None = None
) -> Writer:
    """The writer of ``assay evaluate`` / ``assay report`` over a run's rows: its secrets are
    :func:`results_redactor`'s."""
    return Writer(results_redactor(results, environ, run_dir=run_dir))


def command_line_writer(arguments: Sequence[str], environ: Mapping[str, str]) -> Writer:
    """The writer (and console) of what the command line writes before a run knows its
    secrets: :func:`command_line_redactor`'s."""
    return Writer(command_line_redactor(arguments, environ))


def results_redactor(
    results: Iterable[EvaluationResult], environ: Mapping[str, str], *, run_dir: Path | None = None
) -> Redactor:
    """The redactor of ``assay evaluate`` / ``assay report`` over a run's rows: the secrets of
    ``environ``, of the rows' recorded task configurations (already-redacted values are
    ignored) and of their task files' ``agent.env`` as the files are now (a literal secret
    there is recorded redacted, so only the file still knows it) and of the experiment file's
    variants that ``run_dir``'s ``plan.json`` names (``-e``), and every row's bridge
    key (:func:`add_bridge_keys`) when a row's agent or ``agent_judge`` used the bridge, as
    the run itself did."""
    names: set[str] = set()
    envs: list[Mapping[str, Any]] = []
    files: set[str] = set()
    bridged = False
    for result in results:
        resolved = result.task_config.resolved
        agent = resolved.get("agent") or {}
        judge = (resolved.get("qa") or {}).get("judge") or {}
        bridged = bridged or _used_bridge(agent, resolved.get("success_criteria") or [])
        if agent.get("api_key_env"):
            names.add(agent["api_key_env"])
        names.update(_judge_credentials([judge, *(resolved.get("success_criteria") or [])]))
        if isinstance(agent.get("env"), dict):
            envs.append(agent["env"])
        if result.task_config.source_file:
            files.add(result.task_config.source_file)
    envs.extend(env for file in sorted(files) if (env := _file_agent_env(file)))
    envs.extend(_experiment_envs(run_dir) if run_dir is not None else [])
    redactor = Redactor.from_environment(environ, names=names)
    for env in envs:
        _add_agent_env(redactor, env, names)
    if bridged:
        add_bridge_keys(redactor)
    return redactor


def _used_bridge(agent: Mapping[str, Any], criteria: Iterable[Any]) -> bool:
    """A recorded row's agent called its model through the bridge (``route: bridge``), or a
    criterion ran a coding agent that always does (``agent_judge``)."""
    return agent.get("route") == "bridge" or any(
        isinstance(c, dict) and c.get("type") == "agent_judge" for c in criteria
    )


def _experiment_envs(run_dir: Path) -> list[Mapping[str, Any]]:
    """The ``agent.env`` of each variant (and of the ``defaults``) of the experiment file
    ``run_dir``'s ``plan.json`` names, as the file is now; none without one."""
    from assay.results.io import read_model
    from assay.results.plan_record import PLAN_FILE, PlanRecord

    record = read_model(run_dir / PLAN_FILE, PlanRecord)
    data = _yaml_file(record.options.experiment) if record and record.options.experiment else None
    if not isinstance(data, dict):
        return []
    blocks = [data.get("defaults"), *(data.get("variants") or [])]
    return [env for block in blocks if (env := _agent_env(block))]


def _file_agent_env(file: str) -> Mapping[str, Any] | None:
    """The ``agent.env`` mapping of the task file ``file`` as it is now; ``None`` when the
    file is gone, is not YAML or has none (a task built in Python, a file edited since)."""
    return _agent_env(_yaml_file(file))


def _yaml_file(file: str) -> Any:
    """``file`` read as YAML; ``None`` when it is gone or is not YAML."""
    import yaml

    from assay.spec.source import load_yaml

    try:
        with open(file, encoding="utf-8") as handle:
            return load_yaml(handle.read())
    except (OSError, ValueError, yaml.YAMLError):
        return None


def _agent_env(data: Any) -> Mapping[str, Any] | None:
    """The literal values of a task's (or a variant's) ``agent.env`` block."""
    agent = data.get("agent") if isinstance(data, dict) else None
    env = agent.get("env") if isinstance(agent, dict) else None
    if not isinstance(env, dict):
        return None
    return {name: value for name, value in env.items() if isinstance(value, str)}


def _judge_credentials(criteria: Iterable[Any]) -> set[str]:
    """The ``api_key_env`` of each recorded criterion (or ``qa.judge``) that names one (a
    judge: inline, or its resolved judge's)."""
    names: set[str] = set()
    for criterion in criteria:
        if not isinstance(criterion, dict):
            continue
        definition = (criterion.get("asset") or {}).get("definition") or {}
        name = definition.get("api_key_env") or criterion.get("api_key_env")
        if isinstance(name, str) and name:
            names.add(name)
    return names


def _add_free_form(redactor: Redactor, config: BaseModel) -> None:
    """The secret-named entries of a configuration's free-form mappings (a field typed
    ``dict[str, Any]``: ``extra_body: {api_key: …}``, ``sdk_options``), at any depth, as a
    ``-D`` override's (:meth:`Redactor.add_setting`); the nested configurations' too. Its
    declared fields are not secrets by their names (``api_key_env`` names a variable)."""
    for name, info in type(config).model_fields.items():
        value = getattr(config, name, None)
        items: list[Any] = list(value) if isinstance(value, list | tuple) else [value]
        for item in items:
            if hasattr(type(item), "model_fields"):  # a nested configuration (pydantic)
                _add_free_form(redactor, item)
        if isinstance(value, dict) and _free_form(info.annotation):
            redactor.add_setting(name, value)


def _free_form(annotation: Any) -> bool:
    """``annotation`` is a mapping of any values (``dict[str, Any]``, optional or not)."""
    options = typing.get_args(annotation) if typing.get_origin(annotation) in (
        typing.Union, types.UnionType) else (annotation,)  # fmt: skip
    return any(typing.get_origin(option) in (dict, Mapping)
               and typing.get_args(option)[1:] == (Any,) for option in options)  # fmt: skip


def _add_agent_env(redactor: Redactor, env: Mapping[str, Any], names: set[str]) -> None:
    """Secret-named entries whole, and the URL passwords in any other entry."""
    for name, value in env.items():
        if isinstance(value, str):
            redactor.add_variable(name, value, names=names)


def short_secret_warnings(redactor: Redactor) -> list[str]:
    """One warning per secret too short to redact (names only)."""
    return [
        f"the secret in {name} is shorter than {MIN_SECRET_LENGTH} characters, so it is not "
        "redacted from the files assay writes or what it prints; use a longer value"
        for name in redactor.short_names
    ]
