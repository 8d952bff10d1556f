// Weft's policy SDK for JavaScript (weft:policy@0.3.0): write a pricing,
// scheduling or sharing policy as a plain class, and let the SDK do the
// component glue.
//
// - `log.info(...)` (and `trace`, `debug`, `warn`, `error`) writes one line
//   into the host's log through `weft:policy/host.log`; run natively (in unit
//   tests) the lines go to stderr.
// - `Params` reads `configure`'s `key=value` pairs as typed values; a key the
//   policy never reads, other than a standard key of its kind, refuses the
//   load with a message naming it.
// - `pricing`, `scheduling` and `sharing` each hold a `Policy` base class,
//   typed views of the host's inputs (rows instead of columns, checked as
//   the host promises: columns of one length, indices in range) and
//   `component(PolicyClass, host)`, which builds the module's exports. Every
//   export is wrapped: an exception is logged through `host.log` with its
//   stack before the call traps, and `configure` turns one into `err`.
// - `pricing.nightFraction` is a helper for time-of-day prices.
// - `scheduling.keepRules` cuts a round's placements to the host's partition,
//   constraint and gang rules, and `scheduling.scheduleKeepingRules` wraps a
//   round with it, running it again while it places gangs in part: first
//   with the first of them alone in play, then without it (the Rust SDK's
//   `keep_rules` and `schedule_keeping_rules`).
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
 * value, or `default` when the key was not given, and marks the key as known;
 * `withPrefix` reads a family of keys (`project.NAME`). After the policy's
 * `configure` the SDK calls `refuseUnknown`: a key given but never read, and
 * not one of `standardKeys`, refuses the load.
 */
export class Params {
  #values = new Map();
  #read = new Set();
  // Families read with `withPrefix`, named in a refusal's list of known keys.
  #prefixes = new Set();

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

  /**
   * Every key given that starts with `prefix`, as `[rest, value]` pairs (the
   * key without the prefix, the key's last value as text), in the order the
   * keys were first given, each marked as known. For a family of keys whose
   * names the policy cannot list, e.g. `project.NAME=FACTOR`; read each value
   * with a typed reader (`number(prefix + rest)`) to check it and name the key
   * in a refusal.
   */
  withPrefix(prefix) {
    this.#prefixes.add(prefix);
    const found = [];
    for (const [key, value] of this.#values) {
      if (!key.startsWith(prefix)) continue;
      this.#read.add(key);
      found.push([key.slice(prefix.length), value.trim()]);
    }
    return found;
  }

