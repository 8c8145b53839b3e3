"""Secrets from Python: a run built in Python redacts what its agent printed (from the
variables the test process holds) and reports what the scan found; ``assay.check_secrets``
scans a folder and writes nothing."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

import assay
from tests.openai_server import Fault, scripted_server

KEY = "svc-token-for-the-python-api-0042"
SHAPED = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def test_a_python_run_redacts_and_reports_what_the_scan_finds(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", KEY)
    task = {
        "task_id": "py-secrets", "description": "an agent given the token on purpose",
        "agent": {"type": "command", "env_passthrough": ["MY_SERVICE_TOKEN"],
                  "command": f'P=ghp; echo "$MY_SERVICE_TOKEN ${{P}}_{SHAPED[4:]}"'},
        "initial_prompt": "go",
        "success_criteria": [{"type": "response_match", "description": "saw the token",
                              "expected": KEY, "match": "contains"}],
    }  # fmt: skip
    result = assay.run(task, run_dir="runs")
    row = next(iter(result.rows()))
    assert row.final_status.value == "SUCCESS"  # graded on the raw answer
    response = (result.run_dir / "default" / "py-secrets" / "00" / "response.txt").read_text()
    # The key-shaped string is redacted by the writer too (issue 28 item 1), by its shape.
    assert response == "[redacted:MY_SERVICE_TOKEN] [redacted:github-token]\n"
    assert result.exit_code == 0 and result.passed and result.secret_findings == []
    # A file assay did not write is still reported by the scan, by the same rule.
    stray = result.run_dir / "default" / "py-secrets" / "00" / "notes.txt"
    stray.write_text(f"copied by hand\n{SHAPED}\n")
    checked = assay.check_secrets(result.run_dir)
    assert [(f.file, f.line, f.kind) for f in checked] == [
        ("default/py-secrets/00/notes.txt", 2, "a string shaped like a GitHub token")
    ]
    saved = (result.run_dir / "python-tasks" / "py-secrets.json").read_text()
    assert KEY not in saved  # the task as built, for a resume, holds no secret value either


def test_a_python_run_prints_redacted_and_leaves_sys_streams_alone(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``assay.run(progress=True)`` prints its retry lines redacted (an endpoint that quotes
    the credential in its error) while ``sys.stdout`` and ``sys.stderr`` stay the caller's
    own objects throughout the run (issue 27 item 6)."""
    monkeypatch.setenv("MY_LLM_CREDENTIAL", KEY)
    seen: list[tuple[Any, Any]] = []

    def reply(body: dict[str, Any]) -> str | Fault:
        seen.append((sys.stdout, sys.stderr))  # the server's thread, while the run runs
        return _first_quotes_the_key(len(seen), "fine")

    before = (sys.stdout, sys.stderr)
    with scripted_server(reply) as server:
        result = assay.run(_quoting_task(server.base_url, "fine"), run_dir="runs", progress=True)
    assert result.passed
    assert seen == [before, before] and (sys.stdout, sys.stderr) == before
    err = capsys.readouterr().err
    assert "attempt 1 failed" in err and "no, key [redacted:MY_LLM_CREDENTIAL]" in err
    assert KEY not in err


def _first_quotes_the_key(call: int, answer: str) -> str | Fault:
    """An endpoint whose first answer is an error quoting the credential."""
    if call == 1:
        return Fault(500, body=json.dumps({"error": {"message": f"no, key {KEY}"}}))
    return answer


def _quoting_task(base_url: str, expected: str) -> dict[str, Any]:
    return {
        "task_id": "retried", "description": "an endpoint that quotes its credential",
        "agent": {"type": "llm", "model": "openai/echo", "base_url": base_url,
                  "api_key_env": "MY_LLM_CREDENTIAL"},
        "initial_prompt": "hello",
        "success_criteria": [{"type": "response_match", "expected": expected}],
    }  # fmt: skip


class _Seen:
    """A caller's own progress object: it keeps what it is told."""

    def __init__(self) -> None:
        self.rows: list[Any] = []
        self.retries: list[Any] = []

    def start(self, total: int, *, already_done: int = 0) -> None:
        pass

    def advance(self, result: Any) -> None:
        self.rows.append(result)

    def retry(self, model: str, attempt: Any) -> None:
        self.retries.append(attempt)

    def stop(self) -> None:
        pass


