"""What a coding agent's task block turns into: the CLI's flags, Codex's config.toml."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from assay.agents.base import AgentContext
from assay.agents.claude_code import claude_argv, sdk_flags
from assay.agents.codex import cli_model, write_config
from assay.agents.coding_models import plugin_dirs, plugin_skills
from assay.errors import UsageError, UserError
from assay.orchestration.loading.task_loader import load_task
from assay.providers.pool import ModelPool, PoolSettings, default_registry
from assay.results.trace import Span, new_trace_id
from assay.spec.coding_agents import ClaudeCodeAgent, CodexAgent
from tests.helpers import write


def context(base: Path, *, max_turns: int | None = None) -> AgentContext:
    return AgentContext(prompt="go", sandbox=base, base_dir=base, timeout=60,
                        max_total_tokens=None, env={},
                        models=ModelPool(default_registry(), PoolSettings()),
                        root_span=Span("r", new_trace_id()), max_turns=max_turns)  # fmt: skip


def test_claude_flags_follow_the_task(tmp_path: Path) -> None:
    write(tmp_path / "plugin" / "skills" / "pdf" / "SKILL.md", "---\nname: pdf\n---\n")
    write(tmp_path / "prompt.md", "Be careful.")
    config = ClaudeCodeAgent.model_validate({
        "type": "claude-code", "model": "anthropic/claude-sonnet-4-5",
        "permission_mode": "plan", "allowed_tools": ["Write", "Bash(git status:*)"],
        "disallowed_tools": ["WebFetch"], "system_prompt_file": "prompt.md",
        "setting_sources": [], "claude_settings": {"model": "x"},
        "plugins": [{"type": "local", "path": "plugin"}],
        "sdk_options": {"effort": "low", "betas": ["b1"], "thinking": {"type": "disabled"}},
    })  # fmt: skip
    argv = claude_argv(config, Path("/bin/claude"), context(tmp_path, max_turns=7))
    assert argv[:5] == ["/bin/claude", "-p", "--output-format", "stream-json", "--verbose"]
    pairs = {argv[i]: argv[i + 1] for i in range(5, len(argv) - 1) if argv[i].startswith("--")}
    assert pairs["--permission-mode"] == "plan" and "--setting-sources=" in argv  # isolated
    assert pairs["--allowedTools"] == "Write,Bash(git status:*)"
    assert pairs["--disallowedTools"] == "WebFetch" and pairs["--max-turns"] == "7"
    assert pairs["--model"] == "claude-sonnet-4-5"
    assert pairs["--append-system-prompt"] == "Be careful."
    assert "--exclude-dynamic-system-prompt-sections" in argv
    assert json.loads(pairs["--settings"]) == {"model": "x"}
    assert pairs["--plugin-dir"] == str((tmp_path / "plugin").resolve())
    assert pairs["--effort"] == "low" and pairs["--betas"] == "b1"
    assert pairs["--thinking"] == "disabled"
    assert sorted(plugin_skills(plugin_dirs(config, tmp_path))) == ["pdf"]


def test_claude_defaults_and_replace_mode(tmp_path: Path) -> None:
    config = ClaudeCodeAgent.model_validate({"type": "claude-code", "model": "mock/echo",
                                             "system_prompt": "Only this.",
                                             "system_prompt_mode": "replace"})  # fmt: skip
    argv = claude_argv(config, Path("claude"), context(tmp_path))
    assert argv[argv.index("--permission-mode") + 1] == "acceptEdits"
    assert "--setting-sources=project" in argv
    assert "--model" not in argv  # a mock model: the CLI keeps its default name
    assert argv[argv.index("--system-prompt") + 1] == "Only this."
    assert "--max-turns" not in argv


@pytest.mark.parametrize(
    ("options", "flags"),
    [
        ({"fallback_model": "m2"}, ["--fallback-model", "m2"]),
        ({"max_thinking_tokens": 512}, ["--max-thinking-tokens", "512"]),
        ({"thinking": {"type": "enabled", "budget_tokens": 99}}, ["--max-thinking-tokens", "99"]),
        ({"thinking": {"type": "adaptive", "display": "summarized"}},
         ["--thinking", "adaptive", "--thinking-display", "summarized"]),
        ({"output_format": {"type": "json_schema", "schema": {"type": "object"}}},
         ["--json-schema", '{"type": "object"}']),
        ({"strict_mcp_config": True, "include_hook_events": False}, ["--strict-mcp-config"]),
    ],
)  # fmt: skip
def test_sdk_options_become_the_sdks_flags(options: dict[str, object], flags: list[str]) -> None:
    assert sdk_flags(options) == flags


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"cwd": "/x"}, "sdk_options key 'cwd' is framework-managed; set it as a top-level "
                        "AgentConfig field instead"),
        ({"max_buffer_size": 5}, "sdk_options key 'max_buffer_size' configures the Python "
                                 "SDK's transport"),
        ({"effortt": "low"}, "sdk_options key 'effortt' is not a ClaudeAgentOptions field "
                             "(valid keys: ["),
    ],
)  # fmt: skip
def test_sdk_options_refused_with_coder_evals_messages(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=None) as error:
        ClaudeCodeAgent.model_validate({"type": "claude-code", "sdk_options": options})
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("kind", "written", "model"),
    [
        ("claude-code", "claude-sonnet-4-5", "anthropic/claude-sonnet-4-5"),
        ("claude-code", "anthropic.claude-sonnet-4-6", "anthropic/claude-sonnet-4-6"),
        (
            "claude-code",
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "anthropic/claude-sonnet-4-5-20250929",
        ),
        ("claude-code", "anthropic/claude-opus-4-1", "anthropic/claude-opus-4-1"),
        ("claude-code", "mock/script.yaml", "mock/script.yaml"),
        ("codex", "gpt-5.5", "openai/gpt-5.5"),
        ("codex", "o3", "openai/o3"),
        ("codex", "codex-mini-latest", "openai/codex-mini-latest"),
    ],
)
def test_coder_evals_model_names_resolve_to_the_clis_own_provider(
    kind: str, written: str, model: str
) -> None:
    """Issue 29 item 3: a model written as Coder Eval's task files write it loads."""
    agent = ClaudeCodeAgent if kind == "claude-code" else CodexAgent
    assert agent.model_validate({"type": kind, "model": written}).model == model


