"""``assay judge add | list | show | versions | calibrate`` as a user types them: what they
print, and every error with its message and exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.test_run import assay
from tests.helpers import write

JUDGE = """\
model: mock/script.yaml
rubric: "Is ${row.q} answered well?"
"""
SCRIPT = 'default: \'{"reason": "fine", "verdict": true}\'\n'


def test_judge_commands_print_versions_and_hashes(tmp_path: Path) -> None:
    write(tmp_path / "script.yaml", SCRIPT)
    write(tmp_path / "helpful.yaml", JUDGE)
    empty = assay("judge", "list", cwd=tmp_path)
    assert empty.stdout.strip() == "no judges in the store (assay judge add NAME FILE)"
    added = assay("judge", "add", "helpful", "helpful.yaml", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith("added judge helpful@1 · sha256 ")
    write(tmp_path / "helpful.yaml", JUDGE.replace("well", "truthfully"))
    second = assay("judge", "add", "helpful", "helpful.yaml", cwd=tmp_path)
    assert second.stdout.startswith("added judge helpful@2 · sha256 ")
    same = assay("judge", "add", "helpful", "helpful.yaml", cwd=tmp_path)
    assert same.stdout.startswith("unchanged (same content hash as the latest version): judge "
                                  "helpful@2")  # fmt: skip
    versions = json.loads(assay("judge", "versions", "helpful", "--json", cwd=tmp_path).stdout)
    assert [v["version"] for v in versions] == [1, 2]
    assert versions[0]["content_hash"] != versions[1]["content_hash"]
    listed = json.loads(assay("judge", "list", "--json", cwd=tmp_path).stdout)
    assert [(j["name"], j["version"]) for j in listed] == [("helpful", 2)]
    shown = assay("judge", "show", "helpful@1", cwd=tmp_path).stdout
    assert "name: helpful\nversion: 1\n" in shown and "rubric: Is ${row.q} answered well?" in shown
    table = assay("judge", "versions", "helpful", cwd=tmp_path).stdout
    assert "helpful.yaml" in table


def test_judge_command_errors_exit_2_with_their_message(tmp_path: Path) -> None:
    write(tmp_path / "bad.yaml", JUDGE + "rubrik: x\n")
    no_store = assay("judge", "show", "helpful", cwd=tmp_path)
    assert no_store.returncode == 2 and "error: no store at sqlite:///" in no_store.stderr
    assert "hint: give --store URL or $ASSAY_STORE, or add the judge with assay judge add" in (
        no_store.stderr
    )
    assay("judge", "list", cwd=tmp_path)  # makes the store
    cases = [
        (("judge", "add", "h", "missing.yaml"), "missing.yaml: judge file not found"),
        (("judge", "add", "h", "bad.yaml"),
         "bad.yaml:3: rubrik: unknown field 'rubrik'\n  hint: did you mean 'rubric'?"),
        (("judge", "show", "helpfull"), "no judge named 'helpfull' in the store"),
        (("judge", "versions", "nobody"), "no judge named 'nobody' in the store"),
        (("judge", "show", "a b"), "judge 'a b' is neither a judge file (judges/x.yaml) nor a "
                                   "store judge (name or name@N)"),
        (("judge", "calibrate", "bad.yaml", "--dataset", "d", "--label", "l"),
         "unknown field 'rubrik'"),
    ]  # fmt: skip
    for args, message in cases:
        done = assay(*args, cwd=tmp_path)
        assert done.returncode == 2, (args, done.stdout)
        assert message in done.stderr, (args, done.stderr)


def test_calibrate_names_a_missing_dataset(tmp_path: Path) -> None:
    write(tmp_path / "script.yaml", SCRIPT)
    write(tmp_path / "helpful.yaml", JUDGE)
    write(tmp_path / "rows.jsonl", '{"id": "a", "q": "x", "out": "y", "human": "yes"}\n')
    assert assay("dataset", "import", "labels", "rows.jsonl", cwd=tmp_path).returncode == 0
    done = assay("judge", "calibrate", "helpful.yaml", "--dataset", "labelz", "--label", "human",
                 "--output-field", "out", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2 and "no dataset named 'labelz'" in done.stderr
    done = assay("judge", "calibrate", "helpful.yaml", "--dataset", "labels@7", "--label",
                 "human", "--output-field", "out", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2 and "dataset 'labels' has no version 7" in done.stderr
    done = assay("judge", "calibrate", "helpful.yaml", "--dataset", "labels", "--label",
                 "human", "--output-field", "out", "-o", "c", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "calibrated judge helpful on labels@1 (label: human): 1 row(s) compared" in done.stdout
    assert done.stdout.strip().endswith("report: c/calibration.md")
