"""Sharing policies (world ``sharing-policy``): the ``Policy`` base class an
author subclasses, the admission as timelines of steps, the walk over several
timelines at once, rejections, and ``export``, the component glue.

The host sends timelines as run-length encoded columns; a policy sees
``Timeline`` objects (``steps`` of ``Step(at_ms, amount)``) and answers
``available`` with one, built with ``TimelineBuilder``. An admission is never
refused by the SDK: what is wrong with it is in ``admission.problem`` (None
when it is well formed), for the policy to refuse or answer as it sees fit.
``admission.context`` is the plan around the decision (the host clock, the
reservation's name and recurrence, how many reservations and users the plan
holds), so users and queues can be treated differently.
"""

from bisect import bisect_right
from typing import Any, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Type, Union

from . import _component
from . import params as _params
from .params import Params
from .resources import DIMENSIONS, ZERO, Resources, resources_view

STANDARD_KEYS: Tuple[str, ...] = ()

# The largest amount of one resource a well-formed admission holds: 2^40 − 1
# (an exabyte in MB), so sums of a few stay exact in every language.
MAX_AMOUNT = 2**40 - 1
# The latest time (and minus the earliest) a well-formed admission holds, in
# ms: 2^53 − 1, the largest integer JavaScript holds exactly (285,000 years).
MAX_TIME_MS = 2**53 - 1
# The longest window a policy may answer.
MAX_WINDOW_MS = 2**53 - 1


class Step(NamedTuple):
    """From ``at_ms`` until the next step, the amount is ``amount``."""

    at_ms: int
    amount: Resources


class Timeline:
    """A step function of resources over time: zero before the first step, and
    each step's amount until the next (the host ends a timeline with a zero
    step)."""

    def __init__(self, steps: Sequence[Step] = ()) -> None:
        self.steps: List[Step] = [Step(at, Resources(*amount)) for at, amount in steps]
        self.at_ms: List[int] = [step.at_ms for step in self.steps]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Timeline) and self.steps == other.steps

    def __repr__(self) -> str:
        return f"Timeline({self.steps!r})"

    def __len__(self) -> int:
        return len(self.steps)

    def amount_at(self, at_ms: int) -> Resources:
        """The amount held at instant ``at_ms`` (steps in order)."""
        after = bisect_right(self.at_ms, at_ms)
        return self.steps[after - 1].amount if after else ZERO

    def problem(self, name: str) -> Optional[str]:
        """What keeps this timeline from being well formed, or None: times
        strictly increasing and within ±MAX_TIME_MS, amounts within MAX_AMOUNT."""
        for i, (at, amount) in enumerate(self.steps):
            if abs(at) > MAX_TIME_MS:
                return f"{name}: at-ms[{i}] is {at}, beyond ±(2^53 - 1) ms"
            if i and self.steps[i - 1].at_ms >= at:
                return (
                    f"{name}: at-ms must strictly increase, but at-ms[{i - 1}] is "
                    f"{self.steps[i - 1].at_ms} and at-ms[{i}] is {at}"
                )
            for (column, _), value in zip(DIMENSIONS, amount):
                if value > MAX_AMOUNT:
                    return f"{name}: {column}[{i}] is {value}, above the largest amount 2^40 - 1"
        return None


def timeline_view(name: str, columns: Any) -> Tuple[Timeline, Optional[str]]:
    """The WIT ``timeline`` record as a Timeline, and what is wrong with it."""
    lists = (columns.at_ms, columns.memory_mb, columns.vcores, columns.gpus)
    timeline = Timeline([Step(at, Resources(m, v, g)) for at, m, v, g in zip(*lists)])
    lengths = [len(values) for values in lists]
    if len(set(lengths)) > 1:
        counts = ", ".join(
            f"{length} {column}"
            for length, column in zip(lengths, ("at-ms", "memory-mb", "vcores", "gpus"))
        )
        return timeline, f"{name}: its columns differ in length ({counts})"
    return timeline, timeline.problem(name)


class PlanSettings(NamedTuple):
    """A reservable queue's settings; percentages are 0..=100 of ``capacity``."""

    queue: str
    capacity: Resources
    reservation_window_ms: int
    instantaneous_max_capacity: float
    average_capacity: float


class PlanContext(NamedTuple):
    """The plan around a decision. ``reservations`` and ``users`` count the
    plan's reservations and the distinct users holding them (the candidate's
    earlier version excluded when it is an update); ``user_reservations`` is
    the user's own. The defaults are for tests."""

    now_ms: int = 0
    reservation_name: str = ""
    recurring: bool = False
    reservations: int = 0
    user_reservations: int = 0
    users: int = 0


