"""``torch.save`` files read without torch: the same bits as ``torch.load``, or ``None``."""

from __future__ import annotations

import io
import json
import pickle
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import torch

from tensorsight.capture import read_dump
from tensorsight.dumpformat._ptfile import read_pt

DTYPES = [
    torch.float64,
    torch.float32,
    torch.float16,
    torch.bfloat16,
    torch.float8_e4m3fn,
    torch.float8_e5m2,
    torch.int64,
    torch.int32,
    torch.int16,
    torch.int8,
    torch.uint8,
    torch.bool,
]


def _bits(t: torch.Tensor) -> np.ndarray:
    """What torch.load gives, as the raw-bits numpy array the reader promises."""
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)
    if t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return t.view(torch.uint8).numpy()
    return t.numpy()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_dtype_matches_torch_load(tmp_path, dtype):
    torch.manual_seed(0)
    t = (torch.randn(5, 7) * 10).to(dtype)
    path = tmp_path / "t.pt"
    torch.save(t, path)
    got = read_pt(path)
    assert got is not None
    bits, name = got
    assert name == str(dtype).removeprefix("torch.")
    assert not bits.flags.writeable
    want = _bits(torch.load(path, weights_only=True))
    assert bits.dtype == want.dtype
    np.testing.assert_array_equal(bits, want)


@pytest.mark.parametrize(
    "make",
    [
        lambda b: b[2:5],  # storage offset, the whole storage is saved
        lambda b: b.t(),  # transposed strides
        lambda b: b[:, ::3],  # gaps
        lambda b: b[1, 2],  # 0-d view
        lambda b: b[:0],  # empty
        lambda b: b.reshape(-1)[7:8].reshape(1, 1, 1),
        lambda b: torch.tensor(3.5),
        lambda b: torch.empty(0, 4),
        lambda b: b.expand(2, 6, 9) if b.ndim == 2 else b,
    ],
    ids=["offset", "transpose", "gaps", "scalar-view", "empty", "size-one", "0-d", "0x4", "expand"],
)
def test_views_offsets_and_strides(tmp_path, make):
    base = torch.arange(54, dtype=torch.float32).reshape(6, 9)
    t = make(base)
    path = tmp_path / "v.pt"
    torch.save(t, path)
    got = read_pt(path)
    assert got is not None
    bits, _ = got
    assert bits.shape == tuple(t.shape)
    np.testing.assert_array_equal(bits, torch.load(path, weights_only=True).numpy())


def test_the_msprobe_fixture_files_take_the_fast_path(msprobe_data):
    files = sorted((msprobe_data / "tensor_L1").rglob("*.pt"))
    assert files
    for path in files:
        got = read_pt(path)
        assert got is not None, path.name
        np.testing.assert_array_equal(got[0], _bits(torch.load(path, weights_only=True)))


def test_anything_but_a_plain_tensor_is_left_to_torch(tmp_path):
    cases = {
        "param.pt": torch.nn.Parameter(torch.ones(3)),
        "dict.pt": {"a": torch.ones(2)},
        "list.pt": [torch.ones(2), torch.zeros(2)],
        "complex.pt": torch.ones(2, dtype=torch.complex64),
        "int.pt": 3,
    }
    for name, value in cases.items():
        torch.save(value, tmp_path / name)
        assert read_pt(tmp_path / name) is None, name
    legacy = tmp_path / "legacy.pt"
    torch.save(torch.ones(2), legacy, _use_new_zipfile_serialization=False)
    assert read_pt(legacy) is None
    compressed = tmp_path / "deflated.pt"
    torch.save(torch.ones(64), tmp_path / "plain.pt")
    with (
        zipfile.ZipFile(tmp_path / "plain.pt") as src,
        zipfile.ZipFile(compressed, "w", zipfile.ZIP_DEFLATED) as dst,
    ):
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    assert read_pt(compressed) is None


def _rewrite(src, dst, **replace):
    with zipfile.ZipFile(src) as a, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as b:
        for info in a.infolist():
            leaf = info.filename.split("/", 1)[1]
            data = replace.get(leaf, a.read(info))
            if data is not None:
                b.writestr(info.filename, data)


class _Evil:
    def __reduce__(self):
        return (print, ("pwned",))


