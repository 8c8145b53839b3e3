"""Regressions from adversarial testing: inputs that used to crash, hang or corrupt a run."""

from __future__ import annotations

import json
import shutil
import signal
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.cli.test_run import assay, finished, latest, suite_json, task_json
from tests.helpers import SigintAtStart, finish, pids_in, start_assay, wait_for, wait_gone, write
from tests.openai_server import Fault, scripted_server


def command_task(tmp_path: Path, command: str, rows: str = "[{id: a}, {id: b}]") -> Path:
    text = f"""\
task_id: t
description: d
initial_prompt: "x ${{row.id}}"
agent: {{type: command, command: {json.dumps(command)}}}
dataset:
  rows: {rows}
success_criteria:
  - {{type: response_match, expected: positive, match: contains}}
"""
    return write(tmp_path / "t.yaml", text)


def test_endpoint_failing_until_the_timeout_is_an_error_not_a_wrong_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLAKY_KEY", "k")
    with scripted_server(lambda body: Fault(500)) as server:
        text = f"""\
task_id: down
description: d
initial_prompt: hello
agent: {{type: llm, model: openai/m, base_url: "{server.base_url}", api_key_env: FLAKY_KEY}}
run_limits: {{task_timeout: 2}}
success_criteria:
  - {{type: response_match, expected: hello}}
"""
        path = write(tmp_path / "down.yaml", text)
        done = assay("run", str(path), "--max-retries", "1000", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # a task without a dataset that did not succeed
    task = json.loads((latest(tmp_path) / "default/down/00/task.json").read_text())
    assert task["final_status"] == "ERROR"
    assert "still failing" in task["error_message"]
    assert "500" in task["error_message"]
    assert task["success_criteria_results"] == []


SYMLINK = """\
task_id: abs
description: d
initial_prompt: "x ${row.id}"
agent: {type: command, command: 'echo positive > real.txt; ln -s "$PWD/real.txt" result.txt'}
dataset:
  rows: [{id: a}]
success_criteria:
  - type: classification_match
    path: result.txt
    expected_label: positive
    allowed_labels: [positive, negative]
"""


@pytest.mark.parametrize("first", [["execute"], ["run", "--keep-sandboxes"]])
def test_absolute_symlink_inside_the_sandbox_grades_the_same_in_evaluate(
    tmp_path: Path, first: list[str]
) -> None:
    path = write(tmp_path / "abs.yaml", SYMLINK)
    assert assay("run", str(path), "-q", cwd=tmp_path).returncode == 0  # run grades it a pass
    done = assay(*first, str(path), "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    evaluated = assay("evaluate", str(latest(tmp_path)), cwd=tmp_path)
    assert evaluated.returncode == 0, evaluated.stderr
    task = task_json(tmp_path, "abs", "a")
    assert task["final_status"] == "SUCCESS"
    assert task["success_criteria_results"][0]["score"] == 1.0


HERE = """\
task_id: here
description: d
initial_prompt: go
agent: {type: command, command: cat hello.txt}
sandbox:
  template_sources: [{type: template_dir, path: .}]
dataset:
  rows: [{id: a}]
success_criteria:
  - {type: response_match, expected: hi, match: contains}
"""


def test_kept_sandboxes_of_a_template_that_holds_the_run_folder(tmp_path: Path) -> None:
    # the task's folder is the template and the working directory: the run folder (and the
    # earlier runs in it), the store and the response cache are made inside it
    write(tmp_path / "hello.txt", "hi")
    write(tmp_path / ".assay" / "store.db", "not a sandbox file")
    write(tmp_path / "here.yaml", HERE)
    for command in (["run", "--keep-sandboxes", "--cache"], ["execute"], ["execute"]):
        done = assay(*command, "here.yaml", "-q", cwd=tmp_path)
        assert finished(done, latest(tmp_path)) == 0, (command, done.stdout)
        sandbox = latest(tmp_path) / "default/here/a/00/sandbox"
        assert sorted(p.name for p in sandbox.iterdir()) == ["hello.txt", "here.yaml"]
    done = assay("evaluate", str(latest(tmp_path)), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert task_json(tmp_path, "here", "a")["final_status"] == "SUCCESS"


def test_a_template_that_is_the_runs_folder_copies_no_run(tmp_path: Path) -> None:
    # `--run-dir .`: the run folders sit in the template itself, beside its files
    write(tmp_path / "hello.txt", "hi")
    write(tmp_path / "here.yaml", HERE)
    for _ in range(2):
        done = assay("run", "--keep-sandboxes", "--run-dir", ".", "here.yaml", "-q",
                     cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        run = (tmp_path / "latest").resolve()
        sandbox = run / "default/here/a/00/sandbox"
        assert sorted(p.name for p in sandbox.iterdir()) == ["hello.txt", "here.yaml"]
    assert (
        len([p for p in tmp_path.iterdir() if not p.is_symlink() and (p / "plan.json").is_file()])
        == 2
    )


def test_execute_exits_1_when_a_row_errored(tmp_path: Path) -> None:
    path = command_task(tmp_path, 'test "$ASSAY_ROW_ID" = a || exit 3; echo positive')
    done = assay("execute", str(path), "-q", cwd=tmp_path)
    assert finished(done, latest(tmp_path)) == 1, done.stdout
    assert task_json(tmp_path, "t", "a")["final_status"] == "NOT_GRADED"
    assert task_json(tmp_path, "t", "b")["final_status"] == "ERROR"
    run = json.loads((latest(tmp_path) / "run.json").read_text())
    assert run["exit_code"] == 1
    # a suite that gates completion_rate lets that gate decide, as `assay run` does
    text = path.read_text().replace("match: contains}", "match: contains, "
                                    "suite_thresholds: {completion_rate: 0.5}}")  # fmt: skip
    write(path, text)
    done = assay("execute", str(path), "-q", cwd=tmp_path)
    assert finished(done, latest(tmp_path)) == 0, done.stdout
    assert task_json(tmp_path, "t", "b")["final_status"] == "ERROR"


def test_nul_in_a_row_reaches_a_command_agent_without_crashing(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text(
        '{"id": "c", "x": "nul \\u0000 z"}\n{"id": "d", "x": "plain"}\n'
    )
    command = (
        'echo "env=${ASSAY_PROMPT-unset}"; tr "\\000" @ < "$ASSAY_PROMPT_FILE"; echo; tr "\\000" @'
    )
    text = f"""\
task_id: nul
description: d
initial_prompt: "${{row.x}}"
agent: {{type: command, command: {json.dumps(command)}}}
dataset: {{paths: [d.jsonl]}}
success_criteria:
  - {{type: response_match, expected: "@", match: contains}}
"""
    done = assay("run", str(write(tmp_path / "t.yaml", text)), cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # no gate: row d fails, as it should
    response = latest(tmp_path) / "default/nul/c/00/response.txt"
    assert response.read_text() == "env=unset\nnul @ z\nnul @ z"
    assert task_json(tmp_path, "nul", "d")["final_status"] == "FAILURE"


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="needs /dev/shm")
def test_kept_sandbox_with_a_fifo_on_another_filesystem(tmp_path: Path) -> None:
    path = command_task(tmp_path, "mkfifo pipe; echo positive")
    run_dir = Path("/dev/shm") / f"assay-test-{uuid.uuid4().hex}"
    try:
        done = assay("run", str(path), "-q", "--keep-sandboxes", "--run-dir", str(run_dir),
                     cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr
        latest_run = (run_dir / "latest").resolve()
        assert suite_json(latest_run, "t")["rows_passed"] == 2
        assert (latest_run / "run.md").exists()
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


# the shell and its sleep both record their pid; every one must be gone after the run stops
AGENT = "echo $$ >> {pids}; sh -c 'echo $$ >> {pids}; exec sleep 30'; echo positive"


def test_sigterm_stops_the_run_kills_agents_and_writes_run_json(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    path = command_task(tmp_path, AGENT.format(pids=pids))
    # a real process: SIGTERM to the process, its agents killed, its exit status
    process = start_assay("run", str(path), "-q", cwd=tmp_path)
    wait_for(lambda: len(pids_in(pids)) == 4, what="both agents and their children started")
    process.send_signal(signal.SIGTERM)
    _, err = finish(process)
    assert process.returncode == 130, err
    wait_gone(pids_in(pids))
    run = json.loads((latest(tmp_path) / "run.json").read_text())
    assert run["interrupted"] is True and run["exit_code"] == 130


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_ctrl_c_with_agents_running_prints_no_asyncio_noise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sigint: SigintAtStart
) -> None:
    monkeypatch.setenv("SLOW_KEY", "k")
    with scripted_server(lambda body: Fault(delay=20)) as server:
        text = f"""\
task_id: noise
description: d
initial_prompt: "x ${{row.id}}"
agent: {{type: llm, model: openai/m, base_url: "{server.base_url}", api_key_env: SLOW_KEY}}
dataset:
  rows: [{{id: a}}, {{id: b}}, {{id: c}}, {{id: d}}]
success_criteria:
  - {{type: response_match, expected: ok}}
"""
        path = write(tmp_path / "t.yaml", text)
        # a real process: Ctrl-C and what the interpreter prints as it ends
        process = start_assay("run", str(path), "-q", "-j", "2", cwd=tmp_path, sigint=sigint)
        wait_for(lambda: server.in_flight == 2, what="two model calls in flight")
        process.send_signal(signal.SIGINT)
        _, err = finish(process)
    assert process.returncode == 130, err
    assert "Exception ignored" not in err
    assert "Event loop is closed" not in err
    assert "Traceback" not in err


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_command_agents_interrupted_print_no_asyncio_noise(
    tmp_path: Path, sigint: SigintAtStart
) -> None:
    pids = tmp_path / "pids"
    rows = "[{id: a}, {id: b}, {id: c}, {id: d}]"  # rows still queued matter
    path = command_task(tmp_path, AGENT.format(pids=pids), rows)
    # a real process: Ctrl-C and what the interpreter prints as it ends
    process = start_assay("run", str(path), "-q", "-j", "2", cwd=tmp_path, sigint=sigint)
    wait_for(lambda: len(pids_in(pids)) == 4, what="two agents and their children started")
    process.send_signal(signal.SIGINT)
    _, err = finish(process)
    assert process.returncode == 130, err
    assert "Exception ignored" not in err and "Event loop is closed" not in err
    wait_gone(pids_in(pids))


def test_junit_xml_parses_when_the_agent_prints_control_characters(tmp_path: Path) -> None:
    path = command_task(tmp_path, "printf '\\033[1merr\\001 boom\\n' >&2; exit 3", "[{id: a}]")
    report = tmp_path / "j.xml"
    done = assay("run", str(path), "--junit-xml", str(report), cwd=tmp_path)
    finished(done, latest(tmp_path))
    root = ET.parse(report).getroot()
    case = next(c for c in root.iter("testcase") if c.get("name") == "a")
    problem = case.find("error")
    if problem is None:
        problem = case.find("failure")
    assert problem is not None
    text = (problem.get("message") or "") + (problem.text or "")
    assert "exited with code 3" in text and "boom" in text


def test_a_200_kb_prompt_reaches_a_command_agent(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text(json.dumps({"id": "big", "x": "w " * 100_000}) + "\n")
    command = 'wc -c < "$ASSAY_PROMPT_FILE"; wc -c'
    text = f"""\
task_id: e2
description: d
initial_prompt: "${{row.x}}"
agent: {{type: command, command: {json.dumps(command)}}}
dataset: {{paths: [d.jsonl]}}
success_criteria:
  - {{type: response_match, expected: "200000", match: contains}}
"""
    done = assay("run", str(write(tmp_path / "t.yaml", text)), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    task = task_json(tmp_path, "e2", "big")
    assert task["final_status"] == "SUCCESS", task["error_message"]
    response = (latest(tmp_path) / "default/e2/big/00/response.txt").read_text()
    assert response.split() == ["200000", "200000"]


def test_corrupted_task_json_is_named_by_report(tmp_path: Path) -> None:
    path = command_task(tmp_path, "echo positive")
    assert assay("run", str(path), "-q", cwd=tmp_path).returncode == 0
    broken = latest(tmp_path) / "default/t/a/00/task.json"
    broken.write_text('{"trunc')
    done = assay("report", str(latest(tmp_path)), cwd=tmp_path)
    assert done.returncode == 2
    assert "default/t/a/00/task.json" in done.stderr
    assert "Traceback" not in done.stderr


def test_yaml_billion_laughs_is_refused_before_it_expands(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, 9):
        aliases = ",".join([f"*a{level - 1}"] * 10)
        lines.append(f"a{level}: &a{level} [{aliases}]")
    path = write(tmp_path / "bomb.yaml", "\n".join(lines) + "\ntask_id: t1\n")
    done = assay("plan", str(path), cwd=tmp_path)  # 10**9 values if expanded: refused before
    assert done.returncode == 2
    assert "expands to more than 1,000,000 values" in done.stderr


def test_unusable_output_paths_are_refused_before_any_row_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    path = command_task(tmp_path, f"touch {marker}; echo positive")
    (tmp_path / "adir").mkdir()
    done = assay("run", str(path), "--junit-xml", "adir", cwd=tmp_path)
    assert done.returncode == 2
    assert "adir" in done.stderr and "Traceback" not in done.stderr
    (tmp_path / "afile").write_text("")
    done = assay("run", str(path), "--run-dir", "afile", cwd=tmp_path)
    assert done.returncode == 2
    assert "afile" in done.stderr and "Traceback" not in done.stderr
    assert not marker.exists()


def test_unwritable_junit_path_is_refused_before_any_row_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    path = command_task(tmp_path, f"touch {marker}; echo positive")
    done = assay("run", str(path), "--junit-xml", "/proc/assay-junit.xml", cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert not marker.exists()


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["schema", "-o", "adir"], "--output adir is a folder; give a file name"),
        (["schema", "-o", "/proc/nope/x.json"],
         "--output /proc/nope/x.json: its folder cannot be created: cannot write in /proc: No such "
         "file or directory"),
        (["report", "RUN", "--junit-xml", "adir"],
         "--junit-xml adir is a folder; give a file name"),
        (["report", "RUN", "--junit-xml", "/proc/nope/x.xml"],
         "--junit-xml /proc/nope/x.xml: its folder cannot be created: cannot write in /proc: No "
         "such file or directory"),
        (["evaluate", "RUN", "--junit-xml", "adir"],
         "--junit-xml adir is a folder; give a file name"),
        (["run", "t.yaml", "--junit-xml", "adir"],
         "--junit-xml adir is a folder; give a file name"),
        (["qa", "convert", "q.jsonl", "-o", "adir", "--from", "jsonl-answers"],
         "--output adir is a folder; give a file name"),
        (["dataset", "export", "ds", "-o", "adir"], "--output adir is a folder; give a file name"),
        (["compare", "RUN", "RUN", "-o", "afile"], "--output afile is a file, not a folder"),
        (["judge", "calibrate", "j", "--dataset", "ds", "--label", "l", "-o", "afile"],
         "--output afile is a file, not a folder"),
    ],
)  # fmt: skip
def test_an_output_path_that_cannot_be_written_is_one_line_and_exit_2(
    tmp_path: Path, args: list[str], error: str
) -> None:
    path = command_task(tmp_path, "echo positive")
    assert assay("run", str(path), "-q", cwd=tmp_path).returncode == 0
    run = latest(tmp_path)
    (tmp_path / "adir").mkdir()
    write(tmp_path / "afile", "")
    write(tmp_path / "q.jsonl", '{"id": "1", "question": "q?", "answers": ["yes"]}\n')
    reports = {p: p.stat().st_mtime_ns for p in run.rglob("*.json*")}
    done = assay(*[str(run) if a == "RUN" else a for a in args], cwd=tmp_path)
    assert (done.returncode, done.stderr) == (2, f"error: {error}\n")
    assert {p: p.stat().st_mtime_ns for p in run.rglob("*.json*")} == reports  # nothing rewritten


@pytest.mark.parametrize(
    "args",
    [
        ["judge", "calibrate", "nojudge", "--dataset", "ds", "--label", "l", "-o", "out/cal"],
        ["compare", "nothere", "nothere", "-o", "out/cmp"],
        ["dataset", "export", "nods", "-o", "out/deeper/x.jsonl"],
    ],
)
def test_a_command_that_fails_creates_no_output_folder(tmp_path: Path, args: list[str]) -> None:
    done = assay(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert not (tmp_path / "out").exists(), done.stderr
