"""Replies a gateway gives that the documented shape does not (a platform engineer's
break-test with fake OpenAI-compatible gateways): each is one row's outcome, never the run's
crash, and nothing the row finished is lost."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.test_run import assay, latest
from tests.helpers import write
from tests.openai_server import Fault, scripted_server


def _body(content: Any) -> str:
    return json.dumps({"id": "x", "object": "chat.completion", "model": "m", "choices": [
        {"index": 0, "finish_reason": "stop",
         "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}})  # fmt: skip


REPLIES = {
    "parts": Fault(body=_body([{"type": "text", "text": "positive"}])),  # a list of parts
    "cut": Fault(body=_body("positive \ud800 x")),  # a lone surrogate: an emoji cut short
    "errorbody": Fault(body=json.dumps({"error": {"message": "upstream overloaded"}})),
    "number": Fault(body=_body(123)),
    "plain": "positive",
}

TASK = """\
task_id: odd
description: replies of odd shapes
initial_prompt: "review ${{row.id}}"
agent: {{type: llm, model: openai/m, base_url: "{url}", api_key_env: ODD_KEY}}
dataset:
  rows: [{{id: parts}}, {{id: cut}}, {{id: errorbody}}, {{id: number}}, {{id: plain}}]
success_criteria:
  - {{type: response_match, expected: positive}}
"""


def test_odd_replies_are_rows_outcomes_and_every_row_is_written(tmp_path: Path) -> None:
    def reply(body: dict[str, Any]) -> str | Fault:
        return REPLIES[body["messages"][-1]["content"].removeprefix("review ")]

    with scripted_server(reply) as server:
        write(tmp_path / "task.yaml", TASK.format(url=server.base_url))
        done = assay("run", "task.yaml", "--max-retries", "0", cwd=tmp_path,
                     env={"ODD_KEY": "k-odd-0123456789"})  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    run_dir = latest(tmp_path)
    rows = {}
    for name in REPLIES:  # every row has its files (a reply that cannot be written lost one)
        rows[name] = json.loads((run_dir / f"default/odd/{name}/00/task.json").read_text())
    status = {name: row["final_status"] for name, row in rows.items()}
    assert status == {"parts": "SUCCESS", "cut": "FAILURE", "errorbody": "ERROR",
                      "number": "ERROR", "plain": "SUCCESS"}  # fmt: skip
    assert (run_dir / "default/odd/cut/00/response.txt").read_text() == "positive \\ud800 x"
    assert "the server answered 200 with an error: upstream overloaded" in (
        rows["errorbody"]["error_message"])  # fmt: skip
    assert "the reply is not text" in rows["number"]["error_message"]
    assert json.loads((run_dir / "run.json").read_text())["tasks_run"] == 5


ANTHROPIC = {
    "malformed": Fault(body='{"id": "x", "content": [ {"type": '),
    "html": Fault(body="<html>gateway error</html>"),
    "errorbody": Fault(body=json.dumps({"error": {"type": "overloaded_error",
                                                  "message": "upstream overloaded"}})),
}  # fmt: skip


def test_an_anthropic_reply_that_is_not_a_message_is_retried_and_named(tmp_path: Path) -> None:
    """They were "internal error in agent llm" with a traceback, and never retried."""

    def reply(body: dict[str, Any]) -> str | Fault:
        return ANTHROPIC[body["messages"][-1]["content"].removeprefix("review ")]

    with scripted_server(reply) as server:
        task = (TASK.replace("openai/m", "anthropic/claude-x")
                .replace("{url}", server.base_url.removesuffix("/v1"))
                .replace("[{{id: parts}}, {{id: cut}}, {{id: errorbody}}, {{id: number}}, "
                         "{{id: plain}}]", "[{{id: malformed}}, {{id: html}}, {{id: errorbody}}]")
                .format())  # fmt: skip
        write(tmp_path / "task.yaml", task)
        done = assay("run", "task.yaml", "--max-retries", "1", cwd=tmp_path,
                     env={"ODD_KEY": "k-odd-0123456789"})  # fmt: skip
        calls = len(server.requests)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert calls == 6  # each row's call was tried twice
    for name, words in [
        ("malformed", "unreadable response"),
        ("html", "unreadable response"),
        ("errorbody", "answered 200 with an error: upstream overloaded"),
    ]:
        row = json.loads((latest(tmp_path) / f"default/odd/{name}/00/task.json").read_text())
        assert row["final_status"] == "ERROR" and words in row["error_message"], row
        assert "internal error" not in row["error_message"]


def _plain(text: str, *, usage: bool = True, finish: str = "stop") -> Fault:
    data: dict[str, Any] = {
        "id": "x",
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {"index": 0, "finish_reason": finish, "message": {"role": "assistant", "content": text}}
        ],
    }
    if usage:
        data["usage"] = {"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}
    return Fault(body=json.dumps(data))


SPEND = """\
task_id: spend
description: what a run spent
initial_prompt: "review ${{row.id}}"
agent: {{type: llm, model: openai/m, base_url: "{url}", api_key_env: ODD_KEY,
        labels: [positive, negative]}}
