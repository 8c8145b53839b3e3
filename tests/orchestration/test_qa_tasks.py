"""Task files with a `qa:` block: what is refused at load and plan time (file, line, field),
and how QA rows become row-tasks (sample ids, folder ids, routing, store datasets)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from assay.errors import DatasetError, TaskFileError, UserError
from assay.orchestration.loading.qa_rows import folder_id
from assay.orchestration.loading.task_loader import load_task
from assay.orchestration.planning.expand import expand_dataset
from assay.orchestration.planning.plan import Plan, PlanOptions, build_plan
from assay.qa.schema import route
from assay.spec.criteria import QaCriterion
from assay.store import Schema, open_store
from tests.helpers import write

DATA = Path(__file__).resolve().parents[1] / "qa" / "data"  # the data team's files, copied
ROW = {"story": "s", "question": "q?", "answer": {"correct_answers": ["a"],
       "wrong_answers": ["b", "c"]}, "meta": {}}  # fmt: skip


def qa_task(tmp_path: Path, body: str = "", *, head: str = "", rows: Any = None) -> Path:
    rows = rows if rows is not None else [dict(ROW, sample_id=f"s{i}") for i in range(3)]
    write(tmp_path / "qa.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    text = (
        "task_id: qa-t\ndescription: d\nagent: {type: command, command: cat}\n"
        f"{head}dataset: {{paths: [qa.jsonl]}}\nqa:\n  shuffle: true\n{body}"
    )
    return write(tmp_path / "task.yaml", text)


def load_error(path: Path) -> TaskFileError:
    with pytest.raises(TaskFileError) as info:
        load_task(path)
    return info.value


def test_default_criterion_is_qa(tmp_path: Path) -> None:
    task = load_task(qa_task(tmp_path)).definition
    assert [type(c).type_name() for c in task.success_criteria] == ["qa"]
    assert all(isinstance(c, QaCriterion) for c in task.success_criteria)
    assert task.initial_prompt is None


@pytest.mark.parametrize(
    ("head", "message"),
    [
        ("initial_prompt: hi\n", "a qa: task builds each row's prompt from qa.templates"),
        ("success_criteria: [{type: response_match, expected: x}]\n",
         "a qa: task is graded by the 'qa' criterion"),
    ],
)  # fmt: skip
def test_refused_combinations(tmp_path: Path, head: str, message: str) -> None:
    assert message in load_error(qa_task(tmp_path, head=head)).message


def test_qa_needs_a_dataset_and_the_criterion_needs_qa(tmp_path: Path) -> None:
    text = "task_id: t\ndescription: d\nagent: {type: command, command: cat}\nqa: {}\n"
    error = load_error(write(tmp_path / "a.yaml", text))
    assert "a qa: block needs a dataset of QA rows" in error.message
    text = "task_id: t\ndescription: d\ninitial_prompt: x\nsuccess_criteria: [{type: qa}]\n"
    error = load_error(write(tmp_path / "b.yaml", text))
    assert "criterion 'qa' grades QA rows; it needs a qa: block" in error.message


def test_template_errors_name_the_field_and_line(tmp_path: Path) -> None:
    error = load_error(qa_task(tmp_path, "  templates:\n    opn: '{question}'\n"))
    assert error.message == "unknown template 'opn'"
    assert (error.field, error.line) == ("qa.templates.opn", 8)
    assert error.hint == "did you mean 'open'?"
    error = load_error(qa_task(tmp_path, "  templates:\n    open: '{stroy} {question}'\n"))
    assert error.message.startswith("unknown slot {stroy} in template 'open'")
    assert (error.field, error.line) == ("qa.templates.open", 8)
    error = load_error(qa_task(tmp_path, "  templates:\n    choice: '{question}'\n"))
    assert "lacks the slot(s) {options}" in error.message


def test_a_template_that_drops_the_story_is_refused_at_plan(tmp_path: Path) -> None:
    path = qa_task(tmp_path, "  templates:\n    choice: '{question} {options}'\n")
    with pytest.raises(TaskFileError) as info:
        build_plan([str(path)], PlanOptions())
    assert "template 'choice' has no {story} slot, but sample s0 has a story" in info.value.message
    assert info.value.line == 8


def test_metrics_hook_is_checked_at_load(tmp_path: Path) -> None:
    error = load_error(qa_task(tmp_path, "  metrics_hook: nowhere.py\n"))
    assert error.message.startswith("metrics hook not found:")
    assert (error.field, error.line) == ("qa.metrics_hook", 7)
    write(tmp_path / "m.py", "x = 1\n")
    error = load_error(qa_task(tmp_path, "  metrics_hook: m.py\n"))
    assert error.message.endswith("must define compute_metrics(records, per_sample_results).")


def test_judge_model_is_checked_at_plan(tmp_path: Path) -> None:
    path = qa_task(tmp_path, "  judge: {model: nosuch/x}\n")
    with pytest.raises(UserError) as info:
        build_plan([str(path)], PlanOptions())
    assert info.value.field == "qa.judge.model" and info.value.line == 7
    error = load_error(qa_task(tmp_path, "  judge: {model: gpt4}\n"))
    assert "must be named provider/name" in error.message


def test_group_by_paths_and_threshold_names(tmp_path: Path) -> None:
    error = load_error(qa_task(tmp_path, "  group_by: ['meta ability']\n"))
    assert "group_by path 'meta ability' must be dotted field names" in error.message
    head = "success_criteria: [{type: qa, suite_thresholds: {acc: 0.5}}]\n"
    error = load_error(qa_task(tmp_path, head=head))
    assert error.message == "'qa' produces no metric named 'acc'"
    assert error.hint is not None and "accuracy" in error.hint


def test_bad_rows_name_file_and_line(tmp_path: Path) -> None:
    rows = [dict(ROW, sample_id="ok"), {"story": "", "question": "q", "meta": {}}]
    loaded = load_task(qa_task(tmp_path, rows=rows))
    with pytest.raises(DatasetError) as info:
        expand_dataset(loaded)
    assert info.value.message == "Each standardized sample must contain an 'answer' object."
    assert (Path(str(info.value.file)).name, info.value.line) == ("qa.jsonl", 2)
    rows = [dict(ROW, sample_id="x"), dict(ROW, sample_id="x")]
    with pytest.raises(DatasetError, match="Duplicate sample id for task 'qa-t': 'x'"):
        expand_dataset(load_task(qa_task(tmp_path, rows=rows)))
    rows = [dict(ROW, answer={"correct_answers": [], "wrong_answers": ["b"]})]
    with pytest.raises(DatasetError) as info:
        expand_dataset(load_task(qa_task(tmp_path, rows=rows)))
    assert info.value.message == "Sample sample_0 is missing correct_answers."
    assert info.value.hint == "mark a question that has no answer with meta.unanswerable: true"


def test_too_many_options_is_refused_at_plan(tmp_path: Path) -> None:
    wrong = [f"w{i}" for i in range(26)]
    rows = [dict(ROW, answer={"correct_answers": ["a"], "wrong_answers": wrong}, sample_id="big")]
    with pytest.raises(DatasetError) as info:
        build_plan([str(qa_task(tmp_path, rows=rows))], PlanOptions())
    assert info.value.message == "Too many options for sample big: 27"
    assert info.value.line == 1


@pytest.mark.parametrize("id_field", ["", ", id_field: sample_id"])
def test_the_data_teams_cosmosqa_file_as_it_is(tmp_path: Path, id_field: str) -> None:
    """Naming the field QA reads anyway (``id_field: sample_id``, as the examples do) keeps
    the QA rules: a sample id that is no folder name is sanitized, not refused."""
    shutil.copy(DATA / "cosmosqa_valid_first100.qa.jsonl", tmp_path / "qa.jsonl")
    text = ("task_id: cosmos\ndescription: d\nagent: {type: command, command: cat}\n"
            f"dataset: {{paths: [qa.jsonl]{id_field}}}\nqa: {{}}\n")  # fmt: skip
    expansion = expand_dataset(load_task(write(tmp_path / "t.yaml", text)))
    first = expansion.row_tasks[0]
    assert first.qa is not None and "##" in first.qa.sample_id  # meta.id, unchanged
    assert first.row_id == folder_id(first.qa.sample_id) and "#" not in str(first.row_id)
    assert len({t.row_id for t in expansion.row_tasks}) == 100
    assert any("100 sample id(s) are not valid folder names" in w for w in expansion.warnings)
    item = first.qa_item(None, 1)
    assert item is not None and item.prompt_type == "mcq_single" and item.replicate == 1


def test_the_data_teams_squad_and_nq_files(tmp_path: Path) -> None:
    shutil.copy(DATA / "squad_v2_sample.qa.jsonl", tmp_path / "squad.jsonl")
    shutil.copy(DATA / "nq_open_dev_first100.qa.jsonl", tmp_path / "nq.jsonl")
    text = ("task_id: {id}\ndescription: d\nagent: {{type: command, command: cat}}\n"
            "dataset: {{paths: [{file}]}}\nqa: {{}}\n")  # fmt: skip
    squad_task = write(tmp_path / "s.yaml", text.format(id="s", file="squad.jsonl"))
    squad = expand_dataset(load_task(squad_task))
    kinds = [route(t.qa) for t in squad.row_tasks if t.qa is not None]
    assert kinds.count("open_unanswerable") == 6 and kinds.count("open") == 8
    nq_task = write(tmp_path / "n.yaml", text.format(id="n", file="nq.jsonl"))
    nq = expand_dataset(load_task(nq_task))
    assert [t.row_id for t in nq.row_tasks[:2]] == ["sample_0", "sample_1"]


def test_explicit_id_field_names_the_rows(tmp_path: Path) -> None:
    rows = [dict(ROW, key=f"k{i}", sample_id=f"s{i}") for i in range(2)]
    path = qa_task(tmp_path, rows=rows)
    text = path.read_text().replace("paths: [qa.jsonl]", "paths: [qa.jsonl], id_field: key")
    path.write_text(text)
    expansion = expand_dataset(load_task(path))
    assert [t.row_id for t in expansion.row_tasks] == ["k0", "k1"]
    assert [t.qa.sample_id for t in expansion.row_tasks if t.qa] == ["k0", "k1"]


STORE_TASK = ("task_id: st\ndescription: d\nagent: {type: command, command: cat}\n"
              "dataset: {store: qa}\nqa: {}\n")  # fmt: skip


def store_plan(tmp_path: Path, rows: list[dict[str, Any]], text: str = STORE_TASK) -> Plan:
    """The plan of a qa: task over ``rows`` added to a fresh store dataset ``qa``."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    if not (tmp_path / "store.db").exists():
        fields = {"sample_id": "string"} if "sample_id" in rows[0] else {}
        with open_store(url) as store:
            store.create_dataset("qa", Schema({**fields, "story": "string", "question": "string",
                                               "answer": "json", "meta": "json"}))  # fmt: skip
            store.add("qa", rows)
    path = write(tmp_path / f"t{len(list(tmp_path.glob('*.yaml')))}.yaml", text)
    return build_plan([str(path)], PlanOptions(store_url=url))


