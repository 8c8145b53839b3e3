"""Secrets: which environment variables hold one, and the redactor that keeps their values
out of everything assay writes and prints.

A variable holds a secret when its name (compared in upper case) ends in one of
:data:`SECRET_SUFFIXES` (``_KEY``, ``_TOKEN``, ``_PASSWORD``, ``_PASS``, ``_PWD``, ``_PAT``,
``_DSN``, ``_AUTH``, ``_CREDENTIALS``, ``_CREDS``, ``_PW``, ``_COOKIE``, ...), contains
``SECRET``, ``PASSWORD``, ``PASSWD``, ``PASSPHRASE``, ``CREDENTIAL``, ``API_KEY``,
``PRIVATE_KEY``, ``AUTH_HEADER``, ``AUTHORIZATION``, ``AUTH_CONFIG``, ``OTP`` as a word,
``PASS`` as a word (and ``SSHPASS``), or ``TOKEN`` (not ``TOKENS`` or ``TOKENIZER``:
``CLAUDE_CODE_MAX_OUTPUT_TOKENS`` and ``TOKENIZERS_PARALLELISM`` are settings), ignoring a
trailing number (``MY_API_KEY_1``), or is one of :data:`PROVIDER_CREDENTIALS` (the
credential variables of the model providers, agent CLIs and database clients assay knows); a
task adds the variables it names in ``api_key_env``. The secrets of a URL in any variable or
``base_url`` are secrets too (:func:`url_secrets`): its password
(``scheme://user:password@host``, ``?password=...``), and for a web URL the token of
``https://TOKEN@host`` and its query values (``?key=...``, an Azure SAS's ``sig``), so
``https://[redacted:base_url]@host/v1?key=[redacted:base_url]`` is what assay writes and
prints.

A :class:`Redactor` holds every known secret value with the name it came from and replaces
each occurrence by ``[redacted:NAME]``. It is built once per run and held by the run's one
writer (:class:`assay.results.io.Writer`: every file, the response cache, a store capture)
and joined to the one console (:mod:`assay.results.output`); a later part adds its values
with :meth:`Redactor.add` (the model bridge's upstream keys) or one pattern for many with
:meth:`Redactor.add_pattern` (per-row credentials, known when the run is planned), from any
thread, at any time. Values shorter than
:data:`MIN_SECRET_LENGTH` characters are not redacted (they would mangle ordinary text):
:attr:`Redactor.short_names` lists them, and ``assay plan`` warns about them.

Beyond the values it knows, a redactor replaces well-known token shapes wherever they
appear (:mod:`assay.results.token_shapes`, the rule the end-of-run scan reports by: GitLab,
npm, JWTs, AWS, GitHub, Slack, Stripe, private keys, a URL's credentials...) as
``[redacted:gitlab-token]`` and the like, so a token the run never named (one the agent
printed, or found in a file) is not written either.
"""

from __future__ import annotations

import html
import json
import re
import string
import threading
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from mmap import mmap
from typing import Any, TypeAlias
from urllib.parse import unquote, unquote_plus, urlsplit

from assay.results.token_shapes import find_tokens, redact_tokens

Buffer: TypeAlias = bytes | mmap

MIN_SECRET_LENGTH = 8
"""Shorter values are not redacted: ``[redacted:X]`` in place of every ``none`` or ``1234``
would garble reports, and so short a value protects little."""

