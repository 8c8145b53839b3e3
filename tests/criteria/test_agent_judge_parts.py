"""The parts of ``agent_judge`` that need no CLI: the verdict tool's checks, reading the
verdict from a judge's transcript, the judge's copy of the sandbox, its config, the plan's
refusals and grading without ``assay run``'s agent services."""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import assay
from assay.agents.base import ToolServer
from assay.agents.claude_code import mcp_flags
from assay.agents.codex import write_config
from assay.criteria.agent_judge import (
    AgentJudgeCriterion,
    copy_workspace,
    judge_jail,
    read_verdict,
    verdict_server,
)
from assay.criteria.base import CriterionError, GradingContext
from assay.errors import TaskFileError
from assay.judges.verdict_tool import QUALIFIED, RECEIVED, VerdictError, answer, check_verdict
from assay.results.transcript import Transcript, TranscriptEvent
from assay.sandbox.bwrap import make_policy
from assay.sandbox.docker import Engine, make_docker_policy
from assay.sandbox.tempdir import Sandbox
from assay.spec.agent_judge import AgentJudge, JudgeAgent
from assay.spec.coding_agents import ClaudeCodeAgent
from tests.helpers import write


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("not an object", "submit_verdict input must be an object"),
        ({"rationale": "r"}, "score field missing in judge verdict"),
        ({"score": "high", "rationale": "r"}, "score field is not a number: 'high'"),
        ({"score": True, "rationale": "r"}, "score field is not a number: True"),
        ({"score": math.nan, "rationale": "r"}, "score field is not a finite number: nan"),
        ({"score": math.inf, "rationale": "r"}, "score field is not a finite number: inf"),
        ({"score": 1.5, "rationale": "r"}, "score field must be between 0 and 1, got 1.5"),
        ({"score": -0.1, "rationale": "r"}, "score field must be between 0 and 1, got -0.1"),
        ({"score": 0.5, "rationale": 3}, "rationale field must be a string, got int"),
        ({"score": 0.5, "rationale": " \n\t"}, "rationale field is empty after whitespace"),
        ({"score": 0.5, "rationale": "r", "findings": "one"}, "findings field must be a list"),
        ({"score": 0.5, "rationale": "r", "findings": [1]}, "findings field must be a list"),
    ],
)  # fmt: skip
def test_a_call_that_is_not_a_verdict_is_refused_with_why(arguments: Any, message: str) -> None:
    with pytest.raises(VerdictError, match=message.replace("(", r"\(")):
        check_verdict(arguments)
    assert answer(arguments if isinstance(arguments, dict) else {}).startswith("Invalid: ")


def test_a_verdict_is_accepted_at_the_ends_of_the_scale() -> None:
    for score in (0, 1, 0.25):
        verdict = check_verdict({"score": score, "rationale": "  why\n  so ", "findings": ["a"]})
        assert (verdict.score, verdict.rationale, verdict.findings) == (score, "why so", ("a",))
    assert check_verdict({"score": 1, "rationale": "r"}).findings == ()
    assert answer({"score": 1, "rationale": "r"}) == RECEIVED


def _call(call_id: str, arguments: Any, result: str | None, *, error: bool = False,
          denied: bool = False) -> list[TranscriptEvent]:  # fmt: skip
    events = [TranscriptEvent("tool_call", 1, name=QUALIFIED, call_id=call_id,
                              arguments=arguments)]  # fmt: skip
    if denied:
        events.append(TranscriptEvent("denial", 2, name=QUALIFIED, call_id=call_id, text="no"))
    if result is not None:
        events.append(TranscriptEvent("tool_result", 3, name=QUALIFIED, call_id=call_id,
                                      text=result, is_error=error))  # fmt: skip
    return events


def _transcript(*calls: list[TranscriptEvent]) -> Transcript:
    transcript = Transcript(agent="claude-code")
    transcript.add(TranscriptEvent("tool_call", 0, name="Read", call_id="r", arguments={}))
    for events in calls:
        for event in events:
            transcript.add(event)
    return transcript


