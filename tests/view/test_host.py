"""``assay view`` answers only requests addressed to itself from its own pages: a forged
``Host`` (DNS rebinding) gets 421 on every kind of route, a request a browser marks as coming
from another origin gets 403, and a real headless Chromium page served from another origin
(another port of 127.0.0.1, and ``localhost`` against ``127.0.0.1``) cannot read the
viewer's data with ``fetch()``."""

from __future__ import annotations

import http.server
import subprocess
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from assay.view.guard import allowed_hosts
from tests.helpers import QuietHTTPServer
from tests.view.browser import chromium, chromium_path, viewer
from tests.view.generate import make_run

ROW = "default/sst2-three-way/r000001/00"
ROUTES = [
    "/",
    "/runs/one",
    "/runs/one/rows?status=FAILURE",
    f"/runs/one/rows/{ROW}",
    f"/runs/one/files/{ROW}/task.json",
    "/api/runs/one/progress",
    "/diff?a=one&b=one",
    "/favicon.ico",
    "/assets/vendor/vega.min.js",
]
FORGED_HOSTS = [
    "attacker.example",
    "attacker.example:{port}",
    "127.0.0.1",  # the right address, another port (80)
    "127.0.0.1:1",
    "localhost.attacker.example:{port}",
    "127.0.0.1.nip.io:{port}",
    "",
]


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("host") / "runs"
    make_run(12, root, name="one")
    with viewer(str(root), cwd=root.parent) as address:
        yield address


def _port(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


def test_every_route_answers_its_own_addresses(url: str) -> None:
    port = _port(url)
    with httpx.Client(base_url=url, timeout=30) as client:
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}"):
            for route in ROUTES:
                answer = client.get(route, headers={"Host": host})
                assert answer.status_code in (200, 204), (host, route, answer.text[:200])
                # no page may frame it (a click and a key there saved a label: clickjacking)
                assert answer.headers["x-frame-options"] == "DENY", route
                assert answer.headers["content-security-policy"] == "frame-ancestors 'none'"
        refused = client.get(ROUTES[0], headers={"Host": "attacker.example"})
        assert refused.status_code == 421 and refused.headers["x-frame-options"] == "DENY"


def test_a_forged_host_is_refused_on_every_route(url: str) -> None:
    port = _port(url)
    with httpx.Client(base_url=url, timeout=30) as client:
        for forged in FORGED_HOSTS:
            host = forged.format(port=port)
            for route in ROUTES:
                answer = client.get(route, headers={"Host": host})
                assert answer.status_code == 421, (host, route)
                assert "answers only requests addressed to" in answer.text
                assert f"127.0.0.1:{port}" in answer.text
                assert "access-control-allow-origin" not in answer.headers
                assert "sst2" not in answer.text  # no data of the run


def test_requests_marked_as_from_another_origin_are_refused(url: str) -> None:
    port = _port(url)
    others = [
        {"Origin": "http://attacker.example"},
        {"Origin": f"http://127.0.0.1:{port + 1}"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"},
        {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors"},
        {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Origin": "null"},
    ]
    with httpx.Client(base_url=url, timeout=30) as client:
        for headers in others:
            for route in ROUTES:
                answer = client.get(route, headers=headers)
                assert answer.status_code == 403, (headers, route)
                assert "access-control-allow-origin" not in answer.headers
        own = {"Origin": f"http://127.0.0.1:{port}", "Sec-Fetch-Site": "same-origin"}
        assert client.get("/api/runs/one/progress", headers=own).status_code == 200
        opened = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}
        assert client.get("/runs/one", headers=opened).status_code == 200  # a link to it


def test_allowed_hosts_name_every_loopback_spelling() -> None:
    assert allowed_hosts("127.0.0.1", 8765) == {"127.0.0.1:8765", "localhost:8765",
                                                "[::1]:8765"}  # fmt: skip
    assert allowed_hosts("::1", 80) == {"127.0.0.1:80", "localhost:80", "[::1]:80"}
    assert allowed_hosts("10.1.2.3", 9) == {"10.1.2.3:9"}
    assert "127.0.0.1:9" in allowed_hosts("0.0.0.0", 9)


def test_every_address_means_every_interfaces_address_too() -> None:
    """`--host 0.0.0.0` answered 421 to a browser using the machine's IP: its name resolved
    to loopback alone (/etc/hosts), and interfaces were never listed (a reviewer's
    break-test)."""
    shown = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True)
    if shown.returncode != 0:
        pytest.skip("no `ip` program to list the interfaces with")
    addresses = {line.split()[3].split("/")[0] for line in shown.stdout.splitlines()}
    assert addresses and {f"{a}:9" for a in addresses} <= allowed_hosts("0.0.0.0", 9)


class _Page(http.server.BaseHTTPRequestHandler):
    """Serves one page of the other origin (the attacker's), whatever the path."""

    def do_GET(self) -> None:
        body = b"<!doctype html><title>other origin</title><p>elsewhere</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def other_origin() -> Iterator[int]:
    server = QuietHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


READ = """async (target) => {
  try {
    const answer = await fetch(target, {credentials: "include"});
    return "read " + answer.status + ": " + (await answer.text()).slice(0, 200);
  } catch (error) { return "failed: " + error; }
}"""
READ_OPAQUE = """async (target) => {
  try {
    const answer = await fetch(target, {mode: "no-cors"});
    return "opaque " + answer.type;
  } catch (error) { return "failed: " + error; }
}"""


def test_a_page_of_another_origin_cannot_read_the_viewer(url: str, other_origin: int) -> None:
    chromium_path()
    port = _port(url)
    routes = ("/api/runs/one/progress", f"/runs/one/files/{ROW}/task.json", "/runs/one")
    data = [f"http://127.0.0.1:{port}{route}" for route in routes]
    with chromium() as browser:
        page = browser.new_page()
        seen: list[tuple[str, int]] = []
        page.on("response", lambda r: seen.append((r.url, r.status)))
        for origin in (f"http://127.0.0.1:{other_origin}/", f"http://localhost:{port}/"):
            page.goto(origin)
            for target in data:
                result = page.evaluate(READ, target)
                assert result.startswith("failed"), (origin, target, result)
                assert page.evaluate(READ_OPAQUE, target).startswith(("failed", "opaque"))
        # the viewer refused them itself (not only the browser's CORS check)
        refused = [status for address, status in seen if f"127.0.0.1:{port}/" in address]
        assert refused and all(status == 403 for status in refused), seen
        own = browser.new_page()
        own.goto(f"{url}runs/one")
        assert own.evaluate(READ, "/api/runs/one/progress").startswith("read 200")
