"""Human review end to end in a real headless Chromium: forty TruthfulQA answers run through
a real ``assay run`` (a command agent, graded by the scripted ``truthful`` judge of
``examples/judges``); a reviewer labels every row of the review queue by keyboard while a
second reviewer, in a session of their own, labels the first ten at the same time; the
labels land in the store the CLI uses (one version per label, the run folder untouched);
``assay judge calibrate`` reads them as any labelled dataset, and its confusion counts, κ,
TPR and TNR match a hand count of the same labels against the judge's rule; the viewer's
calibrations page shows that κ and each disagreement links to its row.

The oracles: the human labels of ``truthfulqa_labels.jsonl`` (which the reviewer types) and
the judge script's own rule applied to each answer, computed here with scikit-learn."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sklearn.metrics import cohen_kappa_score

from assay.store import Store
from assay.view import index as index_module
from tests.cli.test_run import assay, assay_process
from tests.helpers import QuietHTTPServer, write
from tests.view.browser import chromium, chromium_path, files_of, fresh_context, screenshot, viewer
from tests.view.generate import make_run
from tests.view.test_host import _Page

pytestmark = pytest.mark.browser

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "judges"
RULE = re.compile(
    r"^(No\b|Nothing|There is no|There are no|I have no comment|It depends|.*\b(not|no one|"
    r"nobody|never|unclear)\b)"
)  # the rule of examples/judges/mock-truthful.yaml, applied to the answer itself
TASK = """\
task_id: truthful-review
description: forty TruthfulQA answers, judged, for people to review
agent:
  type: command
  command: "sed -n 's/^Answer: //p'"
dataset:
  paths: [../judges/data/truthfulqa_labels.jsonl]
initial_prompt: "Question: ${row.question}\\nAnswer: ${row.answer}"
success_criteria:
  - type: llm_judge
    description: the answer is truthful
    judge: truthful
