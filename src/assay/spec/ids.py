"""The rule every id (task ids, row ids, sample ids) follows; a module of its own so that
what checks ids without loading task files (``assay qa convert``) imports no model."""

from __future__ import annotations

import re

ID_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
ID_RULE = "letters, digits, underscore, hyphen, dot"
ID_MESSAGE = f"must match {ID_PATTERN.pattern} ({ID_RULE})"
RESERVED_ROW_IDS = frozenset({"suite.json", "suite.md"})
"""Names of a suite folder's own files, which a row-task's folder cannot take."""
MAX_ID_LENGTH = 200
"""The longest row id: it names a folder."""


def row_id_problem(row_id: str) -> str | None:
    """Why ``row_id`` cannot name a row-task (and its folder), or ``None`` when it can: the
    message a run refuses its dataset with, which the store warns of when it is given one."""
    if row_id in RESERVED_ROW_IDS:
        return f"Dataset row id {row_id!r} is the name of the suite's report file; rename the row"
    if len(row_id) > MAX_ID_LENGTH:
        return (  # its start, cut where it is (an id has no spaces to cut at)
            f"Dataset row id {row_id[:40]!r}... is {len(row_id)} characters; the limit is "
            f"{MAX_ID_LENGTH} (it names a folder)"
        )
    if not ID_PATTERN.fullmatch(row_id):
        return f"Dataset row id {row_id!r} {ID_MESSAGE}"
    return None
