"""The checkers of the criteria over what an agent did and left (transcript, files, programs),
kept apart from :mod:`assay.criteria.registry` so each family registers in one line."""

from __future__ import annotations

from assay.criteria.base import Checker
from assay.criteria.cli_called import CliCalledChecker
from assay.criteria.code_checks import (
    ImportCheckChecker,
    PylintScoreChecker,
    ReferenceComparisonChecker,
)
from assay.criteria.file_text import FileContainsChecker, FileMatchesRegexChecker
from assay.criteria.json_check import JsonCheckChecker
from assay.criteria.pytest_check import PytestChecker
from assay.criteria.skills import SkillTriggeredChecker
from assay.criteria.transcript import (
    CommandExecutedChecker,
    CommandsEfficiencyChecker,
    ToolCalledChecker,
)


def agent_checkers() -> list[Checker]:
    """One checker per criterion type of this family."""
    return [
        SkillTriggeredChecker(),
        CommandExecutedChecker(),
        ToolCalledChecker(),
        CommandsEfficiencyChecker(),
        FileContainsChecker(),
        FileMatchesRegexChecker(),
        JsonCheckChecker(),
        PytestChecker(),
        ImportCheckChecker(),
        PylintScoreChecker(),
        ReferenceComparisonChecker(),
        CliCalledChecker(),
    ]
