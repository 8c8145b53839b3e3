"""The viewer's web application (Starlette): its routes, each a page gathered from the
workspace and rendered by the templates. Every route only reads; nothing is ever written
into a run folder.

Routes: ``/`` the runs; ``/runs/{run}`` a run; ``/runs/{run}/rows`` its rows (filters in
the query string, :mod:`assay.view.queries`); ``/runs/{run}/rows/{folder}`` one row;
``/runs/{run}/rows.csv`` and ``rows.jsonl`` the rows its filters select, as a download
(:mod:`assay.view.export`); ``/runs/{run}/files/{path}`` a file of the run, as plain
text (or a download when it is not text); ``/diff?a=RUN&b=RUN[&va=&vb=&change=&suite=&page=]``
two runs or variants row by row;
``/api/runs/{run}/progress`` how far a run and its index are (JSON);
``/api/diff/progress?a=RUN&b=RUN`` how far a diff's two indexes are (JSON); ``/assets/…`` the
stylesheet, script and vendored Vega-Lite.

Human review (:mod:`assay.view.review`): ``/runs/{run}/review?order=&seed=&scale=&i=&g=`` walks
a run's rows in a review order, labelling each by keyboard; ``POST /api/runs/{run}/labels``
saves a batch of labels to the store (never the run folder), refused (403) without the
server's token, a secret of this server embedded in its pages (another origin can neither
read it nor send the header); ``/calibrations`` the store's judge calibrations.
"""

from __future__ import annotations

import hashlib
import hmac
import mimetypes
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from assay.errors import StoreError, UsageError, UserError
from assay.results.experiment import ExperimentResult
from assay.results.io import Writer
from assay.view.diff import CHANGES, Side, build_diff, outputs, pair_page, text_diff
from assay.view.export import FORMATS, export_lines
from assay.view.guard import RequestGuard
from assay.view.index import IndexState, RowIndex
from assay.view.queries import (
    COLUMNS,
    RowFilter,
    criterion_types,
    facets,
    neighbours,
    row_page,
)
from assay.view.reading import read_bytes
from assay.view.redacting import RedactedAnswers
from assay.view.render import ASSETS, render
from assay.view.review import (
    MAX_BATCH,
    LabelBook,
    Scale,
    calibration_view,
    read_label,
    row_facts,
)
from assay.view.review_queue import ORDERS, build_queue, labelled_rows
from assay.view.row_view import read_row_view, safe_path
from assay.view.run_pages import run_line, run_page
from assay.view.suite_view import dataset_text
from assay.view.workspace import Job, RunEntry, Workspace, stamp

_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer"}  # fmt: skip
CHANGE_LABELS = [("changed", "only changed rows"), ("", "every row"),
                 ("became_pass", "became passes"), ("became_fail", "became failures"),
                 ("score_up", "scored higher"), ("score_down", "scored lower"),
                 ("same", "unchanged"), ("ungraded", "not graded on a side"),
                 ("data_changed", "row content differs (left out)")]  # fmt: skip


