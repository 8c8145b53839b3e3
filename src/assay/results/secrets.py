"""Secrets: which environment variables hold one, and the redactor that keeps their values
out of everything assay writes and prints.

A variable holds a secret when its name (compared in upper case) ends in ``_KEY``,
``_TOKEN``, ``_SECRET`` or ``_PASSWORD``, contains ``SECRET``, or is one of
:data:`PROVIDER_CREDENTIALS` (the credential variables of the model providers and agent CLIs
assay knows); a task adds the variables it names in ``api_key_env``. The password of a URL
(``scheme://user:password@host``) in any variable is a secret too (a store or proxy URL).

A :class:`Redactor` holds every known secret value with the name it came from and replaces
each occurrence by ``[redacted:NAME]``. It is built once per run and passed down to the few
places that write bytes (:mod:`assay.results.io`, the response cache) and to the streams the
command line prints to; a later part adds its values with :meth:`Redactor.add` (the model
bridge's upstream keys) or one pattern for many with :meth:`Redactor.add_pattern` (per-row
credentials), from any thread, at any time. Values shorter than
:data:`MIN_SECRET_LENGTH` characters are not redacted (they would mangle ordinary text):
:attr:`Redactor.short_names` lists them, and ``assay plan`` warns about them.
"""

from __future__ import annotations

import html
import json
import re
import string
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from mmap import mmap
from typing import Any, TypeAlias
from urllib.parse import unquote, urlsplit

Buffer: TypeAlias = bytes | mmap

MIN_SECRET_LENGTH = 8
"""Shorter values are not redacted: ``[redacted:X]`` in place of every ``none`` or ``1234``
would garble reports, and so short a value protects little."""

SECRET_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET", "_PASSWORD")

PROVIDER_CREDENTIALS = frozenset(
    {
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "AZURE_OPENAI_API_KEY",
        "CODEX_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "OPENROUTER_API_KEY",
        "LITELLM_AUTH_TOKEN",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "UIPATH_ACCESS_TOKEN",
    }
)
"""Credential variables of providers and agent CLIs, withheld and redacted whatever their
names look like (``AWS_ACCESS_KEY_ID`` ends in ``_ID``)."""

_FEW = 16
"""Up to this many forms, :meth:`Redactor.contains` runs one substring search per form
(measured faster than the alternation when the values start with different characters)."""
_MARKER = re.compile(r"\[redacted:[^\]\s]*\]")
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s/@]+@")


def is_secret_name(name: str) -> bool:
    """True when the variable ``name`` holds a secret by its name (see the module docstring)."""
    upper = name.upper()
    return upper.endswith(SECRET_SUFFIXES) or "SECRET" in upper or upper in PROVIDER_CREDENTIALS


def marker(name: str) -> str:
    """``[redacted:NAME]``; characters other than letters, digits, ``_.-`` become ``_``."""
    return f"[redacted:{_NAME_UNSAFE.sub('_', name)}]"


def url_passwords(value: str) -> list[str]:
    """The passwords of the URLs with credentials in ``value`` (``postgresql://u:pw@host``),
    as written and percent-decoded."""
    found: dict[str, None] = {}
    for match in _URL_IN_TEXT.finditer(value):
        try:
            password = urlsplit(match.group(0) + "host").password
        except ValueError:
            continue
        if password:
            found.update(dict.fromkeys([password, unquote(password)]))
    return list(found)


def _forms(value: str) -> list[str]:
    """Every way ``value`` can appear in what assay writes: as is, escaped for JSON (both
    with and without ASCII escapes), for XML and for a Markdown table cell, and, for a value
    of several lines (a PEM key), each line long enough to redact on its own."""
    forms = [
        value,
        json.dumps(value, ensure_ascii=False)[1:-1],
        json.dumps(value)[1:-1],
        html.escape(value, quote=False),
        html.escape(value, quote=False).replace('"', "&quot;").replace("\n", "&#10;"),
        value.replace("|", "\\|").replace("\r\n", "⏎").replace("\n", "⏎").replace("\r", "⏎"),
    ]
    if "\n" in value:
        forms += [line.strip() for line in value.splitlines()]
    return [f for f in dict.fromkeys(forms) if len(f) >= MIN_SECRET_LENGTH]


