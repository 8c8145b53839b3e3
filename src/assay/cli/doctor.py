"""``assay doctor``: which sandbox drivers work here, why the others do not and the fix for
each, and the ``sandbox.limits`` each enforces here (:func:`assay.api.sandbox_drivers`)."""

from __future__ import annotations

import sys


def doctor() -> None:
    """Show which sandbox drivers work on this machine (each is tried for real), why the
    others do not with the fix for each, and which sandbox.limits each enforces here."""
    from assay import api

    for check in api.sandbox_drivers():
        mark = "works" if check.works else "does not work"
        sys.stdout.write(f"{check.driver}: {mark} — {check.detail}\n")
        if check.fix:
            sys.stdout.write(f"  fix: {check.fix}\n")
        else:
            sys.stdout.write(f"  sandbox.limits enforced: {', '.join(check.limits)}\n")
