from __future__ import annotations

import numpy as np
import pytest
from starlette.testclient import TestClient

from tensorsight.board.app import create_app
from tensorsight.board.errors import InvalidArgument
from tensorsight.board.views.tensors import (
    MAX_COLS,
    MAX_ROWS,
    default_query,
    parse_slice,
    slice_impl,
)
from tensorsight.data import InMemoryProvider, TensorValue


@pytest.fixture
def tprovider():
    p = InMemoryProvider()
    x = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    p.add_tensor("train", "act", TensorValue.from_array(0, 10.0, x, "bfloat16"))
    y = x + 1
    y[0, 0, :3] = [np.nan, np.inf, -np.inf]
    p.add_tensor("train", "act", TensorValue.from_array(5, 11.0, y, "bfloat16"))
    p.add_tensor("train", "big", TensorValue.from_array(0, 10.0, np.zeros((2000, 300))))
    p.add_tensor("train", "scalar", TensorValue.from_array(0, 10.0, np.int64(7)))
    p.add_tensor("train", "names", TensorValue.from_array(0, 10.0, np.array([b"a", b"\xff"])))
    return p


@pytest.mark.parametrize(
    ("query", "shape", "expected"),
    [
        ("0, 2:5", (3, 8), ((0, slice(2, 5, None)), 1)),
        ("-1, :, ::2", (2, 3, 4), ((-1, slice(None), slice(None, None, 2)), 2)),
        ("..., 0", (2, 3, 4), ((slice(None), slice(None), 0), 2)),
        ("1", (2, 3), ((1, slice(None)), 1)),
        ("", (), ((), 0)),
        (" 0 , 1 ,", (2, 3), ((0, 1), 0)),
    ],
)
def test_parse_slice(query, shape, expected):
    assert parse_slice(query, shape) == expected


@pytest.mark.parametrize(
    ("query", "shape", "message"),
    [
        (":, :, :", (2, 3, 4), "selects 3 free dimensions"),
        ("0", (2, 3, 4), "selects 2 free"),  # fine: two left
        ("5", (2, 3), "index 5 is out of range for dimension 0 of size 2"),
        ("-3", (2, 3), "out of range"),
        ("0, 0, 0, 0", (2, 3, 4), "4 indices for a tensor with 3 dimensions"),
        ("a", (2,), "neither an integer nor a start:stop:step slice"),
        ("::0", (2,), "step of dimension 0 is 0"),
        ("..., ...", (2,), "'...' may appear only once"),
        ("1.5", (2,), "neither an integer"),
    ],
)
def test_parse_slice_errors(query, shape, message):
    if message == "selects 2 free":
        assert parse_slice(query, shape)[1] == 2
        return
    with pytest.raises(InvalidArgument, match=message):
        parse_slice(query, shape)


def test_default_query():
    assert [default_query(n) for n in range(4)] == ["", ":", ":, :", "0, :, :"]


def test_slice_bf16_with_stats(tprovider):
    body = slice_impl(tprovider, "train", "act")  # last step, default query
    assert body["step"] == 5
    assert body["query"] == "0, :, :"
    assert body["dtype"] == "bfloat16"
    assert body["values"][0][:4] == ["NaN", "Infinity", "-Infinity", 4.0]
    s = body["stats"]
    assert (s["nan_count"], s["pos_inf_count"], s["neg_inf_count"], s["zero_count"]) == (1, 1, 1, 0)
    assert s["min"] == 4.0
    assert s["max"] == 24.0
    assert sum(s["histogram"]["counts"]) == 21
    body = slice_impl(tprovider, "train", "act", step=0, query="1, -1, 1:3")
    assert body["values"] == [[21.0], [22.0]]  # one free dimension: a column
    assert body["stats"]["zero_count"] == 1


def test_slice_bounds_and_other_dtypes(tprovider):
    body = slice_impl(tprovider, "train", "big", query=":, :")
    assert body["slice_shape"] == [2000, 300]
    assert body["truncated"]
    assert len(body["values"]) == MAX_ROWS
    assert len(body["values"][0]) == MAX_COLS
    assert slice_impl(tprovider, "train", "scalar")["values"] == [[7]]
    assert slice_impl(tprovider, "train", "names")["values"] == [["a"], ["\ufffd"]]


def test_routes(tprovider):
    with TestClient(create_app(tprovider)) as c:
        r = c.get("/api/views/tensors/steps", params={"run": "train", "tag": "act"})
        assert [x["step"] for x in r.json()["records"]] == [0, 5]
        assert r.json()["records"][0]["shape"] == [2, 3, 4]
        r = c.get("/api/views/tensors/slice", params={"run": "train", "tag": "act", "step": 0})
        assert r.json()["step"] == 0
        r = c.get("/api/views/tensors/slice", params={"run": "train", "tag": "act", "step": 3})
        assert r.status_code == 404
        r = c.get("/api/views/tensors/slice", params={"run": "train", "tag": "act", "q": "9"})
        assert r.status_code == 400
        assert "Expected -2 <= index < 2" in r.json()["error"]["message"]
        r = c.get(
            "/api/views/tensors/slice", params={"run": "train", "tag": "act", "q": "0" * 2000}
        )
        assert r.status_code == 400
        r = c.get("/api/views/tensors/slice", params={"run": "nope", "tag": "act"})
        assert r.status_code == 404
