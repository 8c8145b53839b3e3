"""Trace- and session-backed rows: copied into the store, read back, final output found."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from assay.errors import StoreError
from assay.store import Schema, SourceRow, Store, final_output, read_rows
from assay.store.traces import session_id
from tests.store.conftest import FIXTURES

TRACES = FIXTURES / "traces"
ANSWER_ID = "5b8efff798038103d269b633813fc60c"
CHILD_ID = "0af7651916cd43dd8448eb211c80319c"
GRADED = Schema({"input": "string", "expected": "string", "run": "trace"})


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((TRACES / name).read_text(encoding="utf-8"))
    return data


def error_of(store: Store, rows: list[Any], **kwargs: Any) -> StoreError:
    with pytest.raises(StoreError) as caught:
        store.add("g", rows, **kwargs)
    return caught.value


# --- final_output -----------------------------------------------------------------------


def test_final_output_prefers_the_root_span() -> None:
    assert final_output(load("answer.otlp.json")) == (
        "Refunds arrive within 5–7 business days.\r\nYou will get an e-mail."
    )


def test_final_output_falls_back_to_the_latest_ending_span_with_an_output() -> None:
    assert final_output(load("child_only.otlp.json")) == "Paris"


def test_final_output_of_a_session_is_its_latest_root() -> None:
    assert final_output(load("session.otlp.json")) == "Your order ships tomorrow."


def test_final_output_attribute_order_and_absence() -> None:
    trace = load("answer.otlp.json")
    root = trace["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    root["attributes"] = [
        {"key": "assay.response", "value": {"stringValue": "from assay"}},
        {"key": "gen_ai.completion", "value": {"stringValue": "from openllmetry"}},
    ]
    assert final_output(trace) == "from openllmetry"
    root["attributes"] = [{"key": "assay.response", "value": {"stringValue": ""}}]
    assert final_output(trace) == ""
    root["attributes"] = []
    assert final_output(trace) == "draft: 5-7 days"
    trace["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["attributes"] = []
    assert final_output(trace) is None
    assert final_output({"resourceSpans": []}) is None


# --- trace-backed rows -----------------------------------------------------------------


def test_trace_file_is_copied_and_read_back(store: Store, tmp_path: Path) -> None:
    shutil.copytree(TRACES, tmp_path / "traces")
    data = tmp_path / "rows.jsonl"
    data.write_text(
        json.dumps({"id": "q1", "input": "refund?", "expected": "5–7 days",
                    "run": "traces/answer.otlp.json"}) + "\n"
        + json.dumps({"id": "q2", "input": "capital?", "expected": "Paris",
                      "run": load("child_only.otlp.json")}) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    store.create_dataset("g", GRADED)
    store.add("g", read_rows(data, schema=GRADED, id_field="id"))
    (tmp_path / "traces" / "answer.otlp.json").unlink()  # the store holds its own copy
    examples = list(store.iter_examples("g", 1))
    assert [e.data["run"] for e in examples] == [ANSWER_ID, CHILD_ID]
    assert store.get_trace(ANSWER_ID) == load("answer.otlp.json")
    outputs = [final_output(store.get_trace(e.data["run"])) for e in examples]
    assert outputs == [
        "Refunds arrive within 5–7 business days.\r\nYou will get an e-mail.",
        "Paris",
    ]
    inlined = list(store.iter_examples("g", 1, inline_traces=True))
    assert inlined[1].data == {"input": "capital?", "expected": "Paris",
                               "run": load("child_only.otlp.json")}  # fmt: skip


def test_stored_trace_ids_are_accepted_and_traces_never_change(store: Store) -> None:
    store.create_dataset("g", GRADED)
    store.add("g", [{"id": "a", "input": "i", "expected": "e", "run": load("answer.otlp.json")}])
    again = store.add("g", [{"id": "b", "input": "i", "expected": "e", "run": ANSWER_ID}])
    assert [e.data["run"] for e in store.iter_examples("g", again.number)] == [ANSWER_ID] * 2
    same = store.add("g", [{"id": "c", "input": "i", "expected": "e",
                            "run": copy.deepcopy(load("answer.otlp.json"))}])  # fmt: skip
    assert same.item_count == 3
    changed = load("answer.otlp.json")
    changed["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["name"] = "edited"
    error = error_of(store, [{"id": "d", "input": "i", "expected": "e", "run": changed}])
    assert error.message == (
        f"row 1: example 'd', field 'run': trace {ANSWER_ID} is already in the store with "
        "different content; a stored trace never changes"
    )
    with pytest.raises(StoreError, match="no trace or session with id 'nope' in the store"):
        store.get_trace("nope")


def test_trace_value_errors(store: Store, tmp_path: Path) -> None:
    store.create_dataset("g", GRADED)
    base = {"id": "x", "input": "i", "expected": "e"}
    missing = error_of(store, [{**base, "run": "missing.json"}], base_dir=tmp_path)
    assert missing.message == (
        "row 1: example 'x', field 'run': 'missing.json' is neither the id of a stored trace "
        f"nor a file (looked for {tmp_path / 'missing.json'})"
    )
    two = error_of(store, [{**base, "run": load("session.otlp.json")}])
    assert two.message == (
        "row 1: example 'x', field 'run': the trace holds spans of 2 traces "
        "(4bf92f3577b34da6a3ce929d0e0e4736, 9c1e2a7b3d4f5e6a7b8c9d0e1f2a3b4c); a trace field "
        "holds one trace (use a session field for several)"
    )
    not_otlp = error_of(store, [{**base, "run": {"spans": []}}])
    assert not_otlp.message.endswith(
        "a trace must be an OTLP JSON object with a 'resourceSpans' list"
    )
    empty = error_of(store, [{**base, "run": {"resourceSpans": []}}])
    assert empty.message.endswith("field 'run': the trace holds no spans")
    number = error_of(store, [{**base, "run": 7}])
    assert number.message.endswith(
        "expected an OTLP JSON object, a path to an OTLP JSON file or a stored trace id, "
        "got a number (7)"
    )
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    bad = error_of(store, [{**base, "run": "bad.json"}], base_dir=tmp_path)
    assert f"the trace file {tmp_path / 'bad.json'} is not valid JSON" in bad.message
    assert store.dataset("g").current_version == 0


# --- session-backed rows -----------------------------------------------------------------


def test_session_field_holds_several_traces_under_a_content_hash(store: Store) -> None:
    store.create_dataset("s", Schema({"session": "session", "rating": "number"}))
    rows = [
        SourceRow({"id": "chat-17", "session": "session.otlp.json", "rating": 4}, "r.jsonl", 1,
                  TRACES),
        SourceRow({"id": "pair", "session": ["answer.otlp.json", load("child_only.otlp.json")],
                   "rating": 2.5}, "r.jsonl", 2, TRACES),
    ]  # fmt: skip
    store.add("s", rows)
    first, second = list(store.iter_examples("s", 1))
    assert first.data["session"] == session_id(load("session.otlp.json"))
    assert len(first.data["session"]) == 64
    assert store.get_trace(first.data["session"]) == load("session.otlp.json")
    assert final_output(store.get_trace(first.data["session"])) == "Your order ships tomorrow."
    merged = store.get_trace(second.data["session"])
    assert len(merged["resourceSpans"]) == 2
    assert final_output(merged) == final_output(load("answer.otlp.json"))  # the root with one
    assert store.add("s", [{"id": "again", "session": first.data["session"], "rating": 1}])
    with pytest.raises(StoreError, match="stored trace id, or a list of objects/paths, got"):
        store.add("s", [{"id": "bad", "session": [], "rating": 1}])
