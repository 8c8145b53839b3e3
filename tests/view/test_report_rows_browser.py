"""``report.html``'s row table in a real headless Chromium, opened from a file with the
network cut: every row of the run is there; a search, a status and a suite filter select the
rows the run's own files say they should; pages of 100 move on; each row links to its
``task.json``. The oracle: the ``task.json`` and ``response.txt`` files, read here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.view.static_report import write_html_report
from tests.view.browser import chromium, chromium_path, fresh_context, screenshot
from tests.view.generate import make_run

pytestmark = pytest.mark.browser
FOLDERS = "rows => rows.map(r => r.dataset.folder)"


def test_every_row_is_searched_and_filtered_in_the_page(tmp_path: Path) -> None:
    chromium_path()
    run = make_run(250, tmp_path)
    report = write_html_report(run)
    results = {str(p.parent.relative_to(run)): json.loads(p.read_text())
               for p in run.glob("*/*/*/*/task.json")}  # fmt: skip
    prompts = {f: r["task_config"]["resolved"]["initial_prompt"] for f, r in results.items()}
    responses = {f: (run / f / "response.txt").read_text() for f in results}
    word = "charming"
    texts = {f: "\n".join((f, prompts[f][:300], responses[f][:300])).lower() for f in results}
    matching = {f for f in results if word in texts[f]}
    assert 0 < len(matching) < 100
    failures = {f for f, r in results.items() if r["final_status"] == "FAILURE"}
    with chromium() as browser, fresh_context(browser) as context:
        requests: list[str] = []
        context.set_offline(True)
        page = context.new_page()
        page.on("request", lambda request: requests.append(request.url))
        page.goto(report.as_uri())
        assert page.inner_text("#row-count") == "250 of 250 rows"
        assert page.inner_text("#row-page") == "page 1 of 3"
        assert page.locator("#row-table tbody tr").count() == 100
        page.click("#row-next")
        page.click("#row-next")
        assert page.inner_text("#row-page") == "page 3 of 3"
        assert page.locator("#row-table tbody tr").count() == 50
        page.select_option("#row-status", "FAILURE")
        assert page.inner_text("#row-count") == f"{len(failures)} of 250 rows"
        shown = page.eval_on_selector_all(
            "#row-table tbody tr", "rows => rows.map(r => r.dataset.folder)"
        )
        assert set(shown) == failures and page.inner_text("#row-page") == "page 1 of 1"
        page.select_option("#row-status", "")
        page.fill("#row-search", word.upper())
        assert page.inner_text("#row-count") == f"{len(matching)} of 250 rows"
        shown = page.eval_on_selector_all(
            "#row-table tbody tr", "rows => rows.map(r => r.dataset.folder)"
        )
        assert set(shown) == matching
        page.select_option("#row-suite", "sst2-three-way")
        assert page.inner_text("#row-count") == f"{len(matching)} of 250 rows"
        first = sorted(matching, key=lambda f: results[f]["row_index"])[0]
        link = page.locator(f'#row-table tr[data-folder="{first}"] a')
        assert link.get_attribute("href") == f"{first}/task.json"
        screenshot(page, "report-every-row")
    assert all(url.startswith("file:") for url in requests), requests
