"""The ``bwrap`` driver: every way out of a row's sandbox that we could think of must fail
inside it (absolute paths, ``..``, symlinks, another row's folder, the host's home, the store,
``/proc``, the network), and the row's limits, user, environment and timeout hold. Real
bubblewrap, real processes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.errors import UsageError
from assay.sandbox.bwrap import BridgeLink, Jail, JailPolicy, make_policy
from assay.sandbox.probe import diagnose, probe
from assay.sandbox.process import ProcessResult
from assay.sandbox.tempdir import Sandbox
from assay.spec.task import SandboxConfig
from tests.agents.coding import run_assay
from tests.helpers import host_tcp_server, write

VENV_BIN = str(Path(sys.executable).parent)
PATH = f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
LIMITS = {"RLIMIT_NPROC": 1024, "RLIMIT_NOFILE": 4096, "RLIMIT_FSIZE": 1 << 30}


@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory) -> JailPolicy:
    private = tmp_path_factory.mktemp("private")
    return make_policy(path_variable=PATH, hidden=[private / ".assay", private / "store.db"])


@contextlib.contextmanager
def row(policy: JailPolicy, **options: object) -> Iterator[Sandbox]:
    """A row's sandbox folder inside its own jail (closed and removed afterwards)."""
    sandbox = Sandbox.create(SandboxConfig(), base_dir=Path.cwd())
    sandbox.jail = policy.jail(sandbox.root, limits=dict(options.pop("limits", LIMITS)),  # type: ignore[arg-type]
                               **options)  # type: ignore[arg-type]  # fmt: skip
    try:
        yield sandbox
    finally:
        sandbox.jail.close()
        sandbox.remove()


def run(sandbox: Sandbox, command: str, *, timeout: float = 30, **env: str) -> ProcessResult:
    environment = {"PATH": PATH, "HOME": os.environ.get("HOME", "/root"), **env}
    return asyncio.run(sandbox.run(command, env=environment, timeout=timeout))


def host_secret(folder: Path, name: str = "secret.txt") -> Path:
    return write(folder / name, "the host's secret\n")


# --- who runs, and where it may write ----------------------------------------------------


def test_the_row_runs_as_an_unprivileged_user(policy: JailPolicy) -> None:
    with row(policy) as box:
        done = run(box, "id -u; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; "
                        "cat /etc/shadow")  # fmt: skip
    lines = done.stdout.split()
    assert lines[0] != "0"
    assert "CapEff:" in lines and lines[lines.index("CapEff:") + 1] == "0000000000000000"
    assert lines[lines.index("NoNewPrivs:") + 1] == "1"
    assert "Permission denied" in done.stderr and done.exit_code != 0


def test_only_the_row_folder_its_home_and_a_private_tmp_are_writable(
    policy: JailPolicy, tmp_path: Path
) -> None:
    with row(policy) as box:
        scratch = f"/tmp/{box.root.name}-scratch"
        done = run(box, "touch mine && echo row-ok; touch \"$HOME/h\" && echo home-ok; "
                        f"touch {scratch} && echo tmp-ok; touch /usr/x; touch /etc/x; "
                        f"touch /x; touch {tmp_path}/outside")  # fmt: skip
        assert (box.root / "mine").exists()
    assert done.stdout.split() == ["row-ok", "home-ok", "tmp-ok"]
    assert done.stderr.count("Read-only file system") == 3
    assert not (tmp_path / "outside").exists()
    assert not Path(scratch).exists()  # its /tmp is its own


def shown_in(policy: JailPolicy, folder: Path) -> list[str]:
    """The entries of ``folder`` a sandbox shows besides the row's own: the way to assay's
    Python when it is installed there (a checkout in /tmp)."""
    return sorted({p.relative_to(folder).parts[0] for p in policy.readable
                   if folder in p.parents})  # fmt: skip


def test_absolute_paths_and_dotdot_reach_nothing_of_the_host(
    policy: JailPolicy, tmp_path: Path
) -> None:
    secret = host_secret(tmp_path / "host")
    with row(policy) as box:
        assert box.jail is not None
        done = run(box, f"cat {secret}; cat ../../{secret.relative_to('/')}; ls ..; "
                        f"echo overwritten > {secret}")  # fmt: skip
    assert "the host's secret" not in done.stdout
    assert done.stderr.count("No such file or directory") == 2
    assert "Directory nonexistent" in done.stderr
    own = [box.root.name, box.jail.home.name]
    assert sorted(done.stdout.split()) == sorted(own + shown_in(policy, box.root.parent))
    assert secret.read_text() == "the host's secret\n"