def test_the_verdict_is_the_last_call_the_tool_accepted() -> None:
    good, better = {"score": 0.2, "rationale": "first"}, {"score": 0.9, "rationale": "second"}
    verdict, _ = read_verdict(_transcript(_call("a", good, RECEIVED), _call("b", better, RECEIVED)))
    assert verdict is not None and verdict.score == 0.9
    bad = {"score": 3, "rationale": "x"}
    verdict, _ = read_verdict(_transcript(_call("a", good, RECEIVED),
                                          _call("b", bad, "Invalid: score. Retry.")))  # fmt: skip
    assert verdict is not None and verdict.score == 0.2


@pytest.mark.parametrize(
    ("calls", "problem"),
    [
        ([], "Judge did not call submit_verdict"),
        ([_call("a", {"score": 3, "rationale": "x"}, "Invalid: score field must be between 0 "
                                                       "and 1, got 3. Retry.")],
         "not accepted: Invalid: score field must be between 0 and 1, got 3. Retry."),
        ([_call("a", {"score": 0.5, "rationale": "x"}, None)],
         "not accepted: no answer"),
        ([_call("a", {"score": 0.5, "rationale": "x"}, "denied", denied=True)],
         "not accepted: denied"),
        ([_call("a", {"score": 0.5, "rationale": "x"}, "server crashed", error=True)],
         "not accepted: server crashed"),
        ([_call("a", {"score": 7, "rationale": "x"}, RECEIVED)],  # a forged "received"
         "the judge's verdict is not valid: score field must be between 0 and 1, got 7"),
    ],
)  # fmt: skip
def test_no_verdict_says_why(calls: list[list[TranscriptEvent]], problem: str) -> None:
    verdict, why = read_verdict(_transcript(*calls))
    assert verdict is None
    assert problem in why
    assert read_verdict(None) == (None, "Judge did not call submit_verdict")


def test_the_judges_copy_leaves_out_the_ignored_names_at_any_depth(tmp_path: Path) -> None:
    source = tmp_path / "row"
    for name in ("main.py", ".git/HEAD", "pkg/node_modules/x.js", "pkg/__pycache__/a.pyc",
                 "pkg/ok.py", ".claude/settings.json", "_reference/sol.py", "build/out.o",
                 "dist/keep.txt"):  # fmt: skip
        write(source / name, name)
    os.mkfifo(source / "pipe")  # would block a plain copy
    (source / "link").symlink_to("main.py")
    judge = JudgeAgent(ignore_patterns=["build", "!.claude"])
    target = tmp_path / "copy"
    copy_workspace(source, target, ignored=judge.ignored())
    found = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if not p.is_dir())
    assert found == [".claude/settings.json", "dist/keep.txt", "link", "main.py", "pkg/ok.py"]
    assert (target / "link").is_symlink()
    more = JudgeAgent.model_validate(
        {"additional_ignore_patterns": ["x"], "ignore_patterns": ["y"]}
    )
    assert {"x", "y", ".git"} <= more.ignored()


def test_the_judges_config_as_coder_eval_writes_it() -> None:
    config = JudgeAgent.model_validate({"model": "claude-sonnet-4-6"}).config()
    assert isinstance(config, ClaudeCodeAgent)
    assert config.model == "anthropic/claude-sonnet-4-6"
    assert config.route == "bridge"
    assert config.setting_sources == []
    assert config.permission_mode == "bypassPermissions"
    assert config.allowed_tools == ["Bash", "Read", "Glob", "Grep"]
    codex = JudgeAgent.model_validate({"type": "codex", "model": "gpt-5.5"}).config()
    assert (codex.type, codex.model) == ("codex", "openai/gpt-5.5")
    with pytest.raises(ValidationError, match="permission_mode: Claude Code settings"):
        JudgeAgent.model_validate({"type": "codex", "permission_mode": "plan"})
    # a resolved criterion is dumped whole and read again by the reports: the defaults of
    # the Claude Code fields say nothing and are not refused
    dumped = JudgeAgent.model_validate({"type": "codex", "model": "gpt-5.5"}).model_dump()
    assert JudgeAgent.model_validate(dumped).type == "codex"
    with pytest.raises(ValidationError, match="must be an assay model named provider/name"):
        JudgeAgent.model_validate({"model": "sonnet"})
    base = {"type": "agent_judge", "description": "d", "prompt": "p"}
    with pytest.raises(ValidationError, match="greater than or equal to 10"):
        AgentJudge.model_validate({**base, "turn_timeout": 5})
    with pytest.raises(ValidationError, match="prompt \\(the rubric\\) is empty"):
        AgentJudge.model_validate({**base, "prompt": "  "})
    with pytest.raises(ValidationError, match="Field required"):
        AgentJudge.model_validate({"type": "agent_judge", "description": "d"})
    assert AgentJudge.model_validate({**base, "enabled": False}).graders() == []


