"""Scheduling policies (world ``scheduling-policy``): the ``Policy`` base class
an author subclasses, the snapshot as rows, and ``export``, the component glue.

The host sends a columnar snapshot each round; the policy sees lists of named
tuples (``snapshot.nodes[i].free_memory_mb``), each row carrying its index, and
answers with ``Placement`` rows, which the SDK turns back into columns.

The WIT's sparse tables (a node's attributes, an app's tags, an ask's
preferred nodes, racks and tags, the tagged containers on a node, a queue's
partition shares, a container's tags) arrive as one row per (item, value);
the SDK groups each once per snapshot and hangs the values on the item's row
(``snapshot.apps[i].tags``). WIT enums arrive as their WIT names
(``ask.locality_level == "node-local"``). The fields 0.3.0 added have
defaults, so a test can build a row or snapshot from the fields it needs.

The host refuses a placement off its ask's partition or against its
constraint, and holds back a gang placed below its minimum: ``keep_rules``
cuts an answer to those rules, and ``schedule_keeping_rules`` wraps a round
with it, running the round again while it places gangs in part: first with
the first of them alone in play, then without it (the Rust SDK's functions
of the same names).
"""

from typing import Any, Callable, Dict, Iterable, List, Mapping, NamedTuple, Optional, Set, Tuple, Type

from . import _component
from . import params as _params
from .columns import (
    EMPTY_MAPPING,
    check_index,
    check_indices,
    columns,
    enum_text,
    grouped,
    length,
    make_rows,
    read_only,
    rows,
)
from .params import Params

# Scheduling has no standard parameters: configure gets the operator's only.
STANDARD_KEYS: Tuple[str, ...] = ()

U32_MAX = 2**32 - 1


class Partition(NamedTuple):
    """A partition (YARN's node label). Partition 0 is the default one: name
    "", exclusive."""

    index: int
    name: str
    # Whether only asks for this label may use its nodes (else its idle room
    # is lent to asks for the default partition).
    exclusive: bool


DEFAULT_PARTITION = Partition(0, "", True)


class Round(NamedTuple):
    """What this round holds: ``kind`` is "whole" (a cluster without labels),
    "partition" (one partition's nodes and its asks), "lending" (a
    non-exclusive label's nodes lent to the default partition's asks) or
    "restricted" (one ask with a constraint or locality preference, alone);
    ``partition`` indexes ``snapshot.partitions``."""

    kind: str
    partition: int


class LocalityDelays(NamedTuple):
    """Delay scheduling's delays, in missed scheduling opportunities; the
    rack delay is None for YARN's -1 (L × C / N more)."""

    node_locality_delay: int
    rack_locality_additional_delay: Optional[int]


class TagCount(NamedTuple):
    """``count`` (at least 1) running containers of app ``app`` tagged ``tag``
    on node ``node``."""

    node: int
    app: int
    tag: str
    count: int


class Node(NamedTuple):
    """A node that can take containers; ``free_*`` is at most ``capacity_*``.
    ``partition`` indexes ``snapshot.partitions``, ``rack``
    ``snapshot.racks``; ``attributes`` maps key to value; ``tag_counts`` are
    the tagged containers running on it."""

    index: int
    free_memory_mb: int
    free_vcores: int
    free_gpus: int
    capacity_memory_mb: int
    capacity_vcores: int
    capacity_gpus: int
    partition: int = 0
    rack: int = 0
    attributes: Mapping[str, str] = EMPTY_MAPPING
    tag_counts: Tuple[TagCount, ...] = ()

    def tag_count(self, tag: str, app: Optional[int] = None) -> int:
        """Running containers tagged ``tag`` here: every app's, or only ``app``'s."""
        return sum(t.count for t in self.tag_counts if t.tag == tag and (app is None or t.app == app))


class PartitionShare(NamedTuple):
    """Queue ``queue``'s share of partition ``partition``, relative to its
    parent as ``Queue.capacity`` is."""

    queue: int
    partition: int
    capacity: float
    maximum_capacity: float


