"""The side-by-side trace on comparisons whose structures really differ.

Each comparison is made the way a user makes one: a torch model trained for one step under
``tensorsight.dump``, twice, then ``tensorsight.compare``: fp32 against bf16 autocast (casts
on one side), against a model that calls one module twice (an extra call), and against one
that skips its LayerNorm (a missing module); plus a run against itself.
"""

from __future__ import annotations

import math
from itertools import takewhile
from pathlib import Path

import pytest

from tensorsight.board.views.comparison import rows, table, trace_page, upstream
from tensorsight.board.views.comparison.trace import Trace
from tensorsight.board.views.comparison.trace_types import MAX_DIFFS, TraceQuery
from tensorsight.data import ComparisonStore

STRUCTURES = ("autocast", "extra-call", "missing-module", "same")


def make_structure_logdir(logdir: Path) -> Path:
    """Dump fp32, bf16-autocast, extra-call, missing-module and a repeat of fp32; compare
    each against fp32 into ``compare/<name>/comparison.json``."""
    import torch

    from tensorsight.capture import dump
    from tensorsight.compare import compare

    class Net(torch.nn.Module):
        def __init__(self, extra_call: bool, drop_norm: bool) -> None:
            super().__init__()
            self.inp = torch.nn.Linear(16, 32)
            self.norm = torch.nn.LayerNorm(32)
            self.block = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.GELU())
            self.head = torch.nn.Linear(32, 4)
            self.extra_call, self.drop_norm = extra_call, drop_norm

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.inp(x)
            if not self.drop_norm:
                h = self.norm(h)
            h = self.block(torch.relu(h))
            if self.extra_call:
                h = self.block(h)
            return self.head(h)

    def step(name: str, *, autocast: bool = False, extra: bool = False, drop: bool = False) -> Path:
        torch.manual_seed(0)
        model = Net(extra, drop)
        x = torch.randn(8, 16, generator=torch.Generator().manual_seed(1))
        path = logdir / "dumps" / name
        with dump(path, mode="tensor", steps=[0], overwrite=True):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                loss = model(x).float().square().mean()
            loss.backward()
        return path

    bench = step("fp32")
    targets = {
        "autocast": step("bf16", autocast=True),
        "extra-call": step("extra", extra=True),
        "missing-module": step("nonorm", drop=True),
        "same": step("fp32-again"),
    }
    for name, target in targets.items():
        out = logdir / "compare" / name
        out.mkdir(parents=True)
        compare(bench, target, jobs=1).to_json(out / "comparison.json")
    return logdir


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> ComparisonStore:
    return ComparisonStore(make_structure_logdir(tmp_path_factory.mktemp("structures")))


def everything(store: ComparisonStore, name: str, **kw):
    return trace_page(store, f"compare/{name}", TraceQuery(fold="none", limit=10**6, **kw))


def ops(page, status: str | None = None):
    return [
        line
        for line in page.lines
        if line.kind == "op" and (status is None or line.status == status)
    ]


@pytest.mark.parametrize("name", STRUCTURES)
def test_every_op_of_both_sides_appears_once_in_its_own_order(store, name) -> None:
    from tensorsight.capture import read_dump

    page = everything(store, name)
    doc = store._entry(f"compare/{name}").comparison  # the Comparison behind the store
    for side in ("bench", "target"):
        path = doc.bench if side == "bench" else doc.target
        step = read_dump(path).step(0, None)
        try:
            n_ops = len(step.ops)
        finally:
            step.close()
        mine = [getattr(line, side) for line in ops(page) if getattr(line, side) is not None]
        assert len(mine) == n_ops == page.counts[f"{side}_ops"]
        for direction in ("forward", "backward"):
            order = [
                getattr(line, side).index
                for line in ops(page)
                if getattr(line, side) is not None
                and line.direction == direction
                and not (side == "target" and line.moved)
            ]
            assert order == sorted(order), (side, direction)
            assert len(set(order)) == len(order)


def test_autocast_casts_sit_on_the_target_side_before_the_ops_that_use_them(store) -> None:
    page = everything(store, "autocast")
    extra = ops(page, "target")
    assert extra
    assert {line.target.op for line in extra} == {"aten._to_copy.default"}
    assert all(line.bench is None and line.side == "target" for line in extra)
    assert page.counts["bench"] == 0
    # in Net.inp the weight, bias and input casts come first, then the matmul
    inp = [line for line in ops(page) if line.path == "Net.inp" and line.direction == "forward"]
    names = [line.target.op for line in inp]
    assert names[:3] == ["aten._to_copy.default"] * 3
    assert names[-1] == "aten.addmm.default"
    addmm = inp[-1]
    assert (addmm.bench.dtype, addmm.target.dtype) == ("float32", "bfloat16")
    assert addmm.status == "matched"
    # the Net.inp scope differs, the norm scope (no casts: LayerNorm runs in fp32) does not
    scopes = {(line.path, line.direction): line for line in page.lines if line.kind == "scope"}
    assert scopes[("Net.inp", "forward")].status == "differs"
    assert scopes[("Net.inp", "forward")].counts["target"] == 3
    assert scopes[("Net.norm", "forward")].status == "same"


