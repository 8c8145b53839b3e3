"""``agent: {type: codex}``: the OpenAI Codex CLI (``codex exec --json``) in the row's sandbox.

Each row gets a fresh ``CODEX_HOME`` whose ``config.toml`` points Codex at the bridge
through a provider of its own (Codex ignores ``OPENAI_BASE_URL``): the Responses wire, the
row's credential in ``ASSAY_BRIDGE_KEY``, and no retries of its own (the bridge retries);
plugins and analytics are off (else it reaches outside hosts). It runs with
``--dangerously-bypass-approvals-and-sandbox`` inside assay's sandbox, reads the prompt
from standard input (``-``), and is killed with its process group at ``task_timeout``
(without a listening server it retries forever). ``route: direct`` is refused when the task
is loaded (:data:`assay.spec.coding_agents.CODEX_DIRECT`). In dialog mode the home is kept
for the whole dialog and each turn after the first runs ``codex exec resume SESSION_ID``
(the id from its ``thread.started`` event). Settings from
``reference/coding_agents_offline.md``.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from assay.agents.base import AgentContext, ToolServer
from assay.agents.cli import CliLaunch, EventParser, cli_environment
from assay.agents.codex_stream import CodexStreamParser
from assay.agents.coding import CliAgent, CliRow
from assay.agents.coding_models import (
    plugin_dirs,
    plugin_skills,
    read_system_prompt,
    skill_folders,
)
from assay.errors import UserError
from assay.spec.coding_agents import CodexAgent

DEFAULT_CLI_MODEL = "gpt-5.5"
"""A model Codex 0.171 knows (an unknown name loses its ``apply_patch`` tool)."""
KEY_VARIABLE = "ASSAY_BRIDGE_KEY"


class CodexRunner(CliAgent[CodexAgent]):
    """Runs :class:`assay.spec.coding_agents.CodexAgent`."""

    type_name = "codex"
    config_model = CodexAgent
    executable = "codex"

    keeps_home = True  # a later turn of a dialog resumes the session kept in CODEX_HOME
    session_files = (".codex/sessions",)

    def parser(self) -> EventParser:
        """:class:`~assay.agents.codex_stream.CodexStreamParser`."""
        return CodexStreamParser()

    def prepare(
        self, context: AgentContext, cli: Path, parser: EventParser
    ) -> tuple[list[Path], str | None, str | None]:
        """The plugin folders, the system prompt's text (refused: one it cannot read) and,
        for a run given tool servers, the model catalog that shows them
        (:func:`direct_tools_catalog`)."""
        catalog = None
        if context.tool_servers:
            with tempfile.TemporaryDirectory(prefix="assay-codex-catalog-") as scratch:
                env = cli_environment(context, self.config, Path(scratch)) | {
                    "CODEX_HOME": scratch}  # fmt: skip
                catalog = direct_tools_catalog(cli, env)
        return (plugin_dirs(self.config, context.base_dir),
                read_system_prompt(self.config, context.base_dir), catalog)  # fmt: skip

    def launch(self, row: CliRow) -> CliLaunch:
        """``CODEX_HOME`` in the home folder with its ``config.toml`` (the provider ``assay``
        at the bridge; the config refuses ``route: direct``) and the plugins' skills, the
        prompt on standard input."""
        plugins, instructions, catalog = row.prepared
        codex_home = row.home / ".codex"
        env = cli_environment(row.context, self.config, row.home) | {
            "CODEX_HOME": str(codex_home), KEY_VARIABLE: row.token}  # fmt: skip
        settings: dict[str, Any] = {"model": cli_model(self.config), "model_provider": "assay",
                                    "provider_url": row.bridge_url + "/v1"}  # fmt: skip
        if catalog is not None:
            codex_home.mkdir(parents=True, exist_ok=True)
            (codex_home / "assay-models.json").write_text(catalog, encoding="utf-8")
            settings["model_catalog_json"] = str(codex_home / "assay-models.json")
        write_config(codex_home, settings=settings, instructions=instructions,
                     servers=row.context.tool_servers)  # fmt: skip
        row.parser.transcript.skills_offered = _stage_skills(plugins, codex_home)
        return CliLaunch(codex_argv(row.cli, row.context), env, stdin=row.context.prompt or "",
                         readable=plugins)  # fmt: skip


def codex_argv(cli: Path, context: AgentContext) -> list[str]:
    """The CLI's command line (the prompt goes on standard input, ``-``). A single prompt
    runs ``--ephemeral`` (no session kept); in dialog mode the session is kept in the
    dialog's home, and each later turn runs ``codex exec resume SESSION_ID``."""
    flags = ["--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]
    dialog = context.dialog
    if dialog is None:
        return [str(cli), "exec", *flags, "--ephemeral", "-"]
    if dialog.session_id:
        return [str(cli), "exec", "resume", *flags, dialog.session_id, "-"]
    return [str(cli), "exec", *flags, "-"]


def cli_model(config: CodexAgent) -> str:
    """The name given to Codex: ``cli_model``, else an ``openai/`` model's own name, else a
    model Codex knows (the bridge answers with the task's model whatever the name)."""
    return config.cli_model_name() or DEFAULT_CLI_MODEL


def write_config(
    codex_home: Path,
    *,
    settings: dict[str, Any],
    instructions: str | None,
    servers: Mapping[str, ToolServer] | None = None,
) -> None:
    """Write ``config.toml`` (strings are TOML basic strings, written with JSON's escapes,
    which TOML shares), with a ``[mcp_servers.<name>]`` table for each of ``servers``."""
    codex_home.mkdir(parents=True, exist_ok=True)
    lines = [f"model = {json.dumps(settings['model'])}"]
    if "model_catalog_json" in settings:
        lines.append(f"model_catalog_json = {json.dumps(settings['model_catalog_json'])}")
    if instructions is not None:
        lines.append(f"developer_instructions = {json.dumps(instructions)}")
    if "model_provider" in settings:
        lines.append('model_provider = "assay"')
    lines += ["", "[features]", "plugins = false", "", "[analytics]", "enabled = false"]
    if "model_provider" in settings:
        lines += ["", "[model_providers.assay]", 'name = "assay"',
                  f"base_url = {json.dumps(settings['provider_url'])}",
                  'wire_api = "responses"', f'env_key = "{KEY_VARIABLE}"',
                  "request_max_retries = 0", "stream_max_retries = 0"]  # fmt: skip
    for name, server in (servers or {}).items():
        # required: Codex waits for the server (an optional one still starting after a
        # second is left out of the model's tools without a word: openai/codex#38689)
        lines += ["", f"[mcp_servers.{name}]", f"command = {json.dumps(server.command)}",
                  f"args = {json.dumps(list(server.args))}", "required = true",
                  "startup_timeout_sec = 60"]  # fmt: skip
        if server.env:
            pairs = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in server.env.items())
            lines.append(f"env = {{ {pairs} }}")
    (codex_home / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def direct_tools_catalog(cli: Path, env: Mapping[str, str]) -> str:
    """Codex's own model catalog (``codex debug models``, run with ``env``) with
    ``supports_search_tool`` off for every model, as JSON text: Codex then gives the model
    its MCP tools (assay's verdict tool) in every request, where it would otherwise hide them
    behind its ``tool_search`` tool, which only OpenAI's models answer.

    Raises:
        UserError: the catalog cannot be read from this Codex.
    """
    try:
        done = subprocess.run([str(cli), "debug", "models"], env=dict(env), text=True,
                              capture_output=True, timeout=60, check=True)  # fmt: skip
        catalog = json.loads(done.stdout)
        for model in catalog["models"]:
            model["supports_search_tool"] = False
    except (OSError, subprocess.SubprocessError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"cannot read the model catalog of {cli} (`codex debug models`): "
                        f"{exc}", hint="use a Codex that has `codex debug models` "
                        "(0.171 or later)") from None  # fmt: skip
    return json.dumps(catalog)


def _stage_skills(plugins: list[Path], codex_home: Path) -> list[str]:
    """Link each skill the plugins offer into ``$CODEX_HOME/skills/`` (where Codex finds a
    user's skills; a folder each: :func:`skill_folders`) and return the names offered."""
    skills = plugin_skills(plugins)
    target = codex_home / "skills"
    for folder_name, folder in skill_folders(skills).values():
        target.mkdir(parents=True, exist_ok=True)
        link = target / folder_name
        if not link.exists():
            link.symlink_to(folder, target_is_directory=True)
    return sorted(skills)
