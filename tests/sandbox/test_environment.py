"""The environment a row's programs get: the host's without its secrets, unless passed on
purpose; and a kept sandbox's files redacted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assay.results.io import Writer
from assay.results.secrets import Redactor
from assay.sandbox.environment import agent_environment, environment_names
from assay.sandbox.tempdir import Sandbox
from tests.helpers import write

HOST = {
    "PATH": "/bin",
    "HOME": "/home/u",
    "OPENAI_API_KEY": "sk-one",
    "GITHUB_TOKEN": "gh-two",
    "DB_PASSWORD": "three",
    "MY_SECRET_THING": "four",
    "AWS_ACCESS_KEY_ID": "AKIA-five",
    "MY_LLM": "six",
    "PGPASSWORD": "seven",
    "MYSQL_PWD": "eight",
    "SENTRY_DSN": "https://k@sentry.example/1",
    "GITLAB_PAT": "nine",
    "SERVICE_APIKEY": "ten",
    "TOKEN_FOR_CI": "eleven",
    "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "4096",  # a setting, not a credential
    "TOKENIZERS_PARALLELISM": "false",
}


def test_secrets_are_withheld_and_everything_else_passes() -> None:
    env = agent_environment(HOST)
    assert env == {"PATH": "/bin", "HOME": "/home/u", "MY_LLM": "six",
                   "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "4096",
                   "TOKENIZERS_PARALLELISM": "false"}  # fmt: skip


def test_the_folders_assay_ran_in_are_not_a_programs() -> None:
    host = {**HOST, "PWD": "/home/u/project", "OLDPWD": "/home/u"}
    assert agent_environment(host) == agent_environment(HOST)
    names = environment_names(host)
    assert "PWD" not in names.received and "PWD" not in names.withheld  # not a secret either


def test_passthrough_and_hidden_names() -> None:
    env = agent_environment(HOST, passthrough={"GITHUB_TOKEN", "NOT_SET_TOKEN"}, hidden={"MY_LLM"})
    assert env == {"PATH": "/bin", "HOME": "/home/u", "GITHUB_TOKEN": "gh-two",
                   "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "4096",
                   "TOKENIZERS_PARALLELISM": "false"}  # fmt: skip
    names = environment_names(HOST, passthrough={"GITHUB_TOKEN", "NOT_SET_TOKEN"},
                              hidden={"MY_LLM"})  # fmt: skip
    assert names.received == ["CLAUDE_CODE_MAX_OUTPUT_TOKENS", "GITHUB_TOKEN", "HOME", "PATH",
                              "TOKENIZERS_PARALLELISM"]  # fmt: skip
    assert names.withheld == ["AWS_ACCESS_KEY_ID", "DB_PASSWORD", "GITLAB_PAT", "MYSQL_PWD",
                              "MY_LLM", "MY_SECRET_THING", "OPENAI_API_KEY", "PGPASSWORD",
                              "SENTRY_DSN", "SERVICE_APIKEY", "TOKEN_FOR_CI"]  # fmt: skip
    assert names.passed_on_purpose == ["GITHUB_TOKEN", "NOT_SET_TOKEN"]
    assert names.missing == ["NOT_SET_TOKEN"]


def test_a_kept_sandbox_is_redacted_in_place_without_following_links(tmp_path: Path) -> None:
    key = "sk-proj-kept-sandbox-value-77"
    redactor = Redactor()
    redactor.add("OPENAI_API_KEY", key)
    outside = write(tmp_path / "outside.txt", key)
    root = tmp_path / "sandbox"
    write(root / "out.txt", f"the key is {key}\n")
    (root / "bin").mkdir()
    (root / "bin" / "blob").write_bytes(b"\x00\xff" + key.encode() + b"\x00")
    write(root / "clean.txt", "nothing here")
    (root / "link.txt").symlink_to(outside)
    changed = Sandbox(root).redact(Writer(redactor))
    assert sorted(p.name for p in changed) == ["blob", "out.txt"]
    assert (root / "out.txt").read_text() == "the key is [redacted:OPENAI_API_KEY]\n"
    assert (root / "bin" / "blob").read_bytes() == b"\x00\xff[redacted:OPENAI_API_KEY]\x00"
    assert outside.read_text() == key  # never rewritten through the link


def test_every_file_is_redacted_whatever_its_times_and_a_hard_link_is_not_written_through(
    tmp_path: Path,
) -> None:
    """Field reports: a file the row dated back (``touch -d``, ``cp -p``) or moved in with its
    folder (``mv``) was left unredacted, and a file it hard-linked from outside the sandbox
    was rewritten there, outside the run folder."""
    key = "sk-proj-template-file-value-12"
    redactor = Redactor()
    redactor.add("OPENAI_API_KEY", key)
    root = tmp_path / "sandbox"
    dated = write(root / "dated.txt", f"{key}\n")
    os.utime(dated, (1_000_000, 1_000_000))  # the row's `touch -d 1970-01-12 dated.txt`
    moved = write(tmp_path / "olddir" / "inner.txt", key)
    os.rename(moved.parent, root / "moved")  # the row's `mv /elsewhere/olddir moved`
    outside = write(tmp_path / "outside.txt", key)
    os.link(outside, root / "linked.txt")  # the row's `ln /elsewhere/outside.txt linked.txt`
    dated.chmod(0o640)
    changed = Sandbox(root).redact(Writer(redactor))
    assert sorted(p.name for p in changed) == ["dated.txt", "inner.txt", "linked.txt"]
    for path in changed:
        assert path.read_text().startswith("[redacted:OPENAI_API_KEY]")
    assert outside.read_text() == key  # the other name of the linked file: not rewritten
    assert dated.stat().st_mtime == 1_000_000 and dated.stat().st_mode & 0o777 == 0o640


def test_a_coding_agent_passes_names_on_purpose_and_withholds_its_endpoint_key() -> None:
    from assay.api.tasks import TaskDefinition
    from assay.orchestration.running.environment import row_env

    task = TaskDefinition.model_validate({
        "task_id": "t", "description": "d", "initial_prompt": "p",
        "agent": {"type": "claude-code", "model": "openai/gpt-4.1", "api_key_env": "MY_LLM",
                  "env_passthrough": ["GITHUB_TOKEN"]},
        "success_criteria": [{"type": "file_exists", "description": "d", "path": "x"}],
    })  # fmt: skip
    assert task.env_passthrough == {"GITHUB_TOKEN"} and task.credential_variables == {"MY_LLM"}
    env = row_env(HOST, task, variant_id="v", replicate=0, sandbox=None, task_dir=None)
    assert {"GITHUB_TOKEN", "PATH"} <= set(env) and not {"MY_LLM", "OPENAI_API_KEY"} & set(env)


STALE = """\
task_id: stale
description: d
initial_prompt: go
agent:
  type: command
  command: >-
    printf 'def f():\\n    return 1\\n' > mod.py &&
    python3 -c 'import mod; print(mod.f())' &&
    printf 'def f():\\n    return 2\\n' > mod.py