class Queue(NamedTuple):
    """A queue of the tree: queue 0 is root, a parent comes before its
    children, percentages are of the parent and of the round's partition
    (see wit/scheduling.wit). ``partition_shares`` maps a partition index
    to the queue's share of it (no entry: it may not use that partition);
    ``decayed_*`` is its faded use, in resource-seconds."""

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
    path: str = ""
    decayed_memory_mb_seconds: float = 0.0
    decayed_vcore_seconds: float = 0.0
    decayed_gpu_seconds: float = 0.0
    partition_shares: Mapping[int, PartitionShare] = EMPTY_MAPPING


class App(NamedTuple):
    """A running or pending application, in submission order.
    ``start_time_ms`` is None before its first container, ``deadline_ms``
    None without a lifetime; ``user_decayed_*`` is its user's faded use."""

    index: int
    queue: int
    user: int
    priority: int
    submit_time_ms: int
    used_memory_mb: int
    used_vcores: int
    used_gpus: int
    name: str = ""
    application_type: str = "weft"
    project: str = ""
    start_time_ms: Optional[int] = None
    deadline_ms: Optional[int] = None
    user_decayed_memory_mb_seconds: float = 0.0
    user_decayed_vcore_seconds: float = 0.0
    user_decayed_gpu_seconds: float = 0.0
    tags: Tuple[str, ...] = ()


class PlacementConstraint(NamedTuple):
    """Where an ask's containers may go by the tags already there: on a node
    where ``minimum <= count <= maximum``, ``count`` being the containers
    tagged ``tag`` on the node (``scope`` "node") or its rack ("rack"), of
    every app (``all_apps``) or the ask's app only."""

    text: str
    scope: str
    tag: str
    all_apps: bool
    minimum: int
    maximum: int

    def allows(self, count: int) -> bool:
        """Whether a container may go where ``count`` such containers run."""
        return self.minimum <= count <= self.maximum


class Ask(NamedTuple):
    """``pending`` containers of one size for app ``app``, in partition
    ``partition``. ``locality_level`` is "node-local", "rack-local" or
    "off-switch"; ``preferred_nodes`` and ``preferred_racks`` index
    ``snapshot.nodes`` and ``snapshot.racks``; ``tags`` are the allocation
    tags its containers will carry; ``gang_minimum`` is the fewest to place
    together (None: any number); ``execution_type`` is "guaranteed" or
    "opportunistic"."""

    index: int
    app: int
    pending: int
    memory_mb: int
    vcores: int
    gpus: int
    partition: int = 0
    locality_level: str = "off-switch"
    relax_locality: bool = True
    missed_opportunities: int = 0
    gang_minimum: Optional[int] = None
    constraint: Optional[PlacementConstraint] = None
    execution_type: str = "guaranteed"
    preferred_nodes: Tuple[int, ...] = ()
    preferred_racks: Tuple[int, ...] = ()
    tags: Tuple[str, ...] = ()


class Container(NamedTuple):
    """A running container, a candidate for preemption."""

    index: int
    app: int
    node: int
    memory_mb: int
    vcores: int
    gpus: int
    start_time_ms: int
    execution_type: str = "guaranteed"
    tags: Tuple[str, ...] = ()


class Snapshot(NamedTuple):
    """Everything a round sees. Read-only; the host builds a new one per round.
    ``racks`` are rack paths (``/dc1/rack7``); ``partition_shares`` and
    ``tag_counts`` are the whole tables, also grouped on their queues and
    nodes."""

    now_ms: int
    nodes: List[Node]
    queues: List[Queue]
    apps: List[App]
    asks: List[Ask]
    round: Round = Round("whole", 0)
    partitions: Tuple[Partition, ...] = (DEFAULT_PARTITION,)
    racks: Tuple[str, ...] = ("/default-rack",)
    partition_shares: Tuple[PartitionShare, ...] = ()
    tag_counts: Tuple[TagCount, ...] = ()
    locality_delays: LocalityDelays = LocalityDelays(0, None)

    def rack_tag_count(self, rack: int, tag: str, app: Optional[int] = None) -> int:
        """Running containers tagged ``tag`` on this round's nodes of rack
        ``rack``: every app's, or only ``app``'s."""
        return sum(node.tag_count(tag, app) for node in self.nodes if node.rack == rack)


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


