"""keep_rules and schedule_keeping_rules: the host's partition, constraint and
gang rules kept by a policy's own answer, as the Rust SDK keeps them."""

import random
from enum import Enum
from types import SimpleNamespace

import pytest

from weft_policy.scheduling import (
    MAX_REROUNDS,
    Ask,
    Node,
    Partition,
    Placement,
    PlacementConstraint,
    Round,
    Snapshot,
    TagCount,
    keep_rules,
    partial_gangs,
    schedule_keeping_rules,
    snapshot_view,
)

from test_views import wit_snapshot

GB = (1024, 1, 0)


def node(index, partition=0, rack=0, tag_counts=(), room=(4096, 4, 0)):
    return Node(index, *room, *room, partition=partition, rack=rack, tag_counts=tuple(tag_counts))


def ask(index, app=0, pending=1, **fields):
    return Ask(index, app, pending, *GB, **fields)


def snapshot(nodes, asks, kind="whole", partition=0, partitions=("",)):
    return Snapshot(
        now_ms=0,
        nodes=list(nodes),
        queues=[],
        apps=[],
        asks=list(asks),
        round=Round(kind, partition),
        partitions=tuple(Partition(i, name, i == 0) for i, name in enumerate(partitions)),
        racks=("/r0", "/r1"),
    )


def placements(rows):
    return [Placement(*row) for row in rows]


def triples(kept):
    return [tuple(p) for p in kept]


def constraint(text, scope, tag, minimum, maximum, all_apps=False):
    return PlacementConstraint(text, scope, tag, all_apps, minimum, maximum)


NOT_IN_NODE_ZK = constraint("NOTIN,NODE,zk", "node", "zk", 0, 0)


def test_anti_affinity_gangs_and_partitions_are_kept():
    # The Rust SDK's own case: two nodes of 4 GB, one app.
    s = snapshot(
        [node(0), node(1)],
        [
            ask(0, pending=3, constraint=NOT_IN_NODE_ZK, tags=("zk",)),  # one a node
            ask(1, pending=4, gang_minimum=4),  # a gang of 4
            ask(2, pending=1, partition=1),  # for the gpu partition
        ],
        partitions=("", "gpu"),
    )
    kept = keep_rules(s, placements([(0, 0, 2), (0, 1, 1), (1, 0, 2), (1, 1, 1), (2, 0, 1)]))
    # zk: one a node; the gang of 4 got 3, so none; the gpu ask is off its
    # partition.
    assert triples(kept) == [(0, 0, 1), (0, 1, 1)]
    assert all(isinstance(p, Placement) for p in kept)
    whole = keep_rules(s, placements([(1, 0, 2), (1, 1, 2)]))
    assert len(whole) == 2, "a gang placed whole stays"


def test_an_ask_goes_on_its_partition_and_a_lending_round_lends_to_the_default():
    nodes = [node(0, partition=0), node(1, partition=1), node(2, partition=2)]
    asks = [ask(0, partition=0), ask(1, partition=1)]
    rows = [(0, 0, 1), (0, 1, 1), (0, 2, 1), (1, 0, 1), (1, 1, 1), (1, 2, 1)]
    partitions = ("", "spot", "gpu")
    whole = snapshot(nodes, asks, partitions=partitions)
    assert triples(keep_rules(whole, placements(rows))) == [(0, 0, 1), (1, 1, 1)]
    # Lending spot's nodes: the default partition's ask may use them (and
    # only them), an ask for a label still only its own.
    lending = snapshot(nodes, asks, kind="lending", partition=1, partitions=partitions)
    assert triples(keep_rules(lending, placements(rows))) == [(0, 0, 1), (0, 1, 1), (1, 1, 1)]
    # Only a lending round lends.
    own = snapshot(nodes, asks, kind="partition", partition=1, partitions=partitions)
    assert triples(keep_rules(own, placements(rows))) == [(0, 0, 1), (1, 1, 1)]


