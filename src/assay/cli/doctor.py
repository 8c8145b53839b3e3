"""``assay doctor``: which sandbox drivers work here, why the others do not and the fix for
each, and the ``sandbox.limits`` each enforces here (:func:`assay.api.sandbox_drivers`);
then which coding agents' CLIs are found, and how to install the others
(:func:`assay.api.agent_clis`), and the programs criteria run in a row
(:func:`assay.api.criterion_programs`)."""

from __future__ import annotations

import sys


def doctor() -> None:
    """Show which sandbox drivers work here (each tried for real) and which sandbox.limits
    each enforces, which agent CLIs and criterion programs are found, and the fix for what is
    missing."""
    from assay import api

    for check in api.sandbox_drivers():
        mark = "works" if check.works else "does not work"
        sys.stdout.write(f"{check.driver}: {mark} — {check.detail}\n")
        if check.fix:
            sys.stdout.write(f"  fix: {check.fix}\n")
        else:
            sys.stdout.write(f"  sandbox.limits enforced: {', '.join(check.limits)}\n")
    for cli in api.agent_clis():
        mark = "works" if cli.works else "does not work"
        sys.stdout.write(f"agent {cli.agent}: {mark} — {cli.detail}\n")
        if cli.fix:
            sys.stdout.write(f"  fix: {cli.fix}\n")
    for criterion, program in api.criterion_programs():
        mark = "works" if program.found else "does not work"
        where = program.found or f"{program.program}: {program.reason}"
        sys.stdout.write(f"criterion {criterion}: {mark} — {where}\n")
        if program.fix:
            sys.stdout.write(f"  fix: {program.fix}\n")
