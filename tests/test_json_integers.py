"""Integral floats fill integer fields of strict request bodies, and nothing else changes."""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from coordinator.json_integers import WholeNumbers, whole_numbers


class Inner(WholeNumbers):
    model_config = ConfigDict(strict=True)
    n: int = 0


class Body(WholeNumbers):
    model_config = ConfigDict(strict=True, extra="forbid")
    count: int = Field(0, ge=0)
    maybe: int | None = None
    ratio: float = 0.0
    value: Any = None
    many: list[int] = Field(default_factory=list)
    per: dict[str, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)
    inner: Inner = Field(default_factory=Inner)


def test_integral_floats_become_ints_where_the_field_is_an_integer() -> None:
    body = Body.model_validate_json(
        json.dumps(
            {
                "count": 3.0,
                "maybe": 4.0,
                "ratio": 2.0,
                "value": [1.0],
                "many": [1.0, 2],
                "per": {"a": 5.0},
                "inner": {"n": 6.0},
            }
        )
    )
    assert (body.count, body.maybe, body.many, body.per, body.inner.n) == (3, 4, [1, 2], {"a": 5}, 6)
    assert isinstance(body.ratio, float) and body.value == [1.0] and isinstance(body.value[0], float)


@pytest.mark.parametrize("bad", [True, "3", 3.5, float("inf"), None])
def test_other_values_are_still_refused(bad: Any) -> None:
    with pytest.raises(ValidationError, match="count"):
        Body.model_validate({"count": bad})


@given(st.floats(allow_nan=False, allow_infinity=False) | st.integers() | st.text() | st.booleans())
def test_fields_that_are_not_integers_are_left_alone(x: Any) -> None:
    assert whole_numbers(Body, {"ratio": x, "value": x}) == {"ratio": x, "value": x}


@given(st.integers(-(10**12), 10**12))
def test_an_integer_written_as_a_float_reads_as_that_integer(n: int) -> None:
    assert Body.model_validate({"many": [float(n)]}).many == [n]


def test_a_plain_model_is_read_through_its_annotations() -> None:
    """``paramcheck`` uses ``whole_numbers`` on a kind's own ``Params``, which knows nothing of this."""

    class Params(BaseModel):
        blocks: int = 1
        nested: Inner | None = None

        pair: tuple[int, float] = (0, 0.0)
        rows: tuple[int, ...] = ()

    got = whole_numbers(Params, {"blocks": 2.0, "nested": {"n": 1.0}, "pair": [7.0, 8.0], "rows": [1.0, 2]})
    assert got == {"blocks": 2, "nested": {"n": 1}, "pair": [7, 8.0], "rows": [1, 2]}
    assert isinstance(got["pair"][1], float)
    untouched = {"blocks": 2, "pair": [7, 8.0]}
    assert whole_numbers(Params, untouched) is untouched  # nothing to change: the input goes on as it came