def test_an_extra_module_call_is_a_scope_present_on_the_target_side_only(store) -> None:
    page = everything(store, "extra-call", directions=("forward",))
    only = [line for line in page.lines if line.kind == "scope" and line.side == "target"]
    assert {line.path for line in only} == {"Net.block.0", "Net.block.1"}
    second = [line for line in ops(page, "target")]
    assert [line.target.op for line in second] == [
        "aten.t.default",
        "aten.addmm.default",
        "aten.gelu.default",
    ]
    # the second call sits between the first call and the head, as it ran
    order = [(line.path, line.status) for line in ops(page) if line.path.startswith("Net.")]
    first_extra = order.index(("Net.block.0", "target"))
    assert order[first_extra - 1] == ("Net.block.1", "matched")
    assert order[first_extra + 3][0] == "Net.head"
    assert all(line.kind != "direction" or line.direction == "forward" for line in page.lines)


def test_a_missing_module_is_a_scope_present_on_the_bench_side_only(store) -> None:
    page = everything(store, "missing-module")
    norm = [line for line in page.lines if line.kind == "scope" and line.path == "Net.norm"]
    assert norm
    assert {line.side for line in norm} == {"bench"}
    assert {line.status for line in norm} == {"differs"}
    gone = ops(page, "bench")
    assert "aten.native_layer_norm.default" in {line.bench.op for line in gone}
    assert all(line.target is None for line in gone)
    # the first divergence comes after the missing op: the board says so
    info = store.info("compare/missing-module")
    assert info.first_divergence is not None
    up = upstream(store, "compare/missing-module", info.first_divergence)
    assert up.count >= 1
    assert up.side == "bench"
    assert up.op == "aten.native_layer_norm.default"
    assert up.module_path == "Net.norm"
    assert table(store, "compare/missing-module").row(up.position)["op"] == up.op


def test_same_structure_folds_to_a_few_lines(store) -> None:
    folded = trace_page(store, "compare/same", TraceQuery())
    assert folded.diffs == ()
    assert folded.counts["matched"] == folded.counts["bench_ops"] == folded.counts["target_ops"]
    assert all(line.status in ("matched", "same") for line in folded.lines)
    full = everything(store, "same")
    assert folded.total < full.total / 2
    scopes = [line for line in folded.lines if line.kind == "scope"]
    assert scopes
    assert all(line.folded for line in scopes)
    info = store.info("compare/same")
    assert info.first_divergence is None
    assert info.counts["warning"] == info.counts["error"] == 0


def test_folds_toggles_and_jumping_to_a_row(store) -> None:
    name = "compare/extra-call"
    first = trace_page(store, name, TraceQuery())
    scope = next(line for line in first.lines if line.kind == "scope" and line.folded)
    assert scope.status == "same"
    opened = trace_page(store, name, TraceQuery(toggles=frozenset({scope.id})))
    at = [line.id for line in opened.lines].index(scope.id)
    assert not opened.lines[at].folded
    inside = list(takewhile(lambda x: x.depth > scope.depth, opened.lines[at + 1 :]))
    assert inside
    assert opened.total - first.total == len(inside)
    # its sub-scopes match too, so they stay folded: only one level opens
    assert {x.depth for x in inside} == {scope.depth + 1}
    assert sum(x.ops for x in inside) == scope.ops
    # a differing scope starts open; toggling folds it and lists it as a difference
    diff_scope = next(line for line in first.lines if line.kind == "scope" and not line.folded)
    assert diff_scope.status == "differs"
    shut = trace_page(store, name, TraceQuery(toggles=frozenset({diff_scope.id})))
    line = next(x for x in shut.lines if x.id == diff_scope.id)
    assert line.folded
    assert line.line in shut.diffs
    assert shut.total < first.total
    # jump to a row hidden in a folded scope: its headers open and its op is the focus
    page = trace_page(store, name, TraceQuery(limit=5, at=scope.position))
    assert scope.id in page.toggles
    assert page.focus is not None
    assert page.offset <= page.focus < page.offset + len(page.lines)
    focused = page.lines[page.focus - page.offset]
    assert focused.kind == "op"
    assert focused.path.startswith(scope.path)
    row = table(store, name).row(scope.position)
    assert (row["module_path"], row["op"]) == (focused.path, focused.label)
    # jumping from a state where the scope is already open keeps it open
    again = trace_page(store, name, TraceQuery(toggles=frozenset(page.toggles), at=scope.position))
    assert again.toggles == page.toggles
    with pytest.raises(KeyError):
        trace_page(store, name, TraceQuery(at=10**6))


