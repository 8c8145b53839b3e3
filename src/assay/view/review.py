"""Human review in the viewer: the labels a reviewer gives a run's rows, saved to the store
as a labelled dataset, and the order a review queue walks the rows in.

A label is one of a **scale** (:class:`Scale`, the ``scale`` query parameter):
``pass/fail`` (keys ``p`` and ``f``; the default), a set of labels ``a,b,c`` (keys ``1``..
``9``), or a score range ``1..5`` (keys ``1``..``9`` for the whole numbers in it).

Labels go to the store (:class:`LabelBook`), never into the run folder: each saved batch is
one new version of the dataset (:meth:`assay.store.Store.put`), one example per (run, row
folder, reviewer) whose id is ``RUN/FOLDER/REVIEWER``, a reviewer's new label replacing
their old one; two reviewers never overwrite each other, and two batches at once both land
(the store serialises them). The dataset's fields (:data:`LABEL_SCHEMA`): ``run``,
``folder``, ``suite``, ``variant``, ``row_id``, ``input`` (the prompt), ``output`` (the
response), ``label``, ``comment``, ``reviewer``, ``time`` (UTC, ISO 8601) and ``graded``
(the run's own outcome of the row: ``pass``, ``fail`` or ``error``). ``assay judge calibrate
--dataset NAME --label label --output-field output`` reads it as any labelled dataset.

The orders a review queue walks the rows in are :mod:`assay.view.review_queue`'s.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from assay.errors import StoreError, UsageError
from assay.results.io import Writer
from assay.store import Schema, Store, VersionInfo
from assay.store.engine import resolve_url, sqlite_path
from assay.view.index import read_row
from assay.view.reading import read_json_text, read_text_head
from assay.view.row_view import safe_path

if TYPE_CHECKING:
    from assay.store.judges import CalibrationRecord

LABEL_SCHEMA = Schema({
    "run": "string", "folder": "string", "suite": "string", "variant": "string",
    "row_id": "string", "input": "string", "output": "string", "label": "json",
    "comment": "string", "reviewer": "string", "time": "string", "graded": "string",
    "row": "json",
})  # fmt: skip
MAX_COMMENT = 20_000
MAX_BATCH = 500
KEPT_VERSIONS = 4  # label versions kept read (each a run's labels: folder → label, reviewer, …)
_REVIEWER = re.compile(r"[^/\x00-\x1f]{1,100}")
_BINARY = {"pass": "pass", "p": "pass", "fail": "fail", "f": "fail"}


@dataclass(frozen=True)
class Scale:
    """What a label may be: ``binary`` (``pass``/``fail``), one of ``labels``, or a number
    from ``low`` to ``high``."""

    kind: Literal["binary", "labels", "score"] = "binary"
    labels: tuple[str, ...] = ()
    low: float = 0.0
    high: float = 1.0

    @classmethod
    def parse(cls, text: str | None) -> Scale:
        """``pass/fail`` (or nothing), ``a,b,c`` (2 to 9 labels) or ``LOW..HIGH``.

        Raises:
            UsageError: none of those.
        """
        text = (text or "").strip()
        if text in ("", "pass/fail", "binary"):
            return cls()
        if ".." in text:
            low, _, high = text.partition("..")
            try:
                bounds = float(low), float(high)
            except ValueError:
                bounds = (1.0, 0.0)
            if not bounds[0] < bounds[1]:
                raise UsageError(f"scale '{text}' is not a score range",
                                 hint="write it as LOW..HIGH, e.g. scale=1..5")  # fmt: skip
            return cls("score", low=bounds[0], high=bounds[1])
        labels = tuple(dict.fromkeys(p.strip() for p in text.split(",") if p.strip()))
        if not 2 <= len(labels) <= 9:
            raise UsageError(f"scale '{text}' names {len(labels)} label(s)",
                             hint="give 2 to 9 labels, e.g. scale=good,bad,unsure")  # fmt: skip
        return cls("labels", labels=labels)

    @property
    def text(self) -> str:
        """The scale as the ``scale`` query parameter spells it."""
        if self.kind == "binary":
            return "pass/fail"
        if self.kind == "labels":
            return ",".join(self.labels)
        return f"{self.low:g}..{self.high:g}"

    def keys(self) -> list[tuple[str, str | float]]:
        """``(key, label)`` for each keyboard shortcut that labels."""
        if self.kind == "binary":
            return [("p", "pass"), ("f", "fail")]
        if self.kind == "labels":
            return [(str(i), label) for i, label in enumerate(self.labels, start=1)]
        return [(str(d), float(d)) for d in range(10) if self.low <= d <= self.high]

    def value(self, given: Any) -> str | float:
        """``given`` as a label of this scale.

        Raises:
            ValueError: why it is not one.
        """
        if self.kind == "binary":
            found = _BINARY.get(str(given).strip().casefold())
            if found is None:
                raise ValueError(f"{given!r} is not pass or fail")
            return found
        if self.kind == "labels":
            text = str(given).strip()
            for label in self.labels:
                if label.casefold() == text.casefold():
                    return label
            raise ValueError(f"{given!r} is not one of the labels {list(self.labels)}")
        try:
            number = float(given)
        except (TypeError, ValueError):
            raise ValueError(f"{given!r} is not a number") from None
        if isinstance(given, bool) or not self.low <= number <= self.high:
            raise ValueError(f"{given!r} is not a score from {self.low:g} to {self.high:g}")
        return int(number) if number.is_integer() else number


LABELLED_OUTPUT = 64 * 1024 * 1024
"""How much of a row's response a label keeps as its ``output`` (bytes): the whole response
of any run a viewer shows (a judge calibrated on the labels reads what the reviewer read)."""


@dataclass(frozen=True)
class RowFacts:
    """What a label records about its row besides the label (read from the run)."""

    folder: str
    suite: str
    variant: str
    row_id: str
    input: str
    output: str
    graded: str
    row: dict[str, Any] | None = None


@dataclass(frozen=True)
class Label:
    """One reviewer's label of one row."""

    folder: str
    label: str | float
    reviewer: str
    comment: str = ""


