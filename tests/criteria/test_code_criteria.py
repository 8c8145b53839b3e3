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


def test_import_check_is_not_answered_by_the_files_it_checks(box: Sandbox) -> None:
    """A ``json.py`` the agent left was the checker's own ``import json`` (run in the row's
    folder, ``''`` first on ``sys.path``), and printed every module resolved; a package's
    ``__init__`` ran while a dotted name was looked up, and could print the same (two
    break-tests). Local modules and dotted names still resolve."""
    put(box, "app.py", "import notamodule\nimport os.path\nimport xml.etree.ElementTree\n"
        "import loc.sub\nimport loc.gone\n")  # fmt: skip
    forged = ('import sys\nprint("{" + ",".join(\'"%s": true\' % a for a in sys.argv[1:]) + '
              '"}")\nsys.exit(0)\n')  # fmt: skip
    put(box, "json.py", forged)
    put(box, "loc/__init__.py", forged.replace("sys.argv[1:]", "['notamodule', 'loc.gone']"))
    put(box, "loc/sub.py", "")
    result = grade(box, env=PATH_WITH_PYTEST, type="import_check", path="app.py")
    assert result.details == "Checked: 5, resolved: 3/5; Failed: notamodule, loc.gone"


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


REFERENCE = "def area(width, height):\n    return width * height\n"


def _reference_task(workdir: Path, *, agent_file: str) -> Path:
    write(workdir / "ref" / "solution.py", REFERENCE)
    return write(
        workdir / "task.yaml",
        f"""\
task_id: ref
description: the agent's file against the reference solution
agent: {{type: command, command: 'echo "reference=${{REFERENCE_DIR:-none}}"'}}
initial_prompt: go
reference: {{directory: ref}}
sandbox:
  template_sources:
    - type: starter_files
      files:
        - {{path: mine.py, content: "def size(w, h):\\n    return w * h\\n"}}
        - {{path: broken.py, content: "def (:"}}
success_criteria:
  - {{type: reference_comparison, description: same shape, agent_file: {agent_file},
     reference_file: solution.py}}
  - {{type: reference_comparison, description: tokens, agent_file: {agent_file},
     reference_file: solution.py, comparison_method: token, similarity_threshold: 0.5}}
  - {{type: run_command, description: env, score_from_stdout: true,
     command: 'test -f "$REFERENCE_DIR/solution.py" && test -f "$TASK_DIR/task.yaml" && echo 1'}}
  - {{type: response_match, description: the agent is not told, expected: reference=none,
     match: contains}}
""",
    )


def test_reference_comparison_end_to_end(workdir: Path) -> None:
    result = assay.run(_reference_task(workdir, agent_file="mine.py"))
    (row,) = list(result.rows())
    graded = row.success_criteria_results
    assert [c.error for c in graded] == [None, None, None, None]
    assert graded[0].score == 1.0 and graded[0].pass_threshold == 0.8
    assert graded[0].details.startswith("ast similarity 1.000 of 'mine.py' to the reference's")
    assert graded[1].score == pytest.approx(14 / 24) and graded[1].pass_threshold == 0.5
    assert graded[2].score == 1.0  # REFERENCE_DIR and TASK_DIR reach the criteria's commands
    assert graded[3].score == 1.0  # the agent is not told where the reference is
    assert result.exit_code == 0


def test_an_agent_file_that_is_missing_or_broken_scores_zero(workdir: Path) -> None:
    result = assay.run(_reference_task(workdir, agent_file="broken.py"))
    (row,) = list(result.rows())
    first = row.success_criteria_results[0]
    assert (first.score, first.error) == (0.0, None)
    assert first.details.startswith("Comparison failed: the agent file is not valid Python")
    (workdir / "task.yaml").unlink()
    result = assay.run(_reference_task(workdir, agent_file="nothing.py"))
    (row,) = list(result.rows())
    assert row.success_criteria_results[0].details == "Agent file not found: nothing.py"


def test_the_reference_is_checked_when_the_task_loads(tmp_path: Path) -> None:
    bare = "{type: reference_comparison, agent_file: a.py, reference_file: s.py}"
    rendered = loads(tmp_path, bare).render()
    assert "success_criteria[0].type: reference_comparison compares" in rendered  # its line
    assert "set reference.directory" in rendered
    head = "task_id: t\ndescription: d\ninitial_prompt: p\nreference: {directory: nowhere}\n"
    task = write(tmp_path / "t.yaml", head + "success_criteria:\n  - " + bare + "\n")
    from assay.errors import TaskFileError
    from assay.orchestration.loading.task_loader import load_task

    with pytest.raises(TaskFileError) as caught:
        load_task(task)
    assert "reference directory not found" in caught.value.render()
    assert caught.value.field == "reference.directory"
    write(tmp_path / "nowhere" / "other.py", "x = 1\n")
    with pytest.raises(TaskFileError) as caught:
        load_task(task)
    assert "reference file not found" in caught.value.render()
    assert caught.value.field == "success_criteria[0].reference_file"
    mismatch = ("{type: reference_comparison, agent_file: a.py, reference_file: s.py, "
                "pass_threshold: 0.3}")  # fmt: skip
    assert "give one of them" in loads(tmp_path, mismatch).render()


@pytest.mark.parametrize("form", ["{file: solution.py}", "{code: 'x = 1'}"])
def test_coder_evals_removed_reference_forms_are_refused(tmp_path: Path, form: str) -> None:
    from assay.errors import TaskFileError
    from assay.orchestration.loading.task_loader import load_task

    head = "task_id: t\ndescription: d\ninitial_prompt: p\n"
    path = write(
        tmp_path / "t.yaml",
        head + f"reference: {form}\nsuccess_criteria: [{{type: file_exists, path: x}}]\n",
    )
    with pytest.raises(TaskFileError) as caught:
        load_task(path)
    assert "Coder Eval removed reference.file and reference.code" in caught.value.render()


def test_a_pylint_package_the_agent_wrote_is_not_the_one_that_runs(box: Sandbox) -> None:
    """A break-test's agent wrote ``pylint/__main__.py`` printing a 10/10 report into its
    sandbox, the folder ``python3 -m pylint`` runs in: the sandbox is not put first on
    ``sys.path`` (PYTHONSAFEPATH), so the real pylint grades."""
    put(box, "untidy.py", "import os\nx=1\n")
    put(box, "pylint/__init__.py", "")
    put(box, "pylint/__main__.py", 'print(\'{"messages": [], "statistics": {"score": 10.0}}\')\n')
    result = grade(box, env=PATH_WITH_PYTEST, type="pylint_score", path="untidy.py")
    assert result.score < 1.0, result.details
