"""The llm agent with scripted models: mock provider and a real OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from assay.agents.llm import build_request
from assay.providers.base import Choice, JsonSchema
from assay.providers.constraints import choice_grammar, gbnf_literal, read_choice
from assay.spec.task import LlmAgent
from tests.cli.test_run import assay, latest
from tests.helpers import write
from tests.openai_server import Fault, scripted_server

TASK = """\
task_id: mocked
description: llm agent with a scripted model
initial_prompt: "Review: ${{row.text}}"
agent:
{agent}
dataset:
  rows:
    - {{id: p, text: "I love it", label: positive}}
    - {{id: n, text: "I hate it", label: negative}}
    - {{id: x, text: "server down", label: negative}}
success_criteria:
  - type: classification_match
    expected_label: "${{row.label}}"
    allowed_labels: [positive, negative]
    suite_thresholds: {{accuracy: 1.0}}
"""

SCRIPT = """\
replies:
  - {match: love, reply: positive}
  - {match: server down, error: "HTTP 503"}
default: negative
"""


def run_task(tmp_path: Path, agent: str, *extra: str) -> tuple[int, Path]:
    write(tmp_path / "script.yaml", SCRIPT)
    path = write(tmp_path / "task.yaml", TASK.format(agent=agent))
    done = assay("run", str(path), *extra, cwd=tmp_path)
    return done.returncode, latest(tmp_path)


def row(run_dir: Path, row_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (run_dir / "default" / "mocked" / row_id / "00" / "task.json").read_text()
    )
    return data


def test_scripted_model_grades_and_errors_stay_errors(tmp_path: Path) -> None:
    code, run_dir = run_task(
        tmp_path, "  type: llm\n  model: mock/script.yaml\n  labels: [positive, negative]"
    )
    assert row(run_dir, "p")["final_status"] == "SUCCESS"
    assert row(run_dir, "n")["final_status"] == "SUCCESS"
    errored = row(run_dir, "x")
    assert errored["final_status"] == "ERROR"
    assert errored["error_message"] == "mock/script.yaml: scripted error: HTTP 503"
    suite = json.loads((run_dir / "default/mocked/suite.json").read_text())
    metrics = suite["criterion_aggregates"][0]["metrics"]
    assert metrics["accuracy"] == 1.0
    assert metrics["completion_rate"] == 2 / 3
    assert code == 1  # the errored row (an outage) fails the run: no completion_rate gate
    traces = [json.loads((run_dir / f"default/mocked/{r}/00/trace.json").read_text())
              for r in ("p", "n")]  # fmt: skip
    spans = [t["resourceSpans"][0]["scopeSpans"][0]["spans"] for t in traces]
    trace_ids = [{s["traceId"] for s in row_spans} for row_spans in spans]
    assert all(len(ids) == 1 for ids in trace_ids)  # one trace per row
    assert trace_ids[0] != trace_ids[1]
    for span in spans[0] + spans[1]:
        assert re.fullmatch(r"[0-9a-f]{32}", span["traceId"]) and set(span["traceId"]) != {"0"}
        assert re.fullmatch(r"[0-9a-f]{16}", span["spanId"]) and set(span["spanId"]) != {"0"}


def test_reply_outside_labels_is_an_error(tmp_path: Path) -> None:
    code, run_dir = run_task(
        tmp_path, "  type: llm\n  model: mock/echo\n  labels: [positive, negative]"
    )
    assert row(run_dir, "p")["final_status"] == "ERROR"
    assert "not one of the labels" in row(run_dir, "p")["error_message"]
    assert code == 1


def test_token_budget(tmp_path: Path) -> None:
    agent = "  type: llm\n  model: mock/echo\nrun_limits: {max_total_tokens: 3}"
    _, run_dir = run_task(tmp_path, agent)
    task = row(run_dir, "p")
    assert task["final_status"] == "TOKEN_BUDGET_EXCEEDED"
    assert task["total_token_usage"]["total_tokens"] > 3


def test_response_file_is_written_in_the_sandbox(tmp_path: Path) -> None:
    agent = "  type: llm\n  model: mock/script.yaml\n  response_file: out/answer.txt"
    _, run_dir = run_task(tmp_path, agent, "--keep-sandboxes")
    assert (run_dir / "default/mocked/p/00/sandbox/out/answer.txt").read_text() == "positive"


def test_unknown_provider_exits_2(tmp_path: Path) -> None:
    code, _ = run_task(tmp_path, "  type: llm\n  model: opena/gpt-4o")
    assert code == 2


def test_chat_request_has_system_then_shots_then_prompt() -> None:
    config = LlmAgent(
        system_prompt="Be brief.",
        few_shot=[{"user": "2+2", "assistant": "4"}],  # type: ignore[list-item]
        labels=["a", "b"],
    )
    request = build_request(config, "3+3")
    assert request.messages is not None
    assert [(m.role, m.content) for m in request.messages] == [
        ("system", "Be brief."),
        ("user", "2+2"),
        ("assistant", "4"),
        ("user", "3+3"),
    ]
    assert request.constraint == Choice(("a", "b"))


def test_completion_request_and_schema_constraint() -> None:
    config = LlmAgent(prompt_format="completion", json_schema={"type": "object"})
    request = build_request(config, "text")
    assert request.prompt == "text" and request.messages is None
    assert request.constraint == JsonSchema({"type": "object"})


def test_gbnf_escaping() -> None:
    assert gbnf_literal('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'
    assert choice_grammar(("yes", "no")) == 'root ::= " "? ("yes" | "no")'


@pytest.mark.parametrize(
    ("text", "wrapped", "label"),
    [(" positive", False, "positive"), ('{"answer": "negative"}', True, "negative"),
     ('"positive"', False, "positive")],
)  # fmt: skip
def test_read_choice(text: str, wrapped: bool, label: str) -> None:
    assert read_choice(text, ("positive", "negative"), wrapped=wrapped) == label


def test_openai_compatible_endpoint_gets_structured_output(tmp_path: Path) -> None:
    def reply(body: dict[str, Any]) -> str:
        text = body["messages"][-1]["content"]
        return json.dumps({"answer": "positive" if "love" in text else "negative"})

    with scripted_server(reply) as server:
        agent = (
            "  type: llm\n  model: openai/test-model\n"
            f"  base_url: {server.base_url}\n  api_key_env: TEST_KEY\n"
            "  labels: [positive, negative]\n  system_prompt: Classify."
        )
        os.environ["TEST_KEY"] = "sekrit"
        try:
            code, run_dir = run_task(tmp_path, agent)
        finally:
            del os.environ["TEST_KEY"]
    assert row(run_dir, "p")["final_status"] == "SUCCESS"
    assert row(run_dir, "x")["final_status"] == "SUCCESS"
    assert code == 0
    body = server.requests[0]
    assert body["model"] == "test-model"
    assert body["messages"][0] == {"role": "system", "content": "Classify."}
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["answer"]["enum"] == ["positive", "negative"]
    assert server.headers[0]["authorization"] == "Bearer sekrit"
    usage = row(run_dir, "p")["total_token_usage"]
    assert usage == {
        "input_tokens": 7,
        "output_tokens": 2,
        "total_tokens": 9,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "reasoning_tokens": 0,
    }


def test_unreachable_endpoint_is_an_error_row(tmp_path: Path) -> None:
    agent = (
        "  type: llm\n  model: openai/m\n  base_url: http://127.0.0.1:9/v1\n  request_timeout: 2"
    )
    code, run_dir = run_task(tmp_path, agent)
    task = row(run_dir, "p")
    assert task["final_status"] == "ERROR"
    assert "cannot reach http://127.0.0.1:9/v1" in task["error_message"]
    assert code == 1


def test_unknown_provider_is_refused_before_any_run(tmp_path: Path) -> None:
    write(tmp_path / "script.yaml", SCRIPT)
    path = write(tmp_path / "task.yaml", TASK.format(agent="  type: llm\n  model: opena/gpt-4o"))
    done = assay("plan", str(path), cwd=tmp_path)
    assert done.returncode == 2
    assert "agent.model: unknown model provider 'opena'" in done.stderr
    assert "did you mean 'openai/...'?" in done.stderr
    assert assay("run", str(path), cwd=tmp_path).returncode == 2
    assert not (tmp_path / "runs").exists()


def test_labels_raise_max_tokens_to_fit_the_longest_label() -> None:
    config = LlmAgent(labels=["positive", "negative"], max_tokens=3)
    assert build_request(config, "x").max_tokens == len("positive") + 2
    assert build_request(LlmAgent(max_tokens=3), "x").max_tokens == 3


def test_a_json_reply_cut_at_max_tokens_is_the_rows_error_not_a_wrong_answer(
    tmp_path: Path,
) -> None:
    def completion(text: str, finish: str) -> Fault:
        choice = {"index": 0, "finish_reason": finish,
                  "message": {"role": "assistant", "content": text}}  # fmt: skip
        usage = {"prompt_tokens": 5, "completion_tokens": 8, "total_tokens": 13}
        return Fault(
            body=json.dumps(
                {
                    "id": "c",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "m",
                    "choices": [choice],
                    "usage": usage,
                }
            )
        )

    def reply(body: dict[str, Any]) -> Fault:
        text = body["messages"][-1]["content"]
        if "love" in text:  # cut: the row's error, naming max_tokens
            return completion('{"answer": "pos', "length")
        if "hate" in text:  # at the cap, but whole JSON: an answer
            return completion('{"answer": "negative"}', "length")
        return completion('{"answer": "neg', "stop")  # not cut: the model's own answer

    with scripted_server(reply) as server:
        agent = (f"  type: llm\n  model: openai/m\n  base_url: {server.base_url}\n"
                 "  max_tokens: 8\n  json_schema: {type: object}")  # fmt: skip
        run_task(tmp_path, agent)
    cut = row(run_dir := latest(tmp_path), "p")
    assert cut["final_status"] == "ERROR"
    cut_text = '\'{"answer": "pos\''
    assert cut["error_message"] == (f"the reply was cut at max_tokens (8) before its JSON "
                                    f"closed: {cut_text}; raise agent.max_tokens")  # fmt: skip
    assert cut["total_token_usage"]["total_tokens"] == 13  # billed all the same
    assert row(run_dir, "n")["final_status"] == "FAILURE"  # graded: the label is not JSON
    assert row(run_dir, "x")["final_status"] == "FAILURE"


@pytest.mark.parametrize(("path", "said"), [
    ("../../x", "agent.response_file: path '../../x' leaves the sandbox ('..')"),
    ("/tmp/x", "agent.response_file: path '/tmp/x' is absolute"),
    (".", "agent.response_file: response_file '.' names a folder"),
    ("out/", "agent.response_file: response_file 'out/' names a folder")])  # fmt: skip
def test_a_response_file_outside_the_sandbox_is_refused_at_load(
    tmp_path: Path, path: str, said: str
) -> None:
    """A break-test's rows each paid for their model call, then ended ERROR."""
    agent = f"  type: llm\n  model: mock/script.yaml\n  response_file: {path}"
    write(tmp_path / "script.yaml", SCRIPT)
    write(tmp_path / "task.yaml", TASK.format(agent=agent))
    done = assay("plan", "task.yaml", cwd=tmp_path)
    assert done.returncode == 2 and said in done.stderr, done.stderr


