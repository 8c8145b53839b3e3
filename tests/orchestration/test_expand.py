"""expand_dataset: the source document's fan-out rules and its error table, message by message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.errors import DatasetError, SelectionError
from assay.orchestration.loading.task_loader import load_task
from assay.orchestration.planning.expand import Selectors, expand_dataset
from assay.spec.criteria import ClassificationMatch, FileCheck
from tests.helpers import write

HEAD = """\
task_id: sentiment
description: "Binary sentiment, row ${row.id} (not substituted here)"
initial_prompt: "Classify: ${row.text}"
pre_run:
  - command: "echo ${row.id}"
"""
CRITERIA = """\
success_criteria:
  - type: classification_match
    path: result.txt
    expected_label: "${row.expected}"
    allowed_labels: [positive, negative]
    description: "Predicted label matches expected for row ${row.id}"
"""


def jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    return write(path, "".join(json.dumps(r) + "\n" for r in rows))


def task(tmp_path: Path, dataset: str, criteria: str = CRITERIA) -> Path:
    return write(tmp_path / "tasks" / "task.yaml", HEAD + dataset + criteria)


def expand(path: Path, **selectors: object):  # type: ignore[no-untyped-def]
    return expand_dataset(load_task(path), Selectors(**selectors))  # type: ignore[arg-type]


ROWS = [
    {"id": "r1", "text": "This product is fantastic, I love it.", "expected": "positive"},
    {"id": "r2", "text": "Terrible service, would not recommend.", "expected": "negative"},
    {"id": "r3", "text": "Amazing quality and excellent value for money.", "expected": "negative"},
]


def test_row_task_ids_and_substitution(tmp_path: Path) -> None:
    jsonl(tmp_path / "tasks" / "datasets" / "s.jsonl", ROWS)
    expansion = expand(task(tmp_path, "dataset:\n  paths: [datasets/s.jsonl]\n"))
    ids = [t.task_id for t in expansion.row_tasks]
    assert ids == ["sentiment/r1", "sentiment/r2", "sentiment/r3"]
    resolved = expansion.row_tasks[2].resolve()
    assert resolved.task_id == "sentiment/r3"
    assert resolved.suite_id == "sentiment"
    assert resolved.row_id == "r3"
    assert resolved.dataset is None
    assert resolved.initial_prompt == "Classify: Amazing quality and excellent value for money."
    criterion = resolved.success_criteria[0]
    assert isinstance(criterion, ClassificationMatch)
    assert criterion.expected_label == "negative"
    assert criterion.description == "Predicted label matches expected for row r3"
    assert resolved.description.endswith("row ${row.id} (not substituted here)")
    assert resolved.pre_run[0].command == "echo ${row.id}"


def test_paths_concatenate_in_declared_order(tmp_path: Path) -> None:
    jsonl(tmp_path / "tasks" / "b.jsonl", ROWS[2:])
    jsonl(tmp_path / "tasks" / "a.jsonl", ROWS[:2])
    expansion = expand(task(tmp_path, "dataset:\n  paths: [b.jsonl, a.jsonl]\n"))
    assert [t.row_id for t in expansion.row_tasks] == ["r3", "r1", "r2"]


def test_csv_rows_are_strings(tmp_path: Path) -> None:
    write(tmp_path / "tasks" / "s.csv", 'id,text,expected\r\nr1,"Nice, really",positive\r\n')
    expansion = expand(task(tmp_path, "dataset:\n  paths: [s.csv]\n"))
    row = expansion.row_tasks[0]
    assert row.row == {"id": "r1", "text": "Nice, really", "expected": "positive"}
    assert row.resolve().initial_prompt == "Classify: Nice, really"


def test_substitution_reaches_every_string_leaf_of_criteria(tmp_path: Path) -> None:
    criteria = """\
success_criteria:
  - type: file_check
    path: "out/${row.id}.txt"
    includes: ["${row.expected}", "fixed"]
    patterns:
      - {pattern: "^${row.id}$", flags: m}