def test_a_callers_own_progress_object_is_told_redacted_text(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The retry errors and finished rows a caller's progress object receives hold the run's
    secrets redacted, as the run's files and printed lines do (the break-test's fault 8)."""
    monkeypatch.setenv("MY_LLM_CREDENTIAL", KEY)
    calls: list[int] = []

    def reply(body: dict[str, Any]) -> str | Fault:
        calls.append(1)
        return _first_quotes_the_key(len(calls), f"fine {KEY}")

    seen = _Seen()
    with scripted_server(reply) as server:
        assay.run(_quoting_task(server.base_url, "nothing like it"), run_dir="runs",
                  progress=seen)  # fmt: skip
    assert [a.number for a in seen.retries] == [1]
    assert "no, key [redacted:MY_LLM_CREDENTIAL]" in seen.retries[0].error
    (row,) = seen.rows
    told = row.model_dump_json()
    assert "fine [redacted:MY_LLM_CREDENTIAL]" in told  # the criterion quotes the answer
    assert KEY not in told and KEY not in seen.retries[0].error


def test_check_secrets_refuses_a_folder_that_is_no_run(tmp_path: Path) -> None:
    with pytest.raises(assay.UserError, match="is not a run directory"):
        assay.check_secrets(tmp_path)


def test_evaluate_warns_that_it_grades_a_redacted_answer(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A criterion that matched a token in the answer the run graded in memory can grade the
    redacted ``response.txt`` differently: ``assay evaluate`` says so, naming the rows whose
    score changed (found in review)."""
    task = {
        "task_id": "shaped", "description": "an agent that prints a token",
        "agent": {"type": "command", "command": f'P=ghp; echo "made ${{P}}_{SHAPED[4:]}"'},
        "initial_prompt": "go",
        "success_criteria": [{"type": "response_match", "expected": "ghp_", "match": "contains"}],
    }  # fmt: skip
    result = assay.run(task, run_dir="runs")
    assert result.passed
    regraded = assay.evaluate(result.run_dir, jobs=1)
    assert not regraded.passed  # the answer as written holds [redacted:github-token]
    warning = ("1 row(s)' response.txt hold redacted text ([redacted:...]); assay evaluate "
               "grades the answer as written")  # fmt: skip
    assert warning in capsys.readouterr().err
    (found,) = [w for w in regraded.summary.warnings if w.startswith(warning)]
    assert found.endswith("1 of them scored differently than in the run: shaped#00")


def test_only_a_callers_own_progress_gets_a_redacted_copy_of_each_row() -> None:
    """assay's own display printing through a redacting stream (as the command line's does),
    ``True``/``False`` and ``NoProgress`` need no copy; a caller's object, or a display on a
    plain stream, gets one (the command line's run paid for a copy of every row)."""
    import io

    from assay.api.runs import _prints_redacted
    from assay.orchestration.running.progress import NoProgress
    from assay.reports.progress import PlainProgress, RichProgress
    from assay.results.output import RedactingStream

    redacting = RedactingStream(io.StringIO())
    for given in (True, False, NoProgress(), PlainProgress(redacting), RichProgress(redacting)):
        assert _prints_redacted(given), given
    for given in (_Seen(), PlainProgress(io.StringIO())):
        assert not _prints_redacted(given), given


def test_a_terminal_bar_shows_a_retried_calls_error_redacted(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A field report: on a terminal the bar coloured ``key=value`` and folded long lines
    before the redacting stream saw them, so a secret reached the screen in pieces."""
    import io
    import re

    from assay.reports.progress import RichProgress
    from assay.results.output import RedactingStream

    monkeypatch.setenv("MY_LLM_CREDENTIAL", KEY)
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich takes the stream for a terminal
    monkeypatch.setenv("COLUMNS", "24")  # narrower than the key: folded when shown
    calls: list[int] = []

    def reply(body: dict[str, Any]) -> str | Fault:
        calls.append(1)
        if len(calls) == 1:
            return Fault(503, body=json.dumps({"error": {"message": f"bad key={KEY}"}}))
        return "fine"

    screen = io.StringIO()
    with scripted_server(reply) as server:
        assay.run(_quoting_task(server.base_url, "fine"), run_dir="runs",
                  progress=RichProgress(RedactingStream(screen)))  # fmt: skip
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\s", "", screen.getvalue())  # colours, folds
    assert "retry" in shown and "[redacted:MY_LLM_CREDENTIAL]" in shown
    assert KEY not in shown and KEY[:12] not in shown
