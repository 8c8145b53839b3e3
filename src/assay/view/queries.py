"""Questions the pages ask the row index: a page of rows under a filter (every filter a URL
parameter), the values each filter can take, counts for the figures, and the pairs of rows
a diff compares.

URL parameters of the rows page (:class:`RowFilter`): ``suite``, ``variant``, ``status``
(a ``FinalStatus`` value), ``expected`` and ``observed`` (labels of the first
classification criterion), ``replicate``, ``criterion`` (``POSITION:OUTCOME``, outcome
``pass``/``fail``/``error``), ``error`` (an error kind, :mod:`assay.view.records`), ``q``
(text in the prompt or the response; case-insensitive for ASCII letters), ``sort``
(``row``, ``score``, ``duration``, ``tokens``, ``cost``, ``status``, ``row_id``), ``order``
(``asc``/``desc``), ``page`` (from 1), ``size`` (rows per page, up to 500) and ``cols``
(the table's columns, comma-separated, of :data:`COLUMNS`; empty: :data:`DEFAULT_COLUMNS`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any
from urllib.parse import urlencode

from assay.results.status import FinalStatus

PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
SORTS = {
    "row": "suite, variant, ord_index, ord_id, replicate",
    "score": "score IS NULL, score",
    "duration": "duration IS NULL, duration",
    "tokens": "tokens IS NULL, tokens",
    "cost": "cost IS NULL, cost",
    "status": "status",
    "row_id": "row_id",
}
_EXACT = ("suite", "variant", "status", "expected", "observed")
COLUMNS = {"suite": "suite", "variant": "variant", "rep": "replicate", "status": "status",
           "score": "score", "labels": "expected / observed", "error": "error kind",
           "prompt": "prompt", "response": "response", "why": "why", "seconds": "seconds",
           "tokens": "tokens", "cost": "cost"}  # fmt: skip
DEFAULT_COLUMNS = ("suite", "variant", "rep", "status", "score", "labels", "error", "prompt",
                   "response", "why", "seconds", "tokens", "cost")  # fmt: skip


@dataclass(frozen=True)
class RowFilter:
    """The rows page's filters, sort and page (see the module docstring); empty = any."""

    suite: str = ""
    variant: str = ""
    status: str = ""
    expected: str = ""
    observed: str = ""
    replicate: str = ""
    criterion: str = ""
    error: str = ""
    q: str = ""
    sort: str = "row"
    order: str = "asc"
    page: int = 1
    size: int = PAGE_SIZE
    cols: str = ""

    @property
    def columns(self) -> list[str]:
        """The table's columns (:data:`COLUMNS` named in ``cols``, in table order; unknown
        names are left out; none known: :data:`DEFAULT_COLUMNS`)."""
        chosen = {c.strip() for c in self.cols.split(",")}
        known = [c for c in COLUMNS if c in chosen]
        return known or list(DEFAULT_COLUMNS)

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> RowFilter:
        """The filter a URL's query string describes; unknown or malformed values fall back
        to their defaults (a shared link never breaks the page); a status and a criterion's
        outcome are read in any case."""
        values: dict[str, Any] = {}
        for item in fields(cls):
            raw = params.get(item.name)
            if raw is None or raw == "":
                continue
            if item.name in ("page", "size"):
                try:
                    values[item.name] = max(1, int(raw))
                except ValueError:
                    continue
            else:
                values[item.name] = raw.strip() if item.name != "q" else raw
        chosen = cls(**values)
        return replace(
            chosen,
            status=status_value(chosen.status) or chosen.status,
            criterion=chosen.criterion.lower(),
            sort=chosen.sort if chosen.sort in SORTS else "row",
            order="desc" if chosen.order == "desc" else "asc",
            size=min(chosen.size, MAX_PAGE_SIZE),
            cols=",".join(c for c in COLUMNS if c in {n.strip() for n in chosen.cols.split(",")}),
        )

    def params(self, **changes: Any) -> dict[str, str]:
        """The non-default parameters (after ``changes``), for a URL."""
        chosen = replace(self, **changes)
        default = RowFilter()
        return {f.name: str(getattr(chosen, f.name)) for f in fields(chosen)
                if getattr(chosen, f.name) != getattr(default, f.name)}  # fmt: skip

    def query(self, **changes: Any) -> str:
        """The URL query string (``?a=b``, or empty) of this filter after ``changes``."""
        params = self.params(**changes)
        return "?" + urlencode(params) if params else ""

    @property
    def active(self) -> bool:
        """Some filter (not sort or page) is set."""
        return any(getattr(self, name) for name in (*_EXACT, "replicate", "criterion",
                                                     "error", "q"))  # fmt: skip


