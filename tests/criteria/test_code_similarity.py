"""``reference_comparison``'s three similarity methods, against hand-computed values."""

from __future__ import annotations

import pytest

from assay.criteria.code_similarity import (
    ComparisonError,
    code_tokens,
    complexity,
    node_types,
    ratio,
    similarity,
)

REFERENCE = "def area(width, height):\n    return width * height\n"
RENAMED = "def size(w, h):\n    # the same, other names\n    return w * h\n"
BRANCHY = """\
def grade(score):
    if score > 90:
        return "A"
    elif score > 80:
        return "B"
    for _ in range(3):
        pass
    return "C"
"""


def test_ast_ignores_names_comments_and_layout() -> None:
    assert similarity(RENAMED, REFERENCE, method="ast") == 1.0
    assert node_types("x = 1\n") == ["Assign", "Name", "Constant", "Store"]


def test_ratio_is_two_matches_over_both_lengths() -> None:
    assert ratio(["a", "b", "c", "d"], ["a", "b", "x"]) == pytest.approx(2 * 2 / 7)
    assert ratio([], []) == 1.0 and ratio(["a"], []) == 0.0


def test_tokens_leave_out_comments_and_layout_and_count_names() -> None:
    assert code_tokens("x = 1  # one\n\n") == ["x", "=", "1"]
    # 9 tokens each: def area ( width , height ) : return width * height vs renamed names
    ref, ren = code_tokens(REFERENCE), code_tokens(RENAMED)
    assert ref == ["def", "area", "(", "width", ",", "height", ")", ":", "return", "width",
                   "*", "height"]  # fmt: skip
    same = sum(1 for a, b in zip(ref, ren, strict=True) if a == b)
    assert same == 7  # def ( , ) : return *
    assert similarity(RENAMED, REFERENCE, method="token") == pytest.approx(2 * 7 / 24)
    assert code_tokens('unterminated = """') == ["unterminated", "=", '"', '"', '"']


def test_complexity_is_mccabes_count_compared_by_relative_difference() -> None:
    assert complexity(REFERENCE) == 1  # no decision point
    assert complexity(BRANCHY) == 4  # 1 + if + elif + for
    assert similarity(BRANCHY, REFERENCE, method="complexity") == pytest.approx(1 - 3 / 4)
    assert similarity(REFERENCE, RENAMED, method="complexity") == 1.0


def test_unparseable_python_names_the_file_and_line() -> None:
    with pytest.raises(ComparisonError, match=r"the agent file is not valid Python: .*line 1"):
        similarity("def (:\n", REFERENCE, method="ast")
    with pytest.raises(ComparisonError, match="the reference file is not valid Python"):
        similarity(REFERENCE, "return return\n", method="complexity")
    with pytest.raises(ValueError, match="unknown comparison_method 'lines'"):
        similarity(REFERENCE, REFERENCE, method="lines")  # type: ignore[arg-type]
