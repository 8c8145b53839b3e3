"""Small helpers shared by tests."""

from __future__ import annotations

from pathlib import Path


def write(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` (UTF-8), creating folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
