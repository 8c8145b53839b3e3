"""load_task: validation errors name file, line and field; Coder Eval fields warn; lints."""

from __future__ import annotations

from pathlib import Path

import pytest

import assay
from assay.errors import TaskFileError
from assay.orchestration.loading.task_loader import load_task
from assay.spec.task import CommandAgent, LlmAgent, NoneAgent
from tests.helpers import write

MINIMAL = """\
task_id: demo
description: a demo
initial_prompt: "say ${row.text}"
dataset:
  rows:
    - {id: a, text: hello}
success_criteria:
  - type: response_match
    expected: hello
"""


def load(tmp_path: Path, text: str, name: str = "task.yaml") -> object:
    return load_task(write(tmp_path / name, text))


def error_of(tmp_path: Path, text: str) -> TaskFileError:
    with pytest.raises(TaskFileError) as caught:
        load_task(write(tmp_path / "task.yaml", text))
    return caught.value


def test_minimal_task_loads_with_llm_default(tmp_path: Path) -> None:
    loaded = load_task(write(tmp_path / "task.yaml", MINIMAL))
    assert loaded.definition.task_id == "demo"
    assert isinstance(loaded.definition.agent, LlmAgent)
    assert loaded.definition.agent.model == "local/smollm2"
    assert loaded.warnings == []


def test_unknown_top_level_field_suggests(tmp_path: Path) -> None:
    error = error_of(tmp_path, MINIMAL + "succes_criteria: []\n")
    assert error.field == "succes_criteria"
    assert error.line == 10
    assert error.hint == "did you mean 'success_criteria'?"
    assert "task.yaml:10: succes_criteria: unknown field 'succes_criteria'" in str(error)


def test_unknown_nested_criterion_field_names_its_path_and_line(tmp_path: Path) -> None:
    text = MINIMAL.replace("    expected: hello\n", "    expected: hello\n    mach: exact\n")
    error = error_of(tmp_path, text)
    assert error.field == "success_criteria[0].mach"
    assert error.line == 10
    assert error.hint == "did you mean 'match'?"


def test_unknown_agent_field_suggests(tmp_path: Path) -> None:
    text = MINIMAL + "agent: {type: command, command: cat, comand: x}\n"
    error = error_of(tmp_path, text)
    assert error.field == "agent.comand"
    assert error.hint == "did you mean 'command'?"


def test_unknown_criterion_type_suggests(tmp_path: Path) -> None:
    error = error_of(tmp_path, MINIMAL.replace("response_match", "respons_match"))
    assert error.field == "success_criteria[0].type"
    assert "unknown criterion type 'respons_match'" in error.message
    assert error.hint == "did you mean 'response_match'?"


def test_a_criterion_type_assay_does_not_have_names_skip_unsupported(tmp_path: Path) -> None:
    error = error_of(tmp_path, MINIMAL.replace("response_match", "quantum_grade"))
    assert error.message == "unknown criterion type 'quantum_grade'"
    assert error.hint is not None and error.hint.startswith("one of: agent_judge, ")
    assert error.hint.endswith(", uipath_eval; a criterion of your own: give its class "
                               "(criteria=[MyCriterion] to assay.run, plan or resume) or install "
                               "its plugin; --skip-unsupported runs the rest of the file without "
                               "it")  # fmt: skip


def test_coder_eval_agent_not_implemented_points_to_command(tmp_path: Path) -> None:
    error = error_of(tmp_path, MINIMAL + "agent: {type: antigravity}\n")
    assert error.field == "agent.type"
    assert "agent type 'antigravity' (from Coder Eval) is not implemented" in error.message
    assert error.hint is not None and "type 'command'" in error.hint


