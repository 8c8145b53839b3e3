"""The rows a filter selects, exported as CSV and JSON Lines from the rows page and from
``assay report RUN_DIR --rows FILTER --format csv|jsonl``, read back and compared with the
rows' own ``task.json`` and ``response.txt`` (read with the standard library): every
matching row (all pages), the whole prompt and response, formula cells neutralised, no
secret written, and bad filters refused with what to use."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from assay.results.safe_text import csv_value
from assay.view.app import build_app
from assay.view.export import COLUMNS, export_lines, parse_filter
from assay.view.index import RowIndex
from assay.view.workspace import Workspace
from tests.agents.coding import run_assay
from tests.helpers import write
from tests.view.generate import make_run

SECRET = "export-pw-5b9e2c7a4f1d8e3b6a0c"  # no token shape: the writer keeps it
ENV = {"EXPORT_TEST_API_KEY": SECRET}
TEXTS = [
    ("r01", "formula", '=HYPERLINK("http://evil.example","click")'),
    ("r02", "leak", f"the key is {SECRET}, keep it"),
    ("r03", "quote", 'a "quoted", comma\nand a second line'),
    ("r04", "plus", "+1 then -2 and @me"),
    ("r05", "fine", "fine"),
    ("r06", "number", "-12.5"),
] + [(f"r{i:02d}", f"filler {i}", "fine") for i in range(7, 63)]
SCRIPT = "replies:\n" + "".join(
    f"  - {{match: {json.dumps('^Say ' + text + '$')}, reply: {json.dumps(reply)}}}\n"
    for _, text, reply in TEXTS
) + "default: nothing\n"  # fmt: skip
TASK = """\
task_id: echo
description: replies that a spreadsheet or a log would misread
agent: {type: llm, model: mock/script.yaml}
dataset: {rows: %s}
initial_prompt: "Say ${row.text}"
success_criteria:
  - {type: response_match, expected: fine, match: exact}
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("export")
    write(folder / "script.yaml", SCRIPT)
    rows = [{"id": row_id, "text": text} for row_id, text, _ in TEXTS]
    write(folder / "task.yaml", TASK % json.dumps(rows))
    done = run_assay("run", "task.yaml", "--run-dir", "runs", "-q", cwd=folder)  # no secret set
    assert done.returncode == 1, done.stderr
    return (folder / "runs" / "latest").resolve()


def oracle(run_dir: Path, status: str | None) -> list[dict[str, Any]]:
    """The rows (with ``status``), in row order, from their own files."""
    found = []
    for path in sorted(run_dir.glob("default/echo/*/00/task.json")):
        data = json.loads(path.read_text())
        if status is None or data["final_status"] == status:
            response = (path.parent / "response.txt").read_text()
            found.append({"row_id": data["row_id"], "status": data["final_status"],
                          "prompt": data["task_config"]["resolved"]["initial_prompt"],
                          "response": response.replace(SECRET, "[redacted:EXPORT_TEST_API_KEY]"),
                          "row": data["row"]})  # fmt: skip
    return found


def read_csv(text: str) -> list[dict[str, str]]:
    reader = csv.DictReader(io.StringIO(text))
    assert tuple(reader.fieldnames or ()) == COLUMNS
    return [{k: csv_value(v) for k, v in line.items()} for line in reader]


def test_cli_csv_and_jsonl_round_trip(run_dir: Path) -> None:
    assert SECRET in (run_dir / "default/echo/r02/00/response.txt").read_text()  # as written
    expected = oracle(run_dir, "FAILURE")
    assert len(expected) == 5
    done = run_assay("report", str(run_dir), "--rows", "status=FAILURE", "--format", "csv",
                     cwd=run_dir, env=ENV)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout
    lines = read_csv(done.stdout)
    keys = ("row_id", "status", "prompt", "response")
    assert [{k: line[k] for k in keys} for line in lines] == [
        {k: e[k] for k in keys} for e in expected]  # fmt: skip
    assert [json.loads(line["row"]) for line in lines] == [e["row"] for e in expected]
    raw = list(csv.DictReader(io.StringIO(done.stdout)))
    cells = {line["row_id"]: line["response"] for line in raw}
    assert cells["r01"].startswith("'=HYPERLINK(") and cells["r04"].startswith("'+1")
    assert cells["r06"] == "-12.5"  # a number stays a number
    done = run_assay("report", str(run_dir), "--rows", "?status=FAILURE", "--format", "jsonl",
                     cwd=run_dir, env=ENV)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [list(r) for r in records] == [list(COLUMNS)] * 5
    assert [{k: r[k] for k in ("row_id", "status", "prompt", "response", "row")}
            for r in records] == expected  # fmt: skip
    assert not (run_dir / "rows.csv").exists()


