"""Unit tests of the policy, natively: ``python3 -m pytest``. The same cases as
Weft's fifo crate."""

import random

import pytest

from weft_policy import ParamError, scheduling
from weft_policy.scheduling import Ask, Node, Partition, PlacementConstraint, Round, Snapshot

from policy import Fifo


def configured(pairs):
    """The policy configured with ``pairs`` as the host would do it."""
    return scheduling.configured(Fifo, pairs)


def snapshot(nodes, asks):
    """A snapshot from (free memory, vcores, gpus) node rows and
    (app, pending, memory, vcores, gpus) ask rows."""
    return Snapshot(
        now_ms=0,
        nodes=[Node(i, m, v, g, m, v, g) for i, (m, v, g) in enumerate(nodes)],
        queues=[],
        apps=[],
        asks=[Ask(i, *row) for i, row in enumerate(asks)],
    )


def triples(placements):
    return [(p.ask, p.node, p.count) for p in placements]


# (what, nodes, asks, node order, expected (ask, node, count))
CASES = [
    ("first fit fills the lowest node first",
     [(4096, 4, 0)] * 3, [(0, 6, 1024, 1, 0)], "first-fit", [(0, 0, 4), (0, 1, 2)]),
    ("last fit fills the highest node first",
     [(4096, 4, 0)] * 3, [(0, 6, 1024, 1, 0)], "last-fit", [(0, 2, 4), (0, 1, 2)]),
    ("first fit skips a node too small",
     [(512, 8, 0), (2048, 8, 0)], [(0, 1, 1024, 1, 0)], "first-fit", [(0, 1, 1)]),
    ("multi-resource: a node needs room in every resource",
     [(65536, 0, 0), (65536, 1, 0), (1024, 8, 0), (8192, 8, 0)], [(0, 4, 2048, 1, 0)],
     "first-fit", [(0, 1, 1), (0, 3, 3)]),
    ("vcores limit a node with plenty of memory",
     [(65536, 2, 0), (65536, 8, 0)], [(0, 5, 1024, 1, 0)], "first-fit", [(0, 0, 2), (0, 1, 3)]),
    ("gpu asks go only where gpus are",
     [(16384, 16, 0), (16384, 16, 1), (16384, 16, 4)], [(0, 3, 1024, 1, 2)], "first-fit",
     [(0, 2, 2)]),
    ("gpu-less asks may use gpu nodes",
     [(16384, 16, 4)], [(0, 2, 1024, 1, 0), (1, 2, 1024, 1, 2)], "first-fit",
     [(0, 0, 2), (1, 0, 2)]),
    ("apps are served in submission order, asks of one app in order",
     [(4096, 4, 0)],
     [(2, 4, 1024, 1, 0), (0, 2, 1024, 1, 0), (1, 4, 1024, 1, 0), (0, 1, 1024, 1, 0)],
     "first-fit", [(1, 0, 2), (3, 0, 1), (2, 0, 1)]),
    ("no head-of-line blocking: a later app uses what is left",
     [(4096, 4, 0)], [(0, 1, 8192, 1, 0), (1, 2, 1024, 1, 0)], "first-fit", [(1, 0, 2)]),
    ("a partly placed ask leaves the rest pending",
     [(2048, 2, 0), (1024, 1, 0)], [(0, 5, 1024, 1, 0), (1, 1, 1024, 1, 0)], "first-fit",
     [(0, 0, 2), (0, 1, 1)]),
    ("exhausted cluster places nothing",
     [(0, 0, 0), (512, 0, 0)], [(0, 3, 1024, 1, 0), (1, 1, 256, 1, 0)], "first-fit", []),
    ("no nodes places nothing", [], [(0, 3, 1024, 1, 0)], "last-fit", []),
    ("no asks places nothing", [(4096, 4, 0)], [], "first-fit", []),
    ("asks with nothing pending are skipped",
     [(4096, 4, 0)], [(0, 0, 1024, 1, 0), (1, 1, 1024, 1, 0)], "first-fit", [(1, 0, 1)]),
    ("an all-zero size fits without bound on the preferred node",
     [(0, 0, 0)] * 3, [(0, 7, 0, 0, 0)], "last-fit", [(0, 2, 7)]),
    ("last fit on a node count that is not a power of two",
     [(1024, 1, 0)] * 5, [(0, 2, 1024, 1, 0)], "last-fit", [(0, 4, 1), (0, 3, 1)]),
]


