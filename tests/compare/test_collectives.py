"""Communication ops followed across ranks: a rank that only received a divergence through a
collective points to the rank whose input to that collective diverged (msprobe's analyzer)."""

from __future__ import annotations

import pytest

from tensorsight.compare.collectives import collective_kind, follow
from tensorsight.compare.pairs import PairResult
from tensorsight.compare.result import OpComparison


@pytest.mark.parametrize(
    ("op", "kind"),
    [
        ("c10d.allreduce_.default", "all_reduce"),
        ("c10d.allgather_.default", "all_gather"),
        ("c10d._allgather_base_.default", "all_gather"),
        ("c10d.reduce_scatter_.default", "reduce_scatter"),
        ("c10d._reduce_scatter_base_.default", "reduce_scatter"),
        ("c10d.broadcast_.default", "broadcast"),
        ("c10d.alltoall_.default", "all_to_all"),
        ("_c10d_functional.all_reduce.default", "all_reduce"),
        ("_c10d_functional.all_gather_into_tensor.default", "all_gather"),
        ("Distributed.all_reduce.3.forward", "all_reduce"),
        ("aten.broadcast_tensors.default", None),
        ("c10d.barrier.default", None),
        ("Functional.linear.0.forward", None),
    ],
)
def test_collective_kinds_as_dumps_name_them(op, kind):
    assert collective_kind(op) == kind


def _row(rank, index, op, tensor, error, *, verdict="pass", budget=1e-6):
    return OpComparison(
        index=index, op=op, module_path="m", direction="forward", tensor=tensor,
        rank=rank, verdict=verdict, error=error, budget=budget,
    )  # fmt: skip


def _pair(rank, rows):
    first = next((i for i, r in enumerate(rows) if r.verdict == "error"), None)
    return PairResult(rank, tuple(rows), first)


AR = "c10d.allreduce_.default"


def test_the_chain_stops_where_every_input_of_the_call_agreed():
    # rank 0 receives at all_reduce call 0 what rank 1 sent into it; rank 1's own first
    # divergence is its broadcast's output, where every rank's input agreed
    r0 = _pair(0, [
        _row(0, 1, AR, "input.0", 0.0), _row(0, 1, AR, "output.0", 0.3, verdict="error"),
    ])  # fmt: skip
    r1 = _pair(1, [
        _row(1, 2, AR, "input.0", 0.3), _row(1, 2, AR, "output.0", 0.3),  # sent on
        _row(1, 5, "c10d.broadcast_.default", "input.0", 0.0),
        _row(1, 5, "c10d.broadcast_.default", "output.0", 0.3, verdict="error"),
    ])  # fmt: skip
    r2 = _pair(2, [
        _row(2, 1, "c10d.broadcast_.default", "input.0", 0.0),
        _row(2, 1, "c10d.broadcast_.default", "output.0", 0.0),
        _row(2, 7, "aten.mm.default", "output.0", 0.3, verdict="error"),
        _row(2, 8, AR, "input.0", 0.3), _row(2, 8, AR, "output.0", 0.3),
    ])  # fmt: skip
    at, hops = follow([r0, r1, r2], 0)
    assert [(h.rank, h.kind, h.ordinal, h.source) for h in hops] == [(0, "all_reduce", 0, 1)]
    assert at == 1  # rank 1's broadcast: every input of that call agreed, so it stops there


def test_the_sender_is_found_through_two_hops():
    bc = "c10d.broadcast_.default"
    r0 = _pair(
        0, [_row(0, 1, bc, "input.0", 0.0), _row(0, 1, bc, "output.0", 0.2, verdict="error")]
    )
    r1 = _pair(1, [
        _row(1, 2, AR, "input.0", 0.0), _row(1, 2, AR, "output.0", 0.2, verdict="error"),
        _row(1, 3, bc, "input.0", 0.2), _row(1, 3, bc, "output.0", 0.2),
    ])  # fmt: skip
    r2 = _pair(2, [
        _row(2, 4, "aten.addmm.default", "output.0", 0.2, verdict="error"),
        _row(2, 5, AR, "input.0", 0.2), _row(2, 5, AR, "output.0", 0.2),
        _row(2, 6, bc, "input.0", 0.0), _row(2, 6, bc, "output.0", 0.0),
    ])  # fmt: skip
    at, hops = follow([r0, r1, r2], 0)
    assert [(h.rank, h.kind, h.source) for h in hops] == [(0, "broadcast", 1), (1, "all_reduce", 2)]
    assert at == 2


def test_no_hop_when_the_ranks_own_input_diverged_or_every_input_agreed():
    own = _pair(
        0, [_row(0, 1, AR, "input.0", 0.5), _row(0, 1, AR, "output.0", 0.5, verdict="error")]
    )
    other = _pair(1, [_row(1, 1, AR, "input.0", 0.5), _row(1, 1, AR, "output.0", 0.5)])
    assert follow([own, other], 0) == (0, [])
    quiet = _pair(
        0, [_row(0, 1, AR, "input.0", 0.0), _row(0, 1, AR, "output.0", 1e-3, verdict="error")]
    )
    calm = _pair(1, [_row(1, 1, AR, "input.0", 1e-7), _row(1, 1, AR, "output.0", 1e-3)])
    assert follow([quiet, calm], 0) == (0, [])  # the reduction itself differs
    local = _pair(0, [_row(0, 1, "aten.mm.default", "output.0", 0.5, verdict="error")])
    assert follow([local, other], 0) == (0, [])


@pytest.fixture(scope="module")
def broadcast_dumps(tmp_path_factory):
    pytest.importorskip("torch")
    from tests.compare._collective_ranks import make_collective_dumps

    return make_collective_dumps(tmp_path_factory.mktemp("broadcast"))


def _check(result):
    first = result.rows[result.first_divergence_row]
    assert (first.rank, first.op, first.module_path) == (1, "aten.t.default", "Sequential.2")
    advice = result.advice[0]
    assert advice.mechanism == "collective-input"
    assert advice.row == result.first_divergence_row
    assert "Rank 0's first divergence is the output of broadcast call 0" in advice.evidence
    assert "diverged on rank 1" in advice.evidence
    # what execution order alone would have named: rank 0's broadcast, at an earlier index
    received = next(r for r in result.rows if r.rank == 0 and r.verdict == "error")
    assert received.op == "c10d.broadcast_.default"
    assert received.tensor.startswith("output")
    assert (received.index or 0) < (first.index or 0)


@pytest.mark.integration
def test_compare_follows_the_broadcast_to_the_rank_that_sent_the_bug(broadcast_dumps):
    from tensorsight.compare import compare

    _check(compare(broadcast_dumps["bench"], broadcast_dumps["target"], executor="serial"))


@pytest.mark.integration
def test_merge_follows_it_too(broadcast_dumps, tmp_path):
    pytest.importorskip("pyarrow")
    from tensorsight.compare.spmd import Slot, merge, run_spmd

    for i in range(2):
        run_spmd(
            broadcast_dumps["bench"], broadcast_dumps["target"], tmp_path / "res",
            slot=Slot(i, 2, "test"),
        )  # fmt: skip
    merged = merge(tmp_path / "res")
    _check(merged)
    assert merged.to_json()  # the reports carry it