"""
    jsonl(tmp_path / "tasks" / "s.jsonl", ROWS[:1])
    resolved = expand(task(tmp_path, "dataset:\n  paths: [s.jsonl]\n", criteria)).row_tasks[0]
    check = resolved.resolve().success_criteria[0]
    assert isinstance(check, FileCheck)
    assert check.path == "out/r1.txt"
    assert check.includes == ["positive", "fixed"]
    assert check.patterns[0].pattern == "^r1$"


def test_null_value_substitutes_as_empty_string(tmp_path: Path) -> None:
    jsonl(tmp_path / "tasks" / "s.jsonl", [{"id": "n", "text": None, "expected": None}])
    row_task = expand(task(tmp_path, "dataset:\n  paths: [s.jsonl]\n")).row_tasks[0]
    resolved = row_task.resolve()
    assert resolved.initial_prompt == "Classify: "
    criterion = resolved.success_criteria[0]
    assert isinstance(criterion, ClassificationMatch)
    assert criterion.expected_label == ""


def test_value_containing_a_placeholder_is_inserted_literally(tmp_path: Path) -> None:
    rows = [{"id": "x", "text": "see ${row.expected}", "expected": "positive"}]
    jsonl(tmp_path / "tasks" / "s.jsonl", rows)
    resolved = expand(task(tmp_path, "dataset:\n  paths: [s.jsonl]\n")).row_tasks[0].resolve()
    assert resolved.initial_prompt == "Classify: see ${row.expected}"


def test_inline_rows(tmp_path: Path) -> None:
    dataset = "dataset:\n  rows:\n    - {id: alpha, text: a, expected: positive}\n"
    expansion = expand(task(tmp_path, dataset))
    assert [t.task_id for t in expansion.row_tasks] == ["sentiment/alpha"]


def test_id_field_option(tmp_path: Path) -> None:
    rows = [{"case_id": "c-1", "text": "t", "expected": "positive"}]
    jsonl(tmp_path / "tasks" / "s.jsonl", rows)
    dataset = "dataset:\n  id_field: case_id\n  paths: [s.jsonl]\n"
    criteria = CRITERIA.replace("${row.id}", "${row.case_id}")
    assert expand(task(tmp_path, dataset, criteria)).row_tasks[0].task_id == "sentiment/c-1"


def errors(tmp_path: Path, rows: list[dict[str, object]]) -> DatasetError:
    jsonl(tmp_path / "tasks" / "s.jsonl", rows)
    with pytest.raises(DatasetError) as caught:
        expand(task(tmp_path, "dataset:\n  paths: [s.jsonl]\n"))
    return caught.value


def test_empty_dataset_message(tmp_path: Path) -> None:
    write(tmp_path / "tasks" / "s.jsonl", "\n  \n")
    with pytest.raises(DatasetError) as caught:
        expand(task(tmp_path, "dataset:\n  paths: [s.jsonl]\n"))
    assert caught.value.message == "Dataset for task 'sentiment' is empty"


def test_missing_id_message_indexes_the_whole_dataset(tmp_path: Path) -> None:
    error = errors(tmp_path, [*ROWS, {"text": "no id", "expected": "positive"}])
    assert error.message == (
        "Dataset row 3 for task 'sentiment' missing id_field 'id': "
        "{'text': 'no id', 'expected': 'positive'}"
    )
    assert error.line == 4
    assert error.file is not None and error.file.endswith("s.jsonl")


@pytest.mark.parametrize("bad", ["has space", ".hidden", "-dash", "a/b", "ü", ""])
def test_illegal_id_message(tmp_path: Path, bad: str) -> None:
    error = errors(tmp_path, [{"id": bad, "text": "t", "expected": "positive"}])
    assert error.message == (
        f"Dataset row id {bad!r} must match ^[A-Za-z0-9_][A-Za-z0-9_.\\-]*$ "
        "(letters, digits, underscore, hyphen, dot)"
    )


def test_a_long_id_is_shown_by_its_start(tmp_path: Path) -> None:
    long_id = "order_" + "7" * 200  # no space to cut at: it showed ''...
    error = errors(tmp_path, [{"id": long_id, "text": "t", "expected": "positive"}])
    assert error.message == (
        f"Dataset row id {long_id[:40]!r}... is 206 characters; the limit is 200 "
        "(it names a folder)"
    )


def test_duplicate_id_message_and_first_line(tmp_path: Path) -> None:
    error = errors(tmp_path, [*ROWS, dict(ROWS[1])])
    assert error.message == "Duplicate dataset row id for task 'sentiment': 'r2'"
    assert error.line == 4
    assert error.hint is not None and error.hint.endswith(":2")


def test_numeric_ids_become_text(tmp_path: Path) -> None:
    jsonl(tmp_path / "tasks" / "s.jsonl", [{"id": 7, "text": "t", "expected": "positive"}])
    assert expand(task(tmp_path, "dataset:\n  paths: [s.jsonl]\n")).row_tasks[0].row_id == "7"


def test_missing_placeholder_field_message(tmp_path: Path) -> None:
    error = errors(tmp_path, [{"id": "r1", "expected": "positive"}])
    assert error.message == "${row.text}: key not found (available: ['expected', 'id'])"
    assert error.row_id == "r1"
    assert error.line == 1
    assert error.hint is not None and error.hint.startswith("it is used in initial_prompt")
    assert error.hint.endswith(": give every row the key, or correct the placeholder")


def test_non_scalar_placeholder_message(tmp_path: Path) -> None:
    error = errors(tmp_path, [{"id": "r1", "text": ["a"], "expected": "positive"}])
    assert error.message == (
        "${row.text}: value must be a scalar (str/int/float/bool/None), got list"
    )


def test_dataset_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"Dataset file not found: .*missing\.jsonl"):
        expand(task(tmp_path, "dataset:\n  paths: [missing.jsonl]\n"))


def test_substituted_path_leaving_the_sandbox_is_a_load_error(tmp_path: Path) -> None:
    criteria = CRITERIA.replace("path: result.txt", 'path: "${row.text}"')
    jsonl(tmp_path / "tasks" / "s.jsonl", [{"id": "r1", "text": "../up", "expected": "x"}])
    with pytest.raises(DatasetError) as caught:
        expand(task(tmp_path, "dataset:\n  paths: [s.jsonl]\n", criteria))
    assert caught.value.row_id == "r1"
    assert "leaves the sandbox" in caught.value.message


def test_sample_is_recorded_with_row_ids(tmp_path: Path) -> None:
    rows = [{"id": f"r{i}", "text": "t", "expected": "positive"} for i in range(10)]
    jsonl(tmp_path / "tasks" / "s.jsonl", rows)
    loaded = load_task(task(tmp_path, "dataset:\n  paths: [s.jsonl]\n"))
    expansion = expand_dataset(loaded, Selectors(sample=3))
    from assay.orchestration.planning.expand import selection_request

    record = expansion.selection_record(selection_request(loaded.definition, Selectors(sample=3)))
    assert record is not None
    assert record.applied == ["--sample 3"]
    assert record.rows_in_dataset == 10
    assert record.row_ids == [t.row_id for t in expansion.row_tasks]
    indexes = [t.row_index for t in expansion.row_tasks]
    assert indexes == sorted(indexes)


def test_split_with_no_rows_is_an_error(tmp_path: Path) -> None:
    rows = [{"id": "a", "text": "t", "expected": "x", "split": "train"}]
    jsonl(tmp_path / "tasks" / "s.jsonl", rows)
    with pytest.raises(SelectionError, match="has no rows in split 'test'"):
        expand(task(tmp_path, "dataset:\n  paths: [s.jsonl]\n"), split="test")


def test_task_without_dataset_is_one_row_task(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.yaml",
        "task_id: solo\ndescription: d\ninitial_prompt: hi\n"
        "success_criteria:\n  - {type: response_match, expected: hi}\n",
    )
    expansion = expand(path)
    assert [t.task_id for t in expansion.row_tasks] == ["solo"]
    assert expansion.row_tasks[0].suite_id is None


@pytest.mark.parametrize(
    ("criterion", "value", "reason"),
    [
        ("{type: llm_judge, model: mock/j.yaml, prompt: 'grade ${response}', files: ['${row.f}']}",
         "$TASK_DIR/../outside/secret.txt", "leaves the task folder"),
        ("{type: reference_comparison, agent_file: out.py, reference_file: '${row.f}'}",
         "../../outside/secret.txt", "leaves the sandbox"),
        ("{type: reference_comparison, agent_file: out.py, reference_file: '${row.f}'}",
         "/etc/passwd", "is absolute"),
        ("{type: pylint_score, path: x.py, rcfile: '${row.f}'}", "../../rc", "leaves the sandbox"),
    ],
)  # fmt: skip
def test_a_path_a_row_gives_is_checked_as_one_written_in_the_file(
    tmp_path: Path, criterion: str, value: str, reason: str
) -> None:
    """A row's value reached llm_judge's files and reference_comparison's reference_file
    unchecked: a dataset row made assay read any file and send it to the judge."""
    jsonl(tmp_path / "tasks" / "s.jsonl", [{"id": "r1", "text": "t", "f": value}])
    (tmp_path / "tasks" / "ref").mkdir()
    text = (HEAD + "dataset:\n  paths: [s.jsonl]\nreference: {directory: ref}\n"
            f"success_criteria:\n  - {criterion}\n")  # fmt: skip
    with pytest.raises(DatasetError) as caught:
        expand(write(tmp_path / "tasks" / "task.yaml", text))
    assert "is invalid for this row after substitution" in caught.value.message
    assert reason in caught.value.message and caught.value.row_id == "r1"


JSON_CHECK = """\
success_criteria:
  - type: json_check
    path: out.json
    assertions:
      - {expression: n, operator: gte, expected: "${row.n}"}
      - {expression: ok, operator: equals, expected: "${row.ok}"}
      - {expression: tags, operator: equals, expected: "${row.tags}"}
      - {expression: note, operator: equals, expected: "n=${row.n}"}
