"""``assay``'s command line run in the test's own interpreter, as ``python -m assay`` runs it.

Starting ``python -m assay`` costs 0.7-1.0 s of CPU (imports); the same command in-process
costs a few hundredths. :func:`run_in_process` reproduces what a process would show: the
same argv parsing and exit codes (:func:`assay.cli.app.main`, ``SystemExit`` and Python's
own rules for its code), stdout and stderr as text through the console's redaction, the
environment and working directory of the call, ``sys.path[0]`` as ``-m`` sets it, Python's
default warning filters (printed to stderr), and stdin empty. Whatever process-wide state a
command changes (environment, working directory, signal handlers, logging, ``sys`` streams,
``sys.argv``, ``sys.path``, modules it imported from outside the installation) is restored
afterwards, so calls cannot leak into each other or into the test.

What only a real process shows (signals, kill -9, the console script, a crash of the
interpreter) stays with ``subprocess``; see tests/cli/test_entry.py and test_interrupt.py.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

# The signals a command may take over while it runs (a run's SIGTERM/SIGINT handlers,
# the viewer's stop signals); each is put back as it was.
_SIGNALS = tuple(
    getattr(signal, name)
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGPIPE", "SIGUSR1", "SIGUSR2")
    if hasattr(signal, name)
)
# CPython's warning filters in a process started without -W or PYTHONWARNINGS, most
# specific last (warnings.filterwarnings inserts at the front).
_PROCESS_FILTERS: tuple[tuple[str, type[Warning], str], ...] = (
    ("ignore", ResourceWarning, ""),
    ("ignore", ImportWarning, ""),
    ("ignore", PendingDeprecationWarning, ""),
    ("ignore", DeprecationWarning, ""),
    ("default", DeprecationWarning, "__main__"),
)


def run_in_process(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    replace_env: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run ``assay ARGS`` here, in ``cwd``, as ``python -m assay ARGS`` would run there.

    ``env`` adds variables to this process's environment for the call (or, with
    ``replace_env``, is the whole environment). Returns a ``CompletedProcess`` whose
    ``args`` is ``["assay", *args]``, ``returncode`` the exit code (0, 1, 2, 130, ...) and
    ``stdout``/``stderr`` the text printed, redacted as in a process.
    """
    argv = ["assay", *args]
    with _files() as (out, err):
        with _process_state(argv, cwd=cwd, env=env, replace_env=replace_env), _streams(out, err):
            code = _exit_code(_call_main)
        return subprocess.CompletedProcess(argv, code, _read(out), _read(err))


def _call_main() -> None:
    from assay.cli.app import main

    main()


def _exit_code(call: Any) -> int:
    """Run ``call`` and return the exit status Python's interpreter would give it: 0 on a
    return, ``SystemExit``'s code (None → 0, an int as is, anything else printed to stderr
    → 1), 1 after printing the traceback of an uncaught exception."""
    try:
        call()
    except SystemExit as stop:
        code = stop.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except BaseException:
        import traceback

        traceback.print_exc()
        return 1
    return 0


@contextlib.contextmanager
def _files() -> Iterator[tuple[TextIO, TextIO]]:
    """Two real files (a ``fileno``, not a terminal), as a process's pipes are."""
    with (
        tempfile.TemporaryFile("w+", encoding="utf-8") as out,
        tempfile.TemporaryFile("w+", encoding="utf-8", errors="backslashreplace") as err,
    ):
        yield out, err


def _read(stream: TextIO) -> str:
    stream.flush()
    stream.seek(0)
    return stream.read()


@contextlib.contextmanager
def _streams(out: TextIO, err: TextIO) -> Iterator[None]:
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = io.StringIO(""), out, err
    try:
        with _process_warnings():
            yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


@contextlib.contextmanager
def _process_warnings() -> Iterator[None]:
    """Python's default filters, each warning printed to (the current) ``sys.stderr``."""
    with warnings.catch_warnings():
        warnings.resetwarnings()
        for action, category, module in _PROCESS_FILTERS:
            warnings.filterwarnings(action, category=category, module=module)  # type: ignore[arg-type]

        def show(
            message: Warning | str,
            category: type[Warning],
            filename: str,
            lineno: int,
            file: TextIO | None = None,
            line: str | None = None,
        ) -> None:
            text = warnings.formatwarning(message, category, filename, lineno, line)
            (file or sys.stderr).write(text)

        warnings.showwarning = show
        yield


@contextlib.contextmanager
def _process_state(
    argv: list[str], *, cwd: Path, env: dict[str, str] | None, replace_env: bool
) -> Iterator[None]:
    environment = dict(os.environ)
    directory = os.getcwd()
    handlers = {sig: signal.getsignal(sig) for sig in _SIGNALS}
    saved_argv, saved_path = sys.argv, list(sys.path)
    modules = set(sys.modules)
    logs = _logging_state()
    if replace_env:
        os.environ.clear()
    os.environ.update(env or {})
    os.chdir(cwd)
    sys.argv = list(argv)
    sys.path.insert(0, str(Path(cwd).resolve()))  # what `python -m` puts first
    try:
        yield
    finally:
        os.chdir(directory)
        os.environ.clear()
        os.environ.update(environment)
        for sig, handler in handlers.items():
            if handler is not None and signal.getsignal(sig) is not handler:
                signal.signal(sig, handler)
        sys.argv, sys.path[:] = saved_argv, saved_path
        _forget_outside_modules(set(sys.modules) - modules)
        _restore_logging(logs)


def _forget_outside_modules(names: set[str]) -> None:
    """Unload the modules a call imported from outside Python, its site-packages, assay
    and the tests (a task's own Python files), so the next call imports its own."""
    kept = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix)}
    kept |= {Path(__file__).resolve().parents[1]}
    import assay

    kept |= {Path(p).resolve() for p in assay.__path__}
    for name in names:
        module: ModuleType | None = sys.modules.get(name)
        origin = getattr(module, "__file__", None)
        if origin is None:
            continue
        path = Path(origin).resolve()
        if not any(path.is_relative_to(root) for root in kept):
            sys.modules.pop(name, None)


def _logging_state() -> dict[str, tuple[int, list[logging.Handler], bool, bool]]:
    loggers = [logging.getLogger(), *(
        item for item in logging.Logger.manager.loggerDict.values()
        if isinstance(item, logging.Logger)
    )]  # fmt: skip
    return {
        logger.name: (logger.level, list(logger.handlers), logger.propagate, logger.disabled)
        for logger in loggers
    }


def _restore_logging(saved: dict[str, tuple[int, list[logging.Handler], bool, bool]]) -> None:
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    for logger in loggers:
        if not isinstance(logger, logging.Logger):
            continue
        level, handlers, propagate, disabled = saved.get(
            logger.name, (logging.NOTSET, [], True, False)
        )
        logger.setLevel(level)
        logger.handlers[:] = handlers
        logger.propagate, logger.disabled = propagate, disabled
