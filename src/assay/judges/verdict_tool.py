"""The verdict tool of a judge that is a coding agent (``agent_judge``): a stdio MCP server
with one tool, ``submit_verdict(score, rationale, findings)``, served by the ``mcp`` SDK.

The judge's CLI starts it (``python -m assay.judges.verdict_tool``) from the MCP
configuration assay gives it; the tool checks each call (:func:`check_verdict`) and answers
``Verdict received. Stop here.`` or ``Invalid: <why>. Retry.`` (Coder Eval's replies). The
server keeps nothing: the verdict is read back from the judge's transcript (the last call
the tool accepted, checked again), so a file the judged agent or the judge itself wrote can
never stand in for it.

Only the standard library and ``mcp`` are imported here: the CLI waits for the server to
start.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

SERVER = "assay_judge"
"""The MCP server's name (the tool is ``mcp__assay_judge__submit_verdict`` to the CLIs)."""
TOOL = "submit_verdict"
QUALIFIED = f"mcp__{SERVER}__{TOOL}"
"""The tool's name as Claude Code and Codex report its calls."""
RECEIVED = "Verdict received. Stop here."
DESCRIPTION = (
    "Submit your verdict on the work you judged, once, when you have seen enough: score "
    "(a number from 0 to 1, 1 the best), rationale (why, in a few sentences) and findings "
    "(short observations, each a string). Then stop."
)


@dataclass(frozen=True)
class Verdict:
    """A verdict the tool accepted: ``score`` in [0, 1], a non-blank ``rationale``, and
    ``findings`` (strings)."""

    score: float
    rationale: str
    findings: tuple[str, ...] = ()


class VerdictError(ValueError):
    """A call of the tool that is not a verdict (the message says what is wrong)."""


def check_verdict(arguments: Any) -> Verdict:
    """The verdict in one call's ``arguments`` (the tool's input object).

    Raises:
        VerdictError: not an object; ``score`` missing, not a number, not finite or outside
            [0, 1]; ``rationale`` not a string or blank; ``findings`` not a list of strings.
    """
    if not isinstance(arguments, dict):
        raise VerdictError("submit_verdict input must be an object")
    if arguments.get("score") is None:
        raise VerdictError("score field missing in judge verdict")
    score = arguments["score"]
    if isinstance(score, bool) or not isinstance(score, int | float):
        raise VerdictError(f"score field is not a number: {score!r}")
    if not math.isfinite(score):
        raise VerdictError(f"score field is not a finite number: {score!r}")
    if not 0 <= score <= 1:
        raise VerdictError(f"score field must be between 0 and 1, got {score:g}")
    rationale = arguments.get("rationale")
    if not isinstance(rationale, str):
        raise VerdictError(f"rationale field must be a string, got {type(rationale).__name__}")
    text = " ".join(rationale.split())
    if not text:
        raise VerdictError("rationale field is empty after whitespace collapse")
    findings = arguments.get("findings")
    if findings is None:
        findings = []
    if not isinstance(findings, list) or not all(isinstance(f, str) for f in findings):
        raise VerdictError("findings field must be a list of strings")
    return Verdict(float(score), text, tuple(f.strip() for f in findings if f.strip()))


def check_installed() -> None:
    """The ``mcp`` SDK the tool's server runs on is installed (extra ``agents``).

    Raises:
        UsageError: it is not (with the install command).
    """
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        from assay.errors import UsageError
        from assay.install import install_hint

        raise UsageError("an agent_judge's verdict tool needs the mcp package, which is not "
                         "installed", hint=install_hint("agents"))  # fmt: skip


def answer(arguments: dict[str, Any]) -> str:
    """The tool's reply to one call: ``Verdict received. Stop here.`` or ``Invalid: <why>.
    Retry.``"""
    try:
        check_verdict(arguments)
    except VerdictError as exc:
        return f"Invalid: {exc}. Retry."
    return RECEIVED


def main() -> None:
    """Serve the tool on standard input and output until the CLI closes them."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(SERVER)

    # score takes a string too, so that "abc" gets assay's "Invalid: ... Retry." reply
    # rather than the SDK's validation error
    def submit_verdict(
        score: float | str, rationale: str, findings: list[str] | None = None
    ) -> str:
        return answer({"score": score, "rationale": rationale, "findings": findings})

    server.add_tool(submit_verdict, name=TOOL, description=DESCRIPTION, structured_output=False)
    server.run("stdio")


if __name__ == "__main__":
    main()
