"""Scheduling policies (world ``scheduling-policy``): the ``Policy`` base class
an author subclasses, the snapshot as rows, and ``export``, the component glue.

The host sends a columnar snapshot each round; the policy sees lists of named
tuples (``snapshot.nodes[i].free_memory_mb``), each row carrying its index, and
answers with ``Placement`` rows, which the SDK turns back into columns.
"""

from typing import Any, Iterable, List, NamedTuple, Optional, Tuple, Type

from . import _component
from .columns import rows
from . import params as _params
from .params import Params

# Scheduling has no standard parameters: configure gets the operator's only.
STANDARD_KEYS: Tuple[str, ...] = ()

U32_MAX = 2**32 - 1


class Node(NamedTuple):
    """A node that can take containers; ``free_*`` is at most ``capacity_*``."""

    index: int
    free_memory_mb: int
    free_vcores: int
    free_gpus: int
    capacity_memory_mb: int
    capacity_vcores: int
    capacity_gpus: int


class Queue(NamedTuple):
    """A queue of the tree: queue 0 is root, a parent comes before its
    children, percentages are of the parent (see wit/scheduling.wit)."""

    index: int
    parent: int
    capacity: float
    maximum_capacity: float
    minimum_user_limit_percent: float
    # None when a user may take the whole queue, up to its maximum.
    user_limit_factor: Optional[float]
    fair: bool
    used_memory_mb: int
    used_vcores: int
    used_gpus: int


class App(NamedTuple):
    """A running or pending application, in submission order."""

    index: int
    queue: int
    user: int
    priority: int
    submit_time_ms: int
    used_memory_mb: int
    used_vcores: int
    used_gpus: int


class Ask(NamedTuple):
    """``pending`` containers of one size for app ``app``."""

    index: int
    app: int
    pending: int
    memory_mb: int
    vcores: int
    gpus: int


class Container(NamedTuple):
    """A running container, a candidate for preemption."""

    index: int
    app: int
    node: int
    memory_mb: int
    vcores: int
    gpus: int
    start_time_ms: int


class Snapshot(NamedTuple):
    """Everything a round sees. Read-only; the host builds a new one per round."""

    now_ms: int
    nodes: List[Node]
    queues: List[Queue]
    apps: List[App]
    asks: List[Ask]


class Placement(NamedTuple):
    """``count`` containers of ask ``ask`` go on node ``node``."""

    ask: int
    node: int
    count: int


class Policy:
    """A scheduling policy. Subclass it, set ``name`` and ``version``, and write
    ``schedule``; ``configure`` (no parameters) and ``preempt`` (never) have
    defaults."""

    name = "scheduling-policy"
    version = "0.1.0"

    def configure(self, params: Params) -> None:
        """Reads the operator's parameters."""

    def schedule(self, snapshot: Snapshot) -> Iterable[Placement]:
        """This round's placements, applied in order by the host."""
        raise NotImplementedError(f"{type(self).__name__} has no schedule method")

    def preempt(self, snapshot: Snapshot, running: List[Container]) -> Iterable[int]:
        """Indices into ``running`` of the containers to preempt, each at most once."""
        return []


def snapshot_view(snapshot: Any) -> Snapshot:
    """The WIT ``snapshot`` record (any object with its fields) as rows."""
    return Snapshot(
        now_ms=snapshot.now_ms,
        nodes=rows(
            "nodes",
            snapshot.nodes,
            (
                "free-memory-mb",
                "free-vcores",
                "free-gpus",
                "capacity-memory-mb",
                "capacity-vcores",
                "capacity-gpus",
            ),
            Node,
            indexed=True,
        ),
        queues=rows(
            "queues",
            snapshot.queues,
            (
                "parent",
                "capacity",
                "maximum-capacity",
                "minimum-user-limit-percent",
                "user-limit-factor",
                "fair",
                "used-memory-mb",
                "used-vcores",
                "used-gpus",
            ),
            Queue,
            indexed=True,
        ),
        apps=rows(
            "apps",
            snapshot.apps,
            ("queue", "user", "priority", "submit-time-ms", "used-memory-mb", "used-vcores", "used-gpus"),
            App,
            indexed=True,
        ),
        asks=rows("asks", snapshot.asks, ("app", "pending", "memory-mb", "vcores", "gpus"), Ask, indexed=True),
    )


def containers_view(running: Any) -> List[Container]:
    """The WIT ``containers`` record as rows."""
    columns = ("app", "node", "memory-mb", "vcores", "gpus", "start-time-ms")
    return rows("containers", running, columns, Container, indexed=True)


def _u32(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= U32_MAX:
        raise ValueError(f"{what} is {value!r}: it must be a whole number from 0 to {U32_MAX}")
    return value


def placement_columns(placements: Iterable[Placement]) -> Tuple[List[int], List[int], List[int]]:
    """Placements as the WIT record's (ask, node, count) columns."""
    asks: List[int] = []
    nodes: List[int] = []
    counts: List[int] = []
    for i, (ask, node, count) in enumerate(placements):
        asks.append(_u32(ask, f"placement {i}: ask"))
        nodes.append(_u32(node, f"placement {i}: node"))
        counts.append(_u32(count, f"placement {i}: count"))
    return asks, nodes, counts


def victims(indices: Iterable[int]) -> List[int]:
    """``preempt``'s answer as a list of u32."""
    return [_u32(index, f"preempted container {i}") for i, index in enumerate(indices)]


def configured(policy_class: Type[Policy], pairs: Iterable[Tuple[str, str]]) -> Policy:
    """A new ``policy_class`` object configured with ``pairs`` as the host
    would (this kind's standard keys known); raises ParamError. For tests."""
    return _params.configured(policy_class, pairs, STANDARD_KEYS)


def export(policy_class: Type[Policy]) -> Tuple[Type, Type]:
    """The ``WitWorld`` and ``Scheduling`` classes componentize-py looks for in
    the app module: ``WitWorld, Scheduling = scheduling.export(MyPolicy)``."""
    from wit_world.exports import scheduling as wit

    _component.use_host_log()
    active = _component.Active(policy_class, "scheduling", STANDARD_KEYS)

    def schedule(snapshot: Any) -> Any:
        placements = active.policy.schedule(snapshot_view(snapshot))
        ask, node, count = placement_columns(placements)
        return wit.Placements(ask=ask, node=node, count=count)

    def preempt(snapshot: Any, running: Any) -> List[int]:
        chosen = active.policy.preempt(snapshot_view(snapshot), containers_view(running))
        return victims(chosen)

    guarded_schedule = _component.guarded("schedule", schedule)
    guarded_preempt = _component.guarded("preempt", preempt)

    class Scheduling:
        def schedule(self, snapshot: Any) -> Any:
            return guarded_schedule(snapshot)

        def preempt(self, snapshot: Any, running: Any) -> List[int]:
            return guarded_preempt(snapshot, running)

    return _component.world_class(active), Scheduling
