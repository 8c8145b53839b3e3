"""``python-function``: an assay agent type that a package adds (its entry point is in
``pyproject.toml``, group ``assay.agents``). A Python function in a file beside the task
answers each row's prompt: ``agent: {type: python-function, function: solver.py:answer}``
calls ``answer(prompt)`` and takes what it returns as the final response. A baseline to
compare models against, or a way to grade a program that is not a model."""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import StrictStr

from assay.agents import Agent, AgentContext, AgentOutcome, PreflightCheck, PreflightSetup
from assay.agents.base import OutcomeStatus
from assay.errors import UserError
from assay.results.trace import Span
from assay.spec.agent_base import TranscriptKind
from assay.spec.task import AgentBase


class PythonFunction(AgentBase):
    """The ``agent:`` block: its fields are the task file's.

    ``function``: ``FILE:NAME``, a Python file (relative to the task file) and the function
    in it that takes the prompt and returns the answer.
    """

    type: Literal["python-function"]
    function: StrictStr

    transcript: ClassVar[TranscriptKind] = "messages"  # the prompt and the answer

    @property
    def needs_directory(self) -> bool:
        """The function gets the prompt, not a folder."""
        return False


class PythonFunctionRunner(Agent[PythonFunction]):
    """Calls the function once per row, in a worker thread, within ``task_timeout``."""

    type_name = "python-function"
    config_model = PythonFunction

    def preflight(self, setup: PreflightSetup) -> list[PreflightCheck]:
        """The file exists and defines the function (checked before any row runs)."""
        return [PreflightCheck(("agent", "function"), lambda: self.load(setup.base_dir))]

    def load(self, base_dir: Path) -> Callable[[str], Any]:
        """The function named by ``function``.

        Raises:
            UserError: the file cannot be imported, or has no such function.
        """
        file, _, name = self.config.function.rpartition(":")
        path = base_dir / file
        spec = importlib.util.spec_from_file_location(f"assay_function_{path.stem}", path)
        if not file or not name or spec is None or spec.loader is None or not path.is_file():
            raise UserError(
                f"agent.function '{self.config.function}' is not FILE:NAME of an existing file",
                hint="e.g. function: solver.py:answer",
            )
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise UserError(f"cannot import {path}: {type(exc).__name__}: {exc}") from None
        found = getattr(module, name, None)
        if not callable(found):
            raise UserError(f"{path} has no function {name}")
        return found  # type: ignore[no-any-return]

    async def run(self, context: AgentContext) -> AgentOutcome:
        """Call the function with the prompt (a plain function in a worker thread); an
        exception ends the row ``ERROR``, ``run_limits.task_timeout`` ``TIMEOUT``."""
        started = time.perf_counter()
        span = context.root_span.child("invoke_agent python-function")
        prompt = context.prompt or ""
        try:
            function = self.load(context.base_dir)
            if inspect.iscoroutinefunction(function):
                answer = await asyncio.wait_for(function(prompt), context.timeout)
            else:
                answer = await asyncio.wait_for(asyncio.to_thread(function, prompt),
                                                context.timeout)  # fmt: skip
        except TimeoutError:
            error = f"the function did not return within {context.timeout:g} s"
            return self._failed(span, "timeout", error, started)
        except Exception as exc:  # the function's failure is the row's, not the run's
            return self._failed(span, "error", f"{type(exc).__name__}: {exc}", started)
        span.end()
        return AgentOutcome(response=str(answer), seconds=time.perf_counter() - started,
                            spans=[span])  # fmt: skip

    @staticmethod
    def _failed(span: Span, status: OutcomeStatus, error: str, started: float) -> AgentOutcome:
        span.end(error=error)
        return AgentOutcome(status=status, error=error, seconds=time.perf_counter() - started,
                            spans=[span])  # fmt: skip
