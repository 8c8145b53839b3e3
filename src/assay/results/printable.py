"""Text shown as it is, its control characters as escapes: an agent's output written to a
terminal (or to a log read in one with ``cat`` or ``tail -f``) cannot clear the screen, move
the cursor over an earlier line, set the window's title or write the clipboard (OSC 52)
through escape sequences."""

from __future__ import annotations

import re

_CONTROLS = {
    "\t\n\r": re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]"),
    "\t\n": re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]"),
}


def shown_controls(text: str, *, keep: str = "\t\n\r") -> str:
    """``text`` with each C0 and C1 control character (and DEL) but those of ``keep``
    (``"\\t\\n\\r"`` or ``"\\t\\n"``) written as ``\\xNN`` (``\\x1b`` for ESC)."""
    return _CONTROLS[keep].sub(lambda found: f"\\x{ord(found.group()):02x}", text)
