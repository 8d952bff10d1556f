"""Pricing: usage rows with their shared contexts, the market, charges and
quotes checked, and night_fraction."""

import math
import random
from enum import Enum
from types import SimpleNamespace

import pytest

from weft_policy import pricing
from weft_policy.columns import MalformedInput
from weft_policy.pricing import (
    DAY_MS,
    HOUR_MS,
    ChargeContext,
    Market,
    Multiplicators,
    QuoteRequest,
    UsageRow,
    Utilization,
    night_fraction,
)

ONE = Multiplicators(1.0, 1.0)


class ExecutionType(Enum):
    """Stands in for the generated bindings' enum."""

    GUARANTEED = 0
    OPPORTUNISTIC = 1


def wit_context(project="ml", **changes):
    fields = dict(
        app="application_1_0001", queue="root.a", user="alice", project=project, application_type="SPARK",
        application_tags=["nightly"], priority=2, node_label="gpu",
        node_attributes=[SimpleNamespace(key="gpu-model", value="a100")],
        execution_type=ExecutionType.OPPORTUNISTIC, reservation=None,
    )
    fields.update(changes)
    return SimpleNamespace(**fields)


def usage(**columns):
    """Three rows, the first and last in one context, as the host sends them."""
    base = dict(
        seconds=[1.0, 2.0, 3.0], memory_mb=[1, 2, 3], vcores=[3, 4, 5], gpus=[0, 0, 1],
        start_ms=[0, 10, 20], end_ms=[1000, 2010, 3020], context=[0, 1, 0],
        contexts=[wit_context("ml"), wit_context("web", reservation="r1")],
    )
    base.update(columns)
    return SimpleNamespace(**base)


class Flat(pricing.Policy):
    def price(self, row, multiplicators):
        return row.seconds * row.vcores * multiplicators.general


def test_charge_prices_each_row_with_its_context():
    assert pricing.charge(Flat(), usage(), Multiplicators(2.0, 1.0)) == [6.0, 16.0, 30.0]
    rows = pricing.usage_rows(usage())
    assert rows[1][:6] == (2.0, 2, 4, 0, 10, 2010)
    assert rows[1].context.project == "web" and rows[1].context.reservation == "r1"
    context = rows[0].context
    assert context == ChargeContext(
        "application_1_0001", "root.a", "alice", "ml", "SPARK", ("nightly",), 2, "gpu",
        {"gpu-model": "a100"}, "opportunistic", None,
    )
    # One context object per table entry, shared by its rows, and read-only.
    assert rows[2].context is context
    with pytest.raises(TypeError):
        context.node_attributes["gpu-model"] = "h100"
    empty = usage(seconds=[], memory_mb=[], vcores=[], gpus=[], start_ms=[], end_ms=[], context=[], contexts=[])
    assert pricing.charge(Flat(), empty, ONE) == []


@pytest.mark.parametrize(
    "columns, words",
    [
        (dict(memory_mb=[1]), "usage: its columns differ in length (3 seconds, 1 memory-mb"),
        (dict(seconds=[1.0, math.nan, 1.0]), "usage: seconds[1] is nan: it must be finite and at least 0"),
        (dict(seconds=[1.0, 1.0, -0.5]), "usage: seconds[2] is -0.5"),
        (dict(start_ms=[0, 3000, 20]), "usage: start-ms[1] is 3000, after end-ms[1] 2010"),
        (dict(context=[0, 2, 0]), "usage: context[1] is 2, but there are 2 contexts"),
    ],
)
def test_malformed_usage_is_refused(columns, words):
    with pytest.raises(MalformedInput) as refusal:
        pricing.charge(Flat(), usage(**columns), ONE)
    assert words in str(refusal.value)


def test_bad_prices_are_refused_naming_the_row():
    class Bad(pricing.Policy):
        def __init__(self, answer):
            self.answer = answer

        def price(self, row, multiplicators):
            return self.answer

    for answer, words in [(math.nan, "is nan"), (-1.0, "is -1.0"), ("1", "not a number"), (True, "not a number")]:
        with pytest.raises((ValueError, TypeError), match=words):
            pricing.charge(Bad(answer), usage(), ONE)


