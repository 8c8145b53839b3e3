"""``assay cache stats | clear``: the response cache (``.assay/cache.db``)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from assay.providers.cache import DEFAULT_PATH, parse_duration

cache_app = typer.Typer(help="Inspect or empty the response cache.", no_args_is_help=True)

CachePath = Annotated[Path, typer.Option("--path", help="The cache file.")]


def _when(stamp: float | None) -> str:
    return datetime.fromtimestamp(stamp).isoformat(timespec="seconds") if stamp else "—"


@cache_app.command()
def stats(path: CachePath = DEFAULT_PATH) -> None:
    """How many answers the cache holds, how big, how old."""
    from assay.api.tools import cache_stats
    from assay.cli.shared.common import user_errors

    with user_errors():
        info = cache_stats(path)
    if info is None:
        typer.echo(f"{path}: no cache yet (0 entries)")
        return
    typer.echo(
        f"{path}: {info.entries} entries, {info.text_chars} characters of answers, "
        f"oldest {_when(info.oldest)}, newest {_when(info.newest)}"
    )


@cache_app.command()
def clear(
    path: CachePath = DEFAULT_PATH,
    older_than: Annotated[
        str | None, typer.Option("--older-than", help="Only entries older than this (7d, 12h).")
    ] = None,
) -> None:
    """Remove every cached answer (or only old ones)."""
    from assay.api.tools import clear_cache
    from assay.cli.shared.common import user_errors

    if not path.exists():
        typer.echo(f"{path}: no cache (removed 0)")
        return
    try:
        seconds = parse_duration(older_than) if older_than else None
    except ValueError as exc:
        typer.echo(f"error: --older-than: {exc}", err=True)
        raise typer.Exit(2) from None
    with user_errors():
        removed = clear_cache(path, older_than=seconds)
    if not path.exists():  # it could not be read: the file itself went
        typer.echo(f"{path}: the file could not be read as a cache; removed it")
        return
    typer.echo(f"{path}: removed {removed} entries")
