"""The host-side launcher of one program of a ``docker`` row: start the row's container if
it is not running yet, copy in what the program reads, run it there, and end what it left
running when the launcher itself is killed (the row's timeout).

Run by :mod:`assay.sandbox.docker` as ``python -I -S docker_exec.py CONFIG -- ARGV…`` (the
standard library only: it starts fast and imports nothing of assay). ``CONFIG`` is a JSON
object:

- ``engine``: the engine's CLI; ``kind``: ``docker`` or ``podman``;
- ``container``: the row's container name;
- ``start``: the arguments of ``ENGINE run`` that start the container (detached);
- ``lock``: a file the launchers of one row lock while one of them starts the container;
- ``user``: ``uid:gid`` the program runs as; ``cwd``: its working directory;
- ``env``: the names of the variables (of this process's environment) the program gets;
- ``set``: ``{name: value}`` the program gets whose names the engine's CLI reads too
  (``HOME``, ``PATH``…: this process keeps the engine's values);
- ``copy``: host paths copied into the container (under ``/tmp`` or ``/var/tmp``, its own)
  before it runs,
  readable by the row's user; ``back``: those of them the program may write (owned by the
  row's user), copied back to the host when it ends (links and paths that would leave the
  folder are refused: tarfile's ``data`` filter);
- ``remove``: ``true`` for a coding agent's container of its own: removed (in the
  background) when the program ends or this launcher is killed;
- ``max_pids``: the row's ``--pids-limit``, or ``null``: a program that fails while the
  container's pids cgroup refused forks since the last look gets a last line on stderr
  naming ``sandbox.limits.max_pids``;
- ``memory_mb``: the row's memory limit, or ``null``: a program while which the container's
  memory cgroup counted an OOM kill (itself killed, ``137``, or a process it started while
  it went on) gets a last line on stderr naming ``sandbox.limits.max_memory_mb``;
- ``marker``: ``NAME=value`` set for the program only: when the program ends, or this
  launcher is killed first (the program's timeout), a watcher in its own session kills
  every process holding the marker (the container's processes are the host's, seen
  through ``/proc``): as on ``bwrap``, what a program started ends with it.

The exit code is the program's; ``125`` when the container cannot start (its message, from
the engine, on stderr), as ``docker run`` does.
"""

import contextlib
import fcntl
import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time

START_FAILED = 125
KILLED = 137
KEEP = b"k"  # main to the watcher: end the leftovers, the launcher removes the container


def main(argv: list[str]) -> int:
    """Run ``argv[3:]`` in the container of ``argv[1]`` (the config); its exit code."""
    config = json.loads(argv[1])
    command = argv[3:]
    problem = ensure_started(config)
    if problem:
        sys.stderr.write(problem)
        return START_FAILED
    back = config.get("back") or []
    for path in config.get("copy") or []:
        problem = copy_in(config, path, owned=path in back)
        if problem:
            sys.stderr.write(not_started(config) or problem)
            return START_FAILED
    remove = [config["engine"], "rm", "-f", config["container"]] if config.get("remove") else []
    done, watcher = watch(config["marker"], remove)
    name, _, value = config["marker"].partition("=")
    env = {**os.environ, name: value}
    names = [*config["env"], name]
    exec_args = [config["engine"], "exec", "-u", config["user"], "-w", config["cwd"]]
    if config.get("kind") == "podman":
        command = stdin_from_file(config, command)
    else:
        exec_args.insert(2, "-i")
    for variable in names:
        exec_args += ["-e", variable]
    for variable, given in (config.get("set") or {}).items():
        exec_args += ["-e", f"{variable}={given}"]
    code = subprocess.run([*exec_args, config["container"], *command], env=env,
                          check=False).returncode  # fmt: skip
    why = not_started(config) if code >= START_FAILED else ""
    kills = new_oom_kills(config) if config.get("memory_mb") and not why else 0
    killed = code == KILLED and kills > 0
    os.write(done, KEEP)  # the container is removed below, after its last look
    os.close(done)
    os.waitpid(watcher, 0)  # what the program left running has ended
    # read once the leftovers are gone: at the limit, not even `cat` could start
    forks = refused_forks(config) if code not in (0, KILLED) and config.get("max_pids") else 0
    if remove:
        start_removal(remove)
    if why:
        sys.stderr.write(why)  # its first program failed only after the start was checked
        return START_FAILED
    for path in back:
        copy_out(config, path)
    if kills > 0:  # the program itself, or one it started while it went on
        sys.stderr.write(
            f"assay: killed for memory: the row's processes passed "
            f"sandbox.limits.max_memory_mb ({config['memory_mb']} MiB)"
            + ("" if killed else f"; {kills} process(es) killed, the program went on")
            + "\n"
        )
    if forks:
        sys.stderr.write(
            f"assay: {forks} fork(s) refused: the row's processes reached "
            f"sandbox.limits.max_pids ({config['max_pids']})\n"
        )
    return code


