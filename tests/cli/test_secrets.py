"""No secret leaves through a report: agents get only the environment they are meant to have,
every known secret value is redacted from every file and printed line, and the secret scan
fails a run folder that holds one. The command line in-process (one real process for what
a terminal shows), real files, a real HTTP server."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from assay.sandbox.environment import environment_names
from tests.cli.test_run import assay as run_assay
from tests.cli.test_run import assay_process as run_assay_process
from tests.helpers import write
from tests.openai_server import Fault, scripted_server

KEY = "sk-proj-T3stKey9Abc4Def7Ghi2Jkl5Mno8"  # the user's OpenAI key in the shell
GH = "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3s9"  # another credential of the user
TASK_TOKEN = "task-file-deploy-token-5521"  # a secret written in agent.env
LLM_KEY = "llm-endpoint-credential-80417"  # in a variable only api_key_env names
SECRETS = (KEY, GH, TASK_TOKEN, LLM_KEY)


def assay(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m assay ARGS`` with the user's OpenAI key and GitHub token in the shell."""
    secrets = {"OPENAI_API_KEY": KEY, "GITHUB_TOKEN": GH, **(env or {})}
    return run_assay(*args, cwd=cwd, env=secrets)


def assay_process(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """:func:`assay` in a real ``python -m assay`` process (what a terminal or CI log shows)."""
    secrets = {"OPENAI_API_KEY": KEY, "GITHUB_TOKEN": GH, **(env or {})}
    return run_assay_process(*args, cwd=cwd, env=secrets)


def files_of(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def assert_nowhere(done: subprocess.CompletedProcess[str], *places: Path) -> None:
    """No secret in any file under ``places``, in stdout or in stderr; JSON files parse."""
    for secret in SECRETS:
        assert secret not in done.stdout and secret not in done.stderr, secret
        for place in places:
            for path in files_of(place) if place.is_dir() else [place]:
                data = path.read_bytes()
                assert secret.encode() not in data, (secret, path)
                if path.suffix == ".json":
                    json.loads(data)
                if path.suffix == ".jsonl":
                    [json.loads(line) for line in data.splitlines()]


def latest(cwd: Path) -> Path:
    return (cwd / "runs" / "latest").resolve()


def task_json(run_dir: Path, *parts: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir.joinpath(*parts) / "00" / "task.json").read_text())
    return data


WITHHELD = """\
task_id: withheld
description: every program of the row runs without the user's secrets
agent:
  type: command
  command: 'echo "${OPENAI_API_KEY:-absent} ${GITHUB_TOKEN:-absent} $ASSAY_TASK_ID"'
pre_run:
  - command: 'test -z "$OPENAI_API_KEY$GITHUB_TOKEN$MY_LLM_CREDENTIAL"'
post_run:
  - command: 'test -z "$OPENAI_API_KEY$GITHUB_TOKEN$MY_LLM_CREDENTIAL"'
initial_prompt: go
success_criteria:
  - type: response_match
    description: the agent saw no secret
    expected: absent absent withheld
    match: exact
  - type: run_command
    description: nor did a command criterion
    command: 'test -z "$OPENAI_API_KEY$GITHUB_TOKEN$MY_LLM_CREDENTIAL" && test -n "$PATH"'
"""


def test_secrets_are_withheld_from_the_agent_pre_run_post_run_and_criteria(
    tmp_path: Path,
) -> None:
    write(tmp_path / "withheld.yaml", WITHHELD)
    done = assay("run", "withheld.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    result = task_json(latest(tmp_path), "default", "withheld")
    assert result["final_status"] == "SUCCESS"
    assert [r["exit_code"] for r in result["pre_run_results"] + result["post_run_results"]] == [
        0,
        0,
    ]
    assert_nowhere(done, latest(tmp_path))


def test_a_variable_named_by_api_key_env_is_withheld_whatever_its_name(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", """\
task_id: named
description: the credential of an llm endpoint named by api_key_env
agent: {type: llm, model: mock/echo, api_key_env: MY_LLM_CREDENTIAL}
initial_prompt: go
pre_run:
  - command: 'test -z "$MY_LLM_CREDENTIAL"'
success_criteria:
  - {type: run_command, description: withheld, command: 'test -z "$MY_LLM_CREDENTIAL"'}
""")  # fmt: skip
    done = assay("run", "t.yaml", cwd=tmp_path, env={"MY_LLM_CREDENTIAL": LLM_KEY})
    assert done.returncode == 0, done.stdout + done.stderr
    assert task_json(latest(tmp_path), "default", "named")["final_status"] == "SUCCESS"


LEAKY = """\
task_id: leaky
description: an agent given the keys on purpose that echoes them everywhere it can
agent:
  type: command
  env_passthrough: [OPENAI_API_KEY]
  env: {DEPLOY_TOKEN: "%(task_token)s"}
  command: |
    echo "stdout $OPENAI_API_KEY $GITHUB_TOKEN $DEPLOY_TOKEN"
    echo "stderr $OPENAI_API_KEY $GITHUB_TOKEN $DEPLOY_TOKEN" >&2
    printf '{"key": "%%s", "n": 1}\\n' "$OPENAI_API_KEY" > out.json
    echo "$GITHUB_TOKEN" > token.txt
    exit "${ASSAY_ROW_ID#exit}"
sandbox:
  docker:
    image: coder-eval-agent:0.12.16
    env_passthrough_extra: [GITHUB_TOKEN]
dataset:
  rows:
    - {id: exit0}
    - {id: exit1}
pre_run:
  - command: 'echo "pre $OPENAI_API_KEY"'
post_run:
  - command: 'echo "post $GITHUB_TOKEN" >&2'
initial_prompt: 'row ${row.id}'
success_criteria:
  - type: run_command
    description: a command criterion prints the file it reads, and sees the raw key
    command: 'cat out.json token.txt'
    expected_stdout: 'sk-proj-T3st.*\\n.*ghp_R4nd0m'
    stdout_match: regex
  - type: file_check
    description: the file holds the key as the agent wrote it
    path: out.json
    includes: ['"key": "%(key)s"']
  - type: response_match
    description: the response holds the key
    expected: "%(key)s"
    match: contains
"""


def test_a_key_passed_on_purpose_reaches_the_agent_and_no_report(tmp_path: Path) -> None:
    write(tmp_path / "leaky.yaml", LEAKY % {"task_token": TASK_TOKEN, "key": KEY})
    junit = tmp_path / "out" / "junit.xml"
    done = assay("run", "leaky.yaml", "--keep-sandboxes", "--junit-xml", str(junit), cwd=tmp_path)
    run_dir = latest(tmp_path)
    ok = task_json(run_dir, "default", "leaky", "exit0")
    failed = task_json(run_dir, "default", "leaky", "exit1")
    # grading saw the raw values: every criterion of the exit-0 row passed
    assert ok["final_status"] == "SUCCESS", ok["success_criteria_results"]
    assert failed["final_status"] == "ERROR"
    summary = json.loads((run_dir / "run.json").read_text())
    assert summary["secret_findings"] == []
    # every place the values went says which secret stood there
    response = (run_dir / "default/leaky/exit0/00/response.txt").read_text()
    assert response == ("stdout [redacted:OPENAI_API_KEY] [redacted:GITHUB_TOKEN] "
                        "[redacted:DEPLOY_TOKEN]\n")  # fmt: skip
    assert "stderr [redacted:OPENAI_API_KEY]" in failed["error_message"]
    assert "stderr [redacted:OPENAI_API_KEY]" in failed["agent"]["stderr_tail"]
    assert ok["pre_run_results"][0]["stdout"] == "pre [redacted:OPENAI_API_KEY]\n"
    assert ok["post_run_results"][0]["stderr"] == "post [redacted:GITHUB_TOKEN]\n"
    assert "[redacted:OPENAI_API_KEY]" in ok["success_criteria_results"][0]["details"]
    assert ok["task_config"]["resolved"]["agent"]["env"] == {
        "DEPLOY_TOKEN": "[redacted:DEPLOY_TOKEN]"
    }
    kept = run_dir / "default/leaky/exit0/00/sandbox"
    assert json.loads((kept / "out.json").read_text())["key"] == "[redacted:OPENAI_API_KEY]"
    assert "[redacted:OPENAI_API_KEY]" in (run_dir / "default/leaky/exit1/00/task.log").read_text()
    assert "[redacted:OPENAI_API_KEY]" in junit.read_text()
    assert "sandbox.docker.image: used only by sandbox.driver: docker" in done.stderr
    assert_nowhere(done, run_dir, junit)
    check = assay("report", "--check-secrets", str(run_dir), cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "no secret found in" in check.stdout


MOCK_SCRIPT = """\
replies:
  - match: "call a tool"
    reply: '{"tool": "http_get", "arguments": {"header": "Authorization: Bearer %(key)s"}}'
  - match: "fail"
    error: "upstream refused the key %(gh)s"
default: "plain answer"
"""


def test_model_replies_tool_arguments_and_errors_are_redacted(tmp_path: Path) -> None:
    write(tmp_path / "script.yaml", MOCK_SCRIPT % {"key": KEY, "gh": GH})
    write(tmp_path / "tools.yaml", """\
task_id: tools
description: a scripted model whose tool call carries a key, and whose error quotes another
agent: {type: llm, model: mock/script.yaml, response_file: answer.json}
dataset:
  rows:
    - {id: tool, ask: call a tool}
    - {id: err, ask: fail now}
initial_prompt: '${row.ask}'
success_criteria:
  - {type: file_check, description: the tool call, path: answer.json,
     includes: ["Bearer sk-proj-T3st"]}
""")  # fmt: skip
    done = assay("run", "tools.yaml", "--cache", cwd=tmp_path)
    run_dir = latest(tmp_path)
    tool = task_json(run_dir, "default", "tools", "tool")
    err = task_json(run_dir, "default", "tools", "err")
    assert tool["final_status"] == "SUCCESS", tool["success_criteria_results"]
    assert err["final_status"] == "ERROR"
    assert err["error_message"].endswith("upstream refused the key [redacted:GITHUB_TOKEN]")
    assert "Bearer [redacted:OPENAI_API_KEY]" in (run_dir / "default/tools/tool/00/response.txt"
                                                   ).read_text()  # fmt: skip
    assert_nowhere(done, run_dir, tmp_path / ".assay")


def test_retry_lines_printed_and_an_answer_holding_a_secret_is_never_cached(
    tmp_path: Path,
) -> None:
    calls = []

    def reply(body: dict[str, Any]) -> str | Fault:
        calls.append(body)
        if len(calls) == 1:  # a proxy that quotes the credential in its error
            error = {"error": {"message": f"bad gateway for key {LLM_KEY}"}}
            return Fault(500, body=json.dumps(error))
        return f"your key is {LLM_KEY}"

    with scripted_server(reply) as server:
        write(tmp_path / "t.yaml", f"""\
task_id: endpoint
description: an OpenAI-compatible endpoint that echoes its credential
agent: {{type: llm, model: openai/echo, base_url: "{server.base_url}",
         api_key_env: MY_LLM_CREDENTIAL}}
initial_prompt: hello
success_criteria:
  - {{type: response_match, description: the raw answer, expected: "{LLM_KEY}", match: contains}}
""")  # fmt: skip
        # a real process: the stderr a terminal or CI log gets from `python -m assay`
        done = assay_process("run", "t.yaml", "--cache", cwd=tmp_path,
                             env={"MY_LLM_CREDENTIAL": LLM_KEY})  # fmt: skip
        first = latest(tmp_path)
        # the same run again asks the model and grades what it said, not a redacted replay
        # that fails the criterion (found by a break-test: PASSED, then FAILED from the cache)
        again = assay_process("run", "t.yaml", "--cache", cwd=tmp_path,
                              env={"MY_LLM_CREDENTIAL": LLM_KEY})  # fmt: skip
        assert again.returncode == 0, again.stdout + again.stderr
        assert len(calls) == 3
    assert done.returncode == 0, done.stdout + done.stderr
    assert "attempt 1 failed" in done.stderr and "[redacted:MY_LLM_CREDENTIAL]" in done.stderr
    result = task_json(first, "default", "endpoint")
    assert result["agent"]["attempts"][0]["error"].endswith("[redacted:MY_LLM_CREDENTIAL]")
    assert_nowhere(done, first, tmp_path / ".assay")
    assert_nowhere(again, latest(tmp_path), tmp_path / ".assay")
    cache = sqlite3.connect(tmp_path / ".assay" / "cache.db")
    assert cache.execute("SELECT text FROM responses").fetchall() == []


def test_execute_then_evaluate_keeps_the_rule_and_the_redaction(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", """\
task_id: staged
description: graded later by assay evaluate
agent: {type: command, command: 'echo "$GITHUB_TOKEN" > token.txt; echo ok'}
sandbox: {docker: {env_passthrough: [GITHUB_TOKEN]}}
initial_prompt: go
success_criteria:
  - {type: run_command, description: sees the key, command: 'echo "$GITHUB_TOKEN" $OPENAI_API_KEY',
     expected_stdout: '^ghp_R4nd0m\\S+$', stdout_match: regex}
""")  # fmt: skip
    executed = assay("execute", "t.yaml", cwd=tmp_path)
    assert executed.returncode == 0, executed.stdout + executed.stderr
    run_dir = latest(tmp_path)
    assert (
        run_dir / "default/staged/00/sandbox/token.txt"
    ).read_text() == "[redacted:GITHUB_TOKEN]\n"
    done = assay("evaluate", str(run_dir), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    result = task_json(run_dir, "default", "staged")
    assert result["final_status"] == "SUCCESS"  # the criterion saw GITHUB_TOKEN, not OPENAI's
    assert "Stdout: [redacted:GITHUB_TOKEN]" in result["success_criteria_results"][0]["details"]
    assert_nowhere(executed, run_dir)
    assert_nowhere(done, run_dir)


def finished_run(tmp_path: Path) -> Path:
    write(tmp_path / "t.yaml", """\
task_id: clean
description: a clean run
agent: {type: command, command: 'printf "line one\\nfine\\n"'}
initial_prompt: go
success_criteria:
  - {type: response_match, description: ok, expected: fine, match: contains}
""")  # fmt: skip
    done = assay("run", "t.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    return latest(tmp_path)


def test_a_planted_key_shaped_string_fails_the_scan_naming_file_and_line(tmp_path: Path) -> None:
    run_dir = finished_run(tmp_path)
    planted = "AKIA2E0A8F3B244C9986"
    response = run_dir / "default/clean/00/response.txt"
    response.write_text(f"line one\nsee {planted}\n")
    check = assay("report", "--check-secrets", str(run_dir), cwd=tmp_path)
    assert check.returncode == 1
    assert ("secret found: default/clean/00/response.txt:2: a string shaped like an AWS access "
            "key id") in check.stderr  # fmt: skip
    assert "1 secret found in" in check.stderr and planted not in check.stdout + check.stderr
    rebuilt = assay("report", str(run_dir), cwd=tmp_path)
    assert rebuilt.returncode == 1
    summary = json.loads((run_dir / "run.json").read_text())
    assert summary["exit_code"] == 1
    assert summary["secret_findings"] == [
        {"file": "default/clean/00/response.txt", "line": 2,
         "kind": "a string shaped like an AWS access key id"},
    ]  # fmt: skip
    assert "## Secrets found" in (run_dir / "run.md").read_text()


def test_a_known_value_planted_later_fails_the_scan(tmp_path: Path) -> None:
    run_dir = finished_run(tmp_path)
    write(run_dir / "notes" / "copied.log", f"one\ntwo\n{LLM_KEY}\n")
    check = assay("report", "--check-secrets", str(run_dir), cwd=tmp_path,
                  env={"MY_SERVICE_TOKEN": LLM_KEY})  # fmt: skip
    assert check.returncode == 1
    assert "notes/copied.log:3: the value of MY_SERVICE_TOKEN" in check.stderr


def test_a_key_assay_was_never_told_about_is_redacted_by_its_shape(tmp_path: Path) -> None:
    """Issue 28 item 1: the writer redacts a token by its shape, so the run stays green and
    the scan finds nothing (before, the key was written and the scan failed the run)."""
    write(tmp_path / "t.yaml", """\
task_id: shaped
description: an agent prints a key assay was never told about
agent: {type: command, command: 'echo "found hf_aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3"'}
initial_prompt: go
success_criteria:
  - {type: response_match, description: ok, expected: found, match: contains}
""")  # fmt: skip
    done = assay("run", "t.yaml", cwd=tmp_path)
    run_dir = latest(tmp_path)
    assert task_json(run_dir, "default", "shaped")["final_status"] == "SUCCESS"
    response = (run_dir / "default" / "shaped" / "00" / "response.txt").read_text()
    assert response == "found [redacted:huggingface-token]\n"
    assert done.returncode == 0 and "secret found" not in done.stderr, done.stderr
    assert json.loads((run_dir / "run.json").read_text())["exit_code"] == 0


def test_check_secrets_refuses_what_is_not_a_run(tmp_path: Path) -> None:
    done = assay("report", "--check-secrets", str(tmp_path / "nope"), cwd=tmp_path)
    assert done.returncode == 2 and "run directory not found" in done.stderr
    run_dir = finished_run(tmp_path)
    done = assay("report", "--check-secrets", str(run_dir), "--junit-xml", "j.xml", cwd=tmp_path)
    assert done.returncode == 2
    assert "--check-secrets scans the run folder and writes nothing; drop --junit-xml and " in (
        done.stderr
    )
    done = assay("report", "--check-secrets", str(run_dir), "--html", cwd=tmp_path)
    assert done.returncode == 2 and "drop --junit-xml and --html" in done.stderr
    assert not (run_dir / "report.html").exists()


def test_plan_shows_variable_names_and_warns_about_short_secrets(tmp_path: Path) -> None:
    write(tmp_path / "withheld.yaml", WITHHELD)
    write(tmp_path / "e.yaml", """\
experiment_id: pass-or-not
description: one variant passes the key on purpose
variants:
  - variant_id: plain
  - variant_id: given
    agent: {env_passthrough: [OPENAI_API_KEY, NOT_SET_TOKEN]}
""")  # fmt: skip
    env = {"SHORT_TOKEN": "abc"}
    text = assay("plan", "withheld.yaml", "-e", "e.yaml", cwd=tmp_path, env=env)
    assert text.returncode == 0, text.stderr
    assert ("warning: the secret in SHORT_TOKEN is shorter than 8 characters, so it is not "
            "redacted from the files assay writes or what it prints") in text.stderr  # fmt: skip
    lines = text.stdout.splitlines()
    environment = next(line for line in lines if line.startswith("  environment: receives"))
    assert "PATH" in environment and "OPENAI_API_KEY" not in environment
    assert "ASSAY_TASK_ID" in environment and "ASSAY_PROMPT" in environment
    # with what this machine's own environment withholds (CI's: a database URL's password)
    host = set(environment_names(os.environ).withheld)
    withheld = ", ".join(sorted({"GITHUB_TOKEN", "OPENAI_API_KEY", "SHORT_TOKEN"} | host))
    assert f"  secrets: withheld {withheld}" in lines
    withheld = ", ".join(sorted({"GITHUB_TOKEN", "SHORT_TOKEN"} | host - {"OPENAI_API_KEY"}))
    assert (f"    secrets: withheld {withheld}; passed on purpose NOT_SET_TOKEN "
            "(not set), OPENAI_API_KEY") in lines  # fmt: skip
    data = json.loads(assay("plan", "withheld.yaml", "-e", "e.yaml", "--json", cwd=tmp_path,
                            env=env).stdout)  # fmt: skip
    plain, given = (v["environment"] for v in data["tasks"][0]["variants"])
    assert "OPENAI_API_KEY" in plain["withheld"] and "OPENAI_API_KEY" not in plain["host"]
    assert "OPENAI_API_KEY" in given["host"] and given["not_set"] == ["NOT_SET_TOKEN"]
    assert given["agent"] == ["ASSAY_PROMPT", "ASSAY_PROMPT_FILE"]
    assert KEY not in text.stdout + text.stderr


def test_a_passthrough_entry_that_is_no_variable_name_is_refused(tmp_path: Path) -> None:
    text = WITHHELD.replace("  type: command\n", "  type: command\n  env_passthrough: [A=B]\n")
    write(tmp_path / "t.yaml", text)
    done = assay("plan", "t.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert "t.yaml:5: agent.env_passthrough: 'A=B' is not an environment variable name" in (
        done.stderr
    )


def test_a_row_value_equal_to_a_secret_is_redacted_and_not_taken_for_changed_data(
    tmp_path: Path,
) -> None:
    write(tmp_path / "t.yaml", "task_id: word\ndescription: d\n"
          "initial_prompt: 'Classify: ${row.text}'\n"
          "agent: {type: command, command: 'echo positive'}\n"
          f"dataset: {{rows: [{{id: a, text: 'key {GH} here'}}, {{id: b, text: plain}}]}}\n"
          "success_criteria:\n"
          "  - {type: response_match, expected: positive, match: contains}\n")  # fmt: skip
    done = assay("run", "t.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = latest(tmp_path)
    assert GH not in (run_dir / "default/word/a/00/task.json").read_text()  # redacted
    # the finished row's recorded hash is of the row it ran, not of its redacted copy
    for again in (("report", str(run_dir)), ("evaluate", str(run_dir))):
        checked = assay(*again, cwd=tmp_path)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert "differs from what the run recorded" not in checked.stderr