class Admission(NamedTuple):
    """What one decision sees. Timelines are exact inside [from_ms, to_ms).
    ``problem`` says what is wrong with the admission, or is None."""

    settings: PlanSettings
    user: str
    reservation_id: str
    from_ms: int
    to_ms: int
    candidate: Timeline
    user_committed: Timeline
    plan_committed: Timeline
    context: PlanContext = PlanContext()
    problem: Optional[str] = None

    def candidate_span(self) -> Optional[Tuple[int, int]]:
        """From the first instant the candidate holds anything to the end of
        the last, within [from_ms, to_ms); None when it holds nothing."""
        held = [i for i, step in enumerate(self.candidate.steps) if step.amount != ZERO]
        if not held:
            return None
        first, last = held[0], held[-1]
        steps = self.candidate.steps
        end = steps[last + 1].at_ms if last + 1 < len(steps) else self.to_ms
        return max(steps[first].at_ms, self.from_ms), min(end, self.to_ms)


def settings_view(settings: Any) -> PlanSettings:
    """The WIT ``plan-settings`` record as PlanSettings."""
    return PlanSettings(
        queue=settings.queue,
        capacity=resources_view(settings.capacity),
        reservation_window_ms=settings.reservation_window_ms,
        instantaneous_max_capacity=settings.instantaneous_max_capacity,
        average_capacity=settings.average_capacity,
    )


def context_view(context: Any) -> PlanContext:
    """The WIT ``plan-context`` record as a PlanContext."""
    return PlanContext(
        now_ms=context.now_ms,
        reservation_name=context.reservation_name,
        recurring=context.recurring,
        reservations=context.reservations,
        user_reservations=context.user_reservations,
        users=context.users,
    )


def admission_view(admission: Any) -> Admission:
    """The WIT ``admission`` record as an Admission, with its first problem."""
    settings = settings_view(admission.settings)
    candidate, candidate_problem = timeline_view("candidate", admission.candidate)
    user, user_problem = timeline_view("user-committed", admission.user_committed)
    plan, plan_problem = timeline_view("plan-committed", admission.plan_committed)
    view = Admission(
        settings,
        admission.user,
        admission.reservation_id,
        admission.from_ms,
        admission.to_ms,
        candidate,
        user,
        plan,
        context_view(admission.context),
    )
    problems = [
        _range_problem(view),
        _capacity_problem(settings),
        candidate_problem,
        _outside_range(view) if candidate_problem is None else None,
        user_problem,
        plan_problem,
    ]
    return view._replace(problem=next((p for p in problems if p), None))


def _range_problem(admission: Admission) -> Optional[str]:
    start, end = admission.from_ms, admission.to_ms
    if start > end or abs(start) > MAX_TIME_MS or abs(end) > MAX_TIME_MS:
        return f"the range [{start}, {end}) ms runs backwards or lies beyond ±(2^53 - 1) ms"
    return None


def _capacity_problem(settings: PlanSettings) -> Optional[str]:
    for (_, unit), value in zip(DIMENSIONS, settings.capacity):
        if value > MAX_AMOUNT:
            return f"settings: the capacity is {value} {unit}, above the largest amount 2^40 - 1"
    return None


def _outside_range(admission: Admission) -> Optional[str]:
    steps = admission.candidate.steps
    for i, step in enumerate(steps):
        if step.amount == ZERO:
            continue
        end = steps[i + 1].at_ms if i + 1 < len(steps) else None
        if step.at_ms < admission.from_ms or end is None or end > admission.to_ms:
            until = "on" if end is None else f"until t={end} ms"
            return (
                f"candidate: it holds resources from t={step.at_ms} ms {until}, "
                f"outside the range [{admission.from_ms}, {admission.to_ms}) ms"
            )
    return None


class Stretch(NamedTuple):
    """A stretch of time over which none of the walked timelines changes:
    ``amounts[k]`` is timeline k's amount."""

    from_ms: int
    to_ms: int
    amounts: Tuple[Resources, ...]


def walk(timelines: Sequence[Timeline], from_ms: int, to_ms: int) -> Iterator[Stretch]:
    """Walks the timelines together over [from_ms, to_ms), stretch by stretch
    in time order: a merge of their steps, O(steps). Expects well-formed
    timelines (times strictly increasing)."""
    following = [bisect_right(line.at_ms, from_ms) for line in timelines]
    at = from_ms
    while at < to_ms:
        end = to_ms
        amounts = []
        for line, after in zip(timelines, following):
            if after < len(line.steps):
                end = min(end, line.steps[after].at_ms)
            amounts.append(line.steps[after - 1].amount if after else ZERO)
        # A step behind us (unsorted input) must not walk backwards.
        end = min(max(end, at + 1), to_ms)
        yield Stretch(at, end, tuple(amounts))
        at = end
        for k, line in enumerate(timelines):
            while following[k] < len(line.steps) and line.steps[following[k]].at_ms <= end:
                following[k] += 1


