"""Rendering the viewer's pages: Jinja2 templates (``templates/``, autoescaped) with the
number formats every page shares, for the server and for the static ``report.html`` alike.

In a static page (``static=True``) the stylesheet, the page script and the vendored Vega-Lite
are inlined, so the file opens anywhere with no server and no network.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from assay.metrics.paired import p_clause

HERE = Path(__file__).resolve().parent
ASSETS = HERE / "assets"


def _num(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _metric_value(value: float | None, name: str) -> str:
    """A metric as ``suite.md`` shows it; a count as a whole number."""
    if value is not None and name == "count":
        return f"{value:,.0f}"
    return _num(value)


def _signed(value: float | None) -> str:
    return "—" if value is None else f"{value:+.3f}"


def _seconds(value: float | None) -> str:
    if value is None:
        return "—"
    if value >= 120:
        return f"{value / 60:.1f} min"
    return f"{value:.2f} s" if value < 10 else f"{value:.1f} s"


def _p_clause(value: float | None) -> str:
    """``p = 0.0123`` or ``p < 1e-300`` (an underflowed p is never shown as 0)."""
    return "p —" if value is None else p_clause(value)


CLIP = 160  # characters of a prompt or response shown in a table cell


def highlight(text: str | None, query: str = "") -> Markup:
    """``text`` escaped, with each match of ``query`` (case-insensitive for ASCII letters,
    as the rows filter matches) in ``<mark>``."""
    text = text or ""
    needle = query.strip()
    if not needle:
        return Markup.escape(text)
    pattern = re.compile(re.escape(needle), re.IGNORECASE | re.ASCII)
    out, last = [], 0
    for found in pattern.finditer(text):
        out += [Markup.escape(text[last : found.start()]),
                Markup("<mark>%s</mark>") % found.group(0)]  # fmt: skip
        last = found.end()
    out.append(Markup.escape(text[last:]))
    return Markup("").join(out)


def snippet(text: str | None, query: str = "", width: int = CLIP) -> Markup:
    """About ``width`` characters of ``text``: its start, or around the first match of
    ``query`` when there is one (``…`` where it is cut), matches highlighted."""
    text = text or ""
    needle = query.strip()
    start = 0
    if needle:
        found = re.search(re.escape(needle), text, re.IGNORECASE | re.ASCII)
        if found is not None and found.end() > width:
            start = max(0, found.start() - width // 3)
    end = start + width
    shown = highlight(text[start:end], needle)
    return Markup("").join([Markup("…") if start else Markup(""), shown,
                            Markup("…") if end < len(text) else Markup("")])  # fmt: skip


def _int_sep(value: int | float | None) -> str:
    return "—" if value is None else f"{int(value):,}"


def _usd(value: float | None) -> str:
    if value is None:
        return "—"
    return f"${value:.4f}" if value >= 0.01 or value == 0 else f"${value:.6f}"


def _json_script(value: Any) -> Markup:
    """JSON for a ``<script type="application/json">`` element: ``<``, ``>`` and ``&`` are
    escaped, so no text in the data can close the element."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text)


def _safe_script(text: str) -> Markup:
    """A vendored script's text for an inline ``<script>`` element."""
    return Markup(text.replace("</script", "<\\/script"))


def _safe_style(text: str) -> Markup:
    """The stylesheet's text for an inline ``<style>`` element."""
    return Markup(text.replace("</style", "<\\/style"))


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


@cache
def asset_text(name: str) -> str:
    """The text of an asset under ``assets/`` (read once)."""
    return (ASSETS / name).read_text(encoding="utf-8")


@cache
def environment() -> Environment:
    """The template environment (made once per process)."""
    env = Environment(loader=FileSystemLoader(HERE / "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      trim_blocks=True, lstrip_blocks=True)  # fmt: skip
    env.filters.update(num=_num, metric_value=_metric_value, signed=_signed, seconds=_seconds,
                       int_sep=_int_sep, p_clause=_p_clause, highlight=highlight,
                       snippet=snippet, usd=_usd, tojson_script=_json_script,
                       safe_script=_safe_script, safe_style=_safe_style, tojson_pretty=_pretty,
                       basename=lambda p: Path(str(p)).name)  # fmt: skip
    env.globals["asset_text"] = asset_text
    env.globals["clip"] = CLIP
    return env


def render(template: str, *, static: bool = False, **context: Any) -> str:
    """The page ``template`` renders with ``context`` (``static``: everything inline)."""
    from assay.version import __version__

    page = environment().get_template(template)
    return page.render(static=static, version_text=__version__,
                       written=datetime.now().isoformat(timespec="seconds"),
                       **context)  # fmt: skip
