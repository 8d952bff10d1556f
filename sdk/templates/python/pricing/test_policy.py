"""Unit tests of the policy, natively: ``python3 -m pytest``. The flat cases
are Weft's flat-pricing crate's; the rest are the project and night factors."""

import math
from types import SimpleNamespace

import pytest

from weft_policy import ParamError, pricing
from weft_policy.pricing import (
    ChargeContext,
    Market,
    Multiplicators,
    QuoteRequest,
    UsageRow,
    Utilization,
    charge,
)

from policy import ContextPricing

HOUR = 3_600_000
# 2023-11-14 00:00 UTC: a midnight, so hours of the day read plainly below.
MIDNIGHT = 1_699_920_000_000


def configured(pairs):
    """The policy configured with ``pairs`` as the host would do it."""
    return pricing.configured(ContextPricing, pairs)


ONE = Multiplicators(general=1.0, gpu=1.0)


def row(project="web", start_hour=12, hours=1, memory_mb=1024, vcores=1, gpus=0):
    """One container of ``project`` for ``hours`` from ``start_hour`` (UTC) on MIDNIGHT's day."""
    start = MIDNIGHT + start_hour * HOUR
    end = start + hours * HOUR
    return UsageRow(hours * 3600.0, memory_mb, vcores, gpus, start, end, ChargeContext(project=project))


@pytest.mark.parametrize(
    "usage, expected",
    [
        (UsageRow(10.0, 1024, 1, 0), 10.0),  # memory and cpu tie at one unit
        (UsageRow(10.0, 4096, 1, 0), 40.0),  # memory dominates: 4 units
        (UsageRow(10.0, 1024, 8, 0), 80.0),  # cpu dominates: 8 units
        (UsageRow(10.0, 1024, 1, 2), 20.0),  # gpu dominates: 2 units
        (UsageRow(0.0, 8192, 8, 8), 0.0),  # no time, no charge
    ],
)
def test_dominant_resource_pays(usage, expected):
    assert configured([]).price(usage, ONE) == expected


def test_parameters_change_prices():
    policy = configured(
        [
            ("price.base.general", "0.5"),
            ("minimum.charged.mb", "512"),
            ("multiplicator.threshold.general", "0.2"),
        ]
    )
    assert policy.price(UsageRow(2.0, 1024, 1, 0), ONE) == 2.0


def test_a_project_with_a_factor_pays_it():
    policy = configured([("project.ml", "2"), ("project.web", "0.5")])
    ml, web, other = (policy.price(row(project), ONE) for project in ("ml", "web", "etl"))
    assert ml == 2 * other and web == 0.5 * other and other == 3600.0


@pytest.mark.parametrize(
    "start_hour, hours, factor",
    [
        (23, 2, 0.5),  # 23:00–01:00: wholly at night, half price
        (2, 3, 0.5),  # 02:00–05:00
        (12, 4, 1.0),  # 12:00–16:00: wholly by day
        (4, 4, 0.75),  # 04:00–08:00: half at night
        (20, 4, 0.75),  # 20:00–24:00: half at night
        (0, 24, 1 - 8 / 24 * 0.5),  # a whole day: 8 hours of night
    ],
)
def test_nights_cost_the_night_factor(start_hour, hours, factor):
    policy = configured([("night.factor", "0.5")])
    day_price = configured([]).price(row(start_hour=start_hour, hours=hours), ONE)
    assert policy.price(row(start_hour=start_hour, hours=hours), ONE) == day_price * factor


def test_the_night_hours_are_parameters():
    policy = configured([("night.factor", "0"), ("night.start-hour", "1"), ("night.end-hour", "3")])
    assert policy.price(row(start_hour=1, hours=2), ONE) == 0.0
    assert policy.price(row(start_hour=0, hours=4), ONE) == 0.5 * 4 * 3600.0


def test_project_and_night_factors_multiply():
    policy = configured([("project.ml", "2"), ("night.factor", "0.5")])
    assert policy.price(row("ml", start_hour=23), ONE) == 3600.0


@pytest.mark.parametrize(
    "pairs, words",
    [
        ([("price.base.general", "cheap")], "price.base.general must be a number at least 0"),
        ([("price.base.gpu", "-1")], "price.base.gpu"),
        ([("minimum.charged.mb", "0")], "must be above 0"),
        ([("project.ml", "-1")], "project.ml must be a number at least 0, not '-1'"),
        ([("project.ml", "x")], "project.ml must be a number"),
        ([("project.", "2")], "project. needs a project name"),
        ([("night.factor", "x")], "night.factor must be a number at least 0, not 'x'"),
        ([("night.start-hour", "24")], "night.start-hour must be a whole number from 0 to 23, not '24'"),
        ([("night.end-hour", "6.5")], "night.end-hour must be a whole number"),
        ([("discount", "10")], "has no parameter 'discount'"),
    ],
)
def test_bad_parameters_are_refused(pairs, words):
    with pytest.raises(ParamError, match=words):
        configured(pairs)


def test_multiplicators_are_flat():
    market = Market(now_ms=0, utilization=Utilization(0.9, 0.9, 2.0), last=Multiplicators(3.0, 3.0))
    assert configured([]).multiplicators(market) == ONE


def test_a_quote_is_containers_times_the_price():
    policy = configured([("project.ml", "2"), ("night.factor", "0.5")])
    request = QuoteRequest(ChargeContext(project="ml"), 2048, 1, 0, 5, MIDNIGHT + 23 * HOUR, 2 * HOUR)
    one = policy.price(row("ml", start_hour=23, hours=2, memory_mb=2048), ONE)
    # 7200 s × 2 memory units × project 2 × night 0.5, for each of 5 containers.
    assert pricing.quote(policy, request, ONE) == 5 * one == 5 * 14400.0


def test_a_batch_is_priced_row_by_row():
    # The WIT record's shape: columns, and a table of contexts rows point to.
    contexts = [
        SimpleNamespace(
            app="application_1700000000000_0001", queue="root.a", user="alice", project=project,
            application_type="weft", application_tags=[], priority=0, node_label="",
            node_attributes=[], execution_type="guaranteed", reservation=None,
        )
        for project in ("ml", "web")
    ]
    start = MIDNIGHT + 12 * HOUR
    usage = SimpleNamespace(
        seconds=[10.0, 10.0, 1.0], memory_mb=[4096, 1024, 1024], vcores=[1, 8, 1], gpus=[0, 0, 0],
        start_ms=[start] * 3, end_ms=[start + 10_000, start + 10_000, start + 1_000],
        context=[0, 1, 0], contexts=contexts,
    )

    policy = configured([("project.ml", "2")])
    charges = charge(policy, usage, ONE)
    assert charges == [80.0, 80.0, 2.0]
    # Each charge is the same alone as in the batch.
    for i in range(3):
        columns = ("seconds", "memory_mb", "vcores", "gpus", "start_ms", "end_ms")
        alone = SimpleNamespace(
            **{column: [getattr(usage, column)[i]] for column in columns},
            context=[0],
            contexts=[contexts[usage.context[i]]],
        )
        assert charge(policy, alone, ONE) == [charges[i]]
    assert all(math.isfinite(c) and c >= 0 for c in charges)
