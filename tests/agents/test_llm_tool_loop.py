"""The llm agent's tool loop (``agent: {type: llm, tools: [...]}``) with scripted models: the
tools act in the row's sandbox (tempdir and bwrap), paths stay inside it, limits end the row
with their reason, and the transcript is graded like a CLI agent's."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from assay.agents.llm_tools import EDIT_BYTES, SandboxTools
from assay.agents.tool_text import INVALID, parse_calls
from assay.providers.base import ToolCall
from assay.sandbox.tempdir import Sandbox
from assay.spec.task import LlmAgent
from tests.anthropic_upstream import anthropic_upstream, turn_of
from tests.cli.test_run import assay, assay_process, finished, latest
from tests.helpers import write
from tests.openai_server import Fault, scripted_server

REPO = Path(__file__).resolve().parents[2]
ALL_TOOLS = "[run_command, read_file, write_file, edit_file, submit_answer]"

TASK = """\
task_id: tools
description: the llm agent's tool loop
initial_prompt: "Write the greeting for ${{row.name}}"
agent:
  type: llm
  model: mock/script.yaml
  tools: {tools}
  max_turns: {max_turns}
sandbox: {{driver: {driver}}}
dataset:
  rows:
    - {{id: a, name: Ann}}
success_criteria:
{criteria}
"""

CRITERIA = """\
  - type: file_contains
    path: out/hello.txt
    includes: ["hello Ann, edited"]
  - type: command_executed
    command_pattern: "cat out/hello"
    require_success: true
  - type: tool_called
    tool: write_file
    min_count: 1
    max_count: 1
  - type: tool_called
    tool: edit_file
    arguments_pattern: "hello"
"""

SCRIPT = """\
replies:
  - match: "Write the greeting"
    steps:
      - tool: write_file
        input: {{path: out/hello.txt, content: "hello ${{row.name}}"}}
      - text: "Checking."
        tools:
          - {{tool: run_command, input: {{command: "cat out/hello.txt && echo done > log.txt"}}}}
          - {{tool: read_file, input: {{path: log.txt}}}}
          - {{tool: run_command, input: {{command: "echo escaped > {outside}"}}}}
      - tool: edit_file
        input: {{path: out/hello.txt, old_string: "Ann", new_string: "Ann, edited"}}
      - tool: submit_answer
        input: {{answer: "greeted ${{row.name}}"}}
"""


def task_json(run_dir: Path, row: str = "a") -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (run_dir / "default" / "tools" / row / "00" / "task.json").read_text()
    )
    return data


def run_on_model(
    tmp_path: Path,
    model: str,
    *,
    tools: str,
    criteria: str,
    max_turns: int = 3,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run :data:`TASK` (``tempdir``) with the agent's ``model`` lines (a real model's name
    and where it answers) in place of the scripted one."""
    task = TASK.format(tools=tools, max_turns=max_turns, driver="tempdir", criteria=criteria)
    write(tmp_path / "task.yaml", task.replace("model: mock/script.yaml", model))
    return assay("run", "task.yaml", cwd=tmp_path, env=env)


def openai_model(server: Any, extra: str = "") -> str:
    """The agent's model lines for a scripted OpenAI-compatible ``server``."""
    return f"model: openai/m\n  base_url: {server.base_url}{extra}"


def run_task(
    tmp_path: Path, script: str, *, extra: str = "", **fields: Any
) -> tuple[int, Path, str]:
    """Run :data:`TASK` with ``script`` as its model (``fields`` fill the task, ``extra``
    lines are appended): the exit code, the run folder and stderr."""
    values = {"tools": ALL_TOOLS, "max_turns": 10, "driver": "tempdir", "criteria": CRITERIA}
    values.update(fields)
    write(tmp_path / "script.yaml", script)
    path = write(tmp_path / "task.yaml", TASK.format(**values) + extra)
    done = assay("run", str(path), cwd=tmp_path)
    return done.returncode, latest(tmp_path), done.stderr


@pytest.mark.parametrize("driver", ["tempdir", "bwrap"])
def test_the_model_writes_runs_reads_edits_and_submits(tmp_path: Path, driver: str) -> None:
    outside = tmp_path / "host" / "outside.txt"
    outside.parent.mkdir()
    code, run_dir, stderr = run_task(tmp_path, SCRIPT.format(outside=outside), driver=driver)
    result = task_json(run_dir)
    assert result["final_status"] == "SUCCESS", (stderr, result["success_criteria_results"])
    assert code == 0
    assert (run_dir / "default/tools/a/00/response.txt").read_text() == "greeted Ann"
    summary = result["transcript"]
    assert summary["agent"] == "llm" and summary["model_calls"] == 4
    assert summary["tool_calls_by_name"] == {
        "write_file": 1, "run_command": 2, "read_file": 1, "edit_file": 1, "submit_answer": 1,
    }  # fmt: skip
    assert summary["commands"] == 2 and summary["stop_reason"] == "submit_answer"
    assert summary["files_changed"] == ["out/hello.txt"]
    log = (run_dir / "default/tools/a/00/task.log").read_text()
    assert "result of read_file: done" in log  # the command's file was read back
    trace = json.loads((run_dir / "default/tools/a/00/trace.json").read_text())
    names = [s["name"] for s in trace["resourceSpans"][0]["scopeSpans"][0]["spans"]]
    assert names.count("chat mock/script.yaml") == 4
    assert names.count("execute_tool run_command") == 2 and "invoke_agent llm" in names
    if driver == "bwrap":  # the jail kept the command from writing outside the sandbox
        assert not outside.exists()
        assert summary["commands_failed"] == 1
        assert "$ echo escaped" in log and "→ exit 0" not in log.split("$ echo escaped")[1]
    else:  # a tempdir sandbox contains nothing: the same command wrote there
        assert outside.read_text() == "escaped\n"
        assert summary["commands_failed"] == 0


