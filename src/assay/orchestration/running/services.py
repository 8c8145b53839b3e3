"""The services one run starts before its first row and stops after its last.

The model pool (every model endpoint the plan's agents and judges use, the local llama.cpp
server among them, with the response cache) and, when a coding agent's calls go through it,
the model bridge (:mod:`assay.bridge`, on 127.0.0.1). Both are started and stopped here, in
:func:`run_services`, so every way of running rows (``assay run``, ``assay execute``, a
resumed run, :func:`assay.run`) gets them without knowing about them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from assay.orchestration.running.runner import qa_judges
from assay.providers.cache import ResponseCache
from assay.providers.limits import Gate
from assay.providers.managed import OnRetry
from assay.providers.pool import ModelKey, ModelPool, PoolSettings, ProviderRegistry
from assay.providers.pool import default_registry as default_providers
from assay.providers.pricing import PriceTable
from assay.providers.retry import RetryPolicy
from assay.qa import check_judge
from assay.qa.open_judge import open_judge
from assay.results.io import Writer

if TYPE_CHECKING:
    from assay.bridge import Bridge
    from assay.orchestration.planning.plan import Plan

Warn = Callable[[str], None]

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
    """What a running run can use: ``pool`` (started models) and ``bridge`` (the model
    bridge, ``None`` when no agent of the run needs it)."""

    pool: ModelPool
    bridge: Bridge | None = None


def build_pool(
    models: ModelSettings,
    *,
    jobs: int,
    prices: PriceTable,
    keys: Sequence[ModelKey] = (),
    registry: ProviderRegistry | None = None,
    gate: Gate | None = None,
    writer: Writer | None = None,
) -> ModelPool:
    """A model pool for one run (not started): ``jobs`` calls in flight per server, and
    the ``gate``'s permits (run-wide limits) for every call; its response cache stores
    answers as ``writer`` (the run's) writes files: its secrets redacted.

    The response cache is opened when ``models`` asks for it (``--cache``) or when one of
    ``keys`` (the run's models) does (``cache: true`` in a task file); then only those
    models' answers are cached."""
    cache = None
    if models.cache or models.cache_path is not None or any(k.cache for k in keys):
        cache = ResponseCache(models.cache_path or DEFAULT_CACHE, max_age=models.cache_expiry,
                              writer=writer)  # fmt: skip
    settings = PoolSettings(
        parallel=jobs,
        retry=RetryPolicy(max_retries=models.max_retries),
        cache=cache,
        cache_all=models.cache,
        timeout=models.timeout,
        prices=prices,
        gate=gate,
    )
    return ModelPool(registry or default_providers(), settings)


@asynccontextmanager
async def run_services(
    pool: ModelPool,
    keys: Sequence[ModelKey],
    *,
    bridge: bool = False,
    bridge_socket: bool = False,
    on_retry: OnRetry | None = None,
    log_stream: TextIO | None = None,
) -> AsyncIterator[RunServices]:
    """Start the run's services, yield them, and stop them however the block ends.

    Args:
        pool: the run's models (:func:`build_pool`); ``keys`` are started before the block
            (a local model server is launched then), and the pool and its cache are closed
            after it.
        bridge: also serve the model bridge (a coding agent of the run calls through it).
        bridge_socket: the bridge also listens on a unix socket (a coding agent of the run
            runs in a ``bwrap`` sandbox, without network).
        on_retry: told of every model call the bridge retries.
        log_stream: where the bridge's server prints its errors (default: ``sys.stderr``).

    Raises:
        ModelError, UserError: a model or the bridge could not start; whatever was started
            is stopped.
    """
    async with AsyncExitStack() as stack:
        stack.push_async_callback(_close_pool, pool)
        await pool.start(list(keys))
        served = None
        if bridge:
            from assay.bridge import Bridge  # a web server: imported only for coding agents

            served = Bridge(pool, on_retry=on_retry, log_stream=log_stream)
            stack.push_async_callback(served.aclose)
            await served.start(unix_socket=bridge_socket)
        yield RunServices(pool, served)


async def _close_pool(pool: ModelPool) -> None:
    await pool.aclose()
    if pool.settings.cache is not None:
        pool.settings.cache.close()


async def check_judges(
    plan: Plan,
    pool: ModelPool,
    on_warning: Warn | None = None,
    *,
    folders: Callable[[Path], Path] | None = None,
) -> list[str]:
    """Sanity-check every judge of the plan (:func:`assay.qa.check_judge`): a warning for
    each judge that gets an obvious case wrong, also given to ``on_warning`` at once.
    ``folders`` says where a task folder is on this machine (a node of a cluster)."""
    warnings = []
    seen: set[tuple[str, str | None, str | None, str, str | None]] = set()
    for found, config in qa_judges(plan, checked_only=True):
        key = found
        if folders is not None:
            key = dataclasses.replace(found, base_dir=str(folders(Path(found.base_dir))))
        where = key.base_dir if key.name.startswith("mock/") else ""  # a script per folder
        asset = config.asset
        endpoint = (key.name, key.base_url, key.api_key_env, where,
                    asset.content_hash if asset else None)  # fmt: skip
        if endpoint in seen:
            continue  # one check per judge
        seen.add(endpoint)
        model = pool.get(key)  # a judge asset is asked itself; a model, by assay's prompt
        asker = open_judge(config, model) if asset is not None else None
        check = await check_judge(model, open_judge=asker)
        if check.passed:
            continue
        wrong = [f"{text!r} judged {'a judge error' if verdict is None else verdict}"
                 for text, expected, verdict in check.probes if verdict != expected]  # fmt: skip
        fix = "a stronger judge model (qa.judge.model)"
        if asset is not None:
            fix = "a stronger model or rubric in the judge asset qa.judge names"
        warning = (
            f"judge {config.display} failed its sanity check (answers to 'What is the capital of "
            f"France?': {'; '.join(wrong)}): its verdicts on open questions are not a "
            f"measurement; use {fix}"
        )
        if on_warning is not None:
            on_warning(warning)
        warnings.append(warning)
    return warnings
