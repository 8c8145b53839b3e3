"""Reaching a Ray cluster, or starting one on this machine for the run.

Before ``ray.init`` (which waits a long time on a wrong address, and forever on a wrong
token), :func:`connect` checks in a few seconds what would make it fail, each with what to
do: Ray not installed, an address nobody listens on, ``auto`` with no cluster on this
machine, a token the cluster refuses (Ray 2.60 turns token authentication on by default:
every node and driver needs the cluster's token, in ``RAY_AUTH_TOKEN_PATH``,
``RAY_AUTH_TOKEN`` or ``~/.ray/auth_token``).

Without an address, a local Ray instance is started on 127.0.0.1 for the run, with a fresh
token in a private temporary file (nothing is written under the user's home), and stopped at
the end (:meth:`Connection.close`).
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import socket
import tempfile
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from assay.errors import UsageError
from assay.install import install_hint

RAY_VERSION = "2.60.0"
PROBE_SECONDS = 5.0
TOKEN_VARIABLES = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_TOKEN")
TOKEN_HINT = (
    "give this process the cluster's token, as for `ray start`: RAY_AUTH_TOKEN_PATH=<the "
    "cluster's token file> (or RAY_AUTH_TOKEN=<token>, or ~/.ray/auth_token)"
)


def import_ray() -> ModuleType:
    """The ``ray`` module.

    Raises:
        UsageError: Ray is not installed (the hint names the extra).
    """
    try:
        import ray
    except ImportError:
        raise UsageError(
            "--executor ray needs Ray, which is not installed",
            hint=f"{install_hint('distributed')} (Ray {RAY_VERSION}), on this machine and "
            "on every node of the cluster",
        ) from None
    module: ModuleType = ray
    return module


@dataclass
class Connection:
    """This process's connection to a cluster; ``started`` when it started a local one.

    Attributes:
        ray: the ``ray`` module.
        address: the cluster's address (``host:port``), or ``"local"``.
        started: the instance was started for this run (stopped by :meth:`close`).
    """

    ray: ModuleType
    address: str
    started: bool = False
    _restore: dict[str, str | None] = field(default_factory=dict)
    _token_dir: str | None = None

    def close(self) -> None:
        """Disconnect (and stop the instance when it was started here); the process's
        token settings are as they were before."""
        self.ray.shutdown()
        if self._restore:
            for name, value in self._restore.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            reload_auth()
        if self._token_dir is not None:
            shutil.rmtree(self._token_dir, ignore_errors=True)


def reload_auth() -> None:
    """Make Ray read its authentication settings from the environment again (it caches
    them per process)."""
    import ray._raylet

    raylet: Any = ray._raylet
    raylet.Config.initialize("")
    raylet.AuthenticationTokenLoader.instance().reset_cache()


def connect(address: str | None) -> Connection:
    """Connect to the cluster at ``address`` (``host:port`` or ``auto``), or start a local
    instance when it is ``None``.

    Raises:
        UsageError: Ray is missing; ``ray://`` (Ray Client) was given; nobody answers at the
            address; ``auto`` finds no cluster; the cluster refuses this process's token.
    """
    ray = import_ray()
    if address is None:
        return _start_local(ray)
    if address.startswith("ray://"):
        raise UsageError(
            f"--ray-address {address}: Ray Client addresses (ray://) are not supported",
            hint="give the head node's GCS address, host:6379 (what `ray start --head` prints)",
        )
    resolved = resolve_address(address)
    _probe_port(address, resolved)
    _probe_token(address, resolved)
    ray.init(address=resolved, log_to_driver=False, configure_logging=False)
    return Connection(ray, resolved)


def resolve_address(address: str) -> str:
    """``auto`` → the address of the cluster running on this machine; ``host:port`` as is.

    Raises:
        UsageError: ``auto`` finds none; an address without a port.
    """
    if address != "auto":
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise UsageError(f"--ray-address {address} is not host:port (or auto)")
        return address
    from ray._private.services import canonicalize_bootstrap_address

    try:
        found = canonicalize_bootstrap_address(address)
    except (ConnectionError, ValueError):
        found = None
    if found is None:
        raise UsageError(
            "--ray-address auto found no running Ray cluster on this machine",
            hint="start one with `ray start --head`, give its address (host:6379), or "
            "leave --ray-address out to start a local Ray instance for the run",
        )
    return str(found)


def _probe_port(given: str, address: str) -> None:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_SECONDS):
            pass
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"cannot reach the Ray cluster at {given} ({address}): "
            f"{getattr(exc, 'strerror', None) or exc}",
            hint="start its head node (`ray start --head`) or check the address and port "
            "(the GCS port, 6379 by default)",
        ) from None


def _probe_token(given: str, address: str) -> None:
    """Ask the cluster's GCS for a key: refused at once when the token does not match."""
    import ray._raylet
    from ray.exceptions import AuthenticationError

    try:
        client: Any = ray._raylet.GcsClient(address=address)
        client.internal_kv_get(b"assay-probe", None, timeout=PROBE_SECONDS)
    except AuthenticationError:
        raise UsageError(
            f"the Ray cluster at {given} refused this process's authentication token",
            hint=TOKEN_HINT,
        ) from None
    except Exception as exc:  # the real connection says more; only the token is checked here
        if "InvalidAuthToken" in str(exc) or "Unauthenticated" in str(exc):
            raise UsageError(
                f"the Ray cluster at {given} refused this process's authentication token",
                hint=TOKEN_HINT,
            ) from None


def _start_local(ray: ModuleType) -> Connection:
    """A Ray instance on 127.0.0.1 for this run, with its own token."""
    restore: dict[str, str | None] = {}
    token_dir = None
    if not any(os.environ.get(name) for name in TOKEN_VARIABLES[1:]):
        restore = {name: os.environ.get(name) for name in TOKEN_VARIABLES}
        token_dir = tempfile.mkdtemp(prefix="assay-ray-")
        token_file = os.path.join(token_dir, "auth_token")
        with open(os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as handle:
            handle.write(secrets.token_hex(32))
        os.environ["RAY_AUTH_TOKEN_PATH"] = token_file  # ray.init turns token mode on
        reload_auth()
    connection = Connection(ray, "local", True, restore, token_dir)
    # Ray says at length that it turned token authentication on: it is assay's own token
    logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(
        logging.ERROR
    )
    try:
        ray.init(address="local", include_dashboard=False, log_to_driver=False,
                 configure_logging=False, _node_ip_address="127.0.0.1")  # fmt: skip
    except Exception as exc:
        connection.close()
        reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise UsageError(
            f"could not start a local Ray instance: {reason}",
            hint="Ray's sockets live under $RAY_TMPDIR (default /tmp), whose path must stay "
            "short; `ray start --head` shows Ray's own diagnosis",
        ) from None
    return connection