@dataclass(frozen=True)
class _Matcher:
    """An immutable snapshot of the forms to replace: readers take it once, so a value added
    by another thread never changes a text half-way through."""

    markers: dict[str, str] = field(default_factory=dict)
    pattern: re.Pattern[str] | None = None
    byte_pattern: re.Pattern[bytes] | None = None
    few: tuple[str, ...] | None = None
    few_bytes: tuple[bytes, ...] = ()
    shapes: tuple[str, ...] = ()
    """The group names of :meth:`Redactor.add_pattern`'s patterns, in ``pattern``."""

    def contains(self, text: str) -> bool:
        if self.few is not None:  # a few values: one C-level substring search each is faster
            return any(form in text for form in self.few)
        return self.pattern is not None and self.pattern.search(text) is not None

    def marker_of(self, match: re.Match[str] | re.Match[bytes]) -> str:
        if match.lastgroup is not None:
            return marker(self.shapes[int(match.lastgroup[1:])])
        found = match.group(0)
        return self.markers[found.decode("utf-8", "surrogatepass") if isinstance(found, bytes)
                            else found]  # fmt: skip

    @classmethod
    def build(cls, markers: dict[str, str], patterns: dict[str, str]) -> _Matcher:
        if not markers and not patterns:
            return cls()
        ordered = sorted(markers, key=len, reverse=True)  # the longest form wins an overlap
        raw = [f.encode("utf-8", "surrogatepass") for f in ordered]
        shapes = tuple(patterns)
        groups = [f"(?P<p{i}>{patterns[name]})" for i, name in enumerate(shapes)]
        pattern = re.compile("|".join([*(re.escape(f) for f in ordered), *groups]))
        byte_pattern = re.compile(b"|".join([*(re.escape(f) for f in raw),
                                             *(g.encode() for g in groups)]))  # fmt: skip
        few = tuple(ordered) if len(ordered) <= _FEW and not patterns else None
        return cls(markers, pattern, byte_pattern, few, tuple(raw), shapes)