def wit_market(**changes):
    load = SimpleNamespace(memory_mb=1, vcores=2, gpus=3)
    fields = dict(
        now_ms=5,
        utilization=SimpleNamespace(memory=0.5, vcores=0.25, gpus=2.0),
        partitions=[SimpleNamespace(name="", capacity=load, used=load, pending=load)],
        queues=[SimpleNamespace(path="root.a", guaranteed=load, used=load, pending=load)],
        last=SimpleNamespace(general=1.5, gpu=1.0),
    )
    fields.update(changes)
    return SimpleNamespace(**fields)


def test_the_market_is_read_and_checked():
    market = pricing.market_view(wit_market())
    assert market.now_ms == 5 and market.utilization == Utilization(0.5, 0.25, 2.0)
    assert market.partitions[0].capacity == pricing.Resources(1, 2, 3) and market.queues[0].path == "root.a"
    assert market.last == Multiplicators(1.5, 1.0)
    bad_cases = [
        (dict(utilization=SimpleNamespace(memory=-0.1, vcores=0.0, gpus=0.0)), "utilization memory is -0.1"),
        (dict(utilization=SimpleNamespace(memory=0.0, vcores=math.inf, gpus=0.0)), "utilization vcores is inf"),
        (dict(last=SimpleNamespace(general=1.0, gpu=math.nan)), "market.last gpu is nan"),
    ]
    for changes, words in bad_cases:
        with pytest.raises(MalformedInput, match=words):
            pricing.market_view(wit_market(**changes))


def test_multiplicators_must_be_finite_and_not_negative():
    class Surge(pricing.Policy):
        def multiplicators(self, market):
            return Multiplicators(market.utilization.memory * 2, -1.0)

    market = Market(0, Utilization(0.5, 0.0, 0.0))
    with pytest.raises(ValueError, match="multiplicator gpu is -1.0"):
        pricing.checked_multiplicators(Surge(), market)
    assert pricing.checked_multiplicators(pricing.Policy(), market) == ONE


def request(containers=3, start_ms=HOUR_MS, duration_ms=2 * HOUR_MS):
    return QuoteRequest(ChargeContext(project="ml"), 2048, 2, 0, containers, start_ms, duration_ms)


def test_quote_is_containers_times_the_price_of_one_row():
    seen = []

    class Seeing(Flat):
        def price(self, row, multiplicators):
            seen.append(row)
            return super().price(row, multiplicators)

    assert pricing.quote(Seeing(), request(), ONE) == 3 * 7200.0 * 2
    assert seen == [UsageRow(7200.0, 2048, 2, 0, HOUR_MS, 3 * HOUR_MS, ChargeContext(project="ml"))]
    # The end saturates at the largest s64 rather than overflow.
    assert pricing.quote_row(request(start_ms=2**63 - 10, duration_ms=100)).end_ms == 2**63 - 1
    assert pricing.quote(Flat(), request(containers=0), ONE) == 0.0
    # A negative duration built by hand is priced as none (the host's is
    # refused by quote_request_view).
    assert pricing.quote_row(request(duration_ms=-1))[:6] == (0.0, 2048, 2, 0, HOUR_MS, HOUR_MS)
    assert pricing.quote(Flat(), request(duration_ms=-1), ONE) == 0.0

    class Negative(Flat):
        def quote(self, request, multiplicators):
            return -2.0

    with pytest.raises(ValueError, match="quote of .* is -2.0: a charge must be finite and at least 0"):
        pricing.quote(Negative(), request(), ONE)


def test_a_quote_request_is_read_with_its_context():
    wit = SimpleNamespace(
        context=wit_context(), memory_mb=1, vcores=2, gpus=3, containers=4, start_ms=5, duration_ms=6
    )
    view = pricing.quote_request_view(wit)
    assert view[1:] == (1, 2, 3, 4, 5, 6) and view.context.execution_type == "opportunistic"
    wit.duration_ms = -1
    with pytest.raises(MalformedInput, match="quote-request: duration-ms is -1: it must be at least 0"):
        pricing.quote_request_view(wit)


