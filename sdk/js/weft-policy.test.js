// Unit tests of the SDK itself, natively: `node --test` in sdk/js. The same
// cases as sdk/python/tests, in JavaScript's shape.

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  MAX_KEY_CHARS,
  MAX_MESSAGE_CHARS,
  MAX_PARAMS,
  MAX_VALUE_CHARS,
  MalformedInput,
  ParamError,
  Params,
  bounded,
  integer,
  log,
  pricing,
  scheduling,
  sharing,
} from "./weft-policy.js";

const { Timeline, TimelineBuilder, resources } = sharing;

test("typed readers take the last value or the default", () => {
  const params = new Params(
    [["rate", "1"], ["rate", " 2.5 "], ["count", "-3"], ["mode", "fast"], ["on", "true"]],
    "demo",
  );
  assert.equal(params.number("rate", { default: 0 }), 2.5);
  assert.equal(params.integer("count", { default: 0 }), -3);
  assert.equal(params.string("mode", { default: "slow", choices: ["slow", "fast"] }), "fast");
  assert.equal(params.boolean("on", { default: false }), true);
  assert.equal(params.number("absent", { default: 7 }), 7);
  assert.ok(params.given("rate") && !params.given("absent"));
  params.refuseUnknown();
});

test("bad values are refused naming the key", () => {
  const cases = [
    [(p) => p.number("k", { default: 0, min: 0 }), "-1", 'demo: k must be a number at least 0, not "-1"'],
    [(p) => p.number("k", { default: 0 }), "NaN", 'k must be a number, not "NaN"'],
    [(p) => p.number("k", { default: 0 }), "1e999", "k must be a number"],
    [(p) => p.number("k", { default: 0 }), "", "k must be a number"],
    [(p) => p.number("k", { default: 0, min: 0, max: 1 }), "2", "from 0 to 1"],
    [(p) => p.integer("k", { default: 0, max: 9 }), "10", "a whole number at most 9"],
    [(p) => p.integer("k", { default: 0 }), "1.5", "a whole number"],
    [(p) => p.integer("k", { default: 0 }), "9007199254740993", "a whole number"],
    [(p) => p.string("k", { default: "a", choices: ["a", "b"] }), "c", 'k must be a or b, not "c"'],
    [(p) => p.boolean("k", { default: false }), "yes", 'k must be true or false, not "yes"'],
  ];
  for (const [reader, value, words] of cases) {
    assert.throws(
      () => reader(new Params([["k", value]], "demo")),
      (error) => error instanceof ParamError && error.message.includes(words),
      `${value}: ${words}`,
    );
  }
});

test("unknown keys are refused but standard ones ignored", () => {
  const params = new Params([["price.base.gpu", "2"], ["rate", "1"], ["discount", "10"]], "demo", ["price.base.gpu"]);
  params.number("rate", { default: 0 });
  assert.deepEqual(params.unknown(), ["discount"]);
  assert.throws(() => params.refuseUnknown(), {
    message: 'demo has no parameter "discount" (given discount=10); it takes rate',
  });
});

test("a family of keys is read by its prefix", () => {
  const params = new Params(
    [["project.ml", "2"], ["rate", "1"], ["project.web", " 0.5 "], ["project.ml", "3"], ["projects", "x"]],
    "demo",
  );
  assert.deepEqual(params.withPrefix("project."), [["ml", "3"], ["web", "0.5"]]);
  assert.deepEqual(params.withPrefix("night."), []);
  params.number("rate", { default: 0 });
  // `projects` is not of the family; the refusal names the family once.
  assert.deepEqual(params.unknown(), ["projects"]);
  assert.throws(() => params.refuseUnknown(), {
    message: 'demo has no parameter "projects" (given projects=x); it takes night.*, project.*, rate',
  });
});

test("oversized input is refused", () => {
  const cases = [
    [Array.from({ length: MAX_PARAMS + 1 }, () => ["k", "v"]), `at most ${MAX_PARAMS} parameters`],
    [[["k".repeat(MAX_KEY_CHARS + 1), "v"]], `longer than ${MAX_KEY_CHARS} characters`],
    [[["k", "v".repeat(MAX_VALUE_CHARS + 1)]], `the value of k is longer than ${MAX_VALUE_CHARS}`],
  ];
  for (const [pairs, words] of cases) {
    assert.throws(() => new Params(pairs, "demo"), (e) => e instanceof ParamError && e.message.includes(words));
  }
});

test("log goes to the sink, bounded", () => {
  const lines = [];
  log.useSink((level, message) => lines.push([level, message]));
  try {
    log.info("hello");
    log.error("x".repeat(MAX_MESSAGE_CHARS + 5));
    assert.throws(() => log.write("loud", "no"), /log level must be one of/);
  } finally {
    log.useSink(() => {});
  }
  assert.deepEqual(lines[0], ["info", "hello"]);
  assert.ok(lines[1][1].endsWith("… (5 more characters)"));
  assert.equal(bounded("short"), "short");
});

test("64-bit integers are plain numbers, whatever the runtime passes", () => {
  assert.equal(integer(5n, "x"), 5);
  assert.equal(integer(-5, "x"), -5);
  assert.throws(() => integer(2n ** 60n, "usage.memory-mb[0]"), (e) => e instanceof MalformedInput && /usage\.memory-mb\[0\] is 1152921504606846976, beyond 2\^53 - 1/.test(e.message));
  assert.throws(() => integer(2 ** 60, "x"), /not an integer within 2\^53 - 1/);
  assert.throws(() => integer(1.5, "x"), MalformedInput);
});

