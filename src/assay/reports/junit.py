"""JUnit XML for CI: one ``testcase`` per row-task replicate, one per suite gate.

A ``testsuite`` per (variant, suite) or per task without a dataset. A row's test case is
named by its row id (task ids contain ``/``; they are attribute values here, never paths);
``classname`` is the suite id, prefixed by the variant when it is not ``default``. A failed
row is a ``failure``, an errored row an ``error`` and so is a refused one (``type="REFUSED"``:
it did not grade, like an error, and is counted apart from failures), a row not graded
``skipped``. A suite with a gate has one more test case for it, failing when the suite is not
green (a failed gate, rows that errored or refused without a ``completion_rate`` gate, rows
that never ran), so the CI job fails visibly; a suite without a gate needs none (its rows
decide).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from assay.reports.rollup import failure_reasons, order_key
from assay.results.io import write_text_atomic
from assay.results.secrets import Redactor
from assay.results.suite import SuiteRollup
from assay.results.task_result import EvaluationResult

GATE_CASE = "suite gate"
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def clean(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot hold (ANSI escapes, NUL, ...)."""
    return _NOT_XML.sub("", text)


def _classname(variant_id: str, name: str) -> str:
    return name if variant_id == "default" else f"{variant_id}.{name}"


def _case(result: EvaluationResult) -> ET.Element:
    name = result.row_id if result.row_id is not None else result.task_id
    if result.replicate_index:
        name += f" [replicate {result.replicate_index:02d}]"
    case = ET.Element(
        "testcase",
        {
            "name": name,
            "classname": _classname(result.variant_id, result.suite_id or result.task_id),
            "time": f"{result.duration_seconds:.3f}",
        },
    )
    category = result.final_status.category
    text = "\n".join(failure_reasons(result))
    if category == "failed":
        node = ET.SubElement(case, "failure", {"message": result.final_status.value,
                                               "type": result.final_status.value})  # fmt: skip
        node.text = clean(text or result.error_message or "")
    elif category in ("error", "refused"):
        node = ET.SubElement(case, "error", {"message": clean(result.error_message or category),
                                             "type": result.final_status.value})  # fmt: skip
        node.text = clean(text or result.error_message or "")
    elif category == "not_graded":
        ET.SubElement(case, "skipped", {"message": "not graded (assay execute)"})
    return case


def _gate_case(suite: SuiteRollup) -> ET.Element:
    case = ET.Element("testcase", {"name": GATE_CASE,
                                   "classname": _classname(suite.variant_id, suite.suite_id),
                                   "time": "0"})  # fmt: skip
    if not suite.passed:
        failed = [
            f"{agg.criterion_type}: {c.metric} = {c.actual_value:.6g} < {c.min_value:g}"
            if c.actual_value is not None
            else f"{agg.criterion_type}: {c.metric} was not produced (needs >= {c.min_value:g})"
            for agg in suite.criterion_aggregates
            for c in agg.threshold_checks
            if not c.passed
        ]
        failed += [r for r in suite.result_reasons if not r.startswith("gate failed")]
        message = "suite gate failed" if suite.gate == "failed" else "suite is not green"
        node = ET.SubElement(case, "failure", {"message": message,
                                               "type": "SuiteGate"})  # fmt: skip
        node.text = "\n".join(failed)
    return case


def render_junit(results: Sequence[EvaluationResult], suites: Sequence[SuiteRollup]) -> str:
    """The JUnit XML document."""
    groups: dict[tuple[str, str], list[EvaluationResult]] = defaultdict(list)
    for result in sorted(results, key=order_key):
        groups[(result.variant_id, result.suite_id or result.task_id)].append(result)
    gates = {(s.variant_id, s.suite_id): s for s in suites}
    root = ET.Element("testsuites", {"name": "assay"})
    for (variant, name), members in groups.items():
        cases = [_case(r) for r in members]
        gate = gates.get((variant, name))
        if gate is not None and gate.gate != "none":
            cases.append(_gate_case(gate))
        suite_el = ET.SubElement(root, "testsuite", {
            "name": _classname(variant, name),
            "tests": str(len(cases)),
            "failures": str(sum(1 for c in cases if c.find("failure") is not None)),
            "errors": str(sum(1 for c in cases if c.find("error") is not None)),
            "skipped": str(sum(1 for c in cases if c.find("skipped") is not None)),
            "time": f"{sum(r.duration_seconds for r in members):.3f}",
        })  # fmt: skip
        suite_el.extend(cases)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(
    path: Path,
    results: Sequence[EvaluationResult],
    suites: Sequence[SuiteRollup],
    *,
    redactor: Redactor | None = None,
) -> None:
    """Write the JUnit XML to ``path`` atomically, every known secret redacted."""
    write_text_atomic(path, render_junit(results, suites), redactor=redactor)
