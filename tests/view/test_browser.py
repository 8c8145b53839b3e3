"""``assay view`` and ``report.html`` in a real headless Chromium (the system's): the runs
page, a run's metric and confusion heatmap, rows filtered by status and label (kept in the
URL across a reload), a row's transcript from a real Claude Code run, two runs row by row,
a run in progress that updates as rows finish, and the static report opened from a file with
the network cut. Every page's screenshot is saved under ``tests/artifacts/view/``.

The oracles are the rows' own ``task.json`` files, read with the standard library."""

from __future__ import annotations

import json
import re
import shutil
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from tests.agents.coding import claude_available, run_assay
from tests.helpers import write
from tests.view.browser import (
    REPO,
    chromium,
    chromium_path,
    files_of,
    fresh_context,
    screenshot,
    viewer,
    wait_for_charts,
)
from tests.view.generate import make_run

pytestmark = pytest.mark.browser

MOOD_ROWS = [
    ("m01", "I love this", "positive"), ("m02", "great fun", "positive"),
    ("m03", "it was fine", "positive"), ("m04", "pretty good", "positive"),
    ("m05", "awful", "negative"), ("m06", "boring and slow", "negative"),
    ("m07", "I hate it", "negative"), ("m08", "not good", "negative"),
    ("m09", "terrible", "negative"), ("m10", "lovely", "positive"),
]  # fmt: skip
ROW_IDS = "rows => rows.map(r => r.dataset.row)"
MOOD_TASK = """\
task_id: mood
description: two moods
agent: {type: llm, model: mock/a.yaml, labels: [positive, negative]}
dataset:
  rows: %s
initial_prompt: "Text: ${row.text}"
success_criteria:
  - type: classification_match
    expected_label: "${row.expected}"
    allowed_labels: [positive, negative]
    suite_thresholds: {accuracy: 0.5}
"""


def task_jsons(run: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(run.glob("*/*/*/*/task.json"))]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A real Claude Code run (the CLI driven by a mock script), and two runs of one task by
    two scripted models whose answers differ on three rows."""
    chromium_path()
    claude_available()
    home = tmp_path_factory.mktemp("view")
    root = home / "runs"
    rows = [{"id": i, "text": t, "expected": e} for i, t, e in MOOD_ROWS]
    write(home / "mood" / "task.yaml", MOOD_TASK % json.dumps(rows))
    write(home / "mood" / "a.yaml", 'replies: [{match: "love|great|good|fine", reply: positive}]'
                                    "\ndefault: negative\n")  # fmt: skip
    write(home / "mood" / "b.yaml", 'replies: [{match: "love|great", reply: positive}]\n'
                                    "default: negative\n")  # fmt: skip
    found: dict[str, Path] = {}
    for name, model in (("a", "mock/a.yaml"), ("b", "mock/b.yaml")):
        done = run_assay("run", str(home / "mood" / "task.yaml"), "-m", model, "--run-dir",
                         str(root), "-q", cwd=home)  # fmt: skip
        assert done.returncode in (0, 1), done.stderr
        found[name] = (root / "latest").resolve()
        time.sleep(1.1)  # the next run gets its own timestamp
    done = run_assay("run", "examples/coder_eval/tasks", "--model",
                     "mock/examples/coder_eval/scripts/claude-writes.yaml", "--run-dir",
                     str(root), "--keep-sandboxes", "-q", cwd=REPO)  # fmt: skip
    assert done.returncode == 0, done.stderr
    found["claude"] = (root / "latest").resolve()
    found["root"] = root
    return found


@pytest.fixture(scope="module")
def url(runs: dict[str, Path]) -> Iterator[str]:
    before = files_of(runs["root"])
    with viewer(str(runs["root"]), cwd=runs["root"].parent) as address:
        yield address
    assert files_of(runs["root"]) == before  # the viewer wrote nothing into any run


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for the module's tests (``--dist loadscope`` keeps them on one worker)."""
    with chromium() as launched:
        yield launched


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    with fresh_context(browser) as opened:
        yield opened


@pytest.fixture
def page(context: Any) -> Any:
    return context.new_page()


def test_the_runs_page_lists_every_run_newest_first(
    page: Any, url: str, runs: dict[str, Path]
) -> None:
    page.goto(url)
    keys = page.eval_on_selector_all(
        "table.runs tr[data-run]", "rows => rows.map(r => r.dataset.run)"
    )
    assert keys == [runs["claude"].name, runs["b"].name, runs["a"].name]
    claude = page.locator(f"tr[data-run='{runs['claude'].name}']")
    text = claude.inner_text()
    assert "finished" in text and "claude-writes.yaml" in text and "5 / 5" in text
    assert "sentiment-classification: PASSED · accuracy 0.667" in " ".join(text.split())
    screenshot(page, "01-runs")


