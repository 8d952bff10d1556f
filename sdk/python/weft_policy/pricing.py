"""Pricing policies (world ``pricing-policy``): the ``Policy`` base class an
author subclasses, the rows it sees, ``night_fraction`` for time-of-day
prices, and ``export``, the component glue.

An author writes ``price(row, multiplicators)`` for one container's usage; the
SDK prices a batch row by row, so a row's charge can only depend on that row
and its context, as the contract requires, and checks each charge is finite
and at least 0. ``multiplicators(market)`` (default: 1.0 each) and
``quote(request, multiplicators)`` (default: ``containers`` × the price of one
container's row) are optional.
"""

import math
from typing import Any, Iterable, List, Mapping, NamedTuple, Optional, Tuple, Type

from . import _component
from . import params as _params
from .columns import EMPTY_MAPPING, MalformedInput, check_indices, columns, enum_text, read_only
from .params import Params
from .resources import Resources, resources_view

# The quota settings the host always passes first (wit/pricing.wit). A policy
# reads those it uses; the others are accepted and ignored.
STANDARD_KEYS = (
    "price.base.general",
    "price.base.gpu",
    "multiplicator.threshold.general",
    "multiplicator.threshold.gpu",
    "multiplicator.increment.general",
    "multiplicator.increment.gpu",
    "minimum.charged.mb",
    "minimum.charged.gpu",
)

# The WIT's s64: a quote's end saturates here rather than overflow.
S64_MAX = 2**63 - 1

DAY_MS = 86_400_000
HOUR_MS = 3_600_000


class Utilization(NamedTuple):
    """Cluster utilization as fractions of capacity, each finite and at
    least 0 (above 1 when demand exceeds capacity)."""

    memory: float
    vcores: float
    gpus: float


class Multiplicators(NamedTuple):
    """Price multiplicators: ``general`` for CPU and memory, ``gpu`` for GPUs."""

    general: float
    gpu: float


ONE = Multiplicators(1.0, 1.0)


class PartitionLoad(NamedTuple):
    """One partition's load ("" is the default partition): what its nodes
    offer, what containers hold there, what asks for it wait for."""

    name: str
    capacity: Resources
    used: Resources
    pending: Resources


class QueueLoad(NamedTuple):
    """One leaf queue's load: its guarantee (of the default partition, in
    absolute terms), what its apps hold, what they wait for."""

    path: str
    guaranteed: Resources
    used: Resources
    pending: Resources


class Market(NamedTuple):
    """What ``multiplicators`` sees: the host clock, the whole cluster's
    utilization, every partition (the default first) and leaf queue, and
    what ``multiplicators`` returned last (to smooth a price without state)."""

    now_ms: int
    utilization: Utilization
    partitions: Tuple[PartitionLoad, ...] = ()
    queues: Tuple[QueueLoad, ...] = ()
    last: Multiplicators = ONE


class ChargeContext(NamedTuple):
    """Who and what a row of usage is for. One object per entry of a batch's
    context table, shared by every row that points to it: read-only
    (``application_tags`` is a tuple, ``node_attributes`` a read-only
    mapping of key to value). The defaults are for tests."""

    app: str = ""
    queue: str = ""
    user: str = ""
    project: str = ""
    application_type: str = "weft"
    application_tags: Tuple[str, ...] = ()
    priority: int = 0
    # The partition (node label) of the node the containers run on; "" is
    # the default partition.
    node_label: str = ""
    node_attributes: Mapping[str, str] = EMPTY_MAPPING
    # "guaranteed" or "opportunistic".
    execution_type: str = "guaranteed"
    reservation: Optional[str] = None


class UsageRow(NamedTuple):
    """One container's use since it was last charged: ``seconds`` of its
    size, over [start_ms, end_ms] on the host clock, in ``context``. The
    defaults are for tests."""

    seconds: float
    memory_mb: int
    vcores: int
    gpus: int
    start_ms: int = 0
    end_ms: int = 0
    context: ChargeContext = ChargeContext()


