"""The built-in tools of the ``llm`` agent's tool loop, run in the row's sandbox.

- ``run_command {command}``: a shell command in the sandbox's folder through
  :meth:`assay.sandbox.tempdir.Sandbox.run` (inside the bwrap jail or docker container when
  the row has one), killed after ``agent.command_timeout`` seconds (or the row's time left);
  each output stream is capped at ``sandbox.limits.max_output_mb`` (the rest goes to the
  row's ``tool-N`` logs) and the model reads the last :data:`OUTPUT_CHARS` characters.
- ``read_file {path}``: a text file's first :data:`OUTPUT_CHARS` characters.
- ``write_file {path, content}``: create or replace a file (and its folders).
- ``edit_file {path, old_string, new_string}``: replace the one occurrence of
  ``old_string`` (none or several is an error, as for Claude Code's ``Edit``).
- ``submit_answer {answer}``: the row's final response; ends the loop (handled by
  :mod:`assay.agents.tool_loop`).

Paths are relative to the sandbox; an absolute path, a ``..`` step or a symlink that leads
out is refused (:meth:`Sandbox.resolve`), and the last step of a path is never followed as a
symlink when written. A refused or failed call is a :class:`ToolRun` with ``is_error``: the
model reads it and goes on; nothing here raises for what the model asked.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.providers.base import Tool, ToolCall
from assay.results.secrets import clip_head, clip_tail
from assay.sandbox.tempdir import Sandbox, SandboxEscape

OUTPUT_CHARS = 30_000
"""Characters of a command's output or of a file the model reads back."""
EDIT_BYTES = 16 * 2**20
"""The largest file ``edit_file`` reads (bytes): a larger one is edited with ``run_command``
(the whole file is held in assay's own memory)."""

_PATH = {"type": "string", "description": "a path relative to the working directory"}
_DEFINITIONS: dict[str, Tool] = {
    "run_command": Tool(
        "run_command",
        "Run a shell command (/bin/sh -c) in the working directory; returns its exit code "
        "and output.",
        {"type": "object", "properties": {"command": {"type": "string"}},
         "required": ["command"]},
    ),
    "read_file": Tool(
        "read_file", "Read a text file.",
        {"type": "object", "properties": {"path": _PATH}, "required": ["path"]},
    ),
    "write_file": Tool(
        "write_file", "Create or overwrite a file with the given content.",
        {"type": "object", "properties": {"path": _PATH, "content": {"type": "string"}},
         "required": ["path", "content"]},
    ),
    "edit_file": Tool(
        "edit_file", "Replace the single occurrence of old_string in a file by new_string.",
        {"type": "object", "properties": {"path": _PATH, "old_string": {"type": "string"},
                                          "new_string": {"type": "string"}},
         "required": ["path", "old_string", "new_string"]},
    ),
    "submit_answer": Tool(
        "submit_answer", "Submit the final answer; this ends the task.",
        {"type": "object", "properties": {"answer": {"type": "string"}},
         "required": ["answer"]},
    ),
}  # fmt: skip


def tool_definitions(names: Sequence[str]) -> tuple[Tool, ...]:
    """The :class:`Tool` of each name (names from :data:`assay.spec.task.LLM_TOOLS`)."""
    return tuple(_DEFINITIONS[name] for name in names)


@dataclass(frozen=True)
class ToolRun:
    """What one tool call did: ``output`` (what the model reads), ``is_error``; a command's
    ``command`` and ``exit_code`` (``None``: killed at its timeout); a file tool's ``path``
    and ``change`` (``add`` or ``update``) when it changed one."""

    output: str
    is_error: bool = False
    command: str = ""
    exit_code: int | None = None
    path: str = ""
    change: str = ""


class ToolError(Exception):
    """A call the tool refuses (bad arguments, a path outside the sandbox, a missing file)."""


