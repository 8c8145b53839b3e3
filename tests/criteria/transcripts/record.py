"""Record the transcripts the criteria tests read: the real Claude Code and Codex CLIs, driven
offline through assay's model bridge by the mock script below, with their standard output
kept byte for byte (``<row>.claude.jsonl``, ``<row>.codex.jsonl``).

Run from the repository root after ``make install-dev``::

    .venv/bin/python -m tests.criteria.transcripts.record

It rewrites the ``*.jsonl`` files of this folder; ``README.md`` says which CLI versions made
the ones kept in git.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]

SCRIPT = r"""
replies:
  - match: "job: skill-then-work"
    steps:
      - tool: Skill
        input: {skill: "weather-report"}
      - tool: Bash
        input: {command: "bash -lc 'echo \"sky: sunny\" > forecast.txt'", description: forecast}
      - tool: Write
        input:
          file_path: "${sandbox}/forecast.json"
          content: "{\"city\": \"Paris\", \"sky\": \"sunny\", \"days\": [1, 2, 3]}"
      - reply: "The forecast is in forecast.json."
  - match: "job: namespaced-skill"
    steps:
      - tool: Skill
        input: {skill: "plugin:unit-convert"}
      - reply: "10 km is 6.2 miles."
  - match: "job: no-tools"
    reply: "Hello! How can I help?"
  - match: "job: commands"
    steps:
      - tool: Bash
        input: {command: "ls -la", description: list}
      - tool: Bash
        input: {command: "grep -r \"TODO\" missing-dir", description: fails}
      - tool: Bash
        input:
          command: "python3 - <<'PY'\nprint('multi')\nprint('line')\nPY"
          description: heredoc
      - tool: Read
        input: {file_path: "${sandbox}/notes.txt"}
      - tool: Bash
        input: {command: "echo done > done.txt", description: finish}
      - reply: "ran the commands"
  - match: "job: denied"
    steps:
      - tool: Bash
        input: {command: "rm -rf build", description: clean}
      - reply: "I was not allowed to run it."
  - match: "job: codex-skill"
    steps:
      - tool: exec_command
        input: {cmd: "cat \"$CODEX_HOME/skills/weather-report/SKILL.md\""}
      - tool: exec_command
        input: {cmd: "printf '{\"city\": \"Oslo\", \"sky\": \"snow\"}' > forecast.json"}
      - reply: "Oslo: snow."
  - match: "job: codex-commands"
    steps:
      - tool: exec_command
        input: {cmd: "grep -rn 'TODO' . || true"}
      - tool: exec_command
        input: {cmd: "ls missing-file"}
      - tool: apply_patch
        input: "*** Begin Patch\n*** Add File: notes.md\n+written by codex\n*** End Patch\n"
      - reply: "done"
"""

CLAUDE_ROWS = ["skill-then-work", "namespaced-skill", "no-tools", "commands"]
DENIED_ROWS = ["denied"]
CODEX_ROWS = ["codex-skill", "codex-commands", "no-tools"]


def task(task_id: str, agent: str, rows: list[str], cli: Path, *, tools: list[str]) -> str:
    """A task file for ``agent`` whose CLI is the recording wrapper (``tools``: Claude Code's
    allowed tools, in its ``default`` permission mode)."""
    fields = {"type": agent, "model": "mock/script.yaml", "cli_path": str(cli),
              "plugins": [{"type": "local", "path": str(HERE / "plugin")}]}  # fmt: skip
    if agent == "claude-code":
        fields |= {"permission_mode": "default", "allowed_tools": tools}
    data = {
        "task_id": task_id,
        "description": "recording",
        "agent": fields,
        "sandbox": {"driver": "tempdir", "template_sources": [
            {"type": "starter_files", "files": [{"path": "notes.txt", "content": "TODO: a\n"}]}]},
        "dataset": {"rows": [{"id": r} for r in rows]},
        "initial_prompt": "job: ${row.id}",
        "success_criteria": [{"type": "file_exists", "path": "notes.txt", "description": "d"}],
    }  # fmt: skip
    return json.dumps(data)


def wrapper(folder: Path, real: str, suffix: str) -> Path:
    """A CLI that runs ``real`` and keeps a copy of its stdout per row."""
    path = folder / f"record-{suffix}"
    path.write_text(
        "#!/bin/bash\nset -o pipefail\n"
        f'"{real}" "$@" | tee "{HERE}/$ASSAY_ROW_ID.{suffix}.jsonl"\n',
        encoding="utf-8",
    )
    path.chmod(0o755)
    return path


def main() -> None:
    """Record every row of both CLIs."""
    sys.path.insert(0, str(REPO / "src"))
    from assay.agents.claude_code import bundled_claude

    claude = shutil.which("claude") or str(bundled_claude())
    codex = str(REPO / ".tools" / "npm" / "node_modules" / ".bin" / "codex")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "script.yaml").write_text(SCRIPT, encoding="utf-8")
        claude_cli, codex_cli = wrapper(folder, claude, "claude"), wrapper(folder, codex, "codex")
        tasks = {
            "claude": task("claude", "claude-code", CLAUDE_ROWS, claude_cli,
                           tools=["Skill", "Write", "Read", "Bash"]),
            "denied": task("denied", "claude-code", DENIED_ROWS, claude_cli, tools=["Skill"]),
            "codex": task("codex", "codex", CODEX_ROWS, codex_cli, tools=[]),
        }  # fmt: skip
        for name, text in tasks.items():
            (folder / f"{name}.yaml").write_text(text, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-m", "assay", "run", *(f"{n}.yaml" for n in tasks), "-j", "1"],
            cwd=folder, capture_output=True, text=True, env=dict(os.environ), check=False,
        )  # fmt: skip
        print(done.stdout[-2000:], done.stderr[-2000:])


if __name__ == "__main__":
    main()