def test_paging_diffs_and_directions(store) -> None:
    name = "compare/autocast"
    full = trace_page(store, name, TraceQuery(fold="none", limit=1000))
    pages = [
        trace_page(store, name, TraceQuery(fold="none", offset=o, limit=7))
        for o in range(0, full.total, 7)
    ]
    assert [line.id for p in pages for line in p.lines] == [line.id for line in full.lines]
    assert all(len(p.lines) <= 7 for p in pages)
    assert [full.lines[d].status for d in full.diffs] == ["target"] * len(full.diffs)
    assert len(full.diffs) == full.counts["target"]
    back = trace_page(store, name, TraceQuery(fold="none", directions=("backward",), limit=1000))
    assert {line.direction for line in back.lines} == {"backward"}
    assert back.counts["matched"] < full.counts["matched"]
    # a toggle naming no header (or out of range) is ignored
    odd = trace_page(store, name, TraceQuery(toggles=frozenset({-5, 10**6}), limit=1000))
    assert odd.toggles == ()


def _row(i: int, **kw):
    row = {
        "index": i,
        "index_target": i,
        "op": "aten.add.Tensor",
        "op_target": "aten.add.Tensor",
        "module_path": f"M.layers.{i // 10}",
        "direction": "forward",
        "tensor": "output.0",
        "shape_bench": [4],
        "shape_target": [4],
        "dtype_bench": "float32",
        "dtype_target": "float32",
        "verdict": "pass",
        "reason": "",
        "match": "name",
        "rank": 0,
    }
    row.update(kw)
    return row


def test_large_traces_stay_bounded_and_odd_rows_are_placed() -> None:
    n = 2 * MAX_DIFFS + 10
    rows = []
    for i in range(n):  # every other op only in the target: more differences than listed
        rows.append(_row(i, index_target=2 * i + 1))
        rows.append(
            _row(
                2 * i,
                index_target=2 * i,
                shape_bench=None,
                dtype_bench=None,
                match="unmatched",
                verdict="warning",
                reason="Op only in target.",
            )
        )
    trace = Trace(rows)
    page = trace.page(TraceQuery(fold="none", offset=100, limit=50))
    assert len(page.lines) == 50
    assert page.diffs_truncated
    assert len(page.diffs) == MAX_DIFFS
    assert page.counts["target"] == n
    # each target-only op is placed before the matched op that followed it on the target side
    lines = [x for x in trace.page(TraceQuery(fold="none", limit=60)).lines if x.kind == "op"]
    assert [x.status for x in lines[:4]] == ["target", "matched", "target", "matched"]
    # rows without shapes or dtypes: bench side when there is no target index
    bare = Trace(
        [
            _row(
                0,
                shape_bench=None,
                shape_target=None,
                dtype_bench=None,
                dtype_target=None,
                index_target=None,
                match="unmatched",
            )
        ]
    )
    [line] = [x for x in bare.page(TraceQuery(fold="none")).lines if x.kind == "op"]
    assert (line.status, line.side) == ("bench", "bench")
    assert Trace([]).page(TraceQuery()).total == 0


def test_multi_rank_and_partial_ops() -> None:
    rows = [
        _row(0),
        _row(0, tensor="output.1", shape_target=None, dtype_target=None, match="unmatched"),
        _row(1, rank=1, module_path=""),
    ]
    page = Trace(rows).page(TraceQuery(fold="none"))
    heads = [x.label for x in page.lines if x.kind == "direction"]
    assert heads == ["rank 0 · forward", "rank 1 · forward"]
    partial = next(x for x in page.lines if x.kind == "op")
    assert partial.status == "partial"
    assert partial.rows == 2
    assert partial.bench.tensors == 2
    assert partial.target.tensors == 1
    root_op = [x for x in page.lines if x.kind == "op"][-1]
    assert root_op.depth == 1
    assert root_op.path == ""


def test_budget_ratio_column_and_op_rows(store) -> None:
    name = "compare/missing-module"
    info = store.info(name)
    first = table(store, name).row(info.first_divergence)
    assert first["budget_ratio"] == pytest.approx(first["error"] / first["budget"])
    assert first["budget_ratio"] > 1
    from tensorsight.board.views.comparison.table import RowQuery

    worst = rows(store, name, RowQuery(sort="budget_ratio", descending=True, limit=3)).rows
    assert worst[0]["budget_ratio"] >= worst[1]["budget_ratio"]
    assert all(math.isfinite(r["budget_ratio"]) or r["budget_ratio"] == math.inf for r in worst)
    unmatched = rows(store, name, RowQuery(match="unmatched", limit=1)).rows[0]
    assert unmatched["budget_ratio"] is None
