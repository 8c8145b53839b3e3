"""The model bridge: the wire protocols coding-agent CLIs speak, served on 127.0.0.1 for one
run, each call forwarded to the row's assay model (docs/coding-agents.md, "The model bridge").

A row's agent opens a :class:`BridgeSession` (its credential, model, limits), points its
CLI at :attr:`Bridge.url` with the session's token as the API key, and reads the session's
calls afterwards: usage and cost by row, and budgets enforced between calls.

:class:`Bridge` (the server: Starlette and uvicorn) is imported on first use, so a run
without coding agents does not pay for importing a web server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from assay.bridge.session import BridgeSession, CallLog, SessionLimits

if TYPE_CHECKING:
    from assay.bridge.server import Bridge

__all__ = ["Bridge", "BridgeSession", "CallLog", "SessionLimits"]


def __getattr__(name: str) -> Any:
    if name == "Bridge":
        from assay.bridge.server import Bridge

        return Bridge
    raise AttributeError(f"module 'assay.bridge' has no attribute {name!r}")
