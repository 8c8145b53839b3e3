"""Issue 28 item 1: well-known token shapes are redacted by the writer, at write time, in
every place a row records them (an answer, a transcript, a command's output, a file the agent
wrote that assay keeps in the run folder), by the rule the end-of-run scan reports by; and
ordinary run content (hashes, UUIDs, row ids, base64 of data) is never taken for a token."""

from __future__ import annotations

import json
from pathlib import Path

from assay import api
from tests.helpers import write

# Each token is put together by the shell or the model script at run time, so the task file
# itself never holds it: what is redacted is what the row produced.
PARTS = {
    "gitlab-token": ("glpat", "-Zx81kQ2wL0pR7mN4bV6c"),
    "json-web-token": ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9", ".eyJzdWIiOiIxMjM0NTY3ODkwIn0."
                       "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    "github-token": ("ghp", "_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    "aws-access-key-id": ("AKIA", "Q7ZP3KX9W2MB4TY6"),
    "slack-token": ("xoxb", "-1234567890-abcdefABCDEF12"),
    "stripe-key": ("sk_live", "_4eC39HqLyjWDarjtT1zdp7dc"),
}  # fmt: skip
TOKENS = {name: head + tail for name, (head, tail) in PARTS.items()}
ECHO = " ".join(f'"{head}""{tail}"' for head, tail in PARTS.values())  # joined by the shell

SHELL_TASK = f"""\
task_id: printed
description: tokens in an answer, a pre_run's output, a criterion's output and a kept file
initial_prompt: go
pre_run:
  - command: 'echo {ECHO}'
agent:
  type: command
  command: 'echo {ECHO}; echo {ECHO} > notes.txt'
success_criteria:
  - type: run_command
    command: 'echo {ECHO}; false'
"""


def files_of(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in run_dir.rglob("*")
            if p.is_file() and not p.is_symlink()}  # fmt: skip


def assert_no_token(files: dict[str, bytes]) -> None:
    for name, data in files.items():
        for kind, token in TOKENS.items():
            assert token.encode() not in data, (name, kind)


def markers(text: str) -> set[str]:
    return {name for name in TOKENS if f"[redacted:{name}]" in text}


def test_tokens_a_command_printed_or_wrote_are_redacted_as_written(tmp_path: Path) -> None:
    task = write(tmp_path / "task.yaml", SHELL_TASK)
    result = api.run([str(task)], run_dir=str(tmp_path / "runs"), keep_sandboxes=True)
    files = files_of(result.run_dir)
    assert_no_token(files)
    row = "default/printed/00"
    assert markers(files[f"{row}/response.txt"].decode()) == set(TOKENS)  # the answer
    assert markers(files[f"{row}/sandbox/notes.txt"].decode()) == set(TOKENS)  # a kept file
    record = json.loads(files[f"{row}/task.json"])
    assert markers(record["pre_run_results"][0]["stdout"]) == set(TOKENS)  # a command's output
    criterion = record["success_criteria_results"][0]
    assert markers(json.dumps(criterion)) == set(TOKENS)  # a criterion's command output
    assert markers(files[f"{row}/trace.json"].decode()) == set(TOKENS)  # its transcript
    assert result.secret_findings == []  # nothing left for the scan to find


def test_tokens_in_a_models_transcript_are_redacted_as_written(tmp_path: Path) -> None:
    """A model's answer and its transcript (the model call's input and output in
    ``trace.json``, the summary in ``task.json``), and the row that asked for them."""
    script = "replies:\n" + "".join(
        f"  - {{match: 'say {name}', reply: 'here: {head}{tail} done'}}\n"
        for name, (head, tail) in PARTS.items()
    ) + "default: nothing\n"  # fmt: skip
    write(tmp_path / "script.yaml", script)
    rows = [{"id": f"r{i}", "ask": f"say {name}"} for i, name in enumerate(PARTS)]
    task = write(tmp_path / "task.yaml", f"""\
task_id: modelled
description: a model that answers with tokens
agent: {{type: llm, model: mock/script.yaml}}
dataset: {{rows: {json.dumps(rows)}}}
initial_prompt: "${{row.ask}}"
success_criteria:
  - {{type: response_match, expected: done, match: contains}}
""")  # fmt: skip
    result = api.run([str(task)], run_dir=str(tmp_path / "runs"))
    assert result.exit_code == 0 and result.secret_findings == []
    files = files_of(result.run_dir)
    assert_no_token(files)
    for i, name in enumerate(PARTS):
        row = f"default/modelled/r{i}/00"
        assert files[f"{row}/response.txt"].decode() == f"here: [redacted:{name}] done"
        assert markers(files[f"{row}/trace.json"].decode()) == {name}


ORDINARY = r"""
import base64, hashlib, json, os, random, uuid
rnd = random.Random(7)
lines = []
for i in range(300):
    data = bytes(rnd.randrange(256) for _ in range(48))
    lines.append(" ".join([
        f"row-{i:05d}", hashlib.sha256(data).hexdigest(), hashlib.sha256(data).hexdigest().upper(),
        hashlib.sha1(data).hexdigest(), str(uuid.UUID(bytes=data[:16])),
        base64.b64encode(data).decode(), base64.urlsafe_b64encode(data).decode(),
        base64.b64encode(json.dumps({"i": i, "k": "v"}).encode()).decode(),
        "risk-assessment-2024-final", "task-0123456789abcdefghij", "https://example.com/a/b?page=2",
    ]))
# Runs of hex and base64 that contain a token's prefix and length, inside a longer word.
lines.append("DEADBEEFACCA0123456789ABCDEF0123BEEF QUJDAIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Qxyz "
             "c29tZWdocF9hMUIyYzNENGU1RjZnN0g4aTlKMGsxTDJtM040bzVQNnE3UjghghpXa1B2c3D4e5F6g7H8i9"
             "J0k1L2m3N4o5P6q7R8")
text = "\n".join(lines) + "\n"
print(text)
open("ordinary.txt", "w").write(text)
"""


def test_ordinary_run_content_is_never_redacted(tmp_path: Path) -> None:
    """A real run's files (task.json, response.txt, trace.json, task.log, run.json, suite.*,
    a kept file) full of hashes, UUIDs, row ids and base64 of data hold no marker."""
    write(tmp_path / "ordinary.py", ORDINARY)
    task = write(tmp_path / "task.yaml", """\
task_id: ordinary
description: run content that only looks random
initial_prompt: go
dataset: {rows: [{id: "0f3a9c2e-5b7d-4e1f-8a6c-2d9e4b7f1a3c"}, {id: AKIA2024REPORTQ3}]}
pre_run:
  - command: 'python3 ${ASSAY_TASK_DIR}/ordinary.py > /dev/null'
agent: {type: command, command: 'python3 ${ASSAY_TASK_DIR}/ordinary.py'}
success_criteria:
  - {type: run_command, command: 'cat ordinary.txt'}
""")  # fmt: skip
    result = api.run([str(task)], run_dir=str(tmp_path / "runs"), keep_sandboxes=True)
    files = files_of(result.run_dir)
    assert any(name.endswith("sandbox/ordinary.txt") for name in files)
    assert sum(len(data) for data in files.values()) > 200_000
    redacted = {name: data.count(b"[redacted:") for name, data in files.items()}
    assert {name: count for name, count in redacted.items() if count} == {}
    assert result.secret_findings == []
