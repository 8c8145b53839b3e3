"""A provider that declines to answer (OpenAI's ``content_filter`` finish reason or a
message's ``refusal`` field, Anthropic's ``refusal`` stop reason, Gemini's ``SAFETY``) gives a
refusal, which counts in no average: ``REFUSED``, never a wrong answer (it was graded
``FAILURE`` on an empty or ``(none)`` answer). Against a real HTTP server, and again on
``assay evaluate``, which reads it back from the row's transcript."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.providers.wire import chat, gemini
from tests.openai_server import Fault, scripted_server

ROWS = [{"id": "filtered", "e": "yes"}, {"id": "refusal_field", "e": "yes"},
        {"id": "right", "e": "yes"}, {"id": "wrong", "e": "no"}]  # fmt: skip


def _body(message: dict[str, Any], finish: str) -> str:
    return json.dumps({"id": "c", "object": "chat.completion", "model": "m1",
                       "choices": [{"index": 0, "message": {"role": "assistant", **message},
                                    "finish_reason": finish}],
                       "usage": {"prompt_tokens": 3, "completion_tokens": 1}})  # fmt: skip


def reply(body: dict[str, Any]) -> str | Fault:
    said = body["messages"][-1]["content"]
    if said == "filtered":
        return Fault(body=_body({"content": None}, "content_filter"))
    if said == "refusal_field":
        return Fault(body=_body({"content": None, "refusal": "I can't help with that."}, "stop"))
    return "yes"


@pytest.mark.parametrize("criterion", [
    {"type": "classification_match", "expected_label": "${row.e}", "allowed_labels": ["yes", "no"]},
    {"type": "response_match", "expected": "${row.e}"},
])  # fmt: skip
def test_a_provider_refusal_is_refused_not_wrong(
    tmp_path: Path, criterion: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000000000000000")
    with scripted_server(reply) as server:
        task = {"task_id": "net", "description": "d", "initial_prompt": "${row.id}",
                "agent": {"type": "llm", "model": "openai/m1", "base_url": server.base_url},
                "dataset": {"rows": ROWS}, "success_criteria": [criterion]}  # fmt: skip
        result = assay.run([task], run_dir=tmp_path / "runs")
    statuses = {r.row_id: r.final_status.value for r in result.suites[0].rows()}
    assert statuses == {"filtered": "REFUSED", "refusal_field": "REFUSED", "right": "SUCCESS",
                        "wrong": "FAILURE"}  # fmt: skip
    metrics = result.suites[0].metrics
    assert metrics.get("accuracy", metrics.get("mean")) == 0.5  # 1 of the 2 answers graded
    again = assay.evaluate(result.run_dir)  # read back from each row's transcript
    assert {r.row_id: r.final_status.value for r in again.suites[0].rows()} == statuses


def test_each_wire_names_its_refusal() -> None:
    refused = chat.response_from_wire(json.loads(_body({"content": None, "refusal": "No."},
                                                       "stop")))  # fmt: skip
    assert (refused.text, refused.finish_reason, refused.refused) == ("No.", "refusal", True)
    filtered = chat.response_from_wire(json.loads(_body({"content": None}, "content_filter")))
    assert (filtered.text, filtered.refused) == ("", True)
    plain = chat.response_from_wire(json.loads(_body({"content": "yes"}, "stop")))
    assert (
        not plain.refused
        and not chat.response_from_wire(json.loads(_body({"content": "cut"}, "length"))).refused
    )
    blocked = gemini.response_from_wire({"candidates": [{"finishReason": "SAFETY"}]})
    assert (blocked.text, blocked.finish_reason, blocked.refused) == ("", "SAFETY", True)