NODE_COLUMNS = (
    "free-memory-mb",
    "free-vcores",
    "free-gpus",
    "capacity-memory-mb",
    "capacity-vcores",
    "capacity-gpus",
    "partition",
    "rack",
)
QUEUE_COLUMNS = (
    "parent",
    "capacity",
    "maximum-capacity",
    "minimum-user-limit-percent",
    "user-limit-factor",
    "fair",
    "used-memory-mb",
    "used-vcores",
    "used-gpus",
    "path",
    "decayed-memory-mb-seconds",
    "decayed-vcore-seconds",
    "decayed-gpu-seconds",
)
APP_COLUMNS = (
    "queue",
    "user",
    "priority",
    "submit-time-ms",
    "used-memory-mb",
    "used-vcores",
    "used-gpus",
    "name",
    "application-type",
    "project",
    "start-time-ms",
    "deadline-ms",
    "user-decayed-memory-mb-seconds",
    "user-decayed-vcore-seconds",
    "user-decayed-gpu-seconds",
)
ASK_COLUMNS = (
    "app",
    "pending",
    "memory-mb",
    "vcores",
    "gpus",
    "partition",
    "locality-level",
    "relax-locality",
    "missed-opportunities",
    "gang-minimum",
    "constraint",
    "execution-type",
)
CONTAINER_COLUMNS = ("app", "node", "memory-mb", "vcores", "gpus", "start-time-ms", "execution-type")


def constraint_view(constraint: Any) -> Optional[PlacementConstraint]:
    """The WIT ``placement-constraint`` (or none) as a PlacementConstraint."""
    if constraint is None:
        return None
    return PlacementConstraint(
        constraint.text,
        enum_text(constraint.scope),
        constraint.tag,
        constraint.all_apps,
        constraint.minimum,
        constraint.maximum,
    )


