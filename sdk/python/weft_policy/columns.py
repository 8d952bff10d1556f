"""Columns to rows: the host sends each WIT record as parallel lists, a policy
reads it as a list of named tuples. Also the checks every kind makes on what
the host sends (columns of one length, indices in range) and the conversions
of WIT values to plain Python ones (enums to their WIT names)."""

from types import MappingProxyType
from typing import Any, Dict, List, Mapping, Sequence, Tuple, Type

# A read-only empty mapping: the default for a row's per-item lookups, safe
# to share between rows because nobody can change it.
EMPTY_MAPPING: Mapping = MappingProxyType({})


class MalformedInput(ValueError):
    """Input the host promised would not happen (columns of different
    lengths, an index out of range); the message names the record and its
    columns."""


def columns(name: str, record: Any, names: Sequence[str]) -> Dict[str, list]:
    """``record``'s ``names`` columns (WIT names, read as the snake_case
    attributes the bindings have) as lists, by WIT name, in ``names``' order.
    Refuses columns of different lengths."""
    table = {column: list(getattr(record, column.replace("-", "_"))) for column in names}
    lengths = [len(values) for values in table.values()]
    if len(set(lengths)) > 1:
        counts = ", ".join(f"{length} {column}" for column, length in zip(names, lengths))
        raise MalformedInput(f"{name}: its columns differ in length ({counts})")
    return table


def length(table: Dict[str, list]) -> int:
    """How many entries a checked table of columns has."""
    return len(next(iter(table.values()), []))


def make_rows(row_type: Type, lists: Sequence[list], *, indexed: bool = False) -> List[Any]:
    """``row_type`` per entry of the (equally long) ``lists``; with
    ``indexed`` each row starts with its index."""
    if indexed:
        return [row_type(i, *values) for i, values in enumerate(zip(*lists))]
    return [row_type(*values) for values in zip(*lists)]


def rows(name: str, record: Any, names: Sequence[str], row_type: Type, *, indexed: bool = False) -> List[Any]:
    """``row_type`` per entry of ``record``'s ``names`` columns; with
    ``indexed`` each row starts with its index. Refuses columns of different
    lengths."""
    return make_rows(row_type, list(columns(name, record, names).values()), indexed=indexed)


def check_indices(name: str, column: str, values: Sequence[int], count: int, what: str) -> None:
    """Refuses an entry of ``values`` that is not an index into a list of
    ``count`` ``what`` (the message names the record, column and entry)."""
    for i, value in enumerate(values):
        if not 0 <= value < count:
            raise MalformedInput(f"{name}: {column}[{i}] is {value}, but there are {count} {what}")


def check_index(name: str, value: int, count: int, what: str) -> None:
    """Refuses ``value`` unless it indexes a list of ``count`` ``what``."""
    if not 0 <= value < count:
        raise MalformedInput(f"{name} is {value}, but there are {count} {what}")


def grouped(
    name: str, item_column: str, items: Sequence[int], values: Sequence[Any], count: int, what: str
) -> List[Tuple[Any, ...]]:
    """A sparse table (one row per (item, value)) as each item's values, in
    table order: entry i of the answer holds item i's, () when it has none.
    Refuses an item index out of range."""
    check_indices(name, item_column, items, count, what)
    per_item: List[list] = [[] for _ in range(count)]
    for item, value in zip(items, values):
        per_item[item].append(value)
    # Tuples: rows are read-only, and a row's lookups must be too.
    return [tuple(values) for values in per_item]


def read_only(mapping: Dict) -> Mapping:
    """``mapping`` as a read-only view (EMPTY_MAPPING when empty): a row's
    lookups are shared with no one but must not be changed by a policy."""
    return MappingProxyType(mapping) if mapping else EMPTY_MAPPING


def enum_text(value: Any) -> str:
    """A WIT enum case as its WIT name (``ExecutionType.GUARANTEED`` is
    ``"guaranteed"``, ``LocalityLevel.NODE_LOCAL`` is ``"node-local"``). Text
    passes through, so tests can write the names directly."""
    if isinstance(value, str):
        return value
    return value.name.lower().replace("_", "-")
