"""``import_check`` and ``pylint_score`` (Coder Eval's, ``coder_eval_agents.md`` §2) on real
sandboxes with the real interpreter and the real pylint; their load-time rules; a task file
that uses both runs end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import assay
from assay.criteria.base import CriterionError
from assay.criteria.code_checks import absolute_imports
from assay.sandbox.tempdir import Sandbox
from tests.criteria.test_file_criteria import PATH_WITH_PYTEST, box, grade, loads, put
from tests.helpers import write

__all__ = ["box"]  # the fixture, used by name

GOOD = '''"""A tidy module."""

import json


def dump(value: object) -> str:
    """The value as JSON."""
    return json.dumps(value)
'''
UNTIDY = "import os\nimport notamodule\n\n\ndef f(x):\n    return x\n"


def test_absolute_imports_are_read_in_order_once() -> None:
    source = ("import os, json.decoder\nfrom collections import abc\nfrom . import sibling\n"
              "from .pkg import x\nimport os\ndef f():\n    import csv\n")  # fmt: skip
    assert absolute_imports(source) == ["os", "json.decoder", "collections", "csv"]


def test_import_check_scores_what_the_sandboxs_python_resolves(box: Sandbox) -> None:
    put(box, "app.py", "import json\nimport notamodule\nfrom email import message\n"
        "from .local import thing\n")  # fmt: skip
    result = grade(box, env=PATH_WITH_PYTEST, type="import_check", path="app.py")
    assert result.score == pytest.approx(2 / 3)
    assert result.details == "Checked: 3, resolved: 2/3; Failed: notamodule"
    put(box, "mine/__init__.py", "")
    put(box, "uses.py", "import mine\n")  # the sandbox's own package resolves (cwd)
    assert grade(box, env=PATH_WITH_PYTEST, type="import_check", path="uses.py").score == 1.0


def test_import_check_without_imports_a_syntax_error_and_a_missing_file(box: Sandbox) -> None:
    put(box, "plain.py", "x = 1\n")
    put(box, "broken.py", "def (:\n")
    none = grade(box, env=PATH_WITH_PYTEST, type="import_check", path="plain.py")
    assert (none.score, none.details) == (1.0, "No imports to check")
    broken = grade(box, env=PATH_WITH_PYTEST, type="import_check", path="broken.py")
    assert broken.score == 0.0 and broken.details.startswith("SyntaxError: ")
    assert broken.error is None  # the agent's code is wrong: graded, not an error of assay
    gone = grade(box, env=PATH_WITH_PYTEST, type="import_check", path="gone.py")
    assert (gone.score, gone.details) == (0.0, "File 'gone.py' does not exist")


def test_pylint_score_is_pylints_own_over_ten(box: Sandbox) -> None:
    put(box, "good.py", GOOD)
    put(box, "untidy.py", UNTIDY)
    good = grade(box, env=PATH_WITH_PYTEST, type="pylint_score", path="good.py")
    assert good.score == 1.0 and good.details.startswith("Pylint score: 10.00/10 (0 messages)")
    untidy = grade(box, env=PATH_WITH_PYTEST, type="pylint_score", path="untidy.py",
                   min_score=7)  # fmt: skip
    assert untidy.score == 0.0 and untidy.pass_threshold == pytest.approx(0.7)
    assert "1 error" in untidy.details and "W0611 Unused import os" in untidy.details
    put(box, "pylintrc", "[MESSAGES CONTROL]\ndisable=missing-module-docstring,"
        "missing-function-docstring,unused-import,import-error\n")  # fmt: skip
    quiet = grade(box, env=PATH_WITH_PYTEST, type="pylint_score", path="untidy.py",
                  rcfile="pylintrc", fail_under=5)  # fmt: skip
    assert quiet.score == 1.0 and quiet.pass_threshold == pytest.approx(0.5)


def test_a_pylint_that_cannot_lint_is_the_criterions_error(box: Sandbox) -> None:
    put(box, "good.py", GOOD)
    with pytest.raises(CriterionError, match="pylint stopped with a usage error"):
        grade(box, env=PATH_WITH_PYTEST, type="pylint_score", path="good.py",
              args=["--no-such-option"])  # fmt: skip
    bare = {"PATH": "/usr/bin:/bin"}  # the system's python3, without pylint
    with pytest.raises(CriterionError, match="pylint is not installed in the sandbox"):
        grade(box, env=bare, type="pylint_score", path="good.py")
    gone = grade(box, env=PATH_WITH_PYTEST, type="pylint_score", path="nothing.py")
    assert (gone.score, gone.details) == (0.0, "'nothing.py' does not exist")


@pytest.mark.parametrize(
    ("criterion", "said"),
    [
        ("{type: pylint_score, path: /etc/x.py}", "is absolute"),
        ("{type: pylint_score, path: a.py, min_score: 11}", "less than or equal to 10"),
        (
            "{type: pylint_score, path: a.py, args: [--output-format=text]}",
            "assay sets pylint's output format",
        ),
        (
            "{type: pylint_score, path: a.py, min_score: 7, pass_threshold: 0.9}",
            "min_score 7 sets the pass threshold to 0.7, and pass_threshold says 0.9",
        ),
        ("{type: import_check}", "path"),
        ("{type: import_check, path: ../x.py}", "x.py"),
    ],
)
def test_load_time_refusals(tmp_path: Path, criterion: str, said: str) -> None:
    assert said in loads(tmp_path, criterion).render()


def test_a_task_file_with_both_runs_end_to_end(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", PATH_WITH_PYTEST["PATH"])  # the rows' python3 has pylint
    write(workdir / "answers.yaml", "default: done\n")
    task = write(
        workdir / "task.yaml",
        f"""\
task_id: lint
description: files left in the sandbox are linted and their imports checked
agent: {{type: llm, model: mock/answers.yaml}}
initial_prompt: go
sandbox:
  template_sources:
    - type: starter_files
      files:
        - {{path: good.py, content: {json.dumps(GOOD)}}}
        - {{path: untidy.py, content: {json.dumps(UNTIDY)}}}
success_criteria:
  - {{type: pylint_score, description: tidy, path: good.py, min_score: 9}}
  - {{type: import_check, description: imports, path: untidy.py}}
""",
    )
    result = assay.run(task)
    (row,) = list(result.rows())
    scores = [(c.criterion_type, c.score) for c in row.success_criteria_results]
    assert [c.error for c in row.success_criteria_results] == [None, None]
    assert scores == [("pylint_score", 1.0), ("import_check", 0.5)]
    assert result.exit_code == 1  # import_check 0.5 is under its 0.9 threshold
