"""A base for objects that hold a resource: ``close()`` it, or use the object in a ``with``."""

from __future__ import annotations

import abc
from types import TracebackType
from typing import TypeVar

_C = TypeVar("_C", bound="Closing")


class Closing(abc.ABC):
    """Something to close once done with; a ``with`` block closes it on the way out."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release what the object holds."""

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