class QuoteRequest(NamedTuple):
    """A hypothetical ask: ``containers`` containers of one size, each
    running from ``start_ms`` for ``duration_ms``, in ``context``."""

    context: ChargeContext
    memory_mb: int
    vcores: int
    gpus: int
    containers: int
    start_ms: int
    duration_ms: int


class Policy:
    """A pricing policy. Subclass it, set ``name`` and ``version``, and write
    ``price``; ``configure`` (no parameters of its own), ``multiplicators``
    (always 1) and ``quote`` (the price of its rows) have defaults."""

    name = "pricing-policy"
    version = "0.1.0"

    def configure(self, params: Params) -> None:
        """Reads the parameters this policy uses (standard keys included)."""

    def multiplicators(self, market: Market) -> Multiplicators:
        """The multiplicators for this market: finite, at least 0."""
        return ONE

    def price(self, row: UsageRow, multiplicators: Multiplicators) -> float:
        """One container's charge in credits: finite, at least 0."""
        raise NotImplementedError(f"{type(self).__name__} has no price method")

    def quote(self, request: QuoteRequest, multiplicators: Multiplicators) -> float:
        """What ``request`` would cost, all its containers together. By
        default what ``charge`` would charge for its rows: ``containers`` ×
        the price of one container's row."""
        return request.containers * self.price(quote_row(request), multiplicators)


# --- Inputs: the WIT records as views, checked ---------------------------


