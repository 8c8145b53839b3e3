"""``assay view``: serve the viewer on a local port until Ctrl-C.

The server listens on 127.0.0.1 (a free port unless ``port`` is given); any other ``host``
is allowed only when asked for, with a warning, since whoever reaches it can read every
prompt, response and file of the runs. A port in use is a :class:`~assay.errors.UsageError`
naming it.
"""

from __future__ import annotations

import contextlib
import errno
import getpass
import ipaddress
import signal
import socket
import threading
import webbrowser
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from assay.errors import UsageError
from assay.view.guard import allowed_hosts
from assay.view.workspace import Workspace

if TYPE_CHECKING:
    import uvicorn

LOOPBACK = "127.0.0.1"
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def is_loopback(host: str) -> bool:
    """``host`` is a loopback address (127.0.0.0/8, ::1) or ``localhost``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def exposure_warning(host: str, port: int) -> str:
    """What a user is told when the viewer listens beyond this machine."""
    return (
        f"assay view listens on {host}:{port}, not only on this machine: anyone who can "
        "reach it can read these runs (prompts, responses, files) and save labels into your "
        "store; there is no login"
    )


def listen(host: str, port: int | None) -> socket.socket:
    """A listening TCP socket on ``host`` (``port`` ``None`` or 0: a free one).

    Raises:
        UsageError: the port is in use, or the address cannot be listened on.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port or 0))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(f"port {port} on {host} is in use",
                             hint="choose another with --port, or leave --port out to use a "
                                  "free one") from None  # fmt: skip
        if exc.errno == errno.EACCES:
            hint = "use a port above 1023, or leave --port out"
            raise UsageError(f"not allowed to listen on port {port} of {host}", hint=hint) from None
        reason = exc.strerror or str(exc)
        hint = "--host takes an address of this machine, e.g. 127.0.0.1"
        raise UsageError(f"cannot listen on {host}:{port or 0} ({reason})", hint=hint) from None
    return sock


def url_of(sock: socket.socket) -> str:
    """``http://HOST:PORT/`` of a listening socket."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def view_runs(
    folders: Sequence[str | Path] = ("runs",),
    *,
    host: str = LOOPBACK,
    port: int | None = None,
    open_browser: bool = False,
    on_ready: Callable[[str], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
    store: str | None = None,
    labels: str | None = None,
    reviewer: str | None = None,
) -> None:
    """Serve the viewer over run folders or folders of runs until Ctrl-C (or SIGTERM),
    then remove its index and return (``assay view``).

    It reads the folders as they are (a run in progress included, updating as rows finish)
    and never writes into them.

    Args:
        folders: run folders, or folders of runs (default ``runs``; each checked to exist).
        host: the address to listen on; 127.0.0.1 unless you mean to share it (then
            ``on_warning`` is told: the viewer has no login).
        port: the port (``None``: a free one).
        open_browser: open the viewer's URL in the default browser once listening.
        on_ready: called with the URL (``http://127.0.0.1:PORT/``) once it listens.
        on_warning: called with each warning.
        store: the store human labels are saved to (``None``: ``$ASSAY_STORE``, else
            ``.assay/store.db``; opened on the first label); never the run folders.
        labels: the dataset every run's labels go to (``None``: ``review-RUN`` per run).
        reviewer: the name a label carries when the page gives none (``None``: the
            system's user name).

    Raises:
        UsageError: a folder does not exist, or the port cannot be listened on.
        StoreError: ``labels`` names a dataset of the store with other fields than a review's.
    """
    import uvicorn

    from assay.view.app import build_app
    from assay.view.review import LabelBook

    ws = Workspace([Path(f) for f in folders])
    _store_outside_runs(store, ws)
    book = LabelBook(store, labels, reviewer or _user_name())
    book.check()
    try:
        sock = listen(host, port)
        url = url_of(sock)
        if not is_loopback(host) and on_warning is not None:
            on_warning(exposure_warning(host, sock.getsockname()[1]))
        for entry in ws.runs():
            ws.index(entry)  # start reading rows now, newest runs first
        hosts = allowed_hosts(host, sock.getsockname()[1])
        config = uvicorn.Config(build_app(ws, hosts=hosts, labels=book), log_level="warning",
                                lifespan="off", access_log=False)  # fmt: skip
        server = uvicorn.Server(config)
        with stop_server_on_signals(server):
            if on_ready is not None:
                on_ready(url)
            if open_browser:
                webbrowser.open(url)
            server.run(sockets=[sock])  # until a stop signal (no KeyboardInterrupt: above)
    finally:
        book.close()
        ws.close()


def _user_name() -> str:
    """The system's user name, else ``reviewer``."""
    try:
        return getpass.getuser() or "reviewer"
    except (OSError, KeyError):
        return "reviewer"


@contextlib.contextmanager
def stop_server_on_signals(server: uvicorn.Server) -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM ask ``server`` to stop (uvicorn's own handler):
    also one that comes before it serves (while the browser opens), and also when the
    process started with SIGINT ignored, as a shell's background job does; otherwise such
    a signal would be lost and the viewer would never end. The previous handlers come back
    after. Outside the main thread (where no handler can be set) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, server.handle_exit) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _store_outside_runs(store: str | None, ws: Workspace) -> None:
    """The label store is a store URL, and is never written into a run folder the viewer
    shows (the default ``.assay/store.db`` of a working directory inside one would be).

    Raises:
        StoreError: ``store`` is not a store URL.
        UsageError: naming the store file and the run folder, with the way out.
    """
    from assay.store.engine import parsed_url, resolve_url, sqlite_path

    url = resolve_url(store)
    parsed_url(url)  # a bad --store said now, not at a reviewer's first label
    path = sqlite_path(url)
    if path is None:
        return
    for entry in ws.runs():
        if path.resolve().is_relative_to(entry.path.resolve()):
            raise UsageError(
                f"the label store {path} would be written inside the run folder {entry.path}, "
                "which the viewer only reads",
                hint="start assay view from outside the run folder, or give --store URL",
            )
