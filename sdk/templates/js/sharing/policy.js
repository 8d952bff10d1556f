// {{name}}: a reservation sharing policy. It starts as a copy of Weft's
// no-overcommit (YARN's NoOverCommitPolicy), to change into your own: a
// reservation enters a reservable queue's plan only if the plan then never
// holds more than the queue's capacity, at any instant, in any resource. Who
// holds what does not matter.
//
// The host asks three things:
//
// 1. How far around a reservation do you look? `window`: 0, the policy has no
//    memory, so the host cuts the timelines to the reservation itself.
// 2. May this reservation enter? `validate`: refused with `OverCommit` at the
//    first instant where plan-committed + candidate exceeds the capacity in a
//    resource the candidate asks for.
// 3. What could the user still get? `available`: capacity − plan-committed
//    over [from, to), never below 0.
//
// A malformed admission (`admission.problem`; the host never sends one) is
// refused as over-commit, "malformed admission: …", by `validate` and offered
// nothing by `available`, with a warning in the host's log; a trap would count
// against the policy.
//
// Everything here is plain JavaScript: `policy.test.js` runs it natively with
// `node --test`. `component.js` is the only file that knows it becomes a
// component.

import { log, sharing } from "./weft-policy.js";

const { DIMENSIONS, OverCommit, Timeline, TimelineBuilder, minus, walk } = sharing;

export class NoOverCommit extends sharing.Policy {
  name = "{{name}}";
  version = "0.1.0";

  configure(params) {
    // No parameters: the capacity is the queue's. Reading none makes the SDK
    // refuse any key given, naming it.
  }

  window(settings) {
    return 0;
  }

  validate(admission) {
    if (admission.problem) {
      log.warn(`refused ${admission.reservationId}: malformed admission: ${admission.problem}`);
      return new OverCommit(`malformed admission: ${admission.problem}`);
    }
    const span = admission.candidateSpan();
    if (span === null) return null;
    const { capacity, queue } = admission.settings;
    for (const stretch of walk([admission.planCommitted, admission.candidate], ...span)) {
      const [committed, asked] = stretch.amounts;
      for (const { field, unit } of DIMENSIONS) {
        const held = committed[field] + asked[field];
        // An excess where the candidate adds none of this resource is not its
        // doing (say, the queue shrank): it stands.
        if (asked[field] > 0 && held > capacity[field]) {
          return new OverCommit(
            `plan ${queue} would hold ${held} ${unit} at t=${stretch.fromMs} ms ` +
              `(${committed[field]} ${unit} committed + ${asked[field]} ${unit} asked); ` +
              `its capacity is ${capacity[field]} ${unit} (over by ${held - capacity[field]} ${unit})`,
          );
        }
      }
    }
    return null;
  }

  available(admission) {
    if (admission.problem) {
      log.warn(`offered nothing: malformed admission: ${admission.problem}`);
      return new Timeline();
    }
    const { capacity } = admission.settings;
    const free = new TimelineBuilder();
    for (const stretch of walk([admission.planCommitted], admission.fromMs, admission.toMs)) {
      const [committed] = stretch.amounts;
      free.push(stretch.fromMs, minus(capacity, committed));
    }
    return free.finish(admission.toMs);
  }
}