def _non_negative(what: str, value: Any) -> float:
    """``value`` as a float, refused unless finite and at least 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MalformedInput(f"{what} is {value!r}, not a number")
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise MalformedInput(f"{what} is {value}: it must be finite and at least 0")
    return value


def utilization_view(utilization: Any) -> Utilization:
    """The WIT ``utilization`` record, each fraction checked finite and at least 0."""
    return Utilization(
        *(_non_negative(f"utilization {name}", getattr(utilization, name)) for name in Utilization._fields)
    )


def multiplicators_view(what: str, multiplicators: Any) -> Multiplicators:
    """The WIT ``price-multiplicators`` record, each checked finite and at least 0."""
    return Multiplicators(
        _non_negative(f"{what} general", multiplicators.general),
        _non_negative(f"{what} gpu", multiplicators.gpu),
    )


def market_view(market: Any) -> Market:
    """The WIT ``market`` record as a Market; every f64 is checked finite and
    at least 0 (the host promises it)."""
    return Market(
        now_ms=market.now_ms,
        utilization=utilization_view(market.utilization),
        partitions=tuple(
            PartitionLoad(p.name, resources_view(p.capacity), resources_view(p.used), resources_view(p.pending))
            for p in market.partitions
        ),
        queues=tuple(
            QueueLoad(q.path, resources_view(q.guaranteed), resources_view(q.used), resources_view(q.pending))
            for q in market.queues
        ),
        last=multiplicators_view("market.last", market.last),
    )


def context_view(context: Any) -> ChargeContext:
    """The WIT ``charge-context`` record as a read-only ChargeContext."""
    # A node has each attribute key once (the WIT says so); were one given
    # twice, the last would win.
    attributes = {attribute.key: attribute.value for attribute in context.node_attributes}
    return ChargeContext(
        app=context.app,
        queue=context.queue,
        user=context.user,
        project=context.project,
        application_type=context.application_type,
        application_tags=tuple(context.application_tags),
        priority=context.priority,
        node_label=context.node_label,
        node_attributes=read_only(attributes),
        execution_type=enum_text(context.execution_type),
        reservation=context.reservation,
    )


USAGE_COLUMNS = ("seconds", "memory-mb", "vcores", "gpus", "start-ms", "end-ms", "context")


def usage_rows(usage: Any) -> List[UsageRow]:
    """The WIT ``usage`` record as rows, each with its context. Refuses what
    the host promised would not happen: columns of different lengths, a
    ``seconds`` not finite or below 0, ``start-ms`` after ``end-ms``, a
    context index out of range."""
    seconds, memory, vcores, gpus, starts, ends, indices = columns("usage", usage, USAGE_COLUMNS).values()
    check_indices("usage", "context", indices, len(usage.contexts), "contexts")
    # Each context once per batch, however many rows point to it.
    contexts = [context_view(context) for context in usage.contexts]
    found = []
    for i, (s, m, v, g, start, end, c) in enumerate(zip(seconds, memory, vcores, gpus, starts, ends, indices)):
        _non_negative(f"usage: seconds[{i}]", s)
        if start > end:
            raise MalformedInput(f"usage: start-ms[{i}] is {start}, after end-ms[{i}] {end}")
        found.append(UsageRow(float(s), m, v, g, start, end, contexts[c]))
    return found


def quote_row(request: QuoteRequest) -> UsageRow:
    """The row ``charge`` would see for one container of ``request``: its
    size, from ``start_ms`` for ``duration_ms`` (the end saturating at the
    largest s64)."""
    # quote_request_view refuses a negative duration from the host; one a
    # policy or test builds is priced as none, as the host prices a 0.2.0
    # policy's quote.
    duration_ms = max(request.duration_ms, 0)
    return UsageRow(
        seconds=duration_ms / 1000,
        memory_mb=request.memory_mb,
        vcores=request.vcores,
        gpus=request.gpus,
        start_ms=request.start_ms,
        end_ms=min(request.start_ms + duration_ms, S64_MAX),
        context=request.context,
    )


def quote_request_view(request: Any) -> QuoteRequest:
    """The WIT ``quote-request`` record as a QuoteRequest; a negative
    ``duration-ms`` is refused, as the Rust SDK refuses it."""
    if request.duration_ms < 0:
        raise MalformedInput(f"quote-request: duration-ms is {request.duration_ms}: it must be at least 0")
    return QuoteRequest(
        context=context_view(request.context),
        memory_mb=request.memory_mb,
        vcores=request.vcores,
        gpus=request.gpus,
        containers=request.containers,
        start_ms=request.start_ms,
        duration_ms=request.duration_ms,
    )


# --- Calls: the policy's answers, checked -------------------------------


def _credits(what: str, answer: Any) -> float:
    """A charge or quote, refused unless a finite number at least 0."""
    if isinstance(answer, bool) or not isinstance(answer, (int, float)):
        raise TypeError(f"{what} is {answer!r}, not a number")
    answer = float(answer)
    if not math.isfinite(answer) or answer < 0:
        raise ValueError(f"{what} is {answer}: a charge must be finite and at least 0")
    return answer


def charge(policy: Policy, usage: Any, multiplicators: Multiplicators) -> List[float]:
    """What ``charge`` answers: one price per row, in order. A price that is
    not a finite number at least 0 raises, naming the row."""
    return [
        _credits(f"price of row {i} ({row})", policy.price(row, multiplicators))
        for i, row in enumerate(usage_rows(usage))
    ]


def quote(policy: Policy, request: QuoteRequest, multiplicators: Multiplicators) -> float:
    """What ``quote`` answers, refused unless a finite number at least 0."""
    return _credits(f"quote of {request}", policy.quote(request, multiplicators))


def checked_multiplicators(policy: Policy, market: Market) -> Multiplicators:
    """``policy.multiplicators``, refused unless both are finite and at least 0."""
    answer = policy.multiplicators(market)
    general, gpu = float(answer.general), float(answer.gpu)
    for name, value in (("general", general), ("gpu", gpu)):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"multiplicator {name} is {value}: it must be finite and at least 0")
    return Multiplicators(general, gpu)


# --- Helpers for policies -----------------------------------------------


def night_fraction(start_ms: int, end_ms: int, start_hour: int, end_hour: int) -> float:
    """The fraction (0 to 1) of [start_ms, end_ms] that falls in the UTC
    hours [start_hour, end_hour) of each day. The hours may wrap midnight
    (22 to 6 is 22:00–06:00); equal hours mean no night (0.0). A zero-length
    interval is 1.0 if ``start_ms`` is in the night, else 0.0.

    Exact on integer milliseconds: the night time before an instant has a
    closed form (whole days, then part of the last), so the answer is one
    division however many days the interval spans."""
    for name, hour in (("start_hour", start_hour), ("end_hour", end_hour)):
        if isinstance(hour, bool) or not isinstance(hour, int) or not 0 <= hour <= 23:
            raise ValueError(f"night_fraction: {name} is {hour!r}: it must be a whole hour from 0 to 23")
    if start_ms > end_ms:
        raise ValueError(f"night_fraction: start_ms {start_ms} is after end_ms {end_ms}")
    windows = _night_windows(start_hour, end_hour)
    if start_ms == end_ms:
        within_day = start_ms % DAY_MS
        return 1.0 if any(a <= within_day < b for a, b in windows) else 0.0
    night = _night_before(end_ms, windows) - _night_before(start_ms, windows)
    return night / (end_ms - start_ms)


def _night_windows(start_hour: int, end_hour: int) -> List[Tuple[int, int]]:
    """The night as windows [from, to) of ms within one UTC day."""
    if start_hour < end_hour:
        return [(start_hour * HOUR_MS, end_hour * HOUR_MS)]
    if start_hour > end_hour:
        # Wraps midnight: the day's start until end_hour, and start_hour on.
        return [(0, end_hour * HOUR_MS), (start_hour * HOUR_MS, DAY_MS)]
    return []


def _night_before(at_ms: int, windows: List[Tuple[int, int]]) -> int:
    """Night ms in [the start of day 0, at_ms), counted from the epoch (and
    negative before it): whole days, then the part of at_ms's own day.
    Floor division keeps it right for instants before the epoch."""
    days, within_day = divmod(at_ms, DAY_MS)
    per_day = sum(b - a for a, b in windows)
    return days * per_day + sum(min(max(within_day, a), b) - a for a, b in windows)


def configured(policy_class: Type[Policy], pairs: Iterable[Tuple[str, str]]) -> Policy:
    """A new ``policy_class`` object configured with ``pairs`` as the host
    would (this kind's standard keys known); raises ParamError. For tests."""
    return _params.configured(policy_class, pairs, STANDARD_KEYS)


def export(policy_class: Type[Policy]) -> Tuple[Type, Type]:
    """The ``WitWorld`` and ``Pricing`` classes componentize-py looks for in the
    app module: ``WitWorld, Pricing = pricing.export(MyPricing)``."""
    from wit_world.exports import pricing as wit

    _component.use_host_log()
    active = _component.Active(policy_class, "pricing", STANDARD_KEYS)

    def multiplicators(market: Any) -> Any:
        answer = checked_multiplicators(active.policy, market_view(market))
        return wit.PriceMultiplicators(general=answer.general, gpu=answer.gpu)

    def charge_batch(usage: Any, multiplicators: Any) -> List[float]:
        return charge(active.policy, usage, multiplicators_view("multiplicator", multiplicators))

    def quote_request(request: Any, multiplicators: Any) -> float:
        in_force = multiplicators_view("multiplicator", multiplicators)
        return quote(active.policy, quote_request_view(request), in_force)

    guarded_multiplicators = _component.guarded("multiplicators", multiplicators)
    guarded_charge = _component.guarded("charge", charge_batch)
    guarded_quote = _component.guarded("quote", quote_request)

    class Pricing:
        def multiplicators(self, market: Any) -> Any:
            return guarded_multiplicators(market)

        def charge(self, usage: Any, multiplicators: Any) -> List[float]:
            return guarded_charge(usage, multiplicators)

        def quote(self, request: Any, multiplicators: Any) -> float:
            return guarded_quote(request, multiplicators)

    return _component.world_class(active), Pricing