ESCAPES = """\
replies:
  - match: "Write the greeting"
    steps:
      - tools:
          - {tool: write_file, input: {path: ../x.txt, content: "out"}}
          - {tool: write_file, input: {path: /etc/passwd, content: "root::0:0::/:/bin/sh"}}
          - {tool: run_command, input: {command: "ln -s /etc link && ln -s /etc/hostname host"}}
          - {tool: read_file, input: {path: link/hostname}}
          - {tool: write_file, input: {path: host, content: "x"}}
          - {tool: Bash, input: {command: "id"}}
      - tool: submit_answer
        input: {answer: "${row.name}: refused"}
"""


def test_escapes_and_unknown_tools_are_tool_errors_the_loop_goes_on(tmp_path: Path) -> None:
    criteria = (
        "  - {type: tool_called, tool: Bash, min_count: 0, max_count: 0,\n"
        "     require_success: true}"
    )  # Bash was called, and refused
    code, run_dir, stderr = run_task(tmp_path, ESCAPES, criteria=criteria)
    result = task_json(run_dir)
    assert result["final_status"] == "SUCCESS" and code == 0, stderr
    assert (run_dir / "default/tools/a/00/response.txt").read_text() == "Ann: refused"
    assert not (tmp_path / "runs" / "x.txt").exists()
    assert "root::0" not in Path("/etc/passwd").read_text()
    summary = result["transcript"]
    assert summary["tool_errors"] == 5 and summary["tool_calls"] == 7
    assert summary["files_changed"] == []
    log = (run_dir / "default/tools/a/00/task.log").read_text()
    assert "leaves the sandbox ('..')" in log and "is absolute" in log
    assert log.count("resolves outside the sandbox (a symlink)") == 2
    assert "no tool named 'Bash'" in log


def test_tools_refuse_escapes_directly(tmp_path: Path) -> None:
    """The tools alone: each refusal is an error result, never an exception."""
    root = tmp_path / "box"
    root.mkdir()
    (root / "up").symlink_to(tmp_path)
    (tmp_path / "secret.txt").write_text("s")
    tools = SandboxTools(Sandbox(root), offered=["read_file", "write_file", "edit_file"],
                         env={}, owner=None)  # fmt: skip

    def call(name: str, **arguments: str) -> tuple[str, bool]:
        run = asyncio.run(tools.call(ToolCall("c", name, json.dumps(arguments)), timeout=5))
        return run.output, run.is_error

    assert call("read_file", path="up/secret.txt")[1]
    assert call("write_file", path="up/new.txt", content="x")[1]
    assert not (tmp_path / "new.txt").exists()
    assert call("edit_file", path="../secret.txt", old_string="s", new_string="t")[1]
    assert (tmp_path / "secret.txt").read_text() == "s"
    assert call("run_command", command="id") == (
        "error: no tool named 'run_command' (tools: read_file, write_file, edit_file)",
        True,
    )
    assert call("write_file", path="a/b.txt", content="one two two") == (
        "wrote 11 bytes to a/b.txt",
        False,
    )
    assert call("edit_file", path="a/b.txt", old_string="two", new_string="2")[0].startswith(
        "error: old_string occurs 2 times"
    )
    assert call("edit_file", path="a/b.txt", old_string="one", new_string="1")[1] is False
    assert call("read_file", path="a/b.txt") == ("1 two two", False)
    assert call("read_file", path="missing.txt")[1]
    missing = "error: argument 'content' (a string) is missing"
    assert call("write_file", path="a/c.txt")[0] == missing
    # present but not text: said so, not "missing"
    typed = asyncio.run(tools.call(ToolCall("c", "read_file", '{"path": 42}'), timeout=5))
    assert (typed.output, typed.is_error) == ("error: argument 'path' must be a string, not 42",
                                              True)  # fmt: skip
    # a failed edit names the model's path, never the host's path of the sandbox
    gone = call("edit_file", path="gone.txt", old_string="a", new_string="b")
    assert gone == ("error: cannot read 'gone.txt': No such file or directory", True)
    with_answer = SandboxTools(Sandbox(root), offered=["read_file", "submit_answer"], env={},
                               owner=None)  # fmt: skip
    unknown = asyncio.run(with_answer.call(ToolCall("c", "Bash", "{}"), timeout=5))
    assert unknown.output == "error: no tool named 'Bash' (tools: read_file, submit_answer)"
    (root / "blob.bin").write_bytes(b"\x7fELF\x00\x01" * 100)
    assert call("read_file", path="blob.bin") == (
        "error: 'blob.bin' is a binary file, not text: look at it with run_command "
        "(od, xxd, file)", True)  # fmt: skip
    (root / "big.txt").write_text("word " * 100_000)  # read in part, clipped at whitespace
    text, failed = call("read_file", path="big.txt")
    assert not failed and text.endswith("word…") and 29_990 < len(text) <= 30_000


