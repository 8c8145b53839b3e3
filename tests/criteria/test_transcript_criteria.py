"""Criteria over what the agent did, graded on transcripts recorded from the real Claude Code
and Codex CLIs (``transcripts/``, made by ``transcripts/record.py``): ``skill_triggered``,
``command_executed``, ``tool_called``, ``commands_efficiency``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError
from sklearn.metrics import accuracy_score, f1_score, precision_recall_fscore_support

from assay.agents.claude_stream import ClaudeStreamParser
from assay.agents.codex_stream import CodexStreamParser
from assay.agents.coding_models import plugin_skills
from assay.criteria import default_criteria
from assay.criteria.base import CriterionError, GradingContext
from assay.criteria.skills import all_engaged, engaged_skills
from assay.results.task_result import ClassificationCriterionResult, CriterionResult
from assay.results.trace import Span, new_trace_id, to_otlp_json
from assay.results.transcript import ToolUse, Transcript, TranscriptEvent
from assay.results.transcript_otlp import from_trace, to_spans
from tests.helpers import check_with

HERE = Path(__file__).resolve().parent / "transcripts"
PLUGIN = HERE / "plugin"
CRITERION: TypeAdapter[Any] = TypeAdapter(default_criteria().union())


def recorded(name: str) -> Transcript:
    """A recorded CLI run read by the real parser, offered the plugin's skills (as a run does)."""
    parser: ClaudeStreamParser | CodexStreamParser
    parser = CodexStreamParser() if name.endswith(".codex") else ClaudeStreamParser()
    for line in (HERE / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
        parser.feed(line)
    parser.ending()
    parser.transcript.skills_offered = sorted(plugin_skills([PLUGIN]))
    return parser.transcript


def grade(transcript: Transcript | None, **fields: Any) -> CriterionResult:
    spec = CRITERION.validate_python({"description": "d", **fields})
    context = GradingContext(sandbox=None, response=None, transcript=transcript)
    return asyncio.run(check_with(spec, context))


def skill(name: str, transcript: Transcript, expected: str) -> ClassificationCriterionResult:
    result = grade(transcript, type="skill_triggered", skill_name=name, expected_skill=expected)
    assert isinstance(result, ClassificationCriterionResult)
    return result


# --- skill_triggered ---------------------------------------------------------------------


def test_claude_codes_skill_call_is_an_engagement() -> None:
    run = recorded("skill-then-work.claude")
    positive = skill("weather-report", run, "weather-report")
    assert (positive.observed_label, positive.expected_label, positive.score) == ("yes", "yes", 1.0)
    assert positive.details == "observed='yes', expected='yes' (skill_name='weather-report')"
    misfire = skill("weather-report", run, "")
    assert (misfire.observed_label, misfire.expected_label, misfire.score) == ("yes", "no", 0.0)
    other = skill("unit-convert", run, "weather-report")
    assert (other.observed_label, other.expected_label, other.score) == ("no", "no", 1.0)


def test_a_namespaced_skill_call_counts_for_the_bare_name() -> None:
    run = recorded("namespaced-skill.claude")
    assert run.tool_uses()[0].arguments == {"skill": "plugin:unit-convert"}
    assert skill("unit-convert", run, "unit-convert").observed_label == "yes"
    assert skill("weather-report", run, "unit-convert").observed_label == "no"


def test_the_real_cli_lists_the_plugins_skills_it_loaded() -> None:
    run = recorded("skill-then-work.claude")
    assert run.skills_loaded is not None
    assert {"plugin:weather-report", "plugin:unit-convert"} <= set(run.skills_loaded)


def test_a_distractor_without_tool_calls_is_observed_no() -> None:
    for name in ("no-tools.claude", "no-tools.codex"):
        result = skill("weather-report", recorded(name), "")
        assert (result.observed_label, result.expected_label, result.score) == ("no", "no", 1.0)


def test_codex_engages_a_skill_by_reading_its_files() -> None:
    run = recorded("codex-skill.codex")
    first = run.tool_uses()[0]
    assert first.name == "Bash" and "skills/weather-report/SKILL.md" in first.arguments["command"]
    assert skill("weather-report", run, "weather-report").observed_label == "yes"
    assert skill("unit-convert", run, "").observed_label == "no"


def test_engagement_by_path_takes_either_slash_and_nested_skills_folders() -> None:
    def use(command: str) -> ToolUse:
        return ToolUse("Bash", "1", {"command": command}, "", False, False)

    assert engaged_skills(use(r"type C:\\plug\\skills\\pdf\\SKILL.md")) == {"pdf"}
    assert engaged_skills(use("cat skills/skills/pdf/SKILL.md")) == {"skills", "pdf"}
    assert engaged_skills(use("ls ~/.codex/skills/")) == set()
    nested = ToolUse("Write", "2", {"paths": ["/x/skills/pdf/out.txt"]}, "", False, False)
    assert engaged_skills(nested) == {"pdf"}


def test_a_skill_tool_names_its_skill_by_skill_or_by_name() -> None:
    def call(arguments: dict[str, str]) -> ToolUse:
        return ToolUse("Skill", "1", arguments, "", False, False)

    # Claude Code's plugin:name counts for the skill's own name; Qwen Code's team:notes whole
    assert engaged_skills(call({"skill": "plug:pdf"})) == {"plug:pdf", "pdf"}
    assert engaged_skills(call({"name": "pdf"})) == {"pdf"}  # OpenCode, Gemini CLI
    assert engaged_skills(call({"skill": "pdf", "name": "other"})) == {"pdf"}
    assert engaged_skills(call({"args": "pdf"})) == set()
    failed = Transcript(agent="qwen-code")
    failed.add(
        TranscriptEvent("tool_call", 1, name="Skill", call_id="1", arguments={"skill": "pdf"})
    )
    failed.add(TranscriptEvent("tool_result", 2, name="Skill", call_id="1",
                               text='Skill "pdf" not found', is_error=True))  # fmt: skip
    assert all_engaged(failed) == set()  # the CLI had no such skill: nothing engaged


def test_a_skill_the_plugins_do_not_offer_cannot_be_graded() -> None:
    with pytest.raises(CriterionError) as error:
        skill("pdf", recorded("skill-then-work.claude"), "pdf")
    assert str(error.value) == (
        "skill_triggered names skill 'pdf' but agent.plugins offered only ['unit-convert', "
        "'weather-report']: the positive control cannot run. Check the plugin path (a plugin "
        "root holds skills/<name>/SKILL.md) and the skill's name (the name in its SKILL.md "
        "front matter)."
    )


def test_a_skill_offered_but_not_loaded_by_the_cli_cannot_be_graded() -> None:
    run = recorded("skill-then-work.claude")
    run.skills_loaded = ["plugin:unit-convert", "verify"]
    with pytest.raises(CriterionError) as error:
        skill("weather-report", run, "weather-report")
    assert str(error.value) == (
        "skill_triggered names skill 'weather-report', which agent.plugins offers, but the "
        "claude-code CLI did not load it (it listed ['plugin:unit-convert', 'verify']): the "
        "positive control cannot run. Check the skill's SKILL.md front matter (name, "
        "description)."
    )


def test_a_row_without_a_transcript_is_an_error_not_a_zero() -> None:
    with pytest.raises(CriterionError) as error:
        grade(None, type="command_executed")
    assert str(error.value) == (
        "no transcript: the row's agent recorded none (a row re-graded from a run folder "
        "without trace.json?), so what it did cannot be graded"
    )


def test_the_transcript_read_back_from_trace_json_grades_the_same() -> None:
    run = recorded("namespaced-skill.claude")
    agent = Span(name="invoke_agent claude-code", trace_id=new_trace_id())
    agent.end()
    back = from_trace(to_otlp_json([agent, *to_spans(run, agent)]))
    assert back is not None
    assert back.skills_loaded == run.skills_loaded
    assert back.skills_offered == run.skills_offered
    assert skill("unit-convert", back, "unit-convert").score == 1.0


def test_skill_name_refuses_odd_names() -> None:
    for odd in ("a b", "a::b", ":x", "x:", "a:.b", "notes\n", "team:notes\n"):
        with pytest.raises(ValidationError, match="is not a skill name"):
            CRITERION.validate_python({"type": "skill_triggered", "skill_name": odd,
                                       "expected_skill": ""})  # fmt: skip
    with pytest.raises(ValidationError, match="expected_skill"):
        CRITERION.validate_python({"type": "skill_triggered", "skill_name": "pdf"})
    for name in ("météo", "v1.2_notes", "unit-convert", "team:notes"):  # Qwen Code, OpenCode
        CRITERION.validate_python({"type": "skill_triggered", "skill_name": name,
                                   "expected_skill": ""})  # fmt: skip
    with pytest.raises(ValidationError, match="is not a skill name"):
        CRITERION.validate_python({"type": "skill_triggered", "skill_name": ".hidden",
                                   "expected_skill": ""})  # fmt: skip


def test_a_name_with_a_colon_is_checked_whole_where_the_cli_loads_it() -> None:
    """Qwen Code loads a skill named ``team:notes``: skill_triggered could not name it
    before (the ``:`` was refused as Claude Code's plugin prefix)."""
    run = Transcript(agent="qwen-code", skills_offered=["good", "team:notes"])
    run.add(TranscriptEvent("tool_call", 1, name="Skill", call_id="1",
                            arguments={"skill": "team:notes"}))  # fmt: skip
    run.add(TranscriptEvent("tool_result", 2, name="Skill", call_id="1", text="loaded"))
    assert skill("team:notes", run, "team:notes").score == 1.0
    assert skill("good", run, "").score == 1.0  # not engaged, a distractor row: right


@pytest.mark.parametrize(("agent", "refused"), [("claude-code", True), ("qwen-code", False),
                                                ("codex", False), ("opencode", False)])  # fmt: skip
def test_a_plugin_prefix_is_refused_at_load_where_the_cli_names_skills_so(
    tmp_path: Path, agent: str, refused: bool
) -> None:
    import assay
    from assay.errors import TaskFileError
    from tests.helpers import write

    task = write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: hi\n"
                 f"agent: {{type: {agent}, model: mock/echo}}\nsuccess_criteria:\n"
                 "  - type: skill_triggered\n    expected_skill: ''\n"
                 "    skill_name: plug:pdf\n")  # fmt: skip
    if not refused:
        assay.load_task(task)
        return
    with pytest.raises(TaskFileError, match="carries the plugin's name") as caught:
        assay.load_task(task)
    assert (caught.value.line, caught.value.field) == (8, "success_criteria[0].skill_name")
    assert "write the skill's own name, 'pdf'" in caught.value.message


