"""What every coding-agent CLI answers before a row runs: its program, its models, its
preflight, and what its sandbox must give it.

A CLI agent type (``claude-code``, ``codex``, or one a package adds) subclasses
:class:`CliAgent` with its config model (a :class:`~assay.spec.coding_agents.CodingAgent`),
how its program is found (:meth:`CliAgent.find`), where its own login lives
(:attr:`CliAgent.own_credentials`), its event stream's parser (:meth:`CliAgent.parser`) and
how one row starts it (:meth:`CliAgent.launch`, after :meth:`CliAgent.prepare`); the run
itself, one template for every CLI, is :meth:`CliAgent.run`. ``assay plan``
and ``assay run`` then refuse, with the task file's line, what would otherwise fail in every
row: a CLI that is not installed, a model that cannot start (no key, no mock script), a
plugin folder or system prompt file that does not exist, and limits the chosen route cannot
enforce.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from assay.agents import dialog_settings
from assay.agents.base import Agent, AgentContext, AgentOutcome, PreflightCheck, PreflightSetup
from assay.agents.cli import (
    CliLaunch,
    EventParser,
    dialog_home,
    find_cli,
    fresh_home,
    open_session,
    refused,
    run_cli,
)
from assay.agents.coding_models import (
    bridge_key,
    plugin_dirs,
    read_system_prompt,
    skill_plugins,
)
from assay.agents.skill_rules import SkillRule
from assay.bridge import BridgeSession
from assay.errors import UserError
from assay.providers.pool import ModelKey
from assay.sandbox.bwrap import seal_lost
from assay.sandbox.mounts import install_root
from assay.spec.coding_agents import CodingAgent

Config = TypeVar("Config", bound=CodingAgent)


@dataclass(frozen=True)
class OwnCredentials:
    """Where a CLI finds the user's own credentials on ``route: direct``: any of
    ``variables`` set, or the login file ``login`` (relative to the home folder); ``fix`` says
    how to provide one."""

    variables: tuple[str, ...]
    login: str
    fix: str


@dataclass(frozen=True)
class CliRow:
    """What :meth:`CliAgent.launch` builds one row's start from.

    Attributes:
        context: the row.
        cli: the CLI's executable (:meth:`CliAgent.find`).
        home: the CLI's home folder for this row (kept for every turn of a dialog when the
            agent :attr:`~CliAgent.keeps_home`), removed after the run otherwise.
        session: the row's bridge session (``None`` on ``route: direct``).
        bridge_url: the bridge's base URL (``""`` on ``route: direct``).
        prepared: what :meth:`CliAgent.prepare` returned.
        parser: the row's event parser (its transcript may be given facts before the run).
    """

    context: AgentContext
    cli: Path
    home: Path
    session: BridgeSession | None
    bridge_url: str
    prepared: Any
    parser: EventParser

    @property
    def token(self) -> str:
        """The bridge session's credential (``""`` on ``route: direct``)."""
        return self.session.token if self.session is not None else ""


