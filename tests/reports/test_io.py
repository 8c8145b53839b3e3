"""Writing result files: in place or by rename, UTF-8, parents created, nothing left behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assay.results.io import make_dirs, write_text, write_text_atomic


def test_write_text_creates_parents_and_replaces_a_longer_file(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "response.txt"
    write_text(target, "a long first answer\n", redactor=None)
    write_text(target, "é\r\nshort", redactor=None)
    assert target.read_bytes() == "é\r\nshort".encode()  # no newline translation, truncated


def test_a_lone_surrogate_is_written_as_an_escape(tmp_path: Path) -> None:
    target = tmp_path / "task.log"
    write_text(target, "bad \udc80 byte", redactor=None)
    assert target.read_text(encoding="utf-8") == "bad \\udc80 byte"


def test_write_text_atomic_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "row" / "00" / "task.json"
    write_text_atomic(target, "{}\n", redactor=None)
    write_text_atomic(target, '{"a": 1}\n', redactor=None)
    assert target.read_text() == '{"a": 1}\n'
    assert os.listdir(target.parent) == ["task.json"]


def test_write_text_atomic_cleans_up_when_the_rename_fails(tmp_path: Path) -> None:
    target = tmp_path / "task.json"
    target.mkdir()  # a folder where the file goes: the rename fails
    with pytest.raises(OSError):
        write_text_atomic(target, "{}\n", redactor=None)
    assert os.listdir(tmp_path) == ["task.json"]


def test_make_dirs_makes_any_depth_and_accepts_existing(tmp_path: Path) -> None:
    make_dirs(tmp_path / "suite" / "row" / "00")
    make_dirs(tmp_path / "suite" / "row" / "01")
    make_dirs(tmp_path / "suite" / "row" / "01")
    assert sorted(os.listdir(tmp_path / "suite" / "row")) == ["00", "01"]


def test_make_dirs_refuses_a_file_in_the_way(tmp_path: Path) -> None:
    (tmp_path / "row").write_text("not a folder")
    with pytest.raises(NotADirectoryError):
        make_dirs(tmp_path / "row" / "00")
