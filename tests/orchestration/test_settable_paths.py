"""Every setting that ``-D``, an experiment's ``defaults`` or a variant can name takes effect or
is refused with a reason: generated over the fields of the task models, not a list.

The settable paths are found by walking the pydantic models of :mod:`assay.spec` along base
task files that hold every model (each agent type, each criterion type, each template source,
a ``qa:`` block with a judge). For each leaf, a different valid value is made from the field's
type and constraints; the plan is built with it, and the value must appear in the row-task as
it runs (``WorkItem.resolve()``), or, for the dataset, in the selection the plan made. Fields
that assay accepts from a Coder Eval task file with a warning (``coder_eval_only``) must be
refused when an override sets them. A completeness check fails when a model or field of the
spec is reached by no base task, so a new field is tested as soon as it exists.
"""

from __future__ import annotations

import json
import shutil
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast, get_args, get_origin

import annotated_types
import pytest
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from assay.agents.claude_code import bundled_claude
from assay.agents.llm import build_request, model_key
from assay.api.tasks import TaskDefinition
from assay.criteria.registry import default_criteria
from assay.data.substitute import substitute_tree
from assay.errors import TaskFileError, UserError
from assay.orchestration.loading.overrides import ALTERNATIVES, Override
from assay.orchestration.loading.qa_rows import judge_key
from assay.orchestration.planning.plan import Plan, PlanOptions, build_plan
from assay.providers.base import Model
from assay.qa.evaluate import JudgeSettings
from assay.spec.base import StrictModel
from assay.spec.qa import QaJudge
from assay.spec.task import LlmAgent
from assay.store import Schema, open_store
from tests.agents.coding import CODEX_BIN
from tests.helpers import write

ROWS = """\
  rows:
    - {id: a, text: alpha, label: pos, s: p, part: train}
    - {id: b, text: beta, label: neg, s: p, part: test}
    - {id: c, text: gamma, label: pos, s: q, part: train}
    - {id: d, text: delta, label: neg, s: q, part: test}
"""
CRITERIA = """\
success_criteria:
  - {type: file_exists, path: f.txt}
  - {type: file_check, path: f.txt, includes: [c], excludes: [zz],
     patterns: [{pattern: c, flags: i}]}
  - {type: run_command, command: "true", expected_stdout: "", stdout_match: exact}
  - {type: classification_match, expected_label: "${row.label}", allowed_labels: [pos, neg]}
  - {type: response_match, expected: "${row.text}"}
  - {type: file_contains, path: f.txt, includes: [c], excludes: [zz]}
  - {type: file_matches_regex, path: f.txt, pattern: c, must_match: true, flags: 2}
  - {type: json_check, path: f.json, json_schema: schema.json,
     assertions: [{expression: a, operator: equals, expected: 1}]}
  - {type: pytest, path: tests, args: [-q], timeout: 30}
"""
AGENT_CRITERIA = """\
  - {type: skill_triggered, skill_name: s, expected_skill: "${row.s}",
     stop_early: {on_pass: stop, decide_within: 4}}
  - {type: command_executed, tool_name: Bash, command_pattern: x, exclude_pattern: y,
     min_count: 1, max_count: 3, require_success: true, stop_early: {}}
  - {type: tool_called, tool: Write, arguments_pattern: f, min_count: 1, max_count: 3,
     require_success: true}
  - {type: commands_efficiency, expected_commands: 2}
  - {type: import_check, path: f.py, timeout: 20}
  - {type: pylint_score, path: f.py, min_score: 5, fail_under: 4, args: [-j1],
     rcfile: pylintrc, timeout: 60}
  - {type: reference_comparison, agent_file: f.py, reference_file: s.py,
     comparison_method: token, similarity_threshold: 0.7}
  - {type: uipath_eval, agent_name: main, eval_set: s.json, thresholds: {"*": 0.5}, timeout: 60}
  - {type: cli_called, log: cli_mocks/calls.jsonl, tool: gh, verb: pr create,
     positional: [x], flags: {title: {contains: a}}, value_flags: [repo],
     ignore_flags: [output], min_count: 1, max_count: 2}
"""
SANDBOX_CRITERIA = CRITERIA.replace('allowed_labels: [pos, neg]}', 'allowed_labels: [pos, neg], '
                                    'path: f.txt}').replace('"${row.text}"}', '"${row.text}", '
                                                            'path: f.txt}')  # fmt: skip
