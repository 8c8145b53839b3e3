"""``report.html``: from the API (``assay.report(html=True)``, ``assay.view.write_html_report``)
and the command line (``assay report --html``, ``assay run --html``), self-contained (no
address outside the file), with the failed rows capped and counted."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import assay
from assay.view.static_report import TEXT_BUDGET, html_report, text_clip
from tests.agents.coding import run_assay
from tests.helpers import write
from tests.view.generate import make_run

EXTERNAL = re.compile(r"""<(script|link|img|iframe)[^>]+(src|href)=["']?(https?:)?//""")


def test_the_api_writes_report_html_beside_the_reports(tmp_path: Path) -> None:
    run = make_run(60, tmp_path)
    result = assay.report(run, html=True)
    assert result.html_report == run / "report.html"
    text = result.html_report.read_text()
    assert not EXTERNAL.search(text) and "vegaEmbed" in text
    failed = sum(1 for p in run.glob("*/*/*/*/task.json")
                 if json.loads(p.read_text())["final_status"] != "SUCCESS")  # fmt: skip
    assert f"{failed} row(s) failed, errored or refused." in text
    other = assay.view.write_html_report(run, output=tmp_path / "elsewhere.html")
    assert other == tmp_path / "elsewhere.html" and other.read_text().startswith("<!doctype")
    assert assay.report(run).html_report is None


def test_failed_rows_are_capped_and_counted(tmp_path: Path) -> None:
    run = make_run(300, tmp_path)
    text = html_report(run, failed_limit=5)
    failed = sum(1 for p in run.glob("*/*/*/*/task.json")
                 if json.loads(p.read_text())["final_status"] != "SUCCESS")  # fmt: skip
    assert failed > 5
    assert (f"{failed} row(s) failed, errored or refused; the first 5 are listed (in <code>"
            f"assay view {run}</code> every row can be filtered and opened)") in text  # fmt: skip
    assert text.count('<a href="default/sst2-three-way/') == 5


def test_report_html_and_run_html_on_the_command_line(tmp_path: Path) -> None:
    write(tmp_path / "task.yaml", """\
task_id: echo
description: echo
agent: {type: llm, model: mock/echo}
dataset:
  rows: [{id: a, text: "yes"}, {id: b, text: "no"}]
initial_prompt: "${row.text}"
success_criteria:
  - type: response_match
    expected: "yes"
    suite_thresholds: {mean: 0.9}
""")  # fmt: skip
    done = run_assay("run", "task.yaml", "--html", "-q", cwd=tmp_path)
    run = (tmp_path / "runs" / "latest").resolve()
    assert done.returncode == 1, done.stderr  # row b fails the gate
    assert f"html report: runs/{run.name}/report.html" in done.stdout
    assert "1 row(s) failed, errored or refused." in (run / "report.html").read_text()
    (run / "report.html").unlink()
    done = run_assay("report", str(run), "--html", cwd=tmp_path)
    assert done.returncode == 1 and (run / "report.html").is_file()
    done = run_assay("report", str(tmp_path / "nowhere"), "--html", cwd=tmp_path)
    assert done.returncode == 2
    assert f"run directory not found: {tmp_path / 'nowhere'}" in done.stderr


def _every(text: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="rows-data">(.*?)</script>', text, re.S)
    assert found is not None
    return json.loads(found.group(1))


def test_every_row_is_kept_with_its_text_clipped_within_the_budget(tmp_path: Path) -> None:
    run = make_run(300, tmp_path)
    every = _every(html_report(run, failed_limit=5))
    results = {str(p.parent.relative_to(run)): json.loads(p.read_text())
               for p in run.glob("*/*/*/*/task.json")}  # fmt: skip
    assert every["clip"] == 300 and every["suites"] == ["sst2-three-way"]
    assert sorted(r[0] for r in every["rows"]) == sorted(results)  # every row, passed too
    assert every["statuses"] == sorted({r["final_status"] for r in results.values()})
    for folder, status, score, prompt, response in every["rows"]:
        result = results[folder]
        assert status == result["final_status"] and score == result["weighted_score"]
        assert prompt == result["task_config"]["resolved"]["initial_prompt"][:300]
        assert response == (run / folder / "response.txt").read_text()[:300]
    order = [results[r[0]]["row_index"] for r in every["rows"]]
    assert order == sorted(order)


def test_long_texts_are_clipped_and_the_clip_shrinks_with_the_run(tmp_path: Path) -> None:
    run = make_run(3, tmp_path)
    folder = next(run.glob("*/*/*/*/response.txt"))
    folder.write_text("word " * 400 + "<script>alert(1)</script>")
    text = html_report(run)
    every = _every(text)
    clipped = next(r for r in every["rows"] if r[0] == str(folder.parent.relative_to(run)))
    assert len(clipped[4]) <= 301 and clipped[4].endswith("…") and "<script>alert" not in text
    assert [text_clip(n) for n in (1, 10_000, 20_000, 100_000, 150_000, 10**6)] == [
        300, 300, 150, 30, 20, 20]  # fmt: skip
    assert 2 * 150_000 * text_clip(150_000) <= TEXT_BUDGET
