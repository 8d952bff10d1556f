"""Unit tests of the policy, natively: ``python3 -m pytest``. The same cases as
Weft's no-overcommit crate."""

from types import SimpleNamespace

import pytest

from weft_policy import ParamError, sharing
from weft_policy.sharing import (
    OverCommit,
    Resources,
    Step,
    Timeline,
    admission_view,
)

from policy import NoOverCommit

HOUR = 3_600_000


def configured(pairs):
    """The policy configured with ``pairs`` as the host would do it."""
    return sharing.configured(NoOverCommit, pairs)


def block(start, end, amount):
    """``amount`` over [start, end), zero elsewhere."""
    return Timeline([Step(start, amount), Step(end, Resources(0, 0, 0))])


def columns(timeline):
    """A Timeline as the WIT record the host sends."""
    return SimpleNamespace(**sharing.timeline_columns(timeline))


def admission(candidate, plan_committed, from_ms=0, to_ms=24 * HOUR):
    """Seed 004's kind of queue: root.dedicated with 100 GB, 100 vcores, 8 GPUs,
    built from WIT-shaped columns the way the SDK's glue builds it."""
    settings = SimpleNamespace(
        queue="root.dedicated",
        capacity=SimpleNamespace(memory_mb=102_400, vcores=100, gpus=8),
        reservation_window_ms=24 * HOUR,
        instantaneous_max_capacity=50.0,
        average_capacity=25.0,
    )
    return admission_view(
        SimpleNamespace(
            settings=settings,
            user="alice",
            reservation_id="reservation_1700000000000_0001",
            from_ms=from_ms,
            to_ms=to_ms,
            candidate=columns(candidate),
            user_committed=columns(Timeline()),
            plan_committed=columns(plan_committed),
            context=SimpleNamespace(
                now_ms=0,
                reservation_name="nightly-etl",
                recurring=False,
                reservations=1,
                user_reservations=0,
                users=1,
            ),
        )
    )


@pytest.mark.parametrize(
    "asked, refusal",
    [
        (Resources(20_480, 20, 2), None),  # exactly the capacity in every dimension
        (
            Resources(20_481, 0, 0),
            "plan root.dedicated would hold 102401 MB at t=7200000 ms (81920 MB committed + "
            "20481 MB asked); its capacity is 102400 MB (over by 1 MB)",
        ),
        (
            Resources(0, 21, 0),
            "would hold 101 vcores at t=7200000 ms (80 vcores committed + 21 vcores asked); "
            "its capacity is 100 vcores (over by 1 vcores)",
        ),
        (
            Resources(0, 0, 3),
            "would hold 9 GPUs at t=7200000 ms (6 GPUs committed + 3 GPUs asked); "
            "its capacity is 8 GPUs (over by 1 GPUs)",
        ),
    ],
)
def test_over_commit_in_each_dimension(asked, refusal):
    # Bob's reservation holds 80 GB, 80 vcores and 6 GPUs over [1 h, 3 h).
    committed = block(HOUR, 3 * HOUR, Resources(81_920, 80, 6))
    answer = configured([]).validate(admission(block(2 * HOUR, 4 * HOUR, asked), committed))
    if refusal is None:
        assert answer is None
    else:
        assert isinstance(answer, OverCommit) and refusal in answer.message


def test_excess_is_reported_at_its_first_instant():
    committed = block(5 * HOUR, 6 * HOUR, Resources(102_400, 0, 0))
    answer = configured([]).validate(admission(block(0, 10 * HOUR, Resources(1, 0, 0)), committed))
    assert "at t=18000000 ms" in answer.message


def test_excess_the_candidate_adds_nothing_to_stands():
    committed = block(0, 10 * HOUR, Resources(0, 0, 10))
    policy = configured([])
    assert policy.validate(admission(block(HOUR, 2 * HOUR, Resources(1024, 1, 0)), committed)) is None
    one_more_gpu = admission(block(HOUR, 2 * HOUR, Resources(1024, 1, 1)), committed)
    assert isinstance(policy.validate(one_more_gpu), OverCommit)


def test_empty_timelines():
    policy = configured([])
    nothing = admission(Timeline(), Timeline())
    assert policy.validate(nothing) is None
    assert policy.available(nothing).steps == [
        Step(0, Resources(102_400, 100, 8)),
        Step(24 * HOUR, Resources(0, 0, 0)),
    ]
    whole = admission(block(0, HOUR, Resources(102_400, 100, 8)), Timeline())
    assert policy.validate(whole) is None


def test_available_is_capacity_minus_plan():
    committed = Timeline(
        [
            Step(-HOUR, Resources(10_240, 10, 0)),  # began before the range
            Step(HOUR, Resources(40_960, 40, 4)),
            Step(2 * HOUR, Resources(204_800, 50, 8)),  # over capacity: 0 left, not negative
            Step(3 * HOUR, Resources(0, 0, 0)),
        ]
    )
    free = configured([]).available(admission(Timeline(), committed, to_ms=4 * HOUR))
    assert [(s.at_ms, tuple(s.amount)) for s in free.steps] == [
        (0, (92_160, 90, 8)),
        (HOUR, (61_440, 60, 4)),
        (2 * HOUR, (0, 50, 0)),
        (3 * HOUR, (102_400, 100, 8)),
        (4 * HOUR, (0, 0, 0)),
    ]


def test_malformed_admissions_are_refused_not_trapped():
    unsorted = Timeline(
        [Step(0, Resources(1, 0, 0)), Step(HOUR, Resources(2, 0, 0)), Step(HOUR // 2, Resources(0, 0, 0))]
    )
    bad = admission(block(0, 2 * HOUR, Resources(1, 0, 0)), unsorted)
    policy = configured([])
    answer = policy.validate(bad)
    assert answer == OverCommit(
        "malformed admission: plan-committed: at-ms must strictly increase, "
        "but at-ms[1] is 3600000 and at-ms[2] is 1800000"
    )
    assert policy.available(bad) == Timeline()


def test_no_window_and_no_parameters():
    policy = configured([])
    assert policy.window(admission(Timeline(), Timeline()).settings) == 0
    with pytest.raises(ParamError, match="has no parameter 'capacity'"):
        configured([("capacity", "50")])