class Flat extends pricing.Policy {
  price(row, multiplicators) {
    return row.seconds * row.vcores * multiplicators.general;
  }
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** A WIT `charge-context` record. */
function chargeContext(fields = {}) {
  return {
    app: "application_1700000000000_0001",
    queue: "root.a",
    user: "alice",
    project: "ml",
    applicationType: "weft",
    applicationTags: ["nightly"],
    priority: 0,
    nodeLabel: "",
    nodeAttributes: [{ key: "nm.yarn.io/gpu-model", value: "a100" }],
    executionType: "guaranteed",
    reservation: null,
    ...fields,
  };
}

/** A WIT `usage` record of two rows sharing one context. */
const usage = (columns = {}) => ({
  seconds: [1, 2],
  memoryMb: [1, 2],
  vcores: [3, 4],
  gpus: [0, 0],
  startMs: [0, 0],
  endMs: [1000, 2000],
  context: [0, 0],
  contexts: [chargeContext()],
  ...columns,
});

/** A WIT `market` record. */
function market(fields = {}) {
  const amount = (memoryMb, vcores, gpus) => ({ memoryMb, vcores, gpus });
  return {
    nowMs: 5n,
    utilization: { memory: 0.5, vcores: 0.25, gpus: 0 },
    partitions: [{ name: "", capacity: amount(8192n, 8n, 0n), used: amount(4096n, 2n, 0n), pending: amount(0n, 0n, 0n) }],
    queues: [{ path: "root.a", guaranteed: amount(4096, 4, 0), used: amount(1024, 1, 0), pending: amount(2048, 2, 0) }],
    last: { general: 1, gpu: 1 },
    ...fields,
  };
}

test("charge prices each row, with its shared context", () => {
  assert.deepEqual(pricing.charge(new Flat(), usage(), { general: 2, gpu: 1 }), [6, 16]);
  const rows = pricing.usageRows(usage({ memoryMb: new BigUint64Array([1n, 2n]), endMs: new BigInt64Array([1000n, 2000n]) }));
  const { context, ...numbers } = rows[1];
  assert.deepEqual(numbers, { seconds: 2, memoryMb: 2, vcores: 4, gpus: 0, startMs: 0, endMs: 2000 });
  assert.equal(context.project, "ml");
  assert.equal(context.nodeAttributes.get("nm.yarn.io/gpu-model"), "a100");
  assert.deepEqual(context.applicationTags, ["nightly"]);
  assert.equal(context.reservation, null);
  assert.equal(context.executionType, "guaranteed");
  // One view per context, shared by its rows, and frozen: a row cannot
  // change what another row's price sees.
  assert.equal(rows[0].context, context);
  assert.ok(Object.isFrozen(context) && Object.isFrozen(context.applicationTags));
  assert.equal(pricing.contextView(chargeContext({ reservation: "reservation_1_0001" })).reservation, "reservation_1_0001");
});

test("charge refuses what the host promised not to send, and bad prices", () => {
  const one = { general: 1, gpu: 1 };
  assert.throws(() => pricing.charge(new Flat(), usage({ memoryMb: [1] }), one), {
    message: "usage: its columns differ in length (2 seconds, 1 memory-mb, 2 vcores, 2 gpus, 2 start-ms, 2 end-ms, 2 context)",
  });
  const malformed = [
    [{ seconds: [1, NaN] }, "usage.seconds[1] is NaN"],
    [{ seconds: [-1, 1] }, "usage.seconds[0] is -1"],
    [{ startMs: [0, 2001] }, "usage row 1 runs backwards: start-ms 2001 is after end-ms 2000"],
    [{ context: [0, 1] }, "usage.context[1] is 1, but there are 1 contexts"],
    [{ endMs: [2n ** 60n, 0] }, "usage.end-ms[0] is 1152921504606846976, beyond 2^53 - 1"],
  ];
  for (const [columns, words] of malformed) {
    assert.throws(() => pricing.charge(new Flat(), usage(columns), one), (e) => e instanceof MalformedInput && e.message.includes(words), words);
  }
  for (const [answer, words] of [[NaN, "is NaN"], [-1, "is -1"], ["1", "is 1"], [Infinity, "is Infinity"]]) {
    class Bad extends pricing.Policy {
      price() {
        return answer;
      }
    }
    assert.throws(() => pricing.charge(new Bad(), usage(), one), (e) => e.message.includes(words) && e.message.includes("of application_1700000000000_0001"));
  }
});

test("the market is viewed as plain numbers, and checked", () => {
  const view = pricing.marketView(market());
  assert.equal(view.nowMs, 5);
  assert.deepEqual(view.partitions[0], {
    name: "",
    capacity: { memoryMb: 8192, vcores: 8, gpus: 0 },
    used: { memoryMb: 4096, vcores: 2, gpus: 0 },
    pending: { memoryMb: 0, vcores: 0, gpus: 0 },
  });
  assert.deepEqual(view.queues[0].pending, { memoryMb: 2048, vcores: 2, gpus: 0 });
  assert.equal(view.queues[0].path, "root.a");
  assert.deepEqual(view.last, { general: 1, gpu: 1 });
  const bad = [
    [{ utilization: { memory: -0.1, vcores: 0, gpus: 0 } }, "market.utilization.memory is -0.1"],
    [{ utilization: { memory: 0, vcores: Infinity, gpus: 0 } }, "market.utilization.vcores is Infinity"],
    [{ last: { general: 1, gpu: NaN } }, "market.last.gpu is NaN"],
  ];
  for (const [fields, words] of bad) {
    assert.throws(() => pricing.marketView(market(fields)), (e) => e instanceof MalformedInput && e.message.includes(words), words);
  }
  assert.throws(
    () => pricing.marketView(market({ queues: [{ path: "q", guaranteed: { memoryMb: 2n ** 60n, vcores: 0, gpus: 0 }, used: {}, pending: {} }] })),
    /market\.queues\[0\]\.guaranteed\.memory-mb is/,
  );
});

test("multiplicators must be finite and not negative", () => {
  class Surge extends pricing.Policy {
    multiplicators(market) {
      return { general: market.utilization.memory * 2, gpu: -1 };
    }
  }
  assert.throws(() => pricing.checkedMultiplicators(new Surge(), pricing.marketView(market())), /multiplicator gpu is -1/);
  assert.deepEqual(pricing.checkedMultiplicators(new pricing.Policy(), pricing.marketView(market())), { general: 1, gpu: 1 });
});

/** A WIT `quote-request` record. */
function quoteRequest(fields = {}) {
  return { context: chargeContext(), memoryMb: 1024n, vcores: 2n, gpus: 0n, containers: 3, startMs: 1000n, durationMs: 60_000n, ...fields };
}

test("a quote is the containers times one container's row, priced", () => {
  const request = pricing.quoteView(quoteRequest());
  const { context, ...row } = pricing.quoteRow(request);
  assert.deepEqual(row, { seconds: 60, memoryMb: 1024, vcores: 2, gpus: 0, startMs: 1000, endMs: 61_000 });
  assert.equal(context.project, "ml");
  // Flat: 60 s × 2 vcores × 1.5, three containers.
  assert.equal(pricing.quote(new Flat(), quoteRequest(), { general: 1.5, gpu: 1 }), 540);
  assert.equal(pricing.quote(new Flat(), quoteRequest({ containers: 0 }), { general: 1, gpu: 1 }), 0);
  // The end saturates at the latest instant a number holds exactly.
  const late = pricing.quoteView(quoteRequest({ startMs: Number.MAX_SAFE_INTEGER - 5 }));
  assert.equal(pricing.quoteRow(late).endMs, Number.MAX_SAFE_INTEGER);
  assert.throws(() => pricing.quoteView(quoteRequest({ durationMs: -1 })), (e) => e instanceof MalformedInput && /duration-ms is -1/.test(e.message));
  class Bad extends pricing.Policy {
    quote() {
      return -2;
    }
  }
  assert.throws(() => pricing.quote(new Bad(), quoteRequest(), { general: 1, gpu: 1 }), /quote is -2: it must be a finite number at least 0/);
});

test("every pricing export goes through the glue", () => {
  const exports = pricing.component(Flat, { log: () => {} });
  exports.configure([["price.base.general", "2"]]);
  assert.deepEqual(exports.pricing.multiplicators(market()), { general: 1, gpu: 1 });
  assert.deepEqual(exports.pricing.charge(usage(), { general: 2, gpu: 1 }), [6, 16]);
  assert.equal(exports.pricing.quote(quoteRequest(), { general: 1, gpu: 1 }), 360);
  assert.throws(() => exports.pricing.multiplicators(market({ last: { general: -1, gpu: 1 } })), /multiplicators failed: market\.last\.general is -1/);
  log.useSink(() => {});
});

test("night fraction: the share of an interval in the night hours", () => {
  const at = (day, hour, minute = 0) => day * DAY + hour * HOUR + minute * 60_000;
  const { nightFraction } = pricing;
  // [what, start, end, start hour, end hour, fraction]
  const cases = [
    ["fully inside a wrapping night", at(3, 23), at(4, 5), 22, 6, 1],
    ["fully inside, before midnight", at(3, 22), at(3, 23, 30), 22, 6, 1],
    ["fully outside", at(3, 8), at(3, 20), 22, 6, 0],
    ["across midnight, half in", at(3, 20), at(4, 0), 22, 6, 0.5],
    ["across the night's end", at(4, 4), at(4, 8), 22, 6, 0.5],
    ["a whole day: 8 of 24 hours", at(3, 12), at(4, 12), 22, 6, 1 / 3],
    ["several days", at(3, 0), at(10, 0), 22, 6, 8 / 24],
    ["several days and a bit", at(3, 22), at(6, 23), 22, 6, (3 * 8 + 1) / (3 * 24 + 1)],
    ["a non-wrapping window", at(3, 0), at(4, 0), 1, 5, 4 / 24],
    ["non-wrapping, partly in", at(3, 4), at(3, 6), 1, 5, 0.5],
    ["non-wrapping, outside", at(3, 5), at(3, 23), 1, 5, 0],
    ["equal hours: no night", at(3, 0), at(5, 0), 7, 7, 0],
    ["zero length inside", at(3, 23), at(3, 23), 22, 6, 1],
    ["zero length at the night's start", at(3, 22), at(3, 22), 22, 6, 1],
    ["zero length at the night's end", at(3, 6), at(3, 6), 22, 6, 0],
    ["zero length outside", at(3, 12), at(3, 12), 22, 6, 0],
    ["before the epoch", at(-2, 20), at(-1, 0), 22, 6, 0.5],
    ["a night from midnight", at(3, 0), at(3, 2), 0, 1, 0.5],
    ["a night to midnight", at(3, 23), at(4, 1), 23, 0, 0.5],
  ];
  for (const [what, start, end, startHour, endHour, expected] of cases) {
    assert.equal(nightFraction(start, end, startHour, endHour), expected, what);
  }
  // Exact on whole ms, however long: a century from the epoch.
  const century = nightFraction(0, 36_525 * DAY + HOUR, 22, 6);
  assert.equal(century, (36_525 * 8 * HOUR + HOUR) / (36_525 * DAY + HOUR));
  assert.equal(nightFraction(at(3, 5, 59) + 59_999, at(3, 6), 22, 6), 1);
  for (const [args, words] of [
    [[0, 1, 24, 6], /startHour is 24/],
    [[0, 1, 22, 1.5], /endHour is 1.5/],
    [[2, 1, 22, 6], /the start not after the end/],
    [[0, 2 ** 53, 22, 6], /whole ms/],
  ]) {
    assert.throws(() => nightFraction(...args), words);
  }
});

test("an exception is logged with its stack and traps; configure answers err", () => {
  class Broken extends pricing.Policy {
    configure(params) {
      if (params.given("explode")) throw new TypeError("configure blew up");
      params.boolean("explode", { default: false });
    }
    price() {
      throw new RangeError("price blew up");
    }
  }
  const lines = [];
  const exports = pricing.component(Broken, { log: (level, message) => lines.push([level, message]) });
  assert.deepEqual(exports.describe(), { name: "pricing-policy", version: "0.1.0", kind: "pricing" });
  exports.configure([]);
  assert.throws(() => exports.pricing.charge(usage(), { general: 1, gpu: 1 }), (e) => e instanceof Error && /charge failed: price blew up/.test(e.message));
  assert.equal(lines[0][0], "error");
  assert.match(lines[0][1], /^charge failed:\nRangeError: price blew up\n\s+at /);
  assert.throws(() => exports.configure([["explode", "true"]]), (thrown) => thrown === "pricing-policy: configure failed: TypeError: configure blew up");
  assert.match(lines[1][1], /^configure failed:\nTypeError: configure blew up/);
  log.useSink(() => {});
});

/** A WIT `snapshot` record with every 0.3.0 table holding rows: two nodes
 * (the second in partition "gpu" on rack /r2), root and root.a, two apps,
 * two asks (the second preferring node 1 and rack 1, with a constraint). */
function snapshotRecord() {
  return {
    nowMs: 9n,
    round: { kind: "whole", partition: 0 },
    partitions: { name: ["", "gpu"], exclusive: [true, false] },
    racks: ["/r1", "/r2"],
    nodes: {
      freeMemoryMb: [10, 20],
      freeVcores: [1, 2],
      freeGpus: [0, 4],
      capacityMemoryMb: [10, 20],
      capacityVcores: [1, 2],
      capacityGpus: [0, 4],
      partition: [0, 1],
      rack: [0, 1],
    },
    nodeAttributes: {
      node: [1, 1],
      attribute: [{ key: "nm.yarn.io/gpu-model", value: "a100" }, { key: "nm.yarn.io/ssd", value: "" }],
    },
    queues: {
      path: ["root", "root.a"],
      parent: [0, 0],
      capacity: [100, 100],
      maximumCapacity: [100, 100],
      minimumUserLimitPercent: [100, 100],
      userLimitFactor: [null, 2],
      fair: [false, true],
      usedMemoryMb: [0, 0],
      usedVcores: [0, 0],
      usedGpus: [0, 0],
      decayedMemoryMbSeconds: [5, 5],
      decayedVcoreSeconds: [1, 1],
      decayedGpuSeconds: [0, 0],
    },
    partitionShares: { queue: [0, 1, 1], partition: [0, 0, 1], capacity: [100, 100, 50], maximumCapacity: [100, 100, 80] },
    apps: {
      queue: [1, 1],
      user: [0, 1],
      priority: [1, 0],
      submitTimeMs: [5n, 6n],
      usedMemoryMb: [0, 0],
      usedVcores: [0, 0],
      usedGpus: [0, 0],
      name: ["etl", "train"],
      applicationType: ["SPARK", "weft"],
      project: ["data", "ml"],
      startTimeMs: [7n, null],
      deadlineMs: [undefined, 100n],
      userDecayedMemoryMbSeconds: [1, 2],
      userDecayedVcoreSeconds: [1, 2],
      userDecayedGpuSeconds: [0, 3],
    },
    appTags: { app: [1, 1], tag: ["nightly", "team-x"] },
    asks: {
      app: [0, 1],
      pending: [2, 1],
      memoryMb: [5n, 5n],
      vcores: [1, 1],
      gpus: [0, 1],
      partition: [0, 1],
      localityLevel: ["off-switch", "node-local"],
      relaxLocality: [true, false],
      missedOpportunities: [0, 3],
      gangMinimum: [null, 1],
      constraint: [null, { text: "NOTIN,NODE,zk", scope: "node", tag: "zk", allApps: false, minimum: 0, maximum: 0 }],
      executionType: ["guaranteed", "opportunistic"],
    },
    askNodes: { ask: [1], node: [1] },
    askRacks: { ask: [1], rack: [1] },
    askTags: { ask: [1], tag: ["zk"] },
    tagCounts: { node: [1], app: [1], tag: ["zk"], count: [2] },
    localityDelays: { nodeLocalityDelay: 2, rackLocalityAdditionalDelay: null },
  };
}

test("snapshot rows carry their index and every field, sparse tables per item", () => {
  const view = scheduling.snapshotView(snapshotRecord());
  assert.equal(view.nowMs, 9);
  assert.deepEqual(view.round, { kind: "whole", partition: 0 });
  assert.deepEqual(view.partitions, [{ index: 0, name: "", exclusive: true }, { index: 1, name: "gpu", exclusive: false }]);
  assert.deepEqual(view.racks, ["/r1", "/r2"]);
  assert.deepEqual(view.localityDelays, { nodeLocalityDelay: 2, rackLocalityAdditionalDelay: null });
  assert.deepEqual(view.nodes[1], {
    index: 1,
    freeMemoryMb: 20,
    freeVcores: 2,
    freeGpus: 4,
    capacityMemoryMb: 20,
    capacityVcores: 2,
    capacityGpus: 4,
    partition: 1,
    rack: 1,
    attributes: new Map([["nm.yarn.io/gpu-model", "a100"], ["nm.yarn.io/ssd", ""]]),
    tagCounts: [{ app: 1, tag: "zk", count: 2 }],
  });
  assert.deepEqual(view.nodes[0].attributes, new Map());
  assert.deepEqual(view.nodes[0].tagCounts, []);
  const [root, a] = view.queues;
  assert.equal(root.userLimitFactor, null);
  assert.equal(a.path, "root.a");
  assert.equal(a.decayedMemoryMbSeconds, 5);
  assert.deepEqual(a.partitionShares, new Map([[0, { capacity: 100, maximumCapacity: 100 }], [1, { capacity: 50, maximumCapacity: 80 }]]));
  assert.equal(root.partitionShares.get(1), undefined);
  const [etl, train] = view.apps;
  assert.deepEqual(
    [etl.name, etl.applicationType, etl.project, etl.submitTimeMs, etl.startTimeMs, etl.deadlineMs, etl.tags],
    ["etl", "SPARK", "data", 5, 7, null, []],
  );
  assert.deepEqual([train.startTimeMs, train.deadlineMs, train.userDecayedGpuSeconds, train.tags], [null, 100, 3, ["nightly", "team-x"]]);
  const ask = view.asks[1];
  assert.deepEqual(
    [ask.partition, ask.localityLevel, ask.relaxLocality, ask.missedOpportunities, ask.gangMinimum, ask.executionType],
    [1, "node-local", false, 3, 1, "opportunistic"],
  );
  assert.equal(ask.constraint.text, "NOTIN,NODE,zk");
  assert.deepEqual([ask.preferredNodes, ask.preferredRacks, ask.tags], [[1], [1], ["zk"]]);
  assert.deepEqual([view.asks[0].constraint, view.asks[0].gangMinimum, view.asks[0].preferredNodes], [null, null, []]);
  // The tables themselves, as rows.
  assert.deepEqual(view.nodeAttributes[0], { node: 1, key: "nm.yarn.io/gpu-model", value: "a100" });
  assert.deepEqual(view.partitionShares[2], { queue: 1, partition: 1, capacity: 50, maximumCapacity: 80 });
  assert.deepEqual(view.appTags, [{ app: 1, tag: "nightly" }, { app: 1, tag: "team-x" }]);
  assert.deepEqual([view.askNodes, view.askRacks, view.askTags], [[{ ask: 1, node: 1 }], [{ ask: 1, rack: 1 }], [{ ask: 1, tag: "zk" }]]);
  assert.deepEqual(view.tagCounts, [{ node: 1, app: 1, tag: "zk", count: 2 }]);
});

test("a snapshot with ragged columns or an index out of range is refused", () => {
  // [change to the record, words of the refusal]
  const cases = [
    [(s) => s.asks.gpus.pop(), "asks: its columns differ in length"],
    [(s) => s.nodes.rack.pop(), "nodes: its columns differ in length"],
    [(s) => (s.round.partition = 2), "round.partition is 2, but there are 2 partitions"],
    [(s) => (s.nodes.partition[0] = 2), "nodes.partition[0] is 2, but there are 2 partitions"],
    [(s) => (s.nodes.rack[1] = 5), "nodes.rack[1] is 5, but there are 2 racks"],
    [(s) => (s.nodeAttributes.node[1] = 2), "node-attributes.node[1] is 2, but there are 2 nodes"],
    [(s) => (s.queues.parent[1] = 2), "queues.parent[1] is 2, but there are 2 queues"],
    [(s) => (s.partitionShares.partition[2] = 3), "partition-shares.partition[2] is 3, but there are 2 partitions"],
    [(s) => (s.partitionShares.queue[0] = 2), "partition-shares.queue[0] is 2"],
    [(s) => (s.apps.queue[0] = 7), "apps.queue[0] is 7, but there are 2 queues"],
    [(s) => (s.appTags.app[0] = 2), "app-tags.app[0] is 2, but there are 2 apps"],
    [(s) => (s.asks.app[1] = 2), "asks.app[1] is 2, but there are 2 apps"],
    [(s) => (s.asks.partition[1] = 2), "asks.partition[1] is 2"],
    [(s) => (s.askNodes.node[0] = 2), "ask-nodes.node[0] is 2, but there are 2 nodes"],
    [(s) => (s.askNodes.ask[0] = 2), "ask-nodes.ask[0] is 2, but there are 2 asks"],
    [(s) => (s.askRacks.rack[0] = 2), "ask-racks.rack[0] is 2, but there are 2 racks"],
    [(s) => (s.askTags.ask[0] = 2), "ask-tags.ask[0] is 2"],
    [(s) => (s.tagCounts.app[0] = 2), "tag-counts.app[0] is 2"],
    [(s) => (s.tagCounts.node[0] = 2), "tag-counts.node[0] is 2"],
    [(s) => (s.apps.deadlineMs[1] = 2n ** 60n), "apps.deadline-ms[1] is 1152921504606846976, beyond"],
  ];
  for (const [change, words] of cases) {
    const record = snapshotRecord();
    change(record);
    assert.throws(() => scheduling.snapshotView(record), (e) => e instanceof MalformedInput && e.message.includes(words), words);
  }
});

/** A WIT `containers` record: two running containers, the first tagged. */
function containersRecord() {
  return {
    app: [0, 1],
    node: [1, 0],
    memoryMb: [5n, 5n],
    vcores: [1, 1],
    gpus: [0, 0],
    startTimeMs: [3n, 4n],
    executionType: ["guaranteed", "guaranteed"],
    tags: { container: [0, 0], tag: ["zk", "hbase"] },
  };
}

test("running containers carry their execution type and tags", () => {
  const view = scheduling.snapshotView(snapshotRecord());
  const running = scheduling.containersView(containersRecord(), view);
  assert.deepEqual(running[0], {
    index: 0,
    app: 0,
    node: 1,
    memoryMb: 5,
    vcores: 1,
    gpus: 0,
    startTimeMs: 3,
    executionType: "guaranteed",
    tags: ["zk", "hbase"],
  });
  assert.deepEqual(running[1].tags, []);
  const cases = [
    [(c) => (c.app[1] = 2), "containers.app[1] is 2, but there are 2 apps"],
    [(c) => (c.node[0] = 2), "containers.node[0] is 2, but there are 2 nodes"],
    [(c) => (c.tags.container[1] = 2), "containers.tags.container[1] is 2, but there are 2 containers"],
    [(c) => c.tags.tag.pop(), "containers.tags: its columns differ in length"],
  ];
  for (const [change, words] of cases) {
    const record = containersRecord();
    change(record);
    assert.throws(() => scheduling.containersView(record, view), (e) => e instanceof MalformedInput && e.message.includes(words), words);
  }
});

test("schedule and preempt through the component glue", () => {
  class Greedy extends scheduling.Policy {
    schedule(snapshot) {
      // Every ask's first container on its first preferred node, else node 0.
      return snapshot.asks.map((ask) => ({ ask: ask.index, node: ask.preferredNodes[0] ?? 0, count: 1 }));
    }
    preempt(snapshot, running) {
      return running.filter((c) => c.tags.includes("zk")).map((c) => c.index);
    }
  }
  const exports = scheduling.component(Greedy, { log: () => {} });
  exports.configure([]);
  assert.deepEqual(exports.scheduling.schedule(snapshotRecord()), { ask: [0, 1], node: [0, 1], count: [1, 1] });
  assert.deepEqual(exports.scheduling.preempt(snapshotRecord(), containersRecord()), [0]);
  const bad = snapshotRecord();
  bad.asks.app[0] = 9;
  assert.throws(() => exports.scheduling.schedule(bad), /schedule failed: asks\.app\[0\] is 9/);
  log.useSink(() => {});
});

test("placements become columns of u32", () => {
  assert.deepEqual(scheduling.placementColumns([{ ask: 0, node: 1, count: 2 }, { ask: 3, node: 4, count: 5 }]), {
    ask: [0, 3],
    node: [1, 4],
    count: [2, 5],
  });
  for (const bad of [{ ask: -1, node: 0, count: 1 }, { ask: 0, node: 2 ** 32, count: 1 }, { ask: 0, node: 0, count: 1.5 }]) {
    assert.throws(() => scheduling.placementColumns([bad]), /placement 0/);
  }
  assert.throws(() => scheduling.victims([0, -2]), /preempted container 1/);
});

// ------------------------------------------------------------ keeping rules

const { keepRules, partialGangs, scheduleKeepingRules } = scheduling;

/** A node row of 4 containers of 1 GB (or `room`). */
function ruleNode(index, { partition = 0, rack = 0, tagCounts = [], room = [4096, 4, 0] } = {}) {
  const [m, v, g] = room;
  return { index, freeMemoryMb: m, freeVcores: v, freeGpus: g, capacityMemoryMb: m, capacityVcores: v, capacityGpus: g, partition, rack, tagCounts };
}

/** An ask row for 1 GB containers; fields not given take the view's defaults. */
function ruleAsk(index, fields = {}) {
  return {
    index,
    app: 0,
    pending: 1,
    memoryMb: 1024,
    vcores: 1,
    gpus: 0,
    partition: 0,
    gangMinimum: null,
    constraint: null,
    tags: [],
    ...fields,
  };
}

function ruleSnapshot(nodes, asks, { kind = "whole", partition = 0, partitions = [""] } = {}) {
  return {
    nowMs: 0,
    round: { kind, partition },
    partitions: partitions.map((name, index) => ({ index, name, exclusive: index === 0 })),
    racks: ["/r0", "/r1"],
    nodes,
    queues: [],
    apps: [],
    asks,
  };
}

const placed = (rows) => rows.map(([ask, node, count]) => ({ ask, node, count }));
const asTriples = (placements) => placements.map(({ ask, node, count }) => [ask, node, count]);
const constraintOf = (text, scope, tag, minimum, maximum, allApps = false) => ({ text, scope, tag, allApps, minimum, maximum });
const NOT_IN_NODE_ZK = constraintOf("NOTIN,NODE,zk", "node", "zk", 0, 0);

test("keepRules: anti-affinity, gangs and partitions are kept", () => {
  // The Rust SDK's own case: two nodes of 4 GB, one app.
  const s = ruleSnapshot(
    [ruleNode(0), ruleNode(1)],
    [
      ruleAsk(0, { pending: 3, constraint: NOT_IN_NODE_ZK, tags: ["zk"] }), // one a node
      ruleAsk(1, { pending: 4, gangMinimum: 4 }), // a gang of 4
      ruleAsk(2, { pending: 1, partition: 1 }), // for the gpu partition
    ],
    { partitions: ["", "gpu"] },
  );
  const kept = keepRules(s, placed([[0, 0, 2], [0, 1, 1], [1, 0, 2], [1, 1, 1], [2, 0, 1]]));
  // zk: one a node; the gang of 4 got 3, so none; the gpu ask is off its
  // partition.
  assert.deepEqual(asTriples(kept), [[0, 0, 1], [0, 1, 1]]);
  assert.equal(keepRules(s, placed([[1, 0, 2], [1, 1, 2]])).length, 2, "a gang placed whole stays");
});

test("keepRules: an ask goes on its partition, and a lending round lends to the default", () => {
  const nodes = [ruleNode(0, { partition: 0 }), ruleNode(1, { partition: 1 }), ruleNode(2, { partition: 2 })];
  const asks = [ruleAsk(0, { partition: 0 }), ruleAsk(1, { partition: 1 })];
  const rows = placed([[0, 0, 1], [0, 1, 1], [0, 2, 1], [1, 0, 1], [1, 1, 1], [1, 2, 1]]);
  const partitions = ["", "spot", "gpu"];
  assert.deepEqual(asTriples(keepRules(ruleSnapshot(nodes, asks, { partitions }), rows)), [[0, 0, 1], [1, 1, 1]]);
  // Lending spot's nodes: the default partition's ask may use them (and only
  // them), an ask for a label still only its own.
  const lending = ruleSnapshot(nodes, asks, { kind: "lending", partition: 1, partitions });
  assert.deepEqual(asTriples(keepRules(lending, rows)), [[0, 0, 1], [0, 1, 1], [1, 1, 1]]);
  // Only a lending round lends.
  const own = ruleSnapshot(nodes, asks, { kind: "partition", partition: 1, partitions });
  assert.deepEqual(asTriples(keepRules(own, rows)), [[0, 0, 1], [1, 1, 1]]);
});

test("keepRules: a constraint counts the snapshot and what was placed before", () => {
  // Rack 0 holds nodes 0 and 1, rack 1 node 2; app 1 runs a db container on
  // node 0.
  const nodes = [ruleNode(0, { rack: 0, tagCounts: [{ app: 1, tag: "db", count: 1 }] }), ruleNode(1, { rack: 0 }), ruleNode(2, { rack: 1 })];
  const asks = [
    ruleAsk(0, { pending: 9, constraint: constraintOf("db: at most 2 a rack", "rack", "db", 0, 2, true), tags: ["db"] }),
    ruleAsk(1, { pending: 9, tags: ["db"] }), // unconstrained, but counted
    ruleAsk(2, { pending: 9, constraint: constraintOf("IN,NODE,all/db", "node", "db", 1, 0xffffffff, true) }),
  ];
  const s = ruleSnapshot(nodes, asks);
  // Rack 0 has app 1's db: ask 0 may add 2 there (counts 1, 2 before each),
  // then none on node 1; rack 1 takes 3 (0, 1, 2 before each).
  assert.deepEqual(asTriples(keepRules(s, placed([[0, 0, 5], [0, 1, 1], [0, 2, 5]]))), [[0, 0, 2], [0, 2, 3]]);
  // Ask 1's db containers on node 2 fill rack 1 for ask 0 and let ask 2 on
  // node 2; node 1 holds no db, so ask 2 is refused there; node 0 holds app
  // 1's, which every app's constraint counts.
  const rows = placed([[1, 2, 3], [0, 2, 1], [2, 1, 4], [2, 2, 4], [2, 0, 1]]);
  assert.deepEqual(asTriples(keepRules(s, rows)), [[1, 2, 3], [2, 2, 4], [2, 0, 1]]);
});

test("keepRules: a constraint of the app's own counts only its containers", () => {
  // Node 0 runs app 1's zk; app 0's own NOTIN,NODE,zk does not see it, the
  // all-apps one does.
  const nodes = [ruleNode(0, { tagCounts: [{ app: 1, tag: "zk", count: 1 }] }), ruleNode(1)];
  const own = ruleAsk(0, { app: 0, pending: 2, constraint: NOT_IN_NODE_ZK, tags: ["zk"] });
  const everyone = ruleAsk(1, { app: 2, pending: 2, constraint: { ...NOT_IN_NODE_ZK, allApps: true }, tags: ["zk"] });
  let s = ruleSnapshot(nodes, [own, everyone]);
  assert.deepEqual(asTriples(keepRules(s, placed([[0, 0, 2]]))), [[0, 0, 1]]);
  assert.deepEqual(asTriples(keepRules(s, placed([[1, 0, 2], [1, 1, 2]]))), [[1, 1, 1]]);
  // App 0's zk on node 1 is every app's for ask 1, not app 2's own.
  assert.deepEqual(asTriples(keepRules(s, placed([[0, 1, 1], [1, 1, 1]]))), [[0, 1, 1]]);
  s = ruleSnapshot(nodes, [own, { ...everyone, constraint: NOT_IN_NODE_ZK }]);
  assert.deepEqual(asTriples(keepRules(s, placed([[0, 1, 1], [1, 1, 1], [1, 0, 1]]))), [[0, 1, 1], [1, 1, 1], [1, 0, 1]]);
});

test("keepRules: a gang cut by its constraint goes whole", () => {
  const gang = ruleAsk(0, { pending: 2, gangMinimum: 2, constraint: NOT_IN_NODE_ZK, tags: ["zk"] });
  const s = ruleSnapshot([ruleNode(0), ruleNode(1)], [gang, ruleAsk(1, { pending: 5 })]);
  assert.deepEqual(asTriples(keepRules(s, placed([[0, 0, 2], [1, 0, 1]]))), [[1, 0, 1]]);
  assert.deepEqual(asTriples(keepRules(s, placed([[0, 0, 1], [0, 1, 1]]))), [[0, 0, 1], [0, 1, 1]]);
  assert.deepEqual(partialGangs(s, placed([[0, 0, 1], [1, 0, 3]])), [0]);
  assert.deepEqual(partialGangs(s, placed([[0, 0, 2]])), []);
  assert.deepEqual(partialGangs(s, []), []);
});

test("keepRules: kept placements of one ask on one node are merged", () => {
  const asks = [ruleAsk(0, { pending: 9 }), ruleAsk(1, { pending: 9, partition: 1 }), ruleAsk(2, { pending: 3, gangMinimum: 3 })];
  const s = ruleSnapshot([ruleNode(0), ruleNode(1)], asks, { partitions: ["", "gpu"] });
  const rows = placed([[0, 0, 1], [1, 0, 1], [0, 0, 2], [2, 0, 1], [0, 0, 1], [0, 1, 0], [0, 1, 1]]);
  assert.deepEqual(asTriples(keepRules(s, rows)), [[0, 0, 4], [0, 1, 1]]);
  assert.deepEqual(rows[0], { ask: 0, node: 0, count: 1 }, "the input is not changed");
});

test("keepRules: a placement that is not one is refused", () => {
  const s = ruleSnapshot([ruleNode(0)], [ruleAsk(0)]);
  assert.throws(() => keepRules(s, placed([[0, 0, 1], [1, 0, 1]])), /placement 1: ask is 1, but there are 1 asks/);
  assert.throws(() => keepRules(s, placed([[0, 3, 1]])), /placement 0: node is 3/);
  assert.throws(() => keepRules(s, placed([[0, 0, -1]])), /placement 0: count is -1/);
  assert.throws(() => keepRules(s, placed([[0, 0, 1.5]])), /placement 0: count is 1.5/);
});

test("keepRules: a snapshot built by hand may leave the rules' fields out", () => {
  // As the templates' tests build them: no round, partitions, tags or gangs.
  const s = { nowMs: 0, nodes: [{ index: 0, freeMemoryMb: 1024 }], queues: [], apps: [], asks: [{ index: 0, app: 0, pending: 2 }] };
  assert.deepEqual(asTriples(keepRules(s, placed([[0, 0, 2]]))), [[0, 0, 2]]);
  assert.deepEqual(asTriples(scheduleKeepingRules(s, () => placed([[0, 0, 1]]))), [[0, 0, 1]]);
});

test("keepRules on a snapshot view: the host's own records", () => {
  // snapshotRecord: ask 1 (app 1, partition gpu, NOTIN,NODE,zk, tagged zk)
  // and node 1 (gpu) already holding 2 of app 1's zk.
  const view = scheduling.snapshotView(snapshotRecord());
  assert.deepEqual(asTriples(keepRules(view, placed([[0, 0, 1], [1, 1, 1], [0, 1, 1]]))), [[0, 0, 1]]);
  const lending = scheduling.snapshotView({ ...snapshotRecord(), round: { kind: "lending", partition: 1 } });
  assert.deepEqual(asTriples(keepRules(lending, placed([[0, 0, 1], [0, 1, 1]]))), [[0, 0, 1], [0, 1, 1]]);
});

/** Each ask in order, as many 1 GB containers as fit, lowest node first. */
function firstFit(s) {
  const room = s.nodes.map((n) => Math.floor(n.freeMemoryMb / 1024));
  const out = [];
  for (const a of s.asks) {
    let pending = a.pending;
    room.forEach((free, n) => {
      const count = Math.min(free, pending);
      if (count > 0) {
        room[n] -= count;
        pending -= count;
        out.push({ ask: a.index, node: n, count });
      }
    });
  }
  return out;
}

test("scheduleKeepingRules: a gang placed in part is left out and the round run again", () => {
  // 6 GB of room; the gang wants 8 and would take 6, leaving app 1 none.
  const s = ruleSnapshot([ruleNode(0), ruleNode(1, { room: [2048, 2, 0] })], [ruleAsk(0, { pending: 8, gangMinimum: 8 }), ruleAsk(1, { app: 1, pending: 4 })]);
  const seen = [];
  const schedule = (view) => {
    seen.push(view.asks.map((a) => [a.pending, a.gangMinimum]));
    return firstFit(view);
  };
  assert.deepEqual(asTriples(scheduleKeepingRules(s, schedule)), [[1, 0, 4]]);
  // Alone in play first (no other gang to leave out, so the same round),
  // then, still in part, left out.
  assert.deepEqual(seen, [[[8, 8], [4, null]], [[8, 8], [4, null]], [[0, null], [4, null]]]);
  // The snapshot passed in is untouched.
  assert.equal(s.asks[0].pending, 8);
  assert.equal(s.asks[0].gangMinimum, 8);
});

/** Shares 8 containers' room on node 0 out evenly among the asks in play
 * (pending > 0), each at most its pending (the Rust SDK's test policy). */
function halves(s) {
  const live = s.asks.filter((a) => a.pending > 0);
  return live.map((a) => ({ ask: a.index, node: 0, count: Math.min(Math.floor(8 / live.length), a.pending) }));
}

test("scheduleKeepingRules: two gangs splitting the room get it one at a time", () => {
  const s = ruleSnapshot([ruleNode(0, { room: [8192, 8, 0] })], [0, 1].map((k) => ruleAsk(k, { app: k, pending: 6, gangMinimum: 6 })));
  assert.deepEqual(asTriples(halves(s)), [[0, 0, 4], [1, 0, 4]]);
  assert.deepEqual(asTriples(scheduleKeepingRules(s, halves)), [[0, 0, 6]], "the first gang alone, whole");
});

test("scheduleKeepingRules: gangs left out add up over the reruns", () => {
  // Two gangs split the room with a plain ask; the first, alone in play,
  // still cannot be placed whole, so it is left out as well as the second,
  // and the plain ask gets the room.
  const asks = [ruleAsk(0, { pending: 10, gangMinimum: 10 }), ruleAsk(1, { app: 1, pending: 6, gangMinimum: 6 }), ruleAsk(2, { app: 2, pending: 4 })];
  const s = ruleSnapshot([ruleNode(0, { room: [8192, 8, 0] })], asks);
  const rounds = [];
  const schedule = (view) => {
    rounds.push(view.asks.map((a) => a.pending));
    return halves(view);
  };
  assert.deepEqual(asTriples(scheduleKeepingRules(s, schedule)), [[2, 0, 4]]);
  assert.deepEqual(rounds, [[10, 6, 4], [10, 0, 4], [0, 0, 4]]);
});

test("scheduleKeepingRules: reruns stop after the most, and what is left is kept to the rules", () => {
  const s = ruleSnapshot([ruleNode(0)], [ruleAsk(0, { pending: 4, gangMinimum: 4 }), ruleAsk(1)]);
  let calls = 0;
  // Places the gang in part whatever the snapshot says, as a generator.
  function* stubborn() {
    calls += 1;
    yield { ask: 0, node: 0, count: 2 };
    yield { ask: 1, node: 0, count: 1 };
  }
  assert.deepEqual(asTriples(scheduleKeepingRules(s, stubborn)), [[1, 0, 1]]);
  // At most four rounds in all, as the host asks.
  assert.equal(calls, 1 + scheduling.MAX_REROUNDS);
  assert.equal(scheduling.MAX_REROUNDS, 3);
  // Placed whole, so no rerun; then off its partition, so dropped.
  const offPartition = ruleSnapshot([ruleNode(0)], [ruleAsk(0, { pending: 2, gangMinimum: 2, partition: 1 })], { partitions: ["", "gpu"] });
  calls = 0;
  const once = () => {
    calls += 1;
    return placed([[0, 0, 2]]);
  };
  assert.deepEqual(scheduleKeepingRules(offPartition, once), []);
  assert.equal(calls, 1);
});

// The Rust SDK's keep_rules, line for line (a container at a time), to check
// the SDK's against on random answers.
function referenceKeepRules(s, rows) {
  const { asks, nodes } = s;
  const by = new Map();
  const add = (n, app, tag, count) => {
    for (const place of [`node ${n}`, `rack ${nodes[n].rack}`]) {
      for (const whose of ["all", app]) {
        const key = `${place} ${tag} ${whose}`;
        by.set(key, (by.get(key) ?? 0) + count);
      }
    }
  };
  nodes.forEach((node, n) => node.tagCounts.forEach(({ app, tag, count }) => add(n, app, tag, count)));
  const merge = (list, k, n, count) => {
    const last = list[list.length - 1];
    if (last && last[0] === k && last[1] === n) last[2] += count;
    else list.push([k, n, count]);
  };
  const kept = [];
  const given = asks.map(() => 0);
  for (let [k, n, count] of rows) {
    const a = asks[k];
    const lent = s.round.kind === "lending" && a.partition === 0 && nodes[n].partition === s.round.partition;
    if (a.partition !== nodes[n].partition && !lent) continue;
    const c = a.constraint;
    if (c !== null) {
      let allowed = 0;
      const place = c.scope === "node" ? `node ${n}` : `rack ${nodes[n].rack}`;
      while (allowed < count) {
        const now = by.get(`${place} ${c.tag} ${c.allApps ? "all" : a.app}`) ?? 0;
        if (now < c.minimum || now > c.maximum) break;
        allowed += 1;
        for (const tag of a.tags) add(n, a.app, tag, 1);
      }
      count = allowed;
    } else {
      for (const tag of a.tags) add(n, a.app, tag, count);
    }
    if (count > 0) {
      given[k] += count;
      merge(kept, k, n, count);
    }
  }
  const short = asks.map((a, k) => a.gangMinimum !== null && given[k] > 0 && given[k] < a.gangMinimum);
  const whole = [];
  for (const [k, n, count] of kept) if (!short[k]) merge(whole, k, n, count);
  return whole;
}

test("keepRules matches a container at a time on random answers", () => {
  let seed = 11;
  const below = (n) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return Math.floor((seed / 2147483648) * n);
  };
  const pick = (list) => list[below(list.length)];
  const TAGS = ["zk", "db", "web"];
  const kinds = ["whole", "partition", "lending"];
  for (let round = 0; round < 500; round++) {
    const nNodes = 1 + below(5);
    const nApps = 1 + below(3);
    const nodes = Array.from({ length: nNodes }, (_, n) =>
      ruleNode(n, {
        partition: below(3),
        rack: below(2),
        tagCounts: Array.from({ length: below(3) }, () => ({ app: below(nApps), tag: pick(TAGS), count: 1 + below(2) })),
      }),
    );
    const asks = Array.from({ length: 1 + below(5) }, (_, k) => {
      const pending = 1 + below(7);
      let constraint = null;
      if (below(10) < 6) {
        const minimum = pick([0, 0, 1, 2]);
        constraint = constraintOf("c", pick(["node", "rack"]), pick(TAGS), minimum, pick([minimum, minimum + 1, minimum + 3, 0xffffffff]), below(2) === 0);
      }
      return ruleAsk(k, {
        app: below(nApps),
        pending,
        partition: below(3),
        gangMinimum: pick([null, null, 1 + below(pending)]),
        constraint,
        tags: Array.from({ length: below(3) }, () => pick(TAGS)),
      });
    });
    const s = ruleSnapshot(nodes, asks, { kind: pick(kinds), partition: below(3), partitions: ["", "a", "b"] });
    const rows = Array.from({ length: below(12) }, () => [below(asks.length), below(nNodes), below(6)]);
    assert.deepEqual(asTriples(keepRules(s, placed(rows))), referenceKeepRules(s, rows), JSON.stringify({ s, rows }));
  }
});

