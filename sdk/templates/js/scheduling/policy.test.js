// Unit tests of the policy, natively: `node --test`. The same cases as Weft's
// fifo crate, and one round through the component glue.

import assert from "node:assert/strict";
import { test } from "node:test";

import { Fifo } from "./policy.js";
import { ParamError, scheduling } from "./weft-policy.js";

/** The policy configured with `pairs` as the host would do it. */
const configured = (pairs) => scheduling.configured(Fifo, pairs);

/** A snapshot from [free memory, vcores, gpus] node rows and
 * [app, pending, memory, vcores, gpus] ask rows. */
function snapshot(nodes, asks) {
  return {
    nowMs: 0,
    nodes: nodes.map(([m, v, g], index) => ({
      index,
      freeMemoryMb: m,
      freeVcores: v,
      freeGpus: g,
      capacityMemoryMb: m,
      capacityVcores: v,
      capacityGpus: g,
    })),
    queues: [],
    apps: [],
    asks: asks.map(([app, pending, memoryMb, vcores, gpus], index) => ({ index, app, pending, memoryMb, vcores, gpus })),
  };
}

const triples = (placements) => placements.map((p) => [p.ask, p.node, p.count]);
const times = (n, row) => Array.from({ length: n }, () => row);

// [what, nodes, asks, node order, expected [ask, node, count]]
const CASES = [
  ["first fit fills the lowest node first", times(3, [4096, 4, 0]), [[0, 6, 1024, 1, 0]], "first-fit", [[0, 0, 4], [0, 1, 2]]],
  ["last fit fills the highest node first", times(3, [4096, 4, 0]), [[0, 6, 1024, 1, 0]], "last-fit", [[0, 2, 4], [0, 1, 2]]],
  ["first fit skips a node too small", [[512, 8, 0], [2048, 8, 0]], [[0, 1, 1024, 1, 0]], "first-fit", [[0, 1, 1]]],
  ["multi-resource: a node needs room in every resource", [[65536, 0, 0], [65536, 1, 0], [1024, 8, 0], [8192, 8, 0]], [[0, 4, 2048, 1, 0]], "first-fit", [[0, 1, 1], [0, 3, 3]]],
  ["vcores limit a node with plenty of memory", [[65536, 2, 0], [65536, 8, 0]], [[0, 5, 1024, 1, 0]], "first-fit", [[0, 0, 2], [0, 1, 3]]],
  ["gpu asks go only where gpus are", [[16384, 16, 0], [16384, 16, 1], [16384, 16, 4]], [[0, 3, 1024, 1, 2]], "first-fit", [[0, 2, 2]]],
  ["gpu-less asks may use gpu nodes", [[16384, 16, 4]], [[0, 2, 1024, 1, 0], [1, 2, 1024, 1, 2]], "first-fit", [[0, 0, 2], [1, 0, 2]]],
  ["apps are served in submission order, asks of one app in order", [[4096, 4, 0]], [[2, 4, 1024, 1, 0], [0, 2, 1024, 1, 0], [1, 4, 1024, 1, 0], [0, 1, 1024, 1, 0]], "first-fit", [[1, 0, 2], [3, 0, 1], [2, 0, 1]]],
  ["no head-of-line blocking: a later app uses what is left", [[4096, 4, 0]], [[0, 1, 8192, 1, 0], [1, 2, 1024, 1, 0]], "first-fit", [[1, 0, 2]]],
  ["a partly placed ask leaves the rest pending", [[2048, 2, 0], [1024, 1, 0]], [[0, 5, 1024, 1, 0], [1, 1, 1024, 1, 0]], "first-fit", [[0, 0, 2], [0, 1, 1]]],
  ["exhausted cluster places nothing", [[0, 0, 0], [512, 0, 0]], [[0, 3, 1024, 1, 0], [1, 1, 256, 1, 0]], "first-fit", []],
  ["no nodes places nothing", [], [[0, 3, 1024, 1, 0]], "last-fit", []],
  ["no asks places nothing", [[4096, 4, 0]], [], "first-fit", []],
  ["asks with nothing pending are skipped", [[4096, 4, 0]], [[0, 0, 1024, 1, 0], [1, 1, 1024, 1, 0]], "first-fit", [[1, 0, 1]]],
  ["an all-zero size fits without bound on the preferred node", times(3, [0, 0, 0]), [[0, 7, 0, 0, 0]], "last-fit", [[0, 2, 7]]],
  ["last fit on a node count that is not a power of two", times(5, [1024, 1, 0]), [[0, 2, 1024, 1, 0]], "last-fit", [[0, 4, 1], [0, 3, 1]]],
];

