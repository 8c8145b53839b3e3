"""Production cases into datasets: a run's rows (``assay dataset add-run``) and a file of OTLP
traces (``add-traces``) become examples with their traces copied into the store, graded
again without an agent; session-backed rows are graded over the whole session; a run that
would grade nothing is refused. Both backends."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.errors import StoreError, TaskFileError, UsageError
from assay.store import open_store
from assay.store.traces import final_output
from tests.cli.test_run import assay as cli
from tests.helpers import write

SENTIMENT = """\
task_id: sentiment
description: an llm agent labels reviews
agent: {type: llm, model: mock/answers.yaml, labels: [positive, negative]}
dataset:
  rows:
    - {id: a, text: "good film", label: positive}
    - {id: b, text: "bad film", label: negative}
    - {id: c, text: "dull film", label: positive}
initial_prompt: "Review: ${row.text}"
success_criteria:
  - type: classification_match
    expected_label: "${row.label}"
    allowed_labels: [positive, negative]
"""
ANSWERS = "replies:\n  - {match: good, reply: positive}\ndefault: negative\n"
REGRADE = """\
task_id: regression
description: captured rows graded again without an agent
agent: {type: none}
dataset: {store: captured}
success_criteria:
  - type: classification_match
    expected_label: "${row.label}"
    allowed_labels: [positive, negative]
