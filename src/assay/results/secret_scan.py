"""The secret scan of a run folder (``assay report --check-secrets RUN_DIR``, and the same
check at the end of every command that writes a run's reports).

It looks for two things and reports each by file and line, never by value:

- every value the run's :class:`~assay.results.secrets.Redactor` knows (in any of its escaped
  forms), in every file of the folder, kept sandboxes included;
- strings shaped like common provider keys (:data:`KEY_SHAPES`: OpenAI, Anthropic, AWS,
  GitHub, Google, Slack, Hugging Face, Stripe, PEM private keys, a URL's userinfo or
  credential query value such as ``?key=``/``?sig=``; and the token shapes of
  ``detect-secrets``' plugins, :data:`LIBRARY_PLUGINS`), in every file except
  inside kept sandboxes, whose template files may hold test fixtures of that shape. A match
  must look random (letters and digits mixed, not a run of one character, no ``EXAMPLE``),
  so prose such as ``risk-free-...`` or AWS's documented example key is not reported.

Small files are read into batches searched at once, large ones mapped; each key shape is
searched only where one of the literal prefixes occurs; a 2,000-row run folder (8,000 files)
is scanned in about a tenth of a second.
"""

from __future__ import annotations

import bisect
import functools
import importlib
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from assay.results.secrets import Buffer, Redactor

REPLICATE_DIR = re.compile(r"^\d{2,}$")
SANDBOX_DIR = "sandbox"


@dataclass(frozen=True)
class KeyShape:
    """What one kind of provider key looks like: literal prefixes (searched first, fast) and
    a pattern whose group ``body`` must look random (absent: the match is enough)."""

    kind: str
    prefixes: tuple[bytes, ...]
    pattern: re.Pattern[bytes]


def _shape(kind: str, prefixes: tuple[bytes, ...], pattern: bytes) -> KeyShape:
    return KeyShape(kind, prefixes, re.compile(pattern))


