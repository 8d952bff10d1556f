"""{{name}}: a scheduling policy. It starts as a copy of Weft's fifo, first come
first served, to change into your own.

Every scheduling round the host sends a snapshot of the cluster and gets
placements back: ``count`` containers of ask ``ask`` on node ``node``. FIFO
serves applications in submission order (the order of the snapshot's apps) and,
within an application, its asks in order. Each ask gets as many of its pending
containers as fit, node by node: first fit (the lowest node index with room in
memory, vcores and GPUs) by default, or last fit (highest index first) with
``node-order=last-fit``.

There is no head-of-line blocking: an ask that does not fit entirely takes what
fits, and later applications still use the room that is left. Priorities and
queues are ignored. FIFO never preempts (the SDK's default ``preempt``).

The snapshot also carries partitions (node labels), racks, node attributes,
each ask's locality, constraint, gang and tags, and decayed usage (see
``weft_policy.scheduling``); the FIFO round reads none of them. The host
keeps it within them: a labelled cluster is scheduled a partition at a time,
and an ask with a constraint or locality preference gets a round of its own
with room only on the nodes it may use now. What the host would still refuse
the SDK's ``schedule_keeping_rules`` takes out of the answer: placements off
an ask's partition, containers against its constraint, and gangs placed in
part (the round is run again without them, so their room goes to the
others).

Each ask scans the nodes, so a round costs O(asks × nodes); Weft's own fifo
finds the next node with room in a max tree instead, for 10,000-node clusters.
Sizes that already found no node this round are skipped without a scan.

Everything here is plain Python: ``test_policy.py`` runs it natively with
pytest. ``app.py`` is the only file that knows it becomes a component.
"""

from typing import List, Optional

from weft_policy import Params
from weft_policy.scheduling import Ask, Placement, Policy, Snapshot, schedule_keeping_rules


def fits(room: List[int], size: List[int]) -> Optional[int]:
    """How many containers of ``size`` fit in ``room`` (memory, vcores, GPUs).
    A resource the container does not use never limits it, so an all-zero
    size fits without bound (None)."""
    counts = [free // need for free, need in zip(room, size) if need > 0]
    return min(counts) if counts else None


class Fifo(Policy):
    name = "{{name}}"
    version = "0.1.0"

    def __init__(self) -> None:
        self.last_fit = False

    def configure(self, params: Params) -> None:
        order = params.string("node-order", "first-fit", choices=("first-fit", "last-fit"))
        self.last_fit = order == "last-fit"

    def schedule(self, snapshot: Snapshot) -> List[Placement]:
        # What the host would refuse goes: placements off an ask's
        # partition, containers against its constraint, gangs in part (the
        # round run again without them, so their room goes to the others).
        last_fit = self.last_fit
        return schedule_keeping_rules(snapshot, lambda snapshot: fifo(snapshot, last_fit))


def fifo(snapshot: Snapshot, last_fit: bool) -> List[Placement]:
    """One FIFO round: each ask in submission order, as many containers as
    fit, on nodes first fit (or last fit)."""
    room = [[n.free_memory_mb, n.free_vcores, n.free_gpus] for n in snapshot.nodes]
    order = list(range(len(room)))
    if last_fit:
        order.reverse()
    # Submission order is app order; the sort is stable, so each app's
    # asks keep their own order.
    queue: List[Ask] = sorted((a for a in snapshot.asks if a.pending > 0), key=lambda a: a.app)
    # Sizes that found no node: room only shrinks during a round, so no
    # size at least as large in every resource will find one either.
    hopeless: List[List[int]] = []
    placements: List[Placement] = []
    for ask in queue:
        size = [ask.memory_mb, ask.vcores, ask.gpus]
        if any(all(s >= h for s, h in zip(size, known)) for known in hopeless):
            continue
        pending = ask.pending
        for node in order:
            can = fits(room[node], size)
            count = pending if can is None else min(can, pending)
            if count == 0:
                continue
            room[node] = [free - need * count for free, need in zip(room[node], size)]
            placements.append(Placement(ask=ask.index, node=node, count=count))
            pending -= count
            if pending == 0:
                break
        if pending > 0:
            hopeless.append(size)
    return placements
