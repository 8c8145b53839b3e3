"""A test-only coding-agent CLI, ``toy-cli``, added to assay as a user would add one: this
module (its config model and its runner) and its stream parser (``toy_stream.py``); it is
registered by one line (``agents=[ToyCliRunner]``). Nothing in ``src/`` names it."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from assay.agents.cli import CliLaunch, EventParser, cli_environment
from assay.agents.coding import CliAgent, CliRow
from assay.errors import UserError
from assay.spec.coding_agents import CodingAgent
from tests.agents.toy_stream import ToyStreamParser

TOY_CLI = Path(__file__).resolve().parent / "toy_cli" / "toy-cli"


class ToyCliAgent(CodingAgent):
    """``agent: {type: toy-cli}``: the toy CLI; it speaks OpenAI Chat Completions."""

    type: Literal["toy-cli"]
    native_provider: ClassVar[str] = "openai"


class ToyCliRunner(CliAgent[ToyCliAgent]):
    """Runs toy-cli in the row's sandbox, its model calls through the bridge."""

    type_name = "toy-cli"
    config_model = ToyCliAgent

    def find(self, base_dir: Path) -> Path:
        """``cli_path`` (relative to the task file), else the copy beside this module."""
        configured = self.config.cli_path
        path = base_dir / configured if configured else TOY_CLI
        if not path.is_file():
            raise UserError(f"toy-cli is not at {path}", hint="set agent.cli_path")
        return path

    def parser(self) -> EventParser:
        """The toy CLI's stream parser."""
        return ToyStreamParser()

    def launch(self, row: CliRow) -> CliLaunch:
        """The bridge's URL and the row's credential in the environment, the prompt on
        standard input."""
        env = cli_environment(row.context, self.config, row.home) | {
            "TOY_BASE_URL": row.bridge_url, "TOY_API_KEY": row.token}  # fmt: skip
        return CliLaunch([str(row.cli)], env, stdin=row.context.prompt or "")
