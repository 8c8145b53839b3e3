"""``mock/...``: scripted, deterministic answers, for tests and for trying a task file offline.

- ``mock/echo`` answers with the prompt (the last user message, or the completion prompt).
- ``mock/<file>`` (YAML or JSON, relative to the task file, else to the working directory)
  answers by rules::

      replies:
        - match: "fantastic|love"     # a regex searched in the prompt
          reply: positive
        - match: "server down"
          error: "HTTP 503"           # fail this call (the row ends ERROR)
          status: 503                 # optional: an HTTP status makes it a transient error,
                                      # retried like a real endpoint's (429 = rate limited)
        - match: "Write the string '(\\w+)'"
          steps:                      # a tool-using conversation, one step per model turn
            - tool: Write             # the first request of the conversation
              input: {file_path: out.txt, content: "${match.1}"}
            - tools:                  # after the first tool result: two calls at once
                - {tool: Bash, input: {command: "cat out.txt"}}
                - {tool: Read, input: {file_path: "${sandbox}/out.txt"}}
              text: "Checking."       # optional text before the calls
            - reply: Done.            # after those results: the final answer
      default: negative               # when no rule matches; absent = an error

The prompt a rule matches is the user message that opened the current exchange
(:meth:`ModelRequest.exchange`), without the ``<system-reminder>`` blocks Claude Code adds;
``search: request`` searches the whole request instead (system prompt, every message, tool
calls and results: what the agent was given, e.g. a ``CLAUDE.md`` or a skill list). The step
is the number of assistant turns since that message, so a coding agent's requests walk
through ``steps`` while a plain prompt gets step 0. In a
reply, a tool input or an error, ``${row.<field>}`` is the row's value, ``${sandbox}`` the
row's sandbox folder (both given by the bridge or the ``llm`` agent), ``${match.N}`` the
``N``-th group of the rule's regex (``${match.0}`` the whole match). Any step or rule may
add ``delay: SECONDS`` (wait before answering) and ``fail: {status, times, retry_after}``
(the first ``times`` calls of that turn fail with that HTTP status before it answers: a
scripted 429 storm).

A label constraint is honoured like a real server would: a reply outside the labels is an
error naming it. Token usage counts whitespace-separated words.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from assay.errors import ModelError, UsageError
from assay.providers.base import Choice, ModelRequest, ModelResponse, ToolCall, Usage
from assay.providers.retry import TransientModelError, is_retryable_status
from assay.spec.source import parse_yaml

_VARIABLE = re.compile(r"\$\{(row\.[A-Za-z_][A-Za-z0-9_]*|sandbox|match\.\d+)\}")


@dataclass(frozen=True)
class Fail:
    """The first ``times`` calls of a turn fail with HTTP ``status``."""

    status: int
    times: int
    retry_after: float | None = None


@dataclass(frozen=True)
class MockStep:
    """One scripted answer: text, tool calls (name, input), or an error; optional delay and
    transient failures."""

    reply: str | None = None
    calls: tuple[tuple[str, Any], ...] = ()
    error: str | None = None
    status: int | None = None
    delay: float = 0.0
    fail: Fail | None = None


@dataclass(frozen=True)
class MockRule:
    """Answer with ``steps[turn]`` when ``match`` is found in the prompt; a rule built with
    ``reply`` or ``error`` alone has that one step."""

    match: re.Pattern[str]
    reply: str | None = None
    error: str | None = None
    steps: tuple[MockStep, ...] = ()
    search: Literal["prompt", "request"] = "prompt"

    def __post_init__(self) -> None:
        if not self.steps:
            object.__setattr__(self, "steps", (MockStep(reply=self.reply, error=self.error),))


@dataclass
class _Call:
    """What one request resolved to."""

    step: MockStep
    groups: tuple[str, ...]
    key: tuple[Any, ...]


class MockModel:
    """A model that answers from a script, without a network.

    Args:
        name: the assay name (``mock/echo`` or ``mock/<file>``).
        rules: tried in order; the first whose pattern is found answers.
        default: the reply when no rule matches; ``None`` makes that an error.
        echo: answer with the prompt itself.
    """

    def __init__(
        self,
        *,
        name: str,
        rules: list[MockRule] | None = None,
        default: str | None = None,
        echo: bool = False,
    ) -> None:
        self.name = name
        self.rules = rules or []
        self.default = default
        self.echo = echo
        self.calls = 0
        self._failures: dict[tuple[Any, ...], int] = {}
        self.served_by = ""  # a script's content hash (the response cache's key holds it)

    async def start(self) -> None:
        """Nothing to start."""

    async def aclose(self) -> None:
        """Nothing to close."""

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Answer from the script; see the module docstring.

        Raises:
            ModelError: a scripted error, no matching rule, a step past the script's end, an
                unknown ``${...}`` variable, or a reply outside the label constraint.
            TransientModelError: a scripted ``status`` or ``fail``.
        """
        self.calls += 1
        prompt, turn = request.exchange()
        prompt = _without_reminders(prompt)
        if self.echo:
            return self._checked(request, prompt, ())
        call = self._resolve(prompt, turn, request)
        step = call.step
        if step.delay:
            await asyncio.sleep(step.delay)
        self._maybe_fail(step, call.key)
        variables = {**request.script_vars, **{f"match.{i}": g for i, g in enumerate(call.groups)}}
        if step.error is not None:
            message = f"{self.name}: scripted error: {_fill(step.error, variables, self.name)}"
            if step.status is not None and is_retryable_status(step.status):
                raise TransientModelError(message, status=step.status)
            raise ModelError(message)
        text = _fill(step.reply or "", variables, self.name)
        # the assistant turns of the whole conversation (this exchange's and every earlier
        # one's), so a call id is never reused when a dialog's agent resumes its session
        turn = sum(1 for m in request.messages or () if m.role == "assistant")
        calls = tuple(self._tool_call(f"call_mock_{turn + 1}_{position + 1}", n, i, variables)
                      for position, (n, i) in enumerate(step.calls))  # fmt: skip
        return self._checked(request, text, calls)

    def _checked(
        self, request: ModelRequest, text: str, calls: tuple[ToolCall, ...]
    ) -> ModelResponse:
        """The response, refused as a real server would when it breaks the label set."""
        if isinstance(request.constraint, Choice) and text.strip() not in request.constraint.labels:
            raise ModelError(
                f"{self.name}: scripted reply {text!r} is not one of the labels "
                f"{list(request.constraint.labels)}"
            )
        return self._response(request, text, calls)

    def _resolve(self, prompt: str, turn: int, request: ModelRequest) -> _Call:
        for index, rule in enumerate(self.rules):
            found = rule.match.search(_whole(request) if rule.search == "request" else prompt)
            if found is None:
                continue
            if turn >= len(rule.steps):
                raise ModelError(
                    f"{self.name}: replies[{index}] scripts {len(rule.steps)} turn(s); the "
                    f"conversation asked for turn {turn + 1} (add a step, or end the "
                    "conversation with a reply)"
                )
            groups = (found.group(0), *(g or "" for g in found.groups()))
            return _Call(rule.steps[turn], groups, (index, turn, prompt))
        if self.default is None:
            raise ModelError(f"{self.name}: no scripted reply matches the prompt")
        return _Call(MockStep(reply=self.default), (), ("default", turn, prompt))

    def _maybe_fail(self, step: MockStep, key: tuple[Any, ...]) -> None:
        if step.fail is None:
            return
        seen = self._failures.get(key, 0)
        if seen < step.fail.times:
            self._failures[key] = seen + 1
            message = (
                f"{self.name}: scripted HTTP {step.fail.status} ({seen + 1} of {step.fail.times})"
            )
            if not is_retryable_status(step.fail.status):  # a 400 is not retried, as for real
                raise ModelError(message)
            raise TransientModelError(
                message, status=step.fail.status, retry_after=step.fail.retry_after
            )

    def _tool_call(
        self, call_id: str, name: str, value: Any, variables: dict[str, str]
    ) -> ToolCall:
        """A scripted tool call; its id names its turn and place (``call_mock_2_1``: the
        first call of the conversation's second assistant turn), so a conversation's ids
        never depend on the other rows that share the script, nor repeat in a dialog."""
        filled = _fill_value(value, variables, self.name)
        if isinstance(filled, str):
            return ToolCall(call_id, name, filled, kind="custom")
        return ToolCall(call_id, name, json.dumps(filled, ensure_ascii=False))

    def _response(
        self, request: ModelRequest, text: str, calls: tuple[ToolCall, ...]
    ) -> ModelResponse:
        words = len(_whole(request).split())
        produced = len(text.split()) + sum(len(c.arguments.split()) for c in calls)
        return ModelResponse(
            text=text,
            usage=Usage(input_tokens=words, output_tokens=produced),
            finish_reason="tool_calls" if calls else "stop",
            model=self.name,
            tool_calls=calls,
        )