success_criteria:
  - {type: run_command, command: "python3 -c 'import mod; print(mod.f())'",
     expected_stdout: "2", description: the module as rewritten}
"""


def test_a_rows_python_leaves_no_bytecode_to_go_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module rewritten within the same second at the same size: bytecode the agent's
    Python left behind would still pass Python's check (source mtime in whole seconds, and
    size), so the criterion would run the old code. Rows get PYTHONDONTWRITEBYTECODE=1
    unless the host sets it."""
    import assay
    from assay.api.tasks import TaskDefinition
    from assay.orchestration.running.environment import row_env

    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    task = write(tmp_path / "t.yaml", STALE)
    result = assay.run(str(task), run_dir=str(tmp_path / "runs"), keep_sandboxes=True)
    assert result.exit_code == 0
    assert not list((tmp_path / "runs").rglob("__pycache__"))
    definition = TaskDefinition.model_validate({
        "task_id": "t", "description": "d", "agent": {"type": "none"},
        "success_criteria": [{"type": "file_exists", "path": "x", "description": "d"}],
    })  # fmt: skip
    made = row_env({"PATH": "/bin"}, definition, variant_id="default", replicate=0,
                   sandbox=None, task_dir=None)  # fmt: skip
    assert made["PYTHONDONTWRITEBYTECODE"] == "1"
    kept = row_env({"PATH": "/bin", "PYTHONDONTWRITEBYTECODE": "x"}, definition,
                   variant_id="default", replicate=0, sandbox=None, task_dir=None)  # fmt: skip
    assert kept["PYTHONDONTWRITEBYTECODE"] == "x"


