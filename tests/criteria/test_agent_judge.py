"""``agent_judge`` with the real Claude Code CLI as the judge, its model a ``mock/`` script
answered through the model bridge, and its verdict submitted with assay's MCP verdict tool.

The row's agent is a ``command`` that leaves files; the judge explores a copy of the
sandbox. A verdict becomes the score; a judge that never submits, submits an invalid
verdict or runs out of ``turn_timeout`` is a ``judge_error`` (not graded, the row ``ERROR``,
counted apart in suite.json), never a 0; what the judge writes never reaches the row's files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.agents.coding import claude_available, codex_path, run_assay
from tests.helpers import write

pytestmark = pytest.mark.coding_agent

SCRIPT = """\
replies:
  - match: "RUBRIC-READS"
    steps:
      - tool: Read
        input: {file_path: "${sandbox}/answer.txt"}
      - tool: mcp__assay_judge__submit_verdict
        input: {score: 0.8, rationale: "answer.txt holds the answer", findings: ["says 42"]}
      - reply: "done"
  - match: "RUBRIC-REFERENCE"
    steps:
      - tool: Read
        input: {file_path: "${sandbox}/_reference/solution.txt"}
      - tool: mcp__assay_judge__submit_verdict
        input: {score: 1, rationale: "matches the reference", findings: []}
      - reply: "done"
  - match: "RUBRIC-SILENT"
    steps:
      - tool: Read
        input: {file_path: "${sandbox}/answer.txt"}
      - reply: "I looked and have nothing to add"
  - match: "RUBRIC-WRITES"
    steps:
      - tool: Bash
        input: {command: "echo vandal > answer.txt; rm -f keep.txt; touch judge-was-here.txt;
                          touch OUTSIDE/escaped.txt", description: write}
      - tool: mcp__assay_judge__submit_verdict
        input: {score: 0.25, rationale: "I changed the files", findings: ["wrote"]}
      - reply: "done"
  - match: "RUBRIC-OUT-OF-RANGE"
    steps:
      - tool: mcp__assay_judge__submit_verdict
        input: {score: 7, rationale: "too high"}
      - reply: "done"
  - match: "RUBRIC-LOOP"
    steps:
      - {tool: Read, input: {file_path: "${sandbox}/answer.txt"}}
      - {tool: Read, input: {file_path: "${sandbox}/keep.txt"}}
      - {tool: Read, input: {file_path: "${sandbox}/answer.txt"}}
      - {tool: Read, input: {file_path: "${sandbox}/keep.txt"}}
      - {tool: Read, input: {file_path: "${sandbox}/answer.txt"}}
      - tool: mcp__assay_judge__submit_verdict
        input: {score: 0.5, rationale: "too late", findings: []}
      - reply: "done"
  - match: "RUBRIC-SLOW"
    reply: "too late"
    delay: 60
"""

TASK = """\
task_id: judged
description: a command agent judged by a coding agent
initial_prompt: write the answer
agent:
  type: command
  command: "printf 42 > answer.txt; printf keep > keep.txt"
sandbox: {sandbox}
reference: {{directory: ref}}
dataset:
  rows:
    - {{id: reads, rubric: RUBRIC-READS}}
    - {{id: reference, rubric: RUBRIC-REFERENCE}}
    - {{id: silent, rubric: RUBRIC-SILENT}}
    - {{id: writes, rubric: RUBRIC-WRITES}}
    - {{id: range, rubric: RUBRIC-OUT-OF-RANGE}}
    - {{id: slow, rubric: RUBRIC-SLOW}}
    - {{id: loop, rubric: RUBRIC-LOOP}}
run_limits: {{task_timeout: 200}}
success_criteria:
  - type: agent_judge
    description: a coding agent judges the answer
    prompt: "${{row.rubric}}: is the answer in answer.txt right?"
    turn_timeout: {timeout}
    max_turns: 4
    agent:
      model: mock/judge.yaml
      allowed_tools: [Read, Bash]
  - type: file_contains
    description: the row's own files
    path: answer.txt
    includes: ["42"]
"""


def _rows(run: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted(run.glob("default/judged/*/00/task.json")):
        found[path.parent.parent.name] = json.loads(path.read_text())
    return found


@pytest.mark.parametrize("sandbox", ["{driver: tempdir}", "{driver: bwrap}"])
def test_a_coding_agent_judges_a_copy_of_the_sandbox(tmp_path: Path, sandbox: str) -> None:
    claude_available()
    write(tmp_path / "judge.yaml", SCRIPT.replace("OUTSIDE", str(tmp_path)))
    write(tmp_path / "ref" / "solution.txt", "42")
    write(tmp_path / "t.yaml", TASK.format(sandbox=sandbox, timeout=20))
    done = run_assay("run", "t.yaml", "--keep-sandboxes", cwd=tmp_path, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    rows = _rows(tmp_path / "runs" / "latest")
    assert set(rows) == {"reads", "reference", "silent", "writes", "range", "slow", "loop"}

    judged = rows["reads"]["success_criteria_results"][0]
    assert judged["evaluation_status"] == "evaluated", judged
    assert judged["score"] == 0.8
    assert judged["details"] == "verdict 0.8: answer.txt holds the answer (1 finding(s))"
    assert judged["findings"] == ["says 42"]
    assert judged["judge"]["name"] == "agent_judge"
    assert judged["judge"]["model"] == "mock/judge.yaml"
    assert judged["judge_tokens"] > 0 and judged["judge_cost_usd"] == 0.0  # mock: priced free
    assert rows["reads"]["final_status"] == "SUCCESS"
    assert rows["reference"]["success_criteria_results"][0]["score"] == 1.0

    for row_id, message in [
        ("silent", "judge_error: Judge did not call submit_verdict"),
        ("range", "judge_error: the judge's submit_verdict call was not accepted: Invalid: "
                  "score field must be between 0 and 1, got 7. Retry."),
        ("slow", "judge_error: Judge did not call submit_verdict (the judge agent was stopped "
                 "at turn_timeout:"),
        ("loop", "judge_error: Judge did not call submit_verdict (the judge agent reached "
                 "the criterion's max_turns)"),
    ]:  # fmt: skip
        result = rows[row_id]["success_criteria_results"][0]
        assert result["evaluation_status"] == "error", result
        assert result["error"].startswith(message), result["error"]
        assert result["score"] == 0.0
        assert rows[row_id]["final_status"] == "ERROR"
        assert rows[row_id]["weighted_score"] is None
        assert rows[row_id]["success_criteria_results"][1]["score"] == 1.0  # still graded

    written = rows["writes"]["success_criteria_results"]
    assert written[0]["score"] == 0.25
    assert written[1]["score"] == 1.0
    kept = tmp_path / "runs" / "latest" / "default" / "judged" / "writes" / "00" / "sandbox"
    assert (kept / "answer.txt").read_text() == "42"
    assert (kept / "keep.txt").read_text() == "keep"
    assert not (kept / "judge-was-here.txt").exists()
    assert not (kept / "_reference").exists()
    # contained as the row was: a bwrap row's judge cannot write outside its copy
    assert (tmp_path / "escaped.txt").exists() == ("tempdir" in sandbox)

    suite = json.loads((tmp_path / "runs" / "latest" / "default" / "judged" / "suite.json")
                       .read_text())  # fmt: skip
    aggregate = next(a for a in suite["criterion_aggregates"]
                     if a["criterion_type"] == "agent_judge")  # fmt: skip
    assert aggregate["metrics"]["count"] == 3  # the four judge errors left out, counted apart
    assert aggregate["details"]["judge_errors"] == 4
    assert aggregate["metrics"]["mean"] == pytest.approx((0.8 + 1.0 + 0.25) / 3)


@pytest.mark.docker
def test_a_docker_rows_judge_runs_in_a_container_of_its_image(
    tmp_path: Path, docker_image: tuple[object, str]
) -> None:
    """The judge's CLI runs in a container of the row's image (no network but the model
    bridge's socket) and starts the verdict tool there on the image's ``python3``; what it
    writes stays in its copy, and nothing outside the copy is shown to it."""
    claude_available()
    _, image = docker_image
    write(tmp_path / "judge.yaml", SCRIPT.replace("OUTSIDE", str(tmp_path)))
    write(tmp_path / "ref" / "solution.txt", "42")
    sandbox = f"{{driver: docker, docker: {{engine: docker, image: '{image}'}}}}"
    task = TASK.format(sandbox=sandbox, timeout=30)
    kept_rows = ("reads", "reference", "silent", "writes")
    task = "\n".join(
        line
        for line in task.splitlines()
        if "{id: " not in line or any(f"id: {r}," in line for r in kept_rows)
    )
    write(tmp_path / "t.yaml", task + "\n")
    done = run_assay("run", "t.yaml", "--keep-sandboxes", cwd=tmp_path, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    rows = _rows(tmp_path / "runs" / "latest")
    assert set(rows) == set(kept_rows)
    judged = rows["reads"]["success_criteria_results"][0]
    assert (judged["evaluation_status"], judged["score"], judged["findings"]) == (
        "evaluated", 0.8, ["says 42"]), judged  # fmt: skip
    assert rows["reference"]["success_criteria_results"][0]["score"] == 1.0
    silent = rows["silent"]["success_criteria_results"][0]
    assert silent["error"].startswith("judge_error: Judge did not call submit_verdict"), silent
    written = rows["writes"]["success_criteria_results"]
    assert (written[0]["score"], written[1]["score"]) == (0.25, 1.0)
    kept = tmp_path / "runs" / "latest" / "default" / "judged" / "writes" / "00" / "sandbox"
    assert (kept / "answer.txt").read_text() == "42"
    assert not (kept / "judge-was-here.txt").exists()
    assert not (tmp_path / "escaped.txt").exists()  # the host's folders are not shown


@pytest.mark.parametrize("sandbox", ["{driver: tempdir}", "{driver: bwrap}"])
def test_assay_evaluate_runs_the_judge_again(tmp_path: Path, sandbox: str) -> None:
    """``assay evaluate`` starts the model bridge (on its unix socket for a ``bwrap`` row) and
    runs the judge agent again on a copy of each kept sandbox: a changed judge script gives
    the new verdict; a judge that never submits is still a judge_error."""
    claude_available()
    write(tmp_path / "judge.yaml", SCRIPT)
    write(tmp_path / "ref" / "solution.txt", "42")
    task = TASK.format(sandbox=sandbox, timeout=20)
    kept_rows = "".join(f"    - {{id: {row}, rubric: RUBRIC-{row.upper()}}}\n"
                        for row in ("reads", "silent"))  # fmt: skip
    start, end = task.index("  rows:\n") + len("  rows:\n"), task.index("run_limits")
    write(tmp_path / "t.yaml", task[:start] + kept_rows + task[end:])
    done = run_assay("run", "t.yaml", "--keep-sandboxes", cwd=tmp_path, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    write(tmp_path / "judge.yaml", SCRIPT.replace("score: 0.8,", "score: 0.3,"))
    done = run_assay("evaluate", "runs/latest", cwd=tmp_path, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    rows = _rows(tmp_path / "runs" / "latest")
    judged = rows["reads"]["success_criteria_results"][0]
    assert (judged["evaluation_status"], judged["score"]) == ("evaluated", 0.3), judged
    silent = rows["silent"]["success_criteria_results"][0]
    assert silent["error"].startswith("judge_error: Judge did not call submit_verdict"), silent
    assert rows["silent"]["final_status"] == "ERROR"


CODEX_SCRIPT = """\
replies:
  - match: "RUBRIC-READS"
    steps:
      - tool: exec_command
        input: {cmd: "cat answer.txt _reference/solution.txt"}
      - tool: mcp__assay_judge__submit_verdict
        input: {score: 0.7, rationale: "the answer matches the reference", findings: ["42"]}
      - reply: "done"
  - match: "RUBRIC-SILENT"
    reply: "nothing to add"
"""
CODEX_TASK = """\
task_id: judged
description: a command agent judged by Codex
initial_prompt: write the answer
agent: {type: command, command: "printf 42 > answer.txt"}
sandbox: {driver: tempdir}
reference: {directory: ref}
dataset:
  rows:
    - {id: reads, rubric: RUBRIC-READS}
    - {id: silent, rubric: RUBRIC-SILENT}
success_criteria:
  - type: agent_judge
    description: Codex judges the answer
    prompt: "${row.rubric}: is the answer in answer.txt right?"
    turn_timeout: 60
    agent: {type: codex, model: mock/judge.yaml}
"""


def test_codex_judges_through_the_bridge_with_the_verdict_tool(tmp_path: Path) -> None:
    """The real Codex CLI as the judge: it runs a command in the copy (the reference at
    ``_reference/``) and submits through assay's MCP verdict tool, which Codex offers the
    model as a Responses ``namespace`` (made visible in every request, not behind Codex's
    ``tool_search``); a judge that never submits is a judge_error; the run's reports read the
    resolved criterion back without error."""
    write(tmp_path / "judge.yaml", CODEX_SCRIPT)
    write(tmp_path / "ref" / "solution.txt", "42")
    write(tmp_path / "t.yaml", CODEX_TASK)
    done = run_assay("run", "t.yaml", cwd=tmp_path, env={"PATH": codex_path()}, timeout=600)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    rows = _rows(tmp_path / "runs" / "latest")
    judged = rows["reads"]["success_criteria_results"][0]
    assert (judged["evaluation_status"], judged["score"]) == ("evaluated", 0.7), judged
    assert judged["details"] == "verdict 0.7: the answer matches the reference (1 finding(s))"
    assert rows["reads"]["final_status"] == "SUCCESS"
    silent = rows["silent"]["success_criteria_results"][0]
    assert silent["error"].startswith("judge_error: Judge did not call submit_verdict"), silent
    suite = json.loads((tmp_path / "runs/latest/default/judged/suite.json").read_text())
    assert suite["rows_passed"] == 1 and suite["rows_error"] == 1


def test_judge_calibrate_measures_a_runs_agent_judge_against_labels(tmp_path: Path) -> None:
    """``assay judge calibrate RUN_DIR``: the rows a store dataset labels (its ``folder``
    field, as the viewer's review saves them) are judged again by the run's agent_judge on
    copies of their kept sandboxes (a changed judge script gives the new verdict; the run's
    files do not change), and its pass/fail verdicts are compared with the labels; a judge
    error, an unlabelled example and one naming another run's row are counted apart."""
    from assay.store import open_store
    from assay.view.review import LABEL_SCHEMA

    claude_available()
    write(tmp_path / "judge.yaml", SCRIPT.replace("OUTSIDE", str(tmp_path)))
    write(tmp_path / "ref" / "solution.txt", "42")
    task = TASK.format(sandbox="{driver: tempdir}", timeout=20)
    kept_rows = "".join(f"    - {{id: {row}, rubric: RUBRIC-{row.upper()}}}\n"
                        for row in ("reads", "reference", "writes", "silent"))  # fmt: skip
    start, end = task.index("  rows:\n") + len("  rows:\n"), task.index("run_limits")
    write(tmp_path / "t.yaml", task[:start] + kept_rows + task[end:])
    done = run_assay("run", "t.yaml", "--keep-sandboxes", cwd=tmp_path, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    url = f"sqlite:///{tmp_path / 'store.db'}"
    labels = {"reads": "pass", "reference": "pass", "writes": "fail", "silent": "pass",
              "unlabelled": None, "elsewhere": "fail"}  # fmt: skip
    with open_store(url) as store:
        store.create_dataset("review", LABEL_SCHEMA)
        store.put("review", [_label(id=f"r/{row}", folder=f"default/judged/{row}/00", label=label)
                             for row, label in labels.items()])  # fmt: skip
    write(tmp_path / "judge.yaml", SCRIPT.replace("OUTSIDE", str(tmp_path)).replace(
        "score: 0.8,", "score: 0.3,"))  # fmt: skip
    done = run_assay("judge", "calibrate", "runs/latest", "--dataset", "review", "--label",
                     "label", "--store", url, "-o", "cal", cwd=tmp_path, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "cal" / "calibration.json").read_text())
    assert (report["rows_compared"], report["rows_judge_error"], report["rows_unlabelled"],
            report["rows_elsewhere"]) == (3, 1, 1, 1)  # fmt: skip
    assert report["agreement"]["value"] == 2 / 3
    assert report["rows_total"] == 6 and report["judge_tokens"] > 0
    assert report["binary_counts"] == {
        "tp": 1,
        "fn": 1,
        "positives": 2,
        "tn": 1,
        "fp": 0,
        "negatives": 1,
    }  # reads: pass labelled, judged 0.3
    assert [d["example_id"] for d in report["disagreements"]] == ["r/reads"]  # 0.3 now: fail
    assert report["judge_errors"][0]["example_id"] == "r/silent"
    assert (
        report["judge"]["name"] == "agent_judge" and report["judge"]["model"] == "mock/judge.yaml"
    )
    recorded = _rows(tmp_path / "runs" / "latest")["reads"]["success_criteria_results"][0]
    assert recorded["score"] == 0.8  # the run's own files are as the run left them
    assert "calibrated judge agent_judge on review@1" in done.stdout
    with open_store(url) as store:
        (stored,) = store.calibrations(judge_name="agent_judge")
    assert stored.report["rows_compared"] == 3


def test_judge_calibrate_refuses_a_run_without_an_agent_judge_and_bad_labels(
    tmp_path: Path,
) -> None:
    import assay
    from assay.errors import StoreError, UsageError
    from assay.store import open_store
    from assay.view.review import LABEL_SCHEMA

    write(tmp_path / "t.yaml", "task_id: plain\ndescription: d\ninitial_prompt: go\n"
          "agent: {type: command, command: 'echo 42'}\ndataset: {rows: [{id: a}]}\n"
          "success_criteria: [{type: response_match, expected: '42'}]\n")  # fmt: skip
    done = run_assay("run", "t.yaml", "--keep-sandboxes", cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(url) as store:
        store.create_dataset("review", LABEL_SCHEMA)
        store.put("review", [_label(id="x", folder="default/plain/a/00", label="pass")])
        store.put("review", [_label(id="x", folder="default/plain/a/00", label="maybe")])
    run = tmp_path / "runs" / "latest"
    with pytest.raises(UsageError, match=r"row default/plain/a/00: no criterion is an agent_judge"):
        assay.api.calibrate_judge(str(run), dataset="review", version=1, label_field="label",
                              store=url, output_dir=tmp_path / "c")  # fmt: skip
    with pytest.raises(StoreError, match=r"'label' that is not a binary label: x: 'maybe'"):
        assay.api.calibrate_judge(str(run), dataset="review", label_field="label", store=url)
    with pytest.raises(UsageError, match="--criterion chooses a run's agent_judge"):
        assay.api.calibrate_judge("judges/x.yaml", dataset="review", label_field="label",
                              store=url, criterion=1)  # fmt: skip
    assert not (tmp_path / "c").exists()


def _label(**given: Any) -> dict[str, Any]:
    """An example of a review's labelled dataset (every field of its schema; the rest empty)."""
    from assay.view.review import LABEL_SCHEMA

    empty = {name: "" if kind == "string" else None for name, kind in LABEL_SCHEMA.fields.items()}
    return {**empty, "run": "r", "reviewer": "alice", **given}
