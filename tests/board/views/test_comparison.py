"""The comparison view's HTTP API on a real planted-bug comparison under a logdir."""

from __future__ import annotations

from itertools import takewhile
from pathlib import Path

import pytest

from tensorsight.board.views.comparison import jsonable, list_impl, rows_impl
from tensorsight.board.views.comparison.table import RowQuery
from tensorsight.data import InMemoryProvider, LogdirProvider
from tests.data.test_comparisons import make_comparison_logdir

NAME = "compare/bug"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("board-cmp")
    make_comparison_logdir(root)
    (root / "compare" / "broken").mkdir()
    (root / "compare" / "broken" / "comparison.json").write_text("{not json", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def client(logdir: Path):
    from starlette.testclient import TestClient

    from tensorsight.board.app import create_app

    with TestClient(create_app(LogdirProvider(logdir))) as c:
        yield c


def get(client, route: str, **params):
    return client.get(f"/api/views/comparison/{route}", params=params)


def test_tab_is_enabled_and_lists_comparisons(client, logdir: Path) -> None:
    views = {v["name"]: v for v in client.get("/api/views").json()["views"]}
    assert views["comparison"]["has_data"] is True
    body = get(client, "list").json()
    by_name = {c["name"]: c for c in body["comparisons"]}
    assert by_name[NAME]["error"] is None
    assert by_name[NAME]["first_divergence"] is not None
    broken = by_name["compare/broken"]["error"]
    assert "not valid JSON" in broken
    assert str(logdir) not in broken  # no file-system paths in public messages


def test_summary_pins_the_first_divergence_and_the_advice(client) -> None:
    body = get(client, "summary", name=NAME).json()
    first = body["first_divergence_row"]
    assert first["position"] == body["comparison"]["first_divergence"]
    assert first["verdict"] == "error"
    assert body["metric_ranges"]["cosine"][1] <= 1.0 + 1e-12
    assert "aten.addmm.default" in body["ops"]
    assert get(client, "summary", name="nope").status_code == 404
    assert get(client, "summary", name="compare/broken").status_code == 404
    assert get(client, "summary").status_code == 400


def test_rows_filter_sort_page_and_reject_bad_input(client) -> None:
    body = get(
        client, "rows", name=NAME, verdict="error", sort="max_abs_err", desc="1", limit=3
    ).json()
    assert body["matched"] >= 1
    assert all(r["verdict"] == "error" for r in body["rows"])
    body = get(client, "rows", name=NAME, **{"min.cosine": "0.99999", "limit": "1000"}).json()
    assert all(r["cosine"] >= 0.99999 for r in body["rows"])
    page2 = get(client, "rows", name=NAME, offset=5, limit=5).json()
    assert [r["position"] for r in page2["rows"]] == [5, 6, 7, 8, 9]
    for bad in (
        {"verdict": "bad"},
        {"direction": "sideways"},
        {"limit": "0"},
        {"limit": "100000"},
        {"offset": "-1"},
        {"min.cosine": "nan"},
        {"sort": "nope"},
        {"match": "x"},
        {"rank": "-1"},
    ):
        r = get(client, "rows", name=NAME, **bad)
        assert r.status_code == 400, bad
        assert r.json()["error"]["code"] == "invalid_argument"


def test_tree_and_detail_and_replay(client) -> None:
    tree = get(client, "tree", name=NAME, metric="max_abs_err").json()["tree"]
    assert tree["verdict"] == "error"
    assert tree["value"] > 0
    assert get(client, "tree", name=NAME, metric="nope").status_code == 400
    first = get(client, "summary", name=NAME).json()["first_divergence_row"]["position"]
    d = get(client, "detail", name=NAME, row=first, top=3, cells=8).json()
    assert d["note"] is None
    assert len(d["worst"]) == 3
    assert len(d["heatmap"]["values"]) <= 8
    assert d["bench"]["shape"] == d["target"]["shape"]
    assert get(client, "detail", name=NAME, row=10**8).status_code == 404
    assert get(client, "detail", name=NAME).status_code == 400
    assert get(client, "detail", name=NAME, row=first, slice="a").status_code == 400
    assert get(client, "detail", name=NAME, row=first, slice="0,0,0,0").status_code == 400
    r = get(client, "replay", name=NAME, row=first)  # an input row: cannot be replayed
    assert r.status_code == 422
    assert "output" in r.json()["error"]["message"]
    rows = get(client, "rows", name=NAME, op="addmm", module="3.0", direction="forward").json()
    out = next(r for r in rows["rows"] if r["tensor"] == "output.0")
    rep = get(client, "replay", name=NAME, row=out["position"]).json()
    assert rep["op"] == "aten.addmm.default"
    assert rep["op_explains_error"] is False


def test_providers_without_comparisons() -> None:
    provider = InMemoryProvider()
    assert list_impl(provider) == {"comparisons": []}
    from tensorsight.board.errors import NotFound

    with pytest.raises(NotFound):
        rows_impl(provider, NAME, RowQuery())


def test_jsonable_encodes_non_finite_numbers() -> None:
    assert jsonable({"a": (float("nan"), float("inf"), -float("inf"), 1.5)}) == {
        "a": ["NaN", "Infinity", "-Infinity", 1.5]
    }


@pytest.fixture(scope="module")
def structures(tmp_path_factory: pytest.TempPathFactory):
    from starlette.testclient import TestClient

    from tensorsight.board.app import create_app
    from tests.board.views.test_comparison_trace import make_structure_logdir

    root = make_structure_logdir(tmp_path_factory.mktemp("board-structures"))
    with TestClient(create_app(LogdirProvider(root))) as c:
        yield c


def test_trace_pages_the_side_by_side_view(structures) -> None:
    name = "compare/missing-module"
    body = get(structures, "trace", name=name, limit=10).json()
    assert len(body["lines"]) == 10
    assert body["offset"] == 0
    assert body["total"] > 10
    assert body["counts"]["bench"] >= 1
    assert body["counts"]["bench_ops"] > body["counts"]["target_ops"]
    head = body["lines"][0]
    assert head["kind"] == "direction"
    assert head["label"] == "forward"
    norm = next(x for x in body["lines"] if x["path"] == "Net.norm")
    assert norm["side"] == "bench"
    op = next(x for x in body["lines"] if x["kind"] == "op")
    assert set(op["bench"]) == {"index", "op", "dtype", "shape", "tensors"}
    # fold=none opens everything; toggling a header back folds it
    full = get(structures, "trace", name=name, fold="none", limit=1000).json()
    assert full["total"] > body["total"]
    scope = next(x for x in full["lines"] if x["kind"] == "scope")
    less = get(structures, "trace", name=name, fold="none", toggle=str(scope["id"])).json()
    k = full["lines"].index(scope)
    below = list(takewhile(lambda x: x["depth"] > scope["depth"], full["lines"][k + 1 :]))
    assert sum(1 for x in below if x["kind"] == "op") == scope["ops"]
    assert less["total"] == full["total"] - len(below)
    # at=P: the row's op is the focus, in the returned window
    summary = get(structures, "summary", name=name).json()
    first = summary["comparison"]["first_divergence"]
    assert summary["upstream"]["count"] >= 1
    assert summary["upstream"]["side"] == "bench"
    at = get(structures, "trace", name=name, direction="forward", at=first, limit=3).json()
    assert at["offset"] <= at["focus"] < at["offset"] + 3
    assert at["lines"][at["focus"] - at["offset"]]["kind"] == "op"
    hidden = get(structures, "trace", name=name, direction="backward", at=first).json()
    assert hidden["focus"] is None  # a forward row is not in the backward trace


def test_trace_rejects_bad_input(structures) -> None:
    name = "compare/autocast"
    for bad in (
        {"fold": "some"},
        {"toggle": "1,x"},
        {"toggle": ",".join(str(i) for i in range(1001))},
        {"limit": "0"},
        {"limit": "1001"},
        {"offset": "-1"},
        {"at": "-3"},
        {"direction": "up"},
    ):
        r = get(structures, "trace", name=name, **bad)
        assert r.status_code == 400, bad
        assert r.json()["error"]["code"] == "invalid_argument"
    assert get(structures, "trace", name=name, at=10**8).status_code == 404
    assert get(structures, "trace", name="nope").status_code == 404
    assert get(structures, "trace").status_code == 400
    # an agreeing comparison has no upstream note
    same = get(structures, "summary", name="compare/same").json()
    assert same["first_divergence_row"] is None
    assert same["upstream"] is None


def test_a_healthy_autocast_comparison_reads_healthy(structures) -> None:
    """fp32 vs bf16 autocast: the casts are one-sided (neutral), not warnings or unmatched."""
    summary = get(structures, "summary", name="compare/autocast").json()
    counts = summary["comparison"]["counts"]
    assert counts["one_sided"] >= 5
    assert counts["unmatched"] == 0
    assert counts["error"] == 0
    assert summary["comparison"]["incomplete"] is None
    assert summary["comparison"]["not_comparable"] is None
    assert summary["first_divergence_row"] is None
    tree = get(structures, "tree", name="compare/autocast").json()["tree"]
    assert tree["counts"]["one_sided"] == counts["one_sided"]
    rows = get(structures, "rows", name="compare/autocast", limit=1000).json()["rows"]
    casts = [r for r in rows if r["one_sided"]]
    assert len(casts) == counts["one_sided"]
    assert all("_to_copy" in r["op"] and r["verdict"] == "pass" for r in casts)
    assert not any(r["one_sided"] for r in rows if r["match"] != "unmatched")


def test_an_incomplete_comparison_says_so_in_the_summary(tmp_path) -> None:
    from starlette.testclient import TestClient

    from tensorsight.board.app import create_app
    from tensorsight.compare.result import Comparison, OpComparison

    row = OpComparison(index=0, op="aten.mm.default", module_path="M", direction="forward",
                       tensor="output.0", shape_bench=(2,), verdict="warning",
                       reason="Op only in bench.", match="unmatched")  # fmt: skip
    out = tmp_path / "compare" / "cut"
    out.mkdir(parents=True)
    why = "Dump 'b': rank 0 is marked incomplete (the run stopped before the dump was closed)"
    Comparison("a", "b", (row,), incomplete=why).to_json(out / "comparison.json")
    with TestClient(create_app(LogdirProvider(tmp_path))) as client:
        info = get(client, "summary", name="compare/cut").json()["comparison"]
    assert info["incomplete"] == why
    assert info["not_comparable"] is None
