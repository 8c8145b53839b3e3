"""A criterion is one class and one registration: a class of the tests' own
(:mod:`tests.criteria.word_count`) runs end to end through ``assay.run(criteria=[...])``, and
what the registry derives (the task file's union, capabilities, metric names) follows the
classes, not lists of type names."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import pytest

import assay
from assay.criteria import Criterion, GradingContext, default_criteria
from assay.criteria.base import ScoreTally, basic_result
from assay.errors import PluginError, TaskFileError, UsageError
from assay.metrics.values import MetricTable
from assay.results.task_result import CriterionResult
from tests.criteria.word_count import WordCount


def word_task(**criterion: Any) -> dict[str, Any]:
    return {
        "task_id": "words",
        "description": "the response has enough words",
        "agent": {"type": "llm", "model": "mock/echo"},
        "initial_prompt": "${row.said}",
        "dataset": {"rows": [{"id": "a", "said": "one two three"}, {"id": "b", "said": "one"}]},
        "success_criteria": [{"type": "word_count", "min_words": 2, **criterion}],
    }


def test_a_criterion_of_ones_own_runs_end_to_end(workdir: Path) -> None:
    result = assay.run([word_task(suite_thresholds={"long_share": 0.5})], criteria=[WordCount])
    suite = result.suite("words")
    assert suite.metrics["long_share"] == 0.5 and suite.metrics["mean"] == 0.5
    assert [g.passed for g in suite.gates] == [True]
    details = sorted(r.success_criteria_results[0].details for r in suite.rows())
    assert details == ["1 words", "3 words"]
    written = json.loads((suite.folder / "suite.json").read_text(encoding="utf-8"))
    assert written["criteria"][0] == {
        "type": "word_count", "description": "", "weight": 1.0, "pass_threshold": 0.9,
        "suite_thresholds": {"long_share": 0.5}, "min_words": 2}  # fmt: skip


def test_its_metric_names_gate_at_load_time(workdir: Path) -> None:
    with pytest.raises(TaskFileError, match="'word_count' produces no metric named 'long_shar'"
                       ) as caught:  # fmt: skip
        assay.plan([word_task(suite_thresholds={"long_shar": 0.5})], criteria=[WordCount])
    assert "did you mean 'long_share'?" in str(caught.value)


def test_its_fields_are_its_config_and_typos_are_named(workdir: Path) -> None:
    with pytest.raises(TaskFileError, match="unknown field 'min_word'") as caught:
        assay.plan([word_task(min_word=3)], criteria=[WordCount])
    assert "did you mean 'min_words'?" in str(caught.value)
    with pytest.raises(TaskFileError, match="min_words"):
        assay.plan([word_task(min_words="many")], criteria=[WordCount])


def test_without_the_registration_the_type_is_unknown(workdir: Path) -> None:
    with pytest.raises(TaskFileError, match="unknown criterion type 'word_count'"):
        assay.plan([word_task()])


def test_a_capability_is_read_from_the_class(workdir: Path) -> None:
    """``graded_after_crash`` grades the row after its agent failed: a class that declares it
    is graded, one that does not is not (the old code kept a list of type names)."""

    class Sober(WordCount):
        type: Literal["sober_count"]  # type: ignore[assignment]
        graded_after_crash: ClassVar[bool] = False

    task = word_task()
    task["agent"] = {"type": "command", "command": "exit 3"}
    task["success_criteria"].append({"type": "sober_count"})
    result = assay.run([task], criteria=[WordCount, Sober])
    rows = list(result.suite("words").rows())
    assert rows and all(r.final_status.value == "ERROR" for r in rows)
    graded_after = {c.criterion_type for r in rows for c in r.post_failure_criteria_results}
    assert graded_after == {"word_count"}


class NotACriterion:
    type = "nothing"


class FileCheckAgain(Criterion):
    type: Literal["file_check"]

    async def check(self, context: GradingContext) -> CriterionResult:
        return basic_result(self, 1.0, "")


class NoLiteral(Criterion):
    async def check(self, context: GradingContext) -> CriterionResult:
        return basic_result(self, 1.0, "")


@pytest.mark.parametrize(
    ("given", "message", "hint"),
    [
        (NotACriterion, "NotACriterion, not a criterion class",
         "derives from assay.criteria.base.Criterion"),
        (FileCheckAgain, "adds the criterion type 'file_check', which assay (built in) already",
         "give FileCheckAgain another type name"),
        (NoLiteral, "NoLiteral.type must be a Literal of one name", None),
    ],
)  # fmt: skip
def test_a_class_that_cannot_be_a_criterion_is_refused_by_name(
    workdir: Path, given: Any, message: str, hint: str | None
) -> None:
    with pytest.raises(PluginError) as caught:
        assay.plan([word_task()], criteria=[WordCount, given])
    assert message in caught.value.message
    assert given.__qualname__ in caught.value.message
    if hint is not None:
        assert caught.value.hint is not None and hint in caught.value.hint


def test_every_set_of_types_follows_the_classes() -> None:
    """What the old code listed by name, each class now declares; the sets are unchanged."""
    registry = default_criteria(entry_points=False)
    classes = registry.classes()

    def having(flag: str) -> set[str]:
        return {c.type_name() for c in classes if getattr(c, flag)}

    assert having("reads_transcript") == {"skill_triggered", "command_executed", "tool_called",
                                          "commands_efficiency"}  # fmt: skip
    assert having("has_labels") == {"classification_match", "skill_triggered"}
    assert having("reads_sandbox") == {"file_exists", "run_command", "pytest", "import_check",
                                       "pylint_score", "agent_judge", "uipath_eval"}  # fmt: skip
    assert having("runs_agent_code") == {"run_command", "uipath_eval"}
    assert having("graded_after_crash") == {
        "file_exists", "file_check", "file_contains", "file_matches_regex", "json_check",
        "reference_comparison", "cli_called", "classification_match", "response_match",
        "skill_triggered", "command_executed", "tool_called", "commands_efficiency",
    }  # fmt: skip
    extended = registry.with_classes([WordCount])
    assert "word_count" in extended.types and "word_count" not in registry.types
    union_members = extended.task_model().model_fields["success_criteria"].annotation
    assert "WordCount" in repr(union_members)


def test_evaluate_and_report_take_the_same_classes(workdir: Path) -> None:
    result = assay.run([word_task(suite_thresholds={"long_share": 0.5})], criteria=[WordCount],
                       keep_sandboxes=True)  # fmt: skip
    again = assay.evaluate(result.run_dir, criteria=[WordCount])
    assert again.suite("words").metrics["long_share"] == 0.5
    rebuilt = assay.report(result.run_dir, criteria=[WordCount])
    assert rebuilt.suite("words").metrics["long_share"] == 0.5 and rebuilt.exit_code == 0


def test_grading_again_without_the_classes_says_what_to_pass(workdir: Path) -> None:
    result = assay.run([word_task()], criteria=[WordCount])
    for again in (assay.report, assay.evaluate):
        with pytest.raises(UsageError, match="criterion type 'word_count', which assay does not "
                           "have here") as caught:  # fmt: skip
            again(result.run_dir)
        assert caught.value.hint is not None and "criteria=[...]" in caught.value.hint


def _bugged(name: str, check: Any, **capabilities: Any) -> type[Criterion]:
    """A criterion class of one's own named ``name`` whose ``check`` is ``check``."""
    namespace: dict[str, Any] = {"__annotations__": {"type": Literal[name]}, "check": check}
    for key, value in capabilities.items():
        namespace[key] = value
        namespace["__annotations__"][key] = ClassVar[Any]
    return type(f"C_{name}", (Criterion,), namespace)


