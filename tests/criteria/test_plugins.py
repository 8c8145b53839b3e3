"""Criteria from installed packages: the worked example in ``examples/plugins/word-count``
installed for real (``pip install --no-deps --target``, offline) and run by ``assay run`` in
a subprocess; and every way an entry point can be wrong, named with the fix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import assay
from assay.criteria import default_criteria
from assay.errors import TaskFileError
from tests.plugin_helpers import (
    BrokenCase,
    check_broken_plugin,
    distribution,
    install_example,
    with_path,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "plugins" / "word-count"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example package installed into a folder of its own."""
    return install_example(EXAMPLE, tmp_path_factory.mktemp("site"), "assay_word_count")


def test_assay_run_grades_with_the_installed_criterion(installed: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "assay", "run", str(EXAMPLE / "tasks" / "words.yaml")],
        cwd=tmp_path, env=with_path(installed), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    suite_file = tmp_path / "runs" / "latest" / "default" / "words" / "suite.json"
    suite = json.loads(suite_file.read_text(encoding="utf-8"))
    assert suite["criterion_stats"][0]["criterion_type"] == "word_count"
    assert suite["rows_passed"] == 1 and suite["rows_failed"] == 1 and suite["passed"]


def test_without_the_package_the_type_is_unknown(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "assay", "plan", str(EXAMPLE / "tasks" / "words.yaml")],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2
    assert "unknown criterion type 'word_count'" in done.stderr


def test_the_schema_names_the_installed_criterion(installed: Path, tmp_path: Path) -> None:
    def schema(*flags: str) -> dict[str, object]:
        done = subprocess.run([sys.executable, "-m", "assay", "schema", *flags], cwd=tmp_path,
                              env=with_path(installed), capture_output=True, text=True,
                              timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    assert "WordCount" in schema("--plugins")["$defs"]  # type: ignore[operator]
    assert "WordCount" not in schema()["$defs"]  # type: ignore[operator]


CRITERION = """
from typing import Literal
from assay.criteria import Criterion
from assay.criteria.base import basic_result

class {cls}(Criterion):
    type: Literal["{name}"]

    async def check(self, context):
        return basic_result(self, 1.0, "")

def helper():
    return None
"""


def task_naming(kind: str) -> dict[str, object]:
    return {"task_id": "t", "description": "d", "initial_prompt": "p",
            "agent": {"type": "llm", "model": "mock/echo"},
            "success_criteria": [{"type": kind}]}  # fmt: skip


@pytest.mark.parametrize(
    ("entries", "code", "message", "hint"),
    [
        ({"gone": "no_such_module:Gone"}, "",
         "entry point 'gone = no_such_module:Gone' of group 'assay.criteria' (package bad-one "
         "1.0) cannot be imported: ModuleNotFoundError",
         "fix or reinstall bad-one, or uninstall it (pip uninstall bad-one)"),
        ({"helper": "bad_one:helper"}, CRITERION.format(cls="Fine", name="fine"),
         "entry point 'helper = bad_one:helper' of group 'assay.criteria' (package bad-one 1.0) "
         "is function helper, not a criterion class",
         "point it at a class that derives from assay.criteria.base.Criterion"),
        ({"file_check": "bad_one:Mine"}, CRITERION.format(cls="Mine", name="file_check"),
         "entry point 'file_check = bad_one:Mine' of group 'assay.criteria' (package bad-one "
         "1.0) adds the criterion type 'file_check', which assay (built in) already has",
         "give Mine another type name"),
        ({"quits": "bad_one:Quits"}, "import sys\nsys.exit(3)\n",
         "entry point 'quits = bad_one:Quits' of group 'assay.criteria' (package bad-one 1.0) "
         "cannot be imported: SystemExit: 3",
         "fix or reinstall bad-one"),
        ({"other": "bad_one:Mine"}, CRITERION.format(cls="Mine", name="mine"),
         "entry point 'other = bad_one:Mine' of group 'assay.criteria' (package bad-one 1.0) is "
         "named 'other' but its criterion type is 'mine'",
         "name the entry point 'mine'"),
    ],
)  # fmt: skip
def test_a_bad_plugin_is_named_with_its_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workdir: Path,
    entries: dict[str, str], code: str, message: str, hint: str,
) -> None:  # fmt: skip
    """A task naming the entry point's own type gets its fault as the error; a typo of a
    built-in type gets "did you mean", its hint naming the broken plugin (it was in the way:
    every plugin was imported for any unknown name, and the first failure was the error)."""
    distribution(tmp_path / "site", "bad-one", "assay.criteria", entries, code)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "bad_one", raising=False)  # each case's own module
    (name,) = entries
    check_broken_plugin(BrokenCase(name, message, hint, built_in="file_check"),
                        load_all=lambda: default_criteria().load_plugins(),
                        plan_naming=lambda kind: assay.plan([task_naming(kind)]),
                        typo=("criterion", "file_exist", "file_exists"))  # fmt: skip
    # plugins load when a task names a type assay does not have, not before
    assert assay.plan([task_naming("file_exists") | {"success_criteria": [
        {"type": "file_exists", "path": "x"}]}]).tasks  # fmt: skip


def test_a_good_plugin_is_found_only_when_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workdir: Path
) -> None:
    distribution(tmp_path / "site", "good-one", "assay.criteria", {"shouting": "good_one:Shouting"},
                 CRITERION.format(cls="Shouting", name="shouting"))  # fmt: skip
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    registry = default_criteria()
    assert "shouting" not in registry.types
    assert registry.get("shouting").__name__ == "Shouting"
    planned = assay.plan([task_naming("shouting")])
    assert [c.type for c in planned.tasks[0].loaded.definition.success_criteria] == ["shouting"]
    with pytest.raises(TaskFileError, match="unknown criterion type 'shoutin'"):
        assay.plan([task_naming("shoutin")])
