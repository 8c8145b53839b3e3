"""The ``local`` executor: every row in this process, ``-j`` at a time (asyncio), inside the
run's services (:func:`assay.orchestration.running.services.run_services`)."""

from __future__ import annotations

from assay.orchestration.planning.containment import needs_bridge_socket
from assay.orchestration.running.executors.base import (
    Execution,
    ExecutionContext,
    OnDone,
    PendingItems,
    run_containment,
)
from assay.orchestration.running.runner import Runner, model_keys, needs_bridge
from assay.orchestration.running.services import build_pool, check_judges, run_services
from assay.providers.limits import LocalGate


class LocalExecutor:
    """Runs rows with :class:`~assay.orchestration.running.runner.Runner` in this process."""

    async def execute(
        self, context: ExecutionContext, items: PendingItems, on_done: OnDone
    ) -> Execution:
        """Start the services, sanity-check the judges, run ``items``, stop the services.

        Raises:
            ModelError, UserError: a model could not start (no row ran).
        """
        plan, progress, options = context.plan, context.progress, context.options
        gate = LocalGate(context.limits) if context.limits.any else None
        keys = model_keys(plan)
        pool = build_pool(context.models, jobs=options.jobs, prices=context.prices, keys=keys,
                          registry=context.registry, gate=gate,
                          writer=plan.writer)  # fmt: skip
        services_of_run = run_services(pool, keys, bridge=needs_bridge(plan),
                                       bridge_socket=needs_bridge_socket(plan.definitions),
                                       on_retry=progress.retry,
                                       log_stream=context.console)  # fmt: skip
        async with services_of_run as services:
            containment = run_containment(plan, context.run_dir, services.bridge, pool)
            runner = Runner(context.run_dir, pool, plan.criteria, options,
                            on_retry=progress.retry, bridge=services.bridge,
                            writer=plan.writer, containment=containment)  # fmt: skip
            try:
                warnings = []
                if options.stage == "run":
                    warnings = await check_judges(plan, services.pool, context.on_warning)
                progress.start(len(items), already_done=context.already_done)
                outcome = await runner.execute(items, on_done)
                if outcome.stopped is not None:
                    warnings.append(outcome.stopped)
                cache = pool.settings.cache
                if cache is not None and cache.write_error is not None:
                    warnings.append(f"{cache.write_error}; the rows went on without it")
                return Execution(outcome.interrupted, warnings)
            finally:  # before the services stop (a local server takes a moment to end)
                progress.stop()
                runner.close()
