"""The import layering of docs/architecture.md: no module imports a higher layer, and no command
module of ``cli/`` imports another command module (nor is any of ``cli/`` over ~200 lines).

Layers, low to high: version → lazy → install → errors → plugins → spec → results → data → metrics →
providers → sandbox → bridge → agents → store → judges → qa → criteria → orchestration →
reports → view → api → cli and the pytest plugin (``pytest_plugin``, beside ``cli``: both
only call the API).
Every import counts, at module level, inside a function or under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import write

SRC = Path(__file__).resolve().parents[1] / "src" / "assay"
ORDER = ["version", "lazy", "install", "errors", "plugins", "spec", "results", "data", "metrics",
         "providers", "sandbox", "bridge", "agents", "store", "judges", "qa", "criteria",
         "orchestration", "reports", "view", "api", "cli"]  # fmt: skip
RANK = {name: index for index, name in enumerate(ORDER)}
RANK["pytest_plugin"] = RANK["cli"]
RANK["__main__"] = RANK["cli"]
CLI_SHARED = "shared"  # the package of cli/ that holds no command: what command modules share
CLI_ROOTS = {"app", "entry", "__init__"}  # they assemble or start the commands
MAX_CLI_LINES = 200


def imported(tree: ast.AST) -> list[tuple[str, int]]:
    """``(dotted assay module, line)`` of every import of ``assay.…`` in ``tree``;
    ``from assay import name`` counts as ``assay.name`` (a package) or ``assay.api`` (a name
    that ``import assay`` exports), so ``from assay import __version__`` is an import of the
    top; modules take it from :mod:`assay.version`, the bottom layer."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.startswith("assay.") or a.name == "assay"]
            found += [(name if name != "assay" else "assay.api", node.lineno) for name in names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("assay."):
                found.append((node.module, node.lineno))
            elif node.module == "assay":
                for alias in node.names:
                    name = alias.name if alias.name in RANK else "api"
                    found.append((f"assay.{name}", node.lineno))
    return found


def violations(root: Path) -> list[str]:
    """Every import against the layers, and every command module importing another."""
    problems: list[str] = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        layer = parts[0].removesuffix(".py")
        if layer not in RANK:
            continue  # the package facade (assay/__init__.py)
        for module, line in imported(ast.parse(path.read_text(encoding="utf-8"))):
            target = module.split(".")[1]
            if target in RANK and RANK[target] > RANK[layer]:
                problems.append(f"{path}:{line}: {layer} imports {module}, a higher layer")
            if layer == "cli" and target == "cli" and len(module.split(".")) > 2:
                problems += _command_import(path, module, line)
    return problems


def _command_import(path: Path, module: str, line: int) -> list[str]:
    importer, imported_name = path.stem, module.split(".")[2]
    shared_importer = path.parent.name == CLI_SHARED
    if importer in CLI_ROOTS or shared_importer or imported_name == CLI_SHARED:
        if shared_importer and imported_name != CLI_SHARED:
            return [f"{path}:{line}: shared cli module imports command module {module}"]
        return []
    return [f"{path}:{line}: command module {importer} imports command module {module}"]


def test_no_module_imports_a_higher_layer_or_another_command_module() -> None:
    assert violations(SRC) == []


FLOORS = ["loading", "planning", "running"]  # orchestration's own floors, low to high


def floor_violations(root: Path) -> list[str]:
    """Every import from one of orchestration's floors into a higher floor, and every module
    of orchestration left outside the floors (only the package's ``__init__`` stays)."""
    problems: list[str] = []
    package = root / "orchestration"
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).parts
        if parts == ("__init__.py",):
            continue
        if parts[0] not in FLOORS:
            problems.append(f"{path}: outside orchestration's floors {FLOORS}")
            continue
        for module, line in imported(ast.parse(path.read_text(encoding="utf-8"))):
            names = module.split(".")
            floor = names[2] if names[1:2] == ["orchestration"] and len(names) > 2 else None
            if floor in FLOORS and FLOORS.index(floor) > FLOORS.index(parts[0]):
                problems.append(f"{path}:{line}: {parts[0]} imports {module}, a higher floor")
    return problems


def test_orchestration_stacks_in_floors_with_no_import_up() -> None:
    assert floor_violations(SRC) == []


def test_the_floor_check_finds_imports_up_and_modules_outside(tmp_path: Path) -> None:
    root = tmp_path / "assay"
    write(root / "orchestration" / "__init__.py", "")
    write(root / "orchestration" / "loading" / "a.py", "def f():\n"
          "    from assay.orchestration.running.runner import Runner\n")  # fmt: skip
    write(root / "orchestration" / "planning" / "b.py",
          "from assay.orchestration.loading.a import f\n")  # down: fine  # fmt: skip
    write(root / "orchestration" / "planning" / "c.py",
          "import assay.orchestration.running.session\n")  # fmt: skip
    write(root / "orchestration" / "stray.py", "")
    found = [f.split("/orchestration/", 1)[1] for f in floor_violations(root)]
    assert found == [
        "loading/a.py:2: loading imports assay.orchestration.running.runner, a higher floor",
        "planning/c.py:1: planning imports assay.orchestration.running.session, a higher floor",
        f"stray.py: outside orchestration's floors {FLOORS}",
    ]


def test_no_cli_module_is_over_200_lines() -> None:
    sizes = {str(p.relative_to(SRC)): len(p.read_text().splitlines())
             for p in (SRC / "cli").rglob("*.py")}  # fmt: skip
    assert {name: n for name, n in sizes.items() if n > MAX_CLI_LINES} == {}


def test_the_check_finds_upward_imports_and_command_modules_importing_each_other(
    tmp_path: Path,
) -> None:
    root = tmp_path / "assay"
    write(root / "metrics" / "x.py", "def f():\n    from assay.reports.writer import w\n")
    write(root / "orchestration" / "y.py", "from typing import TYPE_CHECKING\n"
          "if TYPE_CHECKING:\n    import assay.api.runs\n")  # fmt: skip
    write(root / "store" / "z.py", "from assay import run\n")
    write(root / "criteria" / "w.py", "import assay\n")  # the facade: the top
    write(root / "cli" / "app.py", "from assay.cli import run\n")  # the app may
    write(root / "cli" / "run.py", "from assay.cli.shared.common import fail\n")  # shared: fine
    write(root / "cli" / "dataset.py", "from assay.cli.run import run\n")
    write(root / "cli" / "shared" / "common.py", "from assay.cli.plan import plan\n")
    write(root / "errors.py", "import assay.spec.task\n")
    found = violations(root)
    assert [f.split(": ", 1)[1] for f in found] == [
        "command module dataset imports command module assay.cli.run",
        "shared cli module imports command module assay.cli.plan",
        "criteria imports assay.api, a higher layer",
        "errors imports assay.spec.task, a higher layer",
        "metrics imports assay.reports.writer, a higher layer",
        "orchestration imports assay.api.runs, a higher layer",
        "store imports assay.api, a higher layer",
    ]


def test_the_version_module_says_what_pyproject_says() -> None:
    import tomllib

    from assay.version import __version__

    project = tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    assert __version__ == project["project"]["version"]


def test_the_facade_version_is_an_import_of_the_top(tmp_path: Path) -> None:
    write(tmp_path / "view" / "page.py", "from assay import __version__\n")
    assert [p.split(": ", 1)[1] for p in violations(tmp_path)] == [
        "view imports assay.api, a higher layer"
    ]
