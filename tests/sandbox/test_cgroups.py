"""A row's own control groups on tempdir and bwrap, against the real kernel: a row that
passes ``max_memory_mb`` ends ERROR naming the limit, ``max_cpus`` bounds the CPU time of
the row's processes together, and every process the row started ends with it; where the
machine gives no groups, the reason is said (read from the mount and group tables)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from assay import api
from assay.sandbox import cgroups, limit_counts
from assay.sandbox.doctor import enforced_limits
from assay.sandbox.limit_counts import LimitCounts
from tests.helpers import alive, write

FOUND = cgroups.find()
needs_groups = pytest.mark.skipif(
    not isinstance(FOUND, cgroups.Hierarchies), reason=f"no row cgroups here: {FOUND}"
)

BIG = """\
task_id: big-{driver}
description: a program that wants 400 MiB
initial_prompt: go
agent: {{type: command, command: 'python3 -c "x = bytearray(400 * 2**20); print(len(x))"'}}
sandbox: {{driver: {driver}, limits: {{max_memory_mb: 64}}}}
success_criteria: [{{type: response_match, expected: "419430400"}}]
"""

BUSY = """\
task_id: busy
description: two busy processes for 1.5 s of wall time, then their CPU time
initial_prompt: go
agent:
  type: command
  command: >-
    python3 -c "import os, time, subprocess, sys; w = time.time();
    spin = 'import time\\\\nt = time.time()\\\\nwhile time.time() - t < 1.5: pass';
    ps = [subprocess.Popen([sys.executable, '-c', spin]) for _ in range(2)];
    [p.wait() for p in ps]; c = os.times();
    print(c.children_user + c.children_system, time.time() - w)"