  /** Keys given that the policy did not read and its kind does not define. */
  unknown() {
    return [...this.#values.keys()].filter((key) => !this.#read.has(key) && !this.standardKeys.includes(key));
  }

  /** Throws ParamError naming the first unknown key, if any. */
  refuseUnknown() {
    const [key] = this.unknown();
    if (key === undefined) return;
    // A family is named once (`project.*`), not by the keys of it given.
    const prefixes = [...this.#prefixes];
    const single = [...this.#read].filter((k) => !prefixes.some((prefix) => k.startsWith(prefix)));
    const known = [...single, ...prefixes.map((prefix) => `${prefix}*`)]
      .filter((k) => !this.standardKeys.includes(k))
      .sort();
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

// Column kinds for `rows`: 64-bit (or smaller) integers become numbers, and
// so do optional ones (none is null); OPTIONAL values are taken as they come,
// none as null (componentize-qjs passes null, StarlingMonkey undefined);
// anything else (floats, booleans, strings, enums) is taken as it comes.
const INT = "integer";
const OPTIONAL_INT = "optional integer";
const OPTIONAL = "optional";
const ANY = "value";

/** One column's values as `kind` says, `what` naming it in a refusal. */
function columnValues(values, kind, what) {
  switch (kind) {
    case INT:
      return integers(values, what);
    case OPTIONAL_INT:
      return Array.from(values, (value, i) => (value == null ? null : integer(value, `${what}[${i}]`)));
    case OPTIONAL:
      return Array.from(values, (value) => value ?? null);
    default:
      return Array.from(values);
  }
}

/**
 * One object per entry of `record`'s `columns` (a list of [WIT name, kind]),
 * its fields named as the bindings name them (`freeMemoryMb`); with
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
  const lists = columns.map(([column, kind], c) => columnValues(sources[c], kind, `${name}.${column}`));
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

/**
 * Refuses a row whose `column` (a WIT name) does not index a list of `count`
 * entries, `target` naming them: `asks.app[3] is 7, but there are 5 apps`.
 */
export function checkIndices(name, list, column, count, target) {
  const field = camelCase(column);
  for (let i = 0; i < list.length; i++) {
    const value = list[i][field];
    if (!(value >= 0 && value < count)) {
      throw new MalformedInput(`${name}.${column}[${i}] is ${value}, but there are ${count} ${target}`);
    }
  }
}

/**
 * A sparse table's per-item lookup: `lists[i]` holds `pick(row)` for every
 * row of `table` whose `field` is item i, in the table's order; an item with
 * no rows has an empty list. Indices must be checked first.
 */
function grouped(count, table, field, pick) {
  const lists = Array.from({ length: count }, () => []);
  for (const row of table) lists[row[field]].push(pick(row));
  return lists;
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

/** Whether `value` is a number a charge or multiplicator may be: finite, at least 0. */
function isPrice(value) {
  return typeof value === "number" && Number.isFinite(value) && value >= 0;
}

/** A pricing policy. Extend it, set `name` and `version`, and write `price`;
 * `configure`, `multiplicators` and `quote` have defaults (no parameters of
 * its own, multiplicators always 1, a quote priced as `charge` would). */
class PricingPolicy {
  name = "pricing-policy";
  version = "0.1.0";

  /** Reads the parameters this policy uses (standard keys included). */
  configure(params) {}

  /** The multiplicators for this market (see `marketView`): finite, at least 0. */
  multiplicators(market) {
    return { general: 1, gpu: 1 };
  }

  /** One container's charge in credits for a usage row ({seconds, memoryMb,
   * vcores, gpus, startMs, endMs, context}, see `usageRows`): finite, at
   * least 0, from that row and its context alone. */
  price(row, multiplicators) {
    throw new Error(`${this.constructor.name} has no price method`);
  }

  /** What a quote request (see `quoteView`) would cost, all its containers
   * together: by default one container's row (`quoteRow`) priced as `charge`
   * would price it, times the containers, so a quote is what the usage will
   * be charged. An override must keep that agreement. */
  quote(request, multiplicators) {
    return this.price(quoteRow(request), multiplicators) * request.containers;
  }
}

/** `value` as a finite number at least 0, or MalformedInput naming `what`: the
 * host promises every f64 it sends is one. */
function checkedInput(value, what) {
  if (!isPrice(value)) throw new MalformedInput(`${what} is ${String(value)}: it must be a finite number at least 0`);
  return value;
}

/** The WIT `resources` record: {memoryMb, vcores, gpus}. */
function resourcesView(record, what) {
  return {
    memoryMb: integer(record.memoryMb, `${what}.memory-mb`),
    vcores: integer(record.vcores, `${what}.vcores`),
    gpus: integer(record.gpus, `${what}.gpus`),
  };
}

/**
 * The WIT `market` record, checked: {nowMs, utilization: {memory, vcores,
 * gpus}, partitions: [{name, capacity, used, pending}], queues: [{path,
 * guaranteed, used, pending}], last: {general, gpu}}, each amount a
 * {memoryMb, vcores, gpus}. Every fraction and multiplicator is finite and
 * at least 0, or MalformedInput names it.
 */
function marketView(market) {
  const { utilization, last } = market;
  const partitions = Array.from(market.partitions, (load, i) => {
    const what = `market.partitions[${i}]`;
    return {
      name: load.name,
      capacity: resourcesView(load.capacity, `${what}.capacity`),
      used: resourcesView(load.used, `${what}.used`),
      pending: resourcesView(load.pending, `${what}.pending`),
    };
  });
  const queues = Array.from(market.queues, (load, i) => {
    const what = `market.queues[${i}]`;
    return {
      path: load.path,
      guaranteed: resourcesView(load.guaranteed, `${what}.guaranteed`),
      used: resourcesView(load.used, `${what}.used`),
      pending: resourcesView(load.pending, `${what}.pending`),
    };
  });
  return {
    nowMs: integer(market.nowMs, "market.now-ms"),
    utilization: {
      memory: checkedInput(utilization.memory, "market.utilization.memory"),
      vcores: checkedInput(utilization.vcores, "market.utilization.vcores"),
      gpus: checkedInput(utilization.gpus, "market.utilization.gpus"),
    },
    partitions,
    queues,
    last: {
      general: checkedInput(last.general, "market.last.general"),
      gpu: checkedInput(last.gpu, "market.last.gpu"),
    },
  };
}

/**
 * The WIT `charge-context` record: {app, queue, user, project,
 * applicationType, applicationTags (array), priority, nodeLabel,
 * nodeAttributes (a Map from key to value), executionType ("guaranteed" or
 * "opportunistic"), reservation (null for none)}. Frozen (all but the
 * attributes' Map), as many rows share one: a row's price may not change what
 * another row's sees.
 */
function contextView(context) {
  return Object.freeze({
    app: context.app,
    queue: context.queue,
    user: context.user,
    project: context.project,
    applicationType: context.applicationType,
    applicationTags: Object.freeze(Array.from(context.applicationTags)),
    priority: context.priority,
    nodeLabel: context.nodeLabel,
    nodeAttributes: new Map(Array.from(context.nodeAttributes, ({ key, value }) => [key, value])),
    executionType: context.executionType,
    reservation: context.reservation ?? null,
  });
}

/**
 * The WIT `usage` record as rows: {seconds, memoryMb, vcores, gpus, startMs,
 * endMs, context}, `context` being the row's context view (see
 * `contextView`). Each context is viewed once per batch and shared by the
 * rows pointing to it. Refuses (MalformedInput) columns of different lengths,
 * a `seconds` not finite or below 0, a `startMs` after its `endMs`, and a
 * context index out of range: what the host promises.
 */
function usageRows(usage) {
  const contexts = Array.from(usage.contexts, contextView);
  const columns = [
    ["seconds", ANY],
    ["memory-mb", INT],
    ["vcores", INT],
    ["gpus", INT],
    ["start-ms", INT],
    ["end-ms", INT],
    ["context", INT],
  ];
  const list = rows("usage", usage, columns);
  checkIndices("usage", list, "context", contexts.length, "contexts");
  list.forEach((row, i) => {
    checkedInput(row.seconds, `usage.seconds[${i}]`);
    if (row.startMs > row.endMs) {
      throw new MalformedInput(`usage row ${i} runs backwards: start-ms ${row.startMs} is after end-ms ${row.endMs}`);
    }
    row.context = contexts[row.context];
  });
  return list;
}

/** A usage row in a message: its numbers and its app, not the whole context. */
function describedRow({ seconds, memoryMb, vcores, gpus, startMs, endMs, context }) {
  const numbers = JSON.stringify({ seconds, memoryMb, vcores, gpus, startMs, endMs });
  return context ? `${numbers} of ${context.app}` : numbers;
}

/** What `charge` answers: one price per row, in order. A price that is not a
 * finite number at least 0 throws, naming the row. */
function charge(policy, usage, multiplicators) {
  return usageRows(usage).map((row, i) => {
    const price = policy.price(row, multiplicators);
    if (!isPrice(price)) {
      throw new RangeError(
        `price of row ${i} (${describedRow(row)}) is ${String(price)}: a charge must be a finite number at least 0`,
      );
    }
    return price;
  });
}

/** The WIT `quote-request` record: {context (see `contextView`), memoryMb,
 * vcores, gpus, containers, startMs, durationMs}. A negative duration is
 * refused (MalformedInput): its row would run backwards. */
function quoteView(request) {
  const view = {
    context: contextView(request.context),
    memoryMb: integer(request.memoryMb, "quote-request.memory-mb"),
    vcores: integer(request.vcores, "quote-request.vcores"),
    gpus: integer(request.gpus, "quote-request.gpus"),
    containers: request.containers,
    startMs: integer(request.startMs, "quote-request.start-ms"),
    durationMs: integer(request.durationMs, "quote-request.duration-ms"),
  };
  if (view.durationMs < 0) {
    throw new MalformedInput(`quote-request.duration-ms is ${view.durationMs}: a container cannot run backwards`);
  }
  return view;
}

/** The usage row one container of a quote request would be charged as:
 * {seconds: durationMs / 1000, its size, startMs, endMs: startMs +
 * durationMs (at most 2^53 - 1, the latest instant a JS policy reads
 * exactly), context}. */
function quoteRow(request) {
  const { memoryMb, vcores, gpus, startMs, durationMs, context } = request;
  const endMs = Math.min(startMs + durationMs, Number.MAX_SAFE_INTEGER);
  return { seconds: durationMs / 1000, memoryMb, vcores, gpus, startMs, endMs, context };
}

/** What `quote` answers for the WIT request: `policy.quote`, which throws
 * unless it is a finite number at least 0. */
function quote(policy, request, multiplicators) {
  const cost = policy.quote(quoteView(request), multiplicators);
  if (!isPrice(cost)) {
    throw new RangeError(`quote is ${String(cost)}: it must be a finite number at least 0`);
  }
  return cost;
}

/** `policy.multiplicators(market)`, refused unless both are finite and at least 0. */
function checkedMultiplicators(policy, market) {
  const { general, gpu } = policy.multiplicators(market);
  for (const [name, value] of [["general", general], ["gpu", gpu]]) {
    if (!isPrice(value)) {
      throw new RangeError(`multiplicator ${name} is ${String(value)}: it must be a finite number at least 0`);
    }
  }
  return { general, gpu };
}

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

/** The night's stretches of one UTC day, as [from, to) ms since midnight: one
 * window, or two when it wraps midnight (22 → 6 is 00:00–06:00 and 22:00–24:00). */
function nightStretches(startHour, endHour) {
  if (startHour < endHour) return [[startHour * HOUR_MS, endHour * HOUR_MS]];
  return [[0, endHour * HOUR_MS], [startHour * HOUR_MS, DAY_MS]];
}

/** Night ms from the epoch's midnight to `t` (negative before it): whole days
 * times the night's length, plus the night in `t`'s own day so far. Exact:
 * every term is an integer below 2^53. */
function nightBefore(t, stretches, nightPerDay) {
  const days = Math.floor(t / DAY_MS);
  const intoDay = t - days * DAY_MS;
  let night = days * nightPerDay;
  for (const [from, to] of stretches) night += Math.min(Math.max(intoDay - from, 0), to - from);
  return night;
}

/**
 * The fraction (0 to 1) of [startMs, endMs] that falls in the UTC hours
 * [startHour, endHour) of each day. The hours may wrap midnight (22 → 6 is
 * 22:00–06:00); equal hours mean no night (0). A zero-length interval is 1
 * when its instant is in the night, else 0. Exact on integer ms: the night
 * before each end is counted in whole days plus one partial day, so an
 * interval of any length costs the same.
 */
function nightFraction(startMs, endMs, startHour, endHour) {
  for (const [name, hour] of [["startHour", startHour], ["endHour", endHour]]) {
    if (!Number.isInteger(hour) || hour < 0 || hour > 23) {
      throw new RangeError(`nightFraction: ${name} is ${String(hour)}: it must be a whole hour from 0 to 23`);
    }
  }
  if (!Number.isSafeInteger(startMs) || !Number.isSafeInteger(endMs) || startMs > endMs) {
    throw new RangeError(`nightFraction: [${startMs}, ${endMs}] must be whole ms, the start not after the end`);
  }
  if (startHour === endHour) return 0;
  const stretches = nightStretches(startHour, endHour);
  if (startMs === endMs) {
    const intoDay = startMs - Math.floor(startMs / DAY_MS) * DAY_MS;
    return stretches.some(([from, to]) => from <= intoDay && intoDay < to) ? 1 : 0;
  }
  const nightPerDay = stretches.reduce((sum, [from, to]) => sum + to - from, 0);
  const night = nightBefore(endMs, stretches, nightPerDay) - nightBefore(startMs, stretches, nightPerDay);
  return night / (endMs - startMs);
}

/** The module's exports for a pricing component:
 * `export const { describe, configure, pricing } = weft.pricing.component(MyPricing, host);` */
function pricingComponent(PolicyClass, host) {
  useHostLog(host);
  const active = new Active(PolicyClass, "pricing", PRICING_STANDARD_KEYS);
  // The host's multiplicators as a plain object, whatever the bindings pass.
  const plain = ({ general, gpu }) => ({ general, gpu });
  return {
    ...baseExports(active),
    pricing: {
      multiplicators: guarded("multiplicators", (market) =>
        checkedMultiplicators(active.policy, marketView(market)),
      ),
      charge: guarded("charge", (usage, multiplicators) => charge(active.policy, usage, plain(multiplicators))),
      quote: guarded("quote", (request, multiplicators) => quote(active.policy, request, plain(multiplicators))),
    },
  };
}

export const pricing = Object.freeze({
  /** A new `PolicyClass` object configured with `pairs` as the host would; throws ParamError. For tests. */
  configured: (PolicyClass, pairs) => configuredWith(PolicyClass, pairs, PRICING_STANDARD_KEYS),
  STANDARD_KEYS: PRICING_STANDARD_KEYS,
  Policy: PricingPolicy,
  marketView,
  contextView,
  usageRows,
  quoteView,
  quoteRow,
  charge,
  quote,
  checkedMultiplicators,
  nightFraction,
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

  /** This round's placements ({ask, node, count}) for a snapshot view (see
   * `snapshotView`), applied in order by the host. */
  schedule(snapshot) {
    throw new Error(`${this.constructor.name} has no schedule method`);
  }

  /** Indices into `running` of the containers to preempt, each at most once. */
  preempt(snapshot, running) {
    return [];
  }
}

/**
 * The WIT `snapshot` record as rows, checked (columns of one length, every
 * index in range) and with each sparse table's rows also gathered per item:
 *
 * - `nowMs`; `round`: {kind, partition}; `localityDelays`:
 *   {nodeLocalityDelay, rackLocalityAdditionalDelay (null for YARN's -1)};
 * - `partitions`: [{index, name, exclusive}]; `racks`: [path];
 * - `nodes`: [{index, free*, capacity*, partition, rack, attributes (a Map
 *   from key to value), tagCounts ([{app, tag, count}])}];
 * - `queues`: [{index, path, parent, capacity, maximumCapacity,
 *   minimumUserLimitPercent, userLimitFactor (null: no limit), fair, used*,
 *   decayed*Seconds, partitionShares (a Map from partition to {capacity,
 *   maximumCapacity})}];
 * - `apps`: [{index, queue, user, priority, submitTimeMs, used*, name,
 *   applicationType, project, startTimeMs (null before), deadlineMs (null:
 *   none), userDecayed*Seconds, tags}];
 * - `asks`: [{index, app, pending, memoryMb, vcores, gpus, partition,
 *   localityLevel, relaxLocality, missedOpportunities, gangMinimum (null:
 *   no gang), constraint (null, or {text, scope, tag, allApps, minimum,
 *   maximum}), executionType, preferredNodes, preferredRacks, tags}];
 * - the sparse tables as the host sent them, as rows: `nodeAttributes`
 *   [{node, key, value}], `partitionShares` [{queue, partition, capacity,
 *   maximumCapacity}], `appTags` [{app, tag}], `askNodes` [{ask, node}],
 *   `askRacks` [{ask, rack}], `askTags` [{ask, tag}], `tagCounts` [{node,
 *   app, tag, count}].
 *
 * Enums are their WIT case names (`"node-local"`, `"guaranteed"`).
 */
function snapshotView(snapshot) {
  const indexed = { indexed: true };

  const partitions = rows("partitions", snapshot.partitions, [["name", ANY], ["exclusive", ANY]], indexed);
  const racks = Array.from(snapshot.racks);
  const round = { kind: snapshot.round.kind, partition: integer(snapshot.round.partition, "round.partition") };
  if (!(round.partition < partitions.length)) {
    throw new MalformedInput(`round.partition is ${round.partition}, but there are ${partitions.length} partitions`);
  }

  const nodes = rows(
    "nodes",
    snapshot.nodes,
    [
      ["free-memory-mb", INT],
      ["free-vcores", INT],
      ["free-gpus", INT],
      ["capacity-memory-mb", INT],
      ["capacity-vcores", INT],
      ["capacity-gpus", INT],
      ["partition", INT],
      ["rack", INT],
    ],
    indexed,
  );
  checkIndices("nodes", nodes, "partition", partitions.length, "partitions");
  checkIndices("nodes", nodes, "rack", racks.length, "racks");
  const nodeAttributes = rows("node-attributes", snapshot.nodeAttributes, [["node", INT], ["attribute", ANY]]).map(
    ({ node, attribute }) => ({ node, key: attribute.key, value: attribute.value }),
  );
  checkIndices("node-attributes", nodeAttributes, "node", nodes.length, "nodes");

  const queues = rows(
    "queues",
    snapshot.queues,
    [
      ["path", ANY],
      ["parent", INT],
      ["capacity", ANY],
      ["maximum-capacity", ANY],
      ["minimum-user-limit-percent", ANY],
      // null when a user may take the whole queue, up to its maximum.
      ["user-limit-factor", OPTIONAL],
      ["fair", ANY],
      ["used-memory-mb", INT],
      ["used-vcores", INT],
      ["used-gpus", INT],
      ["decayed-memory-mb-seconds", ANY],
      ["decayed-vcore-seconds", ANY],
      ["decayed-gpu-seconds", ANY],
    ],
    indexed,
  );
  checkIndices("queues", queues, "parent", queues.length, "queues");
  const partitionShares = rows("partition-shares", snapshot.partitionShares, [
    ["queue", INT],
    ["partition", INT],
    ["capacity", ANY],
    ["maximum-capacity", ANY],
  ]);
  checkIndices("partition-shares", partitionShares, "queue", queues.length, "queues");
  checkIndices("partition-shares", partitionShares, "partition", partitions.length, "partitions");

  const apps = rows(
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
      ["name", ANY],
      ["application-type", ANY],
      ["project", ANY],
      ["start-time-ms", OPTIONAL_INT],
      ["deadline-ms", OPTIONAL_INT],
      ["user-decayed-memory-mb-seconds", ANY],
      ["user-decayed-vcore-seconds", ANY],
      ["user-decayed-gpu-seconds", ANY],
    ],
    indexed,
  );
  checkIndices("apps", apps, "queue", queues.length, "queues");
  const appTags = rows("app-tags", snapshot.appTags, [["app", INT], ["tag", ANY]]);
  checkIndices("app-tags", appTags, "app", apps.length, "apps");

  const asks = rows(
    "asks",
    snapshot.asks,
    [
      ["app", INT],
      ["pending", INT],
      ["memory-mb", INT],
      ["vcores", INT],
      ["gpus", INT],
      ["partition", INT],
      ["locality-level", ANY],
      ["relax-locality", ANY],
      ["missed-opportunities", INT],
      ["gang-minimum", OPTIONAL_INT],
      ["constraint", OPTIONAL],
      ["execution-type", ANY],
    ],
    indexed,
  );
  checkIndices("asks", asks, "app", apps.length, "apps");
  checkIndices("asks", asks, "partition", partitions.length, "partitions");
  const askNodes = rows("ask-nodes", snapshot.askNodes, [["ask", INT], ["node", INT]]);
  checkIndices("ask-nodes", askNodes, "ask", asks.length, "asks");
  checkIndices("ask-nodes", askNodes, "node", nodes.length, "nodes");
  const askRacks = rows("ask-racks", snapshot.askRacks, [["ask", INT], ["rack", INT]]);
  checkIndices("ask-racks", askRacks, "ask", asks.length, "asks");
  checkIndices("ask-racks", askRacks, "rack", racks.length, "racks");
  const askTags = rows("ask-tags", snapshot.askTags, [["ask", INT], ["tag", ANY]]);
  checkIndices("ask-tags", askTags, "ask", asks.length, "asks");

  const tagCounts = rows("tag-counts", snapshot.tagCounts, [["node", INT], ["app", INT], ["tag", ANY], ["count", INT]]);
  checkIndices("tag-counts", tagCounts, "node", nodes.length, "nodes");
  checkIndices("tag-counts", tagCounts, "app", apps.length, "apps");

  // Each sparse table gathered per item once, so a policy looks an item's
  // values up instead of scanning the table.
  const attributes = grouped(nodes.length, nodeAttributes, "node", ({ key, value }) => [key, value]);
  const nodeTagCounts = grouped(nodes.length, tagCounts, "node", ({ app, tag, count }) => ({ app, tag, count }));
  nodes.forEach((node, n) => {
    node.attributes = new Map(attributes[n]);
    node.tagCounts = nodeTagCounts[n];
  });
  const shares = grouped(queues.length, partitionShares, "queue", ({ partition, capacity, maximumCapacity }) => [
    partition,
    { capacity, maximumCapacity },
  ]);
  queues.forEach((queue, q) => {
    queue.partitionShares = new Map(shares[q]);
  });
  const tagsOfApp = grouped(apps.length, appTags, "app", ({ tag }) => tag);
  apps.forEach((app, a) => {
    app.tags = tagsOfApp[a];
  });
  const preferredNodes = grouped(asks.length, askNodes, "ask", ({ node }) => node);
  const preferredRacks = grouped(asks.length, askRacks, "ask", ({ rack }) => rack);
  const tagsOfAsk = grouped(asks.length, askTags, "ask", ({ tag }) => tag);
  asks.forEach((ask, k) => {
    ask.preferredNodes = preferredNodes[k];
    ask.preferredRacks = preferredRacks[k];
    ask.tags = tagsOfAsk[k];
  });

  const delays = snapshot.localityDelays;
  return {
    nowMs: integer(snapshot.nowMs, "snapshot.now-ms"),
    round,
    partitions,
    racks,
    nodes,
    nodeAttributes,
    queues,
    partitionShares,
    apps,
    appTags,
    asks,
    askNodes,
    askRacks,
    askTags,
    tagCounts,
    localityDelays: {
      nodeLocalityDelay: integer(delays.nodeLocalityDelay, "locality-delays.node-locality-delay"),
      rackLocalityAdditionalDelay: delays.rackLocalityAdditionalDelay ?? null,
    },
  };
}

/** The WIT `containers` record as rows: [{index, app, node, memoryMb, vcores,
 * gpus, startTimeMs, executionType, tags}], checked (columns of one length;
 * with `snapshot`, a snapshot view, `app` and `node` in range). */
function containersView(running, snapshot = null) {
  const columns = [
    ["app", INT],
    ["node", INT],
    ["memory-mb", INT],
    ["vcores", INT],
    ["gpus", INT],
    ["start-time-ms", INT],
    ["execution-type", ANY],
  ];
  const containers = rows("containers", running, columns, { indexed: true });
  if (snapshot !== null) {
    checkIndices("containers", containers, "app", snapshot.apps.length, "apps");
    checkIndices("containers", containers, "node", snapshot.nodes.length, "nodes");
  }
  const tags = rows("containers.tags", running.tags, [["container", INT], ["tag", ANY]]);
  checkIndices("containers.tags", tags, "container", containers.length, "containers");
  const tagsOf = grouped(containers.length, tags, "container", ({ tag }) => tag);
  containers.forEach((container, c) => {
    container.tags = tagsOf[c];
  });
  return containers;
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

// The host's rules beyond room, kept by a policy's own answer: an ask goes on
// its partition's nodes (or, in a lending round, an ask for the default
// partition on the lending label's); no container breaks its ask's placement
// constraint, counting those placed before it; a gang is placed whole or not
// at all. The host refuses what breaks them; a policy that passes its
// placements through `keepRules` never does (and `weft policy test` checks
// it). The same rules as the Rust SDK's `scheduling::keep_rules`.
//
// A snapshot built by hand (in a test) may leave fields out: they read as
// the Python SDK's defaults do (round "whole" of partition 0, partition and
// rack 0, no tags, tag counts, constraint or gang).

/** The most times `scheduleKeepingRules` runs a round again for gangs placed
 * in part (as the host, which asks at most four times in all). */
const MAX_REROUNDS = 3;

/** Tagged containers counted where constraints look: per (node or rack,
 * tag), every app's and each app's. */
class TagTally {
  byNode = new Map();
  byRack = new Map();

  constructor(nodes) {
    this.nodes = nodes;
  }

  static tally(table, key) {
    let tally = table.get(key);
    if (tally === undefined) {
      tally = { all: 0, byApp: new Map() };
      table.set(key, tally);
    }
    return tally;
  }

  add(node, app, tag, count) {
    const rack = this.nodes[node].rack ?? 0;
    for (const tally of [TagTally.tally(this.byNode, `${node}:${tag}`), TagTally.tally(this.byRack, `${rack}:${tag}`)]) {
      tally.all += count;
      tally.byApp.set(app, (tally.byApp.get(app) ?? 0) + count);
    }
  }

  /** The count at `node`'s `scope` ("node" or "rack"): every app's (`app`
   * null) or `app`'s. */
  count(scope, node, app, tag) {
    let tally;
    if (scope === "node") tally = this.byNode.get(`${node}:${tag}`);
    else if (scope === "rack") tally = this.byRack.get(`${this.nodes[node].rack ?? 0}:${tag}`);
    else throw new RangeError(`constraint scope is ${JSON.stringify(scope)}: it must be "node" or "rack"`);
    if (tally === undefined) return 0;
    return app === null ? tally.all : (tally.byApp.get(app) ?? 0);
  }
}

/** Placements as [ask, node, count] triples, each a u32 and (`node` only
 * with `nodes`) an index into the snapshot's lists; a RangeError names the
 * first that is not. */
function placementTriples(snapshot, placements, { nodes = true } = {}) {
  const triples = [];
  let i = 0;
  for (const { ask, node, count } of placements) {
    checkedU32(ask, `placement ${i}: ask`);
    checkedU32(node, `placement ${i}: node`);
    checkedU32(count, `placement ${i}: count`);
    if (ask >= snapshot.asks.length) {
      throw new RangeError(`placement ${i}: ask is ${ask}, but there are ${snapshot.asks.length} asks`);
    }
    if (nodes && node >= snapshot.nodes.length) {
      throw new RangeError(`placement ${i}: node is ${node}, but there are ${snapshot.nodes.length} nodes`);
    }
    triples.push([ask, node, count]);
    i += 1;
  }
  return triples;
}

/** Appends a placement, adding it to the last one when that is the same ask
 * on the same node (at most 2^32 - 1), as the Rust SDK's `Placements::push`. */
function pushPlacement(placements, ask, node, count) {
  const last = placements[placements.length - 1];
  if (last !== undefined && last.ask === ask && last.node === node) {
    last.count = Math.min(last.count + count, 0xffffffff);
  } else {
    placements.push({ ask, node, count });
  }
}

/** How many of `count` containers a constraint takes one by one, from the
 * first: each needs `minimum <= tagged <= maximum` where it goes, `now`
 * tagged before the first and `per` more after each (its own tags that the
 * constraint counts). */
function allowedByConstraint(now, per, count, minimum, maximum) {
  if (now < minimum || now > maximum) return 0;
  if (per === 0) return count;
  return Math.min(count, Math.floor((maximum - now) / per) + 1);
}

/** Ask `ask`'s gang minimum, null for none. */
const gangMinimum = (ask) => ask.gangMinimum ?? null;

/**
 * `placements` ({ask, node, count}) less what the host would refuse or hold
 * back, in order: placements off their ask's partition go; a constrained
 * ask's placement keeps only the containers before the first its constraint
 * refuses (each placed container counting for the next); then every
 * placement of a gang placed below its minimum goes. Consecutive placements
 * of one ask on one node are merged; the answer is new objects. Throws a
 * RangeError for a placement that is not three u32s, or whose ask or node is
 * out of range.
 */
function keepRules(snapshot, placements) {
  const { nodes, asks } = snapshot;
  const round = snapshot.round ?? { kind: "whole", partition: 0 };
  const triples = placementTriples(snapshot, placements);
  const constrained = asks.some((ask) => ask.constraint != null);
  const counts = new TagTally(nodes);
  if (constrained) {
    nodes.forEach((node, n) => {
      for (const { app, tag, count } of node.tagCounts ?? []) counts.add(n, app, tag, count);
    });
  }
  const kept = [];
  const placed = asks.map(() => 0);
  for (let [k, n, count] of triples) {
    const ask = asks[k];
    const wanted = ask.partition ?? 0;
    const on = nodes[n].partition ?? 0;
    const lent = round.kind === "lending" && wanted === 0 && on === round.partition;
    if (wanted !== on && !lent) continue;
    const tags = ask.tags ?? [];
    const c = ask.constraint ?? null;
    if (c !== null) {
      const now = counts.count(c.scope, n, c.allApps ? null : ask.app, c.tag);
      const per = tags.filter((tag) => tag === c.tag).length;
      count = allowedByConstraint(now, per, count, c.minimum, c.maximum);
      if (count > 0) for (const tag of tags) counts.add(n, ask.app, tag, count);
    } else if (constrained) {
      for (const tag of tags) counts.add(n, ask.app, tag, count);
    }
    if (count > 0) {
      placed[k] += count;
      pushPlacement(kept, k, n, count);
    }
  }
  const short = asks.map((ask, k) => {
    const minimum = gangMinimum(ask);
    return minimum !== null && placed[k] > 0 && placed[k] < minimum;
  });
  if (!short.includes(true)) return kept;
  const whole = [];
  for (const { ask, node, count } of kept) {
    if (!short[ask]) pushPlacement(whole, ask, node, count);
  }
  return whole;
}

/** The gang asks (indices, ascending) `placements` place below their
 * minimum (but not none). */
function partialGangs(snapshot, placements) {
  const { asks } = snapshot;
  if (asks.every((ask) => gangMinimum(ask) === null)) return [];
  const placed = asks.map(() => 0);
  for (const [ask, , count] of placementTriples(snapshot, placements, { nodes: false })) placed[ask] += count;
  const partial = [];
  asks.forEach((ask, k) => {
    const minimum = gangMinimum(ask);
    if (minimum !== null && placed[k] > 0 && placed[k] < minimum) partial.push(k);
  });
  return partial;
}

/**
 * `schedule(snapshot)`, kept to the host's rules (`keepRules`), with gangs
 * placed whole where they can be, as the host does for a policy that does
 * not: while gangs are placed in part, the round runs again with the first
 * of them alone in play (the others left out: `pending` 0, `gangMinimum`
 * null), then, if it is still in part, without it too, up to `MAX_REROUNDS`
 * times — so two gangs cannot split the room between them round after
 * round, and the room one cannot use goes to the others. The answer is kept
 * against `snapshot` itself, which is not changed: each rerun sees a copy
 * with new ask rows.
 */
function scheduleKeepingRules(snapshot, schedule) {
  let placements = Array.from(schedule(snapshot));
  const leftOut = new Set();
  let alone = null;
  for (let rerun = 0; rerun < MAX_REROUNDS; rerun++) {
    const partial = partialGangs(snapshot, placements);
    if (partial.length === 0) break;
    const first = partial[0];
    const keepFirst = alone !== first;
    for (const k of partial) if (!(keepFirst && k === first)) leftOut.add(k);
    alone = keepFirst ? first : null;
    const asks = snapshot.asks.map((ask, k) => (leftOut.has(k) ? { ...ask, pending: 0, gangMinimum: null } : ask));
    placements = Array.from(schedule({ ...snapshot, asks }));
  }
  return keepRules(snapshot, placements);
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
      preempt: guarded("preempt", (snapshot, running) => {
        const view = snapshotView(snapshot);
        return victims(active.policy.preempt(view, containersView(running, view)));
      }),
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
  keepRules,
  partialGangs,
  scheduleKeepingRules,
  MAX_REROUNDS,
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

/** The WIT `plan-context` record: {nowMs, reservationName, recurring,
 * reservations, userReservations, users}. */
function planContextView(context) {
  return {
    nowMs: looseInteger(context.nowMs),
    reservationName: context.reservationName,
    recurring: context.recurring,
    reservations: context.reservations,
    userReservations: context.userReservations,
    users: context.users,
  };
}

function contextProblem({ nowMs }) {
  if (!(Math.abs(nowMs) <= MAX_TIME_MS)) return `context: now-ms is ${nowMs}, beyond ±(2^53 - 1) ms`;
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

/** The WIT `admission` record as an admission view: {settings, user,
 * reservationId, fromMs, toMs, candidate, userCommitted, planCommitted (each
 * a Timeline), context (see `planContextView`), candidateSpan()}, with
 * `problem`: what is wrong with it, or null. */
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
    context: planContextView(admission.context),
    problem: null,
    candidateSpan() {
      return candidateSpan(this);
    },
  };
  view.problem =
    rangeProblem(view) ??
    capacityProblem(view.settings) ??
    contextProblem(view.context) ??
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
  planContextView,
  admissionView,
  timelineColumns,
  component: sharingComponent,
});
