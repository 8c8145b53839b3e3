"""``assay dataset …`` end to end through real ``python -m assay`` processes, on both backends."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from assay.store import open_store
from tests.cli.inproc import run_in_process
from tests.helpers import write
from tests.store.conftest import FIXTURES

SST2 = FIXTURES / "sst2_slice.jsonl"


def run(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``assay dataset ARGS`` in-process (tests/cli/inproc.py), ``ASSAY_STORE`` unset."""
    environment = {k: v for k, v in os.environ.items() if k != "ASSAY_STORE"}
    return run_in_process(
        "dataset", *args, cwd=cwd, env={**environment, **(env or {})}, replace_env=True
    )


class Cli:
    """``assay dataset`` against one store, in one folder."""

    def __init__(self, cwd: Path, url: str) -> None:
        self.cwd = cwd
        self.url = url

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run(self.cwd, *args, "--store", self.url)

    def ok(self, *args: str) -> str:
        done = self(*args)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args, "--json"))

    def refused(self, *args: str) -> str:
        """Run a command that must exit 2; return its message (stderr on one line)."""
        done = self(*args)
        assert done.returncode == 2, (done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
        assert done.stderr.startswith("error: ")
        return done.stderr


@pytest.fixture
def cli(tmp_path: Path, store_url: str) -> Cli:
    return Cli(tmp_path, store_url)


def test_dataset_verbs_end_to_end(cli: Cli, tmp_path: Path) -> None:
    write(tmp_path / "schema.json", json.dumps(
        {"type": "object", "properties": {"text": {"type": "string"}}}))  # fmt: skip
    write(tmp_path / "schema.yaml", "fields:\n  text: string\n  label: string\n")
    lines = SST2.read_text(encoding="utf-8").splitlines()
    write(tmp_path / "part1.jsonl", "\n".join(lines[:20]) + "\n")
    rows = [json.loads(line) for line in lines[20:]]
    write(tmp_path / "part2.csv", "text,label\n" + "".join(
        f'"{r["text"]}",{r["label"]}\n' for r in rows))  # fmt: skip
    out = cli.ok("create", "sst2", "--schema", "schema.json")
    assert out.startswith("created dataset sst2 (fields: text string; id field id)")
    cli.ok("schema", "sst2", "--set", "schema.yaml")
    assert cli.ok("schema", "sst2") == "fields:\n  text: string\n  label: string\n"
    out = cli.ok("add", "sst2", "part1.jsonl", "part2.csv")
    assert out.startswith("added 25 example(s): sst2@1 · 25 example(s) · hash ")
    [version] = cli.json("versions", "sst2")
    assert (version["number"], version["added"], version["item_count"]) == (1, 25, 25)
    assert version["origin"] == "part1.jsonl, part2.csv" and version["operation"] == "add"
    shown = cli.json("show", "sst2@1", "--limit", "30")
    assert [e["data"] for e in shown["examples"]] == [json.loads(x) for x in lines]
    assert shown["item_count"] == 25 and shown["content_hash"] == version["content_hash"]
    ids = [e["example_id"] for e in shown["examples"]]
    table = cli.ok("show", "sst2", "--limit", "2")
    assert "one long string of cliches ." in table and "… 23 more (--limit)" in table
    out = cli.ok("remove", "sst2", ids[0], ids[3])
    assert out.splitlines()[0] == f"removed 2 example(s) from sst2: {ids[0]}, {ids[3]}"
    assert out.splitlines()[1].startswith("version created: sst2@2 · 23 example(s) · hash ")
    write(tmp_path / "ids.txt", f"{ids[5]}\r\n\n{ids[6]}\n")
    assert cli.ok("remove", "sst2", "--ids-from", "ids.txt").startswith(
        f"removed 2 example(s) from sst2: {ids[5]}, {ids[6]}"
    )
    listed = cli.json("list")
    assert [(d["name"], d["current_version"], d["item_count"]) for d in listed] == [("sst2", 3, 21)]
    assert "text string, label string" in cli.ok("list")
    assert "remove" in cli.ok("versions", "sst2")
    exported = cli.ok("export", "sst2@1", "--format", "jsonl").splitlines()
    assert exported[0] == f'{{"id": "{ids[0]}", {lines[0][1:]}'
    assert len(exported) == 25
    dashed = cli.ok("export", "sst2@1", "--format", "jsonl", "-o", "-").splitlines()
    assert dashed == exported and not (tmp_path / "-").exists()  # -o -: stdout, as in Unix
    assert cli.ok("export", "sst2@1", "-o", "v1.csv").startswith("wrote 25 example(s) of sst2@1")
    cli.ok("export", "sst2@1", "--format", "parquet", "-o", "v1.parquet")
    out = cli.ok("import", "copy", "v1.parquet")
    assert out.startswith("imported 25 example(s) (fields: text string, label string): copy@1")
    assert cli.json("versions", "copy")[0]["content_hash"] == version["content_hash"]
    cli.ok("import", "fromcsv", "v1.csv", "--schema", "schema.yaml")
    assert cli.json("versions", "fromcsv")[0]["content_hash"] == version["content_hash"]
    locked = cli.refused("schema", "sst2", "--set", "schema.json")
    assert "the schema of dataset 'sst2' is locked: examples were added in version 1" in locked


def test_bad_input_exits_2_with_the_message(cli: Cli, tmp_path: Path) -> None:
    write(tmp_path / "s.yaml", "fields: {n: number, t: string}\n")
    write(tmp_path / "bad_schema.json", '{"properties": {"a": {"type": "string"}}}')
    write(tmp_path / "rows.csv", "id,n,t\na,1,x\nb,abc,y\n")
    write(tmp_path / "uneven.jsonl", '{"a": 1, "b": 2}\n{"a": 1, "c": 2}\n')
    write(tmp_path / "broken.jsonl", '{"id": "a", "n": 1, "t": "x"}\n{"id": "b", "n": }\n')
    both = cli.refused("create", "d", "--schema", "s.yaml", "--infer-from", "rows.csv")
    assert "give exactly one of --schema FILE and --infer-from FILE" in both
    assert "give exactly one of" in cli.refused("create", "d")
    assert 'Dataset schema must declare top-level type "object".' in cli.refused(
        "create", "d", "--schema", "bad_schema.json"
    )
    assert (
        "uneven.jsonl:2: All examples must share the same set of fields (dataset schemas "
        "require all declared properties). fields present in earlier examples but missing "
        "here: ['b']; fields present here but missing in earlier examples: ['c']."
    ) in cli.refused("create", "d", "--infer-from", "uneven.jsonl")
    cli.ok("create", "d", "--schema", "s.yaml")
    assert cli.refused("add", "d", "rows.csv") == (
        "error: rows.csv:3: example 'b', field 'n': expected a number, got the text \"abc\"\n"
    )
    assert cli.refused("add", "d", "broken.jsonl").startswith(
        "error: Dataset broken.jsonl: invalid JSON on line 2: Expecting value"
    )
    assert "Dataset file not found: nothere.jsonl" in cli.refused("add", "d", "nothere.jsonl")
    assert "name it .jsonl, .csv or .parquet" in cli.refused("add", "d", "s.yaml")
    assert cli.refused("add", "dd", "rows.csv") == (
        "error: no dataset named 'dd' in the store\n  hint: did you mean 'd'?\n"
    )
    assert "dataset 'd' has no versions yet" in cli.refused("show", "d")
    write(tmp_path / "ok.csv", "id,n,t\na,1,x\n")
    cli.ok("add", "d", "ok.csv")
    assert "dataset 'd' has no version 4; its only version is 1" in cli.refused("show", "d@4")
    assert "invalid dataset reference 'd@x'" in cli.refused("export", "d@x")
    assert "Parquet is binary: give the output file with -o FILE" in cli.refused(
        "export", "d", "--format", "parquet"
    )
    assert "unknown format 'xml'" in cli.refused("export", "d", "--format", "xml")
    assert cli.refused("remove", "d", "zz") == (
        "error: dataset 'd' has no example 'zz' in its latest version (1); nothing was removed\n"
        "  hint: see the ids with: assay dataset show d\n"
    )
    assert "give the example ids to remove" in cli.refused("remove", "d")
    again = cli.ok("add", "d", "ok.csv")  # the same content again: a no-op that says so
    assert "nothing added: all 1 example(s) are already in d@1" in again
    write(tmp_path / "other.csv", "id,n,t\na,2,x\n")
    assert "already a member of dataset 'd' with other content" in cli.refused(
        "add", "d", "other.csv"
    )
    assert "a dataset named 'd' already exists" in cli.refused("import", "d", "ok.csv")
    assert cli.json("versions", "d")[-1]["number"] == 1  # nothing above changed the dataset


def test_trace_backed_rows_through_the_cli(cli: Cli, tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "traces", tmp_path / "runs")
    write(tmp_path / "s.yaml", "type: object\nproperties:\n  question: {type: string}\n"
          "  run: {type: trace}\n")  # fmt: skip
    write(tmp_path / "rows.jsonl", json.dumps({"id": "q1", "question": "refund?",
          "run": "runs/answer.otlp.json"}) + "\n")  # fmt: skip
    cli.ok("create", "graded", "--schema", "s.yaml")
    cli.ok("add", "graded", "rows.jsonl")
    [example] = cli.json("show", "graded")["examples"]
    assert example["data"]["run"] == "5b8efff798038103d269b633813fc60c"
    [inlined] = cli.json("show", "graded", "--inline-traces")["examples"]
    original = json.loads((tmp_path / "runs" / "answer.otlp.json").read_text(encoding="utf-8"))
    assert inlined["data"]["run"] == original
    cli.ok("export", "graded", "--inline-traces", "-o", "inlined.jsonl")
    cli.ok("import", "again", "inlined.jsonl", "--schema", "s.yaml")
    assert (
        cli.json("versions", "again")[0]["content_hash"]
        == (cli.json("versions", "graded")[0]["content_hash"])
    )


def test_store_url_from_the_environment_and_the_default(tmp_path: Path) -> None:
    write(tmp_path / "s.yaml", "fields: {t: string}\n")
    assert run(tmp_path, "create", "here", "--schema", "s.yaml").returncode == 0
    assert (tmp_path / ".assay" / "store.db").is_file()
    other = tmp_path / "team" / "store.db"
    env = {"ASSAY_STORE": f"sqlite:///{other}"}
    assert run(tmp_path, "create", "there", "--schema", "s.yaml", env=env).returncode == 0
    listed = run(tmp_path, "list", "--json", env=env)
    assert [d["name"] for d in json.loads(listed.stdout)] == ["there"]
    with open_store(f"sqlite:///{tmp_path / '.assay' / 'store.db'}") as store:
        assert [d.name for d in store.datasets()] == ["here"]
    bad = run(tmp_path, "list", "--store", "postgresql://u:secret@127.0.0.1:9/x")
    assert bad.returncode == 2 and "cannot open the store at" in bad.stderr
    assert "secret" not in bad.stderr


def test_diff_exits_1_with_exit_code_when_versions_differ(cli: Cli, tmp_path: Path) -> None:
    """Issue 26 item 7: the exit of `dataset diff` is documented and chosen: 0 by default,
    and with --exit-code 1 when the versions differ, as diff."""
    write(tmp_path / "a.jsonl", '{"id": "a", "t": "x"}\n')
    write(tmp_path / "b.jsonl", '{"id": "b", "t": "y"}\n')
    assert cli("import", "d", str(tmp_path / "a.jsonl")).returncode == 0
    assert cli("add", "d", str(tmp_path / "b.jsonl")).returncode == 0
    assert cli("diff", "d@1", "d@2").returncode == 0
    differ = cli("diff", "d@1", "d@2", "--exit-code")
    assert differ.returncode == 1 and "1 added" in differ.stdout
    assert cli("diff", "d@1", "d@2", "--exit-code", "--json").returncode == 1
    assert cli("diff", "d@1", "d@1", "--exit-code").returncode == 0
    shown = cli("diff", "--help")
    assert "--exit-code" in shown.stdout and "1 when they differ" in " ".join(shown.stdout.split())


def test_ids_a_task_cannot_use_are_warned_of_at_import_with_the_fix(cli: Cli) -> None:
    """CosmosQA's ids hold '##': the store took them and every task then refused the dataset,
    with no way out named."""
    write(cli.cwd / "ids.csv", "id,text\n3BFF##Blog_56156##q1_a1,hello\nplain,world\n")
    done = cli("import", "cq", "ids.csv")
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("warning: 1 example id(s) of cq@1 cannot name a row-task")
    assert "'3BFF##Blog_56156##q1_a1' must match" in done.stderr and "--id-field" in done.stderr
    write(cli.cwd / "more.csv", "id,text\nfine,ok\n")
    assert "1 example id(s) of cq@2" in cli("add", "cq", "more.csv").stderr
    task = write(
        cli.cwd / "cq.yaml",
        """\
task_id: cq
description: d
agent: {type: llm, model: mock/echo}
dataset: {store: cq}
initial_prompt: "${row.text}"
success_criteria: [{type: response_match, expected: x, match: contains}]
""",
    )
    planned = run_in_process("plan", str(task), "--store", cli.url, cwd=cli.cwd)
    assert planned.returncode == 2
    assert "hint: the ids are store dataset cq's example ids: set dataset.id_field" in (
        planned.stderr)  # fmt: skip
    clean = cli("import", "ok", "more.csv")
    assert clean.returncode == 0 and clean.stderr == ""