sandbox: {{limits: {{max_cpus: {cpus}}}}}
success_criteria: [{{type: response_match, expected: "."}}]
"""


@needs_groups
@pytest.mark.parametrize("driver", ["tempdir", "bwrap"])
def test_a_row_past_its_memory_limit_ends_error_naming_it(tmp_path: Path, driver: str) -> None:
    task = write(tmp_path / "t.yaml", BIG.format(driver=driver))
    plan = api.plan([str(task)])
    assert plan.warnings == []  # the limit is enforced here: nothing to warn about
    result = api.run([str(task)], run_dir=str(tmp_path / "runs"))
    (row,) = list(result.rows())
    assert row.final_status.value == "ERROR"
    assert row.error_message is not None
    assert row.error_message.startswith("killed for memory: the row's processes passed "
                                        "sandbox.limits.max_memory_mb (64 MiB); ")  # fmt: skip
    assert "code 137" in row.error_message


@needs_groups
def test_an_agent_that_goes_on_after_its_command_was_killed_for_memory_says_so_in_the_log(
    tmp_path: Path,
) -> None:
    task = write(tmp_path / "t.yaml", BIG.format(driver="tempdir").replace(
        """command: 'python3 -c "x = bytearray(400 * 2**20); print(len(x))"'""",
        """command: 'python3 -c "x = bytearray(400 * 2**20)"; echo 419430400'"""))  # fmt: skip
    result = api.run([str(task)], run_dir=str(tmp_path / "runs"))
    (row,) = list(result.rows())
    assert row.final_status.value == "SUCCESS"  # the agent (a shell here) went on
    log = (result.run_dir / "default" / "big-tempdir" / "00" / "task.log").read_text()
    assert ("killed for memory: the row's processes passed sandbox.limits.max_memory_mb "
            "(64 MiB); the agent went on") in log  # fmt: skip


@needs_groups
def test_the_same_row_under_a_roomy_limit_passes(tmp_path: Path) -> None:
    task = write(tmp_path / "t.yaml", BIG.format(driver="tempdir").replace("64", "1024"))
    result = api.run([str(task)], run_dir=str(tmp_path / "runs"))
    assert result.passed


@needs_groups
def test_max_cpus_bounds_the_cpu_time_of_the_rows_processes_together(tmp_path: Path) -> None:
    task = write(tmp_path / "t.yaml", BUSY.format(cpus=0.5))
    result = api.run([str(task)], run_dir=str(tmp_path / "runs"))
    used, wall = map(float, next(result.run_dir.rglob("response.txt")).read_text().split())
    # two processes spinning for 1.5 s each would use up to 3 s of CPU on two free cores;
    # half a CPU allows half the wall time (the kernel's period is 0.1 s: one of slack)
    assert wall >= 1.5 and 0.1 < used <= 0.5 * wall + 0.1, (used, wall)


@needs_groups
def test_closing_a_rows_groups_ends_every_process_in_them_nested_ones_too(
    tmp_path: Path,
) -> None:
    assert isinstance(FOUND, cgroups.Hierarchies)
    groups = FOUND.row(memory_mb=256)
    folders = list(groups.folders.values())
    pids = tmp_path / "pids"
    script = (f"cd / && env -i setsid sleep 300 >/dev/null 2>&1 & echo $! >> {pids}; "
              f"mkdir {groups.folders['pids']}/inner && "
              f"sh -c 'echo $$ > {groups.folders['pids']}/inner/cgroup.procs; "
              f"exec setsid sleep 300' >/dev/null 2>&1 & echo $! >> {pids}")  # fmt: skip
    subprocess.run(groups.enter(["/bin/sh", "-c", script]), check=True, timeout=30)
    started = [int(line) for line in pids.read_text().split()]
    time.sleep(0.2)
    assert all(alive(pid) for pid in started)
    killed = groups.close()
    assert set(started) <= set(killed)
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in started)
    assert not any(folder.exists() for folder in folders) and groups.folders == {}


@needs_groups
def test_a_program_that_cannot_enter_the_group_says_so(tmp_path: Path) -> None:
    groups = cgroups.RowGroups(folders={"pids": tmp_path / "gone"})
    done = subprocess.run(groups.enter(["echo", "never"]), capture_output=True, text=True)
    assert done.returncode == 125 and done.stdout == ""
    assert "assay: cannot enter the row's cgroup" in done.stderr


def test_the_reason_when_no_hierarchy_is_there(tmp_path: Path) -> None:
    mounts = write(tmp_path / "mounts", "proc /proc proc rw 0 0\n")
    own = write(tmp_path / "cgroup", "0::/\n")
    found = cgroups.find(mounts=mounts, own=own)
    assert isinstance(found, str)
    assert "memory" in found and ("cgroup v2" in found or "no cgroup v1 hierarchy" in found)
    assert cgroups.find(mounts=tmp_path / "missing", own=own) == (
        "cgroups cannot be read here (No such file or directory)"
    )


def test_the_limits_each_driver_enforces_follow_the_machine() -> None:
    grouped = isinstance(FOUND, cgroups.Hierarchies)
    for driver in ("tempdir", "bwrap"):
        limits = enforced_limits(driver)
        assert ("max_memory_mb" in limits) is grouped and ("max_cpus" in limits) is grouped
    assert "max_memory_mb" in enforced_limits("docker")


def test_a_machine_without_row_groups_warns_at_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no group can be made (a user without delegation, cgroup v2), ``assay plan``
    warns that the limit is not enforced, with the reason ``find`` gave."""
    monkeypatch.setattr(cgroups, "find", lambda **_: "cgroup v1: this user may not ...")
    task = write(tmp_path / "t.yaml", BIG.format(driver="tempdir"))
    (warning,) = api.plan([str(task)]).warnings
    assert warning.endswith(
        "sandbox.limits.max_memory_mb is enforced by the docker driver (the engine's cgroup), "
        "and by tempdir only where the machine gives a row cgroups of its own; this task's "
        "rows run in a tempdir sandbox, where it is not enforced (cgroup v1: this user may not "
        "...); set sandbox.driver: docker to enforce it"
    )