function block(start, end, [m, v, g]) {
  return new Timeline([
    { atMs: start, amount: resources(m, v, g) },
    { atMs: end, amount: resources(0, 0, 0) },
  ]);
}

/** A WIT `plan-context` record. */
function planContext(fields = {}) {
  return { nowMs: 50n, reservationName: "nightly-etl", recurring: true, reservations: 3, userReservations: 1, users: 2, ...fields };
}

function admission({ candidate = new Timeline(), plan = new Timeline(), fromMs = 0, toMs = 100, capacity = [100, 10, 2], context = planContext() } = {}) {
  return sharing.admissionView({
    settings: {
      queue: "root.q",
      capacity: { memoryMb: capacity[0], vcores: capacity[1], gpus: capacity[2] },
      reservationWindowMs: 10,
      instantaneousMaxCapacity: 50,
      averageCapacity: 25,
    },
    user: "u",
    reservationId: "r",
    fromMs,
    toMs,
    candidate: sharing.timelineColumns(candidate),
    userCommitted: sharing.timelineColumns(new Timeline()),
    planCommitted: sharing.timelineColumns(plan),
    context,
  });
}

test("an admission carries the plan's context", () => {
  assert.deepEqual(admission().context, {
    nowMs: 50,
    reservationName: "nightly-etl",
    recurring: true,
    reservations: 3,
    userReservations: 1,
    users: 2,
  });
});

