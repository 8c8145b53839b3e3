"""The provider registry and the per-run pool of started models.

A :class:`ProviderRegistry` maps a provider prefix (``local``, ``openai``, ``mock``) to a
factory; it rejects a duplicate prefix and answers an unknown one with "did you mean".
A :class:`ModelPool` holds the models one run uses: each distinct endpoint is created and
started once (the local server starts once per run) and closed when the run ends.
"""

from __future__ import annotations

import asyncio
import difflib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import MissingKeyError, UsageError
from assay.providers.base import Model, split_model_name
from assay.providers.cache import Identity, ResponseCache
from assay.providers.limiter import AdaptiveLimiter
from assay.providers.limits import Gate
from assay.providers.managed import ManagedModel
from assay.providers.pricing import Price, PriceTable
from assay.providers.retry import RetryPolicy
from assay.spec.base import check_base_url


@dataclass(frozen=True)
class ModelKey:
    """What identifies one agent block's model: name, URL, key variable, a mock script's
    folder, the request timeout (seconds) and whether its answers are cached."""

    name: str
    base_url: str | None = None
    api_key_env: str | None = None
    base_dir: str = "."
    timeout: float = 120.0
    cache: bool = False


@dataclass(frozen=True)
class PoolSettings:
    """Settings for every model of a run.

    Attributes:
        parallel: ``-j``: the most calls in flight per endpoint, and the local server's slots.
        retry: retries and waits for transient errors.
        cache: the response cache, used by models with ``cache: true`` (or all, with
            ``cache_all``, the ``--cache`` flag).
        cache_all: cache every model's answers.
        timeout: seconds per request when set on the command line (``--timeout``).
        prices: the price table (cost per row, ``max_usd``).
        gate: permits every call of a server holds while it is sent
            (:mod:`assay.providers.limits`: ``--max-connections``, ``--max-rate``, held
            across the run); ``None``: only ``parallel``.
    """

    parallel: int = 4
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    cache: ResponseCache | None = None
    cache_all: bool = False
    timeout: float | None = None
    prices: PriceTable = field(default_factory=PriceTable)
    gate: Gate | None = None


Factory = Callable[[ModelKey, PoolSettings], Model]
Preflight = Callable[[ModelKey], None]


class ProviderRegistry:
    """Provider prefix → factory. Not a module global: each run builds or receives one."""

    def __init__(self) -> None:
        self._factories: dict[str, Factory] = {}
        self._preflights: dict[str, Preflight] = {}

    def register(self, prefix: str, factory: Factory, preflight: Preflight | None = None) -> None:
        """Add a provider, with an optional check of a key that needs no network.

        Raises:
            ValueError: ``prefix`` is already registered.
        """
        if prefix in self._factories:
            raise ValueError(f"provider '{prefix}' is already registered")
        self._factories[prefix] = factory
        if preflight is not None:
            self._preflights[prefix] = preflight

    def preflight(self, key: ModelKey) -> None:
        """Everything that can be checked before a run: the provider exists, and its
        configuration (a mock script, an API key, the local weights) is usable.

        Raises:
            UsageError: what a run would refuse when it starts the model.
        """
        self.check(key.name)
        provider, _ = split_model_name(key.name)
        check = self._preflights.get(provider)
        if check is not None:
            check(key)

    @property
    def prefixes(self) -> list[str]:
        """The registered provider prefixes, sorted."""
        return sorted(self._factories)

    def check(self, name: str) -> None:
        """Check that ``name`` is ``provider/name`` with a known provider.

        Raises:
            UsageError: malformed name or unknown provider (with a suggestion).
        """
        provider, _ = split_model_name(name)
        if provider not in self._factories:
            close = difflib.get_close_matches(provider, self.prefixes, n=1)
            hint = f"did you mean '{close[0]}/...'?" if close else None
            raise UsageError(
                f"unknown model provider '{provider}' in '{name}'; known: "
                + ", ".join(self.prefixes),
                hint=hint,
            )

    def create(self, key: ModelKey, settings: PoolSettings) -> Model:
        """Build the model for ``key`` (not started)."""
        self.check(key.name)
        provider, _ = split_model_name(key.name)
        return self._factories[provider](key, settings)


def _local(key: ModelKey, settings: PoolSettings) -> Model:
    from assay.providers.local import LocalModel

    return LocalModel(
        name=key.name, parallel=settings.parallel, timeout=settings.timeout or key.timeout
    )


def _api_key(key: ModelKey) -> str | None:
    """The key in ``agent.api_key_env``'s variable; ``None`` when no variable is named.

    Raises:
        MissingKeyError: the named variable is not set (as the preflight says, for a model
            started without one).
    """
    if not key.api_key_env:
        return None
    api_key = os.environ.get(key.api_key_env)
    if not api_key:
        raise _no_key(key, key.api_key_env)
    return api_key


def _no_key(key: ModelKey, variable: str) -> MissingKeyError:
    if key.base_url and key.api_key_env:  # the block already names its server and variable
        hint = (f"export {variable}, or remove api_key_env for a server at base_url that "
                "needs no key")  # fmt: skip
    else:
        hint = "export it, or give base_url beside the model for a local server that needs none"
    return MissingKeyError(
        f"model '{key.name}' needs an API key in the environment variable {variable}",
        hint=hint,
    )


def _openai(key: ModelKey, settings: PoolSettings) -> Model:
    from assay.providers.openai_compat import OpenAICompatibleModel

    return OpenAICompatibleModel(**_endpoint(key, settings), max_connections=settings.parallel)


def _anthropic(key: ModelKey, settings: PoolSettings) -> Model:
    from assay.providers.anthropic_messages import AnthropicModel

    return AnthropicModel(**_endpoint(key, settings))


