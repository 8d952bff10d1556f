"""The kinds' views and checks: rows from columns, log bounds, snapshots and
their sparse tables, placements, admissions, the walk and the timeline
builder. Pricing has its own file."""

import re
from enum import Enum
from types import SimpleNamespace

import pytest

from weft_policy import log
from weft_policy import scheduling, sharing
from weft_policy.columns import MalformedInput
from weft_policy.log import MAX_MESSAGE_CHARS, bounded
from weft_policy.sharing import Resources, Step, Timeline


def test_log_goes_to_the_sink_bounded():
    lines = []
    log.use_sink(lambda level, message: lines.append((level, message)))
    try:
        log.info("hello")
        log.error("x" * (MAX_MESSAGE_CHARS + 5))
        with pytest.raises(ValueError, match="log level must be one of"):
            log.write("loud", "no")
    finally:
        log.use_sink(lambda level, message: None)
    assert lines[0] == ("info", "hello")
    assert lines[1][0] == "error" and lines[1][1].endswith("… (5 more characters)")
    assert bounded("short") == "short"


class Level(Enum):
    """Stands in for a WIT enum of the generated bindings."""

    NODE_LOCAL = 0
    OFF_SWITCH = 2


class Kind(Enum):
    GUARANTEED = 0
    OPPORTUNISTIC = 1
    RESTRICTED = 3
    RACK = 4


def cols(**columns):
    return SimpleNamespace(**columns)


def wit_snapshot(**changes):
    """A 0.3.0 snapshot as the host sends it: two partitions, two racks, three
    nodes, root and one leaf, two apps, two asks, and every sparse table."""
    fields = dict(
        now_ms=9,
        round=cols(kind=Kind.RESTRICTED, partition=1),
        partitions=cols(name=["", "gpu"], exclusive=[True, False]),
        racks=["/r0", "/r1"],
        nodes=cols(
            free_memory_mb=[10, 20, 30], free_vcores=[1, 2, 3], free_gpus=[0, 0, 4],
            capacity_memory_mb=[10, 20, 30], capacity_vcores=[1, 2, 3], capacity_gpus=[0, 0, 4],
            partition=[0, 0, 1], rack=[0, 1, 1],
        ),
        node_attributes=cols(node=[2, 2], attribute=[cols(key="gpu-model", value="a100"), cols(key="ssd", value="")]),
        queues=cols(
            path=["root", "root.a"], parent=[0, 0], capacity=[100.0, 100.0], maximum_capacity=[100.0, 100.0],
            minimum_user_limit_percent=[100.0, 100.0], user_limit_factor=[None, 2.0], fair=[False, True],
            used_memory_mb=[5, 5], used_vcores=[1, 1], used_gpus=[0, 0],
            decayed_memory_mb_seconds=[7.0, 7.0], decayed_vcore_seconds=[1.5, 1.5], decayed_gpu_seconds=[0.0, 0.0],
        ),
        partition_shares=cols(queue=[1, 1], partition=[0, 1], capacity=[100.0, 50.0], maximum_capacity=[100.0, 80.0]),
        apps=cols(
            queue=[1, 1], user=[0, 1], priority=[1, 0], submit_time_ms=[5, 6],
            used_memory_mb=[5, 0], used_vcores=[1, 0], used_gpus=[0, 0],
            name=["etl", "train"], application_type=["SPARK", "weft"], project=["data", "ml"],
            start_time_ms=[6, None], deadline_ms=[None, 100],
            user_decayed_memory_mb_seconds=[7.0, 0.0], user_decayed_vcore_seconds=[1.5, 0.0],
            user_decayed_gpu_seconds=[0.0, 0.0],
        ),
        app_tags=cols(app=[1, 1], tag=["gpu", "nightly"]),
        asks=cols(
            app=[0, 1], pending=[2, 4], memory_mb=[5, 10], vcores=[1, 1], gpus=[0, 1], partition=[0, 1],
            locality_level=[Level.OFF_SWITCH, Level.NODE_LOCAL], relax_locality=[True, False],
            missed_opportunities=[0, 3], gang_minimum=[None, 4],
            constraint=[
                None,
                cols(text="NOTIN,NODE,zk", scope=Kind.RACK, tag="zk", all_apps=False, minimum=0, maximum=0),
            ],
            execution_type=[Kind.GUARANTEED, Kind.OPPORTUNISTIC],
        ),
        ask_nodes=cols(ask=[1, 1], node=[2, 1]),
        ask_racks=cols(ask=[1], rack=[1]),
        ask_tags=cols(ask=[1], tag=["zk"]),
        tag_counts=cols(node=[1, 2, 2], app=[0, 0, 1], tag=["zk", "zk", "zk"], count=[1, 2, 3]),
        locality_delays=cols(node_locality_delay=3, rack_locality_additional_delay=None),
    )
    fields.update(changes)
    return SimpleNamespace(**fields)


