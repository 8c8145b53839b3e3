"""``run_command``: a shell command in the sandbox; exit code and stdout decide, or with
``score_from_stdout`` the first line of stdout is the score (Coder Eval's rules and messages,
``reference/coder_eval_agents.md`` §2). The command runs inside the row's bwrap sandbox with
the ``bwrap`` driver."""

from __future__ import annotations

import math
from typing import ClassVar

from assay.criteria import patterns
from assay.criteria.base import (
    Criterion,
    EvidenceError,
    GradingContext,
    basic_result,
    in_score_range,
    sandbox_of,
)
from assay.results.task_result import CriterionResult
from assay.sandbox.process import ProcessResult, tail
from assay.spec.criteria import RunCommand


def stdout_matches(stdout: str, expected: str, how: str) -> bool:
    """Coder Eval's rules: ``exact`` and ``contains`` strip both sides, ``regex`` is ``re.search``.

    Stripping ``expected`` means a YAML block scalar's trailing newline does not fail
    ``contains``; a regex is used as written.
    """
    if how == "exact":
        return stdout.strip() == expected.strip()
    if how == "contains":
        return expected.strip() in stdout.strip()
    return patterns.search(expected, stdout) is not None


class RunCommandCriterion(RunCommand, Criterion):
    """Score 1.0 when the exit code is ``expected_exit_code`` and stdout matches (if set);
    with ``score_from_stdout``, the score the command prints."""

    check_seconds: ClassVar[float | None] = None  # its command has its own timeout

    reads_sandbox: ClassVar[bool] = True

    async def check(self, context: GradingContext) -> CriterionResult:
        """Run the command with its own timeout (seconds)."""
        sandbox = sandbox_of(context)
        result = await sandbox.run(self.command, env=context.env, timeout=self.timeout)
        lines = [f"Command: {self.command}"]
        if result.timed_out:
            lines.append(f"Timed out after {self.timeout:g} s")
            if self.score_from_stdout:
                raise EvidenceError(f"Command timed out after {self.timeout:g} s")
            return basic_result(self, 0.0, "\n".join(lines))
        if self.score_from_stdout:
            return score_from_stdout(self, result)
        ok = result.exit_code == self.expected_exit_code
        lines.append(f"Exit code: {result.exit_code} (expected: {self.expected_exit_code})")
        if self.expected_stdout is not None:
            matched = stdout_matches(result.stdout, self.expected_stdout, self.stdout_match)
            ok = ok and matched
            lines.append(
                f"Stdout {self.stdout_match} {self.expected_stdout!r}: "
                + ("matched" if matched else "did not match")
            )
        lines.append(f"Stdout: {tail(result.shown_stdout.strip(), 500) or '(empty)'}")
        lines.append(f"Stderr: {tail(result.stderr.strip(), 500) or '(empty)'}")
        return basic_result(self, 1.0 if ok else 0.0, "\n".join(lines))


def score_from_stdout(spec: RunCommand, result: ProcessResult) -> CriterionResult:
    """The float on stdout's first line, in [0, 1]; the rest of stdout is details.

    Raises:
        EvidenceError: the command exited with another code than expected, printed
            nothing, a blank first line, no finite number on it (Coder Eval's messages) or
            one outside [0, 1] (a count where a share was meant; refused as a criterion of
            one's own refuses it, rounding's 1e-9 aside): 0.0,
            as Coder Eval scores it ("non-zero exit or parse failure → 0"), so an agent
            that breaks the scorer cannot take its row out of the averages.
    """
    stream = (f"Stdout: {tail(result.shown_stdout.strip(), 500) or '(empty)'}\n"
              f"Stderr: {tail(result.stderr.strip(), 500) or '(empty)'}")  # fmt: skip
    if result.exit_code != spec.expected_exit_code:
        raise EvidenceError(f"Command exited with code {result.exit_code} (expected "
                             f"{spec.expected_exit_code})\n{stream}")  # fmt: skip
    lines = result.stdout.splitlines()
    if not result.stdout.strip():
        raise EvidenceError(f"No output from command (empty stdout)\n{stream}")
    if not lines[0].strip():
        raise EvidenceError("The first line of stdout is blank: score_from_stdout reads the "
                            f"score from the first line\n{stream}")  # fmt: skip
    first = lines[0].strip()
    try:
        raw = float(first)
    except ValueError:
        raise EvidenceError(f"Could not parse score from first line: {first!r}") from None
    if math.isnan(raw) or math.isinf(raw):
        raise EvidenceError(f"Invalid score value from stdout: {first!r}")
    if not in_score_range(raw):
        raise EvidenceError(f"Score {first} from stdout is outside [0, 1]: print a share "
                            "(passed / total), not a count; a score out of range is refused, "
                            f"never clamped\n{stream}")  # fmt: skip
    score = max(0.0, min(1.0, raw))
    header = f"Score: {score:.3f}"
    rest = "\n".join(lines[1:]).strip()
    details = f"{header}\nCommand: {spec.command}" + (f"\n{tail(rest, 2000)}" if rest else "")
    return basic_result(spec, score, details)
