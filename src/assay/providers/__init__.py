"""Models: the protocol, local (llama.cpp), OpenAI-compatible and mock providers."""

from assay.providers.base import Choice, JsonSchema, Message, ModelRequest, ModelResponse
from assay.providers.pool import ModelKey, ModelPool, ProviderRegistry, default_registry

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