def test_a_variant_that_runs_claude_code_refuses_the_plugin_prefix_too(tmp_path: Path) -> None:
    """The check held for the task file's agent only: an experiment's variant that switched
    the agent to claude-code planned a ``team:notes`` it cannot check."""
    import assay
    from assay.errors import TaskFileError
    from tests.helpers import write

    task = write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: hi\n"
                 "agent: {type: qwen-code, model: mock/echo}\nsuccess_criteria:\n"
                 "  - type: skill_triggered\n    expected_skill: ''\n"
                 "    skill_name: team:notes\n")  # fmt: skip
    experiment = write(
        tmp_path / "e.yaml",
        "experiment_id: e\nvariants:\n  - variant_id: q\n"
        "  - variant_id: c\n    agent: {type: claude-code, model: mock/echo}\n",
    )
    with pytest.raises(TaskFileError, match="carries the plugin's name") as caught:
        assay.plan([str(task)], experiment=experiment)
    assert "variant 'c'" in (caught.value.hint or "") + caught.value.message


def test_the_suite_rolls_up_as_a_yes_no_classification_like_sklearn() -> None:
    rows = [
        ("skill-then-work.claude", "weather-report"),
        ("namespaced-skill.claude", "weather-report"),
        ("no-tools.claude", ""),
        ("no-tools.codex", "weather-report"),
        ("codex-skill.codex", "weather-report"),
        ("codex-commands.codex", ""),
        ("skill-then-work.claude", ""),
    ]
    results: list[CriterionResult] = [
        skill("weather-report", recorded(name), expected) for name, expected in rows
    ]
    spec = CRITERION.validate_python({"type": "skill_triggered", "skill_name": "weather-report",
                                      "expected_skill": ""})  # fmt: skip
    table, details = default_criteria().bind(spec).aggregate(results)
    truth = [r.expected_label for r in results if isinstance(r, ClassificationCriterionResult)]
    seen = [r.observed_label for r in results if isinstance(r, ClassificationCriterionResult)]
    assert seen == ["yes", "no", "no", "no", "yes", "no", "yes"]
    precision, recall, f1, _ = precision_recall_fscore_support(truth, seen, labels=["yes", "no"],
                                                               zero_division=0)  # fmt: skip
    values = table.values
    assert values["recall.yes"] == pytest.approx(recall[0])  # 2 of 4 positives
    assert values["precision.yes"] == pytest.approx(precision[0])  # 2 of 3 triggers
    assert values["f1.yes"] == pytest.approx(f1[0])
    assert values["recall.no"] == pytest.approx(recall[1])
    assert values["macro_f1"] == pytest.approx(f1_score(truth, seen, average="macro"))
    assert values["accuracy"] == pytest.approx(accuracy_score(truth, seen))
    assert details["confusion"] == [
        {"expected": "no", "observed": "no", "count": 2},
        {"expected": "no", "observed": "yes", "count": 1},
        {"expected": "yes", "observed": "no", "count": 2},
        {"expected": "yes", "observed": "yes", "count": 2},
    ]