def test_a_fifo_or_a_huge_file_is_a_tool_error_at_once(tmp_path: Path) -> None:
    """``mkfifo f`` then ``read_file f``: opening the FIFO blocked assay's own process, and
    with it every row of the run, past every timeout; ``edit_file`` read a file of any size
    into assay's memory (two break-tests)."""
    root = tmp_path / "box"
    root.mkdir()
    os.mkfifo(root / "f")
    tools = SandboxTools(Sandbox(root), offered=["read_file", "write_file", "edit_file"],
                         env={}, owner=None)  # fmt: skip

    def call(name: str, **arguments: str) -> tuple[str, bool]:
        run = asyncio.run(tools.call(ToolCall("c", name, json.dumps(arguments)), timeout=5))
        return run.output, run.is_error

    fifo = "error: 'f' is not a regular file (a FIFO or a device): look at it with run_command"
    assert call("read_file", path="f") == (fifo, True)
    assert call("edit_file", path="f", old_string="a", new_string="b") == (fifo, True)
    written = call("write_file", path="f", content="x")  # no reader: refused, never waited on
    assert written[1] and written[0].startswith("error: cannot write 'f': ")
    (root / "d").mkdir()
    assert call("read_file", path="d")[0] == ("error: 'd' is a folder: look at it with run_command")
    with (root / "huge.txt").open("wb") as handle:
        handle.truncate(EDIT_BYTES + 1)
    assert call("edit_file", path="huge.txt", old_string="a", new_string="b") == (
        "error: 'huge.txt' is over 16 MiB: edit it with run_command (sed, a script)",
        True,
    )


FOREVER = """\
replies:
  - match: "Write the greeting"
    steps:
      - {text: "step one", tool: run_command, input: {command: "echo 1"}}
      - {text: "step two", tool: run_command, input: {command: "echo 2"}}
      - {text: "step three", tool: run_command, input: {command: "echo 3"}}
"""


def test_max_turns_ends_the_row_with_its_reason(tmp_path: Path) -> None:
    criteria = "  - {type: tool_called, tool: submit_answer}"  # never called: the row fails
    _, run_dir, stderr = run_task(tmp_path, FOREVER, max_turns=2, criteria=criteria)
    result = task_json(run_dir)
    assert result["final_status"] == "MAX_TURNS_EXHAUSTED", stderr
    assert "max_turns is 2 (agent.max_turns)" in result["error_message"]  # which setting
    summary = result["transcript"]
    assert summary["stop_reason"] == "max_turns" and summary["model_calls"] == 2
    assert summary["commands"] == 2  # the second answer's call ran before the limit
    assert (run_dir / "default/tools/a/00/response.txt").read_text() == "step two"


def test_a_cap_hit_whose_criteria_pass_is_a_success(tmp_path: Path) -> None:
    """Coder Eval: "a cap hit whose criteria pass is SUCCESS" (max_turns, tokens, cost; a
    timeout stays TIMEOUT); the row says why its agent stopped."""
    criteria = "  - {type: tool_called, tool: run_command}"
    _, run_dir, stderr = run_task(tmp_path, FOREVER, max_turns=2, criteria=criteria)
    result = task_json(run_dir)
    assert (result["final_status"], result["error_message"]) == ("SUCCESS", None), stderr
    assert "max_turns is 2 (agent.max_turns)" in result["agent"]["stopped_early"]
    assert result["transcript"]["stop_reason"] == "max_turns"


def test_a_live_verdict_ends_the_loop_after_the_call_that_decides_it(tmp_path: Path) -> None:
    """A criterion's ``stop_early`` on assay's own agent (found by a break-test: the loop
    ran every call and nothing was recorded, without a warning)."""
    criteria = ('  - {type: command_executed, command_pattern: "echo 2", '
                "stop_early: {on_pass: stop}}")  # fmt: skip
    _, run_dir, stderr = run_task(tmp_path, FOREVER, criteria=criteria)
    result = task_json(run_dir)
    assert result["final_status"] == "SUCCESS", stderr
    assert result["agent"]["early_stop"]["reason"] == "criterion_passed"
    assert result["agent"]["stopped_early"]
    summary = result["transcript"]
    assert (summary["stop_reason"], summary["commands"], summary["model_calls"]) == (
        "early_stop",
        2,
        2,
    )  # "echo 3" never ran