test("placements match the table", () => {
  for (const [what, nodes, asks, order, expected] of CASES) {
    const policy = configured([["node-order", order]]);
    assert.deepEqual(triples(policy.schedule(snapshot(nodes, asks))), expected, what);
  }
});

test("never over-allocates", () => {
  // A small deterministic generator, so failures reproduce.
  let seed = 7;
  const below = (n) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  for (let round = 0; round < 200; round++) {
    const nodes = times(below(40), null).map(() => [below(9) * 1024, below(9), below(3)]);
    const asks = times(below(12), null).map(() => [below(5), below(20), below(4) * 512, below(3), below(2)]);
    for (const order of ["first-fit", "last-fit"]) {
      const placed = triples(configured([["node-order", order]]).schedule(snapshot(nodes, asks)));
      const used = nodes.map(() => [0, 0, 0]);
      const given = asks.map(() => 0);
      for (const [ask, node, count] of placed) {
        assert.ok(count > 0, "empty placement");
        given[ask] += count;
        for (let d = 0; d < 3; d++) used[node][d] += asks[ask][2 + d] * count;
      }
      asks.forEach((ask, i) => assert.ok(given[i] <= ask[1], `round ${round}: ask ${i} over pending`));
      nodes.forEach((node, n) => node.forEach((free, d) => assert.ok(used[n][d] <= free, `round ${round}: node ${n} over`)));
    }
  }
});

test("parameters choose the node order", () => {
  assert.equal(configured([]).lastFit, false);
  assert.equal(configured([["node-order", "last-fit"]]).lastFit, true);
  assert.equal(configured([["node-order", "last-fit"], ["node-order", "first-fit"]]).lastFit, false);
  assert.throws(() => configured([["node-order", "best-fit"]]), (e) => e instanceof ParamError && /node-order must be first-fit or last-fit, not "best-fit"/.test(e.message));
  assert.throws(() => configured([["priority", "on"]]), /has no parameter "priority"/);
});

test("a gang placed in part is left out and its room goes to the others", () => {
  // Room for 6; app 0's gang of 8 would take it all and be held back by the
  // host, so the round runs again without it.
  const round = snapshot([[4096, 4, 0], [2048, 2, 0]], [[0, 8, 1024, 1, 0], [1, 4, 1024, 1, 0]]);
  round.asks[0].gangMinimum = 8;
  assert.deepEqual(triples(configured([]).schedule(round)), [[1, 0, 4]]);
});

test("placements keep partitions and constraints", () => {
  // Node 1 is in the non-exclusive partition "spot": an ask for the default
  // partition may use it only in a lending round.
  const round = snapshot([[1024, 1, 0], [4096, 4, 0]], [[0, 4, 1024, 1, 0]]);
  round.nodes[1].partition = 1;
  round.partitions = [{ index: 0, name: "", exclusive: true }, { index: 1, name: "spot", exclusive: false }];
  assert.deepEqual(triples(configured([]).schedule(round)), [[0, 0, 1]]);
  const lending = { ...round, round: { kind: "lending", partition: 1 } };
  assert.deepEqual(triples(configured([]).schedule(lending)), [[0, 0, 1], [0, 1, 3]]);
  // NOTIN,NODE,zk for containers tagged zk: one a node, the rest wait.
  const zk = snapshot([[4096, 4, 0], [4096, 4, 0]], [[0, 3, 1024, 1, 0]]);
  zk.asks[0].constraint = { text: "NOTIN,NODE,zk", scope: "node", tag: "zk", allApps: false, minimum: 0, maximum: 0 };
  zk.asks[0].tags = ["zk"];
  assert.deepEqual(triples(configured([]).schedule(zk)), [[0, 0, 1]]);
});