def snapshot_view(snapshot: Any) -> Snapshot:
    """The WIT ``snapshot`` record (any object with its fields) as rows, each
    sparse table grouped on its items. Refuses (MalformedInput) columns of
    different lengths and indices out of range."""
    s = snapshot
    partitions = rows("partitions", s.partitions, ("name", "exclusive"), Partition, indexed=True)
    racks = tuple(s.racks)
    check_index("round: partition", s.round.partition, len(partitions), "partitions")

    # Every item table first, checked, so the sparse tables can be checked
    # against their lengths.
    node = columns("nodes", s.nodes, NODE_COLUMNS)
    check_indices("nodes", "partition", node["partition"], len(partitions), "partitions")
    check_indices("nodes", "rack", node["rack"], len(racks), "racks")
    queue = columns("queues", s.queues, QUEUE_COLUMNS)
    check_indices("queues", "parent", queue["parent"], length(queue), "queues")
    app = columns("apps", s.apps, APP_COLUMNS)
    check_indices("apps", "queue", app["queue"], length(queue), "queues")
    ask = columns("asks", s.asks, ASK_COLUMNS)
    check_indices("asks", "app", ask["app"], length(app), "apps")
    check_indices("asks", "partition", ask["partition"], len(partitions), "partitions")
    n_nodes, n_queues, n_apps, n_asks = length(node), length(queue), length(app), length(ask)

    # Nodes: attributes (key to value) and tagged containers, grouped by node.
    table = columns("node-attributes", s.node_attributes, ("node", "attribute"))
    pairs = [(attribute.key, attribute.value) for attribute in table["attribute"]]
    node_pairs = grouped("node-attributes", "node", table["node"], pairs, n_nodes, "nodes")
    attributes = [read_only(dict(mine)) for mine in node_pairs]
    tag_counts = rows("tag-counts", s.tag_counts, ("node", "app", "tag", "count"), TagCount)
    check_indices("tag-counts", "app", [t.app for t in tag_counts], n_apps, "apps")
    node_tag_counts = grouped("tag-counts", "node", [t.node for t in tag_counts], tag_counts, n_nodes, "nodes")
    nodes = make_rows(Node, [*node.values(), attributes, node_tag_counts], indexed=True)

    # Queues: each one's partition shares, by partition.
    share_columns = ("queue", "partition", "capacity", "maximum-capacity")
    shares = rows("partition-shares", s.partition_shares, share_columns, PartitionShare)
    check_indices("partition-shares", "partition", [r.partition for r in shares], len(partitions), "partitions")
    queue_shares = grouped("partition-shares", "queue", [r.queue for r in shares], shares, n_queues, "queues")
    by_partition = [read_only({share.partition: share for share in mine}) for mine in queue_shares]
    queues = make_rows(Queue, [*queue.values(), by_partition], indexed=True)

    table = columns("app-tags", s.app_tags, ("app", "tag"))
    app_tags = grouped("app-tags", "app", table["app"], table["tag"], n_apps, "apps")
    apps = make_rows(App, [*app.values(), app_tags], indexed=True)

    # Asks: enums as their names, and preferred places and tags grouped by ask.
    ask["locality-level"] = [enum_text(level) for level in ask["locality-level"]]
    ask["constraint"] = [constraint_view(constraint) for constraint in ask["constraint"]]
    ask["execution-type"] = [enum_text(kind) for kind in ask["execution-type"]]
    table = columns("ask-nodes", s.ask_nodes, ("ask", "node"))
    check_indices("ask-nodes", "node", table["node"], n_nodes, "nodes")
    preferred_nodes = grouped("ask-nodes", "ask", table["ask"], table["node"], n_asks, "asks")
    table = columns("ask-racks", s.ask_racks, ("ask", "rack"))
    check_indices("ask-racks", "rack", table["rack"], len(racks), "racks")
    preferred_racks = grouped("ask-racks", "ask", table["ask"], table["rack"], n_asks, "asks")
    table = columns("ask-tags", s.ask_tags, ("ask", "tag"))
    ask_tags = grouped("ask-tags", "ask", table["ask"], table["tag"], n_asks, "asks")
    asks = make_rows(Ask, [*ask.values(), preferred_nodes, preferred_racks, ask_tags], indexed=True)

    delays = s.locality_delays
    return Snapshot(
        now_ms=s.now_ms,
        nodes=nodes,
        queues=queues,
        apps=apps,
        asks=asks,
        round=Round(enum_text(s.round.kind), s.round.partition),
        partitions=tuple(partitions),
        racks=racks,
        partition_shares=tuple(shares),
        tag_counts=tuple(tag_counts),
        locality_delays=LocalityDelays(delays.node_locality_delay, delays.rack_locality_additional_delay),
    )


def containers_view(running: Any, snapshot: Optional[Snapshot] = None) -> List[Container]:
    """The WIT ``containers`` record as rows, each with its tags; with
    ``snapshot``, each ``app`` and ``node`` is checked to index it."""
    container = columns("containers", running, CONTAINER_COLUMNS)
    if snapshot is not None:
        check_indices("containers", "app", container["app"], len(snapshot.apps), "apps")
        check_indices("containers", "node", container["node"], len(snapshot.nodes), "nodes")
    container["execution-type"] = [enum_text(kind) for kind in container["execution-type"]]
    table = columns("containers: tags", running.tags, ("container", "tag"))
    count = length(container)
    tags = grouped("containers: tags", "container", table["container"], table["tag"], count, "containers")
    return make_rows(Container, [*container.values(), tags], indexed=True)


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