def test_coder_eval_only_fields_warn_once_each(tmp_path: Path) -> None:
    text = MINIMAL + (
        "agent: {type: command, command: cat, permission_mode: acceptEdits, allowed_tools: [W]}\n"
        "sandbox: {python: {version: '3.11'}}\n"
        "simulation: {enabled: false}\n"  # dialog mode: implemented, loads quietly
    )
    loaded = load_task(write(tmp_path / "task.yaml", text))
    assert isinstance(loaded.definition.agent, CommandAgent)
    names = [w.split(": ")[1] for w in loaded.warnings]
    assert names == [
        "agent.permission_mode",
        "agent.allowed_tools",
        "sandbox.python",
    ]
    assert all("a Coder Eval field that assay does not implement yet" in w for w in loaded.warnings)


def test_null_coder_eval_field_does_not_warn(tmp_path: Path) -> None:
    loaded = load_task(write(tmp_path / "task.yaml", MINIMAL + "sandbox: {python: null}\n"))
    assert loaded.warnings == []


def test_writer_only_fields_are_rejected(tmp_path: Path) -> None:
    error = error_of(tmp_path, MINIMAL + "suite_id: x\n")
    assert error.field == "suite_id"
    assert "written by assay" in error.message


def test_missing_required_field_named(tmp_path: Path) -> None:
    error = error_of(tmp_path, MINIMAL.replace("description: a demo\n", ""))
    assert error.field == "description"
    assert error.message.startswith("required field is missing")


def test_missing_criterion_field_named_through_union(tmp_path: Path) -> None:
    text = MINIMAL + "  - type: run_command\n"
    error = error_of(tmp_path, text)
    assert error.field == "success_criteria[1].command"
    assert error.line == 10


@pytest.mark.parametrize(
    ("dataset", "message"),
    [
        ("dataset: {id_field: id}\n", "Dataset must specify either 'paths' or 'rows'"),
        (
            "dataset: {rows: [{id: a}], paths: [x.jsonl]}\n",
            "Dataset must specify only one of 'paths' or 'rows'",
        ),
        ("dataset: {paths: []}\n", "Dataset.paths must be a non-empty list"),
    ],
)
def test_dataset_source_messages(tmp_path: Path, dataset: str, message: str) -> None:
    text = (
        'task_id: demo\ndescription: d\ninitial_prompt: "say ${row.text}"\n'
        + dataset
        + "success_criteria:\n  - type: response_match\n    expected: hello\n"
    )
    error = error_of(tmp_path, text)
    assert error.message.startswith(message)
    assert error.field == "dataset"


def test_sample_seed_true_is_not_a_seed(tmp_path: Path) -> None:
    text = MINIMAL.replace("dataset:\n", "dataset:\n  sample_seed: true\n")
    error = error_of(tmp_path, text)
    assert error.field == "dataset.sample_seed"


def test_sample_seed_zero_is_a_seed(tmp_path: Path) -> None:
    text = MINIMAL.replace("dataset:\n", "dataset:\n  sample_seed: 0\n")
    loaded = load_task(write(tmp_path / "task.yaml", text))
    assert loaded.definition.dataset is not None
    assert loaded.definition.dataset.sample_seed == 0


def test_criterion_path_outside_sandbox_rejected(tmp_path: Path) -> None:
    for bad in ("../x.txt", "/etc/passwd", "a/../../b"):
        text = MINIMAL.replace("    expected: hello\n", f"    expected: hello\n    path: '{bad}'\n")
        error = error_of(tmp_path, text)
        assert error.field == "success_criteria[0].path", bad


def test_suite_threshold_typo_suggests_metric(tmp_path: Path) -> None:
    text = MINIMAL.replace(
        "  - type: response_match\n    expected: hello\n",
        "  - type: classification_match\n    expected_label: a\n    allowed_labels: [a, b]\n"
        "    suite_thresholds: {recall.positve: 0.5}\n",
    )
    error = error_of(tmp_path, text)
    assert error.field == "success_criteria[0].suite_thresholds.recall.positve"
    assert error.hint is not None and error.hint.startswith("did you mean")


def test_suite_thresholds_need_a_dataset(tmp_path: Path) -> None:
    text = (
        "task_id: t\ndescription: d\ninitial_prompt: hi\n"
        "success_criteria:\n  - type: response_match\n    expected: x\n"
        "    suite_thresholds: {mean: 0.5}\n"
    )
    error = error_of(tmp_path, text)
    assert "only valid on tasks that declare a dataset" in error.message


