"""An opt-in response cache in SQLite, keyed by everything that can change an answer.

The key is the SHA-256 of a canonical JSON of: the provider, the base URL, the model name,
every field of the :class:`~assay.providers.base.ModelRequest` (messages or prompt, every
generation parameter, the constraint, extra body fields — a field added to the request later
enters the key automatically) and the replicate index. So a different model, endpoint,
setting or replicate never receives another's answer, and replicates are never made identical
by the cache. Entries older than ``max_age`` seconds are ignored (and removed by ``clear``).
The key is a hash, so no prompt is stored; an answer that holds a known secret or a
token's shape (in its text or its tool calls' arguments: what the run's ``writer`` would
redact) is not stored at all, so the cache holds no secret and a hit gives back exactly
what the model said (a redacted replay would grade differently).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.errors import UserError
from assay.providers.base import (
    Choice,
    JsonSchema,
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    Usage,
)
from assay.results.io import Writer

DEFAULT_PATH = Path(".assay") / "cache.db"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    created REAL NOT NULL,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    input_tokens INTEGER,
    output_tokens INTEGER,
    finish_reason TEXT,
    extra TEXT
)
"""
_EXTRA_COLUMN = "ALTER TABLE responses ADD COLUMN extra TEXT"
_RAW_SCHEMA = """
CREATE TABLE IF NOT EXISTS raw_responses (
    key TEXT PRIMARY KEY,
    created REAL NOT NULL,
    content_type TEXT NOT NULL,
    body BLOB NOT NULL
)
"""


@dataclass(frozen=True)
class Identity:
    """Which endpoint answered: provider, base URL (``None`` = the provider's default), model,
    and ``served_by``: what answers behind a name that does not say it (the server
    ``ASSAY_LOCAL_MODEL_URL`` names or the weights file of a ``local/`` model, a ``mock/``
    script's content), so another model or an edited script is never answered from the
    cache; empty for a hosted model, whose URL and name say it all."""

    provider: str
    base_url: str | None
    model: str
    served_by: str = ""


def served_by(model: object) -> str:
    """A model's ``served_by`` (:class:`Identity`), ``""`` for one that has none."""
    return str(getattr(model, "served_by", "") or "")


def _constraint(value: Any) -> Any:
    if isinstance(value, Choice):
        return {"choice": list(value.labels)}
    if isinstance(value, JsonSchema):
        return {"json_schema": value.schema}
    return value


def _message(message: Message) -> list[Any]:
    if not message.tool_calls and not message.tool_results:
        return [message.role, message.content]
    return [message.role, message.content, [dataclasses.astuple(c) for c in message.tool_calls],
            [dataclasses.astuple(r) for r in message.tool_results]]  # fmt: skip


def cache_key(identity: Identity, request: ModelRequest, *, replicate: int) -> str:
    """The cache key of one call (64 hex characters)."""
    fields = {f.name: getattr(request, f.name) for f in dataclasses.fields(request)}
    fields["constraint"] = _constraint(request.constraint)
    if request.messages is not None:
        fields["messages"] = [_message(m) for m in request.messages]
    fields["tools"] = [dataclasses.asdict(t) for t in request.tools]
    payload = {
        "provider": identity.provider,
        "base_url": identity.base_url,
        "model": identity.model,
        "request": fields,
        "replicate": replicate,
    }
    if identity.served_by:  # (absent otherwise: a hosted model's entries keep their keys)
        payload["served_by"] = identity.served_by
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def raw_cache_key(identity: Identity, body: bytes, *, replicate: int) -> str:
    """The cache key of a request passed through untranslated: its exact body bytes (which
    hold every request field) with the endpoint and the replicate index."""
    digest = hashlib.sha256()
    parts = [identity.provider, identity.base_url or "", identity.model, str(replicate)]
    for part in parts + ([identity.served_by] if identity.served_by else []):
        digest.update(part.encode("utf-8") + b"\0")
    digest.update(body)
    return digest.hexdigest()


class CorruptCacheError(UserError):
    """The cache file is not an SQLite database of answers (damaged, or another file)."""

    def __init__(self, path: Path, exc: sqlite3.DatabaseError) -> None:
        super().__init__(
            f"the response cache cannot be read ({exc}); its answers are lost",
            file=path,
            hint=f"remove it with `assay cache clear --path {path}` (or delete the file); "
            "the next run with --cache starts a new one",
        )
        self.path = path