def test_hostile_corrupt_and_truncated_files_give_none(tmp_path, capsys):
    good = tmp_path / "good.pt"
    torch.save(torch.arange(16, dtype=torch.float32), good)
    with zipfile.ZipFile(good) as z:
        pkl = z.read(next(n for n in z.namelist() if n.endswith("data.pkl")))
    bad = {
        "evil-global": {"data.pkl": pickle.dumps(_Evil(), protocol=2)},
        "garbage-pickle": {"data.pkl": b"\x80\x02garbage"},
        "numel-too-big": {"data.pkl": pkl.replace(b"cpuq\x04K\x10", b"cpuq\x04M\x00\x01")},
        "view-past-storage": {"data.pkl": pkl.replace(b"K\x10\x85", b"K\x11\x85")},
        "short-storage": {"data/0": b"\x00" * 8},
        "no-storage": {"data/0": None},
        "big-endian": {"byteorder": b"big"},
    }
    # numel 16 and size (16,) as BININT1: the patches above apply
    assert b"cpuq\x04K\x10" in pkl
    assert b"K\x10\x85" in pkl
    _rewrite(good, tmp_path / "same.pt")  # the rewrite itself keeps a readable file
    same = read_pt(tmp_path / "same.pt")
    assert same is not None
    np.testing.assert_array_equal(same[0], np.arange(16, dtype=np.float32))
    for label, change in bad.items():
        path = tmp_path / f"{label}.pt"
        _rewrite(good, path, **change)
        assert read_pt(path) is None, label
    assert "pwned" not in capsys.readouterr().out
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(good.read_bytes()[:100])
    assert read_pt(truncated) is None
    (tmp_path / "empty.pt").write_bytes(b"")
    assert read_pt(tmp_path / "empty.pt") is None
    assert read_pt(tmp_path / "missing.pt") is None


