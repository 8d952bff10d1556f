// Unit tests of the policy, natively: `node --test`. The flat price (the same
// cases as Weft's flat-pricing crate), the project and night factors, the
// quote, and one batch through the component glue.

import assert from "node:assert/strict";
import { test } from "node:test";

import { ContextPricing } from "./policy.js";
import { ParamError, pricing } from "./weft-policy.js";

/** The policy configured with `pairs` as the host would do it. */
const configured = (pairs) => pricing.configured(ContextPricing, pairs);

const ONE = { general: 1, gpu: 1 };
const HOUR = 3_600_000;
// 2024-01-01T00:00:00Z, a UTC midnight.
const MIDNIGHT = Date.UTC(2024, 0, 1);

/** A WIT `charge-context` record, as the host sends it. */
function contextRecord(project) {
  return {
    app: "application_1700000000000_0001",
    queue: "root.default",
    user: "alice",
    project,
    applicationType: "weft",
    applicationTags: [],
    priority: 0,
    nodeLabel: "",
    nodeAttributes: [],
    executionType: "guaranteed",
    reservation: null,
  };
}

/** A context as the SDK shows it to `price` (see weft-policy.js `contextView`). */
const context = (project = "web") => pricing.contextView(contextRecord(project));

/** A usage row: `seconds` of use ending at `endMs`, by `project`. */
function row(seconds, memoryMb, vcores, gpus, { project = "web", endMs = MIDNIGHT + 12 * HOUR } = {}) {
  return { seconds, memoryMb, vcores, gpus, startMs: endMs - seconds * 1000, endMs, context: context(project) };
}

/** One vcore (one unit) for an hour, from `startMs`: 3600 credits at full price. */
const hourFrom = (startMs, project = "web") => row(3600, 1024, 1, 0, { project, endMs: startMs + HOUR });

test("the dominant resource pays", () => {
  const cases = [
    [row(10, 1024, 1, 0), 10], // memory and cpu tie at one unit
    [row(10, 4096, 1, 0), 40], // memory dominates: 4 units
    [row(10, 1024, 8, 0), 80], // cpu dominates: 8 units
    [row(10, 1024, 1, 2), 20], // gpu dominates: 2 units
    [row(0, 8192, 8, 8), 0], // no time, no charge
  ];
  const policy = configured([]);
  for (const [usage, expected] of cases) {
    assert.equal(policy.price(usage, ONE), expected, JSON.stringify(usage));
  }
});

test("parameters change prices", () => {
  const policy = configured([
    ["price.base.general", "0.5"],
    ["minimum.charged.mb", "512"],
    ["multiplicator.threshold.general", "0.2"],
  ]);
  assert.equal(policy.price(row(2, 1024, 1, 0), ONE), 2);
});

test("a project pays its factor", () => {
  const policy = configured([["project.ml", "2"], ["project.free", "0"]]);
  const noon = MIDNIGHT + 12 * HOUR;
  assert.equal(policy.price(hourFrom(noon, "ml"), ONE), 2 * policy.price(hourFrom(noon, "web"), ONE));
  assert.equal(policy.price(hourFrom(noon, "web"), ONE), 3600);
  assert.equal(policy.price(hourFrom(noon, "free"), ONE), 0);
  // Project names are taken as they are: "ML" is not "ml".
  assert.equal(policy.price(hourFrom(noon, "ML"), ONE), 3600);
});

test("nights cost night.factor, in proportion", () => {
  const policy = configured([["night.factor", "0.5"]]);
  // Wholly at night (23:00 to midnight, and 01:00 to 02:00): half.
  assert.equal(policy.price(hourFrom(MIDNIGHT - HOUR), ONE), 1800);
  assert.equal(policy.price(hourFrom(MIDNIGHT + HOUR), ONE), 1800);
  // Half at night (05:30 to 06:30): 0.75.
  assert.equal(policy.price(hourFrom(MIDNIGHT + 5.5 * HOUR), ONE), 2700);
  // By day: full price.
  assert.equal(policy.price(hourFrom(MIDNIGHT + 12 * HOUR), ONE), 3600);
  // Both factors, as `--param project.ml=2 --param night.factor=0.5` loads.
  const both = configured([["project.ml", "2"], ["night.factor", "0.5"]]);
  assert.equal(both.price(hourFrom(MIDNIGHT + HOUR, "ml"), ONE), 3600);
  // Other hours, free: 12:00 to 14:00 UTC, which does not wrap midnight.
  const lunch = configured([["night.factor", "0"], ["night.start-hour", "12"], ["night.end-hour", "14"]]);
  assert.equal(lunch.price(hourFrom(MIDNIGHT + 12.5 * HOUR), ONE), 0);
  assert.equal(lunch.price(hourFrom(MIDNIGHT + 11.5 * HOUR), ONE), 1800);
  assert.equal(lunch.price(hourFrom(MIDNIGHT + HOUR), ONE), 3600);
});

