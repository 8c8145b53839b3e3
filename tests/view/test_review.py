"""Human review in ``assay view`` over HTTP, against a real viewer process and a real store:
a label needs the page's token and the viewer's own origin (403 otherwise, nothing saved);
bad labels are refused naming the field; each saved batch is one new version of the run's
labelled dataset in the store, never a file in the run folder; two reviewers labelling the
same rows at once lose nothing; the queue walks the rows in each order it offers.

The oracles are the rows' ``task.json`` files and the store read back with its own API."""

from __future__ import annotations

import contextlib
import html
import json
import re
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from assay.errors import StoreError
from assay.results.task_result import (
    BasicCriterionResult,
    EvaluationResult,
    JudgeCriterionResult,
    JudgeRef,
)
from assay.store import Store
from assay.view.index import RowIndex
from assay.view.records import judge_uncertainty
from assay.view.review import Scale, dataset_name, row_facts, split_example_id
from tests.store.conftest import BACKENDS, POSTGRES_ENV, postgres_base_url
from tests.view.browser import files_of, viewer
from tests.view.generate import make_run

RUNS = ("tokens", "bad", "two", "orders", "scales", "walk", "unsure", "mixed", "sets")
UNSURE = {3: 1 / 3, 7: None, 11: 0.8, 15: 0.5}  # row index → the judge's self-agreement
# (None: a judge error); every other row has a sure judge


@contextlib.contextmanager
def label_store(backend: str, folder: Path) -> Iterator[str]:
    """A URL of an empty store: a SQLite file, or a fresh schema of the test PostgreSQL."""
    if backend == "sqlite":
        yield f"sqlite:///{folder / 'labels.db'}"
        return
    base = postgres_base_url()
    if base is None:
        pytest.skip(f"{POSTGRES_ENV} is not set (.ci/run starts PostgreSQL and sets it)")
    schema = f"assay_review_{uuid.uuid4().hex[:16]}"
    admin = create_engine(base)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        url = make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(scope="module", params=BACKENDS)
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """``assay view`` over seven generated runs, labels going to a store on each backend."""
    home = tmp_path_factory.mktemp("review")
    root = home / "runs"
    for name in RUNS:
        make_run(24, root, name=name, seed=len(name))
    add_judges(root / "unsure")
    with (
        label_store(request.param, home) as store,
        viewer(str(root), "--store", store, "--reviewer", "alice", cwd=home) as url,
    ):
        yield {"url": url, "root": root, "store": store, "home": home}


def add_judges(run_dir: Path) -> None:
    """Give every graded row of the run a judge's result: sure, or as unsure as ``UNSURE``
    says."""
    for path in sorted(run_dir.glob("*/*/*/*/task.json")):
        result = EvaluationResult.model_validate_json(path.read_text())
        if not result.success_criteria_results:
            continue
        unsure = result.row_index in UNSURE
        agreement = UNSURE.get(result.row_index or 0)
        judged = (_judge(score=0.0, error="judge_error: unreadable") if unsure and agreement is None
                  else _judge(score=1.0, verdict=True, self_agreement=agreement))  # fmt: skip
        result.success_criteria_results.append(judged)
        path.write_text(result.model_dump_json())


def token_of(client: httpx.Client, run: str) -> str:
    page = client.get(f"/runs/{run}/review")
    assert page.status_code == 200, page.text[:300]
    found = re.search(r'data-token="([^"]+)"', page.text)
    assert found is not None
    return found.group(1)


def own_headers(url: str, token: str) -> dict[str, str]:
    port = urlsplit(url).port
    return {"X-Assay-Token": token, "Origin": f"http://127.0.0.1:{port}",
            "Sec-Fetch-Site": "same-origin", "Content-Type": "application/json"}  # fmt: skip


