"""The real local model: SmolLM2-135M served by xllamacpp on 127.0.0.1, end to end."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import httpx
import pytest

from assay.providers.base import Choice, ModelRequest
from assay.providers.local import LocalModel, LocalServer, find_gguf
from tests.cli.test_run import EXAMPLES, assay, latest

pytestmark = pytest.mark.local_model


def test_server_starts_answers_and_stops() -> None:
    server = LocalServer(gguf=find_gguf("smollm2"), alias="smollm2", parallel=1)
    server.start()
    health = f"http://127.0.0.1:{server.port}/health"
    try:
        assert httpx.get(health, timeout=5).status_code == 200
    finally:
        server.stop()
    with pytest.raises(httpx.HTTPError):
        httpx.get(health, timeout=2)


def test_label_constraint_holds_on_completion_and_chat() -> None:
    async def ask() -> list[str]:
        model = LocalModel(name="local/smollm2", parallel=2)
        try:
            await model.start()
            prompt = "Review: a wonderful film\nSentiment: positive\n\nReview: dull\nSentiment:"
            labels = Choice(("positive", "negative"))
            completion = ModelRequest(prompt=prompt, max_tokens=4, constraint=labels)
            from assay.providers.base import Message

            chat = ModelRequest(
                messages=(Message("user", "Is 'great fun' positive or negative?"),),
                max_tokens=4,
                constraint=labels,
            )
            answers = await asyncio.gather(model.generate(completion), model.generate(chat))
            return [a.text for a in answers]
        finally:
            await model.aclose()

    for text in asyncio.run(ask()):
        assert text in ("positive", "negative")


def test_sst2_demo_on_a_few_real_rows(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "sst2", tmp_path / "sst2")
    done = assay("run", "sst2/task.yaml", "--sample", "6", "-j", "2", cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    run_dir = latest(tmp_path)
    suite = json.loads((run_dir / "default/sst2-sentiment/suite.json").read_text())
    assert suite["rows_total"] == 6
    assert suite["rows_error"] == 0
    aggregate = suite["criterion_aggregates"][0]
    assert aggregate["metrics"]["completion_rate"] == 1.0
    assert aggregate["metrics"]["accuracy"] is not None
    for row_id in suite["selection"]["row_ids"]:
        task = json.loads(
            (run_dir / "default/sst2-sentiment" / row_id / "00/task.json").read_text()
        )
        observed = task["success_criteria_results"][0]["observed_label"]
        assert observed in ("positive", "negative")
        assert task["model_used"] == "local/smollm2"
        assert task["total_token_usage"]["input_tokens"] > 50
