"""data_flow(): one DataFlow per tuple of ops while it is asked for again, none for lists."""

from __future__ import annotations

from tensorsight.compare.flow import data_flow, forget_flows
from tensorsight.dumpformat.schema import OpRecord, TensorRecord, TensorStats


def _ops() -> tuple[OpRecord, ...]:
    stats = TensorStats(min=0.0, max=1.0, mean=0.5, norm=2.0)
    out = TensorRecord(0, "aten.exp.default", "forward", "m", "output.0", (4,), "float32",
                       stats=stats)  # fmt: skip
    inp = TensorRecord(1, "aten.neg.default", "forward", "m", "input.0", (4,), "float32",
                       stats=stats)  # fmt: skip
    return (
        OpRecord(0, "aten.exp.default", "forward", "m", (out,)),
        OpRecord(1, "aten.neg.default", "forward", "m", (inp,)),
    )


def test_a_tuple_shares_its_flow_until_forgotten_and_a_list_never_does():
    ops = _ops()
    flow = data_flow(ops)
    assert data_flow(ops) is flow
    assert flow.producer(1, "input.0") is not None  # the edge by statistics
    assert data_flow(list(ops)) is not data_flow(list(ops))
    forget_flows()
    assert data_flow(ops) is not flow
    forget_flows()


def test_statistics_identities_are_exact_and_nan_equal():
    from tensorsight.compare.flow import tensor_identity

    def rec(lo: float, mean: float) -> TensorRecord:
        stats = TensorStats(min=lo, max=1.0, mean=mean, norm=2.0, nan_count=1)
        return TensorRecord(0, "aten.exp.default", "forward", "m", "output.0", (4,), "float32",
                            stats=stats)  # fmt: skip

    nan = float("nan")
    assert tensor_identity(rec(-1.0, nan)) == tensor_identity(rec(-1.0, -nan))  # NaN is NaN
    assert tensor_identity(rec(-0.0, 0.5)) != tensor_identity(rec(0.0, 0.5))  # as repr kept
    assert tensor_identity(rec(0.1, 0.5)) != tensor_identity(rec(0.1 + 2**-56, 0.5))
