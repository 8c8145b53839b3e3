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
