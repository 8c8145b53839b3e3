"""A run is never mixed across data changes: every dataset and selected row is hashed, and a
resumed run, `assay evaluate` and `assay report` refuse the rows whose content changed, or,
with `--rerun-changed`, run exactly those rows again. Generated over the row sources."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from assay.data.hashing import row_hash
from tests.cli.test_run import assay, latest
from tests.helpers import selected_rows, write

ROWS = [{"id": f"r{i}", "text": f"text {i}", "label": "yes" if i % 2 else "no"}
        for i in range(6)]  # fmt: skip
TASK = """\
task_id: drift
description: the agent echoes a label; the criterion compares it with the row's
initial_prompt: "${{row.text}}"
agent: {{type: command, command: 'echo yes'}}
dataset:
{dataset}
success_criteria:
  - type: classification_match
    expected_label: "${{row.label}}"
    allowed_labels: ["yes", "no"]
    suite_thresholds: {{accuracy: 0.0, completion_rate: 0.0}}
"""


def jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def csv_text(rows: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def inline(rows: list[dict[str, Any]]) -> str:
    return "  rows:\n" + "".join(f"    - {json.dumps(row)}\n" for row in rows)


SOURCES = {
    "jsonl": ("  paths: [rows.jsonl]", "rows.jsonl", jsonl),
    "csv": ("  paths: [rows.csv]", "rows.csv", csv_text),
    "inline": (None, None, inline),
}


def make(folder: Path, source: str, rows: list[dict[str, Any]]) -> Path:
    block, name, render = SOURCES[source]
    if name is None:
        return write(folder / "task.yaml", TASK.format(dataset=render(rows)))
    write(folder / name, render(rows))
    assert block is not None
    return write(folder / "task.yaml", TASK.format(dataset=block))


def edited(rows: list[dict[str, Any]], row_id: str) -> list[dict[str, Any]]:
    return [{**row, "label": "yes" if row["label"] == "no" else "no"} if row["id"] == row_id
            else row for row in rows]  # fmt: skip


def forget(run_dir: Path, *row_ids: str) -> None:
    """Make rows unfinished, as an interrupted run leaves them."""
    for row_id in row_ids:
        shutil.rmtree(run_dir / "default" / "drift" / row_id)
    (run_dir / "run.json").unlink()


def suite(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "default/drift/suite.json").read_text())
    return data


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_a_resumed_run_refuses_changed_rows_then_reruns_exactly_them(
    tmp_path: Path, source: str
) -> None:
    make(tmp_path, source, ROWS)
    assert assay("run", "task.yaml", "-q", cwd=tmp_path).returncode == 0
    run_dir = latest(tmp_path)
    recorded = suite(run_dir)
    as_read = [{k: str(v) for k, v in r.items()} if source == "csv" else r for r in ROWS]
    hashes = selected_rows(run_dir, "drift")
    assert hashes == {r["id"]: row_hash(r) for r in as_read}
    assert recorded["selection"]["rows_file"] == "selection.jsonl"
    assert recorded["selection"]["row_ids"] == []  # listed once, in selection.jsonl
    assert recorded["dataset"]["content_hash"] is not None
    forget(run_dir, "r4", "r5")  # an interrupted run
    make(tmp_path, source, edited(ROWS, "r1"))  # a finished row's gold label changes

    refused = assay("run", "--resume", str(run_dir), cwd=tmp_path)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert (
        "resuming the run refused: task 'drift': its dataset now differs from what the run "
        "recorded: 1 row(s) changed (r1)"
    ) in " ".join(refused.stderr.split())
    assert "--rerun-changed" in refused.stderr
    assert not (run_dir / "default/drift/r4").exists()  # nothing ran

    done = assay("run", "--resume", str(run_dir), "--rerun-changed", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    after = suite(run_dir)
    rows = {r["id"]: r for r in edited(ROWS, "r1")}
    for row_id in rows:
        task = json.loads((run_dir / f"default/drift/{row_id}/00/task.json").read_text())
        assert task["row"]["label"] == str(rows[row_id]["label"])  # every row: the new content
    assert selected_rows(run_dir, "drift")["r1"] != hashes["r1"]
    assert after["selection"]["row_ids"] == []  # still listed in selection.jsonl only
    assert after["dataset"]["content_hash"] != recorded["dataset"]["content_hash"]
    plan = json.loads((run_dir / "plan.json").read_text())
    assert plan["tasks"][0]["selection"]["row_hashes"] == {}
    assert list(selected_rows(run_dir, "drift")) == list(hashes)  # the same rows, in order
    # the accuracy counts r1 with its new label: "yes" is now right for r1
    correct = sum(1 for r in rows.values() if r["label"] == "yes")
    assert after["criterion_aggregates"][0]["metrics"]["accuracy"] == correct / len(rows)
    assert assay("report", str(run_dir), cwd=tmp_path).returncode == 0


@pytest.mark.parametrize(
    ("command", "source"),
    [("evaluate", "jsonl"), ("report", "jsonl"), ("report", "csv"), ("report", "inline")],
)
def test_evaluate_and_report_refuse_a_dataset_that_changed(
    tmp_path: Path, command: str, source: str
) -> None:
    make(tmp_path, source, ROWS)
    assay("run", "task.yaml", "-q", "--keep-sandboxes", cwd=tmp_path)
    run_dir = latest(tmp_path)
    changed = [row for row in edited(ROWS, "r2") if row["id"] != "r5"]  # r2 edited, r5 gone
    make(tmp_path, source, [*changed[3:], *changed[:3]])  # and the rest reordered
    done = assay(command, str(run_dir), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert (f"assay {command} refused: task 'drift': its dataset now differs from what the run "
            "recorded: 1 row(s) changed (r2) and 1 row(s) removed (r5)") in " ".join(
        done.stderr.split())  # fmt: skip
    make(tmp_path, source, ROWS)  # restored: accepted again
    assert assay(command, str(run_dir), cwd=tmp_path).returncode == 0


def test_a_run_that_already_mixes_two_contents_is_refused(tmp_path: Path) -> None:
    make(tmp_path, "jsonl", ROWS)
    assay("run", "task.yaml", "-q", cwd=tmp_path)
    run_dir = latest(tmp_path)
    path = run_dir / "default/drift/r3/00/task.json"
    task = json.loads(path.read_text())
    task["row"]["label"] = "other"  # graded on other content than the run recorded
    task["row_hash"] = row_hash(task["row"])  # what such a row's task.json records
    path.write_text(json.dumps(task))
    done = assay("report", str(run_dir), cwd=tmp_path)
    assert done.returncode == 2
    assert "task 'drift': its finished rows differs from what the run recorded: 1 row(s) " \
        "changed (r3)" in " ".join(done.stderr.split())  # fmt: skip


def test_an_unselected_row_may_change(tmp_path: Path) -> None:
    make(tmp_path, "jsonl", ROWS)
    assay("run", "task.yaml", "--sample", "2", "-q", cwd=tmp_path)
    run_dir = latest(tmp_path)
    selected = list(selected_rows(run_dir, "drift"))
    other = next(r["id"] for r in ROWS if r["id"] not in selected)
    make(tmp_path, "jsonl", edited(ROWS, other))
    assert assay("report", str(run_dir), cwd=tmp_path).returncode == 0


def test_paths_datasets_record_each_files_hash(tmp_path: Path) -> None:
    write(tmp_path / "a.jsonl", jsonl(ROWS[:3]))
    write(tmp_path / "b.jsonl", jsonl(ROWS[3:]))
    write(tmp_path / "task.yaml", TASK.format(dataset="  paths: [a.jsonl, b.jsonl]"))
    assay("run", "task.yaml", "-q", cwd=tmp_path)
    dataset = suite(latest(tmp_path))["dataset"]
    names = ("a.jsonl", "b.jsonl")
    files = [hashlib.sha256((tmp_path / n).read_bytes()).hexdigest() for n in names]
    assert [f["sha256"] for f in dataset["files"]] == files
    assert dataset["content_hash"] == hashlib.sha256("\n".join(files).encode()).hexdigest()
    run = json.loads((latest(tmp_path) / "run.json").read_text())
    assert run["selections"][0]["dataset"] == dataset


def test_rerun_changed_needs_resume(tmp_path: Path) -> None:
    make(tmp_path, "jsonl", ROWS)
    done = assay("run", "task.yaml", "--rerun-changed", cwd=tmp_path)
    assert done.returncode == 2
    assert "--rerun-changed goes with --resume RUN_DIR" in done.stderr


def test_data_that_cannot_be_read_again_is_warned_once(tmp_path: Path) -> None:
    make(tmp_path, "jsonl", ROWS)
    assay("run", "task.yaml", "-q", cwd=tmp_path)
    run_dir = latest(tmp_path)
    (tmp_path / "rows.jsonl").unlink()
    for _ in range(2):
        assert assay("report", str(run_dir), cwd=tmp_path).returncode == 0
    warnings = json.loads((run_dir / "run.json").read_text())["warnings"]
    found = [w for w in warnings if "could not be read to check that it is unchanged" in w]
    assert len(found) == 1 and found[0].startswith("task 'drift': its dataset could not be read")


def test_a_damaged_or_missing_list_of_selected_rows_is_a_clear_error(tmp_path: Path) -> None:
    make(tmp_path, "jsonl", ROWS)
    assert assay("run", "task.yaml", "-q", cwd=tmp_path).returncode == 0
    run_dir = latest(tmp_path)
    listed = run_dir / "selection.jsonl"
    lines = listed.read_text().splitlines()
    assert [json.loads(line)["row_id"] for line in lines] == [r["id"] for r in ROWS]
    forget(run_dir, "r4")
    listed.write_text(lines[0] + "\n" + lines[1][:20] + "\n")  # cut short
    for command in (["run", "--resume", str(run_dir)], ["report", str(run_dir)]):
        done = assay(*command, cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert "selection.jsonl:2: not a line of the run's selected rows" in done.stderr
        assert "Traceback" not in done.stderr
    for kept in (lines[:3], [*lines, lines[0]], [lines[0], lines[0], *lines[2:]]):  # cut at a
        listed.write_text("".join(line + "\n" for line in kept))  # line, padded, a row twice
        for command in (["run", "--resume", str(run_dir)], ["report", str(run_dir)]):
            done = assay(*command, cwd=tmp_path)
            assert done.returncode == 2, done.stderr
            assert "selection.jsonl" in done.stderr and "the run folder is damaged" in done.stderr
            said = " ".join(done.stderr.split())
            if len(kept) == len(lines):  # the same count: one row listed twice
                assert f"lists row '{json.loads(lines[0])['row_id']}' twice" in said, said
    listed.write_text("".join(line + "\n" for line in lines[:3]))
    done = assay("report", str(run_dir), cwd=tmp_path)
    assert done.returncode == 2 and f"lists 3 row(s) of task 'drift', but the run selected "\
        f"{len(ROWS)}" in " ".join(done.stderr.split()), done.stderr  # fmt: skip
    listed.unlink()
    done = assay("run", "--resume", str(run_dir), cwd=tmp_path)
    assert done.returncode == 2 and "No such file or directory" in done.stderr, done.stderr
    assert not (run_dir / "default/drift/r4/00/task.json").exists()  # nothing ran


def test_rows_yaml_reads_as_dates_report_as_they_ran_and_infinities_are_refused(
    tmp_path: Path,
) -> None:
    import hashlib

    rows = "[{id: a, v: 2024-01-02, n: 1}, {id: b, v: 2024-01-02 03:04:05}, {id: c, v: .inf}]"
    write(
        tmp_path / "inf.yaml",
        f"""\
