"""A sequence whose items are made when read (the plan's row tasks and work items)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar, overload

T = TypeVar("T")


class MadeWhenRead(Sequence[T]):
    """A sequence that holds no item: subclasses give ``__len__`` and ``_at(position)``
    (``0 <= position < len``), and may give a faster ``__iter__``. Indexing takes negative
    positions and slices like a list's.

    Raises (on indexing):
        IndexError: a position out of range.
    """

    def _at(self, position: int) -> T:
        raise NotImplementedError

    @overload
    def __getitem__(self, position: int) -> T: ...

    @overload
    def __getitem__(self, position: slice) -> list[T]: ...

    def __getitem__(self, position: int | slice) -> T | list[T]:
        count = len(self)
        if isinstance(position, slice):
            return [self._at(i) for i in range(*position.indices(count))]
        if position < 0:
            position += count
        if not 0 <= position < count:
            raise IndexError(position)
        return self._at(position)