def _page(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(render(template, **context), status_code=status, headers=_HEADERS)


def _not_found(what: str, hint: str = "") -> HTMLResponse:
    return _page("error.html", 404, title="Not found", message=what, hint=hint)


def build_app(ws: Workspace, *, hosts: Iterable[str], labels: LabelBook | None = None) -> Starlette:
    """The application over ``ws``'s folders, answering only requests whose ``Host`` is one
    of ``hosts`` (``name:port``, :func:`assay.view.guard.allowed_hosts`) and that do not come
    from another origin's page (:class:`assay.view.guard.RequestGuard`: 421 and 403); human
    labels go to ``labels`` (default: the store the CLI uses, opened on the first label)."""
    book = labels if labels is not None else LabelBook()
    token = secrets.token_urlsafe(32)  # this server's; a write without it is refused

    def entry_of(request: Request) -> RunEntry | None:
        return ws.entry(request.path_params["run"])

    def runs(request: Request) -> Response:
        lines = [run_line(ws, entry) for entry in ws.runs()]
        return _page("runs.html", runs=lines, folders=[str(f) for f in ws.folders])

    def run(request: Request) -> Response:
        entry = entry_of(request)
        if entry is None:
            return _not_found(f"no run '{request.path_params['run']}' in "
                              f"{', '.join(map(str, ws.folders))}")  # fmt: skip
        page = run_page(ws, entry)
        live = page.info.state == "running" or not page.index.complete
        return _page("run.html", page=page, has_charts=True, **_live(entry, page.info.state,
                                                                     page.index, live))  # fmt: skip

    def rows(request: Request) -> Response:
        entry = entry_of(request)
        if entry is None:
            return _not_found(f"no run '{request.path_params['run']}'")
        chosen = RowFilter.from_params(_with_columns(request))
        index = ws.index(entry)
        state = index.state()
        with index.connect() as db:
            page = row_page(db, chosen, texts=bool({"prompt", "response"} & set(chosen.columns)))
            found, types = ws.memo(("facets", entry.path, index.generation),
                                   lambda: (facets(db), criterion_types(db)))  # fmt: skip
        labels = {}
        for value, _ in found["criterion"]:
            position, outcome = value.split(":", 1)
            labels[value] = f"#{int(position) + 1} {types.get(position, '')} {outcome}"
        info = ws.info(entry)
        return _page("rows.html", key=entry.key, path=str(entry.path), filter=chosen, page=page,
                     columns=COLUMNS,
                     facets=found, criterion_labels=labels, index=state,
                     **_live(entry, info.state, state, info.state == "running"
                             or not state.complete))  # fmt: skip

    def export(request: Request) -> Response:
        entry = entry_of(request)
        fmt = request.path_params["fmt"]
        if entry is None or fmt not in FORMATS:
            return _not_found(f"no export '{request.url.path}'",
                              hint="rows.csv or rows.jsonl of a run")  # fmt: skip
        chosen = RowFilter.from_params(request.query_params)
        index = ws.index(entry)
        media = "text/csv" if fmt == "csv" else "application/x-ndjson"

        def lines() -> Iterator[str]:
            index.wait()  # every row of the filter, not only those indexed so far
            with index.connect() as db:
                yield from export_lines(db, entry.path, chosen, fmt)

        name = f"{entry.key}-rows.{fmt}".replace('"', "")
        headers = {**_HEADERS, "Content-Disposition": f'attachment; filename="{name}"'}
        return StreamingResponse(lines(), media_type=f"{media}; charset=utf-8", headers=headers)

    def row(request: Request) -> Response:
        entry = entry_of(request)
        folder = request.path_params["folder"].strip("/")
        if entry is None:
            return _not_found(f"no run '{request.path_params['run']}'")
        target = safe_path(entry.path, folder)
        if target is None or not target.is_dir():
            return _not_found(f"no row folder '{folder}' in run {entry.key}")
        view = read_row_view(entry.path, folder)
        index = ws.index(entry, start=False)
        chosen = RowFilter.from_params(request.query_params)
        with index.connect() as db:
            before, after = neighbours(db, folder, chosen)
        review = _review_panel(book, entry, folder, request, token, after, before)
        return _page("row.html", key=entry.key, path=str(entry.path), view=view, before=before,
                     after=after, review=review, back=chosen.query(),
                     trail=_trail(request, chosen))  # fmt: skip

    def review_page(request: Request) -> Response:
        entry = entry_of(request)
        if entry is None:
            return _not_found(f"no run '{request.path_params['run']}'")
        return _review_page(ws, book, entry, request, token)

    async def save_labels(request: Request) -> Response:
        given = request.headers.get("x-assay-token", "")
        if not hmac.compare_digest(given.encode(), token.encode()):
            return JSONResponse({"error": "a label needs this viewer's page token (open the "
                                          "row in the viewer and label it there)"},
                                status_code=403, headers=_HEADERS)  # fmt: skip
        entry = entry_of(request)
        if entry is None:
            return JSONResponse({"error": f"no run '{request.path_params['run']}'"},
                                status_code=404, headers=_HEADERS)  # fmt: skip
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse({"error": "the body must be JSON: {scale, items: [{folder, "
                                          "label, comment, reviewer}]}"},
                                status_code=400, headers=_HEADERS)  # fmt: skip
        return await run_in_threadpool(_save_labels, ws, book, entry, body)

    def calibrations(request: Request) -> Response:
        return _calibrations_page(ws, book)

    def files(request: Request) -> Response:
        entry = entry_of(request)
        relative = request.path_params["path"]
        target = safe_path(entry.path, relative) if entry is not None else None
        if entry is None or target is None or not target.is_file():
            return _not_found(f"no file '{relative}' in this run")
        kind, _ = mimetypes.guess_type(target.name)
        textual = kind is None or kind.startswith("text/") or kind in (
            "application/json", "application/xml", "application/x-yaml")  # fmt: skip
        if textual and _looks_textual(target):  # sent in one piece: redacted (RedactedAnswers)
            return _shown_text(target)
        return FileResponse(target, media_type="application/octet-stream", headers=_HEADERS,
                            filename=target.name)  # fmt: skip

    def progress(request: Request) -> Response:
        entry = entry_of(request)
        if entry is None:
            return JSONResponse({"error": "no such run"}, status_code=404)
        index = ws.index(entry)
        state = index.state()
        info = ws.info(entry)
        return JSONResponse({"state": info.state, "indexed": state.indexed,
                             "found": state.found, "complete": state.complete,
                             "version": _version(info.state, state)}, headers=_HEADERS)  # fmt: skip

    def diff(request: Request) -> Response:
        return _diff_page(ws, request)

    def diff_progress(request: Request) -> Response:
        params = {k: request.query_params.get(k, "") for k in ("a", "b", "va", "vb")}
        a, b = ws.entry(params["a"]), ws.entry(params["b"])
        if a is None or b is None:
            return JSONResponse({"error": "no such run"}, status_code=404)
        indexes = [ws.index(a), ws.index(b)]
        states = [index.state() for index in indexes]
        version = _diff_version(indexes)
        if all(state.scanned_at is not None for state in states):
            job = _comparison_job(ws, a, b, params, indexes)
            version += ":c1" if job is None or job.done else ":c0"
        return JSONResponse({"sides": [{"indexed": s.indexed, "found": s.found,
                                        "complete": s.complete} for s in states],
                             "version": version}, headers=_HEADERS)  # fmt: skip

    def no_icon(request: Request) -> Response:
        return Response(status_code=204)

    routes = [
        Route("/", runs),
        Route("/runs/{run}", run),
        Route("/runs/{run}/rows", rows),
        Route("/runs/{run}/rows.{fmt}", export),
        Route("/runs/{run}/rows/{folder:path}", row),
        Route("/runs/{run}/review", review_page),
        Route("/api/runs/{run}/labels", save_labels, methods=["POST"]),
        Route("/calibrations", calibrations),
        Route("/runs/{run}/files/{path:path}", files),
        Route("/api/runs/{run}/progress", progress),
        Route("/diff", diff),
        Route("/api/diff/progress", diff_progress),
        Route("/favicon.ico", no_icon),
        Mount("/assets", StaticFiles(directory=ASSETS), name="assets"),
    ]
    shown = Writer.from_environment(os.environ)  # the viewer's environment's secrets
    return Starlette(routes=routes,
                     middleware=[Middleware(RequestGuard, hosts=tuple(hosts)),
                                 Middleware(RedactedAnswers, writer=shown)])  # fmt: skip


def _with_columns(request: Request) -> dict[str, str]:
    """The query's parameters, the column picker's ``col`` boxes joined into ``cols``."""
    params = dict(request.query_params)
    ticked = request.query_params.getlist("col")
    params.pop("col", None)
    if ticked:
        params["cols"] = ",".join(ticked)
    return params


def _version(state: str, index: Any) -> str:
    return f"{state}:{index.indexed}:{int(index.complete)}"


def _live(entry: RunEntry, state: str, index: Any, live: bool) -> dict[str, Any]:
    """The page's progress URL and version when it should reload as the run moves."""
    if not live:
        return {}
    return {"progress_url": f"/api/runs/{_key(entry)}/progress", "version": _version(state, index)}


SHOWN_BYTES = 32 * 1024 * 1024
"""A text file the viewer shows (redacted, in one piece); a longer one is named, not sent."""


def _shown_text(path: Path) -> Response:
    size = path.stat().st_size
    if size > SHOWN_BYTES:
        return _page("error.html", 413, title="Too large to show", message=(
            f"{path.name} holds {size:,} bytes, more than the viewer shows "
            f"({SHOWN_BYTES:,})"), hint=f"open it from the run folder: {path}")  # fmt: skip
    return Response(read_bytes(path), media_type="text/plain; charset=utf-8", headers=_HEADERS)


def _key(entry: RunEntry) -> str:
    """The run's key as one URL path segment (a folder named ``run#2`` or ``a?b``)."""
    return quote(entry.key, safe="")


def _looks_textual(path: Any) -> bool:
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return b"\x00" not in head


def _diff_page(ws: Workspace, request: Request) -> Response:
    params = {k: request.query_params.get(k, "") for k in ("a", "b", "va", "vb", "suite")}
    params["change"] = request.query_params.get("change", "changed")
    runs = ws.runs()
    context: dict[str, Any] = {"runs": runs, "params": params, "change_labels": CHANGE_LABELS}
    if not params["a"] or not params["b"]:
        return _page("diff.html", **context)
    entries = [ws.entry(params["a"]), ws.entry(params["b"])]
    if None in entries:
        missing = params["a"] if entries[0] is None else params["b"]
        return _page("diff.html", 404, refusal=f"no run '{missing}'", **context)
    a, b = entries[0], entries[1]
    assert a is not None and b is not None
    indexes = [ws.index(a), ws.index(b)]
    sides = [_side("A", a, ws, params["va"]), _side("B", b, ws, params["vb"])]
    context["sides"] = sides
    cold = _cold(indexes)
    if cold:
        query = urlencode({k: params[k] for k in ("a", "b", "va", "vb") if params[k]})
        return _page("diff.html", indexing=cold, progress_url=f"/api/diff/progress?{query}",
                     version=_diff_version(indexes), **context)  # fmt: skip
    for index in indexes:
        index.wait()
    try:
        sides_ab = (
            Side(a.key, indexes[0], params["va"] or None, ws.selections(a)),
            Side(b.key, indexes[1], params["vb"] or None, ws.selections(b)),
        )
        key = ("diff", a.path, b.path, params["va"], params["vb"], indexes[0].generation,
               indexes[1].generation)  # fmt: skip
        path, summary = ws.memo(key, lambda: build_diff(*sides_ab, ws.scratch))
    except UsageError as exc:
        return _page("diff.html", refusal=exc.message, refusal_hint=exc.hint or "", **context)
    try:
        page = max(1, int(request.query_params.get("page", "1")))
    except ValueError:
        page = 1
    change = params["change"] if params["change"] in (*CHANGES, "changed") else ""
    pairs, total = pair_page(path, change=change, suite=params["suite"], page=page, size=100)
    outputs(indexes[0], indexes[1], pairs)
    for pair in pairs:
        scores = (pair["a_score"], pair["b_score"])
        pair["delta"] = None if None in scores else scores[1] - scores[0]
        texts = (pair["a_response"] or "", pair["b_response"] or "")
        pair["text_diff"] = text_diff(*texts) if texts[0] != texts[1] else []
    context.update(_comparison(ws, a, b, params, indexes))
    pages = max(1, -(-total // 100))

    def page_url(number: int) -> str:
        return "/diff?" + urlencode({**{k: v for k, v in params.items() if v}, "page": number})

    sides[0]["variant"], sides[1]["variant"] = summary.variant_a, summary.variant_b
    return _page("diff.html", summary=summary, pairs=pairs, total=total, page=min(page, pages),
                 pages=pages, page_url=page_url, **context)  # fmt: skip


COLD_WAIT = 1.0  # seconds a diff waits for a first index before it shows their progress


def _cold(indexes: list[RowIndex]) -> list[tuple[str, IndexState]]:
    """The sides whose index has never finished a scan (a first visit of a big run), after
    waiting up to ``COLD_WAIT`` seconds for them: their page shows how far each is."""
    deadline = time.monotonic() + COLD_WAIT
    for index in indexes:
        if index.state().scanned_at is None:
            index.wait(max(0.0, deadline - time.monotonic()))
    states = [index.state() for index in indexes]
    if all(state.scanned_at is not None for state in states):
        return []
    return list(zip(("A", "B"), states, strict=True))


def _diff_version(indexes: list[RowIndex]) -> str:
    """Changes as the sides' indexes fill and when both have finished a first scan."""
    states = [index.state() for index in indexes]
    return ":".join(f"{s.indexed}/{int(s.scanned_at is not None)}" for s in states)


def _comparison_job(
    ws: Workspace, a: RunEntry, b: RunEntry, params: dict[str, str], indexes: list[RowIndex]
) -> Job | None:
    """The job running ``assay compare`` on the two sides (:func:`run_compare`), once per
    state of the runs; ``None`` while a side is still running (its rows are not all there)."""
    if any(ws.info(entry).state in ("running",) for entry in (a, b)):
        return None
    va, vb = params["va"] or None, params["vb"] or None
    key = ("compare", a.path, b.path, va, vb, indexes[0].generation, indexes[1].generation,
           stamp(a.path), stamp(b.path))  # fmt: skip
    folder = ws.scratch / ("compare-" + hashlib.sha256(repr(key).encode()).hexdigest()[:16])
    return ws.background(key, lambda: run_compare(a.path, b.path, va, vb, folder))


def run_compare(
    run_a: Path, run_b: Path, variant_a: str | None, variant_b: str | None, output: Path
) -> ExperimentResult:
    """``assay compare RUN_A RUN_B [--variant-a/-b] -o OUTPUT`` as a process of its own (the
    comparison loads every row of both runs: its memory is never the viewer's), read back
    from the ``compare.json`` it writes into ``output`` (in the viewer's scratch folder).

    Raises:
        UsageError: the comparison was refused (its message), or gave no ``compare.json``.
    """
    command = [sys.executable, "-m", "assay", "compare", str(run_a), str(run_b), "-o",
               str(output)]  # fmt: skip
    command += ["--variant-a", variant_a] if variant_a else []
    command += ["--variant-b", variant_b] if variant_b else []
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    report = output / "compare.json"
    if done.returncode != 0 or not report.is_file():
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        raise UsageError(lines[0] if lines else f"assay compare exited with {done.returncode}")
    return ExperimentResult.model_validate_json(report.read_text(encoding="utf-8"))


def _comparison(
    ws: Workspace, a: RunEntry, b: RunEntry, params: dict[str, str], indexes: list[RowIndex]
) -> dict[str, Any]:
    """The diff page's paired differences: ready, being computed (the page updates when
    they are: its progress URL), refused, or waiting for a run to finish."""
    job = _comparison_job(ws, a, b, params, indexes)
    if job is None:
        return {"comparison_waits": True}
    if not job.done:
        query = urlencode({k: params[k] for k in ("a", "b", "va", "vb") if params[k]})
        return {"comparison_pending": True, "progress_url": f"/api/diff/progress?{query}",
                "version": _diff_version(indexes) + ":c0"}  # fmt: skip
    if job.error is not None:
        return {"comparison_error": job.error}
    return {"comparison": job.value}


def _side(name: str, entry: RunEntry, ws: Workspace, variant: str) -> dict[str, Any]:
    info = ws.info(entry)
    datasets = [(s.key, dataset_text(s.rollup)) for s in info.suites
                if not variant or s.variant_id == variant]  # fmt: skip
    return {"name": name, "key": entry.key, "path": str(entry.path), "state": info.state,
            "variant": variant, "datasets": datasets}  # fmt: skip


def _error_json(exc: UserError, status: int = 400) -> JSONResponse:
    text = exc.message + (f" ({exc.hint})" if exc.hint else "")
    return JSONResponse({"error": text}, status_code=status, headers=_HEADERS)


def _save_labels(ws: Workspace, book: LabelBook, entry: RunEntry, body: Any) -> Response:
    """Save one posted batch of labels (:mod:`assay.view.review`) as a version of the run's
    labelled dataset; its ``dataset``, ``version`` and count as JSON (400: a bad label)."""
    try:
        if not isinstance(body, dict):
            raise UsageError("the body must be a JSON object with 'items'")
        scale = Scale.parse(body.get("scale"))
        items = body.get("items")
        if not isinstance(items, list) or not 1 <= len(items) <= MAX_BATCH:
            raise UsageError(f"'items' must be a list of 1 to {MAX_BATCH} labels")
        chosen = [read_label(item, scale, book.reviewer) for item in items]
        index = ws.index(entry)
        with index.connect() as db:
            facts = row_facts(entry.path, db, [label.folder for label in chosen])
        missing = [label.folder for label in chosen if label.folder not in facts]
        if missing:
            raise UsageError(f"run {entry.key} has no row folder {', '.join(missing[:5])}",
                             hint="label rows the run's index lists")  # fmt: skip
        version = book.save(entry.key, chosen, facts, scale=scale)
    except (UsageError, StoreError) as exc:
        return _error_json(exc)
    return JSONResponse({"dataset": version.dataset, "version": version.number,
                         "saved": len(chosen), "created": version.created},
                        headers=_HEADERS)  # fmt: skip


def _review_params(request: Request) -> tuple[str, int, Scale]:
    """``order``, ``seed`` and ``scale`` of a review URL.

    Raises:
        UsageError: an unknown order, a seed that is not a whole number, a bad scale.
    """
    order = request.query_params.get("order", "uncertain")
    if order not in ORDERS:
        raise UsageError(f"no review order '{order}'", hint=f"one of {', '.join(ORDERS)}")
    seed = _whole(request, "seed", default=0) or 0
    return order, seed, Scale.parse(request.query_params.get("scale"))


def _review_panel(
    book: LabelBook,
    entry: RunEntry,
    folder: str,
    request: Request,
    token: str,
    after: str | None,
    before: str | None,
) -> dict[str, Any]:
    """What the row page's label panel shows: the scale, this row's labels so far, the
    token, and where ``n`` and ``k`` go."""
    try:
        scale = Scale.parse(request.query_params.get("scale"))
    except UsageError:
        scale = Scale()
    base = f"/runs/{_key(entry)}/rows/"
    query = _trail(request, RowFilter.from_params(request.query_params))
    return {"scale": scale, "token": token, "dataset": book.name(entry.key),
            "reviewer": book.reviewer, "labels": _labels_of(book, entry.key).get(folder, []),
            "next": base + quote(after) + query if after else "",
            "prev": base + quote(before) + query if before else "", "folder": folder,
            "url": f"/api/runs/{_key(entry)}/labels"}  # fmt: skip


def _trail(request: Request, chosen: RowFilter) -> str:
    """The query string a row page's links to its neighbours carry: the list's filter, sort
    and page it was opened from, and the label panel's scale (not the default, binary)."""
    params = chosen.params()
    try:
        scale = Scale.parse(request.query_params.get("scale"))
    except UsageError:
        scale = Scale()
    if scale.kind != "binary":
        params["scale"] = scale.text
    return "?" + urlencode(params) if params else ""


def _labels_of(
    book: LabelBook, run: str, version: int | None = None
) -> dict[str, list[dict[str, Any]]]:
    try:
        return book.labels(run, version)
    except StoreError:
        return {}


def _review_page(
    ws: Workspace, book: LabelBook, entry: RunEntry, request: Request, token: str
) -> Response:
    """One row of a run's review queue, its label panel and the way to the next.

    The queue is ordered by the labels of one version of the run's labelled dataset (``at``,
    the latest when the queue starts, then kept in its links), so labelling as you go never
    moves the rows ahead of you: ``n`` after a label is the next row of the same order. A
    run whose rows were never all read yet (after ``COLD_WAIT`` seconds) gets a page of how
    far they are, which loads the queue once they are."""
    context: dict[str, Any] = {"key": entry.key, "path": str(entry.path), "orders": ORDERS}
    try:
        order, seed, scale = _review_params(request)
        at = _whole(request, "at", default=None)
        asked = _whole(request, "i", default=0) or 0
        started = _whole(request, "g", default=None)
    except UsageError as exc:
        return _page("error.html", 400, title="Bad review URL", message=exc.message,
                     hint=exc.hint or "")  # fmt: skip
    at = book.version(entry.key) if at is None else at
    index = ws.index(entry)
    index.wait(COLD_WAIT)
    context.update(order=order, seed=seed, scale=scale)
    if index.state().scanned_at is None:  # a first visit of a big run: show how far it is
        state = index.state()
        return _page("review.html", indexing=state, reload_when_ready=True,
                     progress_url=f"/api/runs/{_key(entry)}/progress",
                     version=_version(ws.info(entry).state, state), **context)  # fmt: skip
    index.wait()
    human = _labels_of(book, entry.key, at) if order == "disagree" else {}
    # the queue as it was when the walk started (``g``): rows that arrive later join its end
    started = index.generation if started is None else min(started, index.generation)
    key = (str(index.db_path), order, seed, scale, at if order == "disagree" else 0, started)
    name = hashlib.sha256(repr(key).encode()).hexdigest()[:16]
    rows = build_queue(index.db_path, ws.scratch / f"queue-{name}.sqlite", order, seed=seed,
                       human=human, scale=scale, generation=index.generation)  # fmt: skip
    position = min(asked, max(0, rows.length - 1))
    params = {"order": order, "seed": str(seed), "scale": scale.text, "at": str(at),
              "g": str(started)}  # fmt: skip

    def link(number: int) -> str:
        return f"/runs/{_key(entry)}/review?" + urlencode({**params, "i": number})

    latest = _labels_of(book, entry.key)
    with index.connect() as db:
        labelled = labelled_rows(db, latest)
    context.update(total=rows.length, position=position, labelled=labelled)
    folder = rows.folder(position)
    if folder is None:
        return _page("review.html", **context)
    view = read_row_view(entry.path, folder)
    with index.connect() as db:
        line = db.execute("SELECT uncertainty FROM rows WHERE folder = ?", (folder,)).fetchone()
    review = {"scale": scale, "token": token, "dataset": book.name(entry.key),
              "reviewer": book.reviewer, "labels": latest.get(folder, []), "folder": folder,
              "next": link(position + 1) if position + 1 < rows.length else "",
              "prev": link(position - 1) if position > 0 else "",
              "url": f"/api/runs/{_key(entry)}/labels"}  # fmt: skip
    return _page("review.html", view=view, review=review,
                 uncertainty=line["uncertainty"] if line else None, **context)  # fmt: skip


def _whole(request: Request, name: str, *, default: int | None) -> int | None:
    """The query parameter ``name`` as a whole number ≥ 0 (``default`` when absent).

    Raises:
        UsageError: it is not one.
    """
    text = request.query_params.get(name)
    if text is None or text == "":
        return default
    try:
        number = int(text)
    except ValueError:
        number = -1
    if number < 0:
        raise UsageError(f"{name}={text[:20]} is not a whole number")
    return number


def _calibrations_page(ws: Workspace, book: LabelBook) -> Response:
    """The store's judge calibrations, newest first, each disagreement linking to its row
    when it is a label given in this viewer."""
    try:
        found = book.store().calibrations() if book.exists() else []
    except StoreError as exc:
        return _page("error.html", 400, title="No store", message=exc.message,
                     hint=exc.hint or "")  # fmt: skip
    keys = {entry.key for entry in ws.runs()}
    return _page("calibrations.html", calibrations=[calibration_view(c, keys) for c in found])
