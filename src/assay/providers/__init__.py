"""Models: the protocol, local (llama.cpp), OpenAI-compatible and mock providers."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from assay.lazy import lazy_exports

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


__getattr__ = lazy_exports("assay.providers", _EXPORTS)
