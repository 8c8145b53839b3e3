"""Hints for a missing optional part name the command that works where assay was installed
from: ``make install-dev`` in a clone (issue 26 item 7), pip's extra elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay import install
from assay.install import clone_root, install_hint

REPO = Path(__file__).resolve().parents[1]


def test_in_this_clone_the_hint_is_make_install_dev() -> None:
    assert clone_root() == REPO
    assert install_hint("parquet") == f"make install-dev (in {REPO}; it installs every extra)"


def test_outside_a_clone_the_hint_is_pips_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(install, "clone_root", lambda: None)
    assert install_hint("parquet") == "pip install 'assay[parquet]'"


def test_no_module_hard_codes_a_pip_extra() -> None:
    found = [str(p.relative_to(REPO)) for p in (REPO / "src" / "assay").rglob("*.py")
             if "pip install 'assay[" in p.read_text(encoding="utf-8")
             and p.name not in ("install.py", "local.py", "engine.py")]  # fmt: skip
    assert found == []
