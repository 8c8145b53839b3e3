"""Translate answer constraints into what servers understand, and read the answer back.

- llama.cpp (the local server): a label set becomes a GBNF grammar
  (``root ::= " "? ("a" | "b")``, the optional space because completion prompts end just
  before it); a JSON schema goes in the ``json_schema`` request field. Both work on the chat
  and the completion endpoint (llama.cpp ``tools/server/README.md``).
- OpenAI-compatible chat: ``response_format`` ``json_schema``; a label set becomes
  ``{"answer": enum}`` and the answer is unwrapped (OpenAI's structured outputs need an
  object at the root).
"""

from __future__ import annotations

from typing import Any

from assay.data.jsonl import parse_json_strict
from assay.errors import ModelError
from assay.providers.base import Choice, Constraint, JsonSchema
from assay.results.secrets import clip_head

ANSWER_KEY = "answer"


def gbnf_literal(text: str) -> str:
    """Quote ``text`` as a GBNF string literal (escapes quote, backslash and controls)."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif ord(char) < 0x20:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def choice_grammar(labels: tuple[str, ...]) -> str:
    """A GBNF grammar accepting one of ``labels``, optionally after one space."""
    alternatives = " | ".join(gbnf_literal(label) for label in labels)
    return f'root ::= " "? ({alternatives})'


def llamacpp_fields(constraint: Constraint | None) -> dict[str, Any]:
    """Extra request-body fields for a llama.cpp server."""
    if isinstance(constraint, Choice):
        return {"grammar": choice_grammar(constraint.labels)}
    if isinstance(constraint, JsonSchema):
        return {"json_schema": constraint.schema}
    return {}


def openai_response_format(constraint: Constraint | None) -> dict[str, Any] | None:
    """The ``response_format`` of an OpenAI-compatible chat request, or ``None``."""
    if isinstance(constraint, Choice):
        schema = {
            "type": "object",
            "properties": {ANSWER_KEY: {"type": "string", "enum": list(constraint.labels)}},
            "required": [ANSWER_KEY],
            "additionalProperties": False,
        }
        return {
            "type": "json_schema",
            "json_schema": {"name": "answer", "strict": True, "schema": schema},
        }
    if isinstance(constraint, JsonSchema):
        return {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": constraint.schema},
        }
    return None


def read_choice(text: str, labels: tuple[str, ...], *, wrapped: bool) -> str:
    """Return the label a constrained answer chose.

    Args:
        text: the raw answer.
        labels: the allowed labels.
        wrapped: True when the answer is ``{"answer": label}`` JSON (OpenAI-style).

    Raises:
        ModelError: the answer is not one of the labels (the server ignored the constraint).
    """
    value = text.strip()
    if wrapped:
        try:
            data = parse_json_strict(value)
            value = str(data[ANSWER_KEY]).strip() if isinstance(data, dict) else value
        except KeyError:
            pass
        except ValueError as exc:
            key = getattr(exc, "key", None)  # assay.data.jsonl's duplicate-key error
            if key is not None:
                raise ModelError(
                    f"the model answered {text!r}: the key '{key}' appears twice, so the answer "
                    "is ambiguous"
                ) from None
    if value.startswith('"') and value.endswith('"') and len(value) >= 2:
        value = value[1:-1]
    if value not in labels:
        raise ModelError(
            f"the model answered {text!r}, not one of the labels {list(labels)}: "
            "the server did not apply the constraint"
        )
    return value


CUT_FINISH_REASONS = frozenset({"length", "max_tokens", "MAX_TOKENS"})
"""How OpenAI-compatible servers, Anthropic's API and Gemini's say a reply hit its token cap."""


def cut_json_reply(
    text: str, constraint: Constraint | None, *, finish: str | None, max_tokens: int | None
) -> str | None:
    """Why a reply to a JSON-schema request is no answer: ``max_tokens`` cut it before its
    JSON closed (``None`` when the constraint is not a schema, the reply was not cut, or it
    parses all the same). The reply is then an error of the row, as a label reply cut at
    ``max_tokens`` is, not a wrong answer of the model."""
    if not isinstance(constraint, JsonSchema) or finish not in CUT_FINISH_REASONS:
        return None
    try:
        parse_json_strict(text.strip())
    except ValueError:
        return (f"the reply was cut at max_tokens ({max_tokens}) before its JSON closed: "
                f"{clip_head(text, 80)!r}; raise agent.max_tokens")  # fmt: skip
    return None