LEFT_AT_RESPONSE_FILE = """\
replies:
  - match: "good"
    steps:
      - {tool: submit_answer, input: {answer: "42"}}
  - match: "link"
    steps:
      - {tool: run_command, input: {command: "ln -s / answer.txt"}}
      - {tool: submit_answer, input: {answer: "I do not know"}}
  - match: "fifo"
    steps:
      - {tool: run_command, input: {command: "mkfifo answer.txt"}}
      - {tool: submit_answer, input: {answer: "I do not know"}}
  - match: "folder"
    steps:
      - {tool: run_command, input: {command: "mkdir answer.txt"}}
      - {tool: submit_answer, input: {answer: "I do not know"}}
  - match: "outside"
    steps:
      - {tool: run_command, input: {command: "ln -s / out"}}
      - {tool: submit_answer, input: {answer: "I do not know"}}
"""


@pytest.mark.parametrize(("what", "path"), [("link", "answer.txt"), ("fifo", "answer.txt"),
                                            ("folder", "answer.txt"),
                                            ("outside", "out/answer.txt")])  # fmt: skip
def test_what_the_agent_left_at_response_file_never_takes_its_row_out(
    tmp_path: Path, what: str, path: str
) -> None:
    """An agent's link at ``response_file`` made its wrong row an ERROR of assay's (out of
    every rate: pass rate 1.0 for one right and one wrong answer); a FIFO there hung the run
    (two break-tests). The row is graded on its answer."""
    write(tmp_path / "script.yaml", LEFT_AT_RESPONSE_FILE)
    write(
        tmp_path / "task.yaml",
        f"""\
task_id: rf
description: d
initial_prompt: "${{row.p}}"
agent: {{type: llm, model: mock/script.yaml, tools: [run_command, submit_answer],
        response_file: {path}}}
sandbox: {{driver: tempdir}}
dataset:
  rows: [{{id: g, p: good}}, {{id: h, p: {what}}}]
success_criteria:
  - {{type: response_match, expected: "42", match: contains}}
""",
    )
    done = assay("run", "task.yaml", cwd=tmp_path)
    suite = json.loads((latest(tmp_path) / "default" / "rf" / "suite.json").read_text())
    assert (suite["rows_passed"], suite["rows_failed"], suite["rows_error"]) == (1, 1, 0)
    assert suite["pass_rate"] == 0.5, done.stderr
