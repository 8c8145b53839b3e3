"""The viewer's request guard: only requests addressed to the viewer itself, from its own
pages, are answered.

- **Host** (DNS rebinding): a page of ``attacker.example`` whose name is made to resolve to
  127.0.0.1 reaches the viewer with ``Host: attacker.example``. Any ``Host`` other than the
  addresses the viewer listens on (:func:`allowed_hosts`: ``127.0.0.1:PORT``,
  ``localhost:PORT``, ``[::1]:PORT`` for a loopback address; the address given otherwise) is
  answered ``421 Misdirected Request``. Starlette's ``TrustedHostMiddleware`` does not fit:
  it ignores the port (a page served on another port of 127.0.0.1 would pass) and answers
  400.
- **Cross-origin reads**: a page of another origin (another port of 127.0.0.1, or
  ``localhost`` against ``127.0.0.1``) may send requests to the viewer; what a browser marks
  as coming from elsewhere (``Sec-Fetch-Site`` other than ``same-origin``/``none``, or an
  ``Origin`` that is not the viewer's) is answered ``403 Forbidden``, except the opening of a
  page in a tab (``Sec-Fetch-Mode: navigate``, GET, no foreign ``Origin``): the other page
  cannot read that answer, and a link to the viewer from elsewhere keeps working. No CORS
  header is ever sent.
- **Frames** (clickjacking): every answer forbids being shown in a frame (``X-Frame-Options:
  DENY``, ``frame-ancestors 'none'``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_SAME = frozenset({"same-origin", "none"})
UNFRAMED = ((b"x-frame-options", b"DENY"),
            (b"content-security-policy", b"frame-ancestors 'none'"))  # fmt: skip
"""Sent with every answer: no page of any origin may show the viewer in a frame, where a
click and a key on a page made to look like another would save a label (clickjacking)."""


def allowed_hosts(host: str, port: int) -> frozenset[str]:
    """The ``Host`` header values (lower case, ``name:port``) of a viewer listening on
    ``host`` (an address or ``localhost``) at ``port``: ``host`` itself (IPv6 in brackets),
    every loopback spelling when ``host`` is a loopback address, and for every address
    (``0.0.0.0``, ``::``) the loopback spellings and this machine's name and addresses."""
    try:
        address = None if host == "localhost" else ipaddress.ip_address(host)
    except ValueError:
        address = None
    names = {host.lower()}
    if host == "localhost" or (address is not None and (address.is_loopback
                                                        or address.is_unspecified)):  # fmt: skip
        names |= {"127.0.0.1", "localhost", "::1"}
    if address is not None and address.is_unspecified:
        names |= _machine_names()
    return frozenset(f"[{n}]:{port}" if ":" in n else f"{n}:{port}" for n in names)


def _machine_names() -> set[str]:
    """This machine's host name, full name and addresses: those its name resolves to, and
    its network interfaces' (a name often resolves to loopback alone, ``/etc/hosts``)."""
    name = socket.gethostname()
    names = {name.lower(), socket.getfqdn(name).lower()}
    with contextlib.suppress(OSError):
        names.update(socket.gethostbyname_ex(name)[2])
    return names | interface_addresses()


SIOCGIFADDR = 0x8915
"""Linux's ioctl that reads an interface's IPv4 address (``netdevice(7)``)."""


def interface_addresses() -> set[str]:
    """The IPv4 addresses of this machine's network interfaces (``SIOCGIFADDR``) and its IPv6
    ones (``/proc/net/if_inet6``, ``proc(5)``); empty where neither can be read (not Linux)."""
    import fcntl
    import struct

    found: set[str] = set()
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _, name in socket.if_nameindex():
            with contextlib.suppress(OSError):
                answer = fcntl.ioctl(probe.fileno(), SIOCGIFADDR,
                                     struct.pack("256s", name.encode()[:15]))  # fmt: skip
                found.add(socket.inet_ntoa(answer[20:24]))
    with contextlib.suppress(OSError, ValueError), open("/proc/net/if_inet6") as table:
        for line in table:
            packed = bytes.fromhex(line.split()[0])
            found.add(str(ipaddress.IPv6Address(packed)))
    return found


class RequestGuard:
    """ASGI middleware in front of the viewer's application; see the module docstring.

    Args:
        app: the application guarded.
        hosts: the ``Host`` values answered (:func:`allowed_hosts`); compared in lower case.
    """

    def __init__(self, app: ASGIApp, *, hosts: Iterable[str]) -> None:
        self.app = app
        self.hosts = frozenset(h.lower() for h in hosts)
        self.origins = frozenset(f"http://{h}" for h in self.hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}  # fmt: skip
        refusal = self.refusal(headers, method=scope.get("method", "GET"))
        if refusal is None:
            await self.app(scope, receive, _unframed(send))
            return
        status, text = refusal
        body = text.encode()
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"), (b"x-content-type-options", b"nosniff"),
            *UNFRAMED]})  # fmt: skip
        await send({"type": "http.response.body", "body": body})

    def refusal(self, headers: dict[str, str], *, method: str) -> tuple[int, str] | None:
        """``(status, text)`` when a request with ``headers`` (lower-case names) is refused,
        else ``None``."""
        host = headers.get("host", "").strip().lower()
        if host not in self.hosts:
            answered = " or ".join(sorted(self.hosts))
            return 421, (f"assay view answers only requests addressed to {answered}, "
                         f"not to Host '{host[:100]}'\n")  # fmt: skip
        origin = headers.get("origin")
        foreign = origin is not None and origin.lower() not in self.origins
        opened = headers.get("sec-fetch-mode") == "navigate" and method in ("GET", "HEAD")
        site = headers.get("sec-fetch-site")
        if foreign or (site is not None and site not in _SAME and not opened):
            return 403, "assay view answers only its own pages: open it from its own address\n"
        return None


def _unframed(send: Send) -> Send:
    """``send`` with :data:`UNFRAMED` added to the answer's headers."""

    async def sent(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*(message.get("headers") or []), *UNFRAMED]}
        await send(message)

    return sent