def read_label(item: Any, scale: Scale, default_reviewer: str) -> Label:
    """A label from one item of a posted batch (``{folder, label, comment?, reviewer?}``).

    Raises:
        UsageError: a field is missing or not valid (naming the field).
    """
    if not isinstance(item, Mapping):
        raise UsageError("each label must be a JSON object with folder and label")
    folder = item.get("folder")
    if not isinstance(folder, str) or not canonical(folder):
        shape = "(VARIANT/SUITE/ROW/NN, no '.' or '..' parts)"
        raise UsageError(f"a label's 'folder' must name a row folder of the run {shape}",
                         field="folder")  # fmt: skip
    try:
        value = scale.value(item.get("label"))
    except ValueError as exc:
        hint = f"labels of this queue are on the scale {scale.text}"
        raise UsageError(f"label of {folder}: {exc}", field="label", hint=hint) from None
    reviewer = str(item.get("reviewer") or default_reviewer).strip()
    if not _REVIEWER.fullmatch(reviewer):
        raise UsageError(f"reviewer name {reviewer[:40]!r} is not valid", field="reviewer",
                         hint="1 to 100 characters, no '/' and no control characters")  # fmt: skip
    comment = item.get("comment") or ""
    if not isinstance(comment, str) or len(comment) > MAX_COMMENT:
        raise UsageError(f"comment of {folder} must be text of at most {MAX_COMMENT} characters",
                         field="comment")  # fmt: skip
    return Label(folder, value, reviewer, comment)


def canonical(folder: str) -> bool:
    """``folder`` is a row folder as the run's index spells it: a relative POSIX path
    without empty, ``.`` or ``..`` parts and no backslash."""
    return bool(folder) and "\\" not in folder and all(
        part not in ("", ".", "..") for part in folder.split("/"))  # fmt: skip


