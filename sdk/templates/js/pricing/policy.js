// {{name}}: a pricing policy. It starts as a copy of Weft's flat-pricing, the
// simplest one, to change into your own.
//
// A pricing policy answers two questions for the host:
//
// 1. What are the price multiplicators now? The host asks every multiplicator
//    interval with the cluster's utilization. A flat policy ignores it: the
//    multiplicators are always 1.
// 2. What does this usage cost? The host sends a batch of containers' usage
//    (seconds since each was last charged, its memory, vcores and GPUs); the
//    SDK calls `price` once per container, in order.
//
// The price of one container is HOPS-1385's formula for each resource,
// `seconds × multiplicator × base price × allocated / unit`, and the
// container pays for its dominant (most expensive) resource.
//
// Everything here is plain JavaScript: `policy.test.js` runs it natively with
// `node --test`. `component.js` is the only file that knows it becomes a
// component.

import { ParamError, pricing } from "./weft-policy.js";

export class FlatPricing extends pricing.Policy {
  name = "{{name}}";
  version = "0.1.0";

  // HopsYARN's defaults: base price 1 for both, 1024 MB and 1 GPU per unit.
  basePriceGeneral = 1;
  basePriceGpu = 1;
  unitMemoryMb = 1024;
  unitGpus = 1;

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
  }

  multiplicators(utilization) {
    // Flat: the price never moves with demand.
    return { general: 1, gpu: 1 };
  }

  price(row, multiplicators) {
    // Flat: the multiplicators are always 1, so the host's are not needed.
    // One vcore is one unit: the minimum allocation.
    const cpu = row.seconds * this.basePriceGeneral * row.vcores;
    const memory = (row.seconds * this.basePriceGeneral * row.memoryMb) / this.unitMemoryMb;
    const gpu = (row.seconds * this.basePriceGpu * row.gpus) / this.unitGpus;
    // The container pays for its dominant resource.
    return Math.max(cpu, memory, gpu);
  }
}
