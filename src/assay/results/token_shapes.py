"""Well-known token shapes: one rule for the writer, which redacts them as it writes
(:meth:`assay.results.secrets.Redactor.redact`), and for the end-of-run scan, which reports
any it still finds (:mod:`assay.results.secret_scan`).

Two sources, searched the same way: :data:`KEY_SHAPES` (provider keys whose prefixes assay
knows: OpenAI, Anthropic, AWS key ids and secret keys (after their name, quoted or not),
GitHub, Google, Slack, Hugging Face, Stripe, npm access tokens, PEM
private keys, a URL's userinfo or credential query value such as ``?key=``/``?sig=``) and
the token shapes of Yelp's ``detect-secrets`` plugins (:data:`LIBRARY_PLUGINS`: GitLab, npm,
JWTs, Azure storage account keys, AWS secret keys, SendGrid, PyPI...), each confirmed by its
plugin. A shape is searched only where one of its literal prefixes occurs, so text without
them costs one substring search per prefix.

What is not a token, so ordinary run content (sha256 and sha1 hashes, UUIDs, row ids,
base64 of data, prose) is left alone: a key's body must look random (:func:`looks_random`:
letters and digits mixed, several characters, no ``EXAMPLE``); a shape without a fixed
start (``AIza``, an AWS key id) must start a word, and one of fixed length must also end
one, so a run of hex or base64 that merely contains ``ACCA…`` or ``ghp_…`` is no token.
"""

from __future__ import annotations

import base64
import functools
import importlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from mmap import mmap
from typing import Any, TypeAlias

Buffer: TypeAlias = bytes | mmap

_START = rb"(?<![A-Za-z0-9_\-+/])"
_TOKEN_TAIL = re.compile(rb"(?:[A-Za-z0-9_\-+/=]|\.(?=[A-Za-z0-9_\-]))*")
"""The token characters right after a match: redacted with it (a JWT's signature, which the
library's pattern leaves out, or the rest of a key longer than its pattern requires)."""
_WORD_CHAR = re.compile(rb"[A-Za-z0-9]")


@dataclass(frozen=True)
class TokenHit:
    """One token found: byte offsets ``start``/``end`` of what to redact, the ``kind`` (for
    the scan: ``a string shaped like a GitHub token``) and the ``name`` of its marker
    (``github-token``: written as ``[redacted:github-token]``)."""

    start: int
    end: int
    kind: str
    name: str


@dataclass(frozen=True)
class KeyShape:
    """What one kind of provider key looks like: literal prefixes (searched first, fast) and
    a pattern whose group ``body`` must look random (absent: the match is enough).

    ``name`` is its marker's name; ``body_only`` redacts only ``body`` (a URL's password,
    not the URL around it)."""

    kind: str
    name: str
    prefixes: tuple[bytes, ...]
    pattern: re.Pattern[bytes]
    body_only: bool = False
    anchor: tuple[bytes, int, int] | None = None
    """``(literal, before, after)`` of a shape with no literal at its start: it is matched
    only in a window of ``before`` bytes before each ``literal`` and ``after`` bytes from
    it (the ``re`` module searches a pattern that starts with a literal fast, others not)."""
    plausible: Callable[[bytes], bool] | None = None
    """Whether a match's body is a key rather than an example (``None``:
    :func:`looks_random`)."""

    def _matches(self, data: Buffer) -> Iterator[re.Match[bytes]]:
        if self.anchor is None:
            yield from self.pattern.finditer(data)
            return
        literal, before, after = self.anchor
        found, end = data.find(literal), -1
        while found != -1:
            match = self.pattern.search(data, max(found - before, end, 0),
                                        min(found + after + 1, len(data)))  # fmt: skip
            if match is not None:
                end = match.end()
                yield match
            found = data.find(literal, found + 1)

    def hits(self, data: Buffer) -> Iterator[TokenHit]:
        """Every token of this shape in ``data``."""
        kind = f"a string shaped like {self.kind}"
        for match in self._matches(data):
            has_body = "body" in self.pattern.groupindex
            if has_body and not (self.plausible or looks_random)(match["body"]):
                continue
            if self.body_only and has_body:
                yield TokenHit(match.start("body"), match.end("body"), kind, self.name)
            else:
                yield TokenHit(match.start(), _token_end(data, match.end()), kind, self.name)


