"""Retries with exponential back-off and jitter for model calls, honouring ``Retry-After``.

What is retried (the convention of the OpenAI and Anthropic SDKs, and of HTTP itself):
HTTP 408, 409, 429 and every 5xx; connection errors; timeouts; a response body that cannot
be read (a truncated reply). Any other 4xx is the caller's mistake and is not retried. The
wait before attempt ``n`` is the server's ``Retry-After`` (or ``retry-after-ms``) when it sent
one, else a random wait in ``[0, min(max_wait, initial * 2**n)]`` ("full jitter"). Every
attempt is recorded, so a row's ``task.json`` shows its attempts, waits and final cause.
Built on tenacity.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_base, wait_random_exponential

from assay.errors import ModelError

T = TypeVar("T")
RETRYABLE_STATUS = frozenset({408, 409, 429})
MAX_RETRY_AFTER = 300.0


@dataclass(frozen=True)
class RetryPolicy:
    """How many times to retry and how long to wait (seconds).

    ``max_retries`` 0 means one attempt and no retry.
    """

    max_retries: int = 4
    initial_wait: float = 0.5
    max_wait: float = 30.0


@dataclass(frozen=True)
class Attempt:
    """One failed attempt: its number (1-based), the error, and the wait that followed."""

    number: int
    error: str
    status: int | None
    wait_seconds: float


@dataclass
class CallRecord:
    """Every failed attempt of one logical call, in order."""

    attempts: list[Attempt] = field(default_factory=list)

    @property
    def retries(self) -> int:
        """How many times the call was retried."""
        return len(self.attempts)


class TransientModelError(ModelError):
    """A model error worth retrying (rate limit, server error, connection, timeout).

    Attributes:
        status: the HTTP status, if any.
        retry_after: seconds the server asked to wait, if it said.
        rate_limited: True for HTTP 429 (the adaptive limiter backs off).
    """

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.rate_limited = status == 429


def is_retryable_status(status: int) -> bool:
    """True for 408, 409, 429 and 5xx."""
    return status in RETRYABLE_STATUS or status >= 500


def parse_retry_after(headers: object) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date)."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    millis = get("retry-after-ms")
    if millis:
        try:
            return min(max(float(millis) / 1000, 0.0), MAX_RETRY_AFTER)
        except ValueError:
            pass
    value = get("retry-after")
    if not value:
        return None
    try:
        return min(max(float(value), 0.0), MAX_RETRY_AFTER)
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (ValueError, TypeError):
        return None
    return min(max(parsed.timestamp() - time.time(), 0.0), MAX_RETRY_AFTER)


class _WaitRetryAfter(wait_base):
    """The server's Retry-After when given, else exponential back-off with full jitter."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.fallback = wait_random_exponential(multiplier=policy.initial_wait,
                                                max=policy.max_wait)  # fmt: skip

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        error = outcome.exception() if outcome is not None else None
        if isinstance(error, TransientModelError) and error.retry_after is not None:
            return error.retry_after
        return float(self.fallback(retry_state))


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    record: CallRecord,
    on_retry: Callable[[Attempt], None] | None = None,
) -> T:
    """Await ``call()``, retrying :class:`TransientModelError` as the policy allows.

    The first attempt runs without the retry machinery (most calls succeed at once); a
    transient failure enters tenacity's loop as its attempt 1, so the numbering, the waits
    and the record are those of a loop that made every attempt.

    Raises:
        ModelError: the last error, when it is not transient or retries are exhausted; its
            message says how many attempts were made.
    """
    try:
        return await call()
    except TransientModelError as exc:
        if not policy.max_retries:
            raise
        first: list[TransientModelError] = [exc]

    async def again() -> T:
        if first:
            raise first.pop()
        return await call()

    return await _retry_loop(again, policy, record, on_retry)


async def _retry_loop(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    record: CallRecord,
    on_retry: Callable[[Attempt], None] | None,
) -> T:

    def remember(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0.0
        attempt = Attempt(
            number=state.attempt_number,
            error=str(error),
            status=getattr(error, "status", None),
            wait_seconds=float(wait),
        )
        record.attempts.append(attempt)
        if on_retry is not None:
            on_retry(attempt)

    retrying = AsyncRetrying(
        stop=stop_after_attempt(policy.max_retries + 1),
        wait=_WaitRetryAfter(policy),
        retry=retry_if_exception(lambda e: isinstance(e, TransientModelError)),
        before_sleep=remember,
        reraise=True,
    )
    try:
        async for attempt in retrying:
            with attempt:
                return await call()
    except TransientModelError as exc:
        if policy.max_retries and record.retries >= policy.max_retries:
            raise ModelError(f"{exc} (gave up after {record.retries + 1} attempts)") from exc
        raise
    raise AssertionError("unreachable")  # pragma: no cover