def is_number(text: str) -> bool:
    """``text`` is a whole number in ASCII digits (``str.isdigit`` takes ``²`` too, which
    ``int`` refuses)."""
    return text.isascii() and text.isdigit()


def status_value(text: str) -> str | None:
    """The ``FinalStatus`` value ``text`` names, in any case (``failure``: ``FAILURE``), or
    ``None``."""
    wanted = text.strip().upper()
    return next((status.value for status in FinalStatus if status.value == wanted), None)


def where(chosen: RowFilter) -> tuple[str, list[Any]]:
    """The SQL condition and parameters of ``chosen``'s filters."""
    clauses: list[str] = []
    params: list[Any] = []
    for name in _EXACT:
        value = getattr(chosen, name)
        if value:
            clauses.append(f"{name} = ?")
            params.append(value)
    if is_number(chosen.replicate):
        clauses.append("replicate = ?")
        params.append(int(chosen.replicate))
    if chosen.error:
        clauses.append("error_kind = ?")
        params.append(chosen.error)
    position, _, outcome = chosen.criterion.partition(":")
    if is_number(position) and outcome:
        clauses.append("pk IN (SELECT pk FROM criteria WHERE position = ? AND outcome = ?)")
        params += [int(position), outcome]
    if chosen.q.strip():
        needle = "%" + _escape(chosen.q.strip()) + "%"
        clauses.append("(pk IN (SELECT pk FROM texts WHERE prompt LIKE ? ESCAPE '\\' OR "
                       "response LIKE ? ESCAPE '\\') OR row_id LIKE ? ESCAPE '\\')")  # fmt: skip
        params += [needle, needle, needle]
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


@dataclass(frozen=True)
class RowPage:
    """One page of rows: ``rows`` (dicts of the index's columns; with ``texts``, also each
    row's ``prompt`` and ``response`` as indexed), ``total`` rows matching, the page number
    and the number of pages."""

    rows: list[dict[str, Any]]
    total: int
    page: int
    pages: int


LIST_COLUMNS = (
    "pk, folder, variant, suite, task_id, row_id, row_index, replicate, status, category, "
    "score, duration, tokens, cost, model, expected, observed, error_kind, reason, problem, "
    "response_start"
)


def order_by(chosen: RowFilter) -> str:
    """The ``ORDER BY`` keys of ``chosen``'s sort and order, the rows page's and its
    downloads' alike: a row without the value (an error's score) last either way, then
    report order."""
    direction = "DESC" if chosen.order == "desc" else "ASC"
    keys = ", ".join(f"{key.strip()} {'ASC' if key.endswith('IS NULL') else direction}"
                     for key in SORTS[chosen.sort].split(","))  # fmt: skip
    return keys if chosen.sort == "row" else f"{keys}, {SORTS['row']}"


