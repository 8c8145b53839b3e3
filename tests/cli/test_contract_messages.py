"""Every message the docs promise, asserted word for word as a user reads it on stderr.

The pages "Runs that survive" (plan refuses an unknown local model or mock script), "Models"
(mock scripts), "Experiments and comparisons" (compare's refusal), "Suites, gates, exit
codes" (a misspelled threshold name, a minimum no value can reach), "Coder Eval
compatibility" (one warning per field assay does not implement yet; coding agents and
criteria refused with a clear message), "Commands" (--resume, -e NAME), "Sandboxes" (paths
that leave the sandbox).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from assay.install import clone_root
from assay.spec.base import StrictModel
from assay.spec.criteria import CriterionSpec
from assay.spec.experiment import Variant
from assay.spec.task import (
    AgentBase,
    DockerConfig,
    RunLimits,
    SandboxConfig,
    SandboxLimits,
    TaskDefinition,
)
from tests.cli.inproc import run_in_process
from tests.cli.test_run import assay, latest
from tests.helpers import write


def model_task(tmp_path: Path, model: str) -> Path:
    text = f"""\
task_id: t
description: d
initial_prompt: x
agent: {{type: llm, model: "{model}"}}
success_criteria:
  - {{type: response_match, expected: x}}
"""
    return write(tmp_path / "t.yaml", text)


def refused(tmp_path: Path, path: Path, *args: str) -> list[str]:
    """``plan`` and ``run`` both exit 2 with the same message and make no run folder; the
    lines of that message."""
    messages = []
    for command in ("plan", "run"):
        done = assay(command, str(path), *args, cwd=tmp_path)
        assert done.returncode == 2, (command, done.stderr)
        messages.append(done.stderr.splitlines())
    assert messages[0] == messages[1]
    assert not (tmp_path / "runs").exists()
    return messages[0]


# --- models: plan refuses what run cannot start ---------------------------------------------


def test_an_unknown_local_model_is_named_with_the_models_there_are(tmp_path: Path) -> None:
    assert refused(tmp_path, model_task(tmp_path, "local/tiny")) == [
        "error: t.yaml:4: agent.model: unknown local model 'local/tiny'",
        "  hint: the built-in local model is local/smollm2; set ASSAY_LOCAL_MODEL to serve "
        "another GGUF file",
    ]


def test_an_unknown_provider_is_named_with_the_providers_there_are(tmp_path: Path) -> None:
    assert refused(tmp_path, model_task(tmp_path, "opena/gpt")) == [
        "error: t.yaml:4: agent.model: unknown model provider 'opena' in 'opena/gpt'; known: "
        "anthropic, local, mock, openai",
        "  hint: did you mean 'openai/...'?",
    ]
    assert refused(tmp_path, model_task(tmp_path, "gpt4")) == [
        "error: t.yaml:4: agent: model 'gpt4' must be named provider/name, e.g. local/smollm2, "
        "openai/gpt-4o-mini, mock/echo",
    ]


def test_assay_local_model_that_is_not_a_file_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSAY_LOCAL_MODEL", str(tmp_path / "none.gguf"))
    lines = refused(tmp_path, model_task(tmp_path, "local/smollm2"))
    assert lines == [
        f"error: t.yaml:4: agent.model: ASSAY_LOCAL_MODEL={tmp_path / 'none.gguf'} is not a file",
        f"  hint: install the local model: make install (in {clone_root()}; it installs the local "
        "model and its weights), or set ASSAY_LOCAL_MODEL to a .gguf file",
    ]


def test_a_missing_mock_script_is_named_with_what_a_script_is(tmp_path: Path) -> None:
    assert refused(tmp_path, model_task(tmp_path, "mock/nope.yaml")) == [
        f"error: t.yaml:4: agent.model: mock script not found: {tmp_path / 'nope.yaml'}",
        "  hint: use mock/echo, or mock/<file.yaml> with replies: [{match, reply}] and default "
        "(the file is looked for beside the task file, then in the working directory)",
    ]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = run_in_process("plan", str(tmp_path / "t.yaml"), cwd=elsewhere)
    assert (f"mock script not found: {tmp_path / 'nope.yaml'} (nor {elsewhere / 'nope.yaml'})"
            in done.stderr)  # both places it looked, from another folder  # fmt: skip


MOCK_SCRIPT_ERRORS = {
    "not YAML": (
        b"replies: [\n",
        ":2: invalid YAML: did not find expected node content (while parsing a flow node)",
    ),
    "a list": (b"- a\n- b\n", ": a mock script is a mapping with 'replies' (a list) and 'default'"),
    "no match": (
        b"replies:\n  - {reply: x}\n",
        ": replies[0] needs 'match' and one of 'reply', 'error' or 'steps'",
    ),
    "bad regex": (
        b"replies:\n  - {match: '(', reply: x}\n",
        ": replies[0].match is not a regex: missing ), unterminated subpattern at position 0",
    ),
    "boolean reply": (
        b"replies:\n  - {match: x, reply: yes}\n",
        ": replies[0].reply is a boolean (True); YAML reads unquoted yes/no/on/off that way: "
        "quote it",
    ),
    "a key twice": (
        b"default: a\ndefault: b\n",
        ":2: default: key 'default' appears twice in one mapping (first on line 1)",
    ),
}


@pytest.mark.parametrize("case", list(MOCK_SCRIPT_ERRORS))
def test_a_mock_script_error_names_the_script_and_the_task_using_it(
    tmp_path: Path, case: str
) -> None:
    content, message = MOCK_SCRIPT_ERRORS[case]
    script = tmp_path / "m.yaml"
    script.write_bytes(content)
    lines = refused(tmp_path, model_task(tmp_path, "mock/m.yaml"))
    assert lines[0] == f"error: {script}{message}"
    assert lines[-1].startswith("  hint: used by t.yaml:4 (agent.model)")


def test_a_mock_script_that_is_not_utf8(tmp_path: Path) -> None:
    script = tmp_path / "m.yaml"
    script.write_bytes(b'default: "caf\xe9"\n')
    assert refused(tmp_path, model_task(tmp_path, "mock/m.yaml")) == [
        f"error: {script}: mock script {script} is not UTF-8 text (invalid continuation byte)",
        "  hint: used by t.yaml:4 (agent.model)",
    ]


@pytest.mark.parametrize(
    ("script", "error"),
    [
        ("replies:\n  - {match: zzz, reply: x}\n", "no scripted reply matches the prompt"),
        ("replies:\n  - {match: '.', error: HTTP 503 overloaded}\n",
         "scripted error: HTTP 503 overloaded"),
    ],
)  # fmt: skip
def test_a_mock_script_failing_a_call_ends_the_row_in_error(
    tmp_path: Path, script: str, error: str
) -> None:
    write(tmp_path / "m.yaml", script)
    done = assay("run", str(model_task(tmp_path, "mock/m.yaml")), "-q", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # a task without a dataset that errored
    task = json.loads((latest(tmp_path) / "default/t/00/task.json").read_text())
    assert (task["final_status"], task["error_message"]) == ("ERROR", f"mock/m.yaml: {error}")


# --- compare --------------------------------------------------------------------------------

TOY = """\
task_id: toy
description: d
initial_prompt: "${row.x}"
agent: {type: llm, model: mock/echo}
dataset: {rows: [{id: r0, x: a}, {id: r1, x: a}, {id: r2, x: b}, {id: r3, x: a}, {id: r4, x: b}]}
success_criteria:
  - {type: response_match, expected: a, suite_thresholds: {mean: 0.0}}
