"""The services one run starts before its first row and stops after its last.

Today that is the model pool (every model endpoint the plan's agents and judges use, the
local llama.cpp server among them, with the response cache). A service that lives exactly
as long as a run (the model bridge that coding agents call, for one) is started and stopped
here, in :func:`run_services`, so every way of running rows (``assay run``, ``assay
execute``, a resumed run, :func:`assay.run`) gets it without knowing about it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from assay.providers.cache import ResponseCache
from assay.providers.pool import ModelKey, ModelPool, PoolSettings, ProviderRegistry
from assay.providers.pool import default_registry as default_providers
from assay.providers.pricing import PriceTable
from assay.providers.retry import RetryPolicy

DEFAULT_CACHE = Path(".assay") / "cache.db"


@dataclass
class ModelSettings:
    """Settings of every model call of a run.

    Attributes:
        max_retries: retries per model call after the first attempt (0 = none).
        timeout: seconds per request; ``None``: each provider's default.
        cache: cache every model's answers (``--cache``); models with ``cache: true`` are
            cached either way.
        cache_path: the cache file (default ``.assay/cache.db``).
        cache_expiry: ignore cached answers older than this many seconds.
    """

    max_retries: int = 4
    timeout: float | None = None
    cache: bool = False
    cache_path: Path | None = None
    cache_expiry: float | None = None


@dataclass
class RunServices:
    """What a running run can use: ``pool`` (started models)."""

    pool: ModelPool


def build_pool(
    models: ModelSettings,
    *,
    jobs: int,
    prices: PriceTable,
    registry: ProviderRegistry | None = None,
) -> ModelPool:
    """A model pool for one run (not started): ``jobs`` calls in flight per server."""
    cache = None
    if models.cache or models.cache_path is not None:
        cache = ResponseCache(models.cache_path or DEFAULT_CACHE, max_age=models.cache_expiry)
    settings = PoolSettings(
        parallel=jobs,
        retry=RetryPolicy(max_retries=models.max_retries),
        cache=cache,
        cache_all=models.cache,
        timeout=models.timeout,
        prices=prices,
    )
    return ModelPool(registry or default_providers(), settings)


@asynccontextmanager
async def run_services(pool: ModelPool, keys: Sequence[ModelKey]) -> AsyncIterator[RunServices]:
    """Start the run's services, yield them, and stop them however the block ends.

    Args:
        pool: the run's models (:func:`build_pool`); ``keys`` are started before the block
            (a local model server is launched then), and the pool and its cache are closed
            after it.

    Raises:
        ModelError, UserError: a model could not start; whatever was started is stopped.
    """
    async with AsyncExitStack() as stack:
        stack.push_async_callback(_close_pool, pool)
        await pool.start(list(keys))
        yield RunServices(pool)


async def _close_pool(pool: ModelPool) -> None:
    await pool.aclose()
    if pool.settings.cache is not None:
        pool.settings.cache.close()
