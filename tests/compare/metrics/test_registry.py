from __future__ import annotations

import numpy as np
import pytest

from tensorsight.compare.metrics import BUILTIN_KEYS, METRICS, get_metric, register_metric
from tensorsight.errors import RegistryError


def test_every_builtin_key_is_registered_with_its_direction():
    for key in BUILTIN_KEYS:
        spec = get_metric(key)
        assert spec.builtin
        assert spec.doc
    assert get_metric("cosine").higher_is_better
    assert get_metric("within_5e-3").higher_is_better
    assert not get_metric("rmse").higher_is_better


def test_builtin_function_computes_its_metric():
    assert get_metric("max_abs_err").func(np.zeros(3), np.array([0.0, 2.0, -3.0])) == 3.0


def test_register_custom_metric_and_duplicates():
    @register_metric("test_registry_sum_diff", higher_is_better=False)
    def sum_diff(bench, target):
        """Sum of differences."""
        return float((target - bench).sum())

    spec = get_metric("test_registry_sum_diff")
    assert spec.func is sum_diff
    assert spec.doc == "Sum of differences."
    assert "test_registry_sum_diff" in METRICS.names()
    with pytest.raises(RegistryError, match="registered twice"):
        register_metric("test_registry_sum_diff", higher_is_better=False)(sum_diff)


def test_unknown_metric_suggests_a_close_name():
    with pytest.raises(RegistryError, match="Did you mean 'cosine'"):
        get_metric("cosin")