def test_a_run_shows_its_metric_and_the_heatmap_cells(
    page: Any, url: str, runs: dict[str, Path]
) -> None:
    page.goto(f"{url}runs/{runs['claude'].name}")
    charts = wait_for_charts(page)
    assert charts >= 8
    suite = page.locator("section[data-suite='sentiment-classification']")
    accuracy = suite.locator("table.metrics tr[data-metric='accuracy'] td.value").inner_text()
    rows = [r for r in task_jsons(runs["claude"]) if r["suite_id"] == "sentiment-classification"]
    pairs = [(r["success_criteria_results"][0]["expected_label"],
              r["success_criteria_results"][0]["observed_label"]) for r in rows]  # fmt: skip
    assert accuracy == f"{sum(e == o for e, o in pairs) / len(pairs):.3f}" == "0.667"
    labels = suite.locator("figure[data-kind='confusion'] svg path[aria-roledescription='rect "
                           "mark']").evaluate_all("cells => cells.map(c => c.getAttribute("
                           "'aria-label'))")  # fmt: skip
    cells = {}
    for label in labels:
        found = re.search(r"observed label \(answer\): (\w+); expected label \(dataset\): (\w+); "
                          r"rows: (\d+)", label)  # fmt: skip
        assert found is not None, label
        cells[(found[2], found[1])] = int(found[3])
    counted = Counter(pairs)
    assert cells == {(e, o): counted.get((e, o), 0) for e in ("negative", "positive")
                     for o in ("negative", "positive")}  # fmt: skip
    suite.locator("figure[data-kind='confusion'] details.numbers summary").click()
    table = suite.locator("figure[data-kind='confusion'] table.data").inner_text()
    assert "negative\t1\t1" in table  # the numbers behind the chart, as text
    screenshot(page, "02-run")


def test_rows_filtered_by_status_and_label_keep_the_filter_on_reload(
    page: Any, url: str, runs: dict[str, Path]
) -> None:
    run = runs["b"]
    page.goto(f"{url}runs/{run.name}/rows")
    page.select_option("select[name=status]", "FAILURE")
    page.select_option("select[name=expected]", "positive")
    page.click("form.filters button[type=submit]")
    page.wait_for_load_state()
    query = parse_qs(urlparse(page.url).query)
    assert query["status"] == ["FAILURE"] and query["expected"] == ["positive"]
    expected = sorted(
        r["row_id"] for r in task_jsons(run)
        if r["final_status"] == "FAILURE"
        and r["success_criteria_results"][0]["expected_label"] == "positive"
    )  # fmt: skip
    assert expected == ["m03", "m04"]
    shown = page.eval_on_selector_all("#rows tbody tr[data-row]", ROW_IDS)
    assert sorted(shown) == expected
    assert page.inner_text("#row-count").startswith("2 row(s) match")
    page.reload()
    assert sorted(page.eval_on_selector_all("#rows tbody tr[data-row]", ROW_IDS)) == expected
    assert page.input_value("select[name=status]") == "FAILURE"
    screenshot(page, "03-rows-filtered")


def test_a_row_shows_prompt_response_criteria_and_the_agents_transcript(
    page: Any, url: str, runs: dict[str, Path]
) -> None:
    page.goto(f"{url}runs/{runs['claude'].name}/rows?suite=sentiment-classification")
    page.click("#rows tbody tr[data-row='r3'] a")
    page.wait_for_load_state()
    assert "Amazing quality and excellent value for money." in page.inner_text("#prompt")
    assert page.inner_text("#response").strip() == "positive"
    assert "observed='positive', expected='negative'" in page.inner_text("#criteria")
    events = page.eval_on_selector_all("#transcript li.event", "es => es.map(e => e.dataset.kind)")
    trace = json.loads((runs["claude"] / "default" / "sentiment-classification" / "r3" / "00" /
                        "trace.json").read_text())  # fmt: skip
    spans = trace["resourceSpans"][0]["scopeSpans"][0]["spans"]
    tools = [s for s in spans if any(a["key"] == "gen_ai.operation.name"
                                     and a["value"].get("stringValue") == "execute_tool"
                                     for a in s["attributes"])]  # fmt: skip
    assert events.count("tool_call") == len(tools) == 1
    assert {"model_call", "tool_call", "tool_result", "file_change", "final"} <= set(events)
    transcript = page.inner_text("#transcript")
    assert "tool call Write" in transcript and '"content": "positive"' in transcript
    assert "file add: result.txt" in transcript
    assert re.search(r"\d+ in \(0 cache read, 0 cache write\) / \d+ out", transcript)
    assert "sandbox/result.txt" in page.inner_text("#files")
    screenshot(page, "04-row-transcript")
    page.click("#files a:has-text('sandbox/result.txt')")
    assert page.inner_text("body").strip() == "positive"  # the file the agent wrote


