"""The board cannot be frozen by one request: hostile patterns, slow work, a live server.

Each test runs the real application under uvicorn on 127.0.0.1 (the e2e ``board_server``)
and talks to it over HTTP with httpx2, so a handler that blocked the event loop would show as
``/api/runs`` not answering. The client timeouts are liveness bounds (a frozen board never
answers), not timing measurements.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import httpx2 as httpx
import pytest

from tensorsight.board.errors import InvalidArgument
from tensorsight.board.patterns import MAX_PATTERN_CHARS, compile_filter
from tensorsight.data import InMemoryProvider
from tests.board.views.graphs_fixtures import graph_provider
from tests.e2e.conftest import board_server

# Python's re needs minutes for this against a 20-character name (nested stars backtrack).
HOSTILE = "(.*.*)*Z"
LIVENESS_S = 10.0


def test_hostile_pattern_is_answered_and_the_board_keeps_serving():
    with board_server(graph_provider()) as url, ThreadPoolExecutor(2) as pool:
        hostile = pool.submit(
            httpx.get,
            f"{url}/api/views/precision/table",
            params={"run": "train", "tag": "graph", "q": HOSTILE},
            timeout=LIVENESS_S * 3,
        )
        runs = httpx.get(f"{url}/api/runs", timeout=LIVENESS_S)
        assert runs.status_code == 200
        assert [r["name"] for r in runs.json()["runs"]] == ["train"]
        r = hostile.result()
        assert r.status_code == 200, r.text
        assert r.json()["matched"] == 0  # no name contains a Z
        # the same engine still filters: case-insensitive, as before
        r = httpx.get(
            f"{url}/api/views/precision/table",
            params={"run": "train", "tag": "graph", "q": "(ADDMM)+|matmul"},
            timeout=LIVENESS_S,
        )
        assert [row["op"] for row in r.json()["rows"]] == ["aten::addmm", "MatMul"]


@pytest.mark.parametrize(
    ("pattern", "why"),
    [(r"(a)\1", "backreferences"), ("(?=a)b", "lookaround"), ("[", "RE2")],
)
def test_patterns_re2_cannot_run_are_one_line_400s(pattern, why):
    with board_server(graph_provider()) as url:
        r = httpx.get(
            f"{url}/api/views/precision/table",
            params={"run": "train", "tag": "graph", "q": pattern},
            timeout=LIVENESS_S,
        )
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["code"] == "invalid_argument"
    assert "'q'" in err["message"]
    assert why in err["message"]
    assert "\n" not in err["message"]


def test_overlong_pattern_is_refused_before_compiling():
    with pytest.raises(InvalidArgument, match=f"at most {MAX_PATTERN_CHARS}"):
        compile_filter("a" * (MAX_PATTERN_CHARS + 1))
    assert compile_filter("É").search("xé")  # case folding beyond ASCII


class _StuckGraphs(InMemoryProvider):
    """A real in-memory provider whose graph read waits until released (a slow disk)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.entered = threading.Event()

    def read_graph(self, run: str, tag: str):  # type: ignore[override]
        self.entered.set()
        self.release.wait(60)
        return super().read_graph(run, tag)


def test_slow_work_runs_off_the_loop_and_past_the_deadline_is_a_503():
    provider = _StuckGraphs()
    provider.add_graph(graph_provider().read_graph("train", "graph"))
    with board_server(provider, work_deadline_secs=1.0) as url, ThreadPoolExecutor(1) as pool:
        try:
            slow = pool.submit(
                httpx.get,
                f"{url}/api/views/graphs/graph",
                params={"run": "train", "tag": "graph"},
                timeout=LIVENESS_S * 3,
            )
            assert provider.entered.wait(LIVENESS_S)
            # the graph read is stuck in a worker thread; the loop still answers
            assert httpx.get(f"{url}/api/runs", timeout=LIVENESS_S).status_code == 200
            r = slow.result()
            assert r.status_code == 503
            assert r.json()["error"]["code"] == "deadline_exceeded"
        finally:
            provider.release.set()
        # once the disk answers again, so does the route
        r = httpx.get(
            f"{url}/api/views/graphs/graph",
            params={"run": "train", "tag": "graph"},
            timeout=LIVENESS_S,
        )
        assert r.status_code == 200


@pytest.fixture(scope="module")
def comparison_logdir(tmp_path_factory):
    from tests.data.test_comparisons import make_comparison_logdir

    root = tmp_path_factory.mktemp("hard-cmp")
    make_comparison_logdir(root)
    return root