def test_none_agent_forbids_a_prompt(tmp_path: Path) -> None:
    error = error_of(tmp_path, MINIMAL + "agent: {type: none}\n")
    assert "agent type 'none' runs no agent" in error.message


@pytest.mark.parametrize("command", ['[""]', '["  ", "x"]', "[]", '" "'])
def test_a_command_agent_without_a_program_is_refused_with_its_line(
    tmp_path: Path, command: str
) -> None:
    error = error_of(tmp_path, MINIMAL + f"agent:\n  type: command\n  command: {command}\n")
    assert "task.yaml:12: agent.command:" in str(error)
    assert "empty" in error.message


def test_none_agent_without_prompt_loads(tmp_path: Path) -> None:
    text = MINIMAL.replace('initial_prompt: "say ${row.text}"\n', "") + "agent: {type: none}\n"
    loaded = load_task(write(tmp_path / "task.yaml", text))
    assert isinstance(loaded.definition.agent, NoneAgent)


def test_prompt_required_for_an_agent(tmp_path: Path) -> None:
    error = error_of(tmp_path, MINIMAL.replace('initial_prompt: "say ${row.text}"\n', ""))
    assert "Either 'initial_prompt' or 'initial_prompt_file' must be set" in error.message


def test_initial_prompt_file_is_read_relative_to_task(tmp_path: Path) -> None:
    write(tmp_path / "sub" / "prompt.md", "Classify: ${row.text}\n")
    text = MINIMAL.replace('initial_prompt: "say ${row.text}"', "initial_prompt_file: prompt.md")
    loaded = load_task(write(tmp_path / "sub" / "task.yaml", text))
    assert loaded.definition.initial_prompt == "Classify: ${row.text}"


def test_missing_prompt_file_is_an_error_with_line(tmp_path: Path) -> None:
    text = MINIMAL.replace('initial_prompt: "say ${row.text}"', "initial_prompt_file: nope.md")
    error = error_of(tmp_path, text)
    assert error.field == "initial_prompt_file"
    assert error.line == 3


def test_invalid_yaml_reports_line(tmp_path: Path) -> None:
    error = error_of(tmp_path, "task_id: x\ndescription: [unclosed\n")
    assert error.message.startswith("invalid YAML")
    assert error.line is not None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("2024-02-30", "'2024-02-30' is not a valid timestamp (day is out of range for month)"),
        ("2024-13-45", "'2024-13-45' is not a valid timestamp (month must be in 1..12)"),
        ("!!int abc", "'abc' is not a valid int (invalid literal for int() with base 10: 'abc')"),
        ("!!float x", "'x' is not a valid float (could not convert string to float: 'x')"),
        ("!!timestamp nope", "'nope' is not a valid timestamp"),
    ],
)
def test_a_value_yaml_cannot_make_is_named_at_its_line(
    tmp_path: Path, value: str, message: str
) -> None:
    """PyYAML raises its constructors' own errors (a traceback, exit 1) without a line."""
    error = error_of(tmp_path, MINIMAL.replace("text: hello}", f"text: {value}}}"))
    assert error.message == "invalid YAML: " + message
    assert error.line == 6
    assert error.hint is not None and error.hint.startswith("quote it")


def test_an_alias_inside_its_own_value_is_an_error(tmp_path: Path) -> None:
    error = error_of(tmp_path, MINIMAL.replace("text: hello}", "text: &a [*a]}"))
    assert "a YAML alias names a value that holds it" in error.message
    assert (error.line, error.field) == (6, "dataset.rows[0].text[0]")