def test_agent_field_rules() -> None:
    with pytest.raises(ValueError, match="Only one of 'system_prompt' or 'system_prompt_file'"):
        ClaudeCodeAgent.model_validate({"type": "claude-code", "system_prompt": "a",
                                        "system_prompt_file": "b"})  # fmt: skip
    with pytest.raises(ValueError, match="must be an assay model named provider/name"):
        ClaudeCodeAgent.model_validate({"type": "claude-code", "model": "sonnet"})
    with pytest.raises(ValueError, match="must be an assay model named provider/name"):
        CodexAgent.model_validate({"type": "codex", "model": "claude-sonnet-4-5"})
    with pytest.raises(ValueError, match="route 'direct' runs the CLI on its own credentials"):
        ClaudeCodeAgent.model_validate({"type": "claude-code", "route": "direct",
                                        "model": "mock/echo"})  # fmt: skip
    with pytest.raises(ValueError, match="codex runs through the model bridge only"):
        CodexAgent.model_validate({"type": "codex", "route": "direct", "model": "mock/echo"})
    with pytest.raises(ValueError, match="system_prompt_mode 'replace' needs a non-blank"):
        ClaudeCodeAgent.model_validate({"type": "claude-code", "system_prompt_mode": "replace"})
    with pytest.raises(ValueError, match="is not a tool name"):
        ClaudeCodeAgent.model_validate({"type": "claude-code", "allowed_tools": ["rm -rf"]})


@pytest.mark.parametrize(
    ("tools", "said"),
    [(["bash"], "tool 'bash' is not one of Claude Code's tools (did you mean 'Bash'?)"),
     (["Read", "Writ"], "tool 'Writ' is not one of Claude Code's tools (did you mean 'Write'?)"),
     (["bash(git status:*)"], "tool 'bash(git status:*)' is not one of Claude Code's tools"),
     (["Telepathy"], "tool 'Telepathy' is not one of Claude Code's tools; names are")],
)  # fmt: skip
def test_a_tool_name_claude_code_does_not_have_is_refused_with_the_closest(
    tools: list[str], said: str
) -> None:
    """Found by a break-test: `allowed_tools: [bash, Writ]` loaded silently and allowed
    nothing (Coder Eval refuses names that are not canonical)."""
    for field in ("allowed_tools", "disallowed_tools"):
        with pytest.raises(ValueError, match=re.escape(said)):
            ClaudeCodeAgent.model_validate({"type": "claude-code", field: tools})
    ClaudeCodeAgent.model_validate(
        {
            "type": "claude-code",
            "allowed_tools": [
                "Bash(git status:*)",
                "MultiEdit",
                "mcp__github__create_issue",
                "Skill",
            ],
        }
    )