# --- command_executed --------------------------------------------------------------------


def test_commands_match_by_tool_and_pattern_with_examples() -> None:
    result = grade(recorded("commands.claude"), type="command_executed", tool_name="Bash",
                   command_pattern="grep.*TODO")  # fmt: skip
    assert result.score == 1.0
    assert result.details == (
        "Matched 1/1 required commands (filters: tool_name=Bash, pattern=/grep.*TODO/)\n"
        "Examples: ['grep -r \"TODO\" missing-dir']"
    )


def test_require_success_leaves_out_a_command_that_failed() -> None:
    result = grade(recorded("commands.claude"), type="command_executed", tool_name="Bash",
                   command_pattern="grep", require_success=True)  # fmt: skip
    assert result.score == 0.0
    assert result.details.startswith("Matched 0/1 required commands (filters: tool_name=Bash, "
                                     "pattern=/grep/, require_success=True)")  # fmt: skip


def test_a_pattern_spans_the_lines_of_a_heredoc() -> None:
    result = grade(recorded("commands.claude"), type="command_executed",
                   command_pattern=r"python3 -.*print\('line'\)")  # fmt: skip
    assert result.score == 1.0


def test_codex_commands_match_once_unwrapped_from_their_login_shell() -> None:
    run = recorded("codex-commands.codex")
    raw = run.tool_uses()[0].arguments["command"]
    assert raw == "/bin/bash -lc \"grep -rn 'TODO' . || true\""
    assert "grep -rn TODO" not in raw  # only the unwrapped, quote-resolved form has it
    result = grade(run, type="command_executed", tool_name="Bash",
                   command_pattern=r"^grep -rn TODO \.")  # fmt: skip
    assert result.score == 1.0
    excluded = grade(run, type="command_executed", tool_name="Bash", command_pattern="grep",
                     exclude_pattern=r"\|\| true")  # fmt: skip
    assert excluded.score == 0.0