"""


def test_compare_refuses_different_rows_naming_the_ids(tmp_path: Path) -> None:
    write(tmp_path / "toy.yaml", TOY)
    for folder, extra in (("a", []), ("b", ["--sample", "2"])):
        done = assay("run", "toy.yaml", "-q", "--run-dir", folder, *extra, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    kept = {f"r{i}" for i in random.Random(0).sample(range(5), 2)}  # README: --sample's draw
    only_a = sorted({f"r{i}" for i in range(5)} - kept)
    done = assay("compare", "a/latest", "b/latest", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"error: suite 'toy' has different rows in the two runs: only in A {only_a} "
        f"({len(only_a)}), only in B [] (0); a comparison needs the same rows",
        "  hint: the runs' selections differ in --sample: A None, B 2",
    ]
    assert only_a == ["r0", "r1", "r2"]


def test_compare_of_an_unfinished_run_says_to_resume_it(tmp_path: Path) -> None:
    """Found by a break-test: a partial run A got "run both on the same selection" (they
    were), where the way on is to finish A."""
    write(tmp_path / "toy.yaml", TOY)
    for folder in ("a", "b"):
        assert assay("run", "toy.yaml", "-q", "--run-dir", folder, cwd=tmp_path).returncode == 0
    (tmp_path / "a/latest/default/toy/r3/00/task.json").unlink()  # as if it never finished
    done = assay("compare", "a/latest", "b/latest", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "  hint: both selected the same rows, so run A did not finish them: `assay run "
        "--resume A_RUN_DIR` runs the rest"
    )


# --- suite thresholds -----------------------------------------------------------------------


def threshold_task(tmp_path: Path, criterion: str, thresholds: str) -> Path:
    text = f"""\