def test_the_verdict_server_is_given_to_each_cli(tmp_path: Path) -> None:
    server = ToolServer("/usr/bin/python3", ("-m", "tool"), {"PYTHONPATH": "/src"})
    flags = mcp_flags({"assay_judge": server})
    assert flags[0] == "--mcp-config" and flags[2] == "--strict-mcp-config"
    assert json.loads(flags[1]) == {"mcpServers": {"assay_judge": {
        "type": "stdio", "command": "/usr/bin/python3", "args": ["-m", "tool"],
        "env": {"PYTHONPATH": "/src"}}}}  # fmt: skip
    assert mcp_flags({}) == []
    write_config(tmp_path, settings={"model": "gpt-5.5"}, instructions=None,
                 servers={"assay_judge": server})  # fmt: skip
    written = tomllib.loads((tmp_path / "config.toml").read_text())
    assert written["mcp_servers"]["assay_judge"] == {
        "command": "/usr/bin/python3",
        "args": ["-m", "tool"],
        "env": {"PYTHONPATH": "/src"},
        "required": True,  # Codex waits for it: a server still starting is dropped unsaid
        "startup_timeout_sec": 60,
    }


def test_grading_outside_run_and_evaluate_is_an_error_not_a_zero(tmp_path: Path) -> None:
    judge = AgentJudgeCriterion.model_validate({"type": "agent_judge", "description": "d",
                                                "prompt": "p"})  # fmt: skip
    context = GradingContext(sandbox=Sandbox(tmp_path), response="r")
    with pytest.raises(CriterionError, match="only assay run and assay evaluate start"):
        asyncio.run(judge.check(context))
    skipped = AgentJudgeCriterion.model_validate({"type": "agent_judge", "description": "d",
                                                  "prompt": "p", "enabled": False})  # fmt: skip
    result = asyncio.run(skipped.check(context))
    assert (result.evaluation_status, result.weight, result.gating) == ("skipped", 0.0, False)


@pytest.mark.parametrize(
    ("agent", "line", "message"),
    [
        ("{model: mock/missing.yaml}", 9, "mock script not found"),
        ("{model: mock/echo, cli_path: nope/claude}", 9,
         "success_criteria[0].agent.cli_path: nope/claude is not an executable file"),
        ("{model: mock/echo, type: codex, allowed_tools: [Read]}", 9,
         "allowed_tools: Claude Code settings; a codex judge"),
        ("{model: mock/echo, max_turns: 3}", 9, "max_turns"),
    ],
)  # fmt: skip
def test_the_plan_refuses_a_judge_that_cannot_run(
    tmp_path: Path, agent: str, line: int, message: str
) -> None:
    task = write(tmp_path / "t.yaml", "task_id: j\ndescription: d\ninitial_prompt: go\n"
                 "agent: {type: command, command: 'true'}\nsuccess_criteria:\n"
                 "  - type: agent_judge\n    description: judge\n    prompt: is it good?\n"
                 f"    agent: {agent}\n")  # fmt: skip
    with pytest.raises(TaskFileError) as caught:
        assay.plan([str(task)])
    assert message in str(caught.value)
    assert caught.value.line == line


