"""The names a run gives the files and folders at the top of its folder, in one place: every
writer takes its name from here, and an experiment's variant ids avoid all of them (a
variant's folder sits beside these files, so a variant named like one of them would take its
place). A module of its own, at the level of the experiment file that reserves them.

A new file written at the top of a run folder is named here and added to :data:`RUN_FILES`;
``tests/cli/test_stop_when_decided.py`` lists a real run's folder against it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

PLAN_FILE = "plan.json"
"""What the run set out to do (:mod:`assay.results.plan_record`)."""
SESSIONS_FILE = "sessions.jsonl"
"""When each invocation started and ended."""
SELECTION_FILE = "selection.jsonl"
"""The selected rows and their content hashes."""
STOPPING_FILE = "stopping.json"
"""An experiment with a stop rule: the decision and what it spent."""
RUN_JSON = "run.json"
RUN_MD = "run.md"
EXPERIMENT_JSON = "experiment.json"
EXPERIMENT_MD = "experiment.md"
REPORT_FILE = "report.html"
"""``assay report RUN --html``."""
LOCK_FILE = ".lock"
"""The writer's lock."""
BUILT_DIR = "python-tasks"
"""Tasks built in Python, saved so the run can be resumed."""
LATEST = "latest"
"""The link to the newest run, beside the run folders (a name no run folder takes either)."""

RUN_FILES = frozenset(
    {PLAN_FILE, SESSIONS_FILE, SELECTION_FILE, STOPPING_FILE, RUN_JSON, RUN_MD,
     EXPERIMENT_JSON, EXPERIMENT_MD, REPORT_FILE, LOCK_FILE, BUILT_DIR, LATEST}
)  # fmt: skip
"""Every name above: what a variant id may not be."""


def is_run_folder(folder: Path) -> bool:
    """A run folder: it has ``plan.json`` or ``run.json``."""
    return (folder / PLAN_FILE).is_file() or (folder / RUN_JSON).is_file()


def runs_beside(run_dir: Path) -> list[Path]:
    """The other run folders, and the ``latest`` link, in the folder that holds ``run_dir``
    (``--run-dir``): a ``template_dir`` that holds that folder (``--run-dir .`` in the task's
    folder) copies none of them into a row's sandbox; empty when it cannot be listed."""
    try:
        entries = list(run_dir.parent.iterdir())
    except OSError:
        return []
    return [entry for entry in entries if entry != run_dir and (
        entry.name == LATEST or (entry.is_dir() and not entry.is_symlink()
                                 and is_run_folder(entry)))]  # fmt: skip


def case_clashes(names: Iterable[str]) -> list[tuple[str, str]]:
    """Each name of ``names`` that differs from an earlier one only in case, with that
    earlier one (``[("r1", "R1")]``): names of folders of a run (variant, task and row ids)
    that are two folders here and one on a case-insensitive file system (macOS's and
    Windows's default), where one's results would replace the other's."""
    first: dict[str, str] = {}
    pairs = [(first.setdefault(name.casefold(), name), name) for name in names]
    return [(a, b) for a, b in pairs if a != b]


def case_clash_text(clashes: Sequence[tuple[str, str]]) -> str:
    """``'a' and 'A', …; N in all`` of :func:`case_clashes` (the first three shown)."""
    shown = ", ".join(f"{a!r} and {b!r}" for a, b in clashes[:3])
    return f"{shown}{', …' if len(clashes) > 3 else ''}; {len(clashes)} in all"


CASE_CLASH_CONSEQUENCE = (
    "on a case-insensitive file system (macOS's and Windows's default) they would share one "
    "folder, one's results replacing the other's; rename them where runs may be written there"
)