def test_yaml_dates_in_rows_are_iso_text_and_octal_is_warned(tmp_path: Path) -> None:
    """The prompt got str(datetime) ('2024-01-02 03:04:05+00:00') while task.json recorded
    '…T03:04:05Z'; 012 became 10 without a word."""
    text = MINIMAL.replace("text: hello}", "text: hello, ts: 2024-01-02T03:04:05Z, "
                           "day: 2024-01-02, zip: 012, kept: '012'}")  # fmt: skip
    loaded = assay.load_task(write(tmp_path / "task.yaml", text))
    assert loaded.definition.dataset is not None and loaded.definition.dataset.rows is not None
    row = loaded.definition.dataset.rows[0]
    assert (row["ts"], row["day"], row["zip"], row["kept"]) == (
        "2024-01-02T03:04:05+00:00", "2024-01-02", 10, "012")  # fmt: skip
    octal = [w for w in loaded.warnings if "octal" in w]
    assert len(octal) == 1 and ":6: dataset.rows[0].zip: YAML reads the unquoted 012 as a " in (
        octal[0])  # fmt: skip
    others = MINIMAL.replace("text: hello}", "text: hello, t: 1:30, h: 0x1F, b: 0b101, n: 10}")
    warned = assay.load_task(write(tmp_path / "others.yaml", others)).warnings
    assert [w.split(": ", 2)[1] for w in warned if "as a number" in w] == [
        "dataset.rows[0].t", "dataset.rows[0].h", "dataset.rows[0].b"]  # fmt: skip
    binary = error_of(tmp_path, MINIMAL.replace("text: hello}", "text: !!binary aGVsbG8=}"))
    assert "dataset.rows[0].text holds bytes data, which a row cannot hold" in binary.message


def test_duplicate_yaml_key_is_an_error(tmp_path: Path) -> None:
    error = error_of(tmp_path, MINIMAL + "task_id: again\n")
    assert error.field == "task_id"
    assert "appears twice" in error.message


def test_not_a_mapping(tmp_path: Path) -> None:
    error = error_of(tmp_path, "- a\n- b\n")
    assert "a task file is a YAML mapping" in error.message


def test_directory_is_not_a_task_file(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match="expected a YAML task file but got a directory"):
        load_task(tmp_path)


def test_prompt_without_placeholder_warns(tmp_path: Path) -> None:
    loaded = load_task(write(tmp_path / "t.yaml", MINIMAL.replace("${row.text}", "hello")))
    assert any("has no ${row.<field>} placeholder" in w for w in loaded.warnings)


@pytest.mark.parametrize("look", ["{row.text}", "{{row.text}}", "{{ row.text }}", "$row.text"])
def test_lookalike_placeholders_warn(tmp_path: Path, look: str) -> None:
    loaded = load_task(write(tmp_path / "t.yaml", MINIMAL.replace("${row.text}", look)))
    assert any(f"{look!r} looks like a placeholder" in w for w in loaded.warnings)


def test_lookalike_in_criteria_warns(tmp_path: Path) -> None:
    loaded = load_task(
        write(tmp_path / "t.yaml", MINIMAL.replace("expected: hello", "expected: '{row.x}'"))
    )
    assert any("success_criteria" in w and "looks like a placeholder" in w for w in loaded.warnings)


def test_placeholder_in_unsubstituted_field_warns(tmp_path: Path) -> None:
    loaded = load_task(write(tmp_path / "t.yaml", MINIMAL.replace("a demo", "demo ${row.text}")))
    assert any(w.split(": ")[1] == "description" for w in loaded.warnings)


def test_llm_agent_model_needs_provider(tmp_path: Path) -> None:
    error = error_of(tmp_path, MINIMAL + "agent: {type: llm, model: smollm2}\n")
    assert "must be named provider/name" in error.message


def test_completion_format_rejects_few_shot(tmp_path: Path) -> None:
    text = MINIMAL + (
        "agent:\n  type: llm\n  prompt_format: completion\n  few_shot: [{user: a, assistant: b}]\n"
    )
    error = error_of(tmp_path, text)
    assert "write the system prompt and examples into initial_prompt" in error.message


def test_bad_regex_in_file_check_is_a_load_error(tmp_path: Path) -> None:
    text = MINIMAL.replace(
        "  - type: response_match\n    expected: hello\n",
        "  - type: file_check\n    path: out.txt\n    patterns: [{pattern: '(unclosed'}]\n",
    )
    error = error_of(tmp_path, text)
    assert "not a valid regex" in error.message