def test_row_json_names_the_groups_nowhere(tmp_path: Path) -> None:
    """The groups are the machine's business: nothing of them is in the run's files."""
    if not isinstance(FOUND, cgroups.Hierarchies):
        pytest.skip(f"no row cgroups here: {FOUND}")
    task = write(tmp_path / "t.yaml", BIG.format(driver="tempdir").replace("64", "1024"))
    result = api.run([str(task)], run_dir=str(tmp_path / "runs"))
    for path in result.run_dir.rglob("*.json"):
        assert "assay-cgroup" not in path.read_text() and f"assay-{os.getpid()}-" not in (
            json.dumps(json.loads(path.read_text())))  # fmt: skip


@needs_groups
def test_the_groups_of_a_killed_run_are_swept_with_what_runs_in_them(tmp_path: Path) -> None:
    """A run killed with SIGKILL leaves its row groups (and what ran in them); the next
    run's containment removes the groups of any assay process that is gone. (In a parent
    group of the test's own: another test's run, sweeping assay's groups at its start, would
    take the made-up group first.)"""
    assert isinstance(FOUND, cgroups.Hierarchies)
    private = {c: parent / f"sweep-test-{os.getpid()}" for c, parent in FOUND.parents.items()}
    for folder in private.values():
        folder.mkdir(exist_ok=True)
    own = cgroups.Hierarchies(private)
    gone = subprocess.Popen(["true"])
    gone.wait()
    space = os.stat("/proc/self/ns/pid").st_ino
    folder = own.parents["pids"] / f"assay-{space}-{gone.pid}-0123456789ab"
    elsewhere = own.parents["pids"] / f"assay-{space + 1}-{gone.pid}-0123456789ab"
    elsewhere.mkdir()  # another pid namespace's group: its pids mean nothing here
    folder.mkdir()
    left = subprocess.Popen(["/bin/sh", "-c", f"echo $$ > {folder}/cgroup.procs; exec sleep 300"])
    try:
        time.sleep(0.2)
        assert (folder / "cgroup.procs").read_text().split() == [str(left.pid)]
        mine = own.row()  # this process's own group is never swept
        assert folder in own.sweep()
        assert not folder.exists() and left.wait(10) == -9
        assert all(f.exists() for f in mine.folders.values()) and elsewhere.exists()
        mine.close()
    finally:
        left.kill()
        elsewhere.rmdir()
        for parent in private.values():
            cgroups.RowGroups(folders={"": parent}).close()


@needs_groups
def test_the_limits_written_are_the_kernels_own_units() -> None:
    """``max_cpus`` × the 100,000 µs period (the least, 0.01, is the kernel's 1 ms),
    ``max_memory_mb`` in bytes (MiB)."""
    assert isinstance(FOUND, cgroups.Hierarchies)
    for cpus, quota in ((0.5, 50_000), (1.5, 150_000), (0.01, 1_000)):
        groups = FOUND.row(memory_mb=64, cpus=cpus)
        try:
            cpu, memory = groups.folders["cpu"], groups.folders["memory"]
            assert int((cpu / "cpu.cfs_period_us").read_text()) == 100_000
            assert int((cpu / "cpu.cfs_quota_us").read_text()) == quota
            assert int((memory / "memory.limit_in_bytes").read_text()) == 64 * 1024 * 1024
            assert set(groups.folders) == {"pids", "memory", "cpu"}
            assert groups.counts() == LimitCounts()
            assert (groups.folders["pids"] / "pids.max").read_text() == "max\n"
        finally:
            groups.close()
    plain = FOUND.row()  # without limits: the pids group alone, to find its processes
    assert set(plain.folders) == {"pids"} and plain.counts() == LimitCounts()
    plain.close()
    counted = FOUND.row(max_pids=10, held=2)  # bwrap's two processes beside the row's ten
    assert (counted.folders["pids"] / "pids.max").read_text() == "12\n"
    counted.close()


