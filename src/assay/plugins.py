"""Plugins: classes that installed packages add to assay's registries through entry points.

A package declares, in its ``pyproject.toml``::

    [project.entry-points."assay.criteria"]
    word_count = "my_package.criteria:WordCount"

and a task file may then name ``type: word_count``. Each registry (criteria, agents) names
its group and the base class its members derive from; this module finds the group's entry
points (:mod:`importlib.metadata`), imports each one only when asked, and turns every way a
plugin can be wrong into a :class:`~assay.errors.PluginError` that names the entry point,
the package it comes from, and the fix. It imports nothing of assay above :mod:`assay.errors`,
so any layer's registry may use it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import import_module
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, TypeVar, cast

from assay.errors import PluginError


@dataclass(frozen=True)
class PluginGroup:
    """One entry-point group and what its members must be.

    Attributes:
        group: the entry-point group, e.g. ``assay.criteria``.
        noun: what a member is, in messages (``criterion``).
        base: the class every member derives from.
        name_of: the name a member registers under (its type name), from its class.
    """

    group: str
    noun: str
    base: type
    name_of: Callable[[type], str]
    awaited: tuple[str, ...] = ()
    """The methods assay awaits on a member (``check``, ``run``): each must be the class's
    own or a parent's below ``base``, written ``async def``."""


@dataclass(frozen=True)
class Plugin:
    """A loaded member: the name it registers under, its class, and where it came from
    (``entry point 'name = module:attr' of group 'g' (package p 1.0)``, or the class's
    module and name for a class passed to the API)."""

    name: str
    cls: type
    origin: str


def describe(entry: EntryPoint) -> str:
    """How messages name ``entry``: its line as written, its group and its package."""
    where = f"entry point '{entry.name} = {entry.value}' of group '{entry.group}'"
    dist = entry.dist
    if dist is not None:
        where += f" (package {dist.metadata['Name']} {dist.version})"
    return where


def group_entries(group: str) -> list[EntryPoint]:
    """The installed entry points of ``group``, sorted by name."""
    return sorted(entry_points(group=group), key=lambda e: (e.name, e.value))


def load_entry(entry: EntryPoint, kind: PluginGroup) -> Plugin:
    """Import ``entry`` and check it is a member of ``kind``.

    Raises:
        PluginError: it does not import, is not a subclass of ``kind.base``, or registers
            under another name than the entry point's.
    """
    where = describe(entry)
    fix = _package_fix(entry)
    return check_member(_import(entry), kind, origin=where, expected_name=entry.name, fix=fix)


def load_entry_points(group: str, *, base: type = object, noun: str = "plugin") -> list[type]:
    """The classes of every installed entry point of ``group``, each imported now (the
    simple form for a registry that checks names itself).

    Raises:
        PluginError: an entry point does not import, or is not a subclass of ``base``.
    """
    kind = PluginGroup(group=group, noun=noun, base=base, name_of=lambda cls: cls.__name__)
    loaded = []
    for entry in group_entries(group):
        where, fix = describe(entry), _package_fix(entry)
        loaded.append(check_member(_import(entry), kind, origin=where, fix=fix).cls)
    return loaded