JUDGES = """\
  - {type: llm_judge, judge: judge.yaml}
  - type: llm_judge
    prompt: "Rate the answer."
    model: mock/other.yaml
    verdict: {kind: labels, labels: [pos, neg], pass_labels: [pos], ordered: true}
    few_shot: [{response: r, verdict: pos, reason: why, row: {text: t}}]
    system_prompt: sys
    samples: 3
    retries: 1
    temperature: 0.5
    max_tokens: 100
    base_url: http://127.0.0.1:9/v1
    api_key_env: ASSAY_TEST_KEY
    request_timeout: 30
    cache: false
    files: [f.txt]
    include_agent_output: false
    include_tool_calls: true
    max_file_chars: 1000
    max_transcript_chars: 1000
    expected_label: "${row.label}"
    enabled: true
  - {type: llm_judge, prompt: "Score it.", model: mock/other.yaml,
     verdict: {kind: scale, min: 1, max: 5, integer: true}}
  - {type: system_one_judge, prompt: "Judge it.", model: mock/other.yaml,
     verdict: {kind: binary}, few_shot: [{response: r, verdict: true, reason: why}]}
  - type: agent_judge
    prompt: "Explore it."
    files: [f.txt]
    include_reference: true
    include_agent_output: true
    include_tool_calls: true
    max_file_chars: 1000
    max_transcript_chars: 1000
    max_turns: 5
    turn_timeout: 30
    enabled: true
    agent: {type: claude-code, model: mock/other.yaml, cli_model: m, cli_path: CLAUDE_CLI,
            system_prompt: s, permission_mode: plan, allowed_tools: [Read],
            disallowed_tools: [Write], ignore_patterns: [x],
            additional_ignore_patterns: [y], env: {A: b},
            base_url: "http://127.0.0.1:9/v1", api_key_env: ASSAY_TEST_KEY,
            request_timeout: 30, cache: false,
            price: {input_per_mtok: 1, output_per_mtok: 2}}
"""
COMMON = """\
description: d
tags: [base]
reference: {directory: ref}
run_limits: {task_timeout: 60, max_total_tokens: 1000, max_usd: 1.0}
sandbox:
  template_sources:
    - {type: template_dir, path: tpl, mount_point: m}
    - {type: starter_files, files: [{path: f.txt, content: c}]}
  docker: {env_passthrough: [A_TOKEN], env_passthrough_extra: [B_TOKEN]}
  record_cli:
    - {tool: gh, exit_code: 1, stdout: o, stderr: e,
       responses: [{when: {verb: pr}, stdout: o, stderr: e, exit_code: 0}]}
pre_run: [{command: "true", timeout: 20, fail_on_error: true}]
post_run: [{command: "true", timeout: 20}]
"""
# The agent types whose every other field a base above already reaches: their own fields and
# the rows (each base is planned once per field it holds).
LEAN = "description: d\n"
LEAN_CRITERIA = "success_criteria: [{type: file_exists, path: x, description: d}]\n"
BASES = {
    "llm": "task_id: llm\n"
    + COMMON
    + """\
agent: {type: llm, model: mock/echo, system_prompt: s, few_shot: [{user: u, assistant: a}],
        stop: [x], labels: [pos, neg], price: {input_per_mtok: 1, output_per_mtok: 2},
        extra_body: {k: 1}}
initial_prompt: "${row.text}"
simulation: {enabled: false, persona: p, goal: g, constraints: [c], max_turns: 3,
             stop_token: "<<X>>", stop_on_criteria_pass: false, max_total_tokens: 100,
             n_trials: 1, check_criteria: every_turn, model: mock/echo}
dataset:
"""
    + ROWS
    + CRITERIA
    + AGENT_CRITERIA
    + JUDGES,
    "command": "task_id: cmd\n"
    + COMMON
    + """\
agent: {type: command, command: cat, env: {A: b}}
initial_prompt: "${row.text}"
dataset:
"""
    + ROWS
    + CRITERIA
    + AGENT_CRITERIA,
    "none": "task_id: none\n"
    + COMMON
    + """\
agent: {type: none}
dataset:
"""
    + ROWS
    + SANDBOX_CRITERIA,  # agent: none grades what is in the sandbox, not a response
    "claude": "task_id: claude\n"
    + COMMON
    + """\
agent: {type: claude-code, model: mock/other.yaml, cli_model: sonnet, env: {A: b},
        system_prompt: s, plugins: [{type: local, path: plug}], allowed_tools: [Write],
        disallowed_tools: [Bash], setting_sources: [project], claude_settings: {k: v},
        sdk_options: {effort: high}, price: {input_per_mtok: 1, output_per_mtok: 2}}
initial_prompt: "${row.text}"
dataset:
"""
    + ROWS
    + CRITERIA
    + AGENT_CRITERIA,
    "codex": "task_id: codex\n"
    + COMMON
    + """\
agent: {type: codex, model: mock/other.yaml, env: {A: b}, system_prompt: s,
        price: {input_per_mtok: 1, output_per_mtok: 2}, cli_path: CODEX,
        plugins: [{type: local, path: plug}]}
initial_prompt: "${row.text}"
dataset:
"""
    + ROWS
    + CRITERIA
    + AGENT_CRITERIA,
    "gemini": "task_id: gemini\n"
    + COMMON
    + """\
agent: {type: gemini, model: mock/other.yaml, env: {A: b}, cli_path: GEMINI, plugins: [],
        price: {input_per_mtok: 1, output_per_mtok: 2}}
initial_prompt: "${row.text}"
dataset:
"""
    + ROWS
    + CRITERIA,
    "qwen": "task_id: qwen\n"
    + LEAN
    + """\
agent: {type: qwen-code, model: mock/other.yaml, env: {A: b}, cli_path: QWEN, plugins: [],
        system_prompt: s, permission_mode: acceptEdits, allowed_tools: [Write],
        disallowed_tools: [Bash], price: {input_per_mtok: 1, output_per_mtok: 2}}
initial_prompt: "${row.text}"
dataset:
"""
    + ROWS
    + LEAN_CRITERIA,
    "opencode": "task_id: opencode\n"
    + LEAN
    + """\
agent: {type: opencode, model: mock/other.yaml, env: {A: b}, cli_path: OPENCODE, plugins: [],
        system_prompt: s, disallowed_tools: [Bash], price: {input_per_mtok: 1, output_per_mtok: 2}}
initial_prompt: "${row.text}"
dataset:
"""
    + ROWS
    + LEAN_CRITERIA,
    "pi": "task_id: pi\n"
    + LEAN
    + """\
agent: {type: pi, model: mock/other.yaml, env: {A: b}, cli_path: PI_CLI, system_prompt: s,
        plugins: [{type: local, path: plug}], allowed_tools: [Write], disallowed_tools: [Bash],
        price: {input_per_mtok: 1, output_per_mtok: 2}}
initial_prompt: "${row.text}"
dataset:
"""
    + ROWS
    + LEAN_CRITERIA,
    "llm-tools": "task_id: llmtools\n"
    + LEAN
    + """\
agent: {type: llm, model: mock/echo, tools: [run_command, submit_answer], max_turns: 4,
        command_timeout: 30}
initial_prompt: "${row.text}"
dataset:
"""
    + ROWS
    + LEAN_CRITERIA,
    "qa": """\
task_id: qa
description: d
agent: {type: llm, model: mock/echo}
dataset:
  rows:
    - {sample_id: q1, story: s, question: "Capital?", meta: {k: x},
       answer: {correct_answers: [Paris], wrong_answers: [Rome]}}
    - {sample_id: q2, story: s, question: "Who?", meta: {k: y},
       answer: {correct_answers: [Ann], wrong_answers: []}}
qa:
  dataset_name: base
  group_by: [meta.k]
  judge: {model: mock/echo}
  templates: {option: "{letter}) {text}"}
  prompt_mutations:
    - {type: prefix, content: P}
    - {type: suffix, content: S}
    - {type: replace, pattern: Capital, replacement: Main city}
    - {type: template, variables: {x: y}}
success_criteria: [{type: qa, description: graded}]
""",
}

