"""The ``assay`` console script and ``python -m assay``: the command line, with the cyclic
garbage collector set for a process that imports a great deal and then runs many rows.

CPython's default (a young-generation collection every 700 net container allocations) spends
about 0.3 s of a 2,000-row run collecting, a fifth of it while importing, where nothing is
garbage; its full collections re-scan every object the imports made. Here the young
generation is collected every :data:`YOUNG_THRESHOLD` allocations (fewer, larger
collections, still bounded in memory), and what importing the command line made is frozen
(:func:`gc.freeze`), so later collections skip it. Measured in bench/latency.py.

What is alive when the command ends is frozen too: the interpreter's exit then tears the
modules down without collecting their cycles again (about 0.2 s of a command's 1 s on this
machine, measured with ``farm-bench`` on ``assay plan``). ``atexit`` handlers, ``weakref``
finalizers and the flush of the standard streams run as before; every file assay writes is
closed where it is written.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 50_000


def main() -> None:
    """Run the ``assay`` command line (:func:`assay.cli.app.main`)."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
    from assay.cli.app import main as command_line

    gc.freeze()
    try:
        command_line()
    finally:
        gc.freeze()