def test_the_judge_is_contained_as_the_row_was(tmp_path: Path) -> None:
    assert judge_jail(None, tmp_path) is None  # a tempdir row: a plain process
    policy = make_policy(path_variable=os.environ.get("PATH", ""))
    (tmp_path / "row").mkdir()
    (tmp_path / "copy").mkdir()
    row = policy.jail(tmp_path / "row", limits={"RLIMIT_NOFILE": 256}, network=True,
                      readable=[tmp_path / "extra"], task_dir=tmp_path)  # fmt: skip
    try:
        judge = judge_jail(row, tmp_path / "copy")
        assert judge is not None
        try:
            assert judge.policy is row.policy
            assert (judge.root, judge.limits, judge.network, judge.readable) == (
                tmp_path / "copy",
                {"RLIMIT_NOFILE": 256},
                True,
                (tmp_path / "extra",),
            )
            assert judge.task_dir is None  # the task's folder stays hidden from the judge
        finally:
            judge.close()
    finally:
        row.close()


def test_a_docker_rows_judge_gets_a_container_of_the_rows_image(tmp_path: Path) -> None:
    engine = Engine(Path("/usr/bin/docker"), "docker")  # no container starts here
    policy = make_docker_policy(engine=engine)
    for folder in ("row", "copy", "extra", "task"):
        (tmp_path / folder).mkdir()
    row = policy.jail(tmp_path / "row", image="team/image:1", limits={"RLIMIT_NOFILE": 256},
                      memory_mb=512, cpus=1.5, engine_network="bridge",
                      readable=[tmp_path / "extra"], task_dir=tmp_path / "task")  # fmt: skip
    try:
        judge: Any = judge_jail(row, tmp_path / "copy")
        try:
            assert judge.policy is row.policy and judge.name != row.name
            assert (judge.root, judge.image, judge.limits, judge.memory_mb, judge.cpus,
                    judge.network) == (tmp_path / "copy", "team/image:1",
                                       {"RLIMIT_NOFILE": 256}, 512, 1.5, "bridge")  # fmt: skip
            assert [m.source for m in judge.shown] == [tmp_path / "extra"]
            assert judge.task == () and judge.mounts == ()  # the task's folder stays hidden
        finally:
            judge.close()
    finally:
        row.close()
    server = verdict_server(row)
    assert server.command == "python3"  # the image's: the script needs no package of assay
    script = Path(server.args[-1])
    assert server.args[:2] == ("-I", "-S") and server.readable == (script,)
    assert verdict_server(None).command == sys.executable


def test_the_judges_model_key_is_a_secret_of_the_task(tmp_path: Path) -> None:
    task = write(tmp_path / "t.yaml", "task_id: j\ndescription: d\ninitial_prompt: go\n"
                 "agent: {type: command, command: 'true'}\nsuccess_criteria:\n"
                 "  - type: agent_judge\n    description: judge\n    prompt: is it good?\n"
                 "    agent: {model: mock/echo, api_key_env: JUDGE_CREDENTIAL}\n"
                 "  - type: agent_judge\n    description: disabled\n    prompt: p\n"
                 "    enabled: false\n"
                 "    agent: {model: mock/echo, api_key_env: UNUSED_CREDENTIAL}\n")  # fmt: skip
    definition = assay.plan([str(task)]).tasks[0].loaded.definition
    assert "JUDGE_CREDENTIAL" in definition.credential_variables
    assert "UNUSED_CREDENTIAL" not in definition.credential_variables


async def _call_served_tool(arguments: dict[str, Any]) -> str:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    served = verdict_server(None)  # as the judge's CLI starts it: no assay on its path
    server = StdioServerParameters(command=served.command, args=list(served.args), env={})
    async with stdio_client(server) as (read, send), ClientSession(read, send) as session:
        await session.initialize()
        result = await session.call_tool("submit_verdict", arguments)
        return "".join(getattr(part, "text", "") for part in result.content)


@pytest.mark.parametrize(
    ("arguments", "reply"),
    [({"score": "abc", "rationale": "r"}, "Invalid: score field is not a number: 'abc'. Retry."),
     ({"score": 2, "rationale": "r"},
      "Invalid: score field must be between 0 and 1, got 2. Retry."),
     ({"score": 0.5, "rationale": "fine"}, RECEIVED)],
)  # fmt: skip
def test_the_served_tool_answers_a_bad_score_with_its_own_reply(
    arguments: dict[str, Any], reply: str
) -> None:
    """Found in review: a score that is not a number got the MCP SDK's validation error
    (with a pydantic link) instead of the tool's documented ``Invalid: <why>. Retry.``."""
    assert asyncio.run(_call_served_tool(arguments)) == reply


