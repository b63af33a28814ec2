from __future__ import annotations

from tensorsight.board.views.histograms import series_impl as hist_impl


def test_histogram_buckets_come_back_exactly(client):
    body = client.get(
        "/api/views/histograms/series", params={"run": "train", "tag": "weights"}
    ).json()
    assert body["total_records"] == 3
    rec = body["records"][2]
    assert rec["edges"] == [-1.0, 0.0, 1.0, "Infinity"]
    assert rec["counts"] == [1.0, 4.0, 0.0]
    assert rec["nan_count"] == 2
    assert rec["pos_inf_count"] == 0
    assert rec["neg_inf_count"] is None


def test_histogram_record_thinning_keeps_first_and_last(provider):
    body = hist_impl(provider, "train", "weights", limit=2)
    assert [r["step"] for r in body["records"]] == [0, 2]
    assert body["total_records"] == 3


def test_histogram_tags(client):
    body = client.get("/api/views/histograms/tags").json()
    assert body == {"tags": [{"tag": "weights", "runs": ["train"]}]}


def test_images_list_and_bytes(client):
    body = client.get("/api/views/images/list", params={"run": "train", "tag": "samples"}).json()
    assert [im["step"] for im in body["images"]] == [0, 10, 20]
    assert body["images"][0]["width"] == 4
    r = client.get("/api/views/images/image", params={"run": "train", "tag": "samples", "i": 2})
    assert r.status_code == 200
    assert r.headers["content-type"] == "image/png"
    assert r.content.startswith(b"\x89PNG")
    r = client.get("/api/views/images/image", params={"run": "train", "tag": "samples", "i": 3})
    assert r.status_code == 404
    r = client.get("/api/views/images/image", params={"run": "train", "tag": "samples", "i": -1})
    assert r.status_code == 400


def test_non_image_bytes_are_not_served_as_html(client):
    r = client.get("/api/views/images/image", params={"run": "train", "tag": "weird", "i": 0})
    assert r.headers["content-type"] == "application/octet-stream"
    assert r.headers["x-content-type-options"] == "nosniff"


def test_text_comes_back_as_source(client):
    body = client.get("/api/views/text/series", params={"run": "train", "tag": "notes"}).json()
    assert body["records"] == [
        {"step": 5, "wall_time": 1005.0, "text": "**bold** <script>alert(1)</script>"}
    ]
    assert client.get("/api/views/text/tags").json()["tags"][0]["tag"] == "notes"