"""


def _run(workdir: Path) -> Path:
    write(workdir / "answers.yaml", ANSWERS)
    result = assay.run(write(workdir / "task.yaml", SENTIMENT))
    return result.run_dir


def test_a_runs_failures_become_trace_backed_rows_graded_again(
    workdir: Path, store_url: str
) -> None:
    run_dir = _run(workdir)
    added = assay.store.add_run_to_dataset("captured", run_dir.parent / "latest",
                                           only_failures=True, store=store_url)  # fmt: skip
    assert added.created and added.added == ["c"] and added.version is not None
    assert added.mapping == {"text": "row.text", "label": "row.label", "input": "prompt",
                             "actual_output": "response", "trace": "trace"}  # fmt: skip
    again = assay.store.add_run_to_dataset("captured", run_dir, only_failures=True, store=store_url)
    assert again.version is None and again.skipped_existing == ["c"]
    with open_store(store_url) as store:
        # the version names the run itself, not the runs/latest link that moves on
        assert store.versions("captured")[0].origin == str(run_dir.resolve())
        info = store.dataset("captured")
        assert dict(info.schema.fields) == {"text": "string", "label": "string",
                                            "input": "string", "actual_output": "string",
                                            "trace": "trace"}  # fmt: skip
        (example,) = list(store.iter_examples("captured", 1))
        assert example.data["actual_output"] == "negative"
        assert example.data["input"] == "Review: dull film"
        trace = store.get_trace(example.data["trace"])
    assert final_output(trace) == "negative"  # the invoke_agent span carries the answer
    result = assay.run(write(workdir / "regrade.yaml", REGRADE), store=store_url)
    (row,) = list(result.rows())
    assert row.final_status.value == "FAILURE"  # graded on the stored answer, not "(none)"
    graded = row.success_criteria_results[0]
    assert graded.details == "observed='negative', expected='positive'"
    assert row.transcript is not None and row.transcript.model_calls == 1


def test_mapping_filters_and_their_messages(workdir: Path, store_url: str) -> None:
    run_dir = _run(workdir)
    with open_store(store_url) as store:
        store.create_dataset("slim", assay.store.Schema({"review": "string", "verdict": "string",
                                                          "score": "number"}))  # fmt: skip
    with pytest.raises(UsageError) as caught:
        assay.store.add_run_to_dataset("slim", run_dir, store=store_url)
    assert caught.value.message == "field 'review' of dataset 'slim' has no source in these cases"
    assert caught.value.hint is not None
    assert caught.value.hint.startswith("map it: --map review=SOURCE (sources: error, model, ")
    assert "row.id, row.label, row.text, row_id, score, status" in caught.value.hint
    assert re.search(r"; and \d+ span attribute\(s\): attr\.assay\.cost_usd, ", caught.value.hint)
    added = assay.store.add_run_to_dataset(
        "slim", run_dir, store=store_url, suite="sentiment",
        mapping=["review=row.text", "verdict=status", "score=attr.gen_ai.usage.output_tokens"],
    )  # fmt: skip
    assert added.added == ["a", "b", "c"]
    with open_store(store_url) as store:
        rows = {e.example_id: e.data for e in store.iter_examples("slim", 1)}
    assert rows["c"] == {"review": "dull film", "verdict": "FAILURE", "score": 1}  # one word
    for kwargs, message in [
        ({"suite": "nope"}, "the run has no suite 'nope' (suites: sentiment)"),
        ({"variant": "x"}, "the run has no variant 'x' (variants: default)"),
        ({"mapping": ["review"]}, "--map 'review' must be FIELD=SOURCE, e.g. "
                                  "actual_output=response"),
        ({"mapping": ["nope=response"]}, "dataset 'slim' has no field 'nope' (fields: review, "
                                         "verdict, score)"),
    ]:  # fmt: skip
        with pytest.raises(UsageError) as caught:
            assay.store.add_run_to_dataset("slim", run_dir, store=store_url, **kwargs)  # type: ignore[arg-type]
        assert caught.value.message == message
    with open_store(store_url) as store:
        store.create_dataset("slim2", store.dataset("slim").schema)
    with pytest.raises(StoreError) as caught_store:
        assay.store.add_run_to_dataset(
            "slim2",
            run_dir,
            store=store_url,
            mapping=["review=row.text", "verdict=status", "score=row.text"],
        )
    assert "field 'score' is a number, but its source gives 'good film'" in (
        caught_store.value.message
    )
    with pytest.raises(UsageError, match="dataset 'fresh' has no field 'nope'"):
        assay.store.add_run_to_dataset("fresh", run_dir, store=store_url, suite="sentiment",
                                 mapping=["nope=status"])  # fmt: skip
    with open_store(store_url) as store:  # a refused capture leaves no empty dataset behind
        assert "fresh" not in [d.name for d in store.datasets()]


def _span(trace_id: str, span_id: str, start: int, attributes: dict[str, str],
          parent: str | None = None) -> dict[str, Any]:  # fmt: skip
    span: dict[str, Any] = {
        "traceId": trace_id, "spanId": span_id, "name": "step",
        "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 5),
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
    }  # fmt: skip
    if parent:
        span["parentSpanId"] = parent
    return span


def _request(*spans: dict[str, Any]) -> dict[str, Any]:
    scope = {"scope": {"name": "x"}, "spans": list(spans)}
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [scope]}]}


def _trace_file(path: Path) -> Path:
    lines = [
        _request(_span("a" * 32, "1" * 16, 100, {"input.value": "hi", "output.value": "hello",
                                                  "session.id": "chat 1",
                                                  "gen_ai.request.model": "gpt-x"}),
                 _span("a" * 32, "2" * 16, 101, {"gen_ai.operation.name": "chat"}, "1" * 16)),
        _request(_span("b" * 32, "3" * 16, 200, {"input.value": "and Spain?",
                                                  "output.value": "Madrid",
                                                  "session.id": "chat 1"})),
        _request(_span("c" * 32, "4" * 16, 50, {"input.value": "2+2?", "output.value": "4",
                                                 "session.id": "chat-2"})),
    ]  # fmt: skip
    return write(path, "".join(json.dumps(line) + "\n" for line in lines))


def test_otlp_traces_from_elsewhere_become_examples(workdir: Path, store_url: str) -> None:
    path = _trace_file(workdir / "traces.jsonl")
    added = assay.store.add_traces_to_dataset("prod", path, store=store_url,
                                        mapping=["input=input"])  # fmt: skip
    assert added.created and added.added == ["c" * 32, "a" * 32, "b" * 32]  # by start time
    with open_store(store_url) as store:
        rows = {e.example_id: e.data for e in store.iter_examples("prod", 1)}
        assert rows["a" * 32]["actual_output"] == "hello" and rows["a" * 32]["input"] == "hi"
        assert store.get_trace(rows["a" * 32]["trace"])["resourceSpans"]
        store.create_dataset("models", assay.store.Schema({"model": "string",
                                                            "trace": "trace"}))  # fmt: skip
    mapped = assay.store.add_traces_to_dataset("models", path, store=store_url,
                                         mapping=["model=attr.gen_ai.request.model"])  # fmt: skip
    assert mapped.mapping == {"model": "attr.gen_ai.request.model", "trace": "trace"}
    with open_store(store_url) as store:
        models = {e.example_id: e.data["model"] for e in store.iter_examples("models", 1)}
    assert models["a" * 32] == "gpt-x" and models["b" * 32] == ""


def test_a_secret_in_a_captured_trace_is_stored_redacted(
    workdir: Path, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-captured-secret-value-3141"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    path = _trace_file(workdir / "traces.jsonl")
    path.write_text(path.read_text().replace('"hello"', f'"hello {secret}"'))
    assay.store.add_traces_to_dataset("prod", path, store=store_url)
    with open_store(store_url) as store:
        row = {e.example_id: e.data for e in store.iter_examples("prod", 1)}["a" * 32]
        assert row["actual_output"] == "hello [redacted:OPENAI_API_KEY]"
        trace = json.dumps(store.get_trace(row["trace"]))
    assert secret not in trace and "hello [redacted:OPENAI_API_KEY]" in trace


def test_sessions_are_graded_over_every_trace_in_them(workdir: Path, store_url: str) -> None:
    path = _trace_file(workdir / "traces.jsonl")
    added = assay.store.add_traces_to_dataset(
        "chats", path, session_by="session.id", store=store_url
    )
    assert added.added[0] == "chat-2" and added.added[1].startswith("chat_1-")  # start order
    task = write(
        workdir / "chats.yaml",
        """\