class CliAgent(Agent[Config]):
    """A coding agent's CLI, run in the row's sandbox (see the module docstring)."""

    keeps_home: ClassVar[bool] = False
    """Capability (dialog): the CLI resumes its session in a later turn of a dialog, so its
    home folder, where the session lives, is kept for the dialog's every turn."""
    session_files: ClassVar[tuple[str, ...] | None] = None
    """Capability (dialog, with :attr:`keeps_home`): where in its home the CLI keeps its
    sessions; each later turn then gets a fresh home with only these carried over
    (:func:`assay.agents.cli.dialog_home`). ``None``: the whole home is kept."""
    project_settings: ClassVar[tuple[str, ...]] = ()
    """The settings files the CLI reads from the folder it works in (relative to it; a name
    ending with ``/``: a whole folder, such as one of plugins): in a dialog they are put
    back as they were at its first turn before each later one
    (:func:`assay.agents.dialog_settings.pin`), so the agent cannot configure its next turn."""

    own_credentials: ClassVar[OwnCredentials | None] = None
    """Capability (credentials): what ``route: direct`` needs (``None``: not checked)."""

    skills_only: ClassVar[bool] = False
    """Capability (plugins): the CLI takes only the plugins' skills, copied into one folder of
    its home (:func:`~assay.agents.coding_models.skill_plugins`), so a plugin without a
    skill, and two skills of one name, are refused before any row runs."""

    skill_rule: ClassVar[SkillRule | None] = None
    """Capability (plugins): what the CLI needs of a skill's ``SKILL.md`` to load it; a skill
    it would pass over is refused before any row runs (``None``: not checked)."""

    executable: ClassVar[str | None] = None
    """The CLI's program name: :meth:`find` takes ``agent.cli_path``, else this on ``PATH``
    (``None``: the agent finds its CLI itself, overriding :meth:`find`)."""

    def offered_skills(self, context: AgentContext, parser: EventParser) -> dict[str, Path]:
        """For a :attr:`skills_only` CLI: the plugins' skills, name → folder
        (:func:`~assay.agents.coding_models.skill_plugins`), which the transcript names as
        offered.

        Raises:
            UserError: as :func:`~assay.agents.coding_models.skill_plugins`.
        """
        skills = self.checked_skills(context.base_dir)
        parser.transcript.skills_offered = sorted(skills)
        return skills

    def checked_skills(self, base_dir: Path) -> dict[str, Path]:
        """The plugins' skills, name → folder, each one the CLI loads
        (:func:`~assay.agents.coding_models.skill_plugins` with :attr:`skill_rule`; one folder
        for a :attr:`skills_only` CLI).

        Raises:
            UserError: as :func:`~assay.agents.coding_models.skill_plugins`.
        """
        return skill_plugins(self.config, base_dir, rule=self.skill_rule,
                             one_folder=self.skills_only)  # fmt: skip

    def find(self, base_dir: Path) -> Path:
        """The CLI's executable (``base_dir``: the task file's folder): ``agent.cli_path``,
        else :attr:`executable` on ``PATH`` (:func:`assay.agents.cli.find_cli`).

        Raises:
            UsageError: it is not installed (with the install command).
            NotImplementedError: the class names no :attr:`executable` and does not override
                this method.
        """
        if self.executable is None:
            raise NotImplementedError(f"{type(self).__name__} names no executable and does not "
                                      "override find()")  # fmt: skip
        return find_cli(self.executable, configured=self.config.cli_path, base_dir=base_dir,
                        bundled=lambda: None)  # fmt: skip

    def program(self, base_dir: Path) -> Path:
        """:meth:`find`."""
        return self.find(base_dir)

    def parser(self) -> EventParser:
        """A new parser of the CLI's event stream, for one row."""
        raise NotImplementedError(f"{type(self).__name__} does not define parser()")

    def prepare(self, context: AgentContext, cli: Path, parser: EventParser) -> Any:
        """What the row's launch needs that can be refused before anything is made (a
        system prompt file, plugin folders); given to :meth:`launch` as ``row.prepared``.
        Run in a worker thread: it may read files or run a program.

        Raises:
            UserError: the row is refused with this message (nothing was started).
        """
        return None

    def launch(self, row: CliRow) -> CliLaunch:
        """How to start the CLI for ``row``: argv, environment, standard input, and the
        folders it reads and writes besides the CLI's installation and its home (which
        :meth:`run` adds, with the home's removal).

        Raises:
            UserError: the row is refused with this message (the session is closed).
        """
        raise NotImplementedError(f"{type(self).__name__} does not define launch()")

    async def run(self, context: AgentContext) -> AgentOutcome:
        """Run the CLI once for the row: find it and :meth:`prepare` (a refusal ends the row
        in error with its reason), make its home folder, open the row's bridge session on
        ``route: bridge``, :meth:`launch`, then run and read it
        (:func:`assay.agents.cli.run_cli`)."""
        span = context.root_span.child(f"invoke_agent {self.type_name}")
        parser = self.parser()
        try:
            dialog, workspace = context.dialog, context.sandbox
            if self.project_settings and dialog is not None and workspace is not None:
                dialog.settings, dialog.put_back = await asyncio.to_thread(
                    dialog_settings.pin, dialog.settings, workspace, self.project_settings
                )
            cli = self.find(context.base_dir)
            # files read, and for some CLIs a program run: off the event loop, which serves
            # the other rows and the bridge meanwhile (nothing is made yet to clean up)
            prepared = await asyncio.to_thread(self.prepare, context, cli, parser)
        except UserError as exc:
            return refused(span, parser.transcript, str(exc))
        name = self.executable or self.type_name
        if self.keeps_home:  # a later turn may remove what the agent left in the last home
            home, kept = await asyncio.to_thread(dialog_home, context, name,
                                                 carried=self.session_files)  # fmt: skip
        else:
            home, kept = fresh_home(name), False
        session: BridgeSession | None = None
        try:
            url = ""
            if self.config.uses_bridge:
                session, url = open_session(context, self.config)
            launch = self.launch(CliRow(context, cli, home, session, url, prepared, parser))
        except BaseException as exc:
            if session is not None and context.bridge is not None:
                context.bridge.close(session)
            if not kept:
                shutil.rmtree(home, ignore_errors=True)
            if isinstance(exc, UserError):
                return refused(span, parser.transcript, str(exc))
            raise
        launch = dataclasses.replace(
            launch,
            cleanup=[*launch.cleanup, *([] if kept else [home])],
            readable=[
                install_root(cli),
                *launch.readable,
                *(f for server in context.tool_servers.values() for f in server.readable),
            ],
            writable=[home, *launch.writable],
            sealed=not seal_lost([*self.config.env, *self.config.env_passthrough]),
        )
        return await run_cli(context, name=self.type_name, launch=launch, parser=parser,
                             session=session, span=span)  # fmt: skip

    def model_keys(self, base_dir: Path) -> list[ModelKey]:
        """The bridge's model on ``route: bridge``; none on ``route: direct``."""
        return [bridge_key(self.config, base_dir)] if self.config.uses_bridge else []

    def folders(self, base_dir: Path) -> list[Path]:
        """The plugin folders and the CLI's installation."""
        return [*plugin_dirs(self.config, base_dir), install_root(self.find(base_dir))]

    def preflight(self, setup: PreflightSetup) -> list[PreflightCheck]:
        """The CLI, its plugins, system prompt and own settings, its model (or own
        credentials), and the limits its route can enforce."""
        config, base_dir = self.config, setup.base_dir
        where = ("agent", "cli_path") if config.cli_path else ("agent", "type")
        checks = [
            PreflightCheck(where, lambda: self.find(base_dir)),
            PreflightCheck(("agent", "plugins"), lambda: self.checked_skills(base_dir)),
            PreflightCheck(("agent", "system_prompt_file"),
                           lambda: read_system_prompt(config, base_dir)),
            *self.settings_checks(base_dir),
        ]  # fmt: skip
        if config.uses_bridge:
            key = bridge_key(config, base_dir)
            checks.append(
                PreflightCheck(("agent", "model"), lambda: setup.providers.preflight(key))
            )
        else:
            checks.append(PreflightCheck(("agent", "route"), self._own_credentials))
        return checks + limit_checks(config, setup)

    def settings_checks(self, base_dir: Path) -> list[PreflightCheck]:
        """Checks of the CLI's own settings (files it reads); none by default."""
        return []

    def _own_credentials(self) -> None:
        """``route: direct`` needs the user's own key or login, else every row fails (Codex
        would retry until the timeout).

        Raises:
            UserError: neither is there.
        """
        own = self.own_credentials
        if own is None:
            return
        if any(os.environ.get(v) for v in own.variables) or (Path.home() / own.login).is_file():
            return
        raise UserError(f"route 'direct' runs the CLI on your own credentials, and there are "
                        f"none: no {' or '.join(own.variables)} and no ~/{own.login}",
                        hint=own.fix)  # fmt: skip