def folders_of(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Every row folder of the run and its ``task.json``."""
    return {str(p.parent.relative_to(run_dir)): json.loads(p.read_text())
            for p in sorted(run_dir.glob("*/*/*/*/task.json"))}  # fmt: skip


def versions(store_url: str, run: str) -> list[int]:
    with Store(store_url) as store:
        try:
            return [v.number for v in store.versions(dataset_name(run))]
        except StoreError:  # no dataset yet
            return []


def latest(store_url: str, run: str) -> dict[str, dict[str, Any]]:
    with Store(store_url) as store:
        return {e.example_id: e.data for e in store.iter_examples(dataset_name(run))}


def test_a_label_needs_the_token_and_the_viewers_own_origin(served: dict[str, Any]) -> None:
    url, run = served["url"], "tokens"
    run_dir = served["root"] / run
    folder = next(iter(folders_of(run_dir)))
    before = files_of(run_dir)
    body = {"items": [{"folder": folder, "label": "fail", "comment": "wrong"}]}
    with httpx.Client(base_url=url, timeout=30) as client:
        token = token_of(client, run)
        good = own_headers(url, token)
        port = urlsplit(url).port
        refused = [
            {k: v for k, v in good.items() if k != "X-Assay-Token"},
            {**good, "X-Assay-Token": ""},
            {**good, "X-Assay-Token": token[:-1]},
            {**good, "X-Assay-Token": token + "x"},
            {**good, "Origin": "http://attacker.example"},
            {**good, "Origin": f"http://127.0.0.1:{port + 1}"},
            {**good, "Origin": "null"},
            {**good, "Sec-Fetch-Site": "cross-site", "Origin": "http://attacker.example"},
            {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate",
             "Content-Type": "application/x-www-form-urlencoded"},  # a form posted from elsewhere
        ]  # fmt: skip
        for headers in refused:
            answer = client.post(f"/api/runs/{run}/labels", json=body, headers=headers)
            assert answer.status_code == 403, (headers, answer.text)
            assert "access-control-allow-origin" not in answer.headers
        assert versions(served["store"], run) == []
        answer = client.post(f"/api/runs/{run}/labels", json=body, headers=good)
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"dataset": f"review-{run}", "version": 1, "saved": 1,
                                 "created": True}  # fmt: skip
        assert client.get(f"/runs/{run}/labels").status_code == 404  # GET writes nothing
    assert files_of(run_dir) == before  # nothing written into the run folder
    saved = latest(served["store"], run)
    assert list(saved) == [f"{run}/{folder}/alice"]
    data = saved[f"{run}/{folder}/alice"]
    result = folders_of(run_dir)[folder]
    assert data["label"] == "fail" and data["comment"] == "wrong" and data["reviewer"] == "alice"
    assert data["input"] == result["task_config"]["resolved"]["initial_prompt"]
    assert data["output"] == (run_dir / folder / "response.txt").read_text()
    assert data["row_id"] == result["row_id"] and data["suite"] == result["suite_id"]
    assert data["graded"] == {"SUCCESS": "pass", "FAILURE": "fail"}.get(
        result["final_status"], "error")  # fmt: skip
    assert data["run"] == run and data["folder"] == folder and data["time"].endswith("+00:00")
    assert split_example_id(f"{run}/{folder}/alice") == (run, folder, "alice")


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"items": [{"folder": "FOLDER", "label": "maybe"}]}, 400, "'maybe' is not pass or fail"),
        (
            {"items": [{"folder": "FOLDER", "label": "pass", "reviewer": "a/b"}]},
            400,
            "reviewer name 'a/b' is not valid",
        ),
        (
            {"items": [{"folder": "default/nowhere/r9/00", "label": "pass"}]},
            400,
            "has no row folder default/nowhere/r9/00",
        ),
        ({"items": []}, 400, "'items' must be a list of 1 to 500 labels"),
        ({"items": [{"label": "pass"}]}, 400, "'folder' must name a row folder"),
        ({"items": [{"folder": "../bad/FOLDER", "label": "pass"}]}, 400, "no '.' or '..' parts"),
        ({"items": [{"folder": "FOLDER/", "label": "pass"}]}, 400, "no '.' or '..' parts"),
        (
            {"scale": "good,bad", "items": [{"folder": "FOLDER", "label": "pass"}]},
            400,
            "'pass' is not one of the labels ['good', 'bad']",
        ),
        (
            {"scale": "1..5", "items": [{"folder": "FOLDER", "label": 7}]},
            400,
            "7 is not a score from 1 to 5",
        ),
        (
            {"scale": "1..", "items": [{"folder": "FOLDER", "label": 1}]},
            400,
            "scale '1..' is not a score range",
        ),
        ([1, 2], 400, "must be a JSON object"),
    ],
)
def test_bad_labels_are_refused_naming_what_is_wrong(
    served: dict[str, Any], body: Any, status: int, words: str
) -> None:
    url, run = served["url"], "bad"
    folder = next(iter(folders_of(served["root"] / run)))
    text = json.dumps(body).replace("FOLDER", folder)
    with httpx.Client(base_url=url, timeout=30) as client:
        headers = own_headers(url, token_of(client, run))
        answer = client.post(f"/api/runs/{run}/labels", content=text, headers=headers)
        assert answer.status_code == status, answer.text
        assert words in answer.json()["error"]
        garbled = client.post(f"/api/runs/{run}/labels", content="{", headers=headers)
        assert garbled.status_code == 400 and "must be JSON" in garbled.json()["error"]
        missing = client.post("/api/runs/nowhere/labels", content="{}", headers=headers)
        assert missing.status_code == 404
    assert versions(served["store"], run) == []


def test_two_reviewers_labelling_the_same_rows_at_once_lose_nothing(
    served: dict[str, Any],
) -> None:
    """Alice and Bob each label every row of the run, one label per request, at the same
    time, in two sessions; then Alice changes her mind on one row. Every batch is a version,
    the latest holds both reviewers' labels of every row, and the changed one replaced."""
    url, run = served["url"], "two"
    folders = list(folders_of(served["root"] / run))
    start = threading.Barrier(2)
    failures: list[str] = []

    def session(reviewer: str, label: str) -> None:
        with httpx.Client(base_url=url, timeout=60) as client:
            headers = own_headers(url, token_of(client, run))
            start.wait()
            for folder in folders:
                item = {"folder": folder, "label": label, "reviewer": reviewer,
                        "comment": f"{reviewer} on {folder}"}  # fmt: skip
                answer = client.post(f"/api/runs/{run}/labels", json={"items": [item]},
                                     headers=headers)  # fmt: skip
                if answer.status_code != 200:
                    failures.append(answer.text)

    threads = [threading.Thread(target=session, args=("alice", "pass")),
               threading.Thread(target=session, args=("bob", "fail"))]  # fmt: skip
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert versions(served["store"], run) == list(range(1, 2 * len(folders) + 1))
    saved = latest(served["store"], run)
    assert len(saved) == 2 * len(folders)
    for folder in folders:
        assert saved[f"{run}/{folder}/alice"]["label"] == "pass"
        assert saved[f"{run}/{folder}/bob"]["label"] == "fail"
    with httpx.Client(base_url=url, timeout=30) as client:
        headers = own_headers(url, token_of(client, run))
        item = {"folder": folders[0], "label": "fail", "reviewer": "alice"}
        answer = client.post(f"/api/runs/{run}/labels", json={"items": [item]}, headers=headers)
        assert answer.json()["version"] == 2 * len(folders) + 1
        page = client.get(f"/runs/{run}/rows/{folders[0]}").text
    saved = latest(served["store"], run)
    assert len(saved) == 2 * len(folders)  # replaced, not added
    assert saved[f"{run}/{folders[0]}/alice"]["label"] == "fail"
    with Store(served["store"]) as store:
        last = store.versions(dataset_name(run))[-1]
        assert (last.operation, last.added, last.removed) == ("replace", 1, 1)
        first = {
            e.example_id: e.data for e in store.iter_examples(dataset_name(run), 2 * len(folders))
        }
        assert first[f"{run}/{folders[0]}/alice"]["label"] == "pass"  # the old version keeps it
    assert 'data-reviewer="alice"' in page and 'data-reviewer="bob"' in page  # both shown


def walk(client: httpx.Client, run: str, **params: str) -> list[str]:
    """The row folders of the review queue, page by page."""
    found = []
    position = 0
    while True:
        page = client.get(f"/runs/{run}/review", params={**params, "i": str(position)})
        assert page.status_code == 200, page.text[:300]
        folder = re.search(r'data-folder="([^"]+)"', page.text)
        assert folder is not None
        found.append(folder.group(1))
        if 'rel="next"' not in page.text:
            return found
        position += 1


def test_the_queue_walks_the_rows_in_each_order(served: dict[str, Any]) -> None:
    url, run = served["url"], "orders"
    results = folders_of(served["root"] / run)
    by_index = sorted(results, key=lambda f: results[f]["row_index"])
    with httpx.Client(base_url=url, timeout=30) as client:
        assert walk(client, run, order="dataset") == by_index
        assert walk(client, run, order="uncertain") == by_index  # no judge: dataset order
        failed = walk(client, run, order="failed")
        statuses = [results[f]["final_status"] for f in failed]
        first_pass = statuses.index("SUCCESS")
        assert "FAILURE" in statuses[:first_pass] and "SUCCESS" not in statuses[:first_pass]
        assert set(statuses[first_pass:]) == {"SUCCESS"}
        assert failed == [f for f in by_index if results[f]["final_status"] != "SUCCESS"] + [
            f for f in by_index if results[f]["final_status"] == "SUCCESS"]  # fmt: skip
        shuffled = walk(client, run, order="random", seed="3")
        assert sorted(shuffled) == sorted(by_index) and shuffled != by_index
        assert walk(client, run, order="random", seed="3") == shuffled
        assert walk(client, run, order="random", seed="4") != shuffled
        passed = [f for f in by_index if results[f]["final_status"] == "SUCCESS"]
        failing = [f for f in by_index if results[f]["final_status"] == "FAILURE"]
        headers = own_headers(url, token_of(client, run))
        chosen = [(failing[0], "pass"), (passed[0], "fail"), (passed[1], "pass"),
                  (failing[1], "fail")]  # two disagree with the run, two agree  # fmt: skip
        items = [{"folder": f, "label": label} for f, label in chosen]
        assert client.post(f"/api/runs/{run}/labels", json={"items": items},
                           headers=headers).status_code == 200  # fmt: skip
        assert versions(served["store"], run) == [1]  # one batch, one version
        order = walk(client, run, order="disagree")
        assert order[:2] == [f for f in by_index if f in (failing[0], passed[0])]
        assert set(order[-2:]) == {passed[1], failing[1]}
        assert order[2:-2] == [f for f in by_index if f not in dict(chosen)]
        page = client.get(f"/runs/{run}/review", params={"order": "sideways"})
        assert page.status_code == 400 and "no review order &#39;sideways&#39;" in page.text
        for bad in ("-1", "abc", "1e3"):  # a position that is not a whole number: 400, not 500
            page = client.get(f"/runs/{run}/review", params={"order": "failed", "i": bad})
            assert page.status_code == 400 and f"i={bad} is not a whole number" in page.text


def test_the_judge_uncertain_rows_come_first(served: dict[str, Any]) -> None:
    url, run = served["url"], "unsure"
    results = folders_of(served["root"] / run)
    by_index = sorted(results, key=lambda f: results[f]["row_index"])
    index_of = {results[f]["row_index"]: f for f in results}
    graded = [i for i in UNSURE if results[index_of[i]]["success_criteria_results"]]
    with httpx.Client(base_url=url, timeout=30) as client:
        order = walk(client, run, order="uncertain")
    first = sorted(graded, key=lambda i: -(1.0 if UNSURE[i] is None else 1 - UNSURE[i]))
    assert order[: len(first)] == [index_of[i] for i in first]
    rest = [f for f in by_index if f not in order[: len(first)]]
    judged = [f for f in rest if results[f]["success_criteria_results"]]
    assert order[len(first) :] == judged + [f for f in rest if f not in judged]  # no judge last


def test_labelling_along_a_disagreement_queue_visits_every_row_once(
    served: dict[str, Any],
) -> None:
    """Each label changes the disagreements; the queue keeps the order it started with
    (``at``), so following "next" after each label skips no row and shows none twice."""
    url, run = served["url"], "walk"
    results = folders_of(served["root"] / run)
    outcome = {f: "pass" if r["final_status"] == "SUCCESS" else "fail" for f, r in results.items()}
    visited: list[str] = []
    with httpx.Client(base_url=url, timeout=30) as client:
        headers = own_headers(url, token_of(client, run))
        first = sorted(results)[:2]
        items = [{"folder": first[0], "label": "fail" if outcome[first[0]] == "pass" else "pass"},
                 {"folder": first[1], "label": outcome[first[1]]}]  # fmt: skip
        assert client.post(f"/api/runs/{run}/labels", json={"items": items},
                           headers=headers).status_code == 200  # fmt: skip
        address = f"/runs/{run}/review?order=disagree"
        while address:
            page = client.get(address.replace("&amp;", "&"))
            assert page.status_code == 200, page.text[:300]
            folder = re.search(r'data-folder="([^"]+)"', page.text)
            assert folder is not None
            visited.append(folder.group(1))
            body = {"items": [{"folder": folder.group(1), "label": outcome[folder.group(1)]}]}
            assert client.post(f"/api/runs/{run}/labels", json=body,
                               headers=headers).status_code == 200  # fmt: skip
            following = re.search(r'data-next="([^"]*)"', page.text)
            assert following is not None
            address = following.group(1)
    assert visited[0] == first[0]  # the one disagreement first
    assert visited[-1] == first[1]  # the agreement last
    assert sorted(visited) == sorted(results)  # every row, once


def test_a_scale_of_labels_or_scores_sets_the_keys_and_the_values(served: dict[str, Any]) -> None:
    url, run = served["url"], "scales"
    folder = next(iter(folders_of(served["root"] / run)))
    with httpx.Client(base_url=url, timeout=30) as client:
        page = client.get(f"/runs/{run}/review", params={"scale": "good,bad,unsure"}).text
        assert re.findall(r'data-key="(\d)" data-label=\'"(\w+)"\'', page) == [
            ("1", "good"), ("2", "bad"), ("3", "unsure")]  # fmt: skip
        page = client.get(f"/runs/{run}/review", params={"scale": "1..5"}).text
        assert re.findall(r'data-key="(\d)" data-label=\'([\d.]+)\'', page) == [
            (str(n), f"{n:.1f}") for n in range(1, 6)]  # fmt: skip
        headers = own_headers(url, token_of(client, run))
        for scale, label, stored in (("good,bad,unsure", "BAD", "bad"), ("1..5", 4.0, 4),
                                     ("1..5", "2.5", 2.5), ("pass/fail", "P", "pass")):  # fmt: skip
            body = {"scale": scale, "items": [{"folder": folder, "label": label}]}
            answer = client.post(f"/api/runs/{run}/labels", json=body, headers=headers)
            assert answer.status_code == 200, answer.text
            assert latest(served["store"], run)[f"{run}/{folder}/alice"]["label"] == stored


def poster(client: httpx.Client, url: str, run: str, reviewer: str) -> Any:
    """A function that posts one label of ``reviewer`` on ``run`` with the page's token."""
    headers = own_headers(url, token_of(client, run))

    def post(scale: str, folder: str, label: Any) -> httpx.Response:
        body = {"scale": scale, "items": [{"folder": folder, "label": label,
                                            "reviewer": reviewer}]}  # fmt: skip
        return client.post(f"/api/runs/{run}/labels", json=body, headers=headers)

    return post


def test_a_dataset_of_labels_keeps_one_scale(served: dict[str, Any]) -> None:
    url, run = served["url"], "mixed"
    first, second = list(folders_of(served["root"] / run))[:2]
    with httpx.Client(base_url=url, timeout=30) as client:
        post = poster(client, url, run, "carol")
        assert post("pass/fail", first, "pass").status_code == 200
        mixed = post("1..5", second, 4)
        assert mixed.status_code == 400
        assert "would hold pass/fail and score labels" in mixed.json()["error"]
        assert post("1..5", first, 4).status_code == 200  # it replaces carol's only label
        assert latest(served["store"], run)[f"{run}/{first}/carol"]["label"] == 4


def test_a_set_of_labels_may_hold_pass_and_fail(served: dict[str, Any]) -> None:
    """``scale=pass,fail,unsure``: after a ``pass``, an ``unsure`` was refused as a second
    kind (the kind was read from the value, not the scale; a reviewer's break-test)."""
    url, run = served["url"], "sets"
    first, second, third, fourth = list(folders_of(served["root"] / run))[:4]
    with httpx.Client(base_url=url, timeout=30) as client:
        post = poster(client, url, run, "dana")
        assert post("pass,fail,unsure", first, "pass").status_code == 200
        assert post("pass,fail,unsure", second, "unsure").status_code == 200
        # kept: pass and unsure; a fail of the set is one of its labels too (it was refused)
        assert post("pass,fail,unsure", fourth, "fail").status_code == 200
        binary = post("pass/fail", third, "fail")  # pass/fail beside a set: two kinds
        assert binary.status_code == 400, binary.text
        assert "would hold pass/fail and set labels" in binary.json()["error"]
        stored = latest(served["store"], run)
        assert {stored[f"{run}/{f}/dana"]["label"] for f in (first, second)} == {"pass", "unsure"}


def test_scales_parse_and_refuse() -> None:
    assert Scale.parse(None).keys() == [("p", "pass"), ("f", "fail")]
    assert Scale.parse("a, b ,a").labels == ("a", "b")
    assert Scale.parse("0..2").keys() == [("0", 0.0), ("1", 1.0), ("2", 2.0)]
    assert Scale.parse("0..1").value("0.25") == 0.25
    for bad in ("onlyone", "5..1", "a..b", ",".join("abcdefghij")):
        with pytest.raises(Exception, match="scale"):
            Scale.parse(bad)


def _judge(**fields: Any) -> JudgeCriterionResult:
    ref = JudgeRef(name="j", content_hash="0" * 64)
    return JudgeCriterionResult(criterion_type="llm_judge", judge=ref, **fields)


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([], None),
        ([BasicCriterionResult(criterion_type="response_match", score=0.5)], None),
        ([_judge(score=1.0, verdict=True)], 0.0),
        ([_judge(score=0.0, error="judge_error: unreadable")], 1.0),
        ([_judge(score=1.0, verdict=True, self_agreement=1 / 3)], 2 / 3),
        ([_judge(score=0.5, verdict_kind="scale", verdict=3.0)], 1.0),
        ([_judge(score=0.75, verdict_kind="scale", verdict=4.0)], 0.5),
        (
            [_judge(score=1.0, verdict=True), _judge(score=0.0, verdict=False, self_agreement=0.6)],
            0.4,
        ),
        ([_judge(score=0.0, evaluation_status="skipped")], None),
    ],
)
def test_judge_uncertainty_of_a_row(items: list[Any], expected: float | None) -> None:
    found = judge_uncertainty(items)
    assert found == (None if expected is None else pytest.approx(expected))


