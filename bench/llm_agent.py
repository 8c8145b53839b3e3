"""The llm agent's tool loop: what it adds per turn beyond the model call (issue #30).

One row of ``agent: {type: llm, tools: [...]}`` on a scripted ``mock/`` model that makes
TURNS tool calls, one a turn, then submits. The anchor is the same model calls alone: every
request the loop sent, recorded, sent again to the same model in a bare loop. The overhead
per turn is ``(loop - anchor) / turns``: building the request, running the tool, recording
the transcript and the spans. Two tools: ``read_file`` (the loop's own cost; nothing is
started) and ``run_command`` (``true`` through the sandbox's process runner; informative,
the process start dominates). In process, medians of REPEATS, interleaved.

    .venv/bin/python bench/llm_agent.py [TURNS] [REPEATS]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from assay.agents.base import AgentContext
from assay.agents.llm import LlmRunner
from assay.providers.base import ModelRequest, ModelResponse
from assay.providers.pool import ModelPool, PoolSettings, default_registry
from assay.results.trace import Span, new_trace_id
from assay.spec.task import LlmAgent

RESULTS = Path(__file__).resolve().parent / "results" / "llm_agent.json"


def script(turns: int, tool: str) -> str:
    step = ('      - {tool: read_file, input: {path: f.txt}}\n' if tool == "read_file"
            else '      - {tool: run_command, input: {command: "true"}}\n')  # fmt: skip
    return ("replies:\n  - match: go\n    steps:\n" + step * turns
            + "      - {tool: submit_answer, input: {answer: done}}\n")  # fmt: skip


async def once(folder: Path, turns: int, tool: str) -> tuple[float, float]:
    """Seconds of the loop, and of its model calls made again alone."""
    (folder / "script.yaml").write_text(script(turns, tool))
    box = folder / "box"
    box.mkdir(exist_ok=True)
    (box / "f.txt").write_text("hello\n")
    config = LlmAgent(model="mock/script.yaml", tools=[tool, "submit_answer"],
                      max_turns=turns + 1)  # fmt: skip
    pool = ModelPool(default_registry(), PoolSettings())
    runner = LlmRunner(config)
    model = pool.get(runner.model_keys(folder)[0])
    await model.start()
    sent: list[ModelRequest] = []
    generate = model.generate

    async def recording(request: ModelRequest, **kwargs: Any) -> ModelResponse:
        sent.append(request)
        return await generate(request, **kwargs)

    model.generate = recording  # type: ignore[method-assign]
    context = AgentContext(prompt="go", sandbox=box, base_dir=folder, timeout=600,
                           max_total_tokens=None, env={"PATH": "/usr/bin:/bin"}, models=pool,
                           root_span=Span("row", new_trace_id()))  # fmt: skip
    started = time.perf_counter()
    outcome = await runner.run(context)
    loop = time.perf_counter() - started
    assert outcome.status == "completed" and outcome.response == "done", outcome.error
    assert outcome.model_calls == turns + 1
    model.generate = generate  # type: ignore[method-assign]
    started = time.perf_counter()
    for request in sent:
        await model.generate(request)
    bare = time.perf_counter() - started
    await pool.aclose()
    return loop, bare


def main(turns: int = 100, repeats: int = 5) -> dict[str, Any]:
    """Measure, print, write ``bench/results/llm_agent.json`` and return the figures."""
    figures: dict[str, Any] = {"turns": turns, "repeats": repeats}
    for tool in ("read_file", "run_command"):
        per_turn = []
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as folder:
                loop, bare = asyncio.run(once(Path(folder), turns, tool))
            per_turn.append((loop - bare) / (turns + 1))
        figures[tool] = {"overhead_ms_per_turn": round(statistics.median(per_turn) * 1000, 3),
                         "all_ms": [round(x * 1000, 3) for x in per_turn]}  # fmt: skip
        print(f"{tool}: {figures[tool]['overhead_ms_per_turn']} ms a turn beyond the model "
              f"call (median of {repeats}, {turns} turns)")  # fmt: skip
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(figures, indent=2) + "\n")
    return figures


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
