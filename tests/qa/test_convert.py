"""`assay qa convert` on real rows (CosmosQA, NQ-open, GSM8K, SQuAD 2.0), and its errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli.qa import qa_app
from assay.qa import build_item, normalize_sample

HERE = Path(__file__).parent
DATA = HERE / "data"
EXAMPLES = HERE.parents[1] / "examples" / "qa"


def convert(*args: str) -> Any:
    return CliRunner().invoke(qa_app, ["convert", *map(str, args)])


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def example_lines(relative: str, n: int) -> list[str]:
    return (EXAMPLES / relative).read_text(encoding="utf-8").splitlines()[:n]


def test_cosmosqa_csv_choices(tmp_path: Path) -> None:
    out = tmp_path / "cosmos.qa.jsonl"
    done = convert(
        DATA / "cosmosqa_valid_first5.csv",
        "-o",
        out,
        "--from",
        "csv-choices",
        "--id-prefix",
        "cosmosqa-valid-",
        "--meta",
        "id",
        "--source",
        "cosmosqa/valid.csv",
    )
    assert done.exit_code == 0, done.output
    assert done.output.strip() == f"wrote 5 samples to {out} (mcq_single 5)"
    rows = read(out)
    first = rows[0]
    assert first["sample_id"] == "cosmosqa-valid-00001"
    assert first["question"] == "Why is this person asking about divorce ?"
    assert first["answer"] == {
        "correct_answers": ["He wants to get married to a different person ."],
        "wrong_answers": [
            "If he gets married in the church he wo nt have to get a divorce .",
            "He wants to know if he does nt like this girl can he divorce her ?",
            "None of the above choices .",
        ],
    }
    assert first["meta"]["label_index"] == 1 and first["meta"]["line"] == 2
    assert first["meta"]["id"].startswith("3BFF0DJK8XA7YNK4QYIGCOG1A95STE##")
    assert first["meta"]["options_in_order"][1] == first["answer"]["correct_answers"][0]
    assert "\r" not in out.read_text(encoding="utf-8")  # the CRLF source converts cleanly
    # the example file was made by the same command from the full file
    assert out.read_text(encoding="utf-8").splitlines() == example_lines(
        "cosmosqa/cosmosqa_valid_first100.qa.jsonl", 5
    )


def test_nq_open_answer_lists(tmp_path: Path) -> None:
    out = tmp_path / "nq.qa.jsonl"
    done = convert(
        DATA / "nq_open_dev_first5.jsonl",
        "-o",
        out,
        "--from",
        "jsonl-answers",
        "--answers",
        "answer",
        "--id-prefix",
        "nq-open-dev-",
        "--source",
        "nq_open/NQ-open.dev.jsonl",
    )
    assert done.exit_code == 0, done.output
    rows = read(out)
    assert rows[0]["answer"] == {
        "correct_answers": ["14 December 1972 UTC", "December 1972"],
        "wrong_answers": [],
    }
    assert rows[0]["story"] == "" and rows[0]["meta"] == {
        "source": "nq_open/NQ-open.dev.jsonl",
        "line": 1,
    }
    # several accepted answers and no options: asked as an open question
    assert normalize_sample(rows[0], index=0).prompt_type == "open"
    assert out.read_text(encoding="utf-8").splitlines() == example_lines(
        "nq_open/nq_open_dev_first100.qa.jsonl", 5
    )


def test_gsm8k_gold_after_the_marker(tmp_path: Path) -> None:
    out = tmp_path / "gsm8k.qa.jsonl"
    done = convert(
        DATA / "gsm8k_test_first5.json",
        "-o",
        out,
        "--from",
        "gsm8k",
        "--id-prefix",
        "gsm8k-test-",
        "--source",
        "gsm8k/test.json",
    )
    assert done.exit_code == 0, done.output
    rows = read(out)
    assert [r["answer"]["correct_answers"] for r in rows] == [
        ["18"],
        ["3"],
        ["70000"],
        ["540"],
        ["20"],
    ]
    assert rows[0]["meta"]["idx"] == 0
    assert rows[0]["meta"]["rationale"].endswith("#### 18")
    assert out.read_text(encoding="utf-8").splitlines() == example_lines(
        "gsm8k/gsm8k_test_first100.qa.jsonl", 5
    )


def test_squad_unanswerable_rows_are_marked_not_dropped(tmp_path: Path) -> None:
    out = tmp_path / "squad.qa.jsonl"
    done = convert(
        DATA / "squad_v2_sample.jsonl",
        "-o",
        out,
        "--from",
        "squad",
        "--source",
        "squad_v2_sample/sample.jsonl",
    )
    assert done.exit_code == 0, done.output
    assert "(open 8, open_unanswerable 6)" in done.output
    rows = read(out)
    assert len(rows) == 14
    assert rows[0]["sample_id"] == "56ddde6b9a695914005b9628"
    assert rows[0]["answer"]["correct_answers"] == ["France"]  # 4 annotators, one answer
    assert rows[1]["answer"]["correct_answers"] == [
        "10th and 11th centuries",
        "in the 10th and 11th centuries",
    ]
    unanswerable = [r for r in rows if r["meta"]["unanswerable"]]
    assert len(unanswerable) == 6
    assert all(r["answer"]["correct_answers"] == [] for r in unanswerable)
    kinds = {normalize_sample(r, index=i).prompt_type for i, r in enumerate(unanswerable)}
    assert kinds == {"open_unanswerable"}
    assert out.read_text(encoding="utf-8").splitlines() == example_lines(
        "squad_v2/squad_v2_sample.qa.jsonl", 14
    )


def test_multi_label_and_label_base(tmp_path: Path) -> None:
    src = tmp_path / "multi.csv"
    src.write_text("q,c1,c2,c3,gold\nWhich are even?,2,3,4,1;3\n", encoding="utf-8")
    out = tmp_path / "multi.qa.jsonl"
    done = convert(
        src,
        "-o",
        out,
        "--from",
        "csv-choices",
        "--story",
        "q",
        "--question",
        "q",
        "--choices",
        "c1,c2,c3",
        "--label",
        "gold",
        "--label-base",
        "1",
    )
    assert done.exit_code == 0, done.output
    (row,) = read(out)
    assert row["answer"] == {"correct_answers": ["2", "4"], "wrong_answers": ["3"]}
    assert row["meta"]["label_index"] == [0, 2]
    item = build_item(normalize_sample(row, index=0), dataset="d", replicate=0)
    assert item.prompt_type == "mcq_multi"


def test_limit_and_default_prefix(tmp_path: Path) -> None:
    out = tmp_path / "x.jsonl"
    done = convert(
        DATA / "nq_open_dev_first5.jsonl",
        "-o",
        out,
        "--from",
        "jsonl-answers",
        "--answers",
        "answer",
        "--limit",
        "2",
    )
    assert done.exit_code == 0, done.output
    assert [r["sample_id"] for r in read(out)] == [
        "nq_open_dev_first5-00001",
        "nq_open_dev_first5-00002",
    ]


def error_of(done: Any) -> str:
    assert done.exit_code == 2, done.output
    return " ".join(done.output.split())


def test_invalid_row_id(tmp_path: Path) -> None:
    done = convert(
        DATA / "cosmosqa_valid_first5.csv",
        "-o",
        tmp_path / "x",
        "--from",
        "csv-choices",
        "--id",
        "id",
    )
    text = error_of(done)
    assert "cosmosqa_valid_first5.csv:2: id '3BFF0DJK8XA7YNK4QYIGCOG1A95STE##" in text
    assert "is not a valid row id (letters, digits, _ . -)" in text
    assert "--meta id" in text
    assert not (tmp_path / "x").exists()  # nothing written


@pytest.mark.parametrize(
    ("lines", "args", "message"),
    [
        (
            ['{"question": "q"}'],
            ["--from", "jsonl-answers"],
            "x.jsonl:1: field 'answers' is missing",
        ),
        (
            ['{"question": "q", "answers": []}'],
            ["--from", "jsonl-answers"],
            "x.jsonl:1: field 'answers' holds no answer",
        ),
        (
            ['{"question": 3, "answers": ["a"]}'],
            ["--from", "jsonl-answers"],
            "x.jsonl:1: field 'question' must be a string, not int",
        ),
        (
            ['{"question": "q", "answer": "no marker", "idx": 0}'],
            ["--from", "gsm8k"],
            "x.jsonl:1: the answer has no '####': 'no marker'",
        ),
        (
            [
                '{"question": "q", "answers": ["a"], "k": "x"}',
                '{"question": "r", "answers": ["b"], "k": "x"}',
            ],
            ["--from", "jsonl-answers", "--id", "k"],
            "x.jsonl:2: sample id 'x' appears twice",
        ),
        (
            ['{"question": "q", "answers": [{"t": 1}]}'],
            ["--from", "jsonl-answers"],
            "x.jsonl:1: field 'answers' holds a dict, not text",
        ),
        (
            ['{"question": " ", "answers": ["a"]}'],
            ["--from", "jsonl-answers"],
            "x.jsonl:1: Sample x-00001 is missing question.",
        ),
    ],
)
def test_row_errors(tmp_path: Path, lines: list[str], args: list[str], message: str) -> None:
    src = tmp_path / "x.jsonl"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = convert(src, "-o", tmp_path / "out.jsonl", *args, "--source", "x.jsonl")
    assert message in error_of(done)


def test_unanswerable_if_empty_for_answer_lists(tmp_path: Path) -> None:
    src = tmp_path / "x.jsonl"
    src.write_text('{"question": "q", "answers": []}\n', encoding="utf-8")
    out = tmp_path / "o.jsonl"
    done = convert(src, "-o", out, "--from", "jsonl-answers", "--unanswerable-if-empty")
    assert done.exit_code == 0, done.output
    assert read(out)[0]["meta"]["unanswerable"] is True


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        (
            "q,answer0,answer1\nx,y,z\n",
            ["--from", "csv-choices", "--story", "q", "--question", "q"],
            "x.csv:2: field 'label' is missing",
        ),
        (
            "q,a0,a1,label\nx,y,z,2\n",
            ["--from", "csv-choices", "--story", "q", "--question", "q", "--choice-prefix", "a"],
            "x.csv:2: label '2' is out of range for 2 choices (first index 0)",
        ),
        (
            "q,a0,a1,label\nx,y,z,one\n",
            ["--from", "csv-choices", "--story", "q", "--question", "q", "--choice-prefix", "a"],
            "x.csv:2: label 'one' is not a choice index",
        ),
        (
            "q,b,label\nx,y,0\n",
            ["--from", "csv-choices", "--story", "q", "--question", "q"],
            "x.csv:2: no choice columns named answer0, answer1, …",
        ),
    ],
)
def test_csv_errors(tmp_path: Path, content: str, args: list[str], message: str) -> None:
    src = tmp_path / "x.csv"
    src.write_text(content, encoding="utf-8")
    done = convert(src, "-o", tmp_path / "o.jsonl", *args, "--source", "x.csv")
    assert message in error_of(done)


def test_the_input_is_never_the_output_and_an_empty_input_is_an_error(tmp_path: Path) -> None:
    src = tmp_path / "x.jsonl"
    src.write_text('{"question": "q", "answers": ["a"]}\n', encoding="utf-8")
    done = convert(src, "-o", tmp_path / "." / "x.jsonl", "--from", "jsonl-answers")
    assert "is the input file; converting would replace the source rows" in error_of(done)
    assert src.read_text(encoding="utf-8") == '{"question": "q", "answers": ["a"]}\n'
    empty = tmp_path / "empty.csv"
    empty.write_text("question,answer0,answer1,label\n", encoding="utf-8")
    done = convert(empty, "-o", tmp_path / "o.jsonl", "--from", "csv-choices", "--story",
                   "question")  # fmt: skip
    assert "empty.csv has no rows to convert" in error_of(done)
    assert not (tmp_path / "o.jsonl").exists()


def test_unknown_shape(tmp_path: Path) -> None:
    done = convert(DATA / "nq_open_dev_first5.jsonl", "-o", tmp_path / "o", "--from", "xml")
    assert "unknown shape 'xml'" in error_of(done)


def test_wired_into_the_assay_command(tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "assay",
            "qa",
            "convert",
            str(DATA / "squad_v2_sample.jsonl"),
            "-o",
            str(out),
            "--from",
            "squad",
            "--limit",
            "4",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"wrote 4 samples to {out} (open 3, open_unanswerable 1)"


def test_choices_and_choice_prefix_together_are_refused(tmp_path: Path) -> None:
    src = tmp_path / "x.csv"
    src.write_text("q,a0,a1,label\nx,y,z,0\n", encoding="utf-8")
    done = convert(src, "-o", tmp_path / "o.jsonl", "--from", "csv-choices", "--story", "q",
                   "--question", "q", "--choices", "a0,a1", "--choice-prefix", "a")  # fmt: skip
    assert "--choices and --choice-prefix name the choices twice; give one" in error_of(done)


def test_gsm8k_without_idx_converts(tmp_path: Path) -> None:
    src = tmp_path / "g.jsonl"
    src.write_text('{"question": "2+2?", "answer": "so 4\\n#### 4"}\n', encoding="utf-8")
    out = tmp_path / "o.jsonl"
    done = convert(src, "-o", out, "--from", "gsm8k")
    assert done.exit_code == 0, done.output
    assert read(out)[0]["answer"]["correct_answers"] == ["4"] and "idx" not in read(out)[0]["meta"]


def test_truthfulqa_answer_lists_are_split_on_their_separator(tmp_path: Path) -> None:
    """TruthfulQA's answer cells join several answers with "; ": without the separator each
    cell is one option (an easy 2-way question) and the converter says so."""
    out = tmp_path / "tqa.qa.jsonl"
    base = [DATA / "truthfulqa_first3.csv", "-o", out, "--from", "jsonl-answers",
            "--question", "Question", "--answers", "Correct Answers",
            "--wrong", "Incorrect Answers"]  # fmt: skip
    joined = convert(*base)
    assert joined.exit_code == 0, joined.output
    assert "3 of 3 rows hold an answer with '; ' in it" in joined.output
    assert "--answer-separator '; '" in joined.output
    split = convert(*base, "--answer-separator", "; ")
    assert split.exit_code == 0, split.output
    assert "rows hold an answer" not in split.output
    first = read(out)[0]["answer"]
    assert first["correct_answers"][:2] == ["Nothing happens", "You eat watermelon seeds"]
    assert first["wrong_answers"][0] == "You grow watermelons in your stomach"
    assert len(first["correct_answers"]) == 5 and len(first["wrong_answers"]) == 7


def test_skip_invalid_leaves_out_the_rows_that_cannot_be_converted_and_names_each(
    tmp_path: Path,
) -> None:
    """TruthfulQA lists "Unknown" as both correct and wrong in two rows: the error says how
    to go on, and --skip-invalid converts the rest, naming the rows it left out."""
    src = tmp_path / "x.jsonl"
    rows = [{"question": "q1", "answers": ["a"], "wrong": ["b"]},
            {"question": "q2", "answers": ["Unknown"], "wrong": ["unknown"]},
            {"question": "q3", "answers": ["c"], "wrong": ["d"]},
            {"question": "q4", "answers": [], "wrong": ["e"]}]  # fmt: skip
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    args = [src, "-o", out, "--from", "jsonl-answers", "--wrong", "wrong", "--source", "x.jsonl"]
    text = error_of(convert(*args))
    assert "x.jsonl:2: Sample x-00002 lists 'Unknown' as both a correct and a wrong answer." in text
    assert "hint: correct the row; or convert with --skip-invalid" in text
    assert not out.exists()
    done = convert(*args, "--skip-invalid")
    assert done.exit_code == 0, done.output
    assert [r["question"] for r in read(out)] == ["q1", "q3"]
    said = " ".join(done.output.split())
    assert "2 row(s) left out (--skip-invalid): line 2: Sample x-00002 lists 'Unknown'" in said
    assert "; line 4: field 'answers' holds no answer" in said
    assert "wrote 2 samples" in said


def test_a_conversion_to_stdout_and_one_that_leaves_out_every_row(tmp_path: Path) -> None:
    src = tmp_path / "x.jsonl"
    src.write_text('{"question": "q1", "answers": ["a"]}\n', encoding="utf-8")
    done = convert(src, "-o", "-", "--from", "jsonl-answers", "--source", "x.jsonl")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout.splitlines()[0])["question"] == "q1"
    assert not (Path.cwd() / "-").exists()
    wrong = convert(src, "-o", tmp_path / "o.jsonl", "--from", "jsonl-answers",
                    "--question", "Questoin", "--skip-invalid")  # fmt: skip
    assert (
        "every row was left out (--skip-invalid); the first, line 1: field 'Questoin' is "
        "missing" in error_of(wrong)
    )