def test_a_store_dataset_of_qa_rows(tmp_path: Path) -> None:
    items = store_plan(tmp_path, [dict(ROW, id=f"q{i}") for i in range(3)]).work_items()
    assert [i.row_task.row_id for i in items] == ["q0", "q1", "q2"]
    first = items[0].qa_item()
    assert first is not None and first.sample_id == "q0"
    assert "Options:" in str(items[0].resolve().initial_prompt)


def test_folder_ids() -> None:
    assert folder_id("abc-1.2_x") == "abc-1.2_x"
    odd = folder_id("3BFF##q1_a1##XYZ")
    assert odd.startswith("3BFF_q1_a1_XYZ-") and len(odd) == len("3BFF_q1_a1_XYZ-") + 8
    assert folder_id("suite.json") != "suite.json"
    assert folder_id("a/b") != folder_id("a?b")


def test_group_by_a_field_no_row_has_is_warned(tmp_path: Path) -> None:
    rows = [dict(ROW, sample_id="a", meta={"ability": "x"}),
            dict(ROW, sample_id="b", meta={"ability": {"n": 1}})]  # fmt: skip
    body = "  group_by: [meta.abilty, meta.ability, prompt_type]\n"
    warnings = expand_dataset(load_task(qa_task(tmp_path, body, rows=rows))).warnings
    assert warnings == [
        "qa.group_by meta.abilty: no selected row has this field, so every row is in the "
        "group 'unknown'; did you mean 'meta.ability'?",
        "qa.group_by meta.ability: 1 row(s) hold an object there (e.g. {'n': 1}), grouped by "
        "its text",
    ]


