"""A model as a run uses it: response cache, adaptive concurrency and retries around a provider.

Order of a call: cache lookup (when enabled) → acquire one of the endpoint's adaptive slots →
the provider call → release the slot (reporting success or rate limiting) → on a transient
error, wait outside the slot and try again (:mod:`assay.providers.retry`) → store the answer
in the cache.
"""

from __future__ import annotations

from collections.abc import Callable

from assay.providers.base import Model, ModelRequest, ModelResponse
from assay.providers.cache import Identity, ResponseCache, cache_key
from assay.providers.limiter import AdaptiveLimiter
from assay.providers.retry import (
    Attempt,
    CallRecord,
    RetryPolicy,
    TransientModelError,
    call_with_retries,
)

OnRetry = Callable[[str, Attempt], None]


class ManagedModel:
    """Wraps a provider's :class:`Model` for one run.

    Args:
        model: the provider's model.
        identity: provider, base URL and model name (the cache key's first part).
        limiter: the endpoint's adaptive concurrency limiter.
        policy: retries and waits.
        cache: the response cache, or ``None``.
    """

    def __init__(
        self,
        model: Model,
        *,
        identity: Identity,
        limiter: AdaptiveLimiter,
        policy: RetryPolicy,
        cache: ResponseCache | None = None,
    ) -> None:
        self.model = model
        self.name = model.name
        self.identity = identity
        self.limiter = limiter
        self.policy = policy
        self.cache = cache

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
            async with self.limiter.slot() as ticket:
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