_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>\s*", re.DOTALL)


def _without_reminders(text: str) -> str:
    """The prompt without the ``<system-reminder>`` blocks Claude Code puts around it."""
    return _REMINDER.sub("", text).strip() if "<system-reminder>" in text else text


def _whole(request: ModelRequest) -> str:
    """Every text of the request: messages, tool calls' arguments, tool results."""
    if request.prompt is not None:
        return request.prompt
    parts: list[str] = []
    for message in request.messages or ():
        parts.append(message.content)
        parts.extend(call.arguments for call in message.tool_calls)
        parts.extend(result.output for result in message.tool_results)
    return "\n".join(parts)


def _fill(text: str, variables: dict[str, str], name: str) -> str:
    def value(found: re.Match[str]) -> str:
        key = found.group(1)
        if key not in variables:
            known = ", ".join(sorted(variables)) or "none"
            raise ModelError(f"{name}: the script uses ${{{key}}}, which this call does not "
                             f"have (known: {known})")  # fmt: skip
        return variables[key]

    return _VARIABLE.sub(value, text)


def _fill_value(value: Any, variables: dict[str, str], name: str) -> Any:
    if isinstance(value, str):
        return _fill(value, variables, name)
    if isinstance(value, dict):
        return {k: _fill_value(v, variables, name) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill_value(v, variables, name) for v in value]
    return value


