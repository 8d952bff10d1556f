// Weft's policy SDK for JavaScript: write a pricing, scheduling or sharing
// policy as a plain class, and let the SDK do the component glue.
//
// - `log.info(...)` (and `trace`, `debug`, `warn`, `error`) writes one line
//   into the host's log through `weft:policy/host.log`; run natively (in unit
//   tests) the lines go to stderr.
// - `Params` reads `configure`'s `key=value` pairs as typed values; a key the
//   policy never reads, other than a standard key of its kind, refuses the
//   load with a message naming it.
// - `pricing`, `scheduling` and `sharing` each hold a `Policy` base class,
//   typed views of the host's inputs (rows instead of columns) and
//   `component(PolicyClass, host)`, which builds the module's exports. Every
//   export is wrapped: an exception is logged through `host.log` with its
//   stack before the call traps, and `configure` turns one into `err`.
//
// 64-bit integers are always plain numbers, whatever the JS runtime passes
// (componentize-qjs passes numbers, StarlingMonkey BigInt): an input integer
// beyond 2^53 - 1, which a number cannot hold exactly, is refused with a
// message naming the field. Answers are plain numbers too, as
// componentize-qjs (the toolchain the templates pin) expects.
//
// This file imports nothing, so a policy and its tests run natively under
// `node --test`; only the project's `component.js` imports the host.

// ---------------------------------------------------------------- log

export const LEVELS = ["trace", "debug", "info", "warn", "error"];

// The host keeps a log line short; a stack longer than this is cut, and the
// cut says how much went.
export const MAX_MESSAGE_CHARS = 16384;

/** `message` as text of at most MAX_MESSAGE_CHARS characters. */
export function bounded(message) {
  const text = String(message);
  if (text.length <= MAX_MESSAGE_CHARS) return text;
  const cut = text.length - MAX_MESSAGE_CHARS;
  return `${text.slice(0, MAX_MESSAGE_CHARS)}… (${cut} more characters)`;
}

function stderrSink(level, message) {
  console.error(`[${level}] ${message}`);
}

/** Writes log lines to a sink: stderr until the component glue points it at the host. */
export class Log {
  #sink = stderrSink;

  /** Sends every later line to `sink(level, message)`. */
  useSink(sink) {
    this.#sink = sink;
  }

  write(level, message) {
    if (!LEVELS.includes(level)) {
      throw new RangeError(`log level must be one of ${LEVELS.join(", ")}, not ${JSON.stringify(level)}`);
    }
    this.#sink(level, bounded(message));
  }

  trace(message) { this.write("trace", message); }
  debug(message) { this.write("debug", message); }
  info(message) { this.write("info", message); }
  warn(message) { this.write("warn", message); }
  error(message) { this.write("error", message); }
}

export const log = new Log();

// ---------------------------------------------------------------- params

// Bounds on what the host may hand over, so a hostile list cannot make
// configure slow or its messages huge.
export const MAX_PARAMS = 1024;
export const MAX_KEY_CHARS = 256;
export const MAX_VALUE_CHARS = 4096;

// A decimal number as an operator writes one: 1, -2.5, .5, 3., 1e-3.
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const INTEGER = /^[+-]?\d+$/;

/** A parameter the policy refuses; the message names it. `configure` answers
 * `err` with it and the host keeps the policy it had. */
export class ParamError extends Error {
  name = "ParamError";
}

function outside(value, min, max) {
  return (min !== undefined && value < min) || (max !== undefined && value > max);
}

function describeRange(what, min, max) {
  if (min !== undefined && max !== undefined) return `${what} from ${min} to ${max}`;
  if (min !== undefined) return `${what} at least ${min}`;
  if (max !== undefined) return `${what} at most ${max}`;
  return what;
}

/**
 * The parameters of one `configure` call.
 *
 * Each reader (`number`, `integer`, `string`, `boolean`) takes the key's last
 * value, or `default` when the key was not given, and marks the key as known.
 * After the policy's `configure` the SDK calls `refuseUnknown`: a key given
 * but never read, and not one of `standardKeys`, refuses the load.
 */
export class Params {
  #values = new Map();
  #read = new Set();

