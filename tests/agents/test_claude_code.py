"""The real Claude Code CLI, driven through the model bridge by mock scripts, row by row:
files written, commands run, tools denied, retries, limits, crashes, and what is recorded."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from assay.results.transcript_otlp import from_trace
from tests.agents.coding import (
    claude_available,
    codex_path,
    row_file,
    run_assay,
    spans,
    task_json,
)
from tests.anthropic_upstream import anthropic_upstream, turn_of
from tests.helpers import write

pytestmark = pytest.mark.coding_agent

REPO = Path(__file__).resolve().parents[2]
SECRET = "sk-ant-api03-users-own-key-never-shown-to-the-agent"

SCRIPT = """\
replies:
  - match: "job: write"
    steps:
      - tool: Write
        input: {file_path: "${sandbox}/out.txt", content: "${row.word}"}
      - reply: "wrote ${row.word}"
  - match: "job: shell"
    steps:
      - tool: Bash
        input: {command: "echo from-bash > shell.txt; env; exit 3", description: run}
      - reply: "the command failed"
  - match: "job: forbidden"
    steps:
      - tool: Bash
        input: {command: "touch should-not-exist.txt", description: try}
      - reply: "I was not allowed"
  - match: "job: storm"
    steps:
      - tool: Write
        input: {file_path: "${sandbox}/out.txt", content: "${row.word}"}
        fail: {status: 429, times: 3, retry_after: 0.01}
      - reply: "made it"
  - match: "job: broken"
    error: "upstream exploded"
    status: 500
  - match: "job: slow"
    reply: "too late"
    delay: 60
  - match: "job: loop"
    steps:
      - {tool: Bash, input: {command: "echo 1", description: a}}
      - {tool: Bash, input: {command: "echo 2", description: b}}
      - {tool: Bash, input: {command: "echo 3", description: c}}
      - reply: never
"""

TASK = """\
task_id: {task_id}
description: claude-code through the bridge
agent:
  type: claude-code
  model: mock/script.yaml
  permission_mode: {mode}
  allowed_tools: {tools}
run_limits: {limits}
dataset:
  rows: {rows}
initial_prompt: "job: ${{row.job}}"
success_criteria:
  - type: file_check
    path: out.txt
    includes: ["${{row.word}}"]
    description: out.txt holds the word
"""


def task(folder: Path, task_id: str, rows: list[dict[str, str]], *, mode: str = "acceptEdits",
         tools: str = "[Write, Bash]", limits: str = "{task_timeout: 120}") -> None:  # fmt: skip
    text = TASK.format(task_id=task_id, rows=json.dumps(rows), mode=mode, tools=tools,
                       limits=limits)  # fmt: skip
    write(folder / f"{task_id}.yaml", text)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run of several task files, each row a real Claude Code process."""
    claude_available()
    cwd = tmp_path_factory.mktemp("claude")
    tasks = cwd / "tasks"
    write(tasks / "script.yaml", SCRIPT)
    task(tasks, "rows", [
        {"id": "write", "job": "write", "word": "alpha"},
        {"id": "shell", "job": "shell", "word": "beta"},
        {"id": "storm", "job": "storm", "word": "gamma"},
        {"id": "broken", "job": "broken", "word": "delta"},
    ])  # fmt: skip
    task(tasks, "denied", [{"id": "forbidden", "job": "forbidden", "word": "x"}],
         mode="default", tools="[Write]")  # fmt: skip
    task(tasks, "slow", [{"id": "slow", "job": "slow", "word": "x"}],
         limits="{task_timeout: 4}")  # fmt: skip
    task(tasks, "turns", [{"id": "loop", "job": "loop", "word": "x"}], limits="{max_turns: 2}")
    task(tasks, "budget", [{"id": "loop", "job": "loop", "word": "x"}],
         limits="{max_total_tokens: 6000}")  # fmt: skip
    (tasks / "script.yaml").rename(cwd / "script.yaml")
    for path in tasks.glob("*.yaml"):
        path.write_text(path.read_text().replace("mock/script.yaml", "mock/../script.yaml"))
    done = run_assay("run", "tasks", "-j", "4", cwd=cwd,
                     env={"ANTHROPIC_API_KEY": SECRET, "OPENAI_API_KEY": SECRET})  # fmt: skip
    assert done.returncode == 1, done.stderr  # rows fail and error on purpose
    assert "Traceback" not in done.stderr, done.stderr
    assert SECRET not in done.stdout + done.stderr
    return cwd


