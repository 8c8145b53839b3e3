"""Grade a ``prediction.jsonl`` file and write ``metrics.json``, without a run directory and
without the answering model (``assay evaluate PREDICTIONS.jsonl``,
:func:`assay.evaluate_predictions`).

The QA settings (judge, ``group_by``, metrics hook) come from, in order: the command-line
flags; ``--task FILE`` (its ``qa:`` block); the run the file belongs to (a
``<run>/<variant>/<suite>/prediction.jsonl`` written by assay: its rows' recorded task);
else the defaults (rules only, no groups, no hook). ToMEval's own ``prediction.jsonl`` files
load as they are.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from assay.errors import UsageError
from assay.judges.assets import JudgeResolver
from assay.orchestration.loading.qa_rows import judge_key
from assay.orchestration.loading.task_loader import load_task
from assay.orchestration.planning.expand import expand_dataset
from assay.orchestration.planning.judging import resolve_qa_judge
from assay.providers.pool import ModelPool, PoolSettings, default_registry
from assay.qa import PredictionRecord, iter_predictions, load_metrics_hook
from assay.qa.evaluate import JudgeSettings, collector_paused, evaluate_records
from assay.qa.metrics import metrics_file
from assay.results.io import Writer, check_output_file, read_json
from assay.spec.qa import QaConfig, QaJudge


@dataclass(frozen=True)
class PredictionOptions:
    """Settings of grading a prediction file; ``None``/empty: not given (the run's or the
    defaults apply).

    Attributes:
        task: a task file whose ``qa:`` block gives the settings.
        judge_model: the judge for open questions the rules cannot decide.
        judge_retries: retries of an unreadable verdict (0-10).
        include_story: show the judge the story.
        group_by: report accuracy per value of these record paths (``meta.ability``).
        metrics_hook: a Python file with ``compute_metrics(records, per_sample_results)``.
        output: where ``metrics.json`` goes (default: beside the file).
        jobs: judge calls in flight.
        store: the store of a store judge ``task``'s ``qa.judge`` names.
    """

    task: Path | None = None
    judge_model: str | None = None
    judge_retries: int | None = None
    include_story: bool | None = None
    group_by: tuple[str, ...] = ()
    metrics_hook: Path | None = None
    output: Path | None = None
    jobs: int = 4
    store: str | None = None


@dataclass
class PredictionReport:
    """What was graded and written: ``output`` (the ``metrics.json`` path), ``document``
    (its content: ``avg_metrics`` and ``all_metrics``, one entry per replicate),
    ``records`` (how many were read) and ``sources`` (where the settings came from)."""

    output: Path
    document: dict[str, Any]
    records: int
    sources: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def not_graded(self) -> int:
        """Records that did not grade: answer errors, judge errors and refusals."""
        return sum(int(m.get(key) or 0) for m in self.document["all_metrics"]
                   for key in ("answer_errors", "judge_errors", "refused"))  # fmt: skip

    @property
    def exit_code(self) -> int:
        """``assay run``'s rule for rows: 1 when a record did not grade or none did, else 0."""
        graded = sum(int(m.get("graded") or 0) for m in self.document["all_metrics"])
        return 1 if self.not_graded or not graded else 0


def recorded_config(path: Path) -> tuple[QaConfig, Path] | None:
    """The ``qa:`` block and task folder recorded by the run ``path`` belongs to, if any
    (every row of a suite folder records the same task, so the first one found answers)."""
    task_json = next(path.parent.glob("*/[0-9][0-9]*/task.json"), None)
    if task_json is None:
        return None
    task_config = read_json(task_json).get("task_config") or {}
    qa = (task_config.get("resolved") or {}).get("qa")
    if qa is None:
        return None
    return QaConfig.model_validate(qa), Path(task_config.get("task_dir") or ".")


