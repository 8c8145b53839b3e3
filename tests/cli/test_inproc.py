"""The in-process command line (tests/cli/inproc.py) shows what a process shows and leaves
nothing behind: each case is compared with a real ``python -m assay`` where it can be."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.inproc import run_in_process
from tests.helpers import write

TASK = "task_id: t1\ndescription: d\nagent: {type: llm, model: mock/echo}\n"


def real(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The ``assay`` console script in a real process (the reference the helper matches)."""
    script = Path(sys.executable).with_name("assay")
    return subprocess.run([str(script), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})  # fmt: skip


@pytest.mark.parametrize(
    ("args", "body"),
    [
        (("--help",), ""),  # exit 0, usage on stdout
        (("run",), ""),  # click's usage error: exit 2 on stderr
        (("no-such-command",), ""),  # exit 2
        (("plan", "t.yaml"), "dataset: {rows: [{id: a}]}\ninitial_prompt: hi\n"),  # exit 0
        (("plan", "t.yaml"), "initial_prompt: [unclosed\n"),  # a UserError: exit 2
        (
            ("run", "t.yaml"),
            "dataset: {rows: [{id: a}]}\ninitial_prompt: hi\n"
            "success_criteria: [{type: exact_match, expected: nope}]\n",
        ),  # a failing row: exit 1
    ],
)
def test_exit_code_and_output_match_a_real_process(
    tmp_path: Path, args: tuple[str, ...], body: str
) -> None:
    # (real process kept: it is the reference the in-process call is compared with)
    if body:
        write(tmp_path / "a" / "t.yaml", TASK + body)
        write(tmp_path / "b" / "t.yaml", TASK + body)
    (tmp_path / "a").mkdir(exist_ok=True)
    (tmp_path / "b").mkdir(exist_ok=True)
    here = run_in_process(*args, cwd=tmp_path / "a")
    there = real(*args, cwd=tmp_path / "b")
    assert here.returncode == there.returncode, (here.stderr, there.stderr)
    assert here.stdout == there.stdout
    assert here.stderr.replace(str(tmp_path / "a"), "X") == there.stderr.replace(
        str(tmp_path / "b"), "X"
    )


def test_a_secret_of_the_environment_and_of_the_command_line_is_redacted(tmp_path: Path) -> None:
    key = "sk-proj-InPr0cessKey7Abc4Def9Ghi2Jkl"
    password = "St0rePassw0rdInProc61"
    from_env = run_in_process("dataset", "list", "--store", f"nourl-{key}", cwd=tmp_path,
                              env={"OPENAI_API_KEY": key})  # fmt: skip
    assert from_env.returncode == 2
    assert "invalid store URL 'nourl-[redacted:OPENAI_API_KEY]'" in from_env.stderr
    url = f"postgresql+psycopg://u@127.0.0.1:1/db?password={password}"
    from_argv = run_in_process("dataset", "list", "--store", url, cwd=tmp_path)
    assert from_argv.returncode == 2 and "cannot open the store" in from_argv.stderr
    assert "db?password=[redacted:ASSAY_STORE]" in from_argv.stderr
    for done in (from_env, from_argv):
        assert key not in done.stdout + done.stderr and password not in done.stderr


def test_process_state_is_restored_after_each_call(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", TASK + "dataset: {rows: [{id: a}]}\ninitial_prompt: hi\n")
    before = (dict(os.environ), os.getcwd(), list(sys.argv), list(sys.path), sys.stdout,
              sys.stderr, sys.stdin, signal.getsignal(signal.SIGINT),
              signal.getsignal(signal.SIGTERM), logging.getLogger().handlers[:],
              logging.getLogger().level)  # fmt: skip
    for args in (("run", "t.yaml"), ("plan", "t.yaml"), ("run",), ("--help",)):
        run_in_process(*args, cwd=tmp_path, env={"ASSAY_INPROC_PROBE": "1"})
        after = (dict(os.environ), os.getcwd(), list(sys.argv), list(sys.path), sys.stdout,
                 sys.stderr, sys.stdin, signal.getsignal(signal.SIGINT),
                 signal.getsignal(signal.SIGTERM), logging.getLogger().handlers[:],
                 logging.getLogger().level)  # fmt: skip
        assert after == before, args


def test_the_environment_given_is_seen_and_replaced_env_hides_the_rest(tmp_path: Path) -> None:
    os.environ["ASSAY_STORE"] = "outer-store-url"
    try:
        given = run_in_process("dataset", "list", cwd=tmp_path,
                               env={"ASSAY_STORE": "given-store-url"})  # fmt: skip
        assert given.returncode == 2 and "'given-store-url'" in given.stderr, given.stderr
        outer = run_in_process("dataset", "list", cwd=tmp_path)
        assert "'outer-store-url'" in outer.stderr, outer.stderr
        alone = run_in_process("dataset", "list", cwd=tmp_path, replace_env=True,
                               env={"HOME": str(tmp_path), "PATH": os.environ["PATH"]})  # fmt: skip
        assert "outer-store-url" not in alone.stderr, alone.stderr
        assert os.environ["ASSAY_STORE"] == "outer-store-url"
    finally:
        del os.environ["ASSAY_STORE"]


def test_a_task_module_in_the_working_folder_is_imported_afresh_each_call(tmp_path: Path) -> None:
    # `python -m` puts the working folder first on sys.path; a second call in another folder
    # must not reuse the first folder's module of the same name
    import importlib

    for value in ("first", "second"):
        folder = write(tmp_path / value / "inproc_probe_mod.py", f"VALUE = {value!r}\n").parent

        def probe() -> None:
            import inproc_probe_mod  # type: ignore[import-not-found]

            print(inproc_probe_mod.VALUE)

        from tests.cli import inproc

        with inproc._files() as (out, err):
            with inproc._process_state(["assay"], cwd=folder, env=None, replace_env=False), \
                    inproc._streams(out, err):  # fmt: skip
                code = inproc._exit_code(probe)
            assert (code, inproc._read(out).strip()) == (0, value)
        assert "inproc_probe_mod" not in sys.modules
    importlib.invalidate_caches()


@pytest.mark.parametrize(
    ("raised", "code", "printed"),
    [
        (SystemExit(None), 0, ""),
        (SystemExit(3), 3, ""),
        (SystemExit("bad thing"), 1, "bad thing\n"),
        (RuntimeError("boom"), 1, "RuntimeError: boom"),
    ],
)
def test_exit_codes_follow_the_interpreters_rules(
    tmp_path: Path, raised: BaseException, code: int, printed: str
) -> None:
    from tests.cli import inproc

    def fail() -> None:
        raise raised

    with inproc._files() as (out, err):
        with inproc._process_state(["assay"], cwd=tmp_path, env=None, replace_env=False), \
                inproc._streams(out, err):  # fmt: skip
            got = inproc._exit_code(fail)
        text = inproc._read(err)
    assert got == code
    assert printed in text if printed else text == ""
