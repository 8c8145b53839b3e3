"""Calibrating a judge against human labels from Python (``assay judge calibrate``): an LLM
judge on a labelled store dataset, an agent judge on a run's rows (it runs the agent, so it
lives here, above the judges' package). Storing a judge version is
:func:`assay.judges.add_judge` (``assay judge add``); a run's or a trace file's cases go into
a dataset with :func:`assay.store.add_run_to_dataset` and
:func:`assay.store.add_traces_to_dataset` (``assay dataset add-run`` / ``add-traces``).

```python
import assay.api
import assay.judges
import assay.store

record, created = assay.judges.add_judge("helpful", "judges/helpful.yaml")   # helpful@1
result = assay.api.calibrate_judge("helpful", dataset="labels", label_field="human")
print(result.report["kappa"], result.directory / "calibration.md")
assay.store.add_run_to_dataset("regressions", "runs/latest", only_failures=True)
```
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path

from assay.api.agent_calibration import Labels, calibrate_agent_judge, run_folder
from assay.api.runs import no_running_loop
from assay.errors import UsageError
from assay.judges.assets import JudgeResolver, load_judge_file
from assay.judges.calibration import CalibrationResult, Progress, calibrate
from assay.results.io import check_output_folder
from assay.results.run_folder import resolve_run_dir
from assay.spec.judge import JudgeAsset, judge_reference, split_calibration_pin
from assay.store import open_store

CALIBRATIONS_DIR = Path("calibrations")


def judge_asset(reference: str, *, store: str | None = None) -> JudgeAsset:
    """The judge a command names: a judge file (a path, or a ``.yaml``/``.json`` name), or
    ``name`` / ``name@N`` in the store; with its latest usable stored calibration, if any,
    or the one pinned with ``#ID`` (``grader@2#1a2b3c4d``).

    Raises:
        TaskFileError, StoreError: the file or store judge cannot be read.
    """
    try:
        kind, value, version = judge_reference(reference)
        _, pin = split_calibration_pin(reference)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    resolver = JudgeResolver(store)
    try:
        if kind == "file":
            path = Path(value)
            definition = load_judge_file(path)
            asset = resolver.file_asset(definition, definition.name or path.stem, path)
        else:
            asset = resolver.store_asset(value, version, base_dir=Path.cwd())
        if pin is None:
            return asset
        return asset.model_copy(update={"calibration": resolver.pinned(asset, pin)})
    finally:
        resolver.close()


def calibrate_judge(
    judge: str,
    *,
    dataset: str,
    label_field: str,
    version: int | None = None,
    output_field: str | None = None,
    output_dir: str | Path | None = None,
    store: str | None = None,
    jobs: int = 4,
    max_retries: int = 4,
    progress: Progress | None = None,
    criterion: int | None = None,
) -> CalibrationResult:
    """Calibrate ``judge`` (a file or ``name[@N]``) on store dataset ``dataset`` (at
    ``version``, default the latest) against the human labels in ``label_field``
    (``assay judge calibrate``); writes ``calibration.json`` and ``calibration.md`` into
    ``output_dir`` (default ``calibrations/<judge>_<dataset>-v<N>_<time>/``) and stores it.

    ``judge`` may also be a run folder (``runs/latest``) whose rows an ``agent_judge``
    graded, with their sandboxes kept: the labelled rows (the dataset's ``folder`` field)
    are judged again by that coding agent (``criterion``: its position in the task's
    ``success_criteria`` when there are several) and its pass/fail verdicts compared
    (:mod:`assay.api.agent_calibration`); ``output_field`` and ``max_retries`` do not apply.

    Raises:
        TaskFileError, StoreError, UsageError: the judge, the dataset or a label is wrong
            (nothing is stored); ``output_dir`` is a file, or cannot be created or written.
        ModelError: the judge's model could not start.
        UsageError: called inside a running event loop.
    """
    no_running_loop("calibrate_judge")
    if output_dir is not None:
        check_output_folder(Path(output_dir), "--output")
    run = run_folder(judge)
    if run is not None:
        return _calibrate_agent_judge(run, dataset=dataset, version=version,
                                      label_field=label_field, criterion=criterion,
                                      output_dir=output_dir, store=store, jobs=jobs,
                                      progress=progress)  # fmt: skip
    if criterion is not None:
        raise UsageError("--criterion chooses a run's agent_judge; the judge given is not a run "
                         "folder", field="--criterion")  # fmt: skip
    asset = judge_asset(judge, store=store)
    with open_store(store) as opened:
        pinned = opened.resolve(dataset, version)
        stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
        directory = (
            Path(output_dir)
            if output_dir is not None
            else (CALIBRATIONS_DIR / f"{asset.name}_{dataset}-v{pinned.number}_{stamp}")
        )
        return asyncio.run(
            calibrate(
                opened,
                asset,
                dataset=dataset,
                version=pinned.number,
                label_field=label_field,
                output_field=output_field,
                directory=directory,
                jobs=jobs,
                max_retries=max_retries,
                progress=progress,
            )
        )


def _calibrate_agent_judge(
    run: Path,
    *,
    dataset: str,
    version: int | None,
    label_field: str,
    criterion: int | None,
    output_dir: str | Path | None,
    store: str | None,
    jobs: int,
    progress: Progress | None,
) -> CalibrationResult:
    run = resolve_run_dir(run)
    with open_store(store) as opened:
        pinned = opened.resolve(dataset, version)
        stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
        name = f"agent_judge_{dataset}-v{pinned.number}_{stamp}"
        directory = Path(output_dir) if output_dir is not None else CALIBRATIONS_DIR / name
        labels = Labels(dataset, pinned.number, label_field)
        return asyncio.run(calibrate_agent_judge(opened, run, labels, criterion=criterion,
                                                 directory=directory, jobs=jobs,
                                                 progress=progress))  # fmt: skip
