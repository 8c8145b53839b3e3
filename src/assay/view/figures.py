"""The viewer's charts as Vega-Lite specifications (https://vega.github.io/vega-lite/), drawn
in the browser by the vendored Vega-Lite (``assets/vendor``; no network at view time).

Each :class:`Figure` carries its spec, with the data inline, and the same numbers as a table
(``columns``/``rows``) that the page shows under the chart: the numbers behind a chart are
always reachable as text. Every axis has a title with its unit. Charts are rendered as SVG
with Vega's ARIA labels, so each mark (a heatmap cell, a bar) carries its values as text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"
WIDTH = 420


@dataclass
class Figure:
    """One chart: a page-unique ``id``, a ``title``, the Vega-Lite ``spec``, the numbers as
    a table, and a ``note`` on how to read it."""

    id: str
    title: str
    spec: dict[str, Any]
    columns: list[str]
    rows: list[list[str]]
    note: str = ""
    kind: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _num(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _base(title: str, values: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    """The spec's frame: its data inline; the title goes in ``description`` (the page shows
    it above the chart, and Vega puts it in the SVG's ARIA label)."""
    return {"$schema": SCHEMA, "description": title, "data": {"values": values},
            "config": {"view": {"stroke": None}}, **spec}  # fmt: skip


def label_bars(fig_id: str, per_label: Sequence[dict[str, Any]], *, title: str) -> Figure:
    """Per-label precision, recall and F1 as grouped bars (``per_label``: ``label``,
    ``precision``, ``recall``, ``f1``, ``support``, as ``suite.json`` details hold them); an
    undefined value (``None``) has no bar and says so in the table."""
    values = [
        {"label": p["label"], "metric": metric, "value": p[metric], "support": p["support"]}
        for p in per_label
        for metric in ("precision", "recall", "f1")
        if p.get(metric) is not None
    ]
    spec = _base(title, values, mark={"type": "bar", "tooltip": True}, width=WIDTH, encoding={
        "x": {"field": "label", "type": "nominal", "title": "label", "axis": {"labelAngle": 0}},
        "xOffset": {"field": "metric", "type": "nominal", "sort": ["precision", "recall", "f1"]},
        "y": {"field": "value", "type": "quantitative", "title": "score (0–1)",
              "scale": {"domain": [0, 1]}},
        "color": {"field": "metric", "type": "nominal", "sort": ["precision", "recall", "f1"],
                  "title": "metric"},
        "tooltip": [{"field": "label"}, {"field": "metric"},
                    {"field": "value", "format": ".3f"}, {"field": "support", "title": "rows"}],
    })  # fmt: skip
    rows = [[str(p["label"]), _num(p.get("precision")), _num(p.get("recall")), _num(p.get("f1")),
             str(p["support"])] for p in per_label]  # fmt: skip
    return Figure(fig_id, title, spec, ["label", "precision", "recall", "F1", "support (rows)"],
                  rows, "— : undefined (a label never predicted has no precision; one never "
                  "expected has no recall).", kind="labels")  # fmt: skip


def confusion_heatmap(
    fig_id: str, labels: Sequence[str], cells: dict[tuple[str, str], int], *, title: str
) -> Figure:
    """The confusion matrix as a heatmap: rows the expected label, columns the observed one,
    each cell's count printed in it; every pair of labels has a cell (0 included)."""
    values = [
        {"expected": e, "observed": o, "rows": cells.get((e, o), 0)} for e in labels for o in labels
    ]
    order = list(labels)
    encoding_xy = {
        "x": {"field": "observed", "type": "nominal", "sort": order,
              "title": "observed label (answer)", "axis": {"labelAngle": 0}},
        "y": {"field": "expected", "type": "nominal", "sort": order,
              "title": "expected label (dataset)"},
    }  # fmt: skip
    size = max(160, min(WIDTH, 60 * len(order)))
    spec = _base(title, values, width=size, height=size, layer=[
        {"mark": {"type": "rect", "tooltip": True}, "encoding": {
            **encoding_xy,
            "color": {"field": "rows", "type": "quantitative", "title": "rows",
                      "scale": {"scheme": "blues"}},
            "tooltip": [{"field": "expected"}, {"field": "observed"}, {"field": "rows"}]}},
        {"mark": {"type": "text", "fontSize": 13}, "encoding": {
            **encoding_xy, "text": {"field": "rows", "type": "quantitative"},
            "color": {"condition": {"test": "datum.rows > 0 && datum.rows >= 0.6 * "
                                            f"{max(cells.values(), default=0)}",
                                    "value": "white"}, "value": "black"}}},
    ])  # fmt: skip
    rows = [[e, *[str(cells.get((e, o), 0)) for o in labels]] for e in labels]
    return Figure(fig_id, title, spec, ["expected \\ observed", *labels], rows,
                  "Each cell counts the graded rows with that expected and observed label.",
                  kind="confusion")  # fmt: skip


def histogram(
    fig_id: str,
    bins: Sequence[tuple[float, float, int]],
    *,
    title: str,
    axis: str,
    note: str = "",
) -> Figure:
    """A histogram from pre-computed bins ``(start, end, rows)`` (the page never ships one
    point per row, so a 100,000-row run draws as fast as a small one)."""
    values = [{"start": s, "end": e, "rows": n} for s, e, n in bins]
    spec = _base(title, values, mark={"type": "bar", "tooltip": True}, width=WIDTH, height=160,
                 encoding={
        "x": {"field": "start", "type": "quantitative", "bin": {"binned": True},
              "title": axis, "axis": {"format": "~g"}},
        "x2": {"field": "end"},
        "y": {"field": "rows", "type": "quantitative", "title": "rows",
              "axis": {"tickMinStep": 1, "format": "d"}},
        "tooltip": [{"field": "start", "title": "from"}, {"field": "end", "title": "to"},
                    {"field": "rows"}],
    })  # fmt: skip
    rows = [[f"{s:g} – {e:g}", str(n)] for s, e, n in bins]
    return Figure(fig_id, title, spec, [axis, "rows"], rows, note, kind="histogram")


