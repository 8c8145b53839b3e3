"""The executor seam: what runs a run's pending work items, below the session and the API.

A session (:mod:`assay.orchestration.running.session`) hands an :class:`Executor` the work items
whose ``task.json`` does not exist yet; the executor runs them inside the run's services and
calls ``on_done`` with each row's result once its files are written. Whatever executor ran
the rows, the run folder, the reports and the exit code are the same (timings aside):

- ``local`` (:mod:`.local`, the default): this process, ``-j`` rows at once (asyncio).
- ``ray`` (:mod:`.ray_executor`, ``--executor ray``): one runner per node of a Ray cluster,
  each running ``-j`` rows at once; the rows' files are still written here, by this process
  alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, TextIO

from assay.orchestration.planning.containment import (
    Containment,
    is_contained,
    private_paths,
    shown_folders,
)
from assay.orchestration.planning.plan import Plan, WorkItem
from assay.orchestration.running.progress import Progress
from assay.orchestration.running.runner import RunOptions
from assay.orchestration.running.services import ModelSettings
from assay.providers.limits import EndpointLimits
from assay.providers.pool import ModelPool, ProviderRegistry
from assay.providers.pricing import PriceTable
from assay.results.task_result import EvaluationResult
from assay.sandbox.bwrap import BridgeLink

if TYPE_CHECKING:
    from assay.bridge import Bridge

ExecutorKind = Literal["local", "ray"]
EXECUTORS: tuple[ExecutorKind, ...] = ("local", "ray")
OnDone = Callable[[EvaluationResult], None]
Warn = Callable[[str], None]


@dataclass(frozen=True)
class ExecutorChoice:
    """Which executor runs the rows, and the limits every row of the run shares.

    Attributes:
        kind: ``local`` or ``ray``.
        address: the Ray cluster (``host:port``, ``ray://host:port`` or ``auto``); ``None``
            starts a local Ray instance for the run and stops it at the end.
        limits: ``--max-connections`` / ``--max-rate``, held across every node.
        files: how the task folders reach the nodes: ``ship`` (packed by the driver) or
            ``shared`` (every node sees them at the same paths).
    """

    kind: ExecutorKind = "local"
    address: str | None = None
    limits: EndpointLimits = field(default_factory=EndpointLimits)
    files: Literal["ship", "shared"] = "ship"


@dataclass
class ExecutionContext:
    """What every executor needs besides the items.

    Attributes:
        plan: the run's plan (the items are some of its work items).
        run_dir: the run folder; only this process writes in it.
        options: ``-j`` (per node on a cluster), stage, sandbox keeping.
        models: retries, timeout, cache.
        prices: the price table.
        registry: the model providers (``None``: the default ones).
        progress: told of each row as it finishes.
        already_done: rows kept from earlier sessions (for the progress display).
        on_warning: called with each warning as it is found.
        limits: run-wide limits of each model server.
        console: where the run's services print their errors (it redacts the run's secrets).
    """

    plan: Plan
    run_dir: Path
    options: RunOptions
    models: ModelSettings
    prices: PriceTable
    registry: ProviderRegistry | None
    progress: Progress
    already_done: int = 0
    on_warning: Warn | None = None
    limits: EndpointLimits = field(default_factory=EndpointLimits)
    console: TextIO | None = None


@dataclass
class Execution:
    """How running the items ended: interrupted (Ctrl-C, SIGTERM) or not, and the warnings
    found (a judge that failed its sanity check)."""

    interrupted: bool = False
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PendingItems:
    """The work items a session runs: those of ``items`` whose byte in ``kept`` is 0 (not
    finished before), in plan order, each made when read (a run of a million rows never
    holds a million work items)."""

    items: Sequence[WorkItem]
    kept: bytearray

    def __len__(self) -> int:
        return self.kept.count(0)

    def __iter__(self) -> Iterator[WorkItem]:
        for index in self.indexes():
            yield self.items[index]

    def indexes(self) -> Iterator[int]:
        """The pending items' indexes in the plan, in order (no work item made)."""
        position = self.kept.find(0)
        while position != -1:
            yield position
            position = self.kept.find(0, position + 1)

    def __getitem__(self, index: int) -> WorkItem:
        """The plan's work item ``index`` (pending or not), by its index in the plan."""
        return self.items[index]


class Executor(Protocol):
    """Runs work items; every finished row's files are written before ``on_done`` hears of
    it, so a row is done exactly when its ``task.json`` exists."""

    async def execute(
        self, context: ExecutionContext, items: PendingItems, on_done: OnDone
    ) -> Execution:
        """Run ``items``; return when all are done or the run is cancelled (then
        ``interrupted``).

        Raises:
            ModelError, UserError: the services could not start (no row ran).
        """
        ...


def run_containment(
    plan: Plan, run_dir: Path, bridge: Bridge | None, pool: ModelPool, *, check: bool = False
) -> Containment:
    """The ``bwrap`` sandboxes of the rows run with ``bridge`` and ``pool`` (this process's,
    or a node's): they reach the bridge through its unix socket, and never see the runs
    folder, the store or the response cache (a path that does not exist on a node is
    skipped). ``check``: make one sandbox first (a node of a cluster, whose machine the
    plan's own check did not see).

    Raises:
        UsageError: a row needs bwrap and it is not installed here, or (``check``) this
            machine cannot make a sandbox (the hint says how to fix it).
    """
    link = bridge_link(bridge)
    cache = pool.settings.cache
    stores = [t.expansion.store.url for t in plan.tasks if t.expansion.store is not None]
    private = private_paths(run_dir, cache=cache.path if cache is not None else None,
                            store_urls=stores,
                            task_dirs=[f for t in plan.tasks for v in t.variants
                                       for f in shown_folders(v.definition, t.loaded.base_dir)]
                            if any(is_contained(d) for d in plan.definitions) else ())  # fmt: skip
    return Containment.for_tasks(plan.definitions, private=private, bridge=link, check=check,
                                 images=plan.image_ids(),
                                 failed=plan.build_failures)  # fmt: skip


def bridge_link(bridge: Bridge | None) -> BridgeLink | None:
    """How a sandbox without network reaches ``bridge``: its unix socket and port (``None``:
    no bridge, or one that serves no socket)."""
    if bridge is None or bridge.socket_path is None:
        return None
    return BridgeLink(bridge.socket_path, bridge.port)