def test_an_empty_qa_block_is_every_default(tmp_path: Path) -> None:
    path = qa_task(tmp_path)
    path.write_text(path.read_text().replace("qa:\n  shuffle: true\n", "qa:\n"))
    task = load_task(path).definition
    assert task.qa is not None and task.qa.shuffle is True
    assert [type(c).type_name() for c in task.success_criteria] == ["qa"]
    assert all(isinstance(c, QaCriterion) for c in task.success_criteria)


def test_store_qa_rows_keep_their_own_sample_ids(tmp_path: Path) -> None:
    """A QA file added to the store (its example ids generated) keeps its sample ids, which
    seed the option order and name the folders and prediction.jsonl records."""
    rows = [dict(ROW, sample_id="fr-1"), dict(ROW, meta={"id": "m-2"}), dict(ROW)]
    rows = [dict(r, id=f"gen{i}", sample_id=r.get("sample_id", "")) for i, r in enumerate(rows)]
    items = store_plan(tmp_path, rows).work_items()
    assert [i.row_task.row_id for i in items] == ["fr-1", "m-2", "gen2"]
    first = items[0].qa_item()
    assert first is not None and first.sample_id == "fr-1"
    pinned = STORE_TASK.replace("{store: qa}", "{store: qa, id_field: id}")
    explicit = store_plan(tmp_path, rows, pinned)
    assert [i.row_task.row_id for i in explicit.work_items()] == ["gen0", "gen1", "gen2"]
