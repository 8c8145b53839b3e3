"""Content first (issue 32, item 1), against real runs of ``assay run``: a diff shows each
metric's paired difference with the interval ``assay compare`` computes (its own output is
the oracle), and A's and B's outputs side by side with a word diff; the rows table shows
prompt and response (clipped, whole on expand), the columns chosen in the URL, and what a
search matched, highlighted."""

from __future__ import annotations

import html
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from assay.view.app import build_app
from assay.view.diff import text_diff
from assay.view.workspace import Workspace
from tests.agents.coding import run_assay
from tests.view.test_diff import ROWS, run
from tests.view.test_faults import SCRIPT_A, SCRIPT_B


def text_of(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("content")
    return run(folder, "a", SCRIPT_A, ROWS), run(folder, "b", SCRIPT_B, ROWS)


@pytest.fixture
def client(two_runs: tuple[Path, Path], tmp_path: Path) -> Iterator[TestClient]:
    ws = Workspace([two_runs[0].parent], scratch=tmp_path)
    with TestClient(build_app(ws, hosts=["testserver"])) as http:
        yield http


def settled_diff(client: TestClient, **params: str) -> str:
    """The diff page once its paired differences are computed (they are worked out in the
    background; the page says so meanwhile)."""
    for _ in range(600):
        page = client.get("/diff", params={"a": "a", "b": "b", **params}).text
        if 'id="paired-pending"' not in page:
            return page
        assert 'data-progress="/api/diff/progress?a=a&amp;b=b"' in page
        time.sleep(0.1)
    raise AssertionError("the paired differences never appeared")


def test_each_metric_difference_is_the_one_assay_compare_computes(
    client: TestClient, two_runs: tuple[Path, Path], tmp_path: Path
) -> None:
    page = settled_diff(client)
    done = run_assay("compare", str(two_runs[0]), str(two_runs[1]), "-o", str(tmp_path / "out"),
                     cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "compare.json").read_text())
    shown = 0
    for comparison in report["comparisons"]:
        table = page[page.index(f'data-suite="{comparison["suite_id"]}"') :]
        table = table[: table.index("</table>")]
        for name, d in comparison["metrics"].items():
            line = re.search(rf'<tr data-metric="{re.escape(name)}">(.*?)</tr>', table, re.S)
            assert line is not None, name
            cells = text_of(line.group(1))
            assert f"{d['difference']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]" in cells
            assert f"{d['a']:.3f} {d['b']:.3f}" in cells
            shown += 1
    assert shown >= 2  # accuracy and macro F1 at least


def test_a_diff_shows_both_outputs_and_their_word_diff(client: TestClient) -> None:
    page = settled_diff(client, change="became_fail")
    block = page[page.index('data-outputs="m2"') :]
    block = block[: block.index("</details>")]
    assert re.search(r'class="text output-a">positive</pre>', block)
    assert re.search(r'class="text output-b">negative</pre>', block)
    assert "<del>positive</del><ins>negative</ins>" in block


@pytest.mark.parametrize(("a", "b", "pieces"), [
    ("the cat sat", "the cat sat", [("same", "the cat sat")]),
    ("the cat sat", "the dog sat", [("same", "the "), ("removed", "cat"), ("added", "dog"),
                                    ("same", " sat")]),
    ("yes", "", [("removed", "yes")]),
    ("", "<b>new</b>", [("added", "<b>new</b>")]),
])  # fmt: skip
def test_text_diff_pieces(a: str, b: str, pieces: list[tuple[str, str]]) -> None:
    assert text_diff(a, b) == pieces


def test_a_diff_of_long_texts_shows_them_without_a_word_diff() -> None:
    assert text_diff("word " * 3000, "other " * 3000) == []


LONG = "A calm opening sentence. " * 12 + "Here is the needle we look for." + " tail" * 20
ROWS_SCRIPT = (
    "replies:\n"
    f"  - {{match: 'long', reply: {json.dumps(LONG)}}}\n"
    "  - {match: 'tag', reply: '<script>alert(1)</script> NEEDLE too'}\n"
    "default: short answer\n"
)  # fmt: skip


@pytest.fixture(scope="module")
def texts_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("texts")
    rows = [{"id": "t1", "text": "long", "expected": "x"},
            {"id": "t2", "text": "tag", "expected": "x"},
            {"id": "t3", "text": "plain", "expected": "x"}]  # fmt: skip
    (folder / "rows.yaml").write_text(ROWS_SCRIPT)
    (folder / "task.yaml").write_text(
        "task_id: texts\ndescription: d\nagent: {type: llm, model: mock/rows.yaml}\n"
        f"dataset: {{rows: {json.dumps(rows)}}}\ninitial_prompt: 'Write about ${{row.text}}'\n"
        "success_criteria:\n  - {type: response_match, expected: short answer}\n")  # fmt: skip
    done = run_assay("run", "task.yaml", "--run-dir", "runs", "-q", cwd=folder)
    assert done.returncode == 1, done.stderr
    return (folder / "runs" / "latest").resolve()


