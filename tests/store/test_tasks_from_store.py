"""Tasks that read a store dataset: pinned versions, the latest resolved once, trace-backed rows
graded without an agent, and what the reports record. Both backends."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

from assay.store import Schema, open_store
from tests.cli.test_run import assay, latest
from tests.helpers import selected_rows, write

TASK = """\
task_id: from-store
description: sentiment rows read from the store
initial_prompt: "${{row.text}}"
agent:
  type: command
  command: 'case "$ASSAY_PROMPT" in *good*) echo positive;; *) echo negative;; esac'
dataset:
  store: reviews
{version}
success_criteria:
  - type: classification_match
    expected_label: "${{row.label}}"
    allowed_labels: [positive, negative]
"""

ROWS = [
    {"id": "a", "text": "good film", "label": "positive"},
    {"id": "b", "text": "bad film", "label": "negative"},
    {"id": "c", "text": "good fun", "label": "positive"},
    {"id": "d", "text": "dull", "label": "positive"},
]


def make_store(url: str) -> None:
    with open_store(url) as store:
        store.create_dataset("reviews", Schema({"text": "string", "label": "string"}))
        store.add("reviews", ROWS)  # v1: 4 rows
        store.remove("reviews", ["a", "d"])  # v2: b, c


def run(tmp_path: Path, url: str, version: str = "") -> dict[str, Any]:
    write(tmp_path / "t.yaml", TASK.format(version=version))
    done = assay("run", "t.yaml", "--store", url, cwd=tmp_path)
    data: dict[str, Any] = json.loads(
        (latest(tmp_path) / "default/from-store/suite.json").read_text()
    )
    # no gate: the run exits 0 exactly when every row succeeded
    assert done.returncode == (0 if data["rows_passed"] == data["rows_total"] else 1), done.stderr
    return data


def test_pinned_version_keeps_its_rows_after_a_removal(tmp_path: Path, store_url: str) -> None:
    make_store(store_url)
    pinned = run(tmp_path, store_url, "  version: 1")
    assert list(selected_rows(latest(tmp_path))) == ["a", "b", "c", "d"]
    assert pinned["dataset"]["source"] == "store"
    assert (pinned["dataset"]["store"], pinned["dataset"]["version"]) == ("reviews", 1)
    assert pinned["dataset"]["item_count"] == 4
    metrics = pinned["criterion_aggregates"][0]["metrics"]
    assert metrics["accuracy"] == 0.75  # d ("dull", positive) is misclassified
    with open_store(store_url) as store:
        v1 = store.resolve("reviews", 1)
    assert pinned["dataset"]["content_hash"] == v1.content_hash
    run_json = json.loads((latest(tmp_path) / "run.json").read_text())
    assert run_json["selections"][0]["dataset"]["version"] == 1
    assert "password" not in json.dumps(run_json)


def test_latest_is_resolved_and_recorded(tmp_path: Path, store_url: str) -> None:
    make_store(store_url)
    suite = run(tmp_path, store_url)
    assert suite["dataset"]["version"] == 2
    assert list(selected_rows(latest(tmp_path))) == ["b", "c"]
    assert suite["selection"]["rows_selected"] == 2
    done = assay("plan", "t.yaml", "--store", store_url, cwd=tmp_path)
    assert "from store reviews@2" in done.stdout


def test_unknown_version_is_a_load_error(tmp_path: Path, store_url: str) -> None:
    make_store(store_url)
    write(tmp_path / "t.yaml", TASK.format(version="  version: 7"))
    done = assay("plan", "t.yaml", "--store", store_url, cwd=tmp_path)
    assert done.returncode == 2
    assert "reviews" in done.stderr and "7" in done.stderr


def otlp(output: str) -> dict[str, Any]:
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    span = {
        "traceId": trace_id, "spanId": span_id, "name": "agent", "kind": 1,
        "startTimeUnixNano": "1", "endTimeUnixNano": "2",
        "attributes": [{"key": "output.value", "value": {"stringValue": output}}],
        "status": {"code": 1},
    }  # fmt: skip
    scope = {"scope": {"name": "t"}, "spans": [span]}
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [scope]}]}


GRADE_TRACES = """\
task_id: graded
description: production traces graded without running an agent
agent: {type: none}
dataset:
  store: traces
success_criteria:
  - type: response_match
    expected: "${row.expected}"
    match: contains
    suite_thresholds: {mean: 0.5}
