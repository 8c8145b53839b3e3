"""The secret scan of a run folder: known values anywhere, key-shaped strings outside kept
sandboxes, reported by file and line, never by value."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.results.secret_scan import SecretFinding, looks_random, scan_buffer, scan_run
from assay.results.secrets import Redactor
from tests.helpers import write

SHAPED = {
    "an OpenAI API key": "sk-proj-4fJ9kL2mN8pQ1rS7tU3vW6xY0zA5bC",
    "an Anthropic API key": "sk-ant-api03-Xy7Kp2Lm9Qr4St8Uv1Wx6Yz3Ab5Cd0Ef",
    "an AWS access key id": "AKIA2E0A8F3B244C9986",
    "a GitHub token": "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "a GitHub fine-grained token": "github_pat_11ABCDEFG0abcdefghij_KLMNOPQRSTUVWXYZ0123456789",
    "a Google API key": "AIzaSyD4f7Gh2Jk9Lm3Np6Qr8St1Uv5Wx0Yz2Ab",
    "a Slack token": "xoxb-123456789012-abcdefGHIJKL",
    "a Hugging Face token": "hf_aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3",
    "a Stripe secret key": "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "a private key": "-----BEGIN RSA PRIVATE KEY-----\\nMIIEpAIBAAKCAQEA7V1x2y3z4a5b6c7d8e9f0",
}


@pytest.mark.parametrize(("kind", "text"), list(SHAPED.items()))
def test_each_key_shape_is_found_on_its_line(kind: str, text: str) -> None:
    data = f"first line\nsecond {text} here\n".encode()
    assert scan_buffer(data, Redactor()) == [(2, f"a string shaped like {kind}")]


@pytest.mark.parametrize(
    "text",
    [
        "a risk-free-investment-strategy-for-everyone",  # sk- inside a word, no digits
        "task-0123456789abcdefghijklmnop",  # sk- preceded by a letter
        "sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",  # a placeholder
        "AKIAIOSFODNN7EXAMPLE",  # AWS's documented example key
        "-----BEGIN PRIVATE KEY-----",  # a header without a key
        "[redacted:OPENAI_API_KEY]",
        "sk-short1",
    ],
)
def test_prose_placeholders_and_examples_are_not_keys(text: str) -> None:
    assert scan_buffer(f"x {text} y".encode(), Redactor()) == []


def test_looks_random() -> None:
    assert looks_random(b"4fJ9kL2mN8pQ1rS7tU3v")
    assert not looks_random(b"abcdefghijklmnopqrstu")
    assert not looks_random(b"12121212121212121212")


def test_a_known_value_is_reported_by_name_once(tmp_path: Path) -> None:
    key = SHAPED["an OpenAI API key"]
    redactor = Redactor()
    redactor.add("OPENAI_API_KEY", key)
    data = f'{{"a": 1,\n "b": "{key}"}}'.encode()
    assert scan_buffer(data, redactor) == [(2, "the value of OPENAI_API_KEY")]


def test_scan_run_walks_the_folder_and_spares_kept_sandboxes_key_shapes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    known = "my-very-own-service-token-42"
    redactor = Redactor()
    redactor.add("SERVICE_TOKEN", known)
    write(run / "run.json", "{}\n")
    write(run / "default" / "t" / "r1" / "00" / "task.json", f'{{\n  "x": "{known}"\n}}\n')
    write(run / "default" / "t" / "r1" / "00" / "response.txt", "ok\n" + SHAPED["a GitHub token"])
    sandbox = run / "default" / "t" / "r1" / "00" / "sandbox"
    write(sandbox / "fixtures" / "test_keys.py", f"FAKE = '{SHAPED['an AWS access key id']}'\n")
    write(sandbox / "notes.txt", f"\n\n{known}\n")
    (run / "default" / "t" / "r1" / "00" / "empty.txt").write_text("")
    (run / "link").symlink_to(tmp_path / "outside.txt")
    write(tmp_path / "outside.txt", known)
    junit = write(tmp_path / "junit.xml", f"<x>{known}</x>")
    findings = scan_run(run, redactor, extra_files=[junit])
    assert findings == sorted([
        SecretFinding("default/t/r1/00/response.txt", 2, "a string shaped like a GitHub token"),
        SecretFinding("default/t/r1/00/sandbox/notes.txt", 3, "the value of SERVICE_TOKEN"),
        SecretFinding("default/t/r1/00/task.json", 2, "the value of SERVICE_TOKEN"),
        SecretFinding(str(junit), 1, "the value of SERVICE_TOKEN"),
    ])  # fmt: skip
    assert findings[1].render() == (
        "default/t/r1/00/response.txt:2: a string shaped like a GitHub token"
    )
    assert all(known not in f.render() for f in findings)


def test_large_files_are_read_alone_and_batches_flushed_with_the_right_lines(
    tmp_path: Path,
) -> None:
    known = "my-very-own-service-token-42"
    redactor = Redactor()
    redactor.add("SERVICE_TOKEN", known)
    run = tmp_path / "run"
    write(run / "big.log", "x\n" * 200 + known + "\n")  # over the batch size: read alone, in blocks
    for index in range(5):  # each under it, together over it: scanned in several batches
        write(run / f"small{index}.txt", "line\n" * 20 + f"{known}\n" + SHAPED["a Slack token"])
    write(run / "empty.txt", "")
    findings = scan_run(run, redactor, batch_bytes=150)
    assert SecretFinding("big.log", 201, "the value of SERVICE_TOKEN") in findings
    for index in range(5):
        assert SecretFinding(f"small{index}.txt", 21, "the value of SERVICE_TOKEN") in findings
        assert SecretFinding(f"small{index}.txt", 22, "a string shaped like a Slack token") in (
            findings
        )
    assert len(findings) == 11


@pytest.mark.parametrize("block", [700, 4096, 1 << 20])
def test_a_large_file_read_in_blocks_finds_what_the_whole_file_holds(
    tmp_path: Path, block: int
) -> None:
    from assay.results.secret_scan import SCAN_OVERLAP, scan_file

    known = "my-very-own-service-token-42"
    redactor = Redactor()
    redactor.add("SERVICE_TOKEN", known)
    filler = b"abc defgh\n"
    parts, size = [], 0
    # secrets straddling every kind of cut: block edges, overlap edges, the file's end
    for end in (SCAN_OVERLAP - 5, SCAN_OVERLAP, 2 * SCAN_OVERLAP + 3, 5 * SCAN_OVERLAP - 1):
        gap = end - size
        parts.append(filler * (gap // len(filler)) + b"x" * (gap % len(filler)))
        parts.append(known.encode() + b" " + SHAPED["a Slack token"].encode() + b"\n")
        size = sum(len(p) for p in parts)
    parts.append(known.encode())  # the very end, no newline
    data = b"".join(parts)
    path = tmp_path / "big.json"
    path.write_bytes(data)
    expected = scan_buffer(data, redactor)  # the oracle: the whole file at once
    assert len(expected) == 9
    assert scan_file(path, redactor, block=block) == expected


def _sparse(path: Path, pieces: list[tuple[int, bytes]], size: int) -> Path:
    """A file of ``size`` bytes with ``pieces`` written at their offsets, holes between."""
    with path.open("wb") as handle:
        for offset, data in pieces:
            handle.seek(offset)
            handle.write(data)
        handle.truncate(size)
    return path


@pytest.mark.parametrize("block", [700, 1 << 20])
def test_a_sparse_files_holes_are_not_read_and_its_data_is_found_on_its_line(
    tmp_path: Path, block: int
) -> None:
    """Field report: a kept sandbox's `truncate -s 1000M` files cost a minute each of
    reading zeros. The oracle is the whole file read at once."""
    from assay.results.secret_scan import scan_file

    known = "my-very-own-service-token-42"
    redactor = Redactor()
    redactor.add("SERVICE_TOKEN", known)
    head, tail = b"a\nb\n" + known[:10].encode(), known[10:].encode() + b"\n" + known.encode()
    path = _sparse(tmp_path / "big.bin", [(0, head), (4 << 20, tail)], 16 << 20)
    assert path.stat().st_blocks * 512 < 1 << 20  # holes on this file system
    data = path.read_bytes()
    expected = scan_buffer(data, redactor)
    assert expected == [(4, "the value of SERVICE_TOKEN")]  # the one whole value, not the
    assert scan_file(path, redactor, block=block) == expected  # halves either side of a hole
    assert scan_file(_sparse(tmp_path / "hole", [], 1 << 30), redactor) == []


def test_short_holes_are_read_with_the_data_around_them(tmp_path: Path) -> None:
    """A break-test: a byte every 8 KiB made thousands of stretches, each scanned alone
    (100 MB: 73 s, against 5 s read whole)."""
    import os

    from assay.results.sparse import SMALL_HOLE, data_extents

    fragmented = _sparse(tmp_path / "f", [(o, b"x") for o in range(0, 8 << 20, 8192)], 8 << 20)
    apart = _sparse(tmp_path / "a", [(0, b"a"), (SMALL_HOLE + 4096, b"b")], 4 * SMALL_HOLE)
    for path, expected in (
        (fragmented, [(0, (8 << 20) - 8192 + 4096)]),
        (apart, [(0, 4096), (SMALL_HOLE + 4096, SMALL_HOLE + 8192)]),
    ):
        fd = os.open(path, os.O_RDONLY)
        try:
            assert data_extents(fd, path.stat().st_size) == expected
        finally:
            os.close(fd)
