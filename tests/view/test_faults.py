"""Faults found in the viewer at scale and in real runs (issue 32, item 5), each against real
runs of ``assay run``: a diff's pages do not re-read the runs' ``selection.jsonl``; a cold
diff shows how far the indexes are instead of a blank tab; a completion-format model call is
in the transcript; an errored row shows the criteria graded after the failure; a p-value
that underflowed is never printed as 0."""

from __future__ import annotations

import html
import json
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import assay.results.selection_file as selection_file
from assay.metrics.paired import format_p, mcnemar_exact, p_clause
from assay.view.app import build_app
from assay.view.diff import CHANGES, DiffSummary
from assay.view.render import render
from assay.view.row_view import read_row_view
from assay.view.workspace import Workspace
from tests.agents.coding import run_assay
from tests.helpers import write
from tests.view.test_diff import ROWS, run

SCRIPT_A = 'replies: [{match: "love|great|fine|good", reply: positive}]\ndefault: negative\n'
SCRIPT_B = 'replies: [{match: "love|great", reply: positive}]\ndefault: negative\n'


def text_of(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("faults")
    return run(folder, "a", SCRIPT_A, ROWS), run(folder, "b", SCRIPT_B, ROWS)


@pytest.fixture
def client(two_runs: tuple[Path, Path], tmp_path: Path) -> Iterator[tuple[TestClient, Workspace]]:
    ws = Workspace([two_runs[0].parent], scratch=tmp_path)
    with TestClient(build_app(ws, hosts=["testserver"])) as http:
        yield http, ws


def count_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Each reading of a ``selection.jsonl`` (its folder), from now on."""
    reads: list[Path] = []
    real = selection_file.iter_selection_rows

    def counted(run_dir: Path) -> Iterator[tuple[str, str, str]]:
        reads.append(run_dir)
        return real(run_dir)

    monkeypatch.setattr(selection_file, "iter_selection_rows", counted)
    return reads


def test_diff_pages_read_each_runs_selection_once(
    client: tuple[TestClient, Workspace], two_runs: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    http, _ = client
    a, b = two_runs
    assert (a / "selection.jsonl").is_file() and (b / "selection.jsonl").is_file()
    reads = count_reads(monkeypatch)
    for _ in range(600):  # the first page starts `assay compare` (in a process of its own)
        if 'id="paired-pending"' not in http.get("/diff", params={"a": "a", "b": "b"}).text:
            break
        time.sleep(0.1)
    assert sorted(p.name for p in reads) == ["a", "b"]  # the pairs (compare reads its own)
    reads.clear()
    for params in ({"change": "changed"}, {"change": ""}, {"change": "became_fail"},
                   {"change": "", "page": "2"}, {"change": "changed"}):  # fmt: skip
        page = http.get("/diff", params={"a": "a", "b": "b", **params})
        assert page.status_code == 200 and "rows compared" in text_of(page.text)
    assert reads == []
    # a list rewritten (resumed, repaired) is read again, once
    copy = b / "selection.copy"
    copy.write_text((b / "selection.jsonl").read_text())
    copy.replace(b / "selection.jsonl")
    for _ in range(3):
        assert http.get("/diff", params={"a": "a", "b": "b"}).status_code == 200
    assert [p.name for p in reads] == ["b"]


def test_a_cold_diff_shows_how_far_the_indexes_are_and_then_the_diff(
    client: tuple[TestClient, Workspace], two_runs: tuple[Path, Path]
) -> None:
    http, ws = client
    entry = ws.entry("b")
    assert entry is not None
    index = ws.index(entry, start=False)
    blocker = sqlite3.connect(index.db_path, timeout=30)
    blocker.execute("BEGIN IMMEDIATE")  # the first scan of B cannot store a row
    try:
        page = http.get("/diff", params={"a": "a", "b": "b"})
        assert page.status_code == 200
        shown = text_of(page.text)
        assert "Reading both runs' rows before comparing them" in shown
        assert "B: 0 of" in shown and "rows compared" not in shown
        assert 'data-progress="/api/diff/progress?a=a&amp;b=b"' in page.text
        progress = http.get("/api/diff/progress", params={"a": "a", "b": "b"}).json()
        assert progress["sides"][1]["complete"] is False
    finally:
        blocker.rollback()
        blocker.close()
    index.wait()
    done = http.get("/api/diff/progress", params={"a": "a", "b": "b"}).json()
    assert [s["complete"] for s in done["sides"]] == [True, True]
    assert done["version"] != progress["version"]
    page = http.get("/diff", params={"a": "a", "b": "b"})
    assert "rows compared" in text_of(page.text) and "Reading both" not in page.text


@pytest.mark.parametrize("prompt_format", ["completion", "chat"])
def test_every_model_call_is_in_the_transcript(tmp_path: Path, prompt_format: str) -> None:
    write(tmp_path / "m.yaml", "default: positive\n")
    write(tmp_path / "task.yaml", "task_id: one\ndescription: d\n"
          f"agent: {{type: llm, model: mock/m.yaml, prompt_format: {prompt_format}}}\n"
          'dataset: {rows: [{id: r1}, {id: r2}]}\ninitial_prompt: "Say ${row.id}"\n'
          "success_criteria:\n  - {type: response_match, expected: positive}\n")  # fmt: skip
    done = run_assay("run", "task.yaml", "--run-dir", "runs", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run_dir = (tmp_path / "runs" / "latest").resolve()
    for row in ("r1", "r2"):
        view = read_row_view(run_dir, f"default/one/{row}/00")
        assert view.transcript is not None and view.transcript.model_calls == 1
        assert [e.kind for e in view.events] == ["model_call", "final"]
        assert view.events[0].title.startswith("model call mock/m.yaml")


def test_an_errored_row_shows_the_criteria_graded_after_the_failure(tmp_path: Path) -> None:
    write(tmp_path / "task.yaml", "task_id: crash\ndescription: d\n"
          "agent: {type: command, command: 'echo made > made.txt; echo half; exit 3'}\n"
          "dataset: {rows: [{id: r1}]}\ninitial_prompt: go\n"
          "success_criteria:\n  - {type: file_exists, path: made.txt, description: made it}\n"
          "  - {type: file_exists, path: never.txt, description: the other file}\n"
          "  - {type: run_command, command: 'true', description: a program}\n")  # fmt: skip
    done = run_assay("run", "task.yaml", "--run-dir", "runs", "-q", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    run_dir = (tmp_path / "runs" / "latest").resolve()
    result = json.loads(next(run_dir.rglob("task.json")).read_text())
    assert result["final_status"] == "ERROR" and result["success_criteria_results"] == []
    graded = [(c["criterion_type"], c["score"]) for c in result["post_failure_criteria_results"]]
    assert graded == [("file_exists", 1.0), ("file_exists", 0.0)]
    (tmp_path / "scratch").mkdir()
    ws = Workspace([run_dir], scratch=tmp_path / "scratch")
    with TestClient(build_app(ws, hosts=["testserver"])) as http:
        page = http.get(f"/runs/{run_dir.name}/rows/default/crash/r1/00").text
    table = page[page.index('id="post-failure-criteria"') :]
    table = table[: table.index("</table>")]
    assert [text_of(r) for r in re.findall(r"<tr><td>(.*?)</tr>", table, re.S)] == [
        "1 file_exists made it 1.000 0.900 passed 'made.txt' exists",
        "2 file_exists the other file 0.000 0.900 failed 'never.txt' does not exist",
    ]
    assert "count in no score, rate or gate" in text_of(page)
    assert "No criterion graded this row" not in page


@pytest.mark.parametrize(("p", "shown"), [
    (0.0, "p < 1e-300"), (5e-324, "p < 1e-300"), (1e-305, "p < 1e-300"), (1e-300, "p = 1e-300"),
    (3.2e-12, "p = 3.2e-12"), (0.04999, "p = 0.04999"), (1.0, "p = 1"),
])  # fmt: skip
def test_a_p_value_that_underflowed_is_never_shown_as_zero(p: float, shown: str) -> None:
    assert p_clause(p) == shown
    assert format_p(p) == shown.removeprefix("p ").removeprefix("= ")


def test_a_diff_of_thousands_of_flips_prints_p_below_a_bound(tmp_path: Path) -> None:
    test = mcnemar_exact(0, 1200)
    assert test.p_value == 0.0  # the double underflowed
    counts = dict.fromkeys(CHANGES, 0) | {"became_pass": 1200}
    summary = DiffSummary("default", "default", counts, test, ["s"])
    page = render("diff.html", runs=[], params={"a": "x", "b": "y", "va": "", "vb": "",
                                                "suite": "", "change": ""},
                  change_labels=[], summary=summary, pairs=[], total=0, page=1, pages=1,
                  page_url=lambda n: "")  # fmt: skip
    assert "McNemar exact test on the rows that flipped: p < 1e-300." in text_of(page)
    assert "p = 0." not in page
