"""The runner of one node of a Ray cluster (an async Ray actor pinned to its node).

It holds the node's services, as a local run does (:func:`run_services`): its model pool
(a ``local/`` model server of its own, the response cache) and, for coding agents, its own
model bridge on the node's 127.0.0.1. It runs the rows the driver sends, ``-j`` at once (the
same :class:`~assay.orchestration.running.runner.Runner` as a local run, reading this node's copy of
the task folders), and streams each finished row back as its files' contents
(:class:`~assay.orchestration.running.rowfiles.RowFiles`); it never writes in the run folder.

Before any row, :meth:`NodeRunner.start` checks what the rows will need on this node: the
task folders (shipped, or at their paths with ``--ray-files shared``) and the programs (the
coding agents' CLIs, and for ``bwrap`` rows one sandbox made on this node); a problem is returned as
text (``error``, ``hint``), not raised, so it reaches the driver whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import UserError
from assay.orchestration.loading.secrets import run_redactor
from assay.orchestration.planning.containment import needs_bridge_socket
from assay.orchestration.planning.plan import Plan
from assay.orchestration.running.executors.base import run_containment
from assay.orchestration.running.executors.ray_files import (
    Bundle,
    FileMode,
    missing_folders,
    unpack_bundle,
)
from assay.orchestration.running.executors.ray_limiter import RayGate
from assay.orchestration.running.rowfiles import RowFiles, made_files
from assay.orchestration.running.runner import Runner, RunOptions, model_keys, needs_bridge
from assay.orchestration.running.services import (
    ModelSettings,
    build_pool,
    check_judges,
    run_services,
)
from assay.providers.limits import EndpointLimits, Gate, LocalGate
from assay.providers.pool import ModelKey, ProviderRegistry
from assay.providers.pricing import PriceTable
from assay.providers.retry import Attempt
from assay.results.io import Writer

MODEL_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")


@dataclass
class NodeSetup:
    """What the driver gives every node runner (besides the plan).

    Attributes:
        run_dir: the run folder on the driver (rows' records name paths in it).
        options: ``-j`` for this node, stage, sandbox keeping.
        models: retries, timeout, cache.
        prices: the price table.
        registry: the model providers (``None``: the default ones).
        limits: run-wide limits of each model server.
        limiter: the limiter actor (``None`` without limits).
        files: ``ship`` or ``shared`` (:mod:`.ray_files`).
        bundles: the shipped task folders (object refs of :class:`Bundle`).
        driver_node: the driver's node id (its runner reads the folders where they are).
        cwd: the driver's working directory (where a runner on the driver's node works).
        variables: the model variables (API keys, base URLs) the rows' models read, as the
            driver has them.
    """

    run_dir: Path
    options: RunOptions
    models: ModelSettings
    prices: PriceTable
    registry: ProviderRegistry | None
    limits: EndpointLimits
    limiter: Any
    files: FileMode
    bundles: list[Any]
    driver_node: str
    cwd: str = "."
    variables: dict[str, str] = field(default_factory=dict)


def model_variables(plan: Plan) -> dict[str, str]:
    """The variables the plan's models read (``api_key_env`` names and the providers'
    defaults), with this process's values."""
    names = set(MODEL_VARIABLES)
    names |= {k.api_key_env for k in model_keys(plan) if k.api_key_env}
    return {name: os.environ[name] for name in sorted(names) if os.environ.get(name)}


