"""``sandbox.record_cli`` and ``cli_called`` end to end (Coder Eval's, ``coder_eval_agents.md``
§2): a real agent program calls the stand-in ``gh`` on both sandbox drivers, gets the scripted
answers, and the criterion counts the logged calls by their facets; what keeps the log from
being evidence is the criterion's error; load-time refusals name the field."""

from __future__ import annotations

from pathlib import Path

import pytest

import assay
from tests.criteria.test_file_criteria import loads
from tests.helpers import write

AGENT = (
    'gh pr create --title "Fix bug 12" --draft > pr.txt; echo "create=$?"; '
    'gh auth status; echo "auth=$?"; gh pr create --title other; echo "again=$?"'
)


def _task(workdir: Path, driver: str, *, after: str = "") -> Path:
    return write(
        workdir / "task.yaml",
        f"""\
task_id: gh
description: an agent opens a pull request with the GitHub CLI, recorded
agent: {{type: command, command: '{AGENT}{after}'}}
initial_prompt: open the pull request
sandbox:
  driver: {driver}
  record_cli:
    - tool: gh
      stderr: "gh: not scripted"
      responses:
        - when: {{verb: pr create, flags: {{title: {{contains: bug}}}}}}
          stdout: "https://example.invalid/pull/7"
        - when: {{verb: auth status}}
          exit_code: 4
success_criteria:
  - {{type: cli_called, description: opened the PR, tool: gh, verb: pr create,
     flags: {{title: {{matches_regex: "bug \\\\d+"}}, draft: {{present: true}}}}}}
  - {{type: cli_called, description: never checked auth, verb: auth status, max_count: 0,
     min_count: 0}}
  - {{type: cli_called, description: two creates, verb: pr create, min_count: 2,
     max_count: 2}}
  - {{type: file_contains, description: the scripted answer, path: pr.txt,
     includes: ["https://example.invalid/pull/7"]}}
  - {{type: response_match, description: exit codes, match: contains,
     expected: "create=0\\nauth=4\\nagain=1"}}
""",
    )


@pytest.mark.parametrize("driver", ["tempdir", "bwrap"])
def test_recorded_calls_are_answered_and_counted(workdir: Path, driver: str) -> None:
    result = assay.run(_task(workdir, driver))
    (row,) = list(result.rows())
    graded = row.success_criteria_results
    assert [c.error for c in graded] == [None] * 5, [c.error for c in graded]
    assert [c.score for c in graded] == [1.0, 0.0, 1.0, 1.0, 1.0]
    assert graded[0].details.startswith("Matched 1 of 3 recorded call(s) (allowed 1..any;")
    assert "e.g. gh pr create --title 'Fix bug 12' --draft" in graded[0].details
    assert graded[1].details.startswith("Matched 1 of 3 recorded call(s) (allowed 0..0;")
    assert result.exit_code == 1


def test_a_log_that_is_no_evidence_scores_zero_as_coder_eval_scores_it(workdir: Path) -> None:
    """Coder Eval's "Scored 0.0 with errors …": an agent that removes or spoils the log fails
    its row; an error would leave it out of every average (and a gate could pass)."""

    def said(after: str) -> str:
        (row,) = list(assay.run(_task(workdir, "tempdir", after=after)).rows())
        graded = row.success_criteria_results[1]  # "never checked auth": 1.0 on a good log
        assert (graded.score, graded.error, row.final_status.value) == (0.0, None, "FAILURE")
        return graded.details

    assert said("; rm cli_mocks/calls.jsonl").startswith(
        "Invocation log 'cli_mocks/calls.jsonl' does not exist (sandbox.record_cli writes an "
        "empty one as the row starts: the agent removed it"
    )
    assert "has 1 unusable record(s): line 4: not JSON" in said(
        "; echo junk >> cli_mocks/calls.jsonl"
    )
    assert "could not import its matcher module on 1 invocation(s)" in said(
        "; rm cli_mocks/_assay_cli_match.py; gh x; true"
    )


@pytest.mark.parametrize(
    ("criterion", "said"),
    [
        ("{type: cli_called, verb: pr, verb_any_of: [pr]}", "not both"),
        ("{type: cli_called, verb: pr --web}", "flag-looking token '--web'"),
        ("{type: cli_called, verb_any_of: [pr, pr create]}", "is a prefix of"),
        (
            "{type: cli_called, min_count: 3, max_count: 1}",
            "max_count (1) must be >= min_count (3)",
        ),
        ("{type: cli_called, flags: {output: x}}", "is in 'ignore_flags'"),
        ("{type: cli_called, log: /etc/passwd}", "is absolute"),
    ],
)
def test_cli_called_load_time_refusals(tmp_path: Path, criterion: str, said: str) -> None:
    assert said in loads(tmp_path, criterion).render()


@pytest.mark.parametrize(
    ("rules", "said"),
    [
        ("[{tool: bash}]", "'bash' cannot be recorded"),
        ("[{tool: gh}, {tool: gh}]", "'gh' has two rules"),
        (
            "[{tool: gh, responses: [{when: {verb_any_of: []}}]}]",
            "responses[0].when: 'verb_any_of' is empty",
        ),
        ("[{tool: gh, exit_code: 300}]", "less than or equal to 255"),
    ],
)
def test_record_cli_load_time_refusals(tmp_path: Path, rules: str, said: str) -> None:
    from assay.errors import TaskFileError
    from assay.orchestration.loading.task_loader import load_task

    path = write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: p\n"
                 f"sandbox: {{record_cli: {rules}}}\n"
                 "success_criteria: [{type: cli_called}]\n")  # fmt: skip
    with pytest.raises(TaskFileError) as caught:
        load_task(path)
    assert said in caught.value.render()
    assert str(caught.value.field).startswith("sandbox.record_cli")