def test_a_constraint_counts_the_snapshot_and_what_was_placed_before():
    # Rack 0 holds nodes 0 and 1, rack 1 node 2; app 1 runs a db container on
    # node 0.
    nodes = [node(0, rack=0, tag_counts=[TagCount(0, 1, "db", 1)]), node(1, rack=0), node(2, rack=1)]
    at_most_two_per_rack = constraint("db: at most 2 a rack", "rack", "db", 0, 2, all_apps=True)
    asks = [
        ask(0, app=0, pending=9, constraint=at_most_two_per_rack, tags=("db",)),
        ask(1, app=0, pending=9, tags=("db",)),  # unconstrained, but counted
        ask(2, app=0, pending=9, constraint=constraint("IN,NODE,all/db", "node", "db", 1, 2**32 - 1, all_apps=True)),
    ]
    s = snapshot(nodes, asks)
    # Rack 0 has app 1's db: ask 0 may add 2 there (counts 1, 2 before
    # each), then none on node 1; rack 1 takes 3 (0, 1, 2 before each).
    assert triples(keep_rules(s, placements([(0, 0, 5), (0, 1, 1), (0, 2, 5)]))) == [(0, 0, 2), (0, 2, 3)]
    # Ask 1's db containers on node 2 fill rack 1 for ask 0 and let ask 2 on
    # node 2; node 1 holds no db, so ask 2 is refused there; node 0 holds
    # app 1's, which every app's constraint counts.
    rows = [(1, 2, 3), (0, 2, 1), (2, 1, 4), (2, 2, 4), (2, 0, 1)]
    assert triples(keep_rules(s, placements(rows))) == [(1, 2, 3), (2, 2, 4), (2, 0, 1)]


def test_a_constraint_of_the_apps_own_counts_only_its_containers():
    # Node 0 runs app 1's zk; app 0's own NOTIN,NODE,zk does not see it, the
    # all-apps one does.
    nodes = [node(0, tag_counts=[TagCount(0, 1, "zk", 1)]), node(1)]
    own = ask(0, app=0, pending=2, constraint=NOT_IN_NODE_ZK, tags=("zk",))
    everyone = ask(1, app=2, pending=2, constraint=NOT_IN_NODE_ZK._replace(all_apps=True), tags=("zk",))
    s = snapshot(nodes, [own, everyone])
    assert triples(keep_rules(s, placements([(0, 0, 2)]))) == [(0, 0, 1)]
    assert triples(keep_rules(s, placements([(1, 0, 2), (1, 1, 2)]))) == [(1, 1, 1)]
    # App 0's zk on node 1 is every app's for ask 1, not app 2's own.
    assert triples(keep_rules(s, placements([(0, 1, 1), (1, 1, 1)]))) == [(0, 1, 1)]
    own_of_app_2 = everyone._replace(constraint=NOT_IN_NODE_ZK)
    s = snapshot(nodes, [own, own_of_app_2])
    assert triples(keep_rules(s, placements([(0, 1, 1), (1, 1, 1), (1, 0, 1)]))) == [(0, 1, 1), (1, 1, 1), (1, 0, 1)]


def test_a_gang_cut_by_its_constraint_goes_whole():
    gang = ask(0, pending=2, gang_minimum=2, constraint=NOT_IN_NODE_ZK, tags=("zk",))
    s = snapshot([node(0), node(1)], [gang, ask(1, pending=5)])
    assert triples(keep_rules(s, placements([(0, 0, 2), (1, 0, 1)]))) == [(1, 0, 1)]
    assert triples(keep_rules(s, placements([(0, 0, 1), (0, 1, 1)]))) == [(0, 0, 1), (0, 1, 1)]
    assert partial_gangs(s, placements([(0, 0, 1), (1, 0, 3)])) == [0]
    assert partial_gangs(s, placements([(0, 0, 2)])) == []
    assert partial_gangs(s, []) == []


def test_kept_placements_of_one_ask_on_one_node_are_merged():
    asks = [ask(0, pending=9), ask(1, pending=9, partition=1), ask(2, pending=3, gang_minimum=3)]
    s = snapshot([node(0), node(1)], asks, partitions=("", "gpu"))
    rows = [(0, 0, 1), (1, 0, 1), (0, 0, 2), (2, 0, 1), (0, 0, 1), (0, 1, 0), (0, 1, 1)]
    assert triples(keep_rules(s, placements(rows))) == [(0, 0, 4), (0, 1, 1)]


def test_a_placement_that_is_not_one_is_refused():
    s = snapshot([node(0)], [ask(0)])
    with pytest.raises(IndexError, match="placement 1: ask is 1, but there are 1 asks"):
        keep_rules(s, [(0, 0, 1), (1, 0, 1)])
    with pytest.raises(IndexError, match="placement 0: node is 3"):
        keep_rules(s, [(0, 3, 1)])
    with pytest.raises(ValueError, match="placement 0: count is -1"):
        keep_rules(s, [(0, 0, -1)])
    with pytest.raises(ValueError, match="placement 0: ask is -1"):
        keep_rules(s, [(-1, 0, 1)])


def test_tuples_and_no_placements_are_answers_too():
    s = snapshot([node(0)], [ask(0, pending=2)])
    assert keep_rules(s, iter([(0, 0, 2)])) == [Placement(0, 0, 2)]
    assert keep_rules(s, []) == []
    assert schedule_keeping_rules(s, lambda _: []) == []