class SandboxTools:
    """The tools of one row, acting on ``sandbox``.

    Args:
        sandbox: the row's sandbox (its jail, output cap and logs included).
        offered: the tool names the model was given; a call of another is an error.
        env: the environment of ``run_command``'s programs.
        owner: the uid that owns the sandbox's files inside the jail (bwrap as root), given
            the files a tool writes; ``None``: the caller's.

    Attributes:
        commands: ``run_command`` calls so far (their logs are ``tool-N``).
        dropped: output bytes of the commands past ``sandbox.max_output_bytes``, not kept.
        logs: the names of the files such output was written to whole (in the row's folder).
    """

    def __init__(
        self, sandbox: Sandbox, *, offered: Sequence[str], env: dict[str, str], owner: int | None
    ) -> None:
        self.sandbox = sandbox
        self.offered = tuple(offered)
        self.env = env
        self.owner = owner
        self.commands = 0
        self.dropped = 0
        self.logs: list[str] = []

    async def call(self, call: ToolCall, *, timeout: float) -> ToolRun:
        """Run ``call`` (``timeout``: seconds a command may take); never raises for what
        the model asked."""
        if call.name not in self.offered or call.name == "submit_answer":
            offered = ", ".join(self.offered) or "none"
            return ToolRun(f"error: no tool named '{call.name}' (tools: {offered})", True)
        arguments = call.input
        try:
            if not isinstance(arguments, dict):
                raise ToolError(f"the arguments must be a JSON object, got: {arguments!r}")
            if call.name == "run_command":
                return await self._run(_text(arguments, "command"), timeout)
            if call.name == "read_file":
                return self._read(_text(arguments, "path"))
            if call.name == "write_file":
                return self._write(_text(arguments, "path"), _text(arguments, "content"))
            return self._edit(arguments)
        except ToolError as exc:
            return ToolRun(f"error: {exc}", True)

    async def _run(self, command: str, timeout: float) -> ToolRun:
        self.commands += 1
        # agent=True: the task folder (the dataset, its answers) hidden, as from a CLI's
        result = await self.sandbox.run(command, env=self.env, timeout=timeout,
                                        log_name=f"tool-{self.commands}", agent=True)  # fmt: skip
        self.dropped += result.dropped
        self.logs += [path.name for path in result.logs]
        if result.timed_out:
            head = f"killed after {round(timeout, 2):g} s"
        else:
            head = f"exit code {result.exit_code}"
        output = result.shown_stdout + (f"\n[stderr]\n{result.stderr}" if result.stderr else "")
        return ToolRun(f"{head}\n{clip_tail(output, OUTPUT_CHARS)}", result.exit_code != 0,
                       command=command, exit_code=result.exit_code)  # fmt: skip

    def _path(self, relative: str) -> Path:
        try:
            return self.sandbox.resolve(relative)
        except SandboxEscape as exc:
            raise ToolError(str(exc)) from None

    def _read(self, relative: str) -> ToolRun:
        path = self._path(relative)
        try:
            with os.fdopen(_open_file(path, relative, os.O_RDONLY), "rb") as handle:
                data = handle.read(4 * OUTPUT_CHARS + 1)  # 4 bytes a character, and one more
        except OSError as exc:
            raise ToolError(f"cannot read '{relative}': {exc.strerror or exc}") from None
        if b"\0" in data[:8192]:  # git's test for a binary file
            raise ToolError(f"'{relative}' is a binary file, not text: look at it with "
                            "run_command (od, xxd, file)")  # fmt: skip
        # past 4 * OUTPUT_CHARS bytes the text has more than OUTPUT_CHARS characters, so
        # clip_head cuts and marks it
        return ToolRun(clip_head(data.decode("utf-8", errors="replace"), OUTPUT_CHARS))

    def _write(self, relative: str, content: str) -> ToolRun:
        path = self._path(relative)
        existed = path.exists()
        self._put(path, relative, content)
        return ToolRun(f"wrote {len(content.encode('utf-8'))} bytes to {relative}",
                       path=relative, change="update" if existed else "add")  # fmt: skip

    def _edit(self, arguments: dict[str, Any]) -> ToolRun:
        relative = _text(arguments, "path")
        old, new = _text(arguments, "old_string"), _text(arguments, "new_string")
        path = self._path(relative)
        try:
            with os.fdopen(_open_file(path, relative, os.O_RDONLY), "rb") as handle:
                data = handle.read(EDIT_BYTES + 1)
            text = data.decode("utf-8")
        except OSError as exc:  # its strerror: the host's path of the sandbox is not the model's
            raise ToolError(f"cannot read '{relative}': {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise ToolError(f"'{relative}' is not UTF-8 text: edit it with run_command") from None
        if len(data) > EDIT_BYTES:
            raise ToolError(f"'{relative}' is over {EDIT_BYTES // 2**20} MiB: edit it with "
                            "run_command (sed, a script)")  # fmt: skip
        found = text.count(old) if old else 0
        if found != 1:
            raise ToolError(f"old_string occurs {found} times in '{relative}'; it must occur "
                            "exactly once (give more context)")  # fmt: skip
        self._put(path, relative, text.replace(old, new, 1))
        return ToolRun(f"edited {relative}", path=relative, change="update")

    def _put(self, path: Path, relative: str, content: str) -> None:
        """Write ``content`` at ``path`` without following a symlink there, making its
        folders (owned by :attr:`owner`)."""
        try:
            made = [p for p in reversed(path.parents) if p.is_relative_to(self.sandbox.root)
                    and not p.exists()]  # fmt: skip
            path.parent.mkdir(parents=True, exist_ok=True)
            descriptor = _open_file(path, relative, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW)
            os.ftruncate(descriptor, 0)
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(content)
            if self.owner is not None:
                for owned in [*made, path]:
                    os.lchown(owned, self.owner, self.owner)
        except OSError as exc:
            raise ToolError(f"cannot write '{relative}': {exc.strerror or exc}") from None


def _open_file(path: Path, relative: str, flags: int) -> int:
    """A descriptor of the regular file at ``path`` opened with ``flags``, never waiting: a
    FIFO the agent made (``mkfifo``) blocked ``open`` in assay's own process, and with it
    every row of the run, past every timeout.

    Raises:
        ToolError: it is not a regular file (a FIFO, a socket, a device, a folder).
        OSError: it cannot be opened (a FIFO for writing no one reads: ``ENXIO``).
    """
    descriptor = os.open(path, flags | os.O_NONBLOCK, 0o644)
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file (a FIFO or a device)"
        raise ToolError(f"'{relative}' is {kind}: look at it with run_command")
    os.set_blocking(descriptor, True)
    return descriptor


def _text(arguments: dict[str, Any], key: str) -> str:
    value = arguments.get(key)
    if key not in arguments:
        raise ToolError(f"argument '{key}' (a string) is missing")
    if not isinstance(value, str):
        shown = clip_head(json.dumps(value, ensure_ascii=False, default=str), 200)
        raise ToolError(f"argument '{key}' must be a string, not {shown}")
    if "\x00" in value and key in ("path", "command"):
        raise ToolError(f"argument '{key}' holds a NUL character (\\u0000), which no "
                        f"{'file name' if key == 'path' else 'command'} can hold")  # fmt: skip
    return value


__all__ = ["OUTPUT_CHARS", "SandboxTools", "ToolError", "ToolRun", "tool_definitions"]
