"""A model as a run uses it: response cache, adaptive concurrency and retries around a provider.

Order of a call: cache lookup (when enabled) → acquire one of the endpoint's adaptive slots →
the provider call → release the slot (reporting success or rate limiting) → on a transient
error, wait outside the slot and try again (:mod:`assay.providers.retry`) → store the answer
in the cache.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from typing import Any

import httpx

from assay.errors import ModelError
from assay.providers.base import Model, ModelRequest, ModelResponse
from assay.providers.cache import Identity, ResponseCache, cache_key, served_by
from assay.providers.limiter import AdaptiveLimiter
from assay.providers.limits import Gate
from assay.providers.retry import (
    Attempt,
    CallRecord,
    RetryPolicy,
    TransientModelError,
    call_with_retries,
    is_retryable_status,
    parse_retry_after,
)
from assay.results.secrets import clip_head

OnRetry = Callable[[str, Attempt], None]


class ManagedModel:
    """Wraps a provider's :class:`Model` for one run.

    Args:
        model: the provider's model.
        identity: provider, base URL and model name (the cache key's first part).
        limiter: the endpoint's adaptive concurrency limiter.
        policy: retries and waits.
        cache: the response cache, or ``None``.
        gate: run-wide permits of the endpoint's server (:mod:`assay.providers.limits`),
            held inside the endpoint's slot while a call is sent; ``server`` names it.
    """

    def __init__(
        self,
        model: Model,
        *,
        identity: Identity,
        limiter: AdaptiveLimiter,
        policy: RetryPolicy,
        cache: ResponseCache | None = None,
        gate: Gate | None = None,
        server: str = "",
    ) -> None:
        self.model = model
        self.gate = gate
        self.server = server
        self.name = model.name
        self._identity = identity
        self.limiter = limiter
        self.policy = policy
        self.cache = cache

    @property
    def identity(self) -> Identity:
        """Which endpoint answers, as the response cache keys it: what the provider serves
        now (:func:`~assay.providers.cache.served_by`: a local server's model or weights,
        learnt when it started, a script's content; the pool's identity has none)."""
        return dataclasses.replace(self._identity, served_by=served_by(self.model))

    async def start(self) -> None:
        """Start the provider (a local server starts here)."""
        await self.model.start()

    async def aclose(self) -> None:
        """Close the provider."""
        await self.model.aclose()

    async def generate(
        self,
        request: ModelRequest,
        *,
        replicate: int = 0,
        record: CallRecord | None = None,
        on_retry: OnRetry | None = None,
    ) -> ModelResponse:
        """Answer ``request``; see the module docstring.

        Raises:
            ModelError: a non-transient error, or the last transient one after the retries.
        """
        key = cache_key(self.identity, request, replicate=replicate) if self.cache else None
        if self.cache is not None and key is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return hit

        async def once() -> ModelResponse:
            async with self.limiter.slot() as ticket, self._permit():
                try:
                    response = await self.model.generate(request)
                except TransientModelError as exc:
                    ticket.rate_limited = exc.rate_limited
                    raise
                ticket.succeeded = True
                return response

        def notify(attempt: Attempt) -> None:
            if on_retry is not None:
                on_retry(self.name, attempt)

        response = await call_with_retries(once, self.policy, record or CallRecord(), notify)
        if self.cache is not None and key is not None:
            self.cache.put(key, response)
        return response

    def _permit(self) -> contextlib.AbstractAsyncContextManager[None]:
        """The gate's permit for one call (nothing without a gate)."""
        if self.gate is None:
            return contextlib.nullcontext()
        return self.gate.hold(self.server)

    async def forward(
        self,
        body: bytes,
        *,
        headers: dict[str, str],
        query: str = "",
        record: CallRecord | None = None,
        on_retry: OnRetry | None = None,
    ) -> Forwarded:
        """Send a request body untranslated (an ``anthropic/`` model behind the bridge),
        through the same limiter and retries as :meth:`generate`.

        A retryable status (408, 409, 429, 5xx) is retried before anything reaches the
        caller; the returned :class:`Forwarded` holds the endpoint's slot until it is
        closed, so a streamed answer counts as in flight while it streams. Any other status
        is returned as it is (the client gets the provider's own error).

        Raises:
            ModelError: the provider cannot forward, or retries ran out (the message has the
                last status and body).
        """
        forward = getattr(self.model, "forward", None)
        if forward is None:
            raise ModelError(f"{self.name}: this provider cannot pass requests through")

        async def once() -> Forwarded:
            slot = _Held(self.limiter.slot(), self._permit())
            ticket = await slot.__aenter__()
            try:
                response: httpx.Response = await forward(body, headers=headers, query=query)
            except BaseException:
                await slot.__aexit__(None, None, None)
                raise
            if is_retryable_status(response.status_code):
                text = (await response.aread()).decode("utf-8", "replace")
                text = clip_head(text, 300)
                await response.aclose()
                ticket.rate_limited = response.status_code == 429
                await slot.__aexit__(None, None, None)
                raise TransientModelError(
                    f"{self.name}: HTTP {response.status_code} from the endpoint: {text}",
                    status=response.status_code,
                    retry_after=parse_retry_after(response.headers),
                )
            ticket.succeeded = response.status_code < 400
            return Forwarded(response, slot)

        def notify(attempt: Attempt) -> None:
            if on_retry is not None:
                on_retry(self.name, attempt)

        return await call_with_retries(once, self.policy, record or CallRecord(), notify)


class _Held:
    """The endpoint's slot and the gate's permit, entered and left together (a streamed
    answer holds both until it is closed)."""

    def __init__(self, slot: Any, permit: contextlib.AbstractAsyncContextManager[None]) -> None:
        self._slot = slot
        self._permit = permit

    async def __aenter__(self) -> Any:
        ticket = await self._slot.__aenter__()
        try:
            await self._permit.__aenter__()
        except BaseException:
            await self._slot.__aexit__(None, None, None)
            raise
        return ticket

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self._permit.__aexit__(None, None, None)
        finally:
            await self._slot.__aexit__(None, None, None)


class Forwarded:
    """A passed-through response being streamed; ``aclose`` releases the endpoint's slot."""

    def __init__(self, response: httpx.Response, slot: Any) -> None:
        self.response = response
        self._slot = slot

    async def aclose(self) -> None:
        """Close the response and release the slot (safe to call twice)."""
        if self._slot is not None:
            slot, self._slot = self._slot, None
            await self.response.aclose()
            await slot.__aexit__(None, None, None)