def settings_for(
    path: Path, options: PredictionOptions, recorded: tuple[QaConfig, Path] | None
) -> tuple[QaConfig, Path, str]:
    """The QA settings to grade ``path`` with (``recorded``: :func:`recorded_config`), the
    folder a hook path is relative to, and where they came from.

    Raises:
        TaskFileError: ``--task`` is invalid or has no ``qa:`` block.
    """
    config, base, source = QaConfig(), Path.cwd(), "defaults"
    if options.task is not None:
        loaded = load_task(options.task)
        if loaded.definition.qa is None:
            raise UsageError(f"{options.task} has no qa: block to grade predictions with")
        resolver = JudgeResolver(options.store)
        try:  # a judge asset its qa.judge names, as a run resolves it
            definition = resolve_qa_judge(loaded.definition, loaded, resolver)
        finally:
            resolver.close()
        assert definition.qa is not None
        config, base, source = definition.qa, loaded.base_dir, str(options.task)
    elif recorded is not None:
        config, base = recorded
        source = f"the run's task ({path.parent})"
    updates: dict[str, Any] = {}
    if options.group_by:
        updates["group_by"] = list(options.group_by)
    if options.metrics_hook is not None:
        updates["metrics_hook"] = str(options.metrics_hook.resolve())
    judge = _judge(config.judge, options)
    if judge is not config.judge:
        updates["judge"] = judge
    if updates:
        try:
            config = QaConfig.model_validate({**config.model_dump(), **updates})
        except ValidationError as exc:  # a group_by path of the wrong shape, given in Python
            message = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
            raise UsageError(f"invalid QA setting: {message}") from None
    return config, base, source


def _judge(current: QaJudge | None, options: PredictionOptions) -> QaJudge | None:
    fields: dict[str, Any] = {}
    if options.judge_model is not None:
        fields["model"] = options.judge_model
    if options.judge_retries is not None:
        fields["retries"] = options.judge_retries
    if options.include_story is not None:
        fields["include_story"] = options.include_story
    if not fields:
        return current
    if current is None and "model" not in fields:
        raise UsageError("--judge-retries and --include-story need a judge (--judge MODEL)")
    if current is not None and current.judge is not None and "model" not in fields:
        raise UsageError(
            f"the judge is the judge asset {current.display}, whose retries and prompt are its "
            "own: --judge-retries and --include-story do not apply to it",
            hint="give --judge MODEL to grade with a model and assay's prompt instead",
        )
    base = current.model_dump(exclude_unset=True) if current is not None else {}
    if "model" in fields:  # --judge MODEL replaces a judge asset
        base = {k: v for k, v in base.items() if k not in ("judge", "asset")}
    try:
        return QaJudge.model_validate({**base, **fields})
    except ValidationError as exc:
        message = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
        raise UsageError(f"invalid judge setting: {message}") from None


def evaluate_predictions(path: Path, options: PredictionOptions) -> PredictionReport:
    """Grade every record of ``path`` and write ``metrics.json``.

    Raises:
        DatasetError: the file is missing or a line is not a prediction record.
        TaskFileError: the metrics hook failed; UsageError: bad settings, or an open question
            with neither rules nor a judge.
    """
    with collector_paused():
        return _evaluate(path, options)


def _default_output(
    path: Path, options: PredictionOptions, config: QaConfig, run_config: QaConfig
) -> Path:
    """``metrics.json`` beside ``path``; refused inside a run's suite folder when ``config``
    differs from ``run_config`` (it would replace the metrics ``suite.json`` agrees with)."""
    if options.output is not None:
        return options.output
    if (path.parent / "suite.json").is_file() and config != run_config:
        raise UsageError(
            f"{path.parent / 'metrics.json'} belongs to the run; grading with other settings "
            "would replace it",
            hint="give -o FILE to write these metrics elsewhere",
        )
    return path.parent / "metrics.json"


def _recorded_header(path: Path) -> dict[str, Any]:
    """The ids, dataset and judge warnings of the run's own ``metrics.json`` (or
    ``suite.json``) beside ``path``, so a file graded again keeps the run's keys."""
    for name in ("metrics.json", "suite.json"):
        target = path.parent / name
        if target.is_file():
            try:
                data = read_json(target)
            except (ValueError, OSError):
                continue
            return {k: data[k] for k in ("suite_id", "variant_id", "dataset", "judge_warnings")
                    if k in data and not (name == "suite.json" and k == "dataset")}  # fmt: skip
    return {}


