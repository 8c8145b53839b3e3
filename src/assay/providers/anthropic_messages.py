"""``anthropic/<model>``: Claude models through the Messages API (the ``anthropic`` SDK, extra
``anthropic``).

The key is the environment variable named by ``api_key_env``, else ``ANTHROPIC_API_KEY``;
``base_url`` (or ``ANTHROPIC_BASE_URL``) points at another host. Chat only: the system message
goes in ``system``. A label set or JSON schema is enforced by forcing a tool call
(``tool_choice: {type: tool}``) whose input schema is the constraint; the answer is the tool
input (the label itself for a label set). Errors are classified for
:mod:`assay.providers.retry` like the OpenAI-compatible provider's (529 "overloaded" is a 5xx).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import time
from typing import Any

import httpx

from assay.errors import MissingKeyError, ModelError, UsageError
from assay.install import install_hint
from assay.providers.base import Choice, JsonSchema, ModelRequest, ModelResponse
from assay.providers.constraints import ANSWER_KEY
from assay.providers.http import tls_context
from assay.providers.retry import TransientModelError, is_retryable_status, parse_retry_after
from assay.providers.wire import WireError
from assay.providers.wire import anthropic as anthropic_wire
from assay.results.secrets import clip_head

TOOL_NAME = "answer"
_HEADERS = {"anthropic-version": "2023-06-01", "content-type": "application/json"}
DEFAULT_BASE_URL = "https://api.anthropic.com"


def _tool(request: ModelRequest) -> dict[str, Any] | None:
    constraint = request.constraint
    if isinstance(constraint, Choice):
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {ANSWER_KEY: {"type": "string", "enum": list(constraint.labels)}},
            "required": [ANSWER_KEY],
        }
    elif isinstance(constraint, JsonSchema):
        schema = constraint.schema
    else:
        return None
    return {"name": TOOL_NAME, "description": "Give the answer.", "input_schema": schema}


class AnthropicModel:
    """A Claude model.

    Args:
        name: the assay name, e.g. ``anthropic/claude-sonnet-4``.
        model: the name the API knows.
        base_url: another host (``None``: ``ANTHROPIC_BASE_URL`` or the SDK default).
        api_key: the key (``None``: ``ANTHROPIC_API_KEY``).
        timeout: seconds per request.
    """

    def __init__(
        self,
        *,
        name: str,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 120.0,
    ) -> None:
        self.name = name
        self.model = model
        self.base_url = base_url
        self.api_key = api_key
        self.timeout = timeout
        self._client: Any = None
        self._forwarder: httpx.AsyncClient | None = None

    async def start(self) -> None:
        """Check the key (the SDK client and the forwarding client open on first use).

        Raises:
            MissingKeyError: the key is missing.
        """
        key = self.api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise MissingKeyError(
                f"model '{self.name}' needs an API key in the environment variable "
                "ANTHROPIC_API_KEY",
                hint="export it, or name another variable with api_key_env beside the model",
            )
        self.api_key = key

    @property
    def endpoint(self) -> str:
        """The API's base URL (without ``/v1``)."""
        url = self.base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
        return url.rstrip("/").removesuffix("/v1")

    def _sdk(self) -> Any:
        """The ``anthropic`` SDK client, created on first use.

        Raises:
            UsageError: the ``anthropic`` package is missing.
        """
        if self._client is None:
            try:
                import anthropic
            except ImportError:
                raise UsageError(
                    f"model '{self.name}' needs the anthropic package",
                    hint=install_hint("anthropic"),
                ) from None
            self._client = anthropic.AsyncAnthropic(
                api_key=self.api_key, base_url=self.endpoint, timeout=self.timeout, max_retries=0
            )
        return self._client

    async def forward(self, body: bytes, *, headers: dict[str, str], query: str) -> httpx.Response:
        """Send a Messages request body as it is (the model bridge's pass-through) and return
        the response with its body not yet read (``aclose`` it).

        ``headers`` are the client's (``anthropic-version``, ``anthropic-beta``, …); the key
        is replaced by this model's. Connection failures and timeouts raise
        :class:`TransientModelError`.
        """
        if self.api_key is None:
            await self.start()
        if self._forwarder is None:
            self._forwarder = httpx.AsyncClient(
                base_url=self.endpoint,
                timeout=httpx.Timeout(self.timeout, connect=30.0),
                verify=tls_context(self.endpoint),
            )
        sent = {**headers, "x-api-key": str(self.api_key)}
        request = self._forwarder.build_request(
            "POST", "/v1/messages" + (f"?{query}" if query else ""), content=body, headers=sent
        )
        try:
            return await self._forwarder.send(request, stream=True)
        except httpx.TimeoutException as exc:
            raise TransientModelError(f"{self.name}: timed out {self.endpoint}: {exc!r}") from exc
        except httpx.TransportError as exc:
            raise TransientModelError(
                f"{self.name}: cannot reach {self.endpoint}: {exc!r}"
            ) from exc

    async def _with_tools(self, request: ModelRequest) -> ModelResponse:
        """One non-streamed Messages call with tools.

        Raises:
            TransientModelError: 408/409/429/5xx (with ``Retry-After``), connection errors,
                an unreadable body.
            ModelError: any other status, or a request the Messages API cannot take.
        """
        try:
            body = anthropic_wire.request_to_wire(request, model=self.model)
        except WireError as exc:
            raise ModelError(f"{self.name}: {exc}") from None
        body.update(request.extra_body)
        started = time.perf_counter()
        raw = json.dumps(body, ensure_ascii=False).encode("utf-8")
        response = await self.forward(raw, headers=_HEADERS, query="")
        try:
            data = await response.aread()
        finally:
            await response.aclose()
        if response.status_code >= 400:
            shown = clip_head(data.decode("utf-8", "replace"), 300)
            message = f"{self.name}: HTTP {response.status_code} from the API: {shown!r}"
            if is_retryable_status(response.status_code):
                raise TransientModelError(
                    message,
                    status=response.status_code,
                    retry_after=parse_retry_after(response.headers),
                )
            raise ModelError(message)
        custom = frozenset(t.name for t in request.tools if t.kind == "custom")
        try:
            answer = anthropic_wire.response_from_wire(json.loads(data), custom_tools=custom)
        except (ValueError, WireError) as exc:
            raise TransientModelError(f"{self.name}: unreadable response: {exc}") from exc
        return dataclasses.replace(answer, seconds=time.perf_counter() - started)

    async def aclose(self) -> None:
        """Close the clients."""
        if self._client is not None:
            await self._client.close()
            self._client = None
        if self._forwarder is not None:
            await self._forwarder.aclose()
            self._forwarder = None

    def _body(self, request: ModelRequest) -> dict[str, Any]:
        if request.tools:  # a coding agent's turn, through the bridge
            try:
                wired = anthropic_wire.request_to_wire(request, model=self.model)
            except WireError as exc:
                raise ModelError(f"{self.name}: {exc}") from None
            return {**wired, "extra_body": dict(request.extra_body)}
        if request.messages is None:
            raise ModelError(f"{self.name}: the Messages API has no completion endpoint; "
                             "use prompt_format: chat")  # fmt: skip
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": [
                {"role": m.role, "content": m.content}
                for m in request.messages
                if m.role != "system"
            ],
        }
        if system:
            body["system"] = system
        if request.stop:
            body["stop_sequences"] = list(request.stop)
        extra = {"temperature": request.temperature, **request.extra_body}
        if request.top_p is not None:
            extra["top_p"] = request.top_p
        body["extra_body"] = extra
        tool = _tool(request)
        if tool is not None:
            body["tools"] = [tool]
            body["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
        return body

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Send one request; see :class:`assay.providers.base.Model`.

        A request with tools (a coding agent's turn, translated by the bridge) is sent as a
        plain Messages body over httpx, as the bridge's pass-through sends its requests; a
        plain or constrained request goes through the ``anthropic`` SDK.
        """
        if self.api_key is None:
            await self.start()
        if request.tools:
            return await self._with_tools(request)
        client = self._sdk()
        import anthropic

        started = time.perf_counter()
        try:  # the whole request, not each read: a body dripping in bytes is bounded too
            async with asyncio.timeout(self.timeout):
                result = await client.messages.create(**self._body(request))
        except TimeoutError as exc:
            raise TransientModelError(f"{self.name}: timed out after {self.timeout:g} s") from exc
        except anthropic.APIStatusError as exc:
            raise _status_error(self.name, exc) from exc
        except anthropic.APIConnectionError as exc:
            raise TransientModelError(f"{self.name}: cannot reach the API: {exc}") from exc
        except anthropic.AnthropicError as exc:
            raise ModelError(f"{self.name}: {exc}") from exc
        except ValueError as exc:  # a 200 whose body is not JSON (a proxy's page, a cut body)
            raise TransientModelError(f"{self.name}: unreadable response: {exc}") from exc
        seconds = time.perf_counter() - started
        if not isinstance(getattr(result, "content", None), list) or result.usage is None:
            raise TransientModelError(f"{self.name}: the response is not a message: "
                                      f"{_unexpected(result)}")  # fmt: skip
        usage = anthropic_wire.usage_from_wire(result.usage.model_dump())
        try:
            text = _answer(self.name, result, request)
        except ModelError as exc:  # billed all the same: the row counts its usage
            exc.usage = usage
            raise
        return ModelResponse(text, usage, result.stop_reason, result.model, seconds)


def _unexpected(result: Any) -> str:
    """What a 200 held instead of a message: its ``error``'s message, else its start."""
    extra = getattr(result, "model_extra", None) or {}
    error = extra.get("error") if isinstance(extra, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return f"the server answered 200 with an error: {clip_head(str(error['message']), 300)}"
    return clip_head(repr(result), 120, "...")


def _status_error(name: str, exc: Any) -> ModelError:
    status = int(exc.status_code)
    message = f"{name}: HTTP {status} from the API: {exc.message}"
    if is_retryable_status(status):
        retry_after = parse_retry_after(getattr(exc.response, "headers", None))
        return TransientModelError(message, status=status, retry_after=retry_after)
    return ModelError(message)


def _answer(name: str, result: Any, request: ModelRequest) -> str:
    for block in result.content:
        if getattr(block, "type", None) == "tool_use" and request.constraint is not None:
            data = block.input
            if isinstance(request.constraint, Choice):
                label = str(data.get(ANSWER_KEY, "")) if isinstance(data, dict) else ""
                if label not in request.constraint.labels:
                    cut = (f", cut at max_tokens ({request.max_tokens})"
                           if result.stop_reason == "max_tokens" else "")  # fmt: skip
                    raise ModelError(f"{name}: answered {label!r}{cut}, not one of the labels")
                return label
            return json.dumps(data, ensure_ascii=False)
    texts = [b.text for b in result.content if getattr(b, "type", None) == "text"]
    if not all(isinstance(text, str) for text in texts):
        raise ModelError(f"{name}: a text block of the reply holds no text")
    if request.constraint is not None and not texts and result.stop_reason != "refusal":
        raise ModelError(f"{name}: the reply has no answer")
    return "".join(texts)
