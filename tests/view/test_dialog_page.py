"""The row page of a dialog-mode row shows the dialog as a conversation: each message in
order with who said it (the task's opener, the simulated user, the agent), its tokens, how
the dialog stopped, and the simulated user's messages in the transcript."""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import httpx

import assay
from tests.helpers import write
from tests.view.browser import viewer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dialog"


def section(page: str, anchor: str) -> str:
    """The text of the page's ``<section id=anchor>``, tags removed."""
    found = re.search(rf'<section id="{anchor}">(.*?)</section>', page, re.S)
    assert found is not None, f"no section {anchor}"
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", found.group(1))).split())


def test_the_row_page_shows_the_dialog_as_a_conversation(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "dialog")
    task = tmp_path / "dialog" / "calculator.yaml"
    unopened = (
        task.read_text()
        .replace(
            'initial_prompt: "I need a calculator that can ${row.ops}."\n', "task_id: unopened\n"
        )
        .replace("task_id: calculator\n", "")
    )
    (tmp_path / "dialog" / "unopened.yaml").write_text(unopened)
    result = assay.run([str(task), str(tmp_path / "dialog" / "unopened.yaml")],
                       run_dir=str(tmp_path / "runs"))  # fmt: skip
    with viewer(str(tmp_path / "runs"), cwd=tmp_path) as url, httpx.Client(base_url=url) as http:
        base = f"/runs/{result.run_dir.name}/rows/default/calculator"
        add = http.get(f"{base}/add/00").text
        pow_ = http.get(f"{base}/pow/00").text
        opened = http.get(f"/runs/{result.run_dir.name}/rows/default/unopened/add/00").text
    assert "The simulated user opened the dialog (below)." in opened
    assert re.search(r'data-role="user"><span class="who">user \(simulated\)', opened)
    dialog = section(add, "dialog")
    assert dialog.startswith("Dialog 2 exchange(s) · stopped: stop_token · simulated user "
                             "mock/scripts/user.yaml (282 tokens in / 7 out)")  # fmt: skip
    said = re.findall(r'data-role="(\w+)"><span class="who">([^<]+)</span>', add)
    assert said == [("user", "user (initial_prompt)"), ("agent", "agent"),
                    ("user", "user (simulated)"), ("agent", "agent"),
                    ("user", "user (simulated)")]  # fmt: skip
    order = [
        dialog.index(text)
        for text in (
            "I need a calculator that can add.",
            "Should it take integers or floats?",
            "Floats, please.",
            "def add(a: float, b: float)",
            "Thanks, that is all. <<<END>>>",
        )
    ]
    assert order == sorted(order)
    assert "#2 · 15 in / 14 out" in dialog and "said the stop token" in dialog
    assert "stopped: max_turns" in section(pow_, "dialog")
    transcript = section(add, "transcript")
    assert "user (simulated) Floats, please." in transcript


def test_a_failed_simulated_user_and_a_judges_error_are_said_as_such(tmp_path: Path) -> None:
    """Found by a helper: the row page said "The agent failed" where the simulated user's
    model had; a judge's details ran into its error on one line; a row without a dataset
    was titled "None"."""
    write(tmp_path / "user.yaml", "replies:\n  - match: '.'\n    error: upstream broke\n")
    write(tmp_path / "agent.yaml", "default: 'def add(a, b): return a + b'\n")
    write(tmp_path / "judge.yaml", "default: 'I think it is fine'\n")
    write(tmp_path / "t.yaml", "task_id: solo\ndescription: d\ninitial_prompt: hello\n"
          "agent: {type: llm, model: mock/agent.yaml}\n"
          "simulation: {enabled: true, goal: g, max_turns: 3, model: mock/user.yaml}\n"
          "success_criteria:\n  - {type: response_match, expected: def add}\n")  # fmt: skip
    write(tmp_path / "j.yaml", "task_id: judged\ndescription: d\ninitial_prompt: hello\n"
          "agent: {type: llm, model: mock/agent.yaml}\n"
          "success_criteria:\n  - {type: llm_judge, model: mock/judge.yaml, prompt: Rubric,\n"
          "     retries: 0, verdict: {kind: binary}}\n")  # fmt: skip
    result = assay.run([str(tmp_path / "t.yaml"), str(tmp_path / "j.yaml")],
                       run_dir=str(tmp_path / "runs"))  # fmt: skip
    with viewer(str(tmp_path / "runs"), cwd=tmp_path) as url, httpx.Client(base_url=url) as http:
        page = http.get(f"/runs/{result.run_dir.name}/rows/default/solo/00").text
        judged = http.get(f"/runs/{result.run_dir.name}/rows/default/judged/00").text
    note = re.search(r'id="post-failure-note">([^<]*)', page)
    assert note is not None and note[1].startswith("The simulated user failed, so"), page
    assert re.search(r"<title>assay · [^<]* · solo</title>", page)
    reason = next(r for r in re.findall(r'<pre class="reason">(.*?)</pre>', judged, re.S)
                  if "judge_error" in r)  # fmt: skip
    details, _, error = html.unescape(reason).partition("\nerror: ")
    assert details and error.startswith("judge_error"), reason
