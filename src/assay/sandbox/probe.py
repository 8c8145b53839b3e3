"""Can this machine make a bwrap sandbox? One is made when a run starts; where it cannot be,
the error says why and how to fix it (bubblewrap missing, user namespaces switched off, a
container's profile, a folder the row's user cannot read)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from assay.errors import SandboxError, UsageError
from assay.sandbox.bwrap import INSTALL_HINT, JailPolicy

PROBE_SECONDS = 20.0


def probe(policy: JailPolicy) -> None:
    """Make one sandbox and run ``true`` in it, as every row will.

    Raises:
        UsageError: the machine cannot make such a sandbox: why, and how to fix it.
    """
    folder = Path(tempfile.mkdtemp(prefix="assay-probe-"))
    jail = None
    try:
        jail = policy.jail(folder, limits={})
        argv, env = jail.command(["true"], env={"PATH": "/usr/bin:/bin"}, bridge=True)
        done = subprocess.run(argv, env=env, capture_output=True, text=True,
                              timeout=PROBE_SECONDS, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise UsageError(f"the bwrap sandbox did not start within {PROBE_SECONDS:g} s",
                         hint=INSTALL_HINT) from None  # fmt: skip
    except (OSError, SandboxError) as exc:
        raise UsageError(f"cannot run {policy.bwrap}: {exc}", hint=INSTALL_HINT) from None
    finally:
        if jail is not None:
            jail.close()
        shutil.rmtree(folder, ignore_errors=True)
    if done.returncode != 0:
        message = done.stderr.strip() or f"bwrap exited with code {done.returncode}"
        raise UsageError(f"the machine cannot make a bwrap sandbox: {message}",
                         hint=diagnose(message, as_root=policy.as_root))  # fmt: skip


def diagnose(message: str, *, as_root: bool, root: Path = Path("/")) -> str:
    """How to fix what bwrap said: a folder the row's user cannot read, or the settings
    that forbid the namespaces bwrap needs (read under ``root``: ``/proc/sys``, the
    container markers)."""
    hints: list[str] = []
    lowered = message.lower()
    if "source path" in lowered:
        hints.append(
            "the row's user cannot read a folder it needs: "
            + ("assay runs as root, so each row runs as an unprivileged user of its own; make "
               "the folder readable by others (chmod o+rx on it and its parents) or run "
               "assay as a normal user" if as_root else "check its permissions")
        )  # fmt: skip
    if any(word in lowered for word in ("namespace", "not permitted", "uid map", "setting up")):
        hints += namespace_hints(as_root=as_root, root=root)
    if not hints:
        hints.append("check that bwrap works here: bwrap --ro-bind / / --unshare-all true")
    hints.append("or set sandbox.driver: tempdir (the row is then not contained)")
    return "; ".join(hints)


USERNS_SETTINGS = {
    "proc/sys/kernel/unprivileged_userns_clone": (
        "0", "unprivileged user namespaces are off (Debian's switch): sysctl -w "
             "kernel.unprivileged_userns_clone=1"),
    "proc/sys/user/max_user_namespaces": (
        "0", "user namespaces are off: sysctl -w user.max_user_namespaces=15000"),
    "proc/sys/kernel/apparmor_restrict_unprivileged_userns": (
        "1", "AppArmor restricts unprivileged user namespaces (Ubuntu 23.10 and later): "
             "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or give bwrap an "
             "AppArmor profile that allows them"),
}  # fmt: skip
"""Kernel settings (relative to ``/``) that forbid bwrap's user namespace, the value that
does, and the fix."""


def namespace_hints(*, as_root: bool, root: Path = Path("/")) -> list[str]:
    """The kernel settings and container profiles that forbid bwrap's namespaces here (as
    root, bwrap makes no user namespace, so only a container profile can stop it)."""
    hints: list[str] = []
    for path, (bad, hint) in USERNS_SETTINGS.items():
        if as_root:
            break
        try:
            if (root / path).read_text().strip() == bad:
                hints.append(hint)
        except OSError:
            continue
    if _in_container(root):
        hints.append(
            "in a container, namespaces are usually forbidden by its seccomp or AppArmor "
            "profile: run it with --security-opt seccomp=unconfined --security-opt "
            "apparmor=unconfined (or --privileged, or --cap-add SYS_ADMIN as root)"
        )
    return hints


def _in_container(root: Path) -> bool:
    if (root / ".dockerenv").exists() or (root / "run/.containerenv").exists():
        return True
    try:
        text = (root / "proc/1/cgroup").read_text()
    except OSError:
        return False
    return any(word in text for word in ("docker", "kubepods", "containerd", "lxc"))