def transcript(cwd: Path, suite: str, row: str) -> dict[str, Any]:
    summary: dict[str, Any] = task_json(cwd, suite, row)["transcript"]
    return summary


def test_a_file_written_by_the_cli_passes_its_criterion(ran: Path) -> None:
    result = task_json(ran, "rows", "write")
    assert result["final_status"] == "SUCCESS", result["error_message"]
    assert result["agent_type"] == "claude-code"
    assert result["model_used"] == "mock/../script.yaml"
    summary = result["transcript"]
    assert summary["tool_calls_by_name"] == {"Write": 1}
    assert summary["files_changed"] == ["out.txt"]
    assert summary["model_calls"] == 2 and summary["stop_reason"] == "end_turn"
    assert summary["usage_source"] == "bridge"
    assert summary["usage_difference"] is None  # the CLI's totals agree with the bridge's
    assert summary["usage"]["input"] == summary["cli_usage"]["input"] > 0
    usage = result["total_token_usage"]
    assert usage["input_tokens"] == summary["usage"]["input"]
    assert result["cost_usd"] == 0.0  # mock models are free
    assert summary["cli"]["version"].startswith("2.")
    assert row_file(ran, "rows", "write", "response.txt") == "wrote alpha"


def test_a_failed_shell_command_is_recorded_with_its_exit_code(ran: Path) -> None:
    result = task_json(ran, "rows", "shell")
    summary = result["transcript"]
    assert summary["commands"] == 1 and summary["commands_failed"] == 1
    assert summary["tool_errors"] == 1
    log = row_file(ran, "rows", "shell", "task.log")
    assert "$ echo from-bash > shell.txt; env; exit 3 → exit 3" in log
    assert result["final_status"] == "FAILURE"  # out.txt was never written
    trace = json.loads(row_file(ran, "rows", "shell", "trace.json"))
    tool = next(s for s in spans(ran, "rows", "shell") if s["name"] == "execute_tool Bash")
    attributes = {a["key"]: a["value"] for a in tool["attributes"]}
    assert attributes["assay.exit_code"] == {"intValue": "3"}
    assert tool["status"]["code"] == 2
    back = from_trace(trace)
    assert back is not None and [u.exit_code for u in back.tool_uses()] == [3]


def test_the_agent_sees_its_row_credential_never_the_users_key(ran: Path) -> None:
    output = "\n".join(
        span_attribute(s, "gen_ai.tool.call.result") or "" for s in spans(ran, "rows", "shell")
    )
    # the row's credential, redacted from the trace like every secret assay knows
    assert "ANTHROPIC_API_KEY=[redacted:ASSAY_BRIDGE_KEY]" in output
    assert "assay-row-" not in output and "ANTHROPIC_BASE_URL=http://127.0.0.1:" in output
    assert SECRET not in output and "OPENAI_API_KEY" not in output
    # a home of its own, in the command's scratch folder (removed with it)
    assert re.search(r"HOME=/tmp/assay-run-[^/\s]+/assay-claude-home-", output), output
    for path in (ran / "runs").rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert SECRET not in text and "assay-row-" not in text, path


def span_attribute(span: dict[str, Any], key: str) -> Any:
    for item in span["attributes"]:
        if item["key"] == key:
            return next(iter(item["value"].values()))
    return None


def test_a_tool_outside_the_allowed_list_is_denied(ran: Path) -> None:
    result = task_json(ran, "denied", "forbidden")
    summary = result["transcript"]
    assert [d["tool"] for d in summary["denials"]] == ["Bash"]
    assert "needs approval" in summary["denials"][0]["reason"]
    assert summary["commands"] == 0  # a denied command ran nothing
    assert summary["tool_calls_requested"] == {"Bash": 1}
    assert not list((ran / "runs").rglob("should-not-exist.txt"))
    assert result["final_status"] == "FAILURE"