def _kept_sandbox(tmp_path: Path, key: str) -> tuple[Redactor, Path]:
    """A redactor that knows ``key`` (as ``OPENAI_API_KEY``), and an empty sandbox folder."""
    redactor = Redactor()
    redactor.add("OPENAI_API_KEY", key)
    root = tmp_path / "sandbox"
    root.mkdir()
    return redactor, root


def test_a_kept_sparse_file_is_redacted_in_its_data_and_keeps_its_holes(tmp_path: Path) -> None:
    """Field report: each `truncate -s 1000M` file a row left cost ~50 s of reading zeros
    when its sandbox was kept. The oracle: the whole file redacted as one buffer."""
    key = "sk-proj-kept-sparse-value-31"
    redactor, root = _kept_sandbox(tmp_path, key)
    path = root / "big.bin"
    with path.open("wb") as handle:
        handle.write(f"head {key}\n".encode())
        handle.seek(16 << 20)
        handle.write(f"middle {key} and {key}\n".encode())
        handle.truncate(32 << 20)
    os.utime(path, (1_000_000, 1_000_000))
    empty = root / "hole.bin"
    with empty.open("wb") as handle:
        handle.truncate(1 << 30)
    expected = Writer(redactor).redact_bytes(path.read_bytes())
    assert Sandbox(root).redact(Writer(redactor)) == [path]
    assert path.read_bytes() == expected
    assert path.stat().st_blocks * 512 < 1 << 20 and empty.stat().st_blocks == 0  # still holes
    assert path.stat().st_mtime == 1_000_000


def test_a_kept_copy_of_a_sandbox_keeps_a_sparse_files_holes(tmp_path: Path) -> None:
    """A coding agent's sandbox is kept as a copy: `shutil.copy2` wrote each hole out as
    zeros (1 GiB of disk for a `truncate -s 1G` file)."""
    root = tmp_path / "sandbox"
    root.mkdir()
    with (root / "big.bin").open("wb") as handle:
        handle.write(b"start")
        handle.seek(24 << 20)
        handle.write(b"middle")
        handle.truncate(1 << 30)
    write(root / "dense.txt", "plain\n" * 1000)
    os.utime(root / "big.bin", (1_000_000, 1_000_000))
    copy = Sandbox(root).copy_to(tmp_path / "kept").root
    big = copy / "big.bin"
    assert big.stat().st_size == 1 << 30 and big.stat().st_blocks * 512 < 1 << 20
    assert big.stat().st_mtime == 1_000_000
    with big.open("rb") as handle:
        assert handle.read(5) == b"start"
        handle.seek(24 << 20)
        assert handle.read(6) == b"middle"
    assert (copy / "dense.txt").read_text() == "plain\n" * 1000


def test_a_named_pipe_given_to_the_sparse_copy_is_refused_not_opened(tmp_path: Path) -> None:
    """Opening a FIFO for reading blocks until a writer comes: the copy refuses it as
    ``shutil.copy2`` does (a template folder's FIFO), never hangs."""
    import shutil

    from assay.results.sparse import copy_file

    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(shutil.SpecialFileError, match="named pipe"):
        copy_file(tmp_path / "pipe", tmp_path / "copy")
    assert not (tmp_path / "copy").exists()