def test_a_missing_plugin_folder_names_its_field(tmp_path: Path) -> None:
    config = ClaudeCodeAgent.model_validate(
        {"type": "claude-code", "plugins": [{"type": "local", "path": "nope"}]}
    )
    with pytest.raises(UserError) as error:
        plugin_dirs(config, tmp_path)
    assert error.value.field == "agent.plugins[0].path"
    assert error.value.message == f"plugin folder not found: {tmp_path / 'nope'}"


def test_codex_config_points_at_the_bridge(tmp_path: Path) -> None:
    write_config(tmp_path, settings={"model": "gpt-5.5", "model_provider": "assay",
                                     "provider_url": "http://127.0.0.1:9/v1"},
                 instructions='Say "hi"\nthen stop.')  # fmt: skip
    config = tomllib.loads((tmp_path / "config.toml").read_text())
    assert config["model"] == "gpt-5.5" and config["model_provider"] == "assay"
    assert config["developer_instructions"] == 'Say "hi"\nthen stop.'
    assert config["features"] == {"plugins": False} and config["analytics"] == {"enabled": False}
    provider = config["model_providers"]["assay"]
    assert provider == {"name": "assay", "base_url": "http://127.0.0.1:9/v1",
                        "wire_api": "responses", "env_key": "ASSAY_BRIDGE_KEY",
                        "request_max_retries": 0, "stream_max_retries": 0}  # fmt: skip
    assert cli_model(CodexAgent.model_validate({"type": "codex", "model": "openai/gpt-4.1"})) == (
        "gpt-4.1"
    )
    assert cli_model(CodexAgent.model_validate({"type": "codex", "model": "mock/x"})) == "gpt-5.5"


def test_a_cli_not_on_path_is_found_where_make_install_dev_put_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assay.agents.cli import PROJECT_CLIS, find_cli, project_clis

    assert Path(__file__).resolve().parents[2] / ".tools/npm/node_modules/.bin" == PROJECT_CLIS
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("ASSAY_CLI_DIR", raising=False)
    assert project_clis() == PROJECT_CLIS
    found = find_cli("codex", configured=None, base_dir=tmp_path, bundled=lambda: None)
    assert found == PROJECT_CLIS / "codex"  # `make install-dev` put it there
    own = tmp_path / "clis"
    write(own / "codex", "#!/bin/sh\n").chmod(0o755)
    monkeypatch.setenv("ASSAY_CLI_DIR", str(own))
    assert find_cli("codex", configured=None, base_dir=tmp_path, bundled=lambda: None) == (
        own / "codex"
    )
    # found through a linked folder (a `.tools` that is a link): named at its real place,
    # which is what a sandbox shows (the linked path ran as exit 127 in bwrap)
    (tmp_path / "linked").symlink_to(own)
    monkeypatch.setenv("ASSAY_CLI_DIR", str(tmp_path / "linked"))
    assert find_cli("codex", configured=None, base_dir=tmp_path, bundled=lambda: None) == (
        own / "codex"
    )
    configured = find_cli("codex", configured=str(tmp_path / "linked" / "codex"),
                          base_dir=tmp_path, bundled=lambda: None)  # fmt: skip
    assert configured == own / "codex"
    monkeypatch.setenv("ASSAY_CLI_DIR", str(tmp_path / "none"))
    with pytest.raises(UsageError, match=r"the codex CLI was not found \(agent.cli_path, then "
                       r"PATH, then .*none\)"):  # fmt: skip
        find_cli("codex", configured=None, base_dir=tmp_path, bundled=lambda: None)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("---\nname: okapi-notes\ndescription: d\n---\nbody\n", "okapi-notes"),
        ("---\r\nname: 'quoted'\r\n---\r\nbody\r\n", "quoted"),
        ("no front matter\n", "folder"),
        ("---\nname: [a, b\n---\n", "[a, b"),  # not YAML: read line by line
        ("---\ndescription: only\n---\n", "folder"),
        ("---\nname: ../escape\n---\n", "../escape"),  # as the CLI names it; never a path
        ("\ufeff---\nname: bom\n---\n", "bom"),
        ("---\nname: my-skill\ndescription: Use when: things: happen\n---\n", "my-skill"),
        ("---\nname: 123\ndescription: d\n---\n", "123"),  # as text, as the CLIs read it
        ("---\nname: yes\n---\n", "yes"),
    ],
)
def test_a_skill_is_named_by_its_front_matter(tmp_path: Path, text: str, name: str) -> None:
    from assay.agents.coding_models import skill_name

    write(tmp_path / "folder" / "SKILL.md", text)
    assert skill_name(tmp_path / "folder") == name