@pytest.mark.parametrize("what, nodes, asks, order, expected", CASES, ids=[c[0] for c in CASES])
def test_placements_match_the_table(what, nodes, asks, order, expected):
    policy = configured([("node-order", order)])
    assert triples(policy.schedule(snapshot(nodes, asks))) == expected


def test_never_over_allocates():
    rng = random.Random(7)
    for _ in range(200):
        nodes = [(rng.randrange(9) * 1024, rng.randrange(9), rng.randrange(3))
                 for _ in range(rng.randrange(40))]
        asks = [(rng.randrange(5), rng.randrange(20), rng.randrange(4) * 512, rng.randrange(3),
                 rng.randrange(2)) for _ in range(rng.randrange(12))]
        for order in ("first-fit", "last-fit"):
            placed = configured([("node-order", order)]).schedule(snapshot(nodes, asks))
            used = [[0, 0, 0] for _ in nodes]
            given = [0] * len(asks)
            for ask, node, count in triples(placed):
                assert count > 0
                given[ask] += count
                for d in range(3):
                    used[node][d] += asks[ask][2 + d] * count
            assert all(given[i] <= asks[i][1] for i in range(len(asks)))
            assert all(used[n][d] <= nodes[n][d] for n in range(len(nodes)) for d in range(3))


@pytest.mark.parametrize(
    "pairs, expected",
    [
        ([], False),
        ([("node-order", "first-fit")], False),
        ([("node-order", "last-fit")], True),
        ([("node-order", "last-fit"), ("node-order", "first-fit")], False),
    ],
)
def test_parameters_choose_the_node_order(pairs, expected):
    assert configured(pairs).last_fit is expected


@pytest.mark.parametrize(
    "pairs, words",
    [
        ([("node-order", "best-fit")], "node-order must be first-fit or last-fit, not 'best-fit'"),
        ([("priority", "on")], "has no parameter 'priority'"),
    ],
)
def test_bad_parameters_are_refused(pairs, words):
    with pytest.raises(ParamError, match=words):
        configured(pairs)


def test_a_gang_placed_in_part_is_left_out_and_its_room_goes_to_the_others():
    # Room for 6; app 0's gang of 8 would take it all and be held back by the
    # host, so the round runs again without it.
    round = snapshot([(4096, 4, 0), (2048, 2, 0)], [(0, 8, 1024, 1, 0), (1, 4, 1024, 1, 0)])
    gang = round.asks[0]._replace(gang_minimum=8)
    round = round._replace(asks=[gang, round.asks[1]])
    assert triples(configured([]).schedule(round)) == [(1, 0, 4)]


def test_placements_keep_partitions_and_constraints():
    # Node 1 is in the non-exclusive partition "spot": an ask for the default
    # partition may use it only in a lending round.
    round = snapshot([(1024, 1, 0), (4096, 4, 0)], [(0, 4, 1024, 1, 0)])
    round = round._replace(
        nodes=[round.nodes[0], round.nodes[1]._replace(partition=1)],
        partitions=(Partition(0, "", True), Partition(1, "spot", False)),
    )
    assert triples(configured([]).schedule(round)) == [(0, 0, 1)]
    lending = round._replace(round=Round("lending", 1))
    assert triples(configured([]).schedule(lending)) == [(0, 0, 1), (0, 1, 3)]
    # NOTIN,NODE,zk for containers tagged zk: one a node, the rest wait.
    zk = PlacementConstraint("NOTIN,NODE,zk", "node", "zk", False, 0, 0)
    round = snapshot([(4096, 4, 0), (4096, 4, 0)], [(0, 3, 1024, 1, 0)])
    round = round._replace(asks=[round.asks[0]._replace(constraint=zk, tags=("zk",))])
    assert triples(configured([]).schedule(round)) == [(0, 0, 1)]


def test_fifo_never_preempts():
    assert list(configured([]).preempt(snapshot([], []), [])) == []