# Values that a type alone cannot produce (a file that must exist, a model that must start).
SPECIAL: dict[str, Any] = {
    "task_id": "renamed",
    "sandbox.driver": "bwrap",
    "sandbox.read_only": ["tpl2"],
    "reference.directory": "ref2",
    "success_criteria.15.reference_file": "t.py",
    "agent.model": "mock/other.yaml",
    "simulation.model": "mock/other.yaml",
    "qa.judge.model": "mock/other.yaml",
    "qa.judge.prompt": "Judge ${question}: ${response}",
    "qa.judge.prompt_file": "judge.txt",
    "agent.system_prompt_file": "prompt.txt",
    "initial_prompt_file": "prompt.txt",
    "agent.response_file": "out/answer.txt",
    "agent.json_schema": {"type": "object"},
    "agent.labels": ["pos", "neg", "other"],
    "agent.prompt_format": "completion",
    "agent.base_url": "http://127.0.0.1:9/v1",
    "agent.plugins.0.path": "plug2",
    "agent.cli_path.claude": str(bundled_claude() or "claude"),
    "agent.cli_path.codex": "codex-link",  # made absolute by the fixture
    "agent.cli_path.gemini": "gemini-link",  # made absolute by the fixture
    "agent.cli_path.qwen": "qwen-link",  # made absolute by the fixture
    "agent.cli_path.opencode": "opencode-link",  # made absolute by the fixture
    "agent.cli_path.pi": "pi-link",  # made absolute by the fixture
    "agent.claude_settings": {"k": "other"},
    "agent.sdk_options": {"effort": "low"},
    "agent.setting_sources": ["project", "local"],
    "agent.allowed_tools": ["Write", "Edit"],
    "agent.disallowed_tools": ["Bash", "WebFetch"],
    "agent.disallowed_tools.pi": ["Bash", "Edit"],  # pi has no WebFetch
    "agent.cli_model": "opus",
    "agent.system_prompt_mode": "replace",
    "agent.api_key_env": "ASSAY_TEST_KEY",
    "agent.tools": ["read_file", "submit_answer"],
    "sandbox.template_sources.0.path": "tpl2",
    "sandbox.mock_path_dirs": ["tpl2"],  # a folder beside the task file
    "sandbox.template_sources.0.mount_point": "m2",
    "sandbox.template_sources.1.files.0.path": "g.txt",
    "dataset.rows": [{"id": "z", "text": "zeta", "label": "pos", "s": "p", "part": "train"}],
    "dataset.paths": ["rows.jsonl"],
    "dataset.store": "stored",
    "dataset.store.qa": "stored_qa",
    "dataset.rows.qa": [
        {
            "sample_id": "z",
            "story": "s",
            "question": "q",
            "meta": {},
            "answer": {"correct_answers": ["a"], "wrong_answers": ["b"]},
        }
    ],
    "dataset.paths.qa": ["rows.qa.jsonl"],
    "dataset.id_field": "text",
    "dataset.id_field.qa": "sample_id",
    "dataset.stratify_field": "label",
    "dataset.split_field": "part",
    "dataset.cluster_field": "label",
    "dataset.cluster_field.qa": "story",
    "success_criteria.1.patterns.0.flags": "m",
    "success_criteria.1.patterns.0.pattern": "c+",
    "success_criteria.2.stdout_match": "contains",
    "success_criteria.2.expected_stdout": "ok",
    "success_criteria.3.expected_label": "neg",
    "success_criteria.3.allowed_labels": ["pos", "neg", "x"],
    "success_criteria.4.expected": "beta",
    "success_criteria.0.suite_thresholds": {"mean": 0.5},
    "success_criteria.1.suite_thresholds": {"mean": 0.5},
    "success_criteria.2.suite_thresholds": {"mean": 0.5},
    "success_criteria.3.suite_thresholds": {"accuracy": 0.5},
    "success_criteria.4.suite_thresholds": {"mean": 0.5},
    "success_criteria.6.flags": 16,
    "success_criteria.7.assertions.0.expression": "b.c",
    "success_criteria.7.assertions.0.expected": 2,
    "success_criteria.9.expected_skill": "",
    "success_criteria.9.suite_thresholds": {"recall.yes": 0.5},
    **{f"success_criteria.{i}.suite_thresholds": {"mean": 0.5} for i in (5, 6, 7, 8, 10, 11, 12)},
    "success_criteria.0.suite_thresholds.qa": {"accuracy": 0.5},
    "qa.group_by": ["meta.k", "prompt_type"],
    "qa.templates": {"option": "{letter}: {text}"},
    "qa.metrics_hook": "hook.py",
    "qa.dataset_name": "renamed",
    "qa.judge.base_url": "http://127.0.0.1:9/v1",
    "qa.judge.api_key_env": "ASSAY_TEST_KEY",
    "success_criteria.5.judge": "judge2.yaml",
    "success_criteria.6.model": "mock/other2.yaml",
    "success_criteria.7.model": "mock/other2.yaml",
    "success_criteria.6.verdict.labels": ["pos", "neg", "mid"],
    "success_criteria.6.verdict.pass_labels": ["neg"],
    "success_criteria.6.few_shot.0.verdict": "neg",
    "success_criteria.6.expected_label": "neg",
    "success_criteria.6.files": ["f.txt", "g.txt"],
    "success_criteria.7.verdict.max": 7.0,
}
TAGS = [
    ["llm", "command", "none", "claude-code", "codex"],
    [
        "file_exists",
        "file_check",
        "run_command",
        "classification_match",
        "response_match",
        "qa",
        "file_contains",
        "file_matches_regex",
        "json_check",
        "pytest",
        "import_check",
        "pylint_score",
        "skill_triggered",
        "command_executed",
        "tool_called",
        "commands_efficiency",
        "llm_judge",
    ],
    ["template_dir", "starter_files"],
    ["prefix", "suffix", "replace", "template"],
]