def test_run_limits_max_tool_calls_stops_early_and_grades(tmp_path: Path) -> None:
    criteria = "  - {type: tool_called, tool: run_command}"
    _, run_dir, stderr = run_task(tmp_path, FOREVER, criteria=criteria,
                                  extra="run_limits: {max_tool_calls: 1}\n")  # fmt: skip
    result = task_json(run_dir)
    assert result["transcript"]["stop_reason"] == "max_tool_calls", stderr
    assert result["transcript"]["model_calls"] == 1
    assert result["agent"]["stopped_early"] == (
        "the agent's model asked for 1 tool call; run_limits.max_tool_calls is 1"
    )
    assert result["final_status"] == "SUCCESS"  # graded as it stands
    assert result["success_criteria_results"][0]["score"] == 1.0


def test_an_unknown_tool_name_is_a_load_error_naming_the_field(tmp_path: Path) -> None:
    write(tmp_path / "script.yaml", FOREVER)
    path = write(tmp_path / "task.yaml", TASK.format(
        tools="[run_command, bash]", max_turns=3, driver="tempdir",
        criteria="  - {type: tool_called, tool: run_command}"))  # fmt: skip
    done = assay("run", str(path), cwd=tmp_path)
    assert done.returncode == 2
    assert "agent.tools[1]" in done.stderr or "agent.tools.1" in done.stderr, done.stderr
    assert "'run_command', 'read_file', 'write_file', 'edit_file' or 'submit_answer'" in (
        done.stderr.replace("\n", " ")
    )


@pytest.mark.local_model
def test_native_tools_on_a_local_model_whose_template_drops_them_are_refused(
    tmp_path: Path,
) -> None:
    """SmolLM2's chat template never names ``tools``: asked natively, the model was never
    shown them, with the same input tokens as without (a break-test). The plan refuses
    it, naming the text protocol, and takes the text protocol."""
    task = TASK.format(tools="[write_file, submit_answer]", max_turns=2, driver="tempdir",
                       criteria="  - {type: file_exists, path: hello.txt}")  # fmt: skip
    task = task.replace("model: mock/script.yaml", "model: local/smollm2")
    write(tmp_path / "task.yaml", task)
    own = {"ASSAY_LOCAL_MODEL_URL": ""}  # the weights are read, not a shared server asked
    refused = assay("plan", "task.yaml", cwd=tmp_path, env=own)
    assert refused.returncode == 2
    assert ("agent.tool_protocol: local/smollm2's chat template drops the request's tools"
            in refused.stderr)  # fmt: skip
    assert "hint: set agent.tool_protocol: text" in refused.stderr
    write(
        tmp_path / "task.yaml", task.replace("max_turns: 2", "max_turns: 2\n  tool_protocol: text")
    )
    assert assay("plan", "task.yaml", cwd=tmp_path, env=own).returncode == 0


def test_max_turns_without_tools_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "task.yaml", (
        "task_id: t\ndescription: d\ninitial_prompt: p\n"
        "agent: {type: llm, model: mock/echo, max_turns: 3}\n"
        "success_criteria: [{type: response_match, expected: p}]\n"))  # fmt: skip
    done = assay("run", str(path), cwd=tmp_path)
    assert done.returncode == 2 and "max_turns bounds the tool loop: set tools" in done.stderr


OWN_AGENT = """\
replies:
  - match: "Write the string '([^']*)' into out.txt"
    steps:
      - tool: write_file
        input: {path: out.txt, content: "${match.1}"}
      - tool: submit_answer
        input: {answer: "Done."}
"""


def test_coder_evals_worked_example_solved_by_the_own_agent(tmp_path: Path) -> None:
    """examples/coder_eval's dataset example, its claude-code agent swapped for the own
    agent by -D, run as ``python -m assay run`` (bwrap, the default for an acting agent)."""
    shutil.copytree(REPO / "examples" / "coder_eval", tmp_path / "coder_eval")
    write(tmp_path / "own-agent.yaml", OWN_AGENT)
    done = assay_process("run", "coder_eval/tasks/dataset_example.yaml", "-m",
                         "mock/own-agent.yaml", "-D", "agent.type=llm", "-D",
                         "agent.tools=[write_file, submit_answer]", cwd=tmp_path)  # fmt: skip
    run_dir = latest(tmp_path)
    assert finished(done, run_dir) == 0, done.stderr
    for row in ("alpha", "beta"):
        result = json.loads((run_dir / f"default/dataset-example/{row}/00/task.json").read_text())
        assert result["final_status"] == "SUCCESS"
        assert result["transcript"]["files_changed"] == ["out.txt"]
        assert result["transcript"]["stop_reason"] == "submit_answer"


def command_then_answer(command: str, answer: str) -> str:
    """A model script: one ``run_command`` of ``command``, then ``submit_answer``."""
    return (
        'replies:\n  - match: "Write the greeting"\n    steps:\n'
        f"      - {{tool: run_command, input: {{command: {json.dumps(command)}}}}}\n"
        f"      - {{tool: submit_answer, input: {{answer: {json.dumps(answer)}}}}}\n"
    )


SLOW = command_then_answer("sleep 5; echo late", "gave up")


SLEEPY = command_then_answer("sleep 30", "never")


