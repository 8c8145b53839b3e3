"""The wire formats of the model APIs, translated to and from assay's request and response.

One module per protocol, each with the four directions a client and a server need:

- ``anthropic``: the Anthropic Messages API (``POST /v1/messages``),
- ``chat``: OpenAI Chat Completions (``POST /v1/chat/completions``),
- ``responses``: the OpenAI Responses API (``POST /v1/responses``),
- ``gemini``: the Gemini API (``POST /v1beta/models/{model}:generateContent`` and
  ``:streamGenerateContent``).

``request_from_wire`` / ``response_to_wire`` / ``stream_events`` are the server side (the
model bridge reads what a coding-agent CLI sends and answers it); ``request_to_wire`` /
``response_from_wire`` are the client side (a provider calls an endpoint). A body that
cannot be translated raises :class:`WireError`, which the bridge answers with the
protocol's own error shape.
"""

from assay.providers.wire.common import WireError

__all__ = ["WireError"]
