"""The containment promises of a row's sandbox, held by every driver that contains: the same
tests run on ``bwrap`` and on ``docker`` (a real container of the tests' offline image,
:mod:`tests.docker_images`). Writes outside the row's folder, other rows' folders, the
host's home and private paths, the network, the user, the limits and what a program leaves
running at its timeout. Real bubblewrap, a real engine, real processes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.errors import SandboxError
from assay.sandbox.bwrap import BridgeLink, make_policy
from assay.sandbox.docker import Engine, make_docker_policy
from assay.sandbox.process import ProcessResult, run_process
from assay.sandbox.tempdir import Sandbox
from assay.spec.task import SandboxConfig
from tests.helpers import host_tcp_server, write

VENV_BIN = str(Path(sys.executable).parent)
PATH = f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
LIMITS = {"RLIMIT_NPROC": 1024, "RLIMIT_NOFILE": 4096, "RLIMIT_FSIZE": 1 << 30}
DRIVERS = [pytest.param("bwrap"), pytest.param("docker", marks=pytest.mark.docker),
           pytest.param("podman", marks=pytest.mark.docker)]  # fmt: skip


@pytest.fixture(scope="module", params=DRIVERS)
def driver(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def make_row(
    driver: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[contextlib.AbstractContextManager[Sandbox]]:
    """Makes a row's sandbox folder inside the driver's jail (closed and removed after)."""
    private = tmp_path / "private"
    hidden = [private / ".assay", private / "store.db"]
    if driver in ("docker", "podman"):
        engine, image = request.getfixturevalue(f"{driver}_image")
        assert isinstance(engine, Engine)
        docker = make_docker_policy(engine=engine, hidden=hidden)
    else:
        bwrap = make_policy(path_variable=PATH, hidden=hidden)

    @contextlib.contextmanager
    def row(**options: object) -> Iterator[Sandbox]:
        sandbox = Sandbox.create(SandboxConfig(), base_dir=Path.cwd())
        limits: dict[str, int] = dict(options.pop("limits", LIMITS))  # type: ignore[call-overload]
        try:  # a jail refused is the test's answer: the folder goes all the same
            if driver in ("docker", "podman"):
                sandbox.jail = docker.jail(sandbox.root, image=image, limits=limits,
                                           **options)  # type: ignore[arg-type]  # fmt: skip
            else:
                options.pop("memory_mb", None)
                sandbox.jail = bwrap.jail(sandbox.root, limits=limits, **options)  # type: ignore[arg-type]
            yield sandbox
        finally:
            if sandbox.jail is not None:
                sandbox.jail.close()
            sandbox.remove()

    yield row  # type: ignore[misc]


def run(sandbox: Sandbox, command: str, *, timeout: float = 60, **env: str) -> ProcessResult:
    environment = {"PATH": PATH, "HOME": os.environ.get("HOME", "/root"), **env}
    return asyncio.run(sandbox.run(command, env=environment, timeout=timeout))


def test_the_row_runs_as_an_unprivileged_user(make_row) -> None:  # type: ignore[no-untyped-def]
    with make_row() as box:
        done = run(box, "id -u; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; "
                        "cat /etc/shadow")  # fmt: skip
    lines = done.stdout.split()
    assert lines[0] != "0"
    assert "CapEff:" in lines and lines[lines.index("CapEff:") + 1] == "0000000000000000"
    assert lines[lines.index("NoNewPrivs:") + 1] == "1"
    assert "Permission denied" in done.stderr and done.exit_code != 0


def test_only_the_row_folder_and_a_private_tmp_are_writable(  # type: ignore[no-untyped-def]
    make_row, tmp_path: Path
) -> None:
    with make_row() as box:
        scratch = f"/tmp/{box.root.name}-scratch"
        done = run(box, "touch mine && echo row-ok; touch \"$HOME/h\" && echo home-ok; "
                        f"touch {scratch} && echo tmp-ok; touch /usr/x; touch /etc/x; "
                        f"touch /x; touch {tmp_path}/outside")  # fmt: skip
        assert (box.root / "mine").exists()
    assert done.stdout.split() == ["row-ok", "home-ok", "tmp-ok"]
    assert done.stderr.count("Read-only file system") >= 3
    assert not (tmp_path / "outside").exists()
    assert not Path(scratch).exists()  # its /tmp is its own


def test_the_hosts_files_and_another_rows_folder_are_out_of_reach(  # type: ignore[no-untyped-def]
    make_row, tmp_path: Path
) -> None:
    secret = write(tmp_path / "host" / "secret.txt", "the host's secret\n")
    with make_row() as first, make_row() as second:
        write(first.root / "answer.txt", "forty-two\n")
        (second.root / "leak").symlink_to(secret)
        done = run(second, f"cat {secret}; cat ../../{secret.relative_to('/')}; cat leak; "
                           f"cat {first.root}/answer.txt; echo overwritten > {secret}; "
                           f"ls {Path.home()}")  # fmt: skip
    assert "the host's secret" not in done.stdout and "forty-two" not in done.stdout
    assert done.stderr.count("No such file or directory") >= 4
    assert secret.read_text() == "the host's secret\n"


def test_private_paths_inside_a_shown_folder_stay_hidden(
    driver: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    project = tmp_path / "project"
    write(project / ".assay" / "store.db", "the team's datasets\n")
    write(project / "runs" / "r" / "x.txt", "another run\n")
    write(project / "task.txt", "the task\n")
    hidden = [project / ".assay", project / "runs"]
    sandbox = Sandbox.create(SandboxConfig(), base_dir=Path.cwd())
    if driver in ("docker", "podman"):
        engine, image = request.getfixturevalue(f"{driver}_image")
        policy = make_docker_policy(engine=engine, hidden=hidden)
        sandbox.jail = policy.jail(sandbox.root, image=image, limits=LIMITS, task_dir=project)
    else:
        sandbox.jail = make_policy(path_variable=PATH, hidden=hidden).jail(
            sandbox.root, limits=LIMITS, task_dir=project)  # fmt: skip
    try:
        done = run(sandbox, f"cat {project}/task.txt; cat {project}/.assay/store.db; "
                            f"ls {project}/runs")  # fmt: skip
    finally:
        sandbox.jail.close()
        sandbox.remove()
    assert done.stdout.split("\n")[0] == "the task"
    assert "the team's datasets" not in done.stdout and "r\n" not in done.stdout


CONNECT = ("python3 -c \"import socket,sys; s=socket.create_connection(('{host}', {port}), 3); "
           "s.sendall(b'ping'); print(s.recv(100).decode())\"")  # fmt: skip


def test_no_network_but_its_own_loopback(make_row) -> None:  # type: ignore[no-untyped-def]
    with host_tcp_server(b"pong") as port, make_row() as box:
        host = run(box, CONNECT.format(host="127.0.0.1", port=port))
        outside = run(box, CONNECT.format(host="1.1.1.1", port=53))
        interfaces = run(box, "cat /proc/net/dev")
    assert "pong" not in host.stdout and "ConnectionRefusedError" in host.stderr
    assert "pong" not in outside.stdout and "unreachable" in outside.stderr.lower()
    assert [line.split(":")[0].strip() for line in interfaces.stdout.splitlines()[2:]] == ["lo"]


def test_sandbox_network_shares_the_hosts(make_row) -> None:  # type: ignore[no-untyped-def]
    with host_tcp_server(b"pong") as port, make_row(network=True) as box:
        done = run(box, CONNECT.format(host="127.0.0.1", port=port))
    assert done.stdout.strip() == "pong"


def test_process_and_file_limits(make_row) -> None:  # type: ignore[no-untyped-def]
    limits = {**LIMITS, "RLIMIT_NPROC": 20, "RLIMIT_FSIZE": 1024 * 1024, "RLIMIT_NOFILE": 32}
    with make_row(limits=limits) as box:
        forks = run(box, "for i in $(seq 1 60); do sleep 5 & done; wait", timeout=60)
        big = run(box, "head -c 3000000 /dev/zero > big.bin")
        size = (box.root / "big.bin").stat().st_size
        files = run(box, "python3 -c \"fs=[open('f%d' % i, 'w') for i in range(100)]\"")
    assert forks.exit_code != 0
    assert "fork" in forks.stderr.lower() or "resource temporarily" in forks.stderr.lower()
    assert big.exit_code != 0 and size <= 1024 * 1024
    assert "Too many open files" in files.stderr


def test_a_process_killed_for_memory_is_named_when_its_program_goes_on(  # type: ignore[no-untyped-def]
    make_row, driver: str
) -> None:
    """On docker a process the kernel killed for memory, its program going on, left no
    trace (a break-test). A bwrap jail alone has no memory limit (its rows' control groups
    hold it, and their log names a kill: tests/sandbox/test_cgroups.py): nothing is said."""
    with make_row(memory_mb=200) as box:
        done = run(box, '/usr/bin/python3 -c "x = bytearray(400 * 2**20)"; echo went-on')
    assert (done.exit_code, done.stdout.strip()) == (0, "went-on")
    said = ("assay: killed for memory: the row's processes passed sandbox.limits.max_memory_mb "
            "(200 MiB); 1 process(es) killed, the program went on")  # fmt: skip
    assert (said in done.stderr) == (driver != "bwrap"), done.stderr


def test_a_program_past_its_cpu_seconds_is_ended_by_the_signal_that_names_them(  # type: ignore[no-untyped-def]
    make_row,
) -> None:
    """At equal soft and hard limits the kernel killed a busy loop with SIGKILL at once:
    the row said "exit 137 (SIGKILL)", not ``cpu_seconds`` (a break-test). SIGXCPU now
    comes first, a second before the hard limit."""
    from assay.sandbox.process import exit_text

    with make_row(limits={**LIMITS, "RLIMIT_CPU": 1}) as box:
        done = run(box, "exec /usr/bin/python3 -c 'while True: pass'", timeout=60)
    assert not done.timed_out
    assert "SIGXCPU: the CPU time passed sandbox.limits.cpu_seconds" in exit_text(done.exit_code)


@pytest.mark.parametrize(
    ("limit", "code", "named"),
    [
        ("RLIMIT_FSIZE", "open('big', 'wb').write(b'x' * (3 << 20))", "max_file_size_mb"),
        ("RLIMIT_NOFILE", "[open('/dev/null') for _ in range(100)]", "max_open_files"),
    ],
)
def test_a_python_program_past_a_file_limit_is_told_by_the_limits_name(  # type: ignore[no-untyped-def]
    make_row, limit: str, code: str, named: str
) -> None:
    """Python handles EFBIG and EMFILE itself (its ``OSError``): the row's error named no
    limit (a break-test)."""
    from assay.sandbox.process import exit_text

    value = 1 << 20 if limit == "RLIMIT_FSIZE" else 32
    with make_row(limits={**LIMITS, limit: value}) as box:
        done = run(box, f'exec /usr/bin/python3 -c "{code}"', timeout=60)
    assert done.exit_code == 1, done.stderr
    assert f"sandbox.limits.{named})" in exit_text(done.exit_code, stderr=done.stderr)


def test_the_timeout_kills_the_whole_tree_even_what_left_the_group(make_row) -> None:  # type: ignore[no-untyped-def]
    with make_row() as box:
        done = run(box, "(setsid sh -c 'sleep 3; touch escaped' &); nohup sh -c 'sleep 3; "
                        "touch nohup' >/dev/null 2>&1 & sleep 60", timeout=2)  # fmt: skip
        assert done.timed_out
        time.sleep(4)
        assert not (box.root / "escaped").exists() and not (box.root / "nohup").exists()


def test_what_a_program_leaves_running_ends_with_the_row(make_row) -> None:  # type: ignore[no-untyped-def]
    with make_row() as box:
        started = run(box, "nohup sh -c 'sleep 3; touch late' >/dev/null 2>&1 &")
        assert started.exit_code == 0
        assert box.jail is not None
        box.jail.close()
        time.sleep(4)
        assert not (box.root / "late").exists()


def test_what_the_agent_left_at_home_and_in_tmp_is_gone_when_the_criteria_run(  # type: ignore[no-untyped-def]
    make_row,
) -> None:
    """An agent planted a ``.pth`` in its Python user site (``HOME``; on docker, the
    container's ``/tmp``) that made every later ``python3`` exit 0, and a criterion's
    ``python3 check.py`` passed its wrong answer (a break-test); a cache left in ``/tmp``
    held the memory the criteria are limited to. Once the agent ends (``settle``), both are
    gone; the row's folder, mounted under ``/tmp`` here, is kept whole."""
    plant = (
        'd=$(/usr/bin/python3 -c "import site; print(site.getusersitepackages())"); mkdir -p "$d"; '
        'echo "import os; os._exit(0)" > "$d/zz.pth"; echo left > /tmp/left; '
        "echo left > /dev/shm/left 2>/dev/null; "
        'echo kept > kept.txt; /usr/bin/python3 -c "raise SystemExit(3)"; echo "exit $?"'
    )
    look = (
        '/usr/bin/python3 -c "raise SystemExit(3)"; echo "exit $?"; '
        "cat /tmp/left /dev/shm/left; cat kept.txt"
    )
    with make_row() as box:
        assert "exit 0" in run(box, plant).stdout  # the agent's own python3 obeys it
        box.jail.settle()
        after = run(box, look)
    assert after.stdout.split() == ["exit", "3", "kept"], (after.stdout, after.stderr)


def test_a_program_cannot_stop_the_programs_that_come_after_it(  # type: ignore[no-untyped-def]
    make_row,
) -> None:
    """``kill -TERM 1`` from an agent stopped the row's container (its init ran as the row's
    user): every criterion after it failed to start, and one expecting exit code 1 passed
    (a break-test)."""
    with make_row() as box:
        run(box, "kill -TERM 1; kill -KILL 1; sleep 1")
        after = run(box, "echo still-here")
    assert (after.exit_code, after.stdout.strip()) == (0, "still-here"), after.stderr


def test_files_the_row_made_are_given_back(make_row) -> None:  # type: ignore[no-untyped-def]
    with make_row() as box:
        run(box, "mkdir -p a/b && echo x > a/b/c && ln -s /etc/passwd a/link")
        assert box.jail is not None
        box.jail.close()
        owners = {p.lstat().st_uid for p in [box.root, *box.root.rglob("*")]}
    assert owners == {os.getuid()}


def test_a_folder_given_to_one_program_is_read_there_each_time(make_row) -> None:  # type: ignore[no-untyped-def]
    with make_row() as box, tempfile.TemporaryDirectory(prefix="assay-prompt-") as folder:
        prompt = write(Path(folder) / "prompt.txt", "the prompt\n")
        Path(folder).chmod(0o755)
        prompt.chmod(0o644)
        done = []
        for stdin in (None, "fed on stdin"):
            argv, env = box.jail.command(["/bin/sh", "-c", f"cat {prompt}; cat"],
                                         env={"PATH": PATH}, readable=[Path(folder)])  # fmt: skip
            done.append(asyncio.run(run_process(argv, cwd=box.root, env=env, timeout=60,
                                                stdin=stdin)))  # fmt: skip
    assert [d.stdout for d in done] == ["the prompt\n", "the prompt\nfed on stdin"], done


@pytest.mark.docker
def test_docker_refuses_to_show_a_folder_outside_its_own_temporary_folders(
    docker_image: tuple[Engine, str], tmp_path: Path
) -> None:
    engine, image = docker_image
    sandbox = Sandbox.create(SandboxConfig(), base_dir=Path.cwd())
    jail = make_docker_policy(engine=engine).jail(sandbox.root, image=image, limits=LIMITS)
    try:
        for outside in (Path("/srv/prompts"), Path("/home/someone/report")):
            with pytest.raises(SandboxError, match=f"cannot show {outside} .*set TMPDIR"):
                jail.command(["true"], env={"PATH": PATH}, readable=[outside])
            with pytest.raises(SandboxError, match=f"cannot show {outside} "):
                jail.command(["true"], env={"PATH": PATH}, writable=[outside])
        argv, _ = jail.command(["true"], env={"PATH": PATH}, readable=[Path("/var/tmp/x")])
        assert '"/var/tmp/x"' in argv[4]
    finally:
        jail.close()
        sandbox.remove()


@contextlib.contextmanager
def unix_bridge(folder: Path) -> Iterator[BridgeLink]:
    """A stand-in for the model bridge: a unix socket that answers ``bridge:`` and what it
    was sent, behind a port that nothing listens on outside."""
    folder.mkdir()
    path = folder / "bridge.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    path.chmod(0o666)
    server.listen()

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = server.accept()
                client.sendall(b"bridge:" + client.recv(100))
                client.close()

    threading.Thread(target=serve, daemon=True).start()
    with socket.socket() as probe_port:
        probe_port.bind(("127.0.0.1", 0))
        port = probe_port.getsockname()[1]
    try:
        yield BridgeLink(path, port)
    finally:
        server.close()


def test_a_coding_agent_reaches_the_bridge_but_not_the_task_folder(
    driver: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    answers = write(tmp_path / "task" / "answers.txt", "the expected answer\n")
    connect = ("python3 -c \"import socket; s=socket.create_connection(('127.0.0.1', {port}), "
               "3); s.sendall(b'ping'); print(s.recv(100).decode())\"")  # fmt: skip
    sandbox = Sandbox.create(SandboxConfig(), base_dir=Path.cwd())
    with unix_bridge(tmp_path / "bridge") as link:
        if driver in ("docker", "podman"):
            engine, image = request.getfixturevalue(f"{driver}_image")
            policy = make_docker_policy(engine=engine, bridge=link)
            jail: Any = policy.jail(sandbox.root, image=image, limits=LIMITS,
                                    task_dir=answers.parent)  # fmt: skip
        else:
            jail = make_policy(path_variable=PATH, bridge=link).jail(
                sandbox.root, limits=LIMITS, task_dir=answers.parent)  # fmt: skip
        try:
            agent = jail.command(["/bin/sh", "-c", f"{connect.format(port=link.port)}; cat "
                                  f"{answers}; id -u"], env={"PATH": PATH}, bridge=True,
                                 agent=True)  # fmt: skip
            done = subprocess.run(agent[0], env=agent[1], capture_output=True, text=True,
                                  timeout=120, check=False)  # fmt: skip
            task = jail.command(["cat", str(answers)], env={"PATH": PATH})
            graded = subprocess.run(task[0], env=task[1], capture_output=True, text=True,
                                    timeout=120, check=False)  # fmt: skip
        finally:
            jail.close()
            sandbox.remove()
    assert done.stdout.split()[0] == "bridge:ping", done.stderr
    assert "the expected answer" not in done.stdout and "No such file" in done.stderr
    assert done.stdout.split()[-1] != "0"
    assert graded.stdout == "the expected answer\n", graded.stderr  # the task's programs see it
    if driver in ("docker", "podman"):
        names = [f"{jail.name}-agent0", jail.name]
        for _ in range(300):  # removed in the background
            listed = engine.run("ps", "-a", "--format", "{{.Names}}").stdout.split()
            if not set(names) & set(listed):
                break
            time.sleep(0.1)
        assert not set(names) & set(listed)


def test_a_coding_agent_on_its_own_credentials_gets_the_hosts_network(
    driver: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    connect = ("python3 -c \"import socket; print(socket.create_connection(('127.0.0.1', "
               "{port}), 3).recv(20).decode())\"")  # fmt: skip
    sandbox = Sandbox.create(SandboxConfig(), base_dir=Path.cwd())
    if driver in ("docker", "podman"):
        engine, image = request.getfixturevalue(f"{driver}_image")
        jail: Any = make_docker_policy(engine=engine).jail(sandbox.root, image=image,
                                                           limits=LIMITS)  # fmt: skip
    else:
        jail = make_policy(path_variable=PATH).jail(sandbox.root, limits=LIMITS)
    answers = []
    try:
        with host_tcp_server(b"host-answered") as port:
            for network in (False, True):  # route: bridge, then route: direct
                argv, env = jail.command(["/bin/sh", "-c", connect.format(port=port)],
                                         env={"PATH": PATH}, agent=True,
                                         network=network)  # fmt: skip
                done = subprocess.run(argv, env=env, capture_output=True, text=True,
                                      timeout=120, check=False)  # fmt: skip
                answers.append(done.stdout.strip())
    finally:
        jail.close()
        sandbox.remove()
    assert answers == ["", "host-answered"]
