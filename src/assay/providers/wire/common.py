"""What the wire modules share: the error they raise, ids, and the stop-reason mapping."""

from __future__ import annotations

import json
import secrets
from typing import Any

from assay.providers.base import ModelResponse


class WireError(ValueError):
    """A request body that cannot be translated; ``str()`` says which field and why."""


def new_id(prefix: str) -> str:
    """A fresh id such as ``msg_4f1c…`` (24 hex digits), unique per call."""
    return f"{prefix}_{secrets.token_hex(12)}"


def stop_reason(response: ModelResponse) -> str:
    """``tool_calls``, ``length`` or ``stop``: why ``response`` ended, in OpenAI's terms
    (each wire maps these onto its own)."""
    if response.tool_calls:
        return "tool_calls"
    if (response.finish_reason or "") in ("length", "max_tokens"):
        return "length"
    return "stop"


def text_of(content: Any, *, where: str) -> str:
    """The text of a content value: a string, or a list of parts with ``text`` (other parts,
    such as images, become a ``[<type> omitted]`` note).

    Raises:
        WireError: a value that is neither.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise WireError(f"{where}: content must be a string or a list of parts")
    pieces = []
    for part in content:
        if isinstance(part, str):
            pieces.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            pieces.append(part["text"])
        elif isinstance(part, dict):
            pieces.append(f"[{part.get('type', 'part')} omitted]")
        else:
            raise WireError(f"{where}: a content part must be an object")
    return "\n".join(pieces)


def json_arguments(value: Any) -> str:
    """Tool arguments as JSON text (a string is kept as it is)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def parse_arguments(text: str) -> Any:
    """JSON tool arguments as a value; ``{}`` for empty text; the text when it is not JSON."""
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return text