SECRET_SUFFIXES = (
    "_KEY",
    "_APIKEY",
    "_TOKEN",
    "_SECRET",
    "_PASSWORD",
    "_PASSWD",
    "_PASS",
    "_PWD",
    "_PW",
    "_PAT",
    "_DSN",
    "_AUTH",
    "_CREDENTIAL",
    "_CREDENTIALS",
    "_CREDS",
    "_COOKIE",
)
_SECRET_WORDS = re.compile(
    r"SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|TOKEN(?!S|IZ)|API_?KEY|PRIVATE_?KEY"
    r"|AUTH_HEADER|AUTHORIZATION|AUTH_CONFIG|^SSHPASS$|(?:^|_)PASS(?:_|$)|(?:^|_)OTP(?:_|$)"
)
_NUMBERED = re.compile(r"_?\d+$")
"""A numbered copy (``MY_API_KEY_1``, ``DB_PASSWORD2``) is read as its name without the number."""

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
        "PGPASSWORD",
        "MYSQL_PWD",
    }
)
"""Credential variables of providers and agent CLIs, withheld and redacted whatever their
names look like (``AWS_ACCESS_KEY_ID`` ends in ``_ID``)."""

WIDE_ENCODINGS = ("utf-16-le", "utf-16-be")
"""The other encodings a known value is searched in, in bytes (a kept file, a stream)."""

_FEW = 16
"""Up to this many forms, :meth:`Redactor.contains` runs one substring search per form
(measured faster than the alternation when the values start with different characters)."""
_MARKER = re.compile(r"\[redacted:[^\]\s]*\]")
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s/@]+@")
_PASSWORD_PARAMETER = re.compile(r"(?:^|[?&\s])password=([^&\s'\"]+)", re.IGNORECASE)
"""A libpq/SQLAlchemy ``password=`` parameter: in a URL's query (``...?password=pw``) or a
connection string (``host=db password=pw``)."""


def is_secret_name(name: str) -> bool:
    """True when the variable ``name`` holds a secret by its name (see the module docstring)."""
    upper = _NUMBERED.sub("", name.upper().replace("-", "_"))  # a header: x-api-key
    return (
        upper.endswith(SECRET_SUFFIXES)
        or _SECRET_WORDS.search(upper) is not None
        or upper in PROVIDER_CREDENTIALS
    )


MARKER_PREFIX = "[redacted:"
"""How every redaction marker starts (:func:`marker`)."""


def marker(name: str) -> str:
    """``[redacted:NAME]``; characters other than letters, digits, ``_.-`` become ``_``."""
    return f"{MARKER_PREFIX}{_NAME_UNSAFE.sub('_', name)}]"


def url_passwords(value: str) -> list[str]:
    """The passwords of the URLs with credentials in ``value`` (``postgresql://u:pw@host``)
    and of its ``password=`` parameters (``postgresql://u@host/db?password=pw``, libpq's
    ``host=h password=pw``), as written and percent-decoded."""
    found: dict[str, None] = {}
    passwords: list[str] = []
    for match in _URL_IN_TEXT.finditer(value):
        try:
            password = urlsplit(match.group(0) + "host").password
        except ValueError:
            continue
        passwords.append(password or "")
    passwords += _PASSWORD_PARAMETER.findall(value)
    for password in passwords:
        if password:
            found.update(dict.fromkeys([password, unquote(password), unquote_plus(password)]))
    return list(found)


_WEB_URL = re.compile(r"(?i)\b(?:https?|wss?)://[^\s'\"<>]+")
WEB_URL_SETTINGS = frozenset(
    {"api-version", "sv", "ss", "srt", "sp", "se", "st", "spr", "sr", "sip", "si", "skoid"}
)
"""Query parameters of a web URL that are settings, not secrets: the API version and the
fields of an Azure SAS token other than its signature ``sig`` (they say what it grants and
until when). Every other query value is a secret (``?key=``, ``?api-key=``, ``?code=``,
``?sig=``, ``?token=``...)."""


