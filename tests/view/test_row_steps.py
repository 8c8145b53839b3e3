"""A row opened from a filtered, sorted list steps (previous / next, and the label panel's
``k`` / ``n``) through that list, not through every row of the run; the way back to the
list keeps its filter. The oracle is the rows page itself: the rows it lists, in its order."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from assay.view.app import build_app
from assay.view.workspace import Workspace
from tests.view.generate import make_run


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    root = tmp_path_factory.mktemp("steps")
    make_run(40, root / "runs", name="steps", seed=5)
    ws = Workspace([root / "runs"], scratch=tmp_path_factory.mktemp("scratch"))
    with TestClient(build_app(ws, hosts=["testserver"])) as http:
        for _ in range(600):  # the index is read in the background; wait for all of it
            if 'id="indexing"' not in http.get("/runs/steps/rows").text:
                break
            time.sleep(0.05)
        yield http


def links(page: str) -> list[str]:
    """The row links of a rows page, in its order."""
    return [html.unescape(h) for h in re.findall(r'<td><a href="(/runs/steps/rows/[^"]+)"', page)]


def step(page: str, rel: str) -> str | None:
    found = re.search(rf'<a rel="{rel}" href="([^"]+)"', page)
    return html.unescape(found.group(1)) if found else None


@pytest.mark.parametrize(
    "query", ["?status=FAILURE", "?sort=score&order=desc", "?expected=neutral&sort=duration"]
)
def test_next_and_previous_follow_the_list_the_row_was_opened_from(
    client: TestClient, query: str
) -> None:
    listed = links(client.get(f"/runs/steps/rows{query}&size=500").text)
    assert len(listed) > 3
    assert all(link.endswith("size=500") for link in listed)  # each link carries the list
    walked, here = [listed[0]], listed[0]
    while (after := step(client.get(here).text, "next")) is not None:
        walked.append(after)
        here = after
    assert [w.split("?")[0] for w in walked] == [x.split("?")[0] for x in listed]
    before = step(client.get(listed[2]).text, "prev")
    assert before is not None and before.split("?")[0] == listed[1].split("?")[0]
    back = "/runs/steps/rows?" + listed[1].split("?", 1)[1]
    assert f'href="{html.escape(back)}">rows</a>' in client.get(listed[1]).text


def test_a_row_opened_alone_steps_in_report_order(client: TestClient) -> None:
    every = links(client.get("/runs/steps/rows?size=500").text)
    page = client.get(every[5].split("?")[0]).text
    assert step(page, "next") == every[6].split("?")[0]
    assert step(page, "prev") == every[4].split("?")[0]
