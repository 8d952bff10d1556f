"""Columns to rows: the host sends each WIT record as parallel lists, a policy
reads it as a list of named tuples."""

from typing import Any, List, Sequence, Type


class MalformedInput(ValueError):
    """Input the host promised would not happen (columns of different
    lengths); the message names the record and its columns."""


def rows(record: str, columns: Sequence[tuple], row_type: Type, *, indexed: bool = False) -> List[Any]:
    """``row_type`` per entry of ``columns``, a sequence of (WIT name, list);
    with ``indexed`` each row starts with its index. Refuses columns of
    different lengths."""
    lengths = [len(values) for _, values in columns]
    if len(set(lengths)) > 1:
        counts = ", ".join(f"{length} {name}" for (name, _), length in zip(columns, lengths))
        raise MalformedInput(f"{record}: its columns differ in length ({counts})")
    lists = [values for _, values in columns]
    if indexed:
        return [row_type(i, *values) for i, values in enumerate(zip(*lists))]
    return [row_type(*values) for values in zip(*lists)]
