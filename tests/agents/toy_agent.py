"""A test-only coding-agent CLI, ``toy-cli``, added to assay as a user would add one: this
module (its config model and its runner) and its stream parser (``toy_stream.py``); it is
registered by one line (``agents=[ToyCliRunner]``). Nothing in ``src/`` names it."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from assay.agents import AgentContext, AgentOutcome
from assay.agents.cli import CliLaunch, cli_environment, fresh_home, open_session, refused, run_cli
from assay.agents.coding import CliAgent
from assay.errors import UserError
from assay.sandbox.mounts import install_root
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

    async def run(self, context: AgentContext) -> AgentOutcome:
        """One run of the CLI for the row."""
        span = context.root_span.child("invoke_agent toy-cli")
        parser = ToyStreamParser()
        try:
            cli = self.find(context.base_dir)
        except UserError as exc:
            return refused(span, parser.transcript, str(exc))
        home = fresh_home("toy")
        session, bridge_url = open_session(context, self.config)
        env = cli_environment(context, self.config, home) | {
            "TOY_BASE_URL": bridge_url, "TOY_API_KEY": session.token}  # fmt: skip
        launch = CliLaunch([str(cli)], env, stdin=context.prompt or "", cleanup=[home],
                           readable=[install_root(cli)], writable=[home])  # fmt: skip
        return await run_cli(context, name="toy-cli", launch=launch, parser=parser,
                             session=session, span=span)  # fmt: skip