def test_counts_fractional_without_max_and_binary_with_it() -> None:
    run = recorded("commands.claude")
    half = grade(run, type="command_executed", command_pattern="^ls", min_count=2)
    assert half.score == 0.5
    assert half.details.startswith("Matched 1/2 required commands")
    bash = grade(run, type="command_executed", tool_name="Bash", min_count=0, max_count=2)
    assert bash.score == 0.0
    assert bash.details.startswith("Matched 4 matches (allowed range 0..2) commands")
    within = grade(run, type="command_executed", tool_name="Bash", min_count=4, max_count=4)
    assert within.score == 1.0


def test_zero_commands_fail_a_positive_and_pass_a_must_not_run() -> None:
    quiet = recorded("no-tools.claude")
    assert grade(quiet, type="command_executed").score == 0.0
    assert grade(quiet, type="command_executed", min_count=0, max_count=0).score == 1.0
    assert grade(quiet, type="command_executed", min_count=0).score == 1.0
    forbidden = grade(recorded("commands.claude"), type="command_executed",
                      command_pattern="^ls", min_count=0, max_count=0)  # fmt: skip
    assert forbidden.score == 0.0


def test_other_tools_are_matched_on_the_json_of_their_arguments() -> None:
    result = grade(recorded("commands.claude"), type="command_executed", tool_name="Read",
                   command_pattern=r'"file_path": ".*notes\.txt"')  # fmt: skip
    assert result.score == 1.0
    assert "Read(" in result.details
    patch = grade(recorded("codex-commands.codex"), type="command_executed", tool_name="Write",
                  command_pattern="notes.md")  # fmt: skip
    assert patch.score == 1.0