test("admission problems are named", () => {
  assert.equal(admission().problem, null);
  const cases = [
    [admission({ fromMs: 5, toMs: 4 }), "the range [5, 4) ms runs backwards"],
    [admission({ capacity: [2 ** 40, 0, 0] }), "settings: the capacity is 1099511627776 MB"],
    [admission({ context: planContext({ nowMs: 2n ** 60n }) }), "context: now-ms is 1152921504606847000, beyond ±(2^53 - 1) ms"],
    [admission({ candidate: block(90, 110, [1, 0, 0]) }), "candidate: it holds resources from t=90 ms until t=110 ms"],
    [admission({ candidate: new Timeline([{ atMs: 90, amount: resources(1, 0, 0) }]) }), "from t=90 ms on, outside the range"],
    [
      admission({ plan: new Timeline([{ atMs: 3, amount: resources(1, 0, 0) }, { atMs: 3, amount: resources(0, 0, 0) }]) }),
      "plan-committed: at-ms must strictly increase, but at-ms[0] is 3 and at-ms[1] is 3",
    ],
    [admission({ plan: block(0, 2 ** 53, [1, 0, 0]) }), "plan-committed: at-ms[1] is 9007199254740992, beyond"],
    [admission({ plan: block(0, 5, [0, 2 ** 40, 0]) }), "plan-committed: vcores[0] is 1099511627776, above"],
  ];
  for (const [view, words] of cases) assert.ok(view.problem?.includes(words), `${view.problem} lacks ${words}`);
  const ragged = sharing.timelineColumns(block(0, 10, [1, 0, 0]));
  ragged.vcores.pop();
  const [, problem] = sharing.timelineView("candidate", ragged);
  assert.equal(problem, "candidate: its columns differ in length (2 at-ms, 2 memory-mb, 1 vcores, 2 gpus)");
  // BigInt beyond 2^53 (StarlingMonkey) is a problem, not a silently rounded time.
  const [, far] = sharing.timelineView("plan-committed", { atMs: new BigInt64Array([2n ** 60n]), memoryMb: [0n], vcores: [0n], gpus: [0n] });
  assert.match(far, /at-ms\[0\] is .* beyond/);
});

