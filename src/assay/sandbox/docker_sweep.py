"""Containers of killed runs: every row's container is labelled with the assay process that
started it (``assay.owner``: host name, pid namespace and pid), and a run that starts on an
engine removes the containers whose process is gone from this host (``kill -9`` of a run,
an out-of-memory kill), as it removes the control groups such a run left
(:meth:`assay.sandbox.cgroups.Hierarchies.sweep`). A container whose owner is on another
host, in another pid namespace, or unlabelled (an older assay's) is never touched.
"""

from __future__ import annotations

import os
import socket
import subprocess
from typing import Protocol

from assay.sandbox.cgroups import pid_namespace, process_alive


class Engine(Protocol):
    """What a sweep asks of a container engine (:class:`assay.sandbox.docker.Engine`)."""

    def run(self, *args: str, timeout: float = ...) -> subprocess.CompletedProcess[str]:
        """``ENGINE args…``, its output captured."""
        ...


OWNER_LABEL = "assay.owner"
ROW_LABEL = "assay.row=1"


def owner_label() -> str:
    """``assay.owner=HOST/NAMESPACE/PID`` of this process, for ``ENGINE run --label``."""
    return f"{OWNER_LABEL}={socket.gethostname()}/{pid_namespace()}/{os.getpid()}"


def stale_owner(owner: str) -> bool:
    """Whether ``owner`` (an ``assay.owner`` label's value) names a process of this host and
    pid namespace that is gone."""
    host, _, rest = owner.partition("/")
    namespace, _, pid = rest.partition("/")
    if host != socket.gethostname() or namespace != str(pid_namespace()) or not pid.isdigit():
        return False
    return not process_alive(int(pid))


def sweep_containers(engine: Engine) -> list[str]:
    """Remove the row containers (``assay.row=1``) of assay processes gone from this host.
    Returns their names; an engine that does not answer is left alone (``[]``)."""
    try:
        listed = engine.run("ps", "-a", "--filter", f"label={ROW_LABEL}", "--format",
                            "{{.Names}}", timeout=30)  # fmt: skip
        names = listed.stdout.split() if listed.returncode == 0 else []
        if not names:
            return []
        owners = engine.run("inspect", "--format", "{{.Name}} {{index .Config.Labels "
                            f'"{OWNER_LABEL}"}}}}', *names, timeout=30)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return []
    stale = []
    for line in owners.stdout.splitlines():
        name, _, owner = line.strip().lstrip("/").partition(" ")
        if owner and stale_owner(owner):
            stale.append(name)
    if stale:
        try:
            engine.run("rm", "-f", *stale, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return []
    return stale
