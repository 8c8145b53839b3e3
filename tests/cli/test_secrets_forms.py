"""Secrets in the forms the first redaction missed: a value quoted by repr() in a criterion's
details, a password cut by a clip, a URL password in agent.env, a -D value in a load error, a
store URL's query password. The command line in-process (one real process) and real files;
nothing of the value anywhere."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

import assay as assay_package
from tests.cli.test_secrets import assay, assay_process, files_of, latest, task_json
from tests.helpers import write

QUOTED = "Qx7\"Zp\\wo'rd!9-value-tail"  # escaped by repr, JSON, XML, HTML alike
QUOTED_PART = "9-value-tail"  # in every escaped form of the value, whole or cut
CUT = "hunter2!Correct-Horse"
URL_PW = "VariantUrlPw22x"
DASH_D = "DashDTokenValue123"


def nowhere(text_parts: tuple[str, ...], out: str, *places: Path) -> None:
    for part in text_parts:
        assert part not in out, part
        for place in places:
            for path in files_of(place) if place.is_dir() else [place]:
                assert part.encode() not in path.read_bytes(), (part, path)


def test_a_value_quoted_by_repr_or_cut_by_a_clip_leaves_nothing(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", """\
task_id: forms
description: a password with quotes and a backslash, and one cut by the stderr tail's clip
agent:
  type: command
  env_passthrough: [APP_PASSWORD, DB_PASSWORD]
  command: >-
    python3 -c "import os, sys; print(os.environ['APP_PASSWORD']);
    sys.stderr.write(os.environ['DB_PASSWORD'] + '.' + 'y' * 480 + chr(10)); sys.exit(1)"
dataset:
  rows: [{id: r1}]
initial_prompt: go
success_criteria:
  - {type: response_match, expected: NOPE}
""")  # fmt: skip
    junit = tmp_path / "junit.xml"
    env = {"APP_PASSWORD": QUOTED, "DB_PASSWORD": CUT}
    done = assay("run", "t.yaml", "--junit-xml", str(junit), cwd=tmp_path, env=env)
    run_dir = latest(tmp_path)
    result = task_json(run_dir, "default", "forms", "r1")
    assert result["final_status"] == "ERROR"
    assert "[redacted:DB_PASSWORD]" in result["agent"]["stderr_tail"]
    html = assay("report", str(run_dir), "--html", cwd=tmp_path, env=env)
    assert html.returncode == 1, html.stdout + html.stderr  # the row errored; no secret found
    assert "secret found" not in html.stdout + html.stderr
    out = done.stdout + done.stderr + html.stdout + html.stderr
    nowhere((QUOTED_PART, "Correct-Horse", "hunter2!"), out, run_dir, junit)


def test_a_url_password_in_agent_env_or_a_dash_d_value_is_redacted(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", f"""\
task_id: urls
description: a URL with credentials in agent.env, under a name that is no secret's
agent:
  type: command
  env: {{SVC_URL: "https://bob:{URL_PW}@h/x"}}
  command: 'echo "$SVC_URL $OTHER_URL"; exit 1'
dataset:
  rows: [{{id: r1}}]
initial_prompt: go
success_criteria:
  - {{type: response_match, expected: NOPE}}
""")  # fmt: skip
    other = "https://ann:DashUrlPassw0rd@h/y"
    done = assay("run", "t.yaml", "-D", f"agent.env.OTHER_URL={other}", cwd=tmp_path)
    run_dir = latest(tmp_path)
    response = (run_dir / "default/urls/r1/00/response.txt").read_text()
    assert response == ("https://bob:[redacted:SVC_URL]@h/x https://ann:[redacted:OTHER_URL]@h/y\n")
    nowhere((URL_PW, "DashUrlPassw0rd"), done.stdout + done.stderr, run_dir)


def test_a_load_error_never_prints_a_secret_dash_d_value(tmp_path: Path) -> None:
    write(tmp_path / "t.yaml", """\
task_id: llm
description: an llm agent has no env block, so the -D below is refused
agent: {type: llm, model: mock/echo}
initial_prompt: go
success_criteria:
  - {type: response_match, expected: hi}
