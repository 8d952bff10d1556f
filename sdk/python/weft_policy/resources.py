"""``Resources``: an amount of every resource dimension (memory, vcores,
GPUs), shared by the kinds' views (a sharing timeline's steps, a pricing
market's loads)."""

from typing import Any, NamedTuple


class Resources(NamedTuple):
    """An amount of every resource dimension."""

    memory_mb: int
    vcores: int
    gpus: int

    def plus(self, other: "Resources") -> "Resources":
        return Resources(*(a + b for a, b in zip(self, other)))

    def minus(self, other: "Resources") -> "Resources":
        """``self − other`` per dimension, at least 0."""
        return Resources(*(max(a - b, 0) for a, b in zip(self, other)))


ZERO = Resources(0, 0, 0)

# Per dimension of Resources: its WIT column and how an amount is written.
DIMENSIONS = (("memory-mb", "MB"), ("vcores", "vcores"), ("gpus", "GPUs"))


def resources_view(record: Any) -> Resources:
    """The WIT ``resources`` record (any object with its three fields)."""
    return Resources(record.memory_mb, record.vcores, record.gpus)
