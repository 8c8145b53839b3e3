"""A dialog's project settings put back before each later turn, never through a link the
agent left (assay may run as root: a write through one would land anywhere)."""

from __future__ import annotations

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
