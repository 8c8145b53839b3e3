"""The types of :func:`assay.run`'s, :func:`assay.plan`'s and :func:`assay.resume`'s
keyword options, checked (and a few forms normalized) before anything is read or written,
so a wrong type is a ``TypeError`` naming the option, never a crash inside the run or a row
error after the run folder exists.

Normalized: ``tags``/``exclude_tags`` given as one string are comma-separated tags, as on
the command line (``"smoke, fast"``), and any other iterable of strings (a list, a tuple, a
NumPy array, a pandas Series) becomes a tuple; ``rows``' ids may be given as one id or as
numbers (row ids are text: ``1`` is ``"1"``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from assay.errors import UsageError

Check = Callable[[Any], Any]
"""Returns the value (maybe normalized), or raises ``ValueError`` with what it takes."""


def check_types(verb: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with each value checked against its option's type (a key with no check
    here is passed on as it is).

    Raises:
        TypeError: ``"run() option jobs takes an int or None, not str '8'"``.
        UsageError: a text or path option given as an empty string.
    """
    out = dict(options)
    for name, value in options.items():
        check = CHECKS.get(name)
        if check is None:
            continue
        try:
            out[name] = check(value)
        except _Empty:
            raise UsageError(
                "an empty value: give one, or leave the option out",
                field=f"{name} (--{name.replace('_', '-')})",
            ) from None
        except ValueError as exc:
            shown = repr(value)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise TypeError(f"{verb}() option {name} takes {exc}, not "
                            f"{type(value).__name__} {shown}") from None  # fmt: skip
    return out


def _integer(*, optional: bool) -> Check:
    def check(value: Any) -> Any:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError("an int" + (" or None" if optional else ""))
        return int(value)

    return check


def _number(*, also_text: bool = False) -> Check:
    def check(value: Any) -> Any:
        if value is None or (also_text and isinstance(value, str)):
            return value
        if (isinstance(value, bool) or not isinstance(value, numbers.Real)
                or not math.isfinite(value)):  # fmt: skip
            raise ValueError("a finite number of seconds" + (', a duration ("7d")'
                             if also_text else "") + " or None")  # fmt: skip
        return float(value)

    return check


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("True or False")
    return value


class _Empty(Exception):
    """A text option given as an empty string (or only spaces), which would silently mean
    the option is not given."""


def _text(value: Any) -> Any:
    if value is not None and not isinstance(value, str):
        raise ValueError("a string or None")
    if value is not None and not value.strip():
        raise _Empty
    return value


def _path(*, optional: bool = True) -> Check:
    def check(value: Any) -> Any:
        if (value is None and optional) or isinstance(value, (str, Path)):
            if isinstance(value, str) and not value.strip():
                raise _Empty
            return value
        raise ValueError("a path (str or pathlib.Path)" + (" or None" if optional else ""))

    return check


def _choice(*choices: str) -> Check:
    def check(value: Any) -> Any:
        if value not in choices:
            raise ValueError("one of " + ", ".join(repr(c) for c in choices))
        return value

    return check


def _tags(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(tag.strip() for tag in value.split(",") if tag.strip())
    return _strings(value, what="a list of tags (or one string: 'a,b')")


def _strings(value: Any, *, what: str) -> tuple[str, ...]:
    if value is None or isinstance(value, (bytes, Mapping)) or not isinstance(value, Iterable):
        raise ValueError(what)
    items = tuple(value)
    if not all(isinstance(item, str) for item in items):
        raise ValueError(what + " (each one a string)")
    return items


def _group_by(value: Any) -> tuple[str, ...]:
    """One record path (``"meta.ability"``) or several."""
    if isinstance(value, str):
        return (value,)
    return _strings(value, what="a record path or a list of them ('meta.ability')")


def _optional_flag(value: Any) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise ValueError("True, False or None")
    return value


def _command(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, str):
        raise ValueError('a list of strings (["assay", "run", ...])')
    return list(_strings(value, what='a list of strings (["assay", "run", ...])'))


def _row_ids(value: Any) -> Any:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError('a dict of task id to row ids ({"task": ["r1", "r3"]})')
    out = {}
    for task_id, ids in value.items():
        if not isinstance(task_id, str):
            raise ValueError("a dict whose keys are task ids (strings)")
        many = [ids] if isinstance(ids, (str, numbers.Integral)) else ids
        if isinstance(many, (bytes, Mapping)) or not isinstance(many, Iterable):
            raise ValueError("a dict of task id to a list of row ids")
        out[task_id] = list(dict.fromkeys(_row_id(i) for i in many))  # each id once
    return out


def _row_id(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, numbers.Integral)):
        raise ValueError("row ids that are strings (or whole numbers)")
    return str(value)


