"""Which judge grades a QA suite's open answers: the built-in prompt, or a judge asset.

``qa.judge`` either gives a model (and optionally its own prompt), judged by
:class:`assay.qa.judge.PromptJudge`, or names a judge asset (a judge file or a store judge,
resolved when the run is planned), judged here by :class:`AssetJudge` through the judges' one
grading path (:func:`assay.judges.grade.judge_case`: its rubric, few-shot examples, samples and
retries). The asset's rubric sees the item as ``${row.<field>}`` of
:data:`assay.spec.qa.JUDGE_ROW_FIELDS` (the answer lists as JSON text) and the answer as
``${response}``; its verdict marks the answer correct when binary ``true`` or a label among
``pass_labels``. A scale judge cannot say right or wrong and is refused (:func:`asset_problem`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from assay.judges.grade import judge_case
from assay.judges.prompt import JudgeCase, rubric_fields, rubric_slots
from assay.providers.base import Model
from assay.qa.judge import JudgeSubject, JudgeVerdict, OpenJudge, PromptJudge
from assay.spec.judge import JudgeAsset
from assay.spec.qa import JUDGE_ROW_FIELDS, QaJudge


def judge_row(item: JudgeSubject) -> dict[str, str]:
    """The ``${row.<field>}`` values an asset's rubric reads of ``item``."""
    answers = {"correct_answers": list(item.correct_answers),
               "wrong_answers": list(item.wrong_answers)}  # fmt: skip
    return {
        "question": item.question,
        "story": item.story,
        "correct_answers": json.dumps(answers["correct_answers"], ensure_ascii=False),
        "wrong_answers": json.dumps(answers["wrong_answers"], ensure_ascii=False),
        "prompt_type": item.prompt_type,
        "answer": json.dumps(answers, ensure_ascii=False),
    }


def asset_problem(asset: JudgeAsset) -> str | None:
    """Why ``asset`` cannot judge QA answers (``None``: it can): a scale verdict, labels
    without ``pass_labels``, a ``${row.x}`` that a QA item does not have, or files, a
    transcript or a dialog, which a QA answer does not have either."""
    verdict = asset.definition.verdict
    if verdict.kind == "scale":
        return (
            f"judge {asset.name} answers {verdict.describe()}, and a QA answer is right or "
            "wrong: use a judge with verdict kind binary, or labels with pass_labels"
        )
    if verdict.kind == "labels" and not verdict.pass_labels:
        return (
            f"judge {asset.name} answers one of the labels {verdict.labels} and its "
            "pass_labels do not say which mark a QA answer correct: add pass_labels"
        )
    rubric = asset.definition.rubric
    unknown = sorted(rubric_fields(rubric) - set(JUDGE_ROW_FIELDS))
    if unknown:
        allowed = ", ".join("${row." + name + "}" for name in JUDGE_ROW_FIELDS)
        return (
            f"judge {asset.name}'s rubric uses ${{row.{unknown[0]}}}, which a QA item does "
            f"not have; it can use {allowed}"
        )
    unseen = sorted(rubric_slots(rubric) & {"files", "transcript", "dialog"})
    if unseen:
        return (
            f"judge {asset.name}'s rubric places ${{{unseen[0]}}}, and a QA answer has no "
            "files, transcript or dialog: the judge sees the item's fields and ${response}"
        )
    return None


@dataclass(frozen=True)
class AssetJudge:
    """A judge asset judging open answers on ``model`` (the asset's, started)."""

    model: Model
    asset: JudgeAsset

    async def __call__(self, item: JudgeSubject, response: str) -> JudgeVerdict:
        """The verdict on ``response``: the asset's combined samples (a judge error when
        none could be read; never raises on a bad reply)."""
        definition = self.asset.definition
        case = JudgeCase(row=judge_row(item), response=response)
        outcome = await judge_case(self.model, definition, case)
        if outcome.value is None:
            return JudgeVerdict(None, None, outcome.attempts, outcome.error, outcome.raw,
                                outcome.usage)  # fmt: skip
        correct = definition.verdict.passes(outcome.value) is True  # asset_problem: it says
        return JudgeVerdict(correct, outcome.reason, outcome.attempts, None, outcome.raw,
                            outcome.usage)  # fmt: skip


def open_judge(config: QaJudge | None, model: Model | None) -> OpenJudge | None:
    """The judge of open answers for a ``qa.judge`` block and its started model (``None``
    when there is no model: the rules alone grade)."""
    if model is None:
        return None
    if config is None:
        return PromptJudge(model, retries=0)
    if config.asset is not None:
        return AssetJudge(model, config.asset)
    if config.judge is not None:
        raise ValueError(f"qa.judge {config.judge!r} was not resolved (grade through a plan)")
    return PromptJudge(model, retries=config.retries, include_story=config.include_story,
                       max_tokens=config.max_tokens, template=config.prompt)  # fmt: skip
