"""Shared fixtures: a scratch working directory and a CLI runner."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    """Run the test inside an empty temporary folder (runs/ lands there)."""
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(old)


@pytest.fixture(scope="session", autouse=True)
def _readable_temp_dirs(tmp_path_factory: pytest.TempPathFactory) -> None:
    """pytest makes its temporary folders ``0700``. Rows of a ``bwrap`` task run, when the
    tests run as root, as an unprivileged user of their own, which must read the task's
    folder (assay refuses the plan otherwise, see tests/sandbox/test_bwrap.py): every
    temporary folder of the tests is made ``0755``, as a checkout normally is."""
    made = tmp_path_factory.mktemp

    def mktemp(basename: str, numbered: bool = True) -> Path:
        path = made(basename, numbered)
        path.chmod(0o755)
        return path

    tmp_path_factory.mktemp = mktemp  # type: ignore[method-assign]