class RoundKind(Enum):
    """Stands in for the bindings' round-kind."""

    LENDING = 2


def test_keep_rules_on_a_snapshot_view_of_the_hosts_records():
    # wit_snapshot: a restricted round of partition gpu; node 2 (gpu, rack 1)
    # holds 3 of app 1's zk; ask 1 (app 1, gpu, a gang of 4) is NOTIN,RACK,zk
    # and tagged zk; ask 0 is for the default partition.
    view = snapshot_view(wit_snapshot())
    assert triples(keep_rules(view, placements([(0, 0, 1), (0, 2, 1), (1, 2, 4)]))) == [(0, 0, 1)]
    # Without app 1's zk, rack 1 takes one of the gang, so none of it stays
    # (and one of the same ask were it no gang).
    fewer = snapshot_view(wit_snapshot(tag_counts=SimpleNamespace(node=[1], app=[0], tag=["zk"], count=[1])))
    assert triples(keep_rules(fewer, placements([(1, 2, 4)]))) == []
    no_gang = fewer._replace(asks=[fewer.asks[0], fewer.asks[1]._replace(gang_minimum=None)])
    assert triples(keep_rules(no_gang, placements([(1, 2, 4)]))) == [(1, 2, 1)]
    # A lending round of gpu lends node 2 to ask 0.
    lending = snapshot_view(wit_snapshot(round=SimpleNamespace(kind=RoundKind.LENDING, partition=1)))
    assert lending.round.kind == "lending"
    assert triples(keep_rules(lending, placements([(0, 0, 1), (0, 2, 1)]))) == [(0, 0, 1), (0, 2, 1)]


