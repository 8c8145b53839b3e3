"""The response cache: the key covers everything that can change an answer; runs reuse it."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import pytest

from assay.providers.base import (
    Choice,
    JsonSchema,
    Message,
    ModelRequest,
    ModelResponse,
    Tool,
    ToolCall,
    ToolResult,
    Usage,
)
from assay.providers.cache import Identity, ResponseCache, cache_key, parse_duration
from tests.cli.test_run import assay, latest
from tests.helpers import write
from tests.openai_server import scripted_server

BASE = ModelRequest(messages=(Message("system", "s"), Message("user", "u")), temperature=0.0)
IDENTITY = Identity("openai", "http://a/v1", "openai/m")

VARIANTS: dict[str, ModelRequest] = {
    "messages": dataclasses.replace(BASE, messages=(Message("system", "s"), Message("user", "v"))),
    "role": dataclasses.replace(BASE, messages=(Message("user", "s"), Message("user", "u"))),
    "prompt": ModelRequest(prompt="u"),
    "temperature": dataclasses.replace(BASE, temperature=0.7),
    "max_tokens": dataclasses.replace(BASE, max_tokens=17),
    "top_p": dataclasses.replace(BASE, top_p=0.9),
    "stop": dataclasses.replace(BASE, stop=("\n",)),
    "seed": dataclasses.replace(BASE, seed=1),
    "choice": dataclasses.replace(BASE, constraint=Choice(("a", "b"))),
    "choice_order": dataclasses.replace(BASE, constraint=Choice(("b", "a"))),
    "schema": dataclasses.replace(BASE, constraint=JsonSchema({"type": "object"})),
    "extra_body": dataclasses.replace(BASE, extra_body={"tools": [{"name": "t"}]}),
    "tools": dataclasses.replace(BASE, tools=(Tool("Write", parameters={"type": "object"}),)),
    "tool_choice": dataclasses.replace(BASE, tool_choice="required"),
    "script_vars": dataclasses.replace(BASE, script_vars={"row.id": "r1"}),
    "tool_calls": dataclasses.replace(
        BASE,
        messages=(
            Message("user", "u"),
            Message("assistant", "", tool_calls=(ToolCall("c1", "Write", "{}"),)),
            Message("user", "", tool_results=(ToolResult("c1", "ok"),)),
        ),
    ),
    "tool_results": dataclasses.replace(
        BASE,
        messages=(
            Message("user", "u"),
            Message("assistant", "", tool_calls=(ToolCall("c1", "Write", "{}"),)),
            Message("user", "", tool_results=(ToolResult("c1", "failed", is_error=True),)),
        ),
    ),
}


def test_every_request_field_changes_the_key() -> None:
    keys = {name: cache_key(IDENTITY, request, replicate=0) for name, request in VARIANTS.items()}
    base = cache_key(IDENTITY, BASE, replicate=0)
    assert base not in keys.values()
    assert len(set(keys.values())) == len(keys)


def test_every_request_field_is_in_the_variants() -> None:
    covered = {"messages", "prompt", "temperature", "max_tokens", "top_p", "stop", "seed",
               "constraint", "extra_body", "tools", "tool_choice", "script_vars"}  # fmt: skip
    assert {f.name for f in dataclasses.fields(ModelRequest)} == covered


@pytest.mark.parametrize(
    "identity",
    [
        Identity("anthropic", "http://a/v1", "openai/m"),
        Identity("openai", "http://b/v1", "openai/m"),
        Identity("openai", None, "openai/m"),
        Identity("openai", "http://a/v1", "openai/m2"),
    ],
)
def test_provider_url_and_model_change_the_key(identity: Identity) -> None:
    assert cache_key(identity, BASE, replicate=0) != cache_key(IDENTITY, BASE, replicate=0)


def test_replicate_changes_the_key_and_same_inputs_do_not() -> None:
    assert cache_key(IDENTITY, BASE, replicate=1) != cache_key(IDENTITY, BASE, replicate=0)
    same = ModelRequest(messages=(Message("system", "s"), Message("user", "u")))
    assert cache_key(IDENTITY, same, replicate=0) == cache_key(IDENTITY, BASE, replicate=0)


def test_store_get_expire_clear(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.db")
    cache.put("k", ModelResponse("answer", Usage(3, 1), "stop", "m"))
    hit = cache.get("k")
    assert hit is not None and hit.text == "answer" and hit.cached and hit.usage == Usage(3, 1)
    assert cache.get("other") is None
    assert cache.stats().entries == 1
    stale = ResponseCache(tmp_path / "c.db", max_age=0.0)
    time.sleep(0.01)
    assert stale.get("k") is None
    assert cache.clear(older_than=3600) == 0
    assert cache.clear() == 1


def test_tool_calls_and_usage_buckets_round_trip(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.db")
    calls = (
        ToolCall("c1", "Write", '{"file_path": "a"}'),
        ToolCall("c2", "apply_patch", "*** x", kind="custom"),
    )
    usage = Usage(100, 7, cache_read_tokens=20, cache_write_tokens=5, reasoning_tokens=2)
    cache.put("k", ModelResponse("", usage, "tool_calls", "m", tool_calls=calls))
    hit = ResponseCache(tmp_path / "c.db").get("k")
    assert hit is not None and hit.tool_calls == calls and hit.usage == usage


def test_a_cache_file_from_before_tool_calls_is_upgraded(tmp_path: Path) -> None:
    import sqlite3

    old = sqlite3.connect(tmp_path / "c.db")
    old.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, created REAL NOT NULL, model TEXT "
                "NOT NULL, text TEXT NOT NULL, input_tokens INTEGER, output_tokens INTEGER, "
                "finish_reason TEXT)")  # fmt: skip
    old.execute("INSERT INTO responses VALUES ('k', ?, 'm', 'old', 3, 1, 'stop')", (time.time(),))
    old.commit()
    old.close()
    cache = ResponseCache(tmp_path / "c.db")
    hit = cache.get("k")
    assert hit is not None and hit.text == "old" and hit.usage == Usage(3, 1)
    cache.put("k2", ModelResponse("new", None, "stop", "m", tool_calls=(ToolCall("c", "t", "{}"),)))
    assert cache.get("k2") is not None


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90), ("90s", 90), ("15m", 900), ("12h", 43200), ("7d", 604800)]
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_parse_duration_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration("soon")


TASK = """\
task_id: cached
description: answers come from the cache the second time
initial_prompt: "${{row.text}}"
agent: {{type: llm, model: openai/m, base_url: "{url}", api_key_env: CACHE_KEY}}
dataset:
  rows: [{{id: a, text: one}}, {{id: b, text: two}}]