# --- night_fraction -------------------------------------------------------

H = HOUR_MS


@pytest.mark.parametrize(
    "start, end, hours, expected",
    [
        (23 * H, 23 * H + 30 * 60_000, (22, 6), 1.0),  # fully inside, before midnight
        (DAY_MS + 2 * H, DAY_MS + 5 * H, (22, 6), 1.0),  # fully inside, after midnight
        (10 * H, 20 * H, (22, 6), 0.0),  # fully outside
        (20 * H, DAY_MS + 2 * H, (22, 6), 4 / 6),  # across midnight: 22–02 of 20–02
        (21 * H, 23 * H, (22, 6), 0.5),  # half in, before midnight
        (0, 3 * DAY_MS, (22, 6), 8 / 24),  # several whole days: 8 night hours a day
        (12 * H, 3 * DAY_MS + 12 * H, (22, 6), 8 / 24),  # several days from noon
        (0, 2 * DAY_MS + 3 * H, (1, 4), (3 + 3 + 2) / 51),  # non-wrap window over days
        (2 * H, 3 * H, (1, 4), 1.0),  # non-wrap, inside
        (4 * H, 5 * H, (1, 4), 0.0),  # non-wrap, the end hour is not night
        (0, DAY_MS, (5, 5), 0.0),  # equal hours: no night
        (-2 * H, 2 * H, (22, 6), 1.0),  # before the epoch: 22:00 the day before
        (-30 * DAY_MS, -29 * DAY_MS, (22, 6), 8 / 24),
        (0, 100 * 365 * DAY_MS + 3 * H, (22, 6), (100 * 365 * 8 + 3) / (100 * 365 * 24 + 3)),  # a century
    ],
)
def test_night_fraction(start, end, hours, expected):
    # Exact: the night's ms over the interval's, one correctly rounded
    # division, as the expected ratio of whole hours is.
    assert night_fraction(start, end, *hours) == expected


@pytest.mark.parametrize(
    "at, hours, expected",
    [
        (23 * H, (22, 6), 1.0),
        (22 * H, (22, 6), 1.0),  # the start hour is night
        (6 * H, (22, 6), 0.0),  # the end hour is not
        (6 * H - 1, (22, 6), 1.0),
        (12 * H, (22, 6), 0.0),
        (2 * H, (1, 4), 1.0),
        (0, (5, 5), 0.0),
        (-1, (22, 6), 1.0),  # 23:59:59.999 the day before the epoch
    ],
)
def test_night_fraction_of_an_instant(at, hours, expected):
    assert night_fraction(at, at, *hours) == expected


def test_night_fraction_matches_counting_minute_by_minute():
    rng = random.Random(11)
    for _ in range(300):
        start_hour, end_hour = rng.randrange(24), rng.randrange(24)
        start = rng.randrange(-3 * DAY_MS, 3 * DAY_MS, 60_000)
        end = start + rng.randrange(60_000, 4 * DAY_MS, 60_000)
        if start_hour <= end_hour:
            night = lambda hour: start_hour <= hour < end_hour  # noqa: E731
        else:
            night = lambda hour: hour >= start_hour or hour < end_hour  # noqa: E731
        minutes = range(start, end, 60_000)
        counted = sum(1 for t in minutes if night((t % DAY_MS) // H))
        assert night_fraction(start, end, start_hour, end_hour) == counted / len(minutes)


@pytest.mark.parametrize(
    "args, words",
    [
        ((0, 1, 24, 6), "start_hour is 24"),
        ((0, 1, 22, -1), "end_hour is -1"),
        ((0, 1, 22.0, 6), "start_hour is 22.0"),
        ((5, 4, 22, 6), "start_ms 5 is after end_ms 4"),
    ],
)
def test_night_fraction_refuses_bad_arguments(args, words):
    with pytest.raises(ValueError, match=words):
        night_fraction(*args)