def url_secrets(value: str) -> list[str]:
    """The secrets of the URLs in ``value``, as written and percent-decoded: the passwords of
    :func:`url_passwords` (any scheme), and for web URLs (``http``, ``https``, ``ws``,
    ``wss``, as a model's ``base_url`` is) the user of a userinfo without password
    (``https://TOKEN@host/v1``) and every query value but :data:`WEB_URL_SETTINGS`
    (``?api-key=...``, an Azure SAS's ``sig``). One rule for every URL assay records: its
    agents' and judges' ``base_url``, the store URL, bridge upstreams, any variable."""
    found: dict[str, None] = dict.fromkeys(url_passwords(value))
    for match in _WEB_URL.finditer(value):
        try:
            parts = urlsplit(match.group(0))
            user, password = parts.username, parts.password
        except ValueError:
            continue
        secrets = [user] if user and password is None else []
        for pair in parts.query.split("&"):
            name, equals, given = pair.partition("=")
            if equals and given and unquote_plus(name).lower() not in WEB_URL_SETTINGS:
                secrets.append(given)
        for secret in secrets:
            found.update(dict.fromkeys([secret, unquote(secret), unquote_plus(secret)]))
    return list(found)


def _python_reprs(value: str) -> list[str]:
    """``value`` as Python's ``repr`` writes it inside a longer string, in either of its
    quotes (``'`` escaped or not): ``repr("a'b")`` is ``"a'b"``, ``repr("a'b\"")`` escapes
    the ``'``."""
    return [repr(value)[1:-1], repr(value + "'\"")[1:-4]]


def _writer_forms(text: str) -> list[str]:
    """``text`` as each of assay's writers escapes it: as is; JSON (with and without ASCII
    escapes, and with Go's ``encoding/json`` escapes of ``<>&``, as in report.html's data);
    XML and HTML (element text, attributes, Jinja2's ``&#34;``/``&#39;``); a Markdown table
    cell."""
    as_json = json.dumps(text, ensure_ascii=False)[1:-1]
    xml = html.escape(text, quote=False)
    return [
        text,
        as_json,
        json.dumps(text)[1:-1],
        as_json.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"),
        xml,
        xml.replace('"', "&quot;").replace("\n", "&#10;"),
        xml.replace('"', "&#34;").replace("'", "&#39;"),
        html.escape(text, quote=True),
        text.replace("|", "\\|").replace("\r\n", "⏎").replace("\n", "⏎").replace("\r", "⏎"),
    ]


