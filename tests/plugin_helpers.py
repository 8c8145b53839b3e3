"""Packages that add plugins to assay, made for the plugin tests: an example package
pip-installed offline into a folder, or a distribution written straight into one."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from assay.errors import PluginError, TaskFileError


def install_example(example: Path, target: Path, module: str) -> Path:
    """``example`` (a folder of ``examples/plugins/``) installed into ``target`` (no index, no
    network; the venv's flit_core builds it); ``target``, holding ``module``."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--no-build-isolation", "--target", str(target), str(example)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert (target / module / "__init__.py").is_file()
    return target


def with_path(*folders: Path) -> dict[str, str]:
    """This environment with ``folders`` first on ``PYTHONPATH``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, folders), env.get("PYTHONPATH", "")])
    return env


def distribution(
    site: Path, name: str, group: str, entries: dict[str, str], code: str = ""
) -> None:
    """An installed distribution as ``importlib.metadata`` finds it: its dist-info with the
    entry points of ``group``, and its module."""
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
                                   encoding="utf-8")  # fmt: skip
    lines = "".join(f"{k} = {v}\n" for k, v in entries.items())
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}", encoding="utf-8")
    if code:
        (site / f"{name.replace('-', '_')}.py").write_text(code, encoding="utf-8")


@dataclass(frozen=True)
class BrokenCase:
    """One broken entry point as a test installs it (its ``name``) and what it should say."""

    name: str
    message: str
    hint: str
    built_in: str  # a built-in type's name: an entry point named so is refused when a task
    # names that type (found by a plugin author: it was passed over in silence)


def check_broken_plugin(
    case: BrokenCase,
    *,
    load_all: Callable[[], object],
    plan_naming: Callable[[str], object],
    typo: tuple[str, str, str],
) -> None:
    """The broken entry point's fault is the error where it is asked for (every plugin at
    once, as ``assay schema --plugins``, or a task naming its type), and only a note in
    the hint of another unknown type (``typo``: noun, the typo, the type it is close to)."""
    with pytest.raises(PluginError) as caught:
        load_all()
    assert caught.value.message.startswith(case.message)
    assert caught.value.hint is not None and case.hint in caught.value.hint
    with pytest.raises(PluginError) as caught:  # a built-in's name too: never passed over
        plan_naming(case.name)
    assert caught.value.message.startswith(case.message)
    noun, written, meant = typo
    with pytest.raises(TaskFileError, match=f"unknown {noun} type '{written}'") as unknown:
        plan_naming(written)
    assert unknown.value.hint is not None
    assert unknown.value.hint.startswith(f"did you mean '{meant}'?")
    noted = f"; an installed plugin could not be loaded: {case.message}" in unknown.value.hint
    assert noted is (case.name != case.built_in)
