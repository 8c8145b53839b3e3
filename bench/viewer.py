"""The viewer on a generated run of 1,000 and of 100,000 row-tasks (issue #16).

For each size: ``assay view`` is started as a user starts it; the script times (as a client
on 127.0.0.1) how long until the first page of rows answers (the index still filling), how
long until every row is indexed, then the first page of rows, a filtered page (status and
label), a text search, a deep page sorted by score, the run page and a diff of two runs of
that size, each the median of REPEATS requests; and the viewer's peak resident memory
(``VmHWM``) after all of them. Then ``report.html`` of that run: seconds to write it and its
size. Also human review: a review queue's first page and a later one, and saving a label
(one POST, into a store of the bench's own), each the median of REPEATS. Targets: each page
of rows ≤ 0.5 s; saving a label ≤ 50 ms; memory < 300 MB at both sizes (the ratio is
reported); the report < 5 MB.

Usage: python bench/viewer.py [REPEATS]       (runs are generated once into bench/work/view/)
"""

from __future__ import annotations

import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
from common import ASSAY, REPO, WORK, save

sys.path.insert(0, str(REPO))
from tests.view.generate import make_run

SIZES = (1_000, 100_000)
PAGES = {
    "first page of rows": "/runs/a/rows",
    "filtered page (status, label)": "/runs/a/rows?status=FAILURE&expected=positive",
    "text search": "/runs/a/rows?q=wonderful",
    "page 1,000 sorted by score": "/runs/a/rows?sort=score&order=desc&page=1000&size=50",
    "a row": "/runs/a/rows/default/sst2-three-way/r000500/00",
    "run page": "/runs/a",
}


def runs_of(size: int) -> Path:
    """``bench/work/view/<size>/`` with runs ``a`` and ``b`` (generated once)."""
    root = WORK / "view" / str(size)
    for name, seed in (("a", 7), ("b", 8)):
        if not (root / name / "run.json").is_file():
            print(f"generating {size} rows ({name}) ...", flush=True)
            make_run(size, root, seed=seed, name=name)
    return root


def peak_kb(pid: int) -> int:
    text = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmHWM:\s+(\d+) kB", text)
    return int(found.group(1)) if found else 0


def timed_get(client: httpx.Client, path: str) -> float:
    start = time.perf_counter()
    response = client.get(path)
    elapsed = time.perf_counter() - start
    response.raise_for_status()
    return elapsed


def measure(size: int, repeats: int) -> dict[str, object]:
    root = runs_of(size)
    store = WORK / "view" / f"labels-{size}.db"
    store.unlink(missing_ok=True)
    process = subprocess.Popen([*ASSAY, "view", str(root), "--store", f"sqlite:///{store}"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=REPO)  # fmt: skip
    started = time.perf_counter()
    try:
        assert process.stdout is not None
        url = re.search(r"http://\S+/", process.stdout.readline())
        assert url is not None, process.stderr.read() if process.stderr else ""
        figures: dict[str, object] = {"rows": size}
        with httpx.Client(base_url=url.group(0), timeout=600) as client:
            page = timed_get(client, "/runs/a/rows")
            figures["first page of rows while the index fills (s)"] = round(page, 3)
            figures["seconds from start to that page"] = round(time.perf_counter() - started, 3)
            for key in ("a", "b"):
                while not client.get(f"/api/runs/{key}/progress").json()["complete"]:
                    time.sleep(0.2)
            figures["seconds from start until both runs are indexed"] = round(
                time.perf_counter() - started, 2)  # fmt: skip
            for name, path in PAGES.items():
                times = [timed_get(client, path) for _ in range(repeats)]
                figures[f"{name} (s, median)"] = round(statistics.median(times), 3)
            first = timed_get(client, "/diff?a=a&b=b")
            times = [timed_get(client, "/diff?a=a&b=b&page=2") for _ in range(repeats)]
            figures["diff of two runs, first (s)"] = round(first, 3)
            figures["diff, another page (s, median)"] = round(statistics.median(times), 3)
            figures.update(review(client, url.group(0), repeats))
        figures["viewer peak memory (MB)"] = round(peak_kb(process.pid) / 1024, 1)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(60)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", "import sys, assay; "
                           "print(assay.view.write_html_report(sys.argv[1], output=sys.argv[2]))",
                           str(root / "a"), str(WORK / "view" / f"report-{size}.html")],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode:
        raise RuntimeError(done.stderr)
    figures["report.html seconds"] = round(time.perf_counter() - start, 2)
    figures["report.html MB"] = round((WORK / "view" / f"report-{size}.html").stat().st_size
                                      / 1e6, 2)  # fmt: skip
    return figures


def review(client: httpx.Client, url: str, repeats: int) -> dict[str, float]:
    """A review queue's pages and saving labels (each a new version in the store)."""
    figures = {"review queue, first page (s)": round(
        timed_get(client, "/runs/a/review?order=failed"), 3)}  # fmt: skip
    times = [timed_get(client, f"/runs/a/review?order=failed&i={i * 97}") for i in range(repeats)]
    figures["review queue, a later page (s, median)"] = round(statistics.median(times), 3)
    page = client.get("/runs/a/review").text
    token = re.search(r'data-token="([^"]+)"', page)
    assert token is not None
    headers = {"X-Assay-Token": token.group(1), "Origin": url.rstrip("/")}
    saves = []
    for i in range(repeats * 4):
        body = {"items": [{"folder": f"default/sst2-three-way/r{i:06d}/00", "label": "pass"}]}
        start = time.perf_counter()
        client.post("/api/runs/a/labels", json=body, headers=headers).raise_for_status()
        saves.append(time.perf_counter() - start)
    figures["saving a label (s, median)"] = round(statistics.median(saves), 4)
    return figures


def main(repeats: int = 5) -> dict[str, object]:
    found = {str(size): measure(size, repeats) for size in SIZES}
    small, big = found[str(SIZES[0])], found[str(SIZES[-1])]
    found["memory ratio 100,000 / 1,000"] = round(
        float(big["viewer peak memory (MB)"]) / float(small["viewer peak memory (MB)"]), 2
    )  # type: ignore[arg-type]
    save("view", found)
    return found


if __name__ == "__main__":
    import json

    print(json.dumps(main(*(int(a) for a in sys.argv[1:])), indent=2))
