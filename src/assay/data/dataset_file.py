"""Opening a dataset file, with the error a user sees when it is not there."""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

from assay.errors import DatasetError


def open_dataset(path: Path, name: str, mode: str = "r", **options: Any) -> IO[Any]:
    """``path.open(mode, **options)`` (``name``: how messages name the file).

    Raises:
        DatasetError: the file does not exist, or is a directory (Coder Eval's messages,
            which name the file themselves).
    """
    try:
        return path.open(mode, **options)
    except FileNotFoundError:
        raise DatasetError(f"Dataset file not found: {name}", file=name, located=True) from None
    except IsADirectoryError:
        raise DatasetError(
            f"Dataset path is a directory, not a file: {name}", file=name, located=True
        ) from None
