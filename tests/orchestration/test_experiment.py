"""Experiments: the layered merge and its provenance, prompt mutations, and refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.errors import TaskFileError
from assay.orchestration.loading.experiment import Override, apply_mutations
from assay.orchestration.planning.expand import Selectors
from assay.orchestration.planning.plan import PlanOptions, build_plan
from assay.spec.experiment import Prefix, Replace, Suffix, Template
from assay.spec.task import CommandAgent, LlmAgent
from tests.helpers import write

TASK = """\
task_id: t
description: d
initial_prompt: "Q: ${row.q}"
agent: {type: llm, model: mock/echo, temperature: 0.2, max_tokens: 10}
run_limits: {task_timeout: 40}
dataset:
  rows: [{id: a, q: one}, {id: b, q: two}, {id: c, q: three}]
success_criteria:
  - {type: response_match, expected: one, match: contains}
"""

EXPERIMENT = """\
experiment_id: exp
defaults:
  agent: {temperature: 0.9, system_prompt: "defaults system", max_tokens: 99}
  run_limits: {task_timeout: 10}
  prompt_mutations:
    - {type: prefix, content: "FIRST"}
variants:
  - variant_id: base
  - variant_id: hot
    agent: {temperature: 1.5}
    prompt_mutations:
      - {type: suffix, content: "LAST", separator: " "}
  - variant_id: cmd
    agent: {type: command, command: "echo ${ASSAY_ROW_ID}"}