def test_a_user_who_may_not_write_the_hierarchies_is_told_why() -> None:
    """As another user (no delegation), no row group can be made: the reason names the
    hierarchy and the fix (the module alone, on the system's Python, as user 65534)."""
    if os.geteuid() != 0 or not isinstance(FOUND, cgroups.Hierarchies):
        pytest.skip("needs root (to become another user) and cgroup v1 hierarchies")
    with tempfile.TemporaryDirectory() as folder:  # pytest's own is closed to other users
        Path(folder).chmod(0o755)
        _as_nobody(Path(folder))


def _as_nobody(tmp_path: Path) -> None:
    package = tmp_path / "assay" / "sandbox"  # the two modules alone, readable by anyone
    package.mkdir(parents=True)
    for module in (cgroups, limit_counts):
        (package / Path(str(module.__file__)).name).write_text(
            Path(str(module.__file__)).read_text()
        )
    for made in (tmp_path / "assay", package):
        (made / "__init__.py").write_text("")
        made.chmod(0o755)
    done = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3",
         "-c", "import sys; sys.path.insert(0, sys.argv[1]); from assay.sandbox import "
         "cgroups; print(cgroups.find())", str(tmp_path)],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("cgroup v1: this user may not make groups in the memory "
                                  "hierarchy (")  # fmt: skip
    assert done.stdout.strip().endswith(
        ": Permission denied); run as root, or use the docker driver"
    )


def test_groups_that_cannot_be_made_are_the_rows_sandbox_error(tmp_path: Path) -> None:
    from assay.errors import SandboxError
    from assay.orchestration.loading.task_loader import load_task
    from assay.orchestration.planning.containment import Containment
    from assay.sandbox.reaper import RowReaper

    task = load_task(write(tmp_path / "t.yaml", BIG.format(driver="tempdir"))).definition
    gone = cgroups.Hierarchies({c: tmp_path / "gone" / c for c in ("pids", "memory", "cpu")})
    with pytest.raises(SandboxError, match=r"^cannot make the row's control groups: .*No such"):
        Containment(groups=gone).row_groups(task)
    assert not (tmp_path / "gone").exists()
    held = Containment().row_groups(task)  # a machine that gives none: the subreaper
    assert isinstance(held, RowReaper) and held.limit_note() is None
    assert held.counts() == LimitCounts()
    held.close()
    bwrap = load_task(write(tmp_path / "b.yaml", BIG.format(driver="bwrap"))).definition
    assert Containment().row_groups(bwrap) is None  # its processes end with its sandbox


@needs_groups
def test_a_kill_for_memory_before_the_agent_is_not_blamed_for_its_failure(tmp_path: Path) -> None:
    """A ``pre_run`` allocation killed for memory and tolerated, then an agent that fails on
    its own: the agent's error is its own, without the memory note."""
    task = write(tmp_path / "t.yaml", BIG.format(driver="tempdir").replace(
        "agent: {type: command, command: 'python3 -c \"x = bytearray(400 * 2**20); "
        "print(len(x))\"'}",
        "pre_run: [{command: '(python3 -c \"x = bytearray(400 * 2**20)\") || true'}]\n"
        "agent: {type: command, command: 'echo own failure >&2; exit 3'}"))  # fmt: skip
    (row,) = list(api.run([str(task)], run_dir=str(tmp_path / "runs")).rows())
    assert row.final_status.value == "ERROR" and row.error_message is not None
    assert "exited with code 3" in row.error_message
    assert "killed for memory" not in row.error_message