def script_path(name: str, base_dir: Path) -> Path:
    """Where the script of ``mock/<file>`` is read from: ``file`` relative to ``base_dir``,
    else to the working directory, else absolute (it may not exist)."""
    rest = name.partition("/")[2]
    path = Path(rest) if Path(rest).is_absolute() else base_dir / rest
    if not path.is_file() and (Path.cwd() / rest).is_file():
        path = Path.cwd() / rest
    return path


def load_mock(name: str, base_dir: Path) -> MockModel:
    """Build ``mock/echo`` or ``mock/<file>`` (``file`` relative to ``base_dir``, else to the
    working directory, else absolute).

    Raises:
        UsageError: the script file is missing, not UTF-8, or not a script's shape.
        TaskFileError: the script is not valid YAML or repeats a key (with its line).
    """
    rest = name.partition("/")[2]
    if rest == "echo":
        return MockModel(name=name, echo=True)
    path = script_path(name, base_dir)
    if not path.is_file():
        here = Path.cwd() / rest
        tried = f"{path}" if Path(rest).is_absolute() or here == path else f"{path} (nor {here})"
        raise UsageError(
            f"mock script not found: {tried}",
            hint="use mock/echo, or mock/<file.yaml> with replies: [{match, reply}] and default "
            "(the file is looked for beside the task file, then in the working directory)",
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"mock script {path} is not UTF-8 text ({exc.reason})", file=path
        ) from None
    model = _from_data(name, parse_yaml(text, path=path).data, path)
    model.served_by = "script " + hashlib.sha256(text.encode("utf-8")).hexdigest()
    return model


def _from_data(name: str, data: Any, path: Path) -> MockModel:
    if not isinstance(data, dict) or not isinstance(data.get("replies", []), list):
        raise UsageError(
            "a mock script is a mapping with 'replies' (a list) and 'default'", file=path
        )
    unknown = sorted(set(data) - {"replies", "default"})
    if unknown:
        raise UsageError(f"unknown key(s) {unknown}: a mock script has 'replies' and "
                         "'default'", file=path)  # fmt: skip
    rules: list[MockRule] = []
    for index, item in enumerate(data.get("replies") or []):
        where = f"replies[{index}]"
        if not isinstance(item, dict) or "match" not in item:
            raise UsageError(f"{where} needs 'match' and one of 'reply', 'error' or 'steps'",
                             file=path)  # fmt: skip
        try:
            pattern = re.compile(str(item["match"]))
        except re.error as exc:
            raise UsageError(f"{where}.match is not a regex: {exc}", file=path) from None
        search = item.get("search", "prompt")
        if search not in ("prompt", "request"):
            raise UsageError(f"{where}.search is 'prompt' (the default) or 'request'", file=path)
        rest = {k: v for k, v in item.items() if k != "search"}
        rules.append(MockRule(pattern, steps=_steps(rest, where, path), search=search))
    return MockModel(name=name, rules=rules, default=_text(data, "default", "default", path))


_STEP_KEYS = {"reply", "error", "status", "tool", "input", "tools", "text", "delay", "fail"}


