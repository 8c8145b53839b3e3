"""The program under test: adds the whole numbers in the prompt."""

import re


def answer(prompt: str) -> str:
    """The sum of the numbers in ``prompt``."""
    return str(sum(int(n) for n in re.findall(r"-?\d+", prompt)))