def test_unquoted_yes_gets_a_yaml_hint(tmp_path: Path) -> None:
    error = error_of(tmp_path, MINIMAL.replace("expected: hello", "expected: yes"))
    assert error.field == "success_criteria[0].expected"
    assert error.message.startswith("expected text but YAML read a boolean (True)")
    assert error.hint is not None and "quote the value" in error.hint


def test_unquoted_numbers_get_a_yaml_hint_said_once(tmp_path: Path) -> None:
    text = MINIMAL.replace(
        "  - type: response_match\n    expected: hello\n",
        "  - type: classification_match\n    expected_label: '1'\n    allowed_labels: [1, 0]\n",
    )
    error = error_of(tmp_path, text)
    assert error.field == "success_criteria[0].allowed_labels[0]"
    assert error.message.startswith("expected text but YAML read a number (1)")
    assert "allowed_labels[1]: expected text but YAML read a number (0)" in error.message
    assert "hint" not in error.message  # the one hint is the error's own
    assert error.hint == 'quote the value to keep it text ("1", not 1): YAML reads it as a number'


def test_missing_template_dir_is_a_load_error(tmp_path: Path) -> None:
    text = MINIMAL + "sandbox:\n  template_sources:\n    - {type: template_dir, path: nope}\n"
    error = error_of(tmp_path, text)
    assert error.field == "sandbox.template_sources[0].path"
    assert error.message.startswith("template_dir not found:")
    assert error.line == 12


def test_a_template_dir_path_expands_environment_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As Coder Eval expands template paths (the path was taken as written: not found)."""
    write(tmp_path / "shared" / "tmpl" / "seed.txt", "seeded")
    text = (MINIMAL + "sandbox:\n  template_sources:\n"
            "    - {type: template_dir, path: '${TMPL_ROOT}/tmpl'}\n")  # fmt: skip
    monkeypatch.delenv("TMPL_ROOT", raising=False)
    error = error_of(tmp_path, text)
    assert error.message == "template_dir ${TMPL_ROOT}/tmpl names $TMPL_ROOT, which is not set"
    assert (error.field, error.line) == ("sandbox.template_sources[0].path", 12)
    monkeypatch.setenv("TMPL_ROOT", str(tmp_path / "shared"))
    # a command agent: the template is the point, not a model (the default starts SmolLM2)
    task = write(tmp_path / "ok.yaml", text + "agent: {type: command, command: 'echo go'}\n")
    (row,) = list(assay.run([str(task)], run_dir=str(tmp_path / "runs"), keep_sandboxes=True)
                  .rows())  # fmt: skip
    kept = tmp_path / "runs" / "latest" / "default" / str(row.task_id) / "00" / "sandbox"
    assert (kept / "seed.txt").read_text() == "seeded"


@pytest.mark.parametrize(
    "source",
    ["{type: starter_files, files: [{path: ../x, content: a}]}",
     "{type: template_dir, path: '.', mount_point: /abs}"],
)  # fmt: skip
def test_template_paths_may_not_leave_the_sandbox(tmp_path: Path, source: str) -> None:
    error = error_of(tmp_path, MINIMAL + f"sandbox:\n  template_sources:\n    - {source}\n")
    assert (error.field or "").startswith("sandbox.template_sources[0]")


@pytest.mark.parametrize("agent", ["{type: command, command: 'echo hi'}", "{type: llm}"])
def test_tool_criteria_on_an_agent_without_tool_calls_warn(tmp_path: Path, agent: str) -> None:
    write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: hi\n"
          f"agent: {agent}\nsuccess_criteria:\n"
          "  - {type: response_match, expected: hi}\n"
          "  - {type: tool_called, tool: Bash, description: ran bash}\n")  # fmt: skip
    loaded = load_task(tmp_path / "t.yaml")
    kind = "command" if "command" in agent else "llm"
    assert loaded.warnings == [
        f"{tmp_path / 't.yaml'}:7: success_criteria[1].type: criterion 'tool_called' reads the "
        f"agent's tool calls and commands, and an agent of type '{kind}' makes none: it finds "
        "none on any row (claude-code and codex record them)"
    ]


def test_a_mistake_is_answered_with_its_fix(tmp_path: Path) -> None:
    """A tab in the indentation, a run limit under ``agent:``, a list where the prompt needs
    text: each error's hint says what to do (they named the problem only)."""
    from assay import api
    from assay.errors import DatasetError

    with pytest.raises(TaskFileError) as caught:
        load(tmp_path, MINIMAL.replace("  - type: response_match", "\t- type: response_match"))
    assert caught.value.hint == "YAML indents with spaces only: replace the tab with spaces"
    with pytest.raises(TaskFileError) as caught:
        load(tmp_path, MINIMAL + "agent: {type: command, command: cat, max_turns: 3}\n")
    assert caught.value.field == "agent.max_turns"
    assert caught.value.hint == "it belongs in run_limits.max_turns: move it there"
    listed = write(tmp_path / "l.yaml", MINIMAL.replace("text: hello}", "text: [1, 2]}"))
    with pytest.raises(DatasetError) as found:
        api.plan([str(listed)])
    assert "give 'text' a text or a number in every row" in (found.value.hint or "")


