"""``assay judge add`` for Python: a judge file stored as a judge's next version."""

from __future__ import annotations

from pathlib import Path

from assay.judges.assets import load_judge_file
from assay.store import open_store
from assay.store.judges import JudgeRecord


def add_judge(name: str, file: str | Path, *, store: str | None = None) -> tuple[JudgeRecord, bool]:
    """Store the judge file ``file`` as the next version of judge ``name`` (``assay judge
    add``); a file whose content hash equals the latest version's adds nothing.

    Args:
        store: the store URL (``None``: ``$ASSAY_STORE``, else ``.assay/store.db``).

    Returns:
        The version (new, or the unchanged latest) and whether it was created.

    Raises:
        TaskFileError: the judge file is missing or invalid. StoreError: a bad name or store.
    """
    definition = load_judge_file(Path(file))
    data = definition.model_dump(mode="json", exclude_defaults=True)
    data["name"] = name
    with open_store(store) as opened:
        return opened.add_judge(
            name, data, definition.content_hash(), origin=str(Path(file).resolve())
        )