def example_id(run: str, folder: str, reviewer: str) -> str:
    """The id of one reviewer's label of one row: ``RUN/FOLDER/REVIEWER``."""
    return f"{run}/{folder}/{reviewer}"


def split_example_id(text: str) -> tuple[str, str, str] | None:
    """``(run, folder, reviewer)`` of an id made by :func:`example_id`, else ``None``."""
    run, _, rest = text.partition("/")
    folder, _, reviewer = rest.rpartition("/")
    return (run, folder, reviewer) if run and folder and reviewer else None


def dataset_name(run: str) -> str:
    """The default labelled dataset of a run: ``review-RUN`` (characters a dataset name
    cannot hold replaced by ``-``)."""
    return "review-" + re.sub(r"[^A-Za-z0-9_.-]", "-", run)[:190]


@dataclass
class LabelBook:
    """The labels of every run, in one store; thread-safe (one store, opened on first use).

    Args:
        url: the store URL (``None``: ``$ASSAY_STORE``, else ``.assay/store.db``).
        dataset: one dataset for every run's labels; ``None``: ``review-RUN`` per run.
        reviewer: the reviewer's name when a label names none.
    """

    url: str | None = None
    dataset: str | None = None
    reviewer: str = "reviewer"
    _store: Store | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _read: dict[tuple[str, int, str], dict[str, list[dict[str, Any]]]] = field(
        default_factory=dict, init=False, repr=False
    )

    def store(self) -> Store:
        """The store, opened once.

        Raises:
            StoreError: it cannot be opened.
        """
        with self._lock:
            if self._store is None:
                self._store = Store(self.url)
            return self._store

    def close(self) -> None:
        """Release the store's connections."""
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None

    def check(self) -> None:
        """The one dataset named for every run's labels can take them: checked when the
        viewer starts, not at a reviewer's first save (a store that does not exist yet, or
        a dataset not made yet, is fine: the first label makes it).

        Raises:
            StoreError: the dataset exists with other fields, or the store cannot be opened.
        """
        if self.dataset is None or not self.exists():
            return
        store = self.store()
        if self.dataset in {info.name for info in store.datasets()}:
            self._ensure(store, self.dataset)

    def name(self, run: str) -> str:
        """The dataset that holds ``run``'s labels."""
        return self.dataset or dataset_name(run)

    def save(
        self, run: str, labels: Sequence[Label], facts: Mapping[str, RowFacts], *,
        scale: Scale | None = None,
    ) -> VersionInfo:  # fmt: skip
        """Save a batch of labels of ``run`` as one new version of its dataset (created
        with :data:`LABEL_SCHEMA` on first use).

        Raises:
            StoreError: the dataset exists with another schema, or the store refused.
        """
        store = self.store()
        name = self.name(run)
        self._ensure(store, name)
        self._one_scale(store, name, run, labels, scale)
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        rows = []
        for label in labels:
            fact = facts[label.folder]
            rows.append({"id": example_id(run, label.folder, label.reviewer), "run": run,
                         "folder": label.folder, "suite": fact.suite, "variant": fact.variant,
                         "row_id": fact.row_id, "input": fact.input, "output": fact.output,
                         "label": label.label, "comment": label.comment,
                         "reviewer": label.reviewer, "time": now,
                         "graded": fact.graded, "row": fact.row})  # fmt: skip
        return store.put(name, rows, origin=f"assay view: {run}")

    def _ensure(self, store: Store, name: str) -> None:
        try:
            info = store.dataset(name)
        except StoreError:
            try:
                info = store.create_dataset(name, LABEL_SCHEMA)
            except StoreError:
                info = store.dataset(name)  # another reviewer created it meanwhile
        if info.schema != LABEL_SCHEMA or info.id_field != "id":
            raise StoreError(
                f"dataset '{name}' exists in the store with fields other than a review's "
                f"({', '.join(info.schema.fields)})",
                hint="name another dataset for the labels: assay view --labels NAME",
            )

    def _one_scale(
        self, store: Store, name: str, run: str, labels: Sequence[Label], scale: Scale | None
    ) -> None:
        """A dataset of labels holds one kind (pass/fail, a score, or labels of a set): a
        judge is calibrated on one verdict kind, so a batch that would leave two kinds in it
        (besides the labels it replaces) is refused. A batch's kind is its ``scale``'s (a
        set may hold ``pass`` and ``fail``: kept ones are then its labels too), else its
        labels' own.

        Raises:
            StoreError: naming both kinds.
        """
        given = {SCALE_KINDS[scale.kind]} if scale is not None else {
            label_kind(label.label) for label in labels}  # fmt: skip
        replaced = {example_id(run, label.folder, label.reviewer) for label in labels}
        kept = (e for e in store.iter_examples(name, None) if e.example_id not in replaced
                ) if store.dataset(name).current_version else ()  # fmt: skip
        held = {label_kind(e.data.get("label")) for e in kept}
        if given == {"set"} and held <= {"pass/fail", "set"}:
            held = given  # pass and fail kept (with other labels or not): labels of this set
        if len(given | held) > 1:
            kinds = " and ".join(sorted(given | held))
            raise StoreError(
                f"dataset '{name}' would hold {kinds} labels: a judge is calibrated on one "
                "kind, so these labels are not saved",
                hint="label with the scale this dataset was labelled with, or save these in "
                "another dataset: assay view --labels NAME",
            )

    def exists(self) -> bool:
        """The store is there to read: opened already, not a SQLite file, or a SQLite file
        that exists (reading never creates a store; the first label does)."""
        with self._lock:
            if self._store is not None:
                return True
        path = sqlite_path(resolve_url(self.url))
        return path is None or path.exists()

    def version(self, run: str) -> int:
        """The latest version of ``run``'s labelled dataset (0: no label yet)."""
        if not self.exists():
            return 0
        try:
            return self.store().dataset(self.name(run)).current_version
        except StoreError:
            return 0

    def labels(self, run: str, version: int | None = None) -> dict[str, list[dict[str, Any]]]:
        """The labels of ``run``'s rows in a version of its dataset (``None``: the latest;
        0: none): folder → each reviewer's ``{label, reviewer, time, comment}``. A version
        never changes, so each is read from the store once (the last few are kept)."""
        number = self.version(run) if version is None else version
        if number <= 0:
            return {}
        key = (self.name(run), number, run)
        with self._lock:
            if key in self._read:
                return self._read[key]
        found: dict[str, list[dict[str, Any]]] = {}
        for example in self.store().iter_examples(self.name(run), number):
            data = example.data
            if data.get("run") == run:  # what the pages show, not the texts
                shown = {k: data.get(k) for k in ("label", "reviewer", "time", "comment")}
                found.setdefault(str(data.get("folder")), []).append(shown)
        with self._lock:
            self._read[key] = found
            while len(self._read) > KEPT_VERSIONS:
                self._read.pop(next(iter(self._read)))
        return found


