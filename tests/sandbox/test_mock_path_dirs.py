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
