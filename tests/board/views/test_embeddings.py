"""The embeddings view on logs of torch's writer and ours: listing, PCA, neighbours, sprite."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from starlette.testclient import TestClient
from torch.utils.tensorboard import SummaryWriter as TorchWriter

from tensorsight import SummaryWriter
from tensorsight.board.app import create_app
from tensorsight.board.views import embeddings
from tensorsight.board.views.embeddings import neighbors_impl, pca, projection_impl
from tensorsight.data import LogdirProvider

API = "/api/views/embeddings"
# three clusters on known axes: the first component is x (spread 10), the second y (spread 3)
RNG = np.random.default_rng(3)
CENTRES = np.array([[-10, 0, 0, 0], [10, 0, 0, 0], [0, 3, 0, 0]], np.float32)
CLASSES = np.repeat(np.arange(3), 30)
MAT = (CENTRES[CLASSES] + RNG.normal(0, 0.1, (90, 4))).astype(np.float32)
META = [[f"pt{i}", f"class{c}"] for i, c in enumerate(CLASSES)]


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("embed_logs")
    with TorchWriter(str(d / "torch")) as w:
        w.add_embedding(
            torch.from_numpy(MAT), META, torch.rand(90, 3, 4, 4), 7, "emb", ["name", "class"]
        )
        w.add_scalar("loss", 1.0, 0)
    with SummaryWriter(d / "ours") as w:
        w.add_embedding(MAT, [m[0] for m in META], global_step=2, tag="emb")
        w.add_embedding(np.eye(5), global_step=4, tag="emb")
    return d


@pytest.fixture(scope="module")
def provider(logdir):
    return LogdirProvider(logdir)


@pytest.fixture(scope="module")
def client(provider):
    return TestClient(create_app(provider))


def test_tags_and_embeddings_per_step(client):
    assert client.get(f"{API}/tags").json()["tags"] == [{"tag": "emb", "runs": ["ours", "torch"]}]
    views = {v["name"]: v for v in client.get("/api/views").json()["views"]}
    assert views["embeddings"]["has_data"]
    body = client.get(f"{API}/embeddings", params={"run": "ours", "tag": "emb"}).json()
    assert [(e["step"], e["has_metadata"], e["has_sprite"]) for e in body["embeddings"]] == [
        (2, True, False),
        (4, False, False),
    ]
    body = client.get(f"{API}/embeddings", params={"run": "torch", "tag": "emb"}).json()
    assert body["embeddings"] == [
        {
            "step": 7,
            "tensor_name": "emb:00007",
            "has_metadata": True,
            "has_sprite": True,
            "sprite_dim": [4, 4],
        }
    ]


def test_tsne_input_keeps_every_distance_with_zero_components_past_the_rank(client):
    """The front end's t-SNE asks for 50 components of a capped sample: with 4 features the
    first 4 are a rotation of the centred points (distances kept), the rest zeros."""
    params = {"run": "torch", "tag": "emb", "step": 7, "dims": 50, "max_points": 60}
    body = client.get(f"{API}/projection", params=params).json()
    coords = np.array(body["coords"])
    assert coords.shape == (60, 50)
    assert body["sampled"]
    assert body["shown"] == 60
    np.testing.assert_array_equal(coords[:, 4:], 0.0)
    x = MAT[body["indices"]].astype(np.float64)
    want = np.linalg.norm(x[:, None] - x[None], axis=-1)
    got = np.linalg.norm(coords[:, None] - coords[None], axis=-1)
    np.testing.assert_allclose(got, want, atol=1e-3)


def test_pca_finds_the_axes_of_the_spread_and_its_share(client):
    params = {"run": "torch", "tag": "emb", "step": 7, "dims": 3}
    body = client.get(f"{API}/projection", params=params).json()
    assert (body["points"], body["features"], body["shown"], body["sampled"]) == (90, 4, 90, False)
    assert body["columns"] == ["name", "class"]
    assert body["metadata"][31] == ["pt31", "class1"]
    assert body["indices"] == list(range(90))
    coords = np.array(body["coords"])
    assert coords.shape == (90, 3)
    # component 1 separates class 0 from class 1 by the centres' 20 units, sign fixed positive
    assert coords[CLASSES == 1, 0].mean() - coords[CLASSES == 0, 0].mean() == pytest.approx(
        20, abs=0.2
    )
    assert abs(coords[CLASSES == 2, 1].mean() - coords[CLASSES != 2, 1].mean()) == pytest.approx(
        3, abs=0.1
    )
    x = MAT.astype(np.float64) - MAT.mean(axis=0)
    total = np.square(x).sum()
    var = np.square(coords).sum(axis=0) / total
    np.testing.assert_allclose(body["explained_variance"], var, rtol=1e-4)
    assert body["explained_variance"][0] > 0.9
    assert sum(body["explained_variance"]) <= 1 + 1e-9


def test_projection_caps_points_by_sampling_and_says_so(provider):
    body = projection_impl(provider, "torch", "emb", 7, 2, max_points=25)
    assert (body["shown"], body["sampled"], body["points"]) == (25, True, 90)
    assert len(body["coords"]) == len(body["metadata"]) == 25
    assert body["indices"] == sorted(set(body["indices"]))
    assert [body["metadata"][j][0] for j in range(25)] == [f"pt{i}" for i in body["indices"]]
    again = projection_impl(provider, "torch", "emb", 7, 2, max_points=25)
    assert again["indices"] == body["indices"]  # a fixed seed: the same sample each time


def test_pca_pads_components_past_the_rank_and_fits_on_a_sample():
    mean, axes, explained = pca(np.array([[0.0, 0.0], [2.0, 0.0]]), 3)
    np.testing.assert_allclose(mean, [1, 0])
    np.testing.assert_allclose(axes, [[1, 0], [0, 0], [0, 0]], atol=1e-12)
    np.testing.assert_allclose(explained, [1, 0, 0], atol=1e-12)
    _, axes, explained = pca(np.ones((4, 2)), 2)
    assert not axes.any()
    assert not explained.any()
    _, axes, _ = pca(np.array([[0.0, 0], [0, 1], [5, 0], [0, 0]]), 1, np.array([0, 1, 3]))
    np.testing.assert_allclose(np.abs(axes), [[0, 1]], atol=1e-12)


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_neighbours_over_the_whole_matrix(provider, metric):
    body = neighbors_impl(provider, "torch", "emb", 7, 0, k=29, metric=metric)
    found = [n["index"] for n in body["neighbors"]]
    assert sorted(found) == list(range(1, 30))  # the rest of its cluster, itself left out
    distances = [n["distance"] for n in body["neighbors"]]
    assert distances == sorted(distances)
    x = MAT.astype(np.float64)
    if metric == "euclidean":
        expected = np.linalg.norm(x[found] - x[0], axis=1)
    else:
        expected = 1 - (x[found] @ x[0]) / (np.linalg.norm(x[found], axis=1) * np.linalg.norm(x[0]))
    np.testing.assert_allclose(distances, expected, rtol=1e-9, atol=1e-12)
    assert body["neighbors"][0]["metadata"][1] == "class0"


def test_neighbour_ties_go_to_the_lower_index_and_zero_vectors_are_far(tmp_path):
    mat = np.array([[1, 0], [2, 0], [3, 0], [0, 0], [0, 1]], np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_embedding(mat)
    provider = LogdirProvider(tmp_path)
    body = neighbors_impl(provider, ".", "default", 0, 0, k=4, metric="cosine")
    assert [(n["index"], n["distance"]) for n in body["neighbors"]] == [
        (1, 0.0),
        (2, 0.0),
        (3, 1.0),
        (4, 1.0),
    ]


def test_sprite_is_served_as_png(client):
    params = {"run": "torch", "tag": "emb", "step": 7}
    r = client.get(f"{API}/sprite", params=params)
    assert r.status_code == 200
    assert r.headers["content-type"] == "image/png"
    assert r.content.startswith(b"\x89PNG")
    assert r.headers["x-content-type-options"] == "nosniff"


def test_sprite_over_the_cap_is_refused(client, monkeypatch):
    monkeypatch.setattr(embeddings, "MAX_SPRITE_BYTES", 10)
    r = client.get(f"{API}/sprite", params={"run": "torch", "tag": "emb", "step": 7})
    assert r.status_code == 413
    assert "at most 10" in r.json()["error"]["message"]


@pytest.mark.parametrize(
    ("route", "params", "status", "message"),
    [
        ("projection", {"run": "torch", "tag": "emb"}, 400, "'step' is required"),
        ("projection", {"run": "torch", "tag": "emb", "step": 7, "dims": 51}, 400, "in [2, 50]"),
        ("projection", {"run": "torch", "tag": "emb", "step": 8}, 404, "nothing at step 8"),
        ("projection", {"run": "nope", "tag": "emb", "step": 7}, 404, "does not exist"),
        ("neighbors", {"run": "torch", "tag": "emb", "step": 7}, 400, "'i' is required"),
        ("neighbors", {"run": "torch", "tag": "emb", "step": 7, "i": 90}, 404, "has 90 points"),
        (
            "neighbors",
            {"run": "torch", "tag": "emb", "step": 7, "i": 1, "metric": "l1"},
            400,
            "cosine, euclidean",
        ),
        ("sprite", {"run": "ours", "tag": "emb", "step": 2}, 404, "no sprite at step 2"),
        ("embeddings", {"run": "ours", "tag": "zzz"}, 404, "no embeddings tag"),
    ],
)
def test_bad_requests_say_what_was_expected(client, route, params, status, message):
    r = client.get(f"{API}/{route}", params=params)
    assert r.status_code == status
    assert message in r.json()["error"]["message"]


def test_an_unreadable_matrix_is_a_422_naming_the_file_and_line(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_embedding(np.zeros((3, 2)))
    (tmp_path / "00000" / "default" / "tensors.tsv").write_text("1\t2\n3\n")
    client = TestClient(create_app(LogdirProvider(tmp_path)))
    r = client.get(f"{API}/projection", params={"run": ".", "tag": "default", "step": 0})
    assert r.status_code == 422
    message = r.json()["error"]["message"]
    assert "tensors.tsv" in message
    assert "line 2" in message


def test_nan_points_are_drawn_at_zero_and_reported(tmp_path):
    mat = np.array([[1, 0], [np.nan, 1], [3, 0]], np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_embedding(mat)
    body = projection_impl(LogdirProvider(tmp_path), ".", "default", 0)
    assert np.isfinite(np.array(body["coords"])).all()
    assert "1 of the shown points hold NaN or Inf" in body["problems"][0]


def test_pca_by_scatter_matrix_and_by_svd_agree():
    x = np.random.default_rng(5).standard_normal((8, 5)) * [5, 4, 3, 2, 1]
    mean, axes, explained = pca(x, 3)  # more points than dims: the scatter matrix's eigenvectors
    wide = np.hstack([x, np.zeros((8, 3))])  # as many dims as points: the SVD
    mean_w, axes_w, explained_w = pca(wide, 3)
    np.testing.assert_allclose(mean_w[:5], mean)
    np.testing.assert_allclose(axes_w[:, :5], axes, atol=1e-9)
    np.testing.assert_allclose(axes_w[:, 5:], 0, atol=1e-9)
    np.testing.assert_allclose(explained_w, explained, rtol=1e-9)
    centred = x - x.mean(axis=0)
    np.testing.assert_allclose(
        explained, np.square(centred @ axes.T).sum(axis=0) / np.square(centred).sum(), rtol=1e-9
    )


def test_an_in_memory_embedding_is_served_like_a_logdir_one():
    from tensorsight.data import EmbeddingData, InMemoryProvider

    provider = InMemoryProvider()
    rows = tuple((f"pt{i}", f"class{c}") for i, c in enumerate(CLASSES))
    data = EmbeddingData(7, "emb:00007", MAT, ("name", "class"), rows, (4, 4))
    provider.add_embedding("mem", "emb", data, (b"\x89PNG\r\n\x1a\n", "image/png"))
    client = TestClient(create_app(provider))
    listed = client.get(f"{API}/embeddings", params={"run": "mem", "tag": "emb"}).json()
    assert listed["embeddings"][0]["has_sprite"]
    body = projection_impl(provider, "mem", "emb", 7)
    assert body["metadata"][31] == ["pt31", "class1"]
    assert body["explained_variance"][0] > 0.9
    r = client.get(f"{API}/sprite", params={"run": "mem", "tag": "emb", "step": 7})
    assert r.headers["content-type"] == "image/png"
    provider.add_embedding("mem", "emb", data, (b"<svg onload=alert(1)>", "image/svg+xml"))
    r = client.get(f"{API}/sprite", params={"run": "mem", "tag": "emb", "step": 7})
    assert r.status_code == 422
    assert "PNG or JPEG" in r.json()["error"]["message"]