def row_page(db: sqlite3.Connection, chosen: RowFilter, *, texts: bool = False) -> RowPage:
    """The page of rows ``chosen`` asks for, and how many match (``texts``: with each
    row's prompt and response)."""
    condition, params = where(chosen)
    total = int(db.execute(f"SELECT COUNT(*) FROM rows{condition}", params).fetchone()[0])
    pages = max(1, -(-total // chosen.size))
    page = min(chosen.page, pages)
    found = db.execute(
        f"SELECT {LIST_COLUMNS} FROM rows{condition} ORDER BY {order_by(chosen)} LIMIT ? OFFSET ?",
        [*params, chosen.size, (page - 1) * chosen.size],
    ).fetchall()
    rows = [dict(r) for r in found]
    if texts and rows:
        marks = ", ".join("?" * len(rows))
        known = {pk: (prompt, response) for pk, prompt, response in db.execute(
            f"SELECT pk, prompt, response FROM texts WHERE pk IN ({marks})",
            [r["pk"] for r in rows])}  # fmt: skip
        for row in rows:
            row["prompt"], row["response"] = known.get(row["pk"], ("", ""))
    return RowPage(rows, total, page, pages)


def facets(db: sqlite3.Connection) -> dict[str, list[tuple[str, int]]]:
    """Each filter's values in the run, with their row counts: ``suite``, ``variant``,
    ``status``, ``expected``, ``observed``, ``replicate``, ``error``, ``criterion``
    (``POSITION:OUTCOME``)."""
    found: dict[str, list[tuple[str, int]]] = {}
    for name, column in (("suite", "suite"), ("variant", "variant"), ("status", "status"),
                         ("expected", "expected"), ("observed", "observed"),
                         ("replicate", "replicate"), ("error", "error_kind")):  # fmt: skip
        found[name] = [
            (str(value), int(count))
            for value, count in db.execute(
                f"SELECT {column}, COUNT(*) FROM rows WHERE {column} IS NOT NULL "
                f"GROUP BY {column} ORDER BY {column}"
            )
        ]
    found["criterion"] = [
        (f"{position}:{outcome}", int(count))
        for position, outcome, count in db.execute(
            "SELECT position, outcome, COUNT(*) FROM criteria GROUP BY position, outcome "
            "ORDER BY position, outcome"
        )
    ]
    return found


def criterion_types(db: sqlite3.Connection) -> dict[str, str]:
    """Each criterion position (as text) and its type."""
    sql = "SELECT position, MIN(type) FROM criteria GROUP BY position ORDER BY position"
    return {str(position): str(kind) for position, kind in db.execute(sql)}


def neighbours(
    db: sqlite3.Connection, folder: str, chosen: RowFilter | None = None
) -> tuple[str | None, str | None]:
    """The row folders before and after ``folder`` among the rows ``chosen`` selects, in
    its sort (the rows page's order: a reviewer who opened a row from a filtered list steps
    through that list); in report order over every row when ``chosen`` is ``None`` or does
    not select ``folder``."""
    if chosen is not None:
        found = _neighbours_in(db, folder, chosen)
        if found is not None:
            return found
    key = "(suite, variant, ord_index, ord_id, replicate)"
    here = db.execute(f"SELECT {key[1:-1]} FROM rows WHERE folder = ?", [folder]).fetchone()
    if here is None:
        return None, None
    values = list(here)
    before = db.execute(f"SELECT folder FROM rows WHERE {key} < (?, ?, ?, ?, ?) ORDER BY "
                        "suite DESC, variant DESC, ord_index DESC, ord_id DESC, replicate DESC "
                        "LIMIT 1", values).fetchone()  # fmt: skip
    after = db.execute(f"SELECT folder FROM rows WHERE {key} > (?, ?, ?, ?, ?) ORDER BY "
                       f"{SORTS['row']} LIMIT 1", values).fetchone()  # fmt: skip
    return (before[0] if before else None), (after[0] if after else None)


def _neighbours_in(
    db: sqlite3.Connection, folder: str, chosen: RowFilter
) -> tuple[str | None, str | None] | None:
    """``folder``'s neighbours in ``chosen``'s ordered selection; ``None``: not in it."""
    condition, params = where(chosen)
    ordered = (f"SELECT folder, ROW_NUMBER() OVER (ORDER BY {order_by(chosen)}) AS n "
               f"FROM rows{condition}")  # fmt: skip
    found = db.execute(
        f"WITH ordered AS ({ordered}), here AS (SELECT n FROM ordered WHERE folder = ?) "
        "SELECT ordered.n - here.n, folder FROM ordered, here "
        "WHERE ordered.n BETWEEN here.n - 1 AND here.n + 1",
        [*params, folder],
    ).fetchall()
    if not found:
        return None
    by_step = {int(step): str(name) for step, name in found}
    return by_step.get(-1), by_step.get(1)