@needs_groups
def test_a_process_frozen_in_a_freezer_group_of_its_own_still_ends(tmp_path: Path) -> None:
    """A root process that moves itself into a freezer group it made and freezes it cannot
    act on SIGKILL: closing the row thaws that group, so it ends at once and the row's groups
    go (it survived, and every later run's sweep waited its deadline on it)."""
    freezer = Path("/sys/fs/cgroup/freezer")
    if os.geteuid() != 0 or not (freezer / "cgroup.procs").exists():
        pytest.skip("needs root and a cgroup v1 freezer hierarchy")
    assert isinstance(FOUND, cgroups.Hierarchies)
    groups = FOUND.row()
    ice = freezer / f"assay-test-ice-{os.getpid()}"
    pid_file = tmp_path / "pid"
    script = (f"sh -c 'mkdir {ice} && echo $$ > {ice}/cgroup.procs && echo $$ > {pid_file} && "
              f"echo FROZEN > {ice}/freezer.state; exec sleep 300' >/dev/null 2>&1 &")  # fmt: skip
    try:
        subprocess.run(groups.enter(["/bin/sh", "-c", script]), check=True, timeout=30)
        deadline = time.monotonic() + 10
        while (ice / "freezer.state").exists() is False or (
            ice / "freezer.state").read_text().strip() != "FROZEN":  # fmt: skip
            assert time.monotonic() < deadline
            time.sleep(0.05)
        pid = int(pid_file.read_text())
        started = time.monotonic()
        assert pid in groups.close()
        assert time.monotonic() - started < cgroups.KILL_SECONDS  # not the whole deadline
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(pid)
    finally:
        with_state = ice / "freezer.state"
        if with_state.exists():
            with_state.write_text("THAWED\n")
            time.sleep(0.1)
            ice.rmdir()


@needs_groups
def test_a_process_that_leaves_the_rows_groups_still_ends_with_the_row(tmp_path: Path) -> None:
    """A root process that writes itself into another group (out of the row's ``pids``
    group) is still found at the row's end, by its working folder (the scan runs for rows
    with groups too)."""
    if os.geteuid() != 0:
        pytest.skip("only root may move a process to a group outside its own")
    assert isinstance(FOUND, cgroups.Hierarchies)
    pid_file = tmp_path / "left.pid"
    outside = FOUND.parents["pids"] / "cgroup.procs"
    task = write(
        tmp_path / "t.yaml",
        f"""\
task_id: leaves
description: a process that leaves the row's groups
initial_prompt: go
agent:
  type: command
  command: >-
    sh -c 'echo $$ > {outside} && echo $$ > {pid_file} && exec sleep 300'
    >/dev/null 2>&1 & sleep 0.5; echo done
success_criteria: [{{type: response_match, expected: done}}]
""",
    )
    result = api.run([str(task)], run_dir=str(tmp_path / "runs"))
    assert result.passed
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)


@needs_groups
@pytest.mark.parametrize("where", ["pre_run", "criterion"])
def test_a_memory_kill_outside_the_agent_is_named(tmp_path: Path, where: str) -> None:
    """A ``pre_run`` command or a ``run_command`` criterion killed for memory says so, naming
    ``sandbox.limits.max_memory_mb``, as the agent's own kill does."""
    hog = 'python3 -c "x = bytearray(400 * 2**20)"'
    if where == "pre_run":
        body = (f"pre_run: [{{command: '{hog}'}}]\n"
                "agent: {type: command, command: 'echo fine'}\n"
                "success_criteria: [{type: response_match, expected: fine}]\n")  # fmt: skip
    else:
        body = ("agent: {type: command, command: 'echo fine'}\n"
                f"success_criteria: [{{type: run_command, command: '{hog}'}}]\n")  # fmt: skip
    task = write(tmp_path / "t.yaml", "task_id: hog\ndescription: d\ninitial_prompt: go\n"
                 "sandbox: {limits: {max_memory_mb: 64}}\n" + body)  # fmt: skip
    result = api.run([str(task)], run_dir=str(tmp_path / "runs"))
    (row,) = list(result.rows())
    note = "killed for memory: the row's processes passed sandbox.limits.max_memory_mb (64 MiB)"
    if where == "pre_run":
        assert row.final_status.value == "ERROR" and note in (row.error_message or "")
    else:
        (criterion,) = row.success_criteria_results
        assert criterion.score == 0 and note in json.dumps(criterion.model_dump(mode="json"))