def test_a_429_storm_is_absorbed_by_the_bridge(ran: Path) -> None:
    result = task_json(ran, "rows", "storm")
    assert result["final_status"] == "SUCCESS"
    chat = [s for s in spans(ran, "rows", "storm") if s["name"].startswith("chat ")]
    assert len(chat) == 2
    # every retried attempt of the bridge's calls is in task.json, as for an llm agent
    assert result["agent"]["retries"] == 3
    assert [a["status"] for a in result["agent"]["attempts"]] == [429, 429, 429]


def test_an_api_error_ends_the_row_error_with_the_bridges_cause(ran: Path) -> None:
    result = task_json(ran, "rows", "broken")
    assert result["final_status"] == "ERROR"
    message = result["error_message"]
    assert message.startswith("the claude-code CLI ended with an API error:")
    assert "upstream exploded" in message and "gave up after 5 attempts" in message
    assert result["transcript"]["stop_reason"] == "api_error"
    # the CLI asks again several times whatever its retry setting: the model is called for
    # the first call only (five attempts), not five times for each of the CLI's requests
    assert result["agent"]["retries"] == 4 and len(result["agent"]["attempts"]) == 4
    assert "the model was not called again" in message


def test_a_hanging_row_is_killed_at_its_timeout(ran: Path) -> None:
    result = task_json(ran, "slow", "slow")
    assert result["final_status"] == "TIMEOUT"
    assert result["error_message"] == "the claude-code CLI was killed after 4 s (task_timeout)"
    assert result["transcript"]["stop_reason"] == "timeout"


def test_max_turns_stops_the_cli(ran: Path) -> None:
    result = task_json(ran, "turns", "loop")
    assert result["final_status"] == "MAX_TURNS_EXHAUSTED"
    assert result["error_message"] == (
        "the claude-code CLI reached its turn limit (run_limits.max_turns)"
    )
    summary = result["transcript"]
    assert summary["model_calls"] == 2 and summary["tool_calls_by_name"] == {"Bash": 2}
    assert summary["stop_reason"] == "max_turns"


def test_a_budget_crossed_mid_run_stops_the_cli(ran: Path) -> None:
    result = task_json(ran, "budget", "loop")
    assert result["final_status"] == "TOKEN_BUDGET_EXCEEDED"
    assert "run_limits.max_total_tokens is 6000" in result["error_message"]
    summary = result["transcript"]
    assert summary["usage"]["total"] > 6000 and summary["model_calls"] == 3
    assert summary["tool_calls"] == 2  # the third call's answer never ran


def test_a_crashing_cli_ends_error_with_what_it_printed(tmp_path: Path) -> None:
    fake = write(tmp_path / "fake-claude", "#!/bin/sh\n"
                 "echo '{\"type\":\"system\",\"subtype\":\"init\",\"claude_code_version\":\"9\"}'\n"
                 "echo 'segfault in the agent' >&2\nexit 139\n")  # fmt: skip
    fake.chmod(0o755)
    write(tmp_path / "t.yaml", "task_id: crash\ndescription: d\ninitial_prompt: go\n"
          f"agent: {{type: claude-code, model: mock/echo, cli_path: {fake}}}\n"
          "success_criteria: [{type: file_exists, path: x, description: d}]\n")  # fmt: skip
    done = run_assay("run", "t.yaml", cwd=tmp_path)
    assert done.returncode == 1
    result = json.loads(next((tmp_path / "runs").rglob("task.json")).read_text())
    assert result["final_status"] == "ERROR"
    assert result["error_message"] == (
        "the claude-code CLI exited with code 139 (SIGSEGV): segfault in the agent"
    )
    assert result["transcript"]["cli"] == {"version": "9"}