test("the candidate's span is clipped to the range", () => {
  assert.deepEqual(admission({ candidate: block(10, 20, [1, 0, 0]) }).candidateSpan(), [10, 20]);
  assert.equal(admission().candidateSpan(), null);
});

test("walk merges the steps of several timelines", () => {
  const a = block(0, 20, [10, 1, 0]);
  const b = new Timeline([
    { atMs: -5, amount: resources(1, 0, 0) },
    { atMs: 10, amount: resources(2, 0, 1) },
    { atMs: 30, amount: resources(0, 0, 0) },
  ]);
  const stretches = [...sharing.walk([a, b], -10, 40)].map((s) => [s.fromMs, s.toMs, s.amounts[0].memoryMb, s.amounts[1].memoryMb]);
  assert.deepEqual(stretches, [[-10, -5, 0, 0], [-5, 0, 0, 1], [0, 10, 10, 1], [10, 20, 10, 2], [20, 30, 0, 2], [30, 40, 0, 0]]);
  assert.deepEqual([...sharing.walk([a, b], 5, 15)].map((s) => [s.fromMs, s.toMs]), [[5, 10], [10, 15]]);
  assert.deepEqual([...sharing.walk([a], 7, 7)], []);
  assert.deepEqual(a.amountAt(5), resources(10, 1, 0));
  assert.deepEqual(a.amountAt(-1), resources(0, 0, 0));
});

