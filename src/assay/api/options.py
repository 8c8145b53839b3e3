"""The option objects of :func:`assay.run`, :func:`assay.plan` and :func:`assay.resume`:
four small groups a caller builds once and passes again, beside the flat keywords they
stand for::

    fast = assay.Execution(jobs=8, executor="ray")
    assay.run("tasks/", selection=assay.Selection(sample=50, tags=["smoke"]),
              execution=fast, model_calls=assay.ModelCalls(cache=True))

Each field is the flat keyword of the same name (``Selection(sample=50)`` is
``sample=50``), with the same default and the same checks when the call runs. A group
contributes the fields it sets to something other than their default; a field set both in
a group and as a flat keyword is refused, so no value silently wins.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from assay.api.option_types import check_types
from assay.orchestration.planning.options import Overrides
from assay.orchestration.running.executors import ExecutorKind
from assay.orchestration.running.progress import Progress
from assay.orchestration.running.session import Warn
from assay.spec.base import did_you_mean


class _Checked:
    """An option object whose fields are checked as the flat keywords are, when it is made
    (``Selection(sample="2")`` is a ``TypeError`` there, not when a run uses it)."""

    def __post_init__(self) -> None:
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]
        check_types(type(self).__name__, values)


@dataclass(frozen=True, kw_only=True)
class Selection(_Checked):
    """What runs (``assay run``'s selection flags); each field as the flat keyword of
    :class:`assay.api.SelectionKeywords` / :class:`assay.api.PlanKeywords`.

    Fields: ``sample``, ``sample_per_stratum``, ``split``, ``tags``, ``exclude_tags``,
    ``include_skipped``, ``skip_unsupported``, ``repeats``, ``rows`` (``{task_id: [row
    ids]}``: exactly these rows; the sample and split then choose the rows of the
    other tasks only), ``experiment``, ``overrides`` (``-D``), ``model``, ``stop_when_decided``.
    """

    sample: int | None = None
    sample_per_stratum: int | None = None
    split: str | None = None
    tags: Sequence[str] = ()
    exclude_tags: Sequence[str] = ()
    include_skipped: bool = False
    skip_unsupported: bool = False
    repeats: int | None = None
    rows: Mapping[str, Sequence[str]] | None = None
    experiment: str | Path | None = None
    overrides: Overrides | None = None
    model: str | None = None
    stop_when_decided: bool = False


@dataclass(frozen=True, kw_only=True)
class Execution(_Checked):
    """How the rows run; each field as the flat keyword of
    :class:`assay.api.SessionKeywords`.

    Fields: ``jobs`` (row-tasks at once; ``None``: 4, or on a resume the run's own),
    ``executor`` (``"local"`` or ``"ray"``),
    ``ray_address``, ``ray_files`` (``"ship"`` or ``"shared"``), ``max_connections`` and
    ``max_rate`` (per model server, across the run), ``keep_sandboxes``,
    ``stop_on_sigterm``.
    """

    jobs: int | None = None
    executor: ExecutorKind = "local"
    ray_address: str | None = None
    ray_files: Literal["ship", "shared"] = "ship"
    max_connections: int | None = None
    max_rate: float | None = None
    keep_sandboxes: bool = False
    stop_on_sigterm: bool = False


@dataclass(frozen=True, kw_only=True)
class ModelCalls(_Checked):
    """How each model call is made; each field as the flat keyword of
    :class:`assay.api.SessionKeywords`.

    Fields: ``max_retries`` (4; 0 = none), ``timeout`` (seconds per request), ``cache``,
    ``cache_expiry`` (``"7d"``, ``"12h"`` or seconds).
    """

    max_retries: int = 4
    timeout: float | None = None
    cache: bool = False
    cache_expiry: str | float | None = None


@dataclass(frozen=True, kw_only=True)
class Outputs(_Checked):
    """What the run writes and tells beside its folder; each field as the flat keyword of
    :class:`assay.api.SessionKeywords`.

    Fields: ``junit_xml`` (a path), ``html`` (also ``report.html``), ``progress``
    (``True`` or a :class:`~assay.orchestration.running.progress.Progress`), ``on_warning``
    (called with each warning), ``command`` (recorded in ``run.json``).
    """

    junit_xml: str | Path | None = None
    html: bool = False
    progress: bool | Progress = False
    on_warning: Warn | None = None
    command: list[str] | None = None


OPTION_GROUPS: dict[str, type] = {
    "selection": Selection,
    "execution": Execution,
    "model_calls": ModelCalls,
    "outputs": Outputs,
}


def flat_options(
    verb: str, options: Mapping[str, Any], *, known: Collection[str], groups: Collection[str]
) -> dict[str, Any]:
    """``options`` with each option object of ``groups`` replaced by the flat keywords it
    sets (its fields whose value is not the default).

    Args:
        verb: the function's name, for the messages (``"run"``).
        options: the keywords as given.
        known: the flat keywords ``verb`` takes.
        groups: the option objects ``verb`` takes (keys of :data:`OPTION_GROUPS`).

    Raises:
        TypeError: a keyword ``verb`` does not take (with the closest one; or set in an
            option object), an option object of the wrong class, one option given both
            flat and in an object, or a value of the wrong type
            (:func:`assay.api.option_types.check_types`).
    """
    for name in options:
        if name in OPTION_GROUPS and name not in groups:
            raise TypeError(f"{verb}() takes no {name}= (its option objects: "
                            f"{', '.join(f'{group}=' for group in groups)})")  # fmt: skip
        if name not in known and name not in groups:
            hint = did_you_mean(name, [*known, *groups])
            raise TypeError(f"{verb}() got an unexpected keyword argument {name!r}"
                            + (f"; {hint}" if hint else ""))  # fmt: skip
    flat = {name: value for name, value in options.items() if name not in groups}
    for group in groups:
        if group in options:
            _merge(flat, group, options[group], verb=verb, known=known)
    return check_types(verb, flat)


def _merge(
    flat: dict[str, Any], group: str, value: object, *, verb: str, known: Collection[str]
) -> None:
    cls = OPTION_GROUPS[group]
    if not (isinstance(value, cls) and dataclasses.is_dataclass(value)):
        raise TypeError(f"{verb}()'s {group}= takes an assay.{cls.__name__}, not "
                        f"{type(value).__name__}: {group}=assay.{cls.__name__}(...)")  # fmt: skip
    for field in dataclasses.fields(value):
        chosen = getattr(value, field.name)
        if _unset(chosen, field.default):
            continue
        if field.name not in known:
            raise TypeError(f"{verb}() takes no {field.name} (set in {group}="
                            f"assay.{cls.__name__}(...))")  # fmt: skip
        if field.name in flat:
            raise TypeError(f"{verb}() got {field.name!r} twice: as {field.name}= and in "
                            f"{group}=assay.{cls.__name__}(...); give it once")  # fmt: skip
        flat[field.name] = chosen


def _unset(value: object, default: object) -> bool:
    """Whether a field holds its default: the same value (a NumPy number equal to it too),
    or an empty list or dict for an empty or absent one; a value of another kind (a NumPy
    array of tags, a number for a flag) never does."""
    if value is default:
        return True
    if isinstance(value, (list, tuple, set, frozenset, Mapping)) and not value:
        return default == () or (default is None and isinstance(value, Mapping))
    if isinstance(value, bool) or isinstance(default, bool):
        return type(value) is type(default) and value == default
    numeric = isinstance(value, numbers.Number) and isinstance(default, numbers.Number)
    try:
        return (numeric or type(value) is type(default)) and bool(value == default)
    except (TypeError, ValueError, NotImplementedError):
        return False