def test_a_criterion_that_hangs_returns_junk_or_nan_errs_alone(workdir: Path) -> None:
    """Each fault is the criterion's own error, named; the row's other criterion keeps its
    result: a check past its class's ``check_seconds`` is ended, one that returns no
    criterion result is named, a NaN score is no score (it was a silent 0), and a bug's
    traceback is in the result's details."""

    async def hangs(self: Criterion, context: GradingContext) -> CriterionResult:
        await asyncio.sleep(3600)
        raise AssertionError("never")

    async def junk(self: Criterion, context: GradingContext) -> Any:
        return 0.5

    async def nan(self: Criterion, context: GradingContext) -> CriterionResult:
        return basic_result(self, float("nan"), "no score")

    async def bug(self: Criterion, context: GradingContext) -> CriterionResult:
        return {}["missing"]  # type: ignore[no-any-return]

    classes = [_bugged("hangs", hangs, check_seconds=0.2), _bugged("junk", junk),
               _bugged("nan", nan), _bugged("bug", bug)]  # fmt: skip
    expected = {
        "hangs": "hangs did not finish within 0.2 s (its class's check_seconds): ended",
        "junk": "internal error in junk: check() returned float, not a criterion result "
        "(basic_result(...))",
        "nan": "the score is not a finite number (nan)",
        "bug": "internal error in bug: KeyError('missing')",
    }
    for name, error in expected.items():
        task = word_task()
        task["success_criteria"] = [{"type": "word_count", "min_words": 1}, {"type": name}]
        task["task_id"] = f"t-{name}"
        result = assay.run([task], criteria=[WordCount, *classes])
        rows = list(result.suite(f"t-{name}").rows())
        assert [r.final_status.value for r in rows] == ["ERROR", "ERROR"]
        for row in rows:
            words, own = row.success_criteria_results
            assert words.score == 1 and words.error is None
            assert own.error == error and own.evaluation_status == "error"
        if name == "bug":
            assert 'return {}["missing"]' in own.details and "KeyError" in own.details