dataset:
  rows: [{{id: counted}}, {{id: silent}}, {{id: cut}}]
success_criteria:
  - {{type: classification_match, expected_label: positive, allowed_labels: [positive, negative]}}
  - {{type: llm_judge, model: mock/judge.yaml, prompt: "Is ${{response}} fine?"}}
"""


def test_every_billed_call_counts_and_what_is_not_counted_is_said(tmp_path: Path) -> None:
    """A reply without usage counted as $0 with the cost said complete; a reply refused
    after it was billed (cut at max_tokens) lost its usage; judges' tokens were nowhere."""
    replies = {"counted": _plain('{"answer": "positive"}'),
               "silent": _plain('{"answer": "positive"}', usage=False),
               "cut": _plain('{"answer": "posi', finish="length")}  # fmt: skip

    def reply(body: dict[str, Any]) -> str | Fault:
        return replies[body["messages"][-1]["content"].removeprefix("review ")]

    write(tmp_path / "judge.yaml", 'default: \'{"reason": "fine", "verdict": true}\'\n')
    write(tmp_path / "prices.yaml", "openai/m: {input_per_mtok: 2.0, output_per_mtok: 10.0}\n")
    with scripted_server(reply) as server:
        write(tmp_path / "task.yaml", SPEND.format(url=server.base_url))
        assay("run", "task.yaml", "--prices", "prices.yaml", "--max-retries", "0",
              cwd=tmp_path, env={"ODD_KEY": "k-odd-0123456789"})  # fmt: skip
    run_dir = latest(tmp_path)
    cut = json.loads((run_dir / "default/spend/cut/00/task.json").read_text())
    assert cut["final_status"] == "ERROR"
    assert "cut at max_tokens" in cut["error_message"], cut["error_message"]
    assert cut["total_token_usage"]["total_tokens"] == 1500 and cut["cost_usd"] == 0.007
    summary = json.loads((run_dir / "run.json").read_text())
    assert summary["total_token_usage"]["total_tokens"] == 3000  # counted + cut, by hand
    assert summary["total_cost_usd"] == 0.014 and summary["cost_complete"] is False
    judged = [c.get("judge_tokens", 0)
              for row in ("counted", "silent", "cut")
              for key in ("success_criteria_results", "post_failure_criteria_results")
              for c in json.loads((run_dir / f"default/spend/{row}/00/task.json").read_text())
              .get(key) or []]  # fmt: skip
    assert summary["rows_usage_unknown"] == 1 and summary["judge_tokens"] > 0
    assert summary["judge_tokens"] == sum(judged)  # every row's judge calls, summed
    markdown = (run_dir / "run.md").read_text()
    assert "**Usage unknown**: 1 row(s)" in markdown and "**Judges** (apart" in markdown


JUDGED = """\
task_id: judged
description: what the judges spent
initial_prompt: "review ${{row.id}}"
agent: {{type: llm, model: mock/agent.yaml}}
dataset:
  rows: [{{id: a}}, {{id: b}}]
success_criteria:
  - {{type: llm_judge, model: openai/priced, base_url: "{url}", api_key_env: ODD_KEY,
     prompt: "Is ${{response}} fine?"}}
  - {{type: llm_judge, model: openai/unpriced, base_url: "{url}", api_key_env: ODD_KEY,
     prompt: "Is ${{response}} right?"}}
"""


