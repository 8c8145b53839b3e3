"""The environment of the programs a row runs: the host's, without its secrets.

Agents, ``pre_run``/``post_run`` commands and command criteria get every variable of the
host environment except those that hold a secret (:func:`assay.results.secrets.is_secret_name`,
a value with a URL's secret, plus the variables a run names as credentials, e.g.
``agent.api_key_env``), unless the task
passes them on purpose (``agent.env_passthrough``, or Coder Eval's
``sandbox.docker.env_passthrough`` / ``env_passthrough_extra``). An agent's own ``env``
block is added on top by the agent, as written in the task file. ``PWD`` and ``OLDPWD``
name the folders assay was run in, not a program's, and are left out (:data:`HOST_FOLDERS`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from assay.results.secrets import is_secret_name, url_secrets

HOST_FOLDERS = frozenset({"PWD", "OLDPWD"})
"""The shell's names of the folder assay was run in (and the one before): a row's program
works in the row's folder, and a shell sets them anew; a program that is not one takes
``PWD`` at its word (OpenCode looked for its project there, in a container where that folder
is not, and failed every row)."""


def withheld(
    name: str, *, value: str = "", passthrough: Collection[str], hidden: Collection[str]
) -> bool:
    """Whether the variable ``name`` (set to ``value``) is kept from the row's programs: a
    secret's name, a name of ``hidden``, or a value holding a URL's secret, whatever the
    variable is called (:func:`assay.results.secrets.url_secrets`, the redactor's own rule:
    ``postgresql://user:pw@host``, ``https://TOKEN@host``, ``?sig=…``), unless
    ``passthrough`` names it."""
    if name in passthrough:
        return False
    return name in hidden or is_secret_name(name) or bool(value and url_secrets(value))


def agent_environment(
    base: Mapping[str, str],
    *,
    passthrough: Collection[str] = (),
    hidden: Collection[str] = (),
) -> dict[str, str]:
    """``base`` without its secret variables; see the module docstring.

    Args:
        base: the host environment.
        passthrough: names passed even though they hold secrets.
        hidden: more names to withhold (credentials the run's models use).
    """
    return {
        name: value
        for name, value in base.items()
        if name not in HOST_FOLDERS
        and not withheld(name, value=value, passthrough=passthrough, hidden=hidden)
    }


@dataclass(frozen=True)
class EnvironmentNames:
    """Which host variables a row's programs receive, by name only (``assay plan``).

    Attributes:
        received: host variables passed, sorted (secret ones passed on purpose included).
        withheld: host variables kept back because they hold secrets, sorted.
        passed_on_purpose: the task's passthrough names, sorted; those not set are listed in
            ``missing``.
        missing: passthrough names that the host environment does not set.
    """

    received: list[str]
    withheld: list[str]
    passed_on_purpose: list[str]
    missing: list[str]


def environment_names(
    base: Mapping[str, str],
    *,
    passthrough: Collection[str] = (),
    hidden: Collection[str] = (),
) -> EnvironmentNames:
    """The names :func:`agent_environment` passes and withholds for ``base``."""
    kept = agent_environment(base, passthrough=passthrough, hidden=hidden)
    return EnvironmentNames(
        received=sorted(kept),
        withheld=sorted(set(base) - set(kept) - HOST_FOLDERS),
        passed_on_purpose=sorted(passthrough),
        missing=sorted(set(passthrough) - set(base)),
    )