@pytest.fixture
def rows_client(texts_run: Path, tmp_path: Path) -> Iterator[TestClient]:
    ws = Workspace([texts_run], scratch=tmp_path)
    ws.index(ws.runs()[0]).wait()  # every row indexed before the first page
    with TestClient(build_app(ws, hosts=["testserver"])) as http:
        yield http


def cells(page: str, kind: str) -> dict[str, str]:
    """Row id → the raw HTML of its ``kind`` cell."""
    found = {}
    for row_id, body in re.findall(r'<tr data-status="\w+" data-row="(\w+)">(.*?)</tr>', page,
                                   re.S):  # fmt: skip
        cell = re.search(rf'<td class="text {kind}">(.*?)</td>', body, re.S)
        if cell is not None:
            found[row_id] = cell.group(1)
    return found


def test_rows_show_prompt_and_response_clipped_and_whole_on_expand(
    rows_client: TestClient, texts_run: Path
) -> None:
    page = rows_client.get(f"/runs/{texts_run.name}/rows").text
    prompts, responses = cells(page, "prompt"), cells(page, "response")
    assert {k: text_of(v) for k, v in prompts.items()} == {
        "t1": "Write about long",
        "t2": "Write about tag",
        "t3": "Write about plain",
    }
    assert text_of(responses["t3"]) == "short answer"
    long = responses["t1"]
    summary = html.unescape(re.search(r"<summary>(.*?)</summary>", long, re.S).group(1))
    assert summary == LONG[:160] + "…"
    whole = html.unescape(re.search(r'<pre class="text">(.*?)</pre>', long, re.S).group(1))
    assert whole == LONG
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in responses["t2"]
    assert "<script>alert" not in page


def test_a_search_shows_and_highlights_what_matched(
    rows_client: TestClient, texts_run: Path
) -> None:
    page = rows_client.get(f"/runs/{texts_run.name}/rows", params={"q": "Needle"}).text
    responses = cells(page, "response")
    assert sorted(responses) == ["t1", "t2"]
    summary = re.search(r"<summary>(.*?)</summary>", responses["t1"], re.S).group(1)
    assert summary.startswith("…") and "<mark>needle</mark>" in summary  # the match, shown
    assert "&lt;script&gt;alert(1)&lt;/script&gt; <mark>NEEDLE</mark> too" in responses["t2"]
    page = rows_client.get(f"/runs/{texts_run.name}/rows", params={"q": "t2"}).text
    assert "<mark>t2</mark></a>" in page


def test_the_columns_chosen_are_kept_in_the_url(rows_client: TestClient, texts_run: Path) -> None:
    base = f"/runs/{texts_run.name}/rows"
    page = rows_client.get(base, params=[("col", "prompt"), ("col", "score"), ("size", "2")]).text
    header = re.search(r"<thead>(.*?)</thead>", page, re.S).group(1)
    assert re.findall(r"<th>(.*?)</th>", re.sub(r"<a [^>]*>|</a>", "", header)) == [
        "row ▲", "score", "prompt"]  # fmt: skip
    assert 'data-columns="score,prompt"' in page
    assert 'rel="next" href="?page=2&amp;size=2&amp;cols=score%2Cprompt"' in page
    assert cells(page, "response") == {}
    shared = rows_client.get(base, params={"cols": "score,prompt", "page": "2", "size": "2"})
    assert 'data-columns="score,prompt"' in shared.text
    assert list(cells(shared.text, "prompt")) == ["t3"]
    unknown = rows_client.get(base, params={"cols": "nonsense"}).text
    assert 'data-columns="suite,variant,rep,status,score,labels,error,prompt,response' in unknown


def test_the_diff_pages_command_line_names_the_variants_it_compares(tmp_path: Path) -> None:
    """The command the page prints runs as it is (it left out --variant-b, which a run of
    several variants needs: the command failed)."""
    from tests.view.generate import make_run

    run_dir = make_run(12, tmp_path / "runs", variants=("zero-shot", "few-shot"))
    (tmp_path / "scratch").mkdir()
    ws = Workspace([run_dir.parent], scratch=tmp_path / "scratch")
    with TestClient(build_app(ws, hosts=["testserver"])) as http:
        for _ in range(600):
            page = http.get("/diff", params={"a": run_dir.name, "b": run_dir.name,
                                             "va": "zero-shot", "vb": "few-shot"}).text  # fmt: skip
            if 'id="paired-pending"' not in page:
                break
            time.sleep(0.1)
    said = re.search(r"The same comparison from the command line: (.*?)\.</p>", page, re.S)
    assert said is not None
    command = text_of(said.group(1)).split()
    assert command[-4:] == ["--variant-a", "zero-shot", "--variant-b", "few-shot"]
    done = run_assay(*command[1:], "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
