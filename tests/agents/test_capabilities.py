"""One protocol per agent: what an agent can do is asked of its config and its runner, never
decided by an ``isinstance`` of its config class outside the agent registry."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from assay.agents.registry import default_agents
from assay.errors import UsageError
from assay.spec.agent_base import AgentSpec
from assay.spec.coding_agents import ClaudeCodeAgent, CodexAgent
from assay.spec.task import CommandAgent, LlmAgent, NoneAgent
from tests.helpers import write

SRC = Path(__file__).resolve().parents[2] / "src" / "assay"
REGISTRY = Path("agents") / "registry.py"


def config_class_names() -> set[str]:
    """Every agent config class of the built-in registry and their bases up to
    :class:`AgentSpec` (``CodingAgent``, ``AgentBase``)."""
    names = set()
    for runner in default_agents(entry_points=False).classes():
        for cls in runner.config_model.__mro__:
            if isinstance(cls, type) and issubclass(cls, AgentSpec):
                names.add(cls.__name__)
    return names


def _names(node: ast.expr) -> list[str]:
    """The class names ``node`` (the second argument of ``isinstance``) checks against."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.Tuple):
        return [n for item in node.elts for n in _names(item)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _names(node.left) + _names(node.right)
    return []


def config_checks(root: Path, classes: set[str]) -> list[str]:
    """``file:line: isinstance(…, Class)`` (or ``issubclass``, ``type(x) is Class``) on an
    agent config class, in every module under ``root`` but the agent registry."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root) == REGISTRY:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        nodes = sorted((n for n in ast.walk(tree) if isinstance(n, ast.expr)),
                       key=lambda n: (n.lineno, n.col_offset))  # fmt: skip
        for node in nodes:
            checked: list[str] = []
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
                    checked = _names(node.args[1])
            elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Call):
                call = node.left
                if isinstance(call.func, ast.Name) and call.func.id == "type":
                    checked = [n for c in node.comparators for n in _names(c)]
            hits = sorted(set(checked) & classes)
            if hits:
                found.append(f"{path.relative_to(root)}:{node.lineno}: {', '.join(hits)}")
    return found


def _is_agent_type(node: ast.expr) -> bool:
    """``agent.type`` or ``task.agent.type`` (an agent block's type name)."""
    if not (isinstance(node, ast.Attribute) and node.attr == "type"):
        return False
    owner = node.value
    return (isinstance(owner, ast.Name) and owner.id == "agent") or (
        isinstance(owner, ast.Attribute) and owner.attr == "agent"
    )


def type_name_switches(root: Path) -> list[str]:
    """``file:line`` of every comparison of an agent block's type name (``agent.type ==
    "codex"``, ``task.agent.type in TURN_AGENTS``) outside the agent registry."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root) == REGISTRY:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare) and any(
                _is_agent_type(n) for n in [node.left, *node.comparators]
            ):
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    return sorted(found)


def test_no_switch_on_an_agent_type_name_outside_the_registry(tmp_path: Path) -> None:
    assert type_name_switches(SRC) == []
    write(
        tmp_path / "orchestration" / "b.py",
        """\
if task.agent.type in TURN_AGENTS: pass
if agent.type == "codex": pass
message = f"agent {task.agent.type}"
if row.type == "x": pass
""",
    )
    assert type_name_switches(tmp_path) == ["orchestration/b.py:1", "orchestration/b.py:2"]


def test_no_isinstance_on_agent_configs_outside_the_registry() -> None:
    assert config_checks(SRC, config_class_names()) == []


def test_the_check_finds_every_form_of_switching_on_a_config_class(tmp_path: Path) -> None:
    write(
        tmp_path / "orchestration" / "a.py",
        """\
if isinstance(agent, NoneAgent): pass
if isinstance(agent, ClaudeCodeAgent | CodexAgent) and agent.may_act: pass
if not isinstance(task.agent, (CommandAgent, LlmAgent)): pass
if isinstance(agent, assay.spec.coding_agents.CodingAgent): pass
if type(agent) is LlmAgent: pass
if issubclass(cls, AgentBase): pass
if isinstance(agent, dict) or isinstance(value, str): pass
""",
    )
    write(tmp_path / "agents" / "registry.py", "isinstance(config, NoneAgent)\n")
    found = config_checks(tmp_path, config_class_names())
    assert found == [
        "orchestration/a.py:1: NoneAgent",
        "orchestration/a.py:2: ClaudeCodeAgent, CodexAgent",
        "orchestration/a.py:3: CommandAgent, LlmAgent",
        "orchestration/a.py:4: CodingAgent",
        "orchestration/a.py:5: LlmAgent",
        "orchestration/a.py:6: AgentBase",
    ]


def test_the_names_checked_are_every_config_class_and_its_bases() -> None:
    assert config_class_names() == {
        "AgentSpec", "ModelFieldsSpec", "AgentBase", "NoneAgent", "CommandAgent", "LlmAgent",
        "CodingAgent", "ClaudeCodeAgent", "CodexAgent", "GeminiAgent", "QwenCodeAgent",
        "OpenCodeAgent", "PiAgent",
    }  # fmt: skip


CONFIGS = {
    "none": NoneAgent(type="none"),
    "command": CommandAgent(type="command", command="true", env={"B": "1"}),
    "llm": LlmAgent(model="mock/echo", api_key_env="MY_KEY", base_url="http://127.0.0.1:1"),
    "llm-file": LlmAgent(model="mock/echo", response_file="answer.txt"),
    "llm-reads": LlmAgent(model="mock/echo", tools=["read_file", "submit_answer"]),
    "llm-acts": LlmAgent(model="mock/echo", tools=["run_command"], max_turns=5),
    "claude-plan": ClaudeCodeAgent(type="claude-code", permission_mode="plan"),
    "claude-edits": ClaudeCodeAgent(type="claude-code", model="anthropic/claude-sonnet-4-5"),
    "claude-default-bash": ClaudeCodeAgent(
        type="claude-code", permission_mode="default", allowed_tools=["Bash(ls:*)"]
    ),
    "claude-direct": ClaudeCodeAgent(type="claude-code", route="direct", env={"X": "y"}),
    "codex": CodexAgent(type="codex", model="mock/echo"),
}
# name: (may_act, answers, transcript, needs_directory, takes_turns, uses_bridge,
#        isolated_from_project)
EXPECTED = {
    "none": (False, False, "none", True, False, False, False),
    "command": (False, True, "messages", True, False, False, False),
    "llm": (False, True, "messages", False, False, False, False),
    "llm-file": (False, True, "messages", True, False, False, False),
    "llm-reads": (False, True, "tool_calls", True, True, False, False),
    "llm-acts": (True, True, "tool_calls", True, True, False, False),
    "claude-plan": (False, True, "tool_calls", True, True, True, True),
    "claude-edits": (True, True, "tool_calls", True, True, True, True),
    "claude-default-bash": (True, True, "tool_calls", True, True, True, True),
    "claude-direct": (True, True, "tool_calls", True, True, False, True),
    "codex": (True, True, "tool_calls", True, True, True, True),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_each_built_in_type_declares_what_it_can_do(name: str) -> None:
    agent = CONFIGS[name]
    assert (agent.may_act, agent.answers, agent.transcript, agent.needs_directory,
            agent.takes_turns, agent.uses_bridge,
            agent.isolated_from_project) == EXPECTED[name]  # fmt: skip


def test_routes_credentials_and_program_variables() -> None:
    assert CONFIGS["llm"].credential_variables == {"MY_KEY"}
    assert CONFIGS["llm"].route_base_url == "http://127.0.0.1:1"
    assert CONFIGS["llm"].route_model == "mock/echo"
    assert CONFIGS["claude-edits"].route_model == "anthropic/claude-sonnet-4-5"
    assert CONFIGS["none"].route_model is None
    assert CONFIGS["command"].program_variables == ["ASSAY_PROMPT", "ASSAY_PROMPT_FILE", "B"]
    assert CONFIGS["claude-direct"].program_env == {"X": "y"}
    assert CONFIGS["none"].program_env == {}


def test_the_runners_give_model_keys_and_containment_needs(tmp_path: Path) -> None:
    agents = default_agents(entry_points=False)
    assert [k.name for k in agents.build(CONFIGS["llm"]).model_keys(tmp_path)] == ["mock/echo"]
    claude = agents.build(CONFIGS["claude-edits"])
    assert [k.name for k in claude.model_keys(tmp_path)] == ["anthropic/claude-sonnet-4-5"]
    assert agents.build(CONFIGS["claude-direct"]).model_keys(tmp_path) == []
    assert [k.name for k in agents.build(CONFIGS["codex"]).model_keys(tmp_path)] == ["mock/echo"]
    assert agents.build(CONFIGS["command"]).model_keys(tmp_path) == []
    assert agents.build(CONFIGS["none"]).folders(tmp_path) == []
    assert agents.build(CONFIGS["command"]).program(tmp_path) is None


def test_an_unknown_type_is_named_with_a_suggestion_and_the_fix() -> None:
    with pytest.raises(UsageError) as error:
        default_agents(entry_points=False).get("codx")
    assert error.value.message == "unknown agent type 'codx'"
    assert error.value.hint is not None
    assert error.value.hint.startswith("did you mean 'codex'? pass the class that defines it")
