"""The helper commands from Python: converting a dataset into the QA schema (``assay qa
convert``) and the response cache (``assay cache stats | clear``)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO

from assay.errors import UsageError
from assay.providers.cache import (
    DEFAULT_PATH,
    CacheStats,
    CorruptCacheError,
    ResponseCache,
    remove_cache_file,
)
from assay.qa.convert import ConvertSummary, convert_file, preset
from assay.results.io import check_output_file


def convert_qa(
    input_path: str | Path,
    output: str | Path | BinaryIO,
    *,
    shape: str,
    numbered_ids: bool = False,
    source: str | None = None,
    id_prefix: str | None = None,
    limit: int | None = None,
    skip_invalid: bool = False,
    **fields: Any,
) -> ConvertSummary:
    """Convert a CSV or JSONL dataset into the QA schema (``assay qa convert``), written whole
    or not at all.

    Args:
        input_path: the dataset.
        output: the QA JSONL to write (or a binary stream: it is written there once every
            row converted).
        shape: ``csv-choices``, ``jsonl-answers``, ``squad`` or ``gsm8k``
            (:data:`assay.qa.convert.SHAPES`).
        numbered_ids: number the rows even when the shape has an id field.
        source: ``meta.source`` (default: the input's file name).
        id_prefix: the prefix of numbered ids (default: the input's stem and ``-``).
        limit: convert only the first ``limit`` rows.
        skip_invalid: leave out the rows that cannot be converted (named in the summary's
            ``skipped`` and ``warnings``) instead of stopping at the first.
        **fields: field mapping overrides (:class:`assay.qa.convert.FieldMap`: ``story``,
            ``question``, ``answers``, ``wrong``, ``choices`` (a tuple), ``choice_prefix``,
            ``label``, ``label_base``, ``id``, ``meta``, ``answer_after``,
            ``unanswerable_if_empty``, ``answer_separator``); ``None`` keeps the shape's default.

    Returns:
        The rows written and the rows per prompt type.

    Raises:
        UsageError: an unknown shape or field, ``choices`` with ``choice_prefix``, the output
            is the input or cannot be written (a folder, or its folder cannot be created
            or written). DatasetError: a row that cannot be converted (file, line, field).
    """
    if fields.get("choices") is not None and fields.get("choice_prefix") is not None:
        raise UsageError("--choices and --choice-prefix name the choices twice; give one")
    try:
        mapping = preset(shape, **fields)
    except TypeError as exc:
        raise UsageError(f"unknown field mapping: {exc}") from None
    if numbered_ids:
        mapping = replace(mapping, id=None)
    target = Path(output) if isinstance(output, str | Path) else output
    if isinstance(target, Path):
        check_output_file(target, "--output")
    return convert_file(Path(input_path), target, fields=mapping, source=source,
                        id_prefix=id_prefix, limit=limit, skip_invalid=skip_invalid)  # fmt: skip


def cache_stats(path: str | Path = DEFAULT_PATH) -> CacheStats | None:
    """How many answers the response cache at ``path`` holds, how big, how old; ``None``
    when there is no cache file yet."""
    if not Path(path).exists():
        return None
    cache = ResponseCache(Path(path))
    try:
        return cache.stats()
    finally:
        cache.close()


def clear_cache(path: str | Path = DEFAULT_PATH, *, older_than: float | None = None) -> int:
    """Remove every cached answer (or those older than ``older_than`` seconds); returns how
    many were removed (0 without a cache file). A damaged cache file is removed whole when
    every answer is to go.

    Raises:
        CorruptCacheError: the file is damaged and ``older_than`` is given."""
    if not Path(path).exists():
        return 0
    try:
        cache = ResponseCache(Path(path))
    except CorruptCacheError:
        if older_than is not None:
            raise
        remove_cache_file(Path(path))
        return 0
    try:
        return cache.clear(older_than=older_than)
    finally:
        cache.close()
