"""The adapters' shared helpers (no framework needed): their docstring examples and edges."""

from __future__ import annotations

import doctest

import numpy as np

from tensorsight.integrations import _common
from tensorsight.integrations._common import flatten_hparams, scalar_items


def test_docstring_examples_run():
    assert doctest.testmod(_common).failed == 0


def test_hparams_keep_plain_values_and_stringify_the_rest():
    flat = flatten_hparams({"a": {"b": {"c": 1}}, "f": np.float32(0.5), "arr": np.zeros(3)})
    assert flat["a/b/c"] == 1
    assert flat["f"] == 0.5
    assert isinstance(flat["arr"], str)  # not one number: readable text, not an error


def test_scalar_items_skip_text_and_multi_element_arrays():
    got = dict(scalar_items({"x": np.array([2.0]), "v": np.ones(2), "s": "a", "i": 3}))
    assert got == {"x": 2.0, "i": 3.0}