def new_oom_kills(config: dict[str, object]) -> int:
    """How many processes the kernel killed for memory in the row's container (its memory
    cgroup's ``oom_kill`` count, cgroup v1 or v2) since the last look; 0 when it cannot be
    read."""
    return since_last_look(config, "oom-kills", "oom_kill", "/sys/fs/cgroup/memory.events",
                           "/sys/fs/cgroup/memory/memory.oom_control")  # fmt: skip


def refused_forks(config: dict[str, object]) -> int:
    """How many forks the row's container refused at its ``--pids-limit`` since the last
    look (its pids cgroup's ``max`` count, cgroup v1 or v2); 0 when it cannot be read."""
    return since_last_look(config, "pids-max-seen", "max", "/sys/fs/cgroup/pids.events",
                           "/sys/fs/cgroup/pids/pids.events")  # fmt: skip


def since_last_look(config: dict[str, object], name: str, key: str, *files: str) -> int:
    """What a cgroup count (:func:`cgroup_count`) grew by since an earlier program of the
    container last read it: each read is kept beside the container's start lock (``name``;
    per container: a coding agent's own too), so a program reads it once, after it ends."""
    total = cgroup_count(config, key, *files)
    seen_file = f"{config['lock']}.{name}"
    try:
        with open(seen_file) as handle:
            seen = int(handle.read().strip() or 0)
    except (OSError, ValueError):
        seen = 0
    with contextlib.suppress(OSError), open(seen_file, "w") as handle:
        handle.write(str(total))
    return max(0, total - seen)


START_TRIES = 5
"""Times an engine's ``exec`` of one of this launcher's own helpers (a copy in or out, the
program's input) is tried when the engine could not start its process (:func:`start_refused`),
:data:`COUNT_PAUSE` seconds apart."""
START_REFUSALS = (b"init-p", b"temporarily unavailable", b"connection reset")
"""What the engine's runtime says when it could not start a process in the container for a
moment (runc, Docker's and this machine's Podman's: ``OCI runtime exec failed: … read init-p:
connection reset by peer``). The runtime's own start process (a Go program: its threads) is
counted against the container's ``--pids-limit``, so at a small ``sandbox.limits.max_pids``
a busy machine sees it now and then; a missing program or user is never tried again."""