"""


def _rows() -> dict[str, dict[str, Any]]:
    lines = (EXAMPLES / "data" / "truthfulqa_labels.jsonl").read_text().splitlines()
    return {row["id"]: row for row in map(json.loads, lines)}


def _label(page: Any, key: str, position: int, last: bool) -> None:
    """Press ``key`` on the queue's row ``position`` and wait until it is saved (the queue
    then moves to the next row)."""
    page.keyboard.press(key)
    if last:
        page.wait_for_function("document.getElementById('review-status').className === 'ok'")
    else:
        page.wait_for_url(re.compile(rf"[?&]i={position + 1}(&|$)"))
        page.wait_for_selector("#review")


@pytest.fixture
def reviewed(tmp_path: Path) -> dict[str, Any]:
    chromium_path()
    shutil.copytree(EXAMPLES, tmp_path / "judges")
    write(tmp_path / "review" / "task.yaml", TASK)
    for step in (("judge", "add", "truthful", "judges/truthful-mock.yaml"),
                 ("run", "review/task.yaml")):  # fmt: skip
        done = assay(*step, cwd=tmp_path)
        assert done.returncode in (0, 1), done.stderr
    run_dir = (tmp_path / "runs" / "latest").resolve()
    return {"home": tmp_path, "run": run_dir, "key": run_dir.name}


def test_label_by_keyboard_then_calibrate_and_see_kappa(reviewed: dict[str, Any]) -> None:
    home, run_dir, key = reviewed["home"], reviewed["run"], reviewed["key"]
    rows = _rows()
    before = files_of(run_dir)
    given: dict[tuple[str, str], str] = {}  # (row id, reviewer) → label
    with (
        viewer("runs", cwd=home) as url,
        chromium() as browser,
        fresh_context(browser) as first,
        fresh_context(browser) as second,
    ):
        alice, bob = first.new_page(), second.new_page()
        for page, name in ((alice, "alice"), (bob, "bob")):
            page.goto(f"{url}runs/{key}/review?order=dataset")
            page.fill("#reviewer", name)
            page.press("#reviewer", "Tab")  # saved for the session (localStorage)
            page.reload()
            assert page.input_value("#reviewer") == name
        for position in range(40):
            folder = alice.get_attribute("#review", "data-folder")
            row_id = folder.split("/")[2]
            human = rows[row_id]["label"].strip()
            if position == 4:
                alice.keyboard.press("c")
                alice.keyboard.type("the judge may miss this one")
                alice.keyboard.press("Escape")
            _label(alice, "p" if human == "yes" else "f", position, position == 39)
            given[(row_id, "alice")] = "pass" if human == "yes" else "fail"
            if position < 10:  # the second reviewer, at the same time, on the same rows
                assert bob.get_attribute("#review", "data-folder") == folder
                _label(bob, "f", position, False)
                given[(row_id, "bob")] = "fail"
        shown = alice.inner_text("#given")  # the last label, listed without a reload
        assert f"{given[(row_id, 'alice')]} by alice" in shown
        screenshot(alice, "review-queue")
        alice.keyboard.press("k")  # back to the row before the last
        alice.wait_for_url(re.compile(r"[?&]i=38(&|$)"))
        assert "by alice" in alice.inner_text("#given")
        with Store(f"sqlite:///{home / '.assay' / 'store.db'}") as store:
            name = f"review-{key}"
            assert len(store.versions(name)) == 50  # one version per saved label
            saved = {e.example_id: e.data for e in store.iter_examples(name)}
        assert len(saved) == 50
        for (row_id, reviewer), label in given.items():
            folder = f"default/truthful-review/{row_id}/00"
            data = saved[f"{key}/{folder}/{reviewer}"]
            assert data["label"] == label and data["row"]["id"] == row_id
            assert data["output"].strip() == rows[row_id]["answer"].strip()
        commented = [d for d in saved.values() if d["comment"]]
        assert [d["comment"] for d in commented] == ["the judge may miss this one"]
        assert files_of(run_dir) == before  # labels never go into the run folder

        done = assay_process("judge", "calibrate", "truthful", "--dataset", f"review-{key}",
                             "--label", "label", "--output-field", "output", "-o", "cal",
                             cwd=home)  # fmt: skip
        assert done.returncode == 0, done.stderr
        report = json.loads((home / "cal" / "calibration.json").read_text())
        pairs = [(label == "pass", RULE.search(rows[row_id]["answer"].strip()) is not None)
                 for (row_id, _), label in given.items()]  # fmt: skip
        counts = {
            "tp": sum(h and j for h, j in pairs), "fn": sum(h and not j for h, j in pairs),
            "tn": sum(not h and not j for h, j in pairs),
            "fp": sum(not h and j for h, j in pairs),
        }  # fmt: skip
        assert report["rows_compared"] == 50 and report["rows_judge_error"] == 0
        # ten rows have two reviewers' labels: said, as the numbers count labels, not rows
        assert report["rows_reviewed_twice"] == 10
        assert any(note.startswith("10 row(s) carry the labels of several reviewers")
                   for note in report["notes"])  # fmt: skip
        shown = report["binary_counts"]
        assert {k: shown[k] for k in counts} == counts
        assert shown["positives"] == counts["tp"] + counts["fn"]
        kappa = cohen_kappa_score([h for h, _ in pairs], [j for _, j in pairs])
        assert report["kappa"]["value"] == pytest.approx(kappa)
        assert report["tpr"]["value"] == pytest.approx(counts["tp"] / shown["positives"])
        assert report["tnr"]["value"] == pytest.approx(counts["tn"] / shown["negatives"])

        alice.goto(f"{url}calibrations")
        section = alice.locator("section.calibration").first
        assert section.locator(".kappa").inner_text().startswith(f"{kappa:.3f}")
        assert section.locator(".rows").inner_text().startswith("50")
        for human_label, judged, count in (("pass", "pass", counts["tp"]),
                                           ("pass", "fail", counts["fn"]),
                                           ("fail", "fail", counts["tn"]),
                                           ("fail", "pass", counts["fp"])):  # fmt: skip
            cell = section.locator(f'td[data-human="{human_label}"][data-judge="{judged}"]')
            assert cell.inner_text() == str(count)
        links = section.locator(".disagreements a")
        assert links.count() == counts["fn"] + counts["fp"] == len(report["disagreements"])
        screenshot(alice, "review-calibrations")
        target = report["disagreements"][0]["example_id"]
        links.first.click()
        alice.wait_for_selector("#review")
        folder = alice.get_attribute("#review", "data-folder")
        assert target == f"{key}/{folder}/{target.rsplit('/', 1)[1]}"
        assert alice.inner_text("#response").strip() == saved[target]["output"].strip()


POST_NO_CORS = """async ([target, body]) => {
  try {
    const answer = await fetch(target, {method: "POST", mode: "no-cors", body: body,
                                        headers: {"Content-Type": "text/plain"}});
    return "sent " + answer.type;
  } catch (error) { return "failed: " + error; }
}"""
POST_CORS = """async ([target, body, token]) => {
  try {
    const answer = await fetch(target, {method: "POST", body: body, credentials: "include",
      headers: {"Content-Type": "application/json", "X-Assay-Token": token}});
    return "answered " + answer.status;
  } catch (error) { return "failed: " + error; }
}"""
POST_FORM = """([target, body]) => {
  const form = document.createElement("form");
  form.method = "POST"; form.action = target; form.enctype = "text/plain";
  const field = document.createElement("input");
  field.name = body.slice(0, -2); field.value = body.slice(-2);
  form.appendChild(field); document.body.appendChild(form); form.submit();
}"""


@pytest.fixture
def elsewhere() -> Iterator[int]:
    """The port of a page of another origin (a server of its own on 127.0.0.1)."""
    server = QuietHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_a_page_of_another_origin_cannot_label(tmp_path: Path, elsewhere: int) -> None:
    """From another origin's page, a label posted by fetch (simple or with a guessed token)
    or by a form is refused by the viewer (403) and nothing reaches the store; the viewer's
    own page labels."""
    chromium_path()
    root = tmp_path / "runs"
    make_run(6, root, name="one")
    store = f"sqlite:///{tmp_path / 'labels.db'}"
    folder = "default/sst2-three-way/r000001/00"
    body = json.dumps({"items": [{"folder": folder, "label": "fail"}]})
    with viewer(str(root), "--store", store, cwd=tmp_path) as url, chromium() as browser:
        port = int(url.rsplit(":", 1)[1].strip("/"))
        target = f"http://127.0.0.1:{port}/api/runs/one/labels"
        page = browser.new_page()
        seen: list[tuple[str, str, int]] = []
        page.on("response", lambda r: seen.append((r.request.method, r.url, r.status)))
        page.goto(f"http://127.0.0.1:{elsewhere}/")
        assert page.evaluate(POST_NO_CORS, [target, body]).startswith(("sent", "failed"))
        assert page.evaluate(POST_CORS, [target, body, "guessed"]).startswith("failed")
        with page.expect_navigation():
            page.evaluate(POST_FORM, [target, body])
        refused = [(m, s) for m, address, s in seen if address == target]
        assert refused.count(("POST", 403)) == 2 and all(s == 403 for _, s in refused), seen
        with Store(store) as opened:
            assert opened.datasets() == []  # nothing was labelled
        own = browser.new_page()
        own.goto(f"{url}runs/one/rows/{folder}")
        own.keyboard.press("f")
        own.wait_for_function("document.getElementById('review-status').className === 'ok'")
    with Store(store) as opened:
        saved = [e.data["label"] for e in opened.iter_examples("review-one")]
    assert saved == ["fail"]


@contextlib.contextmanager
def viewer_in_process(folder: Path, scratch: Path) -> Iterator[str]:
    """The viewer's server over ``folder`` in this process (a thread), so that a test can
    slow its reading of rows; its URL."""
    import uvicorn

    from assay.view.app import build_app
    from assay.view.guard import allowed_hosts
    from assay.view.server import listen, url_of
    from assay.view.workspace import Workspace

    scratch.mkdir(parents=True, exist_ok=True)
    ws = Workspace([folder], scratch=scratch)
    sock = listen("127.0.0.1", None)
    hosts = allowed_hosts("127.0.0.1", sock.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(build_app(ws, hosts=hosts), log_level="warning",
                                           lifespan="off", access_log=False))  # fmt: skip
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started and thread.is_alive():
            time.sleep(0.02)
        yield url_of(sock)
    finally:
        server.should_exit = True
        thread.join(30)
        ws.close()


def test_a_queue_of_rows_not_read_yet_shows_how_far_and_follows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the run's rows are still being read (here the read of one row waits until the
    test lets it go: a slow disk), the queue answers at once with how far the reading is,
    and loads itself once every row is read."""
    chromium_path()
    make_run(6, tmp_path / "runs", name="slow")
    go = threading.Event()
    real = index_module.read_row

    def slow_read(run_dir: Path, folder: str) -> Any:
        if folder.endswith("r000003/00"):
            go.wait(60)
        return real(run_dir, folder)

    monkeypatch.setattr(index_module, "read_row", slow_read)
    with viewer_in_process(tmp_path / "runs", tmp_path / "scratch") as url, \
            chromium() as browser:  # fmt: skip
        with httpx.Client(base_url=url, timeout=30) as client:
            page = client.get("/runs/slow/review")
        assert page.status_code == 200 and "Reading the run's rows: 0 of" in page.text
        assert 'data-reload="ready"' in page.text and 'id="review"' not in page.text
        tab = browser.new_page()
        tab.goto(f"{url}runs/slow/review")
        assert "Reading the run's rows" in tab.inner_text("#review-indexing")
        go.set()
        tab.wait_for_selector("#review", timeout=60_000)  # loaded by itself
        assert tab.inner_text("#queue-position").startswith("Row 1 of 6")


def test_an_empty_score_box_is_never_saved_as_zero(tmp_path: Path) -> None:
    """ "save score" with an empty box saved the score 0 (``Number("")`` is 0; a reviewer's
    break-test): it says to type a score, and nothing reaches the store."""
    chromium_path()
    root = tmp_path / "runs"
    make_run(3, root, name="one")
    store = f"sqlite:///{tmp_path / 'labels.db'}"
    folder = "default/sst2-three-way/r000001/00"
    with viewer(str(root), "--store", store, cwd=tmp_path) as url, chromium() as browser:
        page = browser.new_page()
        page.goto(f"{url}runs/one/rows/{folder}?scale=0..10")
        page.click("#score-save")
        page.wait_for_function("document.getElementById('review-status').className === 'bad'")
        assert "type a score first" in page.inner_text("#review-status")
        page.fill("#score", "7")
        page.click("#score-save")
        page.wait_for_function("document.getElementById('review-status').className === 'ok'")
    with Store(store) as opened:
        assert [e.data["label"] for e in opened.iter_examples("review-one")] == [7]
