"""How the docs tests read a page's shell blocks: markers, commands, shown output."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.blocks import BlockError, blocks_of, shown_lines_match


def page(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "page.md"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Text\n\n```sh\nassay run x.yaml\n```\n", "page.md:3: a ```sh block without a marker"),
        ("<!-- docs-test: run -->\n\n```console\n$ assay run\n```\n",
         "page.md:1: a docs-test marker that is not right above"),
        ("<!-- docs-test: run -->\n```yaml\na: 1\n```\n",
         "page.md:1: a docs-test marker that is not right above"),
        ("<!-- docs-test: run fast -->\n```sh\nassay run\n```\n",
         "page.md:2: unknown docs-test option 'fast'"),
        ("<!-- docs-test: skip -->\n```sh\nassay run\n```\n", "page.md:2: a ```sh block without"),
        ("<!-- docs-test: run -->\n```console\nno command here\n```\n",
         "page.md:2: a runnable block without a command"),
        ("<!-- docs-test: run -->\n```sh\nassay run\n", "page.md:2: a code block that is never"),
    ],
)  # fmt: skip
def test_a_block_the_runner_cannot_follow_is_refused_with_its_line(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(BlockError) as raised:
        blocks_of(page(tmp_path, text))
    assert message in str(raised.value)


def test_console_blocks_give_each_command_its_shown_output(tmp_path: Path) -> None:
    text = (
        "<!-- docs-test: run exit=1 coding_agent -->\n```console\n$ assay dataset import d \\\n"
        "    f.jsonl\nimported 2\n\n$ assay dataset diff d@1 d@2 --exit-code\n  removed  a\n```\n"
        "<!-- docs-test: skip (an API key) -->\n```sh\nexport K=1   # the key\n"
        "assay run t  # comment\n```\n```python\nprint(1)\n```\n"
    )
    runs, skipped = blocks_of(page(tmp_path, text))
    assert runs.run and runs.exit_code == 1 and runs.components == {"coding_agent"}
    assert [(c.line, c.shown) for c in runs.commands] == [
        ("assay dataset import d f.jsonl", ("imported 2",)),
        ("assay dataset diff d@1 d@2 --exit-code", ("  removed  a",)),
    ]
    assert not skipped.run and skipped.commands == ()


def test_shell_blocks_run_each_line_without_its_comment(tmp_path: Path) -> None:
    text = "<!-- docs-test: run -->\n```sh\n# set up\nassay a \\\n  --b   # why\nassay c\n```\n"
    (block,) = blocks_of(page(tmp_path, text))
    assert [c.line for c in block.commands] == ["assay a    --b", "assay c"]


@pytest.mark.parametrize(
    ("shown", "printed", "missing"),
    [
        (["a · 3 rows in …"], "x\na · 3 rows in 0.5 s\n", None),
        (["first", "second"], "first\nsecond\n", None),
        (["second", "first"], "first\nsecond\n", "first"),
        (["12 rows in …"], "10 rows in 1 s\n", "12 rows in …"),
        (["gate PASSED"], "suite: gate PASSED\n", "gate PASSED"),
        (["  removed  s1"], "removed  s1\n", None),
    ],
)
def test_shown_lines_must_appear_in_order_with_ellipsis_as_any_text(
    shown: list[str], printed: str, missing: str | None
) -> None:
    assert shown_lines_match(shown, printed) == missing
