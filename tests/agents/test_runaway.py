"""A runaway agent's output is capped per stream: what passes the cap is never held in
memory but written whole, as it is read, to a file in the row's folder (redacted, and cut
at its own cap so a flood cannot fill the disk either), so the assay process's memory stays
bounded, and the kept text names the cut and the file (issue 28 item 8)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from assay import api
from assay.errors import UserError
from assay.sandbox import cgroups
from assay.sandbox.process import TAIL_BYTES
from tests.helpers import kill_left, pids_in, wait_gone, write

PEAK = """
import asyncio, resource, sys
from pathlib import Path
from assay.sandbox.process import run_process

result = asyncio.run(run_process(sys.argv[1], cwd=Path.cwd(), env={"PATH": "/usr/bin:/bin"},
                                 timeout=300))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, len(result.stdout), result.dropped)
"""


def peak(command: str, folder: Path) -> tuple[int, int, int]:
    """Peak RSS (KiB) of a process that ran ``command`` through run_process, the length of
    the stdout text it kept, and the bytes dropped."""
    done = subprocess.run([sys.executable, "-c", PEAK, command], cwd=folder,
                          capture_output=True, text=True, timeout=600, check=True)  # fmt: skip
    rss, kept, dropped = (int(part) for part in done.stdout.split())
    return rss, kept, dropped


def test_200_mb_of_output_keeps_memory_bounded(tmp_path: Path) -> None:
    small_rss, small_kept, small_dropped = peak("head -c 1000 /dev/zero", tmp_path)
    capped_rss, _, _ = peak("head -c 11000000 /dev/zero", tmp_path)  # just past the cap
    big_rss, big_kept, big_dropped = peak("head -c 200000000 /dev/zero", tmp_path)
    assert (small_kept, small_dropped) == (1000, 0)
    assert big_dropped == 200_000_000 - 10 * 1024 * 1024
    assert big_kept < 10 * 1024 * 1024 + TAIL_BYTES + 200  # the start, the last 64 KiB
    # KiB. 190 MB more output than the capped run costs no more memory than it (kept before:
    # 200 MB of bytes, then their text); and the cap's own cost stays well under the output.
    assert big_rss < capped_rss + 32 * 1024
    assert big_rss < small_rss + 160 * 1024


PEAK_LOGGED = """
import asyncio, resource, sys
from pathlib import Path
from assay.results.io import LogFolder, Writer
from assay.results.secrets import Redactor
from assay.sandbox.process import run_process

logs = LogFolder(Path("row"), Writer(Redactor()), max_bytes=600_000_000).logs("agent")
result = asyncio.run(run_process(sys.argv[1], cwd=Path.cwd(), env={"PATH": "/usr/bin:/bin"},
                                 timeout=600, logs=logs))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, len(result.stdout), result.dropped)