PROGRESS_METHODS = ("start", "advance", "retry", "stop")
"""What a caller's progress object answers (:class:`~assay.orchestration.running.progress.
Progress`; its ``nodes()`` is asked only when it has one)."""


def _progress(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    lacking = [m for m in PROGRESS_METHODS if not callable(getattr(value, m, None))]
    if isinstance(value, type) or lacking:
        raise ValueError(
            "True, False or a Progress object (assay.orchestration.running."
            "progress: " + ", ".join(f"{m}()" for m in PROGRESS_METHODS) + ")"
        )
    return value


def _overrides(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, Mapping):
        if not all(isinstance(key, str) for key in value):
            raise ValueError('a dict of field path to value ({"agent.temperature": 0.7})')
        return value
    what = 'a dict of field path to value, or a list of "path=value" strings'
    return list(_strings(value, what=what)) if not isinstance(value, str) else [value]


def _callable(value: Any) -> Any:
    if value is not None and not callable(value):
        raise ValueError("a function of one warning (str) or None")
    return value


def _classes(value: Any) -> Any:
    if isinstance(value, type):
        raise ValueError(f"a list of classes ([{value.__name__}])")
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise ValueError("a list of classes")
    items = list(value)
    for item in items:
        if not isinstance(item, type):
            raise ValueError(f"a list of classes (not instances: give {type(item).__name__} "
                             "itself)" if not isinstance(item, str) else
                             "a list of classes (not type names)")  # fmt: skip
    return items


CHECKS: dict[str, Check] = {
    "sample": _integer(optional=True),
    "sample_per_stratum": _integer(optional=True),
    "repeats": _integer(optional=True),
    "jobs": _integer(optional=True),  # None: 4, or on a resume the run's own
    "max_retries": _integer(optional=False),
    "max_connections": _integer(optional=True),
    "timeout": _number(),
    "max_rate": _number(),
    "cache_expiry": _number(also_text=True),
    **dict.fromkeys(
        (
            "include_skipped",
            "skip_unsupported",
            "stop_when_decided",
            "keep_sandboxes",
            "cache",
            "stop_on_sigterm",
            "html",
            "retry_errors",
            "rerun_changed",
        ),
        _flag,
    ),
    **dict.fromkeys(("split", "model", "store", "ray_address"), _text),
    **dict.fromkeys(("experiment", "prices", "junit_xml"), _path()),
    "run_dir": _path(optional=False),
    "stage": _choice("run", "execute"),
    "ray_files": _choice("ship", "shared"),
    "judge_retries": _integer(optional=True),
    "include_story": _optional_flag,
    "group_by": _group_by,
    "judge": _text,
    **dict.fromkeys(("task", "metrics_hook", "output"), _path()),
    "tags": _tags,
    "exclude_tags": _tags,
    "rows": _row_ids,
    "command": _command,
    "progress": _progress,
    "overrides": _overrides,
    "on_warning": _callable,
    "criteria": _classes,
    "agents": _classes,
}
"""Each keyword option's check (``executor`` is checked where it is read, with its own
message)."""
