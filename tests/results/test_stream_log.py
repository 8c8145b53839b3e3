"""A stream's log (:class:`assay.results.io.StreamLog`) is written through the run's redactor
as the stream arrives, in chunks cut anywhere: a known value or a token shape split across
two chunks, or across the end of what is held back, is still redacted whole; the log is cut
at its own cap with a line saying so."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.results.io import PLAIN, LogFolder, StreamLog
from assay.results.secrets import Redactor

JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
       "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")  # fmt: skip
PEM = ("-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4"
       "WGeKLs1Pt8Qu\nKUpRKfFLfRYC9AIKjbJTWit+CqvjWYzvQwECAwEAAQJAIJLixBy2qpFoS4DSmoEm\n"
       "-----END RSA PRIVATE KEY-----")  # fmt: skip
SECRETS = [
    ("MY_SERVICE_TOKEN", "k3y-Of-the-service-4Q9z"),  # a value the run knows by name
    ("gitlab-token", "glpat-Zx81kQ2wL0pR7mN4bV6c"),
    ("json-web-token", JWT),
    ("github-token", "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    ("aws-access-key-id", "AKIA" + "Q7ZP3KX9W2MB4TY6"),
    ("private-key", PEM),
    ("slack-token", "xoxb-1234567890-abcdefABCDEF12"),
]


def redactor() -> Redactor:
    known = Redactor()
    known.add("MY_SERVICE_TOKEN", SECRETS[0][1])
    return known


def written(tmp_path: Path, data: bytes, chunk: int, *, window: int, block: int) -> bytes:
    path = tmp_path / f"out-{chunk}.log"
    log = StreamLog(path, redactor=redactor(), max_bytes=1 << 30, window=window, block=block)
    for start in range(0, len(data), chunk):
        log.write(data[start : start + chunk])
    log.close()
    return path.read_bytes()


@pytest.mark.parametrize(("name", "secret"), SECRETS)
def test_a_secret_split_across_chunks_is_redacted_wherever_it_is_cut(
    tmp_path: Path, name: str, secret: str
) -> None:
    """Chunks of many sizes put the chunk boundary, and the end of what is held back, at
    every place inside the secret; the file never holds it, or any part of it."""
    for lead in range(0, 40, 7):
        data = (b"x " * lead) + b"before " + secret.encode() + b" after\n" + b"tail " * 100
        expected = data.replace(secret.encode(), f"[redacted:{name}]".encode())
        for chunk in (1, 3, 7, 16, 61, 250):
            got = written(tmp_path, data, chunk, window=300, block=64)
            assert got == expected, (lead, chunk)


def test_the_held_back_window_is_bounded_and_the_whole_stream_lands(tmp_path: Path) -> None:
    data = b"".join(b"line %d of the stream with " % i + SECRETS[1][1].encode() + b"\n"
                    for i in range(5000))  # fmt: skip
    got = written(tmp_path, data, 4096, window=512, block=8192)
    assert got == data.replace(SECRETS[1][1].encode(), b"[redacted:gitlab-token]")


def test_a_log_is_cut_at_its_cap_with_a_line_saying_so(tmp_path: Path) -> None:
    path = tmp_path / "cut.log"
    log = StreamLog(path, redactor=redactor(), max_bytes=1000)
    for _ in range(30):
        log.write(b"y" * 100)
    log.close()
    assert (log.received, log.written, log.dropped) == (3000, 1000, 2000)
    assert path.read_bytes() == (
        b"y" * 1000 + b"\n[assay: log cut after 1000 bytes "
        b"(sandbox.limits.max_log_mb); 2000 more bytes not written]\n"
    )


def test_each_program_of_a_row_gets_its_own_log_names(tmp_path: Path) -> None:
    folder = LogFolder(tmp_path, PLAIN, 100)
    names = [folder.logs(name).name for name in ["agent", None, None, "pre_run-1", "agent"]]
    assert names == ["agent", "command-1", "command-2", "pre_run-1", "agent-2"]
    assert folder.logs("x").path("stderr") == tmp_path / "x.stderr.log"


@pytest.mark.parametrize(("name", "secret"), [s for s in SECRETS if "\n" not in s[1]])
def test_the_cut_at_max_bytes_keeps_no_piece_of_a_secret(
    tmp_path: Path, name: str, secret: str
) -> None:
    """Issue 28: the cap falls at every place inside a secret or token (and in the padding
    without whitespace before it); the log holds none of it in part, only what comes before
    it, and its line names the bytes really written."""
    lead = b"word " * 40 + b"run"
    value = secret.encode()
    for inside in range(1, len(value)):
        path = tmp_path / f"cut-{inside}.log"
        cap = len(lead) + 1 + inside
        log = StreamLog(path, redactor=redactor(), max_bytes=cap, window=300, block=64)
        for piece in (lead, b" ", value, b" tail " * 50):
            log.write(piece)
        log.close()
        got = path.read_bytes()
        kept, _, note = got.partition(b"\n[assay: log cut after ")
        assert kept == lead + b" ", (name, inside)  # cut at the whitespace before the value
        assert note.startswith(b"%d bytes " % len(kept))
        assert log.written == len(kept) and log.dropped == log.received - len(kept)


def test_the_cut_never_stops_at_whitespace_inside_a_secret(tmp_path: Path) -> None:
    """Found in review: a secret with a space, with more non-space output right after it,
    was cut at its inner space (the cut was after the secret, then moved back to whitespace
    into it): every cut place now keeps none of it."""
    known = Redactor()
    secret = b"my-long-prefix-part secondpart-9f8e7d"
    known.add("DB_PASSWORD", secret.decode())
    data = b"lead " + secret + b"QQQQQQQQ tail " * 20
    for cap in range(5, 60):
        path = tmp_path / f"space-{cap}.log"
        log = StreamLog(path, redactor=known, max_bytes=cap, window=300, block=64)
        log.write(data)
        log.close()
        got = path.read_bytes()
        assert b"my-long" not in got and b"prefix-part" not in got, cap
        whole = got.startswith(b"lead [redacted:DB_PASSWORD]QQQQQQQQ")  # cut after the run
        assert whole or got.startswith(b"lead \n[assay: log cut after 5 bytes"), cap