def test_two_runs_row_by_row(page: Any, url: str, runs: dict[str, Path]) -> None:
    a, b = runs["a"], runs["b"]
    page.goto(f"{url}diff?a={a.name}&b={b.name}")
    passed_a = {r["row_id"]: r["final_status"] == "SUCCESS" for r in task_jsons(a)}
    passed_b = {r["row_id"]: r["final_status"] == "SUCCESS" for r in task_jsons(b)}
    up = sorted(i for i in passed_a if passed_b[i] and not passed_a[i])
    down = sorted(i for i in passed_a if passed_a[i] and not passed_b[i])
    assert (up, down) == (["m08"], ["m03", "m04"])
    summary = page.inner_text("#diff-summary")
    assert summary.startswith("10 rows compared: 1 became passes, 2 became failures")
    changes = page.eval_on_selector_all(
        "#pairs tbody tr[data-row]", "rs => rs.map(r => [r.dataset.row, r.dataset.change])"
    )
    assert sorted(changes) == [["m03", "became_fail"], ["m04", "became_fail"],
                               ["m08", "became_pass"]]  # fmt: skip
    screenshot(page, "05-diff")
    page.goto(f"{url}diff?a={a.name}&b={runs['claude'].name}")
    assert "cannot be compared row by row: the two runs have no suite in common" in (
        page.inner_text(".refusal")
    )


def test_a_run_in_progress_updates_as_rows_finish(page: Any, tmp_path: Path) -> None:
    source = make_run(30, tmp_path / "source")
    live = tmp_path / "runs" / "live"
    live.mkdir(parents=True)
    shutil.copy(source / "plan.json", live / "plan.json")
    (live / "sessions.jsonl").write_text('{"start": "2026-12-01T09:00:00"}\n')
    rows = sorted((source / "default" / "sst2-three-way").glob("r*"))

    def finish(some: list[Path]) -> None:
        for row in some:
            shutil.copytree(row, live / "default" / "sst2-three-way" / row.name)

    finish(rows[:10])
    with viewer(str(tmp_path / "runs"), cwd=tmp_path) as address:
        page.goto(f"{address}runs/live")
        page.wait_for_function("() => document.body.innerText.includes('in progress: 10 of 30')",
                               timeout=30_000)  # fmt: skip
        assert "No suite.json yet" in page.inner_text("body")
        screenshot(page, "06-live-run")
        finish(rows[10:25])
        page.wait_for_function("() => document.body.innerText.includes('in progress: 25 of 30')",
                               timeout=60_000)  # fmt: skip
        counts = page.inner_text("section.suite p.counts")
        assert counts.startswith("25 rows")


def test_the_static_report_opens_from_a_file_with_no_network(
    tmp_path: Path, runs: dict[str, Path], context: Any
) -> None:
    run = tmp_path / "copy"
    shutil.copytree(runs["claude"], run)
    done = run_assay("report", str(run), "--html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = run / "report.html"
    assert f"html report: {report}" in done.stdout
    text = report.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)
    requests: list[str] = []
    # this test's own context: offline, every request but file: aborted
    context.set_offline(True)
    context.route("**/*", lambda route: route.abort() if not route.request.url.startswith(
        "file:") else route.continue_())  # fmt: skip
    page = context.new_page()
    page.on("request", lambda request: requests.append(request.url))
    page.goto(report.as_uri())
    charts = wait_for_charts(page)
    figures = page.locator("figure.chart").count()
    assert charts == figures >= 8
    accuracy = page.locator("section[data-suite='sentiment-classification'] "
                            "tr[data-metric='accuracy'] td.value").inner_text()  # fmt: skip
    assert accuracy == "0.667"
    font = page.evaluate("getComputedStyle(document.body).fontFamily")
    assert '"DejaVu Sans"' in font  # the inline stylesheet is read whole
    failed = page.inner_text("#failed-rows")
    assert "1 row(s) failed, errored or refused" in failed and "r3" in failed
    screenshot(page, "07-static-report")
    assert all(u.startswith("file:") for u in requests), requests


