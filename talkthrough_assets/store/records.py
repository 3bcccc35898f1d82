"""Stored rows as typed records: a row of a table read back as an instance of the dataclass a caller names
(``store.read_rows(table, rid, record=Turn)``). The store does not know those types (they live in a layer above
it): a record is built from its own fields, by name, so the store needs nothing but the dataclass itself."""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, Mapping, TypeVar

R = TypeVar("R")


def as_record(record: type[R], row: Mapping[str, Any]) -> R:
    """``row`` (a stored row: a mapping of column to value) as an instance of the dataclass ``record``: each field
    from the column of its name, nested dataclasses from their structs, sequences of them from lists of structs;
    a column the record lacks is ignored, a field the row lacks keeps its default (else None). A record that
    reads a column of an earlier version's form itself (a JSON string) says so with a classmethod ``from_row``,
    used instead."""
    from_row = getattr(record, "from_row", None)
    if from_row is not None:
        return from_row(row)
    return build(record, row)


def build(record: type[R], row: Mapping[str, Any]) -> R:
    """``record`` from ``row`` by field name, without its ``from_row`` (the generic part a ``from_row`` uses)."""
    kwargs = {}
    for name, (hint, required) in _fields(record).items():
        if name in row:
            kwargs[name] = convert(hint, row[name])
        elif required:
            kwargs[name] = None
    return record(**kwargs)


@functools.cache
def _fields(record: type) -> dict[str, tuple[Any, bool]]:
    """{field name: (its resolved type, whether it lacks a default)} of a dataclass, for fields ``__init__`` takes."""
    if not (dataclasses.is_dataclass(record) and isinstance(record, type)):
        raise TypeError(f"a stored row is read as a dataclass, not {record!r}")
    hints = typing.get_type_hints(record)
    missing = dataclasses.MISSING
    return {f.name: (hints[f.name], f.default is missing and f.default_factory is missing)
            for f in dataclasses.fields(record) if f.init}


def convert(hint: Any, value: Any) -> Any:
    """A stored value (Arrow's Python form: dicts for structs, lists for lists) in the form ``hint`` names:
    a dataclass from a struct, a tuple from a list (recursively), anything else as it is."""
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return convert(args[0], value) if len(args) == 1 else value
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return as_record(hint, value) if isinstance(value, Mapping) else value
    if origin in (tuple, list) and isinstance(value, (list, tuple)):
        args = typing.get_args(hint)
        if origin is tuple and args and args[-1] is not Ellipsis:  # fixed length: each its own type
            return tuple(convert(a, v) for a, v in zip(args, value))
        items = [convert(args[0], v) for v in value] if args else list(value)
        return tuple(items) if origin is tuple else items
    return value