def test_snapshot_rows_carry_their_index_and_their_tables():
    view = scheduling.snapshot_view(wit_snapshot())
    assert view.now_ms == 9 and view.round == scheduling.Round("restricted", 1)
    assert view.partitions[1] == scheduling.Partition(1, "gpu", False) and view.racks == ("/r0", "/r1")
    assert view.nodes[1][:9] == (1, 20, 2, 0, 20, 2, 0, 0, 1)
    assert dict(view.nodes[2].attributes) == {"gpu-model": "a100", "ssd": ""} and view.nodes[0].attributes == {}
    assert view.queues[0].user_limit_factor is None and view.queues[1].path == "root.a"
    assert view.queues[1].decayed_vcore_seconds == 1.5
    assert view.queues[1].partition_shares[1] == scheduling.PartitionShare(1, 1, 50.0, 80.0)
    assert view.queues[0].partition_shares == {} and len(view.partition_shares) == 2
    assert view.apps[1].name == "train" and view.apps[1].project == "ml" and view.apps[1].tags == ("gpu", "nightly")
    assert view.apps[0].start_time_ms == 6 and view.apps[1].deadline_ms == 100 and view.apps[0].tags == ()
    ask = view.asks[1]
    assert (ask.index, ask.pending, ask.partition) == (1, 4, 1)
    assert (ask.locality_level, ask.relax_locality) == ("node-local", False)
    assert (ask.missed_opportunities, ask.gang_minimum, ask.execution_type) == (3, 4, "opportunistic")
    assert ask.constraint == scheduling.PlacementConstraint("NOTIN,NODE,zk", "rack", "zk", False, 0, 0)
    assert ask.constraint.allows(0) and not ask.constraint.allows(1)
    assert (ask.preferred_nodes, ask.preferred_racks, ask.tags) == ((2, 1), (1,), ("zk",))
    assert view.asks[0].locality_level == "off-switch" and view.asks[0].preferred_nodes == ()
    assert view.nodes[2].tag_count("zk") == 5 and view.nodes[2].tag_count("zk", app=0) == 2
    assert view.nodes[0].tag_count("zk") == 0 and view.rack_tag_count(1, "zk", app=0) == 3
    assert view.locality_delays == scheduling.LocalityDelays(3, None)


def test_snapshot_rows_and_lookups_are_read_only():
    view = scheduling.snapshot_view(wit_snapshot())
    with pytest.raises(TypeError):
        view.nodes[2].attributes["ssd"] = "x"
    with pytest.raises(AttributeError):
        view.apps[1].tags.append("x")


def ragged_asks():
    asks = wit_snapshot().asks
    asks.gpus = [0]
    return asks


@pytest.mark.parametrize(
    "changes, words",
    [
        (dict(asks=ragged_asks()),
         "asks: its columns differ in length (2 app, 2 pending, 2 memory-mb, 2 vcores, 1 gpus"),
        (dict(partitions=cols(name=["", "gpu"], exclusive=[True])),
         "partitions: its columns differ in length (2 name, 1 exclusive)"),
        (dict(round=cols(kind=Kind.RESTRICTED, partition=2)), "round: partition is 2, but there are 2 partitions"),
        (dict(racks=["/r0"]), "nodes: rack[1] is 1, but there are 1 racks"),
        (dict(app_tags=cols(app=[2], tag=["x"])), "app-tags: app[0] is 2, but there are 2 apps"),
        (dict(ask_nodes=cols(ask=[0], node=[3])), "ask-nodes: node[0] is 3, but there are 3 nodes"),
        (dict(ask_racks=cols(ask=[5], rack=[0])), "ask-racks: ask[0] is 5, but there are 2 asks"),
        (dict(node_attributes=cols(node=[0, 1], attribute=[cols(key="k", value="v")])), "node-attributes: its columns"),
        (dict(tag_counts=cols(node=[0], app=[7], tag=["zk"], count=[1])), "tag-counts: app[0] is 7"),
        (dict(partition_shares=cols(queue=[2], partition=[0], capacity=[1.0], maximum_capacity=[1.0])),
         "partition-shares: queue[0] is 2, but there are 2 queues"),
    ],
)
def test_malformed_snapshots_are_refused_naming_the_table(changes, words):
    with pytest.raises(MalformedInput, match=re.escape(words)):
        scheduling.snapshot_view(wit_snapshot(**changes))