def test_a_live_page_updates_in_place_keeping_a_typed_search_and_open_panels(
    page: Any, tmp_path: Path
) -> None:
    source = make_run(30, tmp_path / "source")
    live = tmp_path / "runs" / "live"
    live.mkdir(parents=True)
    shutil.copy(source / "plan.json", live / "plan.json")
    (live / "sessions.jsonl").write_text('{"start": "2026-12-01T09:00:00"}\n')
    rows = sorted((source / "default" / "sst2-three-way").glob("r*"))

    def finish(some: list[Path]) -> None:
        for row in some:
            shutil.copytree(row, live / "default" / "sst2-three-way" / row.name)

    finish(rows[:10])
    with viewer(str(tmp_path / "runs"), cwd=tmp_path) as address:
        page.goto(f"{address}runs/live/rows")
        page.wait_for_function("() => document.querySelector('#row-count').innerText"
                               ".startsWith('10 row')", timeout=30_000)  # fmt: skip
        page.evaluate("window.notReloaded = true")
        page.fill("input[name=q]", "half typed")
        page.focus("input[name=q]")
        finish(rows[10:20])
        page.wait_for_function("() => document.querySelector('#row-count').innerText"
                               ".startsWith('20 row')", timeout=60_000)  # fmt: skip
        assert page.eval_on_selector_all("#rows tbody tr[data-row]", ROW_IDS) == [
            r.name for r in rows[:20]]  # fmt: skip
        assert page.input_value("input[name=q]") == "half typed"
        assert page.evaluate("window.notReloaded") is True
        assert page.evaluate("document.activeElement.name") == "q"

        page.goto(f"{address}runs/live")
        page.wait_for_function("() => document.body.innerText.includes('in progress: 20 of 30')",
                               timeout=60_000)  # fmt: skip
        wait_for_charts(page)
        panels = page.locator("section.suite figure details.numbers")
        assert panels.count() >= 1
        opened = panels.first.get_attribute("id")
        is_open = f"document.getElementById('{opened}').open"
        for _ in range(5):  # a swap of the page's own parts may land on the click: click again
            if page.evaluate(is_open):
                break
            page.locator(f"details#{opened} > summary").click()
            page.wait_for_timeout(300)
        assert page.evaluate(is_open) is True  # opened before the rows change
        # a fresh copy may lack a panel for a moment (its numbers wait for every row to be
        # read): the panel, gone from the page, comes back as the reader left it
        page.evaluate(f"document.getElementById('{opened}').remove()")
        page.evaluate("window.notReloaded = true")
        finish(rows[20:25])
        page.wait_for_function("() => document.body.innerText.includes('in progress: 25 of 30')",
                               timeout=30_000)  # fmt: skip
        wait_for_charts(page)
        assert page.evaluate("window.notReloaded") is True
        # the first copy at 25 rows may lack it still (the row index is not complete yet: the
        # intervals wait for it); the copy made once it is brings the panel back, open
        page.wait_for_function(f"() => document.getElementById('{opened}') !== null",
                               timeout=60_000)  # fmt: skip
        assert page.evaluate(f"document.getElementById('{opened}').open") is True
        closed = page.evaluate(
            "Array.from(document.querySelectorAll('details.numbers'))"
            ".filter(d => d.id !== '" + str(opened) + "' && d.open).length"
        )
        assert closed == 0
        assert page.inner_text("section.suite p.counts").startswith("25 rows")
        screenshot(page, "07-live-in-place")


def test_a_diff_shows_paired_differences_and_both_outputs(
    page: Any, url: str, runs: dict[str, Path]
) -> None:
    a, b = runs["a"], runs["b"]
    page.goto(f"{url}diff?a={a.name}&b={b.name}")
    page.wait_for_selector("#paired table.paired tr[data-metric]", timeout=60_000)
    metrics = page.eval_on_selector_all("#paired tr[data-metric]", "rs => rs.map(r => "
                                        "r.dataset.metric)")  # fmt: skip
    assert "pass_rate" in metrics
    outputs = page.locator("tr[data-outputs='m03'] details")
    assert outputs.evaluate("d => d.open") is True
    assert outputs.locator("pre.output-a").inner_text() == "positive"
    assert outputs.locator("pre.output-b").inner_text() == "negative"
    assert outputs.locator("pre.textdiff del").inner_text() == "positive"
    assert outputs.locator("pre.textdiff ins").inner_text() == "negative"
    screenshot(page, "08-diff-outputs")
    page.goto(f"{url}runs/{a.name}/rows")
    page.fill("input[name=q]", "LOVE")
    page.click("form.filters button[type=submit]")
    page.wait_for_url(re.compile(r"q=LOVE"))
    assert page.eval_on_selector_all("#rows tbody tr[data-row]", ROW_IDS) == ["m01", "m10"]
    assert page.eval_on_selector_all("td.prompt mark", "ms => ms.map(m => m.innerText)") == [
        "love", "love"]  # "I love this", "lovely"  # fmt: skip
    assert "prompt" in page.get_attribute("#rows", "data-columns").split(",")
    screenshot(page, "09-rows-search")
