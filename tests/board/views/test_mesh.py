"""The mesh view on logs of torch's writer, tensorboardX and ours: meshes by name, parts,
steps, batch entries, thinning, and one-line errors."""

from __future__ import annotations

import numpy as np
import pytest
import tensorboardX
import torch
from starlette.testclient import TestClient
from torch.utils.tensorboard import SummaryWriter as TorchWriter

from tensorsight import SummaryWriter
from tensorsight.board.app import create_app
from tensorsight.board.errors import InvalidArgument, NotFound
from tensorsight.board.views import mesh as mesh_view
from tensorsight.board.views.mesh import mesh_impl, meshes_impl
from tensorsight.data import Limits, LogdirProvider

TETRA = np.array([[[1, 1, 1], [-1, -1, 1], [1, -1, -1], [-1, 1, -1]]], np.float32)
FACES = np.array([[[0, 2, 3], [0, 3, 1], [0, 1, 2], [1, 3, 2]]], np.int32)
COLORS = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 0, 255]]], np.int32)
CLOUD = np.random.default_rng(0).standard_normal((2, 50, 3)).astype(np.float32)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("mesh_logs")
    for name, writer in (
        ("torch", TorchWriter),
        ("tbx", tensorboardX.SummaryWriter),
        ("ours", SummaryWriter),
    ):
        with writer(str(d / name)) as w:
            for step in (0, 5):
                w.add_mesh(
                    "tetra",
                    torch.from_numpy(TETRA * (step + 1)),
                    colors=torch.from_numpy(COLORS),
                    faces=torch.from_numpy(FACES),
                    global_step=step,
                )
            w.add_mesh("cloud", torch.from_numpy(CLOUD), global_step=2)
    return d


@pytest.fixture(scope="module")
def provider(logdir):
    return LogdirProvider(logdir)


def test_meshes_are_listed_by_name_for_every_writer(provider):
    assert meshes_impl(provider) == [
        {"name": "cloud", "runs": ["ours", "tbx", "torch"]},
        {"name": "tetra", "runs": ["ours", "tbx", "torch"]},
    ]
    assert meshes_impl(provider, ["ours"]) == [
        {"name": "cloud", "runs": ["ours"]},
        {"name": "tetra", "runs": ["ours"]},
    ]


@pytest.mark.parametrize("run", ["torch", "tbx", "ours"])
def test_a_mesh_comes_with_its_faces_and_colours(provider, run):
    newest = mesh_impl(provider, run, "tetra")
    assert (newest["step"], newest["steps"], newest["batch"]) == (5, [0, 5], 1)
    assert newest["vertices"] == (TETRA[0] * 6).reshape(-1).tolist()
    assert newest["faces"] == FACES[0].reshape(-1).tolist()
    assert newest["colors"] == COLORS[0].reshape(-1).tolist()
    assert newest["vertex_count"] == 4
    assert not newest["downsampled"]
    first = mesh_impl(provider, run, "tetra", step=0)
    assert first["vertices"] == TETRA[0].reshape(-1).tolist()


def test_a_point_cloud_has_no_faces_and_a_batch(provider):
    got = mesh_impl(provider, "torch", "cloud")
    assert got["faces"] is None
    assert got["colors"] is None
    assert got["batch"] == 2
    np.testing.assert_allclose(np.reshape(got["vertices"], (-1, 3)), CLOUD[0], atol=1e-6)
    second = mesh_impl(provider, "torch", "cloud", sample=1)
    np.testing.assert_allclose(np.reshape(second["vertices"], (-1, 3)), CLOUD[1], atol=1e-6)


def test_a_big_point_cloud_is_thinned_evenly(provider, monkeypatch):
    monkeypatch.setattr(mesh_view, "MAX_VERTICES", 10)
    got = mesh_impl(provider, "ours", "cloud")
    assert got["downsampled"]
    assert got["vertex_count"] == 50
    points = np.reshape(got["vertices"], (-1, 3))
    assert len(points) == 10
    np.testing.assert_allclose(points[0], CLOUD[0, 0], atol=1e-6)
    np.testing.assert_allclose(points[-1], CLOUD[0, -1], atol=1e-6)  # both ends kept
    # a triangle mesh is never thinned (it would tear): too many faces is a sentence
    monkeypatch.setattr(mesh_view, "MAX_FACES", 2)
    with pytest.raises(InvalidArgument, match=r"4 faces\. Expected at most 2"):
        mesh_impl(provider, "ours", "tetra")


