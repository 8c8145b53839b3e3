"""The model protocol: one request shape, one response shape, for every provider.

A model is named ``provider/name`` (``local/smollm2``, ``openai/gpt-4o-mini``,
``mock/echo``). A request is either chat (``messages``) or plain completion (``prompt``,
no chat template), optionally constrained to a fixed set of labels (:class:`Choice`) or to
JSON of a schema (:class:`JsonSchema`); providers translate the constraint into what their
server understands (a GBNF grammar, ``response_format``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from assay.errors import UsageError
from assay.results.transcript import PROVIDER_REFUSALS, TokenBuckets


@dataclass(frozen=True)
class Choice:
    """Constrain the answer to exactly one of ``labels``."""

    labels: tuple[str, ...]


@dataclass(frozen=True)
class JsonSchema:
    """Constrain the answer to JSON that validates against ``schema``."""

    schema: dict[str, Any]


Constraint = Choice | JsonSchema


@dataclass(frozen=True)
class Tool:
    """A tool the model may call.

    ``kind`` ``function`` takes JSON arguments described by the JSON Schema ``parameters``;
    ``custom`` (OpenAI's freeform tools, e.g. Codex's ``apply_patch``) takes plain text,
    optionally described by ``format`` (a grammar).
    """

    name: str
    description: str = ""
    parameters: dict[str, Any] | None = None
    kind: Literal["function", "custom"] = "function"
    format: dict[str, Any] | None = None
    namespace: str | None = None
    """The Responses API's tool namespace it came from (Codex puts each MCP server's tools
    in one); ``name`` is then the namespace and the tool's own name joined, the one name
    any model sees."""


@dataclass(frozen=True)
class ToolCall:
    """A call of a tool by the model: ``arguments`` is JSON text (``function`` tools) or the
    raw input (``custom`` tools)."""

    id: str
    name: str
    arguments: str
    kind: Literal["function", "custom"] = "function"
    namespace: str | None = None
    """Set on the way back to a Responses client: the call's tool namespace (``name`` is then
    the tool's own name within it)."""

    @property
    def input(self) -> Any:
        """The arguments as a value: parsed JSON for a function tool (``{}`` when empty, the
        text itself when it is not JSON), the raw text for a custom tool."""
        if self.kind == "custom":
            return self.arguments
        if not self.arguments.strip():
            return {}
        try:
            return json.loads(self.arguments)
        except ValueError:
            return self.arguments


@dataclass(frozen=True)
class ToolResult:
    """What a tool call returned, sent back to the model in the next request."""

    call_id: str
    output: str
    is_error: bool = False


@dataclass(frozen=True)
class Message:
    """One chat message; ``role`` is ``system``, ``user`` or ``assistant``.

    ``content`` is the message's text. An assistant message may also carry the
    ``tool_calls`` it made; a user message may carry the ``tool_results`` of the calls of the
    assistant message before it (the Anthropic shape; the OpenAI wires send them as separate
    ``tool`` messages or items, translated by :mod:`assay.providers.wire`).
    """

    role: str
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()


@dataclass(frozen=True)
class ModelRequest:
    """One generation request.

    Exactly one of ``messages`` (chat) and ``prompt`` (completion) is set. ``max_tokens``
    counts generated tokens; ``temperature`` is in [0, 2]. ``tools`` the model may call, and
    ``tool_choice``: ``None`` (the provider's default), ``auto``, ``required``, ``none`` or
    a tool's name. ``script_vars`` (``row.<field>``, ``sandbox``) are read by the ``mock``
    provider's scripted tool arguments only; no other provider sends them anywhere.
    """

    messages: tuple[Message, ...] | None = None
    prompt: str | None = None
    temperature: float = 0.0
    max_tokens: int = 256
    top_p: float | None = None
    stop: tuple[str, ...] = ()
    seed: int | None = None
    constraint: Constraint | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)
    tools: tuple[Tool, ...] = ()
    tool_choice: str | None = None
    script_vars: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if (self.messages is None) == (self.prompt is None):
            raise ValueError("a ModelRequest needs exactly one of messages and prompt")

    def exchange(self) -> tuple[str, int]:
        """The text of the user message that opened the current exchange, and how many
        assistant turns have followed it.

        Walking back from the end, assistant messages are counted and user messages that
        only return tool results are passed over, up to the first user message that does
        not: its text opens the exchange. So a coding agent's first request is turn 0, the
        request after its first tool result turn 1, and so on; the worked examples of a
        few-shot prompt come before the exchange and are not counted.
        """
        turns = 0
        for message in reversed(self.messages or ()):
            if message.role == "assistant":
                turns += 1
            elif message.role == "user" and not message.tool_results:
                return message.content, turns
        return (self.prompt or ""), turns

    @property
    def last_user_text(self) -> str:
        """The completion prompt, or the content of the last user message."""
        if self.prompt is not None:
            return self.prompt
        for message in reversed(self.messages or ()):
            if message.role == "user":
                return message.content
        return ""


@dataclass(frozen=True)
class Usage:
    """Tokens the endpoint counted for one call.

    ``input_tokens`` counts every input token, including those read from or written to the
    provider's prompt cache (``cache_read_tokens`` and ``cache_write_tokens`` are parts of
    it; Anthropic reports them apart from its ``input_tokens``, OpenAI inside its
    ``prompt_tokens``); ``reasoning_tokens`` are part of ``output_tokens``.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def buckets(self) -> TokenBuckets:
        """These tokens as a transcript's :class:`~assay.results.transcript.TokenBuckets`."""
        return TokenBuckets(input=self.input_tokens, output=self.output_tokens,
                            cache_read=self.cache_read_tokens,
                            cache_write=self.cache_write_tokens,
                            reasoning=self.reasoning_tokens, total=self.total_tokens)  # fmt: skip

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class ModelResponse:
    """The answer to one request: text (constraint applied), the tools it calls, usage, and
    why it stopped."""

    text: str
    usage: Usage | None = None
    finish_reason: str | None = None
    model: str | None = None
    seconds: float = 0.0
    cached: bool = False
    tool_calls: tuple[ToolCall, ...] = ()

    @property
    def refused(self) -> bool:
        """The provider declined to answer (its finish reason is one of
        :data:`~assay.results.transcript.PROVIDER_REFUSALS`)."""
        return self.finish_reason in PROVIDER_REFUSALS


class Model(Protocol):
    """A chat/completion endpoint. ``start`` is called once before the first request."""

    name: str

    async def start(self) -> None:
        """Prepare the endpoint (start a server, open a client)."""

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Answer one request.

        Raises:
            ModelError: the endpoint failed or its answer is unusable.
        """
        ...

    async def aclose(self) -> None:
        """Release the endpoint (stop a server, close a client)."""


def split_model_name(name: str) -> tuple[str, str]:
    """Split ``provider/name`` into its two parts.

    Raises:
        UsageError: no ``/`` or an empty part.
    """
    provider, sep, rest = name.partition("/")
    if not sep or not provider or not rest:
        raise UsageError(
            f"model '{name}' must be named provider/name",
            hint="e.g. local/smollm2, openai/gpt-4o-mini, mock/echo",
        )
    return provider, rest
