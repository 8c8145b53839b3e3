"""The Node.js a coding-agent CLI asks for, against the one a ``docker`` row's image has.

An npm CLI declares the Node.js versions it runs on in its ``package.json`` (``engines.node``,
npm's field: https://docs.npmjs.com/cli/v10/configuring-npm/package-json#engines); a CLI on
an older Node.js than it asks for may fail at its first line (Gemini CLI on Debian
bookworm's Node.js 18: ``SyntaxError: Invalid regular expression flags``). The field is
advisory (some CLIs run on older versions than they declare), so a mismatch is a warning at
plan, never a refusal. Only the common lower-bound forms are read (``>=20``, ``>=20.6.0``,
``>= 22.0``); any other range (``^20``, alternatives with ``||``) is not judged.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from assay.sandbox.docker import Engine

_LOWER = re.compile(r"^\s*>=\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?\s*$")
_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)")
MAX_DEPTH = 6  # folders above the CLI's script searched for its package.json


def declared_node(cli: Path) -> str | None:
    """``engines.node`` of the npm package the CLI ``cli`` (a script, or a link to one) is
    part of: the nearest ``package.json`` above the script that has a ``name``; ``None``
    when there is none or it declares nothing."""
    folder = Path(os.path.realpath(cli)).parent
    for _ in range(MAX_DEPTH):
        manifest = folder / "package.json"
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = None
        if isinstance(data, dict) and data.get("name"):
            engines = data.get("engines")
            wanted = engines.get("node") if isinstance(engines, dict) else None
            return wanted if isinstance(wanted, str) and wanted.strip() else None
        if folder.parent == folder:
            return None
        folder = folder.parent
    return None


def image_node(engine: Engine, image: str) -> str | None:
    """``node --version`` in a throwaway container of ``image`` (no network), e.g.
    ``v18.20.4``; ``None`` when it cannot be told."""
    try:
        done = engine.run_in_image(image, "node", "--version")
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = done.stdout.strip()
    return text if done.returncode == 0 and _VERSION.match(text) else None


def too_old(version: str, wanted: str) -> bool:
    """Whether Node.js ``version`` (``v18.20.4``) is below the lower bound ``wanted``
    declares (``>=20``); ``False`` for a range this module does not read."""
    found = _VERSION.match(version.strip())
    bound = _LOWER.match(wanted)
    if found is None or bound is None:
        return False
    have = tuple(int(part) for part in found.groups())
    need = tuple(int(part or 0) for part in bound.groups())
    return have < need
