"""Agent types from installed packages: the worked example in
``examples/plugins/python-agent`` installed for real (``pip install --no-deps --target``,
offline) and run by ``assay run`` in a subprocess; agent classes given to the API
(``agents=[...]``); and every way an entry point of ``assay.agents`` can be wrong, named
with the fix."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Literal

import pytest

import assay
from assay.agents import Agent, AgentContext, AgentOutcome, default_agents
from assay.agents.base import PreflightCheck, PreflightSetup
from assay.errors import PluginError, TaskFileError
from assay.spec.task import AgentBase
from tests.plugin_helpers import (
    BrokenCase,
    check_broken_plugin,
    distribution,
    install_example,
    with_path,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "plugins" / "python-agent"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example package installed into a folder of its own."""
    return install_example(EXAMPLE, tmp_path_factory.mktemp("site"), "assay_python_agent")


def assay_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def test_assay_run_runs_the_installed_agent(installed: Path, tmp_path: Path) -> None:
    done = assay_cli("run", str(EXAMPLE / "tasks" / "sums.yaml"), cwd=tmp_path,
                     env=with_path(installed))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    suite_dir = tmp_path / "runs" / "latest" / "default" / "sums"
    suite = json.loads((suite_dir / "suite.json").read_text(encoding="utf-8"))
    assert suite["rows_passed"] == 3 and suite["passed"]
    row = json.loads((suite_dir / "negative" / "00" / "task.json").read_text(encoding="utf-8"))
    assert (row["agent_type"], row["final_status"]) == ("python-function", "SUCCESS")
    assert (suite_dir / "negative" / "00" / "response.txt").read_text() == "6"