FORKS = """\
import os, time
kids = []
try:
    while len(kids) < 50:
        pid = os.fork()
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        kids.append(pid)
except BlockingIOError:  # EAGAIN: the row's process limit
    mine = [p for p in os.listdir("/proc") if p.isdigit()
            and os.stat(f"/proc/{p}").st_uid == os.getuid()]
    print(len(kids), len(mine), flush=True)
    raise SystemExit(3)
"""


@needs_groups
@pytest.mark.parametrize("driver", ["tempdir", "bwrap"])
def test_a_row_at_its_process_limit_ends_error_naming_it(tmp_path: Path, driver: str) -> None:
    """A program that forks until the kernel refuses: the row ends ERROR, its error starts
    with how many forks were refused at ``sandbox.limits.max_pids`` (the pids group's count,
    as docker's ``--pids-limit``), and the row's log shows it beside the agent's own error.
    On bwrap, where the row is a user of its own, its processes at that moment are exactly
    ``max_pids`` (the sandbox's own two bwrap processes are not counted against it)."""
    write(tmp_path / "forks.py", FORKS)
    task = write(tmp_path / "t.yaml", (
        "task_id: forks\ndescription: d\ninitial_prompt: go\n"
        "agent: {type: command, command: 'exec python3 $ASSAY_TASK_DIR/forks.py'}\n"
        f"sandbox: {{driver: {driver}, limits: {{max_pids: 6}}}}\n"
        "success_criteria: [{type: response_match, expected: never}]\n"))  # fmt: skip
    result = api.run([str(task)], run_dir=str(tmp_path / "runs"))
    (row,) = list(result.rows())
    assert row.final_status.value == "ERROR" and row.error_message is not None
    assert row.error_message.startswith(
        "1 fork(s) refused: the row's processes reached sandbox.limits.max_pids (6); "
        "the agent command exited with code 3"
    ), row.error_message
    folder = result.run_dir / "default" / "forks" / "00"
    assert "  | error: 1 fork(s) refused" in (folder / "task.log").read_text()
    kids, mine = map(int, (folder / "response.txt").read_text().split())
    assert kids == 5  # python and its five children: six
    if driver == "bwrap" and os.geteuid() == 0:
        assert mine == 6


@needs_groups
def test_a_criterion_at_the_process_limit_says_so_and_a_row_under_it_passes(
    tmp_path: Path,
) -> None:
    """A ``run_command`` criterion whose program reaches ``max_pids`` fails with the limit
    named in its output; the same limit with room to spare changes nothing."""
    write(tmp_path / "forks.py", FORKS)
    task = write(tmp_path / "t.yaml", (
        "task_id: forks\ndescription: d\ninitial_prompt: go\n"
        "agent: {type: command, command: 'sh -c \"sleep 0.1 & sleep 0.1 & wait; echo fine\"'}\n"
        "sandbox: {driver: bwrap, limits: {max_pids: 4}}\n"
        "success_criteria: [{type: response_match, expected: fine},\n"
        "  {type: run_command, command: 'python3 $ASSAY_TASK_DIR/forks.py'}]\n"))  # fmt: skip
    (row,) = list(api.run([str(task)], run_dir=str(tmp_path / "runs")).rows())
    matched, command = row.success_criteria_results
    assert matched.score == 1 and row.error_message is None
    assert command.score == 0
    assert ("fork(s) refused: the row's processes reached sandbox.limits.max_pids (4)"
            in json.dumps(command.model_dump(mode="json")))  # fmt: skip