def test_looking_never_creates_a_store(tmp_path: Path) -> None:
    """A row page, a review queue and the calibrations page read labels only from a store
    that exists: viewing runs with no store creates none (the first label does)."""
    root = tmp_path / "runs"
    make_run(4, root, name="look")
    folder = "default/sst2-three-way/r000001/00"
    with viewer(str(root), cwd=tmp_path) as url, httpx.Client(base_url=url, timeout=30) as client:
        for path in (f"/runs/look/rows/{folder}", "/runs/look/review?order=disagree",
                     "/calibrations"):  # fmt: skip
            page = client.get(path)
            assert page.status_code == 200, (path, page.text[:300])
        assert "No calibration in the store yet" in client.get("/calibrations").text
        assert not (tmp_path / ".assay").exists()
        headers = own_headers(url, token_of(client, "look"))
        body = {"items": [{"folder": folder, "label": "pass"}]}
        assert client.post("/api/runs/look/labels", json=body, headers=headers).status_code == 200
    assert (tmp_path / ".assay" / "store.db").is_file()  # the store the CLI uses
    with Store(f"sqlite:///{tmp_path / '.assay' / 'store.db'}") as store:
        assert [e.data["label"] for e in store.iter_examples("review-look")] == ["pass"]


def test_a_row_not_yet_indexed_is_labelled_from_its_own_files(tmp_path: Path) -> None:
    """A row page can show a row before the run's index has it (a big run being read); its
    label still records the row, read from its task.json; a folder outside the run or with
    no task.json records nothing."""
    run = make_run(5, tmp_path / "runs", name="cold")
    index = RowIndex(run, tmp_path / "index.sqlite")  # never filled
    folders = sorted(folders_of(run))
    (run / "outside").mkdir()
    with index.connect() as db:
        facts = row_facts(run, db, [*folders, "../cold/" + folders[0], "default", "outside"])
    assert sorted(facts) == folders
    for folder in folders:
        result = json.loads((run / folder / "task.json").read_text())
        fact = facts[folder]
        assert (fact.suite, fact.variant, fact.row_id) == (
            result["suite_id"], result["variant_id"], result["row_id"])  # fmt: skip
        assert fact.input == result["task_config"]["resolved"]["initial_prompt"]
        assert fact.graded == {"SUCCESS": "pass", "FAILURE": "fail"}.get(
            result["final_status"], "error")  # fmt: skip


