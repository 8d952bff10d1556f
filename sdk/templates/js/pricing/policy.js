// {{name}}: a pricing policy. It starts as "context pricing", a flat price
// that depends on who uses the cluster and when, to change into your own.
//
// A pricing policy answers three questions for the host:
//
// 1. What are the price multiplicators now? The host asks every multiplicator
//    interval with the market: the cluster's utilization, each partition's and
//    leaf queue's load, and the multiplicators it returned last. This one
//    ignores it: the multiplicators are always 1.
// 2. What does this usage cost? The host sends a batch of containers' usage
//    (seconds since each was last charged, over which instants, its memory,
//    vcores and GPUs, and its context: app, queue, user, project, node...);
//    the SDK calls `price` once per container, in order.
// 3. What would this ask cost? `quote`, before a submission: the SDK's
//    default prices one container's row as `price` would and multiplies by
//    the containers, so a quote is what the usage will be charged.
//
// The price of one container is HOPS-1385's formula for each resource,
// `seconds × multiplicator × base price × allocated / unit`, and the
// container pays for its dominant (most expensive) resource; then
//
// - its project's factor (`--param project.ml=2`: project "ml" pays double;
//   a project without one pays 1), and
// - the time factor, `1 − night × (1 − night.factor)`, `night` being the
//   share of the row's time in the night hours (UTC, `night.start-hour` to
//   `night.end-hour`, 22 to 6 by default): `--param night.factor=0.5` makes
//   nights half price. The default, 1, makes the night cost the same.
//
// Everything here is plain JavaScript: `policy.test.js` runs it natively with
// `node --test`. `component.js` is the only file that knows it becomes a
// component.

import { ParamError, pricing } from "./weft-policy.js";

const { nightFraction } = pricing;

const PROJECT = "project.";

export class ContextPricing extends pricing.Policy {
  name = "{{name}}";
  version = "0.1.0";

  // HopsYARN's defaults: base price 1 for both, 1024 MB and 1 GPU per unit.
  basePriceGeneral = 1;
  basePriceGpu = 1;
  unitMemoryMb = 1024;
  unitGpus = 1;
  // Project name → factor; absent projects pay 1.
  projectFactors = new Map();
  // What an hour of night costs, as a share of an hour of day, and when the
  // night is (UTC hours; it may wrap midnight).
  nightFactor = 1;
  nightStartHour = 22;
  nightEndHour = 6;

  configure(params) {
    // Standard quota keys: the host always passes them. The multiplicator
    // thresholds and increments are standard too, so leaving them unread is
    // fine; any other key this does not read refuses the load.
    this.basePriceGeneral = params.number("price.base.general", { default: 1, min: 0 });
    this.basePriceGpu = params.number("price.base.gpu", { default: 1, min: 0 });
    this.unitMemoryMb = params.number("minimum.charged.mb", { default: 1024, min: 0 });
    this.unitGpus = params.number("minimum.charged.gpu", { default: 1, min: 0 });
    if (this.unitMemoryMb === 0 || this.unitGpus === 0) {
      throw new ParamError(`${this.name}: a unit (minimum.charged.mb, minimum.charged.gpu) must be above 0`);
    }
    // One key per project, so the keys are read as a family; `number` reads
    // each again to check its value and name the key if it is refused.
    for (const [project] of params.withPrefix(PROJECT)) {
      if (project === "") throw new ParamError(`${this.name}: ${PROJECT} needs a project name: project.NAME=FACTOR`);
      this.projectFactors.set(project, params.number(PROJECT + project, { min: 0 }));
    }
    this.nightFactor = params.number("night.factor", { default: 1, min: 0 });
    this.nightStartHour = params.integer("night.start-hour", { default: 22, min: 0, max: 23 });
    this.nightEndHour = params.integer("night.end-hour", { default: 6, min: 0, max: 23 });
  }

  multiplicators(market) {
    // Flat: the price never moves with demand. A policy that did could
    // smooth its answer with the last one, which the host keeps for it:
    //   const target = 1 + Math.max(market.utilization.memory - 0.8, 0);
    //   return { general: (market.last.general + target) / 2, gpu: 1 };
    return { general: 1, gpu: 1 };
  }

  price(row, multiplicators) {
    // Flat: the multiplicators are always 1, so the host's are not needed.
    // One vcore is one unit: the minimum allocation.
    const cpu = row.seconds * this.basePriceGeneral * row.vcores;
    const memory = (row.seconds * this.basePriceGeneral * row.memoryMb) / this.unitMemoryMb;
    const gpu = (row.seconds * this.basePriceGpu * row.gpus) / this.unitGpus;
    // The container pays for its dominant resource, then for who and when.
    return Math.max(cpu, memory, gpu) * this.projectFactor(row.context.project) * this.timeFactor(row);
  }

  /** The factor of a project: its `project.NAME`, or 1. */
  projectFactor(project) {
    return this.projectFactors.get(project) ?? 1;
  }

  /** 1 by day, `nightFactor` by night, in proportion for a row that runs over both. */
  timeFactor(row) {
    // The usual case, no night discount, skips the arithmetic.
    if (this.nightFactor === 1) return 1;
    const night = nightFraction(row.startMs, row.endMs, this.nightStartHour, this.nightEndHour);
    return 1 - night * (1 - this.nightFactor);
  }
}