"""


def test_a_whole_placeholder_in_json_checks_expected_keeps_the_rows_json_value(
    tmp_path: Path,
) -> None:
    rows = [{"id": "r1", "text": "t", "n": 5, "ok": True, "tags": ["a", 2], "note": "n=5"}]
    jsonl(tmp_path / "tasks" / "s.jsonl", rows)
    path = task(tmp_path, "dataset:\n  paths: [s.jsonl]\n", JSON_CHECK)
    criterion = expand(path).row_tasks[0].resolve().success_criteria[0]
    expected = [a.expected for a in criterion.assertions]  # type: ignore[union-attr]
    assert expected == [5, True, ["a", 2], "n=5"]  # text around a placeholder stays text
    assert [type(v) for v in expected[:2]] == [int, bool]


def test_a_list_is_refused_where_json_check_puts_it_into_text_and_a_missing_key_everywhere(
    tmp_path: Path,
) -> None:
    jsonl(tmp_path / "tasks" / "s.jsonl", [{"id": "r1", "text": "t", "n": [5], "ok": True,
                                            "tags": []}])  # fmt: skip
    error = errors_of(task(tmp_path, "dataset:\n  paths: [s.jsonl]\n", JSON_CHECK))
    assert error.message.startswith("${row.n}: value must be a scalar")
    jsonl(tmp_path / "tasks" / "s.jsonl", [{"id": "r1", "text": "t", "n": 5, "ok": True}])
    error = errors_of(task(tmp_path, "dataset:\n  paths: [s.jsonl]\n", JSON_CHECK))
    assert error.message.startswith("${row.tags}: key not found")
    assert error.hint is not None and "success_criteria[0]" in error.hint


def test_a_judges_rubric_takes_a_list_field_as_its_json_and_still_needs_the_key(
    tmp_path: Path,
) -> None:
    judge = ("success_criteria:\n  - type: llm_judge\n    model: mock/judge.yaml\n"
             "    prompt: 'Items: ${row.items}. Answer: ${response}'\n")  # fmt: skip
    jsonl(tmp_path / "tasks" / "s.jsonl", [{"id": "r1", "text": "t", "items": ["x", "y"]}])
    path = task(tmp_path, "dataset:\n  paths: [s.jsonl]\n", judge)
    assert [t.row_id for t in expand(path).row_tasks] == ["r1"]
    jsonl(tmp_path / "tasks" / "s.jsonl", [{"id": "r1", "text": "t"}])
    error = errors_of(path)
    assert error.message.startswith("${row.items}: key not found")


def errors_of(path: Path) -> DatasetError:
    with pytest.raises(DatasetError) as caught:
        expand(path)
    return caught.value