def label_kind(label: Any) -> str:
    """``pass/fail``, ``score`` (a number) or ``set`` (one of a set of labels), from a stored
    label's value alone: ``pass`` and ``fail`` may also be labels of a set."""
    if isinstance(label, int | float) and not isinstance(label, bool):
        return "score"
    return "pass/fail" if label in ("pass", "fail") else "set"


SCALE_KINDS = {"binary": "pass/fail", "score": "score", "labels": "set"}
"""The kind of label each scale gives (a set's labels may be ``pass`` and ``fail`` too)."""


def disagrees(scale: Scale, label: Any, category: str, score: float | None) -> bool:
    """A human label says otherwise than the run's outcome of the row: ``fail`` of a row
    that passed or ``pass`` of one that failed; a score on the other side of the scale's
    middle than the row's score; a label set is compared with the run's outcome by nothing
    (it is never a disagreement)."""
    if scale.kind == "binary":
        if category not in ("passed", "failed"):
            return False
        return bool((label == "pass") != (category == "passed"))
    if scale.kind == "score" and isinstance(label, int | float) and score is not None:
        middle = (scale.low + scale.high) / 2
        return bool((label >= middle) != (score >= 0.5))
    return False


def row_facts(run_dir: Path, db: sqlite3.Connection, folders: Sequence[str]) -> dict[str, RowFacts]:
    """What each labelled row's label records (its suite, row id, prompt, response and the
    run's outcome), from the run's index, else (a row not indexed yet) from its own
    ``task.json``; a folder outside the run, or without a readable ``task.json``, is left
    out."""
    found: dict[str, RowFacts] = {}
    for folder in dict.fromkeys(folders):
        place = _place(run_dir, db, folder)
        if place is None:
            continue
        suite, variant, row_id, category = place
        data, _ = read_json_text(run_dir / folder / "task.json", f"{folder}/task.json")
        data = data if isinstance(data, dict) else {}
        config = data.get("task_config")
        resolved = config.get("resolved") if isinstance(config, dict) else None
        prompt = resolved.get("initial_prompt") if isinstance(resolved, dict) else None
        own = data.get("row")
        response, _ = read_text_head(run_dir / folder / "response.txt", limit=LABELLED_OUTPUT)
        graded = {"passed": "pass", "failed": "fail"}.get(category, category)
        found[folder] = RowFacts(folder=folder, suite=suite, variant=variant, row_id=row_id,
                                 input=prompt if isinstance(prompt, str) else "",
                                 output=response or "", graded=graded,
                                 row=own if isinstance(own, dict) else None)  # fmt: skip
    return found