@pytest.mark.parametrize(
    ("route", "method", "params"),
    [
        ("list", "list", {}),
        ("rows", "rows", {"name": "compare/bug"}),
        ("tree", "module_tree", {"name": "compare/bug"}),
    ],
)
def test_a_slow_comparison_request_leaves_the_board_answering(
    comparison_logdir, monkeypatch, route, method, params
):
    """The comparison view's table work runs in a worker thread: while it is stuck (a
    planted wait standing for a huge comparison), ``/api/runs`` answers, and the slow
    request completes once released (it ran on the loop before: ``/api/runs`` waited)."""
    from tensorsight.board.views import comparison as view
    from tensorsight.data import LogdirProvider
    from tensorsight.data.comparisons import ComparisonStore

    provider = LogdirProvider(comparison_logdir)
    assert provider.comparisons() is not None
    entered, release = threading.Event(), threading.Event()
    # the store lists; the view's slice pages the rows and builds the tree
    owner = ComparisonStore if method == "list" else view
    real = getattr(owner, method)

    def stuck(*args, **kwargs):
        if threading.current_thread() is not threading.main_thread():
            entered.set()
            release.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, method, stuck)
    with board_server(provider) as url, ThreadPoolExecutor(1) as pool:
        try:
            slow = pool.submit(
                httpx.get,
                f"{url}/api/views/comparison/{route}",
                params=params,
                timeout=LIVENESS_S * 3,
            )
            assert entered.wait(LIVENESS_S)
            runs = httpx.get(f"{url}/api/runs", timeout=LIVENESS_S)
            assert runs.status_code == 200
            assert not slow.done()  # answered while the comparison work was still stuck
        finally:
            release.set()
        r = slow.result()
        assert r.status_code == 200, r.text
    body = r.json()
    if route == "list":
        assert [c["name"] for c in body["comparisons"]] == ["compare/bug"]
    elif route == "rows":
        assert body["matched"] > 0
    else:
        assert body["tree"]


# ---------------------------------------------------------------- cross-origin requests


@pytest.mark.parametrize(
    "headers",
    [
        {"Sec-Fetch-Site": "cross-site"},  # <img src=...> or fetch() on another site
        {"Sec-Fetch-Site": "same-site"},  # another port of this machine
        {"Origin": "http://evil.example"},  # a browser without Fetch Metadata
        {"Origin": "null"},  # a sandboxed frame or a file:// page
        {"Origin": "http://127.0.0.1:1"},  # same host, another port
    ],
)
def test_api_requests_from_another_origin_get_a_403(client, headers):
    r = client.get("/api/runs", headers=headers)
    assert r.status_code == 403
    assert r.json()["error"]["code"] == "cross_origin"
    r = client.get(
        "/api/views/images/image", params={"run": "train", "tag": "samples"}, headers=headers
    )
    assert r.status_code == 403
    assert r.headers["content-type"] == "application/json"


@pytest.mark.parametrize(
    "headers",
    [
        {},  # curl, scripts, the CLI: no browser origin at all
        {"Sec-Fetch-Site": "same-origin", "Origin": "http://testserver"},  # the front end
        {"Sec-Fetch-Site": "none"},  # the user typed the URL
    ],
)
def test_same_origin_and_non_browser_clients_are_served(client, headers):
    r = client.get("/api/runs", headers=headers)
    assert r.status_code == 200
    assert {run["name"] for run in r.json()["runs"]} == {"train", "eval"}


def test_a_link_from_another_site_still_opens_the_front_end(client):
    # only the JSON API is guarded: following a link to the board must keep working
    r = client.get("/", headers={"Sec-Fetch-Site": "cross-site"})
    assert r.status_code in (200, 503)  # 503: front end not built in this checkout
    assert r.headers["content-type"].startswith("text/html")


class _StuckLogdir:
    """A real logdir provider whose reads of one kind wait until released."""

    def __init__(self, logdir, method: str) -> None:
        from tensorsight.data import LogdirProvider

        self.release = threading.Event()
        self.entered = threading.Event()
        provider = LogdirProvider(logdir)
        provider.reload()
        real = getattr(provider, method)

        def stuck(*args, **kwargs):
            self.entered.set()
            self.release.wait(60)
            return real(*args, **kwargs)

        setattr(provider, method, stuck)
        self.provider = provider


@pytest.fixture(scope="module")
def every_kind_logdir(tmp_path_factory):
    import numpy as np

    import tensorsight

    root = tmp_path_factory.mktemp("kinds")
    with tensorsight.SummaryWriter(root / "train") as w:
        for step in range(3):
            w.add_scalar("loss", 1.0 / (step + 1), step)
            w.add_histogram("weights", np.linspace(-1, 1, 64) * (step + 1), step)
            w.add_image("sample", np.full((3, 4, 4), 0.5 * step / 2), step)
            w.add_text("note", f"step {step}", step)
            w.add_tensor("act", np.arange(6, dtype=np.float32).reshape(2, 3) * step, step)
        w.add_mesh("shape", np.eye(3, dtype=np.float32)[None], faces=np.array([[[0, 1, 2]]]))
        w.add_hparams({"lr": 0.1}, {"hparam/final_loss": 0.3})
    return root


