"""The experiment loader's error paths and list joins, each with its message."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.errors import TaskFileError
from assay.orchestration.loading.experiment import Override, load_experiment
from assay.orchestration.planning.plan import PlanOptions, build_plan
from tests.helpers import write
from tests.orchestration.test_experiment import TASK, plan_for, variants


def test_an_experiment_file_is_a_mapping(tmp_path: Path) -> None:
    path = write(tmp_path / "e.yaml", "- variant_id: v\n")
    with pytest.raises(TaskFileError) as info:
        load_experiment(str(path))
    assert str(info.value) == f"{path}:1: an experiment file is a YAML mapping"


def test_an_experiment_name_reads_experiments_name_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "experiments" / "shots.yaml", "experiment_id: shots\nvariants:\n"
          "  - variant_id: a\n  - variant_id: b\n")  # fmt: skip
    monkeypatch.chdir(tmp_path)
    experiment, path, warnings = load_experiment("shots")
    assert [v.variant_id for v in experiment.variants] == ["a", "b"]
    assert path == Path("experiments/shots.yaml") and warnings == []


def test_a_d_value_that_is_not_yaml_is_taken_as_text() -> None:
    assert Override.parse("agent.system_prompt=[unclosed").value == "[unclosed"


def test_a_merged_value_of_the_wrong_type_names_the_variant_and_who_set_it(
    tmp_path: Path,
) -> None:
    experiment = "experiment_id: e\nvariants:\n  - variant_id: hot\n    agent: {temperature: hot}\n"
    with pytest.raises(TaskFileError) as info:
        plan_for(tmp_path, experiment)
    assert info.value.message == "variant 'hot': expected a number, got the text 'hot'"
    assert info.value.field == "variants[0].agent.temperature"  # where to fix it
    assert (Path(info.value.file or "").name, info.value.line) == ("exp.yaml", 4)
    assert info.value.hint == "set by variant 'hot' of the experiment file"


def test_an_unreadable_initial_prompt_file_names_the_variant(tmp_path: Path) -> None:
    experiment = (
        "experiment_id: e\nvariants:\n  - variant_id: v\n    initial_prompt_file: nope.txt\n"
    )
    with pytest.raises(TaskFileError) as info:
        plan_for(tmp_path, experiment)
    missing = tmp_path / "experiments" / "nope.txt"
    assert info.value.message == (
        f"variant 'v': cannot read initial_prompt_file {missing}: No such file or directory"
    )


def test_defaults_and_variants_join_the_tasks_lists(tmp_path: Path) -> None:
    write(tmp_path / "tpl" / "a.txt", "a")
    task = TASK.replace("success_criteria:", "pre_run: [{command: 'echo task'}]\n"
                        "post_run: [{command: 'echo task-post'}]\nsuccess_criteria:")  # fmt: skip
    write(tmp_path / "t.yaml", task)
    write(tmp_path / "e.yaml", f"""\
experiment_id: e
defaults:
  pre_run: [{{command: echo defaults}}]
  post_run: [{{command: echo defaults-post}}]
variants:
  - variant_id: v
    template_sources: [{{type: template_dir, path: {tmp_path / "tpl"}}}]
""")  # fmt: skip
    plan = build_plan([str(tmp_path / "t.yaml")], PlanOptions(experiment=str(tmp_path / "e.yaml")))
    definition = variants(plan)["v"].definition
    assert [c.command for c in definition.pre_run] == ["echo defaults", "echo task"]
    assert [c.command for c in definition.post_run] == ["echo task-post", "echo defaults-post"]
    sources = definition.sandbox.template_sources or []
    assert [s.type for s in sources] == ["template_dir"]


def test_a_qa_tasks_mutations_apply_to_each_built_prompt(tmp_path: Path) -> None:
    write(tmp_path / "q.jsonl", '{"sample_id": "s1", "story": "S.", "question": "Q?", '
          '"answer": {"correct_answers": ["A"]}, "meta": {}}\n')  # fmt: skip
    write(tmp_path / "q.yaml", "task_id: q\ndescription: d\nagent: {type: llm, model: mock/echo}\n"
          "dataset: {paths: [q.jsonl]}\nqa: {}\n")  # fmt: skip
    write(tmp_path / "e.yaml", "experiment_id: e\nvariants:\n  - variant_id: v\n"
          "    prompt_mutations: [{type: prefix, content: FIRST}]\n")  # fmt: skip
    plan = build_plan([str(tmp_path / "q.yaml")], PlanOptions(experiment=str(tmp_path / "e.yaml")))
    resolved = variants(plan)["v"]
    qa = resolved.definition.qa
    assert qa is not None
    assert [m.content for m in qa.prompt_mutations] == ["FIRST"]  # type: ignore[union-attr]
    assert resolved.provenance["qa.prompt_mutations"] == "variant"


def test_variant_and_task_ids_that_differ_only_in_case_are_warned_about(tmp_path: Path) -> None:
    """``Fast`` and ``fast`` are two folders here and one on macOS's and Windows's default
    file systems (one variant's rows would replace the other's): said, as for row ids."""
    plan = plan_for(tmp_path, "experiment_id: e\nvariants:\n  - variant_id: Fast\n"
                              "  - variant_id: slow\n  - variant_id: fast\n")  # fmt: skip
    said = [w for w in plan.warnings if "differ only in case" in w]
    assert len(said) == 1 and "variant ids differ only in case ('Fast' and 'fast'; 1 in all)" \
        in said[0] and "case-insensitive file system" in said[0]  # fmt: skip
    write(
        tmp_path / "u.yaml", (tmp_path / "t.yaml").read_text().replace("task_id: t", "task_id: T")
    )
    both = build_plan([str(tmp_path / "t.yaml"), str(tmp_path / "u.yaml")], PlanOptions())
    assert [w for w in both.warnings if "differ only in case" in w] == [
        "task ids differ only in case ('t' and 'T'; 1 in all): on a case-insensitive file "
        "system (macOS's and Windows's default) they would share one folder, one's results "
        "replacing the other's; rename them where runs may be written there"
    ]
    alone = build_plan([str(tmp_path / "t.yaml")], PlanOptions())
    assert not [w for w in alone.warnings if "differ only in case" in w]
