"""Every command the README and the docs show that can run offline runs here, as shown:
in a copy of examples/, with its exit code and the output lines the page shows.

The blocks and their markers are read by :mod:`tests.docs.blocks`; commands that are a plain
``assay …`` run in this interpreter (:func:`tests.cli.inproc.run_in_process`), anything
else (variables, pipes) in bash.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.inproc import run_in_process
from tests.docs.blocks import (
    REPO,
    Block,
    BlockError,
    blocks_of,
    doc_files,
    shown_lines_match,
)

SHELL_SYNTAX = set("|&;<>()$`*?=~")


def runnable() -> list[pytest.ParameterSet]:
    """One parameter per runnable block, marked with the components it needs."""
    found = []
    for path in doc_files():
        for block in blocks_of(path):
            if block.run:
                marks = [getattr(pytest.mark, c) for c in sorted(block.components)]
                found.append(pytest.param(block, id=block.name, marks=marks))
    return found


def test_every_shell_block_says_whether_it_runs() -> None:
    problems = []
    for path in doc_files():
        try:
            blocks_of(path)
        except BlockError as error:
            problems.append(str(error))
    assert problems == []


def test_the_readme_and_the_docs_have_runnable_blocks() -> None:
    names = {p.values[0].file.name for p in runnable()}  # type: ignore[union-attr]
    assert {"README.md", "datasets.md", "judges.md", "coding-agents.md"} <= names


def venv_bin() -> Path:
    """The folder of this interpreter's environment's programs, symlinks resolved (a
    sandbox binds the real folder, where ``pyvenv.cfg`` sits beside it)."""
    return Path(sys.prefix).resolve() / "bin"


def run_command(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``command`` in ``cwd``: in-process when it is a plain ``assay …`` line, else bash."""
    words = shlex.split(command)
    plain = words[0] == "assay" and not any(SHELL_SYNTAX & set(w) for w in words)
    if plain:
        return run_in_process(*words[1:], cwd=cwd)
    env = {**os.environ, "PATH": f"{venv_bin()}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(REPO / "src")}  # fmt: skip
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip


Printed = list[subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def ran() -> dict[tuple[str, ...], Printed]:
    """What each distinct list of commands printed: two pages that show the same commands
    (the README's task file and the Task files page) run them once."""
    return {}


@pytest.mark.parametrize("block", runnable())
def test_the_block_runs_as_shown(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 ran: dict[tuple[str, ...], Printed]) -> None:  # fmt: skip
    key = tuple(c.line for c in block.commands)
    if key not in ran:
        shutil.copytree(REPO / "examples", tmp_path / "examples")
        # the scripted coding-agent examples grade with the sandbox's python3 (pylint)
        monkeypatch.setenv("PATH", f"{venv_bin()}{os.pathsep}{os.environ['PATH']}")
        ran[key] = []
        for command in block.commands:
            ran[key].append(run_command(command.line, tmp_path))
            if ran[key][-1].returncode != 0:
                break
    for number, (command, done) in enumerate(zip(block.commands, ran[key], strict=False), 1):
        output = done.stdout + done.stderr
        expected = block.exit_code if number == len(block.commands) else 0
        assert done.returncode == expected, f"{block.name}: {command.line}\n{output}"
        missing = shown_lines_match(list(command.shown), output)
        assert missing is None, f"{block.name}: {command.line} did not print\n{missing}\n{output}"
    assert len(ran[key]) == len(block.commands), f"{block.name}: stopped early"


def examples_map() -> list[tuple[str, str]]:
    """``(folder, command)`` of each row of the README's map of examples/."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    table = text.split("\n## Examples\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`examples/"):
            rows.append((cells[0].removesuffix(" ²").strip("`"), cells[2].strip("`")))
    return rows


def test_the_map_of_examples_names_every_folder_of_examples() -> None:
    folders = {f"examples/{p.name}/" for p in (REPO / "examples").iterdir() if p.is_dir()}
    mapped = {
        folder.split("/")[0] + "/" + folder.split("/")[1] + "/" for folder, _ in examples_map()
    }
    assert mapped == folders


@pytest.mark.parametrize(("folder", "command"), examples_map(), ids=lambda v: str(v))
def test_each_command_of_the_map_of_examples_plans(folder: str, command: str,
                                                   tmp_path: Path) -> None:  # fmt: skip
    """Every `assay run …` of the map is valid as written: `assay plan` with the same
    arguments reads its task files, rows, flags and models, and exits 0 (the runs
    themselves are the examples' own tests)."""
    if not command.startswith("assay run "):
        assert (REPO / folder / "README.md").is_file(), f"{folder}: {command}"
        return
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    words = shlex.split(command)
    assert folder.rstrip("/") in command
    done = run_in_process("plan", *words[2:], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