success_criteria:
  - {{type: response_match, expected: echo, match: contains}}
"""


def test_second_run_is_served_from_the_cache_but_replicates_are_not_merged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CACHE_KEY", "k")

    def reply(body: dict[str, Any]) -> str:
        return "echo " + body["messages"][-1]["content"]

    with scripted_server(reply) as server:
        path = write(tmp_path / "t.yaml", TASK.format(url=server.base_url))
        assert assay("run", str(path), "--cache", "--repeats", "2", cwd=tmp_path).returncode == 0
        assert len(server.requests) == 4
        assert assay("run", str(path), "--cache", "--repeats", "2", cwd=tmp_path).returncode == 0
        assert len(server.requests) == 4
        # a run served from the cache says so (it looked like a live one)
        assert json.loads((latest(tmp_path) / "run.json").read_text())["rows_from_cache"] == 4
        assert ("**Cache**: 4 row(s) got answers from the response cache"
                in (latest(tmp_path) / "run.md").read_text())  # fmt: skip
        assert assay("run", str(path), cwd=tmp_path).returncode == 0
        assert len(server.requests) == 6
    assert (tmp_path / ".assay" / "cache.db").exists()
    done = assay("cache", "stats", cwd=tmp_path)
    assert done.returncode == 0 and "4 entries" in done.stdout
    done = assay("cache", "clear", cwd=tmp_path)
    assert done.returncode == 0 and "removed 4" in done.stdout
    run_dir = latest(tmp_path)
    assert (run_dir / "default/cached/a/00/task.json").exists()


def test_a_damaged_cache_file_is_a_clear_error_and_cache_clear_removes_it(
    tmp_path: Path,
) -> None:
    write(tmp_path / "t.yaml", """\
task_id: cached
description: a run with --cache over a damaged cache file
agent: {type: llm, model: mock/echo}
initial_prompt: hi
success_criteria:
  - {type: response_match, expected: hi}