def test_the_verdict_server_speaks_json_rpc_over_lines() -> None:
    from assay.judges.verdict_tool import PROTOCOLS, serve

    lines = [
        '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": '
        '{"protocolVersion": "2025-03-26", "capabilities": {}}}',
        '{"jsonrpc": "2.0", "method": "notifications/initialized"}',
        "",
        '{"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": '
        '{"protocolVersion": "1999-01-01"}}',
        '{"jsonrpc": "2.0", "id": "a", "method": "tools/list"}',
        '{"jsonrpc": "2.0", "id": 3, "method": "resources/list"}',
        '{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "other"}}',
        "not json",
        '[{"jsonrpc": "2.0", "id": 5, "method": "ping"}, {"jsonrpc": "2.0", "method": "x"}]',
        '{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": '
        '"submit_verdict", "arguments": {"score": 0.5, "rationale": "ok"}}}',
    ]
    written: list[str] = []
    serve(lines, written.append)
    answers = [json.loads(line) for line in written]
    assert all(line.endswith("\n") and line.count("\n") == 1 for line in written)
    assert answers[0]["result"]["protocolVersion"] == "2025-03-26"
    assert answers[0]["result"]["capabilities"] == {"tools": {"listChanged": False}}
    assert answers[1]["result"]["protocolVersion"] == PROTOCOLS[-1]  # one it does not know
    tool = answers[2]["result"]["tools"][0]
    assert (answers[2]["id"], tool["name"], tool["inputSchema"]["required"]) == (
        "a", "submit_verdict", ["score", "rationale"])  # fmt: skip
    assert answers[3]["error"]["code"] == -32601 and answers[3]["id"] == 3
    assert answers[4]["error"]["code"] == -32602
    assert answers[5] == {"jsonrpc": "2.0", "id": None,
                          "error": {"code": -32700, "message": "Parse error"}}  # fmt: skip
    assert answers[6] == [{"jsonrpc": "2.0", "id": 5, "result": {}}]  # a batch's notification
    assert answers[7]["result"] == {"content": [{"type": "text", "text": RECEIVED}],
                                    "isError": False}  # fmt: skip
    assert len(answers) == 8  # notifications get no answer


def test_the_verdict_server_survives_what_a_client_may_send() -> None:
    """Found in review: a huge integer score and deeply nested JSON ended the server (the
    judge could never retry), and a carriage return inside a message split it."""
    from assay.judges.verdict_tool import serve

    huge = "1" + "0" * 400
    lines = [
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": '
        f'"submit_verdict", "arguments": {{"score": {huge}, "rationale": "r"}}}}}}',
        "[" * 100_000 + "]" * 100_000,
        '{"jsonrpc": "2.0", "id": 9, "result": {}}',  # a response: never answered
        "[]",
        '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": "x"}',
    ]
    written: list[str] = []
    serve(lines, written.append)
    answers = [json.loads(line) for line in written]
    text = answers[0]["result"]["content"][0]["text"]
    assert text.startswith("Invalid: score field is not a finite number") and len(text) < 120
    assert answers[1]["error"]["code"] == -32700
    assert answers[2]["error"]["code"] == -32600  # an empty batch
    assert (answers[3]["id"], answers[3]["error"]["code"]) == (2, -32602)
    assert len(answers) == 4
    served = verdict_server(None)
    done = subprocess.run([served.command, *served.args], text=True, capture_output=True,
                          input='{"jsonrpc": "2.0",\r"id": 3, "method": "ping"}\n',
                          timeout=30, check=False)  # fmt: skip
    assert [json.loads(line) for line in done.stdout.splitlines()] == [
        {"jsonrpc": "2.0", "id": 3, "result": {}}]  # fmt: skip
