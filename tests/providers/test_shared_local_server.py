"""``ASSAY_LOCAL_MODEL_URL``: ``local/…`` models use a llama.cpp server that already runs
(one for many runs, as the tests' own session server) instead of starting one per run."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.errors import ModelError, UsageError
from assay.providers.local import URL_VARIABLE, LocalModel, free_port, running_server_url
from tests.cli.test_run import assay, latest
from tests.helpers import QuietHTTPServer, write

TASK = """\
task_id: mood
description: one real row
initial_prompt: "Is 'a wonderful film' positive or negative? Answer with one word."
agent: {type: llm, model: local/smollm2, labels: [positive, negative], max_tokens: 4}
success_criteria:
  - {type: response_match, expected: [positive, negative]}
"""


@pytest.mark.parametrize(
    ("value", "expected"),
    [("http://127.0.0.1:8080", "http://127.0.0.1:8080/v1"),
     ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/v1"),
     ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"),
     (" https://models.internal:443/v1/ ", "https://models.internal:443/v1"),
     ("", None)],
)  # fmt: skip
def test_the_variable_names_the_servers_v1_url(
    value: str, expected: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(URL_VARIABLE, value)
    assert running_server_url() == expected


@pytest.mark.parametrize(
    "value", ["127.0.0.1:8080", "ftp://127.0.0.1:8080", "http://", "http://127.0.0.1:8080/?a=1"]
)
def test_a_value_that_is_no_server_url_is_refused_before_the_run(
    value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(URL_VARIABLE, value)
    with pytest.raises(UsageError) as caught:
        running_server_url()
    assert caught.value.message == f"{URL_VARIABLE}={value!r} is not a server URL"
    assert "http://127.0.0.1:8080" in (caught.value.hint or "")
    write(tmp_path / "t.yaml", TASK)
    done = assay("run", "t.yaml", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"{URL_VARIABLE}={value!r} is not a server URL" in done.stderr
    assert not (tmp_path / "runs").exists()


@pytest.fixture
def unhealthy_server() -> Iterator[str]:
    """An HTTP server on 127.0.0.1 whose ``/health`` answers 503 (a server still loading)."""

    class Loading(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(503)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = QuietHTTPServer(("127.0.0.1", 0), Loading)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def start_error(url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(URL_VARIABLE, url)
    model = LocalModel(name="local/smollm2", parallel=1)
    with pytest.raises(ModelError) as caught:
        asyncio.run(model.start())
    assert model.server is None  # none was started in its place
    return str(caught.value)


def test_a_server_that_does_not_answer_or_is_not_ready_is_a_model_error(
    unhealthy_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    silent = f"http://127.0.0.1:{free_port()}"
    assert start_error(silent, monkeypatch).startswith(
        f"the local model server at {URL_VARIABLE} does not answer: "
    )
    assert start_error(unhealthy_server, monkeypatch) == (
        f"the local model server at {URL_VARIABLE} answered {unhealthy_server}/health with 503"
    )


@pytest.mark.local_model
def test_a_run_uses_the_running_server_and_loads_no_weights(
    tmp_path: Path, local_model_url: str
) -> None:
    """With the weights' path made wrong, a run that started its own server would be
    refused (exit 2); it runs, on the session's server, and leaves it running."""
    write(tmp_path / "t.yaml", TASK)
    env = {URL_VARIABLE: local_model_url, "ASSAY_LOCAL_MODEL": str(tmp_path / "none.gguf")}
    done = assay("run", "t.yaml", "-q", cwd=tmp_path, env=env)
    assert done.returncode in (0, 1), done.stderr
    task = json.loads((latest(tmp_path) / "default/mood/00/task.json").read_text())
    assert task["final_status"] != "ERROR", task
    assert task["total_token_usage"]["input_tokens"] > 5
    again = assay("run", "t.yaml", "-q", cwd=tmp_path, env=env)
    assert again.returncode in (0, 1), again.stderr