def test_the_task_timeout_is_named_when_the_tool_call_limit_is_reached_too(
    tmp_path: Path,
) -> None:
    """Found in review: the row's time ran out in its last allowed tool call, and the row
    ended ``max_tool_calls`` (FAILURE) instead of ``TIMEOUT``; the time is checked first."""
    criteria = "  - {type: tool_called, tool: run_command}"
    limits = "run_limits: {task_timeout: 1, max_tool_calls: 1}\n"
    _, run_dir, stderr = run_task(tmp_path, SLEEPY, criteria=criteria, extra=limits)
    result = task_json(run_dir)
    assert result["final_status"] == "TIMEOUT", stderr
    assert result["error_message"] == "run_limits.task_timeout (1 s) ran out"
    log = (run_dir / "default/tools/a/00/task.log").read_text()
    assert "error of run_command: killed after 1 s\n" in log or "killed after 0.9" in log


def test_command_timeout_kills_a_command_and_the_model_is_told(tmp_path: Path) -> None:
    write(tmp_path / "script.yaml", SLOW)
    task = TASK.format(tools=ALL_TOOLS, max_turns=3, driver="tempdir",
                       criteria="  - {type: tool_called, tool: run_command}")  # fmt: skip
    write(tmp_path / "task.yaml", task.replace("  max_turns: 3\n", "  max_turns: 3\n  "
                                               "command_timeout: 0.5\n"))  # fmt: skip
    done = assay("run", "task.yaml", cwd=tmp_path)
    run_dir = latest(tmp_path)
    result = task_json(run_dir)
    assert result["final_status"] == "SUCCESS", done.stderr
    assert result["transcript"]["tool_errors"] == 1
    log = (run_dir / "default/tools/a/00/task.log").read_text()
    assert "error of run_command: killed after 0.5 s\n" in log  # nothing printed


def chat_tool_reply(call: dict[str, Any], finish: str = "tool_calls") -> Fault:
    """A Chat Completions reply that makes one tool call."""
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return Fault(body=json.dumps({
        "id": "x", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }))  # fmt: skip


def test_native_tool_calls_on_the_chat_completions_wire(tmp_path: Path) -> None:
    """An OpenAI-compatible server gets the tools and, next turn, the results as ``tool``
    messages; its tool call runs in the sandbox."""

    def reply(body: dict[str, Any]) -> str | Fault:
        if not any(m["role"] == "tool" for m in body["messages"]):
            call = {
                "id": "call_1",
                "type": "function",
                "function": {
                    "name": "run_command",
                    "arguments": json.dumps({"command": "echo hi > f.txt; echo ok"}),
                },
            }
            return chat_tool_reply(call)
        return "all done"

    with scripted_server(reply) as server:
        done = run_on_model(tmp_path, openai_model(server), tools="[run_command]",
                            criteria="  - {type: file_exists, path: f.txt}")  # fmt: skip
    result = task_json(latest(tmp_path))
    assert result["final_status"] == "SUCCESS", done.stderr
    assert (latest(tmp_path) / "default/tools/a/00/response.txt").read_text() == "all done"
    first, second = server.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["run_command"]
    tool_message = next(m for m in second["messages"] if m["role"] == "tool")
    assert tool_message["tool_call_id"] == "call_1"
    assert tool_message["content"].startswith("exit code 0\nok")
    assert result["transcript"]["stop_reason"] == "end_turn"