@needs_groups
def test_a_program_that_is_not_there_is_named_without_the_wrapper(tmp_path: Path) -> None:
    groups = FOUND.row() if isinstance(FOUND, cgroups.Hierarchies) else None
    assert groups is not None
    try:
        done = subprocess.run(groups.enter(["no-such-program-here", "x"]), capture_output=True,
                              text=True, timeout=30)  # fmt: skip
    finally:
        groups.close()
    assert done.returncode == 127
    assert done.stderr == "assay: no-such-program-here: command not found\n"


@pytest.mark.parametrize(("field", "value", "words"), [
    ("max_memory_mb", 2**44, "less than or equal to 1073741824"),
    ("max_memory_mb", 1, "greater than or equal to 6"),
    ("max_cpus", 1e9, "less than or equal to 4096"),
    ("max_cpus", 0.001, "greater than or equal to 0.01"),
    ("max_cpus", "true", "expected a number, got true"),
    ("max_cpus", '"0.5"', "expected a number, got the text '0.5'"),
    ("max_memory_mb", "true", "expected an integer, got true"),
    ("max_memory_mb", '"64"', "expected an integer, got the text '64'"),
])  # fmt: skip
def test_limits_past_what_a_machine_takes_are_refused_naming_the_field(
    tmp_path: Path, field: str, value: float, words: str
) -> None:
    from assay.errors import UserError

    task = write(tmp_path / "t.yaml", BIG.format(driver="tempdir").replace(
        "max_memory_mb: 64", f"{field}: {value}"))  # fmt: skip
    with pytest.raises(UserError) as caught:
        api.plan([str(task)])
    assert f"sandbox.limits.{field}" in str(caught.value) and words in str(caught.value)


@needs_groups
def test_a_rows_groups_are_closed_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Closing a row's groups may wait (up to ``KILL_SECONDS``): it runs in a worker thread,
    so the other rows' programs and model calls go on meanwhile."""
    import threading

    assert isinstance(FOUND, cgroups.Hierarchies)
    FOUND.sweep()  # a killed process's groups, swept at plan (in the main thread), go first
    closed_in: list[str] = []
    close = cgroups.RowGroups.close

    def recording(self: cgroups.RowGroups) -> list[int]:
        closed_in.append(threading.current_thread().name)
        return close(self)

    monkeypatch.setattr(cgroups.RowGroups, "close", recording)
    task = write(tmp_path / "t.yaml", BIG.format(driver="tempdir").replace("64", "1024"))
    assert api.run([str(task)], run_dir=str(tmp_path / "runs")).passed
    assert len(closed_in) == 1 and closed_in[0] != threading.main_thread().name


def test_a_frozen_process_found_by_its_marker_is_thawed_and_ends(tmp_path: Path) -> None:
    """The environment/working-folder scan (which finds what left the row's groups) thaws
    what it kills too, as closing the groups does."""
    from assay.sandbox.process import end_marked_processes

    freezer = Path("/sys/fs/cgroup/freezer")
    if os.geteuid() != 0 or not (freezer / "cgroup.procs").exists():
        pytest.skip("needs root and a cgroup v1 freezer hierarchy")
    ice = freezer / f"assay-test-scan-{os.getpid()}"
    ice.mkdir()
    marker = f"ASSAY_SANDBOX={tmp_path}"
    sleeper = subprocess.Popen(["sleep", "300"], env={"PATH": "/usr/bin:/bin",
                                                      "ASSAY_SANDBOX": str(tmp_path)})  # fmt: skip
    try:
        (ice / "cgroup.procs").write_text(f"{sleeper.pid}\n")
        (ice / "freezer.state").write_text("FROZEN\n")
        deadline = time.monotonic() + 10
        while (ice / "freezer.state").read_text().strip() != "FROZEN":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert sleeper.pid in end_marked_processes(marker)
        assert sleeper.wait(10) == -9
    finally:
        sleeper.kill()
        (ice / "freezer.state").write_text("THAWED\n")
        time.sleep(0.1)
        ice.rmdir()
