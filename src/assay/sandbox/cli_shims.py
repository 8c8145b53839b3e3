"""``sandbox.record_cli``: stand-in programs that record every call an agent makes and
answer it from rules, after Coder Eval's ``record_cli`` (``coder_eval_agents.md`` §2).

A rule is ``{tool, exit_code (1), stdout (""), stderr (""), responses: [{when: facets,
stdout, stderr, exit_code (0)}]}``: a call to ``tool`` is answered by the first response
whose ``when`` matches it (:mod:`assay.spec.cli_facets`'s facets), else by the rule's own
output and exit code. :func:`write_shims` writes one executable shim per tool into the
row's ``cli_mocks/`` folder (which goes first on the row's ``PATH``), seeds an empty
``cli_mocks/calls.jsonl``, and copies the matcher beside them; each call appends
``{"ts", "tool", "argv", "exit", "rule"}`` (``rule``: the index of the response that
answered, ``null`` for the rule's default) to the log. A shim never reads stdin. What a
shim could not do (write the log, import the matcher) it adds to
``cli_mocks/recorder_problems.jsonl`` and says on stderr, so the criterion reports it.
Interpreters and shells (:data:`REFUSED_TOOLS`) cannot be shimmed: the shims and the
agent's own tooling run on them.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.spec import cli_facets
from assay.spec.record_cli import rule_problems

MOCKS_DIR = "cli_mocks"
LOG_NAME = "calls.jsonl"
PROBLEMS_NAME = "recorder_problems.jsonl"
MATCHER_NAME = "_assay_cli_match.py"

_SHIM = '''#!{python} -I
"""assay's record_cli shim for {tool!r}: log the call, answer from the rules."""
import json, os, sys, time
HERE = os.path.dirname(os.path.abspath(__file__))
RULE = json.loads({rule!r})
def note(kind, error):
    sys.stderr.write("assay record_cli: %s: %s\\n" % (kind, error))
    try:
        with open(os.path.join(HERE, {problems!r}), "a", encoding="utf-8") as out:
            out.write(json.dumps({{"kind": kind, "error": error}}) + "\\n")
    except OSError:
        pass
argv = sys.argv[1:]
call = {{"tool": RULE["tool"], "argv": argv}}
answer, rule = RULE, None
sys.path.insert(0, HERE)
try:
    import _assay_cli_match as match
except Exception as exc:
    note("import", "%s: %s" % (type(exc).__name__, exc))
else:
    for index, response in enumerate(RULE.get("responses") or []):
        if match.matches(call, dict(response.get("when") or {{}}, tool=RULE["tool"])):
            answer, rule = response, index
            break
code = answer.get("exit_code", 0 if rule is not None else 1)
record = {{"ts": time.time(), "tool": RULE["tool"], "argv": argv, "exit": code, "rule": rule}}
try:
    with open(os.path.join(HERE, {log!r}), "a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\\n")
except OSError as exc:
    note("write", "%s: %s" % (type(exc).__name__, exc))
sys.stdout.write(answer.get("stdout") or "")
sys.stderr.write(answer.get("stderr") or "")
sys.exit(code)
'''


SYSTEM_PYTHONS = ("/usr/bin/python3", "/usr/local/bin/python3")


def shim_python() -> str:
    """The interpreter a shim runs on: the system's ``python3`` (every sandbox driver shows
    ``/usr``), else this one's real file; run isolated (``-I``) so nothing of the row's is
    imported. The shims use only the standard library."""
    for candidate in SYSTEM_PYTHONS:
        if os.access(candidate, os.X_OK):
            return candidate
    return os.path.realpath(sys.executable)


def write_shims(root: Path, rules: Sequence[Mapping[str, Any]], *, fresh_log: bool = True) -> Path:
    """Write ``rules``' shims into ``root/cli_mocks`` (see the module docstring) and return
    that folder, to go first on the row's ``PATH``. With ``fresh_log`` false the calls
    recorded so far are kept (the shims written again before criteria run).

    Raises:
        ValueError: a rule :func:`rule_problems` refuses.
        OSError: the folder cannot be written.
    """
    refused = rule_problems(rules)
    if refused:
        raise ValueError("; ".join(refused))
    folder = root / MOCKS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(Path(cli_facets.__file__), folder / MATCHER_NAME)
    if fresh_log:
        (folder / LOG_NAME).write_text("", encoding="utf-8")
    for rule in rules:
        shim = folder / str(rule["tool"])
        shim.write_text(_SHIM.format(python=shim_python(), tool=str(rule["tool"]),
                                     rule=json.dumps(dict(rule)), log=LOG_NAME,
                                     problems=PROBLEMS_NAME), encoding="utf-8")  # fmt: skip
        shim.chmod(0o755)
    return folder


@dataclass(frozen=True)
class CallLog:
    """A read ``calls.jsonl``: the usable calls, what was wrong with the others (line and
    why), and the recorder's own problems (``write``: records it could not log; ``import``:
    calls answered without the matcher)."""

    calls: list[dict[str, Any]] = field(default_factory=list)
    unusable: list[str] = field(default_factory=list)
    dropped: int = 0
    import_failures: int = 0


def read_log(log: Path) -> CallLog:
    """Read a shim log and the recorder's problems file beside it.

    Raises:
        FileNotFoundError: ``log`` does not exist.
    """
    calls: list[dict[str, Any]] = []
    unusable: list[str] = []
    with log.open(encoding="utf-8", errors="replace") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            problem, call = _record(line)
            if problem:
                unusable.append(f"line {number}: {problem}")
            else:
                calls.append(call)
    kinds = [_problem_kind(line) for line in _lines(log.parent / PROBLEMS_NAME)]
    return CallLog(calls, unusable, kinds.count("write"), kinds.count("import"))


def _record(line: str) -> tuple[str | None, dict[str, Any]]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        return f"not JSON ({exc.msg})", {}
    if not isinstance(record, dict):
        return "not a JSON object", {}
    argv = record.get("argv")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        return "'argv' must be a list of strings", {}
    return None, record


def _lines(path: Path) -> list[str]:
    try:
        return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except OSError:
        return []


def _problem_kind(line: str) -> str:
    try:
        return str(json.loads(line).get("kind"))
    except (json.JSONDecodeError, AttributeError):
        return "unknown"
