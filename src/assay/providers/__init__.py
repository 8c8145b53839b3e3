"""Models: the protocol, local (llama.cpp), OpenAI-compatible and mock providers."""

from __future__ import annotations

import importlib
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.providers.base import Choice, JsonSchema, Message, ModelRequest, ModelResponse
    from assay.providers.pool import ModelKey, ModelPool, ProviderRegistry, default_registry

# each name's module, imported on first use (PEP 562): importing the package, as the
# command line does for one of its modules, imports none of them
_EXPORTS = MappingProxyType(
    {
        "Choice": "assay.providers.base",
        "JsonSchema": "assay.providers.base",
        "Message": "assay.providers.base",
        "ModelRequest": "assay.providers.base",
        "ModelResponse": "assay.providers.base",
        "ModelKey": "assay.providers.pool",
        "ModelPool": "assay.providers.pool",
        "ProviderRegistry": "assay.providers.pool",
        "default_registry": "assay.providers.pool",
    }
)

__all__ = [
    "Choice",
    "JsonSchema",
    "Message",
    "ModelKey",
    "ModelPool",
    "ModelRequest",
    "ModelResponse",
    "ProviderRegistry",
    "default_registry",
]


def __getattr__(name: str) -> Any:
    """The exported ``name``, imported from its module on first use.

    Raises:
        AttributeError: the package exports no such name.
    """
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
