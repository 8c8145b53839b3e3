"""The top level keeps the run verbs and their result types; the store's, judges' and
viewer's verbs live in those packages (issue 27 item 7), and their old names at the top
still work with a DeprecationWarning naming the new place."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import assay
import assay.api
import assay.judges
import assay.store
import assay.view
from tests.helpers import write

RUN_VERBS = {
    "run", "run_async", "resume", "resume_async", "plan", "load_task", "task", "task_schema",
    "evaluate", "evaluate_async", "evaluate_predictions", "report", "compare", "power",
    "check_secrets",
}  # fmt: skip
TYPES = {"RunResult", "SuiteResult", "Gate", "Plan", "LoadedTask", "TaskDefinition",
         "AssayError", "UserError", "RunFailure", "__version__",
         "Selection", "Execution", "ModelCalls", "Outputs"}  # fmt: skip
MOVED = {
    "Store": assay.store, "add_traces_to_dataset": assay.store, "add_judge": assay.judges,
    "view_runs": assay.view, "export_rows": assay.view, "write_html_report": assay.view,
    "calibrate_judge": assay.api, "add_run_to_dataset": assay.store,
}  # fmt: skip


def test_the_top_level_is_the_run_verbs_and_their_types() -> None:
    assert set(assay.__all__) == RUN_VERBS | TYPES
    assert sorted(dir(assay)) == sorted([*assay.__all__, "api", "errors", "judges", "qa",
                                          "store", "view"])  # fmt: skip
    for name in assay.__all__:
        getattr(assay, name)  # each one imports


@pytest.mark.parametrize("name", sorted(MOVED))
def test_a_moved_name_warns_and_gives_the_same_object(name: str) -> None:
    home = MOVED[name]
    with pytest.warns(DeprecationWarning, match=rf"assay\.{name} is {home.__name__}\.{name} now"):
        old = getattr(assay, name)
    assert old is getattr(home, name)
    assert getattr(assay.api, name) is old  # assay.api keeps every verb


def test_plan_and_load_task_return_the_exported_types(tmp_path: Path) -> None:
    task = write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: hi\n"
                 "agent: {type: llm, model: mock/echo}\nsuccess_criteria: "
                 "[{type: response_match, expected: hi, description: d}]\n")  # fmt: skip
    assert isinstance(assay.load_task(task), assay.LoadedTask)
    assert isinstance(assay.plan(str(task)), assay.Plan)


def test_importing_the_judges_package_imports_no_store() -> None:
    code = (
        "import sys, assay.judges.verdict; print('sqlalchemy' in sys.modules); "
        "import assay.judges; assay.judges.add_judge; print('sqlalchemy' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)  # fmt: skip
    assert done.stdout.split() == ["False", "True"]


def test_a_file_given_as_a_run_says_so(tmp_path: Path) -> None:
    from assay.errors import UsageError

    task = write(tmp_path / "t.yaml", "task_id: t\n")
    with pytest.raises(UsageError, match=r"t\.yaml is a file, not a run directory"):
        assay.view.write_html_report(task)
    with pytest.raises(UsageError, match="run directory not found"):
        assay.view.write_html_report(tmp_path / "nowhere")