def test_skills_are_copied_with_their_links_as_links(tmp_path: Path) -> None:
    from assay.agents.coding_models import copy_skills, plugin_skills

    skill = tmp_path / "plug" / "skills" / "notes"
    write(skill / "SKILL.md", "---\nname: notes\n---\nbody\n")
    (skill / "keys").symlink_to(write(tmp_path / "secret" / "id_rsa", "HOST-SECRET").parent)
    (skill / "up").symlink_to("..")  # a loop, followed, would never end
    copy_skills(plugin_skills([tmp_path / "plug"]), tmp_path / "home")
    copied = tmp_path / "home" / "notes"
    assert (copied / "keys").is_symlink() and (copied / "up").is_symlink()
    assert sorted(p.name for p in copied.iterdir()) == ["SKILL.md", "keys", "up"]


def test_what_a_skills_only_cli_cannot_take_as_a_plugin_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assay.agents.coding_models import skill_plugins
    from assay.spec.coding_agents import QwenCodeAgent

    def refused(path: str) -> str:
        config = QwenCodeAgent.model_validate(
            {"type": "qwen-code", "plugins": [{"type": "local", "path": path}]}
        )
        with pytest.raises(UserError) as error:
            skill_plugins(config, tmp_path)
        assert error.value.field == "agent.plugins[0].path"
        return error.value.message

    (tmp_path / "empty").mkdir()
    assert "offers no skill (skills/<name>/SKILL.md): qwen-code takes only" in refused("empty")
    write(tmp_path / "file.md", "x")
    assert refused("file.md").endswith("file.md is a file, not a folder")
    monkeypatch.delenv("NOPE_UNSET", raising=False)
    assert (
        refused("$NOPE_UNSET/plug")
        == "plugin folder $NOPE_UNSET/plug names $NOPE_UNSET, which is not set"
    )


@pytest.mark.parametrize("agent", ["qwen-code", "gemini", "opencode"])
def test_two_skills_of_one_name_are_refused_where_a_cli_reads_one_folder(
    tmp_path: Path, agent: str
) -> None:
    """Qwen Code, Gemini CLI and OpenCode read the plugins' skills from one folder, named by
    their front matter: two of one name, in one plugin or in two, would hide one silently."""
    from assay.agents.coding_models import skill_plugins
    from assay.agents.registry import default_agents

    write(
        tmp_path / "a" / "skills" / "notes" / "SKILL.md",
        "---\nname: notes\ndescription: d\n---\nA\n",
    )
    write(
        tmp_path / "a" / "skills" / "memo" / "SKILL.md", "---\nname: memo\ndescription: d\n---\nM\n"
    )
    write(
        tmp_path / "b" / "skills" / "jot" / "SKILL.md", "---\nname: notes\ndescription: d\n---\nB\n"
    )
    write(tmp_path / "c" / "skills" / "x" / "SKILL.md", "---\nname: same\ndescription: d\n---\n")
    write(tmp_path / "c" / "skills" / "y" / "SKILL.md", "---\nname: same\ndescription: d\n---\n")
    model = default_agents().get(agent).config_model

    def config(*paths: str) -> Any:
        plugins = [{"type": "local", "path": p} for p in paths]
        return model.model_validate({"type": agent, "plugins": plugins})

    assert sorted(skill_plugins(config("a", "a"), tmp_path)) == ["memo", "notes"]  # no clash
    with pytest.raises(UserError) as across:
        skill_plugins(config("a", "b"), tmp_path)
    assert across.value.field == "agent.plugins[1].path"
    assert across.value.message == (
        f"two skills are named 'notes': {tmp_path / 'a/skills/notes/SKILL.md'} and "
        f"{tmp_path / 'b/skills/jot/SKILL.md'}; {agent} reads its skills from one folder, so "
        "one would silently hide the other"
    )
    with pytest.raises(UserError, match="two skills are named 'same'") as within:
        skill_plugins(config("c"), tmp_path)
    assert within.value.field == "agent.plugins[0].path"