def _place(run_dir: Path, db: sqlite3.Connection, folder: str) -> tuple[str, str, str, str] | None:
    """``(suite, variant, row id, category)`` of a row folder: from the index, else from its
    ``task.json`` when the folder is inside the run and that file reads; else ``None``."""
    row = db.execute("SELECT suite, variant, row_id, task_id, category FROM rows "
                     "WHERE folder = ?", (folder,)).fetchone()  # fmt: skip
    if row is not None:
        return (row["suite"] or "", row["variant"] or "",
                row["row_id"] or row["task_id"] or folder, row["category"] or "")  # fmt: skip
    target = safe_path(run_dir, folder) if canonical(folder) else None
    if target is None or not (target / "task.json").is_file():
        return None
    line = read_row(run_dir, folder)
    if line.category == "unreadable":
        return None
    return line.suite, line.variant, line.row_id or line.task_id, line.category


def calibration_view(record: CalibrationRecord, runs: set[str]) -> dict[str, Any]:
    """What the calibrations page shows of one stored calibration: its judge, dataset,
    agreement, κ, TPR/TNR (binary judges), confusion cells, and each disagreement with the
    row page it came from (``link``: ``None`` unless its example is a label given in the
    viewer on a run it shows). The environment's secrets are redacted from it as shown
    (a calibration stored before assay redacted the store's copy may quote one)."""
    report = Writer.from_environment(os.environ).redact_data(record.report)
    disagreements = []
    for item in report.get("disagreements", []):
        parts = split_example_id(str(item.get("example_id", "")))
        link = None
        if parts is not None and parts[0] in runs:
            link = f"/runs/{parts[0]}/rows/{parts[1]}"
        disagreements.append({**item, "link": link})
    return {"record": record, "judge": f"{record.judge_name}"
            + (f"@{record.judge_version}" if record.judge_version is not None else ""),
            "dataset": f"{record.dataset}@{record.dataset_version}",
            "rows": report.get("rows_compared"), "agreement": report.get("agreement"),
            "kappa": report.get("kappa"), "tpr": report.get("tpr"), "tnr": report.get("tnr"),
            "counts": report.get("binary_counts"), "labels": report.get("labels", []),
            "confusion": {(c["human"], c["judge"]): c["count"]
                          for c in report.get("confusion", [])},
            "notes": report.get("notes", []), "errors": report.get("rows_judge_error", 0),
            "disagreements": disagreements}  # fmt: skip
