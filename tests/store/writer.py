"""A separate writer process for the concurrency tests (run with ``python -m``).

Usage: ``python -m tests.store.writer URL NAME PREFIX COUNT [--adding FILE]
[--stall-after N --marker FILE [--hold FILE]]``: opens the store, creates ``--adding`` just
before it adds COUNT rows with ids ``PREFIX0…`` as one batch, and prints ``version added``.
With ``--stall-after N`` it creates ``--marker`` after handing over N rows, in the middle of
the batch (its write transaction open), and waits there: until ``--hold`` exists, or to be
killed.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay.store import open_store


def rows(
    prefix: str, count: int, stall_after: int | None, marker: Path | None, hold: Path | None
) -> Iterator[Any]:
    for index in range(count):
        if stall_after is not None and index == stall_after:
            assert marker is not None
            marker.write_text("mid-batch")
            deadline = time.monotonic() + 600
            while (hold is None or not hold.exists()) and time.monotonic() < deadline:
                time.sleep(0.005)
        yield {"id": f"{prefix}{index}", "text": f"row {index} of {prefix}", "n": index}


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("url", "name", "prefix"):
        parser.add_argument(name)
    parser.add_argument("count", type=int)
    parser.add_argument("--adding", type=Path)
    parser.add_argument("--stall-after", type=int)
    parser.add_argument("--marker", type=Path)
    parser.add_argument("--hold", type=Path)
    args = parser.parse_args()
    with open_store(args.url) as store:
        if args.adding is not None:
            args.adding.write_text("adding")
        version = store.add(args.name, rows(args.prefix, args.count, args.stall_after,
                                            args.marker, args.hold))  # fmt: skip
        print(version.number, version.added, flush=True)


if __name__ == "__main__":
    main()
