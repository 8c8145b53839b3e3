"""Any OpenAI-compatible endpoint, through the ``openai`` SDK (``openai/<model>``).

The endpoint is ``base_url`` from the agent block, else ``OPENAI_BASE_URL``; the key is the
environment variable named by ``api_key_env``, else ``OPENAI_API_KEY`` (as the SDK reads
them). The local llama.cpp server is reached through the same class with
``dialect="llamacpp"``, which sends constraints as llama.cpp's own request fields.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Literal

from assay.errors import ModelError, UsageError
from assay.providers.base import Choice, ModelRequest, ModelResponse, Usage
from assay.providers.constraints import llamacpp_fields, openai_response_format, read_choice
from assay.providers.retry import TransientModelError, is_retryable_status, parse_retry_after

if TYPE_CHECKING:
    import openai


class OpenAICompatibleModel:
    """A model behind ``/v1/chat/completions`` and ``/v1/completions``.

    Args:
        name: the assay name, e.g. ``openai/gpt-4o-mini``.
        model: the name the endpoint knows, e.g. ``gpt-4o-mini``.
        base_url: the endpoint's ``/v1`` URL; ``None`` reads ``OPENAI_BASE_URL``.
        api_key: the key; ``None`` reads ``OPENAI_API_KEY``.
        timeout: seconds per request.
        max_retries: retries inside the SDK; 0, because :mod:`assay.providers.retry` retries
            (visibly, honouring ``Retry-After``) around every provider.
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
        max_retries: int = 0,
        dialect: Literal["openai", "llamacpp"] = "openai",
        max_connections: int = 16,
    ) -> None:
        self.name = name
        self.model = model
        self.base_url = base_url
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.dialect = dialect
        self.max_connections = max_connections
        self._client: openai.AsyncOpenAI | None = None

    async def start(self) -> None:
        """Open the HTTP client (``openai.AsyncOpenAI`` over an ``httpx`` pool)."""
        import openai

        base_url = self.base_url or os.environ.get("OPENAI_BASE_URL")
        api_key = self.api_key or os.environ.get("OPENAI_API_KEY")
        if not api_key:
            if base_url is None:
                raise UsageError(
                    f"model '{self.name}' needs an API key",
                    hint="set OPENAI_API_KEY (and OPENAI_BASE_URL for a non-OpenAI server), "
                    "or give agent.base_url and agent.api_key_env",
                )
            api_key = "none"  # local servers (vLLM, llama.cpp, Ollama) accept any key
        http_client = openai.DefaultAsyncHttpxClient(
            limits=openai.DEFAULT_CONNECTION_LIMITS.__class__(
                max_connections=self.max_connections,
                max_keepalive_connections=self.max_connections,
            ),
            timeout=self.timeout,
        )
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key,
            timeout=self.timeout,
            max_retries=self.max_retries,
            http_client=http_client,
        )

    async def aclose(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Send one request; see :class:`assay.providers.base.Model`."""
        if self._client is None:
            await self.start()
        assert self._client is not None
        import openai

        started = time.perf_counter()
        try:
            if request.prompt is not None:
                text, usage, finish, model = await self._complete(request)
            else:
                text, usage, finish, model = await self._chat(request)
        except openai.APIStatusError as exc:
            raise self._status_error(exc) from exc
        except openai.APIConnectionError as exc:
            where = self.base_url or os.environ.get("OPENAI_BASE_URL") or "api.openai.com"
            kind = "timed out" if isinstance(exc, openai.APITimeoutError) else "cannot reach"
            raise TransientModelError(f"{self.name}: {kind} {where}: {exc}") from exc
        except (openai.APIResponseValidationError, ValueError) as exc:
            raise TransientModelError(f"{self.name}: unreadable response: {exc}") from exc
        except openai.OpenAIError as exc:
            raise ModelError(f"{self.name}: {exc}") from exc
        if isinstance(request.constraint, Choice):
            text = read_choice(text, request.constraint.labels, wrapped=self.dialect == "openai")
        return ModelResponse(text, usage, finish, model, time.perf_counter() - started)

    def _status_error(self, exc: Any) -> ModelError:
        status = int(exc.status_code)
        message = f"{self.name}: HTTP {status} from the endpoint: {_short(str(exc.message))}"
        if is_retryable_status(status):
            retry_after = parse_retry_after(getattr(exc.response, "headers", None))
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
        return body

    def _extra_body(self, request: ModelRequest) -> dict[str, Any]:
        extra = dict(request.extra_body)
        if self.dialect == "llamacpp":
            extra.update(llamacpp_fields(request.constraint))
        return extra

    async def _chat(self, request: ModelRequest) -> tuple[str, Usage | None, str | None, str]:
        assert self._client is not None and request.messages is not None
        body = self._common(request)
        body["messages"] = [{"role": m.role, "content": m.content} for m in request.messages]
        if self.dialect == "openai":
            response_format = openai_response_format(request.constraint)
            if response_format is not None:
                body["response_format"] = response_format
        result = await self._client.chat.completions.create(
            **body, extra_body=self._extra_body(request) or None
        )
        if not result.choices:
            raise ModelError(f"{self.name}: the endpoint returned no choices")
        choice = result.choices[0]
        return (
            choice.message.content or "",
            _usage(result.usage),
            choice.finish_reason,
            result.model,
        )

    async def _complete(self, request: ModelRequest) -> tuple[str, Usage | None, str | None, str]:
        assert self._client is not None and request.prompt is not None
        if self.dialect == "openai" and request.constraint is not None:
            raise ModelError(
                f"{self.name}: constrained answers on the completion endpoint need a llama.cpp "
                "server (local/...); use prompt_format: chat, or pass your server's own field "
                "in agent.extra_body"
            )
        body = self._common(request)
        body["prompt"] = request.prompt
        result = await self._client.completions.create(
            **body, extra_body=self._extra_body(request) or None
        )
        if not result.choices:
            raise ModelError(f"{self.name}: the endpoint returned no choices")
        choice = result.choices[0]
        return choice.text or "", _usage(result.usage), choice.finish_reason, result.model


def _usage(usage: Any) -> Usage | None:
    if usage is None:
        return None
    return Usage(
        input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
    )


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
