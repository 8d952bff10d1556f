"""Columns to rows: the host sends each WIT record as parallel lists, a policy
reads it as a list of named tuples."""

from typing import Any, List, Sequence, Type


class MalformedInput(ValueError):
    """Input the host promised would not happen (columns of different
    lengths); the message names the record and its columns."""


def rows(name: str, record: Any, columns: Sequence[str], row_type: Type, *, indexed: bool = False) -> List[Any]:
    """``row_type`` per entry of ``record``'s ``columns`` (WIT names, read as
    the snake_case attributes the bindings have); with ``indexed`` each row
    starts with its index. Refuses columns of different lengths."""
    lists = [getattr(record, column.replace("-", "_")) for column in columns]
    lengths = [len(values) for values in lists]
    if len(set(lengths)) > 1:
        counts = ", ".join(f"{length} {column}" for column, length in zip(columns, lengths))
        raise MalformedInput(f"{name}: its columns differ in length ({counts})")
    if indexed:
        return [row_type(i, *values) for i, values in enumerate(zip(*lists))]
    return [row_type(*values) for values in zip(*lists)]
