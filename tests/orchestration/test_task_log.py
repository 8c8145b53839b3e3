"""``task.log`` is read in a terminal (``cat``, ``tail -f``): what an agent printed is shown
there with its control characters escaped, never obeyed."""

from __future__ import annotations

from pathlib import Path

import assay
from assay.results.printable import shown_controls
from tests.helpers import write

TASK = """\
task_id: noisy
description: an agent whose output holds escape sequences
initial_prompt: go
agent:
  type: command
  command: "printf 'ok\\\\033]52;c;cm0gLXJmIH4=\\\\007 \\\\033[2J\\\\rfake line\\\\tend\\\\n'"
success_criteria:
  - {type: response_match, expected: ok, match: contains, description: it answered}
"""


def test_an_agents_escape_sequences_are_shown_escaped_in_task_log(tmp_path: Path) -> None:
    result = assay.run(str(write(tmp_path / "t.yaml", TASK)), run_dir=tmp_path / "runs")
    (row,) = result.rows()
    assert row.final_status.value == "SUCCESS"
    log = next((tmp_path / "runs").rglob("task.log")).read_text()
    assert "ok\\x1b]52;c;cm0gLXJmIH4=\\x07 \\x1b[2J fake line end" in log
    assert not {"\x1b", "\x07", "\r"} & set(log)  # nothing a terminal would obey
    response = next((tmp_path / "runs").rglob("response.txt")).read_text()
    assert "\x1b]52" in response  # the answer itself is kept as the agent gave it


def test_shown_controls_keeps_tab_and_newlines_and_escapes_c0_c1_and_del() -> None:
    text = "a\tb\nc\rd\x00e\x1bf\x7fg\x85h\x9bi é"
    assert shown_controls(text) == "a\tb\nc\rd\\x00e\\x1bf\\x7fg\\x85h\\x9bi é"
    assert shown_controls(text, keep="\t\n") == "a\tb\nc\\x0dd\\x00e\\x1bf\\x7fg\\x85h\\x9bi é"