def test_two_skills_of_one_name_are_refused_at_plan(tmp_path: Path) -> None:
    import assay
    from assay.errors import TaskFileError

    write(
        tmp_path / "a" / "skills" / "notes" / "SKILL.md",
        "---\nname: notes\ndescription: d\n---\nA\n",
    )
    write(
        tmp_path / "b" / "skills" / "jot" / "SKILL.md", "---\nname: notes\ndescription: d\n---\nB\n"
    )
    (tmp_path / "c" / "skills").mkdir(parents=True)
    (tmp_path / "c" / "skills" / "notes").symlink_to(tmp_path / "a" / "skills" / "notes")
    task = write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: hi\n"
                 "agent:\n  type: gemini\n  model: mock/echo\n  plugins:\n"
                 "    - {type: local, path: a}\n    - {type: local, path: c}\n"
                 "    - {type: local, path: b}\n"
                 "success_criteria: [{type: file_exists, path: x, description: d}]\n")  # fmt: skip
    with pytest.raises(TaskFileError, match="two skills are named 'notes'") as caught:
        assay.plan([str(task)])
    # the line of the plugin that clashes; c's skill is a's own, through a link: no clash
    assert (caught.value.line, caught.value.field) == (10, "agent.plugins[2].path")
    assert "jot/SKILL.md" in caught.value.message


def _refused_beside_a_good_skill(tmp_path: Path, agent: str) -> Any:
    """The plan's error for a task of ``agent`` with the plugin ``plug`` (a good skill added
    beside what the test wrote), at the plugin's line."""
    write(
        tmp_path / "plug" / "skills" / "good" / "SKILL.md", "---\nname: good\ndescription: d\n---\n"
    )
    return _refused(tmp_path, agent)


def _refused(tmp_path: Path, agent: str) -> Any:
    """The plan's error for a task of ``agent`` with the plugin ``plug``, at its line."""
    import assay
    from assay.errors import TaskFileError

    task = write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: hi\n"
                 f"agent:\n  type: {agent}\n  model: mock/echo\n  plugins:\n"
                 "    - {type: local, path: plug}\n"
                 "success_criteria: [{type: file_exists, path: x, description: d}]\n")  # fmt: skip
    with pytest.raises(TaskFileError) as caught:
        assay.plan([str(task)])
    error = caught.value
    assert (error.line, error.field) == (8, "agent.plugins[0].path")
    return error


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini", "qwen-code", "opencode", "pi"])
def test_a_skill_whose_file_is_a_link_to_nothing_is_refused_at_plan(
    tmp_path: Path, agent: str
) -> None:
    """Every CLI passes over a SKILL.md that is a dangling link without a word; assay
    refused nothing before and the skill was silently missing from the row."""
    (tmp_path / "plug" / "skills" / "gone").mkdir(parents=True)
    (tmp_path / "plug" / "skills" / "gone" / "SKILL.md").symlink_to(tmp_path / "moved.md")
    error = _refused_beside_a_good_skill(tmp_path, agent)
    assert f"gone/SKILL.md is a link to nothing ({tmp_path / 'moved.md'})" in error.message
    assert "point the link at what it stands for" in (error.hint or "")