task_id: chats
description: every turn of a session is graded
agent: {type: none}
dataset: {store: chats}
success_criteria:
  - {type: response_match, expected: "Output: hello", match: contains}
  - {type: response_match, expected: "Output: Madrid", match: contains}
""",
    )
    result = assay.run(task, store=store_url)
    rows = {r.row_id: r for r in result.rows()}
    first = rows[added.added[1]]
    assert [c.score for c in first.success_criteria_results] == [1.0, 1.0]
    response = (result.run_dir / "default/chats" / added.added[1] / "00/response.txt").read_text()
    assert response == ("Turn 1\nInput: hi\nOutput: hello\n\n"
                        "Turn 2\nInput: and Spain?\nOutput: Madrid")  # fmt: skip
    assert rows["chat-2"].success_criteria_results[0].score == 0.0


def test_bad_trace_files_are_refused_with_their_line(workdir: Path, store_url: str) -> None:
    bad = write(workdir / "bad.jsonl", json.dumps(_request(_span("a" * 32, "1" * 16, 1, {})))
                + "\n{not json\n")  # fmt: skip
    with pytest.raises(StoreError) as caught:
        assay.store.add_traces_to_dataset("prod", bad, store=store_url)
    assert (caught.value.line, caught.value.message) == (
        2,
        "not JSON: Expecting property name enclosed in double quotes",
    )
    none = write(workdir / "none.jsonl", json.dumps({"resourceSpans": []}) + "\n")
    with pytest.raises(StoreError) as caught:
        assay.store.add_traces_to_dataset("prod", none, store=store_url)
    assert caught.value.message == "the trace holds no spans"
    path = _trace_file(workdir / "traces.jsonl")
    with pytest.raises(StoreError) as caught:
        assay.store.add_traces_to_dataset("prod", path, session_by="conversation", store=store_url)
    assert caught.value.message == (
        f"3 trace(s) in {path} have no 'conversation' attribute (first: {'c' * 32}), so they "
        "belong to no session"
    )


NO_AGENT = """\
task_id: nothing
description: nothing answers
agent: {type: none}
dataset:
  rows: [{id: a, label: positive}]
success_criteria:
  - {type: classification_match, expected_label: "${row.label}", allowed_labels: [positive]}