def test_containers_carry_their_execution_type_and_tags():
    running = cols(
        app=[0, 1], node=[0, 2], memory_mb=[5, 10], vcores=[1, 1], gpus=[0, 1], start_time_ms=[1, 2],
        execution_type=[Kind.GUARANTEED, Kind.OPPORTUNISTIC], tags=cols(container=[1, 1], tag=["zk", "a"]),
    )
    snapshot = scheduling.snapshot_view(wit_snapshot())
    containers = scheduling.containers_view(running, snapshot)
    assert containers[0] == scheduling.Container(0, 0, 0, 5, 1, 0, 1, "guaranteed", ())
    assert containers[1].execution_type == "opportunistic" and containers[1].tags == ("zk", "a")
    running.tags = cols(container=[2], tag=["zk"])
    with pytest.raises(MalformedInput, match=r"containers: tags: container\[0\] is 2, but there are 2 containers"):
        scheduling.containers_view(running, snapshot)
    running.tags, running.node = cols(container=[], tag=[]), [0, 3]
    with pytest.raises(MalformedInput, match=r"containers: node\[1\] is 3, but there are 3 nodes"):
        scheduling.containers_view(running, snapshot)


def test_rows_built_by_hand_take_the_defaults():
    node = scheduling.Node(0, 1, 1, 0, 1, 1, 0)
    assert (node.partition, node.rack, node.attributes, node.tag_counts) == (0, 0, {}, ())
    ask = scheduling.Ask(0, 0, 1, 1, 1, 0)
    assert (ask.locality_level, ask.constraint, ask.execution_type, ask.tags) == ("off-switch", None, "guaranteed", ())
    view = scheduling.Snapshot(now_ms=0, nodes=[node], queues=[], apps=[], asks=[ask])
    assert view.round.kind == "whole" and view.partitions[0].name == "" and view.rack_tag_count(0, "zk") == 0


def test_placements_become_columns_of_u32():
    placements = [scheduling.Placement(0, 1, 2), scheduling.Placement(3, 4, 5)]
    assert scheduling.placement_columns(placements) == ([0, 3], [1, 4], [2, 5])
    for bad in ([scheduling.Placement(-1, 0, 1)], [scheduling.Placement(0, 2**32, 1)], [(0, 0, 1.5)]):
        with pytest.raises(ValueError, match="placement 0"):
            scheduling.placement_columns(bad)
    with pytest.raises(ValueError, match="preempted container 1"):
        scheduling.victims([0, -2])


def columns(timeline):
    return SimpleNamespace(**sharing.timeline_columns(timeline))


PLAN = SimpleNamespace(
    now_ms=7, reservation_name="nightly", recurring=True, reservations=3, user_reservations=1, users=2
)


def admission(candidate=Timeline(), plan=Timeline(), from_ms=0, to_ms=100, capacity=(100, 10, 2)):
    settings = SimpleNamespace(
        queue="root.q", capacity=SimpleNamespace(memory_mb=capacity[0], vcores=capacity[1], gpus=capacity[2]),
        reservation_window_ms=10, instantaneous_max_capacity=50.0, average_capacity=25.0,
    )
    return sharing.admission_view(
        SimpleNamespace(
            settings=settings, user="u", reservation_id="r", from_ms=from_ms, to_ms=to_ms,
            candidate=columns(candidate), user_committed=columns(Timeline()), plan_committed=columns(plan),
            context=PLAN,
        )
    )


