"""``sandbox.record_cli``: the stand-in programs a row's agent calls instead of real ones,
as Coder Eval writes them (``coder_eval_agents.md`` §2, end): ``[{tool, exit_code (1),
stdout, stderr, responses: [{when: <cli_called facets>, stdout, stderr, exit_code (0)}]}]``.

A call is answered by the first response whose ``when`` matches it, else by the rule's own
output and exit code; :mod:`assay.sandbox.cli_shims` writes the shims and
``cli_called`` grades their log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field, StrictStr, model_validator

from assay.spec import cli_facets
from assay.spec.base import StrictModel

REFUSED_TOOLS = frozenset({"python", "python3", "env", "sh", "bash", "node", "git", "uv", "cmd"})
"""Programs that cannot be recorded: the shims and the agents' own tools run on them."""


class RecordCliResponse(StrictModel):
    """One scripted answer: ``when`` (``cli_called``'s facets) it answers, and how."""

    when: dict[str, Any] = Field(default_factory=dict)
    stdout: StrictStr = ""
    stderr: StrictStr = ""
    exit_code: int = Field(default=0, ge=0, le=255)


class RecordCliRule(StrictModel):
    """The stand-in for one program: its default answer and its scripted ones."""

    tool: StrictStr
    exit_code: int = Field(default=1, ge=0, le=255)
    stdout: StrictStr = ""
    stderr: StrictStr = ""
    responses: list[RecordCliResponse] = Field(default_factory=list)

    @model_validator(mode="after")
    def _sound(self) -> RecordCliRule:
        found = rule_problems([self.model_dump()], where_prefix=False)
        if found:
            raise ValueError("; ".join(found))
        return self


def rule_problems(rules: Sequence[Mapping[str, Any]], *, where_prefix: bool = True) -> list[str]:
    """What is wrong with ``record_cli``'s rules (empty: nothing): a tool that is not a
    program name, one that cannot be recorded, a tool with two rules, an exit code outside
    0–255, ``when`` facets that :func:`assay.spec.cli_facets.problems` refuses. Each names
    where (``record_cli[0].responses[1].when: …``; without ``where_prefix``, from the rule)."""
    found: list[str] = []
    seen: set[str] = set()
    for index, rule in enumerate(rules):
        base = f"record_cli[{index}]" if where_prefix else ""
        lead = f"{base}: " if base else ""
        tool = str(rule.get("tool") or "")
        if not tool or "/" in tool or "\\" in tool or tool.startswith("."):
            found.append(f"{lead}'tool' must be a program name such as 'gh', got {tool!r}")
        elif tool in REFUSED_TOOLS:
            refused = ", ".join(sorted(REFUSED_TOOLS))
            found.append(f"{lead}'{tool}' cannot be recorded (interpreters and shells run the "
                         f"shims and the agent's own tools: {refused})")  # fmt: skip
        elif tool in seen:
            found.append(f"{lead}'{tool}' has two rules; put every response in one")
        seen.add(tool)
        found += _code_problems(lead, rule)
        for number, response in enumerate(rule.get("responses") or []):
            here = f"{base}.responses[{number}]" if base else f"responses[{number}]"
            found += _code_problems(f"{here}: ", response)
            found += [f"{here}.when: {p}" for p in cli_facets.problems(response.get("when") or {})]
    return found


def _code_problems(where: str, item: Mapping[str, Any]) -> list[str]:
    code = item.get("exit_code")
    if code is None or (isinstance(code, int) and not isinstance(code, bool) and 0 <= code <= 255):
        return []
    return [f"{where}exit_code must be a whole number 0 to 255, got {code!r}"]


def check_rules(rules: list[RecordCliRule]) -> list[RecordCliRule]:
    """``rules`` unchanged; two rules for one tool are refused.

    Raises:
        ValueError: naming the tool.
    """
    found = [p for p in rule_problems([r.model_dump() for r in rules]) if "two rules" in p]
    if found:
        raise ValueError(found[0])
    return rules


__all__ = ["REFUSED_TOOLS", "RecordCliResponse", "RecordCliRule", "check_rules", "rule_problems"]
