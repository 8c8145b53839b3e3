"""The rule every id (task ids, row ids, sample ids) follows; a module of its own so that
what checks ids without loading task files (``assay qa convert``) imports no model."""

from __future__ import annotations

import re

ID_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
ID_RULE = "letters, digits, underscore, hyphen, dot"
