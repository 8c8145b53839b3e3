#!/usr/bin/env bash
# Install the anchors the benchmarks compare against, into bench/work/ (not committed):
#  - Coder Eval 0.12.16, which needs Python 3.13 (pyenv has one on this machine), with typer
#    pinned (newer typer breaks its CLI at import);
#  - Inspect AI (and openai) in its own virtualenv.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p work
if [ ! -x work/coder-eval-venv/bin/coder-eval ]; then
  py313="$(pyenv root 2>/dev/null)/versions/3.13.0/bin/python"
  [ -x "$py313" ] || py313="$(command -v python3.13)"
  "$py313" -m venv work/coder-eval-venv
  work/coder-eval-venv/bin/pip install --quiet coder-eval==0.12.16 typer==0.24.1
fi
if [ ! -x work/inspect-venv/bin/inspect ]; then
  python3 -m venv work/inspect-venv
  work/inspect-venv/bin/pip install --quiet inspect-ai openai
fi
echo "anchors ready in bench/work/"
