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

const usage = (columns = {}) => ({ seconds: [1, 2], memoryMb: [1, 2], vcores: [3, 4], gpus: [0, 0], ...columns });

test("charge prices each row", () => {
  assert.deepEqual(pricing.charge(new Flat(), usage(), { general: 2, gpu: 1 }), [6, 16]);
  assert.deepEqual(pricing.usageRows(usage({ memoryMb: new BigUint64Array([1n, 2n]) }))[1], {
    seconds: 2,
    memoryMb: 2,
    vcores: 4,
    gpus: 0,
  });
});

test("charge refuses ragged columns and bad prices", () => {
  assert.throws(
    () => pricing.charge(new Flat(), usage({ memoryMb: [1] }), { general: 1, gpu: 1 }),
    { message: "usage: its columns differ in length (2 seconds, 1 memory-mb, 2 vcores, 2 gpus)" },
  );
  for (const [answer, words] of [[NaN, "is NaN"], [-1, "is -1"], ["1", "is 1"], [Infinity, "is Infinity"]]) {
    class Bad extends pricing.Policy {
      price() {
        return answer;
      }
    }
    assert.throws(() => pricing.charge(new Bad(), usage(), { general: 1, gpu: 1 }), (e) => e.message.includes(words));
  }
});

test("multiplicators must be finite and not negative", () => {
  class Surge extends pricing.Policy {
    multiplicators(utilization) {
      return { general: utilization.memory * 2, gpu: -1 };
    }
  }
  assert.throws(() => pricing.checkedMultiplicators(new Surge(), { memory: 0.5 }), /multiplicator gpu is -1/);
  assert.deepEqual(pricing.checkedMultiplicators(new pricing.Policy(), {}), { general: 1, gpu: 1 });
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

test("snapshot rows carry their index", () => {
  const nodes = { freeMemoryMb: [10, 20], freeVcores: [1, 2], freeGpus: [0, 0], capacityMemoryMb: [10, 20], capacityVcores: [1, 2], capacityGpus: [0, 0] };
  const queues = { parent: [0], capacity: [100], maximumCapacity: [100], minimumUserLimitPercent: [100], userLimitFactor: [null], fair: [false], usedMemoryMb: [0], usedVcores: [0], usedGpus: [0] };
  const apps = { queue: [0], user: [0], priority: [1], submitTimeMs: [5n], usedMemoryMb: [0], usedVcores: [0], usedGpus: [0] };
  const asks = { app: [0], pending: [2], memoryMb: [5], vcores: [1], gpus: [0] };
  const view = scheduling.snapshotView({ nowMs: 9n, nodes, queues, apps, asks });
  assert.equal(view.nowMs, 9);
  assert.deepEqual(view.nodes[1], { index: 1, freeMemoryMb: 20, freeVcores: 2, freeGpus: 0, capacityMemoryMb: 20, capacityVcores: 2, capacityGpus: 0 });
  assert.equal(view.queues[0].userLimitFactor, null);
  assert.equal(view.apps[0].submitTimeMs, 5);
  asks.gpus = [];
  assert.throws(() => scheduling.snapshotView({ nowMs: 9, nodes, queues, apps, asks }), /asks: its columns differ in length/);
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

function block(start, end, [m, v, g]) {
  return new Timeline([
    { atMs: start, amount: resources(m, v, g) },
    { atMs: end, amount: resources(0, 0, 0) },
  ]);
}

function admission({ candidate = new Timeline(), plan = new Timeline(), fromMs = 0, toMs = 100, capacity = [100, 10, 2] } = {}) {
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
  });
}

test("admission problems are named", () => {
  assert.equal(admission().problem, null);
  const cases = [
    [admission({ fromMs: 5, toMs: 4 }), "the range [5, 4) ms runs backwards"],
    [admission({ capacity: [2 ** 40, 0, 0] }), "settings: the capacity is 1099511627776 MB"],
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
  };
}