def test_every_page_of_a_filter_is_exported_in_its_order(run_dir: Path) -> None:
    done = run_assay("report", str(run_dir), "--rows", "sort=row_id&order=desc&size=25&page=2",
                     cwd=run_dir)  # fmt: skip
    assert done.returncode == 0, done.stderr
    ids = [line["row_id"] for line in read_csv(done.stdout)]
    assert ids == sorted((r for r, _, _ in TEXTS), reverse=True)  # 62 rows, not one page
    done = run_assay("report", str(run_dir), "--rows", "q=second line", cwd=run_dir)
    assert [line["row_id"] for line in read_csv(done.stdout)] == ["r03"]


@pytest.fixture
def client(run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.setenv("EXPORT_TEST_API_KEY", SECRET)
    ws = Workspace([run_dir], scratch=tmp_path)
    with TestClient(build_app(ws, hosts=["testserver"])) as http:
        yield http


def test_the_page_downloads_what_its_filter_selects(client: TestClient, run_dir: Path) -> None:
    page = client.get(f"/runs/{run_dir.name}/rows", params={"status": "FAILURE", "size": "2"})
    assert f'href="/runs/{run_dir.name}/rows.csv?status=FAILURE"' in page.text
    assert f'href="/runs/{run_dir.name}/rows.jsonl?status=FAILURE"' in page.text
    for fmt, kind in (("csv", "text/csv"), ("jsonl", "application/x-ndjson")):
        got = client.get(f"/runs/{run_dir.name}/rows.{fmt}", params={"status": "FAILURE"})
        assert got.status_code == 200 and got.headers["content-type"].startswith(kind)
        assert "attachment" in got.headers["content-disposition"]
        assert SECRET not in got.text
        cli = run_assay("report", str(run_dir), "--rows", "status=FAILURE", "--format", fmt,
                        cwd=run_dir, env=ENV)  # fmt: skip
        assert got.text == cli.stdout
    assert client.get(f"/runs/{run_dir.name}/rows.xml").status_code == 404


def test_pages_and_file_views_redact_what_the_exports_redact(
    client: TestClient, run_dir: Path
) -> None:
    """The exports redacted the viewer's environment's secrets, and the rows page, the row
    page and the file view served them in clear (a platform engineer's break-test)."""
    name = run_dir.name
    for url in (f"/runs/{name}/rows", f"/runs/{name}/rows/default/echo/r02/00",
                f"/runs/{name}/files/default/echo/r02/00/response.txt",
                f"/runs/{name}/files/default/echo/r02/00/task.json"):  # fmt: skip
        got = client.get(url, params={"size": "100"} if url.endswith("rows") else None)
        assert got.status_code == 200, url
        assert SECRET not in got.text, url
        assert url.endswith("rows") or "[redacted:EXPORT_TEST_API_KEY]" in got.text, url
        assert int(got.headers["content-length"]) == len(got.content)


def test_search_never_matches_what_the_pages_show_redacted(
    client: TestClient, run_dir: Path
) -> None:
    """A search matched the secret the page showed redacted, so anyone with the viewer could
    recover it a character at a time (a platform engineer's break-test)."""
    name = run_dir.name
    for fmt in ("csv", "jsonl"):
        found = client.get(f"/runs/{name}/rows.{fmt}", params={"q": SECRET[:12]}).text
        assert found.count("\n") <= (1 if fmt == "csv" else 0), found  # a header at most
    shown = client.get(f"/runs/{name}/rows.jsonl", params={"q": "redacted:EXPORT_TEST"}).text
    assert [json.loads(line)["row_id"] for line in shown.splitlines()] == ["r02"]


def test_downloads_sort_as_the_page_does(client: TestClient, run_dir: Path) -> None:
    """The page put rows without a score last in both orders, and its CSV put them first
    when descending (a reviewer's break-test)."""
    name = run_dir.name
    for order in ("asc", "desc"):
        params = {"sort": "score", "order": order, "size": "500"}
        got = client.get(f"/runs/{name}/rows.jsonl", params=params).text  # the whole index
        page = client.get(f"/runs/{name}/rows", params=params).text
        shown = re.findall(r'/rows/default/echo/(r\d+)/00[?"]', page)
        assert len(shown) == 62
        assert [json.loads(line)["row_id"] for line in got.splitlines()] == shown, order


def test_a_status_is_read_in_any_case(client: TestClient, run_dir: Path) -> None:
    """A hand-typed ``status=failure`` selects the FAILURE rows (it matched no row before)."""
    upper = client.get(f"/runs/{run_dir.name}/rows.jsonl", params={"status": "FAILURE"}).text
    assert upper.count("\n") > 0
    assert (
        client.get(f"/runs/{run_dir.name}/rows.jsonl", params={"status": "failure"}).text == upper
    )
    cli = run_assay("report", str(run_dir), "--rows", "status=Failure", "--format", "jsonl",
                    cwd=run_dir, env=ENV)  # fmt: skip
    assert cli.returncode == 0 and cli.stdout == upper
    # a criterion's outcome too; a number no int() reads leaves the page whole
    lower = client.get(f"/runs/{run_dir.name}/rows.jsonl", params={"criterion": "0:fail"}).text
    assert lower.count("\n") > 0
    assert client.get(f"/runs/{run_dir.name}/rows.jsonl",
                      params={"criterion": "0:FAIL"}).text == lower  # fmt: skip
    for odd in ({"criterion": "\u00b2:fail"}, {"replicate": "\u00b2"}):
        assert client.get(f"/runs/{run_dir.name}/rows", params=odd).status_code == 200


@pytest.mark.parametrize(("args", "message"), [
    (["--rows", "colour=red"], "--rows: 'colour' is not a filter of the rows page"),
    (["--rows", "sort=colour"], "--rows: sort 'colour' is not one of row, score"),
    (["--rows", "status=PASSED"], "--rows: status 'PASSED' is not a row-task's status"),
    (["--rows", "status=PASSED"], "use one of SUCCESS, FAILURE, TIMEOUT"),
    (["--rows", "criterion=first:fail"], "--rows: criterion 'first:fail' is not POSITION:OUTCOME"),
    (["--rows", "criterion=0:maybe"], "outcomes: pass, fail, error, refused"),
    (["--rows", "criterion=\u00b2:fail"], "is not POSITION:OUTCOME"),
    (["--rows", "replicate=\u00b2"], "--rows: replicate '\u00b2' is not a replicate's number"),
    (["--rows", "", "--format", "xml"], "--format: 'xml' is not one of csv, jsonl"),
    (["--format", "csv"], "--format goes with --rows FILTER"),
    (["--rows", "", "--html"], "--rows prints rows and writes nothing"),
])  # fmt: skip
def test_bad_export_options_are_refused(run_dir: Path, args: list[str], message: str) -> None:
    done = run_assay("report", str(run_dir), *args, cwd=run_dir)
    assert done.returncode == 2
    assert message in " ".join(done.stderr.split())
    assert done.stdout == ""


def test_an_export_skips_what_is_not_a_regular_file(tmp_path: Path) -> None:
    """Found in review: a named pipe in place of a row's task.json hung the download for
    ever, and a response.txt linked to a file outside the run was exported."""
    run = make_run(4, tmp_path / "runs")
    suite = run / "default" / "sst2-three-way"
    (suite / "r000001" / "00" / "task.json").unlink()
    os.mkfifo(suite / "r000001" / "00" / "task.json")
    secret = tmp_path / "outside.txt"
    secret.write_text("the host's own file")
    (suite / "r000002" / "00" / "response.txt").unlink()
    (suite / "r000002" / "00" / "response.txt").symlink_to(secret)
    index = RowIndex(run, tmp_path / "index.sqlite")
    index.refresh()
    with index.connect() as db:
        lines = list(export_lines(db, run, parse_filter(""), "jsonl", environ={}))
    assert len(lines) == 4
    assert "the host's own file" not in "".join(lines)


def test_rows_printed_to_a_terminal_show_control_characters_not_run_them(tmp_path: Path) -> None:
    """An agent's output held escape sequences that cleared the screen, faked a line and wrote
    the clipboard (OSC 52) when `report --rows` printed to a terminal; a pipe gets the data."""
    import os
    import pty
    import subprocess
    import sys

    from assay.cli.shared.common import for_terminal

    assert for_terminal("a\x1b[2Jb\x07\tc\r\n\x9b") == "a\\x1b[2Jb\\x07\tc\r\n\\x9b"
    write(
        tmp_path / "t.yaml",
        """\
task_id: ctl
description: an agent that prints escape sequences
initial_prompt: x
agent: {type: command, command: "printf 'A\\\\033[2J\\\\033]52;c;cHduZWQ=\\\\007B'"}
success_criteria: [{type: response_match, expected: x}]
""",
    )
    ran = subprocess.run([sys.executable, "-m", "assay", "run", "t.yaml", "-q"], cwd=tmp_path,
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert (tmp_path / "runs/latest/default/ctl/00/response.txt").read_bytes().startswith(
        b"A\x1b[2J"), ran.stderr  # fmt: skip
    command = [sys.executable, "-m", "assay", "report", "runs/latest", "--rows", "",
               "--format", "csv"]  # fmt: skip
    piped = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert "\x1b[2J" in piped.stdout  # the data whole, for a file or a program
    main, side = pty.openpty()
    with subprocess.Popen(command, cwd=tmp_path, stdout=side, stderr=subprocess.DEVNULL) as proc:
        os.close(side)
        shown = b""
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
        proc.wait(timeout=60)
    os.close(main)
    assert b"\x1b" not in shown and b"\\x1b[2J" in shown and b"\\x07" in shown
