"""``torch.save`` files read without torch: the same bits as ``torch.load``, or ``None``."""

from __future__ import annotations

import pickle
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import torch

from tensorsight.capture._ptfile import read_pt

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