class NodeRunner:
    """One node's runner (see the module docstring).

    Args:
        plan: the run's plan (work items are sent by index into ``plan.work_items()``).
        setup: the rest.
    """

    def __init__(self, plan: Plan, setup: NodeSetup) -> None:
        import ray

        self.plan = plan
        self.items = plan.work_items()
        self.setup = setup
        self.node = ray.get_runtime_context().get_node_id()
        self.label = f"{socket.gethostname()}/{self.node[:6]}"
        self.folders: dict[str, Path] = {}
        self.scratch: Path | None = None
        self.stack = contextlib.AsyncExitStack()
        self.runner: Runner | None = None
        self.writer = Writer.shapes_only()  # this node's secrets: withheld, redacted
        self.retries: list[tuple[str, Attempt]] = []  # told to the driver with the next row
        self.gate: Gate | None = None
        self.rows: set[asyncio.Task[None]] = set()
        jobs = max(1, setup.options.jobs)
        self.slots = asyncio.Semaphore(jobs)
        self.workers = asyncio.Semaphore(2 * jobs)

    async def start(self) -> dict[str, str]:
        """Check this node, then start its services.

        Returns:
            ``{"node", "label"}``, with ``"error"`` and ``"hint"`` when the node cannot run
            the rows (nothing started then).
        """
        found = {"node": self.node, "label": self.label}
        try:
            await self._folders()
            self._check_programs()
            os.environ.update(self.setup.variables)
            self.writer = Writer(run_redactor(self.plan.definitions, os.environ))
            await self._services()
        except UserError as exc:
            await self.stop()
            return {**found, "error": f"node {self.label}: {exc.message}",
                    "hint": exc.hint or ""}  # fmt: skip
        return found

    async def _folders(self) -> None:
        setup = self.setup
        if setup.files == "shared" or self.node == setup.driver_node:
            if os.path.isdir(setup.cwd):
                os.chdir(setup.cwd)  # this actor's own process: where relative names start
            missing = missing_folders(self.plan)
            if missing:
                raise UserError(
                    f"the task folder(s) {', '.join(missing)} do not exist here",
                    hint="with --ray-files shared every node must see the task folders at "
                    "the same paths; leave it out to ship them to the nodes",
                )
            return
        self.scratch = Path(tempfile.mkdtemp(prefix="assay-node-"))
        for ref in setup.bundles:
            bundle: Bundle = await ref
            where = await asyncio.to_thread(unpack_bundle, bundle, self.scratch)
            if bundle.cwd:
                os.chdir(where)  # this actor's own process: where relative names start
            else:
                self.folders[bundle.folder] = where

    def folder(self, path: Path) -> Path:
        """Where the task folder ``path`` is on this node."""
        return self.folders.get(str(path), path)

    def _check_programs(self) -> None:
        for planned in self.plan.tasks:
            base_dir = self.folder(planned.loaded.base_dir)
            for variant in planned.variants:
                task = variant.definition
                self.plan.criteria.agents.build(task.agent).program(base_dir)

    def _keys(self) -> list[ModelKey]:
        return [dataclasses.replace(k, base_dir=str(self.folder(Path(k.base_dir))))
                for k in model_keys(self.plan)]  # fmt: skip

    async def _services(self) -> None:
        setup = self.setup
        gate: Gate | None = None
        if setup.limiter is not None:
            gate = RayGate(setup.limiter, self.node)
            self.stack.push_async_callback(gate.aclose)
        elif setup.limits.any:
            gate = LocalGate(setup.limits)
        keys = self._keys()
        pool = build_pool(setup.models, jobs=setup.options.jobs, prices=setup.prices,
                          keys=keys, registry=setup.registry, gate=gate,
                          writer=self.writer)  # fmt: skip
        contained = needs_bridge_socket(self.plan.definitions)
        of_node = run_services(pool, keys, bridge=needs_bridge(self.plan),
                               bridge_socket=contained)  # fmt: skip
        services = await self.stack.enter_async_context(of_node)
        # bwrap rows: this node makes one sandbox first (bwrap installed, user namespaces)
        containment = run_containment(self.plan, setup.run_dir, services.bridge, pool,
                                      check=True)  # fmt: skip
        self.runner = Runner(setup.run_dir, services.pool, self.plan.criteria, setup.options,
                             bridge=services.bridge, folders=self.folder, remote=True,
                             writer=self.writer, containment=containment,
                             on_retry=self._retried)  # fmt: skip
        self.stack.callback(self.runner.close)

    def _retried(self, model: str, attempt: Attempt) -> None:
        """A retried model call, its error as this node writes it (its own secrets too)."""
        error = self.writer.redact(attempt.error)
        self.retries.append((model, dataclasses.replace(attempt, error=error)))

    async def check_judges(self) -> list[str]:
        """Sanity-check the plan's judges on this node's models; the warnings."""
        assert self.runner is not None
        return await check_judges(self.plan, self.runner.pool, folders=self.folder)

    async def run(
        self, indexes: list[int]
    ) -> AsyncIterator[tuple[int, RowFiles, list[tuple[str, Attempt]]]]:
        """Run the work items ``indexes``; yield ``(index, files, retries)`` as each finishes
        (``retries``: the model calls this node retried since its last yield, for the
        driver's progress display).

        A batch abandoned by the driver (it was interrupted, or died) cancels its rows,
        which kills their processes.
        """
        queue: asyncio.Queue[tuple[int, RowFiles]] = asyncio.Queue()
        runner = self.runner
        assert runner is not None

        async def one(index: int) -> None:
            async with self.workers:
                _, finished = await runner.run_row(self.items[index], self.slots)
                files = await asyncio.to_thread(made_files, finished)
            await queue.put((index, files))

        tasks = [asyncio.get_running_loop().create_task(one(i)) for i in indexes]
        self.rows.update(tasks)
        try:
            for _ in indexes:
                index, files = await queue.get()
                retries, self.retries = self.retries, []
                yield index, files, retries
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self.rows.difference_update(tasks)

    async def stop(self) -> None:
        """Cancel the rows still running (their processes are killed), stop the services,
        delete this node's copies of the task folders."""
        for task in list(self.rows):
            task.cancel()
        await asyncio.gather(*self.rows, return_exceptions=True)
        try:
            await self.stack.aclose()
        finally:
            if self.scratch is not None:
                shutil.rmtree(self.scratch, ignore_errors=True)
