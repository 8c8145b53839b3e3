"""A QA suite's own judge prompt (``qa.judge.prompt`` / ``prompt_file``, ToMEval's per-dataset
judge prompts): checked at load, filled literally, graded end to end; and ToMEval's
``{"is_correct": ...}`` reply without a reason."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from tests.cli.test_run import assay, latest

from assay import report
from assay.errors import TaskFileError
from assay.orchestration.loading.task_loader import load_task
from assay.qa.judge import judge_messages, parse_verdict
from assay.spec.qa import check_judge_template

ROWS = [
    {"sample_id": "q1", "story": "", "question": "when did the last crewed moon landing end",
     "answer": {"correct_answers": ["December 1972"], "wrong_answers": []}, "meta": {}},
    {"sample_id": "q2", "story": "", "question": "who wrote 1984",
     "answer": {"correct_answers": ["George Orwell"], "wrong_answers": []}, "meta": {}},
]  # fmt: skip

ANSWERS = """\
replies:
  - {match: "moon", reply: "it was late in 1972"}
default: "the author Eric Blair"
"""

# accepts only what the task's own prompt asks, in ToMEval's reply shape (no reason)
JUDGE = """\
replies:
  - match: "RUBRIC-7(.|\\n)*Response under review: (it was late in 1972|the author Eric Blair)"
    reply: '{"is_correct": true}'
default: '{"is_correct": false, "reason": "not the task prompt"}'
"""

PROMPT = """\
RUBRIC-7. Question: ${question}
Accepted: ${correct_answers}
Response under review: ${response}
Output ONLY a JSON object: {"is_correct": true} or {"is_correct": false}
"""


def write_task(folder: Path, judge_block: str) -> Path:
    (folder / "rows.qa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (folder / "answers.yaml").write_text(ANSWERS)
    (folder / "judge.yaml").write_text(JUDGE)
    (folder / "judge-prompt.txt").write_text(PROMPT)
    task = folder / "task.yaml"
    task.write_text(
        textwrap.dedent("""\
        task_id: open-judged
        description: open questions graded by the suite's own judge prompt
        agent: {type: llm, model: mock/answers.yaml}
        dataset: {paths: [rows.qa.jsonl], id_field: sample_id}
        qa:
          judge:
        """)
        + textwrap.indent(judge_block, "    ")
    )
    return task


def accuracy(folder: Path) -> float:
    return float(report(latest(folder)).suite("open-judged").metrics["accuracy"])


def test_the_suites_own_prompt_grades_the_open_rows(tmp_path: Path) -> None:
    task = write_task(
        tmp_path, "model: mock/judge.yaml\ncheck: false\nprompt_file: judge-prompt.txt\n"
    )
    done = assay("run", str(task), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert accuracy(tmp_path) == 1.0
    # the same rows under assay's default prompt: the judge refuses both
    task = write_task(tmp_path, "model: mock/judge.yaml\ncheck: false\n")
    done = assay("run", str(task), cwd=tmp_path)
    assert done.returncode == 1 and accuracy(tmp_path) == 0.0


@pytest.mark.parametrize(
    ("prompt", "message"),
    [
        ("Grade ${answer}: ${response}", "unknown placeholder ${answer}"),
        ("Grade ${question} only", "put ${response} in it"),
        ("Costs $5: ${response}", "write $$ for a dollar sign"),
        ("${story} ${Response}", "unknown placeholder ${Response}"),
    ],
)
def test_a_bad_prompt_is_refused_at_load_with_its_line(tmp_path: Path, prompt: str,
                                                       message: str) -> None:  # fmt: skip
    with pytest.raises(ValueError, match=None) as caught:
        check_judge_template(prompt)
    assert message in str(caught.value)
    block = f"model: mock/judge.yaml\nprompt: {json.dumps(prompt)}\n"
    task = write_task(tmp_path, block)
    with pytest.raises(TaskFileError) as loaded:
        load_task(task)
    assert message in str(loaded.value) and loaded.value.line == 8
    assert "qa.judge.prompt" in str(loaded.value)


def test_a_bad_prompt_file_is_named_with_its_field_and_line(tmp_path: Path) -> None:
    task = write_task(tmp_path, "model: mock/judge.yaml\nprompt_file: bad.txt\n")
    (tmp_path / "bad.txt").write_text("Q=${question}\nR=${response} S=${story_text}\n")
    with pytest.raises(TaskFileError) as loaded:
        load_task(task)
    assert (loaded.value.field, loaded.value.line) == ("qa.judge.prompt_file", 8)
    assert loaded.value.message.startswith("bad.txt: unknown placeholder ${story_text}")


def test_prompt_and_prompt_file_together_are_refused(tmp_path: Path) -> None:
    task = write_task(
        tmp_path, "model: mock/judge.yaml\nprompt: '${response}'\nprompt_file: judge-prompt.txt\n"
    )
    with pytest.raises(TaskFileError, match="either 'prompt' or 'prompt_file'"):
        load_task(task)


def test_a_missing_prompt_file_names_the_file(tmp_path: Path) -> None:
    task = write_task(tmp_path, "model: mock/judge.yaml\nprompt_file: nowhere.txt\n")
    with pytest.raises(TaskFileError, match=r"cannot read nowhere\.txt"):
        load_task(task)


def test_the_template_is_filled_once_and_literally() -> None:
    subject = _Subject()
    text = judge_messages(
        subject, "I say ${question} and $x", template="Q=${question} R=${response}"
    )[1].content
    assert text.startswith("Q=who wrote 1984 R=I say ${question} and $x")
    assert 'Output ONLY a JSON object: {"is_correct"' in text  # appended: the template lacks it
    own = judge_messages(subject, "r", template=PROMPT)[1].content
    assert own.count("is_correct") == 2 and '["George Orwell"]' in own


def test_a_reply_without_reason_is_read_and_extra_keys_are_not() -> None:
    assert parse_verdict('{"is_correct": true}').is_correct is True
    assert parse_verdict('{"is_correct": false, "reason": "no"}').reason == "no"
    with pytest.raises(ValueError):
        parse_verdict('{"is_correct": true, "score": 7}')
    with pytest.raises(ValueError):
        parse_verdict('{"reason": "no verdict"}')


class _Subject:
    story = ""
    question = "who wrote 1984"
    correct_answers = ("George Orwell",)
    wrong_answers: tuple[str, ...] = ()
    prompt_type = "open"
