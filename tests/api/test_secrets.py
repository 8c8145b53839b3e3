"""Secrets from Python: a run built in Python redacts what its agent printed (from the
variables the test process holds) and reports what the scan found; ``assay.check_secrets``
scans a folder and writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

import assay

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
    assert response == f"[redacted:MY_SERVICE_TOKEN] {SHAPED}\n"
    assert result.exit_code == 1 and not result.passed  # green but for the key-shaped string
    found = result.secret_findings  # the answer, wherever the row recorded it
    assert ("default/py-secrets/00/response.txt", 1) in [(f.file, f.line) for f in found]
    assert {f.file.rsplit("/", 1)[1] for f in found} <= {"response.txt", "task.json",
                                                          "trace.json", "task.log"}  # fmt: skip
    checked = assay.check_secrets(result.run_dir)
    assert [(f.file, f.line) for f in checked] == [(f.file, f.line) for f in found]
    assert {f.kind for f in checked} == {"a string shaped like a GitHub token"}
    saved = (result.run_dir / "python-tasks" / "py-secrets.json").read_text()
    assert KEY not in saved  # the task as built, for a resume, holds no secret value either


def test_check_secrets_refuses_a_folder_that_is_no_run(tmp_path: Path) -> None:
    with pytest.raises(assay.UserError, match="is not a run directory"):
        assay.check_secrets(tmp_path)
