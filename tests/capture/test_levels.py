"""Levels module and api, and the backend registry."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tensorsight
from tensorsight.capture import read_dump
from tensorsight.capture.backends import CAPTURE_BACKENDS, CaptureBackend, levels
from tests.capture.conftest import train_step


def test_module_level_records_forward_and_backward_per_module(tmp_path, model, batch):
    with tensorsight.dump(tmp_path / "d", level="module", mode="tensor"):
        train_step(model, batch)
    step = read_dump(tmp_path / "d").step()
    fwd = [(o.op, o.module_path) for o in step.ops if o.direction == "forward"]
    assert fwd == [
        ("Linear", "TinyMLP.layers.0"),
        ("ReLU", "TinyMLP.layers.1"),
        ("Linear", "TinyMLP.layers.2"),
        ("Sequential", "TinyMLP.layers"),
        ("TinyMLP", "TinyMLP"),
    ]
    bwd = [o for o in step.ops if o.direction == "backward" and o.op != "tensorsight.param_grad"]
    paths = [o.module_path for o in bwd]
    assert set(paths[:2]) == {"TinyMLP", "TinyMLP.layers"}  # their inputs need no grad
    # layers.0 needs no input grad, so it is recorded as soon as its incoming grad exists,
    # which happens together with the end of layers.1's backward
    assert paths[2] == "TinyMLP.layers.2"
    assert set(paths[3:]) == {"TinyMLP.layers.1", "TinyMLP.layers.0"}
    lin2 = next(o for o in bwd if o.module_path == "TinyMLP.layers.2")
    # grad flowing in (input.0) has the output's shape; grad flowing out has the input's
    assert lin2.tensors[0].tensor == "input.0"
    assert lin2.tensors[0].shape == (3, 2)
    assert lin2.outputs[0].shape == (3, 8)
    out0 = next(o for o in step.ops if o.module_path == "TinyMLP.layers.0").outputs[0]
    np.testing.assert_allclose(step.load(out0), model.layers[0](batch).detach().numpy())
    assert any(o.op == "tensorsight.param_grad" for o in step.ops)
    step.close()


def test_api_level_records_torch_calls_forward_only(tmp_path, model, batch):
    with tensorsight.dump(tmp_path / "d", level="api"):
        train_step(model, batch)
    step = read_dump(tmp_path / "d").step()
    names = [(o.op, o.module_path) for o in step.ops]
    assert ("torch.nn.functional.linear", "TinyMLP.layers.0") in names
    assert ("torch.nn.functional.relu", "TinyMLP.layers.1") in names
    assert ("torch.Tensor.pow", "") in names
    assert {o.direction for o in step.ops} == {"forward"}
    assert not any(o.op.endswith(("__get__", ".dim", ".size")) for o in step.ops)


def test_hooks_are_removed_after_capture(tmp_path, model, batch):
    from torch.nn.modules import module as nn_module

    before = (len(nn_module._global_forward_hooks), len(nn_module._global_forward_pre_hooks))
    for level in ("op", "module", "api"):
        with tensorsight.dump(tmp_path / level, level=level):
            train_step(model, batch)
    after = (len(nn_module._global_forward_hooks), len(nn_module._global_forward_pre_hooks))
    assert before == after
    assert len(nn_module._global_backward_hooks) == 0
    assert all(not p._post_accumulate_grad_hooks for p in model.parameters())


def test_registry_lists_the_three_torch_levels():
    assert CAPTURE_BACKENDS.names()[:3] == ["op", "module", "api"]
    for name in ("op", "module", "api"):
        cls = CAPTURE_BACKENDS.get(name)
        assert issubclass(cls, CaptureBackend)
        assert cls.level == name


def test_backend_refuses_a_double_start(tmp_path):
    from tensorsight.errors import CaptureError

    with tensorsight.dump(tmp_path / "d") as d:
        with pytest.raises(CaptureError, match="start\\(\\) called twice"):
            d._backend.start()
        torch.ones(1) + 1


@pytest.mark.parametrize("name", levels())
def test_contract_every_registered_backend(tmp_path, name, model, batch):
    """What compare relies on, for every registered backend."""
    with tensorsight.dump(tmp_path / "d", level=name, mode="md5") as d:
        d.run_step(train_step, model, batch)
    dump = read_dump(tmp_path / "d")
    assert dump.complete
    assert dump.manifest().level == name
    step = dump.step()
    ops = step.ops
    assert ops
    assert [o.index for o in ops] == list(range(len(ops)))
    first_backward = next((i for i, o in enumerate(ops) if o.direction == "backward"), len(ops))
    assert all(o.direction == "forward" for o in ops[:first_backward])
    for op in ops:
        assert op.direction in ("forward", "backward")
        names = [t.tensor for t in op.tensors]
        assert len(names) == len(set(names)), op
        for t in op.tensors:
            assert t.dtype
            assert t.fingerprint is not None
            assert t.stats is not None or t.numel == 0