def first_fit(s):
    """Each ask in order, as many containers as fit, lowest node first."""
    room = [n.free_memory_mb // 1024 for n in s.nodes]
    out = []
    for a in s.asks:
        pending = a.pending
        for n in range(len(room)):
            count = min(room[n], pending)
            if count:
                room[n] -= count
                pending -= count
                out.append(Placement(a.index, n, count))
    return out


def test_a_gang_placed_in_part_is_left_out_and_the_round_run_again():
    # 6 GB of room; the gang wants 8 and would take 6, leaving app 1 none.
    nodes = [node(0), node(1, room=(2048, 2, 0))]
    s = snapshot(nodes, [ask(0, app=0, pending=8, gang_minimum=8), ask(1, app=1, pending=4)])
    seen = []

    def schedule(view):
        seen.append([(a.pending, a.gang_minimum) for a in view.asks])
        return first_fit(view)

    assert triples(schedule_keeping_rules(s, schedule)) == [(1, 0, 4)]
    # Alone in play first (no other gang to leave out, so the same round),
    # then, still in part, left out.
    assert seen == [[(8, 8), (4, None)], [(8, 8), (4, None)], [(0, None), (4, None)]]
    # The snapshot passed in is untouched.
    assert s.asks[0].pending == 8 and s.asks[0].gang_minimum == 8


def halves(s):
    """Shares 8 containers' room on node 0 out evenly among the asks in play
    (pending > 0), each at most its pending (the Rust SDK's test policy)."""
    live = [a for a in s.asks if a.pending > 0]
    return [Placement(a.index, 0, min(8 // len(live), a.pending)) for a in live]


def test_two_gangs_splitting_the_room_get_it_one_at_a_time():
    s = snapshot([node(0, room=(8192, 8, 0))], [ask(k, app=k, pending=6, gang_minimum=6) for k in range(2)])
    assert triples(halves(s)) == [(0, 0, 4), (1, 0, 4)]
    assert triples(schedule_keeping_rules(s, halves)) == [(0, 0, 6)], "the first gang alone, whole"


def test_gangs_left_out_add_up_over_the_reruns():
    # Two gangs split the room with a plain ask; the first, alone in play,
    # still cannot be placed whole, so it is left out as well as the second,
    # and the plain ask gets the room.
    asks = [ask(0, pending=10, gang_minimum=10), ask(1, app=1, pending=6, gang_minimum=6), ask(2, app=2, pending=4)]
    s = snapshot([node(0, room=(8192, 8, 0))], asks)
    rounds = []

    def schedule(view):
        rounds.append([a.pending for a in view.asks])
        return halves(view)

    assert triples(schedule_keeping_rules(s, schedule)) == [(2, 0, 4)]
    assert rounds == [[10, 6, 4], [10, 0, 4], [0, 0, 4]]


def test_reruns_stop_after_the_most_and_what_is_left_is_kept_to_the_rules():
    s = snapshot([node(0)], [ask(0, pending=4, gang_minimum=4), ask(1, pending=1)])
    calls = []

    def stubborn(view):
        # Places the gang in part whatever the snapshot says.
        calls.append(view)
        return [Placement(0, 0, 2), Placement(1, 0, 1)]

    assert triples(schedule_keeping_rules(s, stubborn)) == [(1, 0, 1)]
    # At most four rounds in all, as the host asks.
    assert len(calls) == 1 + MAX_REROUNDS == 4


def test_a_round_without_partial_gangs_runs_once():
    s = snapshot([node(0)], [ask(0, pending=2, gang_minimum=2, partition=1)], partitions=("", "gpu"))
    calls = []

    def schedule(view):
        calls.append(view)
        return [Placement(0, 0, 2)]

    # Placed whole, so no rerun; then off its partition, so dropped.
    assert schedule_keeping_rules(s, schedule) == []
    assert len(calls) == 1


# The Rust SDK's keep_rules, line for line (a container at a time), to check
# the SDK's against on random answers.
def reference(s, rows):
    asks, nodes = s.asks, s.nodes
    by = {}

    def add(n, app, tag, count):
        for key in (("node", n), ("rack", nodes[n].rack)):
            for whose in (None, app):
                by[key + (tag, whose)] = by.get(key + (tag, whose), 0) + count

    for n, nd in enumerate(nodes):
        for t in nd.tag_counts:
            add(n, t.app, t.tag, t.count)
    kept, placed = [], [0] * len(asks)
    for k, n, count in rows:
        a = asks[k]
        lent = s.round.kind == "lending" and a.partition == 0 and nodes[n].partition == s.round.partition
        if a.partition != nodes[n].partition and not lent:
            continue
        c = a.constraint
        if c is not None:
            allowed = 0
            place = n if c.scope == "node" else nodes[n].rack
            while allowed < count:
                now = by.get((c.scope, place, c.tag, None if c.all_apps else a.app), 0)
                if now < c.minimum or now > c.maximum:
                    break
                allowed += 1
                for tag in a.tags:
                    add(n, a.app, tag, 1)
            count = allowed
        else:
            for tag in a.tags:
                add(n, a.app, tag, count)
        if count > 0:
            placed[k] += count
            if kept and kept[-1][:2] == (k, n):
                kept[-1] = (k, n, kept[-1][2] + count)
            else:
                kept.append((k, n, count))
    short = [a.gang_minimum is not None and 0 < placed[k] < a.gang_minimum for k, a in enumerate(asks)]
    whole = []
    for k, n, count in kept:
        if not short[k]:
            if whole and whole[-1][:2] == (k, n):
                whole[-1] = (k, n, whole[-1][2] + count)
            else:
                whole.append((k, n, count))
    return whole


def test_keep_rules_matches_a_container_at_a_time_on_random_answers():
    rng = random.Random(11)
    tags = ("zk", "db", "web")
    for _ in range(500):
        n_nodes, n_apps = rng.randrange(1, 6), rng.randrange(1, 4)
        nodes = [
            node(n, partition=rng.randrange(3), rack=rng.randrange(2),
                 tag_counts=[TagCount(n, rng.randrange(n_apps), rng.choice(tags), rng.randrange(1, 3))
                             for _ in range(rng.randrange(3))])
            for n in range(n_nodes)
        ]
        asks = []
        for k in range(rng.randrange(1, 6)):
            pending = rng.randrange(1, 8)
            c = None
            if rng.random() < 0.6:
                minimum = rng.choice((0, 0, 1, 2))
                c = constraint("c", rng.choice(("node", "rack")), rng.choice(tags), minimum,
                               rng.choice((minimum, minimum + 1, minimum + 3, 2**32 - 1)), rng.random() < 0.5)
            asks.append(ask(k, app=rng.randrange(n_apps), pending=pending, partition=rng.randrange(3),
                            gang_minimum=rng.choice((None, None, rng.randrange(1, pending + 1))),
                            constraint=c, tags=tuple(rng.choice(tags) for _ in range(rng.randrange(3)))))
        s = snapshot(nodes, asks, kind=rng.choice(("whole", "partition", "lending")), partition=rng.randrange(3),
                     partitions=("", "a", "b"))
        rows = [(rng.randrange(len(asks)), rng.randrange(n_nodes), rng.randrange(6)) for _ in range(rng.randrange(12))]
        assert triples(keep_rules(s, placements(rows))) == reference(s, rows), (s, rows)
