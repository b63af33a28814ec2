"""Arguments two paired calls were given differently are named in the error reason."""

from __future__ import annotations

import json

import pytest

from tensorsight.compare._argdiff import argument_difference, parse_args


def _diff(bench: dict, target: dict) -> str | None:
    return argument_difference(parse_args(json.dumps(bench)), parse_args(json.dumps(target)))


def test_a_changed_eps_is_named():
    bench = {"input": {"tensor": "input.0"}, "normalized_shape": [32], "eps": 1e-05}
    target = {**bench, "eps": 1.0}
    assert _diff(bench, target) == "eps=1e-05 (bench) vs eps=1 (target)"


@pytest.mark.parametrize(
    ("bench", "target"),
    [
        # autocast: other dtypes, other tensors, by design
        (
            {"self": {"tensor": "input.0"}, "dtype": {"dtype": "float32"}},
            {"self": {"tensor": "input.0"}, "dtype": {"dtype": "bfloat16"}},
        ),
        ({"other": {"tensor": "input.1"}}, {"other": {"tensor": "input.2"}}),
        ({"device": {"device": "cpu"}}, {"device": {"device": "cuda:0"}}),
        ({"value": -0.001}, {"value": -0.0010000000001}),  # recomputed step size
        ({"pin_memory": False}, {"pin_memory": None}),  # unset optional flag
        ({"eps": {"float": "nan"}}, {"eps": {"float": "nan"}}),
        ({"dims": [1, 2]}, {"dims": [1, 2]}),
        ({"a": 1, "new_in_this_schema": 2}, {"a": 1}),
    ],
)
def test_what_differs_by_design_or_rounding_is_not_reported(bench, target):
    assert _diff(bench, target) is None


def test_lists_bools_and_strings_are_compared_exactly_and_long_lists_are_cut():
    assert _diff({"dim": [-1]}, {"dim": [0]}) == "dim=[-1] (bench) vs dim=[0] (target)"
    assert _diff({"approximate": "none"}, {"approximate": "tanh"}) == (
        'approximate="none" (bench) vs approximate="tanh" (target)'
    )
    assert _diff({"keepdim": True}, {"keepdim": False}) is not None
    many = {f"a{i}": i for i in range(5)}
    text = _diff(many, {k: v + 1 for k, v in many.items()})
    assert text is not None
    assert text.endswith(" and 2 more")


@pytest.mark.parametrize("text", [None, "", "not json", "[1, 2]", '{"__omitted__": 9000}'])
def test_unrecorded_or_unreadable_arguments_say_nothing(text):
    assert parse_args(text) is None
    assert argument_difference(parse_args(text), {"eps": 1.0}) is None
