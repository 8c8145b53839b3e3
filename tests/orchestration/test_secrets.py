"""The secrets a run knows: the environment's (with the variables its tasks name as
credentials), secret-named agent.env entries of every agent that has them, a --store URL's
password; and the same read back from recorded rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.api.tasks import TaskDefinition
from assay.orchestration.loading.secrets import results_redactor, run_redactor
from assay.results.task_result import EvaluationResult, TaskConfigRecord


def definition(agent: dict[str, Any]) -> TaskDefinition:
    return TaskDefinition.model_validate({
        "task_id": "t", "description": "d", "initial_prompt": "p", "agent": agent,
        "success_criteria": [{"type": "file_exists", "description": "d", "path": "x"}],
    })  # fmt: skip


def test_run_redactor_gathers_every_kind_of_secret() -> None:
    tasks = [
        definition({"type": "command", "command": "x",
                    "env": {"DEPLOY_TOKEN": "deploy-token-value-1", "MODE": "plain-value-1"}}),
        definition({"type": "claude-code", "model": "openai/gpt-4.1", "api_key_env": "MY_LLM",
                    "env": {"CLI_SECRET": "cli-secret-value-22"}}),
    ]  # fmt: skip
    environ = {"MY_LLM": "endpoint-credential-3", "PATH": "/bin"}
    redactor = run_redactor(tasks, environ, store_url="postgresql://u:store-password-4@h/db")
    text = "deploy-token-value-1 plain-value-1 cli-secret-value-22 endpoint-credential-3 " \
           "store-password-4 /bin"  # fmt: skip
    assert redactor.redact(text) == (
        "[redacted:DEPLOY_TOKEN] plain-value-1 [redacted:CLI_SECRET] [redacted:MY_LLM] "
        "[redacted:ASSAY_STORE] /bin"
    )
    # a coding agent's per-row bridge keys: one pattern, known before any row runs
    assert redactor.names == {"DEPLOY_TOKEN", "CLI_SECRET", "MY_LLM", "ASSAY_BRIDGE_KEY"}
    key = "assay-row-" + "0123456789abcdef" * 2
    assert redactor.redact(f"key {key}.") == "key [redacted:ASSAY_BRIDGE_KEY]."
    plain = run_redactor(tasks[:1], environ)  # no agent that calls the bridge
    assert "ASSAY_BRIDGE_KEY" not in plain.names and key in plain.redact(key)


def test_secret_named_entries_of_an_agents_free_form_mappings_are_secrets() -> None:
    """A key in the task file's extra_body was written in clear into every task.json, while
    the same value given by -D was redacted (a platform engineer's break-test)."""
    task = definition({"type": "llm", "model": "openai/m", "api_key_env": "OPENAI_API_KEY",
                       "extra_body": {"api_key": "Wq4Er7Ty1Ui3Op6As9Df", "temperature_hint": 1,
                                      "metadata": {"auth_token": "Lk8Jh5Gf2Ds9Ap6Zx3Cv",
                                                   "team": "search-quality"}}})  # fmt: skip
    redactor = run_redactor([task], {})
    text = "Wq4Er7Ty1Ui3Op6As9Df Lk8Jh5Gf2Ds9Ap6Zx3Cv search-quality OPENAI_API_KEY openai/m"
    assert redactor.redact(text) == (
        "[redacted:api_key] [redacted:auth_token] search-quality OPENAI_API_KEY openai/m"
    )


def test_results_redactor_reads_the_recorded_configurations() -> None:
    resolved = definition({"type": "command", "command": "x",
                           "env": {"DEPLOY_TOKEN": "deploy-token-value-1",
                                   "OTHER_TOKEN": "[redacted:OTHER_TOKEN]"}}
                          ).model_dump(mode="json")  # fmt: skip
    resolved["qa"] = {"judge": {"model": "openai/x", "api_key_env": "JUDGE_CRED"}}
    row = EvaluationResult(task_id="t", agent_type="command", started_at="", completed_at="",
                           duration_seconds=0, final_status="SUCCESS",
                           task_config=TaskConfigRecord(resolved=resolved))  # fmt: skip
    redactor = results_redactor([row], {"JUDGE_CRED": "judge-credential-5"})
    assert redactor.redact("deploy-token-value-1 judge-credential-5 [redacted:OTHER_TOKEN]") == (
        "[redacted:DEPLOY_TOKEN] [redacted:JUDGE_CRED] [redacted:OTHER_TOKEN]"
    )


def test_results_redactor_knows_the_task_files_literal_secrets_and_the_bridge_keys(
    tmp_path: Path,
) -> None:
    """A field report: ``assay report --check-secrets`` and ``assay evaluate`` did not know an
    ``agent.env`` secret written in the task file (recorded as its marker) or a row's bridge
    key, so a kept sandbox file holding one was called clean and a regrade copied it out."""
    task_file = tmp_path / "t.yaml"
    task_file.write_text("agent:\n  type: command\n  command: x\n  env:\n"
                         "    X_TOKEN: xtok-ZZZZ9999yyyy8888\n    FROM_ENV: ${HOME}\n")  # fmt: skip
    resolved = definition(
        {"type": "command", "command": "x", "env": {"X_TOKEN": "[redacted:X_TOKEN]"}}
    ).model_dump(mode="json")
    row = EvaluationResult(task_id="t", agent_type="command", started_at="", completed_at="",
                           duration_seconds=0, final_status="SUCCESS",
                           task_config=TaskConfigRecord(resolved=resolved,
                                                        source_file=str(task_file)))  # fmt: skip
    key = "assay-row-" + "0123456789abcdef" * 2
    redactor = results_redactor([row], {})
    assert redactor.redact(f"xtok-ZZZZ9999yyyy8888 {key} ${{HOME}}") == (
        f"[redacted:X_TOKEN] {key} ${{HOME}}"  # a command agent: no bridge key, as in the run
    )
    coding = definition({"type": "claude-code", "model": "mock/x"}).model_dump(mode="json")
    bridged = row.model_copy(update={"task_config": TaskConfigRecord(resolved=coding)})
    assert results_redactor([row, bridged], {}).redact(key) == "[redacted:ASSAY_BRIDGE_KEY]"
    judged = dict(resolved, success_criteria=[{"type": "agent_judge", "description": "d"}])
    graded = row.model_copy(update={"task_config": TaskConfigRecord(resolved=judged)})
    assert results_redactor([graded], {}).redact(key) == "[redacted:ASSAY_BRIDGE_KEY]"
    task_file.unlink()  # the file gone: the recorded and the environment's secrets remain
    assert results_redactor([row], {}).redact("xtok-ZZZZ9999yyyy8888") == "xtok-ZZZZ9999yyyy8888"


def test_results_redactor_knows_an_experiments_variant_secrets(tmp_path: Path) -> None:
    """A field report: a literal ``agent.env`` secret of an experiment's variant (``-e``) was
    unknown to ``assay report --check-secrets`` and ``assay evaluate``."""
    from assay.results.io import PLAIN
    from assay.results.plan_record import PlanOptionsRecord, PlanRecord, write_plan

    experiment = tmp_path / "exp.yaml"
    experiment.write_text("experiment_id: e\nvariants:\n  - variant_id: a\n  - variant_id: b\n"
                          "    agent: {env: {V_TOKEN: vtok-QQQQ1111rrrr2222}}\n")  # fmt: skip
    write_plan(tmp_path, PlanRecord(files=[], criteria={}, work_items=0, planned={},
                                    options=PlanOptionsRecord(experiment=str(experiment))),
               writer=PLAIN)  # fmt: skip
    assert results_redactor([], {}, run_dir=tmp_path).redact("vtok-QQQQ1111rrrr2222") == (
        "[redacted:V_TOKEN]"
    )
    assert results_redactor([], {}).redact("vtok-QQQQ1111rrrr2222") == "vtok-QQQQ1111rrrr2222"
