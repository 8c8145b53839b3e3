"""The local model server process: ``python -m assay.providers.llamacpp_server``.

It serves a GGUF file with xllamacpp (llama.cpp's own HTTP server, OpenAI-compatible) on
127.0.0.1 and exits when its standard input closes, so it never outlives the assay process
that started it, even one killed with SIGKILL.
"""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    """The server's command-line flags."""
    parser = argparse.ArgumentParser(prog="python -m assay.providers.llamacpp_server")
    parser.add_argument("--model", required=True, help="path to a .gguf file")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--alias", default="smollm2")
    parser.add_argument("--parallel", type=int, default=4, help="parallel slots")
    parser.add_argument("--ctx-per-slot", type=int, default=2048, help="tokens of context")
    parser.add_argument("--threads", type=int, default=0, help="0 = all cores")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Start the server, then block until stdin closes."""
    import os

    import xllamacpp as xlc

    args = build_parser().parse_args(argv)
    threads = args.threads or os.cpu_count() or 1
    params = xlc.CommonParams()
    params.model.path = args.model
    params.n_parallel = args.parallel
    params.n_ctx = args.ctx_per_slot * args.parallel
    params.port = args.port
    params.hostnames = ["127.0.0.1"]
    params.model_alias = {args.alias}
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    server = xlc.Server(params)
    sys.stdin.read()
    del server
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
