"""JUnit XML for CI: one ``testcase`` per row-task replicate, one per suite gate.

A ``testsuite`` per (variant, suite) or per task without a dataset. A row's test case is
named by its row id (task ids contain ``/``; they are attribute values here, never paths);
``classname`` is the suite id, prefixed by the variant when it is not ``default``. A failed
row is a ``failure``, an errored row an ``error`` and so is a refused one (``type="REFUSED"``:
it did not grade, like an error, and is counted apart from failures), a row not graded
``skipped``. A suite with a gate has one more test case for it, failing when the suite is not
green (a failed gate, rows that errored or refused without a ``completion_rate`` gate, rows
that never ran), so the CI job fails visibly; a suite without a gate needs none (its rows
decide), but for one whose planned rows did not all run (an interrupted run), which gets a
failing case saying how many did not.

The document is written as the rows come, in report order (:class:`JunitWriter`), so a run
of any size is written without holding its rows: each test suite's counts are known before
its cases (:class:`SuiteCounts`, counted while the rows were read).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import quoteattr

from assay.metrics.streaming import ExactSum
from assay.reports.suite_rules import failure_reasons, gate_line, passed_gate_notes
from assay.results.io import WrittenFile
from assay.results.suite import SuiteRollup
from assay.results.task_result import EvaluationResult

GATE_CASE = "suite gate"
NOT_RUN_CASE = "rows that never ran"
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def clean(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot hold (ANSI escapes, NUL, ...)."""
    return _NOT_XML.sub("", text)


def _classname(variant_id: str, name: str) -> str:
    return name if variant_id == "default" else f"{variant_id}.{name}"


def case_of(result: EvaluationResult) -> dict[str, Any]:
    """What a row's test case says (JSON, to be sorted with the other rows)."""
    name = result.row_id if result.row_id is not None else result.task_id
    if result.replicate_index:
        name += f" [replicate {result.replicate_index:02d}]"
    return {"name": name, "class": _classname(result.variant_id, result.suite_id or result.task_id),
            "time": result.duration_seconds, "category": result.final_status.category,
            "status": result.final_status.value, "reasons": "\n".join(failure_reasons(result)),
            "error": result.error_message}  # fmt: skip


def _case(data: dict[str, Any]) -> ET.Element:
    case = ET.Element("testcase", {"name": data["name"], "classname": data["class"],
                                   "time": f"{data['time']:.3f}"})  # fmt: skip
    category, status, error = data["category"], data["status"], data["error"]
    if category == "failed":
        node = ET.SubElement(case, "failure", {"message": status, "type": status})
        node.text = clean(data["reasons"] or error or "")
    elif category in ("error", "refused"):
        node = ET.SubElement(case, "error", {"message": clean(error or category),
                                             "type": status})  # fmt: skip
        node.text = clean(data["reasons"] or error or "")
    elif category == "not_graded":
        ET.SubElement(case, "skipped", {"message": "not graded (assay execute)"})
    return case


def _suite_case(suite: SuiteRollup) -> ET.Element | None:
    """The suite's own test case: its gate's, or, for a suite without a gate whose planned
    rows did not all run (an interrupted run), one that fails with how many did not (they
    have no case of their own, and the suite is not green)."""
    if suite.gate != "none":
        return _gate_case(suite)
    if not suite.rows_missing:
        return None
    case = ET.Element("testcase", {"name": NOT_RUN_CASE,
                                   "classname": _classname(suite.variant_id, suite.suite_id),
                                   "time": "0"})  # fmt: skip
    node = ET.SubElement(case, "failure", {"message": "suite is not green", "type": "NotRun"})
    node.text = f"{suite.rows_missing} planned row(s) never ran"
    return case


def _gate_case(suite: SuiteRollup) -> ET.Element:
    case = ET.Element("testcase", {"name": GATE_CASE,
                                   "classname": _classname(suite.variant_id, suite.suite_id),
                                   "time": "0"})  # fmt: skip
    if not suite.passed:
        failed = [
            gate_line(agg.criterion_type, c)
            if c.actual_value is not None
            else f"{agg.criterion_type}: {c.name} "
            + (
                f"is undefined ({agg.undefined_metrics[c.metric]})"
                if c.metric in agg.undefined_metrics
                else "was not produced"
            )
            + f" (needs >= {c.min_value:g})"
            + (f" ({c.note})" if c.note else "")
            for agg in suite.criterion_aggregates
            for c in agg.threshold_checks
            if not c.passed
        ]
        failed += [r for r in suite.result_reasons if not r.startswith("gate failed")]
        message = "suite gate failed" if suite.gate == "failed" else "suite is not green"
        node = ET.SubElement(case, "failure", {"message": message,
                                               "type": "SuiteGate"})  # fmt: skip
        node.text = "\n".join(failed)
    elif notes := passed_gate_notes(suite):  # a pass the data cannot carry, said in CI too
        ET.SubElement(case, "system-out").text = "\n".join(notes)
    return case


@dataclass
class SuiteCounts:
    """A test suite's counts, known before its cases are written."""

    tests: int = 0
    failures: int = 0
    errors: int = 0
    skipped: int = 0
    time: ExactSum | None = None

    def add(self, result: EvaluationResult) -> None:
        """Count one row's test case."""
        if self.time is None:
            self.time = ExactSum()
        self.tests += 1
        category = result.final_status.category
        self.failures += category == "failed"
        self.errors += category in ("error", "refused")
        self.skipped += category == "not_graded"
        self.time.add(result.duration_seconds)


def _text(element: ET.Element, level: int) -> str:
    ET.indent(element, space="  ", level=level)
    return "  " * level + ET.tostring(element, encoding="unicode").rstrip() + "\n"


class JunitWriter:
    """Writes the document into ``out`` (a file its writer puts in place whole, its secrets
    redacted: :meth:`assay.results.io.Writer.open`): :meth:`suite` for each test suite in
    turn, with its cases in order, then :meth:`close`."""

    def __init__(self, out: WrittenFile) -> None:
        self.out = out
        out.write('<?xml version="1.0" encoding="utf-8"?>\n<testsuites name="assay">\n')

    def _write(self, text: str) -> None:
        self.out.write(text)

    def suite(
        self,
        variant: str,
        name: str,
        counts: SuiteCounts,
        cases: Iterable[str],
        gate: SuiteRollup | None,
    ) -> None:
        """One test suite: ``cases`` are :func:`case_of` JSON texts, in order; ``gate`` is
        its roll-up (a test case when the suite has a gate)."""
        gate_case = _suite_case(gate) if gate is not None else None
        tests = counts.tests + (gate_case is not None)
        failures = counts.failures + (
            gate_case is not None and gate_case.find("failure") is not None
        )
        time = counts.time.total if counts.time is not None else 0.0
        attributes = {"name": _classname(variant, name), "tests": str(tests),
                      "failures": str(failures), "errors": str(counts.errors),
                      "skipped": str(counts.skipped), "time": f"{time:.3f}"}  # fmt: skip
        opening = " ".join(f"{k}={quoteattr(v)}" for k, v in attributes.items())
        self._write(f"  <testsuite {opening}>\n")
        for case in cases:
            self._write(_text(_case(json.loads(case)), 2))
        if gate_case is not None:
            self._write(_text(gate_case, 2))
        self._write("  </testsuite>\n")

    def close(self) -> None:
        """End the document (its writer puts it in place)."""
        self._write("</testsuites>\n")