"""


def test_trace_backed_rows_are_graded_without_an_agent(tmp_path: Path, store_url: str) -> None:
    traces = [otlp("Paris is the capital"), otlp("I do not know")]
    with open_store(store_url) as store:
        store.create_dataset(
            "traces", Schema({"question": "string", "expected": "string", "trace": "trace"})
        )
        store.add("traces", [
            {"id": "q1", "question": "capital?", "expected": "Paris", "trace": traces[0]},
            {"id": "q2", "question": "capital?", "expected": "Rome", "trace": traces[1]},
        ])  # fmt: skip
    write(tmp_path / "graded.yaml", GRADE_TRACES)
    done = assay("run", "graded.yaml", "--store", store_url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run_dir = latest(tmp_path)
    first = json.loads((run_dir / "default/graded/q1/00/task.json").read_text())
    second = json.loads((run_dir / "default/graded/q2/00/task.json").read_text())
    assert first["final_status"] == "SUCCESS" and second["final_status"] == "FAILURE"
    assert (run_dir / "default/graded/q1/00/response.txt").read_text() == "Paris is the capital"
    stored = json.loads((run_dir / "default/graded/q1/00/trace.json").read_text())
    assert (
        stored["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
        == (traces[0]["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"])
    )


def test_resume_reads_the_recorded_version(tmp_path: Path, store_url: str) -> None:
    make_store(store_url)
    suite = run(tmp_path, store_url)  # latest: v2 (b, c)
    run_dir = latest(tmp_path)
    with open_store(store_url) as store:
        store.add("reviews", [{"id": "e", "text": "good", "label": "positive"}])  # v3
    (run_dir / "default/from-store/c/00/task.json").unlink()
    done = assay("run", "--resume", str(run_dir), "--store", store_url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    again = json.loads((run_dir / "default/from-store/suite.json").read_text())
    assert again["dataset"]["version"] == 2
    assert list(selected_rows(run_dir)) == ["b", "c"]
    assert again["selection"] == suite["selection"]
    assert again["criterion_aggregates"] == suite["criterion_aggregates"]


def test_resume_refuses_a_pin_changed_since_the_run_started(tmp_path: Path, store_url: str) -> None:
    make_store(store_url)
    run(tmp_path, store_url, "  version: 1")
    run_dir = latest(tmp_path)
    (run_dir / "default/from-store/a/00/task.json").unlink()
    write(tmp_path / "t.yaml", TASK.format(version="  version: 2"))  # the user re-pins
    done = assay("run", "--resume", str(run_dir), "--store", store_url, cwd=tmp_path)
    assert done.returncode == 2
    said = " ".join(done.stderr.split())
    assert "task from-store now pins reviews@2, but the run read reviews@1" in said
    assert "put back version: 1 to resume, or start a new run" in said


def test_a_missing_version_is_named_at_the_task_files_field(tmp_path: Path, store_url: str) -> None:
    make_store(store_url)
    write(tmp_path / "t.yaml", TASK.format(version="  version: 9"))
    done = assay("plan", "t.yaml", "--store", store_url, cwd=tmp_path)
    assert done.returncode == 2
    assert "t.yaml:9: dataset.version: dataset 'reviews' has no version 9" in (
        " ".join(done.stderr.split()))  # fmt: skip


def test_the_default_store_is_recorded_absolute_and_never_created_by_a_read(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    make_store(f"sqlite:///{project / '.assay' / 'store.db'}")
    write(project / "t.yaml", TASK.format(version=""))
    done = assay("run", "t.yaml", cwd=project)  # the default store: .assay/store.db
    assert done.returncode == 0, done.stderr
    suite = json.loads((latest(project) / "default/from-store/suite.json").read_text())
    assert suite["dataset"]["store_url"] == f"sqlite:///{project / '.assay' / 'store.db'}"
    elsewhere = assay("plan", "project/t.yaml", cwd=tmp_path)  # no store in tmp_path
    assert elsewhere.returncode == 2
    assert f"no store at {tmp_path / '.assay' / 'store.db'} (dataset 'reviews'" in (
        " ".join(elsewhere.stderr.split()))  # fmt: skip
    assert not (tmp_path / ".assay").exists()
    empty = tmp_path / "empty.db"
    make_empty = assay("dataset", "list", "--store", f"sqlite:///{empty}", cwd=tmp_path)
    assert make_empty.returncode == 0
    unknown = assay("plan", "project/t.yaml", "--store", f"sqlite:///{empty}", cwd=tmp_path)
    assert f"no dataset named 'reviews' in the store at sqlite:///{empty}" in (
        " ".join(unknown.stderr.split()))  # fmt: skip
