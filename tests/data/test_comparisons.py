"""ComparisonStore on a real planted-bug comparison: a torch model dumped twice, compared."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tensorsight.board.views.comparison import detail, module_tree, rows, table
from tensorsight.board.views.comparison.detail import DetailLimits
from tensorsight.board.views.comparison.table import RowQuery
from tensorsight.data import ComparisonStore, LogdirProvider


def make_comparison_logdir(logdir: Path, *, summaries: bool = False) -> Path:
    """Dump one training step of a small model and of a copy with a planted bug (the second
    Linear's weight scaled by 1.05), compare, and write ``compare/bug/comparison.json``."""
    import torch

    from tensorsight.capture import dump
    from tensorsight.compare import compare

    def step(path: Path, bug: bool) -> None:
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(16, 32),
            torch.nn.LayerNorm(32),
            torch.nn.ReLU(),
            torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.GELU()),
            torch.nn.Linear(32, 4),
        )
        if bug:
            with torch.no_grad():
                model[3][0].weight.mul_(1.05)
        x = torch.randn(8, 16, generator=torch.Generator().manual_seed(1))
        with dump(path, mode="tensor", steps=[0], overwrite=True):
            model(x).square().mean().backward()

    step(logdir / "dumps" / "bench", bug=False)
    step(logdir / "dumps" / "target", bug=True)
    result = compare(logdir / "dumps" / "bench", logdir / "dumps" / "target", jobs=1)
    out = logdir / "compare" / "bug"
    out.mkdir(parents=True)
    result.to_json(out / "comparison.json")
    if summaries:
        from tensorsight.summary import SummaryWriter

        for name, scale in (("bench", 1.0), ("target", 1.2)):
            with SummaryWriter(str(logdir / "train" / name)) as w:
                for s in range(50):
                    w.add_scalar("loss/train", scale * 2.0 / (1 + s), s)
    return out / "comparison.json"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cmp")
    make_comparison_logdir(root)
    return root


def test_lists_the_comparison_with_first_divergence(logdir: Path) -> None:
    store = ComparisonStore(logdir)
    [info] = store.list()
    assert info.name == "compare/bug"
    assert info.error is None
    assert info.row_count > 10
    assert info.first_divergence is not None
    first = table(store, "compare/bug").row(info.first_divergence)
    assert first["module_path"].endswith(".3.0")
    assert first["verdict"] == "error"
    assert "cosine" in info.higher_is_better
    assert info.counts["error"] >= 1


def test_query_filters_sorts_and_pages(logdir: Path) -> None:
    store = ComparisonStore(logdir)
    page = rows(store, "compare/bug", RowQuery(limit=5))
    assert page.total == store.list()[0].row_count
    assert [r["position"] for r in page.rows] == [0, 1, 2, 3, 4]
    errors = rows(store, "compare/bug", RowQuery(verdicts=("error",), limit=1000))
    assert errors.matched == store.list()[0].counts["error"]
    assert {r["verdict"] for r in errors.rows} == {"error"}
    back = rows(store, "compare/bug", RowQuery(directions=("backward",), limit=1000))
    assert back.matched
    assert {r["direction"] for r in back.rows} == {"backward"}
    worst = rows(store, "compare/bug", RowQuery(sort="max_abs_err", descending=True, limit=1000))
    vals = [r["max_abs_err"] for r in worst.rows if r["max_abs_err"] is not None]
    assert vals == sorted(vals, reverse=True)
    ranged = rows(store, "compare/bug", RowQuery(ranges={"cosine": (None, 0.99999)}, limit=1000))
    assert all(r["cosine"] <= 0.99999 for r in ranged.rows)
    mm = rows(store, "compare/bug", RowQuery(op="MM", module="3.0", limit=1000))
    assert mm.matched
    assert all("mm" in r["op"] and "3.0" in r["module_path"] for r in mm.rows)
    with pytest.raises(KeyError):
        rows(store, "compare/bug", RowQuery(sort="no_such_column"))


def test_module_tree_colours_scopes_by_worst_child(logdir: Path) -> None:
    store = ComparisonStore(logdir)
    tree = module_tree(store, "compare/bug", metric="cosine")
    assert tree.verdict == "error"
    [root] = tree.children
    by_name = {c.name: c for c in root.children}
    assert by_name["3"].verdict == "error"
    assert by_name["0"].verdict == "pass"
    # cosine: higher is better, so the worst value of a scope is its smallest
    found = rows(store, "compare/bug", RowQuery(module_prefix=by_name["3"].path, limit=1000)).rows
    assert by_name["3"].rows == len(found)
    assert by_name["3"].value == min(r["cosine"] for r in found if r["cosine"] is not None)
    fwd = module_tree(store, "compare/bug", metric="max_abs_err", direction="forward")
    assert fwd.rows < tree.rows


