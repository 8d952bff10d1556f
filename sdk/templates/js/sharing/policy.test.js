// Unit tests of the policy, natively: `node --test`. The same cases as Weft's
// no-overcommit crate, and decisions through the component glue.

import assert from "node:assert/strict";
import { test } from "node:test";

import { NoOverCommit } from "./policy.js";
import { ParamError, sharing } from "./weft-policy.js";

const { OverCommit, Timeline, resources } = sharing;
const HOUR = 3_600_000;

/** The policy configured with `pairs` as the host would do it. */
const configured = (pairs) => sharing.configured(NoOverCommit, pairs);

/** `amount` over [start, end), zero elsewhere. */
function block(start, end, amount) {
  return new Timeline([
    { atMs: start, amount },
    { atMs: end, amount: resources(0, 0, 0) },
  ]);
}

/** A Timeline as the WIT record's columns. */
const columns = (timeline) => sharing.timelineColumns(timeline);

/** Seed 004's kind of queue: root.dedicated with 100 GB, 100 vcores, 8 GPUs,
 * as the WIT record the host sends. */
function wit(candidate, planCommitted, { fromMs = 0, toMs = 24 * HOUR } = {}) {
  return {
    settings: {
      queue: "root.dedicated",
      capacity: { memoryMb: 102_400, vcores: 100, gpus: 8 },
      reservationWindowMs: 24 * HOUR,
      instantaneousMaxCapacity: 50,
      averageCapacity: 25,
    },
    user: "alice",
    reservationId: "reservation_1700000000000_0001",
    fromMs,
    toMs,
    candidate: columns(candidate),
    userCommitted: columns(new Timeline()),
    planCommitted: columns(planCommitted),
    context: { nowMs: 0n, reservationName: "", recurring: false, reservations: 1, userReservations: 0, users: 1 },
  };
}

const admission = (...args) => sharing.admissionView(wit(...args));

test("over-commit in each dimension", () => {
  // Bob's reservation holds 80 GB, 80 vcores and 6 GPUs over [1 h, 3 h).
  const committed = block(HOUR, 3 * HOUR, resources(81_920, 80, 6));
  const cases = [
    [resources(20_480, 20, 2), null], // exactly the capacity in every dimension
    [
      resources(20_481, 0, 0),
      "plan root.dedicated would hold 102401 MB at t=7200000 ms (81920 MB committed + 20481 MB asked); its capacity is 102400 MB (over by 1 MB)",
    ],
    [
      resources(0, 21, 0),
      "would hold 101 vcores at t=7200000 ms (80 vcores committed + 21 vcores asked); its capacity is 100 vcores (over by 1 vcores)",
    ],
    [
      resources(0, 0, 3),
      "would hold 9 GPUs at t=7200000 ms (6 GPUs committed + 3 GPUs asked); its capacity is 8 GPUs (over by 1 GPUs)",
    ],
  ];
  const policy = configured([]);
  for (const [asked, refusal] of cases) {
    const answer = policy.validate(admission(block(2 * HOUR, 4 * HOUR, asked), committed));
    if (refusal === null) assert.equal(answer, null);
    else assert.ok(answer instanceof OverCommit && answer.message.includes(refusal), answer?.message);
  }
});

test("an excess is reported at its first instant", () => {
  const committed = block(5 * HOUR, 6 * HOUR, resources(102_400, 0, 0));
  const answer = configured([]).validate(admission(block(0, 10 * HOUR, resources(1, 0, 0)), committed));
  assert.match(answer.message, /at t=18000000 ms/);
});

test("an excess the candidate adds nothing to stands", () => {
  const committed = block(0, 10 * HOUR, resources(0, 0, 10));
  const policy = configured([]);
  assert.equal(policy.validate(admission(block(HOUR, 2 * HOUR, resources(1024, 1, 0)), committed)), null);
  const oneMoreGpu = policy.validate(admission(block(HOUR, 2 * HOUR, resources(1024, 1, 1)), committed));
  assert.ok(oneMoreGpu instanceof OverCommit);
});

test("empty timelines", () => {
  const policy = configured([]);
  const nothing = admission(new Timeline(), new Timeline());
  assert.equal(policy.validate(nothing), null);
  assert.deepEqual(policy.available(nothing).steps, [
    { atMs: 0, amount: resources(102_400, 100, 8) },
    { atMs: 24 * HOUR, amount: resources(0, 0, 0) },
  ]);
  assert.equal(policy.validate(admission(block(0, HOUR, resources(102_400, 100, 8)), new Timeline())), null);
});

test("available is capacity minus plan", () => {
  const committed = new Timeline([
    { atMs: -HOUR, amount: resources(10_240, 10, 0) }, // began before the range
    { atMs: HOUR, amount: resources(40_960, 40, 4) },
    { atMs: 2 * HOUR, amount: resources(204_800, 50, 8) }, // over capacity: 0 left, not negative
    { atMs: 3 * HOUR, amount: resources(0, 0, 0) },
  ]);
  const free = configured([]).available(admission(new Timeline(), committed, { toMs: 4 * HOUR }));
  assert.deepEqual(
    free.steps.map((s) => [s.atMs, s.amount.memoryMb, s.amount.vcores, s.amount.gpus]),
    [
      [0, 92_160, 90, 8],
      [HOUR, 61_440, 60, 4],
      [2 * HOUR, 0, 50, 0],
      [3 * HOUR, 102_400, 100, 8],
      [4 * HOUR, 0, 0, 0],
    ],
  );
});

test("malformed admissions are refused, not trapped", () => {
  const unsorted = new Timeline([
    { atMs: 0, amount: resources(1, 0, 0) },
    { atMs: HOUR, amount: resources(2, 0, 0) },
    { atMs: HOUR / 2, amount: resources(0, 0, 0) },
  ]);
  const bad = admission(block(0, 2 * HOUR, resources(1, 0, 0)), unsorted);
  const policy = configured([]);
  assert.equal(
    policy.validate(bad).message,
    "malformed admission: plan-committed: at-ms must strictly increase, but at-ms[1] is 3600000 and at-ms[2] is 1800000",
  );
  assert.deepEqual(policy.available(bad).steps, []);
});

test("no window and no parameters", () => {
  assert.equal(configured([]).window(admission(new Timeline(), new Timeline()).settings), 0);
  assert.throws(() => configured([["capacity", "50"]]), (e) => e instanceof ParamError && /has no parameter "capacity"/.test(e.message));
});

test("decisions through the component glue", () => {
  const lines = [];
  const exports = sharing.component(NoOverCommit, { log: (level, message) => lines.push(level) });
  exports.configure([]);
  const committed = block(HOUR, 3 * HOUR, resources(81_920, 80, 6));
  assert.equal(exports.sharing.validate(wit(block(2 * HOUR, 4 * HOUR, resources(20_480, 20, 2)), committed)), undefined);
  assert.throws(
    () => exports.sharing.validate(wit(block(2 * HOUR, 4 * HOUR, resources(20_481, 0, 0)), committed)),
    (thrown) => thrown.tag === "over-commit" && thrown.val.includes("over by 1 MB"),
  );
  assert.equal(exports.sharing.window(wit(new Timeline(), new Timeline()).settings), 0);
  assert.deepEqual(exports.sharing.available(wit(new Timeline(), new Timeline(), { toMs: HOUR })), {
    atMs: [0, HOUR],
    memoryMb: [102_400, 0],
    vcores: [100, 0],
    gpus: [8, 0],
  });
  assert.deepEqual(lines, []);
});