@pytest.mark.parametrize(
    ("method", "path", "params"),
    [
        ("read_scalars", "scalars/series", {"run": "train", "tag": "loss"}),
        ("sample_histogram_arrays", "histograms/series", {"run": "train", "tag": "weights"}),
        ("read_records", "images/list", {"run": "train", "tag": "sample"}),
        ("read_records", "text/series", {"run": "train", "tag": "note/text_summary"}),
        ("read_records", "tensors/steps", {"run": "train", "tag": "act"}),
        ("read_hparams", "hparams/table", {"run": "train"}),
    ],
)
def test_a_slow_read_of_any_view_leaves_the_board_answering(
    every_kind_logdir, method, path, params
):
    """Issue 20: ``/api/runs`` answers while any single view request is stuck in its read."""
    stuck = _StuckLogdir(every_kind_logdir, method)
    with board_server(stuck.provider) as url, ThreadPoolExecutor(1) as pool:
        try:
            slow = pool.submit(
                httpx.get, f"{url}/api/views/{path}", params=params, timeout=LIVENESS_S * 3
            )
            assert stuck.entered.wait(LIVENESS_S), f"{path} never read through {method}"
            runs = httpx.get(f"{url}/api/runs", timeout=LIVENESS_S)
            assert runs.status_code == 200
            assert "train" in [r["name"] for r in runs.json()["runs"]]
            assert not slow.done()  # still waiting on its read, in a worker thread
        finally:
            stuck.release.set()
        r = slow.result()
        assert r.status_code == 200, r.text


def _stuck_comparison_list(monkeypatch):
    """Make ``ComparisonStore.list`` wait in worker threads until released (a slow disk)."""
    from tensorsight.data.comparisons import ComparisonStore

    entered, release = threading.Event(), threading.Event()
    real = ComparisonStore.list

    def stuck(self, *args, **kwargs):
        if threading.current_thread() is not threading.main_thread():
            entered.set()
            release.wait(60)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ComparisonStore, "list", stuck)
    return entered, release


def test_the_view_list_checks_views_off_the_loop(comparison_logdir, monkeypatch):
    """``/api/views`` asks every view's ``is_active``; the comparison view's lists
    comparisons from disk. It ran on the event loop: while it was stuck, ``/api/runs``
    waited too. Now it runs in a worker thread and ``/api/runs`` answers meanwhile."""
    from tensorsight.data import LogdirProvider

    provider = LogdirProvider(comparison_logdir)
    assert provider.comparisons() is not None
    entered, release = _stuck_comparison_list(monkeypatch)
    with board_server(provider) as url, ThreadPoolExecutor(1) as pool:
        try:
            slow = pool.submit(httpx.get, f"{url}/api/views", timeout=LIVENESS_S * 3)
            assert entered.wait(LIVENESS_S)
            runs = httpx.get(f"{url}/api/runs", timeout=LIVENESS_S)
            assert runs.status_code == 200
            assert not slow.done()
        finally:
            release.set()
        r = slow.result()
    assert r.status_code == 200, r.text
    views = {v["name"]: v for v in r.json()["views"]}
    assert views["comparison"]["enabled"]
    assert views["comparison"]["has_data"]


def test_a_view_check_past_the_deadline_leaves_the_tab_enabled(comparison_logdir, monkeypatch):
    from tensorsight.data import LogdirProvider

    provider = LogdirProvider(comparison_logdir)
    assert provider.comparisons() is not None
    entered, release = _stuck_comparison_list(monkeypatch)
    with board_server(provider, work_deadline_secs=0.5) as url:
        try:
            r = httpx.get(f"{url}/api/views", timeout=LIVENESS_S * 3)
            assert entered.is_set()
        finally:
            release.set()
    assert r.status_code == 200, r.text
    views = {v["name"]: v for v in r.json()["views"]}
    assert views["comparison"] == {
        "name": "comparison",
        "title": "Comparison",
        "enabled": True,
        "has_data": False,
        "reason": "no answer within the board's deadline",
        "module": None,  # bundled with the board
    }
    assert views["scalars"]["enabled"]  # the other views were checked as usual


