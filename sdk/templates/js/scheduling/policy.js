// {{name}}: a scheduling policy. It starts as a copy of Weft's fifo, first
// come first served, to change into your own.
//
// Every scheduling round the host sends a snapshot of the cluster and gets
// placements back: `count` containers of ask `ask` on node `node`. FIFO serves
// applications in submission order (the order of the snapshot's apps) and,
// within an application, its asks in order. Each ask gets as many of its
// pending containers as fit, node by node: first fit (the lowest node index
// with room in memory, vcores and GPUs) by default, or last fit (highest index
// first) with `node-order=last-fit`.
//
// There is no head-of-line blocking: an ask that does not fit entirely takes
// what fits, and later applications still use the room that is left.
// Priorities and queues are ignored. FIFO never preempts (the SDK's default
// `preempt`).
//
// The snapshot also carries partitions (node labels), racks, node
// attributes, each ask's locality, constraint, gang and tags, and decayed
// usage (see `snapshotView` in weft-policy.js); the FIFO round reads none of
// them. The host keeps it within them: a labelled cluster is scheduled a
// partition at a time, and an ask with a constraint or locality preference
// gets a round of its own with room only on the nodes it may use now. What
// the host would still refuse the SDK's `scheduleKeepingRules` takes out of
// the answer: placements off an ask's partition, containers against its
// constraint, and gangs placed in part (the round is run again without them,
// so their room goes to the others).
//
// Each ask scans the nodes, so a round costs O(asks × nodes); Weft's own fifo
// finds the next node with room in a max tree instead, for 10,000-node
// clusters. Sizes that already found no node this round are skipped without a
// scan.
//
// Everything here is plain JavaScript: `policy.test.js` runs it natively with
// `node --test`. `component.js` is the only file that knows it becomes a
// component.

import { scheduling } from "./weft-policy.js";

/** How many containers of `size` fit in `room` ([memory, vcores, GPUs]). A
 * resource the container does not use never limits it, so an all-zero size
 * fits without bound (Infinity). */
export function fits(room, size) {
  let count = Infinity;
  for (let d = 0; d < 3; d++) {
    if (size[d] > 0) count = Math.min(count, Math.floor(room[d] / size[d]));
  }
  return count;
}

export class Fifo extends scheduling.Policy {
  name = "{{name}}";
  version = "0.1.0";
  lastFit = false;

  configure(params) {
    const order = params.string("node-order", { default: "first-fit", choices: ["first-fit", "last-fit"] });
    this.lastFit = order === "last-fit";
  }

  schedule(snapshot) {
    // What the host would refuse goes: placements off an ask's partition,
    // containers against its constraint, gangs in part (the round run again
    // without them, so their room goes to the others).
    const lastFit = this.lastFit;
    return scheduling.scheduleKeepingRules(snapshot, (snapshot) => fifo(snapshot, lastFit));
  }
}

/** One FIFO round: each ask in submission order, as many containers as fit,
 * on nodes first fit (or last fit). */
export function fifo(snapshot, lastFit) {
  const room = snapshot.nodes.map((n) => [n.freeMemoryMb, n.freeVcores, n.freeGpus]);
  const order = room.map((_, i) => i);
  if (lastFit) order.reverse();
  // Submission order is app order; the sort is stable, so each app's asks
  // keep their own order.
  const queue = snapshot.asks.filter((a) => a.pending > 0).sort((a, b) => a.app - b.app);
  // Sizes that found no node: room only shrinks during a round, so no size
  // at least as large in every resource will find one either.
  const hopeless = [];
  const placements = [];
  for (const ask of queue) {
    const size = [ask.memoryMb, ask.vcores, ask.gpus];
    if (hopeless.some((known) => size.every((s, d) => s >= known[d]))) continue;
    let pending = ask.pending;
    for (const node of order) {
      const count = Math.min(fits(room[node], size), pending);
      if (count === 0) continue;
      room[node] = room[node].map((free, d) => free - size[d] * count);
      placements.push({ ask: ask.index, node, count });
      pending -= count;
      if (pending === 0) break;
    }
    if (pending > 0) hopeless.push(size);
  }
  return placements;
}