@pytest.mark.parametrize(("body", "line", "field"), [
    ("agent: {type: none}\ninitial_prompt: hi\nsuccess_criteria:\n  - {type: file_exists, "
     "path: x}\n", 4, "initial_prompt"),
    ("agent: {type: none}\nsuccess_criteria:\n  - type: file_exists\n    path: x\n"
     "    suite_thresholds: {pass_rate: 0.5}\n", 7, "success_criteria[0].suite_thresholds"),
    ("agent: {type: none}\nsuccess_criteria:\n  - {type: file_exists, path: x}\n"
     "  - {type: reference_comparison, agent_file: a, reference_file: b}\n", 6,
     "success_criteria[1].type"),
])  # fmt: skip
def test_a_whole_task_check_names_the_field_and_its_line(
    tmp_path: Path, body: str, line: int, field: str
) -> None:
    """Checks across fields (a prompt for no agent, gates without a dataset, a reference
    comparison without a reference) point at the field that breaks them, not line 1."""
    with pytest.raises(TaskFileError) as caught:
        load(tmp_path, "task_id: t\ndescription: d\n" + body)
    assert (caught.value.line, caught.value.field) == (line, field)


@pytest.mark.parametrize(
    "loc", [("success_criteria", 0, "path"), ("agent", "plugins", 12, "path"), ("task_id",)]
)
def test_a_field_path_reads_back_as_its_place(loc: tuple[str | int, ...]) -> None:
    from assay.spec.source import field_loc, field_path

    assert field_loc(field_path(loc)) == loc


def test_an_agent_env_value_naming_a_host_variable_is_warned(tmp_path: Path) -> None:
    """A field report: ``Z_TOKEN: ${MY_SERVICE_TOKEN}`` gave the agent the 19 characters, not
    the token, without a word (values are passed as written, as in Coder Eval)."""
    text = (
        "task_id: t\ndescription: d\ninitial_prompt: p\nagent:\n  type: command\n"
        "  command: env\n  env:\n    Z_TOKEN: ${MY_SERVICE_TOKEN}\n    PLAIN: fine\n"
        "    COST: 5$\nsuccess_criteria:\n  - {type: file_exists, description: d, path: x}\n"
    )
    warnings = load_task(write(tmp_path / "t.yaml", text)).warnings
    assert [w.split("t.yaml:", 1)[1] for w in warnings] == [
        "8: agent.env.Z_TOKEN: '${MY_SERVICE_TOKEN}' is passed as written (agent.env values "
        "are not expanded); to give the agent a host variable, name it in "
        "agent.env_passthrough"
    ]


NUMBERS = """\
task_id: t
description: d
initial_prompt: go
agent: {{type: llm, model: mock/echo, temperature: {temperature}}}
success_criteria:
  - type: response_match
    expected: go
    weight: {weight}
    pass_threshold: {threshold}
    suite_thresholds: {{mean: {gate}}}
dataset: {{rows: [{{id: a}}]}}
"""