@dataclass(frozen=True)
class Leaf:
    """One settable leaf: its path in a base task, its field and the model that owns it."""

    base: str
    path: tuple[str, ...]
    owner: type[BaseModel]
    name: str
    info: FieldInfo

    @property
    def dotted(self) -> str:
        return ".".join(self.path)

    @property
    def key(self) -> str:
        """The path with list indexes, and for the qa base a marker."""
        return self.dotted + (".qa" if self.base == "qa" and self.dotted.endswith(
            "suite_thresholds") else "")  # fmt: skip


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


def _leaves(instance: BaseModel, base: str, prefix: tuple[str, ...]) -> Iterator[Leaf]:
    owner = type(instance)
    for name, info in owner.model_fields.items():
        if name in getattr(owner, "writer_only", ()):
            continue
        value = getattr(instance, name)
        path = (*prefix, name)
        if isinstance(value, BaseModel):
            yield from _leaves(value, base, path)
        elif isinstance(value, list) and value and isinstance(value[0], BaseModel):
            for index, item in enumerate(value):
                yield from _leaves(item, base, (*path, str(index)))
        elif value in (None, []) and _models_in(info.annotation):
            continue  # a block this base does not have: another base holds it
        else:
            yield Leaf(base, path, owner, name, info)


def _binaries(text: str) -> str:
    """A base task's CODEX, GEMINI, QWEN, OPENCODE, PI_CLI and CLAUDE_CLI placeholders as the
    project's CLIs."""
    for name, program in (
        ("OPENCODE", "opencode"),
        ("CODEX", "codex"),
        ("GEMINI", "gemini"),
        ("QWEN", "qwen"),
        ("PI_CLI", "pi"),
    ):
        text = text.replace(name, str(CODEX_BIN / program))
    return text.replace("CLAUDE_CLI", str(bundled_claude() or shutil.which("claude") or "claude"))


def _schema_fields(model: type[BaseModel], seen: set[type[BaseModel]]) -> set[tuple[str, str]]:
    """Every ``(model, field)`` of the spec reachable from ``model`` through annotations."""
    if model in seen:
        return set()
    seen.add(model)
    found = set()
    for name, info in model.model_fields.items():
        if name in getattr(model, "writer_only", ()):
            continue
        found.add((model.__name__, name))
        for inner in _models_in(info.annotation):
            found |= _schema_fields(inner, seen)
    return found


def _bounds(info: FieldInfo) -> tuple[float | None, float | None]:
    low = high = None
    for meta in info.metadata:
        if isinstance(meta, annotated_types.Ge | annotated_types.Gt):
            low = float(getattr(meta, "ge", None) or getattr(meta, "gt", 0))
        if isinstance(meta, annotated_types.Le | annotated_types.Lt):
            high = float(getattr(meta, "le", None) or getattr(meta, "lt", 0))
    return low, high


def _plain(annotation: Any) -> list[Any]:
    """The members of a union (``None`` dropped), ``Annotated`` unwrapped."""
    if get_origin(annotation) is typing.Annotated:
        return _plain(get_args(annotation)[0])
    if get_origin(annotation) in (typing.Union, types.UnionType):
        return [m for arg in get_args(annotation) if arg is not type(None) for m in _plain(arg)]
    return [annotation]