def remove_cache_file(path: Path) -> None:
    """Delete the cache file ``path`` and its SQLite journal files, those that exist."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


@dataclass(frozen=True)
class CacheStats:
    """Entries, their total text size (characters) and the oldest and newest (Unix seconds)."""

    entries: int
    text_chars: int
    oldest: float | None
    newest: float | None


class ResponseCache:
    """The cache file. Safe for several processes (SQLite locking, WAL journal).

    Args:
        path: the SQLite file (created with its folder).
        max_age: seconds after which an entry no longer counts; ``None`` keeps entries forever.
        writer: the run's writer: every stored answer is redacted as it writes files.
    """

    def __init__(
        self,
        path: Path = DEFAULT_PATH,
        *,
        max_age: float | None = None,
        writer: Writer | None = None,
    ) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.max_age = max_age
        self.writer = writer or Writer.shapes_only()
        self.hits = 0
        self.misses = 0
        self.write_error: str | None = None
        """Why answers stopped being stored (the cache's disk is full): the first failure;
        the run goes on without storing (its rows are not lost for the cache's sake)."""
        self._db = sqlite3.connect(path, timeout=30, check_same_thread=False)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(_SCHEMA)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(responses)")}
            if "extra" not in columns:  # a cache file written before tool calls were cached
                self._db.execute(_EXTRA_COLUMN)
            self._db.execute(_RAW_SCHEMA)
            self._db.commit()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise CorruptCacheError(path, exc) from None

    def get(self, key: str) -> ModelResponse | None:
        """The stored response for ``key`` if present and fresh."""
        row = self._db.execute(
            "SELECT created, model, text, input_tokens, output_tokens, finish_reason, extra "
            "FROM responses WHERE key = ?",
            (key,),
        ).fetchone()
        if row is None or (self.max_age is not None and time.time() - row[0] > self.max_age):
            self.misses += 1
            return None
        self.hits += 1
        extra = json.loads(row[6]) if row[6] else {}
        usage = Usage(row[3], row[4], *extra.get("usage", ())) if row[3] is not None else None
        calls = tuple(ToolCall(*call) for call in extra.get("tool_calls", ()))
        return ModelResponse(text=row[2], usage=usage, finish_reason=row[5], model=row[1],
                             cached=True, tool_calls=calls)  # fmt: skip

    def put(self, key: str, response: ModelResponse) -> None:
        """Store ``response`` under ``key`` (replacing an older entry), unless it holds
        what the writer redacts (see the module docstring)."""
        usage = response.usage
        extra: dict[str, Any] = {}
        if response.tool_calls:
            extra["tool_calls"] = [dataclasses.astuple(c) for c in response.tool_calls]
        if usage is not None and (usage.cache_read_tokens or usage.cache_write_tokens
                                  or usage.reasoning_tokens):  # fmt: skip
            extra["usage"] = [usage.cache_read_tokens, usage.cache_write_tokens,
                              usage.reasoning_tokens]  # fmt: skip
        stored = json.loads(json.dumps(extra))  # as the JSON column holds it (tuples as lists)
        if self.writer.redact(response.text) != response.text or (
            self.writer.redact_data(stored) != stored
        ):
            return
        self._write(
            "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (key, time.time(), response.model or "", response.text,
             usage.input_tokens if usage else None, usage.output_tokens if usage else None,
             response.finish_reason, json.dumps(extra) if extra else None),
        )  # fmt: skip

    def _write(self, statement: str, values: tuple[Any, ...]) -> None:
        """Store one entry; a write that fails (a full disk, a read-only file) is recorded
        once in :attr:`write_error` and the cache stops storing: an answer already paid for
        is never lost for the cache's sake."""
        if self.write_error is not None:
            return
        try:
            self._db.execute(statement, values)
            self._db.commit()
        except sqlite3.Error as exc:
            self.write_error = f"the response cache {self.path} could not store answers: {exc}"
            with contextlib.suppress(sqlite3.Error):
                self._db.rollback()

    def get_raw(self, key: str) -> tuple[str, bytes] | None:
        """A passed-through answer stored under ``key`` (content type and the exact bytes),
        if present and fresh."""
        row = self._db.execute(
            "SELECT created, content_type, body FROM raw_responses WHERE key = ?", (key,)
        ).fetchone()
        if row is None or (self.max_age is not None and time.time() - row[0] > self.max_age):
            self.misses += 1
            return None
        self.hits += 1
        return str(row[1]), bytes(row[2])

    def put_raw(self, key: str, content_type: str, body: bytes) -> None:
        """Store a passed-through answer's bytes under ``key``; one that holds a known
        secret is not stored (redacting would change the bytes a replay must give back)."""
        if self.writer.finds_secret(body):
            return
        self._write("INSERT OR REPLACE INTO raw_responses VALUES (?, ?, ?, ?)",
                    (key, time.time(), content_type, body))  # fmt: skip

    def stats(self) -> CacheStats:
        """How much the cache holds."""
        count, chars, oldest, newest = self._db.execute(
            "SELECT COUNT(*), COALESCE(SUM(LENGTH(text)), 0), MIN(created), MAX(created) FROM "
            "(SELECT text, created FROM responses UNION ALL "
            "SELECT CAST(body AS TEXT), created FROM raw_responses)"
        ).fetchone()
        return CacheStats(count, chars, oldest, newest)

    def clear(self, *, older_than: float | None = None) -> int:
        """Delete every entry, or those older than ``older_than`` seconds; return how many."""
        removed = 0
        for table in ("responses", "raw_responses"):
            if older_than is None:
                cursor = self._db.execute(f"DELETE FROM {table}")
            else:
                cursor = self._db.execute(
                    f"DELETE FROM {table} WHERE created < ?", (time.time() - older_than,)
                )
            removed += cursor.rowcount
        self._db.commit()
        return removed

    def close(self) -> None:
        """Close the file."""
        self._db.close()


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> float:
    """``"90"`` or ``"90s"``, ``"15m"``, ``"12h"``, ``"7d"``, ``"2w"`` → seconds.

    Raises:
        ValueError: any other shape.
    """
    value = text.strip().lower()
    unit = _UNITS.get(value[-1:]) if value else None
    number = value[:-1] if unit else value
    try:
        seconds = float(number) * (unit or 1)
    except ValueError:
        raise ValueError(f"'{text}' is not a duration; use e.g. 90s, 15m, 12h, 7d") from None
    if seconds < 0:
        raise ValueError(f"'{text}' is negative")
    return seconds
