"""The one writer (:class:`assay.results.io.Writer`): every file assay writes passes it, and
it redacts its secrets as text or as JSON data, atomically unless told otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.results.io import PLAIN, Writer
from assay.results.secrets import Redactor

KEY = "svc-token-for-the-writer-0042"
SHAPED = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def writer() -> Writer:
    secrets = Redactor()
    secrets.add("MY_SERVICE_TOKEN", KEY)
    return Writer(secrets)


def test_text_json_models_and_lines_are_written_redacted(tmp_path: Path) -> None:
    out = writer()
    out.text(tmp_path / "a" / "t.txt", f"key {KEY}\n")
    out.text(tmp_path / "in-place.txt", KEY, atomic=False)
    out.json(tmp_path / "d.json", {"quote": f'he said "{KEY}"', KEY: 1})
    out.json_lines(
        tmp_path / "l.jsonl", json.dumps({"k": KEY}) + "\n" + json.dumps({"n": 2}) + "\n"
    )
    out.append(tmp_path / "log.jsonl", f"{KEY}\n")
    out.append(tmp_path / "log.jsonl", "second\n")
    assert (tmp_path / "a" / "t.txt").read_text() == "key [redacted:MY_SERVICE_TOKEN]\n"
    assert (tmp_path / "in-place.txt").read_text() == "[redacted:MY_SERVICE_TOKEN]"
    data = json.loads((tmp_path / "d.json").read_text())  # still valid JSON
    assert data == {"quote": 'he said "[redacted:MY_SERVICE_TOKEN]"',
                    "[redacted:MY_SERVICE_TOKEN]": 1}  # fmt: skip
    written = (tmp_path / "l.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in written] == [{"k": "[redacted:MY_SERVICE_TOKEN]"},
                                                    {"n": 2}]  # fmt: skip
    assert (tmp_path / "log.jsonl").read_text() == "[redacted:MY_SERVICE_TOKEN]\nsecond\n"


def test_a_file_written_piece_by_piece_appears_whole_or_not_at_all(tmp_path: Path) -> None:
    out, path = writer(), tmp_path / "rows.json"
    with out.open(path) as piece:
        piece.write(f"[{KEY}]\n")
        piece.write_json(json.dumps({"k": KEY}))  # no newline added when the text has none
    assert path.read_text() == '[[redacted:MY_SERVICE_TOKEN]]\n{"k":"[redacted:MY_SERVICE_TOKEN]"}'
    with pytest.raises(RuntimeError), out.open(path) as piece:
        piece.write("half")
        raise RuntimeError("a crash mid-file")
    assert path.read_text().startswith("[[redacted")  # the old file, no temporary left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.json"]


def test_plain_writes_as_given_and_shapes_only_still_redacts_token_shapes(
    tmp_path: Path,
) -> None:
    PLAIN.text(tmp_path / "p.txt", f"{KEY} {SHAPED}")
    assert (tmp_path / "p.txt").read_text() == f"{KEY} {SHAPED}"
    assert PLAIN.withheld == frozenset() and not PLAIN.redacts
    shapes = Writer.shapes_only()
    assert KEY in shapes.redact(KEY) and SHAPED not in shapes.redact(SHAPED)
    out = writer()
    assert out.finds_secret(b"x " + KEY.encode()) and not out.finds_secret(b"nothing")
    assert not PLAIN.finds_secret(KEY.encode())
    assert out.withheld == {"MY_SERVICE_TOKEN"} and out.redacts
    assert out.redact_bytes(b"x" + KEY.encode()) == b"x[redacted:MY_SERVICE_TOKEN]"
    data = b"abc " + KEY.encode()
    assert [(start, end) for start, end, _ in out.spans(data)] == [(4, len(data))]


def test_the_writers_scan_finds_what_was_written_around_it(tmp_path: Path) -> None:
    (tmp_path / "by-hand.txt").write_text(f"copied in: {KEY}\n")
    writer().text(tmp_path / "written.txt", f"{KEY}\n")
    found = writer().scan(tmp_path)
    assert [(f.file, f.line) for f in found] == [("by-hand.txt", 1)]