"""


def test_rows_with_neither_an_agent_nor_a_trace_are_refused(workdir: Path) -> None:
    with pytest.raises(TaskFileError) as caught:
        assay.plan(write(workdir / "t.yaml", NO_AGENT))
    assert caught.value.message == (
        "agent: none runs nothing, and the rows of this dataset have no trace or session to "
        "grade, so criteria that grade the response (classification_match) would grade empty "
        "responses"
    )
    assert (caught.value.field, caught.value.line) == ("agent.type", 3)
    assert caught.value.hint is not None and "add-run" in caught.value.hint
    done = cli("run", "t.yaml", cwd=workdir)
    assert done.returncode == 2 and "would grade empty responses" in done.stderr
    sandbox_only = NO_AGENT.replace("allowed_labels: [positive]}",
                                    "allowed_labels: [positive], path: out.txt}")  # fmt: skip
    assay.plan(write(workdir / "s.yaml", sandbox_only))  # a file in the sandbox: allowed


def test_add_run_and_add_traces_on_the_command_line(workdir: Path, store_url: str) -> None:
    run_dir = _run(workdir)
    done = cli("dataset", "add-run", "captured", str(run_dir), "--only-failures",
               "--store", store_url, cwd=workdir)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "created dataset captured"
    assert done.stdout.splitlines()[-1].startswith("added 1 row-task(s): captured@1 · 1 example")
    again = cli("dataset", "add-run", "captured", str(run_dir), "--only-failures",
                "--store", store_url, cwd=workdir)  # fmt: skip
    assert "1 row-task(s) already in captured, skipped: c" in again.stdout
    assert again.stdout.splitlines()[-1] == "no new row-tasks: nothing added to captured"
    traces = _trace_file(workdir / "t.jsonl")
    done = cli("dataset", "add-traces", "prod", str(traces), "--store", store_url, cwd=workdir)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith("added 3 trace(s): prod@1")
    missing = cli("dataset", "add-run", "x", "nowhere", "--store", store_url, cwd=workdir)
    assert missing.returncode == 2 and "run directory not found: nowhere" in missing.stderr


def test_a_later_run_that_answers_differently_is_new_evidence(
    workdir: Path, store_url: str
) -> None:
    """Issue 28 item 10: a row whose id is in the dataset with other content (a later run's
    other answer and trace) is added under a derived id and said, not dropped as
    "already in"; the same evidence twice is added once."""
    first = _run(workdir)
    assay.store.add_run_to_dataset("captured", first, only_failures=True, store=store_url)
    write(workdir / "answers.yaml", "replies:\n  - {match: good, reply: positive}\n"
                                    "  - {match: bad, reply: positive}\n"
                                    "default: negative\n")  # fmt: skip
    second = assay.run(workdir / "task.yaml").run_dir  # b fails now; c again, with a new trace
    added = assay.store.add_run_to_dataset("captured", second, only_failures=True, store=store_url)
    assert list(added.renamed) == ["c"] and re.fullmatch(r"c~[0-9a-f]{8}", added.renamed["c"])
    assert sorted(added.added) == sorted(["b", added.renamed["c"]])
    assert added.skipped_existing == [] and added.version is not None
    again = assay.store.add_run_to_dataset("captured", second, only_failures=True, store=store_url)
    assert again.version is None and sorted(again.skipped_existing) == ["b", "c"]
    with open_store(store_url) as store:
        answers = {e.example_id: e.data["actual_output"] for e in store.iter_examples("captured")}
    assert answers == {"c": "negative", "b": "positive", added.renamed["c"]: "negative"}
    shown = cli("dataset", "add-run", "other", str(first), "--only-failures",
                "--store", store_url, cwd=workdir)  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    shown = cli("dataset", "add-run", "other", str(second), "--only-failures",
                "--store", store_url, cwd=workdir)  # fmt: skip
    assert (
        "1 row-task(s) whose id is in other with other content, added as new examples: c → c~"
        in (shown.stdout)
    )
    assert shown.stdout.splitlines()[-1].startswith("added 2 row-task(s): other@2")


def test_a_plain_add_still_refuses_an_id_with_other_content(store_url: str) -> None:
    from assay.store.schema import Schema

    with open_store(store_url) as store:
        store.create_dataset("d", Schema(fields={"text": "string"}))
        store.add("d", [{"id": "a", "text": "one"}, {"id": "b", "text": "two"}])
        with pytest.raises(StoreError, match="already a member of dataset 'd' with other content"):
            store.add("d", [{"id": "a", "text": "changed"}])
        made = store.add("d", [{"id": "a", "text": "changed"}, {"id": "b", "text": "two"},
                               {"id": "c", "text": "new"}], on_conflict="new_id")  # fmt: skip
        assert made.added == 2 and made.unchanged == 1 and list(made.renamed) == ["a"]
        same = store.add("d", [{"id": "a", "text": "changed"}], on_conflict="new_id")
        assert not same.created and same.unchanged == 1 and same.renamed == {}
        assert {e.example_id: e.data["text"] for e in store.iter_examples("d")} == {
            "a": "one", "b": "two", "c": "new", made.renamed["a"]: "changed"}  # fmt: skip


def test_a_captured_response_keeps_its_line_endings(workdir: Path, store_url: str) -> None:
    """The stored example is the answer as graded: CRLF and CR kept (MBPP's code has CRLF)."""
    write(
        workdir / "cr.yaml",
        """\
task_id: cr
description: a response with CRLF and CR
agent: {type: command, command: "printf 'a\\\\r\\\\nb\\\\rc'"}
dataset: {rows: [{id: r1, expected: b}]}
initial_prompt: "go ${row.id}"
success_criteria: [{type: response_match, expected: "${row.expected}", match: contains}]
""",
    )
    run = assay.run("cr.yaml")
    assert (run.run_dir / "default/cr/r1/00/response.txt").read_bytes() == b"a\r\nb\rc"
    assay.store.add_run_to_dataset("caps", run.run_dir, store=store_url)
    with open_store(store_url) as store:
        (example,) = list(store.iter_examples("caps", 1))
    assert example.data["actual_output"] == "a\r\nb\rc"