test("a quote is the containers times one container's price", () => {
  const policy = configured([["project.ml", "2"], ["night.factor", "0.5"]]);
  const request = {
    context: context("ml"),
    memoryMb: 4096,
    vcores: 1,
    gpus: 0,
    containers: 3,
    startMs: MIDNIGHT + 5.5 * HOUR,
    durationMs: HOUR,
  };
  // One container: 4 memory units × 3600 s × 2 (ml) × 0.75 (half at night).
  const one = policy.price(pricing.quoteRow(request), ONE);
  assert.equal(one, 4 * 3600 * 2 * 0.75);
  assert.equal(policy.quote(request, ONE), 3 * one);
});

test("bad parameters are refused, naming the key", () => {
  const cases = [
    [[["price.base.general", "cheap"]], /price\.base\.general must be a number at least 0/],
    [[["price.base.gpu", "-1"]], /price\.base\.gpu/],
    [[["minimum.charged.mb", "0"]], /must be above 0/],
    [[["project.ml", "-1"]], /project\.ml must be a number at least 0, not "-1"/],
    [[["project.ml", "double"]], /project\.ml must be a number/],
    [[["project.", "2"]], /project\. needs a project name/],
    [[["night.start-hour", "24"]], /night\.start-hour must be a whole number from 0 to 23, not "24"/],
    [[["night.end-hour", "6.5"]], /night\.end-hour must be a whole number/],
    [[["night.factor", "x"]], /night\.factor must be a number at least 0, not "x"/],
    [[["discount", "10"]], /has no parameter "discount"/],
  ];
  for (const [pairs, words] of cases) {
    assert.throws(() => configured(pairs), (error) => error instanceof ParamError && words.test(error.message), String(words));
  }
});

test("multiplicators are flat", () => {
  const market = { nowMs: 0, utilization: { memory: 0.9, vcores: 0.9, gpus: 2 }, partitions: [], queues: [], last: { general: 3, gpu: 3 } };
  assert.deepEqual(configured([]).multiplicators(market), ONE);
});

test("a batch is priced row by row, through the component glue", () => {
  const lines = [];
  const host = { log: (level, message) => lines.push([level, message]) };
  const exports = pricing.component(ContextPricing, host);
  assert.equal(exports.describe().kind, "pricing");
  exports.configure([["minimum.charged.mb", "1024"], ["project.ml", "2"], ["night.factor", "0.5"]]);
  const noon = MIDNIGHT + 12 * HOUR;
  const night = MIDNIGHT + 2 * HOUR;
  // Columns as the host sends them; 64-bit ones may arrive as BigInt
  // (StarlingMonkey), and the SDK reads numbers. Rows 0 and 2 share context 0.
  const usage = {
    seconds: [10, 10, 1],
    memoryMb: new BigUint64Array([4096n, 1024n, 1024n]),
    vcores: [1, 8, 1],
    gpus: [0, 0, 0],
    startMs: [noon, night, noon],
    endMs: [noon + 10_000, night + 10_000, noon + 1000],
    context: [0, 1, 0],
    contexts: [contextRecord("web"), contextRecord("ml")],
  };
  // 40 by day; 80 × 2 (ml) × 0.5 (night); 1 by day.
  assert.deepEqual(exports.pricing.charge(usage, ONE), [40, 80, 1]);
  const request = { context: usage.contexts[1], memoryMb: 1024, vcores: 8, gpus: 0, containers: 2, startMs: night, durationMs: 10_000 };
  assert.equal(exports.pricing.quote(request, ONE), 160);
  assert.throws(() => exports.configure([["discount", "10"]]), /has no parameter "discount"/);
  assert.deepEqual(lines, []);
});