def test_detail_reads_both_tensors_from_the_dumps(logdir: Path) -> None:
    store = ComparisonStore(logdir)
    first = store.list()[0].first_divergence
    assert first is not None
    d = detail(store, "compare/bug", first, DetailLimits(top_n=5, heatmap_cells=4))
    assert d.note is None, d.note
    assert d.bench is not None
    assert d.target is not None
    assert d.bench.shape == d.target.shape
    assert len(d.worst) == 5
    assert d.worst[0].abs_err >= d.worst[-1].abs_err > 0
    assert d.histogram is not None
    assert sum(d.histogram.counts) > 0
    assert d.heatmap is not None
    assert len(d.heatmap.values) <= 4
    assert max(max(r) for r in d.heatmap.values) == pytest.approx(d.worst[0].abs_err)
    assert any(r["tensor"].startswith("input") for r in d.op_rows)
    with pytest.raises(KeyError):
        detail(store, "compare/bug", 10**6)


def test_replay_reruns_the_op(logdir: Path) -> None:
    from tensorsight.errors import CompareError

    store = ComparisonStore(logdir)
    q = RowQuery(op="addmm", module="3.0", directions=("forward",), limit=100)
    [row] = [r for r in rows(store, "compare/bug", q).rows if r["tensor"] == "output.0"]
    r = store.replay("compare/bug", row["position"])
    assert r.op == row["op"] == "aten.addmm.default"
    assert math.isfinite(r.target_vs_float64)
    assert r.target_vs_float64 > 1e-3
    # the op itself is fine: fed the bench inputs it reproduces the bench, not the target
    assert not r.op_explains_error
    first = store.list()[0].first_divergence
    assert first is not None
    with pytest.raises(CompareError, match="output"):
        store.replay("compare/bug", first)  # an input row cannot be replayed


def test_missing_dumps_keep_the_row_and_say_why(tmp_path: Path, logdir: Path) -> None:
    text = (logdir / "compare" / "bug" / "comparison.json").read_text(encoding="utf-8")
    doc = json.loads(text)
    doc["bench"], doc["target"] = "gone/bench", "gone/target"
    folder = tmp_path / "moved ünïcode"
    folder.mkdir()
    (folder / "comparison.json").write_text(json.dumps(doc), encoding="utf-8")
    store = ComparisonStore(tmp_path)
    [info] = store.list()
    assert info.name == "moved ünïcode"
    d = detail(store, info.name, info.first_divergence or 0)
    assert d.note is not None
    assert "not found" in d.note
    assert d.row["op"]


@pytest.mark.parametrize(
    "content",
    ['{"format": "tensorsight-comparison", "schema_version": 99, "rows": []}', "{trunc", ""],
)
def test_unreadable_files_are_listed_with_the_reason(tmp_path: Path, content: str) -> None:
    (tmp_path / "comparison.json").write_text(content, encoding="utf-8")
    store = ComparisonStore(tmp_path)
    [info] = store.list()
    assert info.name == "."
    assert info.error
    with pytest.raises(Exception, match="unreadable"):
        rows(store, ".")


def test_logdir_provider_picks_up_new_comparisons(tmp_path: Path, logdir: Path) -> None:
    provider = LogdirProvider(tmp_path)
    store = provider.comparisons()
    assert store.list() == []
    gen = provider.generation
    (tmp_path / "c").mkdir()
    src = logdir / "compare" / "bug" / "comparison.json"
    (tmp_path / "c" / "comparison.json").write_bytes(src.read_bytes())
    assert provider.reload()
    assert provider.generation > gen
    assert [i.name for i in store.list()] == ["c"]
    (tmp_path / "c" / "comparison.json").unlink()
    assert provider.reload()
    assert store.list() == []


def test_the_board_stack_serves_compares_own_records_and_verdicts() -> None:
    """No copies: the data layer's advice, replay and verdict names are compare's own."""
    from tensorsight import data
    from tensorsight.compare import result
    from tensorsight.compare.replay import ReplayResult

    assert data.AdviceInfo is result.Advice
    assert data.ReplayInfo is ReplayResult is result.ReplayResult
    assert data.VERDICTS is result.VERDICTS
    assert data.AdviceInfo.SCHEMA_VERSION == data.ReplayInfo.SCHEMA_VERSION == 1