def different_value(leaf: Leaf, current: Any) -> Any:
    """A valid value for ``leaf`` that differs from ``current`` (its value in the base)."""
    for key in (f"{leaf.dotted}.{leaf.base}", leaf.key, leaf.dotted):
        if key in SPECIAL:
            return SPECIAL[key]
    if leaf.name == "type":  # switch to another member of the union
        group = next((tags for tags in TAGS if current in tags), [current, "unknown"])
        return next(tag for tag in group if tag != current)  # "unknown": refused
    for member in _plain(leaf.info.annotation):
        origin = get_origin(member)
        if origin is Literal:
            options = [o for o in get_args(member) if o != current]
            if options:
                return options[0]
        if member is bool or (member is typing.Any and isinstance(current, bool)):
            return not current
        if member in (int, float):
            low, high = _bounds(leaf.info)
            candidate = (current or 0) + 1 if member is int else ((current or 0.0) + 0.5)
            if high is not None and candidate > high:
                candidate = (low or 0) + (high - (low or 0)) / 4
            if low is not None and candidate <= low:
                candidate = low + 1
            return int(candidate) if member is int else float(candidate)
        if member is str:
            return f"{current}-changed" if current else "changed"
        if origin is list:
            (item,) = get_args(member) or (str,)
            if _plain(item)[0] is str:
                return [*(current or []), "added"]
        if origin is dict:
            return {**(current or {}), "added": "v"} if current else {"added": "v"}
    raise AssertionError(f"no value for {leaf.dotted} ({leaf.info.annotation}): add one to SPECIAL")


@pytest.fixture
def bases(tmp_path: Path) -> dict[str, Path]:
    write(tmp_path / "tpl" / "x.txt", "x")
    write(tmp_path / "tpl2" / "y.txt", "y")
    write(tmp_path / "ref" / "s.py", "x = 1\n")
    write(tmp_path / "ref" / "t.py", "x = 2\n")
    write(tmp_path / "ref2" / "s.py", "y = 2\n")
    write(tmp_path / "prompt.txt", "from the file ${row.text}")
    write(tmp_path / "judge.txt", "from the file: is ${response} right?")
    write(tmp_path / "other.yaml", "default: pos\n")
    write(tmp_path / "other2.yaml", "default: neg\n")
    write(tmp_path / "judge.yaml", "model: mock/other.yaml\nrubric: Is it right?\n")
    write(tmp_path / "judge2.yaml", "model: mock/other.yaml\nrubric: Is it good?\n")
    write(tmp_path / "hook.py", "def compute_metrics(records, results):\n    return {}\n")
    write(tmp_path / "plug" / "skills" / "s" / "SKILL.md", "---\nname: s\ndescription: d\n---\n")
    (tmp_path / "codex-link").symlink_to(CODEX_BIN / "codex")
    SPECIAL["agent.cli_path.codex"] = str(tmp_path / "codex-link")
    (tmp_path / "gemini-link").symlink_to(CODEX_BIN / "gemini")
    SPECIAL["agent.cli_path.gemini"] = str(tmp_path / "gemini-link")
    (tmp_path / "qwen-link").symlink_to(CODEX_BIN / "qwen")
    SPECIAL["agent.cli_path.qwen"] = str(tmp_path / "qwen-link")
    (tmp_path / "opencode-link").symlink_to(CODEX_BIN / "opencode")
    SPECIAL["agent.cli_path.opencode"] = str(tmp_path / "opencode-link")
    (tmp_path / "pi-link").symlink_to(CODEX_BIN / "pi")
    SPECIAL["agent.cli_path.pi"] = str(tmp_path / "pi-link")
    write(tmp_path / "plug2" / "skills" / "t" / "SKILL.md", "---\nname: t\ndescription: d\n---\n")
    write(tmp_path / "rows.jsonl", '{"id": "y", "text": "eta", "label": "neg", "s": "q", '
          '"part": "test"}\n')  # fmt: skip
    qa_row = {
        "sample_id": "y",
        "story": "s",
        "question": "q",
        "meta": {},
        "answer": {"correct_answers": ["a"], "wrong_answers": ["b"]},
    }
    write(tmp_path / "rows.qa.jsonl", json.dumps(qa_row) + "\n")
    with open_store(f"sqlite:///{tmp_path / 'store.db'}") as store:
        store.create_dataset("stored_qa", Schema({"story": "string", "question": "string",
                                                   "meta": "json", "answer": "json"}),
                             id_field="sample_id")  # fmt: skip
        store.add("stored_qa", [{**qa_row, "sample_id": "w"}])
        store.create_dataset("stored", Schema({"text": "string", "label": "string",
                                                "s": "string", "part": "string"}))  # fmt: skip
        store.add("stored", [{"id": "w", "text": "omega", "label": "pos", "s": "p",
                              "part": "train"}])  # fmt: skip
    STORE[0] = f"sqlite:///{tmp_path / 'store.db'}"
    return {name: write(tmp_path / f"{name}.yaml", _binaries(text))
            for name, text in BASES.items()}  # fmt: skip


