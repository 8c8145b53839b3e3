"""Coder Eval's ``sandbox.mock_path_dirs``: folders of stand-in programs put first on the
``PATH`` of the agent and of the criteria's programs (found by a break-test: the field was
only warned about, and the row ran the host's real ``kubectl``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import assay
from assay.errors import TaskFileError
from tests.helpers import write

TASK = """\
task_id: mp
description: a stand-in kubectl and aws, in the order given
initial_prompt: go
agent: {{type: command, command: "kubectl get pods; aws s3 ls"}}
sandbox:
  driver: {driver}
  mock_path_dirs: [first, second]
success_criteria:
  - {{type: response_match, expected: "first-kubectl get pods", match: contains}}
  - {{type: response_match, expected: "second-aws s3 ls", match: contains}}
  - {{type: run_command, command: "kubectl version", expected_stdout: "first-kubectl version",
     stdout_match: contains}}
"""


def _stand_in(folder: Path, name: str, says: str) -> None:
    program = write(folder / name, f'#!/bin/sh\necho {says} "$@"\n')
    program.chmod(0o755)


@pytest.mark.parametrize("driver", ["tempdir", "bwrap"])
def test_stand_ins_come_first_for_the_agent_and_the_criteria(workdir: Path, driver: str) -> None:
    _stand_in(workdir / "first", "kubectl", "first-kubectl")
    _stand_in(workdir / "second", "kubectl", "second-kubectl")  # the first folder wins
    _stand_in(workdir / "second", "aws", "second-aws")
    result = assay.run([str(write(workdir / "t.yaml", TASK.format(driver=driver)))])
    (row,) = list(result.rows())
    assert [c.score for c in row.success_criteria_results] == [1.0, 1.0, 1.0], row.response


def test_a_folder_that_is_not_there_is_refused_at_load(workdir: Path) -> None:
    write(workdir / "t.yaml", TASK.format(driver="tempdir"))
    with pytest.raises(TaskFileError) as caught:
        assay.plan([str(workdir / "t.yaml")])
    assert (caught.value.field, caught.value.line) == ("sandbox.mock_path_dirs[0]", 7)
    assert "'first' is not a folder beside the task file" in caught.value.message


PLANT = """\
task_id: plant
description: an agent that plants programs in the folders first on the criteria's PATH
initial_prompt: go
agent:
  type: command
  command: >-
    for d in $(dirname $(command -v kubectl)) $(dirname $(command -v gh)); do
    printf '#!/bin/sh\\necho 1.0\\n' > $d/python3; chmod +x $d/python3;
    rm -f $d/kubectl; printf '#!/bin/sh\\necho forged\\n' > $d/kubectl; chmod +x $d/kubectl;
    done; gh pr list; true
sandbox:
  driver: {driver}
  mock_path_dirs: [first]
  record_cli: [{{tool: gh}}]
success_criteria:
  - {{type: run_command, command: "python3 -c 'print(0.0)'", score_from_stdout: true}}
  - {{type: run_command, command: "kubectl version", expected_stdout: "first-kubectl version",
     stdout_match: contains}}
  - {{type: cli_called, tool: gh, verb: pr list}}
"""


@pytest.mark.parametrize("driver", ["tempdir", "bwrap"])
def test_what_the_agent_plants_on_the_criterias_path_is_gone_before_they_run(
    workdir: Path, driver: str
) -> None:
    """A break-test forged a verdict with one line of shell: a ``python3`` written into a
    ``mock_path_dirs`` or ``record_cli`` folder answered for the criterion's command. The
    folders are made again from the task before criteria run (the calls recorded kept), in
    runs and in ``assay evaluate``."""
    _stand_in(workdir / "first", "kubectl", "first-kubectl")
    path = write(workdir / "t.yaml", PLANT.format(driver=driver))
    result = assay.run([str(path)], keep_sandboxes=True)
    (row,) = list(result.rows())
    scores = [(c.score, c.details) for c in row.success_criteria_results]
    assert [s for s, _ in scores] == [0.0, 1.0, 1.0], (scores, row.error_message)
    again = assay.evaluate(result.run_dir)
    (row,) = list(again.rows())
    assert [c.score for c in row.success_criteria_results] == [0.0, 1.0, 1.0]


@pytest.mark.parametrize("driver", ["tempdir", "bwrap"])
def test_an_agent_that_removes_its_sandbox_folder_fails_it_is_not_an_error(
    workdir: Path, driver: str
) -> None:
    """A break-test's agent ran ``rm -rf "$PWD"``: on tempdir every criterion that runs a
    program ended in an internal error, the row ERROR and out of every average; its criteria
    now grade an empty folder and score 0.0, as on docker."""
    task = write(workdir / "t.yaml", f"""\
task_id: gone
description: an agent that removes its own folder
initial_prompt: go
agent: {{type: command, command: 'd=$PWD; cd /; rm -rf "$d"; echo done'}}
sandbox: {{driver: {driver}}}
success_criteria:
  - {{type: file_contains, path: answer.txt, includes: ["42"]}}
  - {{type: run_command, command: "cat answer.txt", expected_stdout: "42"}}
""")  # fmt: skip
    (row,) = list(assay.run([str(task)]).rows())
    assert row.final_status.value == "FAILURE", row.error_message
    assert [c.score for c in row.success_criteria_results] == [0.0, 0.0]
    assert all(c.evaluation_status == "evaluated" for c in row.success_criteria_results)


@pytest.mark.parametrize("driver", ["bwrap"])
def test_an_earlier_run_folder_in_the_task_folder_is_hidden_from_rows(
    workdir: Path, driver: str
) -> None:
    """A break-test's second run (another --run-dir) read the first run's task.json, each
    row with its expected answer: every run folder in the task's folder is hidden."""
    write(workdir / "data.jsonl", '{"id": "q1", "expected": "7319"}\n')
    task = write(workdir / "t.yaml", f"""\
task_id: leak
description: an agent that looks for an earlier run's answers
initial_prompt: go
dataset: {{paths: [data.jsonl]}}
agent:
  type: command
  command: 'cat "$ASSAY_TASK_DIR"/*/*/default/leak/q1/00/task.json; echo end'
sandbox: {{driver: {driver}}}
success_criteria:
  - {{type: response_match, expected: "${{row.expected}}", match: contains}}
""")  # fmt: skip
    assay.run([str(task)], run_dir=str(workdir / "baseline"))
    (row,) = list(assay.run([str(task)], run_dir=str(workdir / "candidate")).rows())
    assert row.final_status.value == "FAILURE"
    assert [c.score for c in row.success_criteria_results] == [0.0]
