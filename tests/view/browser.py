"""Helpers for the viewer's tests: ``assay view`` as a real process, and the system's
headless Chromium (Debian's ``chromium`` package, ``/usr/bin/chromium``) driven through
Playwright's Python client; no browser is ever downloaded (``playwright install`` is never
run). Screenshots go to ``tests/artifacts/view/`` (not committed) for a person to look at.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts" / "view"
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


def chromium_path() -> str:
    """The system's Chromium; the test fails (it does not skip) when it is missing."""
    for candidate in (os.environ.get("ASSAY_TEST_CHROMIUM"), "/usr/bin/chromium",
                      shutil.which("chromium"), shutil.which("chromium-browser")):  # fmt: skip
        if candidate and Path(candidate).exists():
            return candidate
    pytest.fail("Chromium is not installed: `make install-dev` installs Debian's `chromium` "
                "package (or run `apt-get install chromium`)")  # fmt: skip


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """One headless Chromium process; each test opens its own :func:`fresh_context` in it."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path=chromium_path(), args=CHROMIUM_FLAGS, headless=True
        )
        try:
            yield browser
        finally:
            browser.close()


@contextlib.contextmanager
def fresh_context(browser: Any) -> Iterator[Any]:
    """A new browser context (its own cookies, storage, cache and network settings)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        yield context
    finally:
        context.close()


def screenshot(page: Any, name: str) -> Path:
    """Save the whole page as ``tests/artifacts/view/NAME.png``."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def wait_for_charts(page: Any) -> int:
    """Wait until every chart on the page is drawn; the number of charts."""
    page.wait_for_function(
        "() => Array.from(document.querySelectorAll('.vl')).every(e => e.dataset.drawn)",
        timeout=30_000,
    )
    drawn = page.evaluate("document.querySelectorAll('.vl[data-drawn=true]').length")
    failed = page.evaluate("document.querySelectorAll('.vl[data-drawn=error]').length")
    assert failed == 0
    return int(drawn)


@contextlib.contextmanager
def viewer(*args: str, cwd: Path) -> Iterator[str]:
    """``assay view ARGS`` as a user starts it; the URL it prints. Stopped with Ctrl-C."""
    process = subprocess.Popen([sys.executable, "-m", "assay", "view", *args], cwd=cwd,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)  # fmt: skip
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 60)
        line = process.stdout.readline() if ready else ""
        found = re.search(r"http://127\.0\.0\.1:\d+/", line)
        if found is None:
            process.kill()
            raise AssertionError(f"assay view printed {line!r}; stderr: {process.stderr.read()}")  # type: ignore[union-attr]
        yield found.group(0)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def files_of(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` with its modification time and size (symbolic links not
    followed)."""
    found = {}
    for root, _, names in os.walk(folder):
        for name in names:
            info = (Path(root) / name).lstat()
            found[str(Path(root) / name)] = (info.st_mtime_ns, info.st_size)
    return found
