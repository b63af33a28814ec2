from __future__ import annotations

import json

import pytest

from tensorsight.compare.match import load_mapping, match_ops
from tensorsight.dumpformat.schema import OpRecord, TensorRecord
from tensorsight.errors import InputFileError, UsageError


def _op(index, name, module="M", direction="forward", shape=(2,)):
    t = (
        TensorRecord(index, name, direction, module, "input.0", shape, "float32"),
        TensorRecord(index, name, direction, module, "output.0", shape, "float32"),
    )
    return OpRecord(index, name, direction, module, t)


def test_inserted_casts_do_not_shift_pairs():
    bench = [_op(0, "aten.mm"), _op(1, "aten.relu"), _op(2, "aten.mm")]
    target = [
        _op(0, "aten._to_copy"), _op(1, "aten.mm"), _op(2, "aten.relu"),
        _op(3, "aten._to_copy"), _op(4, "aten.mm"),
    ]  # fmt: skip
    pairs = match_ops(bench, target)
    matched = [(p.bench[0].index, p.target[0].index) for p in pairs if p.how == "name"]
    assert matched == [(0, 1), (1, 2), (2, 4)]
    unmatched = [p for p in pairs if p.how == "unmatched"]
    assert len(unmatched) == 2
    assert all("autocast" in p.reason for p in unmatched)


def test_in_place_variants_and_reshape_aliases_pair_with_their_op():
    """What a dispatch mode changes (the Python capture path) still pairs with the native one."""
    bench = [_op(0, "aten.mm.default"), _op(1, "aten.add.Tensor", direction="backward"),
             _op(2, "aten.view.default", direction="backward")]  # fmt: skip
    target = [_op(0, "aten.mm.default"), _op(1, "aten.add_.Tensor", direction="backward"),
              _op(2, "aten._reshape_alias.default", direction="backward")]  # fmt: skip
    pairs = match_ops(bench, target)
    assert [(p.bench[0].op, p.target[0].op, p.how) for p in pairs] == [
        ("aten.mm.default", "aten.mm.default", "name"),
        ("aten.add.Tensor", "aten.add_.Tensor", "name"),
        ("aten.view.default", "aten._reshape_alias.default", "name"),
    ]
    # dunder names and other namespaces keep their names
    from tensorsight.compare.match import op_family

    assert op_family("aten.__and__.Tensor") == "aten.__and__.Tensor"
    assert op_family("aten._foreach_add_.List") == "aten._foreach_add.List"
    assert op_family("c10d.allreduce_.default") == "c10d.allreduce_.default"
    assert op_family("tensorsight.param_grad") == "tensorsight.param_grad"


def test_extra_call_of_one_op_keeps_later_pairs_right():
    bench = [_op(0, "a"), _op(1, "b"), _op(2, "c")]
    target = [_op(0, "a"), _op(1, "b"), _op(2, "b"), _op(3, "c")]
    pairs = match_ops(bench, target)
    c = next(p for p in pairs if p.bench and p.bench[0].op == "c")
    assert c.target[0].index == 3
    assert sum(p.how == "unmatched" for p in pairs) == 1


def test_reordered_ops_pair_by_key_and_directions_stay_apart():
    bench = [
        _op(0, "f"),
        _op(1, "g", shape=(3,), direction="backward"),
        _op(2, "g", direction="backward"),
    ]
    target = [
        _op(0, "f"),
        _op(1, "g", direction="backward"),
        _op(2, "g", shape=(3,), direction="backward"),
    ]
    pairs = match_ops(bench, target)
    for p in pairs:
        assert p.bench
        assert p.target
        assert p.bench[0].tensors[0].shape == p.target[0].tensors[0].shape
        assert p.bench[0].direction == p.target[0].direction


def test_every_op_appears_exactly_once():
    bench = [_op(i, n) for i, n in enumerate("abcxd")]
    target = [_op(i, n) for i, n in enumerate("abyycd")]
    pairs = match_ops(bench, target)
    assert sorted(o.index for p in pairs for o in p.bench) == list(range(5))
    assert sorted(o.index for p in pairs for o in p.target) == list(range(6))


def test_user_mapping_n_to_m(tmp_path):
    bench = [_op(0, "fused", module="M.blk"), _op(1, "out")]
    target = [_op(0, "part1", module="M.blk"), _op(1, "part2", module="M.blk"), _op(2, "out")]
    path = tmp_path / "map.yaml"
    path.write_text("- bench: fused@M.blk\n  target: ['#0', '#1']\n", encoding="utf-8")
    pairs = match_ops(bench, target, load_mapping(path))
    mapped = next(p for p in pairs if p.how == "mapping")
    assert [o.index for o in mapped.target] == [0, 1]
    assert next(p for p in pairs if p.bench and p.bench[0].op == "out").how == "name"
    bad = [{"bench": ["#7"], "target": ["#0"]}]
    with pytest.raises(UsageError, match="Mapping selector '#7'"):
        match_ops(bench, target, bad)


def test_bad_mapping_files(tmp_path):
    with pytest.raises(InputFileError, match="cannot be read"):
        load_mapping(tmp_path / "nope.json")
    p = tmp_path / "m.json"
    p.write_text(json.dumps({"bench": "a"}), encoding="utf-8")
    with pytest.raises(InputFileError, match="not a list"):
        load_mapping(p)
    p.write_text(json.dumps([{"bench": "a"}]), encoding="utf-8")
    with pytest.raises(InputFileError, match="Expected keys 'bench' and 'target'"):
        load_mapping(p)
    p.write_text("[{", encoding="utf-8")
    with pytest.raises(InputFileError, match="cannot be parsed"):
        load_mapping(p)
