"""The task file, as pydantic models (Coder Eval's format; ``reference/originals.md`` §1.1, §1.7).

``TaskDefinition`` is one YAML file. Fields that Coder Eval has and assay does not implement
yet are accepted with one warning each (``coder_eval_only``); any other unknown field is an
error with a suggestion.
"""

from __future__ import annotations

import os
import re
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    Field,
    SerializeAsAny,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from assay.spec.agent_base import AgentSpec, ModelFieldsSpec, TranscriptKind
from assay.spec.base import BaseUrl, Loc, StrictModel, UnionInfo, check_variable_names, no_nul
from assay.spec.code_criteria import ReferenceSpec
from assay.spec.coding_agents import ClaudeCodeAgent, CodexAgent
from assay.spec.criteria import LlmJudge, QaCriterion, check_relative_path
from assay.spec.criterion_base import CriterionSpec
from assay.spec.ids import ID_PATTERN, ID_RULE
from assay.spec.json_values import to_json_value
from assay.spec.price import ModelPrice
from assay.spec.qa import QaConfig
from assay.spec.record_cli import RecordCliRule, check_rules
from assay.spec.simulation import SimulationConfig

_NOT_USED = "assay's agents do not use it"
QA_GRADE = "the answer is correct (QA rules and judge)"


UNSET_VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
"""A ``$VAR`` or ``${VAR}`` that ``os.path.expandvars`` left as written (it is not set)."""


class AgentBase(AgentSpec):
    """Fields shared by the agent types that are not coding-agent CLIs (see
    :class:`~assay.spec.agent_base.AgentSpec` for ``env_passthrough`` and the capabilities).
    """

    env_passthrough: list[StrictStr] = Field(default_factory=list)

    _passthrough = field_validator("env_passthrough")(check_variable_names)

    coder_eval_only: ClassVar[Mapping[str, str]] = {
        "permission_mode": _NOT_USED,
        "allowed_tools": _NOT_USED,
        "disallowed_tools": _NOT_USED,
        "plugins": _NOT_USED,
        "setting_sources": _NOT_USED,
        "claude_settings": _NOT_USED,
        "sdk_options": _NOT_USED,
        "ignore_patterns": _NOT_USED,
        "context_window": _NOT_USED,
        "system_prompt_mode": _NOT_USED,
    }


class NoneAgent(AgentBase):
    """No agent runs; criteria grade the sandbox as ``pre_run`` and templates left it."""

    coder_eval_only: ClassVar[Mapping[str, str]] = {
        **AgentBase.coder_eval_only,
        "model": "agent type 'none' runs no agent and calls no model",
    }
    answers: ClassVar[bool] = False
    transcript: ClassVar[TranscriptKind] = "none"

    type: Literal["none"]


class CommandAgent(AgentBase):
    """Any program, run in the sandbox.

    The prompt arrives on stdin and in ``ASSAY_PROMPT``; stdout is the final response;
    the program is killed at ``run_limits.task_timeout``. ``command`` is a shell string or
    an argv list (no shell).
    """

    transcript: ClassVar[TranscriptKind] = "messages"
    prompt_variables: ClassVar[tuple[str, ...]] = ("ASSAY_PROMPT", "ASSAY_PROMPT_FILE")
    """The variables that carry the prompt to the program."""

    type: Literal["command"]
    command: StrictStr | list[StrictStr]
    env: dict[str, StrictStr] = Field(default_factory=dict)

    @property
    def program_env(self) -> dict[str, str]:
        """``env``."""
        return self.env

    @property
    def program_variables(self) -> list[str]:
        """``env``'s names and :attr:`prompt_variables`, sorted."""
        return sorted({*self.env, *self.prompt_variables})

    @field_validator("command")
    @classmethod
    def _not_empty(cls, value: str | list[str]) -> str | list[str]:
        if not value or (isinstance(value, str) and not value.strip()):
            raise ValueError("command is empty")
        if isinstance(value, list) and not value[0].strip():
            raise ValueError("command's program (its first item) is empty: name the program "
                             "to run, e.g. [python3, agent.py]")  # fmt: skip
        return no_nul(value, "command")  # type: ignore[no-any-return]

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        return no_nul(value, "env")  # type: ignore[no-any-return]


LlmToolName = Literal["run_command", "read_file", "write_file", "edit_file", "submit_answer"]
"""A built-in tool of the ``llm`` agent's tool loop (``agent.tools``)."""
LLM_TOOLS: tuple[str, ...] = typing.get_args(LlmToolName)
"""Every built-in tool name, in the order the model is offered them."""


class FewShot(StrictModel):
    """One worked example given to a chat model before the prompt."""

    user: StrictStr
    assistant: StrictStr