@pytest.mark.parametrize("given", ["call_0", ""])
def test_a_server_that_repeats_or_empties_call_ids_keeps_each_calls_result(
    tmp_path: Path, given: str
) -> None:
    """A server that numbers calls per turn (``call_0`` each time) or sends empty ids: the
    second command's result replaced the first's, so ``false`` counted as a success and
    the row passed (a break-test). Each call now gets an id of its own, sent back with its
    result."""

    def reply(body: dict[str, Any]) -> str | Fault:
        ran = sum(1 for m in body["messages"] if m["role"] == "tool")
        if ran == 2:
            return "all done"
        call = {
            "id": given,
            "type": "function",
            "function": {
                "name": "run_command",
                "arguments": json.dumps({"command": ["false", "true"][ran]}),
            },
        }
        return chat_tool_reply(call)

    criteria = ("  - {type: command_executed, command_pattern: 'true|false', min_count: 2, "
                "require_success: true}")  # fmt: skip
    with scripted_server(reply) as server:
        done = run_on_model(tmp_path, openai_model(server), tools="[run_command]",
                            criteria=criteria, max_turns=4)  # fmt: skip
    result = task_json(latest(tmp_path))
    assert result["final_status"] == "FAILURE", done.stderr
    assert result["success_criteria_results"][0]["score"] == 0.5
    assert (result["transcript"]["tool_errors"], result["transcript"]["commands_failed"]) == (1, 1)
    last = server.requests[-1]["messages"]
    sent = [c["id"] for m in last if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    answered = [m["tool_call_id"] for m in last if m["role"] == "tool"]
    assert len(set(sent)) == 2 and answered == sent  # each result goes back under its call


def test_a_server_that_reports_no_usage_leaves_the_rows_usage_unknown(tmp_path: Path) -> None:
    """A server without ``usage`` in its answers: the row recorded 0 tokens, as if measured,
    and the run did not count it as unknown (a break-test)."""

    def reply(body: dict[str, Any]) -> str | Fault:
        message = {"role": "assistant", "content": "all done"}
        return Fault(body=json.dumps({"id": "x", "object": "chat.completion", "model": "m",
                                      "choices": [{"index": 0, "message": message,
                                                   "finish_reason": "stop"}]}))  # fmt: skip

    with scripted_server(reply) as server:
        done = run_on_model(tmp_path, openai_model(server), tools="[run_command]",
                            criteria="  - {type: response_match, expected: done, "
                            "match: contains}")  # fmt: skip
    result = task_json(latest(tmp_path))
    assert result["final_status"] == "SUCCESS", done.stderr
    assert result["total_token_usage"] is None
    summary = json.loads((latest(tmp_path) / "run.json").read_text())
    assert (summary["rows_usage_unknown"], summary["cost_complete"]) == (1, False)


def test_a_tool_call_cut_at_max_tokens_is_said_to_be_cut(tmp_path: Path) -> None:
    """A ``write_file`` whose arguments ran past ``max_tokens`` (``finish_reason: length``)
    was reported to the model and the transcript as malformed JSON, with nothing of the
    limit (a break-test)."""

    def reply(body: dict[str, Any]) -> str | Fault:
        if any(m["role"] == "tool" for m in body["messages"]):
            return "all done"
        call = {
            "id": "c1",
            "type": "function",
            "function": {"name": "write_file", "arguments": '{"path": "a.py", "content": "print(1'},
        }
        return chat_tool_reply(call, finish="length")

    with scripted_server(reply) as server:
        run_on_model(tmp_path, openai_model(server), tools="[write_file]",
                     criteria="  - {type: file_exists, path: a.py}")  # fmt: skip
    told = next(m for m in server.requests[-1]["messages"] if m["role"] == "tool")["content"]
    assert told == (
        "error: the answer was cut at agent.max_tokens (256) before this call's "
        "arguments ended: write less in one call, or raise agent.max_tokens"
    )


def test_the_token_budget_ends_the_loop_after_the_call_that_crosses_it(tmp_path: Path) -> None:
    criteria = "  - {type: tool_called, tool: submit_answer}"  # never called: the row fails
    _, run_dir, stderr = run_task(tmp_path, FOREVER, criteria=criteria,
                                  extra="run_limits: {max_total_tokens: 30}\n")  # fmt: skip
    result = task_json(run_dir)
    assert result["final_status"] == "TOKEN_BUDGET_EXCEEDED", stderr
    assert "run_limits.max_total_tokens is 30" in result["error_message"]
    summary = result["transcript"]
    assert summary["stop_reason"] == "token_budget" and summary["usage"]["total"] > 30
    assert summary["model_calls"] == summary["commands"] + 1  # its calls were not run


TEXT_PROTOCOL = """\
replies:
  - match: "Write the greeting"
    reply: >-
      I will write it.
      <tool_call>{"name": "write_file", "arguments": {"path": "g.txt",
      "content": "hi ${row.name}"}}</tool_call>
      <tool_call>not json</tool_call>
  - match: 'wrote \\d+ bytes to g.txt</tool_result>'
    reply: '<tool_call>{"name": "submit_answer", "arguments": {"answer": "done"}}</tool_call>'
"""


def test_the_text_protocol_reads_tool_calls_from_the_reply(tmp_path: Path) -> None:
    criteria = "  - {type: file_contains, path: g.txt, includes: [hi Ann]}"
    write(tmp_path / "script.yaml", TEXT_PROTOCOL)
    task = TASK.format(tools="[write_file, submit_answer]", max_turns=4, driver="tempdir",
                       criteria=criteria)  # fmt: skip
    task = task.replace("  max_turns: 4\n", "  max_turns: 4\n  tool_protocol: text\n")
    write(tmp_path / "task.yaml", task)
    done = assay("run", "task.yaml", cwd=tmp_path)
    result = task_json(latest(tmp_path))
    assert result["final_status"] == "SUCCESS", done.stderr
    summary = result["transcript"]
    assert summary["tool_calls_by_name"] == {"write_file": 1, "invalid": 1, "submit_answer": 1}
    assert summary["tool_errors"] == 1 and summary["model_calls"] == 2
    log = (latest(tmp_path) / "default/tools/a/00/task.log").read_text()
    assert "assistant: I will write it." in log and "error: not JSON" in log


def test_the_text_protocol_sends_no_native_tools(tmp_path: Path) -> None:
    def reply(body: dict[str, Any]) -> str:
        if len(body["messages"]) == 2:
            return '<tool_call>{"name": "read_file", "arguments": {"path": "nope.txt"}}</tool_call>'
        return "the file is missing"

    with scripted_server(reply) as server:
        done = run_on_model(tmp_path, openai_model(server, "\n  tool_protocol: text"),
                            tools="[read_file]", criteria="  - {type: response_match, "
                            "expected: missing, match: contains}")  # fmt: skip
    result = task_json(latest(tmp_path))
    assert result["final_status"] == "SUCCESS", done.stderr
    first, second = server.requests
    assert "tools" not in first and "tools" not in second
    assert first["messages"][0]["role"] == "system"
    assert '<tool_call>{"name": "TOOL"' in first["messages"][0]["content"]
    assert "- read_file: Read a text file." in first["messages"][0]["content"]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "user"]
    returned = second["messages"][3]["content"]
    assert returned.startswith('<tool_result id="call_1_1" name="read_file" error="true">')
    assert "cannot read 'nope.txt'" in returned