def _forms(value: str) -> list[str]:
    """Every way ``value`` can appear in what assay writes: as is, without its surrounding
    whitespace, as Python's ``repr`` and JSON write it inside a string, each of these as
    assay's writers escape it (:func:`_writer_forms`), and, for a value of several lines (a
    PEM key), each line long enough to redact on its own."""
    bare = [value, value.strip()]
    if "\n" in value:
        bare += [line.strip() for line in value.splitlines()]
    inner: dict[str, None] = {}
    for text in bare:
        inner.update(dict.fromkeys([text, *_python_reprs(text), json.dumps(text)[1:-1]]))
    forms = [form for text in inner for form in _writer_forms(text)]
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
    heads: dict[str, str] = field(default_factory=dict)
    """Each form's starts of :data:`MIN_SECRET_LENGTH` characters or more (not the whole
    form), with its marker: what a clip can leave before its cut mark."""
    tails: dict[str, str] = field(default_factory=dict)
    """Each form's ends, likewise: what a clip can leave after its cut mark."""
    head_marks: re.Pattern[str] | None = None
    """A cut mark right after the last :data:`MIN_SECRET_LENGTH` characters of a head: the
    places to look, found by one search in C however many marks a text holds."""
    tail_marks: re.Pattern[str] | None = None
    """A cut mark right before the first characters of a tail, likewise."""
    wide: dict[bytes, tuple[str, str]] = field(default_factory=dict)
    """Each form in UTF-16 (:data:`WIDE_ENCODINGS`: what Windows tools and PowerShell's ``>``
    write), with its marker and encoding: ``byte_pattern`` finds those too."""

    def contains(self, text: str) -> bool:
        if self.few is not None:  # a few values: one C-level substring search each is faster
            found = any(form in text for form in self.few)
        else:
            found = self.pattern is not None and self.pattern.search(text) is not None
        return found or bool(self.fragments(text))

    def marker_of(self, match: re.Match[str] | re.Match[bytes]) -> str:
        if match.lastgroup is not None:
            return marker(self.shapes[int(match.lastgroup[1:])])
        found = match.group(0)
        if isinstance(found, bytes) and found in self.wide:
            return self.wide[found][0]
        return self.markers[found.decode("utf-8", "surrogatepass") if isinstance(found, bytes)
                            else found]  # fmt: skip

    def replacement(self, match: re.Match[bytes]) -> bytes:
        """The marker of a byte match, in the encoding of what it replaces (a UTF-16 file
        stays UTF-16)."""
        shown = self.marker_of(match)
        wide = self.wide.get(match.group(0))
        return shown.encode(wide[1] if wide is not None else "utf-8")

    def fragments(self, text: str) -> list[tuple[int, int, str]]:
        """``(start, end, marker)`` of each piece of a known value left at a cut mark (a
        start right before ``…``/``...``, an end right after), longest piece first."""
        if not self.heads or ("…" not in text and "..." not in text):
            return []
        assert self.head_marks is not None and self.tail_marks is not None
        found: list[tuple[int, int, str]] = []
        for cut in self.head_marks.finditer(text):
            start = cut.start()
            piece = max((h for h in self.heads if text.endswith(h, 0, start)), key=len)
            found.append((start - len(piece), start, self.heads[piece]))
        for cut in self.tail_marks.finditer(text):
            end = cut.end()
            piece = max((t for t in self.tails if text.startswith(t, end)), key=len)
            found.append((end, end + len(piece), self.tails[piece]))
        return found

    def cut_fragments(self, text: str) -> str:
        """``text`` with each piece of :meth:`fragments` replaced by its marker."""
        parts: list[str] = []
        done = 0
        for start, end, shown in sorted(self.fragments(text)):
            if start >= done:  # two marks around one short piece: replaced once
                parts += [text[done:start], shown]
                done = end
        return "".join([*parts, text[done:]]) if parts else text

    @classmethod
    def build(cls, markers: dict[str, str], patterns: dict[str, str]) -> _Matcher:
        if not markers and not patterns:
            return cls()
        ordered = sorted(markers, key=len, reverse=True)  # the longest form wins an overlap
        wide = {form.encode(encoding, "surrogatepass"): (markers[form], encoding)
                for form in ordered for encoding in WIDE_ENCODINGS}  # fmt: skip
        raw = [*(f.encode("utf-8", "surrogatepass") for f in ordered), *wide]
        shapes = tuple(patterns)
        groups = [f"(?P<p{i}>{patterns[name]})" for i, name in enumerate(shapes)]
        pattern = re.compile("|".join([*(re.escape(f) for f in ordered), *groups]))
        byte_pattern = re.compile(b"|".join([*(re.escape(f) for f in raw),
                                             *(g.encode() for g in groups)]))  # fmt: skip
        few = tuple(ordered) if len(ordered) <= _FEW and not patterns else None
        heads: dict[str, str] = {}
        tails: dict[str, str] = {}
        for form in ordered:
            for size in range(MIN_SECRET_LENGTH, len(form)):
                heads.setdefault(form[:size], markers[form])
                tails.setdefault(form[-size:], markers[form])
        head_marks, tail_marks = _cut_marks(heads, tails)
        return cls(markers, pattern, byte_pattern, few, tuple(raw), shapes, heads, tails,
                   head_marks, tail_marks, wide)  # fmt: skip


def _cut_marks(
    heads: Iterable[str], tails: Iterable[str]
) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """:attr:`_Matcher.head_marks` and :attr:`_Matcher.tail_marks` (``None`` without
    heads): each mark is matched first, then a fixed-width look-behind (or a look-ahead)
    checks the characters next to it."""
    ends = "|".join(sorted({re.escape(h[-MIN_SECRET_LENGTH:]) for h in heads}))
    starts = "|".join(sorted({re.escape(t[:MIN_SECRET_LENGTH]) for t in tails}))
    if not ends:
        return None, None
    dots = r"\.\.\.(?<!\.\.\.\.)(?!\.)"  # literal first: a search skips to each mark
    head_marks = re.compile(f"…(?<=(?:{ends})…)|{dots}(?<=(?:{ends})\\.\\.\\.)")
    return head_marks, re.compile(f"(?:…|{dots})(?={starts})")