_START = rb"(?<![A-Za-z0-9_\-])"
KEY_SHAPES: tuple[KeyShape, ...] = (
    _shape("an Anthropic API key", (b"sk-ant-",),
           _START + rb"sk-ant-(?P<body>[A-Za-z0-9_\-]{20,})"),
    _shape("an OpenAI API key", (b"sk-",),
           _START + rb"sk-(?!ant-)(?:proj-|svcacct-|admin-)?(?P<body>[A-Za-z0-9_\-]{20,})"),
    _shape("an AWS access key id", (b"AKIA", b"ASIA"),
           rb"(?<![A-Z0-9])(?:AKIA|ASIA)(?P<body>[0-9A-Z]{16})(?![0-9A-Z])"),
    _shape("a GitHub token", (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_"),
           _START + rb"gh[pousr]_(?P<body>[A-Za-z0-9]{36,})"),
    _shape("a GitHub fine-grained token", (b"github_pat_",),
           rb"github_pat_(?P<body>[A-Za-z0-9_]{22,})"),
    _shape("a Google API key", (b"AIza",), rb"AIza(?P<body>[0-9A-Za-z_\-]{35})"),
    _shape("a Slack token", (b"xox",), _START + rb"xox[abposr]-(?P<body>[A-Za-z0-9\-]{10,})"),
    _shape("a Hugging Face token", (b"hf_",), _START + rb"hf_(?P<body>[A-Za-z0-9]{30,})"),
    _shape("a Stripe secret key", (b"sk_live_", b"rk_live_"),
           _START + rb"[sr]k_live_(?P<body>[A-Za-z0-9]{20,})"),
    _shape("a URL's userinfo token or password", (b"://",),
           rb"://(?:[^\s/@:'\"<>\[\]]*:)?(?P<body>[^\s/@:'\"<>\[\]]{8,})@"),
    _shape("a credential in a URL's query", (b"key=", b"sig=", b"code=", b"token=",
                                             b"password=", b"secret=", b"signature="),
           rb"(?i)[?&;](?:[a-z_\-]*key|sig|signature|code|[a-z_\-]*token|password|secret)"
           rb"=(?P<body>[A-Za-z0-9%+/=_\-.~]{8,})"),
    _shape("a private key", (b"PRIVATE KEY",),
           rb"-----BEGIN [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----(?:\\[nr]|\s)+"
           rb"[A-Za-z0-9+/=:,\- ]{20,}"),
)  # fmt: skip
"""The key shapes searched; see the module docstring."""


@dataclass(frozen=True)
class LibraryShape:
    """A token shape recognised by one of Yelp's ``detect-secrets`` plugins
    (:data:`LIBRARY_PLUGINS`): the plugin's own patterns are searched only where one of the
    literal ``prefixes`` occurs, and each candidate is confirmed by the plugin itself
    (``analyze_string``: a JWT must decode, for instance)."""

    plugin: Any
    prefixes: tuple[bytes, ...]
    patterns: tuple[re.Pattern[bytes], ...]

    def hits(self, data: Buffer) -> list[tuple[int, str]]:
        """``(offset, kind)`` of each confirmed token in ``data``."""
        if all(data.find(prefix) == -1 for prefix in self.prefixes):
            return []
        found: list[tuple[int, str]] = []
        for pattern in self.patterns:
            for match in pattern.finditer(data):
                text = bytes(match.group(0)).decode("utf-8", "replace")
                if "EXAMPLE" not in text.upper() and any(
                    True for _ in self.plugin.analyze_string(text)
                ):
                    found.append((match.start(), f"a string shaped like {self.plugin.secret_type}"))
        return found


LIBRARY_PLUGINS: tuple[tuple[str, tuple[bytes, ...]], ...] = (
    ("aws.AWSKeyDetector", (b"AKIA", b"ASIA", b"ABIA", b"ACCA", b"A3T", b"aws", b"AWS")),
    ("azure_storage_key.AzureStorageKeyDetector", (b"AccountKey=",)),
    ("github_token.GitHubTokenDetector", (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_")),
    ("gitlab_token.GitLabTokenDetector", (b"glpat-", b"gldt-", b"glft-", b"glsoat-", b"glrt-",
                                          b"GR1348941", b"glcbt-")),
    ("jwt.JwtTokenDetector", (b"eyJ",)),
    ("npm.NpmDetector", (b"_authToken",)),
    ("openai.OpenAIDetector", (b"T3BlbkFJ",)),
    ("pypi_token.PypiTokenDetector", (b"pypi-",)),
    ("sendgrid.SendGridDetector", (b"SG.",)),
    ("slack.SlackDetector", (b"xox", b"hooks.slack.com")),
    ("square_oauth.SquareOAuthDetector", (b"sq0csp-",)),
    ("stripe.StripeDetector", (b"k_live_",)),
)  # fmt: skip
"""The ``detect-secrets`` plugins used (``module.Class`` under ``detect_secrets.plugins``)
with the literals one of their matches must contain: those of token shapes with a fixed
prefix or structure. Left out: keyword and entropy plugins and loose shapes (Artifactory
``AP…``, Telegram ``digits:…``, Discord, public IPs), which ordinary run content (row
hashes, timestamps, transcripts) would set off or which no literal narrows (slow)."""


@functools.cache
def library_shapes() -> tuple[LibraryShape, ...]:
    """The :class:`LibraryShape` of each of :data:`LIBRARY_PLUGINS`, built once."""
    shapes = []
    for dotted, prefixes in LIBRARY_PLUGINS:
        module, _, name = dotted.rpartition(".")
        plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)()
        patterns = tuple(re.compile(p.pattern.encode(), p.flags & ~re.UNICODE)
                         for p in plugin.denylist)  # fmt: skip
        shapes.append(LibraryShape(plugin, prefixes, patterns))
    return tuple(shapes)


BATCH_BYTES = 1 << 20
"""Files up to this size are scanned in batches of about this size; larger ones on their
own, mapped rather than read. The scan's memory is a few batches whatever the run's size:
on a 20,000-row run folder batches of 1 MB took the CPU time of batches of 16 MB (2.55 s
against 2.59 s) at a peak of 5.6 MB instead of 37.8 MB."""


@dataclass(frozen=True, order=True)
class SecretFinding:
    """A secret found: the file (POSIX, relative to the scanned folder, or as given for a
    file outside it), the 1-based line, and what was found (never the value)."""

    file: str
    line: int
    kind: str

    def render(self) -> str:
        """``default/t/r1/00/task.json:12: the value of OPENAI_API_KEY`` (without a line for
        a file or folder the scan cannot read, ``line`` 0)."""
        return f"{self.file}:{self.line}: {self.kind}" if self.line else f"{self.file}: {self.kind}"


def looks_random(body: bytes) -> bool:
    """A key's body mixes letters and digits, uses several characters and is no example."""
    return (
        any(48 <= c <= 57 for c in body)
        and any(65 <= c <= 90 or 97 <= c <= 122 for c in body)
        and len(set(body)) >= 6
        and b"EXAMPLE" not in body.upper()
    )


def scan_buffer(data: Buffer, redactor: Redactor, *, shapes: bool = True) -> list[tuple[int, str]]:
    """``(line, kind)`` of every secret in ``data``; see the module docstring."""
    return sorted((_line(data, 0, offset), kind) for offset, kind in _hits(data, redactor, shapes))


def _hits(data: Buffer, redactor: Redactor, shapes: bool) -> list[tuple[int, str]]:
    """``(offset, kind)`` of every secret in ``data``."""
    spans = redactor.find_bytes(data)
    hits = [(start, f"the value of {name}") for start, _, name in spans]
    if not shapes:
        return hits
    for shape in KEY_SHAPES:
        if all(data.find(prefix) == -1 for prefix in shape.prefixes):
            continue
        for match in shape.pattern.finditer(data):
            if "body" in shape.pattern.groupindex and not looks_random(match["body"]):
                continue
            if any(start <= match.start() < end for start, end, _ in spans):
                continue  # a known value, reported by name
            hits.append((match.start(), f"a string shaped like {shape.kind}"))
    seen = {offset for offset, _ in hits}
    for offset, kind in [hit for shape in library_shapes() for hit in shape.hits(data)]:
        if offset not in seen and not any(start <= offset < end for start, end, _ in spans):
            hits.append((offset, kind))
    return hits


def _line(data: Buffer, start: int, offset: int) -> int:
    return data[start:offset].count(b"\n") + 1


UNREADABLE = "a file the scan cannot read ({reason}): make it readable, or remove it"
"""A finding (line 0) for a file or folder the scan cannot read: it may hold a secret."""


def unreadable(reason: OSError) -> str:
    """The finding's text for a file or folder that could not be read."""
    return UNREADABLE.format(reason=reason.strerror or type(reason).__name__)


SCAN_BLOCK = 1 << 20
"""Bytes a large file is read in (its memory; a file is never read whole)."""
SCAN_OVERLAP = 1 << 16
"""Bytes each block shares with the next: a secret (in any escaped form) or key shorter than
this is found whole in one block, wherever the blocks are cut."""


def scan_file(
    path: Path, redactor: Redactor, *, shapes: bool = True, block: int = SCAN_BLOCK
) -> list[tuple[int, str]]:
    """``(line, kind)`` of every secret in the file at ``path`` (empty when it is empty),
    read in blocks of ``block`` bytes that overlap by :data:`SCAN_OVERLAP`, so a file of any
    size costs the same memory; a file that cannot be read is one finding at line 0
    (:data:`UNREADABLE`): it may hold one."""
    try:
        with path.open("rb") as handle:
            return _scan_blocks(handle, redactor, shapes=shapes, block=block)
    except OSError as exc:
        return [(0, unreadable(exc))]


def _scan_blocks(
    handle: BinaryIO, redactor: Redactor, *, shapes: bool, block: int
) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    kept, lines = b"", 0  # the overlap carried over, and the newlines before it
    while True:
        read = handle.read(block)
        data = kept + read
        final = not read  # a hit that starts before `settled` is whole in `data`, and is
        settled = len(data) if final else max(0, len(data) - SCAN_OVERLAP)  # not seen again
        found += [
            (lines + data.count(b"\n", 0, offset) + 1, kind)
            for offset, kind in _hits(data, redactor, shapes)
            if offset < settled
        ]
        if final:
            return sorted(found)
        lines += data.count(b"\n", 0, settled)
        kept = data[settled:]


def _files(folder: str) -> Iterator[tuple[str, int | OSError, bool]]:
    """Every regular file under ``folder`` (symlinks not followed): its path, its size (or
    the error that kept a folder from being listed) and whether key shapes are searched in
    it (not inside a kept sandbox, ``<NN>/sandbox/``). The walk holds one open listing per
    level, never a whole folder's entries, so a suite of a million row folders costs no
    more memory than one of ten."""
    try:
        top = os.scandir(folder)
    except OSError:
        return
    stack: list[tuple[Iterator[os.DirEntry[str]], bool, str]] = [(top, True, folder)]
    try:
        while stack:
            entries, shapes, directory = stack[-1]
            entry = next(entries, None)
            if entry is None:
                _close(stack.pop()[0])
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    kept = entry.name == SANDBOX_DIR and REPLICATE_DIR.match(
                        os.path.basename(directory)) is not None  # fmt: skip
                    stack.append((os.scandir(entry.path), shapes and not kept, entry.path))
                elif entry.is_file(follow_symlinks=False):
                    yield entry.path, entry.stat(follow_symlinks=False).st_size, shapes
            except OSError as exc:
                if entry.is_dir(follow_symlinks=False):  # a folder that cannot be listed
                    yield entry.path, exc, shapes
    finally:
        for entries, _, _ in stack:
            _close(entries)


def _close(entries: Iterator[os.DirEntry[str]]) -> None:
    close = getattr(entries, "close", None)
    if close is not None:
        close()


@dataclass
class _Batch:
    """Small files read into one buffer (joined by NUL bytes, which no environment value
    holds), so a scan costs a few searches over all of them instead of a few per file."""

    shapes: bool
    parts: list[bytes] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    size: int = 0

    def scan(self, redactor: Redactor) -> list[SecretFinding]:
        data = b"\0".join(self.parts)
        starts, position = [], 0
        for part in self.parts:
            starts.append(position)
            position += len(part) + 1
        found = []
        for offset, kind in _hits(data, redactor, self.shapes):
            index = bisect.bisect_right(starts, offset) - 1
            found.append(SecretFinding(self.names[index], _line(data, starts[index], offset), kind))
        self.parts, self.names, self.size = [], [], 0
        return found


def scan_run(
    run_dir: Path,
    redactor: Redactor,
    *,
    extra_files: Iterable[Path] = (),
    batch_bytes: int = BATCH_BYTES,
) -> list[SecretFinding]:
    """Every secret in the run folder ``run_dir`` and in ``extra_files`` (a JUnit XML file
    written elsewhere), sorted by file and line; ``batch_bytes``: see :data:`BATCH_BYTES`."""
    findings: list[SecretFinding] = []
    root = os.path.join(str(run_dir), "")
    batches = {True: _Batch(True), False: _Batch(False)}
    for path, size, shapes in _files(root):
        shown = path[len(root) :].replace(os.sep, "/")
        if isinstance(size, OSError):
            findings.append(SecretFinding(shown, 0, unreadable(size).replace("file", "folder", 1)))
            continue
        if size > batch_bytes:
            found = scan_file(Path(path), redactor, shapes=shapes)
            findings += [SecretFinding(shown, line, kind) for line, kind in found]
            continue
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            findings.append(SecretFinding(shown, 0, unreadable(exc)))
            continue
        batch = batches[shapes]
        batch.parts.append(data)
        batch.names.append(shown)
        batch.size += len(data)
        if batch.size > batch_bytes:
            findings += batch.scan(redactor)
    for batch in batches.values():
        findings += batch.scan(redactor)
    for extra in extra_files:
        findings += [SecretFinding(str(extra), line, kind)
                     for line, kind in scan_file(extra, redactor)]  # fmt: skip
    return sorted(set(findings))
