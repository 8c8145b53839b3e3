"""``mock/...``: scripted, deterministic answers, for tests and for trying a task file.

- ``mock/echo`` answers with the prompt (the last user message, or the completion prompt).
- ``mock/<file>`` (YAML or JSON, relative to the task file) answers by rules::

      replies:
        - match: "fantastic|love"     # a regex searched in the prompt
          reply: positive
        - match: "server down"
          error: "HTTP 503"           # fail this call (the row ends ERROR)
      default: negative               # when no rule matches; absent = an error

A label constraint is honoured like a real server would: a reply outside the labels is an
error naming it. Token usage counts whitespace-separated words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from assay.errors import ModelError, UsageError
from assay.providers.base import Choice, ModelRequest, ModelResponse, Usage


@dataclass(frozen=True)
class MockRule:
    """Reply ``reply`` (or fail with ``error``) when ``match`` is found in the prompt."""

    match: re.Pattern[str]
    reply: str | None = None
    error: str | None = None


class MockModel:
    """A model that answers from a script, without a network.

    Args:
        name: the assay name (``mock/echo`` or ``mock/<file>``).
        rules: tried in order; the first whose pattern is found answers.
        default: the reply when no rule matches; ``None`` makes that an error.
        echo: answer with the prompt itself.
    """

    def __init__(
        self,
        *,
        name: str,
        rules: list[MockRule] | None = None,
        default: str | None = None,
        echo: bool = False,
    ) -> None:
        self.name = name
        self.rules = rules or []
        self.default = default
        self.echo = echo
        self.calls = 0

    async def start(self) -> None:
        """Nothing to start."""

    async def aclose(self) -> None:
        """Nothing to close."""

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Answer from the script; see the module docstring."""
        self.calls += 1
        prompt = request.last_user_text
        text = self._reply(prompt)
        if isinstance(request.constraint, Choice) and text.strip() not in request.constraint.labels:
            raise ModelError(
                f"{self.name}: scripted reply {text!r} is not one of the labels "
                f"{list(request.constraint.labels)}"
            )
        usage = Usage(input_tokens=len(prompt.split()), output_tokens=len(text.split()))
        return ModelResponse(text=text, usage=usage, finish_reason="stop", model=self.name)

    def _reply(self, prompt: str) -> str:
        if self.echo:
            return prompt
        for rule in self.rules:
            if rule.match.search(prompt):
                if rule.error is not None:
                    raise ModelError(f"{self.name}: scripted error: {rule.error}")
                return rule.reply or ""
        if self.default is None:
            raise ModelError(f"{self.name}: no scripted reply matches the prompt")
        return self.default


def load_mock(name: str, base_dir: Path) -> MockModel:
    """Build ``mock/echo`` or ``mock/<file>`` (``file`` relative to ``base_dir``).

    Raises:
        UsageError: the script file is missing or malformed.
    """
    rest = name.partition("/")[2]
    if rest == "echo":
        return MockModel(name=name, echo=True)
    path = Path(rest) if Path(rest).is_absolute() else base_dir / rest
    if not path.is_file():
        raise UsageError(
            f"mock script not found: {path}",
            hint="use mock/echo, or mock/<file.yaml> with replies: [{match, reply}] and default",
        )
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"mock script {path} is not UTF-8 text ({exc.reason})", file=path
        ) from None
    except yaml.YAMLError as exc:
        raise UsageError(f"mock script {path} is not valid YAML: {exc}", file=path) from None
    return _from_data(name, data, path)


def _from_data(name: str, data: Any, path: Path) -> MockModel:
    if not isinstance(data, dict) or not isinstance(data.get("replies", []), list):
        raise UsageError(
            "a mock script is a mapping with 'replies' (a list) and 'default'", file=path
        )
    rules: list[MockRule] = []
    for index, item in enumerate(data.get("replies", [])):
        if (
            not isinstance(item, dict)
            or "match" not in item
            or not ("reply" in item or "error" in item)
        ):
            raise UsageError(
                f"replies[{index}] needs 'match' and one of 'reply' or 'error'", file=path
            )
        try:
            pattern = re.compile(str(item["match"]))
        except re.error as exc:
            raise UsageError(f"replies[{index}].match is not a regex: {exc}", file=path) from None
        reply, error = _text(item, "reply", index, path), _text(item, "error", index, path)
        rules.append(MockRule(pattern, reply, error))
    return MockModel(name=name, rules=rules, default=_text(data, "default", None, path))


def _text(holder: dict[str, Any], key: str, index: int | None, path: Path) -> str | None:
    """A reply as text; YAML's unquoted yes/no/on/off are booleans, refused with a hint."""
    value = holder.get(key)
    if value is None or isinstance(value, str):
        return value
    where = f"replies[{index}].{key}" if index is not None else key
    if isinstance(value, bool):
        raise UsageError(f"{where} is a boolean ({value}); YAML reads unquoted yes/no/on/off "
                         "that way: quote it", file=path)  # fmt: skip
    return str(value)