  constructor(pairs, policy, standardKeys = []) {
    this.policy = policy;
    this.standardKeys = [...standardKeys];
    let count = 0;
    for (const [key, value] of pairs) {
      count += 1;
      if (count > MAX_PARAMS) {
        throw new ParamError(`${policy}: at most ${MAX_PARAMS} parameters are accepted`);
      }
      if (key.length > MAX_KEY_CHARS) {
        throw new ParamError(
          `${policy}: parameter key ${JSON.stringify(key.slice(0, 40))}… is longer than ${MAX_KEY_CHARS} characters`,
        );
      }
      if (value.length > MAX_VALUE_CHARS) {
        throw new ParamError(`${policy}: the value of ${key} is longer than ${MAX_VALUE_CHARS} characters`);
      }
      // Later pairs win: an operator's --param overrides the standard one.
      this.#values.set(key, value);
    }
  }

  /** Whether the key was given at all (reading nothing). */
  given(key) {
    return this.#values.has(key);
  }

  #raw(key) {
    this.#read.add(key);
    const value = this.#values.get(key);
    return value === undefined ? undefined : value.trim();
  }

  /** A finite decimal number within [min, max]. */
  number(key, { default: fallback, min, max } = {}) {
    const raw = this.#raw(key);
    if (raw === undefined) return fallback;
    const value = NUMBER.test(raw) ? Number(raw) : NaN;
    if (!Number.isFinite(value) || outside(value, min, max)) {
      throw new ParamError(
        `${this.policy}: ${key} must be ${describeRange("a number", min, max)}, not ${JSON.stringify(raw)}`,
      );
    }
    return value;
  }

  /** A whole number within [min, max] that a number holds exactly. */
  integer(key, { default: fallback, min, max } = {}) {
    const raw = this.#raw(key);
    if (raw === undefined) return fallback;
    const value = INTEGER.test(raw) ? Number(raw) : NaN;
    if (!Number.isSafeInteger(value) || outside(value, min, max)) {
      throw new ParamError(
        `${this.policy}: ${key} must be ${describeRange("a whole number", min, max)}, not ${JSON.stringify(raw)}`,
      );
    }
    return value;
  }

  /** Text, one of `choices` when they are given. */
  string(key, { default: fallback, choices } = {}) {
    const raw = this.#raw(key);
    if (raw === undefined) return fallback;
    if (choices !== undefined && !choices.includes(raw)) {
      throw new ParamError(`${this.policy}: ${key} must be ${choices.join(" or ")}, not ${JSON.stringify(raw)}`);
    }
    return raw;
  }

  /** `true` or `false`. */
  boolean(key, { default: fallback } = {}) {
    const raw = this.#raw(key);
    if (raw === undefined) return fallback;
    if (raw !== "true" && raw !== "false") {
      throw new ParamError(`${this.policy}: ${key} must be true or false, not ${JSON.stringify(raw)}`);
    }
    return raw === "true";
  }

  /** Keys given that the policy did not read and its kind does not define. */
  unknown() {
    return [...this.#values.keys()].filter((key) => !this.#read.has(key) && !this.standardKeys.includes(key));
  }

  /** Throws ParamError naming the first unknown key, if any. */
  refuseUnknown() {
    const [key] = this.unknown();
    if (key === undefined) return;
    const known = [...this.#read].filter((k) => !this.standardKeys.includes(k)).sort();
    const takes = known.length ? `it takes ${known.join(", ")}` : "it takes none of its own";
    throw new ParamError(
      `${this.policy} has no parameter ${JSON.stringify(key)} (given ${key}=${this.#values.get(key)}); ${takes}`,
    );
  }
}

// ---------------------------------------------------------------- columns

/** Input the host promised would not happen; the message names the field. */
export class MalformedInput extends Error {
  name = "MalformedInput";
}

const MAX_EXACT = BigInt(Number.MAX_SAFE_INTEGER);

/** A WIT integer as a plain number: BigInt or number in, number out; beyond
 * ±(2^53 - 1) it is refused, naming `what`. */
export function integer(value, what) {
  if (typeof value === "bigint") {
    if (value > MAX_EXACT || value < -MAX_EXACT) {
      throw new MalformedInput(`${what} is ${value}, beyond 2^53 - 1, the largest integer a JS policy reads exactly`);
    }
    return Number(value);
  }
  if (!Number.isSafeInteger(value)) {
    throw new MalformedInput(`${what} is ${value}, not an integer within 2^53 - 1 that a JS policy reads exactly`);
  }
  return value;
}

/** A WIT integer as a plain number with no check: for fields whose bounds a
 * well-formedness check of its own covers (see sharing's `problem`). */
function looseInteger(value) {
  return typeof value === "bigint" ? Number(value) : value;
}

/** A list of WIT integers (an Array, or a typed array of BigInt) as numbers. */
function integers(values, what) {
  return Array.from(values, (value, i) => integer(value, `${what}[${i}]`));
}

/** A WIT name as the bindings' field: `free-memory-mb` is `freeMemoryMb`. */
function camelCase(name) {
  return name.replace(/-([a-z])/g, (_, letter) => letter.toUpperCase());
}

// Column kinds for `rows`: 64-bit (or smaller) integers become numbers;
// anything else (floats, booleans, options) is taken as it comes.
const INT = "integer";
const ANY = "value";

/**
 * One object per entry of `record`'s `columns` (a list of [WIT name, INT or
 * ANY]), its fields named as the bindings name them (`freeMemoryMb`); with
 * `indexed` each row has its `index`. Refuses columns of different lengths.
 */
export function rows(name, record, columns, { indexed = false } = {}) {
  const fields = columns.map(([column]) => camelCase(column));
  const sources = fields.map((field) => record[field]);
  const lengths = sources.map((values) => values.length);
  if (lengths.some((length) => length !== lengths[0])) {
    const counts = columns.map(([column], i) => `${lengths[i]} ${column}`).join(", ");
    throw new MalformedInput(`${name}: its columns differ in length (${counts})`);
  }
  const lists = columns.map(([column, kind], c) =>
    kind === INT ? integers(sources[c], `${name}.${column}`) : Array.from(sources[c]),
  );
  const count = lengths[0] ?? 0;
  const result = new Array(count);
  for (let i = 0; i < count; i++) {
    const row = indexed ? { index: i } : {};
    fields.forEach((field, c) => {
      row[field] = lists[c][i];
    });
    result[i] = row;
  }
  return result;
}

// ---------------------------------------------------------------- glue

/** The stack of a thrown value, or its text. */
function described(error) {
  if (error instanceof Error) {
    const head = `${error.name}: ${error.message}`;
    // V8's stack starts with the head, QuickJS's with the first frame.
    if (!error.stack) return head;
    return error.stack.startsWith(head) ? error.stack : `${head}\n${error.stack}`;
  }
  return String(error);
}

/** A new `PolicyClass` object configured with `pairs`, as the host configures
 * one; throws ParamError for a bad value or an unread key that is not one of
 * `standardKeys`. */
function configuredWith(PolicyClass, pairs, standardKeys) {
  const candidate = new PolicyClass();
  const params = new Params(pairs, String(candidate.name), standardKeys);
  candidate.configure(params);
  params.refuseUnknown();
  return candidate;
}

/** Points `log` at `weft:policy/host.log`. */
function useHostLog(host) {
  log.useSink((level, message) => host.log(level, message));
}

/** `call`, but a thrown value is logged through the host with its stack and a
 * fresh Error thrown instead, which traps the call (an Error is never a valid
 * `err` value): the host then answers from the previous good version. */
function guarded(name, call) {
  return (...args) => {
    try {
      return call(...args);
    } catch (error) {
      log.error(`${name} failed:\n${described(error)}`);
      throw new Error(`${name} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
}

/** The policy object in force in this instance. Each `configure` builds a
 * fresh one, so a refused configure leaves the previous one untouched and
 * configure is repeatable. */
class Active {
  constructor(PolicyClass, kind, standardKeys) {
    this.PolicyClass = PolicyClass;
    this.kind = kind;
    this.standardKeys = standardKeys;
    // Until configure: the class's defaults (the host configures first).
    this.policy = new PolicyClass();
  }

  describe() {
    return { name: String(this.policy.name), version: String(this.policy.version), kind: this.kind };
  }

  /** Configures a new policy object and makes it the active one, or throws
   * the `err` message (a string): a ParamError's message as it is, any other
   * exception logged with its stack and named in the message. */
  configure(pairs) {
    const name = String(this.policy.name);
    let candidate;
    try {
      candidate = configuredWith(this.PolicyClass, pairs, this.standardKeys);
    } catch (error) {
      if (error instanceof ParamError) throw error.message;
      log.error(`configure failed:\n${described(error)}`);
      throw `${name}: configure failed: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`;
    }
    this.policy = candidate;
  }
}

/** The exports every world shares: `describe` and `configure`. */
function baseExports(active) {
  return {
    describe: guarded("describe", () => active.describe()),
    configure: (pairs) => active.configure(pairs),
  };
}

function checkedU32(value, what) {
  if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) {
    throw new RangeError(`${what} is ${value}: it must be a whole number from 0 to ${0xffffffff}`);
  }
  return value;
}

// ---------------------------------------------------------------- pricing

// The quota settings the host always passes first (wit/pricing.wit). A policy
// reads those it uses; the others are accepted and ignored.
const PRICING_STANDARD_KEYS = Object.freeze([
  "price.base.general",
  "price.base.gpu",
  "multiplicator.threshold.general",
  "multiplicator.threshold.gpu",
  "multiplicator.increment.general",
  "multiplicator.increment.gpu",
  "minimum.charged.mb",
  "minimum.charged.gpu",
]);

/** A pricing policy. Extend it, set `name` and `version`, and write `price`;
 * `configure` and `multiplicators` have defaults (no parameters of its own,
 * multiplicators always 1). */
class PricingPolicy {
  name = "pricing-policy";
  version = "0.1.0";

  /** Reads the parameters this policy uses (standard keys included). */
  configure(params) {}

  /** The multiplicators for this utilization ({memory, vcores, gpus}): finite, at least 0. */
  multiplicators(utilization) {
    return { general: 1, gpu: 1 };
  }

  /** One container's charge in credits ({seconds, memoryMb, vcores, gpus}): finite, at least 0. */
  price(row, multiplicators) {
    throw new Error(`${this.constructor.name} has no price method`);
  }
}

/** The WIT `usage` record ({seconds, memoryMb, vcores, gpus} columns) as rows. */
function usageRows(usage) {
  return rows("usage", usage, [["seconds", ANY], ["memory-mb", INT], ["vcores", INT], ["gpus", INT]]);
}

/** What `charge` answers: one price per row, in order. A price that is not a
 * finite number at least 0 throws, naming the row. */
function charge(policy, usage, multiplicators) {
  return usageRows(usage).map((row, i) => {
    const price = policy.price(row, multiplicators);
    if (typeof price !== "number" || !Number.isFinite(price) || price < 0) {
      throw new RangeError(
        `price of row ${i} (${JSON.stringify(row)}) is ${String(price)}: a charge must be a finite number at least 0`,
      );
    }
    return price;
  });
}

/** `policy.multiplicators`, refused unless both are finite and at least 0. */
function checkedMultiplicators(policy, utilization) {
  const { general, gpu } = policy.multiplicators(utilization);
  for (const [name, value] of [["general", general], ["gpu", gpu]]) {
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
      throw new RangeError(`multiplicator ${name} is ${String(value)}: it must be a finite number at least 0`);
    }
  }
  return { general, gpu };
}

/** The module's exports for a pricing component:
 * `export const { describe, configure, pricing } = weft.pricing.component(MyPricing, host);` */
function pricingComponent(PolicyClass, host) {
  useHostLog(host);
  const active = new Active(PolicyClass, "pricing", PRICING_STANDARD_KEYS);
  return {
    ...baseExports(active),
    pricing: {
      multiplicators: guarded("multiplicators", (utilization) =>
        checkedMultiplicators(active.policy, {
          memory: utilization.memory,
          vcores: utilization.vcores,
          gpus: utilization.gpus,
        }),
      ),
      charge: guarded("charge", (usage, multiplicators) =>
        charge(active.policy, usage, { general: multiplicators.general, gpu: multiplicators.gpu }),
      ),
    },
  };
}

export const pricing = Object.freeze({
  /** A new `PolicyClass` object configured with `pairs` as the host would; throws ParamError. For tests. */
  configured: (PolicyClass, pairs) => configuredWith(PolicyClass, pairs, PRICING_STANDARD_KEYS),
  STANDARD_KEYS: PRICING_STANDARD_KEYS,
  Policy: PricingPolicy,
  usageRows,
  charge,
  checkedMultiplicators,
  component: pricingComponent,
});

// ---------------------------------------------------------------- scheduling

/** A scheduling policy. Extend it, set `name` and `version`, and write
 * `schedule`; `configure` (no parameters) and `preempt` (never) have defaults. */
class SchedulingPolicy {
  name = "scheduling-policy";
  version = "0.1.0";

  /** Reads the operator's parameters (scheduling has no standard ones). */
  configure(params) {}

  /** This round's placements ({ask, node, count}), applied in order by the host. */
  schedule(snapshot) {
    throw new Error(`${this.constructor.name} has no schedule method`);
  }

  /** Indices into `running` of the containers to preempt, each at most once. */
  preempt(snapshot, running) {
    return [];
  }
}

/** The WIT `snapshot` record as rows: {nowMs, nodes, queues, apps, asks}. */
function snapshotView(snapshot) {
  const indexed = { indexed: true };
  return {
    nowMs: integer(snapshot.nowMs, "snapshot.now-ms"),
    nodes: rows(
      "nodes",
      snapshot.nodes,
      [
        ["free-memory-mb", INT],
        ["free-vcores", INT],
        ["free-gpus", INT],
        ["capacity-memory-mb", INT],
        ["capacity-vcores", INT],
        ["capacity-gpus", INT],
      ],
      indexed,
    ),
    queues: rows(
      "queues",
      snapshot.queues,
      [
        ["parent", INT],
        ["capacity", ANY],
        ["maximum-capacity", ANY],
        ["minimum-user-limit-percent", ANY],
        // null when a user may take the whole queue, up to its maximum.
        ["user-limit-factor", ANY],
        ["fair", ANY],
        ["used-memory-mb", INT],
        ["used-vcores", INT],
        ["used-gpus", INT],
      ],
      indexed,
    ),
    apps: rows(
      "apps",
      snapshot.apps,
      [
        ["queue", INT],
        ["user", INT],
        ["priority", INT],
        ["submit-time-ms", INT],
        ["used-memory-mb", INT],
        ["used-vcores", INT],
        ["used-gpus", INT],
      ],
      indexed,
    ),
    asks: rows(
      "asks",
      snapshot.asks,
      [["app", INT], ["pending", INT], ["memory-mb", INT], ["vcores", INT], ["gpus", INT]],
      indexed,
    ),
  };
}

/** The WIT `containers` record as rows. */
function containersView(running) {
  const columns = [["app", INT], ["node", INT], ["memory-mb", INT], ["vcores", INT], ["gpus", INT], ["start-time-ms", INT]];
  return rows("containers", running, columns, { indexed: true });
}

/** Placements ({ask, node, count} objects) as the WIT record's columns. */
function placementColumns(placements) {
  const columns = { ask: [], node: [], count: [] };
  let i = 0;
  for (const { ask, node, count } of placements) {
    columns.ask.push(checkedU32(ask, `placement ${i}: ask`));
    columns.node.push(checkedU32(node, `placement ${i}: node`));
    columns.count.push(checkedU32(count, `placement ${i}: count`));
    i += 1;
  }
  return columns;
}

/** `preempt`'s answer as a list of u32. */
function victims(indices) {
  return Array.from(indices, (index, i) => checkedU32(index, `preempted container ${i}`));
}

/** The module's exports for a scheduling component:
 * `export const { describe, configure, scheduling } = weft.scheduling.component(MyPolicy, host);` */
function schedulingComponent(PolicyClass, host) {
  useHostLog(host);
  const active = new Active(PolicyClass, "scheduling", []);
  return {
    ...baseExports(active),
    scheduling: {
      schedule: guarded("schedule", (snapshot) =>
        placementColumns(active.policy.schedule(snapshotView(snapshot))),
      ),
      preempt: guarded("preempt", (snapshot, running) =>
        victims(active.policy.preempt(snapshotView(snapshot), containersView(running))),
      ),
    },
  };
}

export const scheduling = Object.freeze({
  /** A new `PolicyClass` object configured with `pairs` as the host would; throws ParamError. For tests. */
  configured: (PolicyClass, pairs) => configuredWith(PolicyClass, pairs, []),
  STANDARD_KEYS: Object.freeze([]),
  Policy: SchedulingPolicy,
  snapshotView,
  containersView,
  placementColumns,
  victims,
  component: schedulingComponent,
});

// ---------------------------------------------------------------- sharing

// The largest amount of one resource a well-formed admission holds: 2^40 - 1
// (an exabyte in MB), so sums of a few stay exact.
const MAX_AMOUNT = 2 ** 40 - 1;
// The latest time (and minus the earliest) a well-formed admission holds, in
// ms: 2^53 - 1, the largest integer a number holds exactly (285,000 years).
const MAX_TIME_MS = Number.MAX_SAFE_INTEGER;

/** An amount of every resource dimension. */
function resources(memoryMb, vcores, gpus) {
  return { memoryMb, vcores, gpus };
}

const ZERO = Object.freeze(resources(0, 0, 0));

// The dimensions of a resources object: its field, WIT column and unit.
const DIMENSIONS = Object.freeze([
  Object.freeze({ field: "memoryMb", column: "memory-mb", unit: "MB" }),
  Object.freeze({ field: "vcores", column: "vcores", unit: "vcores" }),
  Object.freeze({ field: "gpus", column: "gpus", unit: "GPUs" }),
]);

function isZero(amount) {
  return DIMENSIONS.every(({ field }) => amount[field] === 0);
}

function sameAmount(a, b) {
  return DIMENSIONS.every(({ field }) => a[field] === b[field]);
}

/** `a - b` per dimension, at least 0. */
function minus(a, b) {
  return resources(
    Math.max(a.memoryMb - b.memoryMb, 0),
    Math.max(a.vcores - b.vcores, 0),
    Math.max(a.gpus - b.gpus, 0),
  );
}

/** `a + b` per dimension. */
function plus(a, b) {
  return resources(a.memoryMb + b.memoryMb, a.vcores + b.vcores, a.gpus + b.gpus);
}

/** The first index whose time is after `atMs` (times in order). */
function firstAfter(atMs, times) {
  let low = 0;
  let high = times.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (times[mid] <= atMs) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** A step function of resources over time: `steps` of {atMs, amount}; zero
 * before the first step, and each step's amount until the next (the host
 * ends a timeline with a zero step). */
class Timeline {
  constructor(steps = []) {
    this.steps = steps.map(({ atMs, amount }) => ({
      atMs,
      amount: resources(amount.memoryMb, amount.vcores, amount.gpus),
    }));
    this.atMs = this.steps.map((step) => step.atMs);
  }

  get length() {
    return this.steps.length;
  }

  /** The amount held at instant `atMs` (steps in order). */
  amountAt(atMs) {
    const after = firstAfter(atMs, this.atMs);
    return after ? this.steps[after - 1].amount : ZERO;
  }

  /** What keeps this timeline from being well formed, or null: times strictly
   * increasing and within ±MAX_TIME_MS, amounts within MAX_AMOUNT. */
  problem(name) {
    for (let i = 0; i < this.steps.length; i++) {
      const { atMs, amount } = this.steps[i];
      if (!(Math.abs(atMs) <= MAX_TIME_MS)) return `${name}: at-ms[${i}] is ${atMs}, beyond ±(2^53 - 1) ms`;
      if (i && this.steps[i - 1].atMs >= atMs) {
        return `${name}: at-ms must strictly increase, but at-ms[${i - 1}] is ${this.steps[i - 1].atMs} and at-ms[${i}] is ${atMs}`;
      }
      for (const { field, column } of DIMENSIONS) {
        if (!(amount[field] <= MAX_AMOUNT)) {
          return `${name}: ${column}[${i}] is ${amount[field]}, above the largest amount 2^40 - 1`;
        }
      }
    }
    return null;
  }
}

/** The WIT `timeline` record as a Timeline, and what is wrong with it. */
function timelineView(name, columns) {
  const lists = [columns.atMs, columns.memoryMb, columns.vcores, columns.gpus].map((values) =>
    Array.from(values, looseInteger),
  );
  const count = Math.min(...lists.map((values) => values.length));
  const steps = [];
  for (let i = 0; i < count; i++) {
    steps.push({ atMs: lists[0][i], amount: resources(lists[1][i], lists[2][i], lists[3][i]) });
  }
  const timeline = new Timeline(steps);
  if (lists.some((values) => values.length !== lists[0].length)) {
    const counts = lists
      .map((values, i) => `${values.length} ${["at-ms", "memory-mb", "vcores", "gpus"][i]}`)
      .join(", ");
    return [timeline, `${name}: its columns differ in length (${counts})`];
  }
  return [timeline, timeline.problem(name)];
}

/** The WIT `plan-settings` record: {queue, capacity, reservationWindowMs,
 * instantaneousMaxCapacity, averageCapacity}. */
function settingsView(settings) {
  const { capacity } = settings;
  return {
    queue: settings.queue,
    capacity: resources(looseInteger(capacity.memoryMb), looseInteger(capacity.vcores), looseInteger(capacity.gpus)),
    reservationWindowMs: integer(settings.reservationWindowMs, "settings.reservation-window-ms"),
    instantaneousMaxCapacity: settings.instantaneousMaxCapacity,
    averageCapacity: settings.averageCapacity,
  };
}

function rangeProblem({ fromMs, toMs }) {
  if (!(fromMs <= toMs && Math.abs(fromMs) <= MAX_TIME_MS && Math.abs(toMs) <= MAX_TIME_MS)) {
    return `the range [${fromMs}, ${toMs}) ms runs backwards or lies beyond ±(2^53 - 1) ms`;
  }
  return null;
}

function capacityProblem({ capacity }) {
  for (const { field, unit } of DIMENSIONS) {
    if (!(capacity[field] <= MAX_AMOUNT)) {
      return `settings: the capacity is ${capacity[field]} ${unit}, above the largest amount 2^40 - 1`;
    }
  }
  return null;
}

function outsideRange({ candidate, fromMs, toMs }) {
  const { steps } = candidate;
  for (let i = 0; i < steps.length; i++) {
    if (isZero(steps[i].amount)) continue;
    const end = i + 1 < steps.length ? steps[i + 1].atMs : null;
    if (steps[i].atMs < fromMs || end === null || end > toMs) {
      const until = end === null ? "on" : `until t=${end} ms`;
      return `candidate: it holds resources from t=${steps[i].atMs} ms ${until}, outside the range [${fromMs}, ${toMs}) ms`;
    }
  }
  return null;
}

/** From the first instant the candidate holds anything to the end of the
 * last, within [fromMs, toMs), as [start, end]; null when it holds nothing. */
function candidateSpan({ candidate, fromMs, toMs }) {
  const { steps } = candidate;
  const held = steps.flatMap((step, i) => (isZero(step.amount) ? [] : [i]));
  if (!held.length) return null;
  const first = held[0];
  const last = held[held.length - 1];
  const end = last + 1 < steps.length ? steps[last + 1].atMs : toMs;
  return [Math.max(steps[first].atMs, fromMs), Math.min(end, toMs)];
}

/** The WIT `admission` record as an admission view, with `problem`: what is
 * wrong with it, or null. */
function admissionView(admission) {
  const [candidate, candidateProblem] = timelineView("candidate", admission.candidate);
  const [userCommitted, userProblem] = timelineView("user-committed", admission.userCommitted);
  const [planCommitted, planProblem] = timelineView("plan-committed", admission.planCommitted);
  const view = {
    settings: settingsView(admission.settings),
    user: admission.user,
    reservationId: admission.reservationId,
    fromMs: looseInteger(admission.fromMs),
    toMs: looseInteger(admission.toMs),
    candidate,
    userCommitted,
    planCommitted,
    problem: null,
    candidateSpan() {
      return candidateSpan(this);
    },
  };
  view.problem =
    rangeProblem(view) ??
    capacityProblem(view.settings) ??
    candidateProblem ??
    outsideRange(view) ??
    userProblem ??
    planProblem;
  return view;
}

/**
 * Walks the timelines together over [fromMs, toMs), stretch by stretch in
 * time order: a merge of their steps, O(steps). Yields {fromMs, toMs,
 * amounts}, amounts[k] being timeline k's amount. Expects well-formed
 * timelines (times strictly increasing).
 */
function* walk(timelines, fromMs, toMs) {
  const following = timelines.map((line) => firstAfter(fromMs, line.atMs));
  let at = fromMs;
  while (at < toMs) {
    let end = toMs;
    const amounts = timelines.map((line, k) => {
      const after = following[k];
      if (after < line.steps.length) end = Math.min(end, line.steps[after].atMs);
      return after ? line.steps[after - 1].amount : ZERO;
    });
    // A step behind us (unsorted input) must not walk backwards.
    end = Math.min(Math.max(end, at + 1), toMs);
    yield { fromMs: at, toMs: end, amounts };
    at = end;
    timelines.forEach((line, k) => {
      while (following[k] < line.steps.length && line.steps[following[k]].atMs <= end) following[k] += 1;
    });
  }
}

/** Builds a timeline from amounts pushed in time order, leaving out steps
 * that change nothing and ending it with a zero step, as the WIT asks. */
class TimelineBuilder {
  #steps = [];
  #last = ZERO;

  /** From `atMs` on, the amount is `amount`. */
  push(atMs, amount) {
    if (!sameAmount(amount, this.#last)) {
      this.#steps.push({ atMs, amount });
      this.#last = amount;
    }
  }

  /** The timeline, zero from `toMs` on. */
  finish(toMs) {
    this.push(toMs, ZERO);
    return new Timeline(this.#steps);
  }
}

/** The plan would hold more than the queue's capacity. */
class OverCommit {
  tag = "over-commit";
  constructor(message) {
    this.message = message;
  }
}

/** The user would hold more than instantaneous-max-capacity at some instant. */
class InstantaneousQuota {
  tag = "instantaneous-quota";
  constructor(message) {
    this.message = message;
  }
}

/** The user's holding over some window would exceed window × average-capacity. */
class AverageQuota {
  tag = "average-quota";
  constructor(message) {
    this.message = message;
  }
}

/** A sharing policy. Extend it, set `name` and `version`, and write
 * `validate` and `available`; `configure` (no parameters) and `window` (0:
 * look at the reservation alone) have defaults. */
class SharingPolicy {
  name = "sharing-policy";
  version = "0.1.0";

  /** Reads the operator's parameters (sharing has no standard ones). */
  configure(params) {}

  /** How far before and after a reservation the policy looks, in ms. */
  window(settings) {
    return 0;
  }

  /** null to accept the candidate, or an OverCommit, InstantaneousQuota or AverageQuota. */
  validate(admission) {
    throw new Error(`${this.constructor.name} has no validate method`);
  }

  /** What the user could still be given at each instant of the range, as a Timeline. */
  available(admission) {
    throw new Error(`${this.constructor.name} has no available method`);
  }
}

function checkedWindow(window) {
  if (!Number.isSafeInteger(window) || window < 0) {
    throw new RangeError(`window is ${String(window)}: it must be a whole number of ms from 0 to 2^53 - 1`);
  }
  return window;
}

/** The WIT `timeline` record for a Timeline. */
function timelineColumns(timeline) {
  if (!(timeline instanceof Timeline)) {
    throw new TypeError(`available answered ${String(timeline)}: it must be a Timeline`);
  }
  const { steps } = timeline;
  return {
    atMs: steps.map((step) => step.atMs),
    memoryMb: steps.map((step) => step.amount.memoryMb),
    vcores: steps.map((step) => step.amount.vcores),
    gpus: steps.map((step) => step.amount.gpus),
  };
}

/** The `err` value for a rejection: WIT's variant as componentize-qjs reads it. */
function rejectionVariant(rejection) {
  if (!(rejection instanceof OverCommit || rejection instanceof InstantaneousQuota || rejection instanceof AverageQuota)) {
    throw new TypeError(
      `validate answered ${String(rejection)}: it must be null, OverCommit, InstantaneousQuota or AverageQuota`,
    );
  }
  return { tag: rejection.tag, val: String(rejection.message) };
}

/** The module's exports for a sharing component:
 * `export const { describe, configure, sharing } = weft.sharing.component(MyPolicy, host);` */
function sharingComponent(PolicyClass, host) {
  useHostLog(host);
  const active = new Active(PolicyClass, "sharing", []);
  // A rejection is thrown as the `err` value; anything else thrown traps.
  const judge = guarded("validate", (admission) => {
    const rejection = active.policy.validate(admissionView(admission));
    return rejection == null ? null : rejectionVariant(rejection);
  });
  return {
    ...baseExports(active),
    sharing: {
      window: guarded("window", (settings) => checkedWindow(active.policy.window(settingsView(settings)))),
      validate: (admission) => {
        const rejection = judge(admission);
        if (rejection !== null) throw rejection;
      },
      available: guarded("available", (admission) =>
        timelineColumns(active.policy.available(admissionView(admission))),
      ),
    },
  };
}

export const sharing = Object.freeze({
  /** A new `PolicyClass` object configured with `pairs` as the host would; throws ParamError. For tests. */
  configured: (PolicyClass, pairs) => configuredWith(PolicyClass, pairs, []),
  STANDARD_KEYS: Object.freeze([]),
  MAX_AMOUNT,
  MAX_TIME_MS,
  ZERO,
  DIMENSIONS,
  Policy: SharingPolicy,
  Timeline,
  TimelineBuilder,
  OverCommit,
  InstantaneousQuota,
  AverageQuota,
  resources,
  plus,
  minus,
  walk,
  candidateSpan,
  settingsView,
  timelineView,
  admissionView,
  timelineColumns,
  component: sharingComponent,
});