"""


def test_a_500_mb_flood_is_streamed_to_disk_not_memory(tmp_path: Path) -> None:
    """Issue 28 item 8: 500 MB of stdout all land in the stream's log, through the redactor
    (token shapes searched), while the process's peak memory grows by far less than the
    flood: the 489 MB past the cap cost no more memory than 1 MB past it."""

    def logged(command: str, folder: Path) -> tuple[int, int]:
        folder.mkdir()
        done = subprocess.run([sys.executable, "-c", PEAK_LOGGED, command], cwd=folder,
                              capture_output=True, text=True, timeout=900, check=True)  # fmt: skip
        rss, _, dropped = (int(part) for part in done.stdout.split())
        return rss, dropped

    small_rss, small_dropped = logged("head -c 1000 /dev/zero", tmp_path / "small")
    capped_rss, _ = logged("head -c 11000000 /dev/zero", tmp_path / "capped")  # past the cap
    big_rss, big_dropped = logged("head -c 500000000 /dev/zero", tmp_path / "big")
    assert small_dropped == 0 and not (tmp_path / "small" / "row").exists()
    assert big_dropped == 500_000_000 - 10 * 1024 * 1024
    assert (tmp_path / "big" / "row" / "agent.stdout.log").stat().st_size == 500_000_000
    # KiB. 489 MB more output than the capped run costs no more memory than it; the cap's
    # own cost (the kept 10 MiB, its text, the token shapes' library) stays under a quarter
    # of the flood.
    assert big_rss < capped_rss + 16 * 1024
    assert big_rss - small_rss < 500_000_000 // 1024 // 4


def test_both_streams_are_capped_and_the_cut_is_marked(tmp_path: Path) -> None:
    command = "head -c 3000 /dev/zero | tr '\\\\0' o; head -c 5000 /dev/zero | tr '\\\\0' e >&2"
    code = (
        "import asyncio, sys; from pathlib import Path; "
        "from assay.sandbox.process import run_process; "
        f"r = asyncio.run(run_process({command!r}, cwd=Path.cwd(), "
        "env={'PATH': '/usr/bin:/bin'}, timeout=60, max_output_bytes=1000)); "
        "print(repr(r.shown_stdout[-80:])); print(repr(r.stderr[-80:])); print(r.dropped); "
        "print(len(r.stdout) == 1000 and '[assay' not in r.stdout)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=True)  # fmt: skip
    out, err, dropped, kept = done.stdout.splitlines()
    assert kept == "True"  # what the program wrote; the note is apart (shown_stdout)
    assert "output cut after 1000 bytes; 2000 more bytes dropped" in out
    assert "output cut after 1000 bytes; 4000 more bytes dropped" in err
    assert dropped == "6000"


def test_a_command_agent_row_records_the_cut(tmp_path: Path) -> None:
    task = write(
        tmp_path / "task.yaml",
        """\
task_id: loud
description: an agent that prints 12 MiB
initial_prompt: go
agent:
  type: command
  command: "head -c 12582912 /dev/zero | tr '\\\\0' y"
success_criteria:
  - type: run_command
    command: "true"
""",
    )
    result = api.run([str(task)], run_dir=str(tmp_path / "runs"))
    (path,) = result.run_dir.glob("**/task.json")
    record = json.loads(path.read_text())
    assert record["agent"]["output_dropped_bytes"] == 2097152
    assert record["agent"]["output_logs"] == ["agent.stdout.log"]
    assert_noted(path.parent, kept_10485760, "output cut after 10485760 bytes; "
                 "2031616 more bytes not kept here; the whole stream is in agent.stdout.log; the "
                 "last 65536 bytes above are its end]")  # fmt: skip
    log = path.parent / "agent.stdout.log"
    assert log.stat().st_size == 12582912
    with log.open("rb") as handle:  # all of it, and nothing but it
        assert all(block == b"y" * len(block) for block in iter(lambda: handle.read(1 << 20), b""))
    assert not (path.parent / "agent.stderr.log").exists()  # a short stream makes no file


CAPPED = """\
task_id: loud
description: an agent, a pre_run, a post_run and a criterion that print 300 KiB each
initial_prompt: go
sandbox: {{driver: {driver}, limits: {{max_output_mb: 0.125}}{docker}}}
pre_run:
  - command: "head -c 307200 /dev/zero | tr '\\\\0' p >&2"
agent:
  type: command
  command: "head -c 307200 /dev/zero | tr '\\\\0' y"
success_criteria:
  - type: run_command
    command: "head -c 307200 /dev/zero | tr '\\\\0' z; echo END"
    expected_stdout: "END"
    stdout_match: contains
post_run:
  - command: "head -c 307200 /dev/zero | tr '\\\\0' q"
