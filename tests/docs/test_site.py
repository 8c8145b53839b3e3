"""The README and the documentation site hold together: the README fits, its links and
anchors resolve, the generated references cover the whole task file and command line, the
site builds offline, and nothing points at a file that is not in the repository."""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from tests.docs.blocks import REPO, doc_files

LINK = re.compile(r"\]\(([^)\s]+)\)")


def generator() -> ModuleType:
    """docs/hooks/generate.py, the MkDocs hook that writes the references."""
    spec = importlib.util.spec_from_file_location("generate", REPO / "docs/hooks/generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def slug(heading: str) -> str:
    """GitHub's and MkDocs' anchor of a heading (lower case, punctuation dropped)."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def test_the_readme_fits_in_250_lines() -> None:
    assert len((REPO / "README.md").read_text(encoding="utf-8").splitlines()) <= 250


def test_every_link_of_the_readme_resolves() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    anchors = {slug(h) for h in re.findall(r"^#+ (.+)$", text, re.MULTILINE)}
    broken = []
    for target in LINK.findall(text):
        if target.startswith("#"):
            ok = target[1:] in anchors
        else:
            ok = (REPO / target.split("#")[0]).is_file()
        if not ok:
            broken.append(target)
    assert broken == []
    assert {t for t in LINK.findall(text) if t.startswith("docs/")} >= {
        f"docs/{p}" for p in ("task-files.md", "cli.md", "api.md", "architecture.md")
    }


@pytest.mark.parametrize("path", [REPO / "README.md", REPO / "docs" / "task-files.md"],
                         ids=lambda p: p.name)  # fmt: skip
def test_the_task_file_shown_is_the_example_that_the_docs_tests_run(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    shown = re.search(r"^## A task file\n.*?```yaml\n(.*?)```", text, re.M | re.S)
    assert shown is not None
    task = REPO / "examples" / "first_task" / "task.yaml"
    assert shown.group(1) == task.read_text(encoding="utf-8")
    dataset = yaml.safe_load(shown.group(1))["dataset"]["paths"][0]
    assert (task.parent / dataset).is_file()


def test_every_page_of_docs_is_in_the_site_navigation() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    pages = {next(iter(item.values())) for item in config["nav"]}
    assert pages == {p.name for p in (REPO / "docs").glob("*.md")}
    assert config["theme"]["font"] is False  # no fonts fetched: the build stays offline
    assert config["strict"] is True


def test_no_file_points_at_a_design_document_the_repository_does_not_have() -> None:
    listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.split()  # fmt: skip
    texts = [f for f in listed if f.endswith((".py", ".md", ".toml", ".yml", ".yaml"))
             and f != "tests/docs/test_site.py"]  # fmt: skip
    name = "DESIGN" + ".md"
    assert not (REPO / name).exists()
    found = [f for f in texts if name in (REPO / f).read_text(encoding="utf-8")]
    assert found == []


def all_fields(model: Any, generate: ModuleType) -> list[tuple[str, str]]:
    return [
        (m.__name__, f.alias or name)
        for m in generate.reachable_models(model)
        for name, f in m.model_fields.items()
        if name not in getattr(m, "writer_only", ())
    ]


def test_the_field_reference_has_every_field_of_every_model_of_the_task_file() -> None:
    from assay.criteria.registry import default_criteria

    generate = generator()
    text = generate.task_fields()
    TaskDefinition = default_criteria(entry_points=False).task_model()
    tables = dict(re.findall(r"^### (\w+) \{#\w+\}\n(.*?)(?=^### |\Z)", text, re.M | re.S))
    fields = all_fields(TaskDefinition, generate)
    missing = [(m, f) for m, f in fields if f"| `{f}` |" not in tables.get(m, "")]
    assert missing == []
    # several members of the kind: agents, sandbox, dataset, criteria of each family
    families = (
        "LlmAgent",
        "ClaudeCodeAgent",
        "SandboxConfig",
        "DatasetSpec",
        "QaConfig",
        "ClassificationMatchCriterion",
        "LlmJudgeCriterion",
        "CliCalledCriterion",
    )
    for model in families:
        assert model in tables, model
    assert "| `task_id` | str | **required** |" in tables["TaskDefinition"]
    assert "| `repeats` | int | `1` | ≥ 1 |" in tables["TaskDefinition"]
    assert "| `success_criteria` |" in tables["TaskDefinition"]
    assert "**required** | length ≥ 1 |" in tables["TaskDefinition"]


def test_the_cli_reference_has_every_command_and_option() -> None:
    import typer

    from assay.cli.app import COMMANDS, DATASET_COMMANDS, JUDGE_COMMANDS, app

    text = generator().cli_reference()
    names = [*(f"assay {n}" for n in COMMANDS), *(f"assay dataset {n}" for n in DATASET_COMMANDS),
             *(f"assay judge {n}" for n in JUDGE_COMMANDS), "assay qa convert", "assay cache stats",
             "assay cache clear"]  # fmt: skip
    assert [n for n in names if f"### `{n}`\n" not in text] == []
    run = typer.main.get_command(app).get_command(None, "run")
    options = [o for p in run.params for o in p.opts if o.startswith("--") and o != "--help"]
    assert [o for o in options if f"`{o}`" not in text] == []


def test_every_command_summary_and_help_starts_with_a_whole_sentence() -> None:
    import typer

    from assay.cli.app import app

    generate = generator()
    root = typer.main.get_command(app)
    context = type(root.context_class(root))(root, info_name="assay")
    cut = []
    for words, command, _ in generate.walk_commands(root, ["assay"], context):
        first = " ".join((command.help or "").split("\n\n")[0].split())
        short = command.short_help or first
        for text in (first, short):
            if not text.endswith((".", ")")) or text.endswith("..."):
                cut.append((" ".join(words), text))
    assert cut == []


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: p.name)
def test_no_page_links_to_a_page_that_is_not_there(path: Path) -> None:
    if path.name == "README.md":
        return
    targets = [t.split("#")[0] for t in LINK.findall(path.read_text(encoding="utf-8"))]
    local = [t for t in targets if t and "://" not in t]
    assert [t for t in local if not (path.parent / t).is_file()] == []