def test_a_run_of_the_installed_agent_is_graded_again(installed: Path, tmp_path: Path) -> None:
    """``assay execute`` then ``assay evaluate``: the row's recorded task names the plugin's
    agent type, which the grading loads as the run did (it failed with a traceback)."""
    env = with_path(installed)
    done = assay_cli("execute", str(EXAMPLE / "tasks" / "sums.yaml"), cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    done = assay_cli("evaluate", "runs/latest", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    suite = json.loads((tmp_path / "runs" / "latest" / "default" / "sums" / "suite.json")
                       .read_text(encoding="utf-8"))  # fmt: skip
    assert suite["rows_passed"] == 3 and suite["passed"]
    done = assay_cli("evaluate", "runs/latest", cwd=tmp_path)  # without the package
    assert done.returncode == 2, done.stdout + done.stderr
    assert "unknown agent type 'python-function'" in done.stderr
    assert "install the package that adds it" in done.stderr


def test_its_preflight_runs_before_any_row(installed: Path, tmp_path: Path) -> None:
    task = (EXAMPLE / "tasks" / "sums.yaml").read_text(encoding="utf-8")
    (tmp_path / "sums.yaml").write_text(task.replace("solver.py:answer", "solver.py:nothing"))
    (tmp_path / "solver.py").write_text("def answer(prompt):\n    return prompt\n")
    done = assay_cli("plan", "sums.yaml", cwd=tmp_path, env=with_path(installed))
    assert done.returncode == 2
    assert "sums.yaml:7: agent.function" in done.stderr
    assert "has no function nothing" in done.stderr


def test_without_the_package_the_type_is_unknown(tmp_path: Path) -> None:
    done = assay_cli("plan", str(EXAMPLE / "tasks" / "sums.yaml"), cwd=tmp_path)
    assert done.returncode == 2
    assert "python-function" in done.stderr


def test_the_schema_names_the_installed_agent(installed: Path, tmp_path: Path) -> None:
    def schema(*flags: str) -> dict[str, object]:
        done = assay_cli("schema", *flags, cwd=tmp_path, env=with_path(installed))
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    assert "PythonFunction" in schema("--plugins")["$defs"]  # type: ignore[operator]
    assert "PythonFunction" not in schema()["$defs"]  # type: ignore[operator]


def test_the_api_takes_the_agent_class(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(installed))
    from assay_python_agent import PythonFunctionRunner  # the package, not its entry point

    result = assay.run(EXAMPLE / "tasks" / "sums.yaml", run_dir=tmp_path / "runs",
                       agents=[PythonFunctionRunner])  # fmt: skip
    assert result.exit_code == 0
    assert result.suites[0].passed and result.suites[0].rollup.rows_passed == 3
    executed = assay.run(EXAMPLE / "tasks" / "sums.yaml", run_dir=tmp_path / "runs",
                         agents=[PythonFunctionRunner], stage="execute")  # fmt: skip
    graded = assay.evaluate(executed.run_dir, agents=[PythonFunctionRunner])
    assert graded.exit_code == 0 and graded.suites[0].rollup.rows_passed == 3


AGENT = """
from typing import Literal
from assay.agents import Agent, AgentOutcome
from assay.spec.task import AgentBase

class {cls}Config(AgentBase):
    type: Literal["{written}"]

class {cls}(Agent):
    type_name = "{name}"
    config_model = {cls}Config

    async def run(self, context):
        return AgentOutcome(response="42")

def helper():
    return None
"""


def task_naming(kind: str) -> dict[str, object]:
    return {"task_id": "t", "description": "d", "initial_prompt": "p",
            "agent": {"type": kind},
            "success_criteria": [{"type": "response_match", "expected": "42"}]}  # fmt: skip


@pytest.mark.parametrize(
    ("entries", "code", "message", "hint"),
    [
        ({"gone": "no_such_module:Gone"}, "",
         "entry point 'gone = no_such_module:Gone' of group 'assay.agents' (package bad-agent "
         "1.0) cannot be imported: ModuleNotFoundError",
         "fix or reinstall bad-agent, or uninstall it (pip uninstall bad-agent)"),
        ({"helper": "bad_agent:helper"}, AGENT.format(cls="Fine", name="fine", written="fine"),
         "entry point 'helper = bad_agent:helper' of group 'assay.agents' (package bad-agent 1.0) "
         "is function helper, not an agent class",
         "point it at a class that derives from assay.agents.base.Agent"),
        ({"llm": "bad_agent:Mine"}, AGENT.format(cls="Mine", name="llm", written="llm"),
         "entry point 'llm = bad_agent:Mine' of group 'assay.agents' (package bad-agent 1.0) adds "
         "the agent type 'llm', which assay (built in) already has",
         "give Mine another type name"),
        ({"other": "bad_agent:Mine"}, AGENT.format(cls="Mine", name="mine", written="mine"),
         "entry point 'other = bad_agent:Mine' of group 'assay.agents' (package bad-agent 1.0) is "
         "named 'other' but its agent type is 'mine'",
         "name the entry point 'mine'"),
        ({"mine": "bad_agent:Mine"}, AGENT.format(cls="Mine", name="mine", written="yours"),
         "entry point 'mine = bad_agent:Mine' of group 'assay.agents' (package bad-agent 1.0): "
         "MineConfig must declare type: Literal['mine']",
         "fix or reinstall bad-agent"),
    ],
)  # fmt: skip
def test_a_bad_plugin_is_named_with_its_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workdir: Path,
    entries: dict[str, str], code: str, message: str, hint: str,
) -> None:  # fmt: skip
    """A task naming the entry point's own type gets its fault as the error; a task naming
    a type no plugin is named after gets "unknown type" (with "did you mean"), its hint
    naming the broken plugin: an unrelated broken plugin is in no one's way."""
    distribution(tmp_path / "site", "bad-agent", "assay.agents", entries, code)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "bad_agent", raising=False)  # each case's own module
    (name,) = entries
    check_broken_plugin(BrokenCase(name, message, hint, built_in="llm"),
                        load_all=lambda: default_agents().load_plugins(),
                        plan_naming=lambda kind: assay.plan([task_naming(kind)]),
                        typo=("agent", "comand", "command"))  # fmt: skip
    # plugins load when a task names a type assay does not have (or a built-in a plugin
    # takes), not before
    assert assay.plan([task_naming("command") | {"agent": {"type": "command",
                                                           "command": "echo 42"}}])  # fmt: skip


