"""The ``llm_judge`` checker on its own (a real sandbox folder, the scripted ``mock``
provider): what it refuses, the files it shows, how each verdict kind scores, and its suite
aggregate over hand-made results."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from assay.criteria.base import CriterionError, GradingContext
from assay.criteria.judge_metrics import histogram
from assay.errors import TaskFileError
from assay.orchestration.loading.task_loader import load_task
from assay.providers.base import Model
from assay.providers.mock import MockModel, MockRule
from assay.providers.pool import ModelKey
from assay.providers.pricing import Price, PriceTable
from assay.results.task_result import JudgeCriterionResult, JudgeRef
from assay.sandbox.tempdir import Sandbox
from assay.spec.criteria import LlmJudge
from assay.spec.judge import VerdictSpec
from tests.helpers import aggregate_with, check_with, write


class Models:
    """The run's models as a criterion sees them: every key answers with one script."""

    def __init__(self, model: MockModel) -> None:
        self.model = model
        self.keys: list[ModelKey] = []

    def get(self, key: ModelKey) -> Model:
        self.keys.append(key)
        return self.model

    def price(self, model: str) -> Price | None:
        return PriceTable().lookup(model)


class Recording(MockModel):
    """A scripted model that keeps the last user message of every request it answered."""

    prompts: list[str]

    async def generate(self, request: Any) -> Any:
        self.prompts = [*getattr(self, "prompts", []), request.last_user_text]
        return await super().generate(request)


def scripted(*rules: tuple[str, str], default: str | None = None) -> Recording:
    compiled = [MockRule(re.compile(p, re.DOTALL), reply=r) for p, r in rules]
    return Recording(name="mock/judge", rules=compiled, default=default)


def check(spec: LlmJudge, context: GradingContext) -> JudgeCriterionResult:
    result = asyncio.run(check_with(spec, context))
    assert isinstance(result, JudgeCriterionResult)
    return result


def judge(**fields: Any) -> LlmJudge:
    return LlmJudge.model_validate({"type": "llm_judge", "prompt": "Grade ${row.q}.",
                                    "model": "mock/judge.yaml", **fields})  # fmt: skip


def test_an_inline_judge_without_a_plan_grades_and_records_itself(tmp_path: Path) -> None:
    models = Models(scripted(default='{"reason": "ok", "score": 0.75}'))
    context = GradingContext(sandbox=None, response="r", row={"q": "x"}, models=models,
                             env={"ASSAY_TASK_DIR": str(tmp_path)})  # fmt: skip
    result = check(judge(), context)
    assert result.score == 0.75 and result.verdict == 0.75 and result.passed
    assert result.judge.name == "inline" and len(result.judge.content_hash) == 64
    assert models.keys[0].base_dir == str(tmp_path)  # a mock script next to the task


def test_what_the_checker_refuses(tmp_path: Path) -> None:
    context = GradingContext(sandbox=None, response="r", row={"q": "x"})
    with pytest.raises(CriterionError, match="needs the run's models"):
        check(judge(), context)
    referenced = LlmJudge.model_validate({"type": "llm_judge", "judge": "j.yaml"})
    with pytest.raises(CriterionError) as caught:
        check(referenced, context)
    assert str(caught.value) == ("the judge 'j.yaml' was not resolved before grading (grade "
                                 "through assay run or assay evaluate)")  # fmt: skip
    with pytest.raises(CriterionError) as caught:
        check(judge(), GradingContext(sandbox=None, response="r", row={"x": 1},
                                      models=Models(scripted(default="{}"))))  # fmt: skip
    assert str(caught.value) == (
        "the rubric of judge inline: ${row.q}: key not found (available: ['x'])"
    )
    labels = judge(verdict={"kind": "labels", "labels": ["a", "b"]})
    models = Models(scripted(default='{"reason": "r", "label": "a"}'))
    with pytest.raises(CriterionError, match="needs pass_labels"):
        check(labels, GradingContext(sandbox=None, response="r", row={"q": 1}, models=models))


