"""Task files with criteria over what the agent did and with the sandbox drivers, as loaded and
planned: refusals at load time with their position, plugin paths one level too deep, the
driver chosen for each agent and the warning when a coding agent is not contained, gates on
skill_triggered's metrics, and read-only criteria graded after an agent crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.errors import TaskFileError
from assay.orchestration.loading.task_loader import load_task
from assay.orchestration.planning.containment import NOT_CONTAINED
from assay.orchestration.planning.plan import PlanOptions, build_plan
from assay.sandbox import cgroups
from tests.agents.coding import codex_path, run_assay
from tests.helpers import write

PLUGIN_SKILL = "---\nname: {name}\ndescription: d\n---\nbody\n"


def plan_warnings(path: Path) -> list[str]:
    return build_plan([path], PlanOptions()).warnings


def test_agent_none_refuses_transcript_criteria_at_its_position(tmp_path: Path) -> None:
    path = write(tmp_path / "t.yaml", "task_id: t\ndescription: d\nagent: {type: none}\n"
                 "success_criteria:\n  - {type: file_exists, path: a, description: d}\n"
                 "  - type: command_executed\n    command_pattern: make\n")  # fmt: skip
    with pytest.raises(TaskFileError) as error:
        load_task(path)
    assert (error.value.line, error.value.field) == (6, "success_criteria[1].type")
    assert error.value.message == (
        "criterion 'command_executed' reads what the agent did (its transcript), and agent "
        "type 'none' runs no agent"
    )
    assert error.value.hint == (
        "choose an agent that records a transcript (claude-code, codex, command, llm), or "
        "grade what is in the sandbox (file_check, json_check, run_command)"
    )


def test_unknown_skill_metric_is_a_load_error_and_yes_no_metrics_are_known(
    tmp_path: Path,
) -> None:
    task = ("task_id: t\ndescription: d\ninitial_prompt: '${{row.p}}'\n"
            "agent: {{type: claude-code, model: mock/echo}}\n"
            "dataset: {{rows: [{{id: a, p: x, e: s}}]}}\nsuccess_criteria:\n"
            "  - {{type: skill_triggered, skill_name: s, expected_skill: '${{row.e}}', "
            "suite_thresholds: {{{metric}: 0.5}}}}\n")  # fmt: skip
    for metric in ("recall.yes", "precision.yes", "f1.yes", "macro_f1", "accuracy"):
        load_task(write(tmp_path / "ok.yaml", task.format(metric=metric)))
    with pytest.raises(TaskFileError) as error:
        load_task(write(tmp_path / "bad.yaml", task.format(metric="recall.positive")))
    assert error.value.message == "'skill_triggered' produces no metric named 'recall.positive'"


def test_a_folder_of_skills_is_refused_with_the_plugin_root_to_use(tmp_path: Path) -> None:
    for name in ("pdf", "docx"):
        write(tmp_path / "plug" / "skills" / name / "SKILL.md", PLUGIN_SKILL.format(name=name))
    task = ("task_id: t\ndescription: d\ninitial_prompt: p\nagent:\n  type: claude-code\n"
            "  model: mock/echo\n  plugins: [{{type: local, path: {path}}}]\n"
            "success_criteria: [{{type: file_exists, path: a, description: d}}]\n")  # fmt: skip
    write(tmp_path / "deep.yaml", task.format(path="plug/skills"))
    done = run_assay("plan", "deep.yaml", cwd=tmp_path)
    assert done.returncode == 2
    skills = (tmp_path / "plug" / "skills").resolve()
    assert (
        f"deep.yaml:7: agent.plugins[0].path: {skills} is a folder of skill folders (docx, "
        "pdf), not a plugin root: Claude Code would silently load no skill from it\n  hint: "
        f"use {skills.parent}, the plugin root that holds skills/<name>/SKILL.md"
    ) in done.stderr
    write(tmp_path / "skill.yaml", task.format(path="plug/skills/pdf"))
    done = run_assay("plan", "skill.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert (
        f"{skills / 'pdf'} is a skill folder, not a plugin root: Claude Code would silently "
        f"load no skill from it\n  hint: use {skills.parent}, the plugin root that holds "
        "skills/pdf/SKILL.md"
    ) in done.stderr
    write(tmp_path / "root.yaml", task.format(path="plug"))
    assert run_assay("plan", "root.yaml", cwd=tmp_path).returncode == 0


def test_codex_takes_every_depth_and_offers_the_skills(tmp_path: Path) -> None:
    from assay.agents.coding_models import plugin_dirs, plugin_skills
    from assay.spec.coding_agents import CodexAgent

    write(tmp_path / "loose" / "pdf" / "SKILL.md", PLUGIN_SKILL.format(name="pdf"))
    write(tmp_path / "one" / "SKILL.md", PLUGIN_SKILL.format(name="one"))
    write(tmp_path / "root" / "skills" / "csv" / "SKILL.md", PLUGIN_SKILL.format(name="csv"))
    config = CodexAgent.model_validate({"type": "codex", "plugins": [
        {"type": "local", "path": p} for p in ("loose", "one", "root")]})  # fmt: skip
    assert sorted(plugin_skills(plugin_dirs(config, tmp_path))) == ["csv", "one", "pdf"]


def test_coding_agents_that_may_act_default_to_bwrap_and_warn_under_tempdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", codex_path())
    base = ("task_id: t{n}\ndescription: d\ninitial_prompt: p\nagent: {agent}\n{sandbox}"
            "success_criteria: [{{type: file_exists, path: a, description: d}}]\n")  # fmt: skip
    cases = {
        "{type: claude-code, model: mock/echo}": ("bwrap", "tempdir"),
        "{type: codex, model: mock/echo}": ("bwrap", "tempdir"),
        "{type: claude-code, model: mock/echo, permission_mode: plan}": ("tempdir", None),
        "{type: claude-code, model: mock/echo, permission_mode: default, "
        "allowed_tools: [Read, Skill]}": ("tempdir", None),
        "{type: claude-code, model: mock/echo, permission_mode: default, "
        "allowed_tools: ['Bash(git status:*)']}": ("bwrap", "tempdir"),
        "{type: command, command: 'true'}": ("tempdir", None),
    }
    for n, (agent, (default, warned)) in enumerate(cases.items()):
        path = write(tmp_path / f"t{n}.yaml", base.format(n=n, agent=agent, sandbox=""))
        assert load_task(path).definition.sandbox_driver == default, agent
        assert plan_warnings(path) == [], agent
        pinned = write(tmp_path / f"p{n}.yaml", base.format(
            n=n, agent=agent, sandbox="sandbox: {driver: tempdir}\n"))  # fmt: skip
        kind = agent.split(",")[0].removeprefix("{type: ")
        expected = [f"p{n}.yaml: {NOT_CONTAINED.format(agent=kind)}"] if warned else []
        assert [w.replace(str(tmp_path) + "/", "") for w in plan_warnings(pinned)] == expected


def test_bwrap_settings_under_tempdir_are_warned(tmp_path: Path) -> None:
    def warned(sandbox: str) -> list[str]:
        text = ("task_id: t\ndescription: d\ninitial_prompt: p\n"
                f"agent: {{type: command, command: 'true'}}\nsandbox: {sandbox}\n"
                "success_criteria: [{type: file_exists, path: a, description: d}]\n")  # fmt: skip
        path = write(tmp_path / "t.yaml", text)
        return [w.split(": ", 1)[1] for w in plan_warnings(path)]

    # max_pids holds on tempdir where its rows get control groups (the pids group's limit)
    grouped = isinstance(cgroups.find(), cgroups.Hierarchies)
    assert warned("{limits: {max_pids: 10}}") == ([] if grouped else [
        "sandbox.limits.max_pids applies to the bwrap and docker drivers only; this task's rows "
        "run in a tempdir sandbox, where it has no effect"])  # fmt: skip
    # tempdir enforces max_output_mb and max_log_mb (every driver does): only the others named
    assert warned("{limits: {max_output_mb: 0.001, max_log_mb: 1}}") == []
    only_cpu = ("sandbox.limits.cpu_seconds applies to the bwrap and docker drivers only; "
                "this task's rows run in a tempdir sandbox, where it has no effect")  # fmt: skip
    both = (
        "sandbox.limits.max_pids, sandbox.limits.cpu_seconds apply to the bwrap and docker "
        "drivers only; this task's rows run in a tempdir sandbox, where they have no effect"
    )
    limits = "{limits: {cpu_seconds: 5, max_output_mb: 1, max_pids: 10}}"
    assert warned(limits) == [only_cpu if grouped else both]
    assert warned("{network: true}") == [
        "sandbox.network applies to the bwrap and docker drivers only; this task's rows run "
        "in a tempdir sandbox, where it has no effect"
    ]


def test_memory_and_cpu_limits_outside_docker_are_warned_or_enforced_and_ours_validate(
    tmp_path: Path,
) -> None:
    """On tempdir and bwrap ``max_memory_mb`` and ``max_cpus`` are enforced where this
    machine gives a row cgroups of its own (tests/sandbox/test_cgroups.py), else warned."""
    found = cgroups.find()
    for driver, limits in (("bwrap", "max_memory_mb: 512"), ("tempdir", "max_cpus: 1.5"),
                           ("bwrap", "max_cpus: 2, max_memory_mb: 64")):  # fmt: skip
        path = write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: p\n"
                     "agent: {type: command, command: 'true'}\nsandbox:\n"
                     f"  driver: {driver}\n  limits: {{{limits}, max_pids: 64}}\n"
                     "success_criteria: [{type: file_exists, path: a, "
                     "description: d}]\n")  # fmt: skip
        assert load_task(path).definition.sandbox.limits.max_pids == 64
        name = "max_memory_mb" if "max_memory_mb" in limits else "max_cpus"
        warnings = [w.split(": ", 1)[1] for w in plan_warnings(path)]
        if isinstance(found, cgroups.Hierarchies):  # max_pids too, on tempdir as on bwrap
            assert warnings == []
            continue
        assert warnings == [
            f"sandbox.limits.{name} is enforced by the docker driver (the engine's cgroup), and "
            f"by {driver} only where the machine gives a row cgroups of its own; this task's "
            f"rows run in a {driver} sandbox, where it is not enforced ({found}); set "
            "sandbox.driver: docker to enforce it"
        ]
    text = path.read_text().replace("max_cpus: 2, max_memory_mb: 64, ", "")
    refused = (("max_pids: 0", "greater than 0"),
               ("max_memory_mb: 0", "greater than or equal to 6"),
               ("max_cpus: -1", "greater than or equal to 0.01"))  # fmt: skip
    for bad, words in refused:
        with pytest.raises(TaskFileError, match=words):
            load_task(write(tmp_path / "bad.yaml", text.replace("max_pids: 64", bad)))


def test_an_agent_crash_still_grades_read_only_criteria_and_stays_error(tmp_path: Path) -> None:
    fake = write(tmp_path / "fake-claude", "#!/bin/sh\necho made > made.txt\n"
                 "echo '{\"type\":\"system\",\"subtype\":\"init\",\"claude_code_version\":\"9\"}'\n"
                 "echo 'segfault' >&2\nexit 139\n")  # fmt: skip
    fake.chmod(0o755)
    write(tmp_path / "t.yaml", "task_id: crash\ndescription: d\ninitial_prompt: go ${row.id}\n"
          f"agent: {{type: claude-code, model: mock/echo, cli_path: {fake}}}\n"
          "dataset: {rows: [{id: r1}]}\n"
          "success_criteria:\n  - {type: file_exists, path: made.txt, description: made}\n"
          "  - {type: run_command, command: 'true', description: a program}\n"
          "  - {type: command_executed, min_count: 0, max_count: 0, description: q}\n")  # fmt: skip
    done = run_assay("run", "t.yaml", cwd=tmp_path)
    assert "Traceback" not in done.stderr
    result = json.loads(next((tmp_path / "runs").rglob("task.json")).read_text())
    assert result["final_status"] == "ERROR"
    assert result["success_criteria_results"] == []
    post = result["post_failure_criteria_results"]
    assert [(c["criterion_type"], c["score"]) for c in post] == [
        ("file_exists", 1.0), ("command_executed", 1.0)]  # fmt: skip
    suite = json.loads(next((tmp_path / "runs").rglob("suite.json")).read_text())
    assert suite["rows_error"] == 1
    assert [a["rows_excluded"] for a in suite["criterion_aggregates"]] == [1, 1, 1]


def test_an_experiments_variant_picks_the_driver(tmp_path: Path) -> None:
    task = write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: p\n"
                 "agent: {type: command, command: 'true'}\n"
                 "success_criteria: [{type: file_exists, path: a, description: d}]\n")  # fmt: skip
    experiment = write(tmp_path / "e.yaml", "experiment_id: drivers\nvariants:\n"
                       "  - {variant_id: loose}\n"
                       "  - {variant_id: contained, driver: bwrap}\n")  # fmt: skip
    plan = build_plan([task], PlanOptions(experiment=str(experiment)))
    drivers = [v.definition.sandbox_driver for v in plan.tasks[0].variants]
    assert drivers == ["tempdir", "bwrap"]


def test_a_read_only_folder_that_does_not_exist_is_a_load_error(tmp_path: Path) -> None:
    path = write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: p\n"
                 "agent: {type: command, command: 'true'}\nsandbox:\n  driver: bwrap\n"
                 "  read_only: [tools, nope]\n"
                 "success_criteria: [{type: file_exists, path: a, description: d}]\n")  # fmt: skip
    (tmp_path / "tools").mkdir()
    with pytest.raises(TaskFileError) as error:
        load_task(path)
    assert (error.value.line, error.value.field) == (7, "sandbox.read_only[1]")
    assert error.value.message == f"sandbox.read_only: {tmp_path / 'nope'} does not exist"


def test_other_folders_that_are_not_plugin_roots(tmp_path: Path) -> None:
    from assay.agents.coding_models import check_plugin_root
    from assay.errors import UserError

    write(tmp_path / "loose" / "pdf" / "SKILL.md", PLUGIN_SKILL.format(name="pdf"))
    with pytest.raises(UserError) as error:
        check_plugin_root(tmp_path / "loose" / "pdf", "agent.plugins[0].path")
    assert (
        error.value.hint == "move it to <plugin root>/skills/pdf/SKILL.md and use the plugin root"
    )
    with pytest.raises(UserError) as error:
        check_plugin_root(tmp_path / "loose", "agent.plugins[0].path")
    assert error.value.hint == (f"move them into {tmp_path / 'loose'}/skills/ (a plugin root "
                                "holds skills/<name>/SKILL.md)")  # fmt: skip
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError) as error:
        check_plugin_root(tmp_path / "empty", "agent.plugins[0].path")
    assert error.value.message == (
        f"{tmp_path / 'empty'} is not a plugin: it holds no skills/<name>/SKILL.md (nor "
        ".claude-plugin/plugin.json, commands/, agents/ or hooks/)"
    )
    write(tmp_path / "commands-only" / "commands" / "hello.md", "say hello\n")
    check_plugin_root(tmp_path / "commands-only", "agent.plugins[0].path")  # a plugin still


def test_agent_none_on_stored_traces_may_grade_what_they_did(tmp_path: Path) -> None:
    path = write(tmp_path / "t.yaml", "task_id: t\ndescription: d\nagent: {type: none}\n"
                 "dataset: {store: traces}\n"
                 "success_criteria: [{type: command_executed, description: d}]\n")  # fmt: skip
    assert load_task(path).definition.success_criteria[0].type == "command_executed"
