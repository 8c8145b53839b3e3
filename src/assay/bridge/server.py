"""The model bridge's server: the CLIs' wire protocols on 127.0.0.1, one server per run.

Routes (any path prefix before ``/v1`` is accepted, since clients differ in how they join a
base URL and a path):

- ``POST /v1/messages`` — Anthropic Messages, streamed (SSE with ``event:`` lines) or not;
- ``POST /v1/responses`` — OpenAI Responses, streamed or not;
- ``POST /v1/chat/completions`` — OpenAI Chat Completions, streamed or not;
- ``GET /v1/models`` — the session's model, for clients that list models first;
- ``POST /v1beta/models/{model}:generateContent`` and ``…:streamGenerateContent`` (SSE with
  ``?alt=sse``) — the Gemini API, as the Gemini CLI sends it; ``…:countTokens`` answers an
  estimate (a quarter of the request's characters: the bridge does not tokenize).

The same routes are also served on a unix socket when :meth:`Bridge.start` is asked for one:
a row in a ``bwrap`` sandbox has no network, and reaches the bridge through that socket
bound into its sandbox (:mod:`assay.sandbox.bwrap`).

A request names its row-task by the credential it carries (``x-api-key``,
``Authorization: Bearer``, or Gemini's ``x-goog-api-key`` header or ``?key=``): the token of
a :class:`BridgeSession` opened by the row's agent. A request without a valid one is refused
with 401. Starlette serves the routes and uvicorn runs in the run's event loop (no threads,
no signal handlers of its own: Ctrl-C stays the run's).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from uvicorn.config import LOGGING_CONFIG

from assay.bridge.calls import Reply, error_reply, forward, translate
from assay.bridge.session import BridgeSession, Protocol
from assay.errors import UsageError
from assay.providers.managed import OnRetry
from assay.providers.pool import ModelPool

HOST = "127.0.0.1"


class _Server(uvicorn.Server):
    """uvicorn without its signal handlers (the run owns Ctrl-C and SIGTERM)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class Bridge:
    """The model bridge of one run.

    Args:
        pool: the run's models; each session's calls go to ``pool.get(session.model_key)``.
        on_retry: called for every retried model call (the progress display).
    """

    def __init__(
        self, pool: ModelPool, *, on_retry: OnRetry | None = None, log_stream: TextIO | None = None
    ) -> None:
        self.pool = pool
        self.on_retry = on_retry
        self.log_stream = log_stream
        self.refused = 0
        self._sessions: dict[str, BridgeSession] = {}
        self._server: _Server | None = None
        self._task: asyncio.Task[None] | None = None
        self._port = 0
        self._socket_dir: Path | None = None

    @property
    def port(self) -> int:
        """The TCP port on 127.0.0.1."""
        if not self._port:
            raise RuntimeError("the bridge is not started")
        return self._port

    @property
    def socket_path(self) -> Path | None:
        """The unix socket it also listens on, if it was asked for one."""
        return self._socket_dir / "bridge.sock" if self._socket_dir is not None else None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (without ``/v1``)."""
        if not self._port:
            raise RuntimeError("the bridge is not started")
        return f"http://{HOST}:{self._port}"

    def open(self, session: BridgeSession) -> BridgeSession:
        """Accept calls carrying ``session.token`` from now on."""
        self._sessions[session.token] = session
        return session

    def close(self, session: BridgeSession) -> None:
        """Refuse ``session.token`` from now on (the row's CLI has ended); a call of the
        session still in progress is abandoned (its client is gone)."""
        self._sessions.pop(session.token, None)
        session.closed.set()

    async def start(self, *, unix_socket: bool = False) -> None:
        """Listen on a free port of 127.0.0.1 and, with ``unix_socket``, on a unix socket in
        a private folder (:attr:`socket_path`; the socket itself may be connected to by any
        user, as a row's sandbox user must: its folder is the boundary).

        Raises:
            UsageError: the server could not start.
        """
        # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP,
        # and accepted connections inherit it; without it every answer waits about 40 ms
        # for the client's delayed ACK (Nagle), measured in bench/coding_agent.py.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, 0))
        self._port = sock.getsockname()[1]
        config = uvicorn.Config(self._app(), log_level="warning", lifespan="off",
                                access_log=False, timeout_keep_alive=120,
                                log_config=log_config(self.log_stream or sys.stderr))  # fmt: skip
        self._server = _Server(config)
        sockets = [sock]
        if unix_socket:
            sockets.append(self._unix_socket())
        self._task = asyncio.create_task(self._server.serve(sockets=sockets))
        while not self._server.started:
            if self._task.done():
                raise UsageError(f"the model bridge could not start: {self._task.exception()!r}")
            await asyncio.sleep(0.005)

    async def aclose(self) -> None:
        """Abandon the calls in progress, stop listening and close open connections."""
        for session in list(self._sessions.values()):
            self.close(session)
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(self._task), 5)
            if not self._task.done():
                self._server.force_exit = True
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._task
        self._server, self._task, self._port = None, None, 0
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None

    def _unix_socket(self) -> socket.socket:
        self._socket_dir = Path(tempfile.mkdtemp(prefix="assay-bridge-"))
        path = self._socket_dir / "bridge.sock"
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(path))
        os.chmod(path, 0o666)
        return sock

    def _app(self) -> Starlette:
        async def messages(request: Request) -> Response:
            return await self._call("anthropic", request)

        async def responses(request: Request) -> Response:
            return await self._call("responses", request)

        async def chat(request: Request) -> Response:
            return await self._call("chat", request)

        async def gemini(request: Request) -> Response:
            model, _, action = str(request.path_params["target"]).rpartition(":")
            if action in ("generateContent", "streamGenerateContent"):
                return await self._call("gemini", request,
                                        stream=action == "streamGenerateContent",
                                        asked_model=model or None)  # fmt: skip
            if action == "countTokens":
                return await self._count_tokens(request)
            return _send(
                error_reply(
                    "gemini",
                    404,
                    "not_found_error",
                    f"the assay model bridge does not serve {action!r} "
                    "(generateContent, streamGenerateContent, countTokens)",
                )
            )

        async def models(request: Request) -> Response:
            session = self._session(request)
            if session is None:
                return _send(error_reply("chat", 401, "authentication_error", _NO_TOKEN))
            name = session.model_key.name
            return JSONResponse(
                {
                    "object": "list",
                    "data": [
                        {"id": name.partition("/")[2], "object": "model", "owned_by": "assay"}
                    ],
                }
            )

        async def unknown(request: Request) -> Response:
            return _send(
                error_reply(
                    "chat",
                    404,
                    "not_found_error",
                    f"the assay model bridge does not serve {request.url.path}",
                )
            )

        return Starlette(routes=[
            Route("/{prefix:path}/messages", messages, methods=["POST"]),
            Route("/{prefix:path}/responses", responses, methods=["POST"]),
            Route("/{prefix:path}/chat/completions", chat, methods=["POST"]),
            Route("/{prefix:path}/models", models, methods=["GET"]),
            Route("/{prefix:path}/models/{target:path}", gemini, methods=["POST"]),
            Route("/{path:path}", unknown, methods=["GET", "POST", "HEAD", "PUT", "DELETE"]),
        ])  # fmt: skip

    def _session(self, request: Request) -> BridgeSession | None:
        token = (request.headers.get("x-api-key") or request.headers.get("x-goog-api-key")
                 or request.query_params.get("key") or "")  # fmt: skip
        bearer = request.headers.get("authorization", "")
        if not token and bearer.lower().startswith("bearer "):
            token = bearer[7:].strip()
        return self._sessions.get(token)

    async def _count_tokens(self, request: Request) -> Response:
        """Gemini's ``countTokens``: an estimate, a quarter of the characters of the text
        (the bridge does not tokenize for the session's model)."""
        if self._session(request) is None:
            self.refused += 1
            return _send(error_reply("gemini", 401, "authentication_error", _NO_TOKEN))
        try:
            body = json.loads(await request.body())
        except ValueError as exc:
            return _send(error_reply("gemini", 400, "invalid_request_error",
                                     f"the request body is not JSON: {exc}"))  # fmt: skip
        return JSONResponse({"totalTokens": max(1, len(json.dumps(body)) // 4)})

    async def _call(
        self,
        protocol: Protocol,
        request: Request,
        *,
        stream: bool | None = None,
        asked_model: str | None = None,
    ) -> Response:
        session = self._session(request)
        if session is None:
            self.refused += 1
            return _send(error_reply(protocol, 401, "authentication_error", _NO_TOKEN))
        refusal = session.refusal()
        if refusal is not None:
            log = session.begin(protocol, session.model_key.name)
            log.status, log.error, log.refused = 400, refusal, True
            session.end(log)
            return _send(error_reply(protocol, 400, "invalid_request_error", refusal))
        raw = await request.body()
        try:
            body: Any = json.loads(raw)
        except ValueError as exc:
            return _send(
                error_reply(
                    protocol, 400, "invalid_request_error", f"the request body is not JSON: {exc}"
                )
            )
        answering = self._answer(protocol, session, request, raw, body,
                                 stream=stream, asked_model=asked_model)  # fmt: skip
        work = asyncio.ensure_future(answering)
        closed = asyncio.ensure_future(session.closed.wait())
        await asyncio.wait({work, closed}, return_when=asyncio.FIRST_COMPLETED)
        closed.cancel()
        if not work.done():  # the row's CLI ended (killed at a limit): nobody waits for this
            work.cancel()
            await asyncio.gather(work, return_exceptions=True)
            return _send(error_reply(protocol, 499, "api_error", "the row ended"))
        if work.exception() is not None:  # a bug in the bridge: this call fails, not the server
            why = f"internal error in the model bridge: {work.exception()!r}"
            log = session.begin(protocol, session.model_key.name)
            log.status, log.error = 500, why
            session.end(log)
            return _send(error_reply(protocol, 500, "api_error", why))
        return _send(work.result())

    async def _answer(
        self,
        protocol: Protocol,
        session: BridgeSession,
        request: Request,
        raw: bytes,
        body: Any,
        *,
        stream: bool | None = None,
        asked_model: str | None = None,
    ) -> Reply:
        model = self.pool.get(session.model_key)
        passthrough = session.model_key.name.startswith("anthropic/")
        if protocol == "anthropic" and passthrough and isinstance(body, dict):
            return await forward(session, model, raw, body, headers=dict(request.headers),
                                 query=request.url.query, on_retry=self.on_retry)  # fmt: skip
        return await translate(protocol, session, model, body, on_retry=self.on_retry,
                               stream=stream, asked_model=asked_model)  # fmt: skip


_NO_TOKEN = (
    "this request carries no valid assay row credential (x-api-key or Authorization: "
    "Bearer); the bridge only answers the agents of a running row-task"
)


def _send(reply: Reply) -> Response:
    if reply.stream is not None:
        media = reply.headers.pop("content-type", None) or "text/event-stream"
        return StreamingResponse(reply.stream, status_code=reply.status, headers=reply.headers,
                                 media_type=media)  # fmt: skip
    return JSONResponse(reply.body, status_code=reply.status, headers=reply.headers)


def log_config(stream: TextIO) -> dict[str, Any]:
    """uvicorn's own logging settings (``uvicorn.config.LOGGING_CONFIG``: its formats and
    levels), each of its handlers printing to ``stream`` instead of ``sys.stderr``."""
    config = copy.deepcopy(LOGGING_CONFIG)
    for handler in config["handlers"].values():
        handler["stream"] = stream
    return config