class Redactor:
    """Known secret values and the names they came from; see the module docstring.

    Not a module global: each run builds one
    (:func:`assay.orchestration.loading.secrets.run_redactor`) and passes it to what writes
    and prints. Adding is thread-safe and cheap to read around: :meth:`redact` uses one
    compiled alternation of every value (longest first), built when values are added, never
    per call.
    """

    def __init__(self, *, shapes: bool = True) -> None:
        self.shapes = shapes
        """Whether well-known token shapes are redacted too (see the module docstring)."""
        self._lock = threading.Lock()
        self._names: dict[str, None] = {}
        self._short: dict[str, None] = {}
        self._markers: dict[str, str] = {}
        self._patterns: dict[str, str] = {}
        self._matcher = _Matcher()

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its lock (a run's plan is sent to the nodes of a cluster)."""
        with self._lock:
            return {k: v for k, v in vars(self).items() if k != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update(state)
        self._lock = threading.Lock()

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
        """Add every variable of ``environ`` (:meth:`add_variable`)."""
        extra = set(names)
        for name in sorted(environ):
            self.add_variable(name, environ[name], names=extra)

    def add_variable(self, name: str, value: str, *, names: Collection[str] = ()) -> None:
        """Add the variable ``name`` whole if it holds a secret (by :func:`is_secret_name`,
        or named in ``names``), else the passwords of the URLs with credentials in its value
        (:func:`url_secrets`: passwords, a web URL's token user and query values; the
        variable itself is not a secret one)."""
        if is_secret_name(name) or name in names:
            self.add(name, value)
        elif "://" in value or "password=" in value.lower():
            for secret in url_secrets(value):
                self.add(name, secret, whole=False)

    def add_setting(self, name: str, value: Any) -> None:
        """Add a setting's ``value`` (text, or mappings and lists of it, as a ``-D`` override
        or an ``env`` block holds) by :meth:`add_variable`, each text under the name of the
        nearest mapping key (``name`` for the top)."""
        if isinstance(value, str):
            self.add_variable(name, value)
        elif isinstance(value, Mapping):
            for key, item in value.items():
                self.add_setting(str(key), item)
        elif isinstance(value, list | tuple):
            for item in value:
                self.add_setting(name, item)

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
        """Whether it redacts anything: token shapes, or a known value."""
        return self.shapes or self._matcher.pattern is not None

    def contains(self, text: str) -> bool:
        """Whether ``text`` holds a known value (in any of its escaped forms) or a token."""
        return self._matcher.contains(text) or (
            self.shapes and bool(find_tokens(text.encode("utf-8", "surrogatepass")))
        )

    def redact(self, text: str) -> str:
        """``text`` with every known value replaced by its marker, and the piece of one that
        a clip left at its cut mark too (:data:`MIN_SECRET_LENGTH` characters or more of its
        start right before ``…``/``...``, or of its end right after)."""
        matcher = self._matcher
        if matcher.pattern is not None:
            if matcher.few is None or any(form in text for form in matcher.few):
                text = matcher.pattern.sub(matcher.marker_of, text)
            text = matcher.cut_fragments(text)
        if self.shapes:
            data = text.encode("utf-8", "surrogatepass")
            redacted = redact_tokens(data)
            if redacted is not data:
                text = redacted.decode("utf-8", "surrogatepass")
        return text

    def redact_bytes(self, data: bytes) -> bytes:
        """Like :meth:`redact`, for bytes (UTF-8 forms of the values); ``data`` itself (the
        same object) when nothing in it is redacted."""
        matcher = self._matcher
        if matcher.byte_pattern is not None and matcher.byte_pattern.search(data) is not None:
            data = matcher.byte_pattern.sub(matcher.replacement, data)
        return redact_tokens(data) if self.shapes else data

    def spans_bytes(self, data: bytes) -> list[tuple[int, int, str]]:
        """``(start, end, marker)`` of everything :meth:`redact_bytes` replaces in ``data``
        (known values, then tokens), for a writer that must not cut through one; give them
        to :func:`replace_spans`."""
        spans = [(start, end, marker(name)) for start, end, name in self.find_bytes(data)]
        if self.shapes:
            spans += [(hit.start, hit.end, marker(hit.name)) for hit in find_tokens(data)]
        return spans

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


def replace_spans(data: bytes, spans: Iterable[tuple[int, int, str]]) -> bytes:
    """``data`` with each ``(start, end, marker)`` replaced by its marker; of two that
    overlap, the one that starts first (the longer at one start) is replaced, and the other
    with it."""
    parts: list[bytes] = []
    done = 0
    for start, end, shown in sorted(spans, key=lambda span: (span[0], -span[1])):
        if start < done:
            if end > done:  # overlapping: the replaced part grows to cover both
                done = end
            continue
        parts += [data[done:start], shown.encode()]
        done = end
    return b"".join([*parts, data[done:]]) if parts else data


SHORT_RUN = 256
"""Bytes a stream's cut moves back (:func:`stream_cut`) or on (:func:`stream_start`) to
reach whitespace; a run of other characters longer than this is cut where it is (a secret
or token in it is kept whole by its span instead)."""


def stream_spans(data: bytes, redactor: Redactor | None) -> list[tuple[int, int, str]]:
    """What redaction replaces in ``data``: the spans of :meth:`Redactor.spans_bytes`, or
    without a redactor those of the token shapes alone."""
    if redactor is not None:
        return redactor.spans_bytes(data)
    return [(hit.start, hit.end, marker(hit.name)) for hit in find_tokens(data)]


def stream_cut(data: bytes, at: int, spans: Iterable[tuple[int, int, str]]) -> int:
    """Where to end what is kept of a stream cut at byte ``at`` of ``data`` (which holds
    bytes past ``at``, so a secret or token that goes on past it is seen whole): moved back
    to the start of every span of ``spans`` (:func:`stream_spans`) that it would split, and
    to the whitespace before a run of other characters it would split when that run starts
    at most :data:`SHORT_RUN` bytes back, until neither moves it (whitespace inside a secret
    is no place to cut). Nothing of a secret is kept in part, as ``docs/secrets.md``
    promises for every text assay cuts short."""
    ordered = sorted(spans, reverse=True)
    while True:
        for start, end, _ in ordered:
            if start < at < end:
                at = start
        back = at
        while back > max(at - SHORT_RUN, 0) and _cut_inside_word(data, back):
            back -= 1
        moved = back if not _cut_inside_word(data, back) else at
        if moved == at:
            return at
        at = moved


def stream_start(data: bytes, at: int, spans: Iterable[tuple[int, int, str]]) -> int:
    """Like :func:`stream_cut`, where the kept end of a stream starts when it would start
    at byte ``at`` of ``data``: moved on past every span it splits, and to the whitespace
    after a short run, until neither moves it."""
    ordered = sorted(spans)
    while True:
        for start, end, _ in ordered:
            if start < at < end:
                at = end
        on = at
        while on < min(at + SHORT_RUN, len(data)) and _cut_inside_word(data, on):
            on += 1
        moved = on if not _cut_inside_word(data, on) else at
        if moved == at:
            return at
        at = moved


_TOKEN = frozenset(string.ascii_letters + string.digits + "_-+/=.~")
"""The characters of API keys and tokens (base64, base64url, hex)."""


def _cut_inside_word(text: str | bytes, at: int) -> bool:
    """Whether cutting ``text`` (or UTF-8 bytes) at ``at`` splits a run of characters
    without whitespace (where a key, token or password can be)."""
    before, after = text[at - 1 : at], text[at : at + 1]
    return 0 < at < len(text) and not before.isspace() and not after.isspace()


def _cut_inside_token(text: str, at: int) -> bool:
    """Whether cutting ``text`` at ``at`` splits a run of :data:`_TOKEN` characters."""
    return 0 < at < len(text) and text[at - 1] in _TOKEN and text[at] in _TOKEN


def _cut_back(text: str, end: int, floor: int) -> int:
    """The last place at or before ``end`` and after ``floor`` that splits no run without
    whitespace, else no run of key characters, else ``floor`` (the run is longer than the
    window: what of it lies in the window is dropped rather than shown in part)."""
    for inside in (_cut_inside_word, _cut_inside_token):
        cut = end
        while cut > floor and inside(text, cut):
            cut -= 1
        if cut > floor or (floor > 0 and not inside(text, floor)):
            return cut
    return floor


def _cut_forward(text: str, start: int, ceiling: int) -> int:
    """Like :func:`_cut_back`, the first such place at or after ``start``, before
    ``ceiling``."""
    for inside in (_cut_inside_word, _cut_inside_token):
        cut = start
        while cut < ceiling and inside(text, cut):
            cut += 1
        if cut < ceiling or (ceiling < len(text) and not inside(text, ceiling)):
            return cut
    return ceiling


def clip_head(text: str, limit: int, mark: str = "…") -> str:
    """The start of ``text``, at most ``limit`` characters with ``mark``, cut at whitespace,
    never inside a run of other characters, where a secret could be split so that redaction
    no longer recognises it; up to ``max(limit // 2, 256)`` more characters are dropped to
    reach whitespace (else the end of a run of key characters, see :data:`_TOKEN`). A run
    longer than that is cut where the window ends, before a token shape it would split
    (:func:`_token_spans`), and the piece of a known secret left before ``mark`` is
    redacted by :meth:`Redactor.redact`."""
    if len(text) <= limit:
        return text
    end = max(limit - len(mark), 0)
    if end == 0:
        return mark
    cut = _cut_back(text, end, max(end - max(limit // 2, 256), 0))
    for start, stop in reversed(_token_spans(text, cut)):
        if start < cut < stop:
            cut = start
    return text[:cut] + mark


def clip_tail(text: str, limit: int, mark: str = "…") -> str:
    """The end of ``text``, its last ``limit`` characters after ``mark``, cut at whitespace
    like :func:`clip_head`, after a token shape it would split."""
    if len(text) <= limit:
        return text
    start = len(text) - limit
    ceiling = min(start + max(limit // 2, 256), len(text))
    cut = _cut_forward(text, start, ceiling)
    for begin, stop in _token_spans(text, cut):
        if begin < cut < stop:
            cut = stop
    return mark + text[cut:]


_SPAN_WINDOW = 1 << 16
"""Characters around a clip's cut searched for the token shapes it could split."""


def _token_spans(text: str, at: int) -> list[tuple[int, int]]:
    """``(start, end)`` character offsets of the token shapes
    (:mod:`assay.results.token_shapes`) within :data:`_SPAN_WINDOW` of ``at`` in ``text``,
    in order."""
    low = max(at - _SPAN_WINDOW, 0)
    part = text[low : at + _SPAN_WINDOW]
    data = part.encode("utf-8", "surrogatepass")
    hits = find_tokens(data)
    if not hits:
        return []
    ascii_only = len(data) == len(part)

    def char(offset: int) -> int:
        if ascii_only:
            return low + offset
        return low + len(data[:offset].decode("utf-8", "surrogatepass"))

    return sorted((char(hit.start), char(hit.end)) for hit in hits)


def _name_of(text: str) -> str:
    return text[len(MARKER_PREFIX) : -1]