class Redactor:
    """Known secret values and the names they came from; see the module docstring.

    Not a module global: each run builds one (:func:`assay.orchestration.secrets.run_redactor`)
    and passes it to what writes and prints. Adding is thread-safe and cheap to read around:
    :meth:`redact` uses one compiled alternation of every value (longest first), built when
    values are added, never per call.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._names: dict[str, None] = {}
        self._short: dict[str, None] = {}
        self._markers: dict[str, str] = {}
        self._patterns: dict[str, str] = {}
        self._matcher = _Matcher()

    @classmethod
    def from_environment(cls, environ: Mapping[str, str], *, names: Iterable[str] = ()) -> Redactor:
        """A redactor of ``environ``'s secrets (:meth:`add_environment`)."""
        redactor = cls()
        redactor.add_environment(environ, names=names)
        return redactor

    def add(self, name: str, value: str | None, *, whole: bool = True) -> None:
        """Redact ``value`` as ``[redacted:NAME]`` from now on; an empty value, or one that is
        already a redaction marker, is ignored; a value shorter than
        :data:`MIN_SECRET_LENGTH` is only recorded in :attr:`short_names`.

        ``whole=False`` adds a secret found inside a variable's value (a URL's password): the
        variable itself is not a secret one (not in :attr:`names`, so programs still get it)."""
        if not value or _MARKER.fullmatch(value):
            return
        with self._lock:
            if whole:
                self._names[name] = None
            if len(value) < MIN_SECRET_LENGTH:
                self._short[name] = None
                return
            added = {f: marker(name) for f in _forms(value) if f not in self._markers}
            if added:
                self._markers = {**self._markers, **added}
                self._matcher = _Matcher.build(self._markers, self._patterns)

    def add_pattern(self, name: str, pattern: str) -> None:
        """Redact every match of ``pattern`` (a regular expression without named groups) as
        ``[redacted:NAME]`` from now on: for credentials minted many at a time in one
        recognisable shape (the model bridge's per-row keys), which one pattern covers
        however many rows there are.

        Raises:
            re.error: ``pattern`` does not compile.
        """
        re.compile(pattern)
        with self._lock:
            if self._patterns.get(name) == pattern:
                return  # added by every row that mints a credential: built once
            self._names[name] = None
            self._patterns = {**self._patterns, name: pattern}
            self._matcher = _Matcher.build(self._markers, self._patterns)

    def add_environment(self, environ: Mapping[str, str], *, names: Iterable[str] = ()) -> None:
        """Add every secret variable of ``environ`` (by :func:`is_secret_name`, or named in
        ``names``), and the password of every URL with credentials in any variable."""
        extra = set(names)
        for name in sorted(environ):
            value = environ[name]
            if is_secret_name(name) or name in extra:
                self.add(name, value)
            elif "://" in value:
                for password in url_passwords(value):
                    self.add(name, password, whole=False)

    @property
    def names(self) -> frozenset[str]:
        """Every name whose whole value is a secret (withheld from a row's programs), short
        values included."""
        return frozenset(self._names)

    @property
    def short_names(self) -> list[str]:
        """Names whose value is too short to redact, in the order added."""
        return list(self._short)

    def __bool__(self) -> bool:
        return self._matcher.pattern is not None

    def contains(self, text: str) -> bool:
        """Whether ``text`` holds a known value (in any of its escaped forms)."""
        return self._matcher.contains(text)

    def redact(self, text: str) -> str:
        """``text`` with every known value replaced by its marker."""
        matcher = self._matcher
        if matcher.pattern is None or not matcher.contains(text):
            return text
        return matcher.pattern.sub(matcher.marker_of, text)

    def redact_bytes(self, data: bytes) -> bytes:
        """Like :meth:`redact`, for bytes (UTF-8 forms of the values)."""
        matcher = self._matcher
        if matcher.byte_pattern is None or matcher.byte_pattern.search(data) is None:
            return data
        return matcher.byte_pattern.sub(lambda m: matcher.marker_of(m).encode(), data)

    def redact_data(self, data: Any) -> Any:
        """JSON-like ``data`` (dicts, lists, strings, numbers) with every string redacted,
        mapping keys included; other values are returned as they are."""
        if not self:
            return data
        if isinstance(data, str):
            return self.redact(data)
        if isinstance(data, dict):
            return {self.redact_data(k): self.redact_data(v) for k, v in data.items()}
        if isinstance(data, list | tuple):
            return [self.redact_data(v) for v in data]
        return data

    def find_bytes(self, data: Buffer) -> list[tuple[int, int, str]]:
        """``(start, end, name)`` of every known value in ``data`` (bytes, or an ``mmap``)."""
        matcher = self._matcher
        pattern = matcher.byte_pattern
        if pattern is None:
            return []
        if matcher.few is not None and all(data.find(f) == -1 for f in matcher.few_bytes):
            return []
        return [
            (m.start(), m.end(), _name_of(matcher.marker_of(m))) for m in pattern.finditer(data)
        ]


_TOKEN = frozenset(string.ascii_letters + string.digits + "_-+/=.~")
"""The characters of API keys and tokens (base64, base64url, hex): a clip never splits a run
of them, so a secret is either whole (and redacted when known) or left out."""


def clip_head(text: str, limit: int, mark: str = "…") -> str:
    """The start of ``text``, at most ``limit`` characters with ``mark``, cut where no key
    can be split (see :data:`_TOKEN`); up to ``max(limit // 2, 256)`` more characters are
    dropped to reach such a place."""
    if len(text) <= limit:
        return text
    end = max(limit - len(mark), 0)
    floor = max(end - max(limit // 2, 256), 0)
    while end > floor and text[end - 1] in _TOKEN and text[end] in _TOKEN:
        end -= 1
    return text[:end] + mark


def clip_tail(text: str, limit: int, mark: str = "…") -> str:
    """The end of ``text``, its last ``limit`` characters after ``mark``, cut where no key
    can be split, like :func:`clip_head`."""
    if len(text) <= limit:
        return text
    start = len(text) - limit
    ceiling = min(start + max(limit // 2, 256), len(text))
    while start < ceiling and text[start - 1] in _TOKEN and text[start] in _TOKEN:
        start += 1
    return mark + text[start:]


def _name_of(text: str) -> str:
    return text[len("[redacted:") : -1]
