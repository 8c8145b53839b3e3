"""``assay view`` as a process, over HTTP: the URL it prints, a port in use, a folder that
does not exist, an address beyond this machine (warned about), files served only from inside
the run and only as text or downloads, unknown runs and rows, and the progress endpoint."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from assay.store import Schema, open_store
from assay.view.server import exposure_warning, is_loopback
from tests.cli.inproc import run_in_process
from tests.view.browser import files_of, viewer
from tests.view.generate import make_run


def assay(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``assay ARGS`` in-process (tests/cli/inproc.py): a refusal, exiting before it serves."""
    return run_in_process(*args, cwd=cwd)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("served") / "runs"
    run = make_run(40, root, name="one")
    sandbox = run / "default" / "sst2-three-way" / "r000001" / "00" / "sandbox"
    sandbox.mkdir()
    (sandbox / "page.html").write_text("<script>alert(1)</script>")
    (sandbox / "blob.bin").write_bytes(b"\x00\x01binary")
    (sandbox / "escape.txt").symlink_to("/etc/hostname")
    return root


def test_pages_answer_and_nothing_is_written(runs: Path) -> None:
    before = files_of(runs)
    with viewer(str(runs), cwd=runs.parent) as url:
        assert url.startswith("http://127.0.0.1:")
        with httpx.Client(base_url=url, timeout=30) as client:
            assert "one" in client.get("/").text
            run = client.get("/runs/one")
            assert run.status_code == 200 and "sst2-three-way" in run.text
            rows = client.get("/runs/one/rows", params={"status": "FAILURE", "sort": "score"})
            assert rows.status_code == 200 and 'data-status="FAILURE"' in rows.text
            assert 'data-status="SUCCESS"' not in rows.text
            row = client.get("/runs/one/rows/default/sst2-three-way/r000001/00")
            assert row.status_code == 200 and "Sentiment:" in row.text
            progress = client.get("/api/runs/one/progress").json()
            assert progress["state"] == "finished" and progress["found"] == 40
            missing = client.get("/runs/nope")
            assert missing.status_code == 404 and "no run &#39;nope&#39; in" in missing.text
            gone = client.get("/runs/one/rows/default/sst2-three-way/r999/00")
            assert gone.status_code == 404
            assert "no row folder &#39;default/sst2-three-way/r999/00&#39; in run one" in gone.text
            assert client.get("/assets/vendor/vega.min.js").status_code == 200
    assert files_of(runs) == before


def test_files_are_served_as_text_or_downloads_and_never_from_outside(runs: Path) -> None:
    base = "/runs/one/files/default/sst2-three-way/r000001/00"
    with viewer(str(runs), cwd=runs.parent) as url, httpx.Client(base_url=url) as client:
        page = client.get(f"{base}/sandbox/page.html")
        assert page.headers["content-type"] == "text/plain; charset=utf-8"  # never run as HTML
        assert page.headers["x-content-type-options"] == "nosniff"
        blob = client.get(f"{base}/sandbox/blob.bin")
        assert blob.headers["content-type"] == "application/octet-stream"
        assert "attachment" in blob.headers["content-disposition"]
        assert client.get(f"{base}/sandbox/escape.txt").status_code == 404  # a link out
        assert client.get("/runs/one/files/..%2F..%2Fetc%2Fhostname").status_code == 404
        assert client.get("/runs/one/files/%2Fetc%2Fhostname").status_code == 404


def test_a_folder_that_does_not_exist_exits_2(tmp_path: Path) -> None:
    done = assay("view", str(tmp_path / "nowhere"), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == (f"error: no such folder: {tmp_path / 'nowhere'}\n  hint: give "
                                   "run folders or folders of runs (default: runs)")  # fmt: skip


def test_the_label_store_is_never_made_inside_a_run_folder_it_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`assay view .` inside a run folder wrote the default store (.assay/store.db) into it,
    though the viewer never writes into a run folder (a reviewer's break-test)."""
    run = make_run(3, tmp_path / "runs", name="one")
    monkeypatch.delenv("ASSAY_STORE", raising=False)
    done = assay("view", ".", cwd=run)
    assert done.returncode == 2, done.stderr
    assert f"the label store {run}/.assay/store.db would be written inside the run folder" in (
        done.stderr)  # fmt: skip
    assert "start assay view from outside the run folder, or give --store URL" in done.stderr
    assert not (run / ".assay").exists()


def test_a_store_that_is_no_url_is_refused_before_the_viewer_serves(runs: Path) -> None:
    """`--store /path/store.db` (a path, not a URL) was accepted, and the reviewer's first
    label failed (a reviewer's break-test)."""
    done = assay("view", str(runs), "--store", str(runs.parent / "store.db"), cwd=runs.parent)
    assert done.returncode == 2, done.stderr
    assert f"invalid store URL '{runs.parent / 'store.db'}'" in done.stderr
    assert "a store is a SQLAlchemy URL" in done.stderr


def test_a_port_in_use_is_a_clear_error(runs: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = assay("view", str(runs), "--port", str(port), cwd=runs.parent)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"error: port {port} on 127.0.0.1 is in use\n  hint: choose another with --port, or "
        "leave --port out to use a free one"
    )


def test_an_address_of_another_machine_is_refused(runs: Path) -> None:
    done = assay("view", str(runs), "--host", "192.0.2.1", cwd=runs.parent)
    assert done.returncode == 2
    refused = (r"error: cannot listen on 192\.0\.2\.1:0 \(.+\)\n  hint: --host takes an address "
               r"of this machine, e\.g\. 127\.0\.0\.1")  # fmt: skip
    assert re.fullmatch(refused, done.stderr.strip())


def test_listening_beyond_loopback_is_warned_about(runs: Path) -> None:
    assert [is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "::1", "localhost", "0.0.0.0",
                                     "192.168.1.4", "::")] == [True] * 4 + [False] * 3  # fmt: skip
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "assay", "view", str(runs), "--host", "0.0.0.0", "--port",
               str(port)]  # fmt: skip
    process = subprocess.Popen(command, cwd=runs.parent, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
    finally:
        process.send_signal(2)
        _, stderr = process.communicate(timeout=30)
    assert f"warning: {exposure_warning('0.0.0.0', port)}" in " ".join(stderr.split())
    assert exposure_warning("0.0.0.0", port) == (
        f"assay view listens on 0.0.0.0:{port}, not only on this machine: anyone who can reach "
        "it can read these runs (prompts, responses, files) and save labels into your store; "
        "there is no login"
    )


def test_ctrl_c_stops_the_viewer_and_removes_its_index(runs: Path, tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    process = subprocess.Popen([sys.executable, "-m", "assay", "view", str(runs)],
                               cwd=runs.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env)  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    url = re.search(r"http://\S+/", line)
    assert url is not None
    httpx.get(url.group(0) + "runs/one/rows", timeout=30)
    assert list(tmp_path.glob("assay-run-*/assay-view-*"))  # in the command's scratch folder
    process.send_signal(2)
    assert process.wait(30) == 0
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(("assay-view-", "assay-run-"))]


def test_a_labels_dataset_of_other_fields_is_refused_when_the_viewer_starts(
    runs: Path, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    with open_store(url) as store:
        store.create_dataset("truthful", Schema({"question": "string", "label": "json"}))
    done = subprocess.run([sys.executable, "-m", "assay", "view", str(runs), "--store", url,
                           "--labels", "truthful"], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "dataset 'truthful' exists in the store with fields other than a review's" in (
        " ".join(done.stderr.split()))  # fmt: skip