def test_symlinks_in_the_row_folder_do_not_lead_out(policy: JailPolicy, tmp_path: Path) -> None:
    secret = host_secret(tmp_path / "host")
    with row(policy) as box:
        (box.root / "leak").symlink_to(secret)
        (box.root / "door").symlink_to(secret.parent, target_is_directory=True)
        done = run(box, "cat leak; echo planted > door/planted; ln -sf / root; ls root/work")
    assert "the host's secret" not in done.stdout
    assert not (secret.parent / "planted").exists()


def test_another_rows_folder_is_invisible(policy: JailPolicy) -> None:
    with row(policy) as first, row(policy) as second:
        write(first.root / "answer.txt", "42\n")
        assert second.jail is not None
        done = run(second, f"cat {first.root}/answer.txt; ls {first.root.parent}")
        own = [second.root.name, second.jail.home.name, *shown_in(policy, first.root.parent)]
    # the answer never shows (a random folder name such as assay-6w423xjr may hold "42")
    assert "42" not in done.stdout.split() and "No such file or directory" in done.stderr
    assert sorted(done.stdout.split()) == sorted(own)  # its own folder and home, its own /tmp


def test_host_homes_and_private_paths_are_hidden(tmp_path: Path) -> None:
    home = Path(os.environ.get("HOME", "/root"))
    planted = write(home / ".assay-bwrap-test-secret", "home secret\n")
    project = tmp_path / "project"
    write(project / "task.yaml", "task\n")
    write(project / ".assay" / "store.db", "all the datasets\n")
    write(project / "runs" / "other-row" / "task.json", "{}\n")
    write(project / "cache.db", "cached answers\n")
    try:
        hidden = make_policy(path_variable=PATH, hidden=[project / ".assay", project / "runs",
                                                         project / "cache.db"])  # fmt: skip
        with row(hidden, task_dir=project) as box:
            done = run(box, f"cat {planted}; ls -A {home}; cat {project}/task.yaml; "
                            f"cat {project}/.assay/store.db; ls -A {project}/.assay "
                            f"{project}/runs; cat {project}/cache.db")  # fmt: skip
    finally:
        planted.unlink()
    assert "home secret" not in done.stdout and "all the datasets" not in done.stdout
    assert "cached answers" not in done.stdout and "other-row" not in done.stdout
    assert ".assay-bwrap-test-secret" not in done.stdout
    assert "task" in done.stdout  # the task's own programs read its folder