"""


def capped_run(
    tmp_path: Path, driver: str, docker: str = "", **options: Any
) -> tuple[dict[str, Any], Path]:
    """Run :data:`CAPPED` on ``driver`` (``options`` as for :func:`assay.api.run`): its
    ``task.json`` and its row folder."""
    task = write(tmp_path / "task.yaml", CAPPED.format(driver=driver, docker=docker))
    result = api.run([str(task)], run_dir=str(tmp_path / "runs"), **options)
    (path,) = result.run_dir.glob("**/task.json")
    return json.loads(path.read_text()), path.parent


def assert_capped(record: dict[str, Any], folder: Path) -> None:
    """What is kept in memory is 128 KiB of each stream, and each stream is whole on disk."""
    assert record["agent"]["output_dropped_bytes"] == 307200 - 131072
    assert record["agent"]["output_logs"] == ["agent.stdout.log"]
    assert_noted(folder, kept_131072, "output cut after 131072 bytes; 110592 "
                 "more bytes not kept here; the whole stream is in agent.stdout.log; the last "
                 "65536 bytes above are its end]")  # fmt: skip
    criterion = record["success_criteria_results"][0]
    assert criterion["score"] == 1.0  # END came after the cap, in the last 64 KiB kept
    assert record["pre_run_results"][0]["output_logs"] == ["pre_run-1.stderr.log"]
    assert record["pre_run_results"][0]["stderr"].endswith(
        "in pre_run-1.stderr.log; the last 65536 bytes above are its end]\n")  # fmt: skip
    assert record["post_run_results"][0]["output_logs"] == ["post_run-1.stdout.log"]
    wanted = {"agent.stdout.log": b"y" * 307200, "pre_run-1.stderr.log": b"p" * 307200,
              "command-1.stdout.log": b"z" * 307200 + b"END\n",
              "post_run-1.stdout.log": b"q" * 307200}  # fmt: skip
    assert {p.name: p.read_bytes() for p in folder.glob("*.log") if p.name != "task.log"} == wanted


@pytest.mark.parametrize("driver", ["tempdir", "bwrap"])
def test_the_cap_is_the_tasks_sandbox_limits_max_output_mb(tmp_path: Path, driver: str) -> None:
    """Issue 28 item 8: what is kept of each stream is configurable, for the agent's program,
    a pre_run or post_run command and a criterion's command alike; each whole stream is in
    its own file in the row's folder."""
    assert_capped(*capped_run(tmp_path, driver))


def test_evaluate_writes_a_criterions_whole_stream_too(tmp_path: Path) -> None:
    """``assay evaluate`` runs the criteria's commands again with the same cap and logs: the
    criterion's whole stream is in ``command-1.stdout.log`` again (here removed after the
    run, and a stale log of the earlier grading removed), not dropped past the cap."""
    _, folder = capped_run(tmp_path, "tempdir", keep_sandboxes=True)
    (folder / "command-1.stdout.log").unlink()
    (folder / "command-7.stderr.log").write_text("from an earlier grading")
    api.evaluate(tmp_path / "runs" / "latest", jobs=1)
    regraded = json.loads((folder / "task.json").read_text())
    assert regraded["success_criteria_results"][0]["score"] == 1.0  # END: in the kept end
    assert (folder / "command-1.stdout.log").read_bytes() == b"z" * 307200 + b"END\n"
    assert not (folder / "command-7.stderr.log").exists()


