"""Command groups whose commands are imported when they run: ``assay --help`` lists every
command from a one-line summary, and ``assay run …`` imports the run command's module alone.

A group is a :class:`typer.Typer` made with :func:`lazy_app`; each of its commands is a
:class:`Lazy` entry naming where the command lives (``module:attribute``, a command function
or another :class:`typer.Typer`) and the line its group's help lists for it.
tests/cli/test_startup.py checks each summary against the command's own help text.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

import typer
from typer.core import TyperCommand, TyperGroup

# typer carries its own click (typer._click, private): its contexts and commands are typed
# Any here, and only typer's public classes are built.


@dataclass(frozen=True)
class Lazy:
    """One command of a lazy group.

    Attributes:
        target: ``"package.module:attribute"``; the attribute is a command function or a
            :class:`typer.Typer` (a group of commands).
        summary: what the group's help lists for the command: the first paragraph of the
            command's own help, on one line.
    """

    target: str
    summary: str


def load(name: str, entry: Lazy) -> Any:
    """Import ``entry.target`` and build its click command, named ``name``.

    Raises:
        ImportError, AttributeError: the target does not exist (a bug in the group's table).
    """
    module, _, attribute = entry.target.partition(":")
    found = getattr(importlib.import_module(module), attribute)
    if not isinstance(found, typer.Typer):
        single = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
        single.command(name)(found)
        found = single
    command = typer.main.get_command(found)
    command.name = name
    return command


class LazyGroup(TyperGroup):
    """A typer group that lists :attr:`lazy` commands without importing them and imports
    each one when it is resolved (to run it, or to print its own help)."""

    lazy: ClassVar[Mapping[str, Lazy]] = MappingProxyType({})

    def list_commands(self, ctx: Any) -> list[str]:
        """The lazy commands in their table's order, then any registered directly."""
        return [*self.lazy, *(n for n in super().list_commands(ctx) if n not in self.lazy)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The command ``cmd_name``, imported on first use; ``None`` if there is none."""
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in self.lazy:
            command = load(cmd_name, self.lazy[cmd_name])
            self.commands[cmd_name] = command
        return command

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """As typer's, with "Did you mean" drawn from every command, imported or not."""
        known = self.list_commands(ctx)
        if self.suggest_commands and args and args[0] not in known:
            matches = difflib.get_close_matches(args[0], known)
            if matches:
                suggestions = ", ".join(repr(match) for match in matches)
                ctx.fail(f"No such command {args[0]!r}. Did you mean {suggestions}?")
        return super().resolve_command(ctx, args)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """The group's help, listing each command by its summary (nothing is imported)."""
        listed: dict[str, Any] = {
            name: self.commands.get(name) or TyperCommand(name, help=self.lazy[name].summary)
            for name in self.list_commands(ctx)
        }
        listing = TyperGroup(
            name=self.name,
            commands=listed,
            help=self.help,
            epilog=self.epilog,
            params=self.params,
            rich_markup_mode=self.rich_markup_mode,
            no_args_is_help=self.no_args_is_help,
        )
        listing.format_help(ctx, formatter)


def lazy_app(
    *,
    name: str,
    help: str,
    commands: Mapping[str, Lazy],
    callback: Callable[..., None] | None = None,
) -> typer.Typer:
    """A typer app whose commands are ``commands`` (name → :class:`Lazy`), imported on use;
    ``callback`` takes the group's own options (default: none)."""
    group = type(f"Lazy{name.title()}Group", (LazyGroup,), {"lazy": MappingProxyType(commands)})
    return typer.Typer(
        cls=group,
        name=name,
        help=help,
        callback=callback or _no_group_options,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )


def _no_group_options() -> None:
    """The group takes no options of its own; its commands do the work."""