""")  # fmt: skip
    # a real process: a -D value redacted on the stderr of `python -m assay` itself
    done = assay_process("run", "t.yaml", "-D", f"agent.env.MY_TOKEN={DASH_D}", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "set on the command line by -D agent.env.MY_TOKEN=[redacted:MY_TOKEN]" in done.stderr
    url = "https://u:TemperatureUrlPw1@h"
    bad = assay("run", "t.yaml", f"-Dagent.temperature={url}", cwd=tmp_path)
    assert bad.returncode == 2 and "agent.temperature" in bad.stderr, bad.stderr
    nowhere((DASH_D, "TemperatureUrlPw1"), done.stdout + done.stderr + bad.stdout + bad.stderr)


def test_a_store_url_password_given_as_a_query_parameter_is_never_printed(
    tmp_path: Path,
) -> None:
    url = "postgresql+psycopg://u@127.0.0.1:1/db?password=QueryStorePw77"
    done = assay("dataset", "list", "--store", url, cwd=tmp_path)
    assert done.returncode != 0
    assert "cannot open the store at postgresql+psycopg://u@127.0.0.1:1/db?password=" in (
        done.stderr
    )
    assert "[redacted:ASSAY_STORE]" in done.stderr
    nowhere(("QueryStorePw77",), done.stdout + done.stderr)


# a real process: run as another user (a file mode of 000 stops only a non-root user)
def unprivileged(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``assay ARGS`` as a user other than root (``nobody`` when the tests run as root, for a
    file mode of 000 stops only such a user); skipped where that cannot be arranged."""
    if os.geteuid() != 0:
        command = [sys.executable, "-m", "assay", *args]
        return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120,
                              env={**os.environ, **env})  # fmt: skip
    python = shutil.which(f"python{sys.version_info.major}.{sys.version_info.minor}",
                          path="/usr/local/bin:/usr/bin")  # fmt: skip
    if python is None or shutil.which("setpriv") is None:
        pytest.skip("no interpreter the user nobody can run, or no setpriv")
    paths = [str(Path(assay_package.__file__).parents[1]), sysconfig.get_paths()["purelib"]]
    drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    return subprocess.run([*drop, python, "-m", "assay", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120,
                          env={"PATH": os.environ["PATH"], "HOME": str(cwd),
                               "PYTHONPATH": os.pathsep.join(paths), **env})  # fmt: skip


def test_files_a_row_made_unreadable_are_redacted_and_the_scan_reports_what_it_cannot_read(
    tmp_path: Path,
) -> None:
    home = Path(tempfile.mkdtemp(prefix="assay-unreadable-"))  # nobody cannot enter tmp_path
    try:
        home.chmod(0o777)
        write(home / "t.yaml", """\
task_id: hide
description: the agent hides what it was given behind mode 000
agent:
  type: command
  env_passthrough: [MY_TOKEN]
  command: >-
    echo $MY_TOKEN > hidden.txt; chmod 000 hidden.txt; mkdir d; echo $MY_TOKEN > d/f;
    chmod 000 d; echo ok
dataset:
  rows: [{id: r1}]
initial_prompt: go
success_criteria:
  - {type: response_match, expected: ok}
""")  # fmt: skip
        env = {"MY_TOKEN": DASH_D}
        done = unprivileged("run", "t.yaml", "--keep-sandboxes", cwd=home, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        run_dir = latest(home)
        kept = run_dir / "default/hide/r1/00/sandbox"
        assert (kept / "hidden.txt").read_text() == "[redacted:MY_TOKEN]\n"
        assert (kept / "d/f").read_text() == "[redacted:MY_TOKEN]\n"
        planted = run_dir / "default/hide/r1/00/notes.txt"
        planted.write_text(f"token {DASH_D}\n")
        os.chown(planted, 65534, 65534) if os.geteuid() == 0 else None
        planted.chmod(0o000)
        check = unprivileged("report", "--check-secrets", str(run_dir), cwd=home, env=env)
        assert check.returncode == 1, check.stdout + check.stderr
        assert (
            "default/hide/r1/00/notes.txt: a file the scan cannot read (Permission denied): "
            "make it readable, or remove it"
        ) in check.stdout + check.stderr
    finally:
        shutil.rmtree(home, ignore_errors=True)