@pytest.fixture
def probe_once(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The walks plan about 2,000 times; whether this machine makes a bwrap sandbox is asked
    by the first plan that needs one (for real), not by each (it took 10 of the walk's 54 s;
    the probe's own tests are in tests/sandbox/test_bwrap.py). The policies probed."""
    from assay.orchestration.planning import containment

    real, probed = containment.probe, []

    def once(policy: Any) -> None:
        if not probed:
            real(policy)
        probed.append(policy)

    monkeypatch.setattr(containment, "probe", once)
    return probed


def loaded_bases(bases: dict[str, Path]) -> dict[str, TaskDefinition]:
    plans = {name: build_plan([str(path)], PlanOptions()) for name, path in bases.items()}
    return {name: plan.tasks[0].loaded.definition for name, plan in plans.items()}


def all_leaves(bases: dict[str, Path]) -> list[Leaf]:
    found: dict[tuple[str, str], Leaf] = {}
    for name, definition in loaded_bases(bases).items():
        for leaf in _leaves(definition, name, ()):
            found.setdefault((name, leaf.dotted), leaf)
    return list(found.values())


def _containers(instance: BaseModel) -> Iterator[tuple[str, str]]:
    for name in type(instance).model_fields:
        value = getattr(instance, name)
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, BaseModel):
                yield type(instance).__name__, name
                yield from _containers(item)


def test_every_field_of_the_spec_is_reached_by_a_base_task(bases: dict[str, Path]) -> None:
    reached = {(leaf.owner.__name__, leaf.name) for leaf in all_leaves(bases)}
    for definition in loaded_bases(bases).values():
        reached |= set(_containers(definition))
    # gemini refuses every plugins value but [] (tests/agents/test_gemini.py), so no leaf
    missing = (
        _schema_fields(TaskDefinition, set())
        - reached
        - {
            ("GeminiAgent", "plugins"),
            ("QwenCodeAgent", "plugins"),  # qwen-code refuses them too
            ("OpenCodeAgent", "plugins"),  # and opencode
        }
    )
    assert not missing, f"add these fields to a base task: {sorted(missing)}"


def _value_at(data: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if data is None:
            return None
        data = data[int(part)] if isinstance(data, list) else data.get(part)
    return data


STORE = [""]
# one registry for the ~1,700 plans: its task model is made once, not once per plan
CRITERIA_REGISTRY = default_criteria()


def _plan(path: Path, overrides: tuple[Override, ...] = (), **options: Any) -> Plan:
    return build_plan([str(path)], PlanOptions(overrides=overrides, store_url=STORE[0],
                                               criteria=CRITERIA_REGISTRY,
                                               **options))  # fmt: skip


def _normal(value: Any) -> Any:
    return json.loads(json.dumps(value))


def check_effect(leaf: Leaf, value: Any, plan: Plan) -> None:
    """``value`` set at ``leaf`` is what the run will use."""
    planned = plan.tasks[0]
    if leaf.path[0] == "dataset":
        dataset = planned.loaded.definition.dataset
        assert dataset is not None
        assert _normal(getattr(dataset, leaf.path[1])) == _normal(value)
        expansion = planned.expansion
        if leaf.dotted == "dataset.sample_seed":
            assert expansion.selection is not None
            assert expansion.selection.stratified_seed == value
            assert not expansion.selection.seed_was_drawn
        if leaf.dotted in ("dataset.rows", "dataset.paths", "dataset.store"):
            assert [t.row_id for t in expansion.row_tasks] in (["z"], ["y"], ["w"])
        if leaf.dotted == "dataset.id_field":
            assert {t.row_id for t in expansion.row_tasks} <= {"alpha", "beta", "gamma", "delta",
                                                               "q1", "q2"}  # fmt: skip
        if leaf.dotted == "dataset.stratify_field":
            assert planned.request is not None and planned.request.stratify_field == "label"
        if leaf.dotted == "dataset.split_field":
            assert planned.request is not None and planned.request.split_field == "part"
        if leaf.dotted == "dataset.cluster_field":
            assert expansion.dataset_record is not None
            assert expansion.dataset_record.cluster_field == value
        return
    if leaf.dotted == "task_id":
        assert planned.expansion.row_tasks[0].task_id.startswith("renamed/")
        return
    item = plan.work_items()[0]
    resolved = item.resolve().model_dump(mode="json")
    if leaf.path[0] in ("initial_prompt", "success_criteria") and item.row_task.row:
        value = substitute_tree(value, item.row_task.row)  # as the row runs it
    if leaf.name in ("initial_prompt_file", "system_prompt_file", "prompt_file"):
        text = _value_at(resolved, (*leaf.path[:-1], leaf.name.removesuffix("_file")))
        assert text is not None and text.startswith("from the file")
        return
    got = _value_at(resolved, leaf.path)
    assert _normal(got) == _normal(value), f"{leaf.dotted}: the row-task runs with {got!r}"


def _settable(bases: dict[str, Path]) -> Iterator[tuple[Leaf, Any]]:
    definitions = loaded_bases(bases)
    for leaf in all_leaves(bases):
        current = _value_at(definitions[leaf.base].model_dump(mode="json"), leaf.path)
        yield leaf, different_value(leaf, current)


# about 1,700 plans, one per field of every base: minutes on a loaded machine
@pytest.mark.timeout(900)
def test_every_override_takes_effect_or_is_refused(
    bases: dict[str, Path], probe_once: list[object]
) -> None:
    checked = refused = 0
    for leaf, value in _settable(bases):
        overrides = [Override(leaf.path, value)]
        if leaf.dotted in ("dataset.sample_seed", "dataset.stratify_field"):
            overrides.insert(0, Override(("dataset", "sample_per_stratum"), 1))
        options: dict[str, Any] = {}
        if leaf.dotted == "dataset.split_field":
            from assay.orchestration.planning.expand import Selectors

            options["selectors"] = Selectors(split="train")
        if leaf.dotted == "skip":
            with pytest.raises(UserError, match="every task file was skipped"):
                _plan(bases[leaf.base], tuple(overrides))
            refused += 1
            continue
        if leaf.dotted == "tags":
            plan = _plan(bases[leaf.base], tuple(overrides), tags=("added",))
            assert plan.tasks, "--tags added selects the task the override tagged"
        try:
            plan = _plan(bases[leaf.base], tuple(overrides), **options)
        except TaskFileError as exc:
            # a refusal must say why, and name the override
            assert "-D" in exc.render() or "on the command line" in exc.render(), (
                leaf.dotted,
                exc.render(),
            )
            refused += 1
            continue
        check_effect(leaf, value, plan)
        checked += 1
    assert checked > 100  # the walk found the fields, not a handful
    assert probe_once  # the bwrap plans were checked for containment


def test_fields_accepted_with_a_warning_are_refused_when_overridden(
    bases: dict[str, Path],
) -> None:
    cases = 0
    for leaf in all_leaves(bases):
        owner = leaf.owner
        if leaf.path[-1] != next(iter(owner.model_fields)):
            continue  # once per model instance
        for name in getattr(owner, "coder_eval_only", {}):
            path = (*leaf.path[:-1], name)
            with pytest.raises(TaskFileError, match="would have no effect") as caught:
                _plan(bases[leaf.base], (Override(path, 1),))
            assert "does not implement" in caught.value.message
            cases += 1
    assert cases >= 20


def _experiment(tmp_path: Path, defaults: dict[str, Any], variant: dict[str, Any]) -> Path:
    document = {"experiment_id": "e", "defaults": defaults,
                "variants": [{"variant_id": "v", **variant}]}  # fmt: skip
    return write(tmp_path / "e.yaml", json.dumps(document))


@pytest.mark.parametrize("layer", ["defaults", "variant"])
def test_every_agent_and_limit_field_set_by_an_experiment_takes_effect(
    bases: dict[str, Path], tmp_path: Path, layer: str, probe_once: list[object]
) -> None:
    checked = 0
    definitions = loaded_bases(bases)
    for leaf, value in _settable(bases):
        if leaf.path[0] not in ("agent", "run_limits") or len(leaf.path) != 2:
            continue
        if leaf.name == "type":
            continue  # switching the agent: test_changing_agent_type_replaces_the_agent
        block = {leaf.path[0]: {leaf.path[1]: value}}
        if leaf.path[0] == "agent":
            block["agent"]["type"] = definitions[leaf.base].agent.type
        defaults, variant = (block, {}) if layer == "defaults" else ({}, block)
        experiment = _experiment(tmp_path, defaults, variant)
        try:
            plan = _plan(bases[leaf.base], experiment=str(experiment))
        except TaskFileError as exc:
            assert "variant 'v'" in exc.message, exc.render()
            continue
        resolved = plan.work_items()[0].resolve().model_dump(mode="json")
        task_value = _value_at(definitions[leaf.base].model_dump(mode="json", exclude_unset=True),
                               leaf.path)  # fmt: skip
        expected = task_value if layer == "defaults" and task_value is not None else value
        if isinstance(value, dict) and isinstance(task_value, dict):  # mappings merge
            expected = {**value, **task_value} if layer == "defaults" else {**task_value, **value}
        rivals = [other for group in ALTERNATIVES.get(leaf.path[:-1], ()) if leaf.name in group
                  for other in group - {leaf.name}]  # fmt: skip
        task_agent = definitions[leaf.base].model_dump(mode="json", exclude_unset=True)
        if layer == "defaults" and any(_value_at(task_agent, (*leaf.path[:-1], r)) is not None
                                       for r in rivals):  # fmt: skip
            expected = None  # the task file set an alternative, which beats the defaults
        if leaf.name == "system_prompt_file":
            text = resolved["agent"]["system_prompt"]
            task_prompt = _value_at(definitions[leaf.base].model_dump(mode="json",
                                    exclude_unset=True), ("agent", "system_prompt"))  # fmt: skip
            if layer == "defaults" and task_prompt is not None:
                assert text == task_prompt  # the task file beats the experiment's defaults
            else:
                assert text.startswith("from the file")
        else:
            assert _normal(_value_at(resolved, leaf.path)) == _normal(expected), leaf.dotted
        checked += 1
    assert checked > 30


def test_every_llm_agent_field_changes_what_the_model_is_sent(tmp_path: Path) -> None:
    """The runner's consumers of an ``llm`` agent: the request, the endpoint key, the price and
    the response file. Each field must change one of them."""
    base = LlmAgent(model="mock/echo")

    def used(agent: LlmAgent) -> Any:
        return (build_request(agent, "p"), model_key(agent, tmp_path), agent.price,
                agent.response_file)  # fmt: skip

    unchanged = []
    for name, info in LlmAgent.model_fields.items():
        if name in (
            "type",
            "system_prompt_file",
            "env_passthrough",
            "tools",
            "max_turns",
            "command_timeout",
            "tool_protocol",
        ):
            continue  # the tag; a file the loader reads into system_prompt (tested above);
            # the row's programs' environment, not the model's (tests/sandbox/test_environment.py);
            # the tool loop's (tests/agents/test_llm_tool_loop.py)
        leaf = Leaf("llm", ("agent", name), LlmAgent, name, info)
        models = {"price": {"input_per_mtok": 1, "output_per_mtok": 1},
                  "few_shot": [{"user": "u", "assistant": "a"}]}  # fmt: skip
        value = models.get(name) or different_value(leaf, getattr(base, name))
        changed = LlmAgent.model_validate({**base.model_dump(exclude_unset=True), name: value})
        if used(changed) == used(base):
            unchanged.append(name)
    assert not unchanged, f"llm agent fields that nothing reads: {unchanged}"


def test_every_judge_field_changes_how_the_judge_is_called(tmp_path: Path) -> None:
    base = QaJudge(model="mock/echo")

    model = cast(Model, object())  # a started model: the judge built on it is compared

    def used(judge: QaJudge) -> Any:
        settings = JudgeSettings.of(judge, model)
        return (judge_key(judge, tmp_path), settings, judge.check)

    unchanged = []
    for name, info in QaJudge.model_fields.items():
        if name == "prompt_file":  # the loader reads it into prompt (the override test)
            continue
        if name in ("judge", "asset"):  # a judge asset instead: tests/qa/test_judge_asset.py
            continue
        leaf = Leaf("qa", ("qa", "judge", name), QaJudge, name, info)
        value = different_value(leaf, getattr(base, name))
        changed = QaJudge.model_validate({**base.model_dump(), name: value})
        if used(changed) == used(base):
            unchanged.append(name)
    assert not unchanged, f"judge fields that nothing reads: {unchanged}"


def test_sample_seed_override_seeds_the_stratified_draw(bases: dict[str, Path]) -> None:
    """The issue's example: ``-D dataset.sample_seed=7`` was validated and then unused."""
    overrides = (Override(("dataset", "sample_per_stratum"), 1),
                 Override(("dataset", "sample_seed"), 7))  # fmt: skip
    first = _plan(bases["llm"], overrides).tasks[0].expansion
    second = _plan(bases["llm"], overrides).tasks[0].expansion
    assert first.selection is not None and first.selection.stratified_seed == 7
    assert [t.row_id for t in first.row_tasks] == [t.row_id for t in second.row_tasks]


def test_a_list_item_override_past_the_end_is_refused(bases: dict[str, Path]) -> None:
    with pytest.raises(TaskFileError, match="has 23 item\\(s\\), so there is no item 23"):
        _plan(bases["llm"], (Override(("success_criteria", "23", "weight"), 0),))


def test_strict_models_cover_the_spec() -> None:
    """Every user-written model is strict (an unknown field is an error, never dropped)."""
    for model in (TaskDefinition,):
        seen: set[type[BaseModel]] = set()
        _schema_fields(model, seen)
        loose = [m.__name__ for m in seen if not issubclass(m, StrictModel)]
        assert not loose


def test_model_flag_on_an_agent_without_a_model_is_refused_by_its_name(tmp_path: Path) -> None:
    path = write(
        tmp_path / "n.yaml",
        "task_id: n\ndescription: d\nagent: {type: none}\n"
        "dataset: {rows: [{id: a}]}\nsuccess_criteria: [{type: file_exists, path: x}]\n",
    )
    with pytest.raises(TaskFileError) as caught:
        _plan(path, (Override(("agent", "model"), "openai/x", flag="--model openai/x"),))
    assert caught.value.message == (
        "a Coder Eval field that assay does not implement yet; agent type 'none' runs no agent "
        "and calls no model, so --model openai/x would have no effect"
    )


@pytest.mark.parametrize("limit", ["max_turns", "max_tool_calls"])
def test_turn_limits_on_an_agent_that_takes_no_turns(tmp_path: Path, limit: str) -> None:
    """A task file's max_turns or max_tool_calls on a command agent is warned (Coder Eval
    files carry them); set by -D or an experiment it is refused, since it would have no
    effect."""
    path = write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: hi\n"
                 f"agent: {{type: command, command: cat}}\nrun_limits: {{{limit}: 3}}\n"
                 "success_criteria: [{type: response_match, expected: hi}]\n")  # fmt: skip
    plan = _plan(path)
    assert plan.warnings == [
        f"{plan.tasks[0].loaded.display}:5: run_limits.{limit}: run_limits.{limit} has no "
        "effect on agent type 'command', which takes no turns (it is enforced for the "
        "coding-agent CLIs, for an llm agent with tools, and for max_turns in dialog mode)"
    ]
    with pytest.raises(TaskFileError) as caught:
        _plan(path, (Override(("run_limits", limit), 5),))
    assert caught.value.hint == "set by -D on the command line; remove it there"
    experiment = _experiment(tmp_path, {"run_limits": {limit: 2}}, {})
    bare = write(tmp_path / "b.yaml", path.read_text().replace(f"run_limits: {{{limit}: 3}}\n", ""))
    with pytest.raises(TaskFileError, match=rf"variant 'v': run_limits\.{limit} has no effect"):
        _plan(bare, experiment=str(experiment))


def test_every_resolved_criterion_validates_again(bases: dict[str, Path], tmp_path: Path) -> None:
    """The reports read each row's resolved criteria (dumped whole, defaults included) back
    through the registry: every criterion of every base, and a Codex agent judge whose
    Claude Code fields are at their defaults, must validate again (a codex judge's report
    once crashed here)."""
    codex = write(tmp_path / "codex_judge.yaml", f"""\
task_id: cj
description: d
initial_prompt: p
agent: {{type: command, command: "true"}}
success_criteria:
  - type: agent_judge
    description: d
    prompt: p
    agent: {{type: codex, model: mock/echo, cli_path: "{CODEX_BIN / 'codex'}"}}
""")  # fmt: skip
    checked = 0
    for path in [*bases.values(), codex]:
        for item in _plan(path).work_items():
            written = item.resolve().model_dump(mode="json")["success_criteria"]
            again = CRITERIA_REGISTRY.validate(written)
            assert [c.type for c in again] == [c["type"] for c in written]
            checked += len(again)
    assert checked > 40