LOUD = command_then_answer("head -c 1500000 /dev/zero | tr '\\0' a; echo", "done")


def test_a_commands_output_past_the_cap_is_logged_whole_and_clipped_for_the_model(
    tmp_path: Path,
) -> None:
    write(tmp_path / "script.yaml", LOUD)
    task = TASK.format(tools=ALL_TOOLS, max_turns=3, driver="tempdir",
                       criteria="  - {type: tool_called, tool: run_command}")  # fmt: skip
    task = task.replace("sandbox: {driver: tempdir}",
                        "sandbox: {driver: tempdir, limits: {max_output_mb: 1}}")  # fmt: skip
    write(tmp_path / "task.yaml", task)
    done = assay("run", "task.yaml", cwd=tmp_path)
    row_dir = latest(tmp_path) / "default/tools/a/00"
    result = task_json(latest(tmp_path))
    assert result["final_status"] == "SUCCESS", done.stderr
    assert result["agent"]["output_logs"] == ["tool-1.stdout.log"]
    assert result["agent"]["output_dropped_bytes"] == 1_500_001 - 1024 * 1024
    assert (row_dir / "tool-1.stdout.log").stat().st_size == 1_500_001
    box = tmp_path / "box"
    box.mkdir()
    tools = SandboxTools(Sandbox(box, max_output_bytes=1024 * 1024), offered=["run_command"],
                         env={"PATH": "/usr/bin:/bin"}, owner=None)  # fmt: skip
    command = "head -c 1500000 /dev/zero | tr '\\0' a; echo"
    run = asyncio.run(tools.call(ToolCall("c", "run_command", json.dumps({"command": command})),
                                 timeout=30))  # fmt: skip
    assert run.output.startswith("exit code 0\n") and not run.is_error
    assert len(run.output) <= len("exit code 0\n") + 30_000  # the model reads the end
    assert run.output.endswith("a" * 1000 + "\n\n[assay: output cut after 1048576 bytes; "
                               "385889 more bytes dropped; the last 65536 bytes above are its "
                               "end]\n")  # fmt: skip


def test_an_llm_agent_dumped_whole_loads_again() -> None:
    """task.json keeps the agent with every default; reading it back is no error."""
    for agent in (LlmAgent(model="mock/echo"),
                  LlmAgent(model="mock/echo", tools=["read_file"], max_turns=2)):  # fmt: skip
        assert LlmAgent.model_validate(agent.model_dump()) == agent
    with pytest.raises(ValueError, match="command_timeout bounds the tool loop"):
        LlmAgent(model="mock/echo", command_timeout=5)


