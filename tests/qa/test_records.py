"""prediction.jsonl records: ToMEval's fields, a lossless round trip, strict reading."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.errors import DatasetError
from assay.qa import PredictionRecord, build_item, by_replicate, normalize_sample, read_predictions

TOMEVAL_FIELDS = {
    "sample_id",
    "sample_index",
    "repeat",
    "story",
    "question",
    "correct_answers",
    "wrong_answers",
    "prompt_type",
    "prompt",
    "options",
    "correct_letters",
    "wrong_letters",
    "shuffle_seed",
    "meta",
    "pred",
    "raw_prediction",
}


def choice_item(replicate: int = 0, sample_id: str = "s1", index: int = 0):  # type: ignore[no-untyped-def]
    row = {
        "sample_id": sample_id,
        "story": "A story with {braces} and ${row.x}.",
        "question": "Which?",
        "answer": {"correct_answers": ["yes"], "wrong_answers": ["no", "maybe"]},
        "meta": {"ability": ["belief"], "nested": {"k": 1}},
    }
    return build_item(normalize_sample(row, index=index), dataset="ds", replicate=replicate)


def test_record_has_tomevals_fields_and_assays_additions() -> None:
    item = choice_item(replicate=2)
    record = PredictionRecord.from_item(item, content="\\boxed{A}", reasoning="because", model="m")
    data = json.loads(record.to_json_line())
    assert set(data) >= TOMEVAL_FIELDS
    assert set(data) - TOMEVAL_FIELDS == {
        "schema_version",
        "dataset",
        "model",
        "error",
        "protocol",
        "extractor",
    }
    assert data["repeat"] == 2
    assert data["pred"] == {"content": "\\boxed{A}", "reasoning": "because"}
    assert data["raw_prediction"] == "\\boxed{A}"
    assert data["options"] == dict(item.options or {})
    assert data["correct_letters"] == list(item.correct_letters)
    assert data["shuffle_seed"] == item.shuffle_seed
    assert data["meta"] == {"ability": ["belief"], "nested": {"k": 1}}


def test_round_trip_gives_back_the_item() -> None:
    item = choice_item(replicate=1)
    record = PredictionRecord.from_item(item, content="x")
    again = PredictionRecord.model_validate_json(record.to_json_line())
    assert again == record
    assert again.to_item() == item


def test_read_predictions_and_group_by_replicate(tmp_path: Path) -> None:
    records = [
        PredictionRecord.from_item(choice_item(r, f"s{i}", i), content="A")
        for r in (1, 0)
        for i in (2, 0, 1)
    ]
    path = tmp_path / "prediction.jsonl"
    path.write_text("".join(r.to_json_line() + "\n" for r in records), encoding="utf-8")
    read = read_predictions(path)
    assert read == records
    groups = by_replicate(read)
    assert list(groups) == [0, 1]
    assert [r.sample_index for r in groups[0]] == [0, 1, 2]


def test_a_tomeval_record_loads(tmp_path: Path) -> None:
    tomeval = {
        "sample_id": "x",
        "sample_index": 0,
        "repeat": 0,
        "story": "",
        "question": "q",
        "correct_answers": ["a"],
        "wrong_answers": [],
        "prompt_type": "open",
        "prompt": "p",
        "options": None,
        "correct_letters": [],
        "wrong_letters": [],
        "shuffle_seed": 0,
        "meta": {},
        "pred": {"content": "a", "reasoning": None},
        "raw_prediction": None,
        "protocol": "direct",
        "extractor": "direct",
    }
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(tomeval) + "\n", encoding="utf-8")
    (record,) = read_predictions(path)
    assert record.to_item().prompt_type == "open"


def test_an_invalid_record_names_file_line_and_field(tmp_path: Path) -> None:
    good = PredictionRecord.from_item(choice_item(), content="A").to_json_line()
    bad = json.loads(good)
    bad["prompt_type"] = "essay"
    path = tmp_path / "prediction.jsonl"
    path.write_text(good + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        read_predictions(path)
    assert info.value.line == 2
    assert info.value.field == "prompt_type"
    assert str(info.value).startswith(f"{path}:2: prompt_type: not a prediction record")


def test_invalid_json_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "prediction.jsonl"
    good = PredictionRecord.from_item(choice_item(), content="A").to_json_line()
    path.write_text(good + "\n\n" + good[:-5] + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        read_predictions(path)
    assert info.value.line == 3
    assert info.value.message.startswith("invalid JSON: ")
    # the place within the line, never a second line number that contradicts the file's
    assert "line 2" not in info.value.message and "Invalid JSON" not in info.value.message
    assert info.value.message.endswith("at the end of the line")
    path.write_text(good + "}\n", encoding="utf-8")
    with pytest.raises(DatasetError) as extra:
        read_predictions(path)
    assert extra.value.message == f"invalid JSON: trailing characters at column {len(good) + 1}"
    with pytest.raises(DatasetError) as missing:
        read_predictions(tmp_path / "nope.jsonl")
    assert missing.value.message == f"prediction file not found: {tmp_path / 'nope.jsonl'}"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"correct_letters": ["Z"]}, "letter 'Z' is not one of the options"),
        ({"correct_letters": ["a"]}, "letter 'a' is not one of the options"),
        ({"correct_letters": []}, "a choice record needs correct_letters"),
        ({"wrong_letters": ["A", "B", "C"], "correct_letters": ["A"]},
         "letter 'A' is in both correct_letters and wrong_letters"),
        ({"correct_letters": ["A", "B"], "wrong_letters": []},
         "an mcq_single record has one correct letter, not 2"),
        ({"options": None}, "a mcq_single record needs its options"),
        ({"prompt_type": "open", "correct_answers": []}, "an open record needs correct_answers"),
        ({"prompt_type": "open_unanswerable"}, "an open_unanswerable record has no correct_"),
    ],
)  # fmt: skip
def test_an_inconsistent_record_is_refused_with_its_line(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    good = json.loads(PredictionRecord.from_item(choice_item(), content="A").to_json_line())
    path = tmp_path / "prediction.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, **change}) + "\n")
    with pytest.raises(DatasetError, match=message) as caught:
        read_predictions(path)
    assert f"{path}:2" in str(caught.value)


def test_a_sample_twice_in_one_replicate_is_refused(tmp_path: Path) -> None:
    line = PredictionRecord.from_item(choice_item(), content="A").to_json_line()
    other = PredictionRecord.from_item(choice_item(replicate=1), content="A").to_json_line()
    path = tmp_path / "prediction.jsonl"
    path.write_text(f"{line}\n{other}\n{line}\n")
    with pytest.raises(DatasetError, match=r"sample s1 replicate 0 appears twice \(first at "
                       r"line 1\)") as caught:  # fmt: skip
        read_predictions(path)
    assert f"{path}:3" in str(caught.value)


@pytest.mark.parametrize("key", ["repeat", "content", "ability"])
def test_a_record_with_a_repeated_key_is_refused_not_last_wins(tmp_path: Path, key: str) -> None:
    good = PredictionRecord.from_item(choice_item(), content="A").to_json_line()
    assert f'"{key}":' in good
    repeated = good.replace(f'"{key}":', f'"{key}": "first", "{key}":', 1)
    path = tmp_path / "prediction.jsonl"
    path.write_text(good + "\n" + repeated + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        read_predictions(path)
    assert str(info.value) == (
        f"{path}:2: invalid JSON: the key '{key}' appears twice in one object"
    )


def test_a_colon_inside_a_text_does_not_look_like_a_repeated_key(tmp_path: Path) -> None:
    record = PredictionRecord.from_item(choice_item(), content='say "x": y')
    path = tmp_path / "prediction.jsonl"
    path.write_text(record.to_json_line() + "\n", encoding="utf-8")
    assert read_predictions(path)[0].pred.content == 'say "x": y'