def interval_plot(
    fig_id: str,
    points: Sequence[dict[str, Any]],
    *,
    title: str,
    axis: str,
    zero_line: bool = False,
    note: str = "",
) -> Figure:
    """A forest plot: one point per ``(metric, group)`` with its 95% interval as a line
    (``points``: ``metric``, ``group``, ``value``, ``low``, ``high``, ``method``); one panel
    per metric. ``zero_line`` draws the no-difference line of a paired difference."""
    values = [p for p in points if p.get("value") is not None]
    y = {"field": "group", "type": "nominal", "title": None}
    scale: dict[str, Any] = {"zero": False} if zero_line else {"domain": [0, 1]}
    x = {"type": "quantitative", "title": axis, "scale": scale}
    layers: list[dict[str, Any]] = [
        {"mark": {"type": "rule", "strokeWidth": 2},
         "encoding": {"x": {"field": "low", **x}, "x2": {"field": "high"}, "y": y}},
        {"mark": {"type": "point", "filled": True, "size": 70, "tooltip": True},
         "encoding": {"x": {"field": "value", **x}, "y": y,
                      "color": {"field": "group", "type": "nominal", "legend": None},
                      "tooltip": [{"field": "metric"}, {"field": "group"},
                                  {"field": "value", "format": ".3f"},
                                  {"field": "low", "format": ".3f"},
                                  {"field": "high", "format": ".3f"}, {"field": "method"}]}},
    ]  # fmt: skip
    if zero_line:
        layers.append({"mark": {"type": "rule", "strokeDash": [4, 4], "color": "gray"},
                       "encoding": {"x": {"datum": 0, **x}}})  # fmt: skip
    spec = _base(title, values, facet={"row": {"field": "metric", "type": "nominal",
                                               "title": None, "header": {"labelAngle": 0,
                                               "labelAlign": "left"}}},
                 spec={"width": WIDTH, "layer": layers})  # fmt: skip
    rows = [[str(p["metric"]), str(p["group"]), _num(p.get("value")),
             "—" if p.get("low") is None else f"[{_num(p['low'])}, {_num(p['high'])}]",
             str(p.get("method") or ""), str(p.get("reason") or "")] for p in points]  # fmt: skip
    return Figure(fig_id, title, spec, ["metric", "group", "value", "95% interval", "method",
                                        "no interval because"], rows, note,
                  kind="intervals")  # fmt: skip


def line_chart(
    fig_id: str,
    points: Sequence[dict[str, Any]],
    *,
    title: str,
    x: str,
    x_title: str,
    y_title: str,
    series: str,
) -> Figure:
    """Lines with points: ``points`` carry ``x``, ``value`` and ``series``; y in [0, 1]."""
    spec = _base(title, list(points), width=WIDTH, height=180,
                 mark={"type": "line", "point": True, "tooltip": True}, encoding={
        "x": {"field": x, "type": "ordinal", "title": x_title, "axis": {"labelAngle": 0}},
        "y": {"field": "value", "type": "quantitative", "title": y_title,
              "scale": {"domain": [0, 1]}},
        "color": {"field": series, "type": "nominal", "title": None},
        "tooltip": [{"field": x}, {"field": series}, {"field": "value", "format": ".3f"}],
    })  # fmt: skip
    rows = [[str(p[x]), str(p[series]), _num(p.get("value"))] for p in points]
    return Figure(fig_id, title, spec, [x_title, series, "value"], rows, kind="lines")


def group_bars(
    fig_id: str, points: Sequence[dict[str, Any]], *, title: str, y_title: str
) -> Figure:
    """Horizontal bars, one per group value (``points``: ``group``, ``value``, ``rows``, and
    the 95% interval ``low``/``high`` when known, drawn as a line over the bar)."""
    values = [p for p in points if p.get("value") is not None]
    y = {"field": "group", "type": "nominal", "title": None, "sort": None}
    x = {"type": "quantitative", "title": y_title, "scale": {"domain": [0, 1]}}
    spec = _base(title, values, width=WIDTH, layer=[
        {"mark": {"type": "bar", "tooltip": True}, "encoding": {
            "y": y, "x": {"field": "value", **x},
            "tooltip": [{"field": "group"}, {"field": "value", "format": ".3f"},
                        {"field": "low", "format": ".3f"}, {"field": "high", "format": ".3f"},
                        {"field": "rows", "title": "samples"}]}},
        {"mark": {"type": "rule", "strokeWidth": 2, "color": "black"},
         "encoding": {"y": y, "x": {"field": "low", **x}, "x2": {"field": "high"}}},
    ])  # fmt: skip
    rows = [[str(p["group"]), _num(p.get("value")),
             "—" if p.get("low") is None else f"[{_num(p['low'])}, {_num(p.get('high'))}]",
             str(p.get("rows", "—"))] for p in points]  # fmt: skip
    return Figure(fig_id, title, spec, ["group", y_title, "95% interval", "samples"], rows,
                  kind="groups")  # fmt: skip
