"""Ctrl-C stops a run cleanly: exit 130, finished rows kept, reports written, no sandbox or
agent left, whether assay started with SIGINT at its default (a terminal) or ignored (started
in the background by a script or CI: an explicit SIGINT still stops it)."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.cli.inproc import run_in_process
from tests.cli.test_run import latest
from tests.helpers import (
    SigintAtStart,
    finish,
    pids_in,
    start,
    start_assay,
    wait_for,
    wait_gone,
    write,
)

TASK = """\
task_id: slow
description: rows that finish one by one
initial_prompt: "${{row.id}}"
agent:
  type: command
  command: >-
    case "$ASSAY_ROW_ID" in r0|r1) echo fast;;
    *) echo $$ >> {pids}; {wait};; esac
dataset:
  rows: [{{id: r0}}, {{id: r1}}, {{id: r2}}, {{id: r3}}]
success_criteria:
  - {{type: response_match, expected: fast}}
"""


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_sigint_keeps_finished_rows_and_exits_130(tmp_path: Path, sigint: SigintAtStart) -> None:
    pids = tmp_path / "pids"
    path = write(tmp_path / "slow.yaml", TASK.format(pids=pids, wait="exec sleep 30"))
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    # a real process: SIGINT/SIGTERM and the disposition it started with are process-wide
    process = start_assay("run", str(path), "-j", "4", "--junit-xml", "j.xml", cwd=tmp_path,
                          sigint=sigint, env=env)  # fmt: skip
    run_dir = tmp_path / "runs" / "latest"

    def two_done_two_running() -> bool:
        done = list(run_dir.glob("default/slow/*/00/task.json"))
        return len(done) == 2 and len(pids_in(pids)) == 2

    wait_for(two_done_two_running, what="r0 and r1 finished, r2 and r3 running")
    process.send_signal(signal.SIGINT)
    _, err = finish(process)
    assert process.returncode == 130, err
    run = json.loads((latest(tmp_path) / "run.json").read_text())
    assert run["interrupted"] is True
    assert run["exit_code"] == 130
    assert sorted(r["row_id"] for r in run["task_results"]) == ["r0", "r1"]
    assert list((tmp_path / "tmp").iterdir()) == []  # in-flight sandboxes removed
    assert (latest(tmp_path) / "default/slow/suite.json").exists()
    wait_gone(pids_in(pids))  # the agents still running were killed
    # CI reading the JUnit file sees the run is not green: the rows that never ran fail a
    # case of their own (the suite has no gate; it was all green before)
    junit = ElementTree.parse(tmp_path / "j.xml").getroot().find("testsuite")
    assert junit is not None and junit.get("failures") == "1" and junit.get("tests") == "3"
    failure = junit.find("testcase[@name='rows that never ran']/failure")
    assert failure is not None and failure.text == "2 planned row(s) never ran"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_stop_a_run_as_ctrl_c_does(tmp_path: Path, sig: signal.Signals) -> None:
    """A closed terminal (SIGHUP) killed a run as kill -9 would: no reports, the lock left and
    its agents running on (a platform engineer's break-test)."""
    pids = tmp_path / "pids"
    path = write(tmp_path / "slow.yaml", TASK.format(pids=pids, wait="exec sleep 30"))
    process = start_assay("run", str(path), "-j", "4", cwd=tmp_path, sigint="ignored")
    run_dir = tmp_path / "runs" / "latest"
    wait_for(lambda: len(list(run_dir.glob("default/slow/*/00/task.json"))) == 2
             and len(pids_in(pids)) == 2, what="r0 and r1 finished, r2 and r3 running")  # fmt: skip
    process.send_signal(sig)
    _, err = finish(process)
    assert process.returncode == 130, err
    run = json.loads((latest(tmp_path) / "run.json").read_text())
    assert run["interrupted"] is True and run["exit_code"] == 130
    assert (latest(tmp_path) / ".lock").read_text() == ""  # freed: no holder recorded
    wait_gone(pids_in(pids))


SEE_SIGINT = (
    "import signal; found = signal.getsignal(signal.SIGINT); "
    "print('ignored' if found == signal.SIG_IGN else "
    "'default' if found is signal.default_int_handler else repr(found))"
)


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_the_launcher_sets_the_sigint_disposition(tmp_path: Path, sigint: SigintAtStart) -> None:
    """The control for the case above: whatever pytest inherited, the program started sees
    SIGINT as asked (Python installs its handler only over a SIGINT at its default)."""
    out, _ = finish(start([sys.executable, "-c", SEE_SIGINT], cwd=tmp_path, sigint=sigint))
    assert out.strip() == sigint


HOLD = "while [ -e {hold} ]; do sleep 0.2; done; echo late"
"""Rows r2 and r3 wait while the file ``hold`` exists (for :data:`TASK`'s ``wait``)."""


def test_an_interrupted_execute_and_its_resume_say_not_graded_and_keep_their_parallelism(
    tmp_path: Path,
) -> None:
    """`assay execute` grades nothing: its suites are NOT GRADED (not FAILED "every row must
    succeed") in every report, before and after the resume, and the resume runs as many rows
    at once as the run did unless told otherwise."""
    pids, hold = tmp_path / "pids", write(tmp_path / "hold", "")
    path = write(tmp_path / "held.yaml", TASK.format(pids=pids, wait=HOLD.format(hold=hold)))
    process = start_assay("execute", str(path), "-j", "3", cwd=tmp_path)
    run_dir = tmp_path / "runs" / "latest"
    wait_for(lambda: len(list(run_dir.glob("default/slow/*/00/task.json"))) == 2
             and len(pids_in(pids)) == 2, what="r0 and r1 run, r2 and r3 held")  # fmt: skip
    process.send_signal(signal.SIGINT)
    out, err = finish(process)
    assert process.returncode == 130, err
    assert "not graded (2 planned row(s) never ran; 2 row(s) await `assay evaluate RUN_DIR`)" in (
        out
    )
    run_md = (latest(tmp_path) / "run.md").read_text()
    assert "| no gate | NOT GRADED | 2 planned row(s) never ran; 2 row(s) await" in run_md
    hold.unlink()
    resumed = run_in_process("run", "--resume", str(latest(tmp_path)), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "not graded (4 row(s) await `assay evaluate RUN_DIR`)" in resumed.stdout
    run = json.loads((latest(tmp_path) / "run.json").read_text())
    assert (run["max_parallel"], run["suites"][0]["awaiting_grading"]) == (3, True)
    suite_md = (latest(tmp_path) / "default/slow/suite.md").read_text()
    assert "**Result**: NOT GRADED — 4 row(s) await `assay evaluate RUN_DIR`" in suite_md
    graded = run_in_process("evaluate", str(latest(tmp_path)), cwd=tmp_path)
    assert graded.returncode == 1  # r2 and r3 answered "late": FAILED, a verdict at last
    assert "| no gate | FAILED | no gate, and 2 failed" in (latest(tmp_path) / "run.md").read_text()
    again = run_in_process("run", "--resume", str(latest(tmp_path)), "-j", "2", cwd=tmp_path)
    assert again.returncode == 1, again.stdout + again.stderr
    assert json.loads((latest(tmp_path) / "run.json").read_text())["max_parallel"] == 2


QUEUED = """\
task_id: queued
description: four rows running, two waiting
initial_prompt: "${{row.id}}"
agent: {{type: command, command: "echo $$ >> {pids}; exec sleep 30"}}
dataset:
  rows: [{{id: a}}, {{id: b}}, {{id: c}}, {{id: d}}, {{id: e}}, {{id: f}}]
success_criteria:
  - {{type: run_command, command: "true"}}
"""


def test_agents_killed_at_ctrl_c_are_reaped_once(tmp_path: Path) -> None:
    """The killed agents are reaped by asyncio's child watcher alone: closing their
    transports first reaped them there, and the watcher logged "exit status already read"
    for each row."""
    pids = tmp_path / "pids"
    path = write(tmp_path / "queued.yaml", QUEUED.format(pids=pids))
    process = start_assay("run", str(path), "-j", "4", "-q", cwd=tmp_path)
    wait_for(lambda: len(pids_in(pids)) == 4, what="four rows running")
    process.send_signal(signal.SIGINT)
    _, err = finish(process)
    assert process.returncode == 130, err
    assert "exit status already read" not in err
    assert "Traceback" not in err


REGRADED = """\
task_id: regrade
description: a criterion that is slow for some rows once a flag is there
initial_prompt: "${{row.id}}"
agent: {{type: command, command: "echo done"}}
dataset:
  rows: [{{id: r0}}, {{id: r1}}, {{id: r2}}, {{id: r3}}]
success_criteria:
  - type: run_command
    command: >-
      if [ -e {flag} ]; then case "$ASSAY_ROW_ID" in r0|r1) exit 1;;
      *) echo $$ >> {pids}; exec sleep 30;; esac; fi
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_evaluate_rebuilds_the_reports_over_the_mix(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """`assay evaluate` stopped by a signal left run.json saying 4 passed while two rows'
    task.json said failed (SIGTERM: exit 143, the lock held; a background SIGINT: ignored)."""
    pids, flag = tmp_path / "pids", tmp_path / "slow"
    write(tmp_path / "t.yaml", REGRADED.format(pids=pids, flag=flag))
    done = start_assay("run", "t.yaml", "--keep-sandboxes", cwd=tmp_path)
    finish(done)
    assert done.returncode == 0
    flag.touch()
    run_dir = latest(tmp_path)
    process = start_assay("evaluate", str(run_dir), cwd=tmp_path, sigint="ignored")

    def regraded() -> bool:
        rows = [json.loads((run_dir / f"default/regrade/{r}/00/task.json").read_text())
                for r in ("r0", "r1")]  # fmt: skip
        return len(pids_in(pids)) == 2 and all(r["final_status"] == "FAILURE" for r in rows)

    wait_for(regraded, what="r0 and r1 graded again, r2 and r3 grading")
    process.send_signal(sig)
    _, err = finish(process)
    assert process.returncode == 130, err
    assert "grading was stopped: the rows graded again so far keep their new grade" in err
    assert f"`assay evaluate {run_dir}` grades every row again" in err
    run = json.loads((run_dir / "run.json").read_text())
    assert (run["tasks_succeeded"], run["tasks_failed"]) == (2, 2)  # the reports over the mix
    assert any("grading was stopped" in warning for warning in run["warnings"])
    assert run["exit_code"] == 130  # as the command exited (it said 0)
    assert (run_dir / ".lock").read_text() == ""
    wait_gone(pids_in(pids))
    flag.unlink()  # every row passes and is quick again
    again = start_assay("evaluate", str(run_dir), cwd=tmp_path)
    finish(again)
    assert again.returncode == 0
    run = json.loads((run_dir / "run.json").read_text())
    assert (run["tasks_succeeded"], run["exit_code"]) == (4, 0)
    # the stopped grading's warning went with it (it stayed in every later run.json)
    assert not any("grading was stopped" in warning for warning in run["warnings"])


def test_an_interruption_while_the_reports_are_written_says_what_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C (or SIGTERM, SIGHUP) while the reports were written exited 130 with nothing
    said; the run's rows are kept and `assay report` writes the reports."""
    import assay
    import assay.api.runs as runs
    from assay.errors import Interrupted

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    path = write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: p\n"
                 "agent: {type: command, command: echo x}\n"
                 "success_criteria: [{type: response_match, expected: x}]\n")  # fmt: skip
    monkeypatch.setattr(runs, "write_session_reports", interrupted)
    with pytest.raises(Interrupted) as caught:
        assay.run(str(path), run_dir=str(tmp_path / "runs"))
    run_dir = latest(tmp_path)
    assert str(caught.value) == (f"while writing the reports of {run_dir}: every finished row "
                                 f"is kept; `assay report {run_dir}` writes them")  # fmt: skip
    assert (run_dir / "default/t/00/task.json").is_file()
    assert (run_dir / ".lock").read_text() == ""  # freed