def test_encoding_a_big_answer_leaves_the_board_answering(every_kind_logdir, monkeypatch):
    """The JSON encoding of a view's answer runs in the worker thread too: 500 histogram
    records of 600 buckets were 9 MB to encode (0.1 CPU-s with the view's own encoder),
    which on the event loop held ``/api/runs`` as long. The encoding is made to wait here
    until released."""
    from tensorsight.board.views import histograms
    from tensorsight.data import LogdirProvider

    entered, release = threading.Event(), threading.Event()
    real = histograms._arrays_json

    def slow_encode(arrays):
        entered.set()
        release.wait(60)
        return real(arrays)

    monkeypatch.setattr(histograms, "_arrays_json", slow_encode)
    provider = LogdirProvider(every_kind_logdir)
    provider.reload()
    with board_server(provider) as url, ThreadPoolExecutor(1) as pool:
        try:
            slow = pool.submit(
                httpx.get,
                f"{url}/api/views/histograms/series",
                params={"run": "train", "tag": "weights"},
                timeout=LIVENESS_S * 3,
            )
            assert entered.wait(LIVENESS_S)
            runs = httpx.get(f"{url}/api/runs", timeout=LIVENESS_S)
            assert runs.status_code == 200
            assert not slow.done()
        finally:
            release.set()
        r = slow.result()
    assert r.status_code == 200, r.text
    assert [rec["step"] for rec in r.json()["records"]] == [0, 1, 2]


class _StuckWorker:
    """Hold the next request's work (what ``offload`` hands to a worker thread) until
    released, whichever view it belongs to; later work runs as usual."""

    def __init__(self, monkeypatch) -> None:
        import anyio.to_thread

        self.entered, self.release = threading.Event(), threading.Event()
        self.armed = False
        real = anyio.to_thread.run_sync

        def run_sync(func, *args, **kwargs):
            if self.armed:
                self.armed = False

                def stuck(*a):
                    self.entered.set()
                    self.release.wait(60)
                    return func(*a)

                return real(stuck, *args, **kwargs)
            return real(func, *args, **kwargs)

        monkeypatch.setattr(anyio.to_thread, "run_sync", run_sync)


# Each view's heaviest route (the ones above hold their provider reads; these hold the whole
# worker call: a table built, a graph laid out, a projection computed). Runs or tags a view
# has no data for answer 404 once released: the route still got as far as its work.
HEAVIEST_ROUTES = [
    ("scalars/multi", {"run": "train", "tag": "loss", "width": "1000"}),
    ("histograms/series", {"run": "train", "tag": "weights", "limit": "100000"}),
    ("images/list", {"run": "train", "tag": "sample"}),
    ("audio/clips", {"run": "train", "tag": "clip"}),
    ("text/series", {"run": "train", "tag": "note/text_summary"}),
    ("graphs/graph", {"run": "train", "tag": "model"}),
    ("precision/table", {"run": "train", "tag": "act", "q": "a.*b"}),
    ("tensors/steps", {"run": "train", "tag": "act"}),
    ("data_graphs/graph", {"run": "train", "tag": "pipeline"}),
    ("landscapes/landscape", {"run": "train", "tag": "loss_landscape"}),
    ("hparams/table", {"run": "train"}),
    ("pr_curves/curves", {"run": "train", "tag": "pr"}),
    ("custom_scalars/multiline", {"run": "train", "tag_regex": "lo.*"}),
    ("embeddings/projection", {"run": "train", "tag": "emb", "step": "0", "dims": "3"}),
    ("mesh/mesh", {"run": "train", "name": "shape"}),
    ("monitor/heatmap", {"run": "train"}),
]


def test_every_view_is_covered_by_the_liveness_check():
    from tensorsight.board.views import BUILTIN_VIEWS

    covered = {path.split("/")[0] for path, _ in HEAVIEST_ROUTES} | {"comparison"}
    assert covered == set(BUILTIN_VIEWS)  # comparison: test_a_slow_comparison_request_...


@pytest.mark.parametrize(("path", "params"), HEAVIEST_ROUTES, ids=[p for p, _ in HEAVIEST_ROUTES])
def test_the_board_answers_while_any_views_work_is_in_progress(
    every_kind_logdir, monkeypatch, path, params
):
    """Issue 20: ``/api/runs`` answers while one request of any view is in its work."""
    from tensorsight.data import LogdirProvider

    provider = LogdirProvider(every_kind_logdir)
    provider.reload()
    worker = _StuckWorker(monkeypatch)
    with board_server(provider) as url, ThreadPoolExecutor(1) as pool:
        try:
            worker.armed = True
            slow = pool.submit(
                httpx.get, f"{url}/api/views/{path}", params=params, timeout=LIVENESS_S * 3
            )
            assert worker.entered.wait(LIVENESS_S), f"{path} never reached its worker thread"
            runs = httpx.get(f"{url}/api/runs", timeout=LIVENESS_S)
            assert runs.status_code == 200
            assert "train" in [r["name"] for r in runs.json()["runs"]]
            assert not slow.done()
        finally:
            worker.release.set()
        r = slow.result()
    assert r.status_code in (200, 404), r.text