@pytest.mark.parametrize("agent", ["claude-code", "codex", "qwen-code"])
@pytest.mark.parametrize(
    "shape",
    [
        "folder link to nothing",
        "SKILL.md a folder",
        "SKILL.md a link to a folder",
        "skills a link to nothing",
    ],
)
def test_what_looks_like_a_skill_and_is_none_is_refused_at_plan(
    tmp_path: Path, agent: str, shape: str
) -> None:
    """A skill's folder that is a link to nothing, a SKILL.md that is a folder (or a link
    to one), a skills folder that is a link to nothing: no CLI loads them, and assay counted
    the SKILL.md folder as an offered skill and passed the others without a word."""
    plug = tmp_path / "plug"
    if shape == "skills a link to nothing":
        plug.mkdir()
        plug.joinpath("skills").symlink_to(tmp_path / "gone")
        expected = f"{plug / 'skills'} is a link to nothing"
        if agent == "claude-code":  # its check of a plugin's root comes first, as rightly
            expected = f"{plug} is not a plugin: it holds no skills/<name>/SKILL.md"
    else:
        write(plug / "skills" / "good" / "SKILL.md", "---\nname: good\ndescription: d\n---\n")
        if shape == "folder link to nothing":
            (plug / "skills" / "odd").symlink_to(tmp_path / "gone")
            expected = f"{plug / 'skills' / 'odd'} is a link to nothing"
        else:
            (plug / "skills" / "odd").mkdir()
            (tmp_path / "dir").mkdir()
            if shape == "SKILL.md a folder":
                (plug / "skills" / "odd" / "SKILL.md").mkdir()
            else:
                (plug / "skills" / "odd" / "SKILL.md").symlink_to(tmp_path / "dir")
            expected = f"{plug / 'skills' / 'odd' / 'SKILL.md'} is not a file"
    assert expected in _refused(tmp_path, agent).message


NOT_LOADED = [  # (agent, SKILL.md text, what the refusal says); each tried on the CLI's loader
    ("qwen-code", "no front matter\n", "it has no front matter"),
    ("gemini", "\ufeff---\nname: a\ndescription: d\n---\n", "a byte-order mark before it"),
    ("pi", "\ufeff---\nname: a\ndescription: d\n---\n", "it has no front matter"),
    ("pi", "---\nname: a\ndescription: Use when: x\n---\n", "is not valid YAML"),
    ("opencode", "---\nname: notes\n---\n", "its front matter has no description"),
    ("pi", "---\nname: notes\ndescription: '  '\n---\n", "its front matter's description is empty"),
    ("qwen-code", "---\ndescription: d\n---\n", "its front matter has no name"),
    ("qwen-code", "---\nname: ''\ndescription: d\n---\n", "its front matter's name is empty"),
    ("qwen-code", "---\nname: my notes\ndescription: d\n---\n",
     "its name 'my notes' is not one it loads: letters, digits, '_', ':', '.' and '-' only"),
    ("qwen-code", "---\nname: ' good'\ndescription: d\n---\n", "its name ' good' is not one"),
    ("gemini", "---\nname: team:notes\ndescription: d\n---\n",
     "it would offer it as 'team-notes', not as its name 'team:notes'"),
]  # fmt: skip


@pytest.mark.parametrize(("agent", "text", "says"), NOT_LOADED)
def test_a_skill_its_cli_would_pass_over_is_refused_not_offered(
    tmp_path: Path, agent: str, text: str, says: str
) -> None:
    """Qwen Code, Gemini CLI, OpenCode and Pi silently skip (or rename) a SKILL.md they
    cannot load as it is: assay refuses it at plan with the file and what the CLI needs,
    instead of listing it as offered."""

    write(tmp_path / "plug" / "skills" / "notes" / "SKILL.md", text)
    error = _refused_beside_a_good_skill(tmp_path, agent)
    assert f"would not load the skill {tmp_path / 'plug/skills/notes/SKILL.md'} as it is: " in (
        error.message
    )
    assert says in error.message


LOADED = [  # what a CLI loads though a strict YAML 1.1 reader would not: never refused
    ("qwen-code", "---\nname: good\ndescription: Use when: the user asks\n---\n"),
    ("gemini", "---\nname: good\ndescription: Use when: the user asks\n---\n"),
    ("opencode", "---\nname: good\ndescription: Use when: the user asks\n---\n"),
    ("qwen-code", "\ufeff---\nname: good\ndescription: d\n---\n"),
    ("opencode", "\ufeff---\nname: good\ndescription: d\n---\n"),
    ("qwen-code", "---\nname: yes\ndescription: yes\n---\n"),
    ("gemini", "---\nname: 2024-01-01\ndescription: 42\n---\n"),
    ("gemini", "---\nname: good\ndescription: ''\n---\n"),
    ("opencode", "---\nname: .hidden\ndescription: d\n---\n"),
    ("gemini", "---\nname: .hidden\ndescription: d\n---\n"),
    ("pi", "---\ndescription: no name, the folder's\n---\n"),
    ("gemini", "---\nmetadata:\n  name: good\ndescription: d\n---\n"),  # read line by line
    ("qwen-code", "---\nname: ünïcode-名前\ndescription: |\n  two\n  lines\n---\n"),
]  # fmt: skip