def load_reference(reference: str, kind: PluginGroup) -> Plugin:
    """Import ``module:attr`` (a built-in registration) and check it is a member of ``kind``.

    Raises:
        PluginError: it does not import, or is not a member.
    """
    module_name, _, attr = reference.partition(":")
    try:
        loaded = getattr(import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise PluginError(f"{kind.noun} '{reference}' cannot be imported: {exc}") from None
    return check_member(loaded, kind, origin=reference)


def check_member(
    loaded: object,
    kind: PluginGroup,
    *,
    origin: str,
    expected_name: str | None = None,
    fix: str | None = None,
) -> Plugin:
    """``loaded`` as a member of ``kind`` (a subclass of its base with a valid name).

    Raises:
        PluginError: it is not a class deriving from ``kind.base``, its name cannot be read,
            or it differs from ``expected_name``.
    """
    base = f"{kind.base.__module__}.{kind.base.__qualname__}"
    if not (isinstance(loaded, type) and issubclass(loaded, kind.base)) or loaded is kind.base:
        what = (
            f"the class {loaded.__qualname__}"
            if isinstance(loaded, type)
            else (f"{type(loaded).__name__} {getattr(loaded, '__qualname__', repr(loaded))}")
        )
        article = "an" if kind.noun[:1] in "aeiou" else "a"
        raise PluginError(
            f"{origin} is {what}, not {article} {kind.noun} class",
            hint=f"point it at a class that derives from {base}" + (f"; {fix}" if fix else ""),
        )
    try:
        name = kind.name_of(loaded)
    except (TypeError, KeyError) as exc:
        raise PluginError(f"{origin}: {exc}", hint=fix) from None
    for method in kind.awaited:
        _check_awaited(loaded, method, kind, origin=origin)
    if expected_name is not None and name != expected_name:
        raise PluginError(
            f"{origin} is named '{expected_name}' but its {kind.noun} type is '{name}'",
            hint=f"name the entry point '{name}' (task files write type: {name})",
        )
    return Plugin(name=name, cls=loaded, origin=origin)


def _check_awaited(loaded: type, method: str, kind: PluginGroup, *, origin: str) -> None:
    """Refuse a member whose ``method`` is missing (the base's) or not ``async def``: assay
    awaits it on every row, so the fault would otherwise show only there, once a row.

    Raises:
        PluginError: naming the class, the method and how to write it.
    """
    found = getattr(loaded, method, None)
    if found is None or found is getattr(kind.base, method, None):
        raise PluginError(f"{origin}: the class {loaded.__qualname__} does not define "
                          f"{method}()", hint=f"define async def {method}(self, context) "
                          f"in {loaded.__qualname__}")  # fmt: skip
    if not inspect.iscoroutinefunction(found):
        fix = (f"write it as async def {method}(...); run blocking work inside it with "
               "await asyncio.to_thread(...), so the row's time limits hold")  # fmt: skip
        raise PluginError(f"{origin}: {loaded.__qualname__}.{method}() is a plain function, "
                          "and assay awaits it", hint=fix)  # fmt: skip


def check_clash(plugin: Plugin, taken: Iterable[str], kind: PluginGroup, *, owner: str) -> None:
    """Refuse ``plugin`` when its name is already ``taken`` (by ``owner``: built in, or
    another plugin).

    Raises:
        PluginError: naming the plugin and how to rename it.
    """
    if plugin.name in set(taken):
        raise PluginError(
            f"{plugin.origin} adds the {kind.noun} type '{plugin.name}', which {owner} already has",
            hint=f"give {plugin.cls.__qualname__} another type name (and its entry point "
            "the same name)",
        )


Member = TypeVar("Member", bound=type)


class Registry(Generic[Member]):
    """Type name → class, for one kind of plugin (:class:`PluginGroup`): the built-ins
    (``module:Class`` references), classes given to the API, and the group's entry points,
    loaded the first time a name is not known. A name is taken once (:func:`check_clash`).

    Args:
        kind: the group and what its members must be.
        built_ins: the built-in members, ``module:Class`` each (registered by
            :meth:`add_built_ins`).
        entry_points: look up installed plugins for unknown names (off: only what is
            registered).
    """

    def __init__(self, kind: PluginGroup, built_ins: tuple[str, ...], *,
                 entry_points: bool = True) -> None:  # fmt: skip
        self.kind = kind
        self.built_ins = built_ins
        self._classes: dict[str, Member] = {}
        self._origins: dict[str, str] = {}
        self._plugins_loaded = not entry_points
        self._tried: set[str] = set()
        self._entry_list: list[EntryPoint] | None = None
        self.broken: list[str] = []
        """What each installed plugin that could not be loaded while looking for another
        type said (:meth:`load_named`)."""

    def register(self, cls: Member, *, origin: str | None = None) -> None:
        """Add ``cls`` under its type name.

        Raises:
            PluginError: ``cls`` is not a member of the group, or its type is already
                registered (naming which one has it).
        """
        where = origin or (f"{self.kind.noun} class {getattr(cls, '__module__', '?')}."
                           f"{getattr(cls, '__qualname__', repr(cls))}")  # fmt: skip
        self._add(check_member(cls, self.kind, origin=where))

    def add_built_ins(self) -> None:
        """Register every built-in member.

        Raises:
            PluginError: a built-in registration is broken (a bug of assay).
        """
        for reference in self.built_ins:
            self._add(load_reference(reference, self.kind))

    def _add(self, plugin: Plugin) -> None:
        owner = self._origins.get(plugin.name)
        if owner is not None:
            check_clash(plugin, [plugin.name], self.kind,
                        owner="assay (built in)" if owner in self.built_ins else owner)  # fmt: skip
        self._classes[plugin.name] = cast(Member, plugin.cls)
        self._origins[plugin.name] = plugin.origin
        self._changed()

    def _changed(self) -> None:
        """Called after a class is registered (a registry that caches what it derives from
        its classes drops the cache here)."""

    def load_plugins(self) -> None:
        """Register every installed entry point of the group (once).

        Raises:
            PluginError: an entry point does not import, is not a member, or its type is
                already taken.
        """
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        for entry in self._entries():
            self._add(load_entry(entry, self.kind))

    def load_named(self, names: Iterable[object]) -> bool:
        """Register the installed plugins a task needs for ``names`` it does not have: the
        entry point of each name (its failure is the error), and, for a name no entry point
        is named after, every other one, whose failures are kept in :attr:`broken` instead
        (a broken plugin of another type is not in the way of a task, nor of a typo's "did
        you mean"). ``True`` when a class was registered or a broken plugin noted (what is
        derived from the registry changes).

        Raises:
            PluginError: the entry point named like one of ``names`` cannot be loaded.
        """
        named = {n for n in names if isinstance(n, str)}
        if self._plugins_loaded:
            return False
        self._refuse_shadows(named)
        wanted = named - set(self._classes) - self._tried
        if not wanted:
            return False
        self._tried |= wanted
        before = len(self._classes) + len(self.broken)
        entries = self._entries()
        for entry in entries:
            if entry.name in wanted:
                self._add(load_entry(entry, self.kind))
        if wanted - set(self._classes):
            for entry in entries:
                if entry.name not in wanted and entry.name not in self._classes:
                    self._add_or_note(entry)
        return len(self._classes) + len(self.broken) > before

    def _refuse_shadows(self, named: set[str]) -> None:
        """Refuse an installed entry point named like a built-in type a task names (it would
        be passed over in silence: the built-in is known, so no plugin is looked up).

        Raises:
            PluginError: naming the entry point and the fix (:func:`check_clash`).
        """
        built_in = {n for n in named if self._origins.get(n) in self.built_ins} - self._tried
        if not built_in:
            return
        self._tried |= built_in
        for entry in self._entries():
            if entry.name in built_in:
                self._add(load_entry(entry, self.kind))

    def _entries(self) -> list[EntryPoint]:
        """The group's installed entry points, read once."""
        if self._entry_list is None:
            self._entry_list = group_entries(self.kind.group)
        return self._entry_list

    def _add_or_note(self, entry: EntryPoint) -> None:
        try:
            self._add(load_entry(entry, self.kind))
        except PluginError as exc:
            note = exc.message + (f" ({exc.hint})" if exc.hint else "")
            if note not in self.broken:
                self.broken.append(note)
                self._changed()  # an unknown type's message names it

    def broken_note(self) -> str:
        """The installed plugins that could not be loaded, for an unknown type's message
        (empty when none)."""
        return "".join(f"; an installed plugin could not be loaded: {b}" for b in self.broken)

    def _copy_into(self, other: Registry[Member]) -> None:
        """Give ``other`` (new, empty) this registry's classes and their origins."""
        other._classes = dict(self._classes)
        other._origins = dict(self._origins)
        other._changed()

    @property
    def types(self) -> list[str]:
        """Registered type names, sorted."""
        return sorted(self._classes)

    def classes(self) -> list[Member]:
        """The registered classes, in registration order."""
        return list(self._classes.values())


def _import(entry: EntryPoint) -> object:
    try:
        return entry.load()
    except (Exception, SystemExit) as exc:  # any failure of a third party's import is the
        # plugin's: one that calls sys.exit() as it is imported must not end assay silently
        raise PluginError(
            f"{describe(entry)} cannot be imported: {type(exc).__name__}: {exc}",
            hint=_package_fix(entry),
        ) from None


def _package_fix(entry: EntryPoint) -> str:
    dist = entry.dist
    package = dist.metadata["Name"] if dist is not None else "the package that declares it"
    return (f"fix or reinstall {package}, or uninstall it (pip uninstall {package}) to run "
            "without it")  # fmt: skip
