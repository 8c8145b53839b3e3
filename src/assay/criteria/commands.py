"""``run_command``: a shell command in the sandbox; exit code and stdout decide."""

from __future__ import annotations

import re

from assay.criteria.base import GradingContext, ScoreAggregate, basic_result, sandbox_of
from assay.results.task_result import CriterionResult
from assay.sandbox.process import run_process, tail
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
    return re.search(expected, stdout) is not None


class RunCommandChecker(ScoreAggregate):
    """Score 1.0 when the exit code is ``expected_exit_code`` and stdout matches (if set)."""

    type_name = "run_command"

    async def check(self, spec: RunCommand, context: GradingContext) -> CriterionResult:
        """Run the command with its own timeout (seconds)."""
        sandbox = sandbox_of(context)
        result = await run_process(
            spec.command, cwd=sandbox.root, env=context.env, timeout=spec.timeout
        )
        lines = [f"Command: {spec.command}"]
        if result.timed_out:
            lines.append(f"Timed out after {spec.timeout:g} s")
            return basic_result(spec, 0.0, "\n".join(lines))
        ok = result.exit_code == spec.expected_exit_code
        lines.append(f"Exit code: {result.exit_code} (expected: {spec.expected_exit_code})")
        if spec.expected_stdout is not None:
            matched = stdout_matches(result.stdout, spec.expected_stdout, spec.stdout_match)
            ok = ok and matched
            lines.append(
                f"Stdout {spec.stdout_match} {spec.expected_stdout!r}: "
                + ("matched" if matched else "did not match")
            )
        lines.append(f"Stdout: {tail(result.stdout.strip(), 500) or '(empty)'}")
        lines.append(f"Stderr: {tail(result.stderr.strip(), 500) or '(empty)'}")
        return basic_result(spec, 1.0 if ok else 0.0, "\n".join(lines))
