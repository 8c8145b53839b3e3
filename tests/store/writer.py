"""A separate writer process for the concurrency tests (run with ``python -m``).

Usage: ``python -m tests.store.writer URL NAME PREFIX COUNT [--ready FILE --go FILE]
[--stall-after N --marker FILE]``: opens the store, creates ``--ready``, waits until ``--go``
exists (so two writers start together), then adds
COUNT rows with ids ``PREFIX0…`` as one batch, and prints ``version added start end`` (Unix
seconds around the add). With ``--stall-after N`` it creates
``--marker`` after handing over N rows and then sleeps in the middle of the batch, waiting
to be killed.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay.store import open_store


def rows(prefix: str, count: int, stall_after: int | None, marker: Path | None) -> Iterator[Any]:
    for index in range(count):
        if stall_after is not None and index == stall_after:
            assert marker is not None
            marker.write_text("mid-batch")
            time.sleep(600)
        yield {"id": f"{prefix}{index}", "text": f"row {index} of {prefix}", "n": index}


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("url", "name", "prefix"):
        parser.add_argument(name)
    parser.add_argument("count", type=int)
    parser.add_argument("--go", type=Path)
    parser.add_argument("--ready", type=Path)
    parser.add_argument("--stall-after", type=int)
    parser.add_argument("--marker", type=Path)
    args = parser.parse_args()
    with open_store(args.url) as store:
        if args.ready is not None:
            args.ready.write_text("ready")
        while args.go is not None and not args.go.exists():
            time.sleep(0.005)
        started = time.time()
        version = store.add(args.name, rows(args.prefix, args.count, args.stall_after,
                                            args.marker))  # fmt: skip
        print(version.number, version.added, started, time.time(), flush=True)


if __name__ == "__main__":
    main()