def test_the_files_shown_to_the_judge(tmp_path: Path) -> None:
    root = tmp_path / "sandbox"
    write(root / "a.txt", "A" * 50)
    write(root / "logs" / "1.log", "one")
    write(root / "logs" / "2.log", "two")
    write(tmp_path / "task" / "ref.md", "reference")
    script = scripted(default='{"reason": "r", "score": 1}')
    context = GradingContext(sandbox=Sandbox(root), response="r", row={"q": 1},
                             env={"ASSAY_TASK_DIR": str(tmp_path / "task")},
                             models=Models(script))  # fmt: skip
    files = ["a.txt", "logs/*.log", "none/*.txt", "gone.txt", "$TASK_DIR/ref.md",
             "${TASK_DIR}/missing.md"]  # fmt: skip
    spec = judge(files=files, max_file_chars=100, prompt="${files}")
    asyncio.run(check_with(spec, context))
    assert script.calls == 1
    shown = _last_prompt(script)
    for expected in ("File: a.txt\n```\n" + "A" * 50, "File: logs/1.log\n```\none",
                     "File: logs/2.log\n```\ntwo", "File: none/*.txt\n```\n(no file matches",
                     "File: gone.txt\n```\n(this file does not exist)",
                     "File: $TASK_DIR/ref.md\n```\nreference",
                     "File: ${TASK_DIR}/missing.md\n```\n(this file does not exist)"):  # fmt: skip
        assert expected in shown
    write(root / "big.txt", "B" * 300)
    asyncio.run(check_with(judge(files=["big.txt"], max_file_chars=100), context))
    assert "B" * 100 + "\n… [200 more characters not shown]" in _last_prompt(script)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("../secret.txt", "path '../secret.txt' leaves the sandbox ('..'); use a path inside it"),
        ("/etc/passwd", "path '/etc/passwd' is absolute; use a path inside the sandbox"),
        ("$TASK_DIR/../x.md", "files: '$TASK_DIR/../x.md' leaves the task folder; use a path "
                              "inside it"),
        ("${TASK_DIR}//etc/x", "files: '${TASK_DIR}//etc/x' leaves the task folder; use a "
                               "path inside it"),
    ],
)  # fmt: skip
def test_files_that_leave_the_sandbox_or_the_task_folder_are_refused_at_their_line(
    tmp_path: Path, entry: str, message: str
) -> None:
    path = write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: p\n"
                 "success_criteria:\n  - type: llm_judge\n    prompt: p\n"
                 f"    files: ['{entry}']\n")  # fmt: skip
    with pytest.raises(TaskFileError) as caught:
        load_task(path)
    assert caught.value.line == 7 and caught.value.field == "success_criteria[0].files"
    assert message in caught.value.message


def test_a_file_linked_out_of_the_sandbox_is_the_criterion_error(tmp_path: Path) -> None:
    root = tmp_path / "sandbox"
    write(tmp_path / "outside.txt", "secret")
    root.mkdir()
    (root / "link.txt").symlink_to(tmp_path / "outside.txt")
    (root / "dir").symlink_to(tmp_path)
    script = scripted(default='{"reason": "r", "score": 1}')
    context = GradingContext(sandbox=Sandbox(root), response="r", env={}, models=Models(script))
    for entry, shown in (("link.txt", "link.txt"), ("dir/*.txt", "dir/*.txt")):
        with pytest.raises(CriterionError) as caught:
            asyncio.run(check_with(judge(files=[entry]), context))
        assert str(caught.value) == f"path '{shown}' resolves outside the sandbox (a symlink)"
    assert script.calls == 0


def _last_prompt(model: Recording) -> str:
    return model.prompts[-1]


def _result(verdict: Any, score: float, **fields: Any) -> JudgeCriterionResult:
    return JudgeCriterionResult(criterion_type="llm_judge", score=score, verdict=verdict,
                                judge=JudgeRef(name="j", content_hash="a" * 64),
                                **fields)  # fmt: skip


def test_the_aggregate_of_a_scale_with_samples() -> None:
    spec = judge(verdict={"kind": "scale", "min": 0, "max": 1})
    results: list[Any] = [_result(0.25, 0.25, spread=0.1), _result(0.95, 0.95, spread=0.3),
                          _result(0.5, 0.5)]  # fmt: skip
    table, details = aggregate_with(spec, results)
    assert table.values["sample_spread"] == pytest.approx(0.2)
    assert table.values["verdict_mean"] == pytest.approx(1.7 / 3)
    assert [b["count"] for b in details["histogram"]] == [0, 0, 1, 0, 0, 1, 0, 0, 0, 1]
    assert details["judges"] == [{"name": "j", "version": None, "content_hash": "a" * 64,
                                  "source": "", "model": ""}]  # fmt: skip
    assert "corrected_pass_rate" not in details  # only binary judges are corrected


def test_histograms_of_integer_and_continuous_scales() -> None:
    points = histogram([1.0, 2.4, 2.6, 5.0], VerdictSpec(kind="scale", min=1, max=5))
    assert points == [{"value": v, "count": c} for v, c in [(1, 1), (2, 1), (3, 1), (4, 0),
                                                            (5, 1)]]  # fmt: skip
    bins = histogram([0.0, 0.1, 1.0], VerdictSpec(kind="scale", min=0, max=1))
    assert bins[0]["count"] == 1 and bins[1]["count"] == 1 and bins[-1]["count"] == 1


def test_labels_with_an_expected_label_in_another_case() -> None:
    spec = judge(verdict={"kind": "labels", "labels": ["Good", "Bad"]}, expected_label="good")
    models = Models(scripted(default='{"reason": "r", "label": "Good"}'))
    result = check(spec, GradingContext(sandbox=None, response="r", row={"q": 1}, models=models))
    assert result.score == 1.0 and result.expected_label == "good"
    table, details = aggregate_with(spec, [result])
    assert table.values["accuracy"] == 1.0
    assert details["confusion"] == [{"expected": "Good", "observed": "Good", "count": 1}]