def test_the_calibrations_page_redacts_an_older_stored_reports_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A field report: a calibration stored before the store's copy was redacted showed the
    secret its judge's reason quoted on ``assay view``'s calibrations page."""
    from datetime import datetime

    from assay.store.judges import CalibrationRecord
    from assay.view.review import calibration_view

    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-abcdef123456789")
    record = CalibrationRecord(
        calibration_id="c1", judge_name="j", judge_version=1, judge_hash="h", dataset="d",
        dataset_version=1, dataset_hash="dh", label_field="label", created_at=datetime.now(),
        report={"disagreements": [{"example_id": "x", "reason": "leaks tok-abcdef123456789"}]},
    )  # fmt: skip
    shown = calibration_view(record, set())
    assert shown["disagreements"][0]["reason"] == "leaks [redacted:MY_SERVICE_TOKEN]"


def test_a_run_folder_named_with_url_characters_is_labelled_and_walked(tmp_path: Path) -> None:
    """A run folder named `run#2` or `a?b%c` could not be labelled (the label URL ended at
    the `#`) and next/previous led to Not found (a reviewer's break-test)."""
    from starlette.testclient import TestClient

    from assay.view.app import build_app
    from assay.view.review import LabelBook
    from assay.view.workspace import Workspace

    root = tmp_path / "runs"
    run = make_run(3, root, name="run#2 a?b%c")
    (tmp_path / "scratch").mkdir()
    ws = Workspace([root], scratch=tmp_path / "scratch")
    book = LabelBook(f"sqlite:///{tmp_path / 'labels.db'}", None, "ana")
    with TestClient(build_app(ws, hosts=["testserver"], labels=book)) as client:
        (entry,) = ws.runs()
        ws.index(entry).wait()
        key = quote(run.name, safe="")
        page = client.get(f"/runs/{key}/rows/default/sst2-three-way/r000001/00")
        assert page.status_code == 200
        url = re.search(r'data-url="([^"]+)"', page.text)
        after = re.search(r'data-next="([^"]+)"', page.text)
        assert url is not None and after is not None
        assert url.group(1) == f"/api/runs/{key}/labels"
        assert client.get(html.unescape(after.group(1))).status_code == 200
        token = re.search(r'data-token="([^"]+)"', page.text)
        assert token is not None
        saved = client.post(
            url.group(1),
            headers={"X-Assay-Token": token.group(1)},
            json={"items": [{"folder": "default/sst2-three-way/r000001/00", "label": "pass"}]},
        )
        assert saved.status_code == 200, saved.text
    book.close()
    ws.close()
