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
from dataclasses import dataclass
from pathlib import Path

from assay.errors import UsageError
from assay.providers.base import Model, split_model_name


@dataclass(frozen=True)
class ModelKey:
    """What identifies one endpoint: name, URL, key variable, and a mock script's folder."""

    name: str
    base_url: str | None = None
    api_key_env: str | None = None
    base_dir: str = "."
    timeout: float = 120.0


@dataclass(frozen=True)
class PoolSettings:
    """Settings that apply to every model of a run: ``parallel`` is ``-j``."""

    parallel: int = 4


Factory = Callable[[ModelKey, PoolSettings], Model]


class ProviderRegistry:
    """Provider prefix → factory. Not a module global: each run builds or receives one."""

    def __init__(self) -> None:
        self._factories: dict[str, Factory] = {}

    def register(self, prefix: str, factory: Factory) -> None:
        """Add a provider.

        Raises:
            ValueError: ``prefix`` is already registered.
        """
        if prefix in self._factories:
            raise ValueError(f"provider '{prefix}' is already registered")
        self._factories[prefix] = factory

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

    return LocalModel(name=key.name, parallel=settings.parallel, timeout=key.timeout)


def _openai(key: ModelKey, settings: PoolSettings) -> Model:
    from assay.providers.openai_compat import OpenAICompatibleModel

    api_key = os.environ.get(key.api_key_env) if key.api_key_env else None
    if key.api_key_env and not api_key:
        raise UsageError(
            f"model '{key.name}': environment variable {key.api_key_env} (agent.api_key_env) "
            "is not set"
        )
    return OpenAICompatibleModel(
        name=key.name,
        model=key.name.partition("/")[2],
        base_url=key.base_url,
        api_key=api_key,
        timeout=key.timeout,
        max_connections=settings.parallel,
    )


def _mock(key: ModelKey, settings: PoolSettings) -> Model:
    from assay.providers.mock import load_mock

    return load_mock(key.name, Path(key.base_dir))


def default_registry() -> ProviderRegistry:
    """A registry with ``local``, ``openai`` and ``mock``."""
    registry = ProviderRegistry()
    registry.register("local", _local)
    registry.register("openai", _openai)
    registry.register("mock", _mock)
    return registry


class ModelPool:
    """The started models of one run, shared by every row that names the same endpoint."""

    def __init__(self, registry: ProviderRegistry, settings: PoolSettings) -> None:
        self.registry = registry
        self.settings = settings
        self._models: dict[ModelKey, Model] = {}
        self._local_by_name: dict[str, Model] = {}

    def add(self, key: ModelKey, model: Model) -> None:
        """Use ``model`` for ``key`` (tests register scripted models this way)."""
        self._models[key] = model

    def get(self, key: ModelKey) -> Model:
        """The model for ``key``, created on first use (not started)."""
        model = self._models.get(key)
        if model is None:
            model = self._shared_local(key) or self.registry.create(key, self.settings)
            self._models[key] = model
        return model

    def _shared_local(self, key: ModelKey) -> Model | None:
        """One local server per model name, whatever the other key fields are."""
        if not key.name.startswith("local/"):
            return None
        if key.name not in self._local_by_name:
            self._local_by_name[key.name] = self.registry.create(key, self.settings)
        return self._local_by_name[key.name]

    async def start(self, keys: list[ModelKey]) -> None:
        """Create and start the models for ``keys`` before any row runs."""
        models = {id(m): m for m in (self.get(k) for k in keys)}
        await asyncio.gather(*(m.start() for m in models.values()))

    async def aclose(self) -> None:
        """Close every model (stops the local server)."""
        models = {id(m): m for m in self._models.values()}
        self._models.clear()
        self._local_by_name.clear()
        for model in models.values():
            await model.aclose()