def test_load_task_takes_the_classes_a_file_names(workdir: Path) -> None:
    """``assay.load_task(path, criteria=[...])``, as ``assay.run`` takes them (it took a
    path alone: a file naming a class of one's own could not be loaded in Python)."""
    import yaml

    path = workdir / "words.yaml"
    path.write_text(yaml.safe_dump(word_task()), encoding="utf-8")
    loaded = assay.load_task(path, criteria=[WordCount])
    assert [c.type for c in loaded.definition.success_criteria] == ["word_count"]
    with pytest.raises(TaskFileError, match="unknown criterion type 'word_count'"):
        assay.load_task(path)


def test_one_class_where_a_list_is_taken_is_named() -> None:
    """``task_schema(criteria=WordCount)`` gave Python's "'ModelMetaclass' object is not
    iterable"; ``assay.run`` already named it."""
    with pytest.raises(TypeError, match=r"task_schema\(\) option criteria takes a list of "
                       r"classes \(\[WordCount\]\)"):  # fmt: skip
        assay.task_schema(criteria=WordCount)  # type: ignore[arg-type]


def test_a_score_outside_zero_to_one_or_changed_after_it_was_made_errs_alone(
    workdir: Path,
) -> None:
    """Found by a plugin author: ``basic_result`` clamped 5.0 (a count where a share was
    meant) to a pass and ``True`` to 1.0, silently; a result whose score was scaled after it
    was made wrote an invalid ``task.json`` that stopped the whole run's reports (exit 2)."""

    async def count(self: Criterion, context: GradingContext) -> CriterionResult:
        return basic_result(self, 5.0, "three matches")

    async def boolean(self: Criterion, context: GradingContext) -> CriterionResult:
        return basic_result(self, True, "yes")

    async def scaled(self: Criterion, context: GradingContext) -> CriterionResult:
        made = basic_result(self, 0.5, "scaled")
        made.score *= 3
        return made

    async def rounded(self: Criterion, context: GradingContext) -> CriterionResult:
        return basic_result(self, 0.1 + 0.2 + 0.7 + 1e-12, "a rounding error over 1")

    async def numpy(self: Criterion, context: GradingContext) -> CriterionResult:
        return basic_result(self, np.int64(1), "numpy's integers are numbers")  # type: ignore[arg-type]

    classes = [_bugged("count", count), _bugged("boolean", boolean), _bugged("scaled", scaled),
               _bugged("rounded", rounded), _bugged("numpy", numpy)]  # fmt: skip
    expected = {
        "count": "the score 5.0 is outside [0, 1]: a criterion scores a share, not a count "
        "(refused, not clamped)",
        "boolean": "the score is bool True, not a number in [0, 1]",
        "scaled": "internal error in scaled: check() returned a BasicCriterionResult whose "
        "score is invalid (Input should be less than or equal to 1; was it changed after "
        "basic_result(...)?)",
    }
    for name in [*expected, "rounded", "numpy"]:
        task = word_task()
        task["success_criteria"] = [{"type": "word_count", "min_words": 1}, {"type": name}]
        task["task_id"] = f"t-{name}"
        result = assay.run([task], criteria=[WordCount, *classes])
        assert result.exit_code in (0, 1)
        for row in result.suite(f"t-{name}").rows():
            words, own = row.success_criteria_results
            assert words.score == 1 and words.error is None
            if name in ("rounded", "numpy"):
                assert (own.score, own.error) == (1.0, None)
            else:
                assert own.error == expected[name] and own.evaluation_status == "error"
                assert row.final_status.value == "ERROR"
        assert (result.run_dir / "default" / f"t-{name}" / "suite.json").is_file()