/** A WIT `snapshot` record as the host sends it: one partition and rack,
 * root and one leaf queue, one app, and `asks` ([pending, memory, vcores,
 * gpus] rows of app 0) on nodes of [free memory, vcores, gpus]. */
function snapshotRecord(nodes, asks) {
  const column = (rows, i) => rows.map((row) => row[i]);
  const each = (rows, value) => rows.map(() => value);
  return {
    nowMs: 0n,
    round: { kind: "whole", partition: 0 },
    partitions: { name: [""], exclusive: [true] },
    racks: ["/default-rack"],
    nodes: {
      freeMemoryMb: column(nodes, 0),
      freeVcores: column(nodes, 1),
      freeGpus: column(nodes, 2),
      capacityMemoryMb: column(nodes, 0),
      capacityVcores: column(nodes, 1),
      capacityGpus: column(nodes, 2),
      partition: each(nodes, 0),
      rack: each(nodes, 0),
    },
    nodeAttributes: { node: [], attribute: [] },
    queues: {
      path: ["root", "root.default"],
      parent: [0, 0],
      capacity: [100, 100],
      maximumCapacity: [100, 100],
      minimumUserLimitPercent: [100, 100],
      userLimitFactor: [null, null],
      fair: [false, false],
      usedMemoryMb: [0, 0],
      usedVcores: [0, 0],
      usedGpus: [0, 0],
      decayedMemoryMbSeconds: [0, 0],
      decayedVcoreSeconds: [0, 0],
      decayedGpuSeconds: [0, 0],
    },
    partitionShares: { queue: [0, 1], partition: [0, 0], capacity: [100, 100], maximumCapacity: [100, 100] },
    apps: {
      queue: [1],
      user: [0],
      priority: [0],
      submitTimeMs: [0n],
      usedMemoryMb: [0n],
      usedVcores: [0n],
      usedGpus: [0n],
      name: ["demo"],
      applicationType: ["weft"],
      project: ["default"],
      startTimeMs: [null],
      deadlineMs: [null],
      userDecayedMemoryMbSeconds: [0],
      userDecayedVcoreSeconds: [0],
      userDecayedGpuSeconds: [0],
    },
    appTags: { app: [], tag: [] },
    asks: {
      app: each(asks, 0),
      pending: column(asks, 0),
      memoryMb: column(asks, 1).map(BigInt),
      vcores: column(asks, 2).map(BigInt),
      gpus: column(asks, 3).map(BigInt),
      partition: each(asks, 0),
      localityLevel: each(asks, "off-switch"),
      relaxLocality: each(asks, true),
      missedOpportunities: each(asks, 0),
      gangMinimum: each(asks, null),
      constraint: each(asks, null),
      executionType: each(asks, "guaranteed"),
    },
    askNodes: { ask: [], node: [] },
    askRacks: { ask: [], rack: [] },
    askTags: { ask: [], tag: [] },
    tagCounts: { node: [], app: [], tag: [], count: [] },
    localityDelays: { nodeLocalityDelay: 0, rackLocalityAdditionalDelay: null },
  };
}

test("a round through the component glue, columns in and out", () => {
  const exports = scheduling.component(Fifo, { log: () => {} });
  exports.configure([]);
  const record = snapshotRecord([[4096, 4, 0], [4096, 4, 0]], [[6, 1024, 1, 0]]);
  assert.deepEqual(exports.scheduling.schedule(record), { ask: [0, 0], node: [0, 1], count: [4, 2] });
  const running = {
    app: [0],
    node: [1],
    memoryMb: [1024n],
    vcores: [1n],
    gpus: [0n],
    startTimeMs: [0n],
    executionType: ["guaranteed"],
    tags: { container: [], tag: [] },
  };
  assert.deepEqual(exports.scheduling.preempt(record, running), []);
});