"""


def plan_for(tmp_path: Path, experiment: str = EXPERIMENT, **options: object):  # type: ignore[no-untyped-def]
    write(tmp_path / "t.yaml", TASK)
    write(tmp_path / "experiments" / "exp.yaml", experiment)
    return build_plan([str(tmp_path / "t.yaml")],
                      PlanOptions(experiment=str(tmp_path / "experiments" / "exp.yaml"),
                                  **options))  # type: ignore[arg-type]  # fmt: skip


def variants(plan):  # type: ignore[no-untyped-def]
    return {v.variant_id: v for v in plan.tasks[0].variants}


def test_precedence_defaults_task_variant_cli(tmp_path: Path) -> None:
    experiment = EXPERIMENT.split("  - variant_id: cmd")[0]
    plan = plan_for(tmp_path, experiment, overrides=(Override(("agent", "max_tokens"), 5),))
    base, hot = variants(plan)["base"], variants(plan)["hot"]
    assert isinstance(base.definition.agent, LlmAgent)
    # the task (0.2) beats the experiment defaults (0.9); the variant (1.5) beats the task
    assert base.definition.agent.temperature == 0.2
    assert base.provenance["agent.temperature"] == "task"
    assert hot.definition.agent.temperature == 1.5  # type: ignore[union-attr]
    assert hot.provenance["agent.temperature"] == "variant"
    # set only in the defaults: it survives the task's agent block (mappings merge)
    assert base.definition.agent.system_prompt == "defaults system"
    assert base.provenance["agent.system_prompt"] == "experiment-defaults"
    # the command line beats everything
    assert base.definition.agent.max_tokens == 5
    assert base.provenance["agent.max_tokens"] == "cli"
    assert base.definition.run_limits.task_timeout == 40


def test_changing_agent_type_replaces_the_agent(tmp_path: Path) -> None:
    cmd = variants(plan_for(tmp_path))["cmd"]
    assert isinstance(cmd.definition.agent, CommandAgent)
    assert cmd.provenance["agent.type"] == "variant"


def test_mutations_apply_defaults_first_then_the_variant(tmp_path: Path) -> None:
    found = variants(plan_for(tmp_path))
    assert found["base"].definition.initial_prompt == "FIRST\n\nQ: ${row.q}"
    assert found["hot"].definition.initial_prompt == "FIRST\n\nQ: ${row.q} LAST"


def test_every_variant_runs_the_identical_rows(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, selectors=Selectors(sample=2))
    items = plan.work_items()
    by_variant: dict[str, list[str | None]] = {}
    for item in items:
        by_variant.setdefault(item.variant_id, []).append(item.row_task.row_id)
    assert len(by_variant) == 3
    assert len({tuple(ids) for ids in by_variant.values()}) == 1
    assert item.resolve().initial_prompt is not None


def test_mutation_kinds() -> None:
    mutations = [
        Prefix(type="prefix", content="P", separator="|"),
        Suffix(type="suffix", content="S"),
        Replace(type="replace", pattern="a.c", replacement="X"),
        Replace(type="replace", pattern=r"\d+", replacement=r"#\1", regex=True),
        Template(type="template", variables={"name": "Ada"}),
    ]
    text = apply_mutations("abc a.c 42 {name} {other}", mutations)
    assert text == "P|abc X #\\1 Ada {other}\n\nS"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("  - variant_id: v\n    dataset: {rows: []}\n", "a variant cannot change the dataset"),
        ("  - variant_id: v\n    initial_prompt: a\n    prompt_mutations: []\n",
         "set only one of initial_prompt, prompt_mutations"),
        ("  - variant_id: v\n  - variant_id: v\n", "variant_id 'v' appears twice"),
        ("  - variant_id: run.json\n", "is the name of a run file"),
        ("  - variant_id: v\n    agnt: {}\n", "unknown field 'agnt'"),
    ],
)  # fmt: skip
def test_invalid_experiments_are_refused(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(TaskFileError) as caught:
        plan_for(tmp_path, "experiment_id: e\nvariants:\n" + body)
    assert message in str(caught.value)


def test_a_variant_prompt_needing_a_missing_field_is_a_load_error(tmp_path: Path) -> None:
    experiment = (
        "experiment_id: e\nvariants:\n  - variant_id: v\n    initial_prompt: '${row.nope}'\n"
    )
    from assay.errors import DatasetError

    with pytest.raises(DatasetError, match=r"\$\{row.nope\}: key not found"):
        plan_for(tmp_path, experiment)


def test_override_parsing() -> None:
    assert Override.parse("agent.temperature=0.7") == Override(("agent", "temperature"), 0.7)
    assert Override.parse("agent.labels=[a, b]").value == ["a", "b"]
    assert Override.parse("agent.system_prompt=") == Override(("agent", "system_prompt"), "")
    # a prompt template is text, not YAML's flow mapping {question: null}
    assert Override.parse("qa.templates.choice={question}").value == "{question}"
    assert Override.parse("agent.json_schema={type: object}").value == {"type": "object"}
    with pytest.raises(Exception, match="-D takes path=value"):
        Override.parse("nonsense")


def test_cli_override_invalid_for_one_variant_names_it(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError) as caught:
        plan_for(tmp_path, overrides=(Override(("agent", "max_tokens"), 5),))
    assert "variant 'cmd'" in caught.value.message
    assert caught.value.field == "agent.max_tokens"
    assert caught.value.hint == (
        "valid fields here: command, env, env_passthrough, type; set by -D on the command line"
    )


def test_work_items_are_made_when_read_in_variant_task_row_replicate_order(
    tmp_path: Path,
) -> None:
    plan = plan_for(tmp_path, repeats=2)
    items = plan.work_items()
    expected = [  # the order a nested loop gives, written out independently
        (variant.variant_id, row_task.row_id, replicate)
        for position, _ in enumerate(plan.variants)
        for planned in plan.tasks
        for variant in [planned.variants[position]]
        for row_task in list(planned.expansion.row_tasks)
        for replicate in range(2)
    ]
    assert len(items) == len(expected) == plan.work_item_count() > 6
    listed = [(i.variant_id, i.row_task.row_id, i.replicate) for i in items]
    assert listed == expected
    assert [i.index for i in items] == list(range(len(expected)))
    for index in (0, 1, 5, len(expected) - 1, -1):  # random access gives the same item
        item = items[index]
        assert (item.variant_id, item.row_task.row_id, item.replicate) == expected[index]
    assert [i.index for i in items[2:5]] == [2, 3, 4]
    with pytest.raises(IndexError):
        items[len(expected)]


def test_pending_items_are_the_unkept_ones_in_plan_order(tmp_path: Path) -> None:
    from assay.orchestration.running.executors import PendingItems

    items = plan_for(tmp_path).work_items()
    kept = bytearray(len(items))
    for done in (0, 2, 3, len(items) - 1):
        kept[done] = 1
    pending = PendingItems(items, kept)
    expected = [i for i in range(len(items)) if not kept[i]]
    assert len(pending) == len(expected)
    assert [item.index for item in pending] == expected
    assert list(pending.indexes()) == expected  # the same, without making the items
    assert pending[2].index == 2  # looked up by its index in the plan, pending or not
    assert list(PendingItems(items, bytearray(b"\x01" * len(items)))) == []