def test_the_judges_calls_are_priced_apart_and_an_unpriced_judge_is_said(tmp_path: Path) -> None:
    """Judges' tokens were counted but their cost was not priced at all: each verdict now
    has its cost from the price table, run.json sums them apart from the agents' cost, and
    verdicts of a judge model without a price are counted and said."""
    write(tmp_path / "agent.yaml", "default: positive\n")
    write(tmp_path / "prices.yaml", "openai/priced: {input_per_mtok: 3.0, output_per_mtok: 15.0}\n")
    verdict = _plain('{"reason": "fine", "score": 1}')  # 1,000 in and 500 out a call
    with scripted_server(lambda body: verdict) as server:
        write(tmp_path / "task.yaml", JUDGED.format(url=server.base_url))
        assay("run", "task.yaml", "--prices", "prices.yaml", "--max-retries", "0",
              cwd=tmp_path, env={"ODD_KEY": "k-odd-0123456789"})  # fmt: skip
    run_dir = latest(tmp_path)
    row = json.loads((run_dir / "default/judged/a/00/task.json").read_text())
    priced, unpriced = row["success_criteria_results"]
    assert priced["judge_tokens"] == unpriced["judge_tokens"] == 1500
    assert priced["judge_cost_usd"] == (1000 * 3.0 + 500 * 15.0) / 1e6  # 0.0105, by hand
    assert unpriced["judge_cost_usd"] is None
    summary = json.loads((run_dir / "run.json").read_text())
    assert summary["judge_tokens"] == 4 * 1500
    assert summary["judge_cost_usd"] == 0.021 and summary["judge_results_unpriced"] == 2
    assert summary["total_cost_usd"] == 0.0  # the agent's (mock, free): judges apart
    markdown = (run_dir / "run.md").read_text()
    assert (
        "**Judges** (apart from the above): 6,000 tokens · **Cost**: $0.0210 (2 verdict(s) "
        "of a judge model without a price are not in it)"
    ) in markdown, markdown


QA_JUDGED = """\
task_id: qa-judged
description: what the QA judge spent
agent: {{type: llm, model: mock/agent.yaml}}
dataset: {{paths: [qa.jsonl]}}
qa:
  judge: {{model: openai/priced, base_url: "{url}", api_key_env: ODD_KEY, check: false}}
success_criteria:
  - type: qa
"""


def test_the_qa_judges_calls_are_counted_and_priced(tmp_path: Path) -> None:
    """The QA judge's calls on open questions were counted nowhere (neither tokens nor
    cost); an answer the rules decide costs nothing."""
    write(tmp_path / "agent.yaml", "default: in the early seventies\n")
    write(tmp_path / "prices.yaml", "openai/priced: {input_per_mtok: 3.0, output_per_mtok: 15.0}\n")
    rows = [
        {
            "sample_id": "moon",
            "story": "",
            "question": "When did people last walk there?",
            "answer": {"correct_answers": ["December 1972"], "wrong_answers": []},
            "meta": {},
        },
        {
            "sample_id": "rule",
            "story": "",
            "question": "When?",
            "answer": {"correct_answers": ["in the early seventies"], "wrong_answers": []},
            "meta": {},
        },
    ]
    write(tmp_path / "qa.jsonl", "".join(json.dumps(row) + "\n" for row in rows))
    verdict = _plain('{"is_correct": true, "reason": "1972 is early seventies"}')
    with scripted_server(lambda body: verdict) as server:
        write(tmp_path / "task.yaml", QA_JUDGED.format(url=server.base_url))
        assay("run", "task.yaml", "--prices", "prices.yaml", "--max-retries", "0",
              cwd=tmp_path, env={"ODD_KEY": "k-odd-0123456789"})  # fmt: skip
    run_dir = latest(tmp_path)
    judged, ruled = (json.loads((run_dir / f"default/qa-judged/{row}/00/task.json").read_text())
                     ["success_criteria_results"][0] for row in ("moon", "rule"))  # fmt: skip
    assert judged["sample_result"]["graded_by"] == "judge" and judged["judge_tokens"] == 1500
    assert judged["judge_cost_usd"] == (1000 * 3.0 + 500 * 15.0) / 1e6
    assert ruled["sample_result"]["graded_by"] == "rule"
    assert ruled["judge_tokens"] == 0 and ruled["judge_cost_usd"] is None
    summary = json.loads((run_dir / "run.json").read_text())
    assert summary["judge_tokens"] == 1500 and summary["judge_cost_usd"] == 0.0105
    assert summary["judge_results_unpriced"] == 0


