// Unit tests of the policy, natively: `node --test`. The same cases as Weft's
// flat-pricing crate, and one batch through the component glue.

import assert from "node:assert/strict";
import { test } from "node:test";

import { FlatPricing } from "./policy.js";
import { ParamError, pricing } from "./weft-policy.js";

/** The policy configured with `pairs` as the host would do it. */
const configured = (pairs) => pricing.configured(FlatPricing, pairs);

const ONE = { general: 1, gpu: 1 };
const row = (seconds, memoryMb, vcores, gpus) => ({ seconds, memoryMb, vcores, gpus });

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

test("bad parameters are refused", () => {
  const cases = [
    [[["price.base.general", "cheap"]], /price\.base\.general must be a number at least 0/],
    [[["price.base.gpu", "-1"]], /price\.base\.gpu/],
    [[["minimum.charged.mb", "0"]], /must be above 0/],
    [[["discount", "10"]], /has no parameter "discount"/],
  ];
  for (const [pairs, words] of cases) {
    assert.throws(() => configured(pairs), (error) => error instanceof ParamError && words.test(error.message));
  }
});

test("multiplicators are flat", () => {
  assert.deepEqual(configured([]).multiplicators({ memory: 0.9, vcores: 0.9, gpus: 2 }), ONE);
});

test("a batch is priced row by row, through the component glue", () => {
  const lines = [];
  const host = { log: (level, message) => lines.push([level, message]) };
  const exports = pricing.component(FlatPricing, host);
  assert.equal(exports.describe().kind, "pricing");
  exports.configure([["minimum.charged.mb", "1024"]]);
  // 64-bit columns may arrive as BigInt (StarlingMonkey); the SDK reads numbers.
  const usage = {
    seconds: [10, 10, 1],
    memoryMb: new BigUint64Array([4096n, 1024n, 1024n]),
    vcores: [1, 8, 1],
    gpus: [0, 0, 0],
  };
  assert.deepEqual(exports.pricing.charge(usage, ONE), [40, 80, 1]);
  assert.throws(() => exports.configure([["discount", "10"]]), /has no parameter "discount"/);
  assert.deepEqual(lines, []);
});