def _shape(kind: str, name: str, prefixes: tuple[bytes, ...], pattern: bytes,
           *, body_only: bool = False, anchor: tuple[bytes, int, int] | None = None,
           plausible: Callable[[bytes], bool] | None = None) -> KeyShape:  # fmt: skip
    return KeyShape(kind, name, prefixes, re.compile(pattern), body_only, anchor, plausible)


def basic_credentials(body: bytes) -> bool:
    """``body`` is the base64 of ``user:password`` (HTTP Basic, RFC 7617), or looks random:
    a Basic header's base64 often has no digit (``dXNlcjpQejNP…``), and the header is the
    evidence."""
    if looks_random(body):
        return True
    try:
        text = base64.b64decode(body, validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return False
    user, colon, password = text.partition(":")
    return bool(colon) and bool(user) and len(password) >= 4 and text.isprintable()


KEY_SHAPES: tuple[KeyShape, ...] = (
    _shape("an Anthropic API key", "anthropic-key", (b"sk-ant-",),
           _START + rb"sk-ant-(?P<body>[A-Za-z0-9_\-]{20,})"),
    _shape("an OpenAI API key", "openai-key", (b"sk-",),
           _START + rb"sk-(?!ant-)(?:proj-|svcacct-|admin-)?(?P<body>[A-Za-z0-9_\-]{20,})"),
    _shape("an AWS access key id", "aws-access-key-id", (b"AKIA", b"ASIA"),
           rb"(?<![A-Za-z0-9])(?:AKIA|ASIA)(?P<body>[0-9A-Z]{16})(?![A-Za-z0-9])"),
    _shape("a GitHub token", "github-token", (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_"),
           _START + rb"gh[pousr]_(?P<body>[A-Za-z0-9]{36,})"),
    _shape("a GitHub fine-grained token", "github-token", (b"github_pat_",),
           _START + rb"github_pat_(?P<body>[A-Za-z0-9_]{22,})"),
    _shape("a Google API key", "google-api-key", (b"AIza",),
           _START + rb"AIza(?P<body>[0-9A-Za-z_\-]{35})"),
    _shape("a Slack token", "slack-token", (b"xox",),
           _START + rb"xox[abposr]-(?P<body>[A-Za-z0-9\-]{10,})"),
    _shape("a Hugging Face token", "huggingface-token", (b"hf_",),
           _START + rb"hf_(?P<body>[A-Za-z0-9]{30,})"),
    _shape("a Stripe secret key", "stripe-key", (b"sk_live_", b"rk_live_"),
           _START + rb"[sr]k_live_(?P<body>[A-Za-z0-9]{20,})"),
    _shape("an npm access token", "npm-token", (b"npm_",),
           _START + rb"npm_(?P<body>[A-Za-z0-9]{36})(?![A-Za-z0-9])"),
    # the 40 characters after its name, quoted or not: ~/.aws/credentials, `env`, .env
    # files, `aws sts` JSON (detect-secrets' own pattern wants the key quoted)
    # the secret beside its key id: the credentials CSV AWS hands out (`AKIA…,wJal…`), or
    # the two on one line with a space, a tab, `:` or `=` between
    _shape("an AWS secret access key", "aws-secret-key", (b"AKIA", b"ASIA"),
           rb"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}[\s,;:|=]{1,4}\"?"
           rb"(?P<body>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])", body_only=True),
    _shape("an AWS secret access key", "aws-secret-key",
           (b"SECRET_ACCESS_KEY", b"secret_access_key", b"SecretAccessKey", b"secretAccessKey",
            b"SECRET_KEY", b"secret_key"),
           rb"(?i)(?:secret_?access_?key|aws_?secret_?key)[\"']?\s*[=:]\s*[\"']?"
           rb"(?P<body>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])", body_only=True),
    # detect-secrets' Twilio, Mailchimp, Telegram, Artifactory and IBM COS HMAC detectors,
    # tightened to whole words and random bodies (their own patterns also match inside
    # hashes and prose), each led by its literal so a text is searched fast
    _shape("a Twilio API key", "twilio-key", (b"AC", b"SK"),
           rb"(?:AC|SK)(?<![A-Za-z0-9]..)(?P<body>[a-f0-9]{32})(?![A-Za-z0-9])"),
    _shape("a Mailchimp access key", "mailchimp-key", (b"-us",),
           rb"(?<![A-Za-z0-9])(?P<body>[0-9a-f]{32})-us[0-9]{1,2}(?![A-Za-z0-9])",
           anchor=(b"-us", 32, 6)),
    _shape("a Telegram bot token", "telegram-token", (b":AA",),
           rb"(?<![0-9])[0-9]{8,10}:(?P<body>AA[0-9A-Za-z_\-]{33})(?![0-9A-Za-z_\-])",
           anchor=(b":AA", 10, 37)),
    _shape("an Artifactory token", "artifactory-token", (b"AKC",),
           rb"AKC(?<![A-Za-z0-9]...)(?P<body>[A-Za-z0-9]{10,})"),
    _shape("IBM COS HMAC credentials", "ibm-cos-hmac", (b"ecret", b"ECRET"),
           rb"(?i)secret[-_]?(?:access)?[-_]?key[\"']?\s*[=:]\s*[\"']?"
           rb"(?P<body>[a-f0-9]{48})(?![A-Za-z0-9])", body_only=True),
    # tokens of other services with a fixed start, and a bearer token after its scheme
    _shape("a DigitalOcean token", "digitalocean-token", (b"_v1_",),
           rb"do[opr]_v1_(?<![A-Za-z0-9_\-+/]do._v1_)(?P<body>[a-f0-9]{64})"),
    _shape("a Databricks token", "databricks-token", (b"dapi",),
           rb"dapi(?<![A-Za-z0-9]dapi)(?P<body>[a-f0-9]{32})(?:-[0-9])?(?![A-Za-z0-9])"),
    _shape("a Shopify token", "shopify-token", (b"shp",),
           rb"shp(?:at|ca|pa|ss)_(?<![A-Za-z0-9_\-+/]shp.._)(?P<body>[a-fA-F0-9]{32})"),
    _shape("a bearer token", "bearer-token", (b"Bearer", b"bearer", b"BEARER"),
           rb"(?i)bearer(?<![A-Za-z0-9]bearer)\s+(?P<body>[A-Za-z0-9._~+/\-]{20,}=*)",
           body_only=True),
    _shape("an Authorization header's credentials", "authorization",
           (b"uthorization", b"UTHORIZATION"),
           rb"(?i)authorization[\"']?\s*[:=]\s*[\"']?(?:basic|token|digest|apikey)\s+"
           rb"(?P<body>[A-Za-z0-9._~+/\-]{8,}=*)", body_only=True, plausible=basic_credentials),
    _shape("a Square access token", "square-token", (b"EAAA",),
           rb"EAAA(?<![A-Za-z0-9_\-]EAAA)(?P<body>[A-Za-z0-9_\-]{56,})"),
    _shape("a URL's userinfo token or password", "url-credential", (b"://",),
           rb"://(?:[^\s/@:'\"<>\[\]]*:)?(?P<body>[^\s/@:'\"<>\[\]]{8,})@", body_only=True),
    _shape("a credential in a URL's query", "url-credential",
           (b"key=", b"sig=", b"code=", b"token=", b"password=", b"secret=", b"signature="),
           rb"(?i)[?&;](?:[a-z_\-]*key|sig|signature|code|[a-z_\-]*token|password|secret)"
           rb"=(?P<body>[A-Za-z0-9%+/=_\-.~]{8,})", body_only=True),
    _shape("a secret-named variable's value", "secret-variable",
           (b"TOKEN", b"SECRET", b"PASSWORD", b"_KEY", b"token", b"secret", b"password",
            b"Token", b"Secret", b"Password", b"api-key", b"Api-Key", b"api_key"),
           rb"(?:(?<!-)(?i:token|secret|password)|(?i:api[_-]key)|_KEY)[\"']?\s*[=:]\s*[\"']?"
           # not a marker redaction wrote; a JSON escape (``\n``) ends the value
           rb"(?!\[redacted:)(?P<body>[^\s'\"`;&|,}\\]{8,})", body_only=True),
    _shape("a private key", "private-key", (b"PRIVATE KEY",),
           rb"-----BEGIN [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----(?:\\[nr]|\s)+"
           rb"[A-Za-z0-9+/=:,\- ]{20,}(?:(?:\\[nr]|[A-Za-z0-9+/=:,\- \t\r\n])*?"
           rb"-----END [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----"
           # no END line (a key cut short): every base64 line that follows
           rb"|(?:(?:\\r|[\t\r ])*(?:\\n|\n)(?:\\r|[\t\r ])*[A-Za-z0-9+/=]{4,})*)"),
    _shape("the end of a private key", "private-key", (b"PRIVATE KEY",),
           # its base64 lines and END line without the BEGIN line (a tail cut in the key)
           rb"(?:(?<=\\[nr])|(?<![A-Za-z0-9+/=\\]))"
           rb"[A-Za-z0-9+/=]{4,}(?:(?:\\[nr]|\s)+[A-Za-z0-9+/=]{4,})*"
           rb"(?:\\[nr]|\s)+-----END [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----"),
)  # fmt: skip
"""The key shapes assay knows itself; see the module docstring."""


@dataclass(frozen=True)
class LibraryShape:
    """A token shape recognised by one of Yelp's ``detect-secrets`` plugins
    (:data:`LIBRARY_PLUGINS`): the plugin's own patterns are searched only where one of the
    literal ``prefixes`` occurs, and each candidate is confirmed by the plugin itself
    (``analyze_string``: a JWT must decode, for instance). ``whole_word``: a match must
    neither start nor end inside a run of letters and digits (fixed-length shapes)."""

    plugin: Any
    name: str
    prefixes: tuple[bytes, ...]
    patterns: tuple[re.Pattern[bytes], ...]
    whole_word: bool

    @property
    def kind(self) -> str:
        """``a string shaped like`` the plugin's secret type, as the scan reports it."""
        return f"a string shaped like {self.plugin.secret_type}"

    def hits(self, data: Buffer) -> Iterator[TokenHit]:
        """Every confirmed token of this shape in ``data``."""
        for pattern in self.patterns:
            for match in pattern.finditer(data):
                start, end = _span(match)
                whole = start == match.start()  # not a group of it (an AWS secret key)
                if whole and _inside_word(data, start, end, both_ends=self.whole_word):
                    continue  # part of a longer run of letters and digits (base64 of data)
                text = bytes(match.group(0)).decode("utf-8", "replace")
                if "EXAMPLE" in text.upper() or not any(
                    True for _ in self.plugin.analyze_string(text)
                ):
                    continue
                if whole:
                    end = _token_end(data, end)
                yield TokenHit(start, end, self.kind, self.name)


def _span(match: re.Match[bytes]) -> tuple[int, int]:
    """What of a library match to redact: its longest group when that is a secret of 16
    characters or more (the 40 characters of an AWS secret key in ``aws_secret = '…'``),
    else the whole match (a group that is only the prefix, GitHub's ``ghp``)."""
    groups = [i for i in range(1, (match.re.groups or 0) + 1) if match.start(i) != -1]
    if groups:
        longest = max(groups, key=lambda i: match.end(i) - match.start(i))
        if match.end(longest) - match.start(longest) >= 16:
            return match.start(longest), match.end(longest)
    return match.start(), match.end()


def _inside_word(data: Buffer, start: int, end: int, *, both_ends: bool) -> bool:
    """Whether a letter or digit comes right before ``start`` (or, ``both_ends``, right
    after ``end``)."""
    if start > 0 and _WORD_CHAR.match(data, start - 1) is not None:
        return True
    return both_ends and _WORD_CHAR.match(data, end) is not None


def _token_end(data: Buffer, end: int) -> int:
    match = _TOKEN_TAIL.match(data, end)
    return match.end() if match is not None else end


LIBRARY_PLUGINS: tuple[tuple[str, tuple[bytes, ...], bool], ...] = (
    ("aws.AWSKeyDetector", (b"AKIA", b"ASIA", b"ABIA", b"ACCA", b"A3T", b"aws", b"AWS"), True),
    ("azure_storage_key.AzureStorageKeyDetector", (b"AccountKey=",), False),
    ("github_token.GitHubTokenDetector", (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_"), True),
    ("gitlab_token.GitLabTokenDetector", (b"glpat-", b"gldt-", b"glft-", b"glsoat-", b"glrt-",
                                          b"GR1348941", b"glcbt-", b"glimt-", b"glptt-",
                                          b"glagent-", b"gloas-"), False),
    ("jwt.JwtTokenDetector", (b"eyJ",), False),
    ("npm.NpmDetector", (b"_authToken",), False),
    ("openai.OpenAIDetector", (b"T3BlbkFJ",), True),
    ("pypi_token.PypiTokenDetector", (b"pypi-",), False),
    ("sendgrid.SendGridDetector", (b"SG.",), True),
    ("slack.SlackDetector", (b"xox", b"hooks.slack.com"), False),
    ("square_oauth.SquareOAuthDetector", (b"sq0csp-",), True),
    ("stripe.StripeDetector", (b"k_live_",), False),
)  # fmt: skip
"""The ``detect-secrets`` plugins used (``module.Class`` under ``detect_secrets.plugins``)
with the literals one of their matches must contain (those of token shapes with a fixed
prefix or structure) and whether a match must be a whole word. Left out: keyword and
entropy plugins and loose shapes (Artifactory ``AP…``, Discord, public IPs), which ordinary
run content (row hashes, timestamps, transcripts) would set off or which no literal narrows
(slow); Twilio, Mailchimp, Telegram (``digits:AA…``), Artifactory ``AKC…`` and IBM COS HMAC
are :data:`KEY_SHAPES`, tightened to whole words and led by their literals."""
_LIBRARY_PREFIXES = tuple(p for _, prefixes, _ in LIBRARY_PLUGINS for p in prefixes)


@functools.cache
def library_shapes() -> tuple[LibraryShape, ...]:
    """The :class:`LibraryShape` of each of :data:`LIBRARY_PLUGINS`, built once."""
    shapes = []
    for dotted, prefixes, whole_word in LIBRARY_PLUGINS:
        module, _, name = dotted.rpartition(".")
        plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)()
        patterns = tuple(re.compile(p.pattern.encode(), p.flags & ~re.UNICODE)
                         for p in plugin.denylist)  # fmt: skip
        marker = re.sub(r"[^a-z0-9]+", "-", plugin.secret_type.lower()).strip("-")
        shapes.append(LibraryShape(plugin, marker, prefixes, patterns, whole_word))
    return tuple(shapes)


def all_shapes() -> tuple[KeyShape | LibraryShape, ...]:
    """Every shape: :data:`KEY_SHAPES` first (their kinds and names win an overlap)."""
    return (*KEY_SHAPES, *library_shapes())


def all_prefixes() -> tuple[bytes, ...]:
    """Every literal a token of some shape contains (a text without any holds none)."""
    return _prefixes()


@functools.cache
def _prefixes() -> tuple[bytes, ...]:
    return tuple(dict.fromkeys([*(p for shape in KEY_SHAPES for p in shape.prefixes),
                                *_LIBRARY_PREFIXES]))  # fmt: skip


def find_tokens(data: Buffer) -> list[TokenHit]:
    """Every token in ``data`` (bytes, or an ``mmap``), sorted by start; overlapping hits are
    merged into one (the first shape's kind and name). ``detect-secrets`` is imported only
    when ``data`` holds one of its shapes' literals (a command's help text never does)."""
    present = {prefix for prefix in _prefixes() if data.find(prefix) != -1}  # each once
    if not present:
        return []
    shapes: tuple[KeyShape | LibraryShape, ...] = KEY_SHAPES
    if not present.isdisjoint(_LIBRARY_PREFIXES):
        shapes = all_shapes()
    hits: list[TokenHit] = []
    for shape in shapes:
        if present.isdisjoint(shape.prefixes):
            continue
        hits.extend(shape.hits(data))
    hits.sort(key=lambda hit: (hit.start, -hit.end))
    merged: list[TokenHit] = []
    for hit in hits:
        if merged and hit.start < merged[-1].end:
            last = merged[-1]
            if hit.end > last.end:
                merged[-1] = TokenHit(last.start, hit.end, last.kind, last.name)
            continue
        merged.append(hit)
    return merged


def redact_tokens(data: bytes, mark: str = "[redacted:{name}]") -> bytes:
    """``data`` with each token of :func:`find_tokens` replaced by ``[redacted:NAME]``;
    ``data`` itself (the same object) when it holds none."""
    hits = find_tokens(data)
    if not hits:
        return data
    parts: list[bytes] = []
    done = 0
    for hit in hits:
        parts += [data[done : hit.start], mark.format(name=hit.name).encode()]
        done = hit.end
    return b"".join([*parts, data[done:]])


def looks_random(body: bytes) -> bool:
    """A key's body mixes letters and digits, uses several characters and is no example."""
    return (
        any(48 <= c <= 57 for c in body)
        and any(65 <= c <= 90 or 97 <= c <= 122 for c in body)
        and len(set(body)) >= 6
        and b"EXAMPLE" not in body.upper()
    )