def test_a_coding_agent_does_not_see_the_task_folder(policy: JailPolicy, tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(project / "dataset.jsonl", '{"expected_skill": "pdf"}\n')
    with row(policy, task_dir=project) as box:
        assert box.jail is not None
        argv, env = box.jail.command(["/bin/sh", "-c", f"cat {project}/dataset.jsonl"],
                                     env={"PATH": PATH}, agent=True)  # fmt: skip
        agent = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        own = run(box, f"cat {project}/dataset.jsonl")
    assert "expected_skill" not in agent.stdout and "No such file" in agent.stderr
    assert "expected_skill" in own.stdout


def test_proc_shows_the_sandbox_alone(policy: JailPolicy) -> None:
    with row(policy) as box:
        done = run(box, f"ls /proc | grep -c '^[0-9]'; kill -0 {os.getpid()} && echo killable; "
                        f"cat /proc/{os.getpid()}/environ; cat /proc/1/environ")  # fmt: skip
    assert int(done.stdout.split()[0]) < 10
    assert "killable" not in done.stdout and "PATH=" not in done.stdout


def test_the_environment_drops_pointers_to_the_host(policy: JailPolicy) -> None:
    with row(policy) as box:
        done = run(box, "echo ${SSH_AUTH_SOCK:-none} $HOME $TMPDIR ${XDG_CONFIG_HOME:-none}",
                   SSH_AUTH_SOCK="/run/user/0/agent", XDG_CONFIG_HOME="/root/.config")  # fmt: skip
        assert box.jail is not None
        assert done.stdout.split() == ["none", str(box.jail.home), "/tmp", "none"]


# --- network -----------------------------------------------------------------------------


CONNECT = ("python3 -c \"import socket,sys; s=socket.create_connection(('{host}', {port}), 3); "
           "s.sendall(b'ping'); print(s.recv(100).decode())\"")  # fmt: skip


def test_no_network_but_its_own_loopback(policy: JailPolicy) -> None:
    with host_tcp_server(b"pong") as port, row(policy) as box:
        host = run(box, CONNECT.format(host="127.0.0.1", port=port))
        outside = run(box, CONNECT.format(host="1.1.1.1", port=53))
        interfaces = run(box, "cat /proc/net/dev")
    assert "pong" not in host.stdout and "ConnectionRefusedError" in host.stderr
    assert "pong" not in outside.stdout and "unreachable" in outside.stderr.lower()
    assert [line.split(":")[0].strip() for line in interfaces.stdout.splitlines()[2:]] == ["lo"]


def test_sandbox_network_shares_the_hosts(policy: JailPolicy) -> None:
    with host_tcp_server(b"pong") as port, row(policy, network=True) as box:
        done = run(box, CONNECT.format(host="127.0.0.1", port=port))
    assert done.stdout.strip() == "pong"


def test_the_bridge_is_reached_through_its_unix_socket(tmp_path: Path) -> None:
    folder = tmp_path / "bridge"
    folder.mkdir()
    path = folder / "bridge.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    path.chmod(0o666)
    server.listen()

    def serve() -> None:
        with contextlib.suppress(OSError):
            client, _ = server.accept()
            client.sendall(b"bridge:" + client.recv(100))
            client.close()

    threading.Thread(target=serve, daemon=True).start()
    with socket.socket() as probe_port:
        probe_port.bind(("127.0.0.1", 0))
        port = probe_port.getsockname()[1]
    linked = make_policy(path_variable=PATH, bridge=BridgeLink(path, port))
    try:
        with row(linked, limits={**LIMITS, "RLIMIT_NOFILE": 77}) as box:
            assert box.jail is not None
            command = CONNECT.format(host="127.0.0.1", port=port) + "; ulimit -n; id -u"
            argv, env = box.jail.command(["/bin/sh", "-c", command], env={"PATH": PATH},
                                         bridge=True)  # fmt: skip
            done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    finally:
        server.close()
    answer, files, uid = done.stdout.split()
    assert answer == "bridge:ping", done.stderr
    assert files == "77" and uid != "0"  # the Python first program set the limits too


def test_a_python_started_by_a_path_through_another_folder_still_starts_in_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cd bench && ../.venv/bin/python -m assay run …` gives a sys.executable through a
    folder the sandbox does not have (`…/bench/../.venv/bin/python`): the first program (the
    forwarder's Python) still starts."""
    detour = tmp_path / "elsewhere"
    detour.mkdir()
    executable = Path(sys.executable)
    through = f"{detour}/{os.path.relpath(executable.parent, detour)}/{executable.name}"
    monkeypatch.setattr(sys, "executable", through)
    with socket.socket() as probe_port:
        probe_port.bind(("127.0.0.1", 0))
        port = probe_port.getsockname()[1]
    bridge = socket.socket(socket.AF_UNIX)
    bridge.bind(str(tmp_path / "bridge.sock"))
    linked = make_policy(path_variable=PATH, bridge=BridgeLink(tmp_path / "bridge.sock", port))
    assert ".." not in linked.python.parts
    with bridge, row(linked, limits=LIMITS) as box:
        assert box.jail is not None
        argv, env = box.jail.command(["/bin/sh", "-c", "echo started"], env={"PATH": PATH},
                                     bridge=True)  # fmt: skip
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    assert done.stdout == "started\n", done.stderr


# --- limits, timeout, ownership ----------------------------------------------------------


def test_process_limit(policy: JailPolicy) -> None:
    limits = {**LIMITS, "RLIMIT_NPROC": 20}
    with row(policy, limits=limits) as box:
        done = run(box, "for i in $(seq 1 60); do sleep 5 & done; wait", timeout=30)
    assert done.exit_code != 0
    assert (
        "fork" in done.stderr.lower() or "resource temporarily unavailable" in done.stderr.lower()
    )


def test_file_size_and_open_file_limits(policy: JailPolicy) -> None:
    limits = {**LIMITS, "RLIMIT_FSIZE": 1024 * 1024, "RLIMIT_NOFILE": 32}
    with row(policy, limits=limits) as box:
        big = run(box, "head -c 3000000 /dev/zero > big.bin")
        size = (box.root / "big.bin").stat().st_size
        files = run(box, "python3 -c \"fs=[open('f%d' % i, 'w') for i in range(100)]\"")
    assert big.exit_code != 0 and size <= 1024 * 1024
    assert "Too many open files" in files.stderr


def test_cpu_limit_stops_a_busy_loop(policy: JailPolicy) -> None:
    with row(policy, limits={**LIMITS, "RLIMIT_CPU": 1}) as box:
        done = run(box, "python3 -c 'while True: pass'", timeout=60)
    assert not done.timed_out
    assert done.exit_code is not None and done.exit_code != 0


def test_the_timeout_kills_the_whole_tree_even_what_left_the_group(policy: JailPolicy) -> None:
    with row(policy) as box:
        done = run(box, "(setsid sh -c 'sleep 3; touch escaped' &); nohup sh -c 'sleep 3; "
                        "touch nohup' >/dev/null 2>&1 & sleep 60", timeout=1)  # fmt: skip
        assert done.timed_out
        time.sleep(4)
        assert not (box.root / "escaped").exists() and not (box.root / "nohup").exists()


def test_files_the_row_made_are_given_back(policy: JailPolicy) -> None:
    with row(policy) as box:
        run(box, "mkdir -p a/b && echo x > a/b/c && ln -s /etc/passwd a/link && "
                 "cp /bin/true a/setuid && chmod 4755 a/setuid")  # fmt: skip
        assert box.jail is not None
        box.jail.close()
        owners = {p.lstat().st_uid for p in [box.root, *box.root.rglob("*")]}
        setuid = (box.root / "a" / "setuid").stat().st_mode
    assert owners == {os.getuid()}
    assert not setuid & 0o4000  # no set-uid program of the row's user becomes one of root's


# --- when the machine cannot, and as another user ----------------------------------------


def test_probe_passes_here_and_names_the_fix_where_bwrap_is_missing(
    policy: JailPolicy, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    probe(policy)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UsageError) as error:
        make_policy(path_variable="")
    assert error.value.message == (
        "sandbox.driver bwrap needs bubblewrap (bwrap), which is not installed"
    )
    assert error.value.hint is not None and error.value.hint.startswith(
        "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap;"
    )


def test_assay_plan_refuses_a_bwrap_task_without_bubblewrap(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: p\n"
          "agent: {type: command, command: 'true'}\nsandbox: {driver: bwrap}\n"
          "success_criteria: [{type: file_exists, path: a, description: d}]\n")  # fmt: skip
    done = run_assay("plan", "t.yaml", cwd=tmp_path, env={"PATH": VENV_BIN})
    assert done.returncode == 2
    assert (
        "t.yaml:5: sandbox.driver: sandbox.driver bwrap needs bubblewrap (bwrap), which is "
        "not installed\n  hint: install bubblewrap"
    ) in done.stderr


def test_diagnose_names_the_settings_and_the_way_out() -> None:
    unreadable = diagnose("bwrap: Can't find source path /srv/tools: Permission denied",
                          as_root=True)  # fmt: skip
    assert unreadable.startswith(
        "the row's user cannot read a folder it needs: assay runs as "
        "root, so each row runs as an unprivileged user of its own"
    )
    assert unreadable.endswith("or set sandbox.driver: tempdir (the row is then not contained)")
    namespace = diagnose("bwrap: No permissions to creating new namespace", as_root=False)
    assert namespace.endswith("or set sandbox.driver: tempdir (the row is then not contained)")


def test_diagnose_reads_the_settings_that_forbid_user_namespaces(tmp_path: Path) -> None:
    write(tmp_path / "proc/sys/kernel/unprivileged_userns_clone", "0\n")
    write(tmp_path / "proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1\n")
    write(tmp_path / "proc/sys/user/max_user_namespaces", "15000\n")
    write(tmp_path / ".dockerenv", "")
    said = diagnose("bwrap: setting up uid map: Permission denied", as_root=False,
                    root=tmp_path).split("; ")  # fmt: skip
    assert said == [
        "unprivileged user namespaces are off (Debian's switch): sysctl -w "
        "kernel.unprivileged_userns_clone=1",
        "AppArmor restricts unprivileged user namespaces (Ubuntu 23.10 and later): sysctl -w "
        "kernel.apparmor_restrict_unprivileged_userns=0, or give bwrap an AppArmor profile "
        "that allows them",
        "in a container, namespaces are usually forbidden by its seccomp or AppArmor profile: "
        "run it with --security-opt seccomp=unconfined --security-opt apparmor=unconfined (or "
        "--privileged, or --cap-add SYS_ADMIN as root)",
        "or set sandbox.driver: tempdir (the row is then not contained)",
    ]
    (tmp_path / ".dockerenv").unlink()
    as_root = diagnose("bwrap: Creating new namespace failed: Operation not permitted",
                       as_root=True, root=tmp_path)  # fmt: skip
    assert as_root == (
        "check that bwrap works here: bwrap --ro-bind / / --unshare-all true; "
        "or set sandbox.driver: tempdir (the row is then not contained)"
    )


def test_a_bwrap_tasks_folder_the_rows_user_cannot_read_is_refused_at_plan(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("rows run as their own user only when assay runs as root")
    private = tmp_path / "private"
    write(private / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: p\n"
          "agent: {type: command, command: 'true'}\nsandbox: {driver: bwrap}\n"
          "success_criteria: [{type: file_exists, path: a, description: d}]\n")  # fmt: skip
    private.chmod(0o700)
    done = run_assay("plan", "private/t.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert (
        f"private/t.yaml:5: sandbox.driver: {private} is a folder with mode 700, which the "
        "row's unprivileged user cannot read\n  hint: assay runs as root"
    ) in done.stderr


def test_without_root_the_user_namespace_keeps_the_callers_uid() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to become another user for the test")
    nobody = 65534
    bwrap = make_policy(path_variable=PATH).bwrap
    policy = JailPolicy(bwrap=bwrap, python=Path("/usr/bin/python3"), readable=(),
                        as_root=False, user=(nobody, nobody))  # fmt: skip
    folder = Path(tempfile.mkdtemp(prefix="assay-userns-"))  # outside pytest's 0700 folders
    os.chown(folder, nobody, nobody)
    jail: Jail = policy.jail(folder, limits={"RLIMIT_NPROC": 30, "RLIMIT_NOFILE": 4096})
    os.chown(jail.home, nobody, nobody)
    # The command is made by a process whose hard limit on open files is 2048, as a caller's
    # may be: the row's 4096 cannot be set above it by an unprivileged program.
    build = (
        "import json, sys\nfrom pathlib import Path\n"
        "from assay.sandbox.bwrap import Jail, JailPolicy\n"
        f"policy = JailPolicy(bwrap=Path({str(policy.bwrap)!r}), python=Path('/usr/bin/python3'),"
        f" readable=(), as_root=False, user=({nobody}, {nobody}), "
        "tools=(Path('/usr/bin/prlimit'), Path('/usr/bin/setpriv')))\n"
        f"jail = Jail(policy, Path({str(folder)!r}), Path({str(jail.home)!r}), "
        "{'RLIMIT_NPROC': 30, 'RLIMIT_NOFILE': 4096})\n"
        "print(json.dumps(jail.command(['/bin/sh', '-c', sys.argv[1]], "
        "env={'PATH': '/usr/bin:/bin'})))\n"
    )
    script = ("id -u; ulimit -n; touch ok && echo wrote; cat /etc/shadow; "
              "for i in $(seq 1 60); do sleep 3 & done; wait")  # fmt: skip
    made = subprocess.run(["prlimit", "--nofile=2048:2048", sys.executable, "-c", build, script],
                          capture_output=True, text=True, check=True)  # fmt: skip
    argv, env = json.loads(made.stdout)
    try:
        done = subprocess.run(["prlimit", "--nofile=2048:2048", "setpriv", f"--reuid={nobody}",
                               f"--regid={nobody}", "--clear-groups", *argv], env=env,
                              capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    finally:
        jail.close()
        shutil.rmtree(folder, ignore_errors=True)
    assert done.stdout.split()[:3] == [str(nobody), "2048", "wrote"], done.stderr
    assert "Permission denied" in done.stderr
    assert "fork" in done.stderr.lower() or "unavailable" in done.stderr.lower()


def test_the_same_ways_out_work_from_a_tempdir_sandbox(tmp_path: Path) -> None:
    """The control: without bwrap, the commands above do reach the host (so the tests above
    would fail if the driver let them through)."""
    secret = host_secret(tmp_path / "host")
    box = Sandbox.create(SandboxConfig(), base_dir=Path.cwd())
    try:
        with host_tcp_server(b"pong") as port:
            done = run(box, f"cat {secret}; touch {tmp_path}/outside; "
                            + CONNECT.format(host="127.0.0.1", port=port))  # fmt: skip
    finally:
        box.remove()
    assert done.stdout.split() == ["the", "host's", "secret", "pong"]
    assert (tmp_path / "outside").exists()


def test_a_sandbox_that_cannot_start_its_first_program_is_refused_with_why(
    policy: JailPolicy,
) -> None:
    broken = JailPolicy(bwrap=policy.bwrap, python=Path("/nonexistent/python3"), readable=(),
                        as_root=policy.as_root, user=policy.user, tools=None)  # fmt: skip
    with pytest.raises(UsageError) as error:
        probe(broken)
    assert error.value.message.startswith(
        "the machine cannot make a bwrap sandbox: bwrap: execvp /nonexistent/python3: No such "
        "file or directory")  # fmt: skip
    assert error.value.hint == (
        "check that bwrap works here: bwrap --ro-bind / / --unshare-all true; or set "
        "sandbox.driver: tempdir (the row is then not contained)"
    )


def test_a_read_only_path_the_rows_user_cannot_read_is_named_at_its_line(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("rows run as their own user only when assay runs as root")
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    closed.chmod(0o700)
    write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: p\n"
          "agent: {type: command, command: 'true'}\n"
          "sandbox:\n  driver: bwrap\n  read_only: [closed]\n"
          "success_criteria: [{type: file_exists, path: a, description: d}]\n")  # fmt: skip
    done = run_assay("plan", "t.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert (
        f"t.yaml:7: sandbox.read_only[0]: {closed} is a folder with mode 700, which the row's "
        "unprivileged user cannot read\n  hint: assay runs as root"
    ) in done.stderr


def test_an_agent_judges_cli_the_rows_user_cannot_read_is_refused_at_plan(tmp_path: Path) -> None:
    """The coding agent of an ``agent_judge`` runs in a copy of the row's sandbox as the
    row's user: its CLI's folder is checked as the agent's is."""
    if os.geteuid() != 0:
        pytest.skip("rows run as their own user only when assay runs as root")
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    closed.chmod(0o700)
    write(closed / "claude", "#!/bin/sh\necho 2.1.0\n").chmod(0o755)
    write(tmp_path / "judge.yaml", "default: ok\n")
    write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: p\n"
          "agent: {type: command, command: 'true'}\nsandbox: {driver: bwrap}\n"
          "success_criteria:\n  - {type: agent_judge, description: j, prompt: right?,\n"
          "     agent: {model: mock/judge.yaml, cli_path: closed/claude}}\n")  # fmt: skip
    done = run_assay("plan", "t.yaml", cwd=tmp_path)
    assert done.returncode == 2, done.stdout
    assert (f"{closed} is a folder with mode 700, which the row's unprivileged user cannot "
            "read\n  hint: assay runs as root") in done.stderr  # fmt: skip
    assert "its agent's CLI (and an agent_judge's)" in done.stderr
    closed.chmod(0o755)
    assert run_assay("plan", "t.yaml", cwd=tmp_path).returncode == 0


def test_two_runs_number_their_rows_users_from_different_starts() -> None:
    """Rows of two runs at once never share a user (nor its RLIMIT_NPROC budget) unless
    their random starts meet: five runs' first users are not all one."""
    firsts = {next(make_policy(path_variable=PATH).numbers) for _ in range(5)}
    assert len(firsts) > 1