class _Exploding(ScoreTally):
    def add(self, result: CriterionResult) -> None:
        raise RuntimeError("tally add exploded")


class _NotANumber(ScoreTally):
    def result(self) -> tuple[MetricTable, dict[str, Any]]:
        table, details = super().result()
        table.set("weird", float("nan"))
        return table, {**details, "spread": float("inf")}


def _tallied(name: str, tally: type[ScoreTally]) -> type[Criterion]:
    async def check(self: Criterion, context: GradingContext) -> CriterionResult:
        return basic_result(self, 1.0, "ok")

    cls = _bugged(name, check)
    cls.tally = lambda self: tally()  # type: ignore[method-assign]
    return cls


def test_a_tally_that_raises_or_gives_nan_is_its_criterions_error_not_the_runs(
    workdir: Path,
) -> None:
    """Found by a plugin author: a ``tally()`` that raised, or a NaN metric, lost every
    suite's reports (healthy suites of other task files too), and ``assay report`` and
    ``--resume`` crashed the same way. Now it is that criterion's aggregate error, named."""
    exploding, nan = _tallied("exploding", _Exploding), _tallied("nan_tally", _NotANumber)
    tasks = []
    for name in ("exploding", "nan_tally", "word_count"):
        task = word_task(suite_thresholds={"mean": 0.5})
        task["success_criteria"] = [{"type": "word_count", "min_words": 1},
                                    {"type": name, "suite_thresholds": {"mean": 0.5}}]  # fmt: skip
        task["task_id"] = f"t-{name}"
        tasks.append(task)
    result = assay.run(tasks, criteria=[WordCount, exploding, nan])
    assert result.exit_code == 1  # the exploding criterion's gate fails; nothing is lost
    assert (result.run_dir / "run.json").is_file()
    suites = {s.suite_id: s for s in result.suites}
    assert suites["t-word_count"].passed
    bad = json.loads((result.run_dir / "default" / "t-exploding" / "suite.json").read_text())
    aggregate = bad["criterion_aggregates"][1]
    assert aggregate["error"] == ("C_exploding.tally() failed: RuntimeError: tally add "
                                  "exploded, so its thresholds fail")  # fmt: skip
    assert bad["criterion_aggregates"][0]["error"] is None and not bad["passed"]
    odd = json.loads((result.run_dir / "default" / "t-nan_tally" / "suite.json").read_text())
    aggregate = odd["criterion_aggregates"][1]
    assert aggregate["metrics"]["weird"] is None and aggregate["metrics"]["mean"] == 1.0
    assert aggregate["undefined_metrics"]["weird"] == (
        "C_nan_tally.tally() gave nan, not a finite number"
    )
    assert aggregate["details"]["spread"] is None and odd["passed"]
    again = assay.report(result.run_dir, criteria=[WordCount, exploding, nan])
    assert again.exit_code == 1


def test_a_check_that_is_not_async_is_refused_when_it_registers(workdir: Path) -> None:
    """Found by a plugin author: a plain ``def check`` (or none at all) passed registration
    and ``plan``, then was an error on every row."""

    def plain(self: Criterion, context: GradingContext) -> CriterionResult:
        return basic_result(self, 1.0, "")

    task = word_task()
    task["success_criteria"] = [{"type": "plain"}]
    with pytest.raises(PluginError, match=r"C_plain\.check\(\) is a plain function") as err:
        assay.plan([task], criteria=[_bugged("plain", plain)])
    assert err.value.hint is not None and "async def check" in err.value.hint
    missing = type("C_none", (Criterion,), {"__annotations__": {"type": Literal["none"]}})
    task["success_criteria"] = [{"type": "none"}]
    with pytest.raises(PluginError, match=r"the class C_none does not define check\(\)"):
        assay.plan([task], criteria=[missing])


def test_a_metric_its_class_says_is_a_count_may_be_gated_above_one(workdir: Path) -> None:
    """Found by a plugin author: only ``count`` and ``verdict_*`` could be gated above 1, so
    a criterion's own total could not be gated at all ("can never be decided")."""

    class Hits(WordCount):
        unbounded_metrics: ClassVar[frozenset[str]] = frozenset({"count", "long_share"})

    task = word_task(suite_thresholds={"long_share": 3})
    with pytest.raises(TaskFileError, match="outside \\[0, 1\\]") as caught:
        assay.plan([task], criteria=[WordCount])
    assert caught.value.hint is not None and "unbounded_metrics" in caught.value.hint
    assert assay.plan([task], criteria=[Hits]).tasks