def _steps(item: dict[str, Any], where: str, path: Path) -> tuple[MockStep, ...]:
    rest = {k: v for k, v in item.items() if k != "match"}
    if "steps" in rest:
        extra = sorted(set(rest) - {"steps"})
        steps = rest["steps"]
        if extra:
            named = ", ".join(extra)
            raise UsageError(f"{where}: {named} cannot stand beside steps (a rule with steps "
                             "scripts each turn in its own step)", file=path,
                             hint=f"move {named} into the step(s) it belongs to: "
                             f"steps: [{{reply: …, {extra[0]}: …}}]")  # fmt: skip
        if not isinstance(steps, list) or not steps:
            raise UsageError(f"{where}.steps must be a non-empty list", file=path)
        return tuple(_step(s, f"{where}.steps[{i}]", path) for i, s in enumerate(steps))
    return (_step(rest, where, path),)


def _step(item: Any, where: str, path: Path) -> MockStep:
    if not isinstance(item, dict):
        raise UsageError(f"{where} must be a mapping (reply, tool/input, tools or error)",
                         file=path)  # fmt: skip
    unknown = sorted(set(item) - _STEP_KEYS)
    if unknown:
        raise UsageError(f"{where}: unknown key(s) {unknown}; a step has "
                         f"{sorted(_STEP_KEYS)}", file=path)  # fmt: skip
    calls = _calls(item, where, path)
    text = _text(item, "reply", where, path)
    if text is None:
        text = _text(item, "text", where, path)
    error = _text(item, "error", where, path)
    if error is None and text is None and not calls:
        raise UsageError(f"{where} needs one of 'reply', 'error', 'tool' or 'tools'", file=path)
    if error is not None and (text is not None or calls):
        raise UsageError(f"{where}: an 'error' step answers nothing else", file=path)
    if "reply" in item and "text" in item:
        raise UsageError(f"{where}: give 'reply' or 'text' (the text before tool calls), "
                         "not both", file=path)  # fmt: skip
    if "status" in item and error is None:
        raise UsageError(f"{where}.status goes with 'error' (a failing answer); to fail "
                         "some calls before answering, use fail: {status, times}",
                         file=path)  # fmt: skip
    return MockStep(
        reply=text,
        calls=calls,
        error=error,
        status=_int(item.get("status"), f"{where}.status", path),
        delay=_number(item.get("delay", 0), f"{where}.delay", path),
        fail=_fail(item.get("fail"), f"{where}.fail", path),
    )


def _calls(item: dict[str, Any], where: str, path: Path) -> tuple[tuple[str, Any], ...]:
    entries: list[Any] = []
    if "tool" in item:
        entries.append({"tool": item["tool"], "input": item.get("input", {})})
    elif "input" in item:
        raise UsageError(f"{where}.input needs 'tool' (the tool's name)", file=path)
    if "tools" in item:
        if not isinstance(item["tools"], list) or not item["tools"]:
            raise UsageError(f"{where}.tools must be a non-empty list", file=path)
        entries.extend(item["tools"])
    calls = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("tool"), str):
            raise UsageError(f"{where}: tool call {index} needs 'tool' (a name) and 'input'",
                             file=path)  # fmt: skip
        value = entry.get("input", {})
        if not isinstance(value, dict | str):
            raise UsageError(f"{where}: tool {entry['tool']!r} input must be a mapping (JSON "
                             "arguments) or a string (a freeform tool)", file=path)  # fmt: skip
        calls.append((entry["tool"], value))
    return tuple(calls)


def _fail(value: Any, where: str, path: Path) -> Fail | None:
    if value is None:
        return None
    if not isinstance(value, dict) or "status" not in value:
        raise UsageError(f"{where} needs 'status' (and 'times', default 1)", file=path)
    status = _int(value["status"], f"{where}.status", path)
    times = _int(value.get("times", 1), f"{where}.times", path)
    assert status is not None and times is not None
    retry = value.get("retry_after")
    return Fail(status, times, None if retry is None else _number(retry, where, path))


def _int(value: Any, where: str, path: Path) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"{where} must be a non-negative integer", file=path)
    return value


def _number(value: Any, where: str, path: Path) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise UsageError(f"{where} must be a non-negative number of seconds", file=path)
    return float(value)


def _text(holder: dict[str, Any], key: str, where: str, path: Path) -> str | None:
    """A reply as text; YAML's unquoted yes/no/on/off are booleans, refused with a hint."""
    value = holder.get(key)
    if value is None or isinstance(value, str):
        return value
    place = f"{where}.{key}" if where != key else key
    if isinstance(value, bool):
        raise UsageError(f"{place} is a boolean ({value}); YAML reads unquoted yes/no/on/off "
                         "that way: quote it", file=path)  # fmt: skip
    return str(value)