def test_a_missing_cli_is_refused_before_any_row_runs(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", "task_id: nocli\ndescription: d\ninitial_prompt: go\n"
          "agent: {type: claude-code, model: mock/echo, cli_path: /nowhere/claude}\n"
          "success_criteria: [{type: file_exists, path: x, description: d}]\n")  # fmt: skip
    done = run_assay("plan", "t.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert "t.yaml:4: agent.cli_path: /nowhere/claude is not an executable file" in (done.stderr)


def test_an_anthropic_model_is_passed_through_to_its_api(tmp_path: Path) -> None:
    """The real CLI against a scripted Anthropic API behind the bridge: the CLI's own request
    (thinking, betas, cache control) arrives untranslated, with the task's model and key."""
    claude_available()

    def answer(body: dict[str, Any]) -> list[dict[str, Any]]:
        if turn_of(body) == 0:
            return [{"type": "thinking", "thinking": "plan"},
                    {"type": "tool_use", "id": "toolu_1", "name": "Write",
                     "input": {"file_path": "out.txt", "content": "passed"}}]  # fmt: skip
        return [{"type": "text", "text": "done"}]

    with anthropic_upstream(answer) as upstream:
        write(tmp_path / "t.yaml", "task_id: through\ndescription: d\ninitial_prompt: go\n"
              "agent: {type: claude-code, model: anthropic/claude-sonnet-4-5, "
              f"base_url: '{upstream.url}', api_key_env: UPSTREAM_KEY}}\n"
              "success_criteria: [{type: file_check, path: out.txt, includes: [passed], "
              "description: d}]\n")  # fmt: skip
        done = run_assay("run", "t.yaml", cwd=tmp_path,
                         env={"UPSTREAM_KEY": "sk-ant-upstream-key-1234567890"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [b["model"] for b in upstream.bodies] == ["claude-sonnet-4-5"] * 2
    assert all(h["x-api-key"] == "sk-ant-upstream-key-1234567890" for h in upstream.headers)
    assert "claude-code-20250219" in upstream.headers[0]["anthropic-beta"]
    assert upstream.bodies[1]["messages"][1]["content"][0]["type"] == "thinking"
    result = json.loads(next((tmp_path / "runs").rglob("task.json")).read_text())
    usage = result["transcript"]["usage"]
    assert usage == {"input": 290, "output": 24, "cache_read": 200, "cache_write": 10,
                     "reasoning": 0, "total": 314}  # fmt: skip
    # claude-sonnet-4* list prices: 3 in, 15 out, 0.30 cache read, 3.75 cache write ($/Mtok)
    expected = (2 * 40 * 3 + 200 * 0.30 + 10 * 3.75 + 24 * 15) / 1e6
    assert result["cost_usd"] == pytest.approx(expected)
    assert result["transcript"]["usage_difference"] is None


def test_coder_evals_worked_examples_run_offline_unchanged(tmp_path: Path) -> None:
    claude_available()
    shutil.copytree(REPO / "examples" / "coder_eval", tmp_path / "coder_eval")
    original = REPO / "examples" / "coder_eval" / "tasks" / "sentiment_classification.yaml"
    assert original.read_text().startswith('task_id: "sentiment-classification"')
    done = run_assay("run", "coder_eval/tasks", "--model",
                     "mock/coder_eval/scripts/claude-writes.yaml", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    run_dir = (tmp_path / "runs" / "latest").resolve()
    suite = json.loads((run_dir / "default/sentiment-classification/suite.json").read_text())
    metrics = suite["criterion_aggregates"][0]["metrics"]
    assert round(metrics["accuracy"], 3) == 0.667 and round(metrics["macro_f1"], 3) == 0.667
    assert metrics["recall.positive"] == 1.0 and suite["passed"] is True
    example = json.loads((run_dir / "default/dataset-example/suite.json").read_text())
    assert example["rows_passed"] == 2
    alpha = json.loads((run_dir / "default/dataset-example/alpha/00/task.json").read_text())
    assert alpha["transcript"]["files_changed"] == ["out.txt"]


def test_direct_route_uses_the_users_key_and_says_usage_is_the_clis(tmp_path: Path) -> None:
    claude_available()

    def answer(body: dict[str, Any]) -> list[dict[str, Any]]:
        if turn_of(body) == 0:
            return [{"type": "tool_use", "id": "toolu_1", "name": "Write",
                     "input": {"file_path": "out.txt", "content": "direct"}}]  # fmt: skip
        return [{"type": "text", "text": "done"}]

    with anthropic_upstream(answer) as upstream:
        write(tmp_path / "t.yaml", "task_id: direct\ndescription: d\ninitial_prompt: go\n"
              "agent: {type: claude-code, route: direct}\n"
              "success_criteria: [{type: file_check, path: out.txt, includes: [direct], "
              "description: d}]\n")  # fmt: skip
        done = run_assay("run", "t.yaml", cwd=tmp_path, env={
            "ANTHROPIC_BASE_URL": upstream.url, "ANTHROPIC_API_KEY": SECRET})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert upstream.headers[0]["x-api-key"] == SECRET  # the CLI's own credentials
    result = json.loads(next((tmp_path / "runs").rglob("task.json")).read_text())
    summary = result["transcript"]
    assert summary["usage_source"] == "cli" and summary["usage"] is None
    assert summary["cli_usage"] == {"input": 290, "output": 24, "cache_read": 200,
                                    "cache_write": 10, "reasoning": 0, "total": 314}  # fmt: skip
    assert result["total_token_usage"]["total_tokens"] == 314
    run_md = (tmp_path / "runs" / "latest" / "run.md").read_text()
    assert "for 1 row(s) the coding agent ran with route: direct" in run_md


def test_an_unreachable_api_ends_the_row_error(tmp_path: Path) -> None:
    claude_available()
    write(tmp_path / "t.yaml", "task_id: lost\ndescription: d\ninitial_prompt: go\n"
          "agent: {type: claude-code, route: direct, env: {CLAUDE_CODE_MAX_RETRIES: '0'}}\n"
          "run_limits: {task_timeout: 60}\n"
          "success_criteria: [{type: file_exists, path: x, description: d}]\n")  # fmt: skip
    done = run_assay("run", "t.yaml", cwd=tmp_path, env={
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_API_KEY": SECRET})  # fmt: skip
    assert done.returncode == 1
    result = json.loads(next((tmp_path / "runs").rglob("task.json")).read_text())
    assert result["final_status"] == "ERROR"
    assert result["error_message"].startswith("the claude-code CLI ended with an API error:")
    assert SECRET not in json.dumps(result)


def test_agent_fields_get_did_you_mean_and_coder_eval_fields_one_warning(tmp_path: Path) -> None:
    claude_available()
    base = ("task_id: fields\ndescription: d\ninitial_prompt: go\n"
            "success_criteria: [{type: file_exists, path: x, description: d}]\n")  # fmt: skip
    write(tmp_path / "typo.yaml", base + "agent: {type: claude-code, permision_mode: plan}\n")
    typo = run_assay("plan", "typo.yaml", cwd=tmp_path)
    assert typo.returncode == 2
    assert "agent.permision_mode: unknown field 'permision_mode'" in typo.stderr
    assert "did you mean 'permission_mode'?" in typo.stderr
    write(tmp_path / "extra.yaml", base + "agent: {type: claude-code, model: mock/echo, "
          "context_window: 200000, ignore_patterns: [x]}\n")  # fmt: skip
    extra = run_assay("plan", "extra.yaml", cwd=tmp_path)
    assert extra.returncode == 0, extra.stderr
    assert extra.stderr.count("agent.context_window: a Coder Eval field that assay does not "
                              "implement yet") == 1  # fmt: skip
    assert extra.stderr.count("agent.ignore_patterns: a Coder Eval field") == 1
    write(tmp_path / "sdk.yaml", base + "agent: {type: claude-code, model: mock/echo, "
          "sdk_options: {cwd: /tmp}}\n")  # fmt: skip
    sdk = run_assay("plan", "sdk.yaml", cwd=tmp_path)
    assert sdk.returncode == 2
    assert ("sdk_options key 'cwd' is framework-managed; set it as a top-level AgentConfig "
            "field instead") in sdk.stderr  # fmt: skip


def test_a_kept_sandbox_does_not_sit_under_the_users_project(tmp_path: Path) -> None:
    """Claude Code reads CLAUDE.md from every folder above its working directory: the
    project's own CLAUDE.md must not reach a row's agent, even with --keep-sandboxes."""
    claude_available()
    write(tmp_path / "CLAUDE.md", "Project rule: PROJECT-MEMORY-MARKER\n")
    write(tmp_path / "script.yaml", "replies:\n"
          "  - {match: PROJECT-MEMORY-MARKER, search: request, reply: leaked}\n"
          "  - match: go\n    steps:\n"
          "      - {tool: Write, input: {file_path: out.txt, content: kept}}\n"
          "      - {reply: done}\n")  # fmt: skip
    write(tmp_path / "t.yaml", "task_id: keep\ndescription: d\ninitial_prompt: go\n"
          "agent: {type: claude-code, model: mock/script.yaml}\n"
          "success_criteria: [{type: file_check, path: out.txt, includes: [kept], "
          "description: d}]\n")  # fmt: skip
    done = run_assay("run", "t.yaml", "--keep-sandboxes", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run_dir = (tmp_path / "runs" / "latest").resolve()
    result = json.loads((run_dir / "default/keep/00/task.json").read_text())
    assert result["final_status"] == "SUCCESS"
    assert result["sandbox_path"] == "default/keep/00/sandbox"
    assert (run_dir / "default/keep/00/sandbox/out.txt").read_text() == "kept"


def test_a_cli_that_prints_unreadable_events_keeps_its_transcript(tmp_path: Path) -> None:
    fake = write(tmp_path / "fake-claude", "#!/bin/sh\n"
                 "echo '{\"type\":\"system\",\"subtype\":\"init\",\"claude_code_version\":\"9\"}'\n"
                 "echo '{\"type\":\"user\",\"message\":{\"content\":7}}'\n"
                 "echo 'not json at all'\n"
                 "echo '{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"the answer\","
                 "\"usage\":{\"input_tokens\":\"abc\",\"output_tokens\":1e400},"
                 "\"total_cost_usd\":1e400}'\n")  # fmt: skip
    fake.chmod(0o755)
    write(tmp_path / "t.yaml", "task_id: odd\ndescription: d\ninitial_prompt: go\n"
          f"agent: {{type: claude-code, model: mock/echo, cli_path: {fake.name}}}\n"
          "success_criteria: [{type: response_match, expected: the answer, "
          "description: d}]\n")  # fmt: skip
    done = run_assay("run", "t.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # the relative cli_path is the task file's
    result = json.loads(next((tmp_path / "runs").rglob("task.json")).read_text())
    assert result["final_status"] == "SUCCESS"
    summary = result["transcript"]
    assert summary["cli_usage"]["input"] == 0 and summary["cli_cost_usd"] is None
    assert summary["cli"] == {"version": "9"}


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        ("{type: claude-code, model: mock/echo, claude_settings: nope.json}",
         "agent.claude_settings: agent.claude_settings file not found:"),
        ("{type: claude-code, model: mock/echo, claude_settings: bad.json}",
         "is not valid JSON"),
        ("{type: claude-code, model: mock/echo, system_prompt: \"a\\0b\"}",
         "system_prompt contains a NUL character"),
        ("{type: claude-code, model: mock/echo, env: {X: \"a\\0\"}}",
         "env contains a NUL character"),
        ("{type: claude-code, route: direct}",
         "agent.route: route 'direct' runs the CLI on your own credentials, and there are none"),
        ("{type: codex, route: direct}",
         "agent.route: codex runs through the model bridge only"),
    ],
)  # fmt: skip
def test_plan_refuses_what_would_fail_every_row(tmp_path: Path, agent: str, message: str) -> None:
    claude_available()
    write(tmp_path / "bad.json", "{not json")
    write(tmp_path / "t.yaml", "task_id: early\ndescription: d\ninitial_prompt: go\n"
          f"agent: {agent}\n"
          "success_criteria: [{type: file_exists, path: x, description: d}]\n")  # fmt: skip
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "ANTHROPIC_API_KEY": "", "CODEX_API_KEY": "",
           "CLAUDE_CODE_OAUTH_TOKEN": "", "PATH": codex_path()}  # fmt: skip
    done = run_assay("plan", "t.yaml", cwd=tmp_path, env=env)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
