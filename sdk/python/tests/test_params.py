"""Params: typed readers, bounds, and the refusal of unknown keys."""

import pytest

from weft_policy import ParamError, Params
from weft_policy.params import MAX_KEY_CHARS, MAX_PARAMS, MAX_VALUE_CHARS


def test_typed_readers_take_the_last_value_or_the_default():
    params = Params(
        [("rate", "1"), ("rate", " 2.5 "), ("count", "-3"), ("mode", "fast"), ("on", "true")],
        "demo",
    )
    assert params.number("rate", 0.0) == 2.5
    assert params.integer("count", 0) == -3
    assert params.string("mode", "slow", choices=("slow", "fast")) == "fast"
    assert params.boolean("on", False) is True
    assert params.number("absent", 7.0) == 7.0
    assert params.given("rate") and not params.given("absent")
    params.refuse_unknown()


@pytest.mark.parametrize(
    "reader, value, words",
    [
        (lambda p: p.number("k", 0, min=0), "-1", "demo: k must be a number at least 0, not '-1'"),
        (lambda p: p.number("k", 0), "nan", "k must be a number, not 'nan'"),
        (lambda p: p.number("k", 0), "1e999", "k must be a number"),
        (lambda p: p.number("k", 0, min=0, max=1), "2", "from 0 to 1"),
        (lambda p: p.integer("k", 0, max=9), "10", "a whole number at most 9"),
        (lambda p: p.integer("k", 0), "1.5", "a whole number"),
        (lambda p: p.string("k", "a", choices=("a", "b")), "c", "k must be a or b, not 'c'"),
        (lambda p: p.boolean("k", False), "yes", "k must be true or false, not 'yes'"),
    ],
)
def test_bad_values_are_refused_naming_the_key(reader, value, words):
    with pytest.raises(ParamError) as refusal:
        reader(Params([("k", value)], "demo"))
    assert words in str(refusal.value)


def test_unknown_keys_are_refused_but_standard_ones_ignored():
    params = Params([("price.base.gpu", "2"), ("rate", "1"), ("discount", "10")], "demo", ("price.base.gpu",))
    params.number("rate", 0)
    assert params.unknown() == ["discount"]
    with pytest.raises(ParamError, match=r"demo has no parameter 'discount' \(given discount=10\); it takes rate"):
        params.refuse_unknown()


@pytest.mark.parametrize(
    "pairs, words",
    [
        ([("k", "v")] * (MAX_PARAMS + 1), f"at most {MAX_PARAMS} parameters"),
        ([("k" * (MAX_KEY_CHARS + 1), "v")], f"longer than {MAX_KEY_CHARS} characters"),
        ([("k", "v" * (MAX_VALUE_CHARS + 1))], f"the value of k is longer than {MAX_VALUE_CHARS}"),
    ],
)
def test_oversized_input_is_refused(pairs, words):
    with pytest.raises(ParamError, match=words):
        Params(pairs, "demo")


def test_a_family_of_keys_is_read_by_prefix():
    params = Params(
        [("project.ml", "2"), ("night.factor", "0.5"), ("project.web", "1"), ("project.ml", " 3 "), ("other", "x")],
        "demo",
    )
    assert params.with_prefix("project.") == [("ml", "3"), ("web", "1")]
    assert params.number("project.ml", 1.0) == 3.0
    params.number("night.factor", 1.0)
    assert params.unknown() == ["other"]
    words = r"has no parameter 'other' \(given other=x\); it takes night.factor, project.\*$"
    with pytest.raises(ParamError, match=words):
        params.refuse_unknown()
    assert Params([], "demo").with_prefix("project.") == []