class TimelineBuilder:
    """Builds a timeline from amounts pushed in time order, leaving out steps
    that change nothing and ending it with a zero step, as the WIT asks."""

    def __init__(self) -> None:
        self._steps: List[Step] = []
        self._last = ZERO

    def push(self, at_ms: int, amount: Resources) -> None:
        """From ``at_ms`` on, the amount is ``amount``."""
        amount = Resources(*amount)
        if amount != self._last:
            self._steps.append(Step(at_ms, amount))
            self._last = amount

    def finish(self, to_ms: int) -> Timeline:
        """The timeline, zero from ``to_ms`` on."""
        self.push(to_ms, ZERO)
        return Timeline(self._steps)


class OverCommit(NamedTuple):
    """The plan would hold more than the queue's capacity."""

    message: str


class InstantaneousQuota(NamedTuple):
    """The user would hold more than instantaneous-max-capacity at some instant."""

    message: str


class AverageQuota(NamedTuple):
    """The user's holding over some window would exceed window × average-capacity."""

    message: str


Rejection = Union[OverCommit, InstantaneousQuota, AverageQuota]


class Policy:
    """A sharing policy. Subclass it, set ``name`` and ``version``, and write
    ``validate`` and ``available``; ``configure`` (no parameters) and
    ``window`` (0: look at the reservation alone) have defaults."""

    name = "sharing-policy"
    version = "0.1.0"

    def configure(self, params: Params) -> None:
        """Reads the operator's parameters."""

    def window(self, settings: PlanSettings) -> int:
        """How far before and after a reservation the policy looks, in ms."""
        return 0

    def validate(self, admission: Admission) -> Optional[Rejection]:
        """None to accept the candidate, or the rejection."""
        raise NotImplementedError(f"{type(self).__name__} has no validate method")

    def available(self, admission: Admission) -> Timeline:
        """What the user could still be given at each instant of the range."""
        raise NotImplementedError(f"{type(self).__name__} has no available method")


def checked_window(window: Any) -> int:
    """``window``'s answer, refused unless a whole number of ms from 0 to MAX_WINDOW_MS."""
    if isinstance(window, bool) or not isinstance(window, int) or not 0 <= window <= MAX_WINDOW_MS:
        raise ValueError(f"window is {window!r}: it must be a whole number of ms from 0 to 2^53 - 1")
    return window


def configured(policy_class: Type[Policy], pairs: Iterable[Tuple[str, str]]) -> Policy:
    """A new ``policy_class`` object configured with ``pairs`` as the host
    would (this kind's standard keys known); raises ParamError. For tests."""
    return _params.configured(policy_class, pairs, STANDARD_KEYS)


def timeline_columns(timeline: Timeline) -> dict:
    """A Timeline as the WIT ``timeline`` record's columns, by field name."""
    if not isinstance(timeline, Timeline):
        raise TypeError(f"available answered {timeline!r}: it must be a Timeline")
    steps = timeline.steps
    return {
        "at_ms": [step.at_ms for step in steps],
        "memory_mb": [step.amount.memory_mb for step in steps],
        "vcores": [step.amount.vcores for step in steps],
        "gpus": [step.amount.gpus for step in steps],
    }


def export(policy_class: Type[Policy]) -> Tuple[Type, Type]:
    """The ``WitWorld`` and ``Sharing`` classes componentize-py looks for in the
    app module: ``WitWorld, Sharing = sharing.export(MyPolicy)``."""
    from componentize_py_types import Err
    from wit_world.exports import sharing as wit

    _component.use_host_log()
    active = _component.Active(policy_class, "sharing", STANDARD_KEYS)
    wit_rejections = {
        OverCommit: wit.Rejection_OverCommit,
        InstantaneousQuota: wit.Rejection_InstantaneousQuota,
        AverageQuota: wit.Rejection_AverageQuota,
    }

    def window(settings: Any) -> int:
        return checked_window(active.policy.window(settings_view(settings)))

    def validate(admission: Any) -> None:
        rejection = active.policy.validate(admission_view(admission))
        if rejection is None:
            return
        wit_rejection = wit_rejections.get(type(rejection))
        if wit_rejection is None:
            raise TypeError(
                f"validate answered {rejection!r}: it must be None, OverCommit, "
                "InstantaneousQuota or AverageQuota"
            )
        raise Err(wit_rejection(str(rejection.message)))

    def available(admission: Any) -> Any:
        timeline = active.policy.available(admission_view(admission))
        return wit.Timeline(**timeline_columns(timeline))

    guarded_window = _component.guarded("window", window)
    guarded_validate = _component.guarded("validate", validate)
    guarded_available = _component.guarded("available", available)

    class Sharing:
        def window(self, settings: Any) -> int:
            return guarded_window(settings)

        def validate(self, admission: Any) -> None:
            return guarded_validate(admission)

        def available(self, admission: Any) -> Any:
            return guarded_available(admission)

    return _component.world_class(active), Sharing
