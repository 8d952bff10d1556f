"""Unit tests of the policy, natively: ``python3 -m pytest``. The same cases as
Weft's flat-pricing crate."""

import math

import pytest

from weft_policy import ParamError, pricing
from weft_policy.pricing import Multiplicators, UsageRow, Utilization, charge

from policy import FlatPricing


def configured(pairs):
    """The policy configured with ``pairs`` as the host would do it."""
    return pricing.configured(FlatPricing, pairs)


ONE = Multiplicators(general=1.0, gpu=1.0)


@pytest.mark.parametrize(
    "row, expected",
    [
        (UsageRow(10.0, 1024, 1, 0), 10.0),  # memory and cpu tie at one unit
        (UsageRow(10.0, 4096, 1, 0), 40.0),  # memory dominates: 4 units
        (UsageRow(10.0, 1024, 8, 0), 80.0),  # cpu dominates: 8 units
        (UsageRow(10.0, 1024, 1, 2), 20.0),  # gpu dominates: 2 units
        (UsageRow(0.0, 8192, 8, 8), 0.0),  # no time, no charge
    ],
)
def test_dominant_resource_pays(row, expected):
    assert configured([]).price(row, ONE) == expected


def test_parameters_change_prices():
    policy = configured(
        [
            ("price.base.general", "0.5"),
            ("minimum.charged.mb", "512"),
            ("multiplicator.threshold.general", "0.2"),
        ]
    )
    assert policy.price(UsageRow(2.0, 1024, 1, 0), ONE) == 2.0


@pytest.mark.parametrize(
    "pairs, words",
    [
        ([("price.base.general", "cheap")], "price.base.general must be a number at least 0"),
        ([("price.base.gpu", "-1")], "price.base.gpu"),
        ([("minimum.charged.mb", "0")], "must be above 0"),
        ([("discount", "10")], "has no parameter 'discount'"),
    ],
)
def test_bad_parameters_are_refused(pairs, words):
    with pytest.raises(ParamError, match=words):
        configured(pairs)


def test_multiplicators_are_flat():
    assert configured([]).multiplicators(Utilization(0.9, 0.9, 2.0)) == ONE


def test_a_batch_is_priced_row_by_row():
    class Usage:  # the WIT record's shape: columns
        seconds = [10.0, 10.0, 1.0]
        memory_mb = [4096, 1024, 1024]
        vcores = [1, 8, 1]
        gpus = [0, 0, 0]

    policy = configured([])
    assert charge(policy, Usage, ONE) == [40.0, 80.0, 1.0]
    # Each charge is the same alone as in the batch.
    for i in range(3):

        class One:
            seconds, memory_mb = [Usage.seconds[i]], [Usage.memory_mb[i]]
            vcores, gpus = [Usage.vcores[i]], [Usage.gpus[i]]

        assert charge(policy, One, ONE) == [charge(policy, Usage, ONE)[i]]
    assert all(math.isfinite(c) and c >= 0 for c in charge(policy, Usage, ONE))