def test_a_good_plugin_is_found_only_when_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workdir: Path
) -> None:
    distribution(tmp_path / "site", "good-agent", "assay.agents", {"answer": "good_agent:Answer"},
                 AGENT.format(cls="Answer", name="answer", written="answer"))  # fmt: skip
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    registry = default_agents()
    assert "answer" not in registry.types
    assert registry.get("answer").__name__ == "Answer"
    result = assay.run([task_naming("answer")], run_dir=tmp_path / "runs")
    assert result.exit_code == 0
    with pytest.raises(TaskFileError, match="answr"):
        assay.plan([task_naming("answr")])


class ClashConfig(AgentBase):
    type: Literal["codex"]


class Clash(Agent[ClashConfig]):
    type_name = "codex"
    config_model = ClashConfig

    async def run(self, context: AgentContext) -> AgentOutcome:
        return AgentOutcome(response="never run")


def test_a_class_given_to_the_api_is_checked_and_may_not_take_a_built_in_name() -> None:
    class NotAnAgent:
        pass

    with pytest.raises(PluginError, match=r"is the class .*NotAnAgent, not an agent class"):
        assay.plan([task_naming("llm")], agents=[NotAnAgent])  # type: ignore[list-item]
    with pytest.raises(PluginError, match=r"type 'codex', which assay \(built in\)") as err:
        assay.plan([task_naming("llm")], agents=[Clash])
    assert err.value.hint is not None and "give Clash another type name" in err.value.hint


class HangsConfig(AgentBase):
    type: Literal["hangs"]


class Hangs(Agent[HangsConfig]):
    """An agent of one's own that ignores ``context.timeout`` on one row and raises on
    another."""

    type_name = "hangs"
    config_model = HangsConfig

    async def run(self, context: AgentContext) -> AgentOutcome:
        if context.prompt == "hang":
            await asyncio.sleep(3600)
        if context.prompt == "raise":
            raise RuntimeError("agent exploded")
        return AgentOutcome(response="42")


def test_an_agent_that_never_returns_or_raises_ends_its_row_alone(tmp_path: Path) -> None:
    """The row whose agent ignores ``task_timeout`` ends ``TIMEOUT`` after the grace
    (15 s past a 0.5 s timeout), not the run's end; the one whose agent raises ends
    ``ERROR`` naming the agent type, its read-only criteria graded as after a crash and the
    traceback in its log; the other row passes."""
    task = task_naming("hangs")
    task["initial_prompt"] = "${row.say}"
    task["run_limits"] = {"task_timeout": 0.5}
    task["dataset"] = {"rows": [{"id": i, "say": i} for i in ("hang", "raise", "fine")]}
    task["success_criteria"] = [{"type": "response_match", "expected": "42"},
                                {"type": "file_exists", "path": "x", "weight": 0}]  # fmt: skip
    result = assay.run([task], run_dir=tmp_path / "runs", agents=[Hangs])
    rows = {r.row_id: r for r in result.suites[0].rows()}
    assert rows["fine"].final_status.value == "SUCCESS"
    assert rows["hang"].final_status.value == "TIMEOUT"
    assert rows["hang"].error_message == (
        "the agent did not return within run_limits.task_timeout (0.5 s) and 15 s more: ended"
    )
    assert rows["raise"].final_status.value == "ERROR"
    assert (
        rows["raise"].error_message
        == "internal error in agent hangs: RuntimeError('agent exploded')"
    )
    graded = {c.criterion_type for c in rows["raise"].post_failure_criteria_results}
    assert graded == {"response_match", "file_exists"}
    log = (result.run_dir / "default" / "t" / "raise" / "00" / "task.log").read_text()
    assert "internal error in agent hangs:" in log and 'raise RuntimeError("agent exploded")' in log


class JunkConfig(AgentBase):
    type: Literal["junk"]


class Junk(Agent[JunkConfig]):
    """An agent of one's own that returns, by its prompt, what is not an outcome, an outcome
    whose response is not text, or an error without a message."""

    type_name = "junk"
    config_model = JunkConfig

    async def run(self, context: AgentContext) -> AgentOutcome:
        returned: dict[str, object] = {
            "none": None, "text": "42", "bytes": AgentOutcome(response=b"42"),  # type: ignore[arg-type]
            "silent": AgentOutcome(status="error"), "fine": AgentOutcome(response="42"),
        }  # fmt: skip
        return returned[context.prompt]  # type: ignore[return-value]