def test_unknown_mesh_step_or_entry_is_not_found(provider):
    with pytest.raises(NotFound, match="no mesh tag 'nope_VERTEX'"):
        mesh_impl(provider, "ours", "nope")
    with pytest.raises(NotFound, match="no record at step 3"):
        mesh_impl(provider, "ours", "tetra", step=3)
    with pytest.raises(NotFound, match="has 2 batch entries; got sample 2"):
        mesh_impl(provider, "ours", "cloud", sample=2)


def test_routes(provider):
    with TestClient(create_app(provider)) as client:
        views = {v["name"]: v for v in client.get("/api/views").json()["views"]}
        assert views["mesh"]["enabled"]
        assert views["mesh"]["has_data"]
        body = client.get("/api/views/mesh/meshes", params={"run": ["tbx"]}).json()
        assert [m["name"] for m in body["meshes"]] == ["cloud", "tetra"]
        got = client.get(
            "/api/views/mesh/mesh", params={"run": "tbx", "name": "tetra", "step": "0"}
        )
        assert got.status_code == 200
        assert got.json()["faces"] == FACES[0].reshape(-1).tolist()
        missing = client.get("/api/views/mesh/mesh", params={"run": "tbx", "name": "x"})
        assert missing.status_code == 404
        assert "no mesh tag 'x_VERTEX'" in missing.json()["error"]["message"]
        bad = client.get("/api/views/mesh/mesh", params={"run": "tbx"})
        assert bad.status_code == 400
        assert "'name'" in bad.json()["error"]["message"]


def test_a_thinned_cloud_with_colours_of_another_count_drops_them(tmp_path, monkeypatch):
    # thinning indexed the colours with the vertices' positions: IndexError, a 500 answer
    with SummaryWriter(str(tmp_path / "run")) as w:
        w.add_mesh("cloud", torch.from_numpy(CLOUD[:1]), colors=torch.from_numpy(COLORS))
    monkeypatch.setattr(mesh_view, "MAX_VERTICES", 10)
    got = mesh_impl(LogdirProvider(tmp_path), "run", "cloud")
    assert got["downsampled"]
    assert len(got["vertices"]) == 30
    assert got["colors"] is None  # 4 colours for 50 vertices cannot be matched up


def test_a_mesh_with_many_vertices_sends_only_those_its_faces_name(tmp_path, monkeypatch):
    # 50 vertices, 2 faces naming 4 of them: past MAX_VERTICES the other 46 stay home
    faces = np.array([[[3, 10, 49], [10, 3, 20]]], np.int32)
    with SummaryWriter(str(tmp_path / "run")) as w:
        w.add_mesh("m", torch.from_numpy(CLOUD[:1]), faces=torch.from_numpy(faces))
    monkeypatch.setattr(mesh_view, "MAX_VERTICES", 10)
    got = mesh_impl(LogdirProvider(tmp_path), "run", "m")
    assert got["vertex_count"] == 50
    points = np.reshape(got["vertices"], (-1, 3))
    assert len(points) == 4
    tri = np.reshape(got["faces"], (-1, 3))
    for sent, written in zip(tri, faces[0], strict=True):  # each face names the same points
        np.testing.assert_allclose(points[sent], CLOUD[0, written], atol=1e-6)


@pytest.mark.parametrize("writer", [TorchWriter, tensorboardX.SummaryWriter, SummaryWriter])
def test_mesh_records_are_capped_per_part_newest_kept(tmp_path, writer):
    with writer(str(tmp_path / "run")) as w:
        for step in range(5):
            w.add_mesh(
                "tetra",
                torch.from_numpy(TETRA * (step + 1)),
                colors=torch.from_numpy(COLORS),
                faces=torch.from_numpy(FACES),
                global_step=step,
            )
    capped = LogdirProvider(tmp_path, Limits(max_records_per_mesh=2))
    got = mesh_impl(capped, "run", "tetra")
    assert (got["step"], got["steps"]) == (4, [3, 4])  # the newest two of five
    assert got["vertices"] == (TETRA[0] * 5).reshape(-1).tolist()
    assert got["faces"] == FACES[0].reshape(-1).tolist()  # every part capped alike
    (dropped,) = capped.run_info("run").dropped.items()
    assert dropped == ("mesh tags at the 2-value limit (older values dropped)", 3)
    assert Limits().max_records_per_mesh == 100
    uncapped = LogdirProvider(tmp_path, Limits(max_records_per_mesh=None))
    assert mesh_impl(uncapped, "run", "tetra")["steps"] == [0, 1, 2, 3, 4]
