"""Packages that add plugins to assay, made for the plugin tests: an example package
pip-installed offline into a folder, or a distribution written straight into one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


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
