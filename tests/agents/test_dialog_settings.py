"""A dialog's project settings put back before each later turn, never through a link the
agent left (assay may run as root: a write through one would land anywhere)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from assay.agents import dialog_settings
from tests.helpers import write

NAMES = (".claude/settings.json", ".claude/settings.local.json")


def test_changed_added_and_removed_settings_are_put_back(tmp_path: Path) -> None:
    work = tmp_path / "work"
    write(work / ".claude" / "settings.json", '{"model": "given"}')
    kept = dialog_settings.keep(work, NAMES)
    assert kept == {NAMES[0]: b'{"model": "given"}', NAMES[1]: None}
    write(work / ".claude" / "settings.json", '{"hooks": "planted"}')
    write(work / ".claude" / "settings.local.json", '{"env": "planted"}')
    assert dialog_settings.restore(work, kept) == list(NAMES)
    assert (work / NAMES[0]).read_text() == '{"model": "given"}'
    assert not (work / NAMES[1]).exists()
    assert dialog_settings.restore(work, kept) == []  # as kept: nothing to do


def test_links_the_agent_left_are_removed_not_followed(tmp_path: Path) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside"
    write(work / ".claude" / "settings.json", "{}")
    kept = dialog_settings.keep(work, NAMES)
    target = write(outside / "settings.json", "host file")
    (work / ".claude" / "settings.json").unlink()
    (work / ".claude" / "settings.json").symlink_to(target)
    dialog_settings.restore(work, kept)
    assert target.read_text() == "host file"  # not written through the link
    assert (work / NAMES[0]).read_text() == "{}" and not (work / NAMES[0]).is_symlink()
    # the folder itself a link to a folder outside: removed, made anew
    for path in (work / ".claude").iterdir():
        path.unlink()
    (work / ".claude").rmdir()
    (work / ".claude").symlink_to(outside, target_is_directory=True)
    dialog_settings.restore(work, kept)
    assert target.read_text() == "host file" and sorted(p.name for p in outside.iterdir()) == [
        "settings.json"
    ]
    assert (work / ".claude").is_dir() and not (work / ".claude").is_symlink()
    assert (work / NAMES[0]).read_text() == "{}"


def test_a_link_the_task_gave_is_kept_as_a_link(tmp_path: Path) -> None:
    """A break-test: a settings file given as a link (``.pi/settings.json ->
    ../cfg/pi.json``) was kept as absent, so it was removed before turn two: the CLI read
    it at turn one and not after."""
    work = tmp_path / "work"
    write(work / "cfg" / "pi.json", '{"quietStartup": true}')
    (work / ".pi").mkdir()
    (work / ".pi" / "settings.json").symlink_to("../cfg/pi.json")
    kept = dialog_settings.keep(work, [".pi/settings.json"])
    assert dialog_settings.restore(work, kept) == []  # as kept: left alone
    assert (work / ".pi" / "settings.json").read_text() == '{"quietStartup": true}'
    (work / ".pi" / "settings.json").unlink()
    write(work / ".pi" / "settings.json", "{}")
    assert dialog_settings.restore(work, kept) == [".pi/settings.json"]
    assert os.readlink(work / ".pi" / "settings.json") == "../cfg/pi.json"


def test_a_folder_is_put_back_whole_and_owned_as_the_workspace(tmp_path: Path) -> None:
    """A break-test: a plugin the agent wrote into ``.opencode/plugin/`` (code the CLI loads
    at its start) reached its next turn; a folder name (``/``) is now kept whole: what the
    agent added, changed or removed in it is put back, owned by the workspace's owner (as
    root, assay made them root's: the agent could no longer write its own project's
    folder)."""
    work = tmp_path / "work"
    write(work / ".opencode" / "agent" / "review.md", "given")
    write(work / ".opencode" / "opencode.json", "{}")
    if os.geteuid() == 0:
        for path in (work, *work.rglob("*")):
            os.lchown(path, 4242, 4242)
    kept = dialog_settings.keep(work, [".opencode/"])
    write(work / ".opencode" / "plugin" / "p.js", "planted();")
    (work / ".opencode" / "agent" / "review.md").write_text("changed")
    (work / ".opencode" / "opencode.json").unlink()
    assert dialog_settings.restore(work, kept) == [".opencode/"]
    found = {str(p.relative_to(work)): p.read_text() for p in work.rglob("*") if p.is_file()}
    assert found == {".opencode/agent/review.md": "given", ".opencode/opencode.json": "{}"}
    if os.geteuid() == 0:
        assert {p.stat().st_uid for p in (work / ".opencode").rglob("*")} == {4242}
    assert dialog_settings.restore(work, kept) == []
    shutil.rmtree(work / ".opencode")  # none at the first turn: one made later is removed
    kept = dialog_settings.keep(work, [".opencode/"])
    write(work / ".opencode" / "plugin" / "p.js", "planted();")
    assert dialog_settings.restore(work, kept) == [".opencode/"]
    assert not (work / ".opencode").exists()


def test_a_file_of_another_size_or_content_is_put_back(tmp_path: Path) -> None:
    """Sizes are compared before contents (a file the agent made as large as its limits
    allow is not read), and the same size with other bytes is still a change."""
    work = tmp_path / "work"
    write(work / ".gemini" / "settings.json", '{"a": 1}')
    kept = dialog_settings.keep(work, [".gemini/settings.json"])
    (work / ".gemini" / "settings.json").write_text('{"b": 2}')  # the same size
    assert dialog_settings.restore(work, kept) == [".gemini/settings.json"]
    with open(work / ".gemini" / "settings.json", "r+b") as handle:
        handle.truncate(2**40)  # sparse: 1 TiB, which a read would never finish
    assert dialog_settings.restore(work, kept) == [".gemini/settings.json"]
    assert (work / ".gemini" / "settings.json").read_text() == '{"a": 1}'