@pytest.mark.parametrize(("values", "line", "field", "message", "hint"), [
    ({"weight": '"0.5"'}, 8, "success_criteria[0].weight",
     "expected a number, got the text '0.5'", "write the number without quotes"),
    ({"weight": '"${row.w}"'}, 8, "success_criteria[0].weight",
     "expected a number, got the text '${row.w}'",
     "a ${row.…} placeholder is text: a number field takes a number as written"),
    ({"weight": "true"}, 8, "success_criteria[0].weight",
     "expected a number, got true", "write a number (true is not 1 here)"),
    ({"threshold": "yes"}, 9, "success_criteria[0].pass_threshold",
     "expected a number, got true", "write a number (true is not 1 here)"),
    ({"temperature": '"0.5"'}, 4, "agent.temperature",
     "expected a number, got the text '0.5'", "write the number without quotes"),
    ({"gate": '"0.8"'}, 10, "success_criteria[0].suite_thresholds.mean",
     "expected a number, got the text '0.8'", "write the number without quotes"),
])  # fmt: skip
def test_a_number_field_refuses_a_text_or_a_boolean(
    tmp_path: Path, values: dict[str, str], line: int, field: str, message: str, hint: str
) -> None:
    """As the task file's JSON Schema does (pydantic read ``true`` as 1 and ``"0.5"`` as
    0.5, so ``assay run`` took what an editor flagged)."""
    given = {"temperature": "0", "weight": "1", "threshold": "0.9", "gate": "0.5"} | values
    with pytest.raises(TaskFileError) as caught:
        load_task(write(tmp_path / "t.yaml", NUMBERS.format(**given)))
    error = caught.value
    assert (error.line, error.field, error.message, error.hint) == (line, field, message, hint)
    assert load_task(write(tmp_path / "ok.yaml", NUMBERS.format(
        temperature="1", weight="2", threshold="1", gate="1")))  # integers are numbers  # fmt: skip


@pytest.mark.parametrize(("text", "field", "line"), [
    ("initial_prompt: hi\ninitial_prompt_file: p.txt\nagent: {type: llm, model: mock/echo}\n",
     "initial_prompt_file", 4),
    ("initial_prompt: hi\nagent: {type: llm, model: mock/echo, system_prompt: s,\n"
     "  system_prompt_file: p.txt}\n", "agent.system_prompt_file", 5),
])  # fmt: skip
def test_a_text_and_its_file_both_set_is_refused(
    tmp_path: Path, text: str, field: str, line: int
) -> None:
    """As Coder Eval refuses it (the file silently replaced the inline prompt)."""
    write(tmp_path / "p.txt", "hello")
    body = "task_id: t\ndescription: d\n" + text
    body += "success_criteria: [{type: response_match, expected: hi}]\n"
    with pytest.raises(TaskFileError, match="not both") as caught:
        load_task(write(tmp_path / "t.yaml", body))
    assert (caught.value.field, caught.value.line) == (field, line)


def test_a_legacy_criterion_type_is_read_as_coder_eval_reads_it(tmp_path: Path) -> None:
    """``command_not_executed`` (an older Coder Eval's) is ``command_executed`` with
    ``min_count: 0, max_count: 0``, "must not run", with a warning (it was refused, and
    "did you mean 'command_executed'" would have meant the opposite)."""
    task = write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: hi\n"
                 "agent: {type: llm, model: mock/echo}\nsuccess_criteria:\n"
                 "  - {type: command_not_executed, command_pattern: 'rm -rf'}\n")  # fmt: skip
    loaded = load_task(task)
    (criterion,) = loaded.definition.success_criteria
    assert (criterion.type, criterion.min_count, criterion.max_count) == (  # type: ignore[attr-defined]
        "command_executed", 0, 0)  # fmt: skip
    assert loaded.warnings[0].endswith(
        "t.yaml:6: success_criteria[0].type: 'command_not_executed' is a legacy type, read as "
        "command_executed with min_count: 0, max_count: 0 (as Coder Eval reads it); write that "
        "instead"
    )
    (row,) = list(assay.run([str(task)], run_dir=str(tmp_path / "runs")).rows())
    assert row.success_criteria_results[0].score == 1.0  # nothing ran: "must not run" holds