""")  # fmt: skip
    damaged = tmp_path / ".assay" / "cache.db"
    damaged.parent.mkdir()
    damaged.write_text("not a database, whatever it was\n" * 100)
    message = (
        "error: .assay/cache.db: the response cache cannot be read (file is not a database); "
        "its answers are lost\n  hint: remove it with `assay cache clear --path "
        ".assay/cache.db` (or delete the file); the next run with --cache starts a new one\n"
    )
    for args in (["cache", "stats"], ["run", "t.yaml", "--cache"],
                 ["cache", "clear", "--older-than", "1d"]):  # fmt: skip
        done = assay(*args, cwd=tmp_path)
        assert (done.returncode, done.stderr) == (2, message), args
        assert "Traceback" not in done.stdout + done.stderr
    cleared = assay("cache", "clear", cwd=tmp_path)
    assert cleared.returncode == 0, cleared.stderr
    assert cleared.stdout == ".assay/cache.db: the file could not be read as a cache; removed it\n"
    assert not damaged.exists()
    again = assay("run", "t.yaml", "--cache", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert damaged.exists()


def test_an_edited_mock_script_or_another_local_model_is_not_answered_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by a break-test: the key named the model only, so an edited script replayed its
    old answers, and another GGUF file or server behind ``local/smollm2`` the previous
    model's."""
    write(tmp_path / "s.yaml", "default: first\n")
    write(tmp_path / "t.yaml", """\
task_id: scripted
description: the script's answer, cached
agent: {type: llm, model: mock/s.yaml, cache: true}
initial_prompt: hi
success_criteria:
  - {type: response_match, expected: second}
""")  # fmt: skip
    assert assay("run", "t.yaml", cwd=tmp_path).returncode == 1  # "first"
    write(tmp_path / "s.yaml", "default: second\n")
    assert assay("run", "t.yaml", cwd=tmp_path).returncode == 0  # not "first" from the cache
    from assay.providers.local import URL_VARIABLE, LocalModel

    weights = write(tmp_path / "other.gguf", "not really weights")
    monkeypatch.delenv(URL_VARIABLE, raising=False)
    monkeypatch.setenv("ASSAY_LOCAL_MODEL", str(weights))
    by_file = LocalModel(name="local/smollm2", parallel=1).served_by
    assert by_file.startswith(f"weights {weights.resolve()} ")
    monkeypatch.setenv(URL_VARIABLE, "http://127.0.0.1:9/v1")
    by_server = LocalModel(name="local/smollm2", parallel=1).served_by
    assert by_server == "server http://127.0.0.1:9/v1"
    keys = {cache_key(Identity("local", None, "local/smollm2", served), BASE, replicate=0)
            for served in (by_file, by_server, "")}  # fmt: skip
    assert len(keys) == 3


def test_a_cache_that_cannot_store_loses_no_row_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by a break-test: with the cache's disk full every later row ended ERROR
    ('database or disk is full'), each answer paid for and thrown away."""
    import sqlite3

    from assay import api
    from assay.providers.cache import ResponseCache

    real = ResponseCache._write

    def full(self: ResponseCache, statement: str, values: tuple[Any, ...]) -> None:
        original = self._db
        self._db = _Refusing(original)  # type: ignore[assignment]
        try:
            real(self, statement, values)
        finally:
            self._db = original

    class _Refusing:
        def __init__(self, db: sqlite3.Connection) -> None:
            self.db = db

        def execute(self, *_: Any) -> None:
            raise sqlite3.OperationalError("database or disk is full")

        def rollback(self) -> None:
            self.db.rollback()

    monkeypatch.setattr(ResponseCache, "_write", full)
    write(tmp_path / "t.yaml", "task_id: t\ndescription: d\ninitial_prompt: '${row.x}'\n"
          "agent: {type: llm, model: mock/echo}\ndataset: {rows: [{id: a, x: hi}, "
          "{id: b, x: ho}, {id: c, x: hu}]}\nsuccess_criteria: [{type: response_match, "
          "expected: h, match: contains}]\n")  # fmt: skip
    monkeypatch.chdir(tmp_path)
    warnings: list[str] = []
    result = api.run([str(tmp_path / "t.yaml")], cache=True, on_warning=warnings.append)
    assert result.exit_code == 0 and result.suite("t").rollup.rows_passed == 3
    (said,) = [w for w in result.warnings if "could not store answers" in w]
    assert "database or disk is full; the rows went on without it" in said


def test_another_model_behind_the_same_local_server_url_is_another_cache_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found by a break-test: a llama.cpp server restarted on the same port with other
    weights was answered from the cache (the key held the URL's text only)."""
    import asyncio
    import http.server
    import threading

    from assay.providers.local import URL_VARIABLE, LocalModel

    port = [0]

    def serving(meta: dict[str, Any]) -> str:
        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                return

            def do_GET(self) -> None:
                body = json.dumps(
                    {
                        "object": "list",
                        "data": [{"id": "smollm2", "owned_by": "llamacpp", "meta": meta}],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        server = http.server.ThreadingHTTPServer(("127.0.0.1", port[0]), Handler)
        port[0] = server.server_address[1]  # the second model on the first one's port
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{port[0]}/v1"
        monkeypatch.setenv(URL_VARIABLE, url)
        model = LocalModel(name="local/smollm2", parallel=1)
        try:
            asyncio.run(model.start())
            return model.served_by
        finally:
            asyncio.run(model.aclose())
            server.shutdown()
            server.server_close()

    small, other = serving({"n_params": 134515008}), serving({"n_params": 1711376384})
    assert small.partition(" serving ")[0] == other.partition(" serving ")[0]  # one URL
    assert small != other and "134515008" in small and "1711376384" in other