def _endpoint(key: ModelKey, settings: PoolSettings) -> dict[str, Any]:
    """A hosted model client's keywords: its names, endpoint, API key and timeout (s).

    Raises:
        MissingKeyError: the key's variable is not set (:func:`_api_key`).
    """
    return {"name": key.name, "model": key.name.partition("/")[2], "base_url": key.base_url,
            "api_key": _api_key(key), "timeout": settings.timeout or key.timeout}  # fmt: skip


def _mock(key: ModelKey, settings: PoolSettings) -> Model:
    from assay.providers.mock import load_mock

    return load_mock(key.name, Path(key.base_dir))


def _local_preflight(key: ModelKey) -> None:
    from assay.providers.local import check_installed, running_server_url

    if running_server_url() is None:  # a server that runs already has its weights
        check_installed(key.name.partition("/")[2])


def _key_preflight(default_variable: str, url_variable: str) -> Preflight:
    def check(key: ModelKey) -> None:
        from_env = os.environ.get(url_variable) if key.base_url is None else None
        if from_env:  # a base_url from the environment: checked as one in a task file is
            try:
                check_base_url(from_env)
            except ValueError as exc:
                raise UsageError(f"{url_variable}: {exc}") from None
        variable = key.api_key_env or default_variable
        official = key.base_url is None and not (
            default_variable == "OPENAI_API_KEY" and os.environ.get("OPENAI_BASE_URL")
        )
        if not os.environ.get(variable) and (key.api_key_env or official):
            raise _no_key(key, variable)

    return check


def _mock_preflight(key: ModelKey) -> None:
    from assay.providers.mock import load_mock

    load_mock(key.name, Path(key.base_dir))


def default_registry() -> ProviderRegistry:
    """A registry with ``local``, ``openai``, ``anthropic`` and ``mock``."""
    registry = ProviderRegistry()
    registry.register("local", _local, _local_preflight)
    registry.register("openai", _openai, _key_preflight("OPENAI_API_KEY", "OPENAI_BASE_URL"))
    registry.register(
        "anthropic", _anthropic, _key_preflight("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")
    )
    registry.register("mock", _mock, _mock_preflight)
    return registry


class ModelPool:
    """The models of one run. Each endpoint is created and started once; each server gets one
    adaptive concurrency limiter, shared by the models it serves, so it never has more than
    ``-j`` calls in flight; each agent block gets a :class:`ManagedModel` (retries, cache)."""

    def __init__(self, registry: ProviderRegistry, settings: PoolSettings) -> None:
        self.registry = registry
        self.settings = settings
        self._providers: dict[tuple[str, str | None], Model] = {}
        self._limiters: dict[tuple[str, str | None], AdaptiveLimiter] = {}
        self._managed: dict[ModelKey, ManagedModel] = {}

    def _endpoint(self, key: ModelKey) -> tuple[str, str | None]:
        if key.name.startswith("local/"):
            return (key.name, None)  # one local server per model name
        if key.name.startswith("mock/"):
            return (key.name, key.base_dir)
        if key.name.startswith("anthropic/"):
            return (key.name, key.base_url or os.environ.get("ANTHROPIC_BASE_URL"))
        return (key.name, key.base_url or os.environ.get("OPENAI_BASE_URL"))

    def _server(self, key: ModelKey) -> tuple[str, str | None]:
        """What one limiter guards: a server given by URL (``base_url``, or the provider's
        base-URL variable) with every model it serves, since they share its capacity; else
        the endpoint (a hosted API's default URL rate-limits each model on its own, a
        ``local/`` model has a server of its own, a mock script is its own endpoint)."""
        name, url = self._endpoint(key)
        if url is not None and not name.startswith(("local/", "mock/")):
            return ("server", url.rstrip("/"))
        return (name, url)

    def add(self, key: ModelKey, model: Model) -> None:
        """Use ``model`` for ``key``'s endpoint (tests register scripted models this way)."""
        self._providers[self._endpoint(key)] = model

    def price(self, model: str) -> Price | None:
        """The price of ``model`` (``provider/name``) in the run's price table; ``None``:
        none."""
        return self.settings.prices.lookup(model)

    def get(self, key: ModelKey) -> ManagedModel:
        """The managed model for ``key``, created on first use (not started)."""
        managed = self._managed.get(key)
        if managed is not None:
            return managed
        endpoint = self._endpoint(key)
        provider = self._providers.get(endpoint)
        if provider is None:
            provider = self.registry.create(key, self.settings)
            self._providers[endpoint] = provider
        server = self._server(key)
        limiter = self._limiters.get(server)
        if limiter is None:
            limiter = self._limiters[server] = AdaptiveLimiter(self.settings.parallel)
        prefix = key.name.partition("/")[0]
        cached = self.settings.cache if (key.cache or self.settings.cache_all) else None
        managed = ManagedModel(
            provider,
            identity=Identity(prefix, endpoint[1] if prefix != "mock" else None, key.name),
            limiter=limiter,
            policy=self.settings.retry,
            cache=cached,
            gate=self.settings.gate,
            server="|".join(str(part) for part in server),
        )
        self._managed[key] = managed
        return managed

    def limiter(self, key: ModelKey) -> AdaptiveLimiter:
        """The adaptive limiter of ``key``'s server (see :meth:`_server`)."""
        self.get(key)
        return self._limiters[self._server(key)]

    async def start(self, keys: list[ModelKey]) -> None:
        """Create and start the endpoints for ``keys`` before any row runs."""
        for key in keys:
            self.get(key)
        await asyncio.gather(*(p.start() for p in self._providers.values()))

    async def aclose(self) -> None:
        """Close every endpoint (stops the local server) and the cache."""
        providers = list(self._providers.values())
        self._providers.clear()
        self._managed.clear()
        for provider in providers:
            await provider.aclose()
