"""``report.html``: from the API (``assay.report(html=True)``, ``assay.write_html_report``)
and the command line (``assay report --html``, ``assay run --html``), self-contained (no
address outside the file), with the failed rows capped and counted."""

from __future__ import annotations

import json
import re
from pathlib import Path

import assay
from assay.view.static_report import html_report
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
    other = assay.write_html_report(run, output=tmp_path / "elsewhere.html")
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
