"""The model protocol: one request shape, one response shape, for every provider.

A model is named ``provider/name`` (``local/smollm2``, ``openai/gpt-4o-mini``,
``mock/echo``). A request is either chat (``messages``) or plain completion (``prompt``,
no chat template), optionally constrained to a fixed set of labels (:class:`Choice`) or to
JSON of a schema (:class:`JsonSchema`); providers translate the constraint into what their
server understands (a GBNF grammar, ``response_format``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from assay.errors import UsageError


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
class Message:
    """One chat message; ``role`` is ``system``, ``user`` or ``assistant``."""

    role: str
    content: str


@dataclass(frozen=True)
class ModelRequest:
    """One generation request.

    Exactly one of ``messages`` (chat) and ``prompt`` (completion) is set. ``max_tokens``
    counts generated tokens; ``temperature`` is in [0, 2].
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

    def __post_init__(self) -> None:
        if (self.messages is None) == (self.prompt is None):
            raise ValueError("a ModelRequest needs exactly one of messages and prompt")

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
    """Tokens the endpoint counted for one call."""

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class ModelResponse:
    """The answer to one request: text (constraint applied), usage, and why it stopped."""

    text: str
    usage: Usage | None = None
    finish_reason: str | None = None
    model: str | None = None
    seconds: float = 0.0
    cached: bool = False


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