def test_a_dripping_reply_is_cut_at_the_timeout_and_a_404_names_the_url(tmp_path: Path) -> None:
    """``--timeout`` bounded each socket read: a body sent a byte at a time ran 11 s under
    ``--timeout 2``. A 404 did not say which URL was called (base_url without /v1)."""
    replies = {"parts": Fault(text="positive", drip=0.05), "cut": Fault(status=404)}

    def reply(body: dict[str, Any]) -> str | Fault:
        return replies.get(body["messages"][-1]["content"].removeprefix("review "), "positive")

    with scripted_server(reply) as server:
        write(tmp_path / "task.yaml", TASK.format(url=server.base_url))
        assay("run", "task.yaml", "--timeout", "1", "--max-retries", "0", cwd=tmp_path,
              env={"ODD_KEY": "k-odd-0123456789"})  # fmt: skip
    run_dir = latest(tmp_path)
    slow = json.loads((run_dir / "default/odd/parts/00/task.json").read_text())
    assert slow["final_status"] == "ERROR" and "after 1 s" in slow["error_message"]
    assert slow["agent"]["duration_seconds"] < 5
    missing = json.loads((run_dir / "default/odd/cut/00/task.json").read_text())
    assert f"POST {server.base_url}/chat/completions: check base_url" in (
        missing["error_message"])  # fmt: skip


def _message(content: list[dict[str, Any]], stop: str = "end_turn") -> str:
    return json.dumps({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
                       "content": content, "stop_reason": stop, "stop_sequence": None,
                       "usage": {"input_tokens": 1000, "output_tokens": 500}})  # fmt: skip


def test_anthropic_replies_keep_their_usage_and_the_timeout_bounds_them(tmp_path: Path) -> None:
    """As the OpenAI provider's: a label cut at max_tokens is said and keeps its usage; a body
    dripped a byte at a time ends at --timeout; a text block without text is one row's error."""
    tool = [{"type": "tool_use", "id": "t1", "name": "answer", "input": {"answer": "posi"}}]
    replies = {"cut": Fault(body=_message(tool, stop="max_tokens")),
               "parts": Fault(body=_message([{"type": "text", "text": 5}])),
               "plain": Fault(body=_message(tool), drip=0.05)}  # fmt: skip

    def reply(body: dict[str, Any]) -> str | Fault:
        return replies.get(body["messages"][-1]["content"].removeprefix("review "), "positive")

    write(
        tmp_path / "prices.yaml", "anthropic/claude-x: {input_per_mtok: 2, output_per_mtok: 10}\n"
    )
    with scripted_server(reply) as server:
        task = (TASK.replace("openai/m", "anthropic/claude-x")
                .replace('"{url}", api_key_env: ODD_KEY}}',
                         '"{url}", api_key_env: ODD_KEY, labels: [positive, negative]}}')
                .replace("{url}", server.base_url.removesuffix("/v1"))
                .replace("[{{id: parts}}, {{id: cut}}, {{id: errorbody}}, {{id: number}}, "
                         "{{id: plain}}]", "[{{id: cut}}, {{id: parts}}, {{id: plain}}]")
                .format())  # fmt: skip
        write(tmp_path / "task.yaml", task)
        assay("run", "task.yaml", "--timeout", "1", "--max-retries", "0", "--prices",
              "prices.yaml", cwd=tmp_path, env={"ODD_KEY": "k-odd-0123456789"})  # fmt: skip
    rows = {name: json.loads((latest(tmp_path) / f"default/odd/{name}/00/task.json").read_text())
            for name in replies}  # fmt: skip
    assert "cut at max_tokens" in rows["cut"]["error_message"]
    assert rows["cut"]["total_token_usage"]["total_tokens"] == 1500
    assert rows["cut"]["cost_usd"] == 0.007
    assert "holds no text" in rows["parts"]["error_message"]
    assert "internal error" not in rows["parts"]["error_message"]
    assert "timed out after 1 s" in rows["plain"]["error_message"]
    assert rows["plain"]["agent"]["duration_seconds"] < 5
