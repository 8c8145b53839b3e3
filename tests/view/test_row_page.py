"""A row's page over HTTP for rows of every kind: a QA row graded by a scripted judge (its
verdict and reason), a judge error and an agent that crashed (their causes, outside every
denominator), a row whose task.json is corrupt (the problem, and what can still be shown),
the error-kind filter on the rows page, and ``--open`` starting the user's browser."""

from __future__ import annotations

import html
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.cli.test_qa_run import qa_run  # noqa: F401 - the fixture, shared
from tests.cli.test_run import latest
from tests.helpers import write
from tests.view.browser import viewer


@pytest.fixture(scope="module")
def qa_folder(request: pytest.FixtureRequest) -> Path:
    """The run of tests/cli/test_qa_run.py's QA task (its fixture ``qa_run``: the folder the
    run was started in)."""
    return latest(request.getfixturevalue("qa_run"))


@pytest.fixture(scope="module")
def client(qa_folder: Path) -> Iterator[httpx.Client]:
    with viewer(str(qa_folder), cwd=qa_folder.parent) as url, httpx.Client(base_url=url) as http:
        yield http


def text_of(response: httpx.Response) -> str:
    """The page's text without tags, entities decoded, spaces collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.text)).split())


def test_a_qa_row_shows_the_judges_verdict_and_reason(
    client: httpx.Client, qa_folder: Path
) -> None:
    page = text_of(client.get(f"/runs/{qa_folder.name}/rows/default/qa-demo/moon/00"))
    assert "in the early seventies" in page  # the response
    assert "graded by judge" in page
    assert "judge verdict: 1972 is in the early seventies" in page
    rule = text_of(client.get(f"/runs/{qa_folder.name}/rows/default/qa-demo/fr/00"))
    assert "graded by rule" in rule


def test_errored_rows_say_why_and_filter_by_error_kind(
    client: httpx.Client, qa_folder: Path
) -> None:
    hard = text_of(client.get(f"/runs/{qa_folder.name}/rows/default/qa-demo/hard/00"))
    assert "judge_error: unparseable verdict" in hard
    assert "it errored before grading, so it is outside every metric's denominator" not in hard
    crash = text_of(client.get(f"/runs/{qa_folder.name}/rows/default/qa-demo/crash/00"))
    assert "exit code 3" in crash
    rows = client.get(f"/runs/{qa_folder.name}/rows", params={"error": "judge_error"}).text
    assert re.findall(r'data-row="(\w+)"', rows) == ["hard", "hard"]
    rows = client.get(f"/runs/{qa_folder.name}/rows", params={"error": "extraction_failed"}).text
    assert re.findall(r'data-row="(\w+)"', rows) == ["junk", "junk"]


def test_a_corrupt_task_json_shows_what_it_can(tmp_path: Path, qa_folder: Path) -> None:
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(qa_folder), str(copy)], check=True)
    row = copy / "default" / "qa-demo" / "fr" / "00"
    (row / "task.json").write_text((row / "task.json").read_text()[:200])
    with viewer(str(copy), cwd=tmp_path) as url, httpx.Client(base_url=url) as http:
        page = text_of(http.get("/runs/copy/rows/default/qa-demo/fr/00"))
        assert (
            "Could not read everything: default/qa-demo/fr/00/task.json is not valid JSON" in page
        )
        response = (row / "response.txt").read_text().strip()
        assert f"Response {response}" in page  # response.txt is still shown
        listing = http.get("/runs/copy/rows", params={"status": "UNREADABLE"}).text
        assert re.findall(r'data-row="(\w+)"', listing) == ["fr"]
        run_page = text_of(http.get("/runs/copy"))
        assert "1 row's task.json could not be read (rows marked UNREADABLE)" in run_page


def test_open_starts_the_users_browser_on_the_viewer(tmp_path: Path, qa_folder: Path) -> None:
    opened = tmp_path / "opened.txt"
    browser = write(tmp_path / "browser.sh", f'#!/bin/sh\necho "$1" > {opened}\n')
    browser.chmod(0o755)
    env = {**os.environ, "BROWSER": str(browser)}
    process = subprocess.Popen([sys.executable, "-m", "assay", "view", str(qa_folder), "--open"],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env)  # fmt: skip
    try:
        assert process.stdout is not None
        url = re.search(r"http://\S+/", process.stdout.readline())
        assert url is not None
        deadline = time.monotonic() + 30
        while not opened.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert opened.read_text().strip() == url.group(0)
    finally:
        process.send_signal(2)
        process.wait(30)


@pytest.mark.parametrize(
    ("stop", "inherited"),
    [(signal.SIGINT, signal.SIG_DFL), (signal.SIGINT, signal.SIG_IGN),
     (signal.SIGTERM, signal.SIG_DFL)],
)  # fmt: skip
def test_a_stop_while_the_browser_opens_still_ends_the_viewer(
    tmp_path: Path, qa_folder: Path, stop: signal.Signals, inherited: signal.Handlers
) -> None:
    """Ctrl-C (or SIGTERM) that comes before the server runs, while the browser is still
    opening, ends the viewer cleanly (exit 0, after removing its index); also when it started
    with SIGINT ignored, as a shell script's background job does (such a signal was dropped,
    and the viewer served on forever)."""
    opened = tmp_path / "opened.txt"
    browser = write(tmp_path / "browser.sh", f'#!/bin/sh\necho "$1" > {opened}\nsleep 2\n')
    browser.chmod(0o755)
    env = {**os.environ, "BROWSER": str(browser)}

    def inherit() -> None:
        signal.signal(signal.SIGINT, inherited)

    process = subprocess.Popen([sys.executable, "-m", "assay", "view", str(qa_folder), "--open"],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env, preexec_fn=inherit)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not opened.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert opened.exists()
        process.send_signal(stop)  # the browser script has 2 s to go: the server is not up
        assert process.wait(30) == 0
    finally:
        process.kill()
        process.wait()