def test_an_agent_that_returns_junk_or_errs_silently_is_named_alone(tmp_path: Path) -> None:
    """Found by a plugin author: an agent returning ``None`` or text was an "internal error"
    of assay's own (``'NoneType' object has no attribute 'error'``), bytes blamed the row's
    files, and an error without a message left the row's reason empty."""
    task = task_naming("junk")
    task["initial_prompt"] = "${row.say}"
    task["dataset"] = {"rows": [{"id": i, "say": i}
                                for i in ("none", "text", "bytes", "silent", "fine")]}  # fmt: skip
    result = assay.run([task], run_dir=tmp_path / "runs", agents=[Junk])
    rows = {r.row_id: r for r in result.suites[0].rows()}
    assert {k: r.final_status.value for k, r in rows.items()} == {
        "none": "ERROR", "text": "ERROR", "bytes": "ERROR", "silent": "ERROR",
        "fine": "SUCCESS"}  # fmt: skip
    assert rows["none"].error_message == (
        "internal error in agent junk: run() returned NoneType, not an AgentOutcome"
    )
    assert rows["text"].error_message == (
        "internal error in agent junk: run() returned str, not an AgentOutcome"
    )
    assert rows["bytes"].error_message == (
        "internal error in agent junk: its response is bytes, not text (str) or None"
    )
    assert rows["silent"].error_message == "agent junk ended with an error and no message"


class SyncRun(Agent[JunkConfig]):
    type_name = "junk"
    config_model = JunkConfig

    def run(self, context: AgentContext) -> AgentOutcome:  # type: ignore[override]
        return AgentOutcome(response="42")


class NoRun(Agent[JunkConfig]):
    type_name = "junk"
    config_model = JunkConfig


def test_an_agent_whose_run_is_not_async_is_refused_when_it_registers() -> None:
    """Found by a plugin author: a plain ``def run`` (or none) passed every check, then
    failed every row ("object AgentOutcome can't be used in 'await' expression")."""
    with pytest.raises(PluginError, match=r"SyncRun\.run\(\) is a plain function") as err:
        assay.plan([task_naming("junk")], agents=[SyncRun])
    assert err.value.hint is not None and "async def run" in err.value.hint
    assert "asyncio.to_thread" in err.value.hint
    with pytest.raises(PluginError, match=r"the class NoRun does not define run\(\)"):
        assay.plan([task_naming("junk")], agents=[NoRun])


class Checked(Agent[JunkConfig]):
    type_name = "junk"
    config_model = JunkConfig

    async def run(self, context: AgentContext) -> AgentOutcome:
        return AgentOutcome(response="42")

    def preflight(self, setup: PreflightSetup) -> list[PreflightCheck]:
        return [PreflightCheck(("agent", "type"),
                               lambda: (setup.base_dir / "nothere.py").read_text())]  # fmt: skip


def test_a_preflight_check_that_raises_anything_is_located_at_its_field(workdir: Path) -> None:
    """Found by a plugin author: a check that let ``FileNotFoundError`` through crashed
    ``assay plan`` with a traceback (exit 1); any failure of a check is located."""
    with pytest.raises(TaskFileError) as caught:
        assay.plan([task_naming("junk")], agents=[Checked])
    assert caught.value.message.startswith(
        "a preflight check of the junk agent failed: FileNotFoundError: "
    )
    assert caught.value.field == "agent.type"


def test_an_unknown_agent_type_says_a_plugin_may_be_missing(workdir: Path) -> None:
    """Found by a plugin author: resuming a run whose agent's package was uninstalled said
    only "one of: claude-code, codex, …", not that a package may be missing."""
    with pytest.raises(TaskFileError, match="unknown agent type 'quxbaz'") as caught:
        assay.plan([task_naming("quxbaz")])
    assert caught.value.hint is not None
    assert "install the package that adds it" in caught.value.hint