def test_assay_evaluate_grades_the_tool_loop_again_from_its_trace(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    write(tmp_path / "script.yaml", SCRIPT.format(outside=outside))
    write(tmp_path / "task.yaml", TASK.format(tools=ALL_TOOLS, max_turns=10, driver="tempdir",
                                              criteria=CRITERIA))  # fmt: skip
    done = assay("run", "task.yaml", "--keep-sandboxes", cwd=tmp_path)
    first = task_json(latest(tmp_path))
    assert first["final_status"] == "SUCCESS", done.stderr
    again = assay("evaluate", str(latest(tmp_path)), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    second = task_json(latest(tmp_path))
    assert [r["score"] for r in second["success_criteria_results"]] == [1.0] * 4
    assert second["transcript"]["tool_calls_by_name"] == first["transcript"]["tool_calls_by_name"]


def test_native_tool_calls_on_the_anthropic_messages_wire(tmp_path: Path) -> None:
    """An Anthropic Messages server gets the tools as ``tools`` with ``input_schema`` and,
    next turn, the result as a ``tool_result`` block of the user's message; its
    ``tool_use`` runs in the sandbox."""

    def answer(body: dict[str, Any]) -> list[dict[str, Any]]:
        if turn_of(body) == 0:
            return [{"type": "tool_use", "id": "toolu_1", "name": "write_file",
                     "input": {"path": "f.txt", "content": "from claude"}}]  # fmt: skip
        return [{"type": "text", "text": "all done"}]

    with anthropic_upstream(answer) as upstream:
        model = (
            "model: anthropic/claude-sonnet-4-5\n"
            f"  base_url: {upstream.url}\n  api_key_env: UPSTREAM_KEY"
        )
        done = run_on_model(tmp_path, model, tools="[write_file, submit_answer]",
                            criteria="  - {type: file_contains, path: f.txt, "
                            "includes: [from claude]}",
                            env={"UPSTREAM_KEY": "sk-ant-upstream-key-1234567890"})  # fmt: skip
    result = task_json(latest(tmp_path))
    assert result["final_status"] == "SUCCESS", done.stderr
    first, second = upstream.bodies
    assert [t["name"] for t in first["tools"]] == ["write_file", "submit_answer"]
    assert "input_schema" in first["tools"][0]
    results = [b for m in second["messages"] if isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]  # fmt: skip
    assert [r["tool_use_id"] for r in results] == ["toolu_1"]
    assert (latest(tmp_path) / "default/tools/a/00/response.txt").read_text() == "all done"


@pytest.mark.parametrize(
    ("reply", "text", "calls"),
    [('a <tool_call>{"name": "write_file", "arguments": {"content": "x </tool_call> y"}}'
      "</tool_call> b", "a  b", [("write_file", {"content": "x </tool_call> y"})]),
     ('<tool_call> {"name": "run_command"} </tool_call>', "", [("run_command", {})]),
     ("<tool_call>{bad}</tool_call> tail", "tail", [(INVALID, None)]),
     ('<tool_call>"just a string"</tool_call>', "", [(INVALID, None)]),
     ("no call, only <tool_call>unclosed", "no call, only <tool_call>unclosed", [])],
)  # fmt: skip
def test_the_text_protocol_reads_each_block_as_far_as_its_json_goes(
    reply: str, text: str, calls: list[tuple[str, Any]]
) -> None:
    """Found in review: ``</tool_call>`` inside a JSON string ended the block, and the rest
    became the row's answer."""
    outside, found = parse_calls(reply, 1)
    assert outside == text
    assert [c.name for c in found] == [name for name, _ in calls]
    for call, (_, arguments) in zip(found, calls, strict=True):
        if arguments is not None:
            assert json.loads(call.arguments) == arguments


PEEK = """\
replies:
  - match: "Write the greeting"
    steps:
      - tool: run_command
        input: {command: "cat \\"$ASSAY_TASK_DIR/answers.txt\\" || echo hidden"}
      - tool: submit_answer
        input: {answer: "done"}
"""


def test_the_task_folder_is_hidden_from_the_own_agents_commands(tmp_path: Path) -> None:
    """The task folder holds the dataset and its answers: hidden from a coding agent's CLI,
    it was shown to assay's own agent's run_command (a security review read the answers)."""
    write(tmp_path / "answers.txt", "EXPECTED_ANSWER_42\n")
    criteria = "  - {type: response_match, expected: done}\n"
    code, run_dir, stderr = run_task(tmp_path, PEEK, driver="bwrap", criteria=criteria)
    log = (run_dir / "default/tools/a/00/task.log").read_text()
    assert "EXPECTED_ANSWER_42" not in log and "hidden" in log, log
    assert code == 0, stderr


@pytest.mark.docker
def test_the_task_folder_is_hidden_from_the_own_agents_commands_in_docker(
    tmp_path: Path, docker_image: tuple[object, str]
) -> None:
    write(tmp_path / "answers.txt", "EXPECTED_ANSWER_42\n")
    criteria = "  - {type: response_match, expected: done}\n"
    driver = f"docker, docker: {{image: '{docker_image[1]}'}}"
    code, run_dir, stderr = run_task(tmp_path, PEEK, driver=driver, criteria=criteria)
    log = (run_dir / "default/tools/a/00/task.log").read_text()
    assert "EXPECTED_ANSWER_42" not in log and "hidden" in log, log
    assert code == 0, stderr


@pytest.mark.parametrize(("name", "arguments", "said"), [
    ("write_file", {"path": "a\x00b.txt", "content": "x"}, "argument 'path' holds a NUL"),
    ("read_file", {"path": "\x00"}, "argument 'path' holds a NUL"),
    ("run_command", {"command": "echo \x00"}, "argument 'command' holds a NUL"),
    ("edit_file", {"path": "a\x00", "old_string": "x", "new_string": "y"},
     "argument 'path' holds a NUL")])  # fmt: skip
def test_a_nul_in_a_path_or_command_is_a_tool_error_the_model_reads(
    tmp_path: Path, name: str, arguments: dict[str, str], said: str
) -> None:
    """A break-test's model sent ``\\u0000`` in a path: the row ended ERROR (an internal
    error of assay's); it is a tool error, and the loop goes on."""
    box = tmp_path / "box"
    box.mkdir()
    tools = SandboxTools(Sandbox(box), offered=[name], env={"PATH": "/usr/bin:/bin"},
                         owner=None)  # fmt: skip
    run = asyncio.run(tools.call(ToolCall("c", name, json.dumps(arguments)), timeout=30))
    assert run.is_error and run.output.startswith(f"error: {said}")
    content = (
        asyncio.run(
            tools.call(
                ToolCall("c", "write_file", json.dumps({"path": "ok.txt", "content": "a\x00b"})),
                timeout=30,
            )
        )
        if name == "write_file"
        else None
    )
    assert content is None or (not content.is_error and (box / "ok.txt").read_bytes() == b"a\0b")