task_id: t
description: d
initial_prompt: "${{row.x}}"
agent: {{type: llm, model: mock/echo}}
dataset: {{rows: [{{id: r, x: a}}]}}
success_criteria:
  - {criterion}
    suite_thresholds: {thresholds}
"""
    return write(tmp_path / "t.yaml", text)


CLASSIFY = "type: classification_match\n    expected_label: a\n    allowed_labels: [a, b]"
RESPONSE = "type: response_match\n    expected: a"


@pytest.mark.parametrize(
    ("criterion", "thresholds", "lines"),
    [
        (CLASSIFY, "{accurcy: 0.8}", [
            "error: t.yaml:10: success_criteria[0].suite_thresholds.accurcy: "
            "'classification_match' produces no metric named 'accurcy'",
            "  hint: did you mean 'accuracy'?",
        ]),
        (CLASSIFY, "{recall.c: 0.5}", [
            "error: t.yaml:10: success_criteria[0].suite_thresholds.recall.c: "
            "'classification_match' produces no metric named 'recall.c'",
            "  hint: did you mean 'recall.b'?",
        ]),
        (RESPONSE, "{maen: 0.5}", [
            "error: t.yaml:9: success_criteria[0].suite_thresholds.maen: "
            "'response_match' produces no metric named 'maen'",
            "  hint: did you mean 'mean'?",
        ]),
        (RESPONSE, "{zzzz: 0.5}", [
            "error: t.yaml:9: success_criteria[0].suite_thresholds.zzzz: "
            "'response_match' produces no metric named 'zzzz'",
            "  hint: known: completion_rate, count, max, mean, median, min, std",
        ]),
        (CLASSIFY, "{macro_f1: 70}", [
            "error: t.yaml:10: success_criteria[0].suite_thresholds.macro_f1: minimum 70.0 for "
            "'macro_f1' is outside [0, 1], so the gate can never be decided as intended",
            "  hint: 'macro_f1' is a share in [0, 1] (70% is 0.7); a metric its criterion class "
            "lists in unbounded_metrics may exceed 1",
        ]),
        (RESPONSE, "{mean: -0.1}", [
            "error: t.yaml:9: success_criteria[0].suite_thresholds.mean: minimum -0.1 for "
            "'mean' is outside [0, 1], so the gate can never be decided as intended",
            "  hint: 'mean' is a share in [0, 1] (70% is 0.7); a metric its criterion class "
            "lists in unbounded_metrics may exceed 1",
        ]),
    ],
)  # fmt: skip
def test_a_threshold_no_value_can_meet_is_a_load_error(
    tmp_path: Path, criterion: str, thresholds: str, lines: list[str]
) -> None:
    assert refused(tmp_path, threshold_task(tmp_path, criterion, thresholds)) == lines


def test_a_count_threshold_may_exceed_one(tmp_path: Path) -> None:
    done = assay("plan", str(threshold_task(tmp_path, RESPONSE, "{count: 70}")), cwd=tmp_path)
    assert done.returncode == 0, done.stderr


# --- Coder Eval compatibility ---------------------------------------------------------------

EVERY_WARNED_FIELD = """\
task_id: t
description: d
initial_prompt: x
simulation: {enabled: false, goal: g}
reference: {directory: .}
expected_commands: [ls]
agent:
  type: command
  command: cat
  permission_mode: acceptEdits
  allowed_tools: [Write]
  disallowed_tools: [Bash]
  plugins: [p]
  setting_sources: [user]
  claude_settings: {}
  sdk_options: {}
  ignore_patterns: ["*.pyc"]
  context_window: 1000
  system_prompt_mode: append
