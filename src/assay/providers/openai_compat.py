"""Any OpenAI-compatible endpoint (``openai/<model>``), spoken directly over httpx.

The endpoint is ``base_url`` from the agent block, else ``OPENAI_BASE_URL``, else
``https://api.openai.com/v1``; the key is the environment variable named by ``api_key_env``,
else ``OPENAI_API_KEY`` (the variables the ``openai`` SDK reads). Requests are the documented
``POST /chat/completions`` and ``POST /completions`` bodies (OpenAI API reference). The local
llama.cpp server is reached through the same class with ``dialect="llamacpp"``, which sends
answer constraints as llama.cpp's own request fields (``grammar``, ``json_schema``).

Why not the ``openai`` SDK: measured here, its per-call request transformation costs about
1 ms of CPU, which on a 2-core machine alone caps a harness well below what the endpoint can
serve (see bench/README.md); this class does the same HTTP exchange in a few lines.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import time
from typing import Any, Literal

import httpx

from assay.errors import MissingKeyError, ModelError
from assay.providers.base import Choice, ModelRequest, ModelResponse, Usage
from assay.providers.constraints import llamacpp_fields, openai_response_format, read_choice
from assay.providers.http import ShardedClient
from assay.providers.retry import TransientModelError, is_retryable_status, parse_retry_after
from assay.providers.wire import WireError
from assay.providers.wire import chat as chat_wire
from assay.providers.wire.common import text_of
from assay.results.secrets import clip_head
from assay.results.transcript import PROVIDER_REFUSALS

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAICompatibleModel:
    """A model behind ``/v1/chat/completions`` and ``/v1/completions``.

    Args:
        name: the assay name, e.g. ``openai/gpt-4o-mini``.
        model: the name the endpoint knows, e.g. ``gpt-4o-mini``.
        base_url: the endpoint's ``/v1`` URL; ``None`` reads ``OPENAI_BASE_URL``.
        api_key: the key; ``None`` reads ``OPENAI_API_KEY``.
        timeout: seconds per request.
        dialect: ``openai`` or ``llamacpp`` (how constraints are sent).
        max_connections: the HTTP connection pool size (the run's ``-j``).
    """

    def __init__(
        self,
        *,
        name: str,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
        dialect: Literal["openai", "llamacpp"] = "openai",
        max_connections: int = 16,
    ) -> None:
        self.name = name
        self.model = model
        self.base_url = base_url
        self.api_key = api_key
        self.timeout = timeout
        self.dialect = dialect
        self.max_connections = max_connections
        self._client: ShardedClient | None = None

    @property
    def endpoint(self) -> str:
        """The base URL in use."""
        return (self.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")

    async def start(self) -> None:
        """Open the HTTP client.

        Raises:
            MissingKeyError: no key for the official endpoint.
        """
        api_key = self.api_key or os.environ.get("OPENAI_API_KEY")
        if not api_key:
            if self.endpoint == DEFAULT_BASE_URL:
                raise MissingKeyError(
                    f"model '{self.name}' needs an API key",
                    hint="set OPENAI_API_KEY (and OPENAI_BASE_URL for a non-OpenAI server), "
                    "or give base_url and api_key_env beside the model",
                )
            api_key = "none"  # local servers (vLLM, llama.cpp, Ollama) accept any key
        self._client = ShardedClient(
            base_url=self.endpoint,
            headers={"Authorization": f"Bearer {api_key}"},
            timeout=self.timeout,
            max_connections=self.max_connections,
        )

    async def aclose(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Send one request; see :class:`assay.providers.base.Model`.

        Raises:
            TransientModelError: HTTP 408/409/429/5xx (with ``Retry-After``), connection
                errors, timeouts, an unreadable body.
            ModelError: any other HTTP error, or an answer outside the constraint.
        """
        if self._client is None:
            await self.start()
        assert self._client is not None
        chat = request.prompt is None
        body = self._chat_body(request) if chat else self._completion_body(request)
        started = time.perf_counter()
        data = await self._post("chat/completions" if chat else "completions", body)
        seconds = time.perf_counter() - started
        if chat and request.tools:
            try:
                answer = chat_wire.response_from_wire(data)
            except WireError as exc:
                raise TransientModelError(f"{self.name}: {exc}") from exc
            return dataclasses.replace(answer, seconds=seconds)
        text, usage, finish, model = _read_choice(self.name, data, chat=chat)
        if isinstance(request.constraint, Choice) and finish not in PROVIDER_REFUSALS:
            text = self._label(text, request, usage=usage, finish=finish)
        return ModelResponse(text, usage, finish, model, seconds)

    def _label(self, text: str, request: ModelRequest, *, usage: Usage | None,
               finish: str | None) -> str:  # fmt: skip
        """The label ``text`` names (see :func:`read_choice`).

        Raises:
            ModelError: it names none, carrying the reply's ``usage`` (billed all the same);
                a reply cut at ``max_tokens`` says so.
        """
        assert isinstance(request.constraint, Choice)
        try:
            return read_choice(text, request.constraint.labels, wrapped=self.dialect == "openai")
        except ModelError as exc:
            refused = exc
            if finish == "length":
                refused = ModelError(f"{self.name}: the reply was cut at max_tokens "
                                     f"({request.max_tokens}) before a label: "
                                     f"{clip_head(text, 80)!r}")  # fmt: skip
            refused.usage = usage
            raise refused from None

    async def _post(self, path: str, body: dict[str, Any]) -> Any:
        assert self._client is not None
        try:  # the whole request, not each read: a body dripping in bytes is bounded too
            async with asyncio.timeout(self.timeout):
                response = await self._client.post(path, json=body)
        except (httpx.TimeoutException, TimeoutError) as exc:
            raise TransientModelError(f"{self.name}: timed out {self.endpoint} after "
                                      f"{self.timeout:g} s: {exc!r}") from exc  # fmt: skip
        except httpx.TransportError as exc:
            raise TransientModelError(
                f"{self.name}: cannot reach {self.endpoint}: {exc!r}"
            ) from exc
        if response.status_code >= 400:
            raise self._status_error(response)
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise TransientModelError(f"{self.name}: unreadable response: {exc}") from exc

    def _status_error(self, response: httpx.Response) -> ModelError:
        status = response.status_code
        message = f"{self.name}: HTTP {status} from the endpoint: {_error_text(response)}"
        if status == 404:  # the commonest cause: base_url without its /v1
            message += (f" (POST {response.request.url}: check base_url, which for most "
                        "servers ends in /v1)")  # fmt: skip
        if is_retryable_status(status):
            retry_after = parse_retry_after(response.headers)
            return TransientModelError(message, status=status, retry_after=retry_after)
        return ModelError(message)

    def _common(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.top_p is not None:
            body["top_p"] = request.top_p
        if request.stop:
            body["stop"] = list(request.stop)
        if request.seed is not None:
            body["seed"] = request.seed
        if self.dialect == "llamacpp":
            body.update(llamacpp_fields(request.constraint))
        body.update(request.extra_body)
        return body

    def _chat_body(self, request: ModelRequest) -> dict[str, Any]:
        assert request.messages is not None
        body = self._common(request)
        wired = chat_wire.request_to_wire(request, model=self.model)
        body.update({k: v for k, v in wired.items() if k != "model"})
        if self.dialect == "openai":
            response_format = openai_response_format(request.constraint)
            if response_format is not None:
                body["response_format"] = response_format
        return body

    def _completion_body(self, request: ModelRequest) -> dict[str, Any]:
        if self.dialect == "openai" and request.constraint is not None:
            raise ModelError(
                f"{self.name}: constrained answers on the completion endpoint need a llama.cpp "
                "server (local/...); use prompt_format: chat, or pass your server's own field "
                "in agent.extra_body"
            )
        body = self._common(request)
        body["prompt"] = request.prompt
        return body


def _read_choice(
    name: str, data: Any, *, chat: bool
) -> tuple[str, Usage | None, str | None, str | None]:
    """Text, usage, finish reason and model of the first choice.

    Raises:
        TransientModelError: the body is not the documented shape (a truncated or garbled
            reply from a proxy).
    """
    if isinstance(data, dict) and "choices" not in data and data.get("error"):
        raise TransientModelError(f"{name}: the server answered 200 with an error: "
                                  f"{_error_message(data['error'])}")  # fmt: skip
    try:
        choice = data["choices"][0]
        raw = choice["message"] if chat else choice["text"]
    except (KeyError, IndexError, TypeError) as exc:
        raise TransientModelError(f"{name}: the response has no choice: {exc!r}") from exc
    finish = choice.get("finish_reason")
    try:  # a list of text parts, as some gateways answer, is its text
        if chat:
            text, finish = chat_wire.refusal_of(raw, finish)
        else:
            text = text_of(raw, where="choices[0].text")
    except WireError as exc:
        raise ModelError(f"{name}: the reply is not text: {exc}") from None
    return text, _usage(data.get("usage")), finish, data.get("model")


def _error_message(error: Any, limit: int = 300) -> str:
    """The message of a body's ``error`` (an object with ``message``, or text)."""
    text = error.get("message") if isinstance(error, dict) else error
    return clip_head(str(text or error), limit, "...")


def _usage(usage: Any) -> Usage | None:
    return chat_wire.usage_from_wire(usage)


def _error_text(response: httpx.Response, limit: int = 300) -> str:
    try:
        detail = response.json().get("error")
    except (ValueError, AttributeError):  # not a JSON object: its text
        return clip_head(str(response.text or response.reason_phrase), limit, "...")
    return _error_message(detail or response.reason_phrase, limit)