def block(start, end, amount):
    return Timeline([Step(start, Resources(*amount)), Step(end, Resources(0, 0, 0))])


def test_admission_problems_are_named():
    ragged = columns(block(0, 10, (1, 0, 0)))
    ragged.vcores.pop()
    view = admission()
    assert view.problem is None
    assert view.context == sharing.PlanContext(7, "nightly", True, 3, 1, 2)
    cases = [
        (admission(from_ms=5, to_ms=4), "the range [5, 4) ms runs backwards"),
        (admission(capacity=(2**40, 0, 0)), "settings: the capacity is 1099511627776 MB"),
        (admission(candidate=block(90, 110, (1, 0, 0))), "candidate: it holds resources from t=90 ms until t=110 ms"),
        (admission(candidate=Timeline([Step(90, Resources(1, 0, 0))])), "from t=90 ms on, outside the range"),
        (admission(plan=Timeline([Step(3, Resources(1, 0, 0)), Step(3, Resources(0, 0, 0))])),
         "plan-committed: at-ms must strictly increase, but at-ms[0] is 3 and at-ms[1] is 3"),
        (admission(plan=block(0, 2**53, (1, 0, 0))), "plan-committed: at-ms[1] is 9007199254740992, beyond"),
        (admission(plan=block(0, 5, (0, 2**40, 0))), "plan-committed: vcores[0] is 1099511627776, above"),
    ]
    for view, words in cases:
        assert view.problem is not None and words in view.problem, view.problem
    whole = sharing.admission_view(
        SimpleNamespace(
            settings=admission().settings._replace(capacity=SimpleNamespace(memory_mb=1, vcores=1, gpus=1)),
            user="u", reservation_id="r", from_ms=0, to_ms=100,
            candidate=ragged, user_committed=columns(Timeline()), plan_committed=columns(Timeline()),
            context=PLAN,
        )
    )
    assert whole.problem == "candidate: its columns differ in length (2 at-ms, 2 memory-mb, 1 vcores, 2 gpus)"


def test_candidate_span_is_clipped_to_the_range():
    assert admission(candidate=block(10, 20, (1, 0, 0))).candidate_span() == (10, 20)
    assert admission().candidate_span() is None
    zero_then_some = Timeline([Step(0, Resources(0, 0, 0)), Step(30, Resources(0, 1, 0)), Step(40, Resources(0, 0, 0))])
    assert admission(candidate=zero_then_some).candidate_span() == (30, 40)


def test_walk_merges_the_steps_of_several_timelines():
    a = block(0, 20, (10, 1, 0))
    b = Timeline([Step(-5, Resources(1, 0, 0)), Step(10, Resources(2, 0, 1)), Step(30, Resources(0, 0, 0))])
    stretches = [(s.from_ms, s.to_ms, s.amounts[0][0], s.amounts[1][0]) for s in sharing.walk((a, b), -10, 40)]
    assert stretches == [(-10, -5, 0, 0), (-5, 0, 0, 1), (0, 10, 10, 1), (10, 20, 10, 2), (20, 30, 0, 2), (30, 40, 0, 0)]
    cut = [(s.from_ms, s.to_ms) for s in sharing.walk((a, b), 5, 15)]
    assert cut == [(5, 10), (10, 15)]
    assert list(sharing.walk((a,), 7, 7)) == []
    assert a.amount_at(5) == Resources(10, 1, 0) and a.amount_at(-1) == Resources(0, 0, 0)


def test_builder_leaves_out_steps_that_change_nothing():
    builder = sharing.TimelineBuilder()
    builder.push(0, Resources(0, 0, 0))
    builder.push(5, Resources(3, 0, 0))
    builder.push(7, Resources(3, 0, 0))
    builder.push(9, Resources(1, 0, 0))
    assert builder.finish(12).at_ms == [5, 9, 12]
    assert sharing.TimelineBuilder().finish(10) == Timeline()


def test_window_must_be_a_whole_number_of_ms():
    assert sharing.checked_window(5) == 5
    for bad in (-1, 1.5, True, 2**53):
        with pytest.raises(ValueError, match="window is"):
            sharing.checked_window(bad)