def exec_helper(args: list[str], data: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """``subprocess.run`` of an engine's ``exec`` (``args``, ``data`` on its input, both
    outputs captured), tried again (:data:`START_TRIES`) while :func:`start_refused`."""
    for attempt in range(START_TRIES):
        done = subprocess.run(args, input=data, capture_output=True, check=False)
        if not start_refused(done) or attempt + 1 == START_TRIES:
            break
        time.sleep(COUNT_PAUSE)
    return done


def start_refused(
    done: subprocess.CompletedProcess[bytes] | subprocess.CompletedProcess[str],
) -> bool:
    """Whether the engine could not start the process for a moment (:data:`START_REFUSALS`):
    its runtime's message (Docker's CLI writes it on its standard output, Podman's on its
    standard error) and nothing else, one line (the process never ran)."""
    said = [part if isinstance(part, bytes) else str(part or "").encode()
            for part in (done.stdout, done.stderr)]  # fmt: skip
    message = b"".join(said).strip()
    return (done.returncode != 0 and b"OCI runtime" in message and b"\n" not in message
            and any(word in message for word in START_REFUSALS))  # fmt: skip


COUNT_TRIES = 25
"""Times a cgroup count is read before it is taken as 0, :data:`COUNT_PAUSE` seconds apart:
at the pids limit the reading program itself cannot start until the row's processes, being
ended, are gone (on a busy machine that takes a moment: 2 s were too few under a loaded
test suite)."""
COUNT_PAUSE = 0.2


def cgroup_count(config: dict[str, object], key: str, *files: str) -> int:
    """The ``key N`` count of the first of ``files`` (cgroup v2's, then v1's, as the row's
    container shows them) that can be read: from the host first (:func:`host_files`; no
    program has to start in a container that may be at its memory or pids limit still: its
    ``/tmp`` holding the memory that killed the program), else from inside; 0 when none
    can be read."""
    for path in host_files(config, files):
        try:
            with open(path) as handle:
                return key_count(handle.read(), key)
        except OSError:
            continue
    read = [str(config["engine"]), "exec", "-u", "0", str(config["container"]), "cat", *files]
    for attempt in range(COUNT_TRIES):
        done = subprocess.run(read, capture_output=True, text=True, check=False)
        if done.stdout.strip() or "No such" in done.stderr:  # read, or nothing to read
            break
        time.sleep(COUNT_PAUSE if attempt + 1 < COUNT_TRIES else 0)
    return key_count(done.stdout, key)


def key_count(text: str, key: str) -> int:
    """The ``N`` of a ``key N`` line of a cgroup file's ``text``; 0 without one."""
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


def host_files(config: dict[str, object], files: tuple[str, ...]) -> list[str]:
    """Where the host shows ``files`` (the container's ``/sys/fs/cgroup/…``): the groups its
    first process is in (``/proc/PID/cgroup``: ``N:memory:/docker/ID`` on cgroup v1,
    ``0::/…`` on v2), under this process's ``/sys/fs/cgroup``; ``[]`` when the engine does
    not say the process or its groups cannot be read."""
    asked = [str(config["engine"]), "inspect", "--format", "{{.State.Pid}}",
             str(config["container"])]  # fmt: skip
    pid = subprocess.run(asked, capture_output=True, text=True, check=False).stdout.strip()
    try:
        with open(f"/proc/{int(pid)}/cgroup") as handle:
            lines = handle.read().splitlines()
    except (OSError, ValueError):
        return []
    groups = {}
    for line in lines:
        _, controllers, group = [*line.split(":", 2), "", ""][:3]
        for controller in controllers.split(",") if controllers else [""]:
            groups[controller] = group.rstrip("/")
    found = []
    for file in files:
        rest = file.removeprefix("/sys/fs/cgroup/")
        controller, _, name = rest.partition("/")
        if name and controller in groups:  # v1: /sys/fs/cgroup/memory/memory.oom_control
            found.append(f"/sys/fs/cgroup/{controller}{groups[controller]}/{name}")
        elif not name and "" in groups:  # v2: /sys/fs/cgroup/memory.events
            found.append(f"/sys/fs/cgroup{groups['']}/{rest}")
    return found


def stdin_from_file(config: dict[str, object], command: list[str]) -> list[str]:
    """``command`` reading this launcher's standard input (all of it, up to its end) from a
    file in the container: Podman 4's ``exec -i`` can lose the program's output when its
    input ends before the program does."""
    data = sys.stdin.buffer.read() if not sys.stdin.closed else b""
    if not data:
        return command
    path = f"/tmp/.assay-stdin-{str(config['marker']).partition('=')[2]}"
    write = [str(config["engine"]), "exec", "-i", "-u", str(config["user"]),
             str(config["container"]), "sh", "-c", f"cat > {path}"]  # fmt: skip
    exec_helper(write, data)
    return ["/bin/sh", "-c", f'exec "$@" < {path}', "sh", *command]


def ensure_started(config: dict[str, object]) -> str:
    """Start the row's container unless a launcher of the row already did; ``""`` or why
    it cannot start."""
    lock = str(config["lock"])
    with open(lock, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        if handle.read().strip() == "started":
            return ""
        start = [str(config["engine"]), "run", "-d", *map(str, config["start"])]  # type: ignore[call-overload]
        done = subprocess.run(start, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return start_failure(config, done.stderr or done.stdout)
        why = not_started(config)
        if why:
            return why
        handle.write("started\n")
        handle.flush()
    return ""


def start_failure(config: dict[str, object], why: str) -> str:
    """The message of a container that did not start: the engine's last lines, and what
    to do when its init could not start ``sleep`` (an image without it)."""
    lines = why.strip().splitlines()[-10:]
    image = config["start"][-2]  # type: ignore[index]
    if "exec sleep failed" in why:
        fix = "; the image has no sleep on its PATH, the first program of each row's container"
    elif why == STOPPED_AT_ONCE:
        fix = "; the first program of each row's container ended at once, a sleep that waits"
    else:
        fix = ""
    if fix:
        fix += " (sleep infinity): add it to the image (Debian: RUN apt-get install -y "
        fix += "--reinstall coreutils)"
    if "exec sleep failed" in why:  # or it is there, on no folder of the image's PATH
        fix += ", or keep its folder (/usr/bin, /bin) on the image's ENV PATH"
    # assay.sandbox.process.NOT_STARTED: the words a row's error is found by
    return (f"assay: the row's container did not start ({config['engine']} run, image "
            f"{image}): " + "\n".join(lines) + fix + "\n")  # fmt: skip


def not_started(config: dict[str, object]) -> str:
    """``""`` when the row's container runs; else :func:`start_failure` with what it
    printed before it stopped (its first program, ``sleep``, could not start: an image
    without it)."""
    why = stopped(config)
    return start_failure(config, why) if why else ""


STOPPED_AT_ONCE = "it stopped at once (no message)"


def stopped(config: dict[str, object]) -> str:
    """``""`` when the row's container runs; else what it printed before it stopped."""
    engine, name = str(config["engine"]), str(config["container"])
    state = subprocess.run([engine, "inspect", "--format", "{{.State.Running}}", name],
                           capture_output=True, text=True, check=False)  # fmt: skip
    if state.stdout.strip() == "true":
        return ""
    logs = subprocess.run([engine, "logs", name], capture_output=True, text=True, check=False)
    return (logs.stdout + logs.stderr).strip() or STOPPED_AT_ONCE


def copy_in(config: dict[str, object], path: str, *, owned: bool = False) -> str:
    """Copy the host's ``path`` (a file or a folder in a temporary folder) to the same place in
    the container, as the row's user (``owned``: writable by it, else read-only); ``""`` or
    why it cannot."""
    parent = os.path.dirname(path.rstrip("/")) or "/"
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as archive:
        archive.add(path, arcname=os.path.basename(path.rstrip("/")))
    mode = "u+rwX" if owned else "a+rX,u-w"
    unpack = [str(config["engine"]), "exec", "-i", "-u", str(config["user"]),
              str(config["container"]), "sh", "-c", f"{{ chmod -R u+w '{path}'; rm -rf "
              f"'{path}'; }} 2>/dev/null; mkdir -p '{parent}' && tar -x "
              f"--no-same-owner -C '{parent}' && chmod -R {mode} '{path}'"]  # fmt: skip
    done = exec_helper(unpack, data.getvalue())
    if done.returncode != 0 and open_parent(config, parent):
        done = exec_helper(unpack, data.getvalue())
    if done.returncode != 0:
        said = (done.stderr or done.stdout).decode("utf-8", "replace").strip()
        return (f"assay: cannot copy {path} into the row's container (it needs sh and tar): "
                + (said or f"{config['engine']} exec exited with code {done.returncode}")
                + "\n")  # fmt: skip
    return ""


def open_parent(config: dict[str, object], parent: str) -> bool:
    """Let the row's user make entries in ``parent`` when it cannot (a folder in the
    container's own ``/tmp`` or ``/var/tmp`` that the engine made, as root, on the way to a
    mounted one: ``TMPDIR`` holding the run's folder): it is made, and given ``/tmp``'s own
    mode (``1777``), as the container's root. Only a folder on that tmpfs (its device) is
    changed, never a mounted one (the host's). Whether it was; ``False`` for a path
    elsewhere, or a container without ``sh``, ``mkdir`` or ``stat``."""
    scratch = next((root for root in ("/tmp", "/var/tmp") if parent.startswith(root + "/")), "")
    if not scratch:
        return False
    script = (f"mkdir -p '{parent}' && [ \"$(stat -c %d '{parent}')\" = "
              f"\"$(stat -c %d {scratch})\" ] && chmod 1777 '{parent}'")  # fmt: skip
    fix = [str(config["engine"]), "exec", "-u", "0", str(config["container"]), "sh", "-c", script]
    return exec_helper(fix).returncode == 0


def copy_out(config: dict[str, object], path: str) -> None:
    """Copy the container's ``path`` back over the host's (what the program wrote there);
    a member that is not a plain file or folder inside it is skipped."""
    parent = os.path.dirname(path.rstrip("/")) or "/"
    pack = [str(config["engine"]), "exec", "-u", str(config["user"]), str(config["container"]),
            "tar", "-c",
            "-C", parent, os.path.basename(path.rstrip("/"))]  # fmt: skip
    done = exec_helper(pack)
    if done.returncode != 0:
        return
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
        for member in archive.getmembers():
            if member.isfile() or member.isdir():
                try:
                    archive.extract(member, parent, filter="data")
                except (OSError, tarfile.TarError):
                    continue


def watch(marker: str, remove: list[str]) -> tuple[int, int]:
    """Start the watcher; it ends the marked processes once :data:`KEEP` is written to the
    returned pipe end or that end is closed (by :func:`main`, or by the kernel when this
    launcher is killed); in the second case, this launcher gone, it also starts ``remove``
    (the command that removes a coding agent's container, if any) without waiting for it.
    Returns that pipe end and the watcher's pid."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setsid()
        os.close(write_end)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # the program's output pipes close when it ends
            os.dup2(null, fd)
        said = os.read(read_end, 1)  # returns at the first byte or the close
        end_marked(marker)
        if remove and said != KEEP:
            start_removal(remove)
        os._exit(0)
    os.close(read_end)
    return write_end, pid


def start_removal(remove: list[str]) -> None:
    """Start ``remove`` in a session of its own, its streams on ``/dev/null`` (the row's
    output pipes close when the program ends), without waiting for it."""
    with contextlib.suppress(OSError):
        subprocess.Popen(remove, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip


def end_marked(marker: str) -> None:
    """SIGKILL every process whose environment holds ``marker`` (twice: a shell may fork
    while the first pass runs)."""
    wanted = marker.encode("utf-8")
    for _ in range(2):
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as handle:
                    environ = handle.read()
            except OSError:
                continue
            if wanted in environ.split(b"\0"):
                with contextlib.suppress(OSError):
                    os.kill(int(entry), signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
