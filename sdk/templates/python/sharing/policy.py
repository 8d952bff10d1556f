"""{{name}}: a reservation sharing policy. It starts as a copy of Weft's
no-overcommit (YARN's NoOverCommitPolicy), to change into your own: a
reservation enters a reservable queue's plan only if the plan then never holds
more than the queue's capacity, at any instant, in any resource. Who holds
what does not matter.

The host asks three things:

1. How far around a reservation do you look? ``window``: 0, the policy has no
   memory, so the host cuts the timelines to the reservation itself.
2. May this reservation enter? ``validate``: refused with ``OverCommit`` at the
   first instant where plan-committed + candidate exceeds the capacity in a
   resource the candidate asks for.
3. What could the user still get? ``available``: capacity − plan-committed over
   [from, to), never below 0.

A malformed admission (``admission.problem``; the host never sends one) is
refused as over-commit, "malformed admission: …", by ``validate`` and offered
nothing by ``available``, with a warning in the host's log; a trap would count
against the policy.

Everything here is plain Python: ``test_policy.py`` runs it natively with
pytest. ``app.py`` is the only file that knows it becomes a component.
"""

from typing import Optional

from weft_policy import Params, log
from weft_policy.sharing import (
    DIMENSIONS,
    Admission,
    OverCommit,
    PlanSettings,
    Policy,
    Rejection,
    Timeline,
    TimelineBuilder,
    walk,
)


class NoOverCommit(Policy):
    name = "{{name}}"
    version = "0.1.0"

    def configure(self, params: Params) -> None:
        # No parameters: the capacity is the queue's. Reading none makes the
        # SDK refuse any key given, naming it.
        pass

    def window(self, settings: PlanSettings) -> int:
        return 0

    def validate(self, admission: Admission) -> Optional[Rejection]:
        if admission.problem:
            log.warn(f"refused {admission.reservation_id}: malformed admission: {admission.problem}")
            return OverCommit(f"malformed admission: {admission.problem}")
        span = admission.candidate_span()
        if span is None:
            return None
        capacity = admission.settings.capacity
        lines = (admission.plan_committed, admission.candidate)
        for stretch in walk(lines, *span):
            committed, asked = stretch.amounts
            for d, (_, unit) in enumerate(DIMENSIONS):
                held = committed[d] + asked[d]
                # An excess where the candidate adds none of this resource is
                # not its doing (say, the queue shrank): it stands.
                if asked[d] > 0 and held > capacity[d]:
                    return OverCommit(
                        f"plan {admission.settings.queue} would hold {held} {unit} at "
                        f"t={stretch.from_ms} ms ({committed[d]} {unit} committed + {asked[d]} "
                        f"{unit} asked); its capacity is {capacity[d]} {unit} "
                        f"(over by {held - capacity[d]} {unit})"
                    )
        return None

    def available(self, admission: Admission) -> Timeline:
        if admission.problem:
            log.warn(f"offered nothing: malformed admission: {admission.problem}")
            return Timeline()
        capacity = admission.settings.capacity
        free = TimelineBuilder()
        for stretch in walk((admission.plan_committed,), admission.from_ms, admission.to_ms):
            (committed,) = stretch.amounts
            free.push(stretch.from_ms, capacity.minus(committed))
        return free.finish(admission.to_ms)