@pytest.mark.parametrize("at", [0, (1 << 20) - 10, (1 << 20) - (1 << 16) - 5, (3 << 20) - 40])
def test_a_large_kept_file_is_redacted_wherever_its_secret_falls(tmp_path: Path, at: int) -> None:
    """A large file is first looked at in overlapping blocks (its memory is spent only when
    it changes): a secret across any cut of them is still found. The oracle: the whole file
    redacted as one buffer."""
    key = "sk-proj-kept-large-value-57"
    redactor = Redactor()
    redactor.add("OPENAI_API_KEY", key)
    root = tmp_path / "sandbox"
    data = bytearray(b"x" * (3 << 20))
    data[at : at + len(key)] = key.encode()
    path = root / "big.txt"
    root.mkdir()
    path.write_bytes(bytes(data))
    write(root / "clean.txt", "y" * (3 << 20))
    expected = Writer(redactor).redact_bytes(bytes(data))
    assert Sandbox(root).redact(Writer(redactor)) == [path]
    assert path.read_bytes() == expected and key.encode() not in expected


def test_a_url_with_a_password_is_withheld_whatever_its_variable_is_called() -> None:
    """Found by a helper: ``ASSAY_TEST_POSTGRES_URL`` (a name that does not look secret)
    reached every row with its password, which assay itself redacted everywhere it wrote
    it; a row wrote it reversed and base64-encoded, past the redaction and the scan."""
    host = {**HOST, "ASSAY_TEST_POSTGRES_URL": "postgresql+psycopg://u:pw-x@127.0.0.1/db",
            "GIT_REMOTE_URL": "https://ghp_Z9xtokenAAAA1111@github.com/org/repo.git",
            "BLOB_URL": "https://acct.blob.core.windows.net/c/f?sv=2022-11-02&sig=SIGxyz",
            "HTTP_PROXY": "http://proxy.example:3128",
            "DOCS": "https://example.org/a@b"}  # fmt: skip
    env = agent_environment(host)
    # the redactor's own rule: a token as the user, a query's secret (found by a helper)
    assert not {"ASSAY_TEST_POSTGRES_URL", "GIT_REMOTE_URL", "BLOB_URL"} & set(env)
    assert env["HTTP_PROXY"] == "http://proxy.example:3128"  # no credentials: passed
    assert env["DOCS"] == "https://example.org/a@b"
    names = environment_names(host)
    assert "ASSAY_TEST_POSTGRES_URL" in names.withheld  # `assay plan` lists it
    passed = agent_environment(host, passthrough=["ASSAY_TEST_POSTGRES_URL"])
    assert passed["ASSAY_TEST_POSTGRES_URL"].endswith("@127.0.0.1/db")  # on purpose


@pytest.mark.parametrize("before", [1, 5, 27])
def test_a_kept_files_secret_across_a_block_cut_is_redacted(tmp_path: Path, before: int) -> None:
    """The kept sandbox reads a file in blocks to see whether redaction changes it: a
    secret that starts ``before`` bytes ahead of the first cut is whole in the next block's
    overlap (the oracle: the whole file redacted as one buffer)."""
    from assay.results.secret_scan import SCAN_BLOCK, SCAN_OVERLAP

    key = "sk-proj-across-the-cut-value-42"
    redactor, root = _kept_sandbox(tmp_path, key)
    path = root / "data.txt"
    cut = SCAN_BLOCK - SCAN_OVERLAP
    path.write_bytes(b"a" * (cut - before) + key.encode() + b"b" * (2 * SCAN_BLOCK))
    expected = Writer(redactor).redact_bytes(path.read_bytes())
    assert expected != path.read_bytes()
    assert Sandbox(root).redact(Writer(redactor)) == [path]
    assert path.read_bytes() == expected
