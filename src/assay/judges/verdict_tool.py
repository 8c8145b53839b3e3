"""The verdict tool of a judge that is a coding agent (``agent_judge``): a stdio MCP server
with one tool, ``submit_verdict(score, rationale, findings)``.

The judge's CLI starts it (``python3 -I -S verdict_tool.py``, this file run as a script)
from the MCP configuration assay gives it; the tool checks each call (:func:`check_verdict`)
and answers ``Verdict received. Stop here.`` or ``Invalid: <why>. Retry.`` (Coder Eval's
replies). The server keeps nothing: the verdict is read back from the judge's transcript (the
last call the tool accepted, checked again), so a file the judged agent or the judge itself
wrote can never stand in for it.

Only the standard library is imported here, never assay nor an MCP SDK: in a ``docker``
row the judge's CLI runs in a container of the row's image and starts this file with the
image's ``python3`` (mounted read-only), where assay's packages are not, as
:mod:`assay.sandbox.jail_init` is run. The server speaks the Model Context Protocol's stdio
transport (https://modelcontextprotocol.io/specification, "Transports" and "Tools"): one
JSON-RPC 2.0 message per line; ``initialize`` (answered with the client's protocol version
when it is one of :data:`PROTOCOLS`, else the newest of them), ``ping``, ``tools/list`` and
``tools/call``; notifications are read and not answered; any other request gets JSON-RPC's
"method not found".
"""

from __future__ import annotations

import io
import json
import math
import sys
from collections.abc import Callable, Iterable
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
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise VerdictError(f"score field is not a number: {score!r}")
    try:
        finite = math.isfinite(score)
    except OverflowError:  # an integer too large for a float
        finite = False
    if not finite:
        shown = repr(score) if len(repr(score)) <= 40 else repr(score)[:37] + "..."
        raise VerdictError(f"score field is not a finite number: {shown}")
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


def answer(arguments: dict[str, Any]) -> str:
    """The tool's reply to one call: ``Verdict received. Stop here.`` or ``Invalid: <why>.
    Retry.``"""
    try:
        check_verdict(arguments)
    except VerdictError as exc:
        return f"Invalid: {exc}. Retry."
    return RECEIVED


PROTOCOLS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The MCP protocol versions the server answers in (oldest first); the tool works alike in
each."""
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        # a string too, so that "abc" gets assay's "Invalid: ... Retry." reply rather than
        # a client's own validation error
        "score": {"anyOf": [{"type": "number"}, {"type": "string"}]},
        "rationale": {"type": "string"},
        "findings": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["score", "rationale"],
}


def reply(message: Any) -> dict[str, Any] | None:
    """The JSON-RPC response to one message read from the client (``None`` for a
    notification, which gets none)."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return _error(None, -32600, "Invalid Request: not a JSON-RPC 2.0 object")
    if "id" not in message or "method" not in message:
        return None  # a notification, or a response to a request this server never sends
    method, params = message.get("method"), message.get("params") or {}
    if not isinstance(params, dict):
        return _error(message["id"], -32602, "Invalid params: not an object")
    if method == "initialize":
        asked = params.get("protocolVersion")
        version = asked if asked in PROTOCOLS else PROTOCOLS[-1]
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": SERVER, "version": "1"},
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": [{"name": TOOL, "description": DESCRIPTION,
                             "inputSchema": INPUT_SCHEMA}]}  # fmt: skip
    elif method == "tools/call":
        if params.get("name") != TOOL:
            return _error(message["id"], -32602, f"Unknown tool: {params.get('name')}")
        arguments = params.get("arguments")
        text = answer(arguments if isinstance(arguments, dict) else {})
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    else:
        return _error(message["id"], -32601, f"Method not found: {method}")
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def _error(ident: Any, code: int, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": text}}


def serve(lines: Iterable[str], write: Callable[[str], object]) -> None:
    """Answer each line of ``lines`` (a message, or a batch of them) through ``write``."""
    for line in lines:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: nested past Python's limit
            write(json.dumps(_error(None, -32700, "Parse error")) + "\n")
            continue
        if message == []:
            write(json.dumps(_error(None, -32600, "Invalid Request: an empty batch")) + "\n")
            continue
        batch = message if isinstance(message, list) else [message]
        answers = [a for a in (reply(m) for m in batch) if a is not None]
        if answers:
            write(json.dumps(answers if isinstance(message, list) else answers[0]) + "\n")


def main() -> None:
    """Serve the tool on standard input and output until the CLI closes them."""
    stdin = io.TextIOWrapper(
        sys.stdin.buffer, encoding="utf-8", errors="replace", newline="\n"
    )  # a \r inside a message is JSON's whitespace
    stdout = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", line_buffering=True)
    serve(stdin, stdout.write)


if __name__ == "__main__":
    main()
