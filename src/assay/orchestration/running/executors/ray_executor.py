"""The ``ray`` executor: the run's rows on the nodes of a Ray cluster (``--executor ray``).

The driver (this process) connects to the cluster (:mod:`.ray_cluster`), puts the plan and
the task folders (:mod:`.ray_files`) in Ray's object store, and starts one runner per node
(:class:`~.ray_node.NodeRunner`: an async actor with ``num_cpus=0`` pinned to its node, its
own ``-j``, model pool and model bridge). It then sends each runner batches of work items
(by index into the plan), read from the pending items only as runners have room (so an
experiment's stopping rule, which ends them once decided, stops the run: the items already
sent, at most 2 × ``-j`` per node, finish), and receives each row back as soon as it
finishes; this process
alone writes every row's files (``task.json`` last, atomically), so a row is done exactly
when its ``task.json`` exists and a resumed run never depends on how many nodes or batches
there were.

Faults: a runner that dies (its worker killed, its node gone) loses only the rows it was
running; they go back to the front of the queue and run on another node, and no row is
written twice (the first result of a work item wins). Its node is tried again later if it
is still alive (at most :data:`RESTARTS` times). Nodes that join the cluster get a runner
within a few seconds. With run-wide limits, one limiter actor hands out leases
(:mod:`.ray_limiter`); a dead node's leases come back. Ctrl-C (or SIGTERM from the command
line) cancels the rows on every node, keeps every finished row, and stops the runners.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import os
import time
from collections import deque
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import RunFailure, UsageError
from assay.orchestration.running.executors.base import (
    Execution,
    ExecutionContext,
    OnDone,
    PendingItems,
)
from assay.orchestration.running.executors.ray_cluster import connect
from assay.orchestration.running.executors.ray_files import FileMode, bundles
from assay.orchestration.running.executors.ray_limiter import Limiter
from assay.orchestration.running.executors.ray_node import NodeRunner, NodeSetup, model_variables
from assay.orchestration.running.rowfiles import RowFiles, clear_attempt, write_row
from assay.orchestration.running.rundir import item_dir
from assay.results.io import Writer
from assay.results.secrets import Redactor
from assay.results.task_result import EvaluationResult
from assay.spec.run_names import runs_beside

BATCH_LIMIT = 50
RESTARTS = 3
RESTART_AFTER = 5.0
RECONCILE_EVERY = 2.0
NO_NODE_TIMEOUT = 120.0
STOP_TIMEOUT = 30.0
WRITER_THREADS = 2


@dataclass
class _Node:
    """A runner on one node, and what it has in flight."""

    node_id: str
    label: str
    actor: Any
    in_flight: set[int] = field(default_factory=set)
    done: int = 0
    alive: bool = True


class RayExecutor:
    """Runs rows on a Ray cluster (see the module docstring).

    Args:
        address: the cluster (``host:port`` or ``auto``); ``None`` starts a local instance.
        files: how the task folders reach the nodes: ``ship`` or ``shared``.
    """

    def __init__(self, *, address: str | None = None, files: FileMode = "ship") -> None:
        self.address = address
        self.files = files

    async def execute(
        self, context: ExecutionContext, items: PendingItems, on_done: OnDone
    ) -> Execution:
        """Connect, start a runner per node, run ``items``, stop the runners, disconnect.

        Raises:
            UsageError: Ray is missing, the cluster cannot be reached or refuses the token,
                a node lacks a program the rows need (nothing runs then).
            RunFailure: every node was lost and none came back.
        """
        connection = connect(self.address)
        try:
            driver = _Driver(connection.ray, context, items, on_done, self.files)
            return await driver.run()
        finally:
            connection.close()


class _Driver:
    """One execution's scheduling on the driver."""

    def __init__(
        self,
        ray: Any,
        context: ExecutionContext,
        items: PendingItems,
        on_done: OnDone,
        files: FileMode,
    ) -> None:
        self.ray = ray
        self.context = context
        self.items = items  # by index in plan.work_items(), made when read
        self.on_done = on_done
        self.files = files
        self.nodes: dict[str, _Node] = {}
        self.starting: dict[str, asyncio.Task[None]] = {}
        self.restarts: dict[str, tuple[int, float]] = {}  # node → (starts, not before)
        self.pending: deque[int] = deque()  # taken from the source, or sent back by a loss
        self.source: Iterator[int] = iter(())
        self.exhausted = False
        self.done: set[int] = set()
        self.batches: set[asyncio.Task[None]] = set()
        self.changed = asyncio.Event()
        self.limiter: Any = None
        self.setup: NodeSetup | None = None
        self.plan_ref: Any = None
        self.capacity = 2 * max(1, context.options.jobs)
        self.writer = ThreadPoolExecutor(WRITER_THREADS, thread_name_prefix="assay-writer")

    async def run(self) -> Execution:
        context = self.context
        self._share()
        interrupted, warnings = False, []
        try:
            await self._start_nodes(initial=True)
            if context.options.stage == "run":
                warnings = await self._check_judges()
            context.progress.start(len(self.items), already_done=context.already_done)
            self._show_nodes()
            self.source = self.items.indexes()  # read as nodes have room: a stopping rule
            self._take(1)  # (experiment.stop) ends it once decided
            await self._loop()
        except asyncio.CancelledError:
            interrupted = True
        finally:
            await self._stop()
            context.progress.stop()
        return Execution(interrupted, warnings)

    def _share(self) -> None:
        """Put the plan and the task folders in the object store; make the limiter."""
        ray, context = self.ray, self.context
        # the driver's secrets stay here: each node knows its own (NodeRunner.start)
        self.plan_ref = ray.put(dataclasses.replace(context.plan, redactor=Redactor()))
        shipped = []
        if self.files == "ship":
            shipped = [
                ray.put(b)
                for b in bundles(
                    context.plan, exclude=[context.run_dir, *runs_beside(context.run_dir)]
                )
            ]
        if context.limits.any:
            actor = ray.remote(num_cpus=0, max_concurrency=10_000)(Limiter)
            self.limiter = actor.remote(context.limits)
        self.setup = NodeSetup(
            run_dir=context.run_dir, options=context.options, models=context.models,
            prices=context.prices, registry=context.registry, limits=context.limits,
            limiter=self.limiter, files=self.files, bundles=shipped,
            driver_node=ray.get_runtime_context().get_node_id(), cwd=os.getcwd(),
            variables=model_variables(context.plan),
        )  # fmt: skip

    async def _start_nodes(self, *, initial: bool = False) -> None:
        """Start a runner on every alive node without one (joined, or back after a loss)."""
        now = time.monotonic()
        alive = [n["NodeID"] for n in self.ray.nodes() if n.get("Alive")]
        for node_id in alive:
            known = self.nodes.get(node_id)
            if (known is not None and known.alive) or node_id in self.starting:
                continue
            starts, not_before = self.restarts.get(node_id, (0, 0.0))
            if starts > RESTARTS or now < not_before:
                continue
            self.restarts[node_id] = (starts + 1, now + RESTART_AFTER)
            self.starting[node_id] = asyncio.get_running_loop().create_task(
                self._start_node(node_id, initial=initial)
            )
        if initial:
            await asyncio.gather(*self.starting.values())
            if not any(n.alive for n in self.nodes.values()):
                raise UsageError(
                    "no node of the Ray cluster could start a runner",
                    hint="see the warnings above; `ray status` shows the cluster's nodes",
                )

    async def _start_node(self, node_id: str, *, initial: bool) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        try:
            runner = self.ray.remote(num_cpus=0, max_restarts=0, max_task_retries=0)(NodeRunner)
            actor = runner.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False)
            ).remote(self.plan_ref, self.setup)
            report: Mapping[str, str] = await actor.start.remote()
        except Exception as exc:  # the node went away while its runner started
            if self.context.on_warning is not None:
                reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                self.context.on_warning(f"the runner of node {node_id[:6]} did not start "
                                        f"({reason}); no row runs there")  # fmt: skip
            return
        finally:
            self.starting.pop(node_id, None)
        if "error" in report:
            self.ray.kill(actor)
            if initial:
                raise UsageError(report["error"], hint=report.get("hint") or None)
            if self.context.on_warning is not None:
                self.context.on_warning(f"{report['error']}; no row runs there")
            self.restarts[node_id] = (RESTARTS + 1, 0.0)
            return
        self.nodes[node_id] = _Node(node_id, report["label"], actor)
        self._show_nodes()
        self.changed.set()

    async def _check_judges(self) -> list[str]:
        """The judges' sanity check, on the driver's node when it has a runner."""
        assert self.setup is not None
        live = [n for n in self.nodes.values() if n.alive]
        first = next((n for n in live if n.node_id == self.setup.driver_node), live[0])
        warnings: list[str] = await first.actor.check_judges.remote()
        for warning in warnings:
            if self.context.on_warning is not None:
                self.context.on_warning(warning)
        return warnings

    async def _loop(self) -> None:
        last_start, lonely_since = time.monotonic(), None
        while self.pending or self.batches or not self.exhausted:
            self._dispatch()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), timeout=1.0)
            self.changed.clear()
            now = time.monotonic()
            if now - last_start >= RECONCILE_EVERY:
                last_start = now
                await self._start_nodes()
            if any(n.alive for n in self.nodes.values()) or self.starting:
                lonely_since = None
            elif lonely_since is None:
                lonely_since = now
            elif now - lonely_since > NO_NODE_TIMEOUT:
                raise RunFailure(
                    f"every node of the Ray cluster was lost and none came back in "
                    f"{NO_NODE_TIMEOUT:.0f} s; {len(self.items) - len(self.done)} row(s) "
                    "did not run (the "
                    "finished rows are kept: `assay run --resume RUN_DIR` runs the rest)"
                )

    def _dispatch(self) -> None:
        """Send batches to the runners with room (each keeps up to 2 × ``-j`` rows)."""
        for node in self.nodes.values():
            if not node.alive:
                continue
            room = self.capacity - len(node.in_flight)
            self._take(room)
            if not self.pending:
                continue
            if room < min(len(self.pending), max(1, self.capacity // 2)):
                continue
            batch = [
                self.pending.popleft() for _ in range(min(room, BATCH_LIMIT, len(self.pending)))
            ]
            node.in_flight.update(batch)
            task = asyncio.get_running_loop().create_task(self._consume(node, batch))
            self.batches.add(task)
            task.add_done_callback(self.batches.discard)

    def _take(self, wanted: int) -> None:
        """Read up to ``wanted`` more items from the source into :attr:`pending`."""
        while len(self.pending) < wanted and not self.exhausted:
            index = next(self.source, None)
            if index is None:
                self.exhausted = True
            else:
                self.pending.append(index)

    async def _consume(self, node: _Node, batch: list[int]) -> None:
        """Receive a batch's rows as they finish and write them; requeue what a lost runner
        did not finish."""
        received: set[int] = set()
        stream = node.actor.run.options(num_returns="streaming").remote(batch)
        try:
            async for ref in stream:
                index, files, retries = await ref
                for model, attempt in retries:  # retried on the node: shown and counted here
                    self.context.progress.retry(model, attempt)
                received.add(index)
                node.in_flight.discard(index)
                await self._write(node, index, files)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._lost(node, exc)
        finally:
            left = [i for i in batch if i not in received]
            node.in_flight.difference_update(batch)
            if left and not _cancelling():
                self.pending.extendleft(reversed([i for i in left if i not in self.done]))
            self.changed.set()

    async def _write(self, node: _Node, index: int, files: RowFiles) -> None:
        """Write a row's files here (once per work item), then tell the session."""
        if index in self.done:
            return
        item = self.items[index]
        directory = item_dir(self.context.run_dir, variant_id=item.variant_id,
                             task_id=files.result.task_id, suite_id=files.result.suite_id,
                             row_id=files.result.row_id, replicate=item.replicate)  # fmt: skip
        write = functools.partial(_write_fresh, directory, files, writer=self.context.plan.writer)
        written = asyncio.get_running_loop().run_in_executor(self.writer, write)
        self.done.add(index)
        try:
            result: EvaluationResult = await asyncio.shield(written)
        except asyncio.CancelledError:
            self._finished(node, await written)
            raise
        self._finished(node, result)

    def _finished(self, node: _Node, result: EvaluationResult) -> None:
        node.done += 1
        self.on_done(result)
        self._show_nodes()

    def _lost(self, node: _Node, exc: Exception) -> None:
        """A runner died (its worker or node): its rows go back; its leases come back."""
        if not node.alive:
            return
        node.alive = False
        if self.limiter is not None:
            self.limiter.forget.remote(node.node_id)
        starts, _ = self.restarts.get(node.node_id, (0, 0.0))
        self.restarts[node.node_id] = (starts, time.monotonic() + RESTART_AFTER)
        with_rows = len(node.in_flight)
        if self.context.on_warning is not None:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            self.context.on_warning(
                f"node {node.label} was lost ({type(exc).__name__}: {reason[:200]}); "
                f"its {with_rows} unfinished row(s) run again on other nodes"
            )
        self._show_nodes()

    def _show_nodes(self) -> None:
        rows = {
            n.label + ("" if n.alive else " (lost)"): n.done
            for n in sorted(self.nodes.values(), key=lambda n: n.label)
        }
        show = getattr(self.context.progress, "nodes", None)
        if show is not None:
            show(rows)

    async def _stop(self) -> None:
        """Cancel the batches, stop every runner (its rows' processes are killed), and the
        limiter."""
        for task in list(self.batches) + list(self.starting.values()):
            task.cancel()
        await asyncio.gather(*self.batches, *self.starting.values(), return_exceptions=True)
        live = [n for n in self.nodes.values() if n.alive]
        stops = [n.actor.stop.remote() for n in live]
        if stops:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*stops, return_exceptions=True),
                                       STOP_TIMEOUT)  # fmt: skip
        for node in self.nodes.values():
            self.ray.kill(node.actor)
        if self.limiter is not None:
            self.ray.kill(self.limiter)
        self.writer.shutdown(wait=True)


def _cancelling() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _write_fresh(directory: Path, files: RowFiles, *, writer: Writer) -> EvaluationResult:
    """Write a row's files (all of them, logs and kept sandbox included, come from its node)
    into a folder cleared of what an earlier attempt of the row left there."""
    clear_attempt(directory)
    return write_row(directory, files, writer=writer)