def test_a_gate_on_a_label_metric_written_in_another_case_names_the_one_meant(
    tmp_path: Path,
) -> None:
    """``precision.A`` with ``allowed_labels: [a, b]``: the hint names ``precision.a`` (it
    named ``precision.b``, a closer string of another label)."""
    task = write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: '${row.x}'\n"
                 "agent: {type: llm, model: mock/echo}\ndataset: {rows: [{id: r, x: a}]}\n"
                 "success_criteria:\n  - type: classification_match\n    expected_label: a\n"
                 "    allowed_labels: [a, b]\n"
                 "    suite_thresholds: {precision.A: 0.5}\n")  # fmt: skip
    with pytest.raises(TaskFileError) as caught:
        load_task(task)
    assert caught.value.hint == "did you mean 'precision.a'? (metric names are matched as written)"


def test_a_run_limit_written_at_the_top_is_refused_with_where_it_belongs(tmp_path: Path) -> None:
    """A top-level ``max_turns`` (an older Coder Eval file's) was "unknown, ignored": the
    turn cap was silently lost."""
    error = error_of(tmp_path, MINIMAL + "max_turns: 3\n")
    assert (error.message, error.field, error.line) == ("unknown field 'max_turns'", "max_turns",
                                                        10)  # fmt: skip
    assert error.hint == "it belongs in run_limits.max_turns: move it there"


def test_model_on_a_folder_sets_the_agents_that_take_one_and_warns_for_the_others(
    tmp_path: Path,
) -> None:
    """``--model`` over a folder with a ``command`` task beside an ``llm`` one (the README
    runs folders so): the ``llm`` task takes it, the ``command`` task is left as written
    with a warning (the whole folder was refused: "unknown field 'model'")."""
    write(tmp_path / "tasks" / "llm.yaml", "task_id: l\ndescription: d\ninitial_prompt: hi\n"
          "agent: {type: llm, model: nosuch/x}\n"
          "success_criteria: [{type: response_match, expected: hi}]\n")  # fmt: skip
    write(tmp_path / "tasks" / "cmd.yaml", "task_id: c\ndescription: d\ninitial_prompt: hi\n"
          "agent: {type: command, command: 'echo hi'}\n"
          "success_criteria: [{type: response_match, expected: hi}]\n")  # fmt: skip
    plan = assay.plan([str(tmp_path / "tasks")], model="mock/echo")
    agents = {p.loaded.definition.task_id: p.loaded.definition.agent for p in plan.tasks}
    assert agents["l"].model == "mock/echo"  # type: ignore[union-attr]
    assert agents["c"].type == "command"
    assert any(w.endswith("cmd.yaml: --model mock/echo is not for this task: its agent takes no "
                          "model (left as written)") for w in plan.warnings)  # fmt: skip
    result = assay.run([str(tmp_path / "tasks")], model="mock/echo",
                       run_dir=str(tmp_path / "runs"))  # fmt: skip
    assert result.exit_code == 0


@pytest.mark.parametrize("url", ["127.0.0.1:18001/v1", "localhost", "ftp://host/v1", "http://"])
def test_a_base_url_without_scheme_or_host_is_a_load_error(tmp_path: Path, url: str) -> None:
    """It passed plan and every row was retried as an unreachable server."""
    text = ("task_id: b\ndescription: d\ninitial_prompt: x\n"
            f"agent: {{type: llm, model: openai/m, base_url: '{url}'}}\n"
            "success_criteria: [{type: response_match, expected: x}]\n")  # fmt: skip
    error = error_of(tmp_path, text)
    assert error.field == "agent.base_url" and error.line == 4
    assert "is not an http:// or https:// URL with a host" in error.message