test("the builder leaves out steps that change nothing", () => {
  const builder = new TimelineBuilder();
  builder.push(0, resources(0, 0, 0));
  builder.push(5, resources(3, 0, 0));
  builder.push(7, resources(3, 0, 0));
  builder.push(9, resources(1, 0, 0));
  assert.deepEqual(builder.finish(12).atMs, [5, 9, 12]);
  assert.equal(new TimelineBuilder().finish(10).length, 0);
});

test("a rejection is the err value; anything else thrown from validate traps", () => {
  class Picky extends sharing.Policy {
    validate(admission) {
      if (admission.user === "bob") return new sharing.InstantaneousQuota("bob holds too much");
      if (admission.user === "eve") return "no";
      return null;
    }
  }
  const exports = sharing.component(Picky, { log: () => {} });
  const wit = (user) => ({ ...admissionRecord(), user });
  assert.equal(exports.sharing.validate(wit("alice")), undefined);
  assert.throws(() => exports.sharing.validate(wit("bob")), (thrown) => thrown.tag === "instantaneous-quota" && thrown.val === "bob holds too much");
  assert.throws(() => exports.sharing.validate(wit("eve")), (thrown) => thrown instanceof Error && /it must be null, OverCommit/.test(thrown.message));
  log.useSink(() => {});
});

function admissionRecord() {
  const empty = sharing.timelineColumns(new Timeline());
  return {
    settings: { queue: "q", capacity: { memoryMb: 1, vcores: 1, gpus: 1 }, reservationWindowMs: 0, instantaneousMaxCapacity: 100, averageCapacity: 100 },
    user: "u",
    reservationId: "r",
    fromMs: 0,
    toMs: 10,
    candidate: empty,
    userCommitted: empty,
    planCommitted: empty,
    context: planContext(),
  };
}