def _evaluate(path: Path, options: PredictionOptions) -> PredictionReport:
    recorded = recorded_config(path)
    recorded_qa = recorded[0] if recorded else QaConfig()
    config, base, source = settings_for(path, options, recorded)
    output = _default_output(path, options, config, recorded_qa)
    hook, hook_file = None, "metrics hook"
    if config.metrics_hook is not None:
        hook_path = Path(config.metrics_hook)
        hook_path = hook_path if hook_path.is_absolute() else base / hook_path
        hook, hook_file = load_metrics_hook(hook_path), str(hook_path)
    if not path.is_file():
        raise UsageError(f"prediction file not found: {path}")
    if options.output is not None:  # before any judge is asked
        check_output_file(options.output, "--output")
    registry = default_registry()
    key = judge_key(config.judge, base) if config.judge is not None else None
    if key is not None:
        registry.preflight(key)

    async def main() -> dict[str, Any]:
        pool = ModelPool(registry, PoolSettings(parallel=options.jobs))
        try:
            judge = JudgeSettings.of(config.judge, pool.get(key) if key is not None else None)

            async def start() -> None:  # only when a record needs the judge
                assert key is not None
                await pool.start([key])

            return await evaluate_records(
                counted(iter_predictions(path)), judge, group_by=config.group_by, hook=hook,
                hook_file=hook_file, parallel=options.jobs, before_judging=start,
            )  # fmt: skip
        finally:
            await pool.aclose()

    read = [0]

    dataset: list[str | None] = [None]
    seen: dict[int, set[str]] = {}

    def counted(records: Iterator[PredictionRecord]) -> Iterator[PredictionRecord]:
        for record in records:
            read[0] += 1
            if dataset[0] is None:
                dataset[0] = record.dataset or None
            seen.setdefault(record.repeat, set()).add(record.sample_id)
            yield record

    document = asyncio.run(main())
    endpoint = config.judge.endpoint if config.judge else None
    records = read[0]  # the hook's own total may count differently
    if not document["all_metrics"]:
        raise UsageError(f"{path} holds no prediction records")
    header = _recorded_header(path) if recorded is not None else {}
    document = metrics_file(
        document, suite_id=header.get("suite_id"), variant_id=header.get("variant_id"),
        dataset=header.get("dataset", dataset[0]), source=str(path),
        judge=config.judge.display if config.judge else None,
        judge_warnings=header.get("judge_warnings", []) if config == recorded_qa else [],
    )  # fmt: skip
    credentials = [endpoint.api_key_env] if endpoint and endpoint.api_key_env else []
    Writer.from_environment(os.environ, names=credentials).json(output, document)
    samples = (_task_samples(options) if options.task
               else _run_samples(path) if recorded is not None else None)  # fmt: skip
    whose = "task's" if options.task else "run's"
    warnings = coverage_warnings(path, samples, seen, whose=whose) if samples is not None else []
    return PredictionReport(output, document, records, [source], warnings)


def _run_samples(path: Path) -> list[str]:
    """The sample ids of the rows the run ``path`` belongs to ran, from their ``task.json``
    (a row's ``sample_id``, else its row id), in folder order."""
    found: dict[str, None] = {}
    for task_json in sorted(path.parent.glob("*/[0-9][0-9]*/task.json")):
        try:
            data = read_json(task_json)
        except (OSError, ValueError):
            continue
        row = data.get("row") if isinstance(data, dict) else None
        sample = row.get("sample_id") if isinstance(row, dict) else None
        found[str(sample or data.get("row_id"))] = None
    return list(found)


def _task_samples(options: PredictionOptions) -> list[str]:
    """The sample ids of ``--task``'s dataset, in dataset order.

    Raises:
        DatasetError: its rows cannot be read.
    """
    assert options.task is not None
    expansion = expand_dataset(load_task(options.task), store_url=options.store)
    return [row.qa.sample_id for row in expansion.row_tasks if row.qa is not None]


def coverage_warnings(
    path: Path, samples: list[str], seen: dict[int, set[str]], *, whose: str = "task's"
) -> list[str]:
    """What ``path``'s records leave out of the task's dataset or the run's rows
    (``samples``), per replicate, and the sample ids they name that it does not have
    (``seen``: replicate → ids)."""
    known, warnings = set(samples), []
    for replicate in sorted(seen):
        missing = [sample for sample in samples if sample not in seen[replicate]]
        if missing:
            warnings.append(
                f"{path}: replicate {replicate} has no prediction for {len(missing)} of the "
                f"{whose} {len(samples)} samples (e.g. {missing[0]!r}): its metrics are of "
                f"the {len(samples) - len(missing)} that have one"
            )
    unknown = sorted({sample for ids in seen.values() for sample in ids} - known)
    if unknown:
        warnings.append(
            f"{path}: {len(unknown)} sample id(s) are not in the {whose} samples (e.g. "
            f"{unknown[0]!r}): they were graded as the records give them"
        )
    return warnings