@pytest.mark.parametrize(("agent", "text"), LOADED)
def test_a_skill_its_cli_loads_is_never_refused(tmp_path: Path, agent: str, text: str) -> None:
    from assay.agents.registry import default_agents

    rule = default_agents().get(agent).skill_rule
    assert rule is not None
    write(tmp_path / "s" / "SKILL.md", text)
    rule.check(tmp_path / "s", field="f")  # raises on a refusal


def test_a_skill_is_offered_under_the_name_its_cli_loads_from_a_plain_folder(
    tmp_path: Path,
) -> None:
    """A name that is no plain folder name (a leading dot, a slash) is offered as written and
    copied into a folder named after the skill's own folder; a linked SKILL.md is copied as
    the file it names (the copied link would point at nothing)."""
    from assay.agents.coding_models import copy_skills, plugin_skills

    write(
        tmp_path / "p" / "skills" / "s1" / "SKILL.md", "---\nname: .hidden\ndescription: d\n---\n"
    )
    write(tmp_path / "shared.md", "---\nname: linked\ndescription: d\n---\nbody\n")
    (tmp_path / "p" / "skills" / "s2").mkdir()
    (tmp_path / "p" / "skills" / "s2" / "SKILL.md").symlink_to(tmp_path / "shared.md")
    skills = plugin_skills([tmp_path / "p"])
    assert sorted(skills) == [".hidden", "linked"]
    copy_skills(skills, tmp_path / "home")
    assert sorted(p.name for p in (tmp_path / "home").iterdir()) == ["linked", "s1"]
    copied = tmp_path / "home" / "linked" / "SKILL.md"
    assert not copied.is_symlink() and "name: linked" in copied.read_text()


def test_two_skills_of_one_name_in_front_matter_that_is_not_yaml_are_refused(
    tmp_path: Path,
) -> None:
    from assay.agents.coding_models import skill_plugins
    from assay.spec.coding_agents import QwenCodeAgent

    for folder in ("f1", "f2"):
        write(tmp_path / "p" / "skills" / folder / "SKILL.md",
              "---\nname: dup\ndescription: Use when: a: b\n---\n")  # fmt: skip
    config = QwenCodeAgent.model_validate(
        {"type": "qwen-code", "plugins": [{"type": "local", "path": "p"}]}
    )
    with pytest.raises(UserError, match="two skills are named 'dup'"):
        skill_plugins(config, tmp_path)


def test_claude_code_offers_a_plugins_skills_by_folder(tmp_path: Path) -> None:
    """Claude Code names a plugin's skill ``plugin:folder`` whatever its front matter says
    (its init event's skills), so that is the name recorded as offered."""
    from assay.agents.coding_models import skill_folder_names

    write(tmp_path / "p" / "skills" / "u1" / "SKILL.md", "---\nname: météo\ndescription: d\n---\n")
    write(tmp_path / "p" / "skills" / "x" / "SKILL.md", "---\nname: s1\ndescription: d\n---\n")
    assert skill_folder_names([tmp_path / "p"]) == ["u1", "x"]


def test_a_passthrough_the_cli_never_gets_is_warned_at_load(tmp_path: Path) -> None:
    text = ("task_id: t\ndescription: d\ninitial_prompt: go\n"
            "agent:\n  type: claude-code\n  env_passthrough: [OPENAI_API_KEY, MY_TOKEN]\n"
            "success_criteria: [{type: file_exists, path: x}]\n")  # fmt: skip
    warnings = load_task(write(tmp_path / "t.yaml", text)).warnings
    said = [w for w in warnings if "env_passthrough" in w]
    assert len(said) == 1 and ":6: agent.env_passthrough: OPENAI_API_KEY never reach" in said[0]
    assert "MY_TOKEN" not in said[0]
    plain = text.replace("OPENAI_API_KEY, ", "")
    assert not [w for w in load_task(write(tmp_path / "p.yaml", plain)).warnings
                if "env_passthrough" in w]  # fmt: skip