# The host's rules beyond room, kept by a policy's own answer: an ask goes on
# its partition's nodes (or, in a lending round, an ask for the default
# partition on the lending label's); no container breaks its ask's placement
# constraint, counting those placed before it; a gang is placed whole or not
# at all. The host refuses what breaks them; a policy that passes its
# placements through ``keep_rules`` never does (and ``weft policy test``
# checks it). The same rules as the Rust SDK's ``scheduling::keep_rules``.


class _Counts:
    """Tagged containers counted where constraints look: per (node or rack,
    tag), every app's (app None) and each app's."""

    def __init__(self, nodes: List[Node]) -> None:
        self.nodes = nodes
        self.by_node: Dict[Tuple[int, str, Optional[int]], int] = {}
        self.by_rack: Dict[Tuple[int, str, Optional[int]], int] = {}

    def add(self, node: int, app: int, tag: str, count: int) -> None:
        for table, place in ((self.by_node, node), (self.by_rack, self.nodes[node].rack)):
            for whose in (None, app):
                key = (place, tag, whose)
                table[key] = table.get(key, 0) + count

    def count(self, scope: str, node: int, app: Optional[int], tag: str) -> int:
        if scope == "node":
            return self.by_node.get((node, tag, app), 0)
        if scope == "rack":
            return self.by_rack.get((self.nodes[node].rack, tag, app), 0)
        raise ValueError(f"constraint scope is {scope!r}: it must be 'node' or 'rack'")


def _triples(snapshot: Snapshot, placements: Iterable[Any], nodes: bool = True) -> List[Tuple[int, int, int]]:
    """Placements as (ask, node, count) triples, each a u32 and (``node``
    only with ``nodes``) an index into the snapshot's lists."""
    triples = []
    n_asks, n_nodes = len(snapshot.asks), len(snapshot.nodes)
    for i, (ask, node, count) in enumerate(placements):
        _u32(ask, f"placement {i}: ask")
        _u32(node, f"placement {i}: node")
        _u32(count, f"placement {i}: count")
        if ask >= n_asks:
            raise IndexError(f"placement {i}: ask is {ask}, but there are {n_asks} asks")
        if nodes and node >= n_nodes:
            raise IndexError(f"placement {i}: node is {node}, but there are {n_nodes} nodes")
        triples.append((ask, node, count))
    return triples


def _push(placements: List[Placement], ask: int, node: int, count: int) -> None:
    """Appends a placement, adding it to the last one when that is the same
    ask on the same node (at most U32_MAX), as the Rust SDK's
    ``Placements::push``."""
    if placements and placements[-1].ask == ask and placements[-1].node == node:
        placements[-1] = Placement(ask, node, min(placements[-1].count + count, U32_MAX))
    else:
        placements.append(Placement(ask, node, count))


