"""The kinds' views and checks: rows from columns, log bounds, charges,
placements, admissions, the walk and the timeline builder."""

import math
from types import SimpleNamespace

import pytest

from weft_policy import log
from weft_policy import pricing, scheduling, sharing
from weft_policy.columns import MalformedInput
from weft_policy.log import MAX_MESSAGE_CHARS, bounded
from weft_policy.sharing import Resources, Step, Timeline


def test_log_goes_to_the_sink_bounded():
    lines = []
    log.use_sink(lambda level, message: lines.append((level, message)))
    try:
        log.info("hello")
        log.error("x" * (MAX_MESSAGE_CHARS + 5))
        with pytest.raises(ValueError, match="log level must be one of"):
            log.write("loud", "no")
    finally:
        log.use_sink(lambda level, message: None)
    assert lines[0] == ("info", "hello")
    assert lines[1][0] == "error" and lines[1][1].endswith("… (5 more characters)")
    assert bounded("short") == "short"


class Flat(pricing.Policy):
    def price(self, row, multiplicators):
        return row.seconds * row.vcores * multiplicators.general


def usage(**columns):
    base = dict(seconds=[1.0, 2.0], memory_mb=[1, 2], vcores=[3, 4], gpus=[0, 0])
    base.update(columns)
    return SimpleNamespace(**base)


def test_charge_prices_each_row():
    assert pricing.charge(Flat(), usage(), pricing.Multiplicators(2.0, 1.0)) == [6.0, 16.0]
    assert pricing.usage_rows(usage())[1] == pricing.UsageRow(2.0, 2, 4, 0)


def test_charge_refuses_ragged_columns_and_bad_prices():
    with pytest.raises(MalformedInput, match=r"usage: its columns differ in length \(2 seconds, 1 memory-mb"):
        pricing.charge(Flat(), usage(memory_mb=[1]), pricing.Multiplicators(1.0, 1.0))

    class Bad(pricing.Policy):
        def __init__(self, answer):
            self.answer = answer

        def price(self, row, multiplicators):
            return self.answer

    for answer, words in [(math.nan, "is nan"), (-1.0, "is -1.0"), ("1", "not a number"), (True, "not a number")]:
        with pytest.raises((ValueError, TypeError), match=words):
            pricing.charge(Bad(answer), usage(), pricing.Multiplicators(1.0, 1.0))


def test_multiplicators_must_be_finite_and_not_negative():
    class Surge(pricing.Policy):
        def multiplicators(self, utilization):
            return pricing.Multiplicators(utilization.memory * 2, -1.0)

    with pytest.raises(ValueError, match="multiplicator gpu is -1.0"):
        pricing.checked_multiplicators(Surge(), pricing.Utilization(0.5, 0.0, 0.0))
    assert pricing.checked_multiplicators(pricing.Policy(), pricing.Utilization(1, 1, 1)) == (1.0, 1.0)


def test_snapshot_rows_carry_their_index():
    nodes = SimpleNamespace(
        free_memory_mb=[10, 20], free_vcores=[1, 2], free_gpus=[0, 0],
        capacity_memory_mb=[10, 20], capacity_vcores=[1, 2], capacity_gpus=[0, 0],
    )
    queues = SimpleNamespace(
        parent=[0], capacity=[100.0], maximum_capacity=[100.0], minimum_user_limit_percent=[100.0],
        user_limit_factor=[None], fair=[False], used_memory_mb=[0], used_vcores=[0], used_gpus=[0],
    )
    apps = SimpleNamespace(
        queue=[0], user=[0], priority=[1], submit_time_ms=[5], used_memory_mb=[0], used_vcores=[0], used_gpus=[0]
    )
    asks = SimpleNamespace(app=[0], pending=[2], memory_mb=[5], vcores=[1], gpus=[0])
    view = scheduling.snapshot_view(SimpleNamespace(now_ms=9, nodes=nodes, queues=queues, apps=apps, asks=asks))
    assert view.nodes[1] == scheduling.Node(1, 20, 2, 0, 20, 2, 0)
    assert view.queues[0].user_limit_factor is None
    assert view.asks[0].index == 0 and view.asks[0].pending == 2
    asks.gpus = []
    with pytest.raises(MalformedInput, match=r"asks: its columns differ in length"):
        scheduling.snapshot_view(SimpleNamespace(now_ms=9, nodes=nodes, queues=queues, apps=apps, asks=asks))


def test_placements_become_columns_of_u32():
    placements = [scheduling.Placement(0, 1, 2), scheduling.Placement(3, 4, 5)]
    assert scheduling.placement_columns(placements) == ([0, 3], [1, 4], [2, 5])
    for bad in ([scheduling.Placement(-1, 0, 1)], [scheduling.Placement(0, 2**32, 1)], [(0, 0, 1.5)]):
        with pytest.raises(ValueError, match="placement 0"):
            scheduling.placement_columns(bad)
    with pytest.raises(ValueError, match="preempted container 1"):
        scheduling.victims([0, -2])