def test_bad_patterns_and_bounds_are_load_errors() -> None:
    with pytest.raises(ValidationError, match=r"max_count \(1\) must be >= min_count \(2\)"):
        CRITERION.validate_python({"type": "command_executed", "min_count": 2, "max_count": 1})
    with pytest.raises(ValidationError, match="command_pattern '\\(' is not a valid regex"):
        CRITERION.validate_python({"type": "command_executed", "command_pattern": "("})
    with pytest.raises(ValidationError, match="exclude_pattern '\\[' is not a valid regex"):
        CRITERION.validate_python({"type": "command_executed", "exclude_pattern": "["})


# --- tool_called -------------------------------------------------------------------------


def test_tool_called_counts_one_tool_with_matching_arguments() -> None:
    run = recorded("skill-then-work.claude")
    write = grade(run, type="tool_called", tool="Write", arguments_pattern=r"forecast\.json")
    assert write.score == 1.0
    assert write.details == ("Write called 1 time(s); 1 counted (arguments matching "
                             "/forecast\\.json/); allowed 1..∞")  # fmt: skip
    twice = grade(run, type="tool_called", tool="Skill", min_count=2)
    assert twice.score == 0.0
    missing = grade(run, type="tool_called", tool="Edit")
    assert missing.details.endswith("tools called: Bash, Skill, Write")


def test_tool_called_must_not_and_successful_only() -> None:
    denied = recorded("denied.claude")
    assert [u.denied for u in denied.tool_uses()] == [True]
    # a denied call did not happen: it never counts, whatever require_success says
    assert grade(denied, type="tool_called", tool="Bash", min_count=0, max_count=0).score == 1.0
    assert grade(denied, type="tool_called", tool="Bash", require_success=True).score == 0.0
    assert grade(denied, type="tool_called", tool="Bash").score == 0.0


def test_tool_called_refuses_bounds_that_can_never_fail() -> None:
    with pytest.raises(ValidationError, match="can never fail"):
        CRITERION.validate_python({"type": "tool_called", "tool": "Bash", "min_count": 0})


# --- commands_efficiency -----------------------------------------------------------------


def test_commands_efficiency_over_and_within_the_budget() -> None:
    run = recorded("commands.claude")
    assert len(run.tool_uses()) == 5
    over = grade(run, type="commands_efficiency", expected_commands=3)
    assert over.score == pytest.approx(0.6)
    assert over.details == "Commands: 5, expected: 3, efficiency: 0.600 (2 over budget)"
    within = grade(run, type="commands_efficiency", expected_commands=10)
    assert (within.score, within.details) == (
        1.0, "Commands: 5, expected: 10, efficiency: 1.000 (within budget)")  # fmt: skip


def test_commands_efficiency_with_no_command_scores_zero() -> None:
    result = grade(recorded("no-tools.codex"), type="commands_efficiency", expected_commands=2)
    assert (result.score, result.details) == (0.0, "No commands recorded (agent may not have run)")


def test_recorded_streams_are_the_clis_own() -> None:
    first = json.loads((HERE / "skill-then-work.claude.jsonl").read_text().splitlines()[0])
    assert first["type"] == "system" and first["claude_code_version"]
    assert json.loads((HERE / "codex-skill.codex.jsonl").read_text().splitlines()[0])["type"] == (
        "thread.started"
    )


@pytest.mark.parametrize(
    ("command", "forms"),
    [
        ("ls", ["ls"]),
        ("/usr/bin/env bash -euc 'make test'", ["/usr/bin/env bash -euc 'make test'",
                                                "/usr/bin/env bash -euc make test", "make test"]),
        ("bash -c", ["bash -c"]),  # no script after -c
        ("bash --login -c 'x'", ["bash --login -c 'x'", "bash --login -c x"]),  # a long option
        ("sh -e script.sh", ["sh -e script.sh"]),  # no -c: a script file, nothing to unwrap
        ("echo 'unbalanced", ["echo 'unbalanced"]),
        ("zsh -lc \"bash -c 'echo \\\"deep\\\"'\"", [
            "zsh -lc \"bash -c 'echo \\\"deep\\\"'\"", "zsh -lc bash -c 'echo \"deep\"'",
            "bash -c 'echo \"deep\"'", "bash -c echo \"deep\"", "echo \"deep\"", "echo deep"]),
    ],
)  # fmt: skip
def test_shell_forms(command: str, forms: list[str]) -> None:
    from assay.criteria.shell import shell_forms

    assert shell_forms(command) == forms