def limit_checks(config: CodingAgent, setup: PreflightSetup) -> list[PreflightCheck]:
    """The first ``run_limits`` value the agent's route cannot enforce, as a check that
    fails at its field (none when every limit holds)."""
    problem = _limit_problem(config, setup)
    if problem is None:
        return []
    field, message, hint = problem

    def refuse() -> None:
        raise UserError(message, hint=hint)

    return [PreflightCheck(("run_limits", field), refuse)]


def _limit_problem(config: CodingAgent, setup: PreflightSetup) -> tuple[str, str, str] | None:
    limits = setup.limits
    if not config.uses_bridge:
        budgets = [n for n in ("max_total_tokens", "max_usd", "max_tool_calls")
                   if getattr(limits, n) is not None]  # fmt: skip
        if not config.enforces_max_turns and limits.max_turns is not None:
            budgets.append("max_turns")
        if budgets:
            return (budgets[0], f"run_limits.{budgets[0]} is enforced by the model bridge, "
                    "and route 'direct' does not use it",
                    "use route: bridge (the default), or remove the limit")  # fmt: skip
        return None
    if limits.max_usd is None:
        return None
    if config.model is None:
        return ("max_usd", "run_limits.max_usd needs agent.model: the bridge prices each call "
                "by the task's model, and the CLI's own choice has no known price",
                "set agent.model (e.g. anthropic/claude-sonnet-4-5)")  # fmt: skip
    if config.price is None and setup.prices.lookup(config.model) is None:
        return ("max_usd", f"run_limits.max_usd needs a price for {config.model}, and the "
                "price table has none",
                "give agent.price {input_per_mtok, output_per_mtok} or a price file "
                "(--prices)")  # fmt: skip
    return None


__all__ = ["CliAgent", "OwnCredentials", "limit_checks"]