def columns(timeline):
    return SimpleNamespace(**sharing.timeline_columns(timeline))


def admission(candidate=Timeline(), plan=Timeline(), from_ms=0, to_ms=100, capacity=(100, 10, 2)):
    settings = SimpleNamespace(
        queue="root.q", capacity=SimpleNamespace(memory_mb=capacity[0], vcores=capacity[1], gpus=capacity[2]),
        reservation_window_ms=10, instantaneous_max_capacity=50.0, average_capacity=25.0,
    )
    return sharing.admission_view(
        SimpleNamespace(
            settings=settings, user="u", reservation_id="r", from_ms=from_ms, to_ms=to_ms,
            candidate=columns(candidate), user_committed=columns(Timeline()), plan_committed=columns(plan),
        )
    )


def block(start, end, amount):
    return Timeline([Step(start, Resources(*amount)), Step(end, Resources(0, 0, 0))])


def test_admission_problems_are_named():
    ragged = columns(block(0, 10, (1, 0, 0)))
    ragged.vcores.pop()
    view = admission()
    assert view.problem is None
    cases = [
        (admission(from_ms=5, to_ms=4), "the range [5, 4) ms runs backwards"),
        (admission(capacity=(2**40, 0, 0)), "settings: the capacity is 1099511627776 MB"),
        (admission(candidate=block(90, 110, (1, 0, 0))), "candidate: it holds resources from t=90 ms until t=110 ms"),
        (admission(candidate=Timeline([Step(90, Resources(1, 0, 0))])), "from t=90 ms on, outside the range"),
        (admission(plan=Timeline([Step(3, Resources(1, 0, 0)), Step(3, Resources(0, 0, 0))])),
         "plan-committed: at-ms must strictly increase, but at-ms[0] is 3 and at-ms[1] is 3"),
        (admission(plan=block(0, 2**53, (1, 0, 0))), "plan-committed: at-ms[1] is 9007199254740992, beyond"),
        (admission(plan=block(0, 5, (0, 2**40, 0))), "plan-committed: vcores[0] is 1099511627776, above"),
    ]
    for view, words in cases:
        assert view.problem is not None and words in view.problem, view.problem
    whole = sharing.admission_view(
        SimpleNamespace(
            settings=admission().settings._replace(capacity=SimpleNamespace(memory_mb=1, vcores=1, gpus=1)),
            user="u", reservation_id="r", from_ms=0, to_ms=100,
            candidate=ragged, user_committed=columns(Timeline()), plan_committed=columns(Timeline()),
        )
    )
    assert whole.problem == "candidate: its columns differ in length (2 at-ms, 2 memory-mb, 1 vcores, 2 gpus)"


def test_candidate_span_is_clipped_to_the_range():
    assert admission(candidate=block(10, 20, (1, 0, 0))).candidate_span() == (10, 20)
    assert admission().candidate_span() is None
    zero_then_some = Timeline([Step(0, Resources(0, 0, 0)), Step(30, Resources(0, 1, 0)), Step(40, Resources(0, 0, 0))])
    assert admission(candidate=zero_then_some).candidate_span() == (30, 40)


def test_walk_merges_the_steps_of_several_timelines():
    a = block(0, 20, (10, 1, 0))
    b = Timeline([Step(-5, Resources(1, 0, 0)), Step(10, Resources(2, 0, 1)), Step(30, Resources(0, 0, 0))])
    stretches = [(s.from_ms, s.to_ms, s.amounts[0][0], s.amounts[1][0]) for s in sharing.walk((a, b), -10, 40)]
    assert stretches == [(-10, -5, 0, 0), (-5, 0, 0, 1), (0, 10, 10, 1), (10, 20, 10, 2), (20, 30, 0, 2), (30, 40, 0, 0)]
    cut = [(s.from_ms, s.to_ms) for s in sharing.walk((a, b), 5, 15)]
    assert cut == [(5, 10), (10, 15)]
    assert list(sharing.walk((a,), 7, 7)) == []
    assert a.amount_at(5) == Resources(10, 1, 0) and a.amount_at(-1) == Resources(0, 0, 0)


def test_builder_leaves_out_steps_that_change_nothing():
    builder = sharing.TimelineBuilder()
    builder.push(0, Resources(0, 0, 0))
    builder.push(5, Resources(3, 0, 0))
    builder.push(7, Resources(3, 0, 0))
    builder.push(9, Resources(1, 0, 0))
    assert builder.finish(12).at_ms == [5, 9, 12]
    assert sharing.TimelineBuilder().finish(10) == Timeline()


def test_window_must_be_a_whole_number_of_ms():
    assert sharing.checked_window(5) == 5
    for bad in (-1, 1.5, True, 2**53):
        with pytest.raises(ValueError, match="window is"):
            sharing.checked_window(bad)