def test_comparing_msprobe_tensor_dumps_does_not_import_torch(msprobe_data):
    """torch's import is ~1 s of a compare's start-up: the plain .pt files need none of it."""
    code = (
        "import sys\n"
        "from tensorsight.compare import compare\n"
        f"r = compare({str(msprobe_data / 'tensor_L1')!r}, {str(msprobe_data / 'tensor_L1')!r})\n"
        "assert r.rows and all(row.mode == 'tensor' for row in r.rows if row.shape_bench)\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "False"


class _StorageRef:
    """Pickled as msprobe's persistent id of a storage (see ``_crafted``)."""

    def __init__(self, pid):
        self.pid = pid


class _Call:
    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        return obj.pid if isinstance(obj, _StorageRef) else None


def _crafted(path, obj, storage=b"\x00" * 64):
    """A torch.save-shaped archive whose data.pkl pickles ``obj`` (protocol 2)."""
    buf = io.BytesIO()
    _Pickler(buf, protocol=2).dump(obj)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("t/data.pkl", buf.getvalue())
        z.writestr("t/byteorder", b"little")
        z.writestr("t/data/0", storage)
    return path


def test_crafted_pickles_outside_the_plain_case_give_none(tmp_path):
    import collections

    v2, v3 = torch._utils._rebuild_tensor_v2, torch._utils._rebuild_tensor_v3
    ok = _StorageRef(("storage", torch.FloatStorage, "0", "cpu", 16))
    hooks = collections.OrderedDict()
    assert read_pt(_crafted(tmp_path / "ok.pt", _Call(v2, ok, 0, (4, 4), (4, 1), False, hooks)))
    byte_store = _StorageRef(("storage", torch.UntypedStorage, "0", "cpu", 64))
    got = read_pt(
        _crafted(
            tmp_path / "v3.pt", _Call(v3, byte_store, 0, (8,), (1,), False, hooks, torch.int64)
        )
    )
    assert got is not None
    assert got[1] == "int64"
    bad = {
        "float-offset": _Call(v2, ok, 0.5, (4,), (1,), False, hooks),
        "list-size": _Call(v2, ok, 0, [4], (1,), False, hooks),
        "rank-mismatch": _Call(v2, ok, 0, (4, 4), (1,), False, hooks),
        "negative-stride": _Call(v2, ok, 15, (4,), (-1,), False, hooks),
        "negative-offset": _Call(v2, ok, -1, (4,), (1,), False, hooks),
        "hooks": _Call(v2, ok, 0, (4,), (1,), False, collections.OrderedDict(a=1)),
        "metadata": _Call(v2, ok, 0, (4,), (1,), False, hooks, {"x": 1}),
        "not-a-storage": _Call(v2, 7, 0, (4,), (1,), False, hooks),
        "short-pid": _Call(v2, _StorageRef(("storage", torch.FloatStorage)), 0, (4,), (1,)),
        "pid-kind": _Call(v2, _StorageRef(("storage", "FloatStorage", "0", "cpu", 16)), 0, (4,)),
        "pid-key": _Call(v2, _StorageRef(("storage", torch.FloatStorage, "../0", "cpu", 16)), 0),
        "pid-numel": _Call(v2, _StorageRef(("storage", torch.FloatStorage, "0", "cpu", -1)), 0),
        "v3-typed-storage": _Call(v3, ok, 0, (4,), (1,), False, hooks, torch.float32),
        "v3-ragged-bytes": _Call(
            v3,
            _StorageRef(("storage", torch.UntypedStorage, "0", "cpu", 63)),
            *(0, (7,), (1,), False, hooks, torch.int64),
        ),
        "missing-storage-key": _Call(
            v2,
            _StorageRef(("storage", torch.FloatStorage, "1", "cpu", 16)),
            0,
            (4,),
            (1,),
            False,
            hooks,
        ),
        "not-a-tensor": (1, 2),
    }
    for label, obj in bad.items():
        assert read_pt(_crafted(tmp_path / f"{label}.pt", obj)) is None, label


def test_msprobe_files_outside_the_plain_case_still_load_through_torch(tmp_path):
    folder = tmp_path / "step0" / "rank0"
    (folder / "dump_tensor_data").mkdir(parents=True)
    values = {
        "legacy.pt": torch.arange(6, dtype=torch.float32).reshape(2, 3),
        "param.pt": torch.nn.Parameter(torch.tensor([1.5, -2.0], dtype=torch.bfloat16)),
        "fp8.pt": torch.nn.Parameter(torch.tensor([0.5, 2.0]).to(torch.float8_e4m3fn), False),
    }
    data = {}
    for i, (name, t) in enumerate(values.items()):
        legacy = name == "legacy.pt"
        torch.save(t, folder / "dump_tensor_data" / name, _use_new_zipfile_serialization=not legacy)
        assert read_pt(folder / "dump_tensor_data" / name) is None, name
        data[f"Functional.f.{i}.forward"] = {
            "output": [
                {"type": "torch.Tensor", "dtype": str(t.dtype), "shape": list(t.shape),
                 "data_name": name}
            ]
        }  # fmt: skip
    (folder / "dump.json").write_text(json.dumps({"task": "tensor", "data": data}))
    step = read_dump(tmp_path).step()
    got = {r.data: step.load(r) for r in step.rows}
    np.testing.assert_array_equal(got["legacy.pt"], np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(got["param.pt"], [1.5, -2.0])
    np.testing.assert_array_equal(got["fp8.pt"], [0.5, 2.0])
    assert {r.data: step.load_raw(r).dtype for r in step.rows} == {
        "legacy.pt": "float32",
        "param.pt": "bfloat16",
        "fp8.pt": "float8_e4m3fn",
    }


def test_an_archive_with_a_comment_is_still_read(tmp_path):
    """torch writes no zip comment (the end record is the file's last 22 bytes); a file that
    has one sends the reader to search for the end record."""
    path = tmp_path / "t.pt"
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    torch.save(t, path)
    with zipfile.ZipFile(path, "a") as zf:
        zf.comment = b"written by another tool " * 20
    got = read_pt(path)
    assert got is not None
    np.testing.assert_array_equal(got[0], t.numpy())
    assert got[1] == "float32"


def test_same_pickles_parse_once_and_bad_ones_are_not_remembered(tmp_path):
    """Tensors of one shape and dtype pickle alike: the second file reuses the parse."""
    from tensorsight.dumpformat import _ptfile

    _ptfile._SPECS.clear()
    for i in range(3):
        torch.save(torch.full((4, 5), float(i)), tmp_path / f"t{i}.pt")
    got = [read_pt(tmp_path / f"t{i}.pt") for i in range(3)]
    assert len(_ptfile._SPECS) == 1
    for i, (bits, dtype) in enumerate(got):
        assert dtype == "float32"
        assert bits.tolist() == [[float(i)] * 5] * 4
    with pytest.raises(_ptfile._Unsupported):
        _ptfile._parse(b"not a pickle")
    assert len(_ptfile._SPECS) == 1
