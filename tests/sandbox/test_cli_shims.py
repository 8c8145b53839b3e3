"""``record_cli`` shims and the ``cli_called`` facets (Coder Eval's rules,
``coder_eval_agents.md`` §2): real shims on a real shell's PATH log every call and answer
from the first matching response; the facets parse argv as the reference does; every
load-time refusal of the reference is made; a recorder that cannot write its log or import
its matcher says so."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from assay.sandbox import cli_shims
from assay.spec import cli_facets as cli_match
from assay.spec.record_cli import rule_problems


def _call(*argv: str, tool: str = "gh") -> dict[str, Any]:
    return {"tool": tool, "argv": list(argv)}


@pytest.mark.parametrize(
    ("argv", "facets", "expected"),
    [
        (["pr", "create", "--title", "x"], {"verb": "pr create"}, True),
        (["pr", "list"], {"verb": "pr create"}, False),
        (["pr"], {"verb": ["pr", "create"]}, False),
        (["pr", "merge", "12"], {"verb_any_of": ["pr create", "pr merge"]}, True),
        (["pr", "merge", "12"], {"verb": "pr merge", "positional": ["12"]}, True),
        (["pr", "merge", "13"], {"verb": "pr merge", "positional": ["12"]}, False),
        # a flag not named takes no value: "12" stays positional
        (["pr", "merge", "--squash", "12"], {"verb": "pr merge", "positional": ["12"]}, True),
        # a flag named with a value predicate takes one
        (
            ["pr", "create", "--title", "Fix", "extra"],
            {"verb": "pr create", "flags": {"title": "Fix"}, "positional": ["extra"]},
            True,
        ),
        (["pr", "create", "--title=Fix it"], {"flags": {"title": {"contains": "it"}}}, True),
        (
            ["pr", "create", "-t", "Fix"],
            {"flags": {"title": {"equals": "Fix", "aliases": ["t"]}}},
            True,
        ),
        (
            ["rm", "-rf", "dir"],
            {
                "verb": "rm",
                "flags": {"r": {"present": True}, "f": {"present": True}},
                "positional": ["dir"],
            },
            True,
        ),
        (["pr", "create"], {"flags": {"draft": {"absent": True}}}, True),
        (["pr", "create", "--draft"], {"flags": {"draft": {"absent": True}}}, False),
        (["x", "--label", "a", "--label", "b"], {"flags": {"label": "b"}}, True),
        (["x", "--label", "a"], {"flags": {"label": {"any_of": ["b", "c"]}}}, False),
        (["x", "--n", "3"], {"flags": {"n": 3}}, True),
        (
            ["x", "--name", "Alpha"],
            {"flags": {"name": {"matches_regex": "^alp", "flags": 2}}},
            True,
        ),
        # --output takes its value by default and is ignored; "--" ends the flags
        (["run", "--output", "out.txt", "job"], {"verb": "run job"}, True),
        (["run", "--", "--not-a-flag"], {"verb": "run", "positional": ["--not-a-flag"]}, True),
    ],
)
def test_facets_match_as_coder_eval_parses_argv(
    argv: list[str], facets: dict[str, Any], expected: bool
) -> None:
    assert cli_match.matches(_call(*argv), facets) is expected


def test_the_tool_facet_and_counting() -> None:
    calls = [_call("pr", "list"), _call("pr", "list", tool="glab"), _call("issue", "list")]
    assert cli_match.count(calls, {"tool": "gh", "verb": "pr list"}) == 1
    assert cli_match.count(calls, {"positional": ["list"]}) == 0  # positional follows a verb
    assert cli_match.count(calls, {}) == 3


@pytest.mark.parametrize(
    ("facets", "said"),
    [
        ({"verb": "pr", "verb_any_of": ["pr"]}, "not both"),
        ({"verb_any_of": []}, "'verb_any_of' is empty"),
        ({"verb": "  "}, "is blank"),
        ({"verb": "pr --web"}, "flag-looking token '--web'"),
        ({"verb_any_of": ["pr create", "pr create"]}, "lists 'pr create' twice"),
        ({"verb_any_of": ["pr", "pr create"]}, "'pr' is a prefix of 'pr create'"),
        ({"positional": []}, "'positional' is empty"),
        ({"flags": {"title": {"equals": "a", "contains": "b"}}}, "needs exactly one of"),
        ({"flags": {"title": {"aliases": ["t"]}}}, "needs exactly one of"),
        ({"flags": {"title": {"equal": "a"}}}, "unknown key(s) ['equal']"),
        ({"flags": {"output": "x.txt"}}, "'output' has a predicate but is in 'ignore_flags'"),
        (
            {
                "flags": {
                    "title": {"present": True, "aliases": ["t"]},
                    "tag": {"present": True, "aliases": ["t"]},
                }
            },
            "flag name 't' is used by 'title' and 'tag'",
        ),
        ({"flags": {"n": {"matches_regex": "("}}}, "invalid regex '('"),
    ],
)
def test_every_load_time_refusal_of_the_facets(facets: dict[str, Any], said: str) -> None:
    found = cli_match.problems(facets)
    assert any(said in problem for problem in found), found


def test_sound_facets_have_no_problems() -> None:
    assert (
        cli_match.problems(
            {
                "verb": "pr create",
                "positional": ["x"],
                "flags": {"title": {"contains": "a", "aliases": ["t"]}},
            }
        )
        == []
    )


RULES = [
    {
        "tool": "gh",
        "stderr": "gh: not scripted\n",
        "responses": [
            {
                "when": {"verb": "pr create", "flags": {"title": {"contains": "bug"}}},
                "stdout": "https://example.invalid/pr/7\n",
            },
            {"when": {"verb": "auth status"}, "stderr": "not logged in\n", "exit_code": 4},
        ],
    },
    {"tool": "kubectl", "exit_code": 0, "stdout": "ok\n"},
]


def _shell(script: str, folder: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, text=True,
                          capture_output=True, stdin=subprocess.DEVNULL, check=False)  # fmt: skip


def test_real_shims_on_a_real_shells_path_log_and_answer(tmp_path: Path) -> None:
    folder = cli_shims.write_shims(tmp_path, RULES)
    assert folder == tmp_path / "cli_mocks"
    assert (folder / "calls.jsonl").read_text() == ""  # seeded empty
    done = _shell('gh pr create --title "Fix bug 3" -d; echo "pr=$?"; gh auth status; '
                  'echo "auth=$?"; gh repo view; echo "view=$?"; kubectl get pods; '
                  'echo "k=$?"', folder, tmp_path)  # fmt: skip
    assert done.stdout.splitlines() == ["https://example.invalid/pr/7", "pr=0", "auth=4",
                                        "view=1", "ok", "k=0"]  # fmt: skip
    assert done.stderr == "not logged in\ngh: not scripted\n"
    log = cli_shims.read_log(folder / "calls.jsonl")
    assert log.unusable == [] and log.dropped == 0 and log.import_failures == 0
    shown = [(c["tool"], c["argv"], c["exit"], c["rule"]) for c in log.calls]
    assert shown == [
        ("gh", ["pr", "create", "--title", "Fix bug 3", "-d"], 0, 0),
        ("gh", ["auth", "status"], 4, 1),
        ("gh", ["repo", "view"], 1, None),
        ("kubectl", ["get", "pods"], 0, None),
    ]
    assert (
        cli_match.count(
            log.calls,
            {"tool": "gh", "verb": "pr create", "flags": {"title": {"matches_regex": "bug"}}},
        )
        == 1
    )


def test_a_recorder_that_cannot_log_or_match_says_so(tmp_path: Path) -> None:
    folder = cli_shims.write_shims(tmp_path, RULES)
    (folder / "calls.jsonl").unlink()
    (folder / "calls.jsonl").mkdir()  # the log cannot be written (as root, chmod would not do)
    (folder / cli_shims.MATCHER_NAME).unlink()
    done = _shell("gh pr create --title bug; echo rc=$?", folder, tmp_path)
    assert done.stdout.splitlines() == ["rc=1"]  # no matcher: the rule's default answers
    assert "assay record_cli: import: ModuleNotFoundError" in done.stderr
    assert "assay record_cli: write: IsADirectoryError" in done.stderr
    (folder / "calls.jsonl").rmdir()
    (folder / "calls.jsonl").write_text('{"argv": ["a"]}\nnot json\n{"argv": "a b"}\n[1]\n')
    log = cli_shims.read_log(folder / "calls.jsonl")
    assert (log.dropped, log.import_failures, len(log.calls)) == (1, 1, 1)
    assert log.unusable == ["line 2: not JSON (Expecting value)",
                            "line 3: 'argv' must be a list of strings",
                            "line 4: not a JSON object"]  # fmt: skip
    with pytest.raises(FileNotFoundError):
        cli_shims.read_log(tmp_path / "nowhere.jsonl")


@pytest.mark.parametrize(
    ("rules", "said"),
    [
        ([{"tool": "bash"}], "'bash' cannot be recorded"),
        ([{"tool": "python3"}], "'python3' cannot be recorded"),
        ([{"tool": "bin/gh"}], "'tool' must be a program name"),
        ([{"tool": ""}], "'tool' must be a program name"),
        ([{"tool": "gh"}, {"tool": "gh"}], "'gh' has two rules"),
        ([{"tool": "gh", "exit_code": 256}], "exit_code must be a whole number 0 to 255"),
        (
            [{"tool": "gh", "responses": [{"when": {"verb": "a"}, "exit_code": -1}]}],
            "record_cli[0].responses[0]: exit_code",
        ),
        (
            [{"tool": "gh", "responses": [{"when": {"verb_any_of": []}}]}],
            "record_cli[0].responses[0].when: 'verb_any_of' is empty",
        ),
    ],
)
def test_rules_the_reference_refuses(rules: list[dict[str, Any]], said: str) -> None:
    found = rule_problems(rules)
    assert any(said in problem for problem in found), found
    with pytest.raises(ValueError, match="record_cli"):
        cli_shims.write_shims(Path("/nonexistent"), rules)


def test_a_shim_never_reads_stdin(tmp_path: Path) -> None:
    folder = cli_shims.write_shims(tmp_path, [{"tool": "gh", "exit_code": 0}])
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["gh", "x"], input="never read", env=env, text=True,
                          capture_output=True, timeout=30, check=False)  # fmt: skip
    assert done.returncode == 0
    record = json.loads((folder / "calls.jsonl").read_text())
    assert record["argv"] == ["x"] and isinstance(record["ts"], float)