task_id: dated
description: a row YAML reads as an infinity, which no JSON row holds
initial_prompt: "say hi"
agent: {{type: command, command: "echo hi"}}
dataset: {{rows: {rows}}}
success_criteria:
  - {{type: response_match, expected: hi}}
""",
    )
    refused = assay("run", "inf.yaml", "-q", cwd=tmp_path)  # as a JSONL file's Infinity is
    assert refused.returncode == 2
    assert "dataset.rows[2].v holds inf, which is not a JSON value" in refused.stderr
    rows = rows.replace(", {id: c, v: .inf}", "")
    write(
        tmp_path / "task.yaml",
        f"""\
task_id: dated
description: rows YAML reads as dates
initial_prompt: "say hi"
agent: {{type: command, command: "echo hi"}}
dataset: {{rows: {rows}}}
success_criteria:
  - {{type: response_match, expected: hi}}
""",
    )
    assert assay("run", "task.yaml", "-q", cwd=tmp_path).returncode == 0
    run_dir = latest(tmp_path)
    done = assay("report", str(run_dir), cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # the finished rows match what the run recorded
    stored = json.loads((run_dir / "default/dated/a/00/task.json").read_text())["row"]
    assert stored == {"id": "a", "v": "2024-01-02", "n": 1}
    text = json.dumps(stored, sort_keys=True, separators=(",", ":"))  # the oracle: by hand
    assert selected_rows(run_dir)["a"] == hashlib.sha256(text.encode()).hexdigest()[:16]
    plain = {"id": "x", "t": "é", "k": [1, 2.5, None]}
    oracle = json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert row_hash(plain) == hashlib.sha256(oracle.encode()).hexdigest()[:16]  # unchanged


def test_a_damaged_plan_or_suite_file_is_a_clear_error_or_rewritten(tmp_path: Path) -> None:
    make(tmp_path, "jsonl", ROWS)
    assert assay("run", "task.yaml", "-q", cwd=tmp_path).returncode == 0
    run_dir = latest(tmp_path)
    suite_path = run_dir / "default/drift/suite.json"
    whole = suite_path.read_text()
    suite_path.write_text(whole[: len(whole) // 2])  # cut short: report writes it again
    done = assay("report", str(run_dir), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    again, before = json.loads(suite_path.read_text()), json.loads(whole)
    assert again["criterion_aggregates"] == before["criterion_aggregates"]
    assert again["criteria"] == before["criteria"] and again["rows_total"] == len(ROWS)
    plan = run_dir / "plan.json"
    text = plan.read_text()
    forget(run_dir, "r4")
    for damaged, said in ((text[: len(text) // 2], "plan.json is not valid JSON"),
                          ("[]", "plan.json is not a plan assay wrote")):  # fmt: skip
        plan.write_text(damaged)
        done = assay("run", "--resume", str(run_dir), cwd=tmp_path)
        assert done.returncode == 2 and said in done.stderr, done.stderr
        assert "Traceback" not in done.stderr


def test_a_qa_dataset_whose_ids_come_from_its_samples_is_checked_too(tmp_path: Path) -> None:
    source = Path(__file__).parents[2] / "examples/qa/gsm8k/gsm8k_test_first100.qa.jsonl"
    lines = source.read_text(encoding="utf-8").splitlines()[:5]
    write(tmp_path / "rows.qa.jsonl", "".join(line + "\n" for line in lines))
    write(
        tmp_path / "task.yaml",
        "task_id: qa\ndescription: d\nagent: {type: command, "
        "command: 'echo \"#### 18\"'}\ndataset: {paths: [rows.qa.jsonl]}\nqa: {}\n"
        "success_criteria: [{type: qa}]\n",
    )  # ids from sample_id, not dataset.id_field
    assert assay("run", "task.yaml", "-q", cwd=tmp_path).returncode == 1
    run_dir = latest(tmp_path)
    edited_row = json.loads(lines[2])
    edited_row["question"] += " (edited)"
    write(
        tmp_path / "rows.qa.jsonl",
        "".join(line + "\n" for line in [*lines[:2], json.dumps(edited_row), lines[3]]),
    )
    done = assay("report", str(run_dir), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert ("1 row(s) changed (gsm8k-test-00003) and 1 row(s) removed (gsm8k-test-00005)"
            in " ".join(done.stderr.split())), done.stderr  # fmt: skip