@pytest.mark.docker
def test_the_cap_holds_in_a_container(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The same implementation on the ``docker`` driver (the engine's client is read
    through the same pipes)."""
    _, image = request.getfixturevalue("podman_image")
    docker = f", docker: {{engine: podman, image: '{image}'}}"
    assert_capped(*capped_run(tmp_path, "docker", docker))


def test_a_log_is_cut_at_max_log_mb_and_says_so(tmp_path: Path) -> None:
    """A flood cannot fill the disk: each log holds ``max_log_mb`` of its stream, then a
    line naming the cut; the kept text says the log holds only the start."""
    task = write(tmp_path / "task.yaml", """\
task_id: flood
description: an agent that prints more than its log may hold
initial_prompt: go
sandbox: {limits: {max_output_mb: 0.125, max_log_mb: 0.25}}
agent:
  type: command
  command: "head -c 409600 /dev/zero | tr '\\\\0' y"
success_criteria:
  - {type: run_command, command: "true"}
""")  # fmt: skip
    result = api.run([str(task)], run_dir=str(tmp_path / "runs"))
    (path,) = result.run_dir.glob("**/task.json")
    log = (path.parent / "agent.stdout.log").read_bytes()
    cut = b"\n[assay: log cut after 262144 bytes (sandbox.limits.max_log_mb); 147456 more bytes "
    assert log == b"y" * 262144 + cut + b"not written]\n"
    assert_noted(path.parent, kept_131072, "212992 more bytes not kept here; "
                 "agent.stdout.log holds its first 262144 bytes (sandbox.limits.max_log_mb); the "
                 "last 65536 bytes above are its end]")  # fmt: skip


@pytest.mark.parametrize(("log_mb", "output_mb"), [(0.5, 1), (1, 2.5)])
def test_a_log_smaller_than_what_is_kept_is_refused(
    tmp_path: Path, log_mb: float, output_mb: float
) -> None:
    task = write(tmp_path / "task.yaml", f"""\
task_id: small
description: a log cap below the memory cap
initial_prompt: go
sandbox: {{limits: {{max_output_mb: {output_mb}, max_log_mb: {log_mb}}}}}
agent: {{type: command, command: "true"}}
success_criteria:
  - {{type: run_command, command: "true"}}
""")  # fmt: skip
    with pytest.raises(UserError) as caught:
        api.run([str(task)], run_dir=str(tmp_path / "runs"))
    message = str(caught.value)
    assert "task.yaml" in message and "sandbox.limits" in message
    assert f"max_log_mb ({log_mb:g}) is smaller than max_output_mb ({output_mb:g})" in message
    assert "raise max_log_mb or lower max_output_mb" in message


def test_a_coding_agents_long_stderr_is_written_whole(tmp_path: Path) -> None:
    """A coding agent's CLI (:func:`stream_process`): its stdout is read line by line, its
    stderr's end kept; a stderr longer than that end is written whole to the agent's log,
    redacted, a token split between two reads of the pipe included."""
    from assay.results.io import LogFolder, Writer
    from assay.results.secrets import Redactor
    from assay.sandbox.process import STDERR_TAIL, stream_process

    script = (
        "import sys, time\n"
        "sys.stderr.write('e' * 65530 + ' glpat-Zx81'); sys.stderr.flush(); time.sleep(0.3)\n"
        "sys.stderr.write('kQ2wL0pR7mN4bV6c ' + 'f' * 200000); print('{\"done\": 1}')\n"
    )
    lines: list[str] = []
    logs = LogFolder(tmp_path / "row", Writer(Redactor()), 1 << 30).logs("agent")
    result = asyncio.run(stream_process([sys.executable, "-c", script], cwd=tmp_path,
                                        env={"PATH": "/usr/bin:/bin"}, timeout=60,
                                        on_line=lines.append, logs=logs))  # fmt: skip
    assert lines == ['{"done": 1}'] and result.exit_code == 0
    assert result.logs == (tmp_path / "row" / "agent.stderr.log",)
    assert (tmp_path / "row" / "agent.stderr.log").read_bytes() == (
        b"e" * 65530 + b" [redacted:gitlab-token] " + b"f" * 200000
    )
    total = 65530 + 28 + 200000
    assert result.stderr.endswith(f"[assay: {total} bytes of stderr, its end kept here; the "
                                  "whole stream is in agent.stderr.log]\n")  # fmt: skip
    assert len(result.stderr) < STDERR_TAIL + 200


LEAVER = """\
task_id: leaver
description: an agent and a criterion that leave processes running outside their group
initial_prompt: go
agent:
  type: command
  command: >-
    setsid sleep 300 >/dev/null 2>&1 & echo $! >> {pids};
    nohup sleep 300 >/dev/null 2>&1 & echo $! >> {pids};
    (sleep 300 >/dev/null 2>&1 &) ;
    env -i setsid sleep 301 >/dev/null 2>&1 & echo $! >> {pids};
    (cd / && env -i setsid sleep 302 >/dev/null 2>&1 & echo $! >> {pids}); echo yes
success_criteria:
  - type: run_command
    command: "setsid sleep 300 >/dev/null 2>&1 & echo $! >> {pids}; true"
"""


def leavers_end_with_their_row(folder: Path) -> None:
    """Run LEAVER; its five leavers end with the row."""
    pids = folder / "pids"
    task = write(folder / "task.yaml", LEAVER.format(pids=pids))
    try:
        result = api.run([str(task)], run_dir=str(folder / "runs"))
        assert result.exit_code == 0
        assert len(pids_in(pids)) == 5
        wait_gone(pids_in(pids), 30)
    finally:
        kill_left(pids_in(pids))


def test_processes_a_row_left_running_end_with_it(tmp_path: Path) -> None:
    """One cleared its environment: found by its working folder; one also left that folder:
    found by the row's control group."""
    leavers_end_with_their_row(tmp_path)


def test_without_cgroups_the_rows_subreaper_finds_the_last_leaver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A machine that gives no row groups (cgroup v2 only, or not root): the one that cleared
    its environment and left the folder is found by the subreaper's record."""
    monkeypatch.setattr(cgroups, "find", lambda **_: "no cgroup v1 hierarchy here")
    leavers_end_with_their_row(tmp_path)


LATE_WRITER = """\
task_id: late
description: an agent that leaves a process to change its files while they are graded
initial_prompt: go
agent:
  type: command
  command: "nohup sh -c 'sleep 1; echo forged > answer.txt' >/dev/null 2>&1 & echo done"
success_criteria:
  - type: run_command
    command: "sleep 3; cat answer.txt 2>/dev/null || echo nothing"
    expected_stdout: nothing
"""


def test_on_tempdir_what_the_agent_left_running_ends_before_the_criteria_run(
    tmp_path: Path,
) -> None:
    """Field report: on ``tempdir`` a process the agent left running (``nohup … &``) went on
    while the criteria ran, and wrote the file they graded (``bwrap`` and ``docker`` end it
    with the agent's sandbox)."""
    task = write(tmp_path / "task.yaml", LATE_WRITER)
    result = api.run([str(task)], run_dir=str(tmp_path / "runs"))
    (row,) = result.rows()
    assert row.final_status.value == "SUCCESS", row.error_message
    assert row.success_criteria_results[0].score == 1.0


SPLIT = """\
task_id: split
description: an agent whose output passes a cap in the middle of a secret
initial_prompt: "${{row.keep}} ${{row.stream}} ${{row.cap}} ${{row.tok}}"
sandbox: {{limits: {{max_output_mb: 0.01, max_log_mb: 0.02}}}}
agent:
  type: command
  command: python3 {script}
  env: {{MY_API_TOKEN: "zQ9v7LkPq2Xw8RtY5uNm"}}
dataset:
  rows:
    - {{id: output-known, keep: 12, stream: out, cap: 10485, tok: ""}}
    - {{id: output-github, keep: 30, stream: out, cap: 10485,
        tok: "ghp_aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"}}
    - {{id: stderr-known, keep: 9, stream: err, cap: 10485, tok: ""}}
    - {{id: log-known, keep: 12, stream: out, cap: 20971, tok: ""}}
    - {{id: log-aws, keep: 16, stream: err, cap: 20971, tok: "AKIAIOSFODNN7EXAMPL3"}}
success_criteria:
  - {{type: response_match, expected: tail, match: contains}}
"""

SPLITTER = """\
import os, sys
keep, stream, cap, *given = os.environ["ASSAY_PROMPT"].split()
token = given[0] if given else os.environ["MY_API_TOKEN"]
pad = ("p" * 40 + "\\n") * ((int(cap) - int(keep)) // 41)
pad += "q" * (int(cap) - int(keep) - 1 - len(pad)) + " "
out = sys.stdout if stream == "out" else sys.stderr
out.write(pad + token + " tail\\n" + "z" * 30000 + "\\n")
"""


def test_a_cut_never_keeps_a_piece_of_a_secret(tmp_path: Path) -> None:
    """Issue 28 (found in review): the ``max_output_mb`` cut of what is kept, and the
    ``max_log_mb`` cut of a log, fall inside a known secret or a token; neither the kept
    text (response.txt, task.json, trace.json) nor the log holds a piece of it, and the kept
    part ends at the whitespace before it."""
    script = write(tmp_path / "split.py", SPLITTER)
    task = write(tmp_path / "task.yaml", SPLIT.format(script=script))
    result = api.run([str(task)], run_dir=str(tmp_path / "runs"), jobs=2)
    pieces = ["zQ9v7Lk", "ghp_aB3", "AKIAIOS", "Xw8RtY5", "F3hJ6", "EXAMPL3"]
    for path in result.run_dir.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert not [p for p in pieces if p in text], path
    folder = result.run_dir / "default" / "split"
    response = (folder / "output-known" / "00" / "response.txt").read_text()
    assert response.endswith("qqq ")  # graded as the agent wrote it; the note is apart
    trace = (folder / "output-known" / "00" / "trace.json").read_text()
    assert "qqq \\n[assay: output cut after 10473 bytes; " in trace
    log = (folder / "log-known" / "00" / "agent.stdout.log").read_text()
    assert log.endswith("q \n[assay: log cut after 20959 bytes (sandbox.limits.max_log_mb); "
                        "30027 more bytes not written]\n")  # fmt: skip


TAIL_START = """
import asyncio, sys
from pathlib import Path
from assay.results.io import OutputLogs, Writer
from assay.results.secrets import Redactor
from assay.sandbox.process import STDERR_TAIL, stream_process

secret, shift = sys.argv[1], int(sys.argv[2])
known = Redactor()
known.add("MY_API_TOKEN", secret)
line = "err " + secret + "\\n"
body = line * (2 * STDERR_TAIL // len(line) + 3) + "x" * shift
argv = [sys.executable, "-c", "import sys; sys.stderr.write(sys.stdin.read())"]
done = asyncio.run(stream_process(argv, cwd=Path.cwd(), env={}, timeout=60, on_line=print,
                                  stdin=body,
                                  logs=OutputLogs(Path.cwd(), "agent", Writer(known), 1 << 20)))
print(done.stderr.split()[0])
"""


def test_a_streamed_programs_stderr_end_starts_after_a_secret(tmp_path: Path) -> None:
    """The kept end of a coding agent's stderr (:func:`stream_process`) starts where no
    secret or token is split: the end piece of one at its start is left out."""
    secret = "zQ9v7LkPq2Xw8RtY5uNm"
    script = write(tmp_path / "tail.py", TAIL_START)
    for shift in range(0, 25, 3):  # the kept end starts at each place in a line
        done = subprocess.run([sys.executable, str(script), secret, str(shift)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stdout.split()[-1] in {"err", secret}, shift  # a whole word first


kept_10485760 = "y" * 10485760 + "\n" + "y" * TAIL_BYTES  # the start, a line break, the end
kept_131072 = "y" * 131072 + "\n" + "y" * TAIL_BYTES


def assert_noted(folder: Path, response: str, note: str) -> None:
    """The response graded (``response.txt``) is what the agent wrote, without assay's note
    of the cut; the note stands in its transcript (``trace.json``) and every criterion that
    reads the response names the cut."""
    assert (folder / "response.txt").read_text() == response
    assert note in (folder / "trace.json").read_text()


def test_a_criterion_grades_what_the_agent_wrote_and_names_the_cut(tmp_path: Path) -> None:
    """assay's note of the cut is never graded as the agent's words, and a criterion that
    reads the response says it saw only the part kept (``assay evaluate`` too)."""
    task = write(tmp_path / "task.yaml", """\
task_id: cut
description: an answer after the cap
initial_prompt: go
sandbox: {limits: {max_output_mb: 0.125}}
agent:
  type: command
  command: "head -c 200000 /dev/zero | tr '\\\\0' x; echo ANSWER=42"
success_criteria:
  - {type: response_match, match: contains, expected: "the whole stream is in agent.stdout.log"}
""")  # fmt: skip
    result = api.run([str(task)], run_dir=str(tmp_path / "runs"))
    (path,) = result.run_dir.glob("**/task.json")
    details = json.loads(path.read_text())["success_criteria_results"][0]["details"]
    cut = "cut at sandbox.limits.max_output_mb: graded on its first 131072 bytes"
    assert details.startswith(f"the final response ({cut}, 68938 more not seen) ")
    assert details.endswith("does not match (contains) 'the whole stream is in "
                            "agent.stdout.log'")  # fmt: skip
    again = api.evaluate(result.run_dir)
    (path,) = again.run_dir.glob("**/task.json")
    assert json.loads(path.read_text())["success_criteria_results"][0]["details"] == details