def _allowed(now: int, per: int, count: int, minimum: int, maximum: int) -> int:
    """How many of ``count`` containers a constraint takes one by one, from
    the first: each needs ``minimum <= tagged <= maximum`` where it goes,
    ``now`` tagged before the first and ``per`` more after each (its own
    tags that the constraint counts)."""
    if now < minimum or now > maximum:
        return 0
    if per == 0:
        return count
    return min(count, (maximum - now) // per + 1)


def keep_rules(snapshot: Snapshot, placements: Iterable[Placement]) -> List[Placement]:
    """``placements`` less what the host would refuse or hold back, in order:
    placements off their ask's partition go; a constrained ask's placement
    keeps only the containers before the first its constraint refuses (each
    placed container counting for the next); then every placement of a gang
    placed below its minimum goes. Consecutive placements of one ask on one
    node are merged. Raises ValueError for a placement that is not three
    u32s, IndexError for an ask or node out of range."""
    nodes, asks, round_ = snapshot.nodes, snapshot.asks, snapshot.round
    triples = _triples(snapshot, placements)
    constrained = any(ask.constraint is not None for ask in asks)
    counts = _Counts(nodes)
    if constrained:
        for n, node in enumerate(nodes):
            for tagged in node.tag_counts:
                counts.add(n, tagged.app, tagged.tag, tagged.count)
    kept: List[Placement] = []
    placed = [0] * len(asks)
    for k, n, count in triples:
        ask = asks[k]
        wanted, on = ask.partition, nodes[n].partition
        lent = round_.kind == "lending" and wanted == 0 and on == round_.partition
        if wanted != on and not lent:
            continue
        c = ask.constraint
        if c is not None:
            whose = None if c.all_apps else ask.app
            now = counts.count(c.scope, n, whose, c.tag)
            count = _allowed(now, ask.tags.count(c.tag), count, c.minimum, c.maximum)
            if count > 0:
                for tag in ask.tags:
                    counts.add(n, ask.app, tag, count)
        elif constrained:
            for tag in ask.tags:
                counts.add(n, ask.app, tag, count)
        if count > 0:
            placed[k] += count
            _push(kept, k, n, count)
    short = [ask.gang_minimum is not None and 0 < placed[k] < ask.gang_minimum for k, ask in enumerate(asks)]
    if not any(short):
        return kept
    whole: List[Placement] = []
    for ask, node, count in kept:
        if not short[ask]:
            _push(whole, ask, node, count)
    return whole


# The most times ``schedule_keeping_rules`` runs a round again for gangs placed
# in part (as the host, which asks at most four times in all).
MAX_REROUNDS = 3


def partial_gangs(snapshot: Snapshot, placements: Iterable[Placement]) -> List[int]:
    """The gang asks (indices, ascending) ``placements`` place below their
    minimum (but not none)."""
    asks = snapshot.asks
    if all(ask.gang_minimum is None for ask in asks):
        return []
    placed = [0] * len(asks)
    for ask, _, count in _triples(snapshot, placements, nodes=False):
        placed[ask] += count
    return [
        k
        for k, ask in enumerate(asks)
        if ask.gang_minimum is not None and 0 < placed[k] < ask.gang_minimum
    ]


def schedule_keeping_rules(
    snapshot: Snapshot, schedule: Callable[[Snapshot], Iterable[Placement]]
) -> List[Placement]:
    """``schedule(snapshot)``, kept to the host's rules (``keep_rules``), with
    gangs placed whole where they can be, as the host does for a policy that
    does not: while gangs are placed in part, the round runs again with the
    first of them alone in play (the others left out: ``pending`` 0, no
    ``gang_minimum``), then, if it is still in part, without it too, up to
    MAX_REROUNDS times -- so two gangs cannot split the room between them
    round after round, and the room one cannot use goes to the others. The
    answer is kept against ``snapshot`` itself."""
    placements = list(schedule(snapshot))
    left_out: Set[int] = set()
    alone: Optional[int] = None
    for _ in range(MAX_REROUNDS):
        partial = partial_gangs(snapshot, placements)
        if not partial:
            break
        first = partial[0]
        keep_first = alone != first
        left_out.update(g for g in partial if not (keep_first and g == first))
        alone = first if keep_first else None
        asks = [
            ask._replace(pending=0, gang_minimum=None) if k in left_out else ask
            for k, ask in enumerate(snapshot.asks)
        ]
        placements = list(schedule(snapshot._replace(asks=asks)))
    return keep_rules(snapshot, placements)


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
        view = snapshot_view(snapshot)
        chosen = active.policy.preempt(view, containers_view(running, view))
        return victims(chosen)

    guarded_schedule = _component.guarded("schedule", schedule)
    guarded_preempt = _component.guarded("preempt", preempt)

    class Scheduling:
        def schedule(self, snapshot: Any) -> Any:
            return guarded_schedule(snapshot)

        def preempt(self, snapshot: Any, running: Any) -> List[int]:
            return guarded_preempt(snapshot, running)

    return _component.world_class(active), Scheduling