sandbox:
  python: {version: "3.11"}
  node: {version: "20"}
  docker: DOCKER
  limits: {timeout: 300, max_disk_mb: 100}
  ignore_patterns: [x]
  network: false
  record_cli: []
run_limits:
  expected_turns: 3
  turn_timeout: 5
  max_input_tokens: 5
  max_output_tokens: 5
  count_cached_input: true
  count_cache_creation: true
  stop_early: true
success_criteria:
  - type: response_match
    expected: x
    stop_when: true
    stop_early: true
    read_only: true
"""

EVERY_WARNED_FIELD = EVERY_WARNED_FIELD.replace("DOCKER", "{}")  # its fields are honoured
NOT_YET = "a Coder Eval field that assay does not implement yet"
AGENT = "assay's agents do not use it"
WARNINGS = [
    f"t.yaml:6: expected_commands: {NOT_YET}; give the budget to a commands_efficiency "
    "criterion instead",
    f"t.yaml:10: agent.permission_mode: {NOT_YET}; {AGENT}",
    f"t.yaml:11: agent.allowed_tools: {NOT_YET}; {AGENT}",
    f"t.yaml:12: agent.disallowed_tools: {NOT_YET}; {AGENT}",
    f"t.yaml:13: agent.plugins: {NOT_YET}; {AGENT}",
    f"t.yaml:14: agent.setting_sources: {NOT_YET}; {AGENT}",
    f"t.yaml:15: agent.claude_settings: {NOT_YET}; {AGENT}",
    f"t.yaml:16: agent.sdk_options: {NOT_YET}; {AGENT}",
    f"t.yaml:17: agent.ignore_patterns: {NOT_YET}; {AGENT}",
    f"t.yaml:18: agent.context_window: {NOT_YET}; {AGENT}",
    f"t.yaml:19: agent.system_prompt_mode: {NOT_YET}; {AGENT}",
    f"t.yaml:21: sandbox.python: {NOT_YET}; no per-row Python environment is built; the "
    "sandbox uses the host's",
    f"t.yaml:22: sandbox.node: {NOT_YET}; no per-row Node.js environment is built",
    f"t.yaml:24: sandbox.limits.timeout: {NOT_YET}; run_limits.task_timeout bounds the agent; "
    "pre_run, post_run and run_command have their own timeout",
    f"t.yaml:24: sandbox.limits.max_disk_mb: {NOT_YET}; not enforced (use max_file_size_mb)",
    f"t.yaml:25: sandbox.ignore_patterns: {NOT_YET}; sandboxes are not preserved by pattern",
    f"t.yaml:29: run_limits.expected_turns: {NOT_YET}; not enforced",
    f"t.yaml:30: run_limits.turn_timeout: {NOT_YET}; task_timeout bounds the whole agent run",
    f"t.yaml:31: run_limits.max_input_tokens: {NOT_YET}; use max_total_tokens",
    f"t.yaml:32: run_limits.max_output_tokens: {NOT_YET}; use agent.max_tokens",
    f"t.yaml:33: run_limits.count_cached_input: {NOT_YET}; not supported",
    f"t.yaml:34: run_limits.count_cache_creation: {NOT_YET}; not supported",
    f"t.yaml:39: success_criteria[0].stop_when: {NOT_YET}; the criterion is checked once, "
    "after the agent finishes",
    f"t.yaml:40: success_criteria[0].stop_early: {NOT_YET}; the criterion is checked once, "
    "after the agent finishes",
    f"t.yaml:41: success_criteria[0].read_only: {NOT_YET}; criteria run in the row's sandbox "
    "after the agent",
    "t.yaml:35: run_limits.stop_early: true has no effect: a criterion's own stop_early arms "
    "it, and false disarms them all (Coder Eval's newest refuses true)",
]


def test_each_coder_eval_field_not_implemented_is_warned_once_by_name(tmp_path: Path) -> None:
    path = write(tmp_path / "t.yaml", EVERY_WARNED_FIELD)
    for command in ("plan", "run"):
        done = assay(command, str(path), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        warnings = [line for line in done.stderr.splitlines() if line.startswith("warning: ")]
        assert warnings == [f"warning: {w}" for w in WARNINGS], command


def test_the_warned_fields_above_are_every_field_assay_only_warns_about() -> None:
    """A field added to a ``coder_eval_only`` list must be added to the test above."""
    models: dict[str, type[StrictModel]] = {
        "": TaskDefinition, "agent.": AgentBase, "sandbox.": SandboxConfig,
        "sandbox.limits.": SandboxLimits, "run_limits.": RunLimits,
        "success_criteria[0].": CriterionSpec, "sandbox.docker.": DockerConfig,
    }  # fmt: skip
    declared = {prefix + name for prefix, model in models.items() for name in model.coder_eval_only}
    warned = {w.split(": ")[1] for w in WARNINGS if NOT_YET in w}
    assert warned == declared
    page = (Path(__file__).resolve().parents[2] / "docs" / "compatibility.md").read_text()
    for named in (
        "`expected_commands`",
        "criterion `stop_when`",
        "`sandbox.python|node|ignore_patterns`",
        "`sandbox.limits.max_disk_mb|timeout`",
        "`agent.permission_mode|allowed_tools|…`",
        "`run_limits.turn_timeout|expected_turns|max_input_tokens|max_output_tokens|…`",
    ):
        assert named in " ".join(page.split()), named  # fmt: skip


def test_an_experiment_file_has_no_coder_eval_field_left_to_warn_about(tmp_path: Path) -> None:
    """A variant's ``simulation`` was the last one; dialog mode merges it now
    (tests/orchestration/test_dialog.py)."""
    write(tmp_path / "t.yaml", EVERY_WARNED_FIELD.split("simulation:")[0]
          + "simulation: {goal: g, model: mock/echo}\n"
          + "agent: {type: llm, model: mock/echo}\n"
          + "success_criteria:\n  - {type: response_match, expected: x}\n")  # fmt: skip
    write(tmp_path / "e.yaml", "experiment_id: e\nvariants:\n  - variant_id: v\n"
          "    simulation: {enabled: true}\n    driver: tempdir\n")  # fmt: skip
    done = assay("plan", "t.yaml", "-e", "e.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("warning: ")] == []
    assert dict(Variant.coder_eval_only) == {}  # a variant's driver and simulation are used


def test_a_coder_eval_field_set_by_a_variant_or_d_is_refused(tmp_path: Path) -> None:
    """Set on purpose from outside the task file, it would have no effect: refused, saying so."""
    write(tmp_path / "t.yaml", EVERY_WARNED_FIELD.split("simulation:")[0]
          + "agent: {type: llm, model: mock/echo}\n"
          + "success_criteria:\n  - {type: response_match, expected: x}\n")  # fmt: skip
    write(tmp_path / "e.yaml", "experiment_id: e\nvariants:\n  - variant_id: v\n"
          "    agent: {permission_mode: acceptEdits}\n")  # fmt: skip
    assert refused(tmp_path, tmp_path / "t.yaml", "-e", "e.yaml") == [
        f"error: e.yaml:4: variants[0].agent.permission_mode: variant 'v': {NOT_YET}; {AGENT}, "
        "so setting it has no effect",
        "  hint: set by variant 'v' of the experiment file; remove it there",
    ]
    assert refused(tmp_path, tmp_path / "t.yaml", "-D", "run_limits.turn_timeout=3") == [
        f"error: t.yaml: run_limits.turn_timeout: {NOT_YET}; task_timeout bounds the whole agent "
        "run, so -D run_limits.turn_timeout=3 would have no effect",
        "  hint: remove the override",
    ]


@pytest.mark.parametrize(
    ("block", "lines"),
    [
        ("agent: {type: antigravity}\nsuccess_criteria:\n  - {type: response_match, expected: x}",
         ["error: t.yaml:4: agent.type: agent type 'antigravity' (from Coder Eval) is not "
          "implemented in assay yet",
          "  hint: use type 'command' to run its CLI (e.g. command: \"claude -p\"), or type "
          "'llm' to have a model answer the prompt"]),
        ("agent: {type: llm, model: mock/echo}\nsuccess_criteria:\n  - {type: quantum_grade}",
         ["error: t.yaml:6: success_criteria[0].type: unknown criterion type 'quantum_grade'",
          "  hint: one of: agent_judge, classification_match, cli_called, command_executed, "
          "commands_efficiency, file_check, file_contains, file_exists, file_matches_regex, "
          "import_check, json_check, llm_judge, pylint_score, pytest, qa, "
          "reference_comparison, response_match, run_command, skill_triggered, "
          "system_one_judge, tool_called, uipath_eval; a criterion of your own: give its class "
          "(criteria=[MyCriterion] to assay.run, plan or resume) or install its plugin; "
          "--skip-unsupported runs the rest of the file without it"]),
        ("agent: {type: llm, model: mock/echo}\nsuccess_criteria:\n  - {type: respnse_match}",
         ["error: t.yaml:6: success_criteria[0].type: unknown criterion type 'respnse_match'",
          "  hint: did you mean 'response_match'?"]),
        ("agent: {type: llm, model: mock/echo, temprature: 0}\n"
         "success_criteria:\n  - {type: response_match, expected: x}",
         ["error: t.yaml:4: agent.temprature: unknown field 'temprature'",
          "  hint: did you mean 'temperature'?"]),
    ],
)  # fmt: skip
def test_what_assay_does_not_run_is_refused_with_what_to_do(
    tmp_path: Path, block: str, lines: list[str]
) -> None:
    path = write(tmp_path / "t.yaml", f"task_id: t\ndescription: d\ninitial_prompt: x\n{block}\n")
    assert refused(tmp_path, path) == lines


# --- commands and sandboxes -----------------------------------------------------------------


def test_an_experiment_name_without_its_file(tmp_path: Path) -> None:
    path = model_task(tmp_path, "mock/echo")
    assert refused(tmp_path, path, "-e", "shots") == [
        "error: experiment file not found: shots",
        "  hint: give a file, or NAME for experiments/NAME.yaml",
    ]


def test_an_experiment_file_that_is_not_utf8_is_named_an_experiment_file(tmp_path: Path) -> None:
    path = model_task(tmp_path, "mock/echo")
    (tmp_path / "e.yaml").write_bytes(b"experiment_id: caf\xe9\n")
    lines = refused(tmp_path, path, "-e", "e.yaml")
    assert len(lines) == 1 and lines[0].startswith("error: e.yaml: experiment file is not UTF-8")


def test_resume_takes_no_task_files(tmp_path: Path) -> None:
    path = model_task(tmp_path, "mock/echo")
    done = assay("run", str(path), "--resume", "runs/x", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["error: --resume takes the task files from the run; "
                                        "give no tasks"]  # fmt: skip


def test_paths_that_leave_the_sandbox_are_load_errors(tmp_path: Path) -> None:
    text = """\
task_id: t
description: d
initial_prompt: x
agent: {type: llm, model: mock/echo}
success_criteria:
  - {type: file_exists, path: ../x}
  - {type: file_exists, path: /etc/passwd}
"""
    assert refused(tmp_path, write(tmp_path / "t.yaml", text)) == [
        "error: t.yaml:6: success_criteria[0].path: path '../x' leaves the sandbox ('..'); "
        "use a path inside it",
        "  also: t.yaml:7: success_criteria[1].path: path '/etc/passwd' is absolute; use a path "
        "inside the sandbox",
    ]


def test_evaluate_of_a_missing_prediction_file_names_it_as_one(tmp_path: Path) -> None:
    """Found by a newcomer: `assay evaluate nope.jsonl` said "run directory not found"."""
    done = assay("evaluate", "nope.jsonl", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (2, "error: prediction file not found: nope.jsonl\n")
