"""Plain value classes: fields in `__slots__`, equality, hashing and repr from them.

What namedtuple gave the hot commands' small records (a parsed command line, a catalog location, a freshness
scope), without generating and compiling a class per record at every start. Unlike a namedtuple, a
value is not a tuple."""

from __future__ import annotations


class Value:
    """Base of a value class: subclasses name their fields in `__slots__` and set them in `__init__`."""

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in type(self).__slots__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Value) and type(other) is type(self) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in type(self).__slots__)
        return f"{type(self).__name__}({fields})"


class FrozenValue(Value):
    """A value whose fields cannot change after `__init__`, which sets them with `_set_fields`."""

    __slots__ = ()

    def _set_fields(self, *values: object) -> None:
        names: tuple[str, ...] = type(self).__slots__
        for name, value in zip(names, values, strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: {type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: {type(self).__name__} is immutable")
