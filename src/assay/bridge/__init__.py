"""The model bridge: the wire protocols coding-agent CLIs speak, served on 127.0.0.1 for one
run, each call forwarded to the row's assay model (DESIGN.md, "Agents and the model bridge").

A row's agent opens a :class:`BridgeSession` (its credential, model, limits), points its
CLI at :attr:`Bridge.url` with the session's token as the API key, and reads the session's
calls afterwards: usage and cost by row, a ``chat`` span per call, and budgets enforced
between calls.
"""

from assay.bridge.server import Bridge
from assay.bridge.session import BridgeSession, CallLog, SessionLimits

__all__ = ["Bridge", "BridgeSession", "CallLog", "SessionLimits"]