class LlmAgent(AgentBase, ModelFieldsSpec):
    """Send the prompt to a model and take its answer as the final response.

    ``prompt_format``: ``chat`` (messages with the system prompt and ``few_shot``) or
    ``completion`` (the prompt as plain text, no chat template; small models often score
    better this way). ``labels`` constrains the answer to one of a fixed set (``max_tokens`` is
    raised to fit the longest label, so a label is never cut off); ``json_schema``
    constrains it to JSON of that schema (both enforced by the server's structured output).
    ``response_file`` also writes the answer to that file in the sandbox. ``cache`` keeps
    answers in the response cache (``--cache`` turns it on for every model). ``price``
    overrides the price table (cost per row, ``run_limits.max_usd``).

    ``tools`` (names from :data:`LLM_TOOLS`) makes it assay's own tool-using agent: the
    model calls them through its native tool calling in the row's sandbox, for at most
    ``max_turns`` model calls (and ``run_limits.max_turns``/``max_tool_calls``), each
    ``run_command`` killed after ``command_timeout`` seconds
    (:mod:`assay.agents.tool_loop`); ``tool_protocol: text`` describes the tools in the
    prompt and reads ``<tool_call>`` blocks from the reply instead, for a model without native
    tool calling. Without ``tools`` it answers once.
    """

    type: Literal["llm"] = "llm"
    model: StrictStr = "local/smollm2"
    system_prompt: StrictStr | None = None
    system_prompt_file: StrictStr | None = None
    few_shot: list[FewShot] = Field(default_factory=list)
    prompt_format: Literal["chat", "completion"] = "chat"
    temperature: float = Field(default=0.0, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: int = Field(default=256, ge=1)
    stop: list[StrictStr] = Field(default_factory=list)
    seed: StrictInt | None = None
    labels: list[StrictStr] | None = Field(default=None, min_length=1)
    json_schema: dict[str, Any] | None = None
    base_url: BaseUrl | None = None
    api_key_env: StrictStr | None = None
    request_timeout: float = Field(default=120, gt=0)
    cache: bool = False
    price: ModelPrice | None = None
    extra_body: dict[str, Any] = Field(default_factory=dict)
    response_file: StrictStr | None = None
    tools: list[LlmToolName] | None = Field(default=None, min_length=1)
    max_turns: StrictInt | None = Field(default=None, ge=1)
    command_timeout: float = Field(default=120, gt=0)
    tool_protocol: Literal["native", "text"] = "native"

    @field_validator("response_file")
    @classmethod
    def _response_file(cls, value: str | None) -> str | None:
        value = check_relative_path(value)
        if value is not None and "${" not in value and (
                value.endswith(("/", "\\")) or Path(value).name in ("", ".")):  # fmt: skip
            raise ValueError(
                f"response_file '{value}' names a folder; name the file to write "
                "the answer to (answer.txt)"
            )
        return value

    @property
    def transcript(self) -> TranscriptKind:  # type: ignore[override]
        """``tool_calls`` with ``tools`` (every call is recorded), else ``messages``."""
        return "tool_calls" if self.tools else "messages"

    @property
    def takes_turns(self) -> bool:  # type: ignore[override]
        """With ``tools``: one model call per turn, tool calls between."""
        return bool(self.tools)

    @property
    def may_act(self) -> bool:
        """With a tool that writes files or runs commands (its sandbox is ``bwrap`` by
        default, as for a coding agent)."""
        return bool(set(self.tools or ()) & {"run_command", "write_file", "edit_file"})

    @property
    def needs_directory(self) -> bool:
        """With ``tools`` (they work in the sandbox), or to write ``response_file``: the
        answer alone needs no directory."""
        return bool(self.tools) or self.response_file is not None

    @property
    def dialog_problem(self) -> str | None:
        """A chat model continues the message history (with ``tools``, the tool loop's own
        messages, its calls and their results included); a completion prompt cannot."""
        if self.prompt_format == "completion":
            return ("prompt_format 'completion' sends one plain prompt and cannot continue a "
                    "conversation; use prompt_format: chat")  # fmt: skip
        return None

    @property
    def dialog_problem_field(self) -> str:
        return "prompt_format" if self.prompt_format == "completion" else "type"

    @model_validator(mode="after")
    def _consistent(self) -> LlmAgent:
        if self.labels and self.json_schema:
            raise ValueError("set either labels or json_schema, not both")
        if self.system_prompt and self.system_prompt_file:
            raise ValueError("set either system_prompt or system_prompt_file, not both")
        self._tools_consistent()
        if self.prompt_format == "completion" and (self.few_shot or self.system_prompt):
            raise ValueError(
                "prompt_format 'completion' sends the prompt as plain text: "
                "write the system prompt and examples into initial_prompt instead"
            )
        if "/" not in self.model:
            raise ValueError(
                f"model '{self.model}' must be named provider/name, e.g. local/smollm2, "
                "openai/gpt-4o-mini, mock/echo"
            )
        return self

    def _tools_consistent(self) -> None:
        if self.tools is None:
            # by value, not by fields set: a task dumped whole (task.json) reloads its defaults
            given = [name for name in ("command_timeout", "max_turns", "tool_protocol")
                     if getattr(self, name) != type(self).model_fields[name].default]  # fmt: skip
            if given:
                raise ValueError(f"{given[0]} bounds the tool loop: set tools too")
            return
        if len(set(self.tools)) != len(self.tools):
            raise ValueError("tools names a tool twice")
        if self.prompt_format == "completion":
            raise ValueError("tools need prompt_format: chat (native tool calling)")
        if self.labels or self.json_schema is not None:
            raise ValueError("tools cannot be combined with labels or json_schema: the "
                             "answer is given by submit_answer or the last reply")  # fmt: skip


_CODING_AGENT = (
    "use type 'command' to run its CLI (e.g. command: \"claude -p\"), "
    "or type 'llm' to have a model answer the prompt"
)
AGENTS_NOT_YET: Mapping[str, str] = {name: _CODING_AGENT for name in ["antigravity"]}
"""Coder Eval's agent types assay does not have yet, with what to use instead."""
AgentConfig = Annotated[
    NoneAgent | CommandAgent | LlmAgent | ClaudeCodeAgent | CodexAgent,
    Field(discriminator="type"),
    UnionInfo(noun="agent", not_yet=AGENTS_NOT_YET),
]
"""The built-in agent types; a registry's task model takes its own (users' agents too)."""


class TemplateDir(StrictModel):
    """Copy a folder (relative to the task file) into the sandbox, at ``mount_point``;
    ``path`` may name environment variables (``$VAR``, ``${VAR}``) and ``~``, expanded as
    Coder Eval expands template paths."""

    type: Literal["template_dir"]
    path: StrictStr
    mount_point: StrictStr | None = None

    _mount = field_validator("mount_point")(check_relative_path)

    def folder(self, base_dir: Path) -> Path:
        """The folder to copy: ``path`` with its variables expanded, relative to ``base_dir``.

        Raises:
            ValueError: ``path`` names a variable that is not set (named).
        """
        expanded = os.path.expanduser(os.path.expandvars(self.path))
        unset = UNSET_VARIABLE.search(expanded)
        if unset is not None:
            raise ValueError(f"template_dir {self.path} names ${unset.group(1)}, which is not set")
        folder = Path(expanded)
        return folder if folder.is_absolute() else base_dir / folder


class StarterFile(StrictModel):
    """One file written into the sandbox before the agent runs."""

    path: StrictStr
    content: StrictStr

    _path = field_validator("path")(check_relative_path)


class StarterFiles(StrictModel):
    """Write the given files into the sandbox."""

    type: Literal["starter_files"]
    files: list[StarterFile] = Field(min_length=1)


TemplateSource = Annotated[
    TemplateDir | StarterFiles,
    Field(discriminator="type"),
    UnionInfo(
        noun="template source",
        not_yet={"repo": "copy a checkout with template_dir, or clone it in pre_run"},
    ),
]


def located(loc: Loc, message: str) -> ValidationError:
    """A validation error at ``loc`` (a field of the task file) from a model's own check, so
    that the load error names that field and its line."""
    detail = InitErrorDetails(type=PydanticCustomError("value_error", message.replace("{", "(")
                                                       .replace("}", ")")),
                              loc=loc, input=None)  # fmt: skip
    return ValidationError.from_exception_data("TaskDefinition", [detail])


class DockerBuild(StrictModel):
    """Coder Eval's ``sandbox.docker.build``: how ``dockerfile_path`` is built.

    ``args``: ``--build-arg NAME=VALUE`` (``$VAR`` / ``${VAR}`` in a value expanded from
    the environment assay runs in; build arguments stay in the image's history, so pass no
    secret this way). ``extra_args``: more flags of the engine's ``build``, before the
    context (e.g. ``[--target, runtime]``). ``buildkit``: ``true`` / ``false`` sets
    ``DOCKER_BUILDKIT`` for the build (unset: the environment's). The image is tagged by
    the hash of the context, the arguments and the flags, so changing any of them builds
    it again. ``secrets`` (``--secret``) need BuildKit's builder, which assay does not
    drive: a task that lists one is refused."""

    buildkit: bool | None = None
    args: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    secrets: list[StrictStr] = Field(default_factory=list)
    extra_args: list[StrictStr] = Field(default_factory=list)

    @field_validator("secrets")
    @classmethod
    def _no_secrets(cls, value: list[str]) -> list[str]:
        if value:
            raise ValueError(
                "build secrets (--secret) need BuildKit's builder (buildx), which assay does "
                "not drive: remove them, and give the build what it needs through build.args "
                "(not for secrets: they stay in the image's history) or a file in the "
                "Dockerfile's folder"
            )
        return value

    @field_validator("args")
    @classmethod
    def _arg_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ValueError(f"build.args name {name!r} is not a variable name "
                                 "(letters, digits and _, not starting with a digit)")  # fmt: skip
        return value


class DockerConfig(StrictModel):
    """Coder Eval's ``sandbox.docker`` block: the image of a ``docker`` sandbox
    (:mod:`assay.sandbox.docker`), and which secret variables its programs receive.

    ``image``: an image the engine already has, by name (assay never pulls: ``docker pull``
    or ``docker load`` it first). ``dockerfile_path``: a Dockerfile, relative to the task
    file, built once (its folder is the build context, ``build`` how) and tagged by the
    hash of that folder's content, so an unchanged one is not built again; it wins over
    ``image``. ``engine``: ``docker`` or ``podman`` (default: the first found on ``PATH``).
    ``extra_mounts``: more host folders, ``HOST:CONTAINER`` or ``HOST:CONTAINER:rw`` (a
    relative ``HOST`` is relative to the task file), read-only unless marked ``rw``.
    ``env_passthrough`` and ``env_passthrough_extra`` name secret variables passed to the
    row's programs, like ``agent.env_passthrough`` (every variable that is not a secret
    passes anyway), on every driver.
    ``network``: ``none`` (assay's default: only the container's own loopback; a coding
    agent still reaches the model bridge) or ``bridge`` (the engine's bridge network, out
    through its NAT; the engine must have one). ``working_dir``: only ``auto``: the row's
    folder is at its host path in the container, so every path assay writes in a report
    is the same inside and out.
    ``agent_isolation`` (default ``true``): a coding agent runs in a container of its own
    that shows neither the task file's folder (its dataset, expected answers) nor
    ``extra_mounts``, and the task may not use ``run_command`` (a program the agent's
    files can steer, run with the task's folder in view) or ``extra_mounts``, as in Coder
    Eval; ``false`` shows both to the agent and allows both. No image needs the
    ``org.coder-eval.agent-isolation`` label: the boundary is made from outside the
    image."""

    coder_eval_only: ClassVar[Mapping[str, str]] = {}

    image: StrictStr | None = None
    dockerfile_path: StrictStr | None = None
    engine: Literal["docker", "podman"] | None = None
    extra_mounts: list[StrictStr] = Field(default_factory=list)
    env_passthrough: list[StrictStr] | None = None
    env_passthrough_extra: list[StrictStr] = Field(default_factory=list)
    network: Literal["bridge", "none"] | None = None
    working_dir: StrictStr | None = None
    build: DockerBuild = Field(default_factory=DockerBuild)
    agent_isolation: bool | None = None

    @field_validator("working_dir")
    @classmethod
    def _working_dir(cls, value: str | None) -> str | None:
        if value is not None and value != "auto":
            raise ValueError(
                f"working_dir {value!r}: assay mounts the row's folder at its host path, so "
                "the paths in its reports and criteria are the same inside the container and "
                "out; only 'auto' is accepted (remove the field, or write auto)"
            )
        return value

    @property
    def isolated(self) -> bool:
        """``agent_isolation``, ``true`` unless set ``false``."""
        return self.agent_isolation is not False

    @field_validator("env_passthrough", "env_passthrough_extra")
    @classmethod
    def _names(cls, value: list[str] | None) -> list[str] | None:
        return value if value is None else check_variable_names(value)

    @field_validator("extra_mounts")
    @classmethod
    def _mounts(cls, value: list[str]) -> list[str]:
        for item in value:
            parts = item.split(":")
            if len(parts) not in (2, 3) or not all(parts[:2]) or (
                    len(parts) == 3 and parts[2] not in ("ro", "rw")):  # fmt: skip
                raise ValueError(f"extra_mounts entry {item!r} is not HOST:CONTAINER, "
                                 "HOST:CONTAINER:ro or HOST:CONTAINER:rw")  # fmt: skip
            if not parts[1].startswith("/"):
                raise ValueError(f"extra_mounts entry {item!r}: the container path "
                                 f"{parts[1]!r} must be absolute")  # fmt: skip
        return value

    @property
    def passthrough(self) -> list[str]:
        """Both lists, in order."""
        return [*(self.env_passthrough or []), *self.env_passthrough_extra]


class SandboxLimits(StrictModel):
    """Limits of every process of a row, enforced by the ``bwrap`` driver (``setrlimit`` in
    the sandbox, before the program starts; each row runs as its own user when assay runs
    as root, so ``max_pids`` counts that row's processes and threads).

    ``max_pids``: processes and threads (``RLIMIT_NPROC``, Coder Eval's field);
    ``cpu_seconds``: CPU time of each process (``RLIMIT_CPU``; killed with ``SIGXCPU`` then
    ``SIGKILL``); ``max_file_size_mb``: the largest file a process may write
    (``RLIMIT_FSIZE``; a larger write fails with ``EFBIG``); ``max_open_files``: file
    descriptors per process (``RLIMIT_NOFILE``). ``max_output_mb`` holds on every driver:
    what is kept in memory of each output stream of a program the row runs (the agent
    command's, a ``pre_run``/``post_run`` command's, a criterion's); a stream that passes it
    is written whole to a file in the row's folder as it is read (``agent.stdout.log``,
    ``pre_run-1.stderr.log``, ``command-1.stdout.log``..., redacted like every file), never
    held in memory, and the kept text ends with a note naming the cut and the file.
    ``max_log_mb`` caps each such file (a runaway program cannot fill the disk either); the
    file then ends with a line naming the cut. ``max_memory_mb`` (MiB of memory for the row's
    processes together) and ``max_cpus`` (CPUs' worth of time, e.g. ``1.5``) are enforced by
    the ``docker`` driver (the engine's ``--memory`` and ``--cpus``), and on ``tempdir`` and
    ``bwrap`` by the row's own control groups where the machine gives them
    (:mod:`assay.sandbox.cgroups`); a row killed for memory ends ``ERROR`` naming the
    limit; where neither enforces them, ``assay plan`` warns.
    On ``docker``, ``max_pids`` counts the row's container's processes (``--pids-limit``);
    where the row has control groups of its own, its pids group holds it (on ``tempdir``
    too), and a row that fails after a fork was refused there ends naming the limit.
    """

    coder_eval_only: ClassVar[Mapping[str, str]] = {
        "timeout": "run_limits.task_timeout bounds the agent; pre_run, post_run and run_command "
        "have their own timeout",
        "max_disk_mb": "not enforced (use max_file_size_mb)",
    }

    max_pids: int = Field(default=1024, gt=0)
    cpu_seconds: int | None = Field(default=None, gt=0)
    max_file_size_mb: int = Field(default=1024, gt=0)
    max_open_files: int = Field(default=4096, ge=16)
    max_output_mb: float = Field(default=10, gt=0, le=1024)
    max_log_mb: float = Field(default=256, gt=0, le=1024 * 1024)
    # 6 MiB is the least Docker's --memory takes; 2**30 MiB (1 PiB) is past any machine,
    # short of where the byte count would overflow the kernel's 64 bits
    max_memory_mb: StrictInt | None = Field(default=None, ge=6, le=2**30)
    # 0.01: the kernel's least CFS quota (1 ms) per the 100 ms period, Docker's least --cpus
    max_cpus: StrictFloat | None = Field(default=None, ge=0.01, le=4096)  # not true, not "1"

    @property
    def max_output_bytes(self) -> int:
        """``max_output_mb`` in bytes (MiB: 1,048,576 bytes each)."""
        return int(self.max_output_mb * 1024 * 1024)

    @property
    def max_log_bytes(self) -> int:
        """``max_log_mb`` in bytes (MiB)."""
        return int(self.max_log_mb * 1024 * 1024)

    @model_validator(mode="after")
    def _log_holds_the_kept_part(self) -> SandboxLimits:
        if self.max_log_mb < self.max_output_mb:
            raise ValueError(
                f"max_log_mb ({self.max_log_mb:g}) is smaller than max_output_mb "
                f"({self.max_output_mb:g}): a stream's log holds the whole stream, so it needs "
                "at least what is kept in memory; raise max_log_mb or lower max_output_mb"
            )
        return self


SandboxDriver = Literal["tempdir", "bwrap", "docker"]


class SandboxConfig(StrictModel):
    """Where a row-task runs: a fresh folder filled from ``template_sources``.

    ``driver``: ``tempdir`` (a plain temporary folder: programs see the whole machine),
    ``bwrap`` (a bubblewrap sandbox around every program of the row:
    :mod:`assay.sandbox.bwrap`) or ``docker`` (a container per row, from ``docker.image`` or
    ``docker.dockerfile_path``: :mod:`assay.sandbox.docker`). Unset, it is ``bwrap`` for a
    coding agent that may write files or run commands, else ``tempdir``
    (:meth:`TaskDefinition.sandbox_driver`).
    ``limits``, ``network`` (let the row's programs reach the network, not only the model
    bridge) and ``read_only`` (more folders the programs may read, e.g. a tool installed
    in a home folder; relative to the task file) apply to the ``bwrap`` and ``docker``
    drivers.
    ``record_cli``: stand-in programs the row's programs find first on ``PATH``, which log
    every call to ``cli_mocks/calls.jsonl`` and answer from rules
    (:mod:`assay.spec.record_cli`; graded by ``cli_called``).
    ``mock_path_dirs``: folders of stand-in programs (relative to the task file, Coder
    Eval's field), copied into the row's ``.mock_path/N/`` and put first on the ``PATH`` of
    the agent and of every program a criterion runs, in the order given (after
    ``record_cli``'s shims), so ``kubectl`` or ``aws`` finds the stand-in, never the host's.
    """

    coder_eval_only: ClassVar[Mapping[str, str]] = {
        "python": "no per-row Python environment is built; the sandbox uses the host's",
        "node": "no per-row Node.js environment is built",
        "ignore_patterns": "sandboxes are not preserved by pattern",
    }

    driver: SandboxDriver | None = None
    template_sources: list[TemplateSource] | None = None
    docker: DockerConfig | None = None
    limits: SandboxLimits = Field(default_factory=SandboxLimits)
    network: bool = False
    read_only: list[StrictStr] = Field(default_factory=list)
    record_cli: list[RecordCliRule] = Field(default_factory=list)
    mock_path_dirs: list[StrictStr] | None = None

    _rules = field_validator("record_cli")(check_rules)

    @model_validator(mode="after")
    def _docker_image(self) -> SandboxConfig:
        docker = self.docker
        given = docker is not None and bool(docker.image or docker.dockerfile_path)
        if self.driver == "docker" and not given:
            raise ValueError("sandbox.driver docker needs an image: set sandbox.docker.image "
                             "(an image the engine has) or sandbox.docker.dockerfile_path (a "
                             "Dockerfile beside the task file)")  # fmt: skip
        return self


class RunLimits(StrictModel):
    """Limits per row-task: seconds (``task_timeout``), tokens, US dollars, turns
    (``max_turns``: enforced for the coding agents, which take turns) and tool calls
    (``max_tool_calls``: the tool calls the coding agent's model asks for over the whole row;
    the round that reaches it finishes, the next model call is refused, and the row is
    graded as it stands, as in Coder Eval). ``stop_early: false`` disarms every criterion's
    ``stop_early`` block (Coder Eval's kill switch); a row cut early passes when the weighted
    score of its armed criteria reaches ``stop_early_gate_threshold``."""

    coder_eval_only: ClassVar[Mapping[str, str]] = {
        "expected_turns": "not enforced",
        "turn_timeout": "task_timeout bounds the whole agent run",
        "max_input_tokens": "use max_total_tokens",
        "max_output_tokens": "use agent.max_tokens",
        "count_cached_input": "not supported",
        "count_cache_creation": "not supported",
    }

    task_timeout: float = Field(default=600, gt=0)
    max_turns: int | None = Field(default=None, gt=0)
    max_tool_calls: int | None = Field(default=None, gt=0)
    max_total_tokens: int | None = Field(default=None, gt=0)
    max_usd: float | None = Field(default=None, gt=0)
    stop_early: bool | None = None
    stop_early_gate_threshold: float = Field(default=1.0, gt=0, le=1)


class PreRunCommand(StrictModel):
    """A shell command run in the sandbox before the agent; failure ends the row ``ERROR``."""

    command: StrictStr
    _nul = field_validator("command")(lambda value: no_nul(value, "command"))
    timeout: float = Field(default=30, ge=1, le=300)
    fail_on_error: bool = True


class PostRunCommand(StrictModel):
    """A shell command run in the sandbox after grading; informational only."""

    command: StrictStr
    _nul = field_validator("command")(lambda value: no_nul(value, "command"))
    timeout: float = Field(default=30, ge=1, le=300)


class DatasetSpec(StrictModel):
    """The ``dataset:`` block: where the rows come from and how they are selected.

    Exactly one of ``rows`` (inline), ``paths`` (JSONL, CSV, Parquet or Arrow files, relative
    to the task file, concatenated in order) or ``store`` (a dataset in assay's store, at
    ``version``, or the latest version, resolved once when the run starts). See
    ``reference/000_5cd227a88a34738f.txt``.

    ``cluster_field`` ★ names the row field whose equal values make one cluster (questions
    that share a passage): every mean, pass rate and paired difference then gets a
    cluster-robust interval (:mod:`assay.metrics.clustered`). Every row must carry it (checked
    when the dataset is read). A ``qa:`` task clusters by the QA schema's ``story`` by default
    (a row with an empty story is its own cluster); a row's replicates are always one cluster.
    """

    rows: list[dict[str, Any]] | None = None
    paths: list[StrictStr] | None = None
    store: StrictStr | None = None
    version: StrictInt | None = Field(default=None, ge=1)
    id_field: StrictStr = "id"
    sample_per_stratum: StrictInt | None = Field(default=None, ge=1)
    stratify_field: StrictStr = "expected_skill"
    split_field: StrictStr = "split"
    sample_seed: StrictInt | None = None
    cluster_field: StrictStr | None = Field(default=None, min_length=1)

    @field_validator("rows")
    @classmethod
    def _json_rows(cls, rows: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        """YAML's dates, times and binaries as the JSON values a file's rows hold."""
        if rows is None:
            return None
        out = []
        for index, row in enumerate(rows):
            converted = {}
            for key, value in row.items():
                try:
                    converted[str(key)] = to_json_value(value)
                except ValueError as exc:
                    raise ValueError(f"dataset.rows[{index}].{key} {exc}") from None
            out.append(converted)
        return out

    @model_validator(mode="after")
    def _check_source(self) -> DatasetSpec:
        given = [n for n in ("paths", "rows", "store") if getattr(self, n) is not None]
        if not given:
            raise ValueError("Dataset must specify either 'paths' or 'rows' (or 'store')")
        if given == ["paths", "rows"]:
            raise ValueError("Dataset must specify only one of 'paths' or 'rows'")
        if len(given) > 1:
            raise ValueError("Dataset must specify only one of 'paths', 'rows' or 'store'")
        if self.paths is not None and len(self.paths) == 0:
            raise ValueError("Dataset.paths must be a non-empty list")
        if self.version is not None and self.store is None:
            raise ValueError("Dataset.version pins a store dataset; it needs 'store'")
        return self


class TaskDefinition(StrictModel):
    """One task file. With ``dataset`` it fans out into one row-task per row."""

    coder_eval_only: ClassVar[Mapping[str, str]] = {
        "expected_commands": "give the budget to a commands_efficiency criterion instead",
    }
    moved_fields: ClassVar[Mapping[str, str]] = {
        "max_turns": "run_limits.max_turns", "max_tool_calls": "run_limits.max_tool_calls",
        "task_timeout": "run_limits.task_timeout", "turn_timeout": "run_limits.turn_timeout",
    }  # fmt: skip
    writer_only: ClassVar[frozenset[str]] = frozenset({"suite_id", "row_id"})

    task_id: StrictStr
    description: StrictStr
    initial_prompt: StrictStr | None = None
    initial_prompt_file: StrictStr | None = None
    tags: list[StrictStr] = Field(default_factory=list)
    skip: StrictBool = False
    agent: AgentConfig = Field(default_factory=LlmAgent)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    run_limits: RunLimits = Field(default_factory=RunLimits)
    pre_run: list[PreRunCommand] = Field(default_factory=list)
    post_run: list[PostRunCommand] = Field(default_factory=list)
    repeats: StrictInt = Field(default=1, ge=1)
    success_criteria: list[SerializeAsAny[CriterionSpec]] = Field(min_length=1)
    """The criteria: each one's class comes from the criterion registry, which makes the
    model the loader validates with (:meth:`assay.criteria.CriterionRegistry.task_model`)."""
    dataset: DatasetSpec | None = None
    qa: QaConfig | None = None
    reference: ReferenceSpec | None = None
    simulation: SimulationConfig | None = None
    """Dialog mode (:mod:`assay.spec.simulation`): a simulated user talks with the agent."""
    suite_id: str | None = None
    row_id: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _qa_default_criterion(cls, data: Any) -> Any:
        """A ``qa:`` task without ``success_criteria`` is graded by the ``qa`` criterion; an
        empty ``qa:`` (YAML null) is the block with every default."""
        if isinstance(data, dict) and "qa" in data and data["qa"] is None:
            data = {**data, "qa": {}}
        qa = isinstance(data, dict) and data.get("qa") is not None
        if qa and "success_criteria" not in data:
            data = {**data, "success_criteria": [{"type": "qa", "description": QA_GRADE}]}
        return data

    @model_validator(mode="after")
    def _task_id(self) -> TaskDefinition:
        base = self.suite_id if self.suite_id is not None else self.task_id
        if not ID_PATTERN.fullmatch(base) or len(base) > 200:
            raise ValueError(f"task_id {base!r} must match {ID_PATTERN.pattern} ({ID_RULE})")
        if self.suite_id is not None and self.task_id != f"{self.suite_id}/{self.row_id}":
            raise ValueError("a row-task's task_id is <suite_id>/<row_id>")
        return self

    @field_validator("success_criteria")
    @classmethod
    def _some_weight(cls, value: list[CriterionSpec]) -> list[CriterionSpec]:
        """Weight 0 is informational: a task whose criteria all have it would pass every row
        on no evidence."""
        if all(c.weight == 0 for c in value):
            raise ValueError(
                f"every criterion has weight 0 ({len(value)} of {len(value)}), so no row "
                "could fail; give at least one criterion a positive weight (weight 0 only "
                "records a criterion)"
            )
        return value

    @model_validator(mode="after")
    def _reference_needed(self) -> TaskDefinition:
        needing = [i for i, c in enumerate(self.success_criteria)
                   if c.type == "reference_comparison"]  # fmt: skip
        if self.reference is None and needing:
            raise located(("success_criteria", needing[0], "type"),
                          "reference_comparison compares with the task's reference solution: "
                          "set reference.directory (the folder of the reference, relative to "
                          "the task file)")  # fmt: skip
        return self

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: list[str]) -> list[str]:
        for tag in value:
            if not tag or re.search(r"[\s,]", tag):
                raise ValueError(f"tag {tag!r} must be non-empty without spaces or commas")
        return value

    @model_validator(mode="after")
    def _qa_rules(self) -> TaskDefinition:
        graded_by_qa = any(isinstance(c, QaCriterion) for c in self.success_criteria)
        if self.qa is None:
            if graded_by_qa:
                raise ValueError("criterion 'qa' grades QA rows; it needs a qa: block")
            return self
        if self.is_row_task:
            return self
        if self.dataset is None:
            raise ValueError(
                "a qa: block needs a dataset of QA rows (dataset: paths, rows or store)"
            )
        if self.initial_prompt is not None or self.initial_prompt_file is not None:
            raise ValueError(
                "a qa: task builds each row's prompt from qa.templates; remove initial_prompt "
                "(override qa.templates.open / qa.templates.choice to change the prompt)"
            )
        if not self.agent.answers and self.dataset.store is None:
            raise ValueError(
                f"agent type '{self.agent.type}' gives no answers to grade; a qa: task needs an "
                "agent "
                "(the default is type llm with local/smollm2)"
            )
        if not graded_by_qa:
            raise ValueError(
                "a qa: task is graded by the 'qa' criterion; add {type: qa} to "
                "success_criteria (or omit success_criteria)"
            )
        return self

    @model_validator(mode="after")
    def _prompt_rules(self) -> TaskDefinition:
        if self.qa is not None:
            return self
        has_prompt = self.initial_prompt is not None or self.initial_prompt_file is not None
        if self.initial_prompt is not None and self.initial_prompt_file is not None:
            raise ValueError("set either 'initial_prompt' or 'initial_prompt_file', not both")
        if not self.agent.answers:
            if has_prompt:
                given = "initial_prompt" if self.initial_prompt is not None else (
                    "initial_prompt_file")  # fmt: skip
                raise located((given,), f"agent type '{self.agent.type}' runs no agent, so a "
                              "prompt would be ignored; remove initial_prompt or choose an "
                              "agent")  # fmt: skip
        elif not has_prompt and self.dialog is None:  # a simulated user may open the dialog
            raise ValueError("Either 'initial_prompt' or 'initial_prompt_file' must be set")
        return self

    @model_validator(mode="after")
    def _dialog_rules(self) -> TaskDefinition:
        """Dialog mode needs an agent that continues its session, and no live early stop
        (Coder Eval refuses it too: the dialog decides when the agent stops)."""
        if self.dialog is None:
            return self
        problem = self.agent.dialog_problem
        if problem is not None:
            raise located(("agent", self.agent.dialog_problem_field), f"simulation: {problem}")
        armed = [i for i, c in enumerate(self.success_criteria) if getattr(c, "stop_early", None)]
        if armed:
            raise located(
                ("success_criteria", armed[0], "stop_early"),
                f"simulation: early stop is not available in dialog mode (criterion "
                f"'{self.success_criteria[armed[0]].type}' sets stop_early); remove stop_early, "
                "or use simulation.stop_on_criteria_pass with check_criteria: every_turn",
            )
        return self

    @property
    def dialog(self) -> SimulationConfig | None:
        """The ``simulation:`` block when dialog mode is on (``enabled: true``), else
        ``None``."""
        simulation = self.simulation
        return simulation if simulation is not None and simulation.enabled else None

    def replicates(self, override: int | None = None) -> int:
        """Replicates per row-task: ``simulation.n_trials`` when dialog mode sets it (it
        beats ``repeats``, as in Coder Eval), else ``override`` (``--repeats``), else
        ``repeats``."""
        dialog = self.dialog
        if dialog is not None and "n_trials" in dialog.model_fields_set:
            return dialog.n_trials
        return override or self.repeats

    @model_validator(mode="after")
    def _gates_need_a_dataset(self) -> TaskDefinition:
        gated = [i for i, c in enumerate(self.success_criteria) if c.gates]
        if gated and self.dataset is None and self.suite_id is None:
            first = self.success_criteria[gated[0]]
            raise located(("success_criteria", gated[0], "suite_thresholds"),
                          "suite_thresholds are only valid on tasks that declare a dataset: "
                          f"criterion '{first.type}' sets them")  # fmt: skip
        return self

    @model_validator(mode="after")
    def _agent_isolation(self) -> TaskDefinition:
        docker = self.sandbox.docker
        if docker is None:
            return self
        driver = self.sandbox_driver
        if docker.agent_isolation and driver == "tempdir" and self.agent.takes_turns:
            raise located(("sandbox", "docker", "agent_isolation"),
                          f"a tempdir sandbox cannot keep the {self.agent.type} agent apart "
                          "from the task's folder and the host; set sandbox.driver: docker (or "
                          "bwrap, which hides the task's folder from a coding agent too), or "
                          "remove agent_isolation")  # fmt: skip
        if driver != "docker" or not self.agent.takes_turns or not docker.isolated:
            return self
        crossing: list[tuple[Loc, str]] = []
        if docker.extra_mounts:
            crossing.append((("sandbox", "docker", "extra_mounts"), "extra_mounts (shown to "
                             "whom? Coder Eval refuses them here too)"))  # fmt: skip
        crossing += [(("success_criteria", i, "type"), f"a {c.type} criterion (a program the "
                      "agent's files can steer, run with the task's folder in view; Coder Eval "
                      "refuses it here too)")
                     for i, c in enumerate(self.success_criteria) if c.runs_agent_code]  # fmt: skip
        if crossing:
            loc, what = crossing[0]
            raise located(loc, f"sandbox.docker.agent_isolation (on by default) keeps the "
                          f"{self.agent.type} agent apart from the task's own data, and {what} "
                          "would cross it; remove it, or set sandbox.docker.agent_isolation: "
                          "false (the agent then also sees the task's folder and "
                          "extra_mounts)")  # fmt: skip
        return self

    @model_validator(mode="after")
    def _docker_network(self) -> TaskDefinition:
        docker = self.sandbox.docker
        if docker is not None and docker.network is not None and self.sandbox.network:
            raise located(("sandbox", "docker", "network"),
                          f"sandbox.network: true (the host's network) and "
                          f"sandbox.docker.network: {docker.network} disagree; keep one of "
                          "them")  # fmt: skip
        return self

    @property
    def env_passthrough(self) -> frozenset[str]:
        """Secret variables the row's programs receive on purpose: ``agent.env_passthrough``
        and ``sandbox.docker.env_passthrough`` / ``env_passthrough_extra``."""
        docker = self.sandbox.docker
        return frozenset(self.agent.env_passthrough) | frozenset(
            docker.passthrough if docker else ()
        )

    def agent_graders(self) -> list[AgentSpec]:
        """The coding agents this task's criteria run to grade its rows (``agent_judge``)."""
        return [config for spec in self.success_criteria for config in spec.graders()]

    @property
    def credential_variables(self) -> frozenset[str]:
        """The variables this task names as model credentials (``agent.api_key_env``,
        ``qa.judge.api_key_env``, each ``llm_judge``'s ``api_key_env`` or its judge's, the
        ``api_key_env`` of an agent a criterion runs to grade): secrets whatever their names
        look like."""
        names = set(self.agent.credential_variables)
        endpoint = self.qa.judge.endpoint if self.qa is not None and self.qa.judge else None
        if endpoint is not None and endpoint.api_key_env:
            names.add(endpoint.api_key_env)
        for criterion in self.success_criteria:
            if isinstance(criterion, LlmJudge) and criterion.credential_variable:
                names.add(criterion.credential_variable)
            for grader in criterion.graders():
                names |= grader.credential_variables
        return frozenset(names)

    @property
    def sandbox_driver(self) -> SandboxDriver:
        """``sandbox.driver``, or by default ``bwrap`` for a coding agent that may write files
        or run commands and ``tempdir`` for every other agent."""
        if self.sandbox.driver is not None:
            return self.sandbox.driver
        if self.agent.may_act:
            return "bwrap"
        return "tempdir"

    @property
    def is_row_task(self) -> bool:
        """True for a task expanded from one dataset row."""
        return self.suite_id is not None


__all__ = [
    "AGENTS_NOT_YET",
    "ID_PATTERN",
    "LLM_TOOLS",
    "AgentConfig",
    "CommandAgent",
    "DatasetSpec",
    "DockerBuild",
    "DockerConfig",
    "LlmAgent",
    "LlmToolName",
    "NoneAgent",
    "PostRunCommand",
    "PreRunCommand",
    "RunLimits",
    "SandboxConfig",
    "SandboxDriver",
    "SandboxLimits",
    "StarterFiles",
    "TaskDefinition",
    "TemplateDir",
    "TemplateSource",
]
